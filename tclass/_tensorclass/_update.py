"""A record's ``update``: every field of the source checked before the first is written.

``record.update(source)`` sets each field of ``source`` as :meth:`TensorClass.set`
does, and merges a mapping or collection given for a nested record or TensorDict into
it, key by key, as the peer. What it sets is checked first, all together, as
``replace`` checks the record it builds (so fields that share a named dim may change
its size together): a value that breaks a spec, a constraint or its field's type, or a
name that is not a field, leaves the record as it was. ``update(..., inplace=True)``
writes into the tensors there, checked as every row write (``_writes.check_row_write``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import torch

from tclass._base._tensordict_base import TensorDictBase
from tclass._base.implemented._collection import TensorCollection
from tclass._core._keys import key_path
from tclass._core._records import is_record, is_record_class, storage_of
from tclass._engine._entry_values import keys_below
from tclass._engine._nontensor import MetaData, NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._tensorclass._writes import check_row_write, merges_into
from tclass.errors import TclassError

if TYPE_CHECKING:
    from tclass._tensorclass._record import TensorClass

__all__ = ["check_update", "hooked_source", "merged_changes", "update_record"]

_Action = Callable[[], object]


def update_record(
    record: TensorClass,
    source: Mapping[Any, Any] | TensorCollection,
    clone: bool,
    inplace: bool,
    keys_to_update: Sequence[Any] | None,
    is_leaf: Callable[[type], bool] | None,
) -> None:
    """Sets each field of ``source`` (a mapping, TensorDict or record) into ``record``,
    checked before the first is written (see the module's docstring)."""
    allowed = None if keys_to_update is None else [key_path(k) for k in keys_to_update]
    if inplace:  # the tensors written into, checked before the first is written
        check_row_write(record, ..., source, allowed, "update", deep=False)
    for action in _planned(record, source, clone, inplace, allowed, is_leaf):
        action()


def check_update(
    record: TensorClass,
    source: Mapping[Any, Any] | TensorCollection,
    inplace: bool,
    allowed: list[tuple[str, ...]] | None,
    is_leaf: Callable[[type], bool] | None,
) -> None:
    """Raises what ``record.update(source, inplace=inplace)`` would refuse (a field's
    type, spec or constraint, in this record or the nested ones it merges into),
    writing nothing: what a collection holding ``record`` asks before its first write.
    A dict for a class whose ``__post_init__`` runs on it (``hooked_source``) is left
    to the write, which runs the hook once, then checks what it gives."""
    if type(source) is dict and source and _hooked(type(record)):
        return
    if inplace:
        check_row_write(record, ..., source, allowed, "update", deep=False)
    _planned(record, source, False, inplace, allowed, is_leaf, checking=True)


def hooked_source(record: TensorClass, source: Any) -> Any:
    """``source`` of ``record.update(dict)`` / ``update_(dict)`` once the class's
    ``__post_init__`` ran on it, as the peer's, which writes ``Cls.from_dict(dict)``: a
    dict is data coming in, so the hook runs once on a record of its fields (the ones it
    lacks ``None``; nested records' hooks first), before anything is written. What it
    raises propagates, the record left as it was; the fields it sets or changes are
    written with the dict's. A TensorDict or a record given is not (the peer's neither:
    a record's hook ran when it was built), nor ``set``, an attribute, a row write,
    ``update_at_``. A dict of which no record can be built (a key that is not a field, a
    value that does not fit) goes on as it is: the write says what is wrong."""
    cls = type(record)
    if type(source) is not dict or not source or not _hooked(cls):
        return source
    names = cls.__tclass_info__.field_names
    given = {key: value for key, value in source.items() if value is not None}
    if not all(type(key) is str and key in names for key in given):
        return source
    td = record._tensordict
    try:
        built = cls._rebuild(TensorDict(given, batch_size=td.batch_size, device=td.device))
    except (TclassError, TypeError, ValueError, RuntimeError):
        return source
    before = dict(built._tensordict._entries())
    built._incoming(frozenset(key for key, value in given.items() if is_record(value)))
    hooked = dict(source)
    rules = cls.__tclass_info__.rules
    for name, value in built._tensordict._entries().items():
        nested = name in given and _hooked(rules[name].convert_to)  # changed inside?
        if nested or before.get(name) is not value:
            hooked[name] = getattr(built, name)
    return hooked


def _hooked(cls: Any, seen: frozenset[type] = frozenset()) -> bool:
    """Whether a record of ``cls`` (a record class; anything else: False) runs a
    ``__post_init__`` when it comes in: its own, or a nested record field's (worked
    out once, kept in the class's info)."""
    if not is_record_class(cls) or cls in seen:
        return False
    info = cls.__tclass_info__
    known: bool | None = info._hooked
    if known is None:
        own = getattr(cls, "__post_init__", None) is not None
        rules = info.rules.values()
        known = info._hooked = own or any(_hooked(r.convert_to, seen | {cls}) for r in rules)
    return known


def _planned(
    record: TensorClass,
    source: Mapping[Any, Any] | TensorCollection,
    clone: bool,
    inplace: bool,
    allowed: list[tuple[str, ...]] | None,
    is_leaf: Callable[[type], bool] | None,
    checking: bool = False,
) -> list[_Action]:
    """The writes of ``record.update(source)``, in order: the fields set, then the
    mappings merged into nested records and TensorDicts. Not ``inplace``, the fields set
    and those of the nested records merged into are checked now: nothing is written
    until every one fits (``checking``: a field set alone too, where the record's own
    ``set`` would check it as it writes; nested collections are asked the same)."""
    fields: dict[Any, Any] = {}
    merges: list[tuple[Any, Any, list[tuple[str, ...]] | None]] = []
    pairs = source._items() if isinstance(source, TensorCollection) else source.items()
    for key, value in pairs:
        if type(key) is tuple and len(key) == 1:
            key = key[0]  # ``("inner",)`` is the field ``"inner"``: merged into as it is
        below = None if allowed is None else keys_below(key_path(key), allowed)
        if below == []:
            continue  # neither this key nor anything under it was asked for
        name = key[0] if type(key) is tuple and key else key  # a nested key's field
        if type(name) is str and name not in record.__tclass_info__.field_names:
            raise record._unknown_field(name)  # before the lock, as the peer's update
        if value.__class__ is torch.Tensor:  # (the usual value: it merges into nothing)
            fields[key] = value.clone() if clone else value
        elif isinstance(value, MetaData):  # one value for the whole batch: a list in it
            fields[key] = value.clone() if clone else value  # is not one item per element
        elif isinstance(value, NonTensorData) and len(value.batch_size) <= len(record.batch_size):
            fields[key] = value.data  # (a per-element stack is set as it is)
        elif isinstance(value, NonTensorData):  # dims past the record's: kept, as the peer's
            fields[key] = value.clone() if clone else value
        elif merges_into(partial(_field, record, key), value, is_leaf):
            merges.append((key, value, below))
            continue
        elif clone and isinstance(value, (torch.Tensor, TensorDictBase)):
            fields[key] = value.clone()
        else:
            fields[key] = _per_element(record, key, value)
    trial = None if inplace else _checked_trial(record, fields)
    if inplace:
        _check_in_place(record, fields, merges, is_leaf)
    elif checking and trial is None:
        _check_fields(record, fields)
    actions: list[_Action] = []
    if trial is not None:
        actions.append(partial(_adopt, record, trial))
    else:
        actions += [partial(_set_field, record, k, v, inplace) for k, v in fields.items()]
    for key, value, below in merges:
        target = record.get(key)
        if not inplace and is_record(target):  # its fields checked now too
            actions += _planned(target, value, clone, inplace, below, is_leaf, checking=True)
        else:
            if isinstance(target, TensorCollection) and not is_record(target):
                target._check_update(value, inplace, below, is_leaf)  # records inside it
            actions.append(
                partial(target.update, value, clone, inplace, keys_to_update=below, is_leaf=is_leaf)
            )
    return actions


def _check_in_place(
    record: TensorClass,
    fields: dict[Any, Any],
    merges: list[tuple[Any, Any, list[tuple[str, ...]] | None]],
    is_leaf: Callable[[type], bool] | None,
) -> None:
    """``update(..., inplace=True)``: what its tensors cannot show, checked before the
    first write (``update_record`` checked the tensors): the constraints of the Python
    values ``fields`` sets, and the nested records ``merges`` writes into, each as its
    own update checks it (it wrote the fields above, then refused a nested one)."""
    rules = record.__tclass_info__.rules
    for key, value in fields.items():
        rule = rules.get(key) if type(key) is str else None
        if rule is not None and rule.values is not None:
            rule.check_values(value)
    for key, value, below in merges:
        target = record.get(key)
        if is_record(target):
            check_row_write(target, ..., value, below, "update", deep=False)
            _planned(target, value, False, True, below, is_leaf)  # its checks; no write


def _check_fields(record: TensorClass, fields: Mapping[Any, Any]) -> None:
    """Each field of ``fields`` (a name: below a field, its write checks it) against its
    type, spec and constraint, as its setter checks it before writing."""
    info = type(record).__tclass_info__
    td = record._tensordict
    for name, value in fields.items():
        rule = info.rules.get(name) if type(name) is str else None
        if rule is None:
            continue
        if rule.values is not None:
            rule.check_values(value)
        stored = rule.store(value, td.batch_size, td.device)
        if info.specs is not None and isinstance(stored, torch.Tensor):
            info.specs.check_assign({}, name, stored, len(td.batch_size))


def _set_field(record: TensorClass, key: Any, value: Any, inplace: bool) -> None:
    """One field of ``update``: set as :meth:`TensorClass.set` does; in place into a
    locked record, a field it holds (a Python value too) is written in place, as the
    peer's ``update(..., inplace=True)`` (``set_``) writes it, where an assignment is
    refused."""
    if inplace and record.is_locked and record._tensordict._has_entry(key):
        record.set_(key, value)
    else:
        record.set(key, value, inplace=inplace)


def merged_changes(record: TensorClass, changes: Mapping[str, Any]) -> dict[str, Any]:
    """The fields ``record.replace(**changes)`` sets: a mapping or collection given for a
    field that holds a nested record or TensorDict is merged, key by key, into a copy of
    it (new collections all the way down, the tensors shared), as the peer's ``replace``
    (a copy, then ``update``): the keys it lacks, or gives as ``None``, keep their values;
    the record's own nested collections are left as they were."""
    merged = dict(changes)
    for name, value in changes.items():
        if type(name) is str and merges_into(partial(_field, record, name), value, None):
            target = record.get(name)
            # (over a file: read into memory, so that the file is left as it was)
            target = target.clone() if storage_of(target)._is_store else target.copy()
            target.update(value)
            merged[name] = target
    return merged


def _per_element(record: TensorClass, key: Any, value: Any) -> Any:
    """``value`` for the field ``key`` as ``update`` writes it: a list of one item per
    element over values the field holds per element (a stack of values, the members of
    a lazy stack), one value per element, as the peer splits it there (so that
    ``update(x.to_dict())`` gives each element its own value back); else as it is (an
    attribute set keeps a list one value over the batch, as the peer)."""
    if type(key) is not str or type(value) is not list:
        return value
    td = record._tensordict
    if not td._is_lazy and not isinstance(td._entries().get(key), NonTensorStack):
        return value
    batch = td.batch_size
    if len(batch) != 1 or len(value) != batch[0]:
        return value
    return NonTensorStack._from_values(value, td.device)


def _field(record: TensorClass, key: Any) -> Any:
    """The field ``key`` of ``record`` (None where ``key`` is a path or the field unset)."""
    return record.get(key, None) if type(key) is str else None


def _checked_trial(record: TensorClass, fields: Mapping[Any, Any]) -> dict[str, Any] | None:
    """Each of ``fields`` as the record's storage would hold it (None: the field unset;
    nothing written), checked against the class (each value's type, the specs together
    with the fields the record keeps); None where each field is set and checked on its
    own: one field, a frozen or locked record (its setter refuses before writing), a
    record over a lazy stack or a file (each value checked here against its spec first,
    the named dims it shares with other fields when it is set)."""
    cls = type(record)
    info = cls.__tclass_info__
    td = record._tensordict
    if len(fields) < 2:
        return None
    for name in fields:  # (each a field: _planned refused any other name)
        if type(name) is not str:
            return None  # sets below a field: one by one
    if info.options["frozen"] or td.is_locked:
        return None
    rules, batch, device = info.rules, td.batch_size, td.device
    if type(td) is not TensorDict:  # a lazy stack, a file: each value against its spec
        for name, value in fields.items():
            stored = rules[name].store(value, batch, device)
            if info.specs is not None and isinstance(stored, torch.Tensor):
                info.specs.check_assign({}, name, stored, len(batch))
        return None
    trial = {name: rules[name].store(value, batch, device) for name, value in fields.items()}
    if info.specs is not None:  # several fields may change a named dim's size together
        entries = {**td._entries(), **trial}
        info.specs.check({k: v for k, v in entries.items() if v is not None}, len(batch))
    return trial


def _adopt(record: TensorClass, trial: Mapping[str, Any]) -> None:
    """Stores the fields as the checked ``trial`` holds them (None: unset)."""
    td = record._tensordict
    for name, value in trial.items():
        if value is not None:
            td._store_entry(name, value)
        elif td._has_entry(name):
            td._remove_entry(name)
