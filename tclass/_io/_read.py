"""Reading a saved folder back: validated, read-only, never following a link.

Every file is opened relative to its parent folder's descriptor with ``O_NOFOLLOW``, so
a symlink anywhere below the folder is refused instead of followed, and a folder swapped
by a concurrent save is read whole, old or new, never mixed. Each ``meta.json`` is
checked field by field; each leaf file must hold exactly ``dtype x shape`` bytes; a leaf
shape must start with its node's batch size. A failed check raises a ``TclassError``
naming the file. Nothing is created, grown, truncated or written.
"""

from __future__ import annotations

import errno
import json
import os
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
import torch
from typing_extensions import TypeGuard

from tclass._io._classes import resolve_class, saved_class_name
from tclass._io._format import DTYPES, FORMAT_VERSION, META, NODE_FIELDS, TCLASS_FIELD, TENSORCLASS_DIR
from tclass._io._format import file_name, unescape_key
from tclass._io._values import check_pickle_allowed, json_types_value
from tclass._lazy import LazyStackedTensorDict
from tclass._memmap import MemoryMappedTensor, Mode, check_file_size, map_opened_file
from tclass._nontensor import NonTensorData, NonTensorStack
from tclass._td import TensorDict
from tclass.errors import (
    FilePermissionError,
    MetadataError,
    MissingFileError,
    NotAFileError,
    TclassError,
    UnsafePathError,
    UnsupportedError,
)

__all__ = ["Folder", "Source", "fill_array", "load_tree", "node_entries", "read_header", "read_meta", "source_of"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
_FILE_FLAGS = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
_BUILTIN = {"TensorDict", "LazyStackedTensorDict", "NonTensorData", "NonTensorStack"}
_RETRIES = 5  # loads restarted when a concurrent save swapped the folder mid-read
_MODES = (None, "r", "r+")
# Errors of an O_RDWR open that a read-only open may not get: fall back to a private map.
_READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ETXTBSY})
_SWAP_WAITS = 50  # 20 ms waits for a folder a save has moved aside (no atomic exchange)


@dataclass
class Folder:
    """An open folder of the tree: its descriptor and its path (for messages)."""

    fd: int
    path: str

    def child_path(self, name: str) -> str:
        return f"{self.path}/{name}"  # path is absolute and normalised; names have no "/"


@dataclass(frozen=True)
class Source:
    """Where a loaded node came from: its folder and the ``mode`` it was loaded with
    (None: each file shared if writable). Code that writes a loaded node's Python values
    back to its files must write nothing when ``mode == "r"``."""

    path: str
    mode: Mode | None


# Every node load_tree builds (records, TensorDicts, lazy stacks, value nodes), by id and
# weakly (collections compare element-wise, so they cannot be dictionary keys).
_SOURCES: dict[int, tuple[weakref.ref[Any], Source]] = {}


def _remember(node: Any, path: str, options: _Options) -> None:
    key = id(node)
    try:
        ref = weakref.ref(node, lambda dead: _forget(key, dead))
    except TypeError:  # a plain Python value (a NonTensorData field unwrapped)
        return
    _SOURCES[key] = (ref, Source(path, options.mode))


def _forget(key: int, ref: weakref.ref[Any]) -> None:
    entry = _SOURCES.get(key)
    if entry is not None and entry[0] is ref:
        del _SOURCES[key]


def source_of(node: Any) -> Source | None:
    """The folder and load mode of a node built by :func:`load_tree` (None for other
    objects, and for nodes made later from it by indexing, ``clone``...)."""
    entry = _SOURCES.get(id(node))
    return entry[1] if entry is not None and entry[0]() is node else None


@dataclass
class _Options:
    device: torch.device | None
    allow_pickle: bool
    mode: Mode | None
    shapes_only: bool = False  # device="meta": no file is mapped
    fake: bool = False  # under FakeTensorMode: leaves are fake tensors
    open_flags: int = os.O_RDWR | _FILE_FLAGS  # how a leaf file is opened first


