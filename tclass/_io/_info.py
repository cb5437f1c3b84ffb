"""What a saved folder holds, read from its ``meta.json`` files alone (``python -m tclass info``).

No class is resolved or imported and no data file is mapped or read: a folder whose
tensorclass is not defined in this process (``mypkg.Step``) is described by the name it
was saved under. Leaf files are only ``lstat``-ed, for their logical size and the space
they take on disk (``st_blocks``: a sparse ``memmap_like`` file takes almost none).

Folders are walked the reader's way (``_read``): each one opened relative to its parent
with ``O_NOFOLLOW``, so a symlink is an error, never followed; keys decoded and entries
classified by the peer's rules (a dict entry with ``"type"`` is a sub-folder, one with
``dtype`` and ``shape`` a leaf, anything else skipped). A malformed ``meta.json`` raises
the reader's ``TclassError``; what ``load_memmap`` would refuse about a leaf (missing file,
wrong size, unreadable dtype) is reported as a problem next to it, so the rest of the tree
still shows.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field
from typing import Any

from tclass._io._classes import saved_class_name
from tclass._io._format import DTYPES, META, TENSORCLASS_DIR, file_name
from tclass._io._read import Folder, node_entries, read_header, read_meta
from tclass._io._read import _builtin_kind, _dir_name, _marker, _member_count, _nested_shape, _open_folder
from tclass._io._read import _open_root, _plain_name, _sizes
from tclass.errors import MetadataError, MissingFileError, UnsafePathError

__all__ = ["Info", "Node", "describe", "human_size", "info_json", "info_text"]

PREVIEW_CHARS = 40  # non-tensor values are shortened to this many characters
_RECORD_FIELDS = ("_type", "_class", "_format_version")


@dataclass
class Node:
    """One node of the description: a tensor leaf, a collection or a non-tensor value.

    ``kind`` is ``tensor``, ``tensordict``, ``tensorclass``, ``lazy_stack``, ``value``
    (NonTensorData), ``values`` (NonTensorStack) or ``unsupported`` (a peer view node).
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


@dataclass
class Info:
    """A saved folder's description: its tree, totals over the tensor leaves, problems."""

    path: str
    root: Node
    leaves: int = 0
    values: int = 0
    nbytes: int = 0
    disk_bytes: int = 0  # hard-linked files counted once
    problems: list[str] = field(default_factory=list)
    _inodes: set[tuple[int, int]] = field(default_factory=set, repr=False)


def describe(prefix: str | os.PathLike[str]) -> Info:
    """The description of the folder saved at ``prefix``.

    Raises:
        TclassError: the folder is missing, is a file, holds a symlink, or one of its
            ``meta.json`` files is missing or malformed.
        OSError: a file cannot be read (permissions).
    """
    root = os.path.abspath(os.fspath(prefix))
    folder = _open_root(root)
    try:
        if _lstat(folder, META) is None:  # say "not a saved folder", not "damaged"
            msg = f"{root!r} holds no {META}: it is not a folder written by memmap/save"
            raise MissingFileError(msg)
        info = Info(root, Node("tensordict", "."))
        info.root = _node(folder, ".", info, None)
    finally:
        os.close(folder.fd)
    return info


# --- nodes -------------------------------------------------------------------------------


def _node(folder: Folder, rel: str, info: Info, parent_batch: list[int] | None) -> Node:
    meta, name = read_header(folder)
    kind = _builtin_kind(name)
    if kind == "TensorDict":
        return _tensordict(folder, meta, Node("tensordict", rel, class_name=name), info)
    if kind == "LazyStackedTensorDict":
        return _lazy(folder, meta, Node("lazy_stack", rel, class_name=name), info)
    if kind == "NonTensorData":
        return _value(folder, meta, Node("value", rel, class_name=name), info)
    if kind == "NonTensorStack":
        return _values(folder, meta, Node("values", rel, class_name=name), info, parent_batch)
    if name.split(".", 1)[0] == "tensordict":  # a view (_SubTensorDict...): the reader refuses it
        node = Node("unsupported", rel, class_name=name)
        message = f"{folder.path!r} holds a {name}, a node kind tclass does not read"
        _problem(node, info, "a view node tclass does not read", message)
        return node
    return _record(folder, meta, Node("tensorclass", rel, class_name=name), info)


def _tensordict(folder: Folder, meta: dict[str, Any], node: Node, info: Info) -> Node:
    where = folder.child_path(META)
    batch = _sizes(meta.get("shape"), where, "shape")
    node.batch_size = batch
    for stored, key, entry in node_entries(meta, where):
        if "type" in entry:
            child = _sub_node(folder, stored, key, node.path, info, batch)
        elif "dtype" in entry and "shape" in entry:
            child = _leaf(folder, stored, key, entry, batch, node.path, info)
        else:
            continue  # the peer skips such an entry, and so does the reader
        child.key = key
        node.children.append(child)
    return node


