"""The zarr backend of the Store protocol (``_protocol.py``), over zarr-python 3: the only
module of tclass that imports zarr (on first use, through ``tclass._io._optional``; the
optional extra ``tclass[zarr]``).

The format is the peer's zarr format, so that either library reads the other's stores:
one array per tensor (one uncompressed chunk unless ``chunks=`` / ``compressors=`` say
otherwise), one group per nested collection, a group's batch size in its
``__tensordict__`` attribute (``{"batch_size": [...], "version": 1}``). A Python value
is a 1-D ``uint8`` array holding its JSON text, marked ``__tensordict_non_tensor__:
{"encoding": "json"}``; per-row values are a string array of their shape (all strings)
or one JSON array, marked ``__tensordict_stack__`` with their shape. A value JSON cannot
hold is written pickled (``"encoding": "pickle"``) only with ``allow_pickle=True``, and
read only from a store opened with ``allow_pickle=True``: unpickling can run code.
tclass adds the ``_tclass`` attribute (JSON text: the batch size and a record's schema),
as in its HDF5 files; the peer ignores it.

zarr-python lists a group by reading each member's metadata (slow on many entries):
a group's members are listed once per open store and kept (:class:`ZarrFile`), and
updated by tclass's own writes. A store another process changes while it is open is
not seen until it is opened again. zarr has no file locks: concurrent writers of one
array race, as with memory-mapped folders. An append-only store
(``zarr.storage.ZipStore``, which holds each key once) is written whole by ``to_zarr``
(the tree is built in memory, then each key written once: :func:`write_once`), read, and
not written into afterwards. A store written with consolidated
metadata (the peer's ``to_zarr`` writes it, and so does tclass's) is read through it,
and consolidated again after each change of its tree or of a group's metadata, so that
it stays true.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import warnings
from collections.abc import Hashable
from typing import Any

import numpy as np

from tclass._io._optional import need
from tclass._io.memmap._values import dumps_pickle, is_json_value, require_json
from tclass._io.store._datasets import (
    check_json,
    check_size,
    check_stack,
    open_refused,
    torch_dtype_of,
)
from tclass._io.store._protocol import (
    STACK_DIMS_MARK,
    STACK_MARK,
    Access,
    ArrayBase,
    Backend,
    GroupBase,
    Node,
    Values,
)
from tclass.errors import (
    ArgumentValueError,
    FileFormatError,
    MetadataError,
    MissingDependencyError,
    MissingFileError,
    PickleRefusedError,
    UnsupportedError,
)

__all__ = ["BACKEND", "ZarrArray", "ZarrBackend", "ZarrFile", "ZarrGroup", "need_zarr"]

_VALUE_MARK = "__tensordict_non_tensor__"  # the peer's: an array holding a value's bytes
_PEER_META = "__tensordict__"  # the peer's: a group's batch size
_META = "_tclass"  # tclass's: a group's metadata, JSON text
# how to save a value JSON cannot hold into a store: pickled, when it was opened so
_PICKLE_FIX = (
    "Convert it, store it as a tensor, or open the store with allow_pickle=True "
    "(to_zarr, from_zarr, PersistentTensorDict(...)) to save it with pickle (reading it "
    "will need allow_pickle=True too)"
)
_MODES = {"r": "r", "r+": "r+", "a": "a", "w": "w", "w-": "w-", "x": "w-"}


def need_zarr() -> Any:
    """The zarr module, 3.1.1 or later (imported on first use, not by ``import tclass``),
    or a MissingDependencyError naming the extra that installs it."""
    lib = need("zarr", "zarr", "PersistentTensorDict over zarr")
    major, minor, *_ = (int(part) if part.isdigit() else 0 for part in lib.__version__.split("."))
    if (major, minor) < (3, 1):
        msg = (
            f"PersistentTensorDict over zarr needs zarr>=3.1.1, and zarr {lib.__version__} is "
            "installed: pip install 'tclass[zarr]' (or pip install -U 'zarr>=3.1.1')"
        )
        raise MissingDependencyError(msg)
    return lib


class ZarrFile:
    """An open zarr store (``StoreFile``), and the members of its groups listed so far."""

    __slots__ = ("store", "access", "members", "consolidated", "_open", "_read_only", "_why")
    backend = "zarr"
    format = "zarr store"

    def __init__(self, store: Any, access: Access, read_only: bool, consolidated: bool) -> None:
        self.store = store
        self.access = access
        self.members: dict[str, dict[str, Any]] = {}  # by group path
        self.consolidated = consolidated  # rewrite the consolidated metadata on changes
        self._open = True
        self._read_only = read_only
        self._why = (
            "was opened read-only (mode='r'); open it with mode='r+' (or 'a') to write into it"
        )
        if append_only(store):
            self._read_only = True
            self._why = (
                "is an append-only zarr store (a ZipStore), which holds each key once: "
                "to_zarr(store) writes it whole, nothing can be written into it afterwards; "
                "write into a directory store (to_zarr(path)), then zip it"
            )

    @property
    def filename(self) -> str:
        root = getattr(self.store, "root", None)
        return str(self.store) if root is None else os.fspath(root)

    @property
    def target(self) -> Any:
        root = getattr(self.store, "root", None)  # a local store: its path
        return self.store if root is None else os.fspath(root)

    @property
    def is_open(self) -> bool:
        return self._open

    @property
    def read_only(self) -> bool:
        return self._read_only

    @property
    def why_read_only(self) -> str:
        return self._why

    def close(self) -> None:
        if self._open:
            self._open = False
            self.members.clear()
            self.store.close()

    def flush(self) -> None:
        return None  # zarr writes each chunk and metadata document when it is assigned

    def changed(self) -> None:
        """After a change of the tree: the consolidated metadata, if any, rewritten."""
        if self.consolidated and getattr(self.store, "supports_deletes", True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # consolidated metadata is not in the spec
                need_zarr().consolidate_metadata(self.store)


class ZarrArray(ArrayBase[ZarrFile]):
    """A zarr array (``StoreArray``)."""

    __slots__ = ("_mark", "dtype")

    def __init__(self, node: Any, file: ZarrFile) -> None:
        super().__init__(node, file)
        self._mark = node.attrs.get(_VALUE_MARK)
        self.dtype = None if self._mark is not None else torch_dtype_of(np.dtype(node.dtype))

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape; ``()`` for the bytes of a marked value (one encoded value,
        whatever its length: never taken for one value per row)."""
        return () if self._mark is not None else tuple(self._node.shape)

    def read(self, selection: Any = ()) -> np.ndarray[Any, Any]:
        if isinstance(selection, np.ndarray):
            return np.asarray(self._node.oindex[selection])
        return np.asarray(self._node[selection])

    def read_into(self, out: np.ndarray[Any, Any]) -> None:
        shape = tuple(self._node.shape)
        if not shape:
            out[...] = self._node[...]
            return
        step = max(1, int(self._node.chunks[0]))  # a chunk of rows at a time
        for start in range(0, shape[0], step):
            out[start : start + step] = self._node[start : start + step]

    def values(self, where: str) -> Any:
        """A marked value decoded (its JSON depth checked first; a pickle only when the
        store allows it); an unmarked array's elements as Python values."""
        mark = self._mark
        if mark is None:
            return np.asarray(self._node[...]).tolist()
        encoding = mark.get("encoding") if isinstance(mark, dict) else None
        payload = np.asarray(self._node[...]).tobytes()
        if encoding == "json":
            try:
                text = payload.decode("utf-8")
            except UnicodeDecodeError:
                raise MetadataError(
                    f"{where}: its JSON is not UTF-8 text; the store is damaged"
                ) from None
            check_json(text, where)
            try:
                return json.loads(text)
            except ValueError as error:
                raise MetadataError(f"{where}: its JSON does not parse ({error})") from None
        if encoding == "pickle":
            if not self._file.access.allow_pickle:
                msg = (
                    f"{where} holds a pickled value, and unpickling can run arbitrary code; "
                    "open the store with allow_pickle=True if you trust where it comes from"
                )
                raise PickleRefusedError(msg)
            return pickle.loads(payload)  # noqa: S301  # allowed by the caller
        msg = (
            f"{where}: its {_VALUE_MARK} attribute names the encoding {encoding!r:.40}, "
            "neither 'json' nor 'pickle'; the store is damaged or crafted"
        )
        raise MetadataError(msg)

    def stack_shape(self, where: str) -> list[int] | None:
        raw = self._node.attrs.get(STACK_MARK)
        if raw is None:
            return None
        return check_stack(raw, tuple(self._node.shape), where, own=self._mark is None)

    def check(self, where: str) -> None:
        check_size(tuple(self._node.shape), np.dtype(self._node.dtype).itemsize, where)


