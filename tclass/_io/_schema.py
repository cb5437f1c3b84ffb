"""A record class's schema in its saved folder, and the folder checked against a class.

**Written.** Saving a record writes its class's schema into the ``_tclass`` marker of the
record's ``_tensordict/meta.json`` (a dict with neither ``type`` nor ``dtype``, which the
peer skips; the record's own ``meta.json`` cannot hold it: the peer passes every key
there to the class), and the class's JSON Schema document into ``_tensordict/schema.json``
beside it::

    "_tclass": {"schema": {
        "class": "app.data:Transition",
        "json_schema_file": "schema.json",
        "fields": {
            "obs": {"kind": "tensor", "annotation": "Tensor",
                    "spec": {"dims": "3 h w", "whole": false, "dtypes": ["torch.uint8"]}},
            "info": {"kind": "record", "annotation": "Info | None", "class": "app.data:Info",
                     "optional": true, "default": true},
            "env": {"kind": "value", "annotation": "str", "default": true}},
        "dims": {"h": 84, "w": 84}}}

The document (``Cls.json_schema()``, see ``_tensorclass/_json_schema``) is for readers
without the class (``info``, validators in other languages); no load reads it, so a
load parses only the part of the schema it compares. ``json_schema_file`` names it (the
only name allowed is ``schema.json``); earlier versions wrote the document inline, as
``"json_schema": {...}``, which is still read, and a folder saved before either has no
document (and loads as before); older tclass versions ignore both keys. HDF5 and zarr
files keep the document inline (an attribute is their one place for it).
``kind`` is ``tensor``, ``record`` (a tensorclass), ``collection`` (a TensorDict),
``value`` (a Python value) or ``any``; ``"held": "tensor"`` marks a value field that held
a tensor when saved (an op's result: ``record != other`` of a ``str`` field), which a load
with the same class takes back; ``spec`` is present for spec'd fields; ``dims``
holds the named dims the saved tensors bind.

**Read.** Loading a record with its class compares the folder (the keys, dtypes and
shapes of ``_tensordict/meta.json``) with the class, and the saved schema says which
fields the saving class had. The evolution rules:

* a field of the class the folder lacks loads as its default, or ``None`` when it is
  optional, or when the saved schema lists it (it was ``None`` when saved), or when the
  folder has no schema (written by the peer or an older tclass, which store ``None`` by
  leaving the field out); otherwise it is a difference that ``strict=False`` accepts
  (the field loads as ``None``);
* a field in the folder the class lacks is a difference that ``strict=False`` accepts
  (it is not loaded);
* a dtype the field's spec does not allow is a difference, accepted by ``widen=True``
  when the saved dtype converts to an allowed one without loss (the field is read into
  memory, converted); a shape its spec does not allow, or a kind of value the field does
  not take, is a difference no option accepts.

Records are duck-typed (``__tclass_info__``): the facade sits above this layer.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core._dtypes import DTYPES
from tclass._core._record_spec import Observed, RecordSpecs, value_problem
from tclass._core._records import is_record, storage_of
from tclass._core._spec import TensorSpec
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._td import TensorDict
from tclass._io.memmap._format import SCHEMA, TENSORCLASS_DIR
from tclass.errors import (
    FieldSpecError,
    MetadataError,
    SchemaDifference,
    SchemaMismatchError,
    TclassError,
    UnsupportedError,
)

__all__ = [
    "AnyFields",
    "FOLDER",
    "STORE_FILE",
    "FieldSchema",
    "LoadPlan",
    "SavedFields",
    "SavedSchema",
    "SchemaCheck",
    "SchemaDiffers",
    "Source",
    "check_saved_python_values",
    "check_saved_values",
    "check_tree_values_to_save",
    "check_loaded_values",
    "check_values_to_save",
    "check_written_values",
    "class_schema",
    "dense_parts",
    "constrained_fields",
    "compare",
    "document_bytes",
    "mismatch_error",
    "read_schema",
    "record_schema",
    "widened",
]

KINDS = ("tensor", "record", "collection", "value", "any")


@dataclass(frozen=True)
class FieldSchema:
    """What a class declares of one field (built by the facade from its annotation)."""

    name: str
    kind: str  # one of KINDS
    annotation: str  # as written, for messages
    spec: TensorSpec | None = None
    record: str | None = None  # "module:QualName" of a record field's class
    optional: bool = False  # None is allowed
    default: bool = False  # a default or default_factory
    accepts: frozenset[str] = frozenset()  # entry kinds: "tensor", "value", "collection"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "annotation": self.annotation}
        if self.spec is not None:
            out["spec"] = self.spec.to_json()
        if self.record is not None:
            out["class"] = self.record
        if self.optional:
            out["optional"] = True
        if self.default:
            out["default"] = True
        return out


class SavedSchema(NamedTuple):
    """The schema a folder records (what the saving class declared; read at each load of
    a record: a tuple builds faster than a frozen dataclass)."""

    class_id: str
    fields: dict[str, dict[str, Any]]
    dims: dict[str, Any]
    json_schema: dict[str, Any] | None = None  # the class's document, when inline
    json_schema_file: str | None = None  # the file beside holding it (SCHEMA), if named


def class_schema(cls: type) -> tuple[tuple[FieldSchema, ...], RecordSpecs | None]:
    """The field schemas and the specs of a record class."""
    info = cls.__tclass_info__  # type: ignore[attr-defined]
    return info.schema, info.specs


def record_schema(record: Any, *, document_file: str | None = None) -> dict[str, Any]:
    """The ``schema`` entry of the marker of ``record``'s fields: its class's field
    schemas and the sizes of the named dims its tensors bind. The class's JSON Schema
    document is named, ``document_file`` (the writer puts :func:`document_bytes` there),
    or else inline."""
    cls = type(record)
    fields, specs = class_schema(cls)
    out: dict[str, Any] = {
        "class": f"{cls.__module__}:{cls.__qualname__}",
        "fields": {f.name: f.to_json() for f in fields},
    }
    # The class's JSON Schema document (Cls.json_schema()), for readers without it.
    if document_file is not None:
        out["json_schema_file"] = document_file
    else:
        out["json_schema"] = cast(Any, cls).__tclass_info__.json_schema
    storage = record._tensordict
    # A tensor in a value field (an op's result: a str field made a bool tensor; an array
    # given to a list field), in the record or in a member of its lazy stack: the load
    # takes it back.
    for part in dense_parts(storage):
        entries = part._entries()
        for f in fields:
            if f.kind == "value" and isinstance(entries.get(f.name), torch.Tensor):
                out["fields"][f.name]["held"] = "tensor"
    if specs is not None and isinstance(storage, TensorDict):
        observed = {
            key: (None, tuple(value.shape))
            for key, value in storage._items()
            if isinstance(value, torch.Tensor)
        }
        bound = specs.bind(observed, len(storage.batch_size))
        if bound:
            out["dims"] = {k: list(v) if isinstance(v, tuple) else v for k, v in bound.items()}
    return out


def read_schema(marker: Mapping[str, Any], where: str) -> SavedSchema | None:
    """The schema in a node's marker, if any.

    Raises:
        MetadataError: if it is there but malformed.
    """
    raw = marker.get("schema")
    if raw is None:
        return None
    fields = raw.get("fields") if isinstance(raw, dict) else None
    class_id = raw.get("class") if isinstance(raw, dict) else None
    dims = raw.get("dims", {}) if isinstance(raw, dict) else None
    if (
        not isinstance(fields, dict)
        or not _all_dicts(fields.values())
        or not isinstance(class_id, str)
        or not isinstance(dims, dict)
    ):
        msg = (
            f"{where!r}: the schema in its _tclass entry is malformed (want an object with "
            f"'class', 'fields' and optional 'dims'); the folder is damaged"
        )
        raise MetadataError(msg)
    document = raw.get("json_schema")
    if document is not None and not isinstance(document, dict):
        msg = f"{where!r}: the json_schema of its _tclass entry is not an object (damaged)"
        raise MetadataError(msg)
    document_file = raw.get("json_schema_file")
    if document_file is not None and document_file != SCHEMA:
        msg = (
            f"{where!r}: the json_schema_file of its _tclass entry is {document_file!r:.80}; "
            f"the document is always in {SCHEMA!r} beside it: the folder is damaged or crafted"
        )
        raise MetadataError(msg)
    return SavedSchema(class_id, fields, dims, document, document_file)


def _all_dicts(values: Iterable[object]) -> bool:
    for value in values:  # a loop: cheaper than all() over a generator, per load
        if not isinstance(value, dict):
            return False
    return True


# Each record class's JSON Schema document as a save writes it (classes do not change).
_DOCUMENTS: weakref.WeakKeyDictionary[type, bytes] = weakref.WeakKeyDictionary()


def document_bytes(cls: type) -> bytes:
    """The JSON Schema document of the record class ``cls`` as the file a save writes
    (indented for people reading it; encoded once per class)."""
    data = _DOCUMENTS.get(cls)
    if data is None:
        document = cast(Any, cls).__tclass_info__.json_schema
        data = (json.dumps(document, indent=2) + "\n").encode()
        _DOCUMENTS[cls] = data
    return data


# --- the values of a loaded record ------------------------------------------------------


def constrained_fields(cls: type) -> frozenset[str]:
    """The fields of the record class ``cls`` whose values its annotations bound."""
    specs = class_schema(cls)[1]
    return frozenset(specs.constrained) if specs is not None else frozenset()


def check_values_to_save(record: Any, where: str, values: bool = True) -> None:
    """Checks ``record``'s spec'd fields before it is saved with its data (a folder, an
    archive, an HDF5 file or zarr store): their dtypes and feature dims, and the values
    of constrained ones. Its class checks them all when it loads them, so data that got
    past the checks (written into a field's tensor itself, or a record derived without
    them: ``to(dtype)``, ``apply``) is refused here, before any file is written, rather
    than saved where no load reads it back. ``where``: the record's key, for messages;
    ``values``: whether the values are saved too (not by ``memmap_like``).

    Raises:
        FieldSpecError: naming the field, the problem and the fix.
    """
    specs = class_schema(type(record))[1]
    if specs is None:
        return
    try:
        for part in dense_parts(storage_of(record)):
            specs.check(part._entries(), part.batch_dims, values)
    except FieldSpecError as error:
        msg = (
            f"cannot save {type(record).__name__} ({where}): {error}; its class would refuse "
            "it on load. The data got past the checks (written into a field's tensor "
            "itself, or a record derived without them: to(dtype), apply): write it "
            "through the record, convert it to what the annotation wants, or save "
            "record.to_tensordict()"
        )
        raise FieldSpecError(msg, error.problems) from None


def check_loaded_values(cls: type, loaded: Any, where: str) -> None:
    """Checks a collection loaded into a record of class ``cls`` (``load_memmap_`` from a
    folder a TensorDict wrote) against its class's specs: dtypes, feature dims and the
    values of constrained fields, as the class checks a folder of its own on load.

    Raises:
        FieldSpecError: naming the field, the problem and the folder.
    """
    for part in dense_parts(storage_of(loaded)):
        check_saved_python_values(cls, part._entries(), where)
    specs = class_schema(cls)[1]
    if specs is None:
        return
    try:
        for part in dense_parts(storage_of(loaded)):
            specs.check(part._entries(), part.batch_dims, True)
    except FieldSpecError as error:
        msg = f"cannot load {where!r} into a {cls.__name__}: {error}. Nothing was loaded"
        raise FieldSpecError(msg, error.problems) from None


def check_written_values(cls: type, value: Any, where: str) -> None:
    """Checks what is written into a record of class ``cls`` held by a file (its rows or
    its fields: a record, a collection, a mapping of fields, or a number for every
    field) against its class's constraints, as the record's own writes are checked.

    Raises:
        FieldSpecError: naming the field and the first value that breaks them.
    """
    specs = class_schema(cls)[1]
    if specs is None or not specs.constrained:
        return
    source = storage_of(value)
    if isinstance(source, (bool, int, float)):
        entries: dict[str, Any] = {name: torch.tensor(source) for name in specs.constrained}
    elif isinstance(source, TensorDict):
        entries = dict(source._entries())
    elif isinstance(source, Mapping):
        entries = dict(source)
    else:
        return
    for name, entry in entries.items():
        if isinstance(entry, (bool, int, float, list)) and name in specs.constrained:
            entries[name] = torch.tensor(entry)
    try:
        specs.check_values(entries, [name for name in specs.constrained if name in entries])
    except FieldSpecError as error:
        msg = f"writing into {where}: {error}. Nothing was written"
        raise FieldSpecError(msg, error.problems) from None


def dense_parts(storage: Any) -> list[TensorDict]:
    """The TensorDicts a record's storage holds its fields in: itself, or the members of
    a lazy stack (nested ones too), each of which its class checks on load."""
    if isinstance(storage, LazyStackedTensorDict):
        return [part for member in storage.tensordicts for part in dense_parts(member)]
    return [storage] if isinstance(storage, TensorDict) else []


def check_tree_values_to_save(node: Any, where: tuple[str, ...] = ()) -> None:
    """:func:`check_values_to_save` for every record in ``node`` (records, TensorDicts,
    lazy stacks, nested): for a writer that checks the whole tree before its first file."""
    if is_record(node):
        check_values_to_save(node, f"key {where!r}" if where else "the root")
        node = storage_of(node)
    if isinstance(node, LazyStackedTensorDict):
        for member in node.tensordicts:
            check_tree_values_to_save(member, where)
    elif isinstance(node, TensorDict):
        for key, value in node._entries().items():
            if isinstance(value, TensorCollection):
                check_tree_values_to_save(value, (*where, key))


def check_saved_python_values(cls: type, entries: Mapping[str, Any], where: str) -> None:
    """Checks the Python values of a loaded record of class ``cls`` (``entries``: its
    fields as loaded, nodes of values) against the constraints of their annotations
    (``Annotated[int, Ge(0)]``, ``Literal[...]``), each field's rule checking them as
    its writes are checked; ``where``: the folder or file, for messages.

    Raises:
        FieldSpecError: naming the file, the field, the constraint and the value.
    """
    rules = cast(Any, cls).__tclass_info__.rules
    for name, rule in rules.items():
        if rule.values is None or entries.get(name) is None:
            continue
        try:
            rule.check_values(entries[name])
        except FieldSpecError as error:
            msg = (
                f"{where}: {error.problems[0].message}. The saved value breaks the constraints of "
                f"{cls.__name__}: it was changed after saving, or written by another "
                "program or class; fix the value in the file (nothing was loaded)"
            )
            raise FieldSpecError(msg, error.problems) from None


def check_saved_values(cls: type, leaves: list[tuple[str, torch.Tensor, str]]) -> None:
    """Checks the values of the constrained fields of a loaded record, ``leaves`` being
    (field, tensor, the file or dataset holding it, as messages name it); one pass over
    each.

    Raises:
        FieldSpecError: naming, for each field, its file and the first value that
            breaks a constraint (with its index); nothing is built.
    """
    specs = class_schema(cls)[1]
    if specs is None:
        return
    problems = []
    for name, tensor, place in leaves:
        constraints = specs.constrained.get(name)
        found = None if constraints is None else constraints.first_violation(tensor)
        if found is not None:
            where = f"{place}: {cls.__name__}.{name}"
            problems.append(value_problem(where, name, specs.specs[name], found))
    if problems:
        listed = "; ".join(problem.message for problem in problems)
        msg = (
            f"{listed}. The saved values break the constraints of {cls.__name__}: they were "
            "changed after saving, or written by another program or class; fix the values "
            "in the file (nothing was loaded)"
        )
        raise FieldSpecError(msg, problems)


# --- comparing a folder with a class -----------------------------------------------------


@dataclass
class LoadPlan:
    """What loading a record's folder with its class does about their differences."""

    differences: list[SchemaDifference] = field(default_factory=list)
    drop: set[str] = field(default_factory=set)  # extra fields not loaded (strict=False)
    widen: dict[str, torch.dtype] = field(default_factory=dict)  # converted (widen=True)

    @property
    def skipped(self) -> set[str]:
        """The entries not to load: dropped, or differing (the record is not built)."""
        if not self.differences:  # the usual case
            return self.drop
        return self.drop | {difference.field for difference in self.differences}

    def widen_entries(self, entries: dict[str, Any], where: str) -> None:
        """Converts the loaded leaves ``widen=True`` accepts (read into memory; the files
        are not changed)."""
        for key, dtype in self.widen.items():
            if key not in entries:
                continue
            try:
                entries[key] = entries[key].to(dtype)
            except RuntimeError as error:  # torch's allocation failure
                msg = (
                    f"{where!r}: widen=True converts {key!r} to {dtype} in memory, which "
                    f"failed ({str(error).splitlines()[0]}); convert the folder once instead "
                    "(load it without the class, convert the field, save it)"
                )
                raise UnsupportedError(msg) from None