def load_tree(
    prefix: str | os.PathLike[str],
    requested: type | None,
    device: torch.device | None,
    allow_pickle: bool,
    mode: Mode | None = None,
    at: Callable[[Folder], Folder] | None = None,
) -> Any:
    """The collection saved in ``prefix``, its leaves mapped as ``mode`` says (or copied
    to ``device``); with ``at``, the node in the folder ``at(root)`` opens (a new
    descriptor, see ``_subpath.descend``)."""
    if mode not in _MODES:
        raise ValueError(f"mode must be None, 'r' or 'r+', got {mode!r}")
    root = os.path.abspath(os.fspath(prefix))
    shapes_only = device is not None and device.type == "meta"
    flags = (os.O_RDONLY if mode == "r" else os.O_RDWR) | _FILE_FLAGS
    options = _Options(device, allow_pickle, mode, shapes_only, _faking(), flags)
    for attempt in range(_RETRIES):
        folder = _open_root(root)
        node = folder
        try:
            node = at(folder) if at is not None else folder
            loaded = _load_node(node, options, requested, None, None)
            _remember(loaded, node.path, options)
            return loaded
        except TclassError:
            if attempt + 1 == _RETRIES or not _replaced(folder):
                raise
        finally:
            if node is not folder:
                os.close(node.fd)
            os.close(folder.fd)
    raise AssertionError("unreachable")


def _open_root(root: str) -> Folder:
    for attempt in range(_SWAP_WAITS + 1):
        try:
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the root may be a link
            break
        except FileNotFoundError:
            old = _swapped_out(root)
            if old is None or attempt == _SWAP_WAITS:
                msg = f"no saved folder at {root!r}; check the path"
                if old is not None:
                    msg += f". A save was interrupted while replacing it: the previous data is in {old!r}"
                raise MissingFileError(msg) from None
            time.sleep(0.02)  # a save without atomic exchange is between its two renames
        except NotADirectoryError:
            msg = f"{root!r} is a file; load_memmap reads a folder written by memmap/save"
            raise NotAFileError(msg) from None
    return Folder(fd, root)


def _swapped_out(root: str) -> str | None:
    """The old tree a save moved aside (systems without atomic exchange), if any."""
    parent, name = os.path.split(root)
    prefix = f".{name}.tclass-staging-"
    try:
        found = [entry for entry in os.listdir(parent) if entry.startswith(prefix) and entry.endswith("-old")]
    except OSError:
        return None
    return os.path.join(parent, found[0]) if found else None


def _replaced(folder: Folder) -> bool:
    """Whether the path now names another folder than the one we read (a re-save)."""
    try:
        return os.stat(folder.path).st_ino != os.fstat(folder.fd).st_ino
    except OSError:
        return True


# --- files and folders -------------------------------------------------------------------


def read_meta(folder: Folder) -> dict[str, Any]:
    """The folder's meta.json as a dict, or an error naming the file."""
    path = folder.child_path(META)
    fd = _open_at(folder, META, os.O_RDONLY, "its metadata")
    try:
        with os.fdopen(fd, "rb", closefd=False) as stream:
            raw = stream.read()
    finally:
        os.close(fd)
    try:
        meta = json.loads(raw)
    except ValueError as error:
        msg = f"{path!r} is not valid JSON ({error}); the folder is damaged or not a saved tree"
        raise MetadataError(msg) from None
    if not isinstance(meta, dict):
        msg = f"{path!r} holds a JSON {type(meta).__name__}, not an object; the folder is damaged"
        raise MetadataError(msg)
    return meta