class ZarrGroup(GroupBase[ZarrFile]):
    """A zarr group (``StoreGroup``)."""

    __slots__ = ()

    @property
    def identity(self) -> Hashable:
        return str(self._group.path)

    def _members(self) -> dict[str, Any]:
        listed = self.file.members.get(self._group.path)
        if listed is None:
            listed = self.file.members[self._group.path] = dict(self._group.members())
        return listed

    def keys(self) -> list[str]:
        return sorted(self._members())

    def __contains__(self, key: str) -> bool:
        try:
            self._member(key)
        except KeyError:
            return False
        return True

    def __getitem__(self, key: str) -> Node:
        return self._wrap(self._member(key))

    def _member(self, key: str) -> Any:
        """The member at ``key``; a key holding ``/`` is a path through the groups, as
        zarr (and h5py) store it (``td["a/b"] = x`` writes array ``b`` of group ``a``)."""
        head, slash, rest = key.partition("/")
        node = self._members()[head if slash and head else key]
        if not slash or not head:
            return node
        if not isinstance(node, need_zarr().Group):
            raise KeyError(key)
        return ZarrGroup(node, self.file)._member(rest)

    def _wrap(self, node: Any) -> Node:
        if isinstance(node, need_zarr().Group):
            return ZarrGroup(node, self.file)
        return ZarrArray(node, self.file)

    def linked(self, key: str, where: str) -> Node:
        return self[key]  # zarr has no links

    def create_group(self, key: str) -> ZarrGroup:
        node = self._group.create_group(key)
        self._added(key, node)
        return ZarrGroup(node, self.file)

    def create_array(
        self, key: str, data: np.ndarray[Any, Any], options: dict[str, Any]
    ) -> ZarrArray:
        return ZarrArray(self._array(key, data, options), self.file)

    def _array(
        self, key: str, data: np.ndarray[Any, Any], options: dict[str, Any], **extra: Any
    ) -> Any:
        """A new array holding ``data`` (as the peer lays it out: one uncompressed chunk,
        unless ``options`` give ``chunks`` (the leading dims' sizes) or compressors)."""
        settings = {"compressors": None, **options, **extra}
        chunks = settings.pop("chunks", None)
        shape = data.shape
        if shape:
            given = (chunks,) if isinstance(chunks, int) else tuple(chunks or ())
            layout = given[: len(shape)] + shape[len(given) :]
            settings["chunks"] = tuple(max(1, int(size)) for size in layout)
        node = self._group.create_array(key, shape=shape, dtype=data.dtype, **settings)
        if data.size:
            node[...] = data
        self._added(key, node)
        return node

    def check_values(self, values: Values, allow_pickle: bool, where: str) -> None:
        """JSON, or pickled when allowed."""
        for item in values.items:
            require_json(item, where, allow_pickle, _PICKLE_FIX)  # the first refused one

    def create_values(self, key: str, values: Values, allow_pickle: bool, where: str) -> None:
        """The peer's layout (see the module docstring)."""
        marks: dict[str, Any] = {} if values.shape is None else {STACK_MARK: values.shape}
        if values.stack_dims is not None:
            marks[STACK_DIMS_MARK] = values.stack_dims
        if values.shape is not None and values.items and all(type(i) is str for i in values.items):
            data = np.array(values.items, dtype=np.dtypes.StringDType()).reshape(values.shape)
            self._array(key, data, {}, attributes=marks)
            return
        if all(is_json_value(item) for item in values.items):
            payload, encoding = json.dumps(values.value).encode("utf-8", "surrogatepass"), "json"
        else:
            payload, encoding = dumps_pickle(values.value, where), "pickle"
        data = np.frombuffer(payload, dtype=np.uint8)
        self._array(key, data, {}, attributes={**marks, _VALUE_MARK: {"encoding": encoding}})

    def _added(self, key: str, node: Any) -> None:
        if "/" in key.strip("/"):  # made in a group under this one: listed again when read
            self.file.members.pop(self._group.path, None)
            self._forget(f"{self._group.path}/{key.partition('/')[0]}".lstrip("/"))
        else:
            self._members()[key] = node
        self.file.changed()

    def delete(self, key: str) -> None:
        members = self._members()
        del self._group[key]
        members.pop(key, None)
        self._forget(f"{self._group.path}/{key.partition('/')[0]}".lstrip("/"))
        self.file.changed()

    def _forget(self, path: str) -> None:
        """The listings of the groups at ``path`` and under it, dropped."""
        for listed in [p for p in self.file.members if p == path or p.startswith(f"{path}/")]:
            del self.file.members[listed]

    def move(self, old: str, new: str) -> None:
        """zarr-python cannot move a node yet: copied, then the old one deleted."""
        self._copy(self._members()[old], self, new)
        self.delete(old)

    def _copy(self, node: Any, parent: ZarrGroup, key: str) -> None:
        if isinstance(node, need_zarr().Group):
            group = parent.create_group(key)
            group._group.update_attributes(dict(node.attrs))
            for name, member in node.members():
                self._copy(member, group, name)
            return
        options = {"chunks": node.chunks, "compressors": node.compressors, "filters": node.filters}
        parent._array(key, np.asarray(node[...]), options, attributes=dict(node.attrs))

    def read_meta(self) -> str | None:
        attrs = self._group.attrs
        raw = attrs.get(_META)
        if isinstance(raw, str):
            return raw
        peer = attrs.get(_PEER_META)  # a store the peer wrote: its batch size and names
        if isinstance(peer, dict) and "batch_size" in peer:
            kept = {key: peer[key] for key in ("batch_size", "names") if key in peer}
            return json.dumps(kept)
        return None

    def write_meta(self, meta: dict[str, Any]) -> None:
        peer = {"batch_size": meta["batch_size"], "version": 1}
        if "names" in meta:
            peer["names"] = meta["names"]
        self._group.update_attributes({_META: json.dumps(meta), _PEER_META: peer})
        self.file.changed()  # a consolidated store holds its groups' attributes too