class AnyFields(frozenset[str]):
    """The value fields of a record whose ``other.pickle`` is not read yet: any name may
    be one (``in`` is always true), but those known (kept in the record's own meta.json)
    are the set's members, which a comparison with the class still lists (an undeclared
    one is extra: it must not vanish because a pickle lies beside it)."""

    def __contains__(self, name: object) -> bool:
        return True


@dataclass(frozen=True)
class Source:
    """How the differences found in a source name it: a saved folder (the load options
    ``strict`` and ``widen`` apply) or a persistent store, HDF5 or zarr (no option:
    every difference is an error)."""

    place: str = "the folder"
    leaf: str = "MemoryMappedTensor"
    options: bool = True


FOLDER = Source()
STORE_FILE = Source("the file", "dataset", options=False)


def compare(
    cls: type,
    entries: Mapping[str, Mapping[str, Any]],
    values: AbstractSet[str],
    saved: SavedSchema | None,
    batch_ndim: int,
    path: str,
    *,
    strict: bool,
    widen: bool,
    source: Source = FOLDER,
) -> LoadPlan:
    """Compares a record's folder with ``cls``: ``entries`` are the key entries of its
    ``_tensordict/meta.json`` (a leaf's ``dtype`` and ``shape``, a node's ``type``),
    ``values`` the Python values kept elsewhere (older writers), ``saved`` its schema.
    ``source`` says how messages name where the entries come from."""
    fields, specs = class_schema(cls)
    if specs is None and not values and _only_plain_tensors(cls, fields, entries):
        return LoadPlan()  # the usual record of tensors: nothing to compare
    declared = {f.name: f for f in fields}
    plan = _Comparison(cls.__name__, path, LoadPlan(), source)
    extras = (entries.keys() | values) - declared.keys()
    for name in sorted(extras, key=str) if extras else ():
        if strict:
            plan.extra(name, _entry_kind(entries.get(name)))
        plan.plan.drop.add(name)
    for field_schema in fields:
        name = field_schema.name
        present = name in entries or name in values
        was_field = saved is None or name in saved.fields  # None when saved
        if not (present or field_schema.default or field_schema.optional or was_field):
            if strict:
                plan.missing(field_schema, saved)
    observed: dict[str, Observed] = {}
    for name, entry in entries.items():
        f = declared.get(name)
        if f is None:
            continue
        kind = "tensor" if "type" not in entry else _entry_kind(entry)  # a leaf: the usual
        if (
            f.accepts
            and kind not in f.accepts
            and not _kept_as_given(f, kind)
            and not _op_result(cls, f, kind, saved)
        ):
            got = _entry_text(entry, source.leaf)
            why = f"is annotated {f.annotation}; got a {got} in {source.place}"
            plan.differ(name, "kind", kind, f.annotation, why)
        elif kind == "tensor" and f.spec is not None:
            observed[name] = (None, list(entry.get("shape", ())))
            plan.dtype(f, DTYPES.get(str(entry.get("dtype"))), widen)
    if specs is not None:
        for problem in specs.problems(observed, batch_ndim):
            why = problem.message.removeprefix(f"{cls.__name__}.{problem.field} ")
            plan.differ(problem.field, "shape", problem.got, problem.expected, why)
    return plan.plan


