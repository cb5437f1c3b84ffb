"""Rows of a jagged nested tensor (``torch.nested.nested_tensor(..., layout=torch.jagged)``)
along its first dim, which torch cannot slice, gather or split there.

A collection whose leaf is jagged has that leaf's first dim as its batch dim, so
``td[1:]``, ``td[idx]``, ``td[mask]``, ``split`` and ``chunk`` select rows of it. Torch
answers those only for the strided layout; here the selected rows are gathered into a
new jagged tensor (a copy, as the peer's), with the holes of one that has ``lengths``
kept out. Other values are indexed as torch indexes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["cat_rows", "index_rows", "is_jagged", "leaf_shape", "split_rows"]


def is_jagged(value: object) -> bool:
    """Whether ``value`` is a nested tensor of the jagged layout."""
    return isinstance(value, torch.Tensor) and value.layout is torch.jagged


def leaf_shape(tensor: torch.Tensor) -> torch.Size:
    """``tensor.shape``; for a nested tensor of the strided layout (which has no
    ``shape``), its number of parts then each dim's size, -1 where the parts differ
    (as the peer reads it: such a dim is a ragged batch dim of size -1)."""
    if not (tensor.is_nested and tensor.layout is torch.strided):
        return tensor.shape
    shapes = [part.shape for part in tensor.unbind()]
    if not shapes:
        return torch.Size([0])
    dims = [s[0] if len(set(s)) == 1 else -1 for s in zip(*shapes)]
    return torch.Size([len(shapes), *dims])


def index_rows(value: Any, index: Any) -> Any:
    """``value[index]``, where a jagged ``value`` indexed along its first dim (an int, a
    slice, an integer or boolean tensor, a list, or a tuple of one of them followed by
    full slices) gathers those rows into a new jagged tensor."""
    if not is_jagged(value):
        return value[index]
    rows = _rows(index, value.size(0))
    if rows is None:
        return value[index]  # not along the first dim alone: torch's own answer or error
    if isinstance(rows, int):
        return value[rows]
    return _gather(value, rows)


def split_rows(value: Any, sizes: Sequence[int], dim: int) -> Sequence[Any]:
    """``value.split(sizes, dim)``, where a jagged ``value`` split along its first dim
    gives new jagged tensors of those many rows each."""
    if dim != 0 or not is_jagged(value):
        return value.split(list(sizes), dim)  # type: ignore[no-any-return]
    pieces, start = [], 0
    for size in sizes:
        pieces.append(_gather(value, list(range(start, start + size))))
        start += size
    return pieces


def cat_rows(values: Sequence[Any]) -> torch.Tensor | None:
    """The rows of jagged ``values`` one after the other, as one new jagged tensor: the
    ``torch.cat`` along the first dim that torch refuses for nested tensors (as the peer
    concatenates them). None unless every value is jagged with its ragged dim right after
    the first (the caller then raises torch's own error)."""
    if not values or not all(is_jagged(v) and v._ragged_idx == 1 for v in values):
        return None
    parts = [part for value in values for part in value.unbind(0)]
    if not parts:
        return _gather(values[0], [])
    return torch.nested.as_nested_tensor(parts, layout=torch.jagged)


def _rows(index: Any, size: int) -> int | list[int] | None:
    """The rows ``index`` selects along the first dim of ``size``; None for an index that
    reaches further (or adds dims)."""
    if type(index) is tuple:
        full = [isinstance(item, slice) and item == slice(None) for item in index[1:]]
        if not index or not all(full):
            return None
        index = index[0]
    if isinstance(index, bool) or index is None or index is Ellipsis:
        return None
    if isinstance(index, int):
        return index
    if isinstance(index, slice):
        return list(range(size))[index]
    if isinstance(index, (list, range)):
        index = torch.as_tensor(list(index))
    if not isinstance(index, torch.Tensor) or index.ndim != 1:
        return None
    if index.dtype is torch.bool:
        index = index.nonzero().squeeze(1)
    return [row % size if row < 0 else row for row in index.tolist()]


def _gather(value: torch.Tensor, rows: list[int]) -> torch.Tensor:
    """A new jagged tensor of ``value``'s ``rows`` (its holes, if any, left out)."""
    if not rows:  # no rows: the values' trailing shape, no offsets past the first
        jagged: Any = value  # torch's NestedTensor subclass: values() and offsets()
        return torch.nested.nested_tensor_from_jagged(jagged.values()[:0], jagged.offsets()[:1] * 0)
    parts = value.unbind(0)
    return torch.nested.as_nested_tensor([parts[row] for row in rows], layout=torch.jagged)
