"""``with collection.lock_(): ...`` and ``with collection.unlock_(): ...`` for the kinds
that lock through methods of their own (``PersistentTensorDict``, ``TensorDictParams``):
a block restores, on exit, the lock state from before the ``lock_``/``unlock_`` call that
opened it, as the peer's collections do. (``TensorDict`` keeps the same state in its
``Scope``; records and lazy stacks hold theirs.) ``SourceLock``: the lock of a view that
writes through to its source (a legacy lazy view, a store's rows) is the source's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from typing_extensions import Self

from tclass._base.implemented._lock_graph import LockGraph, Ref

__all__ = ["LockBlock", "LockBlocks", "SourceLock"]


class _Source(Protocol):
    """What a view's source is: a collection in the lock graph."""

    @property
    def is_locked(self) -> bool: ...
    def lock_(self) -> Any: ...
    def unlock_(self) -> Any: ...
    def _own_lock(self) -> bool | None: ...
    def _lock_down(self, above: list[Ref] | None, link: bool = True) -> None: ...
    def _unlock_down(self, reached: list[LockGraph]) -> None: ...
    def _lock_refs(self) -> list[Ref]: ...
    def _keep_lock_refs(self, refs: list[Ref]) -> None: ...


_NO_REFS: list[Ref] = []  # (read-only)


class LockBlock:
    """The lock state before the last ``lock_``/``unlock_`` call (None once a block
    took it), the states to restore, one per open block, and the collections the
    collection was locked through (weak references: see ``_lock_graph.py``; a copy or
    a pickle holds none)."""

    __slots__ = ("before_last", "restore", "lock_refs")

    def __init__(self) -> None:
        self.before_last: bool | None = None
        self.restore: list[bool] = []
        self.lock_refs: list[Ref] = []

    def __getstate__(self) -> tuple[bool | None, list[bool]]:
        return self.before_last, list(self.restore)

    def __setstate__(self, state: tuple[bool | None, list[bool]]) -> None:
        self.before_last, self.restore = state[0], list(state[1])
        self.lock_refs = []


class LockBlocks(LockGraph):
    """A mixin: the kind's ``lock_`` and ``unlock_`` call :meth:`_note_lock` before
    changing the state, and the collection is a context manager restoring it. Also
    where the kind keeps what it was locked through."""

    if not TYPE_CHECKING:  # (mypy would refuse the writes to _lock_block below)
        __slots__ = ()

    # Created on first use; a kind with slots gives this a slot of its own.
    _lock_block: LockBlock | None = None

    def _block(self) -> LockBlock:
        block = self._lock_block
        if block is None:
            block = self._lock_block = LockBlock()
        return block

    def _lock_refs(self) -> list[Ref]:
        block = self._lock_block
        return _NO_REFS if block is None else block.lock_refs

    def _keep_lock_refs(self, refs: list[Ref]) -> None:
        self._block().lock_refs = refs

    def _note_lock(self) -> None:
        """Remembers the state a ``with`` block opened by this lock_/unlock_ restores."""
        self._block().before_last = self.is_locked

    def __enter__(self) -> Self:
        """Entering restores, on exit, the lock state from before the last lock_/unlock_
        call (or the current state if neither was just called)."""
        block = self._block()
        previous, block.before_last = block.before_last, None
        block.restore.append(self.is_locked if previous is None else previous)
        return self

    def __exit__(self, *exc_info: object) -> None:
        block = self._block()
        (self.lock_ if block.restore.pop() else self.unlock_)()
        block.before_last = None


class SourceLock(LockBlocks):
    """A mixin for a view that writes through to the collection it holds in ``_source``
    (a legacy lazy view, the rows of a store): its lock is the source's. ``lock_`` and
    ``unlock_`` lock and unlock the source, and the lock graph (``_lock_graph.py``) sees
    through the view to it, as the peer's views do."""

    if not TYPE_CHECKING:
        __slots__ = ()

    _source: _Source

    def _lock_state(self) -> bool:
        return self._source.is_locked

    @property
    def _locked(self) -> bool:
        return self._source.is_locked

    def lock_(self) -> Self:
        """Locks the source (and so this view)."""
        self._note_lock()
        self._source.lock_()
        return self

    def unlock_(self) -> Self:
        """Unlocks the source (and so this view)."""
        self._note_lock()
        self._source.unlock_()
        return self

    def _own_lock(self) -> bool | None:
        return self._source._own_lock()

    def _lock_down(self, above: list[Ref] | None, link: bool = True) -> None:
        self._source._lock_down(above, link)

    def _unlock_down(self, reached: list[LockGraph]) -> None:
        self._source._unlock_down(reached)

    def _lock_refs(self) -> list[Ref]:
        return self._source._lock_refs()

    def _keep_lock_refs(self, refs: list[Ref]) -> None:
        self._source._keep_lock_refs(refs)