# Per record class, the names of its fields when each takes a tensor as it is (no spec, a
# tensor among the kinds it accepts), else None; with the schema they were read from.
_PLAIN: weakref.WeakKeyDictionary[type, tuple[tuple[FieldSchema, ...], frozenset[str] | None]]
_PLAIN = weakref.WeakKeyDictionary()


def _only_plain_tensors(
    cls: type, fields: tuple[FieldSchema, ...], entries: Mapping[str, Mapping[str, Any]]
) -> bool:
    """Whether ``entries`` are tensor leaves (no sub-folder), one per field of ``cls``,
    each field taking a tensor as it is: then :func:`compare` finds no difference (none
    extra, none missing, each of a kind its field accepts, no spec to check)."""
    cached = _PLAIN.get(cls)
    if cached is None or cached[0] is not fields:
        plain = all(f.spec is None and (not f.accepts or "tensor" in f.accepts) for f in fields)
        cached = _PLAIN[cls] = (fields, frozenset(f.name for f in fields) if plain else None)
    names = cached[1]
    if names is None or len(entries) != len(names) or not names.issuperset(entries):
        return False
    for entry in entries.values():  # a loop: cheaper than all() over a generator
        if "type" in entry:
            return False
    return True


def _kept_as_given(f: FieldSchema, kind: str) -> bool:
    """Whether a collection is in a ``Tensor`` field without a spec: the record keeps a
    TensorDict or record set there as it is (as the peer), so its folder loads back."""
    return kind == "collection" and "tensor" in f.accepts and f.spec is None


