"""Removing, renaming and selecting the entries of a TensorDict: ``pop``, ``del_``,
``rename_key_``, ``select`` and ``exclude`` (a mixin of ``TensorDict``, which holds the
slots these methods change). A nested key reaches through nested TensorDicts; a record or
a lazy stack on the way removes its own entries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeGuard, cast

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection
from tclass._core import _keys
from tclass.errors import KeyConflictError, KeyNotFoundError, KeyThroughTensorError, LockedError

if TYPE_CHECKING:
    from tclass._engine._saved import SavedAt
    from tclass._engine._td import TensorDict

__all__ = ["LOCKED_MSG", "RemovalOps"]

_MISSING: Any = object()
LOCKED_MSG = (
    "Cannot modify locked TensorDict: cannot {action} a locked collection. Unlock it "
    "first (with td.unlock_(): ...), or write data in place with set_() or td[index] = value"
)


class RemovalOps(TensorDictBase):
    """The removing and renaming methods of ``TensorDict`` (see the module docstring).
    Only ``TensorDict`` derives from it, so ``isinstance(x, RemovalOps)`` here tells a
    TensorDict (whose module imports this one)."""

    if TYPE_CHECKING:  # TensorDict's slots and methods
        _tensors: dict[str, Value]
        _batch_size: torch.Size
        _device: torch.device | None
        _locked: bool
        _saved_at: SavedAt | None

        def _remove_entry(self, key: str) -> Value: ...
        def _copy_top(self) -> Self: ...
    else:
        __slots__ = ()

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        """Removes the entry ``key`` and returns it (or ``default`` if given and absent)."""
        path = _keys.unravel_key(key)
        parent: Any = self if type(path) is str else self.get(path[:-1], None)
        leaf = path if type(path) is str else path[-1]
        if _is_other_node(parent):  # a record or a lazy stack removes its own entries
            return parent.pop(leaf) if default is _MISSING else parent.pop(leaf, default)
        if not isinstance(parent, RemovalOps) or leaf not in parent._tensors:
            if default is not _MISSING:
                return default
            if type(path) is not str:
                self.get(path)  # a key through a tensor: KeyThroughTensorError, as the peer
            raise self._missing_key(path, popping=True)
        if parent._locked:
            raise LockedError(LOCKED_MSG.format(action=f"remove {path!r} from"))
        return parent._remove_entry(leaf)

    def del_(self, key: Any) -> Self:
        """Removes the entry ``key``; returns ``self``. A locked TensorDict refuses before
        the key is looked up (as the peer: ``pop`` looks it up first)."""
        if self._locked:
            raise LockedError(LOCKED_MSG.format(action=f"remove {key!r} from"))
        try:
            self.pop(key)
        except KeyNotFoundError as error:
            if type(error) is not KeyNotFoundError:  # a key through a tensor...: as raised
                raise
            # pop's error tells how to pop with a default: say what was not found instead
            raise self._missing_key(_keys.unravel_key(key)) from None
        return self

    def __delitem__(self, key: Any) -> None:
        self.del_(key)

    def rename_key_(self, old_key: Any, new_key: Any, safe: bool = False) -> Self:
        """Moves the entry ``old_key`` to ``new_key``; with ``safe``, ``new_key`` must be new.
        Renaming a key to itself changes nothing (the key keeps its place)."""
        if self._locked:  # checked first, as in the peer
            raise LockedError(LOCKED_MSG.format(action=f"rename {old_key!r} in"))
        if _keys.unravel_key(old_key) == _keys.unravel_key(new_key):
            if old_key not in self:
                raise self._no_key_to_rename(old_key)
            return self
        if safe and new_key in self and not _keys.lies_inside(new_key, old_key):
            msg = (
                f"rename_key_: the key {new_key!r} is already present in TensorDict "
                f"({type(self).__name__}); pass safe=False to overwrite it"
            )
            raise KeyConflictError(msg)
        if self._renamed_in_folder(_keys.unravel_key(old_key), _keys.unravel_key(new_key)):
            return self
        if _keys.lies_inside(old_key, new_key):  # the node that holds it is replaced
            if old_key not in self:  # whole, as in the peer: left as it was for what
                raise self._no_key_to_rename(old_key)  # else holds it
            self.set(new_key, self.get(old_key))
            return self
        try:
            value = self.pop(old_key)
        except KeyNotFoundError:  # (pop's own message speaks of a pop)
            raise self._no_key_to_rename(old_key) from None
        try:
            self.set(new_key, value)
        except Exception:
            self.set(old_key, value)  # leave the TensorDict as it was
            raise
        return self

    def _no_key_to_rename(self, old_key: Any) -> Exception:
        """The error of a missing ``old_key``: a ``KeyThroughTensorError`` (a ``KeyError``
        and the peer's ``ValueError``) where the key passes through a tensor, else the
        ``KeyNotFoundError`` naming the keys."""
        try:
            self.get(old_key)
        except KeyThroughTensorError as error:
            return error
        except KeyError:
            pass
        return self._missing_key(_keys.unravel_key(old_key))

    def _renamed_in_folder(self, old_key: Any, new_key: Any) -> bool:
        """Renames an entry of a node saved in a folder within that node: its files and
        listing move with it (the folder loads back what memory holds, and the entry
        keeps its identity). False where there is nothing of the kind to do."""
        old, new = _keys.key_path(old_key), _keys.key_path(new_key)
        if len(old) != len(new) or old[:-1] != new[:-1]:
            return False
        parent: Any = self
        for part in old[:-1]:
            parent = parent._tensors.get(part)
            if not isinstance(parent, RemovalOps):
                return False
        saved = parent._saved_at
        if saved is None or parent._locked or old[-1] not in parent._tensors:
            return False
        saved.entry_renamed(cast("TensorDict", parent), old[-1], new[-1])
        tensors = parent._tensors  # an entry it replaces keeps its place, as in memory
        tensors[new[-1]] = tensors.pop(old[-1])
        return True

    def select(
        self, *keys: Any, inplace: bool = False, strict: bool = True, as_tensordict: bool = False
    ) -> Self:
        """A TensorDict with only ``keys`` (nested keys allowed), sharing the tensors.

        With ``strict=False`` missing keys are ignored; otherwise they raise.
        ``as_tensordict`` (a record gives its TensorDict) changes nothing here.
        """
        # As the peer: nested keys are grouped by their first part and selected by the
        # nested collection itself (a record stays a record); a nested key selects within
        # an entry that is also selected whole. In place, a locked TensorDict refuses first.
        _keys.selection_keys(keys, "select")
        if inplace and self._locked:
            raise LockedError(LOCKED_MSG.format(action="remove entries from"))
        groups: dict[str, list[tuple[str, ...]]] = {}
        for key in keys:
            path = _keys.key_path(_keys.unravel_key(key))
            value = self._tensors.get(path[0], _MISSING)
            if value is _MISSING or (
                len(path) > 1 and (not isinstance(value, TensorCollection) or value._is_leaf_node)
            ):
                if strict:
                    raise self._missing_key(path if len(path) > 1 else path[0])
                continue
            subkeys = groups.setdefault(path[0], [])
            if len(path) > 1:
                subkeys.append(path[1:])
        try:
            entries: dict[str, Any] = {
                head: cast(TensorCollection, self._tensors[head]).select(*subkeys, strict=strict)
                if subkeys
                else self._tensors[head]
                for head, subkeys in groups.items()
            }
        except KeyNotFoundError:  # a nested key missing below: the error names it whole
            for head, subkeys in groups.items():
                for sub in subkeys:
                    if self.get((head, *sub), _MISSING) is _MISSING:
                        raise self._missing_key((head, *sub)) from None
            raise
        if not inplace:
            return self._new_like(entries, self._batch_size, self._device)
        for head, subkeys in groups.items():  # every key checked above: none raises now
            if subkeys:  # in place, nested collections keep their identity, as the peer
                entries[head] = cast(TensorCollection, self._tensors[head]).select(
                    *subkeys, strict=False, inplace=True
                )
        return self._replace_entries(self._new_like(entries, self._batch_size, self._device))

    def exclude(self, *keys: Any, inplace: bool = False) -> Self:
        """A TensorDict without ``keys`` (nested keys allowed; missing ones are ignored).

        With ``inplace=True`` the entries are removed from this TensorDict and from its
        nested TensorDicts themselves. With no keys, ``copy()``.
        """
        _keys.selection_keys(keys, "exclude")
        if inplace:
            paths = [_keys.key_path(key) for key in keys]
            for path in paths:  # a key under another excluded one is left to it, as the
                if not any(path[: len(p)] == p for p in paths if len(p) < len(path)):
                    _pop_path(self, path)  # peer: the nested node it names is not written
            return self
        if not keys:  # as the peer: a copy, whose nested TensorDicts are new (unlocked)
            return self.copy()
        out = self._new_like(dict(self._tensors), self._batch_size, self._device)
        for key in keys:
            _drop_path(out, _keys.key_path(key))
        return out

    def _replace_entries(self, other: RemovalOps) -> Self:
        if self._locked:
            raise LockedError(LOCKED_MSG.format(action="remove entries from"))
        if self._saved_at is not None:
            for key in [key for key in self._tensors if key not in other._tensors]:
                self._saved_at.entry_removed(cast("TensorDict", self), key)
        self._tensors = other._tensors
        return self


def _pop_path(root: RemovalOps, path: tuple[str, ...]) -> None:
    """Removes ``path`` from ``root``'s own nested TensorDicts, if it is there."""
    node = root
    for at, part in enumerate(path[:-1]):
        child = node._tensors.get(part)
        if _is_other_node(child):
            child.exclude(path[at + 1 :], inplace=True)
            return
        if not isinstance(child, RemovalOps):
            return
        node = child
    if path[-1] in node._tensors:
        if node._locked:
            raise LockedError(LOCKED_MSG.format(action=f"remove {path!r} from"))
        node._remove_entry(path[-1])


def _is_other_node(value: object) -> TypeGuard[Any]:
    """Whether ``value`` is a nested collection other than a TensorDict (a record, a
    lazy stack), which answers for its own entries."""
    return (
        isinstance(value, TensorCollection)
        and not isinstance(value, RemovalOps)
        and not value._is_leaf_node
    )


def _drop_path(out: RemovalOps, path: tuple[str, ...]) -> None:
    """Removes ``path`` from ``out``, copying the nested levels it passes (not the leaves)."""
    node = out
    for at, part in enumerate(path[:-1]):
        child = node._tensors.get(part)
        if _is_other_node(child):  # a record or a lazy stack excludes from itself
            node._tensors[part] = child.exclude(path[at + 1 :])
            return
        if not isinstance(child, RemovalOps):
            return
        child = child._copy_top()
        node._tensors[part] = child
        node = child
    node._tensors.pop(path[-1], None)
