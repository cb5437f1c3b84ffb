"""Locking a lazy stack (a mixin of ``LazyStackedTensorDict``): a lock reaches every
member, through the lock graph (``tclass._base.implemented._lock_graph``); a stack not
locked through itself is locked when every member is, as the peer's; and
``with lazy.lock_(): ...`` / ``with lazy.unlock_(): ...`` blocks restore the state on exit."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase
from tclass._base.implemented._lock_graph import Ref

if TYPE_CHECKING:
    from tclass._engine._consolidate import Consolidated

__all__ = ["LazyLocking"]


class LazyLocking(TensorDictBase):
    """lock_, unlock_, ``with`` blocks and the lock-graph hooks of a lazy stack."""

    if TYPE_CHECKING:  # LazyStackedTensorDict's slots
        _members: list[Any]
        _locked: bool | None  # None: unlocked, or locked only through every member
        _lock_context: bool | None  # the state before the last lock_/unlock_, for `with`
        _lock_stack: list[bool]
        _on_exit: Callable[[], object] | None
        _consolidated: Consolidated | None
    else:
        __slots__ = ()  # (mypy would refuse the writes to the slots above)

    def _lock_state(self) -> bool:
        locked = self._locked
        if locked is not None:
            return locked
        members = self._members  # as the peer: locked when every member is
        for member in members:  # (a loop: the first, unlocked, member usually decides)
            if not member._lock_state():
                return False
        return bool(members)

    def lock_(self) -> Self:
        """Locks every member and the stack (in-place data writes stay allowed); also a
        context manager (``with lazy.lock_(): ...`` restores the state on exit)."""
        locked = self._lock_state()
        self._lock_tree()
        self._lock_opens_next_block(locked)
        return self

    def unlock_(self) -> Self:
        """Unlocks every member and the stack.

        Raises:
            LockedError: (a ``RuntimeError``) if the stack, or a collection in it, is
                nested in another locked collection that is alive: unlock that one first.
        """
        locked = self._lock_state()
        self._unlock_tree()
        self._lock_opens_next_block(locked)
        return self

    def _lock_opens_next_block(self, locked: bool) -> None:
        """As a TensorDict's: the next ``with`` block restores ``locked``; outside any
        open block, a shape op's write-back waiting for it is dropped."""
        self._lock_context = locked
        if not self._lock_stack:
            self._on_exit = None

    def _own_lock(self) -> bool | None:
        # As the peer: what a nested collection checks is whether the stack was locked
        # through itself (None otherwise), not whether all its members happen to be.
        return self._locked

    def _flag_lock(self, locked: bool) -> None:
        # Unlocked, the stack follows its members again (as the peer's).
        self._locked = True if locked else None
        if not locked:
            self._consolidated = None  # unlocking ends the consolidation, as in the peer

    def _lock_links(self) -> list[Any]:
        return self._members

    def _lock_down(self, above: list[Ref] | None, link: bool = True) -> None:
        if link:
            super()._lock_down(above, link)
            return
        # Each level locked on its own (a memory-mapped copy): as the peer's, the stack
        # is locked through its members only and follows them (a member unlocked through
        # another stack that shares it unlocks this one too).
        for member in self._members:
            member._lock_down(None, link=False)

    def _lock_refs(self) -> list[Ref]:
        """What the members were locked through, but the stack itself: a stack keeps
        none of its own."""
        return [ref for member in self._members for ref in member._lock_refs() if ref() is not self]

    def __enter__(self) -> Self:
        previous = self._lock_context
        self._lock_context = None
        self._lock_stack.append(self._lock_state() if previous is None else previous)
        return self

    def __exit__(self, *exc_info: object) -> None:
        # Restores the state from before the lock_/unlock_ that opened the block, then
        # writes a shape op's result back into its source (``with lazy.flatten(0, 1)``).
        (self._lock_tree if self._lock_stack.pop() else self._unlock_tree)()
        on_exit, self._on_exit = self._on_exit, None
        if on_exit is not None:
            on_exit()

    def _call_on_exit(self, callback: Callable[[], object]) -> None:
        self._on_exit = callback
