"""An index of a ragged lazy stack (a ``-1`` in its batch size) read as indices of its
members, as the peer's lazy stack reads any index (``_split_index``): member by member,
never through a shape of the whole batch, which has no one size along the ragged dim.
Reading (``_index.py``) stacks the members' parts; writing (``_index_writes.py``) routes
each part of the value to its member.

The item at the stack dim decides:

* an int (or a 0-d integer tensor) takes that member, indexed by the rest (``MEMBER``);
* a slice takes the members it picks, each indexed by the rest alike, their parts
  stacked along the dim the stack dim becomes (``STACK``); where tensors sit on both
  sides of it, each member takes ``None`` in its place, which keeps its tensors apart as
  in the stack, and its part drops that dim (``keep``);
* a tensor (numbers or a mask) broadcasts with the other tensors to one block of
  positions, each taken from the member the stack dim's tensor names there
  (``GATHER``). Where no other tensor indexes, the member indexed by the basic items
  fills its positions; else it takes the other tensors' values at its positions,
  ``True`` at the stack dim, and its part's block dim is parted among them (``block``).

A mask must match the batch size where it indexes, which a ragged dim has none of: a
``DimError`` (an ``IndexError``, as the peer's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import torch

from tclass._core import _batch
from tclass._engine._value_index import stack_item_position
from tclass.errors import ArgumentValueError, DimError

if TYPE_CHECKING:
    from tclass._engine._lazy._stack import LazyStackedTensorDict

__all__ = ["GATHER", "MEMBER", "STACK", "RaggedSplit", "checked_member", "split_ragged"]

MEMBER, STACK, GATHER = 0, 1, 2
_ALL = slice(None)


class RaggedSplit(NamedTuple):
    """How an index reaches the members (see the module's docstring)."""

    kind: int
    # (member number, its index or None for all of it, the block's flat positions it fills)
    parts: list[tuple[int, Any, list[int]]]
    dim: int = 0  # STACK: where the stack dim lands; GATHER: where the block starts
    keep: bool = False  # STACK: each part has a dim of size 1 at ``dim`` to drop
    shape: torch.Size = torch.Size(())  # GATHER: the block's shape
    block: bool = False  # GATHER: each part has the block's positions as its dim ``dim``


def checked_member(stack: LazyStackedTensorDict, number: int) -> int:
    """``number`` (from the end where negative) as a member's number from 0."""
    count = len(stack._members)
    if not -count <= number < count:
        msg = f"index {number} is out of range for a lazy stack of {count} members"
        raise DimError(msg)
    return number % count


def split_ragged(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> RaggedSplit:
    """``items`` (normalized: no ``...``, lists made tensors) read member by member."""
    _check_masks(stack, items)
    d = stack._stack_dim
    at = stack_item_position(items, d)
    if at == len(items):  # the index stops before the stack dim: a full slice there
        consumed = sum(map(_batch.index_dims_consumed, items))
        items = items + (_ALL,) * (d + 1 - consumed)
        at = len(items) - 1
    item = items[at]
    if _batch.selects_first(item):
        where = _whole_or(items[:at] + items[at + 1 :])
        return RaggedSplit(MEMBER, [(checked_member(stack, int(item)), where, [])])
    advanced = [
        i
        for i, each in enumerate(items)
        if not _batch.is_basic_item(each) and not _batch.selects_first(each)
    ]
    separated = bool(advanced) and any(
        each is None or type(each) is slice for each in items[advanced[0] + 1 : advanced[-1]]
    )
    if type(item) is slice:
        return _split_stack(stack, items, at, advanced, separated)
    return _split_gather(stack, items, at, advanced, separated)


def _whole_or(index: tuple[Any, ...]) -> Any:
    return None if all(type(i) is slice and i == _ALL for i in index) else index


def _check_masks(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> None:
    consumed = 0
    for item in items:
        if isinstance(item, torch.Tensor) and item.dtype is torch.bool and item.ndim:
            sizes = list(stack._batch_size[consumed : consumed + item.ndim])
            if list(item.shape) != sizes:
                msg = (
                    f"a mask of shape {list(item.shape)} indexes dims of sizes {sizes} of a "
                    f"lazy stack of batch size {list(stack._batch_size)} (-1: a ragged dim, "
                    "whose members differ in size). Give a mask of the sizes indexed, or index "
                    "the members one by one (lazy[i]) along a ragged dim"
                )
                raise DimError(msg)
        consumed += _batch.index_dims_consumed(item)


def _advanced_ndim(item: Any) -> int:
    return 1 if isinstance(item, bool) or item.dtype is torch.bool else int(item.ndim)


def _broadcast(shapes: list[torch.Size]) -> torch.Size:
    """The shape the tensors of an index broadcast to (numpy's rule: torch's
    ``broadcast_shapes`` costs ~10 us and imports sympy on its first call)."""
    if len(shapes) == 1:
        return shapes[0]
    try:
        return torch.Size(np.broadcast_shapes(*(tuple(shape) for shape in shapes)))
    except ValueError:
        listed = ", ".join(str(list(shape)) for shape in shapes)
        msg = f"the tensors of the index have shapes {listed}, which do not broadcast together"
        raise DimError(msg) from None


def _scalar(item: Any) -> bool:
    """A scalar bool (Python or 0-d tensor): a mask of no dim."""
    return isinstance(item, bool) or (isinstance(item, torch.Tensor) and item.ndim == 0)


def _split_stack(
    stack: LazyStackedTensorDict,
    items: tuple[Any, ...],
    at: int,
    advanced: list[int],
    separated: bool,
) -> RaggedSplit:
    dim = sum(item is None or type(item) is slice for item in items[:at])
    keep = False
    if advanced:
        if separated or advanced[0] < at:
            dim += max(_advanced_ndim(items[i]) for i in advanced)
        keep = advanced[0] < at < advanced[-1]
    where = _whole_or(items[:at] + ((None,) if keep else ()) + items[at + 1 :])
    picked = items[at]
    if picked.step == 0:
        msg = "slice step cannot be zero; reverse a dim with .flip(dim) instead"
        raise ArgumentValueError(msg)
    numbers = range(len(stack._members))[picked]
    return RaggedSplit(STACK, [(n, where, []) for n in numbers], dim=dim, keep=keep)


def _split_gather(
    stack: LazyStackedTensorDict,
    items: tuple[Any, ...],
    at: int,
    advanced: list[int],
    separated: bool,
) -> RaggedSplit:
    components: dict[int, tuple[torch.Tensor, ...]] = {}
    for i in advanced:
        item = items[i]
        if _scalar(item):
            components[i] = (torch.zeros(int(item), dtype=torch.long),)
        elif item.dtype is torch.bool:
            components[i] = item.nonzero().unbind(-1)
        else:
            components[i] = (item,)
    shape = _broadcast([c.shape for i in advanced for c in components[i]])
    first = sum(_batch.index_dims_consumed(item) for item in items[:at])
    picker = components[at][stack._stack_dim - first]
    if picker.shape != shape or picker.ndim != 1:  # (a 1-d tensor alone: its numbers)
        picker = picker.expand(shape).reshape(-1)
    numbers = picker.tolist()
    positions: dict[int, list[int]] = {}
    for position, number in enumerate(numbers):
        positions.setdefault(checked_member(stack, number), []).append(position)
    block = any(len(components[i]) > 1 or (i != at and not _scalar(items[i])) for i in advanced)
    dim = 0 if separated else sum(x is None or type(x) is slice for x in items[: advanced[0]])
    if not block:
        where = _whole_or(tuple(x for i, x in enumerate(items) if i not in components))
        parts = [(n, where, flat) for n, flat in positions.items()]
        return RaggedSplit(GATHER, parts, dim=dim, shape=shape)
    flat_components = {i: [c.expand(shape).reshape(-1) for c in components[i]] for i in advanced}
    parts = []
    for number, flat in positions.items():
        taken = torch.tensor(flat)
        member_index: list[Any] = []
        consumed = 0
        for i, item in enumerate(items):
            if i not in components or _scalar(item):
                member_index.append(item)
            else:
                for k, values in enumerate(flat_components[i], consumed):
                    member_index.append(True if k == stack._stack_dim else values[taken])
            consumed += _batch.index_dims_consumed(item)
        parts.append((number, tuple(member_index), flat))
    return RaggedSplit(GATHER, parts, dim=dim, shape=shape, block=True)
