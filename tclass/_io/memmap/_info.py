"""What a saved folder holds, and whether ``load_memmap`` would load it (``python -m tclass info``).

The description comes from the reader's own walk: ``validate_folder`` runs every check
``load_memmap`` runs, in the same order, without the user's classes (a record is
described by the name it was saved under and its fields), mapping no file and
unpickling nothing, and reports what it meets to the ``_Describer`` here. So a folder
``info`` finds fine loads, and the first problem it reports is the error
``load_memmap`` raises. Left out are only the checks that need the classes: that a
saved class is defined in the loading process, and that a record's fields fit its
annotations. Leaf files are only ``fstat``-ed, for their size and the space they take on
disk (``st_blocks``: a sparse ``memmap_like`` file takes almost none). A folder that a
save or an append swaps while it is walked is walked again, as a load is.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

from tclass._core._dtypes import DTYPES
from tclass._io._schema import SavedSchema
from tclass._io.memmap._folder import FileFacts, Folder, open_root
from tclass._io.memmap._format import file_name
from tclass._io.memmap._meta_file import read_json_object
from tclass._io.memmap._read import RETRIES, validate_folder
from tclass.errors import (
    FileFormatError,
    MetadataError,
    MissingFileError,
    PickleRefusedError,
    TclassError,
    UnsafePathError,
    UnsupportedError,
)

__all__ = ["Info", "Node", "describe", "human_size", "info_json", "info_text"]

PREVIEW_CHARS = 40  # non-tensor values are shortened to this many characters
_BUILTIN_KINDS = ("tensordict", "lazy_stack", "value", "values")


@dataclass
class Node:
    """One node of the description: a tensor leaf, a collection or a non-tensor value.

    ``kind`` is ``tensor``, ``tensordict``, ``tensorclass``, ``lazy_stack``, ``value``
    (NonTensorData), ``values`` (NonTensorStack), ``unsupported`` (a peer view node),
    ``damaged`` (an entry whose folder cannot even be opened) or ``unset`` (a field the
    saved schema declares that the folder does not hold: it was None when saved).
    ``path`` is relative to the saved folder: the leaf's file, or the node's folder.
    """

    kind: str
    path: str
    key: str | None = None  # None for the root and for lazy-stack members
    index: int | None = None  # position in a lazy stack
    class_name: str | None = None  # module.QualName as saved
    batch_size: list[int] | None = None
    dtype: str | None = None
    shape: list[int] | None = None
    nbytes: int = 0  # logical: what the tensor holds (dtype x shape)
    disk_bytes: int = 0  # allocated on disk (st_blocks * 512)
    file_bytes: int | None = None  # the file's length; None when there is no file
    preview: str | None = None
    stack_dim: int | None = None
    members: int | None = None
    problem: str | None = None
    children: list[Node] = field(default_factory=list)
    declared: str | None = None  # a record field's annotation, from the saved schema
    schema: dict[str, Any] | None = None  # a record's saved schema (see _io/_schema.py)


@dataclass
class Info:
    """A saved folder's description: its tree, totals over the tensor leaves, problems
    (the first is the error ``load_memmap`` raises)."""

    path: str
    root: Node
    leaves: int = 0
    values: int = 0
    nbytes: int = 0
    disk_bytes: int = 0  # hard-linked files counted once
    problems: list[str] = field(default_factory=list)
    _inodes: set[tuple[object, ...]] = field(default_factory=set, repr=False)


_NO_ROOT = Node("damaged", ".")  # the root of a description until the walk reaches it


def describe(prefix: str | os.PathLike[str], allow_pickle: bool = False) -> Info:
    """The description of the folder saved at ``prefix``, with what
    ``load_memmap(prefix, allow_pickle=allow_pickle)`` would refuse in ``problems``.

    Raises:
        TclassError: the folder is missing, is a file, or its own ``meta.json`` is
            missing or malformed (there is nothing to describe).
        OSError: a file cannot be read (permissions).
    """
    root = os.path.abspath(os.fspath(prefix))
    for attempt in range(RETRIES):
        describer, folder = _Describer(root), open_root(root)
        try:
            try:
                validate_folder(folder, describer, allow_pickle)
            except TclassError as error:
                if describer.info.root is _NO_ROOT:
                    if attempt + 1 < RETRIES and folder.replaced():
                        continue
                    raise
                describer.fatal(error)
            if describer.info.problems and attempt + 1 < RETRIES and folder.replaced():
                continue  # a save or an append swapped the folder mid-walk: walk the new one
            return describer.info
        finally:
            folder.close()
    raise AssertionError("unreachable")


# --- the walk, as the reader reports it --------------------------------------------------


@dataclass
class _Frame:
    """A node whose entries are being walked, and its entry under way."""

    node: Node
    key: str | None = None
    index: int | None = None
    folder: Folder | None = None  # where the entry under way is
    child: Node | None = None  # the node made for it, if any


class _Describer:
    """Builds the description from the reader's reports (``tclass._io.memmap._read.Observer``)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.info = Info(root, _NO_ROOT)
        self.frames: list[_Frame] = []
        self.failed: Node | None = None  # the innermost node that failed since the last problem
        self.readable: dict[
            int, bool
        ] = {}  # id(leaf node) -> whether its dtype is one tclass reads
        self.nested: set[int] = set()  # id(leaf node) of nested leaves

    def entry(self, folder: Folder, key: str | None, index: int | None) -> None:
        frame = self.frames[-1]
        frame.key, frame.index, frame.folder, frame.child = key, index, folder, None

    def node(self, folder: Folder, kind: str, name: str, meta: dict[str, Any]) -> None:
        node = self._add(Node(kind, self._rel(folder), class_name=name))
        if kind == "value":
            self.info.values += 1
            node.preview = (
                preview(meta["data"]) if "data" in meta else _pickled(folder, "other.pickle")
            )
        elif kind == "values":
            self.info.values += 1
            data = meta.get("data")
            node.preview = _pickled(folder, "pickle.pkl") if data == "pickle.pkl" else preview(data)
        self.frames.append(_Frame(node))

    def leaf(self, folder: Folder, stored: str, entry: dict[str, Any]) -> None:
        shape, dtype_text = entry.get("shape"), entry.get("dtype")
        sizes = (
            shape
            if isinstance(shape, list) and all(type(size) is int and size >= 0 for size in shape)
            else None
        )
        dtype = DTYPES.get(dtype_text) if isinstance(dtype_text, str) else None
        path = _join(self._rel(folder), file_name(stored) + ".memmap")
        node = self._add(
            Node("tensor", path, dtype=str(dtype_text).removeprefix("torch."), shape=sizes)
        )
        self.readable[id(node)] = dtype is not None
        self.info.leaves += 1
        if entry.get("is_nested") is True:  # shape: its components; bytes: its data file's
            marker = entry.get("_tclass")
            layout = marker.get("layout") if isinstance(marker, dict) else "strided"
            node.dtype = f"{node.dtype} nested {str(layout):.20}"
            node.shape = sizes[:1] if sizes else None
            self.nested.add(id(node))
        elif dtype is not None and sizes is not None:
            node.nbytes = math.prod(sizes) * dtype.itemsize
            self.info.nbytes += node.nbytes

    def leaf_file(self, folder: Folder, name: str, facts: FileFacts) -> None:
        node = self.frames[-1].child
        assert node is not None
        node.path = _join(self._rel(folder), name)  # the peer's legacy raw name, maybe
        node.file_bytes, node.disk_bytes = facts.size, facts.disk_bytes
        if id(node) in self.nested:  # its elements: what the file holds (a load checks it)
            node.nbytes = facts.size
            self.info.nbytes += node.nbytes
        if facts.identity not in self.info._inodes:
            self.info._inodes.add(facts.identity)
            self.info.disk_bytes += node.disk_bytes

    def stack(self, stack_dim: int, members: int) -> None:
        self.frames[-1].node.stack_dim, self.frames[-1].node.members = stack_dim, members

    def value(self, key: str, value: Any) -> None:
        self.info.values += 1
        self.frames[-1].node.children.append(
            Node("value", self.frames[-1].node.path, key=key, preview=preview(value))
        )

    def schema(self, folder: Folder, schema: SavedSchema) -> None:
        shown: dict[str, Any] = {
            "class": schema.class_id,
            "fields": schema.fields,
            "dims": schema.dims,
        }
        try:
            document = _document(folder, schema)
        except TclassError as error:  # loads never read the file: not a load's problem
            shown["json_schema_problem"] = str(error)
        else:
            if document is not None:
                shown["json_schema"] = document
        self.frames[-1].node.schema = shown

    def leave(self, loaded: Any) -> None:
        node = self.frames.pop().node
        if loaded is None:
            self.failed = self.failed or node
        elif node.kind != "value":
            node.batch_size = list(loaded.batch_size)
        if node.schema is not None:
            _declare(node, node.schema["fields"])

    def problem(self, error: TclassError) -> None:
        frame = self.frames[-1]
        node = frame.child
        if node is None:  # its folder could not be opened: a stand-in
            name = str(frame.index) if frame.key is None else file_name(frame.key)
            rel = self._rel(frame.folder) if frame.folder is not None else frame.node.path
            node = self._add(Node("damaged", _join(rel, name)))
        self._report(node, error)

    def fatal(self, error: TclassError) -> None:
        """The walk stopped at ``error``: the innermost node it left unfinished."""
        self._report(self.failed or self.info.root, error)

    def _report(self, node: Node, error: TclassError) -> None:
        node.problem = node.problem or _label(error, node, self.readable.get(id(node), True))
        self.info.problems.append(str(error))
        self.failed = None

    def _add(self, node: Node) -> Node:
        if not self.frames:
            self.info.root = node
            return node
        frame = self.frames[-1]
        node.key, node.index, frame.child = frame.key, frame.index, node
        frame.node.children.append(node)
        return node

    def _rel(self, folder: Folder) -> str:
        return folder.rel or "."


