"""Where a Python-value node lives: saved in a folder, in shared memory, locked, or read by
index from a ``NonTensorStack`` (the base of ``_NonTensorNode`` in ``_nontensor.py``).

These flags travel with the node as the peer's do: its rows and views are saved, shared
and locked as it (``_as_saved``, ``_mark_view_of``), a write into a row reaches the stack
it was read from (``_write_back``), and a write into a locked node is refused with an
error naming what to unlock (``_locked_error``, ``_check_unlocked``). ``kept`` restores
the flags on a node rebuilt from a pickle.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typing_extensions import Self

from tclass._engine._nontensor_ops import NonTensorOps
from tclass._engine._value_positions import dims_after_write
from tclass.errors import LockedError, PickleRefusedError, locked_prefix

if TYPE_CHECKING:
    from tclass._core._names import Names

__all__ = ["NodeState", "kept"]


class NodeState(NonTensorOps):
    """The saved / shared / locked state of a node and how it passes to the nodes an
    index or a view of it gives (see the module docstring)."""

    if TYPE_CHECKING:  # _NonTensorNode's slots (see there; the lock's in NonTensorOps)
        _in_folder: bool
        _in_shared: bool
        _saved_folder: str
    else:
        __slots__ = ()

    def _is_saved(self) -> bool:
        """Whether this node is saved in a folder (``memmap(prefix)``, ``memmap_``,
        ``memmap_like``, ``load_memmap``, alone or in a collection), or was read by index
        from one that is: its ``is_memmap()``, as the peer's."""
        if getattr(self, "_in_folder", False):
            return True
        member_of = getattr(self, "_member_of", None)
        return member_of is not None and bool(member_of[0]._is_saved())

    @property
    def saved_path(self) -> Path | None:
        """The folder holding this node's ``meta.json`` for the node a save gives or a
        load reads (where its collection's ``saved_path`` names a folder: the peer's names
        a ``_tensordict`` sub-folder that does not exist, a stack's None); None for what
        an index, ``unsqueeze`` or a view of it gives (in no folder of its own).

        Raises:
            NotSavedError: (an ``AttributeError``, as the peer) if it is not saved.
        """
        folder = getattr(self, "_saved_folder", None)
        return Path(folder) if folder is not None else super().saved_path

    def _shared_without_tensors(self) -> bool:
        """Whether this node is in a collection put in shared memory (``share_memory_()``),
        or was read by index from one that is: its ``is_shared()``, as the peer's."""
        if getattr(self, "_in_shared", False):
            return True
        member_of = getattr(self, "_member_of", None)
        return member_of is not None and bool(member_of[0]._shared_without_tensors())

    def _mark_shared(self) -> None:
        self._in_shared = True

    def _as_saved(self, node: NodeState) -> Any:
        """``node`` (what ``unsqueeze`` or an index of this node gives) saved, shared and
        locked as this one: the peer's keep all three (its ``is_memmap()``,
        ``is_shared()`` and ``is_locked``), where copies (``clone()``) keep none."""
        if self._is_saved():
            node._in_folder = True
        if self._shared_without_tensors():
            node._in_shared = True
        if self._locked:
            node._flag_lock(True)
        return node

    def _mark_view_of(self, view: Any) -> None:
        """A view (``view``, ``squeeze``, ``permute``, ``transpose``, ``unbind``,
        ``split``...) of a node saved in a folder is saved too, as the peer's (read back
        with ``load_memmap`` too, which tclass counts as saved: see ``_is_saved``); one of
        a node in shared memory is shared too."""
        if isinstance(view, NodeState) and view is not self:
            if self._is_saved():
                view._in_folder = True
            if self._shared_without_tensors():
                view._in_shared = True

    def _carry(
        self,
        result: Self,
        names: Names,
        *,
        lock: bool = True,
        inverse: Callable[[Self], Self] | None = None,
        view: bool = False,
    ) -> Self:
        out = super()._carry(result, names, lock=lock, inverse=inverse, view=view)
        if view:  # (the base marks only the views of a locked one)
            self._mark_view_of(out)
        return out

    def _locked_error(self, does: str, fix: str = "unlock it first") -> LockedError:
        """The error for a write into this locked node that ``does`` what it says; for a
        row read from a locked stack (locked as it is), one naming that stack, which the
        write would reach and which is what to unlock."""
        link = getattr(self, "_member_of", None)
        if link is not None and link[0]._locked:
            shape = list(link[0].batch_size)
            return LockedError(
                "Cannot modify locked TensorDict (a NonTensorStack): "
                f"cannot write into an element (this "
                f"{type(self).__name__} was read by index from a locked NonTensorStack of "
                f"batch size {shape}, which the write would reach, and is locked as it); "
                "unlock that stack first (or the collection holding it, td.unlock_()), then "
                "read the row again"
            )
        return LockedError(f"{locked_prefix(type(self).__name__)}: {does}; {fix}")

    def unbind(self, dim: int = 0) -> tuple[Self, ...]:
        """The slices along batch dim ``dim``: views (saved where this node is)."""
        parts = super().unbind(dim)
        for part in parts:  # (the base marks only those of a locked one)
            self._mark_view_of(part)
        return parts

    def _check_unlocked(self, op: str, inplace: bool) -> None:
        """A locked node is not written by ``op``: it may be saved in a folder it cannot
        reach (the collection holding it writes there), as ``node[i] = v`` is refused."""
        if self._locked:
            does = "writes into it" if inplace else "replaces its value (not in place)"
            fix = (
                "write through the collection that holds it (td.set_(key, value), which "
                "reaches a saved folder too) or unlock it first"
            )
            raise self._locked_error(f"{op}() {does}", fix)

    def _write_back(self, *, by_collection: bool = False) -> None:
        """Writes this node's values into the stack it was read from by index (and that
        stack's into its own...), as a write into the peer's member reaches its stack.
        ``by_collection``: the write is a collection's ``td[index] = rows``, which a lock
        does not refuse (it writes in place, as the peer's into a locked view, say an
        ``unflatten`` of a locked TensorDict); a saved stack refuses it still (the write
        would not reach its folder).

        Raises:
            LockedError: (a ``RuntimeError``) the stack is locked (a saved one too).
        """
        link = getattr(self, "_member_of", None)
        if link is None:
            return
        stack, positions = link
        if stack._locked and not (by_collection and not stack._is_saved()):
            if not positions:
                return  # a view of no element: nothing is written, as the peer's
            msg = (
                "Cannot modify locked TensorDict (a NonTensorStack): "
                "cannot write into an element; unlock it first"
            )
            raise LockedError(msg)
        values = stack._values
        for position, new in zip(positions, self._flat()):
            values[position] = new
        # an element may now differ from its neighbours (unless each is a member)
        stack._stack_dims = dims_after_write(stack._stack_dims, len(stack._shape))
        stack._write_back(by_collection=by_collection)


def kept(node: Any, saved: Any, locked: Any) -> Any:
    """``node`` unpickled saved in a folder (its ``is_memmap()``) and locked as the
    pickled one was."""
    if type(saved) is not bool or type(locked) is not bool:
        msg = f"a pickle of a {type(node).__name__} has flags {saved!r:.40}, {locked!r:.40}"
        raise PickleRefusedError(msg)
    if saved:
        node._in_folder = True
    if locked:
        node._flag_lock(True)
    return node