def _op_result(cls: type, f: FieldSchema, kind: str, saved: SavedSchema | None) -> bool:
    """Whether a tensor in a value field is what a record of ``cls`` itself held when
    saved: an op's result (``record != other`` compares a ``str`` field into a bool
    tensor), which the record keeps in memory and the peer loads back. Only from a
    folder saved from this class with the field declared as now, whose schema says the
    field held a tensor (``"held": "tensor"``, written by :func:`record_schema`): a
    field whose annotation changed since, or a tensor put in the folder by hand, is
    still a difference."""
    if kind != "tensor" or f.kind != "value" or saved is None:
        return False
    if saved.class_id != f"{cls.__module__}:{cls.__qualname__}":
        return False
    was = saved.fields.get(f.name)
    if was is None or was.get("held") != "tensor":
        return False
    return was.get("kind") == f.kind and was.get("annotation") == f.annotation


@dataclass
class _Comparison:
    """The differences of one record's folder, as they are found."""

    owner: str
    path: str
    plan: LoadPlan
    source: Source = FOLDER

    def differ(
        self,
        name: str,
        kind: str,
        got: object,
        want: object,
        why: str,
        option: str | None = None,
        effect: str = "",
    ) -> None:
        if not self.source.options:
            option = None  # not offered where it does not apply
        fix = f" (load with {option} to {effect})" if option else ""
        message = f"{self.owner}.{name} {why}{fix}"
        self.plan.differences.append(
            SchemaDifference(self.path, name, kind, got, want, option, message)
        )

    def extra(self, name: str, kind: str) -> None:
        why = f"is in {self.source.place} (a {kind}), but {self.owner} does not declare it"
        self.differ(name, "extra", kind, None, why, "strict=False", "leave it out")

    def missing(self, f: FieldSchema, saved: SavedSchema | None) -> None:
        origin = f"saved from {saved.class_id}" if saved is not None else "saved"
        why = (
            f"is declared ({f.annotation}) with no default, and {self.source.place} ({origin}, "
            "which had no such field) does not hold it; give it a default or make it "
            "optional (`| None`)"
        )
        self.differ(f.name, "missing", None, f.annotation, why, "strict=False", "load it as None")

    def dtype(self, f: FieldSchema, dtype: torch.dtype | None, widen: bool) -> None:
        spec = f.spec
        if dtype is None or spec is None or spec.dtypes is None or dtype in spec.dtypes:
            return
        target = widened(dtype, spec.dtypes)
        if target is not None and widen:
            self.plan.widen[f.name] = target
            return
        got = str(dtype).replace("torch.", "")
        wanted = " or ".join(sorted(str(d).replace("torch.", "") for d in spec.dtypes))
        why = f"holds {got} in {self.source.place}, but its annotation {spec.text} wants {wanted}"
        if target is None:
            why += f"; {got} does not convert to it without loss: convert the data"
            self.differ(f.name, "dtype", got, wanted, why)
        else:
            self.differ(f.name, "dtype", got, wanted, why, "widen=True", "convert it")