def _declare(record: Node, fields: dict[str, Any]) -> None:
    """The fields of ``record`` (each member's, for a lazy stack) that have a spec show
    their annotation; the declared fields the folder does not hold (None when saved) are
    listed as ``unset``."""
    if record.members is not None:
        for member in record.children:
            _declare(member, fields)
        return
    present = {child.key for child in record.children}
    for child in record.children:
        spec = fields.get(child.key or "", {}).get("spec")
        if isinstance(spec, dict):
            child.declared = _text(spec.get("text"))
    for name, entry in fields.items():
        if name not in present and isinstance(entry, dict):
            unset = Node("unset", record.path, key=name, declared=_text(entry.get("annotation")))
            record.children.append(unset)


def _document(folder: Folder, schema: SavedSchema) -> dict[str, Any] | None:
    """A record's JSON Schema document: inline in its saved schema (earlier versions), or
    read from the file the schema names (which loads never read: a missing or damaged
    one is shown in the schema, and the folder still loads)."""
    name = schema.json_schema_file
    if name is None:
        return schema.json_schema
    what = "the record's JSON Schema document"
    return read_json_object(folder, name, what, "not a JSON Schema document")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _label(error: TclassError, node: Node, readable: bool) -> str:
    """A few words for the tree line of a node that does not load (the full message is in
    the problems)."""
    if isinstance(error, PickleRefusedError):
        return "pickled: loads with allow_pickle=True"
    if isinstance(error, MissingFileError):
        return "file missing" if node.kind == "tensor" else "missing"
    if isinstance(error, UnsafePathError):
        return "symlink or path leaving the folder"
    if node.kind == "unsupported":
        return "a view node tclass does not read"
    if isinstance(error, UnsupportedError):
        return "not readable by tclass"
    if node.kind == "tensor" and not readable:
        return "dtype not readable"
    if isinstance(error, MetadataError):
        return "does not fit its meta.json" if node.kind == "tensor" else "damaged"
    if isinstance(error, FileFormatError) and node.file_bytes is not None:
        return f"file holds {node.file_bytes} B"
    return "damaged"


