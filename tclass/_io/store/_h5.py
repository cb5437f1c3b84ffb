"""The HDF5 backend of the Store protocol (``_protocol.py``), over h5py: the only module
of tclass that imports h5py (on first use, through ``tclass._io._optional``; the
optional extra ``tclass[h5]``).

The format is the peer's: one dataset per tensor, one group per nested collection,
Python values as HDF5 strings (marked ``__tensordict_str__``) or opaque numbers, per-row
values as an array marked ``__tensordict_stack__`` with its shape. tclass adds one string
attribute per group, ``_tclass``, holding its JSON metadata (which the peer ignores), and
writes values that are neither strings nor numbers as JSON strings (marked
``_tclass_json``). Nothing is pickled: h5py decodes numbers and strings.

A file is a graph: soft and hard links can make a group hold one of its ancestors or be
reached twice, which the walk of ``_walk.py`` handles through :attr:`H5Group.identity`;
:meth:`H5Group.linked` refuses dangling links and, unless allowed, external links, and
:meth:`H5Array.check` data kept in other files (raw external storage, virtual datasets).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Hashable
from typing import Any

import numpy as np

from tclass._io._optional import need
from tclass._io.memmap._values import require_json
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
    FileBusyError,
    KeyNotFoundError,
    StoreFormatError,
    UnsafePathError,
)

__all__ = ["BACKEND", "H5Array", "H5Backend", "H5File", "H5Group", "need_h5py"]

_MODES = frozenset({"r", "r+", "a", "w", "w-", "x"})  # h5py's
_STR_MARK = "__tensordict_str__"  # the peer's: a string dataset it wrote
_JSON_MARK = "_tclass_json"  # tclass's: a value written as a JSON string
_META = "_tclass"  # tclass's attribute of a group: its metadata, JSON
# how to save a value neither JSON nor a string or number holds: not in an HDF5 file
_NO_PICKLE_FIX = (
    "Convert it or store it as a tensor; an HDF5 file holds no pickles, even with "
    "allow_pickle=True: save such values with to_zarr(..., allow_pickle=True) or "
    "memmap(..., allow_pickle=True)"
)


def need_h5py() -> Any:
    """The h5py module (imported on first use, not by ``import tclass``), or a
    MissingDependencyError naming the extra that installs it. Once imported, it is
    looked up (once per entry read: an import statement costs a microsecond more)."""
    lib = sys.modules.get("h5py")
    return lib if lib is not None else need("h5py", "h5", "PersistentTensorDict")


class H5File:
    """An open h5py file (``StoreFile``)."""

    __slots__ = ("_file", "_read_only", "access", "filename")
    backend = "h5"
    format = "HDF5 file"

    def __init__(self, file: Any, access: Access, read_only: bool = False) -> None:
        self._file = file
        # asked for mode='r': h5py hands out the file this process already holds, open for
        # writing if another handle opened it so; this one still refuses writes
        self._read_only = read_only
        self.access = access
        self.filename = str(file.filename)  # h5py forgets it once the file is closed

    @property
    def target(self) -> str:
        return self.filename

    @property
    def is_open(self) -> bool:
        return bool(self._file.id.valid)

    @property
    def read_only(self) -> bool:
        return self._read_only or bool(self._file.mode == "r")

    @property
    def why_read_only(self) -> str:
        return "was opened read-only (mode='r'); open it with mode='r+' (or 'a') to write into it"

    def close(self) -> None:
        if self._file.id.valid:
            self._file.close()

    def flush(self) -> None:
        self._file.flush()


class H5Array(ArrayBase[H5File]):
    """An h5py dataset (``StoreArray``)."""

    __slots__ = ("dtype",)

    def __init__(self, node: Any, file: H5File) -> None:
        super().__init__(node, file)
        self.dtype = torch_dtype_of(node.dtype) if node.shape is not None else None

    @property
    def shape(self) -> tuple[int, ...] | None:
        shape: tuple[int, ...] | None = self._node.shape
        return shape

    def read(self, selection: Any = ()) -> np.ndarray[Any, Any]:
        return np.asarray(self._node[selection])

    def read_into(self, out: np.ndarray[Any, Any]) -> None:
        self._node.read_direct(out)  # HDF5 reads chunk by chunk into ``out``

    def values(self, where: str) -> Any:
        """Strings as str, the peer's opaque numbers and bytes as numbers and bytes,
        tclass's JSON strings parsed (their depth checked first), an ``h5py.Empty``
        dataset as None."""
        node = self._node
        lib = need_h5py()
        if node.shape is None:
            return None
        raw = node[()]
        if lib.check_opaque_dtype(node.dtype):  # bytes are opaque fixed-width strings
            return np.asarray(raw).view(np.dtype(node.dtype.str)).tolist()
        if lib.check_string_dtype(node.dtype) is not None:
            value = np.asarray(raw, dtype=object)
            decoded = np.vectorize(_text, otypes=[object])(value) if value.size else value
            if node.attrs.get(_JSON_MARK, False) and value.size:
                for text in decoded.flat:
                    check_json(text, where)
                decoded = np.vectorize(json.loads, otypes=[object])(decoded)
            return decoded.tolist() if decoded.ndim else decoded.item()
        return np.asarray(raw).tolist()

    def stack_shape(self, where: str) -> list[int] | None:
        raw = self._node.attrs.get(STACK_MARK)
        return None if raw is None else check_stack(raw, self._node.shape, where)

    def check(self, where: str) -> None:
        node = self._node
        check_size(node.shape, node.dtype.itemsize, where)
        if self._file.access.allow_external:
            return
        source = _external_source(node)
        if source is not None:
            msg = (
                f"{where}: the dataset reads its data from another file ({source!r}); tclass "
                "reads only the file it opens unless asked: open it with allow_external=True "
                "if you trust that file"
            )
            raise UnsafePathError(msg)


def _external_source(node: Any) -> str | None:
    """The other file a dataset's data comes from, if any."""
    external = node.external
    if external:
        return str(external[0][0])
    if node.is_virtual:
        for source in node.virtual_sources():
            if source.file_name != ".":  # "." is the dataset's own file
                return str(source.file_name)
    return None


