"""The Store protocol: what ``PersistentTensorDict`` (``_persistent.py``) needs of a
persistent backend, written once so that every backend answers the same calls.

A store is a tree of *groups* (a nested collection each) holding *arrays* (a tensor, or
the Python values of an entry), opened from a file or directory as a :class:`StoreGroup`
(its root) by a :class:`Backend`. ``_h5.py`` implements it over h5py and ``_zarr.py``
over zarr; each is the only module of tclass that imports its library, on first use
(``tclass._io._optional``), never at ``import tclass``.

What a backend decides, and the collection does not see: the file format of Python values
and of the collection's metadata (the peer's, per backend), which links and external data
it refuses while opening (``linked``, ``check``), what a group's identity is (the walk of
``_walk.py`` shares a group reached twice), and which errors its library raises. What the
collection decides, and the backend does not see: batch sizes, locks, records, dim names,
devices and the conversions between arrays and tensors (``_datasets.py``).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

import numpy as np
import torch
from typing_extensions import Self, TypeIs

__all__ = [
    "STACK_DIMS_MARK",
    "STACK_MARK",
    "Access",
    "ArrayBase",
    "Backend",
    "GroupBase",
    "Node",
    "StoreArray",
    "StoreFile",
    "StoreGroup",
    "Values",
    "is_group",
]

STACK_MARK = "__tensordict_stack__"  # the peer's, in both formats: the shape of per-row values
# tclass's, beside it: the batch dims a dense stack of records stacked its members' values
# along (the dims left each hold one value per member), so rows read one value each again.
STACK_DIMS_MARK = "_tclass_stack_dims"


@dataclass(frozen=True)
class Access:
    """What the caller allowed when opening a store: data kept in other files
    (``allow_external``: HDF5's external links, external storage, virtual datasets) and
    unpickling values (``allow_pickle``: a zarr store the peer wrote with pickles)."""

    allow_external: bool = False
    allow_pickle: bool = False


@dataclass(frozen=True)
class Values:
    """The Python values of one entry, to write: one value (``shape`` None) or one per
    row (``value`` nested ``len(shape)`` lists deep; ``items`` its elements, flat)."""

    value: Any
    shape: list[int] | None
    items: list[Any]
    stack_dims: list[int] | None = None  # per-row values of a dense stack: its stack dims


class StoreFile(Protocol):
    """The open file (or directory, or zarr store) a tree of groups lives in."""

    @property
    def backend(self) -> str:
        """``"h5"`` or ``"zarr"``: the name ``PersistentTensorDict(backend=...)`` takes."""

    @property
    def format(self) -> str:
        """What it is, for messages: ``"HDF5 file"``, ``"zarr store"``."""

    @property
    def filename(self) -> str:
        """Its path (or a description of a store that has none), for messages."""

    @property
    def target(self) -> Any:
        """What :meth:`Backend.open` takes to open it again (a pickled collection)."""

    @property
    def access(self) -> Access:
        """What the caller allowed when opening it."""

    @property
    def is_open(self) -> bool: ...

    @property
    def read_only(self) -> bool: ...

    @property
    def why_read_only(self) -> str:
        """The end of the error a write into a read-only one raises (after its name):
        why it is read-only and how to write instead."""

    def close(self) -> None:
        """Close it; a second close does nothing."""

    def flush(self) -> None:
        """Hand what was written to the operating system."""


class StoreArray(Protocol):
    """An array of a store: a tensor's data, or the Python values of an entry."""

    @property
    def is_group(self) -> Literal[False]: ...

    @property
    def name(self) -> str:
        """Its path in the file (``/next/x``), for messages."""

    @property
    def shape(self) -> tuple[int, ...] | None:
        """The shape of what it holds: a tensor's; per-element values' (a string array);
        ``()`` for one value encoded as bytes (zarr's JSON); None for an array without
        data (HDF5's ``h5py.Empty``: the value None)."""

    @property
    def dtype(self) -> torch.dtype | None:
        """The dtype of the tensor it holds; None when it holds Python values."""

    def read(self, selection: Any = ()) -> np.ndarray[Any, Any]:
        """The data ``selection`` picks (``()``: all of it): an int, a slice with a
        positive step, or a sorted array of distinct rows along the first dim."""

    def write(self, selection: Any, data: np.ndarray[Any, Any]) -> None:
        """``data`` into what ``selection`` picks (``...``: all of it; an int or a slice
        with a positive step)."""

    def read_into(self, out: np.ndarray[Any, Any]) -> None:
        """All of its data into ``out`` (of its shape and dtype: a memory-mapped file),
        a part at a time where the library can, never all of it in memory at once."""

    def values(self, where: str) -> Any:
        """The Python value(s) it holds, decoded (nested lists for per-row values).

        Raises:
            MetadataError: the data is damaged or crafted (JSON nested too deep).
            PickleRefusedError: it holds a pickle and the store was not opened with
                ``allow_pickle=True``.
        """

    def stack_shape(self, where: str) -> list[int] | None:
        """The shape of the per-row values it holds (the peer's ``__tensordict_stack__``
        mark), or None for one value.

        Raises:
            MetadataError: a mark that contradicts the data.
        """

    def stack_dims(self) -> Any:
        """The raw ``_tclass_stack_dims`` mark of per-row values (None when absent)."""

    def check(self, where: str) -> None:
        """Refuses, while opening, an array that cannot be read safely: a shape torch
        cannot hold, or data kept in another file (unless the store allows it).

        Raises:
            MetadataError, UnsafePathError.
        """


class StoreGroup(Protocol):
    """A group of a store: a nested collection's entries."""

    @property
    def is_group(self) -> Literal[True]: ...

    @property
    def name(self) -> str:
        """Its path in the file (``/`` for the root), for messages."""

    @property
    def file(self) -> StoreFile: ...

    @property
    def native(self) -> Any:
        """The library's own object (``h5py.Group``, ``zarr.Group``)."""

    @property
    def identity(self) -> Hashable:
        """Equal for two handles of one group (HDF5: a group reached by two links)."""

    def keys(self) -> list[str]:
        """Its entries' names, sorted."""

    def __contains__(self, key: str) -> bool: ...

    def __getitem__(self, key: str) -> Node:
        """The entry ``key`` (a ``KeyError`` when absent)."""

    def linked(self, key: str, where: str) -> Node:
        """The entry ``key`` while opening, after checking how it is linked.

        Raises:
            KeyNotFoundError: a link to nothing.
            UnsafePathError: a link to another file, unless the store allows it.
        """

    def create_group(self, key: str) -> StoreGroup: ...

    def create_array(
        self, key: str, data: np.ndarray[Any, Any], options: dict[str, Any]
    ) -> StoreArray:
        """A new array holding ``data``; ``options`` are the library's (``chunks``,
        compression), as the user gave them."""

    def check_values(self, values: Values, allow_pickle: bool, where: str) -> None:
        """Refuses, before anything is written, Python values the format cannot hold.

        Raises:
            NotSerializableError: a value JSON cannot hold, and pickling was not allowed
                (or the format holds no pickles); naming ``where`` and the value.
        """

    def create_values(self, key: str, values: Values, allow_pickle: bool, where: str) -> None:
        """A new array holding Python values (checked by :meth:`check_values`), in the
        backend's (the peer's) format."""

    def delete(self, key: str) -> None: ...

    def move(self, old: str, new: str) -> None:
        """Rename the entry ``old`` to ``new`` (which does not exist)."""

    def read_meta(self) -> str | None:
        """tclass's metadata of the group (JSON text), or None when it has none."""

    def write_meta(self, meta: dict[str, Any]) -> None:
        """Record tclass's metadata (``{"batch_size": [...], "schema": ...}``), and
        what the peer reads of it where its format has a place for it."""


Node = StoreGroup | StoreArray


def is_group(node: Node) -> TypeIs[StoreGroup]:
    """Whether an entry of a store is a group (else an array)."""
    return node.is_group


FileT = TypeVar("FileT", bound=StoreFile)


class ArrayBase(Generic[FileT]):
    """What the backends' arrays share: the library's array and the open file it lives in."""

    __slots__ = ("_node", "_file")
    is_group: Literal[False] = False

    def __init__(self, node: Any, file: FileT) -> None:
        self._node = node
        self._file = file

    @property
    def name(self) -> str:
        return str(self._node.name)

    def write(self, selection: Any, data: np.ndarray[Any, Any]) -> None:
        self._node[selection] = data

    def stack_dims(self) -> Any:
        raw = self._node.attrs.get(STACK_DIMS_MARK)
        return np.asarray(raw).tolist() if isinstance(raw, np.ndarray) else raw


class GroupBase(Generic[FileT]):
    """What the backends' groups share: the library's group and the open file it lives in."""

    __slots__ = ("_group", "file")
    is_group: Literal[True] = True

    def __init__(self, group: Any, file: FileT) -> None:
        self._group = group
        self.file = file

    @property
    def name(self) -> str:
        return str(self._group.name)

    @property
    def native(self) -> Any:
        return self._group

    def at(self, path: str) -> Self:
        """The group at ``path`` below this one (itself for ``""``), for a root opened
        only to reach it: the file closed when that fails."""
        if not path:
            return self
        try:
            return type(self)(self._group[path], self.file)
        except BaseException:
            self.file.close()
            raise


class Backend(Protocol):
    """Opens the stores of one library."""

    @property
    def name(self) -> str:
        """``"h5"`` or ``"zarr"``."""

    def open(self, target: Any, mode: str, access: Access) -> StoreGroup:
        """The root group of the file or store at ``target`` opened with ``mode``
        (``"r"``, ``"r+"``, ``"a"``, ``"w"``, ``"w-"``/``"x"``).

        Raises:
            MissingDependencyError: the library is not installed (naming the extra).
            MissingFileError, FileConflictError, FileFormatError, FileBusyError.
        """

    def owns(self, native: Any) -> bool:
        """Whether ``native`` is an open group of the library (looked up, never
        imported: its objects exist once it is)."""

    def wrap(self, native: Any, access: Access) -> StoreGroup | None:
        """An open group of the library as a store group; None for any other object
        (the library is looked up, never imported: its objects exist once it is)."""

    def reopen(self, target: Any, path: str, mode: str, access: Access) -> StoreGroup:
        """The group at ``path`` of the store at ``target``, opened again."""
