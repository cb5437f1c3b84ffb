"""Where the stack dim of a stack of Python values goes under an advanced index (several
tensors, a tensor of several dims), as the peer's lazy stack of ``NonTensorData``
members indexes it: which dims of the result still run over members decides whether
what is left reads as one value (``NonTensorData``) or as a stack of values.

The rules are those of ``_lazy/_index.py`` (``index_lazy``), which follows the peer's
lazy stack, read off the index and the batch size alone (a value stack holds no
members to index): an int at the stack dim takes one member (one value); a slice there
indexes every member alike, so the stack dim lands where the slice leaves it (or, when
tensors on both sides of it part the members' dims, each dim along which the member
changes nests a stack); a tensor there makes each dim the tensors give a stack dim,
nested in order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from tclass._core._batch import (
    advanced_block,
    index_dims_consumed,
    indexed_shape,
    is_basic_item,
    selects_first,
)

__all__ = ["dims_after_advanced", "member_element"]

_ALL = slice(None)


def dims_after_advanced(index: Any, dim: int, shape: torch.Size) -> tuple[int, ...] | None:
    """Where the one stack dim ``dim`` of a stack of values of batch size ``shape`` is
    after ``index`` (normalized: no ``...``) that holds tensors: ``()`` where one member
    is taken (one value), else the stack dims of the result, outermost first. None where
    the index selects nothing (the peer's members then decide) or fails."""
    items = tuple(_as_item(item) for item in (index if type(index) is tuple else (index,)))
    at = _stack_item_position(items, dim)
    stack_item = items[at] if at < len(items) else _ALL
    if selects_first(stack_item):
        return ()
    if isinstance(stack_item, torch.Tensor):
        first, count = advanced_block(items)
        sizes = indexed_shape(shape, items)[first : first + count]
        if 0 in sizes:  # no member: the peer's stack runs along that dim only
            return (first + sizes.index(0),)
        return tuple(range(first, first + count))
    if type(stack_item) is not slice:
        return None
    each = _each_member_dim(items, at, dim, shape)
    if each is not None:
        return (each,)
    ones = [1] * len(shape)
    ones[dim] = shape[dim]
    ids = torch.arange(shape[dim]).reshape(ones).expand(shape)[items]
    return _varying_dims(ids) if ids.numel() else None


def member_element(index: Any, dims: tuple[int, ...], shape: torch.Size) -> int | None:
    """The element number of an element of the member that ``index`` (normalized) takes
    with an int (or a 0-d integer tensor) at each of the stack dims ``dims``, where it
    selects no element (a mask of no ``True`` elsewhere): the peer's member keeps its
    value there. None where an item at a stack dim is no int or the member is empty."""
    items = tuple(_as_item(item) for item in (index if type(index) is tuple else (index,)))
    picked: list[Any] = [_ALL] * len(shape)
    for dim in dims:
        at = _stack_item_position(items, dim)
        item: Any = items[at] if at < len(items) else _ALL
        if not selects_first(item) or not -shape[dim] <= int(item) < shape[dim]:
            return None
        picked[dim] = int(item)
    numbers = torch.arange(math.prod(shape)).reshape(shape)[tuple(picked)]
    return int(numbers.reshape(-1)[0]) if numbers.numel() else None


def _as_item(item: Any) -> Any:
    if isinstance(item, (list, range, np.ndarray)):
        tensor = torch.as_tensor(item)
        return tensor.long() if tensor.numel() == 0 else tensor
    return item


def _stack_item_position(items: tuple[Any, ...], dim: int) -> int:
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


def _each_member_dim(items: tuple[Any, ...], at: int, dim: int, shape: torch.Size) -> int | None:
    """Where the stack dim lands when every member is indexed alike (a slice at the
    stack dim), or None where tensors on both sides of it, nothing between them to part
    their dims but a dim before them, make the peer take the elements instead."""
    tensors = [i for i, item in enumerate(items) if not is_basic_item(item)]
    if tensors and tensors[0] < at < tensors[-1]:
        rest = items[:at] + items[at + 1 :]
        between = rest[tensors[0] : tensors[-1] - 1]
        before = items[: tensors[0]]
        if not any(item is None or type(item) is slice for item in between) and any(
            item is None or type(item) is slice for item in before
        ):
            return None
    whole = items[:at] + (_ALL,) + items[at + 1 :]
    shapes = []
    for size in (2, 3):
        probe = list(shape)
        probe[dim] = size
        shapes.append(indexed_shape(torch.Size(probe), whole))
    return next(i for i, (a, b) in enumerate(zip(*shapes, strict=True)) if a != b)


def _varying_dims(ids: torch.Tensor) -> tuple[int, ...] | None:
    """The stack dims of a result whose elements come from members ``ids``: nested
    along the first dim where the member changes, and so on inside each part; None
    where the parts nest differently."""
    along = next((d for d in range(ids.ndim) if not bool((ids == ids.narrow(d, 0, 1)).all())), None)
    if along is None:
        return ()
    inner = {_varying_dims(ids.select(along, j)) for j in range(ids.shape[along])}
    if len(inner) != 1:
        return None
    (one,) = inner
    return None if one is None else (along, *(d + (d >= along) for d in one))
