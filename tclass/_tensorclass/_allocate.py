"""Preallocating a record from its class's schema alone: ``Cls.allocate(...)``.

Every field the schema fully describes is allocated: a spec'd tensor field as zeros of
its declared dtype and shape (named dims from ``dims``; a field whose constraints refuse
0, ``Spec(ge=1)``, is filled with the allowed value nearest its lower bound instead, in
its file too), a nested record field as that record allocated the same way. Python
values take their defaults; optional fields are left unset (``None``: the first write
allocates them, in the folder too). With a ``prefix`` the zeros are never
materialised: each is a view of one zero, and ``memmap_like`` turns the record into
sparse files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

import torch

from tclass._core._batch import BatchSizeLike, as_batch_size
from tclass._core._device import DeviceLike, as_device
from tclass._core._records import is_record_class
from tclass._core._spec import NAMED, SYMBOLIC, VARIADIC, allocation_dtype, allocation_shape
from tclass._io._api import saved_copy
from tclass._tensorclass._builder import record_from_entries
from tclass._tensorclass._fields import FieldRule
from tclass.errors import FieldSpecError, SpecProblem

if TYPE_CHECKING:
    from tclass._tensorclass._record import TensorClass

__all__ = ["allocate", "spec_dim_names"]

_R = TypeVar("_R", bound="TensorClass")


def allocate(
    cls: type[_R],
    batch_size: BatchSizeLike,
    dims: Mapping[str, int | Sequence[int]] | None,
    prefix: str | os.PathLike[str] | None,
    device: DeviceLike,
) -> _R:
    """``cls.allocate(...)``: see ``TensorClass.allocate``."""
    target = None if device is None else as_device(device)
    # With a prefix: views of one zero now, sparse files below (no memory taken).
    allocator = _Allocator(as_batch_size(batch_size), dict(dims or {}), target, prefix is not None)
    record = allocator.record(cls, frozenset())
    problems = allocator.problems
    for name, fields in allocator.absent.items():
        message = f"the dim {name!r} ({', '.join(fields)}) has no size; pass dims={{{name!r}: ...}}"
        problems.append(SpecProblem(fields[0].rpartition(".")[2], name, None, None, None, message))
    for name in sorted(set(allocator.sizes) - spec_dim_names(cls)):
        message = f"dims={{{name!r}: ...}} names no dim of {cls.__name__}'s specs"
        problems.append(SpecProblem("", name, allocator.sizes[name], None, None, message))
    if problems or record is None:
        listed = "; ".join(problem.message for problem in problems)
        raise FieldSpecError(f"{cls.__name__}.allocate: {listed}", problems)
    if prefix is None:
        return record
    saved = saved_copy(record, prefix, False, like=True)
    _fill_files(saved, cls, allocator.filled)
    return saved


def _fill_files(record: Any, cls: type, filled: Mapping[str, Any]) -> None:
    """Writes the fill of each field whose constraints refuse 0 into its file (the
    others stay sparse, zero-filled)."""
    for name in cast(Any, cls).__tclass_info__.field_names:
        value = getattr(record, name, None)
        if f"{cls.__name__}.{name}" in filled and isinstance(value, torch.Tensor):
            value.fill_(filled[f"{cls.__name__}.{name}"])
        elif is_record_class(type(value)):
            _fill_files(value, type(value), filled)


@dataclass
class _Allocator:
    """One ``allocate`` call: what it builds records with, and what it could not build."""

    batch: torch.Size
    sizes: dict[str, Any]
    device: torch.device | None
    lazy: bool
    problems: list[SpecProblem] = field(default_factory=list)
    absent: dict[str, list[str]] = field(default_factory=dict)  # dim -> fields naming it
    filled: dict[str, Any] = field(default_factory=dict)  # "Cls.field" -> a value not 0

    def record(self, cls: type[_R], within: frozenset[type]) -> _R | None:
        """A record of ``cls``; None when something could not be allocated."""
        if cls in within:
            message = f"{cls.__name__} contains itself: allocate cannot build it without None"
            self.problems.append(SpecProblem("", "", None, None, None, message))
            return None
        entries: dict[str, Any] = {}
        for name, rule in cast(Any, cls).__tclass_info__.rules.items():
            value = self.field(cls, rule, within | {cls})
            if value is not None:
                entries[name] = value
        if self.problems or self.absent:
            return None
        # Every value meets its constraints (see _fill_value): not read again.
        return record_from_entries(cls, entries, self.batch, self.device, check_values=False)

    def field(self, cls: type, rule: FieldRule, within: frozenset[type]) -> Any:
        """A field's zeros, a nested record, or None (its default, or unset)."""
        where = f"{cls.__name__}.{rule.name}"
        if rule.optional or rule.value_field or rule.any_value:
            return None  # unset (None), or its default
        records = [c for c in rule.collections if is_record_class(c)]
        if rule.collections and not rule.tensor:
            if len(records) == 1:
                return self.record(records[0], within)
            return self._refuse(
                rule, f"{where} is annotated {rule.text}, which has no schema to allocate"
            )
        if rule.spec is None:
            no_shape = (
                f"{where} is annotated {rule.text} with no shape to allocate: annotate it "
                "Annotated[Tensor, Spec(...)] (or jaxtyping)"
            )
            return self._refuse(rule, no_shape)
        shape, missing, why = allocation_shape(rule.spec, self.batch, self.sizes)
        for name in missing:  # one problem per name, listing its fields (see allocate)
            self.absent.setdefault(name, []).append(where)
        if why is not None:
            return self._refuse(rule, f"{where}: {why}")
        if shape is None:
            return None
        dtype = allocation_dtype(rule.spec)
        fill = _fill_value(rule, dtype, where)
        if isinstance(fill, str):
            return self._refuse(rule, fill)
        if fill != 0:
            self.filled[where] = fill
        if self.lazy:
            return torch.full((), fill, dtype=dtype).expand(shape)
        return torch.full(shape, fill, dtype=dtype, device=self.device)

    def _refuse(self, rule: FieldRule, why: str) -> None:
        message = f"{why}, or make it optional (`| None`)"
        self.problems.append(SpecProblem(rule.name, "", None, None, None, message))


def _fill_value(rule: FieldRule, dtype: torch.dtype, where: str) -> int | float | bool | str:
    """What a field is filled with: 0, or for a field whose constraints refuse 0 the
    value nearest the lower bound that meets them (a ``str``: why there is none)."""
    spec = rule.spec
    constraints = spec.constraints if spec is not None else None
    if constraints is None:
        return 0
    value = constraints.example(dtype)
    if value is None:
        return f"{where}: no {str(dtype).replace('torch.', '')} value meets {constraints.text}"
    return value


def spec_dim_names(cls: type, seen: set[type] | None = None) -> set[str]:
    """The dim names the specs of ``cls`` and its nested records read (``dims=`` of
    ``allocate`` and ``rand`` may name these only)."""
    seen = set() if seen is None else seen
    if cls in seen:
        return set()
    seen.add(cls)
    names: set[str] = set()
    for rule in cast(Any, cls).__tclass_info__.rules.values():
        if rule.spec is not None:
            for dim in rule.spec.dims:
                if dim.kind in (NAMED, VARIADIC) and dim.name:
                    names.add(dim.name)
                elif dim.kind == SYMBOLIC:
                    names.update(dim.names)
        for nested in rule.collections:
            if is_record_class(nested):
                names |= spec_dim_names(nested, seen)
    return names
