"""Reading a saved folder back: validated, read-only, never following a link.

Every file is opened relative to its parent folder's descriptor with ``O_NOFOLLOW``, so
a symlink anywhere below the folder is refused instead of followed, and a folder swapped
by a concurrent save is read whole, old or new, never mixed. Each ``meta.json`` is
checked field by field; each leaf file must hold at least ``dtype x shape`` bytes (only
those are mapped: older writers padded files to a page); a leaf shape must start with its
node's batch size; a record's fields must fit its annotations. Small files (``meta.json``,
the value files) must be regular files of at most ``MAX_FILE_BYTES``, their JSON at most
``MAX_JSON_DEPTH`` deep; sizes must fit int64, and a stack of values must match its data,
before anything is allocated; a lazy stack's recorded member count must match its member
folders before any is read; the tree is at most ``MAX_TREE_DEPTH`` folders deep. A
failed check raises a ``TclassError`` naming the file.
Nothing is created, grown, truncated or written.

``validate_folder`` runs the same walk and the same checks without the user's classes
(records stand for their fields), mapping no file and unpickling nothing, and reports
what it meets to an ``Observer``: ``python -m tclass info`` is built on it (walking again
a folder swapped mid-walk, as a load does), so that it refuses exactly what
``load_memmap`` refuses.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NamedTuple, NoReturn

import numpy as np
import torch

from tclass._core import _names
from tclass._core._dtypes import DTYPES
from tclass._core._memmap_args import Mode
from tclass._core._names import Names
from tclass._core._nested import fill_flat, flatten_values
from tclass._core._records import storage_of
from tclass._core._registry import resolve_class
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import MetaData, NonTensorData, _NonTensorNode
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._ragged_values import ragged_from_lists
from tclass._engine._td import TensorDict
from tclass._io._annotations import (
    field_classes,
    fit_values,
    is_field,
    missing_fields,
    tensorclasses,
    value_casts,
)
from tclass._io._schema import (
    AnyFields,
    SavedFields,
    SchemaCheck,
    SchemaDiffers,
    check_saved_python_values,
    check_saved_values,
    constrained_fields,
    read_schema,
)
from tclass._io.memmap._folder import ArchiveFolder, Folder, open_root
from tclass._io.memmap._format import (
    MAX_TREE_DEPTH,
    META,
    NODE_FIELDS,
    TCLASS_FIELD,
    TENSORCLASS_DIR,
    file_name,
    is_marker,
    unescape_key,
)
from tclass._io.memmap._meta_file import (
    KNOWN_DEVICES,
    check_depth,
    check_nested_batch,
    checked_sizes,
    checked_stack_dims,
    decode_header,
    names_device,
    saved_marker,
)
from tclass._io.memmap._read_cache import NodePlan, cached_header, keep_header, node_plans
from tclass._io.memmap._read_leaf import (
    Observer,
    ReadOptions,
    faking,
    load_leaf,
    maps_directly,
    open_child,
)
from tclass._io.memmap._saved_folder import SavedFolder, relink
from tclass._io.memmap._values import check_pickle_allowed, json_types_value
from tclass.errors import (
    ArgumentValueError,
    DimNameError,
    MetadataError,
    MissingFileError,
    StackError,
    TclassError,
    UnsupportedError,
)

__all__ = [
    "Folder",
    "Observer",
    "load_tree",
    "node_entries",
    "RETRIES",
    "validate_folder",
]

_BUILTIN = {"TensorDict", "LazyStackedTensorDict", "NonTensorData", "NonTensorStack"}
# What each node kind is called in an Observer's reports (a record is "tensorclass").
_KIND_NAMES = {
    "TensorDict": "tensordict",
    "LazyStackedTensorDict": "lazy_stack",
    "NonTensorData": "value",
    "NonTensorStack": "values",
}
_RECORD_KEYS = ("_type", "_class", "_format_version")  # the rest of a record's meta.json are fields
RETRIES = 5  # loads restarted when a concurrent save swapped the folder mid-read
_MODES = (None, "r", "r+")
_CPU = torch.device("cpu")


class _Reported(TclassError):
    """A node not built because something inside it was reported to the observer
    already (validate_folder goes on without it, adding no second problem)."""


class _Want(NamedTuple):
    """What names the class of a record node: the classes the caller accepts there (the
    class load_memmap was called on, or the annotation of the field holding the node)."""

    classes: tuple[type, ...] = ()
    field: str | None = None  # "Owner.field" for a field's value


_ANY = _Want()
_UNPLANNED = object()  # no plan for this key yet (see _load_td)
_SKIPPED = object()  # an entry that did not load (validate_folder goes on without it)


def load_tree(
    prefix: str | os.PathLike[str],
    requested: type | None,
    device: torch.device | None,
    allow_pickle: bool,
    mode: Mode | None = None,
    at: Callable[[Folder], Folder] | None = None,
    *,
    strict: bool = True,
    widen: bool = False,
    fields_only: bool = False,
) -> Any:
    """The collection saved in ``prefix``, its leaves mapped as ``mode`` says (or copied
    to ``device``); with ``at``, the node in the folder ``at(root)`` opens (a new
    descriptor, see ``_subpath.descend``). Each record is checked against its class
    (``strict``, ``widen``: see ``_schema``); every difference found is raised at once.

    ``fields_only``: each record comes back as the TensorDict (or lazy stack) of its
    fields, its class neither resolved nor checked (nor the values its annotations
    bound): a reader of rows that needs no class, e.g. a task of another process that
    has not imported it. Fields an old writer kept only in a record's ``other.pickle``
    are not read (``validate_folder`` does the same).
    """
    if mode not in _MODES:
        msg = f"mode must be None, 'r' or 'r+', got {mode!r}: 'r' reads only, 'r+' writes through"
        raise ArgumentValueError(msg)
    root = os.path.abspath(os.fspath(prefix))
    shapes_only = device is not None and device.type == "meta"
    options = ReadOptions(device, allow_pickle, mode, shapes_only, faking(), root=root)
    options.fields_only = fields_only
    want = _Want(tensorclasses(requested))
    for attempt in range(RETRIES):
        folder = open_root(root, mode)
        node = folder
        options.schema = SchemaCheck(root, strict, widen)
        try:
            node = at(folder) if at is not None else folder
            if isinstance(node, ArchiveFolder) and node.archive.compressed():
                _check_inflation(node, allow_pickle)
            return _load_root(node, options, want)
        except SchemaDiffers:
            raise options.schema.error() from None
        except TclassError:
            if attempt + 1 == RETRIES or not folder.replaced():
                raise
        finally:
            if node is not folder:
                node.close()
            folder.close()
    raise AssertionError("unreachable")


def _check_inflation(node: ArchiveFolder, allow_pickle: bool) -> None:
    """An archive holding compressed entries is checked whole before any is inflated
    into memory: each compressed leaf's recorded size against what its leaf needs, and
    the total against the machine's memory (a zip bomb is refused, not inflated)."""
    validate_folder(node, None, allow_pickle)
    node.archive.check_memory()


