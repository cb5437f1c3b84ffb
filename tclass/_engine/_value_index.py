"""Which element of a stack of Python values an index with an int at each stack dim
takes, where it selects no element (the peer's member keeps its value there), and the
index helpers that ``_lazy/_value_nesting.py`` (where the stack dims go under tensor
indices) shares.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from tclass._core._batch import index_dims_consumed, selects_first

__all__ = ["as_item", "member_element", "stack_item_position"]

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
