"""Where each element of a Python-value node goes under indexing and shape ops: its
flat positions, computed by applying the op to a tensor of element numbers (so every
index torch takes is understood), plus the nested-list and shape helpers the nodes
share."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import torch

Positions = tuple[torch.Size, list[int]]


def element_positions(
    shape: torch.Size, fn: Callable[[torch.Tensor], Any], constant: bool = False
) -> list[Positions]:
    """What a structural op ``fn`` (a torch op, or one that returns several tensors) does
    to the elements of a batch of size ``shape``: the shape and the row-major element
    numbers of each result, worked out on ``arange(numel).reshape(shape)``.

    Under ``torch.compile``, with ``constant`` (``fn`` captures no tensor: a shape op,
    an int or slice index) the result is a constant of the trace and the values are
    gathered by plain Python; otherwise the op runs outside the trace (a graph break),
    since Python values picked by tensor data cannot be part of a graph.
    """
    if not torch.compiler.is_compiling():
        return positions_now(shape, fn)
    return (_positions_constant if constant else _positions_eager)(shape, fn)


def indexed(shape: torch.Size, index: Any) -> Positions:
    """:func:`element_positions` of ``numbers[index]``."""
    items = index if type(index) is tuple else (index,)
    constant = all(item is None or isinstance(item, (int, slice, type(...))) for item in items)
    return element_positions(shape, lambda numbers: numbers[index], constant)[0]


def expanded(shape: torch.Size) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda numbers: numbers.expand(shape)


def positions_now(shape: torch.Size, fn: Callable[[torch.Tensor], Any]) -> list[Positions]:
    result = fn(torch.arange(math.prod(shape)).reshape(shape))
    pieces: list[torch.Tensor] = [result] if isinstance(result, torch.Tensor) else list(result)
    return [(piece.shape, piece.reshape(-1).tolist()) for piece in pieces]


def positions_traced(shape: torch.Size, fn: Callable[[torch.Tensor], Any]) -> list[Positions]:
    return positions_now(shape, fn)


_Op = Callable[[torch.Size, Callable[[torch.Tensor], Any]], list[Positions]]
# Both leave eager calls alone (the first only marks the function for the tracer).
_positions_constant = cast(_Op, torch.compiler.assume_constant_result(positions_traced))  # type: ignore[no-untyped-call]
_positions_eager = cast(_Op, torch.compiler.disable(positions_now))  # type: ignore[no-untyped-call]


def batch_shapes(a: torch.Size, b: torch.Size) -> torch.Size:
    if a == b:
        return a
    return torch.Size(np.broadcast_shapes(tuple(a), tuple(b)))


def nested(values: list[Any], shape: torch.Size) -> Any:
    """Flat row-major ``values`` as nested lists shaped ``shape`` (the value for ``[]``)."""
    if not shape:
        return values[0]
    out: list[Any] = list(values)
    for dim in range(len(shape) - 1, 0, -1):
        size = shape[dim]
        out = [out[g * size : (g + 1) * size] for g in range(math.prod(shape[:dim]))]
    return out


def flattened(values: Sequence[Any], depth: int = 1) -> tuple[list[Any], tuple[int, ...]]:
    """Nested lists as flat row-major values and a shape: lists of equal lengths nest
    into more dims (up to 32; deeper lists, and lists of other lengths, are values)."""
    items = list(values)
    if items and depth < 32 and all(isinstance(item, list) for item in items):
        inner = [flattened(item, depth + 1) for item in items]
        if all(shape == inner[0][1] for _, shape in inner):
            return [value for flat, _ in inner for value in flat], (len(items), *inner[0][1])
    return items, (len(items),)


def dim_after_index(index: Any, dim: int) -> int | None:
    """Where batch dim ``dim`` is after ``index`` (ints, slices and ``None`` only): -1
    if an int removed it, ``None`` if the index is of another kind."""
    items = index if type(index) is tuple else (index,)
    source = out = 0
    for item in items:
        if item is None:
            out += 1
        elif type(item) is int:
            if source == dim:
                return -1
            source += 1
        elif type(item) is slice:
            if source == dim:
                return out
            source += 1
            out += 1
        else:
            return None
    return out + dim - source


def first_along(dim: int) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda numbers: numbers.select(dim, 0)


def removed_dim(shape: torch.Size, first: list[int]) -> int | None:
    """The dim of a batch of size ``shape`` that ``unbind`` removed to give the element
    numbers ``first`` (those of its first piece)."""
    for dim in range(len(shape)):
        if shape[dim]:
            _, positions = element_positions(shape, first_along(dim), constant=True)[0]
            if positions == first:
                return dim
    return None