def _sub_node(folder: Folder, stored: str, key: str, rel_dir: str, info: Info, batch: list[int]) -> Node:
    name = _dir_name(folder, stored, key)  # the encoded name, or a legacy raw one
    child_folder = _open_folder(folder, name, f"the entry {key!r}")
    try:
        child = _node(child_folder, _join(rel_dir, name), info, batch)
    finally:
        os.close(child_folder.fd)
    inner = child.batch_size
    if inner is not None and inner[: len(batch)] != batch:
        message = f"{child_folder.path!r} has batch size {inner}, which does not start with its parent's {batch}"
        _problem(child, info, f"batch {inner} does not start with {batch}", message)
    return child


def _record(folder: Folder, meta: dict[str, Any], node: Node, info: Info) -> Node:
    """A tensorclass: its fields are in ``_tensordict/`` (a TensorDict or a lazy stack)."""
    short = (node.class_name or "").rpartition(".")[2]
    content_folder = _open_folder(folder, TENSORCLASS_DIR, f"the fields of a {short}")
    content_rel = _join(node.path, TENSORCLASS_DIR)
    try:
        content_meta = read_meta(content_folder)
        if _builtin_kind(saved_class_name(content_meta)) == "LazyStackedTensorDict":
            content = _lazy(content_folder, content_meta, Node("lazy_stack", content_rel), info)
        else:
            content = _tensordict(content_folder, content_meta, Node("tensordict", content_rel), info)
    finally:
        os.close(content_folder.fd)
    node.batch_size, node.children = content.batch_size, content.children
    node.stack_dim, node.members = content.stack_dim, content.members
    # Older writers keep value fields in the record's own meta.json (the reader adds them).
    for key, value in meta.items():
        if key not in _RECORD_FIELDS:
            info.values += 1
            node.children.append(Node("value", node.path, key=key, preview=preview(value)))
    return node


def _lazy(folder: Folder, meta: dict[str, Any], node: Node, info: Info) -> Node:
    where = folder.child_path(META)
    stack_dim = meta.get("stack_dim")
    if type(stack_dim) is not int:
        raise MetadataError(f"{where!r}: stack_dim must be an int, got {stack_dim!r}")
    count = _member_count(folder, _marker(meta, where).get("members"), where)
    node.stack_dim, node.members = stack_dim, count
    for index in range(count):
        member_folder = _open_folder(folder, str(index), f"member {index} of the lazy stack")
        try:
            member = _node(member_folder, _join(node.path, str(index)), info, None)
        finally:
            os.close(member_folder.fd)
        member.index = index
        node.children.append(member)
    node.batch_size = _stacked_batch([member.batch_size for member in node.children], stack_dim)
    return node


def _stacked_batch(batches: list[list[int] | None], stack_dim: int) -> list[int] | None:
    """The lazy stack's batch size: the members' (all equal) with the count inserted."""
    first = batches[0]
    if first is None or any(batch != first for batch in batches):
        return None  # damaged: the reader refuses members of different batch sizes
    dim = stack_dim + len(first) + 1 if stack_dim < 0 else stack_dim
    if not 0 <= dim <= len(first):
        return None
    return [*first[:dim], len(batches), *first[dim:]]


def _value(folder: Folder, meta: dict[str, Any], node: Node, info: Info) -> Node:
    info.values += 1
    if "data" in meta:
        node.preview = preview(meta["data"])
    else:
        node.preview = _pickled(folder, "other.pickle", node, info)
    return node


def _values(folder: Folder, meta: dict[str, Any], node: Node, info: Info, parent_batch: list[int] | None) -> Node:
    info.values += 1
    where = folder.child_path(META)
    data = meta.get("data")
    if data == "pickle.pkl":
        node.preview = _pickled(folder, "pickle.pkl", node, info)
    elif isinstance(data, list):
        node.preview = preview(data)
    else:
        raise MetadataError(f"{where!r}: NonTensorStack data must be a list or 'pickle.pkl', got {data!r:.80}")
    recorded = _marker(meta, where).get("batch_size")
    if recorded is not None:
        node.batch_size = _sizes(recorded, where, "batch_size")
    elif isinstance(data, list):
        node.batch_size = _nested_shape(data, len(parent_batch) if parent_batch is not None else None)
    return node


def _pickled(folder: Folder, name: str, node: Node, info: Info) -> str:
    """A stand-in for a pickled value, which is never unpickled here."""
    status = _lstat(folder, name)
    if status is None:
        message = f"{folder.child_path(name)!r} is missing: the value has no JSON data and no pickle"
        _problem(node, info, f"{name} missing", message)
        return "<no data>"
    return f"<pickled, {human_size(status.st_size)}>"