def validate_folder(
    folder: Folder, observer: Observer | None = None, allow_pickle: bool = False
) -> Any:
    """Check the open ``folder`` (left open) as ``load_memmap`` does, without the user's
    classes: records come back as their fields' TensorDict (or lazy stack), leaves as
    ``meta`` tensors after their files' sizes are checked, pickled values as None (the
    pickle is never read). Only the checks that need a class (which class a record is,
    and what its fields' annotations accept) are left out. Raises the first problem, as
    ``load_memmap`` raises it (with an ``observer``, entries that fail are reported to it
    and skipped instead). In an archive, each leaf entry checked is recorded in
    ``Archive.leaves`` with the bytes it needs."""
    options = ReadOptions(
        torch.device("meta"),
        allow_pickle,
        None,
        True,
        root=folder.path,
        classless=True,
        observer=observer,
    )
    try:
        return _load_root(folder, options, _ANY)
    except _Reported:
        return None


def _load_root(folder: Folder, options: ReadOptions, want: _Want) -> Any:
    try:
        return _load_node(folder, options, want, None)
    except MissingFileError:
        if folder.exists(META):
            raise
        msg = f"{folder.path!r} holds no {META}: it is not a folder written by memmap/save"
        raise MissingFileError(msg) from None


# --- nodes -------------------------------------------------------------------------------


def _load_node(
    folder: Folder,
    options: ReadOptions,
    want: _Want,
    parent_batch: torch.Size | None,
    record_cls: type | None = None,
) -> Any:
    if folder.rel.count("/") >= MAX_TREE_DEPTH:  # rel: "a/b/c" is 3 levels below the root
        _raise_too_deep(folder, options.root)
    meta, name = _header(folder)
    kind = _builtin_kind(name)
    observer = options.observer
    if observer is None:
        return _load_kind(folder, meta, name, kind, options, want, parent_batch, record_cls)
    unsupported = kind is None and name.split(".", 1)[0] == "tensordict"
    observer.node(
        folder,
        "unsupported" if unsupported else _KIND_NAMES.get(kind or "", "tensorclass"),
        name,
        meta,
    )
    try:
        loaded = _load_kind(folder, meta, name, kind, options, want, parent_batch, record_cls)
    except BaseException:
        observer.leave(None)
        raise
    observer.leave(loaded)
    return loaded