class SchemaDiffers(TclassError):
    """A record whose folder differs from its class (or holds a record that does): not
    built. Its differences are in ``SchemaCheck.differences``; the load goes on with the
    record's siblings to find theirs, and ``load_memmap`` raises them all at once."""


class SavedFields(NamedTuple):
    """The record fields saved in one folder (a ``_tensordict/`` or a member of a lazy
    stack of them), as :class:`SchemaCheck` compares them with ``cls``."""

    cls: type
    folder: str
    entries: Mapping[str, Mapping[str, Any]]  # the fields' meta.json entries
    marker: Mapping[str, Any]  # the folder's ``_tclass`` block (its saved schema)
    values: AbstractSet[str]  # the fields saved as Python values
    batch_ndim: int


@dataclass
class SchemaCheck:
    """The schema options of one ``load_memmap`` call, and the differences found."""

    root: str
    strict: bool = True
    widen: bool = False
    differences: list[SchemaDifference] = field(default_factory=list)
    # The marker of a record's lazy stack (which holds its schema), by the path of each
    # member folder: members record none of their own.
    stack_markers: dict[str, Mapping[str, Any]] = field(default_factory=dict)

    def marker(self, folder: str, own: Mapping[str, Any]) -> Mapping[str, Any]:
        """The marker that holds the schema of the record fields in ``folder``: its own
        (``own``), or that of the lazy stack it is a member of."""
        return own if "schema" in own else self.stack_markers.get(folder, own)

    def compare(self, saved: SavedFields) -> LoadPlan:
        """The plan for the record fields in ``folder`` (a ``_tensordict/`` or a member
        of a lazy stack of them); its differences are added to ``differences``."""
        plan = self._plan(saved)
        if not plan.differences:  # the usual case: no path to name
            return plan
        path = self._record_path(saved.folder)
        plan.differences = [d._replace(path=path) for d in plan.differences]
        seen = {(d.path, d.field, d.kind) for d in self.differences}
        self.differences += [d for d in plan.differences if (d.path, d.field, d.kind) not in seen]
        return plan

    def finds_clean(self, saved: SavedFields) -> bool:
        """Whether :meth:`compare` would find the record fields in ``folder`` the class's
        as they are (no difference, nothing dropped or widened), recording nothing; a
        saved schema that does not read raises as there."""
        cls, folder, entries, marker, values, _ = saved
        fields, specs = class_schema(cls)
        if specs is None and not values and _only_plain_tensors(cls, fields, entries):
            if marker:
                read_schema(marker, f"{folder}/meta.json")  # (one that does not read raises)
            return True  # compare's own first case, without its empty plan
        plan = self._plan(saved)
        return not (plan.differences or plan.drop or plan.widen)

    def _plan(self, saved: SavedFields) -> LoadPlan:
        """:func:`compare` of the fields in ``folder`` with ``cls``, under these options."""
        cls, folder, entries, marker, values, batch_ndim = saved
        schema = read_schema(marker, f"{folder}/meta.json") if marker else None
        return compare(
            cls, entries, values, schema, batch_ndim, "", strict=self.strict, widen=self.widen
        )

    def check_casts(
        self, cls: type, casts: Mapping[str, tuple[Any, Any, bool]], folder: str
    ) -> None:
        """Records a difference for each field of the record in ``folder`` whose class
        would convert a saved Python value (``casts``: :func:`value_casts`), so that a
        load never changes a value silently: ``widen=True`` accepts a conversion that
        keeps the values equal (``3`` into a ``float`` field: ``3.0``), none accepts one
        that changes them (``1.5`` into an ``int`` field).

        Raises:
            SchemaDiffers: if a difference was recorded (the record is not built).
        """
        annotations = {f.name: f.annotation for f in class_schema(cls)[0]}
        comparison = _Comparison(cls.__name__, self._record_path(folder), LoadPlan())
        for name, (old, new, equal) in casts.items():
            if equal and self.widen:
                continue
            why = (
                f"holds {old!r:.60} ({type(old).__name__}) in the folder, but its annotation "
                f"{annotations.get(name, '?')} (autocast) makes it {new!r:.60} "
                f"({type(new).__name__})"
            )
            if equal:
                comparison.differ(name, "value", old, new, why, "widen=True", "convert it")
            else:
                why += "; that changes the value: convert the data or change the annotation"
                comparison.differ(name, "value", old, new, why)
        if comparison.plan.differences:
            self.differences += comparison.plan.differences
            raise SchemaDiffers(f"{folder!r} differs from {cls.__name__}")

    def _record_path(self, folder: str) -> str:
        """The record's folder relative to the root: the parent of its _tensordict/
        (lazy-stack members in _tensordict/0, 1... are one record's, reported once)."""
        parts = [] if folder == self.root else os.path.relpath(folder, self.root).split(os.sep)
        while parts and parts[-1].isdigit():
            parts.pop()
        if parts and parts[-1] == TENSORCLASS_DIR:
            parts.pop()
        return "/".join(parts)

    def error(self) -> SchemaMismatchError:
        return mismatch_error(self.root, self.differences)