def read_header(folder: Folder) -> tuple[dict[str, Any], str]:
    """The folder's meta.json and the ``module.QualName`` of the class it saves, after
    checking the format version."""
    meta = read_meta(folder)
    where = folder.child_path(META)
    version = meta.get("_format_version", 0)
    # A dict here is a key named "_format_version" in a version-0 file (the peer's rule).
    if not isinstance(version, dict) and (type(version) is not int or version < 0):
        raise MetadataError(f"{where!r}: _format_version must be a non-negative int, got {version!r}")
    if type(version) is int and version > FORMAT_VERSION:
        msg = f"{where!r} was written in format version {version}; this tclass reads up to {FORMAT_VERSION}. Upgrade tclass"
        raise MetadataError(msg)
    name = saved_class_name(meta)
    if name is None:
        msg = f"{where!r} names no class (_type / _class missing or malformed); the folder is damaged"
        raise MetadataError(msg)
    return meta, name


def _open_at(folder: Folder, name: str, flags: int, what: str) -> int:
    path = folder.child_path(name)
    try:
        return os.open(name, flags | _FILE_FLAGS, dir_fd=folder.fd)
    except OSError as error:
        if error.errno == errno.ELOOP or (error.errno == errno.ENOTDIR and flags & os.O_DIRECTORY):
            if os.path.islink(path):
                msg = f"{path!r} is a symlink; a saved folder holds no links (they may lead outside it)"
                raise UnsafePathError(msg) from None
        if error.errno == errno.ENOENT:
            msg = f"{path!r} is missing ({what}); the folder is incomplete or damaged"
            raise MissingFileError(msg) from None
        if error.errno == errno.ENOTDIR:
            msg = f"{path!r} should be a folder ({what}) but is a file"
            raise MetadataError(msg) from None
        raise


def _open_folder(parent: Folder, name: str, what: str) -> Folder:
    return Folder(_open_at(parent, name, _DIR_FLAGS, what), parent.child_path(name))