def _header(folder: Folder) -> tuple[dict[str, Any], str]:
    """``read_header(folder)``, the same bytes decoded once (see ``_read_cache``)."""
    raw = folder.read_small(META, "its metadata")
    hit = cached_header(raw)
    if hit is not None:
        return hit
    meta, name = decode_header(raw, folder)
    # Kept only where nothing of it reaches the loaded collection: no value node, no
    # value fields in a record's own meta.json.
    if _builtin_kind(name) in ("TensorDict", "LazyStackedTensorDict") or all(
        key in _RECORD_KEYS for key in meta
    ):
        keep_header(raw, meta, name)
    return meta, name


def _raise_too_deep(folder: Folder, root: str) -> NoReturn:
    msg = (
        f"{root!r} holds folders nested more than {MAX_TREE_DEPTH} levels deep "
        f"({folder.rel[:60]}...); tclass neither writes nor reads trees that deep: the folder "
        "is damaged or crafted"
    )
    raise MetadataError(msg)


def _load_kind(
    folder: Folder,
    meta: dict[str, Any],
    name: str,
    kind: str | None,
    options: ReadOptions,
    want: _Want,
    parent_batch: torch.Size | None,
    record_cls: type | None,
) -> Any:
    """The node of a read header; ``record_cls`` is the record whose fields a TensorDict
    node holds (a member of a record's lazy stack)."""
    if kind == "TensorDict":
        return _load_td(folder, meta, options, record_cls)
    if kind == "LazyStackedTensorDict":
        return _load_lazy(folder, meta, options, None, want)
    if kind == "NonTensorData":
        value_cls = MetaData if name.endswith(".MetaData") else NonTensorData
        node = _load_value(folder, meta, options, parent_batch, value_cls)
        return _from_folder(node, folder, options)
    if kind == "NonTensorStack":
        return _from_folder(_load_values(folder, meta, options, parent_batch), folder, options)
    if name.split(".", 1)[0] == "tensordict":
        msg = (
            f"{folder.child_path(META)!r} holds a {name}, a node kind tclass does not "
            "read (a view of "
            "another TensorDict); re-save it from tensordict after .contiguous() or .clone()"
        )
        raise UnsupportedError(msg)
    if options.classless or options.fields_only:
        return _load_record(None, name, folder, meta, options)
    cls = resolve_class(name, want.classes, folder.path, field=want.field, root=options.root)
    if want.field is not None and want.classes and not issubclass(cls, want.classes):
        accepted = " | ".join(accepted.__name__ for accepted in want.classes)
        msg = (
            f"{folder.path!r} holds a {name}, but {want.field} is annotated "
            f"{accepted}; the folder was saved from another class"
        )
        raise MetadataError(msg)
    return _load_record(cls, name, folder, meta, options)


def _builtin_kind(name: str | None) -> str | None:
    """ "TensorDict", "LazyStackedTensorDict", ... for the built-in node kinds of either
    library (saved as ``tensordict.*`` or ``tclass.*``); None for anything else."""
    if name is None:
        return None
    package = name.split(".", 1)[0]
    short = name.rpartition(".")[2]
    short = "NonTensorData" if short == "MetaData" else short  # a value node of that class
    return short if package in ("tensordict", "tclass") and short in _BUILTIN else None


def _load_td(
    folder: Folder,
    meta: dict[str, Any],
    options: ReadOptions,
    record_cls: type | None,
    values: frozenset[str] = frozenset(),
) -> TensorDict:
    """A TensorDict node; ``record_cls``: the record whose fields it holds, checked
    against the class first (``values``: the record's fields kept elsewhere)."""
    plans = node_plans(meta)
    if plans is not None and values.__class__ is frozenset and maps_directly(folder, options):
        check = options.schema
        checked = record_cls if check is not None else None
        key = (checked, values, check.strict, check.widen) if check is not None else None
        plan = plans.get(key, _UNPLANNED)
        if plan is _UNPLANNED:  # the first load of these bytes with this class and options
            first = _first_plan(folder, meta, checked, values, check)
            td = _planned_td(folder, meta, first, options, checked) if first is not None else None
            if td is None:
                td = _checked_td(folder, meta, options, record_cls, values)
            if len(plans) >= 8:  # a few classes and options per header
                plans.clear()
            plans[key] = first  # kept once the load passed (a failed check is not kept)
            return td
        if isinstance(plan, NodePlan):  # the same bytes as a load that passed every check
            td = _planned_td(folder, meta, plan, options, checked)
            if td is not None:
                return td
    # Not a node of plain leaves, a file that failed its check (for its verdict), or a
    # load that reports, copies or fakes its leaves: the checked way.
    return _checked_td(folder, meta, options, record_cls, values)


