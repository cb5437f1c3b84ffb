"""The checks of a collection operand against the collection an element-wise operation
walks (the same keys, nested alike) and of operands no operation takes: their errors
(used by the walk in ``_leaf_walk.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core._batch import format_shape
from tclass._core._records import is_record
from tclass.errors import (
    BatchSizeError,
    InPlaceWriteError,
    KeyNotFoundError,
    OperandError,
    ShapeError,
)

__all__ = [
    "broadcast_batch",
    "check_mask",
    "check_same_keys",
    "grown_in_place",
    "holds_nothing",
    "mismatched_entry",
    "refuse_operand",
]

_Tensor = torch.Tensor


def check_same_keys(
    mine: Mapping[str, Any],
    theirs: Mapping[str, Any],
    prefix: tuple[str, ...],
    subset: bool,
    *,
    extra: bool = False,
) -> None:
    """Raises KeyNotFoundError naming the keys (Python values aside) that only one side
    has (with ``subset``, only the right one's extra keys count; with ``extra``, only
    the left one's: the operand may hold more, as the peer's in-place math reads the
    collection's own keys from it)."""
    if mine.keys() == theirs.keys():
        return
    only_left = [] if subset else [k for k, v in mine.items() if k not in theirs and _data(v)]
    only_right = [] if extra else [k for k, v in theirs.items() if k not in mine and _data(v)]
    if not (only_left or only_right):
        return
    where = f" under {prefix!r}" if prefix else ""
    if extra:
        msg = (
            f"the operand lacks the keys {sorted(only_left)}{where} of the collection it "
            "is combined with (each entry reads its counterpart in the operand; extra "
            "keys of the operand are not read): give an operand holding these keys"
        )
    elif subset:
        msg = f"keys {sorted(only_right)}{where} of the source are not in the destination"
    else:
        msg = (
            f"the collections hold different keys{where} (keys not found and no pad value "
            f"provided): only in the left one: {sorted(only_left)}, only in the right one: "
            f"{sorted(only_right)}; pass default='intersection' (or a value for the missing "
            "entries) to combine them"
        )
    raise KeyNotFoundError(msg)


def _data(value: object) -> bool:
    """Whether an entry counts in the keys two collections must share: not a Python
    value, nor a nested collection holding nothing (as the peer's math pairs the
    leaves: ``x.lerp(end, w)`` where ``w``'s arithmetic dropped ``x``'s empty node) or
    only Python values (which the math keeps from the left collection, as a value at
    the top level: ``x.pow(x.select())`` of ``{'n': {'s': value}}``)."""
    return not getattr(value, "_is_value_node", False) and not _holds_no_tensor(value)


def _holds_no_tensor(value: object) -> bool:
    """Whether ``value`` is a nested collection (not a record) holding no tensor at any
    depth: only Python values and such collections (a lazy stack: no key)."""
    if not isinstance(value, TensorCollection) or value._is_leaf_node or is_record(value):
        return False
    if value._is_lazy:
        return not value._key_names()
    return all(
        getattr(entry, "_is_value_node", False) or _holds_no_tensor(entry)
        for entry in value._entries().values()
    )


def holds_nothing(value: object) -> bool:
    """Whether ``value`` is a nested collection (not a record) with no entry but such
    collections: no tensor or Python value at any depth (of a lazy stack: no key)."""
    if not isinstance(value, TensorCollection) or value._is_leaf_node or is_record(value):
        return False
    if value._is_lazy:
        return not value._key_names()
    return all(map(holds_nothing, value._entries().values()))


def mismatched_entry(
    key: str, prefix: tuple[str, ...], mine: object, theirs: object
) -> KeyNotFoundError:
    """The error for an entry that is a tensor on one side and a collection on the other."""
    path = prefix + (key,)
    name = path[0] if len(path) == 1 else path
    msg = (
        f"entry {name!r} is a {_kind(mine)} in the left collection but a {_kind(theirs)} in "
        "the right one: the collections must be nested alike"
    )
    return KeyNotFoundError(msg)


def _kind(value: object) -> str:
    if isinstance(value, _Tensor):
        return "tensor"
    return type(value).__name__ if _data(value) else "Python value"


def refuse_operand(operation: str, operand: object) -> OperandError:
    """The error for an operand that is not a number, a tensor or a collection. A list
    or tuple is not read as one number per leaf, which the peer's ``_foreach`` kernels
    make of one as long as the leaves (undocumented, and of another length a torch
    error): the message says what to write instead."""
    kind = type(operand).__name__
    if isinstance(operand, (list, tuple)):
        shown = repr(operand) if len(repr(operand)) <= 40 else f"a {kind} of {len(operand)}"
        msg = (
            f"{operation}: the operand {shown} is a {kind}, which is not taken as one number "
            "per leaf: for one value per batch element give torch.tensor(...) of it, for "
            "one number per leaf a collection with the same keys (TensorDict({key: number, "
            "...}, batch_size=[]))"
        )
        return OperandError(msg)
    msg = (
        f"{operation}: unsupported operand of type {kind}; give a number, "
        "a tensor (over the batch dims) or a collection with the same keys"
    )
    return OperandError(msg)


def broadcast_batch(batch_size: torch.Size, shape: Sequence[int], what: str) -> torch.Size:
    """The batch size after broadcasting with ``shape`` (torch's rules: shapes lined up on
    their last dims, sizes equal or 1), or an error naming both."""
    if not shape or shape == batch_size:  # a scalar-shaped operand, or the same batch
        return batch_size
    ndim = max(len(batch_size), len(shape))
    a = (1,) * (ndim - len(batch_size)) + tuple(batch_size)
    b = (1,) * (ndim - len(shape)) + tuple(shape)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            msg = (
                f"cannot broadcast the batch size {format_shape(batch_size)} with {what} "
                f"{format_shape(shape)}: a tensor operand lines up with the last batch dims (as "
                "torch broadcasts) and a collection's batch size must broadcast with this one"
            )
            raise BatchSizeError(msg)
        out.append(y if x == 1 else x)
    return torch.Size(out)


def check_mask(operation: str, shape: torch.Size, batch: torch.Size) -> None:
    """A mask (``where``, ``masked_fill``) covers the leading batch dims: each of its
    dims must be the batch's or 1."""
    for i, (size, own) in enumerate(zip(shape, batch)):
        if size not in (1, own):
            msg = (
                f"{operation}: the mask (or tensor operand) of shape {format_shape(shape)} does "
                f"not fit the batch size {format_shape(batch)} (dim {i} is {size}, not {own}); "
                "a mask covers "
                "the leading batch dims: give it the batch's sizes (or 1) there"
            )
            raise ShapeError(msg)


def grown_in_place(name: str, own: torch.Size, batch: torch.Size) -> InPlaceWriteError:
    """The error of in-place math whose operands would grow the batch size."""
    msg = (
        f"{name}: the operands broadcast the batch size {format_shape(own)} to "
        f"{format_shape(batch)}, and an in-place operation keeps the shapes of the tensors "
        "it writes into; nothing was changed. Give operands that broadcast into the batch "
        "size, or use the out-of-place form"
    )
    return InPlaceWriteError(msg)