def _exists(folder: Folder, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


# --- nodes -------------------------------------------------------------------------------


def _load_node(
    folder: Folder, options: _Options, requested: type | None, expected: type | None, parent_batch: torch.Size | None
) -> Any:
    meta, name = read_header(folder)
    where = folder.child_path(META)
    kind = _builtin_kind(name)
    if kind is not None:
        return _load_builtin(kind, folder, meta, options, parent_batch)
    if name.split(".", 1)[0] == "tensordict":
        msg = (
            f"{where!r} holds a {name}, a node kind tclass does not read (a view of another "
            "TensorDict); re-save it from tensordict after .contiguous() or .clone()"
        )
        raise UnsupportedError(msg)
    cls = resolve_class(name, _tensorclass_or_none(requested), expected, folder.path)
    return _load_record(cls, folder, meta, options)


def _load_builtin(kind: str, folder: Folder, meta: dict[str, Any], options: _Options, parent_batch: torch.Size | None) -> Any:
    if kind == "TensorDict":
        return _load_td(folder, meta, options, None)
    if kind == "LazyStackedTensorDict":
        return _load_lazy(folder, meta, options, None)
    if kind == "NonTensorData":
        return _load_value(folder, meta, options, parent_batch)
    return _load_values(folder, meta, options, parent_batch)


def _builtin_kind(name: str | None) -> str | None:
    """"TensorDict", "LazyStackedTensorDict", ... for the built-in node kinds of either
    library (saved as ``tensordict.*`` or ``tclass.*``); None for anything else."""
    if name is None:
        return None
    package = name.split(".", 1)[0]
    short = name.rpartition(".")[2]
    return short if package in ("tensordict", "tclass") and short in _BUILTIN else None


def _tensorclass_or_none(cls: type | None) -> type | None:
    return cls if cls is not None and hasattr(cls, "__tclass_info__") else None


def _load_td(folder: Folder, meta: dict[str, Any], options: _Options, record_cls: type | None) -> TensorDict:
    where = folder.child_path(META)
    batch = torch.Size(_sizes(meta.get("shape"), where, "shape"))
    device = meta.get("device")
    if device is not None and not isinstance(device, str):
        raise MetadataError(f"{where!r}: device must be a string or null, got {device!r}")
    entries: dict[str, Any] = {}
    for stored, key, entry in node_entries(meta, where):
        if "type" in entry:
            hint = _field_class(record_cls, key)
            child = _open_folder(folder, _dir_name(folder, stored, key), f"the entry {key!r}")
            try:
                value = _load_node(child, options, None, hint, batch)
                _remember(value, child.path, options)
            finally:
                os.close(child.fd)
            _check_nested_batch(value, batch, child.path)
        else:
            value = _load_leaf(folder, stored, key, entry, batch, options)
        entries[key] = value
    return TensorDict._new_unchecked(entries, batch, options.device or torch.device("cpu"))


def node_entries(meta: dict[str, Any], where: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """A TensorDict node's entries as (stored name, key, entry): every dict in its
    meta.json but tclass's marker, keys unescaped; anything else must be a node field."""
    escaped = _marker(meta, where).get("escaped_keys") is True
    for stored, entry in meta.items():
        if not isinstance(entry, dict):
            if stored not in NODE_FIELDS:
                raise MetadataError(f"{where!r}: unexpected entry {stored!r}: {entry!r:.80}")
            continue
        if stored != TCLASS_FIELD:
            yield stored, (unescape_key(stored) if escaped else stored), entry


def _load_leaf(folder: Folder, stored: str, key: str, entry: dict[str, Any], batch: torch.Size, options: _Options) -> torch.Tensor:
    # The checks are inline and their messages built only on failure: this runs per leaf.
    dtype_text = entry.get("dtype")
    dtype = DTYPES.get(dtype_text) if dtype_text.__class__ is str else None
    shape = entry.get("shape")
    if dtype is None or not _is_sizes(shape) or shape[: len(batch)] != list(batch) or entry.get("is_nested", False):
        _raise_bad_leaf(folder, key, entry, batch)
    if 0 in shape:  # an empty leaf has no file
        return _empty(shape, dtype, options)
    return _map_leaf(folder, stored, key, dtype, shape, options)


def _raise_bad_leaf(folder: Folder, key: str, entry: dict[str, Any], batch: torch.Size) -> NoReturn:
    where = folder.child_path(META)
    dtype_text = entry.get("dtype")
    if not isinstance(dtype_text, str) or dtype_text not in DTYPES:
        msg = f"{where!r}: entry {key!r} has dtype {dtype_text!r}, which is not one tclass reads ({', '.join(sorted(DTYPES))})"
        raise MetadataError(msg)
    shape = _sizes(entry.get("shape"), where, f"the shape of {key!r}")
    if entry.get("is_nested", False) is not False:
        raise UnsupportedError(f"{where!r}: entry {key!r} is a nested tensor, which tclass does not read")
    msg = f"{where!r}: entry {key!r} has shape {shape}, which does not start with the node's batch size {list(batch)}"
    raise MetadataError(msg)


def _open_leaf(folder: Folder, stored: str, key: str, flags: int) -> tuple[int, str]:
    """The opened leaf file of ``key`` and its name (the peer's encoded name, or the raw
    key of folders written with its ``robust_key=False``)."""
    name = file_name(stored) + ".memmap"
    try:
        return _open_at(folder, name, flags, f"the entry {key!r}"), name
    except MissingFileError:
        legacy = stored + ".memmap"
        if legacy != name and _plain_name(stored) and _exists(folder, legacy):
            return _open_at(folder, legacy, flags, f"the entry {key!r}"), legacy
        if _path_like(key):
            msg = f"{folder.child_path(name)!r} is missing, and the key {key!r} is a path; the folder is damaged or crafted"
            raise UnsafePathError(msg) from None
        raise


def _dir_name(folder: Folder, stored: str, key: str) -> str:
    name = file_name(stored)
    if not _exists(folder, name) and _plain_name(stored) and stored and _exists(folder, stored):
        return stored  # legacy raw name
    if not _exists(folder, name) and _path_like(key):
        msg = f"{folder.child_path(name)!r} is missing, and the key {key!r} is a path; the folder is damaged or crafted"
        raise UnsafePathError(msg)
    return name


def _path_like(key: str) -> bool:
    """A key that reads as a path leaving its folder (``..``, absolute): what a crafted
    meta.json would hold. (Keys with ``/`` inside are fine: ``a/b`` is ``a%2Fb``.)"""
    parts = key.replace("\\", "/").split("/")
    return key.startswith(("/", "\\")) or ".." in parts or "\x00" in key or key in ("", ".")


def _plain_name(key: str) -> bool:
    return key not in ("", ".", "..") and "/" not in key and "\\" not in key and "\x00" not in key


_SIZE_HINT = "The file does not match its meta.json: the folder is damaged or was changed after saving"


def _map_leaf(folder: Folder, stored: str, key: str, dtype: torch.dtype, shape: list[int], options: _Options) -> torch.Tensor:
    if options.shapes_only or options.fake:  # check the file, read none of it
        fd, name = _open_leaf(folder, stored, key, os.O_RDONLY)
        try:
            check_file_size(fd, folder.child_path(name), dtype, shape, _SIZE_HINT)
        finally:
            os.close(fd)
        return torch.empty(shape, dtype=dtype, device="meta" if options.shapes_only else None)
    name = file_name(stored) + ".memmap"
    mode: Mode = options.mode or "r+"
    try:  # the common case inline: this runs per leaf
        fd = os.open(name, options.open_flags, dir_fd=folder.fd)
    except OSError:
        fd, name, mode = _open_leaf_as(folder, stored, key, options.mode)
    try:
        tensor: torch.Tensor = map_opened_file(fd, f"{folder.path}/{name}", dtype, shape, mode, _SIZE_HINT)
    finally:
        os.close(fd)
    if options.device is not None and options.device.type != "cpu":
        tensor = tensor.to(options.device, non_blocking=True)
    return tensor


def _open_leaf_as(folder: Folder, stored: str, key: str, mode: Mode | None) -> tuple[int, str, Mode]:
    """The leaf file opened for ``mode`` when the first try failed: a legacy file name,
    or a file this process may not write (mapped copy-on-write unless ``mode="r+"``)."""
    try:
        fd, name = _open_leaf(folder, stored, key, os.O_RDONLY if mode == "r" else os.O_RDWR)
        return fd, name, mode or "r+"
    except OSError as error:
        if mode == "r" or error.errno not in _READ_ONLY_ERRNOS:
            raise
        if mode == "r+":
            path = folder.child_path(file_name(stored) + ".memmap")
            msg = (
                f"{path!r} cannot be opened for writing ({os.strerror(error.errno)}), and "
                "mode='r+' maps every file shared, writes reaching the file. Load with "
                "mode='r' (copy-on-write: writes stay in memory) or mode=None (each file "
                "shared if writable)"
            )
            failure = FilePermissionError(msg)
            failure.errno = error.errno
            raise failure from None
    fd, name = _open_leaf(folder, stored, key, os.O_RDONLY)
    return fd, name, "r"


def _faking() -> bool:
    """Whether a FakeTensorMode is active (tracing): leaves are then fake, not mapped."""
    if not torch._C._len_torch_dispatch_stack():  # no mode at all: the usual case, cheaply
        return False
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    return any(isinstance(mode, FakeTensorMode) for mode in _get_current_dispatch_mode_stack())


def _empty(shape: list[int], dtype: torch.dtype, options: _Options) -> torch.Tensor:
    device = options.device
    if (device is not None and device.type != "cpu") or options.fake:
        return torch.empty(shape, dtype=dtype, device=device)
    return MemoryMappedTensor.empty(shape, dtype=dtype)


def _load_record(cls: type, folder: Folder, meta: dict[str, Any], options: _Options) -> Any:
    where = folder.child_path(META)
    extra = {key: value for key, value in meta.items() if key not in ("_type", "_class", "_format_version")}
    extra.update(_pickled_fields(folder, options, "other.pickle"))
    content_dir = _open_folder(folder, TENSORCLASS_DIR, f"the fields of a {cls.__name__}")
    try:
        content_meta = read_meta(content_dir)
        if _builtin_kind(saved_class_name(content_meta)) == "LazyStackedTensorDict":
            content: Any = _load_lazy(content_dir, content_meta, options, cls)
        else:
            content = _load_td(content_dir, content_meta, options, cls)
    finally:
        os.close(content_dir.fd)
    if extra:  # fields stored in the record's own meta.json by older writers
        for key, value in extra.items():
            if isinstance(content, LazyStackedTensorDict):
                raise MetadataError(f"{where!r}: value fields next to a lazy stack are not supported")
            content._tensors[key] = NonTensorData._make(value, content.batch_size, content.device)
    try:
        return cls.from_tensordict(content)  # type: ignore[attr-defined]
    except TclassError as error:
        msg = f"{folder.path!r} does not hold a valid {cls.__name__}: {error}"
        raise MetadataError(msg) from error


def _field_class(record_cls: type | None, key: str) -> type | None:
    """The tensorclass the field ``key`` of ``record_cls`` converts to, if any."""
    if record_cls is None:
        return None
    rule = record_cls.__tclass_info__.rules.get(key)  # type: ignore[attr-defined]
    target = getattr(rule, "convert_to", None)
    return target if target is not None and hasattr(target, "__tclass_info__") else None


def _load_lazy(folder: Folder, meta: dict[str, Any], options: _Options, record_cls: type | None) -> LazyStackedTensorDict:
    where = folder.child_path(META)
    stack_dim = meta.get("stack_dim")
    if type(stack_dim) is not int:
        raise MetadataError(f"{where!r}: stack_dim must be an int, got {stack_dim!r}")
    count = _member_count(folder, _marker(meta, where).get("members"), where)
    members = []
    for index in range(count):
        child = _open_folder(folder, str(index), f"member {index} of the lazy stack")
        try:
            child_meta = read_meta(child)
            members.append(_load_td(child, child_meta, options, record_cls) if _is_plain_td(child_meta) else _load_node(child, options, None, None, None))
            _remember(members[-1], child.path, options)
        finally:
            os.close(child.fd)
    try:
        return LazyStackedTensorDict(*members, stack_dim=stack_dim)
    except TclassError as error:
        raise MetadataError(f"{folder.path!r}: the members do not form a lazy stack ({error})") from error


def _is_plain_td(meta: dict[str, Any]) -> bool:
    return _builtin_kind(saved_class_name(meta)) == "TensorDict"


def _member_count(folder: Folder, recorded: object, where: str) -> int:
    numbers = sorted(int(name) for name in os.listdir(folder.fd) if name.isdigit() and str(int(name)) == name)
    if recorded is not None:
        if type(recorded) is not int or recorded < 1:
            raise MetadataError(f"{where!r}: the member count must be a positive int, got {recorded!r}")
        extra = [n for n in numbers if n >= recorded]
        if extra:
            msg = f"{folder.path!r} holds member folder {extra[0]}/, but its meta.json records {recorded} members; the folder is damaged"
            raise MetadataError(msg)
        return recorded
    count = 0
    while count in numbers:
        count += 1
    if count == 0 or count != len(numbers):
        msg = f"{folder.child_path(str(count))!r} is missing: the lazy stack's members must be 0/, 1/, ... with no gap"
        raise MissingFileError(msg)
    return count


def _load_value(folder: Folder, meta: dict[str, Any], options: _Options, batch: torch.Size | None) -> NonTensorData:
    if "data" in meta:
        value = meta["data"]  # JSON wins: a planted other.pickle is never read
    else:
        fields = _pickled_fields(folder, options, "other.pickle")
        if "data" not in fields:
            raise MetadataError(f"{folder.child_path(META)!r}: a NonTensorData node with no data")
        value = fields["data"]
    return NonTensorData._make(value, batch if batch is not None else torch.Size([]), options.device or torch.device("cpu"))


def _load_values(folder: Folder, meta: dict[str, Any], options: _Options, parent_batch: torch.Size | None) -> NonTensorStack:
    where = folder.child_path(META)
    data = meta.get("data")
    if data == "pickle.pkl":
        data = _unpickle(folder, "pickle.pkl", options)
    if not isinstance(data, list):
        raise MetadataError(f"{where!r}: NonTensorStack data must be a list or 'pickle.pkl', got {data!r:.80}")
    recorded = _marker(meta, where).get("batch_size")
    if recorded is not None:
        shape = _sizes(recorded, where, "batch_size")
    else:
        shape = _nested_shape(data, len(parent_batch) if parent_batch is not None else None)
    array = np.empty(shape, dtype=object)
    fill_array(array, data, shape, where)
    return NonTensorStack._from_array(array, options.device or torch.device("cpu"))


def _nested_shape(data: list[Any], dims: int | None) -> list[int]:
    shape: list[int] = []
    level: Any = data
    while isinstance(level, list) and (dims is None or len(shape) < dims):
        shape.append(len(level))
        if not level or (dims is None and not all(isinstance(i, list) and len(i) == len(level[0]) for i in level)):
            break
        level = level[0]
    return shape


def fill_array(array: np.ndarray[Any, Any], data: Any, shape: list[int], where: str) -> None:
    flat = array.reshape(-1)
    items = [data]
    for size in shape:
        nxt = []
        for item in items:
            if not isinstance(item, list) or len(item) != size:
                raise MetadataError(f"{where!r}: the NonTensorStack data does not have the shape {shape}")
            nxt.extend(item)
        items = nxt
    for position, item in enumerate(items):
        flat[position] = item


def _pickled_fields(folder: Folder, options: _Options, name: str) -> dict[str, Any]:
    if not _exists(folder, name):
        return {}
    sidecar = "json_types.json"
    if _exists(folder, sidecar):
        types = json_types_value(_read_bytes(folder, sidecar), _read_bytes(folder, name), folder.child_path(name))
        if types is not None:
            return types
    fields = _unpickle(folder, name, options)
    if not isinstance(fields, dict):
        raise MetadataError(f"{folder.child_path(name)!r} does not hold a dict of fields")
    return fields


def _unpickle(folder: Folder, name: str, options: _Options) -> Any:
    """The one place a load can run code: only with ``allow_pickle=True`` (the caller's
    explicit trust), only the format's fixed file names, and never when the node's JSON
    already holds the value."""
    check_pickle_allowed(folder.child_path(name), options.allow_pickle)  # raises unless allowed
    import pickle

    return pickle.loads(_read_bytes(folder, name))


def _read_bytes(folder: Folder, name: str) -> bytes:
    fd = _open_at(folder, name, os.O_RDONLY, "a value file")
    try:
        with os.fdopen(fd, "rb", closefd=False) as stream:
            return stream.read()
    finally:
        os.close(fd)


# --- field checks ------------------------------------------------------------------------


def _is_sizes(value: object) -> TypeGuard[list[int]]:
    if value.__class__ is not list:
        return False
    for size in value:  # a loop: cheaper than all() with a generator, per leaf
        if size.__class__ is not int or size < 0:
            return False
    return True


def _sizes(value: object, where: str, what: str) -> list[int]:
    if not _is_sizes(value):
        msg = f"{where!r}: {what} must be a list of non-negative ints, got {value!r:.80}"
        raise MetadataError(msg)
    return value


def _marker(meta: dict[str, Any], where: str) -> dict[str, Any]:
    marker = meta.get(TCLASS_FIELD, {})
    if not isinstance(marker, dict):
        raise MetadataError(f"{where!r}: {TCLASS_FIELD} must be an object, got {marker!r:.80}")
    return marker


def _check_nested_batch(value: Any, batch: torch.Size, path: str) -> None:
    inner = value.batch_size
    if isinstance(value, NonTensorData):
        return
    if tuple(inner[: len(batch)]) != tuple(batch):
        msg = f"{path!r} has batch size {list(inner)}, which does not start with its parent's {list(batch)}"
        raise MetadataError(msg)
