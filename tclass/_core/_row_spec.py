"""Checking values written into the rows of a record against its fields' specs (pure).

A row write (``record[index] = rows``, ``set_at_``, ``update_``...) stores into tensors
that already fit their specs, so a value fits when it has a dtype the spec allows and
the feature dims the record's data has (a row write cannot change a feature dim, nor
the named dims the other fields bind). What a value carries depends on how it is given:

* rows (``m >= 0``): a collection's entry, whose first ``m`` dims are its batch dims
  and the rest its feature dims;
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

import linecache
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from tclass._core._record_spec import Observed, RecordSpecs, format_shape_list, value_problem
from tclass._core._spec import FIXED, Dim, TensorSpec, exact_tensor, inexact_value
from tclass.errors import FieldSpecError, SpecProblem

__all__ = ["FILL", "RIGHT", "RowSpecs"]

RIGHT = -1  # a value aligned on the right: its last dims are the feature dims
FILL = -2  # a value filling every element: its dtype alone is checked

_Tensor = torch.Tensor
_ARRAY_LIKES = (numbers.Number, np.ndarray, np.generic, list, tuple)
_Fit = Callable[[Mapping[str, Any], Mapping[str, Any], int, int], bool]


def _short(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


class RowSpecs:
    """The row-write checks of one record class, from its ``RecordSpecs``."""

    __slots__ = ("record", "owner", "rows_fit", "_fields")

    def __init__(self, record: RecordSpecs) -> None:
        self.record = record
        self.owner = record.owner
        # (name, allowed dtypes or None): what the fast path reads per field.
        self._fields = tuple((name, spec.dtypes) for name, spec in record.specs.items())
        # fit() for rows from a collection (m >= 0), the common write, unrolled.
        self.rows_fit: _Fit = _compile_rows_fit(record.owner, record)

    def fit(self, targets: Mapping[str, Any], values: Mapping[str, Any], n: int, m: int) -> bool:
        """Whether ``values`` certainly fit the fields ``targets`` (a record of ``n``
        batch dims holds them) in mode ``m`` (see the module docstring): tensors of an
        allowed dtype and the targets' feature dims. False: ask :meth:`check`."""
        if m >= 0:
            return self.rows_fit(targets, values, n, m)
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
            if len(shape) > n:
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

    def check_values(self, values: Mapping[str, Any], what: Callable[[], str]) -> None:
        """Checks the values written into constrained fields (tensors, and array-likes
        as they convert): each is read once, before anything is written.

        Raises:
            FieldSpecError: naming each field's first value that breaks a constraint,
                prefixed with ``what()`` (the write, spelled only for the message).
        """
        problems: list[SpecProblem] = []
        for name, constraints in self.record.constrained.items():
            value = values.get(name)
            if value is None:
                continue
            tensor = _as_tensor(value)
            if tensor is None:
                continue  # not an array-like: the write itself says what is wrong
            found = constraints.first_violation(tensor)
            if found is not None:
                spec = self.record.specs[name]
                where = f"{self.owner}.{name}:"
                problems.append(value_problem(where, name, spec, found, "the value written holds"))
        if problems:
            listed = "; ".join(problem.message for problem in problems)
            count = "" if len(problems) == 1 else f"{len(problems)} problems with the values: "
            raise FieldSpecError(f"{what()}: {count}{listed}. Nothing was written", problems)

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
            message = (
                f"{where}: the value written has dtype {_short(dtype)}, but its annotation "
                f"{spec.text} wants {wanted} (a row write does not convert tensors: write "
                f"{wanted} ones)"
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
        """The feature dims of ``given``: as many as the spec fixes (else as the target
        has), each the spec's size where it fixes one, else the target's (or 1 where the
        spec marks the dim broadcastable, ``#h``)."""
        features = list(target[n:])
        k = _feature_count(spec)
        if k is not None and k != len(features) and spec.whole and spec.variadic == 0:
            if spec.placement(len(target), n) is not None:
                k = None  # jaxtyping's leading variadic took feature dims too, as Cls(...) does
        f = len(features) if k is None else k
        if m >= 0:
            carried = list(given[m:])
        else:
            carried = list(given[len(given) - f :]) if 0 < f <= len(given) else []
        where = f"{self.owner}.{name}"
        if len(carried) != f or (m < 0 and len(given) < f):
            message = (
                f"{where}: the value written has shape {format_shape_list(given)}, but the "
                f"field's rows have {f} feature dim(s) {format_shape_list(features)} "
                f"(its annotation {spec.text}); a row write cannot change them"
            )
            return [SpecProblem(name, "ndim", len(carried), f, None, message)]
        dims = _dims_at(spec, len(target), n) if len(features) == f else None
        if dims is None:
            return []  # a record whose data does not fit its spec (derived): the count only
        problems = []
        for i, (size, expected) in enumerate(zip(carried, features)):
            dim = dims.get(n + i)
            fixed = dim is not None and dim.kind == FIXED
            if fixed:
                assert dim is not None
                expected = dim.size
            if size == expected or (size == 1 and dim is not None and dim.broadcast):
                continue
            label = dim.text if dim is not None else str(n + i)
            there = f"its annotation {spec.text} fixes it" if fixed else "the record has"
            message = (
                f"{where}: the value written has shape {format_shape_list(given)}: dim "
                f"{label!r} is {size} there, but {expected} where {there} (its rows: "
                f"{format_shape_list(features)}, annotation {spec.text}); a row write cannot "
                "change a feature dim"
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


def _compile_rows_fit(owner: str, specs: RecordSpecs) -> _Fit:
    """``RowSpecs.fit`` for rows from a collection (``m >= 0``), one block per field: a
    tensor of an allowed dtype with the feature dims the field's rows have. Where the spec
    fixes how many there are (``K``: a ``Spec`` without a variadic, or jaxtyping's
    ``"*batch ..."``), the sizes are compared one by one, fixed ones with the spec, the
    others with the target (slicing a ``torch.Size`` costs more than a dim's check);
    a field not set yet (``y is None``) is the slow path's."""
    namespace: dict[str, Any] = {"_Tensor": _Tensor, "_isinstance": isinstance}
    lines = ["def fit(t, v, n, m):"]
    for index, (name, spec) in enumerate(specs.specs.items()):
        lines += [f"    x = v.get({name!r})", "    if x is not None:"]
        dtype = ""
        if spec.dtypes is not None and len(spec.dtypes) == 1:
            namespace[f"D{index}"] = next(iter(spec.dtypes))
            dtype = f" or x.dtype is not D{index}"
        elif spec.dtypes is not None:
            namespace[f"D{index}"] = spec.dtypes
            dtype = f" or x.dtype not in D{index}"
        lines.append(f"        if not _isinstance(x, _Tensor){dtype}: return False")
        lines.append(f"        y = t.get({name!r})")
        if name in specs.tensors_only:  # a tensor, or nothing (not set yet)
            lines.append("        if y is None: return False")
        else:
            lines.append("        if not _isinstance(y, _Tensor): return False")
        k = _feature_count(spec)
        if k is None:
            lines.append("        if x.shape[m:] != y.shape[n:]: return False")
            continue
        dims = spec.dims[len(spec.dims) - k :]
        same = [
            f"xs[{j - k}] != {dim.size}" if dim.kind == FIXED and not dim.broadcast else
            f"xs[{j - k}] != ys[{j - k}]"
            for j, dim in enumerate(dims)
        ]  # fmt: skip
        if k == 0:
            lines.append("        if x.ndim != m: return False")
            continue
        lines.append("        xs = x.shape")
        if any("ys" in check for check in same):
            lines.append("        ys = y.shape")
        lines.append(f"        if len(xs) - m != {k} or {' or '.join(same)}: return False")
    lines.append("    return True")
    source = "\n".join(lines) + "\n"
    filename = f"<tclass row check {owner}>"
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    fit: _Fit = namespace["fit"]
    return fit


def _feature_count(spec: TensorSpec) -> int | None:
    """How many feature dims every tensor fitting ``spec`` has, when the spec fixes it."""
    v = spec.variadic
    if not spec.whole and v is None:
        return len(spec.dims)
    if spec.whole and v == 0:
        return len(spec.dims) - 1
    return None


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
    places = spec.placement(ndim, n, field=True)
    if places is None:
        return None
    found: dict[int, Dim] = {}
    for dim, start, stop in places:
        for position in range(start, stop):
            found[position] = dim
    return found
