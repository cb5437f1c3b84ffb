"""Locking through nested collections, as the peer's "lock graph".

``lock_()`` on an unlocked collection locks it and every collection nested in it, and
each nested one remembers, by weak reference (it never keeps them alive), the collections
above it that the lock came through. ``unlock_()`` unlocks a collection and what is nested
in it, but refuses, with a :class:`~tclass.errors.LockedError`, while one of the
collections it remembers is alive and still locked: a nested collection is unlocked from
the root of its lock. A refused ``unlock_()`` leaves the tree it reached locked.

Each kind answers a few hooks: its own lock flag, the nested collections a lock reaches
and where it keeps the weak references (a lazy stack keeps none: its members do, and a
record forwards all of it to the collection holding its fields).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterable
from typing import Any, TypeAlias

from tclass._base.implemented._collection import TensorCollection
from tclass.errors import LockedError

__all__ = ["LockGraph", "Ref"]

Ref: TypeAlias = "weakref.ReferenceType[Any]"
_NO_REFS: list[Ref] = []  # (read-only: a kind that keeps none answers it)


class LockGraph(TensorCollection):
    """A mixin of every collection kind: lock_ / unlock_ call :meth:`_lock_tree` and
    :meth:`_unlock_tree` (after what their ``with`` blocks need)."""

    __slots__ = ()

    # --- what each kind answers -------------------------------------------------------------

    def _own_lock(self) -> bool | None:
        """The flag lock_ sets on this collection (a lazy stack's is None once unlocked:
        its members decide); what a nested collection checks of those above it."""
        return self._lock_state()

    def _flag_lock(self, locked: bool) -> None:
        """Sets this collection's own flag only (nothing nested)."""
        raise NotImplementedError

    def _lock_links(self) -> Iterable[LockGraph]:
        """The nested collections a lock of this one reaches."""
        return [value for value in self._entries().values() if isinstance(value, LockGraph)]

    def _lock_refs(self) -> list[Ref]:
        """The collections this one was locked through (weak references, root first)."""
        return _NO_REFS

    def _keep_lock_refs(self, refs: list[Ref]) -> None:
        """Replaces what :meth:`_lock_refs` answers (a kind that keeps none ignores it)."""

    # --- the graph ----------------------------------------------------------------------------

    def _lock_tree(self) -> None:
        """lock_: locks this collection, the root of the lock, and what is nested in it
        (nothing, as in the peer, if it is locked already)."""
        if not self.is_locked:
            self._lock_down(None)

    def _lock_each(self) -> None:
        """Locks this collection and what is nested in it, each on its own (what a
        memory-mapped copy is, as the peer's): nothing is held by what is above it."""
        self._lock_down(None, link=False)

    def _lock_down(self, above: list[Ref] | None, link: bool = True) -> None:
        """Locks this collection and, below it, what it holds; ``above``: the chain of
        collections the lock came through (None for the root of the lock)."""
        self._flag_lock(True)
        if not link:
            for child in self._lock_links():
                child._lock_down(None, link=False)
            return
        chain = self._hold(above)
        chain.append(weakref.ref(self))
        for child in self._lock_links():
            child._lock_down(chain)

    def _lock_as_child_of(self, parent: LockGraph) -> None:
        """Locks this collection, new in the locked ``parent``, as a lock of ``parent``
        would have: held by it and what holds it."""
        self._lock_down([*parent._lock_refs(), weakref.ref(parent)])

    def _hold(self, above: list[Ref] | None) -> list[Ref]:
        """Remembers the collections of ``above`` this one did not remember yet;
        returns a copy of ``above`` to pass down."""
        if above is None:
            return []
        known = self._lock_refs()
        if known:
            ids = {id(ref) for ref in known}
            new = [ref for ref in above if id(ref) not in ids]
            if new:
                self._keep_lock_refs(known + new)
        else:
            self._keep_lock_refs(list(above))
        return list(above)

    def _unlock_tree(self) -> None:
        """unlock_: unlocks this collection and what is nested in it.

        Raises:
            LockedError: (a ``RuntimeError``) if a live, locked collection holds this one
                or one nested in it; what was unlocked is locked again.
        """
        if self._own_lock():
            self._check_released()
        reached: list[LockGraph] = []
        try:
            self._unlock_down(reached)
            for node in reached:
                node._check_released()
            self._check_released()
        except LockedError:
            self._lock_tree()  # as the peer: what a refused unlock_ reached stays locked
            raise

    def _unlock_down(self, reached: list[LockGraph]) -> None:
        """Unlocks this collection and what it holds, adding the nested ones to
        ``reached``."""
        self._flag_lock(False)
        for child in self._lock_links():
            child._unlock_down(reached)
            reached.append(child)

    def _check_released(self) -> None:
        """Forgets the collections this one was locked through once none is alive and
        locked (one in a reference cycle is collected first).

        Raises:
            LockedError: (a ``RuntimeError``) if one is alive and locked.
        """
        if self._lock_holder() is None:
            return
        gc.collect()  # a holder that is only in a reference cycle would free it
        holder = self._lock_holder()
        if holder is not None:
            raise _held(self, holder)

    def _lock_holder(self) -> LockGraph | None:
        """The outermost live, locked collection this one was locked through (None: none,
        and then none is remembered any more)."""
        refs = self._lock_refs()
        for ref in refs:
            holder = ref()
            if holder is not None and holder is not self and holder._own_lock():
                return holder  # type: ignore[no-any-return]
        if refs:
            self._keep_lock_refs([])
        return None


def _held(node: LockGraph, holder: LockGraph) -> LockedError:
    keys = holder._key_names()
    shown = ", ".join(repr(key) for key in keys[:4]) + (", ..." if len(keys) > 4 else "")
    return LockedError(
        f"Cannot unlock this {type(node).__name__}: it is nested in a locked "
        f"{type(holder).__name__} (keys {shown}) that is still alive. Unlock the root of "
        "that lock (the outermost locked collection holding it) first, or let it go; a "
        "collection held by two locked roots unlocks when both are put in one TensorDict "
        "that is locked and then unlocked"
    )