def _first_plan(
    folder: Folder,
    meta: dict[str, Any],
    cls: type | None,
    values: frozenset[str],
    check: SchemaCheck | None,
) -> NodePlan | None:
    """The plan of a node whose ``meta`` no load has planned yet, after the checks the
    checked way makes before it maps a leaf, in its order (the node's batch size and
    device, its entries, the comparison with ``cls``: what fails them raises as there):
    each entry a leaf that ``load_leaf`` would map directly after its checks, which it
    passes. None when the node needs more (an entry that is not such a leaf or fails a
    check, a comparison that finds a difference or drops or widens a field): then the
    checked way runs, for its result or its verdict."""
    where = folder.child_path(META)
    batch = torch.Size(checked_sizes(meta.get("shape"), where, "shape"))
    named = names_device(meta.get("device"), where, "the device")
    marker = saved_marker(meta, where)
    escaped = marker.get("escaped_keys") is True
    prefix = list(batch)
    count = len(prefix)
    listed, leaves = [], []
    fields: dict[str, dict[str, Any]] = {}
    for stored, entry in meta.items():  # node_entries' walk and each leaf's checks at once
        if entry.__class__ is not dict:
            if stored in NODE_FIELDS:
                continue
            return None  # an unexpected entry: the checked way raises its error
        if stored == TCLASS_FIELD and is_marker(stored, entry):  # else a key so named
            continue
        dtype_text, shape, device = entry.get("dtype"), entry.get("shape"), entry.get("device")
        if (
            dtype_text.__class__ is not str
            or shape.__class__ is not list
            or device.__class__ is not str
            or "type" in entry
            or shape[:count] != prefix
            or device not in KNOWN_DEVICES
            or entry.get("is_nested", False) is not False
        ):
            return None
        dtype = DTYPES.get(dtype_text)
        if dtype is None:
            return None
        for size in shape:  # is_sizes, and no size 0
            if size.__class__ is not int or size <= 0:
                return None
        key = unescape_key(stored) if escaped else stored
        listed.append((stored, key, entry))
        name = stored if stored.isidentifier() else file_name(stored)
        leaves.append((key, name + ".memmap", dtype, shape))
        fields[key] = entry
    if (
        cls is not None
        and check is not None
        and not check.finds_clean(
            SavedFields(
                cls, folder.path, fields, check.marker(folder.path, marker), values, len(batch)
            )
        )
    ):
        return None
    return NodePlan(batch, named, listed, tuple(leaves))


def _planned_td(
    folder: Folder, meta: dict[str, Any], plan: NodePlan, options: ReadOptions, cls: type | None
) -> TensorDict | None:
    """The node of ``plan``, each leaf's file opened, checked and mapped as at every
    load; None when one fails (the caller takes the checked way, for its verdict)."""
    entries: dict[str, Any] = {}
    mode = options.mode
    try:
        for key, name, dtype, shape in plan.leaves:
            entries[key] = folder.map_leaf(name, "", dtype, shape, mode)
    except TclassError:
        return None
    if cls is not None:
        _check_saved_values(cls, folder, plan.listed, entries)
    batch = plan.batch
    td = TensorDict._new_unchecked(entries, batch, options.device or (_CPU if plan.named else None))
    td._assign_names(_saved_names(meta.get("_names"), len(batch), folder.child_path(META)))
    if _write_through(options, folder):
        td._attach_folder(SavedFolder(folder.path, options.allow_pickle))
    return td


def _checked_td(
    folder: Folder,
    meta: dict[str, Any],
    options: ReadOptions,
    record_cls: type | None,
    values: frozenset[str],
) -> TensorDict:
    """``_load_td``'s checked way."""
    where = folder.child_path(META)
    batch = torch.Size(checked_sizes(meta.get("shape"), where, "shape"))
    # "None" (older writers) or null: no device. Another one is recorded, not used: the
    # leaves are mapped on the CPU (or moved to the device the caller asks for).
    named = names_device(meta.get("device"), where, "the device")
    device = options.device or (_CPU if named else None)
    entries: dict[str, Any] = {}
    observer = options.observer
    listed = node_entries(meta, where)
    check, plan = options.schema, None
    skipped: set[str] = set()
    if record_cls is not None and check is not None:
        found = len(check.differences)
        fields = {key: entry for _, key, entry in listed}
        marker = check.marker(folder.path, saved_marker(meta, where))
        saved = SavedFields(record_cls, folder.path, fields, marker, values, len(batch))
        plan = check.compare(saved)
        skipped = plan.skipped
    # Leaves mapped straight from this folder (the usual load): see _leaf_file.
    direct = maps_directly(folder, options)
    prefix = list(batch)  # what each leaf's shape starts with
    nodes = False  # whether an entry is a sub-folder
    for stored, key, entry in listed:
        if skipped and key in skipped:
            continue
        if observer is not None:
            nodes = nodes or "type" in entry
            value = _observed_entry(
                observer, folder, stored, key, entry, batch, options, record_cls
            )
            if value is not _SKIPPED:
                entries[key] = value
        elif "type" in entry:
            nodes = True
            value = _load_child(folder, stored, key, batch, options, record_cls)
            if value is not _SKIPPED:
                entries[key] = value
        else:
            entries[key] = load_leaf(folder, stored, key, entry, prefix, options, direct)
    if plan is not None:
        if len(check.differences) > found:  # type: ignore[union-attr]
            raise SchemaDiffers(f"{folder.path!r} differs from {record_cls.__name__}")  # type: ignore[union-attr]
        plan.widen_entries(entries, folder.path)
        if not (options.shapes_only or options.fake):
            _check_saved_values(record_cls, folder, listed, entries)  # type: ignore[arg-type]
    # As the peer loads them: the tensors first, then the nodes and Python values.
    if nodes:
        entries = _tensors_first(entries, {key for _, key, entry in listed if "type" in entry})
    td = TensorDict._new_unchecked(entries, batch, device)
    td._assign_names(_saved_names(meta.get("_names"), len(batch), where))
    if _write_through(options, folder):  # Python values and new entries reach the folder
        td._attach_folder(SavedFolder(folder.path, options.allow_pickle))
    return td


