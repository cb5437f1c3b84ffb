"""What the engine builds for the other layers' hottest paths over a TensorDict's slots:
the field accessors of records (their getters, setters, batch size and device) and
``data_ptr()``.

A record (tclass/_tensorclass) keeps its fields in a TensorDict (or a lazy stack, which
answers the same slots) in its ``_tensordict``. Reading and assigning a field are the
hottest paths of the library, so they are built here, with direct slot access.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any

import torch

from tclass._base._provided import ENGINE
from tclass._base._tensordict_base import Value
from tclass._base.implemented._collection import TensorCollection
from tclass._core._records import is_record, storage_of
from tclass._engine._nontensor import MetaData, NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._ragged_values import RaggedNonTensorStack
from tclass._engine._td import TensorDict
from tclass.errors import BatchMismatchError, HeterogeneousEntryError

__all__ = [
    "batch_size_of_record",
    "data_ptrs",
    "dense_entries",
    "device_of_record",
    "field_getter",
    "members_field",
    "record_batch_size",
    "record_entries",
    "record_parts",
    "tensor_field_setter",
]

_Tensor = torch.Tensor
_NO_DIMS = torch.Size([])


def data_ptrs(collection: Any, storage: bool, top: bool = True) -> TensorDict:
    """``collection.data_ptr()``: a TensorDict (no batch dims, on the CPU) of the data
    addresses of the tensors (``storage``: of their storages), nested like it; a lazy
    stack's members under ``"0"``, ``"1"``...; Python values left out. At the ``top``
    level the tensors come before the nested collections, as in the peer's (whose nested
    levels keep their order). A record that keeps its fields in a lazy stack lists its
    members too, as the peer's (which asks its storage)."""
    stack = storage_of(collection)
    if stack._is_lazy:
        members = {str(i): data_ptrs(m, storage, False) for i, m in enumerate(stack.tensordicts)}
        return TensorDict._new_unchecked(members, _NO_DIMS, torch.device("cpu"))  # type: ignore[arg-type]
    entries: dict[str, Value] = {}
    nested: dict[str, Value] = {}
    for key, value in collection._items():
        if isinstance(value, TensorCollection):
            if not value._is_leaf_node:
                (nested if top else entries)[key] = data_ptrs(value, storage, False)
            continue
        address = value.untyped_storage().data_ptr() if storage else value.data_ptr()
        entries[key] = torch.tensor(address, dtype=torch.int64)
    entries.update(nested)
    return TensorDict._new_unchecked(entries, _NO_DIMS, torch.device("cpu"))


# --- the field accessors of records ------------------------------------------------------

_OTHER_NODES: frozenset[Any] = frozenset((NonTensorStack, RaggedNonTensorStack, MetaData))
_VALUE_NODES: frozenset[Any] = frozenset((NonTensorData, *_OTHER_NODES))

# C-level getters of a record's entries and batch size, which stack and cat read from
# hundreds of members at once.
record_entries: Callable[[Any], Mapping[str, Value]] = attrgetter("_tensordict._tensors")
record_batch_size: Callable[[Any], torch.Size] = attrgetter("_tensordict._batch_size")


# The getters of a record's batch_size and device properties (plain functions,
# which torch.compile traces, unlike attrgetter objects).
def batch_size_of_record(record: Any) -> torch.Size:
    return record._tensordict._batch_size  # type: ignore[no-any-return]


def device_of_record(record: Any) -> torch.device | None:
    return record._tensordict._device  # type: ignore[no-any-return]


def dense_entries(record: Any) -> Mapping[str, Value] | None:
    """A record's entries when it keeps them in one TensorDict; None over a lazy stack
    (whose members may differ)."""
    storage = record._tensordict
    return storage._tensors if storage.__class__ is TensorDict else None


def record_parts(record: Any) -> list[tuple[Mapping[str, Value], int]]:
    """The entries of each TensorDict a record keeps its fields in (one, or a lazy
    stack's members, nested stacks read through; over a file, its entries as read),
    each with its batch dims."""
    parts: list[tuple[Mapping[str, Value], int]] = []
    pending: list[Any] = [record._tensordict]
    while pending:
        node = pending.pop(0)
        if node.__class__ is TensorDict:
            parts.append((node._tensors, len(node._batch_size)))
        elif is_record(node):
            pending.insert(0, node._tensordict)
        elif node._is_lazy:
            pending[:0] = node.tensordicts
        else:  # a file's rows (a store or a view of it): its entries, read on access
            parts.append((node._tensors, len(node.batch_size)))
    return parts