def _entry_text(entry: Mapping[str, Any], leaf: str) -> str:
    """What an entry of a meta.json holds, for messages (``leaf``: what holds a tensor)."""
    kind = entry.get("type")
    if kind is not None:
        return str(kind)
    return f"{leaf} {entry.get('dtype')} {entry.get('shape')}"


# the node types of a Python value in a folder's meta.json (a MetaData too: ``x.set("label",
# MetaData(3))`` into a ``str`` field saves one, which loads back as the record held it)
_VALUE_TYPES = ("NonTensorData", "NonTensorStack", "MetaData")


def _entry_kind(entry: Mapping[str, Any] | None) -> str:
    if entry is None:
        return "value"
    kind = entry.get("type")
    if kind is None:
        return "tensor"
    return "value" if kind in _VALUE_TYPES else "collection"


def mismatch_error(root: str, differences: list[SchemaDifference]) -> SchemaMismatchError:
    """The error listing every difference found while loading ``root``."""
    lines = [f"  {d.path + ': ' if d.path else ''}{d.message}" for d in differences]
    options = sorted({d.option for d in differences if d.option is not None})
    summary = (
        f"{root!r} does not match the class loading it ({len(differences)} "
        f"difference{'s' if len(differences) != 1 else ''}):\n" + "\n".join(lines)
    )
    if options and all(d.option is not None for d in differences):
        summary += f"\nload_memmap(..., {', '.join(options)}) accepts all of them"
    return SchemaMismatchError(summary, differences)