def _tensors_first(entries: dict[str, Any], nodes: set[str]) -> dict[str, Any]:
    return {k: v for k, v in entries.items() if k not in nodes} | {
        k: v for k, v in entries.items() if k in nodes
    }


def _check_saved_values(
    cls: type, folder: Folder, listed: list[tuple[str, str, Any]], entries: dict[str, Any]
) -> None:
    """Checks the values of the record's constrained fields (one pass over each of their
    files: the record is then built without a second one, see ``_load_record``), and
    of its constrained Python values."""
    check_saved_python_values(cls, entries, repr(folder.path))
    constrained = constrained_fields(cls)
    if not constrained:
        return
    leaves = [
        (key, entries[key], repr(folder.child_path(file_name(stored) + ".memmap")))
        for stored, key, _ in listed
        if key in constrained and isinstance(entries.get(key), torch.Tensor)
    ]
    check_saved_values(cls, leaves)


def _saved_names(raw: object, ndim: int, where: str) -> Names:
    """The ``_names`` of a node: a list of str or null, one per batch dim (read only
    when it is a list, as the peer does: otherwise it is the entry of a key so named)."""
    if not isinstance(raw, list):
        return None
    try:
        return _names.as_names(raw, ndim, "_names")
    except (TypeError, DimNameError) as error:
        raise MetadataError(f"{where!r}: malformed _names {raw!r:.80}: {str(error):.200}") from None


def _write_through(options: ReadOptions, folder: Folder) -> bool:
    """Whether the loaded tree maps its files writably, so changes go to the folder too
    (not for a read-only load, a copy to another device, shapes only, or a folder this
    process cannot write, whose files are mapped privately)."""
    device = options.device
    if options.mode not in (None, "r+") or options.shapes_only or options.fake:
        return False
    return (device is None or device.type == "cpu") and folder.may_write()


def _load_child(
    folder: Folder,
    stored: str,
    key: str,
    batch: torch.Size,
    options: ReadOptions,
    record_cls: type | None,
) -> Any:
    """The collection under ``key``: a sub-folder (a record's field when ``record_cls``)."""
    want = (
        _Want(field_classes(record_cls, key), f"{record_cls.__name__}.{key}")
        if record_cls is not None
        else _ANY
    )
    child = open_child(folder, stored, key, f"the entry {key!r}")
    try:
        value = _load_node(child, options, want, batch)
    except SchemaDiffers:
        if record_cls is None:
            raise
        return _SKIPPED  # its differences are recorded: go on with its parent's others
    finally:
        child.close()
    check_nested_batch(value, batch, child.path)
    return value


def _observed_entry(
    observer: Observer,
    folder: Folder,
    stored: str,
    key: str,
    entry: dict[str, Any],
    batch: torch.Size,
    options: ReadOptions,
    record_cls: type | None,
) -> Any:
    """The entry loaded as ``_load_td`` loads it, reported to ``observer``; ``_SKIPPED``
    when it does not load."""
    observer.entry(folder, key, None)
    try:
        if "type" in entry:
            return _load_child(folder, stored, key, batch, options, record_cls)
        observer.leaf(folder, stored, entry)
        return load_leaf(folder, stored, key, entry, list(batch), options)
    except _Reported:
        return _SKIPPED
    except TclassError as error:
        _report(options, observer, error)
        return _SKIPPED


def _report(options: ReadOptions, observer: Observer, error: TclassError) -> None:
    options.reported += 1
    observer.problem(error)


