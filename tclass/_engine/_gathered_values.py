"""The Python values of a ``NonTensorStack`` under ``torch.compile``, as element numbers.

A stack of different values (records stacked from rows with different labels) holds
them in a Python list; a compiled graph that read the list (to index it, expand it,
stack it) would be tied to its length, and so recompiled for every batch size. Traced,
a structural op works on a tensor of element numbers instead (``arange(numel)`` shaped
as the batch: torch does the op in the graph, with symbolic sizes), and the stack it
gives holds those numbers and the stacks they number (its *sources*, whose lists the
trace never reads), until its values are first read, outside the graph.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch

from tclass._engine._value_positions import copy_containers, dims_after_index

__all__ = [
    "Gather",
    "copies_members",
    "element_numbers",
    "gathered_values",
    "joined_numbers",
    "traced_rows",
]

# The stacks whose values are numbered (their flat lists, one after the other), the
# numbers of the values, shaped as the batch, and how the values are copied when read
# ("": not copied; "deep": ``copy.deepcopy``; "containers": ``copy_containers``, a
# shallow clone's copy of dicts, lists and tuples).
Gather = tuple[tuple[Any, ...], torch.Tensor, str]


def element_numbers(stack: Any) -> Gather:
    """``stack``'s values as numbers: of its sources when it holds some, else of its own
    list (read when the numbers are turned into values, never here)."""
    gather = getattr(stack, "_gather", None)
    if gather:
        return gather  # type: ignore[no-any-return]
    numbers = torch.arange(math.prod(stack._shape)).reshape(stack._shape)
    return (stack,), numbers, ""


def joined_numbers(parts: list[Any], op: str, dim: int) -> Gather:
    """The numbers of ``parts`` (stacks) stacked or concatenated along ``dim``: each
    part's counted past the values of the parts before it."""
    sources: list[Any] = []
    pieces: list[torch.Tensor] = []
    offset: Any = 0
    copies = {element_numbers(part)[2] for part in parts}
    if len(copies) > 1:  # (some parts copy their values when read: all copy them)
        copies = {"deep"}
    for part in parts:
        own, numbers, _ = element_numbers(part)
        pieces.append(numbers + offset)
        sources += own
        for source in own:
            offset = offset + math.prod(source._shape)
    joined = torch.stack(pieces, dim) if op == "stack" else torch.cat(pieces, dim)
    return tuple(sources), joined, copies.pop()


def gathered_values(gather: Gather) -> list[Any]:
    """The values numbered (outside the graph: the numbers are read)."""
    sources, numbers, copies = gather
    flat = [value for source in sources for value in source._values]
    values = [flat[at] for at in numbers.reshape(-1).tolist()]
    if copies == "deep":
        return copy.deepcopy(values)
    return list(map(copy_containers, values)) if copies else values


def traced_rows(stack: Any, index: Any) -> Any:
    """``stack[index]`` under ``torch.compile``, for ints, slices, ``None``, ``...`` and
    integer tensors: indexed as numbers; None where it gives one value of a stack of
    different ones (read from the list: the graph then depends on its length) or for
    another index."""
    items = index if type(index) is tuple else (index,)
    if not all(type(item) in _TRACED_ITEMS or _integer_tensor(item) for item in items):
        return None
    sources, numbers, copies = element_numbers(stack)
    picked = numbers[index]
    dims = dims_after_index(index, stack._stack_dims, stack._shape)
    if stack._known_in_trace():
        node = stack._filled(picked.shape, stack._device, dims)
    elif not picked.shape or dims == ():
        return None
    else:
        node = stack._numbered((sources, picked, copies), stack._device, dims)
    return node if copies_members(index) else stack._as_saved(node)


_TRACED_ITEMS = frozenset({int, slice, type(None), type(...)})


def _integer_tensor(item: Any) -> bool:
    return (
        isinstance(item, torch.Tensor)
        and not item.is_floating_point()
        and item.dtype is not torch.bool
        and not item.is_complex()
    )


def copies_members(index: Any) -> bool:
    """Whether ``index`` holds a tensor, an array or a list (an advanced index): the
    peer's stack then gives a copy of the members it picks (``clone(recurse=False)``),
    as torch copies a tensor's elements, where ints and slices give a view."""
    items = index if type(index) is tuple else (index,)
    return not all(
        item is None or item is Ellipsis or isinstance(item, (int, slice)) for item in items
    )
