"""Which element of a stack of Python values an index with an int at each stack dim
takes, where it selects no element (the peer's member keeps its value there), what such
an index leaves for the member it picks (``member_rest``), whether an advanced index
picks members (``advanced_at_stack_dim``), and the index helpers that
``_lazy/_value_nesting.py`` (where the stack dims go under tensor indices) shares.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from tclass._core._batch import index_dims_consumed, selects_first

__all__ = [
    "advanced_at_stack_dim",
    "as_item",
    "member_element",
    "member_rest",
    "stack_item_position",
]

_ALL = slice(None)


def member_element(index: Any, dims: tuple[int, ...], shape: torch.Size) -> int | None:
    """The element number of an element of the member that ``index`` (normalized) takes
    with an int (or a 0-d integer tensor) at each of the stack dims ``dims``, where it
    selects no element (a mask of no ``True`` elsewhere): the peer's member keeps its
    value there. None where an item at a stack dim is no int or the member is empty."""
    items = tuple(as_item(item) for item in (index if type(index) is tuple else (index,)))
    picked: list[Any] = [_ALL] * len(shape)
    for dim in dims:
        at = stack_item_position(items, dim)
        item: Any = items[at] if at < len(items) else _ALL
        if not selects_first(item) or not -shape[dim] <= int(item) < shape[dim]:
            return None
        picked[dim] = int(item)
    numbers = torch.arange(math.prod(shape)).reshape(shape)[tuple(picked)]
    return int(numbers.reshape(-1)[0]) if numbers.numel() else None


def member_rest(
    index: Any, dims: tuple[int, ...] | None, shape: torch.Size
) -> tuple[Any, ...] | None:
    """What ``index`` (normalized) indexes in the member it picks with an int (or a 0-d
    integer tensor) at each of the stack dims ``dims`` (``None``: every dim): its items
    at the other dims and its ``None``s, in order; the peer's stack indexes the member
    (a ``NonTensorData`` over the other dims) with them. None where an item at a stack
    dim is no int."""
    items = tuple(as_item(item) for item in (index if type(index) is tuple else (index,)))
    stack_dims = range(len(shape)) if dims is None else dims
    at_stack = {stack_item_position(items, dim) for dim in stack_dims}
    if any(at < len(items) and not selects_first(items[at]) for at in at_stack):
        return None
    if any(at == len(items) for at in at_stack):
        return None  # a stack dim the index leaves whole: no one member
    return tuple(item for at, item in enumerate(items) if at not in at_stack)


def advanced_at_stack_dim(index: Any, dims: tuple[int, ...] | None, shape: torch.Size) -> bool:
    """Whether ``index`` (normalized) has a tensor, array or list (no 0-d integer tensor)
    at one of the stack dims ``dims`` (``None``: every dim): the peer's stack then copies
    the members it picks, where at the other dims it indexes each member further."""
    items = tuple(as_item(item) for item in (index if type(index) is tuple else (index,)))
    for dim in range(len(shape)) if dims is None else dims:
        at = stack_item_position(items, dim)
        if at < len(items) and isinstance(items[at], torch.Tensor) and not selects_first(items[at]):
            return True
    return False


def as_item(item: Any) -> Any:
    if isinstance(item, (list, range, np.ndarray)):
        tensor = torch.as_tensor(item)
        return tensor.long() if tensor.numel() == 0 else tensor
    return item


def stack_item_position(items: tuple[Any, ...], dim: int) -> int:
    """The position in ``items`` of the item indexing ``dim`` (``len(items)``: none)."""
    consumed = 0
    for position, item in enumerate(items):
        if item is None:
            continue
        width = index_dims_consumed(item)
        if consumed <= dim < consumed + width:
            return position
        consumed += width
    return len(items)