def field_getter(
    name: str, values: bool, nodes: bool = False, first: type = _Tensor
) -> Callable[[Any], Any]:
    """The getter of the record field ``name``: its entry, ``None`` when absent, and
    with ``values`` a Python value's data instead of its node. Without ``values``, a
    node found in a field declared for tensors or collections (put there by
    ``rename_key_``) reads as its value, unless ``nodes`` (a ``tensor_only`` class: its
    fields give the entries as stored, nodes included). ``first`` is the class the field
    is expected to hold (a plain tensor, or its one record class), looked for first.

    A record's fields are read far more often than anything else it does, so the getter
    subscripts the entries (no method call): what a TensorDict's ``dict`` holds is the
    field's entry, and a missing key or a mapping that does not answer (a lazy stack
    whose members differ) is read again through the mapping's ``get``, as is a value of
    another class from a lazy stack's or a file's mapping (whose ``get`` may differ from
    its subscript). ``type(value)``, not ``value.__class__``: a nested record's
    ``__class__`` goes through its class's ``__getattr__`` hook."""

    def stored(record: Any) -> Any:  # the entry as stored, through any mapping
        try:
            return record._tensordict._tensors.get(name)
        except HeterogeneousEntryError:  # a lazy stack some of whose members lack it
            return _MEMBERS

    def read(record: Any, value: Any) -> Any:  # a Python value's data, or the entry
        kind = type(value)
        if kind is NonTensorData:
            return value._data
        if value is None and record._tensordict._is_lazy:  # (set in a nested stack's members)
            return members_field(record._tensordict, name)
        if value is _MEMBERS:
            return members_field(record._tensordict, name)
        return value._read() if kind in _OTHER_NODES else value

    def entry(record: Any, value: Any) -> Any:  # a field declared for tensors or collections
        if value is None and record._tensordict._is_lazy:
            return members_field(record._tensordict, name)
        if value is _MEMBERS:
            return members_field(record._tensordict, name)
        if not nodes and type(value) in _VALUE_NODES:
            return value._read()
        return value

    def getter(record: Any) -> Any:
        try:
            entries = record._tensordict._tensors
            value = entries[name]
        except Exception:  # absent, or a lazy stack's entry that does not stack: as stored
            return read(record, stored(record))
        kind = type(value)
        if kind is NonTensorData:  # the common case: one value, read as an attribute
            return value._data
        if kind is _Tensor:
            return value
        return read(record, value if type(entries) is dict else stored(record))

    def entry_getter(record: Any) -> Any:
        try:
            entries = record._tensordict._tensors
            value = entries[name]
        except Exception:
            return entry(record, stored(record))
        if type(value) is first:
            return value
        return entry(record, value if type(entries) is dict else stored(record))

    return getter if values else entry_getter


_MEMBERS: Any = object()  # read member by member


def members_field(stack: Any, name: str) -> Any:
    """The field ``name`` of a record over a lazy stack whose members do not all have it
    (set in some, ``None`` in others): each member's value, ``None`` where it is not set,
    in the order of the members (a list of lists through a lazy stack of lazy stacks), as
    the peer reads it. Members that all have it but whose parts do not stack (shapes
    that differ) raise the stack's ``HeterogeneousEntryError``, as before.

    Raises:
        HeterogeneousEntryError: every member has the field, and the parts do not stack.
    """
    parts: list[Any] = []
    partly = False
    for member in stack.tensordicts:
        try:
            value = member._tensors.get(name)
        except HeterogeneousEntryError:
            value = None
        if value is None and member._is_lazy:
            value = members_field(member, name)
        partly = partly or value is None or type(value) is list
        kind = value.__class__
        if kind is NonTensorData:
            value = value.data
        elif kind in _OTHER_NODES:
            value = value._read()
        parts.append(value)
    if all(part is None for part in parts):
        return None  # no member holds it: not set
    if not partly:  # every member has it: the stacked value, or why it does not stack
        return stack._entry(name)
    return parts


def tensor_field_setter(
    name: str,
    slow: Callable[[Any, Any], None],
    check: Callable[[Mapping[str, Any], Any, torch.Size], bool] | None = None,
) -> Callable[[Any, Any], None]:
    """The setter of the tensor field ``name``: a plain tensor into an unlocked record
    over a TensorDict not saved in a folder is checked and stored inline; anything else
    (a lazy stack's record included) goes to ``slow``.
    With ``check(entries, tensor, batch_size)`` (the field's spec against the record's
    other fields, batch dims included), a tensor it refuses goes to ``slow`` too, which
    says why."""

    # ``type(x)``, not ``x.__class__``: no look-up in CPython 3.11's type-attribute
    # cache, where ``Tensor.__class__`` may share a slot with a record class's attribute
    # hooks and each write then misses twice
    def setter(record: Any, value: Any) -> None:
        td = record._tensordict
        if (
            type(value) is not _Tensor
            or type(td) is not TensorDict  # a lazy stack: locked if a member is
            or td._locked
            or td._saved_at is not None
        ):
            slow(record, value)
            return
        batch = td._batch_size
        device = td._device
        if device is not None and value.device != device:
            value = value.to(device)
        if check is not None:
            if not check(td._tensors, value, batch):
                slow(record, value)  # says why
                return
        elif batch and value.shape[: len(batch)] != batch:
            raise BatchMismatchError(name, value.shape, batch)
        td._tensors[name] = value

    return setter


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

ENGINE.data_ptrs = data_ptrs