class ZarrBackend:
    """Opens zarr stores (``Backend``): a path (a directory), or a zarr store object."""

    name = "zarr"

    def open(self, target: Any, mode: str, access: Access) -> ZarrGroup:
        lib = need_zarr()
        if mode not in _MODES:
            msg = f"mode={mode!r}: a zarr store opens with one of {', '.join(map(repr, _MODES))}"
            raise ArgumentValueError(msg)
        where = os.fspath(target) if isinstance(target, (str, os.PathLike)) else target
        described = where if isinstance(where, str) else str(where)
        if isinstance(where, str) and mode in ("r", "r+") and not os.path.exists(where):
            raise MissingFileError(f"no zarr store at {described!r}; check the path")
        if mode != "r" and append_only(where):
            msg = (
                f"{described!r} is an append-only zarr store (a ZipStore), which holds each "
                "key once: tclass reads it, and writes it whole with to_zarr(store) (or "
                "PersistentTensorDict.from_dict(data, store, backend='zarr')), but cannot open "
                f"it with mode={mode!r} to write into it; write into a directory store, then "
                "zip it"
            )
            raise UnsupportedError(msg)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # consolidated metadata is not in the spec
            try:
                # read only: through the consolidated metadata where there is some
                reading = {} if mode == "r" else {"use_consolidated": False}
                # a ZipStore opened for writing (just written whole) reads in its own mode
                zarr_mode = "r+" if mode == "r" and not getattr(where, "read_only", True) else mode
                group = lib.open_group(where, mode=_MODES[zarr_mode], **reading)
                consolidated = mode in ("r+", "a") and _has_consolidated(lib, group.store)
            except lib.errors.BaseZarrError as error:  # before OSError: some derive from it
                msg = f"{described!r} is not a zarr store zarr can open as a group ({error})"
                raise FileFormatError(msg) from None
            except (FileNotFoundError, FileExistsError) as error:
                raise open_refused(error, described, mode, ZarrFile.format) from None
        return ZarrGroup(group, ZarrFile(group.store, access, group.read_only, consolidated))

    def owns(self, native: Any) -> bool:
        lib = sys.modules.get("zarr")
        return lib is not None and isinstance(native, lib.Group)

    def wrap(self, native: Any, access: Access) -> ZarrGroup | None:
        if not self.owns(native):
            return None
        consolidated = not native.read_only and _has_consolidated(need_zarr(), native.store)
        return ZarrGroup(native, ZarrFile(native.store, access, native.read_only, consolidated))

    def reopen(self, target: Any, path: str, mode: str, access: Access) -> ZarrGroup:
        return self.open(target, mode, access).at(path.strip("/"))


