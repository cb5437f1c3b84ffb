"""Writes to a lazy stack (a layer of ``LazyStackedTensorDict``): ``set``, ``set_``,
``set_non_tensor``, ``update_``, ``lazy[...] = value``, and the removals (``pop``,
``del_``, ``select``, ``exclude``, ``rename_key_``), each reaching every member with its
part of the value (split along the stack dim)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._entry_walk import written_paths
from tclass._base.implemented._grad_writes import (
    refuse_grad_leaf_writes,
    refuse_grad_member_sets,
)
from tclass._core import _keys
from tclass._core._records import storage_of
from tclass._engine._entry_values import keys_below
from tclass._engine._lazy._devices import LazyDevices
from tclass._engine._lazy._entries import lacks
from tclass._engine._lazy._parts import nested_to_update, split_operand
from tclass._engine._td import TensorDict
from tclass._engine._td_setitem import SetItemOps
from tclass._engine._update_plan import SET, UPDATE, perform, plan_td_update
from tclass.errors import (
    HeterogeneousEntryError,
    InPlaceWriteError,
    KeyThroughTensorError,
    LockedError,
    MemberKeyError,
)

if TYPE_CHECKING:
    from tclass._engine._lazy._entries import StackedEntries

__all__ = ["LazyWrites"]

_MISSING: Any = object()
_LOCKED_MSG = (
    "Cannot modify locked TensorDict (a LazyStackedTensorDict): "
    "cannot {action} a locked collection. "
    "Unlock it first (lazy.unlock_()), or "
    "write data in place with set_() or lazy[index] = value"
)


class LazyWrites(LazyDevices):
    """``set``, ``set_``, updates and removals of a lazy stack, member by member."""

    if TYPE_CHECKING:  # LazyStackedTensorDict's methods

        @property
        def _tensors(self) -> StackedEntries: ...
        def _can_fill(self, key: object) -> bool: ...
    else:
        __slots__ = ()

    # --- writing -------------------------------------------------------------------------

    def set(
        self, key: Any, value: Any, inplace: bool = False, *, non_blocking: bool = False
    ) -> Self:
        """Sets ``key`` in every member: ``value`` (a tensor or collection whose leading
        dims are this batch size, a dict, or a Python value node) is split along the
        stack dim, member ``i`` receiving part ``i``.

        Raises:
            LockedError: if the stack is locked (and the write is not in place).
            BatchMismatchError: if ``value``'s leading dims are not the batch size.
        """
        if not inplace and self._lock_state() and not self._can_fill(key):
            self._check_not_through_tensor(key)  # (as a TensorDict checks first)
            raise LockedError(_LOCKED_MSG.format(action=f"set {key!r} in"))
        parts = split_operand(value, self, key, fill=inplace and key in self)
        if type(key) is str and not (inplace and key in self):
            self._refuse_locked_members(key)
        for member, part in zip(self._members, parts):
            member.set(key, part, inplace=inplace)
        return self

    def _refuse_locked_members(self, key: str) -> None:
        """Raises LockedError, before any member is written, when a member locked on its
        own (the stack itself is not) would refuse ``key`` (the peer's sets it in the
        members before that one)."""
        for position, member in enumerate(self._members):
            plain = isinstance(member, (TensorDict, LazyWrites))
            if plain and member._lock_state() and not member._can_fill(key):
                msg = (
                    f"Cannot modify locked TensorDict: member {position} of the lazy stack is "
                    f"locked and takes no new value for {key!r}; no member was written. Unlock "
                    "it first, or write in place with set_() or lazy[index] = value"
                )
                raise LockedError(msg)

    def _check_not_through_tensor(self, key: Any) -> None:
        """Raises KeyThroughTensorError if ``key`` leads through a tensor entry."""
        path = _keys.key_path(_keys.unravel_key(key))
        node: Any = self
        for depth, part in enumerate(path[:-1]):
            try:
                node = node.get(part, _MISSING)
            except HeterogeneousEntryError:  # (members that differ: their own checks)
                return
            if not isinstance(node, (TensorCollection, torch.Tensor)):
                return
            if isinstance(node, torch.Tensor):
                msg = (
                    f"cannot set {path!r}: the entry {path[: depth + 1]!r} is a tensor, "
                    "not a collection; delete it first"
                )
                raise KeyThroughTensorError(msg)

    def set_non_tensor(self, key: Any, value: Any) -> Self:
        """Stores the Python value ``value`` under ``key`` in every member, over its
        batch, as the peer; returns ``self``.

        Raises:
            LockedError: if the stack is locked.
        """
        if self._lock_state() and not self._can_fill(key):
            raise LockedError(_LOCKED_MSG.format(action=f"set {key!r} in"))
        if type(key) is str:
            self._refuse_locked_members(key)
        for member in self._members:
            member.set_non_tensor(key, value)
        return self

    def _store_entry(self, key: str, value: Value, blank: bool = False) -> Value:
        """Stores a checked ``value`` under ``key``: each member its part."""
        self._tensors[key] = value
        return value

    def _remove_entry(self, key: str) -> Value:
        """Removes the entry ``key`` from every member; returns its stacked value."""
        removed: Value = self._tensors.pop(key)
        return removed

    def set_(self, key: Any, value: Any, *, non_blocking: bool = False) -> Self:
        """Copies ``value`` into the existing entry ``key`` of every member, in place (a
        missing key is refused first, as the peer)."""
        if key not in self:
            self._check_set_(_keys.unravel_key(key), value)
        elif isinstance(value, Mapping) or (
            isinstance(value, TensorCollection) and not value._is_value_node
        ):
            if issubclass(self.entry_class(key), torch.Tensor):  # (as a TensorDict's set_)
                msg = (
                    f"set_: a {type(value).__name__} cannot be copied into the tensor {key!r} "
                    "(an in-place write keeps the entry's kind: use set() to replace it)"
                )
                raise InPlaceWriteError(msg)
        parts = split_operand(value, self, key, fill=True)
        refuse_grad_member_sets(self._members, key, parts)  # before any member is written
        for member, part in zip(self._members, parts):
            member.set_(key, part)
        return self

    def _update_entries(
        self,
        source: Mapping[Any, Any] | TensorCollection,
        clone: bool,
        inplace: bool,
        keys_to_update: Sequence[Any] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> Self:
        """Updates every member with its part of ``source`` (a collection whose batch size
        starts with this one, split along the stack dim, or a mapping as :meth:`set` takes):
        every write planned first (:meth:`_plan_update`), then made."""
        if not inplace and self._lock_state() and not len(source.keys()):
            raise LockedError(_LOCKED_MSG.format(action="update"))  # as the peer
        allowed = None if keys_to_update is None else [_keys.key_path(k) for k in keys_to_update]
        plan = self._plan_update(source, clone, inplace, allowed, is_leaf, [])
        perform(plan, clone, inplace, is_leaf)
        return self

    def _check_update(
        self,
        source: Any,
        inplace: bool,
        allowed: list[tuple[str, ...]] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> None:
        """What :meth:`_update_entries` would refuse in a record it writes into: its plan,
        dropped."""
        self._plan_update(source, False, inplace, allowed, is_leaf, [])

    def _plan_update(
        self,
        source: Any,
        clone: bool,
        inplace: bool,
        allowed: list[tuple[str, ...]] | None,
        is_leaf: Callable[[type], bool] | None,
        plan: list[Any],
    ) -> list[Any]:
        """Appends to ``plan`` (and returns it) the writes of ``update`` (see
        ``_update_plan.py``): a collection of this batch size split along the stack dim,
        each member updated by its part (a TensorDict member's writes planned here); else
        each entry set in every member, or merged into the nested collection at its key;
        each record reached asked to check its part first."""
        n = len(self._batch_size)
        if isinstance(source, TensorCollection) and source.batch_size[:n] == self._batch_size:
            for member, part in zip(self._members, source.unbind(self._stack_dim)):
                if isinstance(member, SetItemOps):
                    plan_td_update(member, part, clone, inplace, allowed, is_leaf, plan)
                else:
                    member._check_update(part, inplace, allowed, is_leaf)
                    plan.append((member, allowed, part, UPDATE))
            return plan
        pairs = source._items() if isinstance(source, TensorCollection) else source.items()
        for key, value in pairs:
            below = None if allowed is None else keys_below(_keys.key_path(key), allowed)
            nested = None if below == [] else nested_to_update(self, key, value, is_leaf)
            if nested is not None:  # merged key by key, as a TensorDict's update merges
                nested._check_update(value, inplace, below, is_leaf)
                plan.append((nested, below, value, UPDATE))
            elif below is None:  # (only keys under it allowed: it is no collection)
                if clone and isinstance(value, (torch.Tensor, TensorDictBase)):
                    value = value.clone()
                plan.append((self, key, value, SET))
        return plan

    def update_(
        self,
        input_dict_or_td: Mapping[Any, Any] | TensorCollection | None = None,
        clone: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Self:
        """Copies ``input_dict_or_td`` into the existing entries in place: member by
        member when it is a collection of this batch size (split along the stack dim, so
        members of different shapes or lengths work), else as every collection does."""
        source = input_dict_or_td
        if isinstance(source, TensorCollection) and source.batch_size == self._batch_size:
            # every member's targets checked before the first member is written
            refuse_grad_leaf_writes(self, written_paths([((), source)]), keys_to_update)
            parts = source.unbind(self._stack_dim)  # (set_'s rule, when set_ writes it)
            refuse_grad_member_sets(self._members, (), parts, keys_to_update)
            for member, part in zip(self._members, parts):
                member.update_(
                    part, clone, non_blocking=non_blocking, keys_to_update=keys_to_update
                )
            if not kwargs:
                return self
            source = None
        return super().update_(
            source, clone, non_blocking=non_blocking, keys_to_update=keys_to_update, **kwargs
        )

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        """Removes ``key`` from every member and returns its stacked value (or
        ``default`` when no member has it)."""
        value = self.get(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise self._absent(key, popping=True)
            return default
        self.del_(key)
        return value

    def del_(self, key: Any) -> Self:
        """Removes ``key`` from every member, unread (it need not have one dense value);
        a locked stack refuses before the key is looked up, as the peer. A key only some
        members hold is removed from those, as the peer's ``del_`` does."""
        if self._lock_state():
            raise LockedError(_LOCKED_MSG.format(action=f"remove {key!r} from"))
        members = self._distinct_members()  # a member twice (cat) loses it once
        if key not in self:
            path = _keys.key_path(key)
            members = [member for member in members if _holds(member, path)]
            if not members:
                raise self._absent(key)
        for member in members:
            member.del_(key)
        return self

    def __delitem__(self, key: Any) -> None:
        self.del_(key)

    def rename_key_(self, old_key: Any, new_key: Any, safe: bool = False) -> Self:
        """Renames ``old_key`` in every member."""
        for member in self._distinct_members():
            member.rename_key_(old_key, new_key, safe=safe)
        return self

    def select(
        self, *keys: Any, inplace: bool = False, strict: bool = True, as_tensordict: bool = False
    ) -> Self:
        """Keeps only ``keys`` in every member (a new lazy stack unless ``inplace``;
        in place, all or nothing: every member is checked first)."""
        if inplace:
            self._check_removable("select")
        members = [member.select(*keys, inplace=inplace, strict=strict) for member in self._members]
        return self if inplace else self._restacked(members)

    def exclude(self, *keys: Any, inplace: bool = False) -> Self:
        """Drops ``keys`` from every member (a new lazy stack unless ``inplace``; in
        place, all or nothing: every member is checked first)."""
        if inplace:
            self._check_removable("exclude", keys)
        members = [member.exclude(*keys, inplace=inplace) for member in self._members]
        return self if inplace else self._restacked(members)

    def _check_removable(self, method: str, paths: Sequence[Any] | None = None) -> None:
        for member in self._members:
            storage_of(member)._check_removable(method, paths)

    def _drop_paths(self, paths: Sequence[Any]) -> None:
        self._check_removable("separates", paths)
        self.exclude(*paths, inplace=True)


def _holds(member: TensorCollection, path: tuple[str, ...]) -> bool:
    """Whether ``member`` holds the entry at ``path`` (a lazy stack of its own: in at
    least one of its members)."""
    try:
        return not lacks(member, path)
    except MemberKeyError:
        return True