def _text(value: Any) -> Any:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


class H5Group(GroupBase[H5File]):
    """An h5py group or file (``StoreGroup``)."""

    __slots__ = ()

    @property
    def identity(self) -> Hashable:
        identity: Hashable = self._group.id
        return identity

    def keys(self) -> list[str]:
        return list(self._group.keys())

    def __contains__(self, key: str) -> bool:
        return key in self._group

    def __getitem__(self, key: str) -> Node:
        return self._wrap(self._group[key])

    def _wrap(self, node: Any) -> Node:
        if isinstance(node, need_h5py().Group):
            return H5Group(node, self.file)
        return H5Array(node, self.file)

    def linked(self, key: str, where: str) -> Node:
        group = self._group
        link = group.get(key, getlink=True)
        if isinstance(link, need_h5py().ExternalLink) and not self.file.access.allow_external:
            msg = (
                f"{where} is an external link to {link.path!r} in {link.filename!r}; "
                "tclass reads only the file it opens unless asked: open it with "
                "allow_external=True if you trust that file"
            )
            raise UnsafePathError(msg)
        try:
            return self._wrap(group[key])
        except KeyError:
            target = getattr(link, "path", None)
            msg = (
                f"{where} is a link to {target!r}, which does not exist (a dangling "
                "link); remove it, or fix its target"
            )
            raise KeyNotFoundError(msg) from None

    def create_group(self, key: str) -> H5Group:
        return H5Group(self._group.create_group(key), self.file)

    def create_array(
        self, key: str, data: np.ndarray[Any, Any], options: dict[str, Any]
    ) -> H5Array:
        return H5Array(self._group.create_dataset(key, data=data, **options), self.file)

    def check_values(self, values: Values, allow_pickle: bool, where: str) -> None:
        """Strings and numbers (or bytes) of one kind go as the peer writes them, other
        values as JSON: an HDF5 file holds no pickles."""
        kinds = {type(item) for item in values.items}
        if kinds == {str} or (len(kinds) == 1 and kinds <= {bytes, bool, int, float}):
            return
        for item in values.items:
            require_json(item, where, allow_pickle=False, fix=_NO_PICKLE_FIX)

    def create_values(self, key: str, values: Values, allow_pickle: bool, where: str) -> None:
        """As the peer writes them: strings, or opaque numbers; anything else as JSON
        strings (tclass's)."""
        lib = need_h5py()
        value, shape, items = values.value, values.shape, values.items
        kinds = {type(item) for item in items}
        if kinds == {str} and not any("\x00" in item for item in items):
            data: Any = value if shape is None else np.array(value, dtype=lib.string_dtype())
            dataset = self._group.create_dataset(key, data=data)
            if shape is None:
                dataset.attrs[_STR_MARK] = True
        elif len(kinds) == 1 and kinds <= {bytes, bool, int, float} and _fixed_width(value):
            array = np.array(value)
            dataset = self._group.create_dataset(
                key, data=array.astype(lib.opaque_dtype(array.dtype))
            )
        else:
            texts = [json.dumps(item) for item in items]
            data = (
                texts[0]
                if shape is None
                else np.array(texts, dtype=lib.string_dtype()).reshape(shape)
            )
            dataset = self._group.create_dataset(key, data=data)
            dataset.attrs[_JSON_MARK] = True
        if shape is not None:
            dataset.attrs[STACK_MARK] = shape
        if values.stack_dims is not None:
            dataset.attrs[STACK_DIMS_MARK] = values.stack_dims

    def delete(self, key: str) -> None:
        del self._group[key]

    def move(self, old: str, new: str) -> None:
        self._group.move(old, new)

    def read_meta(self) -> str | None:
        raw = self._group.attrs.get(_META)
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", "replace")
        return raw if isinstance(raw, str) else None

    def write_meta(self, meta: dict[str, Any]) -> None:
        self._group.attrs[_META] = json.dumps(meta)


