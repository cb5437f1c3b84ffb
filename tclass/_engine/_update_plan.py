"""The writes of ``td.update(source)`` (``TensorDict._update_entries``), planned before
the first is made. One walk of ``source`` routes each entry as the update writes it: set
in the TensorDict holding it, merged key by key into a nested TensorDict, given to a
record, a lazy stack or a TensorDictParams to update (each updates itself), or a nested
TensorDict restacked as a lazy stack of its parts (a lazy source whose members may
differ in shape). On the way, each record reached is asked whether it would refuse its
part (a value breaking its field's type, spec or constraint: ``_check_update``, which
writes nothing); then :func:`perform` makes the writes in order. So a refusal leaves
every entry as it was (README, Schemas: writes are all or nothing; the peer writes the
entries before it). A TensorDict's ``_check_update`` (asked by a record or a lazy stack
holding it) is the plan, dropped; so is a lazy stack's, whose ``_plan_update`` plans its
members' writes into the same plan.

A row write ``td[index] = rows`` is planned the same way (:func:`plan_rows`): the rows
of each nested TensorDict planned in turn, each record reached checking its rows at
``index`` (``_check_in_place``), then each TensorDict's own entries written in order."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core import _batch, _keys
from tclass._core._records import is_record
from tclass._engine._entry_values import (
    deep_clone,
    keys_below,
    raise_write_error,
    takes_lazy_layout,
)
from tclass._engine._part_checks import check_entries
from tclass._engine._td_remove import LOCKED_MSG
from tclass._engine._td_setitem import SetItemOps, check_empty_source, is_collection
from tclass.errors import LockedError

__all__ = [
    "SET",
    "UPDATE",
    "perform",
    "plan_rows",
    "plan_td_update",
    "plan_update",
    "update_entries",
]

_Tensor = torch.Tensor
_MISSING: Any = object()

# How a planned write is made (the last item of a ``_Write``):
SET = "set"  # holder.set(key, value, inplace=inplace)
UPDATE = "update"  # holder updates itself from value (key: its keys to update, as paths)
_RESTACK = "restack"  # the TensorDict at key becomes a lazy stack updated by value
_ROWS = "rows"  # holder[key] = value entry by entry (key: an index, value: the entries)
_NESTED = "nested"  # the rows of the TensorDict at key: (it, index, rows, their plan)

_Write = tuple[Any, Any, Any, str]
"""``(holder, key, value, how)``: one write of an update, ``how`` one of the above."""


def update_entries(
    td: SetItemOps,
    source: Any,
    clone: bool,
    inplace: bool,
    allowed: list[tuple[str, ...]] | None,
    is_leaf: Callable[[type], bool] | None,
) -> None:
    """Writes ``source`` into the TensorDict ``td`` as its ``update`` does: planned,
    then performed. The usual source, a dict of tensors by name, merges into nothing
    and reaches no record: its plan would be each entry set in ``td``, in order, so
    they are set at once (a plan costs ~60 ns a key: 10% of a 50-key update)."""
    _refuse_first(td, source, inplace, allowed, is_leaf)
    plain = allowed is None and type(source) is dict
    if plain:
        for key, value in source.items():
            if value.__class__ is not _Tensor or type(key) is not str:
                plain = False
                break
    if not plain:
        perform(
            plan_update(td, source, clone, inplace, allowed, is_leaf, []), clone, inplace, is_leaf
        )
        return
    for key, value in source.items():
        td.set(key, value.clone() if clone else value, inplace=inplace)


def plan_td_update(
    td: SetItemOps,
    source: Any,
    clone: bool,
    inplace: bool,
    allowed: list[tuple[str, ...]] | None,
    is_leaf: Callable[[type], bool] | None,
    plan: list[_Write],
) -> list[_Write]:
    """:func:`plan_update` of ``td.update(source)`` as :func:`update_entries` makes it
    (for a TensorDict that is a lazy stack's member): what ``td`` refuses whole raised
    first."""
    _refuse_first(td, source, inplace, allowed, is_leaf)
    return plan_update(td, source, clone, inplace, allowed, is_leaf, plan)


def _refuse_first(
    td: SetItemOps,
    source: Any,
    inplace: bool,
    allowed: list[tuple[str, ...]] | None,
    is_leaf: Callable[[type], bool] | None,
) -> None:
    """What a TensorDict's update refuses before it writes: a locked one given nothing
    (the peer refuses any update of a locked collection), and, in place, a part one of
    its entries refuses (all or nothing, where the peer writes part)."""
    if td._locked and not inplace and not len(source.keys()):
        raise LockedError(LOCKED_MSG.format(action="update"))
    if inplace and allowed is None and is_leaf is None and len(source.keys()) > 1:
        check_entries(td, ..., source)


def plan_update(
    td: TensorCollection,
    source: Any,
    clone: bool,
    inplace: bool,
    allowed: list[tuple[str, ...]] | None,
    is_leaf: Callable[[type], bool] | None,
    plan: list[_Write],
) -> list[_Write]:
    """Appends to ``plan`` (and returns it) the writes of ``td.update(source, clone,
    inplace)`` (``td`` a TensorDict, ``allowed`` its ``keys_to_update`` as paths), each
    record reached asked to check its part first; writes nothing (clones what ``clone``
    asks for)."""
    pairs = source._items() if isinstance(source, TensorCollection) else source.items()
    for key, value in pairs:
        path = key if type(key) is str else _keys.key_path(key)  # (a str: no tuple)
        below = None if allowed is None else keys_below(_keys.key_path(path), allowed)
        if below == []:
            continue  # neither this key nor anything under it was asked for
        if below is None and value.__class__ is _Tensor:  # merges into nothing: set
            if type(path) is tuple and len(path) > 1:
                _check_holder(td, path, value, inplace, is_leaf)
            if type(path) is tuple or td.is_locked:
                _refuse_locked_set(td, path, value, inplace)
            plan.append((td, path, deep_clone(value) if clone else value, SET))
            continue
        target = td.get(path, _MISSING)
        merged = isinstance(value, (Mapping, TensorCollection)) and (
            is_leaf is None or not is_leaf(type(value))
        )
        if merged and isinstance(target, SetItemOps):  # a nested TensorDict
            if takes_lazy_layout(target, value, below, inplace):
                plan.append((td, path, value, _RESTACK))  # (checked as it is written)
            else:
                plan_update(target, value, clone, inplace, below, is_leaf, plan)
        elif (
            merged
            and below is None
            and isinstance(target, TensorCollection)
            and (target._is_lazy or target._kept_by_update)
        ):  # a lazy stack is updated member by member, so it is kept, as the peer;
            # so is a TensorDictParams (its parameters stay registered in its module)
            target._check_update(value, inplace, None, is_leaf)
            plan.append((target, None, value, UPDATE))
        elif merged and is_record(target) and not getattr(value, "_is_lazy", False):
            # merged into a record field by field, as the peer: the record stays, with
            # its class, options and checks
            target._check_update(value, inplace, below, is_leaf)
            plan.append((target, below, value, UPDATE))
        elif below is None or target is _MISSING:
            # A nested collection asked for in part and missing here comes whole, as
            # the peer's update(keys_to_update=) sets it.
            if below is None and type(path) is tuple and len(path) > 1:
                _check_holder(td, path, value, inplace, is_leaf)
            _refuse_locked_set(td, path, value, inplace)
            plan.append((td, path, deep_clone(value) if clone else value, SET))
    return plan


def _refuse_locked_set(td: TensorCollection, path: Any, value: Any, inplace: bool) -> None:
    """Refuses, as its ``set`` would, a planned set of ``value`` at ``path`` of ``td``
    into a locked TensorDict (``td`` or the nested one holding the key, or the one a
    missing nested key would be added to), before the writes planned ahead of it are
    made (the peer writes them, then refuses)."""
    keys = (path,) if type(path) is str else _keys.key_path(path)
    node: Any = td
    for depth, key in enumerate(keys):
        if not isinstance(node, SetItemOps):
            return  # a record, a lazy stack, a file: its own write checks it
        entry = node._tensors.get(key, _MISSING)
        last = depth == len(keys) - 1
        if node._locked and not node._can_fill(key):
            if entry is _MISSING or (last and entry is not value and not inplace):
                raise node._refuse_set(key)
        if entry is _MISSING:
            return
        node = entry


def _check_holder(
    td: TensorCollection,
    path: tuple[str, ...],
    value: Any,
    inplace: bool,
    is_leaf: Callable[[type], bool] | None,
) -> None:
    """A value set at a nested ``path`` whose holder is a record: the record checks it
    now (its own ``set`` checks it as it writes, after the writes before it)."""
    holder = td.get(path[:-1], None)
    if is_record(holder):
        holder._check_update({path[-1]: value}, inplace, None, is_leaf)


def plan_rows(td: SetItemOps, index: Any, pairs: Any, plan: list[_Write]) -> list[_Write]:
    """Appends to ``plan`` (and returns it) the writes of ``td[index] = rows``
    (``pairs``: the rows' ``(key, value)``, checked against ``td``'s entries already):
    the rows given to a nested TensorDict planned in turn (:func:`_plan_nested_rows`),
    each record reached asked to check its rows at ``index`` first; the rest written by
    ``td`` (``_write_entries_at``), in order."""
    entries = td._entries()
    own: list[tuple[Any, Any]] = []
    for key, value in pairs:
        if value.__class__ is _Tensor or not isinstance(value, (Mapping, TensorCollection)):
            own.append((key, value))
            continue
        target: Any = entries.get(key)
        if isinstance(target, SetItemOps) and (
            len(value.keys()) if is_collection(value) else not isinstance(value, TensorCollection)
        ):
            if own:
                plan.append((td, index, own, _ROWS))
                own = []
            nested = _plan_nested_rows(td, key, target, index, value)
            plan.append((td, key, (target, index, value, nested), _NESTED))
            continue
        if is_record(target):
            items = value._items() if isinstance(value, TensorCollection) else value.items()
            target._check_in_place(dict(items), index, "[]")
        elif isinstance(target, TensorCollection) and (target._is_lazy or target._is_store):
            target._check_row_write(index, value)  # the records it holds check their rows
        own.append((key, value))
    if own:
        plan.append((td, index, own, _ROWS))
    return plan


def _plan_nested_rows(
    td: SetItemOps, key: str, target: SetItemOps, index: Any, value: Any
) -> list[_Write]:
    """The writes of ``target[index] = value`` (``target``: the TensorDict at ``key`` of
    ``td``), read as its ``[]`` reads them: a dict at its batch size, its parts checked
    (a collection's were, with the rows holding it)."""
    # (a lazy stack's entries, read first: one its members cannot stack refuses itself)
    entries = value._entries() if isinstance(value, TensorCollection) else None
    try:
        if entries is not None:
            if all(map(is_collection, entries.values())) and value.is_empty():
                check_empty_source(target, index, value)
            return plan_rows(target, index, entries.items(), [])
        rows = target._dict_entries_at(index, value)
        target._check_parts_at(index, dict(rows))
        return plan_rows(target, index, rows, [])
    except (IndexError, RuntimeError) as error:
        _refused_at(td, key, target, index, value, error)
        raise


def _refused_at(
    td: SetItemOps, key: str, target: SetItemOps, index: Any, value: Any, error: Exception
) -> None:
    """What the nested TensorDict ``target`` (at ``key`` of ``td``) refuses of its rows
    ``value``, planned or written, named as ``td`` names a write into its entry ``key``."""
    if isinstance(error, IndexError):  # out of range: the same for every entry
        raise _batch.index_error(index, td.batch_size, error) from None
    if isinstance(error, RuntimeError):  # after IndexError: a DimError is both
        raise_write_error(key, target, index, value, error)


def perform(
    plan: list[_Write], clone: bool, inplace: bool, is_leaf: Callable[[type], bool] | None
) -> None:
    """Makes the writes of ``plan`` (see :func:`plan_update`), in order."""
    for holder, key, value, how in plan:
        if how is SET:
            holder.set(key, value, inplace=inplace)
        elif how is UPDATE:
            holder._update_entries(value, clone, inplace, key, is_leaf)
        elif how is _ROWS:
            holder._write_entries_at(key, value)
        elif how is _NESTED:
            target, index, rows, nested = value
            try:
                perform(nested, clone, inplace, is_leaf)
            except (IndexError, RuntimeError) as error:
                _refused_at(holder, key, target, index, rows, error)
                raise
        else:  # its members may differ in shape: this node becomes a lazy stack of its
            # parts, each updated by one member, as the peer's update does
            node = value._restacked(list(holder.get(key).unbind(value.stack_dim)))
            holder.set(key, node._update_entries(value, clone, False, None, is_leaf))