def _pickled(folder: Folder, name: str) -> str:
    """A stand-in for a pickled value, which is never unpickled here."""
    try:
        size = folder.check_file(name, "a value file")
    except TclassError:
        return "<no data>"  # the reader reports it
    return f"<pickled, {human_size(size)}>"


def _join(rel: str, name: str) -> str:
    return name if rel == "." else f"{rel}/{name}"


# --- text --------------------------------------------------------------------------------


def preview(value: Any) -> str:
    """A non-tensor value as one short line of JSON: ``"walker"``, ``[1, 2, ...``."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # cannot happen for parsed JSON; keep the CLI alive anyway
        text = repr(value)
    text = _printable(text)
    return (
        text
        if len(text) <= PREVIEW_CHARS
        else text[: PREVIEW_CHARS - 1] + "\N{HORIZONTAL ELLIPSIS}"
    )


def _printable(text: str) -> str:
    """``text`` with control and other invisible characters escaped (keeps lines intact)."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in text)


def _show_key(node: Node) -> str:
    if node.index is not None:
        return f"[{node.index}]"
    key = node.key if node.key is not None else ""
    if key == "" or not key.isprintable() or key != key.strip():
        return repr(key)
    return key


def human_size(size: int) -> str:
    """``24 B``, ``4.0 KiB``, ``1.1 GiB``."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if value < 1024 or unit == "PiB":
            break
    return f"{value:.1f} {unit}"


def _dims(sizes: list[int] | None) -> str:
    return "?" if sizes is None else "[" + ", ".join(str(size) for size in sizes) + "]"


def _class_label(node: Node) -> str:
    name = node.class_name or ""
    if node.kind in _BUILTIN_KINDS:
        return name.rpartition(".")[2]  # TensorDict, not tensordict.TensorDict
    return name


def _summary(node: Node) -> str:
    """A collection's or a value's line after its key: class, batch size, what it is."""
    if node.kind == "value":
        return node.preview or ""
    if node.kind == "values":
        return f"{node.preview}  (NonTensorStack {_dims(node.batch_size)})"
    if node.kind == "unsupported":
        return _class_label(node)
    if node.kind == "damaged":
        return ""
    if node.kind == "unset":
        return "None"
    notes = ["tensorclass"] if node.kind == "tensorclass" else []
    dims = (node.schema or {}).get("dims") or {}
    if dims:
        shown = ", ".join(f"{name}={_printable(str(size))}" for name, size in dims.items())
        notes.append(f"dims {shown}")
    if node.members is not None:
        notes.append(f"lazy stack of {node.members} along dim {node.stack_dim}")
    text = f"{_class_label(node)}  batch {_dims(node.batch_size)}"
    return text + (f"  ({', '.join(notes)})" if notes else "")


def _leaf_columns(node: Node) -> tuple[str, str, str, str]:
    if node.file_bytes is None and node.problem is None:
        disk = "(no file)"
    else:
        disk = (
            f"(disk {human_size(node.disk_bytes)})" if node.file_bytes is not None else "(disk -)"
        )
    return node.dtype or "?", _dims(node.shape), human_size(node.nbytes), disk


def _child_lines(children: list[Node], indent: str) -> list[str]:
    keys = [_show_key(child) for child in children]
    key_width = max((len(key) for key in keys), default=0)
    columns = {id(child): _leaf_columns(child) for child in children if child.kind == "tensor"}
    widths = [max((len(row[i]) for row in columns.values()), default=0) for i in range(3)]
    lines = []
    for position, (child, key) in enumerate(zip(children, keys)):
        last = position == len(children) - 1
        row = columns.get(id(child))
        if row is not None:
            text = f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]}"
        else:
            text = _summary(child)
        if child.declared is not None:
            text += f"  : {_printable(child.declared)}"
        if child.problem is not None:
            text += f"  !! {child.problem}"
        lines.append(f"{indent}{'└── ' if last else '├── '}{key:<{key_width}}  {text}".rstrip())
        lines.extend(_child_lines(child.children, indent + ("    " if last else "│   ")))
    return lines


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def info_text(info: Info) -> str:
    """The human-readable tree (no trailing newline)."""
    root = info.root
    header = f"{_printable(info.path)}  {_summary(root)}"
    if root.problem is not None:
        header += f"  !! {root.problem}"
    lines = [header, *_child_lines(root.children, "")]
    total = f"total: {_plural(info.leaves, 'leaf')}".replace("leafs", "leaves")
    if info.values:
        total += f", {_plural(info.values, 'value')}"
    total += f", {human_size(info.nbytes)} logical, {human_size(info.disk_bytes)} on disk"
    lines.append(total)
    if info.problems:
        lines.append(f"problems: {len(info.problems)} (load_memmap would refuse this folder)")
    return "\n".join(lines)


# --- JSON --------------------------------------------------------------------------------


def _node_json(node: Node) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": node.kind, "path": node.path}
    if node.key is not None:
        out["key"] = node.key
    if node.index is not None:
        out["index"] = node.index
    if node.kind == "tensor":
        out.update(dtype=node.dtype, shape=node.shape, bytes=node.nbytes)
        out.update(disk_bytes=node.disk_bytes, file_bytes=node.file_bytes)
    else:
        if node.class_name is not None:
            out["class"] = node.class_name
        if node.kind not in ("value", "unset"):
            out["batch_size"] = node.batch_size
        if node.preview is not None:
            out["preview"] = node.preview
        if node.members is not None:
            out.update(stack_dim=node.stack_dim, members=node.members)
    if node.declared is not None:
        out["declared"] = node.declared
    if node.schema is not None:
        out["schema"] = node.schema
    if node.problem is not None:
        out["problem"] = node.problem
    if node.kind not in ("tensor", "value", "values", "unsupported", "damaged", "unset"):
        out["children"] = [_node_json(child) for child in node.children]
    return out


def info_json(info: Info) -> dict[str, Any]:
    """The description as JSON-ready data (what ``info --json`` prints)."""
    totals = {
        "leaves": info.leaves,
        "values": info.values,
        "bytes": info.nbytes,
        "disk_bytes": info.disk_bytes,
    }
    return {
        "path": info.path,
        "root": _node_json(info.root),
        "totals": totals,
        "problems": list(info.problems),
    }