class H5Backend:
    """Opens HDF5 files (``Backend``)."""

    name = "h5"

    def open(self, target: Any, mode: str, access: Access) -> H5Group:
        """The h5py file, with tclass's errors for the usual failures."""
        lib = need_h5py()
        filename = os.fspath(target)
        if mode not in _MODES:
            msg = (
                f"mode={mode!r} for {filename!r}: an HDF5 file opens with one of 'r' (read "
                "only), 'r+' (read and write), 'a' (read and write, created if missing), "
                "'w' (created, replacing it), 'w-' or 'x' (created, failing if it exists)"
            )
            raise ArgumentValueError(msg)
        try:
            file = lib.File(filename, mode)
        except BlockingIOError:
            msg = (
                f"{filename!r} is open for writing in another process (HDF5 locks the file); "
                "close it there first"
            )
            raise FileBusyError(msg) from None
        except (FileNotFoundError, FileExistsError) as error:
            raise open_refused(error, filename, mode, H5File.format) from None
        except OSError as error:
            if "already open" in str(error):  # h5py shares one open file per process
                msg = (
                    f"{filename!r} is already open in this process, and HDF5 cannot open it "
                    f"again with mode={mode!r} ({error}); close the PersistentTensorDict (or "
                    "h5py.File) that holds it first"
                )
                raise FileBusyError(msg) from None
            if os.path.isfile(filename) and mode in ("r", "r+", "a"):
                msg = (
                    f"{filename!r} is not an HDF5 file h5py can open ({error}); check the "
                    "path, or write the file first (td.to_h5(path))"
                )
                raise StoreFormatError(msg) from None
            raise
        return H5Group(file, H5File(file, access, read_only=mode == "r"))

    def owns(self, native: Any) -> bool:
        lib = sys.modules.get("h5py")
        return lib is not None and isinstance(native, lib.Group)

    def wrap(self, native: Any, access: Access) -> H5Group | None:
        if not self.owns(native):
            return None
        return H5Group(native, H5File(native.file, access))

    def reopen(self, target: Any, path: str, mode: str, access: Access) -> H5Group:
        return self.open(target, mode, access).at("" if path == "/" else path)


BACKEND: Backend = H5Backend()


def _fixed_width(value: Any) -> bool:
    """Whether numpy holds ``value`` (numbers, or nested lists of them) in a fixed-width
    dtype, as an opaque HDF5 number needs: an int beyond 64 bits becomes an object array,
    which HDF5 cannot store (such a value is written as JSON, which holds any int)."""
    return bool(np.array(value).dtype != object)