def consolidate(file: Any) -> None:
    """The consolidated metadata of a store just written (a ``ZarrFile``), as the peer's
    ``to_zarr`` writes it; rewritten after each later change of its tree."""
    file.consolidated = True
    file.changed()


def append_only(target: Any) -> bool:
    """Whether ``target`` is a zarr store object that cannot replace a key (a
    ``ZipStore``: each key is written once)."""
    return not isinstance(target, (str, os.PathLike)) and not getattr(
        target, "supports_deletes", True
    )


def staging_store() -> Any:
    """An empty in-memory zarr store, to build a tree in before :func:`write_once`."""
    return need_zarr().storage.MemoryStore()


def write_once(staged: Any, target: Any) -> None:
    """Every key of the zarr store ``staged`` written into the append-only store
    ``target`` (a ``ZipStore``), each once."""
    lib = need_zarr()
    prototype = lib.core.buffer.default_buffer_prototype()

    async def copy() -> None:
        async for key in staged.list():
            value = await staged.get(key, prototype=prototype)
            if value is not None:
                await target.set(key, value)

    lib.core.sync.sync(copy())


def _has_consolidated(lib: Any, store: Any) -> bool:
    """Whether the store's root holds consolidated metadata (which writes must keep true)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            root = lib.open_group(store, mode="r", path="")
        except Exception:  # noqa: BLE001  # a store whose root is not a group: none
            return False
    return root.metadata.consolidated_metadata is not None


BACKEND: Backend = ZarrBackend()
