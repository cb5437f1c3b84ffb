"""A lazy stack's entries as a mapping (``stack._tensors``: reads stack the members'
parts, writes split across them) and the walk of a nested key through one member."""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from tclass._base._tensordict_base import Value
from tclass._base.implemented._collection import TensorCollection
from tclass._core._records import storage_of
from tclass._engine._lazy._parts import common_keys, dense_members, split_operand
from tclass.errors import (
    HeterogeneousEntryError,
    KeyNotFoundError,
    KeyThroughTensorError,
    StackError,
    StackKeysError,
)

if TYPE_CHECKING:
    from tclass._engine._lazy._stack import LazyStackedTensorDict

__all__ = ["StackedEntries", "lacks", "uneven_keys", "uneven_keys_error", "walk_path"]

_MISSING: Any = object()


def walk_path(
    member: TensorCollection,
    path: tuple[str, ...],
    lazy_read: Callable[[Any, tuple[str, ...]], Any] | None = None,
) -> Any:
    """The entry at ``path`` in ``member``; with ``lazy_read``, a lazy stack met on the
    way (``member`` included) answers for the rest of the path with ``lazy_read(stack,
    rest)`` instead of stacking its members' entries (which may differ in shape)."""
    node: Any = member
    for depth, part in enumerate(path):
        if not isinstance(node, TensorCollection):
            raise KeyNotFoundError(f"key {path!r} passes through a tensor")
        if lazy_read is not None and node._is_lazy:
            return lazy_read(node, path[depth:])
        node = node._entry(part)
    return node


def refuse_through_tensor(member: TensorCollection, path: tuple[str, ...]) -> None:
    """Raises ``KeyThroughTensorError`` if ``path`` passes through a tensor of ``member``
    (``("a", "x")`` where ``"a"`` is a tensor): a wrong key, not a missing entry."""
    node: Any = member
    for depth, part in enumerate(path):
        if not isinstance(node, TensorCollection):
            msg = (
                f"key {path!r} not found: {path[:depth]!r} is a tensor, not a collection, "
                f"so it has no entry {part!r}"
            )
            raise KeyThroughTensorError(msg)
        if not node._has_entry(part):
            return
        node = node._entry(part)


def lacks(member: TensorCollection, path: tuple[str, ...]) -> bool:
    try:
        walk_path(member, path)
    except KeyNotFoundError:
        return True
    return False


class StackedEntries(MutableMapping[str, Value]):
    """A lazy stack's entries as a mapping: reads stack, writes split across members."""

    __slots__ = ("_stack",)

    def __init__(self, stack: LazyStackedTensorDict) -> None:
        self._stack = stack

    def __getitem__(self, key: str) -> Value:
        return self._stack._entry(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self:
            return default
        return self._stack._entry(key)

    def __contains__(self, key: object) -> bool:
        members = self._stack._members
        if not members or type(key) is not str:
            return False
        present = [key in member._key_names() for member in members]
        if all(present):
            return True
        if any(present):
            self._stack._parts(key)  # raises, naming the members that lack it
        return False

    def __setitem__(self, key: str, value: Value) -> None:
        stack = self._stack
        for member, part in zip(stack._members, split_operand(value, stack, key)):
            member._store_entry(key, part)

    def __delitem__(self, key: str) -> None:
        for member in self._stack._members:
            member._remove_entry(key)

    def pop(self, key: str, default: Any = _MISSING) -> Any:
        if key not in self:
            if default is _MISSING:
                raise KeyNotFoundError(key)
            return default
        value = self._stack._entry(key)
        del self[key]
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(common_keys(self._stack._members))

    def __len__(self) -> int:
        return len(common_keys(self._stack._members))


def uneven_keys_error(
    action: str, members: Sequence[Any], error: StackError
) -> HeterogeneousEntryError | None:
    """The error of ``action`` (``contiguous()``, ``to_tensordict()``...), which needs
    the dense stack of a lazy stack whose ``members`` do not all hold the same keys
    (``error``: the stack's): it names each key held by only some members and which, and
    says how to keep the shared ones (the peer's drops the others without a word). None
    when ``error`` is not about keys."""
    if not isinstance(error, StackKeysError):
        return None
    return uneven_keys(action, members)


def uneven_keys(
    action: str,
    members: Sequence[Any],
    filled: Callable[[tuple[str, ...]], bool] | None = None,
) -> HeterogeneousEntryError | None:
    """The error of ``action`` on a lazy stack whose ``members`` do not all hold the same
    keys (see ``uneven_keys_error``), or None when they do. ``filled(path)``: whether
    ``action`` gives the members lacking the entry at ``path`` a part of their own
    (``densify()``'s empty ones), so that path needs no error."""
    if not members:
        return None
    held = [set(_entry_paths(member, ())) for member in dense_members(list(members))]
    shared = held[0].intersection(*held[1:])
    uneven = sorted(held[0].union(*held[1:]) - shared)
    if filled is not None:
        uneven = [path for path in uneven if not filled(path)]
    if not uneven:
        return None
    names = [path[0] if len(path) == 1 else path for path in uneven]
    listed = "; ".join(
        f"{name!r} in members {[i for i, keys in enumerate(held) if path in keys]}"
        for name, path in zip(names[:8], uneven)
    )
    more = f" and {len(uneven) - 8} more" if len(uneven) > 8 else ""
    args = ", ".join(repr(name) for name in names)
    why = (
        "so the dense stack would have no value for them in the others. They are not "
        f"dropped silently (the peer's {action} drops them)"
        if filled is None
        else "and no empty part can stand for them in the others (an entry with no dims "
        "past its batch size, or a nested collection)"
    )
    msg = (
        f"Failed to stack tensors within a tensordict: {action} needs the dense stack of "
        f"this lazy stack, but some keys are held by only some of its members ({listed}"
        f"{more}), {why}: keep the shared keys with "
        f"lazy.exclude({args}) or lazy.select(*lazy.keys(True, True)) first, or work on the "
        "members (lazy.tensordicts)"
    )
    return HeterogeneousEntryError(msg)


def _entry_paths(node: Any, prefix: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """The paths of the entries a dense stack joins (a nested lazy stack's answers for
    itself, as one entry)."""
    for key, value in storage_of(node)._entries().items():
        nested = isinstance(value, TensorCollection) and not value._is_leaf_node
        if nested and not value._is_lazy:
            yield from _entry_paths(value, (*prefix, key))
        else:
            yield (*prefix, key)
