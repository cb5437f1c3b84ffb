"""Spec checks of the writes into a record's rows (``record[index] = rows``, ``set_``,
``set_at_``, ``update_``, ``update_at_``, ``update(..., inplace=True)``).

Every value is checked before the first byte is written, in the record's fields and
in its nested records' (whose writes happen after the outer fields'): a value that does
not fit leaves the record, and its files when it is memory-mapped, as they were. What
fits is ``_core._row_spec``'s business; here, how each write spells its values (and
the other small rules of what writes take: keys that are fields, ``replace``'s argument,
the ``None`` of unset fields that ``update_`` drops).

The per-class facts (``RowCheck``) are worked out once: when the class is built if its
annotations and its nested record classes' checks are known then, else at the first
write (inside a torch.compile trace, that write works them out without keeping them,
and cannot when it takes generated code: the specs of a class naming one defined after
it). A class without specs, and without a nested record class that has some, gets none,
and its writes pay a function call and two attribute reads. A record over a lazy stack
(whose members may differ) is checked member by member: each member's part of the write,
split as the stack splits it, against that member's data, as a record of its own.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core._batch import format_shape, indexed_shape
from tclass._core._keys import key_path
from tclass._core._records import is_record, is_record_class, storage_of
from tclass._core._row_spec import FILL, RIGHT, RowSpecs
from tclass._core._tracing import tracing
from tclass._engine._entry_values import keys_below
from tclass._engine._lazy._index_writes import member_writes
from tclass._engine._nontensor import NonTensorData, _NonTensorNode, same_value
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._tensorclass._fields import per_element_list
from tclass.errors import (
    FieldSpecError,
    InPlaceWriteError,
    NoneFieldError,
    UnknownFieldError,
    UpdateArgumentError,
)

if TYPE_CHECKING:
    from tclass._tensorclass._builder import ClassInfo

__all__ = [
    "PENDING",
    "RowCheck",
    "build_row_check",
    "check_kinds_kept",
    "check_entry_write",
    "check_row_write",
    "check_written_keys",
    "check_written_types",
    "merges_into",
    "replacements",
    "stored_rows",
    "stored_value",
    "unset_dropped",
]

Allowed = list[tuple[str, ...]] | None  # keys_to_update as paths; None: every key


class RowCheck:
    """What a write into a record of one class checks: its spec'd fields (``rows``) and
    the fields that may hold a nested record whose class checks something."""

    __slots__ = ("rows", "nested", "rows_fit")

    def __init__(self, rows: RowSpecs | None, nested: tuple[str, ...]) -> None:
        self.rows = rows
        self.nested = nested
        # The fast path of rows from a record, where it is the whole check.
        self.rows_fit = rows.rows_fit if rows is not None and not nested else None


PENDING: Any = object()  # ClassInfo._row_check before the first write works it out


def build_row_check(info: ClassInfo, building: tuple[ClassInfo, ...] = ()) -> RowCheck | None:
    """The checks of ``info``'s class, or None when its writes have nothing to check.

    The nested classes' checks are worked out too, and kept (``building``: the classes
    whose checks are being worked out, which a class naming them, a tree, sees as
    checking nothing). While torch.compile traces, nothing is kept: a class attribute
    the trace changed would recompile the graph at its next call.
    """
    building = (*building, info)
    specs = info.specs
    nested = []
    for name, rule in info.rules.items():
        for cls in rule.collections:
            if not is_record_class(cls):
                continue
            inner = _info_of(cls)
            if inner in building:
                continue
            check = inner._row_check
            if check is PENDING:
                check = build_row_check(inner, building)
                if not tracing():
                    inner._row_check = check
            if check is not None:
                nested.append(name)
                break
    if specs is None and not nested:
        return None
    return RowCheck(None if specs is None else RowSpecs(specs), tuple(nested))


def _row_check(info: ClassInfo) -> RowCheck | None:
    """``info.row_check``, not kept while torch.compile traces (see build_row_check)."""
    check = info._row_check
    if check is PENDING:
        return build_row_check(info) if tracing() else info.row_check
    return check  # type: ignore[return-value]


def _info_of(cls: type) -> ClassInfo:
    info: ClassInfo = getattr(cls, "__tclass_info__")  # noqa: B009 (a record class's)
    return info


def check_written_keys(record: Any, value: Any) -> None:
    """Refuses a collection or mapping written into ``record``'s rows with a key that
    is not a field (a record of the same class has only fields), or a value of a kind
    its field never holds (a tensor in a ``str`` field: see ``FieldRule.check_written``).

    Raises:
        UnknownFieldError: naming the key, with the closest field.
        FieldTypeError: naming the field and its annotation.
    """
    items = _written_items(record, value)
    info = record.__tclass_info__
    fields = info.field_names
    for key, sub in items:
        if key in fields:
            info.rules[key].check_written(sub)
        else:
            if is_record(value):  # a record of another class
                raise UnknownFieldError(
                    f"{type(record).__name__}[...] = {type(value).__name__}: __setitem__ is "
                    "only allowed for same-class or compatible class (one whose fields are "
                    f"all fields of {type(record).__name__}) assignment; {key!r} is not a "
                    f"field of {type(record).__name__} (fields: {', '.join(fields)})"
                )
            raise record._unknown_field(key)


def check_nested_mapping(record: Any, path: tuple[Any, ...], value: Any) -> None:
    """Refuses a plain mapping set at the nested key ``path`` of ``record`` whose field,
    found down the nested records' annotations, does not take one
    (``rec.set(("inner", "z"), {"q": t})`` with ``z: Optional[Tensor]``), as the nested
    record's own ``set`` refuses it: a record over a lazy stack refuses it too, where its
    stack would make the mapping a collection before the field sees it.

    Raises:
        FieldTypeError: naming the class, the field and the annotation.
    """
    if not isinstance(value, Mapping) or isinstance(value, TensorCollection):
        return
    info = record.__tclass_info__
    for name in path[:-1]:
        rule = info.rules.get(name) if type(name) is str else None
        info = getattr(rule.convert_to if rule is not None else None, "__tclass_info__", None)
        if info is None:
            return  # not a nested record's field: the collection's rules
    rule = info.rules.get(path[-1]) if type(path[-1]) is str else None
    if rule is not None:
        rule.check_mapping(value)


def check_written_types(record: Any, value: Any) -> None:
    """Refuses a value of a kind its field never holds among the fields ``value`` (a
    mapping or collection) writes into rows of ``record`` (``set_at_``, ``update_at_``);
    keys that are not fields are left to the write.

    Raises:
        FieldTypeError: naming the field and its annotation.
    """
    rules = record.__tclass_info__.rules
    for key, sub in _written_items(record, value):
        if type(key) is tuple and len(key) == 1:
            key = key[0]  # ("count",): the field itself, as a write reads it
        rule = rules.get(key) if type(key) is str else None
        if rule is not None:
            rule.check_written(sub)


def _written_items(record: Any, value: Any) -> Iterable[tuple[Any, Any]]:
    """The (key, value) pairs a row write of ``value`` gives ``record``'s fields (for a
    record of its class, checked when built, its bounded Python values alone: a record
    derived without the checks may hold any, as its tensors, which the row check reads;
    none for a number; a lazy stack's keys alone, with None: its members may differ, and
    their values are checked as written)."""
    if isinstance(value, TensorCollection) and type(value) is not type(record):
        if storage_of(value)._is_lazy:
            return ((key, None) for key in value._key_names())
        return value._entries().items()
    if isinstance(value, Mapping):
        return value.items()
    if type(value) is type(record) and record.__tclass_info__.bounds_values:
        entries = storage_of(value)._entries() if not storage_of(value)._is_lazy else {}
        rules = record.__tclass_info__.rules
        return [(k, v) for k, v in entries.items() if k in rules and rules[k].values is not None]
    return ()


def unset_dropped(record: Any, source: Any) -> Any:
    """A plain dict ``source`` without the ``None`` given for fields of ``record`` that
    are absent (``None``), nested records included: as in the peer,
    ``update_(record.to_dict())`` leaves them; Python values as the fields keep them
    (``stored_value``)."""
    if type(source) is not dict:
        return source
    absent = record._absent_fields()
    kept = {}
    for key, value in source.items():
        if value is None and key in absent:
            continue
        if _holds_these_values(record, key, value):
            continue  # the values it holds (a to_dict() given back): nothing to write
        # a nested record is read only for a dict written into it: reading a tensor field
        # of a lazy stack stacks it, which its members' shapes may forbid
        nested = isinstance(key, str) and type(value) is dict
        inner = getattr(record, key, None) if nested else None
        kept[key] = (
            unset_dropped(inner, value) if is_record(inner) else stored_value(record, key, value)
        )
    return kept


def stored_value(record: Any, key: Any, value: Any, index: Any = ...) -> Any:
    """``value`` as ``record`` keeps it when it is written in place into the Python
    values its field ``key`` holds, at ``index`` (``...``: every element): as the field
    stores it (``autocast``'s conversion applied; a list given for a ``list`` field one
    value, for an ``int`` field one value per element), where a TensorDict would make a
    tensor of a number or a list; any other value (or field) as it is."""
    if type(key) is not str or value is None or isinstance(value, TensorCollection):
        return value
    rule = record.__tclass_info__.rules.get(key)
    if rule is None or not rule.value_field:
        return value
    if isinstance(value, torch.Tensor) and rule.cast is None:
        return value  # a number in tensor form; autocast converts it
    td = record._tensordict
    entry = td.get(key, None) if td._is_lazy else td._entries().get(key)
    if entry is not None and not isinstance(entry, _NonTensorNode):
        return value  # a tensor (a number in tensor form): the tensor rules
    shape = td.batch_size if index is ... else indexed_shape(td.batch_size, index)
    stored = rule.store(value, shape, td.device)
    if entry is None:  # unset: the field's Python value, as a record's row writes it
        return stored
    if td._is_lazy or isinstance(entry, NonTensorStack):  # values held per element
        return per_element_list(stored, shape, td.device)
    return stored


def check_kinds_kept(record: Any, values: Any, op: str, allowed: Allowed = None) -> None:
    """Refuses, before anything is written, a tensor or mapping copied in place into a
    field that holds a Python value (what ``set_`` refuses for that field alone), so
    that ``update_`` writes all of its values or none. ``values``: a mapping, a
    collection (a lazy stack's members are written member by member, each checked) or
    None; ``allowed``: the keys to update, as paths.

    Raises:
        InPlaceWriteError: naming the field.
    """
    if values is None or record._tensordict._is_lazy:
        return
    if isinstance(values, TensorCollection):
        if values._is_lazy:
            return
        values = values._entries()
    entries = record._tensordict._entries()
    for key, value in values.items():
        if allowed is not None and not any(path[:1] == key_path(key)[:1] for path in allowed):
            continue
        if isinstance(entries.get(key), _NonTensorNode) and (
            isinstance(value, (torch.Tensor, Mapping))
            or (isinstance(value, TensorCollection) and not isinstance(value, _NonTensorNode))
        ):
            msg = (
                f"{type(record).__name__}.{op}(...): {key!r} holds a Python value; a "
                f"{type(value).__name__} cannot be copied into it (an in-place write keeps "
                "the entry's kind: use set() or update() to replace it). Nothing was written"
            )
            raise InPlaceWriteError(msg)


def stored_rows(record: Any, index: Any, value: Any) -> Any:
    """The rows ``value`` written into ``record`` at ``index``: a plain mapping's values
    for Python-value fields as :func:`stored_value` makes them, without the ``None``
    given for any field (as the peer reads the dict as a record of the class, whose
    ``None`` fields hold nothing: ``td[i] = td[i].to_dict()`` leaves them absent,
    ``td[i] = {"r": {"label": None}}`` leaves the labels and ``{"r": {"y": t, "z":
    None}}`` the tensor ``z``, as ``rec[i] = Rec(y=t, z=None)`` does); any other value
    as it is."""
    if type(value) is TensorDict and record.__tclass_info__.options["autocast"]:
        return _cast_rows(record, index, value)
    if not isinstance(value, Mapping) or isinstance(value, TensorCollection):
        return value
    return {
        key: stored_value(record, key, item, index)
        for key, item in value.items()
        if item is not None
    }


def _cast_rows(record: Any, index: Any, rows: TensorDict) -> TensorDict:
    """``rows`` with the Python values it holds for ``record``'s fields converted by
    ``autocast`` (a copy, where it holds any)."""
    rules = record.__tclass_info__.rules
    changed = {
        key: stored_value(record, key, entry.data if type(entry) is NonTensorData else entry, index)
        for key, entry in rows._entries().items()
        if isinstance(entry, (NonTensorData, torch.Tensor))
        and getattr(rules.get(key), "cast", None) is not None
    }
    changed = {key: new for key, new in changed.items() if new is not rows._entries()[key]}
    if not changed:
        return rows
    copy = rows.copy()
    for key, new in changed.items():
        copy.set(key, new)
    return copy


def _holds_these_values(record: Any, key: Any, value: Any) -> bool:
    """Whether the Python-value field ``key`` of ``record`` holds ``value`` already (its
    one value, or its per-element values as a list)."""
    if type(key) is not str or isinstance(value, (torch.Tensor, TensorCollection)):
        return False
    td = record._tensordict  # (this key only: a lazy stack's other entries may not stack)
    entry = td.get(key, None) if td._is_lazy else td._entries().get(key)
    if isinstance(entry, NonTensorData):
        return same_value(entry.data, value)
    if isinstance(entry, _NonTensorNode) and isinstance(value, list):
        return same_value(entry.tolist(), value)
    return False


def replaced_storage(storage: Any, changed: Iterable[str]) -> Any:
    """The storage ``record.replace(...)`` writes its ``changed`` fields into: a one-level
    copy whose nested records and collections are new ones over the same tensors (as the
    peer's replace: setting a field of one leaves the source's as it was), its tensors and
    Python values shared; a lazy stack's copy (new members). A file's (HDF5, zarr) is
    read into memory, as its own ``replace`` is: the file is left as it was (the peer's
    writes the changes into it)."""
    if storage._is_store:
        return storage.clone()
    if not isinstance(storage, TensorDict):
        return copy.copy(storage)
    td = storage._copy_top()
    skipped = set(changed)
    for key, value in storage._items():
        if key not in skipped and isinstance(value, TensorCollection):
            if not isinstance(value, _NonTensorNode):
                td._store_entry(key, copy.copy(value))
    return td


def replacements(args: tuple[Mapping[str, Any] | TensorCollection, ...]) -> dict[str, Any]:
    """The fields ``replace(mapping)`` sets, from its one positional argument."""
    (source, *rest) = args
    if rest or not isinstance(source, (Mapping, TensorCollection)):
        msg = (
            "replace() takes one dict or collection of fields (and keywords), got "
            f"{len(args)} argument(s) of type(s) {[type(arg).__name__ for arg in args]}"
        )
        raise UpdateArgumentError(msg)
    if isinstance(source, TensorCollection):
        return {key: source.get(key) for key in source._key_names()}
    return dict(source)


def check_row_write(
    record: Any,
    index: Any,
    value: Any,
    allowed: Allowed = None,
    op: str = "[]",
    *,
    deep: bool = True,
) -> None:
    """Checks ``value`` written into ``record`` at ``index`` (``...``: every element),
    as ``record[index] = value`` writes it; ``allowed``: the keys to update, as paths;
    ``op``: the method writing (for messages); not ``deep``: the nested records are
    not written into (``update(..., inplace=True)`` replaces them).

    Raises:
        FieldSpecError: listing every value that does not fit its field's spec.
    """
    info = record.__tclass_info__
    check = info._row_check
    if check is PENDING:
        check = _row_check(info)
    if check is None:
        return
    describe = lambda: _describe(record, op, index)  # noqa: E731  (for messages only)
    fit = check.rows_fit
    if fit is not None and allowed is None and (type(value) is type(record) or is_record(value)):
        # The common write, rows of a record into a record: its fast path alone.
        storage, source = record._tensordict, value._tensordict
        if type(storage) is TensorDict and type(source) is TensorDict:
            n, m = len(storage.batch_size), len(source.batch_size)
            if fit(storage._entries(), source._entries(), n, m):
                if check.rows.record.constrained:  # the values, once each
                    check.rows.check_values(source._entries(), describe)
                return
    _check(check, info, record._tensordict, index, value, allowed, describe, deep)


def refuse_none_field(record: Any, path: tuple[str, ...]) -> None:
    """A ``NoneFieldError`` if ``path`` names a field (of ``record`` or a nested record)
    that holds ``None``, which ``set_`` has no tensor to copy into."""
    owner = record.get(path[:-1], None) if len(path) > 1 else record
    if not is_record(owner) or path[-1] not in owner.__tclass_info__.field_names:
        return
    if getattr(owner, path[-1]) is None:
        msg = (
            f"set_: field {path[-1]!r} of {type(owner).__name__} (key "
            f"{path if len(path) > 1 else path[0]!r}) is None, so "
            "there is no tensor to copy into in place; give it a value with set() or by "
            "assignment first"
        )
        raise NoneFieldError(msg)


def check_entry_write(record: Any, key: Any, value: Any, index: Any, op: str) -> None:
    """Checks ``value`` written into the entry ``key`` of ``record`` at ``index`` by the
    method ``op`` (``set_``, ``set_at_``): aligned on the right, as torch broadcasts it;
    at an index with an Ellipsis before its last item (``(..., 0)``), which torch reads
    on every dim of the tensor, its feature dims too, its dtype alone (it fills a part
    of the tensor that has no rows to line up with).

    Raises:
        FieldSpecError: if it does not fit the spec of the field it is written into.
    """
    info = record.__tclass_info__
    check = _row_check(info)
    if check is not None:
        describe = lambda: _describe(record, op, index, key)  # noqa: E731
        reaches = _reaches_features(index, len(record.batch_size))
        values = _Filling({key: value}) if reaches else {key: value}
        _check(check, info, record._tensordict, index, values, None, describe, True)


def _reaches_features(index: Any, batch_ndim: int) -> bool:
    """Whether ``index`` reaches past the batch dims into an entry's feature dims: an
    Ellipsis before its last item (``(..., 0)``), or more dims taken than the batch has
    (``(slice(None), 0)`` of a record of batch ``[4]``: torch indexes the tensor so)."""
    parts = index if type(index) is tuple else (index,)
    if any(part is Ellipsis for part in parts[:-1]):
        return True
    taken = 0
    for part in parts:
        if part is None or part is Ellipsis or isinstance(part, bool):
            continue
        is_mask = isinstance(part, torch.Tensor) and part.dtype in (torch.bool, torch.uint8)
        taken += part.ndim if is_mask else 1
    return taken > batch_ndim


class _Filling(dict[Any, Any]):
    """Values written into entries at an index reaching their feature dims: each fills
    the elements it lands on, its dtype alone checked (the ``FILL`` mode)."""


def _check(
    check: RowCheck,
    info: ClassInfo,
    storage: Any,
    index: Any,
    value: Any,
    allowed: Allowed,
    describe: Callable[[], str],
    deep: bool,
) -> None:
    """Checks ``value`` written at ``index`` into ``storage``, the data of a record of the
    class ``info`` describes (see :func:`check_row_write`)."""
    if isinstance(value, _NonTensorNode):
        return  # a Python value: no tensor to check
    if storage._is_lazy:
        if type(value) is _Filling:  # no split: its dtype on each member's
            for member in storage._members:
                _check(check, info, member, ..., value, allowed, describe, deep)
            return
        uniform = _uniform_member(check, storage, value)
        refused = None
        if uniform is not None:  # the whole value on one member: each part's check
            try:
                return _check(check, info, uniform, ..., value, allowed, describe, deep)
            except FieldSpecError as error:  # the members below name each one refusing it
                refused = error
        if _check_members(check, info, storage, index, value, allowed, describe, deep):
            if refused is not None:
                raise refused
            return
        if refused is not None:
            raise refused
    dense = type(storage) is TensorDict
    rows = check.rows
    values: Mapping[str, Any]
    if isinstance(value, TensorCollection):
        values, mode = value._entries(), len(value.batch_size)
    elif isinstance(value, Mapping):
        values, mode = _by_field(value), FILL if type(value) is _Filling else RIGHT
    elif dense:
        values, mode = dict.fromkeys(storage._entries(), value), FILL
    else:
        values, mode = dict.fromkeys(rows.record.constrained if rows else (), value), FILL
    if allowed is not None:
        values, below = _allowed(values, allowed)
    else:
        below = None
    if not dense:
        # A file, or a lazy stack whose write does not split (it says why): the values alone.
        if rows is not None and rows.record.constrained:
            rows.check_values(values, describe)
        for name in check.nested if deep else ():
            if (sub := values.get(name)) is not None:
                sub_allowed = None if below is None else below.get(name)
                _check_nested_values(info, name, sub, sub_allowed, describe)
        return
    targets = storage._entries()
    if rows is not None:
        batch = storage.batch_size
        if not rows.fit(targets, values, len(batch), mode):
            rows.check(targets, values, batch, mode, _fresh_ndim(batch, index), describe())
        if rows.record.constrained:  # the values written, once each
            rows.check_values(values, describe)
    for name in check.nested if deep else ():
        sub = values.get(name)
        if sub is None:
            continue
        target = targets.get(name)
        sub_allowed = None if below is None else below.get(name)
        if target is None and sub_allowed is None:  # unset: the write makes it
            _check_made(info, name, storage.batch_size, index, sub, describe)
        if not is_record(target):  # the collection a write made there: its values
            _check_nested_values(info, name, sub, sub_allowed, describe)
            continue
        inner_info = _info_of(type(target))
        inner = _row_check(inner_info)
        if inner is not None:
            at = _inside(describe, name)
            _check(inner, inner_info, target._tensordict, index, sub, sub_allowed, at, True)


def _uniform_member(check: RowCheck, stack: Any, value: Any) -> TensorDict | None:
    """The member of the lazy stack ``stack`` whose data stands for every member's in a
    check of ``value`` written into it: when the members are TensorDicts holding each
    spec'd field as a tensor of one dtype and one shape past their batch dims, no field
    holds a nested record to check and ``value`` is no lazy stack (whose parts may
    differ), every part of the write meets the same targets, and a value's feature dims
    do not depend on how the write splits it. Checking the whole value against that
    member is then checking each part against its own, at a dense write's cost (not the
    split's). None otherwise."""
    rows = check.rows
    if rows is None or check.nested:
        return None
    if isinstance(value, TensorCollection) and storage_of(value)._is_lazy:
        return None
    members = stack._members
    first = members[0] if members else None
    if type(first) is not TensorDict:
        return None
    n = len(first.batch_size)  # (every member's: a lazy stack's have as many batch dims)
    entries = first._entries()
    wanted = []
    for name in rows.record.specs:
        tensor = entries.get(name)
        if not isinstance(tensor, torch.Tensor):
            return None  # unset (the write makes it, against each member's dims) or a value
        wanted.append((name, tensor.dtype, tensor.shape))
    for other in members[1:]:
        if type(other) is not TensorDict:
            return None
        held = other._entries()
        for name, dtype, shape in wanted:
            tensor = held.get(name)
            if not isinstance(tensor, torch.Tensor) or tensor.dtype is not dtype:
                return None
            if tensor.shape != shape and tensor.shape[n:] != shape[n:]:  # (ragged batch)
                return None
    return first


def _check_members(
    check: RowCheck,
    info: ClassInfo,
    stack: Any,
    index: Any,
    value: Any,
    allowed: Allowed,
    describe: Callable[[], str],
    deep: bool,
) -> bool:
    """Checks each member's part of ``value`` written at ``index`` into the lazy stack
    ``stack`` (split as its write splits it; a nested lazy stack's members' parts too)
    as a write into a record of its own, on the member's data: its dtypes, its feature
    dims (members may differ in them, as ``Cls(...)`` of each takes them), its named
    dims, the constraints; every refusing member named in one error. False: the write
    cannot be split (it says why), nothing checked."""
    refusals = _member_refusals(check, info, stack, index, value, allowed, describe, deep)
    if refusals is None:
        return False
    if refusals:
        raise _refused(refusals, describe)
    return True


_Refusal = tuple[str, FieldSpecError]  # the member ("member 1 of member 0"), its error


def _member_refusals(
    check: RowCheck,
    info: ClassInfo,
    stack: Any,
    index: Any,
    value: Any,
    allowed: Allowed,
    describe: Callable[[], str],
    deep: bool,
    outer: str = "",
) -> list[_Refusal] | None:
    """Each member's check of :func:`_check_members`, every member checked: the members
    that refuse their part, with their errors; None where the write cannot be split.
    ``outer``: the member numbers above (a nested lazy stack's), for messages."""
    try:
        parts = member_writes(stack, index, value)
    except (RuntimeError, TypeError, ValueError, IndexError, KeyError):
        return None
    refusals: list[_Refusal] = []
    for number, member, where, part in parts:
        place = f"member {number}{outer}"
        if member._is_lazy:
            inner = _member_refusals(
                check, info, member, where, part, allowed, describe, deep, f" of {place}"
            )
            if inner is not None:
                refusals += inner
                continue
        try:
            _check(check, info, member, where, part, allowed, _in_member(describe, place), deep)
        except FieldSpecError as error:  # the next members checked too: each one named
            refusals.append((place, error))
    return refusals


def _refused(refusals: list[_Refusal], describe: Callable[[], str]) -> FieldSpecError:
    """The one error of a write that members of a lazy stack refuse: a single member's
    as it is; several members' joined, each named with what it refuses (its field and
    problem), their problems all kept."""
    if len(refusals) == 1:
        return refusals[0][1]
    what, suffix = describe(), ". Nothing was written"
    listed = "; ".join(
        f"{place}: "
        + str(error).removeprefix(f"{what} ({place} of its lazy stack): ").removesuffix(suffix)
        for place, error in refusals
    )
    problems = [problem for _, error in refusals for problem in error.problems]
    count = f"{len(refusals)} members of its lazy stack refuse it"
    return FieldSpecError(f"{what}: {count}: {listed}{suffix}", problems)


def _check_made(
    info: ClassInfo,
    name: str,
    batch: torch.Size,
    index: Any,
    value: Any,
    describe: Callable[[], str],
) -> None:
    """Checks the collection a write of ``value`` at ``index`` makes under the field
    ``name`` that holds ``None`` (as the engine makes it: zeros, the rows written at
    ``index``) against the record class the field is annotated with, as assigning it
    checks it: dtypes, feature dims, and the constraints of every row, the zeros too.
    A value the write cannot take is left to the write, which says so.

    Raises:
        FieldSpecError: the class's problems, prefixed with the write.
    """
    cls: Any = next((c for c in info.rules[name].collections if is_record_class(c)), None)
    if cls is None or _row_check(_info_of(cls)) is None:
        return
    rows: Any
    try:
        if isinstance(value, TensorCollection):
            rows = storage_of(value) if is_record(value) else value
        elif isinstance(value, Mapping):
            rows = TensorDict(_by_field(value), batch_size=indexed_shape(batch, index))
        else:
            return
        made = rows.new_zeros(batch)
        made[index] = rows
    except (RuntimeError, TypeError, ValueError, IndexError, KeyError):
        return  # the write itself says what is wrong
    try:
        cls._rebuild(made)
    except FieldSpecError as error:
        what = f"{_inside(describe, name)()}: the {cls.__name__} it makes there: {error}"
        raise FieldSpecError(f"{what}. Nothing was written", error.problems) from None


def _check_nested_values(
    info: ClassInfo, name: str, value: Any, allowed: Allowed, describe: Callable[[], str]
) -> None:
    """Checks the values written under the field ``name`` (of the class ``info``
    describes) against the constraints of the record class it is annotated with, nested
    records alike, as assigning the field checks them: where it holds no record
    (``None``, or a collection a write made there), which the write makes
    (``rec[0] = {"inner": {...}}``, ``rec.set_(("inner", "q"), x)``, as the peer), and
    in a lazy stack's members, which may differ. A value of another kind is left to the
    write.

    Raises:
        FieldSpecError: naming the field, the constraint and the first offending value.
    """
    cls = next((c for c in info.rules[name].collections if is_record_class(c)), None)
    check = None if cls is None else _row_check(_info_of(cls))
    if cls is None or check is None:
        return
    values: Mapping[str, Any]
    if isinstance(value, Mapping) and not isinstance(value, TensorCollection):
        values = _by_field(value)
    elif isinstance(value, TensorCollection) and not (
        isinstance(value, _NonTensorNode) or value._is_lazy
    ):
        values = value._entries()
    else:
        return
    below: dict[str, Allowed] | None = None
    if allowed is not None:
        values, below = _allowed(values, allowed)
    inside = _inside(describe, name)
    if check.rows is not None and check.rows.record.constrained:
        check.rows.check_values(values, inside)
    for sub_name in check.nested:
        sub = values.get(sub_name)
        if sub is not None:
            sub_allowed = None if below is None else below.get(sub_name)
            _check_nested_values(_info_of(cls), sub_name, sub, sub_allowed, inside)


def _inside(describe: Callable[[], str], name: str) -> Callable[[], str]:
    return lambda: f"{describe()}, into its field {name!r}"


def _in_member(describe: Callable[[], str], place: str) -> Callable[[], str]:
    return lambda: f"{describe()} ({place} of its lazy stack)"


def _by_field(mapping: Mapping[Any, Any]) -> dict[str, Any]:
    """A dict's values by field: nested keys (``("info", "x")``) grouped under their
    field as a dict of the rest of their path."""
    out: dict[str, Any] = {}
    groups: dict[str, dict[Any, Any]] = {}
    kind = _Filling if type(mapping) is _Filling else dict  # (what nested ones are)
    for key, sub in mapping.items():
        if type(key) is str:
            out[key] = sub
            continue
        try:
            path = key_path(key)
        except (TypeError, ValueError):
            continue  # not a key: the write says so
        if len(path) == 1:
            out[path[0]] = sub
        elif path[0] not in out or path[0] in groups:
            group = groups.setdefault(path[0], kind())
            group[path[1:]] = sub
            out[path[0]] = group
    return out


def _allowed(
    values: Mapping[str, Any], allowed: list[tuple[str, ...]]
) -> tuple[dict[str, Any], dict[str, Allowed]]:
    """The values ``keys_to_update`` lets through, and what it lets through below each."""
    kept: dict[str, Any] = {}
    below: dict[str, Allowed] = {}
    for name, sub in values.items():
        under = keys_below((name,), allowed)
        if under is None or under:
            kept[name] = sub
            below[name] = under
    return kept, below


def _fresh_ndim(batch: torch.Size, index: Any) -> int | None:
    """The dims ``index`` leaves of the batch (what a write allocates a field under)."""
    try:
        return len(indexed_shape(batch, index))
    except (IndexError, TypeError, ValueError, RuntimeError):
        return None  # a bad index: the write says so


_NO_KEY: Any = object()


def _describe(record: Any, op: str, index: Any, key: Any = _NO_KEY) -> str:
    """The write, as the caller spelled it: ``Frame[:2] = ...``, ``Frame.set_at_('obs',
    ..., 3)``."""
    name = type(record).__name__
    if op == "[]":
        return f"{name}[{_show_index(index)}] = ..."
    if op == "set(new)":  # set(key, value) below a field that holds no record
        return f"{name}.set({key!r}, ...)"
    args = [] if key is _NO_KEY else [repr(key)]
    args.append("...")
    if op.endswith("_at_"):
        args.append(_show_index(index))
    if op in ("set", "update"):
        args.append("inplace=True")
    return f"{name}.{op}({', '.join(args)})"


def _show_index(index: Any) -> str:
    if isinstance(index, torch.Tensor):
        return f"<{str(index.dtype).replace('torch.', '')} tensor {format_shape(index.shape)}>"
    if type(index) is slice:
        start, stop, step = (
            "" if p is None else str(p) for p in (index.start, index.stop, index.step)
        )
        return f"{start}:{stop}" + (f":{step}" if step else "")
    if type(index) is tuple:
        return ", ".join(map(_show_index, index))
    if index is Ellipsis:
        return "..."
    text = repr(index)
    return text if len(text) <= 40 else text[:37] + "..."


def merges_into(
    current: Callable[[], Any], value: Any, is_leaf: Callable[[type], bool] | None
) -> bool:
    """Whether ``update`` merges ``value`` into a field that holds ``current()``, key by
    key as the peer (the fields the source lacks, or holds as ``None``, are kept): a
    mapping or a collection (not a lazy stack, not a Python value) given for a field that
    holds a record or a TensorDict, unless ``is_leaf`` says its type is a leaf. The field
    is read only for such a value (a tensor field of a lazy stack whose members differ in
    shape has no dense value to read, and a tensor given for it replaces it)."""
    if not isinstance(value, (Mapping, TensorCollection)) or isinstance(value, _NonTensorNode):
        return False
    if getattr(value, "_is_lazy", False) or (is_leaf is not None and is_leaf(type(value))):
        return False
    field = current()
    return isinstance(field, TensorDict) or is_record(field)
