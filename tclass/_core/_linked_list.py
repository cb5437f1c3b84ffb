"""``LinkedList``: what ``td[key]`` gives for a ``NonTensorStack`` (the peer's class of that
name): a ``list`` of the values, one per element (nested lists for more dims), whose item
writes reach the stack.

``values[i] = v`` and ``values[i:j] = [...]`` (of the same length) write into the stack in
place, as ``stack[i] = v`` does, at any level of nesting; the stack refuses them when it
is locked (a saved stack), before the list changes. A change of length (``append``,
``extend``, ``insert``, ``pop``, ``remove``, ``clear``, ``del``, ``+=``, ``*=``) cannot
follow the stack's batch size: the list keeps the change and stops writing through.
Equality, hashing and pickling are a list's (a pickle gives a LinkedList linked to
nothing).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable
from typing import Any, Protocol, SupportsIndex

import torch
from typing_extensions import Self

__all__ = ["LinkedList", "holds_none", "link_nested", "linked_values", "only_none", "unlinked"]


class _Writable(Protocol):
    def __setitem__(self, index: Any, value: Any) -> None: ...


class LinkedList(list[Any]):
    """A list of a ``NonTensorStack``'s values whose item writes reach the stack."""

    def __init__(
        self, values: Iterable[Any] = (), *, stack: Any = None, prefix: tuple[int, ...] = ()
    ) -> None:
        super().__init__(values)
        self._stack = None if stack is None else weakref.ref(stack)
        self._prefix = prefix

    def linked(self) -> Any:
        """The stack this list writes into, or None (unlinked, or the stack is gone)."""
        return None if self._stack is None else self._stack()

    def tolist(self) -> list[Any]:
        """The values as plain lists (nested ones too), linked to nothing."""
        return unlinked(self)  # type: ignore[no-any-return]

    def __setitem__(self, index: Any, value: Any) -> None:
        stack = self.linked()
        if stack is None:
            super().__setitem__(index, value)
            return
        if isinstance(index, slice):
            items = list(value)
            positions = range(*index.indices(len(self)))
            if len(items) != len(positions):  # the length changes: the list only
                self._unlink()
                super().__setitem__(index, items)
                return
            for position, item in zip(positions, items, strict=True):
                self._write(stack, position, item)
            return
        self._write(stack, index.__index__() % max(len(self), 1), value)

    def _write(self, stack: _Writable, position: int, value: Any) -> None:
        """``value`` into the stack at ``prefix + (position,)`` and into this list; a row
        (an inner list) element by element, keeping the row linked."""
        row = list.__getitem__(self, position)
        if isinstance(row, LinkedList) and isinstance(value, list) and len(value) == len(row):
            row[:] = value
            return
        stack[self._prefix + (position,)] = value
        list.__setitem__(self, position, value)

    def _unlink(self) -> None:
        self._stack = None

    def append(self, value: Any) -> None:
        self._unlink()
        super().append(value)

    def extend(self, values: Iterable[Any]) -> None:
        self._unlink()
        super().extend(values)

    def insert(self, index: SupportsIndex, value: Any) -> None:
        self._unlink()
        super().insert(index, value)

    def pop(self, index: SupportsIndex = -1) -> Any:
        self._unlink()
        return super().pop(index)

    def remove(self, value: Any) -> None:
        self._unlink()
        super().remove(value)

    def clear(self) -> None:
        self._unlink()
        super().clear()

    def __delitem__(self, index: Any) -> None:
        self._unlink()
        super().__delitem__(index)

    def __iadd__(self, values: Iterable[Any]) -> Self:  # type: ignore[misc]
        self._unlink()
        return super().__iadd__(values)

    def __imul__(self, times: SupportsIndex) -> Self:
        self._unlink()
        return super().__imul__(times)

    def __repr__(self) -> str:
        return f"LinkedList({super().__repr__()})"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (LinkedList, (list(self),))


def unlinked(value: Any) -> Any:
    """``value`` with every LinkedList in it (nested ones too) as a plain list: what a
    collection stores when it is given one (the values, not the link)."""
    if isinstance(value, LinkedList):
        return [unlinked(item) for item in value]
    return value


def only_none(value: Any) -> bool:
    """Whether a Python value node's value is ``None``: the value itself, or every element
    of a per-element stack (nested lists of at least one ``None``). What the peer's
    ``to_dict(retain_none=False)`` (so ``numpy()`` and ``to_namedtuple()``) leaves out."""
    if isinstance(value, list):
        return bool(value) and all(only_none(item) for item in value)
    return value is None


def holds_none(read: Any, numel: int, data: Any) -> bool:
    """Whether a Python value node holds ``None`` as the peer's ``to_dict(retain_none=
    False)`` (so ``numpy()`` and ``to_namedtuple()``) reads it: every element ``None``
    (``read``: its values), or over no elements (``numel`` 0) the value its members hold
    (``data``: ``unsqueeze(0)`` of ``TensorDict({"s": None}, [0])`` holds ``None``)."""
    return only_none(read) or (not numel and data is None)


def linked_values(values: list[Any], shape: torch.Size, stack: Any) -> Any:
    """Flat row-major ``values`` as nested LinkedLists shaped ``shape``, linked to
    ``stack`` (the value itself for ``[]``)."""
    if not shape:
        return values[0]
    return _level(values, tuple(shape), stack, ())


def _level(values: list[Any], shape: tuple[int, ...], stack: Any, prefix: tuple[int, ...]) -> Any:
    if len(shape) == 1:
        return LinkedList(values, stack=stack, prefix=prefix)
    inner = math.prod(shape[1:])
    rows = [  # a list, not a generator: torch.compile traces this
        _level(values[i * inner : (i + 1) * inner], shape[1:], stack, (*prefix, i))
        for i in range(shape[0])
    ]
    return LinkedList(rows, stack=stack, prefix=prefix)


def link_nested(value: Any, ndim: int, target: Any, prefix: tuple[int, ...] = ()) -> Any:
    """Nested lists ``ndim`` levels deep as LinkedLists writing into ``target`` (the
    collection they were read from: ``target[i, j] = item``)."""
    if ndim == 0 or not isinstance(value, list):
        return value
    items = [link_nested(item, ndim - 1, target, (*prefix, i)) for i, item in enumerate(value)]
    return LinkedList(items, stack=target, prefix=prefix)
