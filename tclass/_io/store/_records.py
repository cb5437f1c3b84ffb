"""Records over persistent stores (``Cls.from_h5``, ``record.to_h5``, ``Cls.from_zarr``,
``record.to_zarr``): the store checked against the class, and the groups that hold
nested records.

``Cls.from_h5(path)`` (or ``from_zarr``) checks the file as ``Cls.load_memmap`` checks a
folder, with the same comparison (``_schema.compare``): each array's dtype and shape
against its field's ``Spec`` or jaxtyping annotation, the named dims the fields share, the
kind of entry each field takes, and the required fields a file written from another class lacks
(tclass writes the class's schema into each record group's ``_tclass`` attribute, as it
does into a saved record's ``meta.json``). Every difference is reported at once, in a
``SchemaMismatchError``; each Python value is then checked against its field's
annotation, and each dataset of a field whose values are bounded (``Spec(ge=...)``) is
read once and checked (a ``FieldSpecError`` names the dataset and the first value that
breaks a constraint). ``load_memmap``'s options do not apply (``strict=False`` leaves fields out,
``widen=True`` converts them in memory; a record over a file reads the file as it is).

A file names no classes: a group under a field annotated with a tensorclass holds a
record of that class (for a union of tensorclasses, the one its schema names). The
group's ``PersistentTensorDict`` records it (``_records``), and reading the field gives
a record of that class over the group. Records are duck-typed (``__tclass_info__``): the
facade sits above this layer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core._records import is_record, storage_of
from tclass._io._annotations import field_classes
from tclass._io._schema import (
    STORE_FILE,
    LoadPlan,
    check_saved_python_values,
    check_saved_values,
    compare,
    constrained_fields,
    mismatch_error,
    read_schema,
)
from tclass._io.store._protocol import is_group
from tclass._io.store._walk import saved_meta
from tclass.errors import MetadataError, SchemaDifference

if TYPE_CHECKING:
    from tclass._io.store._persistent import PersistentTensorDict

__all__ = ["bind_records", "entries_of", "rebind", "records_of", "source_items"]

_VALUE_KINDS = ("NonTensorData", "NonTensorStack")


def bind_records(root: PersistentTensorDict, cls: type, *, check: bool) -> None:
    """Tells each group of ``root`` that holds a field of a record of ``cls`` (nested
    ones included) which class it is, after checking each against its class when
    ``check``; a group reached by two links is bound once.

    Raises:
        SchemaMismatchError: every difference found (with ``check``).
        MetadataError: a group under a union of tensorclasses whose schema names none
            of them.
    """
    differences: list[SchemaDifference] = []
    pending: list[tuple[PersistentTensorDict, type, str]] = [(root, cls, "")]
    bound = {id(root)}
    while pending:
        node, record_cls, path = pending.pop()
        node._bound = record_cls
        entries = entries_of(node)
        if check:
            plan = _compared(node, record_cls, entries, path)
            differences += plan.differences
            if not plan.differences:
                _check_constraints(node, record_cls, entries)
        for key, entry in entries.items():
            classes = field_classes(record_cls, key) if entry.get("type") == "TensorDict" else ()
            found = node._node(key) if classes else None
            if found is None or not is_group(found):
                continue
            child = node._child_of(key, found)
            chosen = _class_of(child, classes, f"{record_cls.__name__}.{key}")
            node._records[key] = chosen
            if id(child) not in bound:
                bound.add(id(child))
                pending.append((child, chosen, f"{path}/{key}" if path else key))
    if differences:
        raise mismatch_error(root.filename, differences)


def records_of(node: PersistentTensorDict) -> dict[str, Any]:
    """The classes of the records ``node``'s groups hold, nested (``{key: (class,
    {...})}``): what a pickled collection over the file takes along."""
    return {
        key: (cls, records_of(node._nested[key]) if key in node._nested else {})
        for key, cls in node._records.items()
    }


def rebind(node: PersistentTensorDict, records: dict[str, Any]) -> None:
    """Binds the classes ``records_of`` gave to the groups of a reopened file."""
    for key, (cls, nested) in records.items():
        if node._has_entry(key) and is_group(found := node._node(key)):
            node._records[key] = cls
            child = node._child_of(key, found)
            child._bound = cls
            rebind(child, nested)


def entries_of(node: PersistentTensorDict) -> dict[str, dict[str, Any]]:
    """Each entry of a group as a ``meta.json`` key entry describes it (what
    ``_schema.compare`` reads): a dataset's dtype and shape, a group's or a Python
    value's node type. An ``h5py.Empty`` dataset (None) is left out, as an absent field."""
    entries: dict[str, dict[str, Any]] = {}
    for key in node._key_names():
        found = node._node(key)
        if is_group(found):
            entries[key] = {"type": "TensorDict"}
        elif found.shape is None:
            continue
        elif found.dtype is not None:
            entries[key] = {"dtype": str(found.dtype), "shape": list(found.shape)}
        else:
            per_row = found.stack_shape(node._where(key)) is not None
            entries[key] = {"type": _VALUE_KINDS[per_row]}
    return entries


def _compared(
    node: PersistentTensorDict, cls: type, entries: dict[str, dict[str, Any]], path: str
) -> LoadPlan:
    saved = read_schema(saved_meta(node), node._where())
    return compare(
        cls, entries, set(), saved, len(node.batch_size), path, strict=True, widen=False,
        source=STORE_FILE,
    )  # fmt: skip


def _check_constraints(
    node: PersistentTensorDict, cls: type, entries: dict[str, dict[str, Any]]
) -> None:
    """Reads each constrained dataset once and checks its values (see ``_schema``)."""
    constrained = constrained_fields(cls)
    leaves = []
    for key, entry in entries.items():
        if key in constrained and "dtype" in entry:
            found = node._node(key)
            if is_group(found):
                continue
            value = node._read_dataset(found)
            if isinstance(value, torch.Tensor):
                leaves.append((key, value, node._where(key)))
    check_saved_values(cls, leaves)
    for key, rule in cast(Any, cls).__tclass_info__.rules.items():
        if rule.values is not None and key in entries and not is_group(found := node._node(key)):
            check_saved_python_values(cls, {key: node._read_dataset(found)}, node._where(key))


def _class_of(child: PersistentTensorDict, classes: tuple[type, ...], field: str) -> type:
    """The tensorclass a group holds: the field's, or the one of a union its schema names."""
    if len(classes) == 1:
        return classes[0]
    saved = read_schema(saved_meta(child), child._where())
    if saved is not None:
        for cls in classes:
            if saved.class_id in (f"{cls.__module__}:{cls.__qualname__}", cls.__qualname__):
                return cls
        named = saved.class_id.rpartition(":")[2]
        for cls in classes:
            if cls.__qualname__ == named:
                return cls
    accepted = " | ".join(cls.__name__ for cls in classes)
    msg = (
        f"{child._where()}: {field} is annotated {accepted}, and the group does not say which "
        "it holds (tclass writes the class into its _tclass attribute); open the file with "
        "tclass.from_h5 (or tclass.from_zarr) to read it as a PersistentTensorDict"
    )
    raise MetadataError(msg)


def source_items(source: Any) -> Iterable[tuple[Any, Any]]:
    """The (key, value) pairs of what ``update`` writes (a record's, a collection's, a
    mapping's)."""
    if is_record(source):
        source = storage_of(source)
    if isinstance(source, TensorCollection):
        return source._items()
    return cast(Iterable[tuple[Any, Any]], source.items())
