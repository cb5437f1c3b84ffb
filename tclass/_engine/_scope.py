"""What a TensorDict rarely needs, kept out of its slots (:class:`Scope`, created on first
use so that building a TensorDict costs nothing for it), and the methods that read it:
the names of the batch dims, whether an entry is an unbatched tensor, locking and what
the next ``with`` block restores and calls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase
from tclass._base.implemented._lock_graph import LockGraph, Ref
from tclass._core import _names
from tclass._core._names import DimName, Names
from tclass._core._unbatched import UnbatchedTensor
from tclass.errors import BatchSizeError, DimNameError

if TYPE_CHECKING:
    from tclass._base._tensordict_base import Value

__all__ = ["Scope", "ScopedOps", "named_to_fit", "write_unbatched"]

_Tensor = torch.Tensor

_Unbatched = UnbatchedTensor
_NO_REFS: list[Ref] = []  # (read-only)


class Scope:
    """What a TensorDict rarely needs, kept out of its slots so that building one costs
    nothing for it: what ``with td:`` blocks use (the lock state before the last
    lock_/unlock_ call, the states to restore on exit, one per open block, and a
    callback for the next exit: ``to_module`` puts a module's previous tensors back
    with it), the collections it was locked through (weak references, see
    ``_lock_graph.py``), the names of the batch dims, and whether an entry is an
    unbatched tensor. ``special``: names or unbatched tensors, which indexing and shape
    ops carry. ``saved_view``: a locked view (an index's rows) of a saved TensorDict with
    no tensor of its own, whose rows stay locked as its source's (the peer's flag).
    ``shared``: ``share_memory_()`` ran on it, or it is a locked view of one that did
    (``is_shared()`` of a TensorDict without tensors, as the peer's flag)."""

    __slots__ = (
        "before_last_lock",
        "restore",
        "on_exit",
        "lock_refs",
        "names",
        "unbatched",
        "saved_view",
        "shared",
    )

    def __init__(self) -> None:
        self.before_last_lock: bool | None = None
        self.restore: list[bool] = []
        self.on_exit: Callable[[], object] | None = None
        self.lock_refs: list[Ref] = _NO_REFS
        self.names: Names = None
        self.unbatched = False
        self.saved_view = False
        self.shared = False

    @property
    def special(self) -> bool:
        return self.names is not None or self.unbatched

    def carried(self, same_batch: bool) -> Scope | None:
        """What a result built from this TensorDict's entries inherits: the unbatched
        flag, and the names when the batch is the same; None when nothing."""
        names = self.names if same_batch else None
        if names is None and not self.unbatched:
            return None
        out = Scope()
        out.names = names
        out.unbatched = self.unbatched
        return out


class ScopedOps:
    """The TensorDict methods over its :class:`Scope` (a mixin of ``TensorDict``, first
    in its bases so that these answer for the collection defaults)."""

    if TYPE_CHECKING:  # TensorDict's slots
        _scope: Scope | None
        _tensors: dict[str, Value]
        _batch_size: torch.Size
        _locked: bool

        def _lock_tree(self) -> None: ...
        def _unlock_tree(self) -> None: ...
        def _check_nested_names(self, names: Names) -> None: ...
    else:
        __slots__ = ()  # (mypy would refuse the writes to _scope below)

    @property
    def names(self) -> list[Any]:  # str names usually: any hashable, as the peer
        """The names of the batch dims (``None`` for an unnamed dim). Assigning names
        them here and, for the dims they share, in nested collections."""
        return _names.show(self._dim_names, len(self._batch_size))

    @names.setter
    def names(self, value: Sequence[DimName] | None) -> None:
        names = _names.as_names(value, len(self._batch_size))
        self._check_nested_names(names)
        # (unnamed: only these dims, nested collections keep the names of their own dims)
        self._rename_all((None,) * len(self._batch_size) if names is None else names)

    @property
    def _dim_names(self) -> Names:
        scope = self._scope
        return None if scope is None else scope.names

    def _assign_names(self, names: Names) -> None:
        scope = self._scope
        if scope is None:
            if names is None:
                return
            scope = self._scope = Scope()
        scope.names = names

    def _holds_unbatched(self) -> bool:
        """Whether an entry may be an unbatched tensor (then shape ops look for it)."""
        scope = self._scope
        return scope is not None and scope.unbatched

    def _mark_unbatched(self) -> None:
        """Records that an entry is an unbatched tensor (shape ops then keep it)."""
        scope = self._scope
        if scope is None:
            scope = self._scope = Scope()
        scope.unbatched = True

    def _mark_unbatched_if_any(self) -> None:
        """:meth:`_mark_unbatched` when an entry is one: for a TensorDict built unchecked
        from values that may include them."""
        if any(value.__class__ is _Unbatched for value in self._tensors.values()):
            self._mark_unbatched()

    def _rename_all(self, names: Names) -> None:
        """Names this level's dims ``names`` and the first dims of nested collections
        (``None``: every dim unnamed, nested collections' own dims too)."""
        self._assign_names(_names.collapsed(names))
        nb = len(self._batch_size)
        for value in self._tensors.values():
            if isinstance(value, TensorDictBase) and not value._is_leaf_node:
                own = value._dim_names
                extra = (None,) * (value.batch_dims - nb) if own is None else own[nb:]
                value._rename_all(None if names is None else names + extra)

    def _call_on_exit(self, callback: Callable[[], object]) -> None:
        """Makes the next ``with td:`` block run ``callback`` once on exit (after
        restoring the lock state), even if the block raised."""
        scope = self._scope
        if scope is None:
            scope = self._scope = Scope()
        scope.on_exit = callback

    # --- locking (what `with td:` restores lives in the scope; see _lock_graph.py) -----

    def lock_(self) -> Self:
        """Forbids adding, replacing or removing entries (nested ones too); in-place data
        writes stay allowed. Also a context manager: ``with td.lock_(): ...`` unlocks on exit.
        """
        locked = self._locked
        self._lock_tree()
        self._lock_opens_next_block(locked)
        return self

    def unlock_(self) -> Self:
        """Allows entries to change again (nested ones too); ``with td.unlock_(): ...``
        relocks on exit.

        Raises:
            LockedError: (a ``RuntimeError``) if this TensorDict, or one nested in it, is
                nested in another locked collection that is alive: unlock that one first.
        """
        locked = self._locked
        self._unlock_tree()
        self._lock_opens_next_block(locked)
        return self

    def _lock_opens_next_block(self, locked: bool) -> None:
        """The next ``with`` block is the lock_/unlock_ call's: it restores ``locked``,
        and, outside any open block, a shape op's write-back waiting for this result's
        first block is dropped (``t = td.transpose(0, 1); with t.unlock_(): ...`` only
        relocks ``t``, as the peer's: its last operation is the unlock)."""
        scope = self._scoped()
        scope.before_last_lock = locked
        if not scope.restore:
            scope.on_exit = None

    def _scoped(self) -> Scope:
        scope = self._scope
        if scope is None:
            scope = self._scope = Scope()
        return scope

    def _own_lock(self) -> bool:
        return self._locked

    def _lock_links(self) -> list[LockGraph]:
        return [value for value in self._tensors.values() if isinstance(value, LockGraph)]

    def _lock_refs(self) -> list[Ref]:
        scope = self._scope
        return _NO_REFS if scope is None else scope.lock_refs

    def _keep_lock_refs(self, refs: list[Ref]) -> None:
        if refs or self._scope is not None:
            self._scoped().lock_refs = refs

    def __enter__(self) -> Self:
        """Entering restores, on exit, the lock state from before the last lock_/unlock_
        call (or the current state if neither was just called)."""
        scope = self._scope
        if scope is None:
            scope = self._scope = Scope()
        previous = scope.before_last_lock
        scope.before_last_lock = None
        scope.restore.append(self._locked if previous is None else previous)
        return self

    def __exit__(self, *exc_info: object) -> None:
        scope = self._scope
        assert scope is not None  # set by __enter__
        (self._lock_tree if scope.restore.pop() else self._unlock_tree)()
        on_exit, scope.on_exit = scope.on_exit, None
        if on_exit is not None:
            on_exit()


def named_to_fit(value: Any, names: tuple[DimName, ...], key: object) -> Any:
    """A nested collection stored under a named parent: the parent's names for the dims
    they share (a named copy when the collection lacks them).

    Raises:
        DimNameError: if the collection already names one of those dims otherwise.
    """
    own = value._dim_names
    count = len(names)
    extra: tuple[str | None, ...] = (None,) * (value.batch_dims - count)
    if own is not None:
        extra = own[count:]
    try:
        wanted = _names.refined(own, list(names) + list(extra), value.batch_dims)
    except DimNameError as error:
        msg = f"cannot store {key!r}: its dim names do not fit the parent's: {error}"
        raise DimNameError(msg) from None
    if wanted == own:
        return value
    copy = value.__copy__()
    copy._rename_all(wanted)
    return copy


def name_built(td: Any, names: Sequence[DimName] | None) -> None:
    """Names a TensorDict just built from checked entries (a record's storage) as
    ``TensorDict(..., names=)`` names its entries: a nested collection that already
    names a dim they share otherwise is refused, the others take the names (on a copy:
    the collection given keeps its own). Without names (or all ``None``), it takes those
    of the first nested collection that names a dim they share, as the constructor does.

    Raises:
        DimNameError: (a ``ValueError``; the peer raises a ``RuntimeError``) naming the
            nested key and how to fix it, before anything is renamed.
    """
    tensors = td._tensors
    nested = [
        key
        for key, value in tensors.items()
        if value.__class__ is not _Tensor  # (most entries: skipped without the ABC check)
        and isinstance(value, TensorDictBase)
        and not value._is_leaf_node
    ]
    if names is None and not nested:
        return  # (the common build: nothing to name, nothing to take names from)
    n = td.batch_dims
    wanted = None if names is None else _names.as_names(names, n)
    for key in nested if wanted is None and n else ():
        own = tensors[key]._dim_names  # none given: it takes a nested collection's names
        if own is not None and any(name is not None for name in own[:n]):
            wanted = tuple(own[:n])
            break
    if wanted is None:
        return
    for key in nested:
        tensors[key] = named_to_fit(tensors[key], wanted, key)  # a copy when renamed
    td.names = wanted


def write_unbatched(key: str, entry: torch.Tensor, value: Any) -> None:
    """An indexed write reaching an unbatched tensor: the value is written whole (every
    element of the batch shares it), as the peer does."""
    if isinstance(value, torch.Tensor) and value.shape == entry.shape:
        entry.copy_(value)
        return
    shape = list(getattr(value, "shape", []))
    msg = (
        f"cannot write a value of shape {shape} into the unbatched tensor {key!r} of shape "
        f"{list(entry.shape)}: an indexed write replaces it whole, with a tensor of its shape"
    )
    raise BatchSizeError(msg)
