"""The stack dims of Python-value stacks joined by ``stack`` / ``cat`` (which dims the
members were stacked along, kept as the peer's stack of stacks keeps them), and the
peer's repr of a stack: what ``_nontensor_stack`` builds its joins with. The stacks
are told apart from other nodes as ``ENGINE.NonTensorStack`` (a ragged stack, its
subclass, is not one here)."""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Sequence
from typing import Any

import torch

from tclass._base._provided import ENGINE
from tclass._core._tracing import tracing
from tclass._engine._nontensor import NonTensorData
from tclass._engine._value_positions import StackDims, same_value, shifted_in

__all__ = ["cat_dims", "dims_of", "one_held", "stack_repr", "stacked_dims"]


def stack_repr(shown: str, batch_size: torch.Size, device: torch.device | None) -> str:
    """A ``NonTensorStack``'s repr in the peer's form: its values (``shown``, cut past 50
    characters), batch size and device on lines of their own."""
    if len(shown) > 50:
        shown = f"{shown[:50]}..."
    parts = (shown, f"batch_size={batch_size}", f"device={device}")
    return "NonTensorStack(\n" + ",\n".join(textwrap.indent(part, _INDENT) for part in parts) + ")"


_INDENT = "    "


def one_held(parts: Sequence[Any]) -> tuple[Any, ...]:
    """``(value,)`` when every part holds ``value`` once (a ``NonTensorData``, or a
    stack held as one value), else ``()``: their join holds it in every element."""
    held: list[Any] = []
    for part in parts:
        if type(part) is NonTensorData:
            held.append(part.data)
        elif type(part) is ENGINE.NonTensorStack and part._known_in_trace():
            held.append(part._held[0])
        else:
            return ()
    if all(same_value(value, held[0]) for value in held[1:]):
        return (held[0],)
    return ()


def dims_of(shapes: set[torch.Size]) -> set[int]:
    """The sizes found along any dim of ``shapes`` (``-1``: a ragged dim)."""
    return {size for shape in shapes for size in shape}


def stacked_dims(parts: Sequence[Any], dim: int) -> StackDims:
    """The stack dims of ``parts`` stacked along ``dim``: ``dim`` (the outermost), then
    the parts' own when they share them (the peer's stack of stacks); ``None`` when the
    parts are stacked differently."""
    found = {part._stack_dims if type(part) is ENGINE.NonTensorStack else () for part in parts}
    inner = found.pop() if len(found) == 1 else None
    return None if inner is None else shifted_in(inner, dim)


def cat_dims(parts: Sequence[Any], dim: int) -> StackDims:
    """The stack dims of ``parts`` concatenated along ``dim``: ``dim`` when each part
    holds one value or was stacked along ``dim`` only; the parts' own when they share
    them and ``dim`` is one (or the parts have no elements); else the one stack dim a cat
    along another dim keeps (:func:`_stack_dims_kept`), or ``None``."""
    found = {part._stack_dims if type(part) is ENGINE.NonTensorStack else (dim,) for part in parts}
    if found == {(dim,)}:
        return (dim,)
    shared = found.pop() if len(found) == 1 else None
    if tracing():  # (the values are not read in the trace)
        return shared if shared is not None and dim in shared else None
    if shared is not None and (dim in shared or not any(part._values for part in parts)):
        return shared  # (over no elements, no value tells the members apart: kept)
    return _stack_dims_kept(parts, dim)


def _stack_dims_kept(parts: Sequence[Any], dim: int) -> StackDims:
    """The dims every part's members were stacked along (a stack of stacks: each of its
    dims), kept by a cat along another dim when the parts' members at each position
    hold one equal value: the peer concatenates member with member, and members of one
    value give one value (so ``unbind`` along those dims still gives one value per
    member). None otherwise."""
    found = {part._stack_dims if type(part) is ENGINE.NonTensorStack else None for part in parts}
    dims = found.pop() if len(found) == 1 else None
    if not dims or dim in dims or not all(part._values for part in parts):
        return None
    first = parts[0]
    for position in itertools.product(*(range(first._shape[d]) for d in dims)):
        value = first._values[_flat_at(first._shape, dims, position)]
        for part in parts[1:]:
            other = part._values[_flat_at(part._shape, dims, position)]
            if other is not value and not same_value(other, value):
                return None
    return dims


def _flat_at(shape: torch.Size, dims: tuple[int, ...], position: tuple[int, ...]) -> int:
    """The row-major index of the first element of the member at ``position`` along
    ``dims`` (0 along every other dim)."""
    return sum(at * math.prod(shape[d + 1 :]) for d, at in zip(dims, position, strict=True))