def node_entries(meta: dict[str, Any], where: str) -> list[tuple[str, str, dict[str, Any]]]:
    """A TensorDict node's entries as (stored name, key, entry): every dict in its
    meta.json but tclass's marker, keys unescaped; anything else must be a node field."""
    escaped = saved_marker(meta, where).get("escaped_keys") is True
    out = []
    for stored, entry in meta.items():
        if entry.__class__ is not dict:
            if stored not in NODE_FIELDS:
                raise MetadataError(f"{where!r}: unexpected entry {stored!r}: {entry!r:.80}")
            continue
        if stored == TCLASS_FIELD and is_marker(stored, entry):  # else a key so named
            continue
        out.append((stored, unescape_key(stored) if escaped else stored, entry))
    return out


def _load_record(
    cls: type | None, name: str, folder: Folder, meta: dict[str, Any], options: ReadOptions
) -> Any:
    """A record of ``cls``; class-less (``cls`` None), the TensorDict (or lazy stack) of
    its fields. Fields come from ``_tensordict/``, then from the record's own meta.json
    (older writers keep value fields there), and from ``other.pickle`` only those that
    neither holds: JSON always wins, and the pickle is not read when it is not needed."""
    where = folder.child_path(META)
    extra = {key: value for key, value in meta.items() if key not in _RECORD_KEYS}
    short = name.rpartition(".")[2]
    content_dir = folder.folder(TENSORCLASS_DIR, f"the fields of a {short}")
    # Fields an older writer pickled next to the record are only read when missing
    # below; until then, any field may be there. (That changes how the fields kept in
    # the record's own meta.json compare: a record that has none needs no look.)
    kept = AnyFields(extra) if extra and folder.exists("other.pickle") else frozenset(extra)
    try:
        content = _load_content(content_dir, options, cls, kept)
        nones = saved_as_none(cls, content, extra, content_dir) if cls is not None else ()
    finally:
        content_dir.close()
    if nones and isinstance(content, TensorDict):  # None when saved, not the default
        for key in nones:
            content._put(key, NonTensorData._make(None, content.batch_size, content.device))
    if cls is not None:
        # What the class does not declare was compared with it: strict=False left it out.
        extra = {key: value for key, value in extra.items() if is_field(cls, key)}
        missing = missing_fields(cls, content, extra)
        if missing and folder.exists("other.pickle"):
            pickled = _pickled_fields(folder, options, "other.pickle")
            extra.update((key, value) for key, value in pickled.items() if key in missing)
    for key, value in extra.items():
        if isinstance(content, LazyStackedTensorDict):
            raise MetadataError(f"{where!r}: value fields next to a lazy stack are not supported")
        if options.observer is not None:
            options.observer.value(key, value)
        content._put(key, NonTensorData._make(value, content.batch_size, content.device))
    if cls is None:
        return content
    fit_values(cls, content)
    casts = value_casts(cls, content) if options.schema is not None else None
    if casts:  # a saved value its class would convert: a difference
        options.schema.check_casts(cls, casts, folder.path)  # type: ignore[union-attr]
    try:
        record = cls._from_saved(content)  # type: ignore[attr-defined]
    except TclassError as error:
        msg = f"{folder.path!r} does not hold a valid {cls.__name__}: {error}"
        raise MetadataError(msg) from error
    fields = storage_of(record)
    for key in nones:  # unset, as the record that was saved (its keys() lacked them)
        if isinstance(fields, TensorDict) and fields._has_entry(key):
            fields._remove_entry(key)
    relink(record, content, frozenset(extra))  # the record's storage is new
    return record


def saved_as_none(
    cls: type, content: TensorDict | LazyStackedTensorDict, values: Any, folder: Folder
) -> list[str]:
    """The Python-value fields of ``cls`` with a default other than None that ``folder`` (a record's
    ``_tensordict/``) lacks although the class that saved it had them (its schema lists
    them; a folder without one was written by the peer or an older tclass): they were
    None when saved, which the format stores by leaving the field out, and load as None,
    as the peer loads them, not as the default. Read only when such a field is absent."""
    info = cls.__tclass_info__  # type: ignore[attr-defined]
    defaults, rules = info.non_none_defaults, info.rules
    absent = [
        name
        for name in missing_fields(cls, content, values)
        if name in defaults and rules[name].value_field  # Python values: a tensor field's
    ]  # None is its absence
    if not absent or not isinstance(content, TensorDict):
        return []
    meta, _ = _header(folder)
    where = folder.child_path(META)
    saved = read_schema(saved_marker(meta, where), where)
    return [name for name in absent if saved is None or name in saved.fields]


