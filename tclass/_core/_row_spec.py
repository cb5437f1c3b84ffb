"""Checking values written into the rows of a record against its fields' specs (pure).

A row write (``record[index] = rows``, ``set_at_``, ``update_``...) stores into tensors
that already fit their specs, so a value fits when it has a dtype the spec allows and
the feature dims the record's data has (a row write cannot change a feature dim, nor
the named dims the other fields bind). What a value carries depends on how it is given:

* ``rows`` mode (``value_batch_ndim >= 0``): a collection's entry, whose first
  ``value_batch_ndim`` dims are its batch dims and the rest its feature dims;
* ``RIGHT``: a dict's entry or a whole field (``set_``), aligned on the right as torch
  broadcasts it: its last dims are the feature dims;
* ``FILL``: one value written into every element (``record[index] = 0``, or a tensor
  over the batch dims): the dtype alone is checked.

A number or a 0-dim tensor fills the elements in every mode. Tensors must have a dtype
the spec allows (as when a field is assigned); an array-like (a number, a list, a numpy
array) is converted, so it must hold values the field's dtype holds exactly (``2`` in
uint8, not ``300`` or ``2.5``). ``RowSpecs.fit`` is the fast path (a few comparisons per
field); only when it says no does ``RowSpecs.check`` look closer, and raise.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from tclass._core._record_spec import Observed, RecordSpecs, format_shape_list
from tclass._core._spec import Dim, TensorSpec, exact_tensor, inexact_value
from tclass.errors import FieldSpecError, SpecProblem

__all__ = ["FILL", "RIGHT", "RowSpecs"]

RIGHT = -1  # a value aligned on the right: its last dims are the feature dims
FILL = -2  # a value filling every element: its dtype alone is checked

_Tensor = torch.Tensor
_ARRAY_LIKES = (numbers.Number, np.ndarray, np.generic, list, tuple)


def _short(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


class RowSpecs:
    """The row-write checks of one record class, from its ``RecordSpecs``."""

    __slots__ = ("record", "owner", "_fields")

    def __init__(self, record: RecordSpecs) -> None:
        self.record = record
        self.owner = record.owner
        # (name, allowed dtypes or None): what the fast path reads per field.
        self._fields = tuple((name, spec.dtypes) for name, spec in record.specs.items())

    def fit(self, targets: Mapping[str, Any], values: Mapping[str, Any], n: int, m: int) -> bool:
        """Whether ``values`` certainly fit the fields ``targets`` (a record of ``n``
        batch dims holds them) in mode ``m`` (see the module docstring): tensors of an
        allowed dtype and the targets' feature dims. False: ask :meth:`check`."""
        for name, dtypes in self._fields:
            value = values.get(name)
            if value is None:
                continue
            if not isinstance(value, _Tensor) or (dtypes is not None and value.dtype not in dtypes):
                return False
            if m == FILL:
                continue
            target = targets.get(name)
            if not isinstance(target, _Tensor):
                return False
            shape = target.shape
            if m >= 0:
                if value.shape[m:] != shape[n:]:
                    return False
            elif len(shape) > n:
                given, f = value.shape, len(shape) - n
                if len(given) < f or given[len(given) - f :] != shape[n:]:
                    return False
        return True

    def check(
        self,
        targets: Mapping[str, Any],
        values: Mapping[str, Any],
        batch: Sequence[int],
        m: int,
        fresh_ndim: int | None,
        what: str,
    ) -> None:
        """Checks ``values`` written into a record of batch size ``batch`` holding
        ``targets``, in mode ``m``; a field not set yet is allocated by the write with the
        value's dims after the first ``fresh_ndim`` (None: not known, not checked).

        Raises:
            FieldSpecError: every problem, prefixed with ``what`` (the write).
        """
        n = len(batch)
        problems: list[SpecProblem] = []
        fresh: dict[str, Observed] = {}
        for name, spec in self.record.specs.items():
            value = values.get(name)
            target = targets.get(name)
            if value is None or not (target is None or isinstance(target, _Tensor)):
                continue  # a Python value or a collection in a field that allows one
            tensor = _as_tensor(value)
            if tensor is None:
                continue  # not an array-like: the write itself says what is wrong
            problem = self._dtype_problem(name, spec, value, tensor, target)
            if problem is not None:
                problems.append(problem)
            if m == FILL or tensor.ndim == 0:
                continue  # fills the elements: no dims to compare
            if target is None:
                if fresh_ndim is not None:
                    fresh[name] = (None, (*batch, *tensor.shape[fresh_ndim:]))
            else:
                problems += self._shape_problems(name, spec, target.shape, n, tensor.shape, m)
        if fresh:
            problems += self._fresh_problems(targets, fresh, n)
        if problems:
            listed = "; ".join(problem.message for problem in problems)
            count = "" if len(problems) == 1 else f"{len(problems)} problems with the field specs: "
            message = f"{what}: {count}{listed}. Nothing was written"
            raise FieldSpecError(message, problems)

    def _dtype_problem(
        self, name: str, spec: TensorSpec, value: Any, tensor: _Tensor, target: Any
    ) -> SpecProblem | None:
        where = f"{self.owner}.{name}"
        if isinstance(value, _Tensor) or target is None:
            # A tensor is stored as it is; so is an array-like in a field not set yet.
            dtype = tensor.dtype if isinstance(value, _Tensor) else torch.as_tensor(value).dtype
            if spec.dtypes is None or dtype in spec.dtypes:
                return None
            wanted = " or ".join(sorted(_short(d) for d in spec.dtypes))
            fix = f" (convert it with .to(torch.{wanted}))" if len(spec.dtypes) == 1 else ""
            message = (
                f"{where}: the value written has dtype {_short(dtype)}, but its annotation "
                f"{spec.text} wants {wanted}{fix}"
            )
            return SpecProblem(name, "dtype", _short(dtype), wanted, None, message)
        bad = inexact_value(tensor, target.dtype)
        if bad is None:
            return None
        stored = _short(target.dtype)
        message = (
            f"{where}: the value written holds {bad!r}, which the field's dtype {stored} "
            f"cannot hold exactly (its annotation {spec.text}); write values it holds, or "
            f"a tensor of dtype {stored}"
        )
        return SpecProblem(name, "dtype", bad, stored, None, message)

    def _shape_problems(
        self,
        name: str,
        spec: TensorSpec,
        target: Sequence[int],
        n: int,
        given: Sequence[int],
        m: int,
    ) -> list[SpecProblem]:
        """The feature dims of ``given`` against those of ``target``: equal, or 1 where
        the spec marks the dim broadcastable (``#h``)."""
        features = list(target[n:])
        f = len(features)
        if m >= 0:
            carried = list(given[m:])
        else:
            carried = list(given[len(given) - f :]) if len(given) >= f else list(given)
        where = f"{self.owner}.{name}"
        if len(carried) != f:
            message = (
                f"{where}: the value written has shape {format_shape_list(given)}, but the "
                f"field's rows have {f} feature dim(s) {format_shape_list(features)} "
                f"(its annotation {spec.text}); a row write cannot change them"
            )
            return [SpecProblem(name, "ndim", len(carried), f, None, message)]
        dims = _dims_at(spec, len(target), n)
        problems = []
        for i, (size, expected) in enumerate(zip(carried, features)):
            dim = dims.get(n + i) if dims is not None else None
            if size == expected or (size == 1 and dim is not None and dim.broadcast):
                continue
            label = dim.text if dim is not None else str(n + i)
            message = (
                f"{where}: the value written has shape {format_shape_list(given)}: dim "
                f"{label!r} is {size} there, but {expected} in the record "
                f"({format_shape_list(target)}, annotation {spec.text}); a row write "
                "cannot change a feature dim"
            )
            problems.append(SpecProblem(name, label, size, expected, None, message))
        return problems

    def _fresh_problems(
        self, targets: Mapping[str, Any], fresh: dict[str, Observed], n: int
    ) -> list[SpecProblem]:
        """The problems of fields a write allocates, their named dims against those the
        record's data binds."""
        observed: dict[str, Observed] = {
            name: (None, tuple(value.shape))
            for name in self.record.names
            if isinstance(value := targets.get(name), _Tensor)
        }
        observed.update(fresh)
        last = next(iter(fresh)) if len(fresh) == 1 else None
        return [p for p in self.record.problems(observed, n, last) if p.field in fresh]


def _as_tensor(value: Any) -> _Tensor | None:
    if isinstance(value, _Tensor):
        return value
    if not isinstance(value, _ARRAY_LIKES):
        return None
    try:
        return exact_tensor(value)
    except (TypeError, ValueError, RuntimeError):
        return None


def _dims_at(spec: TensorSpec, ndim: int, n: int) -> dict[int, Dim] | None:
    """The spec's dim at each position of a tensor of ``ndim`` dims (``n`` batch dims)."""
    places = spec.placement(ndim, n)
    if places is None:
        return None
    found: dict[int, Dim] = {}
    for dim, start, stop in places:
        for position in range(start, stop):
            found[position] = dim
    return found