# --- leaves ------------------------------------------------------------------------------


def _leaf(
    folder: Folder, stored: str, key: str, entry: dict[str, Any], batch: list[int], rel_dir: str, info: Info
) -> Node:
    where = folder.child_path(META)
    shape = _sizes(entry.get("shape"), where, f"the shape of {key!r}")
    dtype_text = entry.get("dtype")
    dtype_label = str(dtype_text).removeprefix("torch.")
    node = Node("tensor", _join(rel_dir, file_name(stored) + ".memmap"), dtype=dtype_label, shape=shape)
    info.leaves += 1
    dtype = DTYPES.get(dtype_text) if isinstance(dtype_text, str) else None
    if dtype is not None:
        node.nbytes = math.prod(shape) * dtype.itemsize
        info.nbytes += node.nbytes
    if dtype is None:
        message = f"{where!r}: entry {key!r} has dtype {dtype_text!r}, which tclass does not read"
        _problem(node, info, "dtype not readable", message)
    elif entry.get("is_nested", False) is not False:
        message = f"{where!r}: entry {key!r} is a nested tensor, which tclass does not read"
        _problem(node, info, "nested tensor, not readable", message)
    elif shape[: len(batch)] != batch:
        message = f"{where!r}: entry {key!r} has shape {shape}, which does not start with the batch size {batch}"
        _problem(node, info, f"shape does not start with batch {batch}", message)
    if 0 not in shape:  # an empty leaf has no file
        _leaf_file(folder, stored, rel_dir, node, info)
    return node


def _leaf_file(folder: Folder, stored: str, rel_dir: str, node: Node, info: Info) -> None:
    name = file_name(stored) + ".memmap"
    status = _lstat(folder, name)
    legacy = stored + ".memmap"  # the raw name of folders written with robust_key=False
    if status is None and legacy != name and _plain_name(stored):
        status = _lstat(folder, legacy)
        if status is not None:
            name, node.path = legacy, _join(rel_dir, legacy)
    path = folder.child_path(name)
    if status is None:
        _problem(node, info, "file missing", f"{path!r} is missing; the folder is incomplete or damaged")
        return
    if not stat.S_ISREG(status.st_mode):
        _problem(node, info, "not a regular file", f"{path!r} is not a regular file")
        return
    node.file_bytes, node.disk_bytes = status.st_size, status.st_blocks * 512
    if (status.st_dev, status.st_ino) not in info._inodes:
        info._inodes.add((status.st_dev, status.st_ino))
        info.disk_bytes += node.disk_bytes
    if node.problem is None and status.st_size < node.nbytes:  # longer: padded, loads (prefix)
        message = f"{path!r} holds {status.st_size} bytes, but its dtype and shape need {node.nbytes}"
        _problem(node, info, f"file holds {status.st_size} B", message)


def _lstat(folder: Folder, name: str) -> os.stat_result | None:
    """The file's own status (a link is not followed but refused), None if it is missing."""
    try:
        status = os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(status.st_mode):
        path = folder.child_path(name)
        raise UnsafePathError(f"{path!r} is a symlink; a saved folder holds no links (they may lead outside it)")
    return status


def _problem(node: Node, info: Info, short: str, message: str) -> None:
    node.problem = node.problem or short
    info.problems.append(message)


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
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "\N{HORIZONTAL ELLIPSIS}"


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
    if _builtin_kind(name) is not None:
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
    notes = ["tensorclass"] if node.kind == "tensorclass" else []
    if node.members is not None:
        notes.append(f"lazy stack of {node.members} along dim {node.stack_dim}")
    text = f"{_class_label(node)}  batch {_dims(node.batch_size)}"
    return text + (f"  ({', '.join(notes)})" if notes else "")


def _leaf_columns(node: Node) -> tuple[str, str, str, str]:
    if node.file_bytes is None and node.problem is None:
        disk = "(no file)"
    else:
        disk = f"(disk {human_size(node.disk_bytes)})" if node.file_bytes is not None else "(disk -)"
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
        if node.kind != "value":
            out["batch_size"] = node.batch_size
        if node.preview is not None:
            out["preview"] = node.preview
        if node.members is not None:
            out.update(stack_dim=node.stack_dim, members=node.members)
    if node.problem is not None:
        out["problem"] = node.problem
    if node.kind not in ("tensor", "value", "values", "unsupported"):
        out["children"] = [_node_json(child) for child in node.children]
    return out


def info_json(info: Info) -> dict[str, Any]:
    """The description as JSON-ready data (what ``info --json`` prints)."""
    totals = {"leaves": info.leaves, "values": info.values, "bytes": info.nbytes, "disk_bytes": info.disk_bytes}
    return {"path": info.path, "root": _node_json(info.root), "totals": totals, "problems": list(info.problems)}