def _load_content(
    folder: Folder, options: ReadOptions, cls: type | None, values: frozenset[str]
) -> TensorDict | LazyStackedTensorDict:
    """A record's ``_tensordict/`` node, checked like any node: a TensorDict or a lazy
    stack of the record's fields (``values``: the fields kept in the record's own
    meta.json or next to it, by older writers)."""
    meta, name = _header(folder)
    kind = _builtin_kind(name)
    if options.observer is not None:
        saved = read_schema(saved_marker(meta, folder.child_path(META)), folder.child_path(META))
        if saved is not None:
            options.observer.schema(folder, saved)
    if kind == "TensorDict":
        return _load_td(folder, meta, options, cls, values)
    if kind == "LazyStackedTensorDict":
        return _load_lazy(folder, meta, options, cls, _Want(tensorclasses(cls)))
    msg = (
        f"{folder.child_path(META)!r} names a {name}, but a record's {TENSORCLASS_DIR} folder "
        "holds its fields, as a TensorDict or a lazy stack; the folder is damaged"
    )
    raise MetadataError(msg)


def _load_lazy(
    folder: Folder, meta: dict[str, Any], options: ReadOptions, record_cls: type | None, want: _Want
) -> LazyStackedTensorDict:
    """A lazy stack; ``record_cls``: the record whose fields each member holds (its
    ``_tensordict/``); ``want``: what names the class of a member that is a record."""
    where = folder.child_path(META)
    stack_dim = meta.get("stack_dim")
    if type(stack_dim) is not int:
        raise MetadataError(f"{where!r}: stack_dim must be an int, got {stack_dim!r:.80}")
    marker = saved_marker(meta, where)
    count = _member_count(folder, marker.get("members"), where)
    if record_cls is not None and options.schema is not None and "schema" in marker:
        for index in range(count):  # each member holds fields the stack's schema describes
            options.schema.stack_markers[folder.child_path(str(index))] = marker
    observer = options.observer
    if observer is not None:
        observer.stack(stack_dim, count)
    members = []
    reported = options.reported
    for index in range(count):
        if observer is not None:
            observer.entry(folder, None, index)
        try:
            members.append(_load_member(folder, index, options, want, record_cls))
        except TclassError as error:
            if observer is None:
                raise
            if not isinstance(error, _Reported):
                _report(options, observer, error)
        if len(members) == 1:  # the first member loaded: check before loading the others
            _check_stack_dim(stack_dim, len(members[0].batch_size), where)
    if options.reported != reported:  # validate_folder: a member did not load
        raise _Reported(f"{folder.path!r}: a member did not load")
    name = meta.get("stack_dim_name")
    if name is not None and not isinstance(name, str):
        raise MetadataError(f"{where!r}: stack_dim_name must be a string or null, got {name!r:.80}")
    try:
        return LazyStackedTensorDict(*members, stack_dim=stack_dim, stack_dim_name=name)
    except TclassError as error:
        raise MetadataError(
            f"{folder.path!r}: the members do not form a lazy stack ({error})"
        ) from error


def _check_stack_dim(stack_dim: int, dims: int, where: str) -> None:
    if not -dims - 1 <= stack_dim <= dims:
        msg = (
            f"{where!r}: stack_dim {stack_dim} is out of range for members of {dims} "
            f"batch dim(s) (expected {-dims - 1} to {dims})"
        )
        raise MetadataError(msg)


def _load_member(
    folder: Folder, index: int, options: ReadOptions, want: _Want, record_cls: type | None
) -> Any:
    child = folder.folder(str(index), f"member {index} of the lazy stack")
    try:
        return _load_node(child, options, want, None, record_cls)
    finally:
        child.close()


def _member_count(folder: Folder, recorded: object, where: str) -> int:
    numbers = sorted(_member_number(folder, name) for name in folder.names() if name.isdigit())
    if recorded is not None:
        if type(recorded) is not int or recorded < 1:
            raise MetadataError(
                f"{where!r}: the member count must be a positive int, got {recorded!r:.80}"
            )
        extra = [n for n in numbers if n >= recorded]
        if extra:
            msg = (
                f"{folder.path!r} holds member folder {extra[0]}/, but its meta.json "
                f"records {recorded} members; the folder is damaged"
            )
            raise MetadataError(msg)
        if len(numbers) < recorded:  # checked before any member is read: a count is a claim
            first = next((i for i, n in enumerate(numbers) if i != n), len(numbers))
            msg = (
                f"{folder.child_path(str(first))!r} is missing (member {first} of the lazy "
                f"stack): its meta.json records {recorded} members, the folder holds "
                f"{len(numbers)}; the folder is incomplete or damaged"
            )
            raise MissingFileError(msg)
        return recorded
    count = 0
    while count in numbers:
        count += 1
    if count == 0 or count != len(numbers):
        msg = (
            f"{folder.child_path(str(count))!r} is missing: the lazy stack's members "
            "must be 0/, 1/, ... with no gap"
        )
        raise MissingFileError(msg)
    return count


def _member_number(folder: Folder, name: str) -> int:
    """The index a member folder's name gives (``name`` is all digits, in some script)."""
    if not name.isascii() or str(int(name)) != name:
        msg = (
            f"{folder.child_path(name)!r} is not a member of the lazy stack: members are named "
            "0, 1, 2, ... in ASCII digits, without leading zeros; the folder is damaged (remove it)"
        )
        raise MetadataError(msg)
    return int(name)


