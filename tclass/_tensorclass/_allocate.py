"""Preallocating a record from its class's schema alone: ``Cls.allocate(...)``.

Every field the schema fully describes is allocated: a spec'd tensor field as zeros of
its declared dtype and shape (named dims from ``dims``), a nested record field as that
record allocated the same way. Python values take their defaults; optional fields are
left unset (``None``: the first write allocates them, in the folder too). With a
``prefix`` the zeros are never materialised: each is a view of one zero, and
``memmap_like`` turns the record into sparse files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

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

__all__ = ["allocate"]

_R = TypeVar("_R", bound="TensorClass")


def allocate(
    cls: type[_R],
    batch_size: BatchSizeLike,
    dims: Mapping[str, int | Sequence[int]] | None,
    prefix: str | os.PathLike[str] | None,
    device: DeviceLike,
) -> _R:
    """``cls.allocate(...)``: see ``TensorClass.allocate``."""
    batch = as_batch_size(batch_size)
    sizes = dict(dims or {})
    problems: list[SpecProblem] = []
    lazy = prefix is not None  # zero views now, sparse files below: no memory taken
    target = None if device is None else as_device(device)
    absent: dict[str, list[str]] = {}
    record = _allocate(cls, batch, sizes, target, lazy, problems, absent, set())
    for name, fields in absent.items():
        message = f"the dim {name!r} ({', '.join(fields)}) has no size; pass dims={{{name!r}: ...}}"
        problems.append(SpecProblem(fields[0].rpartition(".")[2], name, None, None, None, message))
    unused = sorted(set(sizes) - _names(cls, set()))
    for name in unused:
        message = f"dims={{{name!r}: ...}} names no dim of {cls.__name__}'s specs"
        problems.append(SpecProblem("", name, sizes[name], None, None, message))
    if problems:
        listed = "; ".join(problem.message for problem in problems)
        raise FieldSpecError(f"{cls.__name__}.allocate: {listed}", problems)
    assert record is not None
    if prefix is None:
        return record
    return saved_copy(record, prefix, False, like=True)


def _allocate(
    cls: type[_R],
    batch: torch.Size,
    sizes: dict[str, Any],
    device: torch.device | None,
    lazy: bool,
    problems: list[SpecProblem],
    absent: dict[str, list[str]],
    within: set[type],
) -> _R | None:
    info: Any = cls.__tclass_info__
    if cls in within:
        message = f"{cls.__name__} contains itself: allocate cannot build it without None"
        problems.append(SpecProblem("", "", None, None, None, message))
        return None
    entries: dict[str, Any] = {}
    for name, rule in info.rules.items():
        value = _allocate_field(
            cls, rule, batch, sizes, device, lazy, problems, absent, {*within, cls}
        )
        if value is not None:
            entries[name] = value
    if problems or absent:
        return None
    return record_from_entries(cls, entries, batch, device)


def _allocate_field(
    cls: type,
    rule: FieldRule,
    batch: torch.Size,
    sizes: dict[str, Any],
    device: torch.device | None,
    lazy: bool,
    problems: list[SpecProblem],
    absent: dict[str, list[str]],
    within: set[type],
) -> Any:
    """A field's zeros, a nested record, or None (its default, or unset)."""
    where = f"{cls.__name__}.{rule.name}"
    if rule.optional or rule.value_field or rule.any_value:
        return None  # unset (None), or its default
    records = [c for c in rule.collections if is_record_class(c)]
    if rule.collections and not rule.tensor:
        if len(records) != 1:
            message = (
                f"{where} is annotated {rule.text}, which has no schema to allocate; make "
                "it optional (`| None`)"
            )
            problems.append(SpecProblem(rule.name, "", None, None, None, message))
            return None
        return _allocate(records[0], batch, sizes, device, lazy, problems, absent, within)
    if rule.spec is None:
        message = (
            f"{where} is annotated {rule.text} with no shape to allocate: annotate it "
            f"Annotated[Tensor, Spec(...)] (or jaxtyping), or make it optional (`| None`)"
        )
        problems.append(SpecProblem(rule.name, "", None, None, None, message))
        return None
    shape, missing, why = allocation_shape(rule.spec, batch, sizes)
    if why is not None:
        problems.append(SpecProblem(rule.name, "", None, None, None, f"{where}: {why}"))
    for name in missing:  # one problem per name, listing its fields (see allocate)
        absent.setdefault(name, []).append(where)
    if shape is None:
        return None
    dtype = allocation_dtype(rule.spec)
    if lazy:
        return torch.zeros((), dtype=dtype).expand(shape)
    return torch.zeros(shape, dtype=dtype, device=device)


def _names(cls: type, seen: set[type]) -> set[str]:
    """The dim names the specs of ``cls`` and its nested records read."""
    if cls in seen:
        return set()
    seen.add(cls)
    names: set[str] = set()
    for rule in cls.__tclass_info__.rules.values():  # type: ignore[attr-defined]
        if rule.spec is not None:
            for dim in rule.spec.dims:
                if dim.kind in (NAMED, VARIADIC) and dim.name:
                    names.add(dim.name)
                elif dim.kind == SYMBOLIC:
                    names.update(dim.names)
        for nested in rule.collections:
            if is_record_class(nested):
                names |= _names(nested, seen)
    return names