# --- lossless dtype conversions ----------------------------------------------------------

# (kind, digits): kind "b" bool, "u" unsigned, "i" signed, "f" float, "c" complex; digits:
# value bits for integers, significand bits for floats (complex: per component), and the
# exponent bits of floats, which must not shrink either.
_DIGITS: dict[torch.dtype, tuple[str, int, int]] = {
    torch.bool: ("b", 1, 0),
    torch.uint8: ("u", 8, 0), torch.uint16: ("u", 16, 0), torch.uint32: ("u", 32, 0),
    torch.uint64: ("u", 64, 0),
    torch.int8: ("i", 7, 0), torch.int16: ("i", 15, 0), torch.int32: ("i", 31, 0),
    torch.int64: ("i", 63, 0),
    torch.float16: ("f", 11, 5), torch.bfloat16: ("f", 8, 8), torch.float32: ("f", 24, 8),
    torch.float64: ("f", 53, 11),
    torch.complex32: ("c", 11, 5), torch.complex64: ("c", 24, 8), torch.complex128: ("c", 53, 11),
}  # fmt: skip


def _widens(src: torch.dtype, dst: torch.dtype) -> bool:
    """Whether every value of ``src`` is exactly a value of ``dst`` (and they differ)."""
    if src == dst or src not in _DIGITS or dst not in _DIGITS:
        return False
    (sk, sd, se), (dk, dd, de) = _DIGITS[src], _DIGITS[dst]
    if sk == "b":
        return True
    if sk in "ui":
        if dk in "ui":
            return dd >= sd and (dk == "i" or sk == "u")
        return dd >= sd  # an integer fits a float's significand
    if sk == "f":
        return dk in "fc" and dd >= sd and de >= se
    return dk == "c" and dd >= sd and de >= se


def widened(src: torch.dtype, allowed: frozenset[torch.dtype]) -> torch.dtype | None:
    """The allowed dtype ``src`` converts to without loss (the smallest; floats before
    complex), or None."""
    candidates = [dtype for dtype in allowed if _widens(src, dtype)]
    if not candidates:
        return None
    return min(candidates, key=lambda d: (_DIGITS[d][0] == "c", d.itemsize, str(d)))