def _from_folder(node: Any, folder: Folder, options: ReadOptions) -> Any:
    """A value node read from ``folder``, marked so (its ``is_memmap()``: true), that
    folder its ``saved_path`` where a TensorDict read so would have it (write-through)."""
    if isinstance(node, _NonTensorNode):
        node._in_folder = True
        if _write_through(options, folder):
            node._saved_folder = folder.path
    return node


def _load_value(
    folder: Folder,
    meta: dict[str, Any],
    options: ReadOptions,
    batch: torch.Size | None,
    cls: type[NonTensorData] = NonTensorData,
) -> NonTensorData:
    if "data" in meta:
        value = meta["data"]  # JSON wins: a planted other.pickle is never read
    else:
        fields = _pickled_fields(folder, options, "other.pickle")
        if "data" not in fields:
            raise MetadataError(f"{folder.child_path(META)!r}: a NonTensorData node with no data")
        value = fields["data"]
    return cls._make(
        value, batch if batch is not None else torch.Size([]), options.device or torch.device("cpu")
    )


def _load_values(
    folder: Folder, meta: dict[str, Any], options: ReadOptions, parent_batch: torch.Size | None
) -> NonTensorStack:
    where = folder.child_path(META)
    data = meta.get("data")
    if data == "pickle.pkl":
        data = _unpickle(folder, "pickle.pkl", options)
        if options.classless:  # not unpickled: the values read None
            recorded = saved_marker(meta, where).get("batch_size")
            shape = (
                checked_sizes(recorded, where, "batch_size")
                if recorded is not None
                else list(parent_batch or ())
            )
            unread = np.broadcast_to(np.array(None, dtype=object), shape)  # allocates nothing
            return NonTensorStack._from_array(unread, options.device)
    if not isinstance(data, list):
        raise MetadataError(
            f"{where!r}: NonTensorStack data must be a list or 'pickle.pkl', got {data!r:.80}"
        )
    recorded = saved_marker(meta, where).get("batch_size")
    if isinstance(recorded, list) and -1 in recorded:  # a ragged stack: its nested lists
        checked_sizes([0 if size == -1 else size for size in recorded], where, "batch_size")
        try:
            return ragged_from_lists(data, recorded, options.device or _CPU)  # type: ignore[return-value]
        except StackError as error:
            raise MetadataError(f"{where!r}: {error}") from None
    if recorded is not None:
        shape = checked_sizes(recorded, where, "batch_size")
    else:
        shape = _nested_shape(data, len(parent_batch) if parent_batch is not None else None)
    items = flatten_values(data, shape, where)  # first: the data bounds what is allocated
    array = np.empty(shape, dtype=object)
    fill_flat(array, items)
    nesting = checked_stack_dims(saved_marker(meta, where), len(shape), where)
    return NonTensorStack._from_array(array, options.device or _CPU, nesting)


def _nested_shape(data: list[Any], dims: int | None) -> list[int]:
    shape: list[int] = []
    level: Any = data
    while isinstance(level, list) and (dims is None or len(shape) < dims):
        shape.append(len(level))
        if not level or (
            dims is None and not all(isinstance(i, list) and len(i) == len(level[0]) for i in level)
        ):
            break
        level = level[0]
    return shape


def _pickled_fields(folder: Folder, options: ReadOptions, name: str) -> dict[str, Any]:
    if not folder.exists(name):
        return {}
    sidecar = "json_types.json"
    if folder.exists(sidecar):
        raw = _read_bytes(folder, sidecar)
        check_depth(raw, folder.child_path(sidecar))
        types = json_types_value(raw, _read_bytes(folder, name), folder.child_path(name))
        if types is not None:
            return types
    fields = _unpickle(folder, name, options)
    if options.classless:  # not unpickled: a NonTensorData's value reads None
        return {"data": None}
    if not isinstance(fields, dict):
        raise MetadataError(f"{folder.child_path(name)!r} does not hold a dict of fields")
    return fields


def _unpickle(folder: Folder, name: str, options: ReadOptions) -> Any:
    """The one place a load can run code: only with ``allow_pickle=True`` (the caller's
    explicit trust), only the format's fixed file names, and never when the node's JSON
    already holds the value."""
    check_pickle_allowed(folder.child_path(name), options.allow_pickle)  # raises unless allowed
    if options.classless:  # validate_folder: the file must be there, and is never read
        folder.check_file(name, "a value file")
        return None
    import pickle

    return pickle.loads(_read_bytes(folder, name))


def _read_bytes(folder: Folder, name: str) -> bytes:
    return folder.read_small(name, "a value file")
