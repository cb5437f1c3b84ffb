"""``PersistentTensorDict``: a collection whose entries live in a persistent store, an HDF5
file (h5py, the optional extra ``tclass[h5]``) or a zarr store (zarr-python 3, the extra
``tclass[zarr]``), reached through the Store protocol (``_protocol.py``; the backends:
``_h5.py``, ``_zarr.py``).

Opening a store reads its metadata only. Reading a key reads that array (a new tensor
each time: writing into it changes memory only); indexing the collection gives a view of
the selected rows (``_view.PersistentTensorDictView``, as the peer's ``_SubTensorDict``),
whose reads read only those rows of each array (a contiguous span, or the sorted
distinct rows, never the whole array for a few rows) and whose in-place writes of every
kind write those rows of the store. Writes go to the store: ``ptd[key] = value`` (a new
array, or a group for a collection), ``ptd[idx] = rows``, ``set_``, ``update``, and the
in-place methods (``zero_``, ``apply_``...). Groups are nested ``PersistentTensorDict``s.

The formats are the peer's (one array per tensor, one group per nested collection,
Python values as each backend's module describes). tclass adds one attribute per group,
``_tclass``, holding JSON (``{"batch_size": [...]}``, and a record's ``"schema"``: see
``_records``), which the peer ignores: a store tclass wrote opens with its batch size;
any other gets the batch size the peer recorded (zarr), else the largest batch size its
arrays share, as the peer infers it. Opening walks the groups once and checks them
(``_walk``). Nothing in a store makes tclass run code unless the caller allows pickles
(zarr only: ``allow_pickle=True``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, ClassVar, overload

import torch
from typing_extensions import Self, Unpack

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.declared._persistence import H5Options, ZarrOptions
from tclass._base.implemented._collection import TensorCollection, ToArg
from tclass._core import _batch, _keys, _names
from tclass._core._device import DeviceLike, as_device, require_device
from tclass._core._keys import BatchIndex
from tclass._core._method_names import name_methods_after
from tclass._core._names import Names
from tclass._core._records import is_record, storage_of
from tclass._engine._nontensor import NonTensorData, _NonTensorNode
from tclass._engine._repr import compact_repr, shows_compact_repr
from tclass._engine._td import TensorDict
from tclass._interop._pytree import register_collection
from tclass._io._annotations import fit_value
from tclass._io._schema import check_tree_values_to_save, record_schema
from tclass._io.memmap._values import pickle_policy
from tclass._io.store import _h5, _zarr
from tclass._io.store._datasets import (
    read_rows,
    to_tensor,
    values_node,
)
from tclass._io.store._protocol import Access, Backend, StoreArray, StoreGroup, is_group
from tclass._io.store._records import rebind, records_of
from tclass._io.store._surface import RowsInMemory, StoreSurface, in_memory
from tclass._io.store._view import PersistentTensorDictView
from tclass._io.store._walk import (
    Entries,
    saved_batch,
    saved_meta,
    saved_names,
    settle_batch,
    walk_file,
)
from tclass._io.store._writes import StoreWrites, refuse_ragged_batch
from tclass.errors import (
    ArgumentError,
    ArgumentValueError,
    BatchSizeError,
    ClosedFileError,
    KeyNotFoundError,
    KeyThroughTensorError,
    UnsupportedError,
)

__all__ = ["BACKENDS", "PersistentTensorDict"]

# The backends, by the name ``backend=`` takes (importing them imports neither library).
BACKENDS: dict[str, Backend] = {"h5": _h5.BACKEND, "zarr": _zarr.BACKEND}

PathLike = str | os.PathLike[str]
_REOPEN = {"w": "r+", "w-": "r+", "x": "r+", "a": "a", "r+": "r+", "r": "r"}
_MISSING: Any = object()


@name_methods_after
class PersistentTensorDict(StoreSurface, StoreWrites, RowsInMemory, TensorDictBase):
    """A collection over an HDF5 file or a zarr store, or one of their groups (needs
    ``pip install 'tclass[h5]'`` or ``'tclass[zarr]'``).

    Open one with :meth:`from_h5` / :meth:`from_zarr` (or ``TensorDict.from_h5``,
    ``tclass.from_zarr``...), write one with :meth:`from_dict` or
    ``collection.to_h5(filename)`` / ``to_zarr(path)``; call :meth:`close` when done.
    See the module docstring for what reads and writes do.

    Args:
        batch_size: the leading dims the entries share (checked against the arrays'
            shapes unless ``validate_batch_size=False``); None: ``[]``.
        filename: the HDF5 file or zarr store (a directory, or a zarr store object) to
            open (exclusive with ``group``).
        group: an open ``h5py.File`` / ``h5py.Group`` or ``zarr.Group`` holding the data
            (its library says the backend).
        mode: as ``h5py.File``'s: ``"r"`` (the default: read only), ``"r+"`` (read and
            write), ``"w"`` (create or truncate), ``"w-"``/``"x"`` (create, fail if it
            exists), ``"a"`` (read and write, create if needed).
        backend: ``"h5"`` (HDF5, the default) or ``"zarr"``.
        device: the device entries are read onto (None: the CPU).
        validate_batch_size: check ``batch_size`` against the arrays.
        non_tensor_as_stack: read a string (or other non-numeric) array written by
            another tool whose leading dims are the batch size as one value per row.
        allow_pickle: zarr: read values the peer wrote pickled, and write values JSON
            cannot hold pickled (unpickling can run code: only for stores you trust).
            None and False refuse both; an HDF5 file holds no pickles.
        allow_external: HDF5: read data kept in other files: external links
            (``h5py.ExternalLink``), datasets stored in raw external files
            (``create_dataset(external=...)``) and virtual datasets mapping other files.
            False (the default): opening a file that has any is an ``UnsafePathError``
            naming the entry, as a saved folder's symlink leaving it is.
        **kwargs: the library's options of a new array, used when an entry is written:
            ``h5py.Group.create_dataset``'s (``compression="gzip"``, ``chunks=...``) or
            ``zarr.Group.create_array``'s (``compressors=...``; ``chunks=(16,)`` sizes
            the leading dims of every array, as the peer's; by default each array is
            one uncompressed chunk).

    Opening walks the file's groups once (linear in their number, without recursion)
    and refuses, with a ``MetadataError``, link cycles, groups nested more than 100 deep
    (``_walk.MAX_GROUP_DEPTH``), ``_tclass`` attributes holding JSON nested deeper
    than a saved folder's ``meta.json`` may be, and declared shapes torch cannot hold. A
    group reached by two hard links is one collection, shared. An ``h5py.Empty`` dataset
    (no shape, no data) reads as the Python value None.

    Concurrency and crashes (what HDF5 promises): h5py locks the file, so while a
    process has it open for writing no other process can open it (a ``FileBusyError``),
    and a writer cannot open it while other processes read it; readers share it. HDF5
    has no journal: a writer killed while the file is open can leave it damaged (later
    opens or writes fail). Close the file (or ``ptd.file.flush()``) after writing; for
    data that must survive a killed writer, write a new file and rename it over the old
    one, or use ``memmap`` folders, whose writes are crash-safe. A zarr store has no
    locks (concurrent writers of one array race) and writes each array's metadata and
    chunks as files of their own: a killed writer leaves the arrays it did not reach
    as they were.
    """

    __slots__ = (
        "_group",
        "_file_name",
        "_mode",
        "_batch_size",
        "_device",
        "_locked",
        "_nested",
        "_records",
        "_bound",
        "_dataset_kwargs",
        "_as_stack",
        "_view",
        "_names",
        "_lock_block",
        "__weakref__",
    )
    _is_store: ClassVar[bool] = True

    _saved_at = None  # records read this: a file is not a saved folder

    def __init__(
        self,
        *,
        batch_size: Any = None,
        filename: PathLike | Any = None,
        group: Any = None,
        mode: str = "r",
        backend: str = "h5",
        device: DeviceLike = None,
        validate_batch_size: bool = True,
        non_tensor_as_stack: bool = False,
        allow_pickle: bool | None = None,
        allow_external: bool = False,
        **kwargs: Any,
    ) -> None:
        store = BACKENDS.get(backend)
        if store is None:
            msg = (
                f"PersistentTensorDict(backend={backend!r}): tclass's stores are 'h5' (HDF5) "
                "and 'zarr'"
            )
            raise UnsupportedError(msg)
        if (filename is None) == (group is None):
            msg = "PersistentTensorDict takes a filename or a group (one of them)"
            raise ArgumentValueError(msg)
        access = Access(allow_external, pickle_policy(allow_pickle, "PersistentTensorDict"))
        if group is None:
            root = store.open(filename, mode, access)
        else:
            root = _wrapped(group, store, access)
            mode = "r" if root.file.read_only else "r+"
        batch = torch.Size([]) if batch_size is None else torch.Size(batch_size)
        as_stack, opened = non_tensor_as_stack, group is None
        self._setup(
            root, mode, batch, None if device is None else as_device(device), as_stack, kwargs
        )
        try:
            walk_file(self)
            if validate_batch_size:
                self._check_shapes(batch)
        except BaseException:
            if opened:  # nothing of a refused file stays open (nor keeps HDF5's lock)
                root.file.close()
            raise

    def _setup(
        self, group: StoreGroup, mode: str, batch: torch.Size, device: torch.device | None,
        as_stack: bool, kwargs: dict[str, Any],
    ) -> None:  # fmt: skip
        self._group = group
        self._file_name = group.file.filename
        self._mode = mode
        self._device = device
        self._locked = False
        self._nested: dict[str, PersistentTensorDict] = {}
        self._records: dict[str, type] = {}  # groups holding records: their classes
        self._bound: type | None = None  # the record class whose fields this group holds
        self._dataset_kwargs = kwargs
        self._as_stack = as_stack
        self._view: Entries | None = None
        self._batch_size = batch
        self._names: Names = None
        self._lock_block = None

    @classmethod
    def _over(
        cls, group: StoreGroup, mode: str, batch: torch.Size, device: torch.device | None,
        as_stack: bool, kwargs: dict[str, Any],
    ) -> PersistentTensorDict:  # fmt: skip
        """A collection over a group of a store already opened (and walked)."""
        out = cls.__new__(cls)
        out._setup(group, mode, batch, device, as_stack, kwargs)
        return out

    # --- opening and creating ------------------------------------------------------------

    @classmethod
    def from_h5(cls, filename: PathLike, **options: Unpack[H5Options]) -> PersistentTensorDict:
        """Open an HDF5 file (metadata only): ``mode`` as ``h5py.File``'s (default
        ``"r"``); without ``batch_size``, the batch size tclass saved in the file, else
        the largest one its datasets share (at most ``batch_dims`` dims), which
        ``auto_batch_size=True`` gives even where a batch size is saved;
        ``non_tensor_as_stack`` and ``allow_external`` as the constructor's."""
        _known(options, H5Options, "from_h5")
        return cls._opened(
            batch_size=options.get("batch_size"), batch_dims=options.get("batch_dims"),
            infer=options.get("auto_batch_size", False),
            filename=filename, mode=options.get("mode", "r"),
            non_tensor_as_stack=options.get("non_tensor_as_stack", False),
            allow_external=options.get("allow_external", False),
        )  # fmt: skip

    @classmethod
    def from_zarr(cls, filename: Any, **options: Unpack[ZarrOptions]) -> PersistentTensorDict:
        """Open a zarr store (metadata only): a path (a directory), a zarr store object
        or an open ``zarr.Group``; ``mode`` as the constructor's (default ``"r"``);
        without ``batch_size``, the batch size tclass (or the peer) saved in the store,
        else the largest one its arrays share (at most ``batch_dims`` dims), which
        ``auto_batch_size=True`` gives even where a batch size is saved;
        ``non_tensor_as_stack`` and ``allow_pickle`` as the constructor's."""
        _known(options, ZarrOptions, "from_zarr")
        where = {"group": filename} if _zarr.BACKEND.owns(filename) else {"filename": filename}
        return cls._opened(
            batch_size=options.get("batch_size"), batch_dims=options.get("batch_dims"),
            infer=options.get("auto_batch_size", False),
            backend="zarr", mode=options.get("mode", "r"),
            non_tensor_as_stack=options.get("non_tensor_as_stack", False),
            allow_pickle=options.get("allow_pickle"), **where,
        )  # fmt: skip

    @classmethod
    def _opened(
        cls, *, batch_size: Any, batch_dims: int | None, infer: bool, **options: Any
    ) -> PersistentTensorDict:
        """Opened with the constructor's ``options``; without ``batch_size``, each
        group's saved batch size (unless ``infer``), else the largest its entries share."""
        out = cls(batch_size=batch_size, **options)
        if batch_size is None:
            try:
                settle_batch(out, batch_dims, infer)
                out._set_names(saved_names(out))
            except BaseException:
                out.close()
                raise
        return out

    @classmethod
    def from_dict(  # type: ignore[override]  # the peer's signature: a file to write
        cls,
        input_dict: Any,
        filename: PathLike | Any,
        *,
        auto_batch_size: bool = False,
        batch_size: Any = None,
        device: DeviceLike = None,
        backend: str = "h5",
        batch_dims: int | None = None,
        allow_pickle: bool | None = None,
        **kwargs: Any,
    ) -> PersistentTensorDict:
        """Write a dict or a collection to a new HDF5 file or zarr store (``backend``;
        replaced if it exists) and return it opened for reading and writing. Without
        ``batch_size``: a collection's own (and its dim names, kept in memory), else the
        largest one the dict's entries share. ``allow_pickle``: see the constructor.
        Tensors that require grad are written detached (their values).
        A zarr store gets consolidated metadata, as the peer writes (kept true by later
        changes); an append-only one (a ``ZipStore``, which holds each key once) is
        written whole, each key once, and returned opened for reading only."""
        if batch_size is not None and batch_dims is not None:
            msg = "from_dict: pass either batch_size or batch_dims, not both"
            raise BatchSizeError(msg)  # a ValueError, as the peer's
        schema = record_schema(input_dict) if is_record(input_dict) else None
        check_tree_values_to_save(input_dict)  # before the file is created
        if is_record(input_dict):
            input_dict = storage_of(input_dict)
        if isinstance(input_dict, TensorCollection):
            source: TensorCollection = input_dict
        elif batch_size is not None:  # as the peer: nested dicts take this batch size
            source = TensorDict(input_dict, batch_size=batch_size)
        else:
            source = TensorDict.from_dict(input_dict, auto_batch_size=True, batch_dims=batch_dims)
        if isinstance(source, TensorDictBase) and not source._is_store and source.requires_grad:
            source = source.detach()  # a save writes the values (the peer refuses it)
        batch = source.batch_size if batch_size is None else torch.Size(batch_size)
        label = f"the {'zarr store' if backend == 'zarr' else 'HDF5 file'}"
        refuse_ragged_batch(source, label, replaced=filename, truncated=backend != "zarr")
        once = backend == "zarr" and _zarr.append_only(filename)
        staged = _zarr.staging_store() if once else filename
        out = cls(
            filename=staged, mode="w", batch_size=batch, device=device, backend=backend,
            validate_batch_size=False, allow_pickle=allow_pickle, **kwargs,
        )  # fmt: skip
        out._write_meta(schema)
        out.update(source)
        if batch == source.batch_size and source._dim_names is not None:
            out._rename_all(source._dim_names)  # (else the names its groups gave, if any)
        if backend == "zarr":
            _zarr.consolidate(out._group.file)
        if once:
            out.close()
            _zarr.write_once(staged, filename)
            out = cls(
                filename=filename, mode="r", batch_size=batch, device=device, backend=backend,
                allow_pickle=allow_pickle, **kwargs,
            )  # fmt: skip
            out._set_names(saved_names(out))
        return out

    def close(self) -> None:
        """Close the file or store (reading or writing afterwards is a
        ``ClosedFileError``); closing it again does nothing."""
        self._group.file.close()

    @property
    def file(self) -> Any:
        """The open ``h5py`` file or group, or ``zarr`` group."""
        return self._group.native

    @property
    def filename(self) -> str:
        """The path of the HDF5 file or zarr store."""
        return str(self._file_name)

    def _stored_in(self) -> str:
        return str(self._file_name)

    @property
    def mode(self) -> str:
        """The mode the file was opened with."""
        return self._mode

    # --- metadata ----------------------------------------------------------------------------

    def _node(self, key: str) -> StoreGroup | StoreArray:
        group = self._live()
        try:
            return group[key]
        except KeyError:
            raise self._missing_key(key) from None

    def _live(self) -> StoreGroup:
        group = self._group
        if not group.file.is_open:
            raise ClosedFileError(f"the {group.file.format} {self._file_name!r} is closed")
        return group

    @property
    def _label(self) -> str:
        """The store's format, in messages: ``HDF5``, ``zarr``."""
        return self._group.file.format.partition(" ")[0]

    def _where(self, key: str | None = None) -> str:
        """The file and the group (or its entry ``key``), for messages."""
        name = self._group.name if self._group.file.is_open else "?"
        path = name if key is None else f"{name.rstrip('/')}/{key}"
        return f"{self._file_name!r} at {path!r}"

    def _write_meta(self, schema: dict[str, Any] | None = None) -> None:
        """Records the batch size and the dim names in the group (and a record's
        ``schema``, or the one already there)."""
        if self._mode == "r" or self._live().file.read_only:
            return
        meta: dict[str, Any] = {"batch_size": list(self._batch_size)}
        if self._names is not None:
            meta["names"] = list(self._names)
        kept = schema if schema is not None else saved_meta(self).get("schema")
        if kept is not None:
            meta["schema"] = kept
        self._live().write_meta(meta)

    def _rename_all(self, names: Names) -> None:
        """Names here and in the opened groups, recorded in their metadata."""
        self._set_names(names)
        self._record_names()

    def _record_names(self) -> None:
        """The names of this group and of those opened under it, written into their
        metadata, each once (nothing for a store open for reading)."""
        stack: list[PersistentTensorDict] = [self]
        seen: set[int] = set()
        while stack:
            node = stack.pop()
            if id(node) not in seen:
                seen.add(id(node))
                node._write_meta()
                stack += node._nested.values()

    def _shapes(self) -> list[tuple[int, ...]]:
        """The shapes that bound the batch size: each tensor array's, each per-row
        list's, and each group's batch size."""
        shapes = []
        for key in self._key_names():
            node = self._node(key)
            if is_group(node):
                shapes.append(tuple(self._child_of(key, node).batch_size))
            elif node.dtype is not None and node.shape is not None:
                shapes.append(node.shape)
            else:
                stack = node.stack_shape(self._where(key))
                if stack is not None:
                    shapes.append(tuple(stack))
        return shapes

    def _check_shapes(self, batch: torch.Size) -> None:
        n = len(batch)
        for shape in self._shapes():
            if tuple(shape[:n]) != tuple(batch):
                msg = (
                    f"batch size {list(batch)} does not fit {self._file_name!r}: an entry has "
                    f"shape {list(shape)}"
                )
                raise BatchSizeError(msg)

    def _child_of(self, key: str, group: StoreGroup) -> PersistentTensorDict:
        child = self._nested.get(key)
        if child is None or child._group.identity != group.identity:
            child = PersistentTensorDict._over(
                group, self._mode, self._batch_size, self._device, self._as_stack,
                self._dataset_kwargs,
            )  # fmt: skip
            saved = saved_batch(child)
            if saved is not None:
                child._batch_size = saved
            child._bound = self._records.get(key)
            # a group inherits the lock (held by this group) and the names of the dims
            # it shares
            if self._locked:
                child._lock_as_child_of(self)
            child._names = saved_names(child)  # (its own dims' names, when recorded)
            child._names = self._names_for(child)
            self._nested[key] = child
        return child

    # --- collection primitives ----------------------------------------------------------------

    @property
    def batch_size(self) -> torch.Size:
        """The leading dims every entry shares; assigning checks the datasets (and
        records it in the file when it is open for writing)."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: Any) -> None:
        new = torch.Size(value)
        try:
            self._check_shapes(new)
        except BatchSizeError as error:
            raise BatchSizeError(str(error)) from None
        if self._names is not None:  # kept leading dims keep their names, as a TensorDict's
            group = self._live()
            for key in self._key_names():  # the groups keep theirs, as a TensorDict's nodes
                node = group[key]
                if is_group(node):
                    self._child_of(key, node)
            self._names = _names.resized(self._names, len(new))
        self._batch_size = new
        self._write_meta()

    @property
    def device(self) -> torch.device | None:
        """The device entries are read onto (None: the CPU)."""
        return self._device

    def _lock_state(self) -> bool:
        return self._locked

    @property
    def _tensors(self) -> Mapping[str, Value]:
        """The entries as a mapping read on access (a record's fields read through it)."""
        if self._view is None:
            self._view = Entries(self)
        return self._view

    def _key_names(self) -> list[str]:
        return list(self._live().keys())

    def _has_entry(self, key: str) -> bool:
        return key in self._live()

    def _items(self) -> Iterator[tuple[str, Value]]:
        for key in self._key_names():
            yield key, self._entry(key)

    def _entry(self, key: str) -> Value:
        node = self._node(key)
        if is_group(node):
            return self._as_record(key, self._child_of(key, node))  # type: ignore[no-any-return]
        return self._value_of(key, node)

    def _value_of(self, key: str, node: StoreArray) -> Value:
        """The array ``key`` read whole; a record field's Python value fitted to its
        annotation (a list JSON kept of a tuple, a tuple again), as a loaded folder's."""
        value = self._read_dataset(node)
        return value if self._bound is None else fit_value(self._bound, key, value)

    def _entry_class(self, key: str) -> type:
        """An array of tensor data is a ``torch.Tensor`` by the store's metadata, nothing
        read (``update_at_`` asks it of every entry written)."""
        node = self._node(key)
        if not is_group(node) and node.dtype is not None:
            return torch.Tensor
        return super()._entry_class(key)

    def _as_record(self, key: str, value: Any) -> Any:
        """``value`` (the group ``key``, or rows of it) as the record it holds, if any."""
        cls: Any = self._records.get(key)
        return value if cls is None else cls._from_tensordict_unchecked(value)

    def _group_at(self, path: Sequence[str]) -> PersistentTensorDict:
        """The nested collection at ``path`` (a record's storage, for a record)."""
        node = self
        for part in path:
            found = storage_of(node._entry(part))
            if not isinstance(found, PersistentTensorDict):
                msg = (
                    f"{part!r} holds a tensor or a value, not a group, in {node._where()}: "
                    "it has no entries"
                )
                raise KeyThroughTensorError(msg)
            node = found
        return node

    def _child(self, key: str) -> TensorCollection | None:
        node = self._node(key)
        if is_group(node):
            return self._as_record(key, self._child_of(key, node))  # type: ignore[no-any-return]
        if node.dtype is not None:
            return None
        value: TensorCollection = self._read_dataset(node)  # type: ignore[assignment]  # a value node
        return value

    def _nodes(self) -> Iterator[tuple[str, Any]]:
        """Each entry, nothing read: a nested collection, a stand-in of a tensor array
        (a zero-size expansion of its dtype and shape), or the array of a Python value
        (read by ``_read_dataset``)."""
        for key in self._key_names():
            node = self._node(key)
            if is_group(node):
                yield key, self._child_of(key, node)
            elif node.dtype is not None and node.shape is not None:
                yield key, torch.zeros((), dtype=node.dtype).expand(node.shape)
            else:
                yield key, node

    def _repr_values_by_class(self) -> bool:
        return True  # "s: NonTensorData", as the peer's repr of a file, which reads no value

    def _repr_items(self) -> Iterator[tuple[str, Any]]:
        for key, found in self._nodes():
            if isinstance(found, PersistentTensorDict):
                yield key, self._as_record(key, found)
            else:
                yield key, found if isinstance(found, torch.Tensor) else self._read_dataset(found)

    def _new_like(
        self, values: dict[str, Value], batch_size: torch.Size, device: torch.device | None
    ) -> Self:
        """A TensorDict in memory; the names carry over to a result over the same batch
        (``apply``, the math, ``detach``, ``memmap``...), as a TensorDict's do."""
        out = TensorDict._new_unchecked(values, batch_size, device)
        if batch_size == self._batch_size:
            out._assign_names(self._names)
        return out  # type: ignore[return-value]

    def _map_values(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        values = {key: fn(value) for key, value in self._items()}
        return self._new_like(values, batch_size, self._device if device is ... else device)

    def _map_values_split(
        self, fn: Callable[[Value], Sequence[Value]], batch_sizes: Sequence[torch.Size]
    ) -> tuple[Self, ...]:
        return self.to_tensordict()._map_values_split(fn, batch_sizes)  # type: ignore[return-value]

    def _check_new_batch_size(self, new: torch.Size, prefix: tuple[str, ...]) -> None:
        self._check_shapes(new)

    def _assign_batch_size(self, new: torch.Size) -> None:
        self._batch_size = new
        self._write_meta()

    # --- reading -------------------------------------------------------------------------

    def _read_dataset(self, node: StoreArray) -> Value:
        """An array read whole: a tensor, or a Python-value node."""
        device = self._device or torch.device("cpu")
        if node.dtype is not None:
            return to_tensor(node.read()).to(device)
        where = f"{self._file_name!r} at {node.name!r}"
        value = node.values(where)
        stack = node.stack_shape(where)
        if stack is not None:
            return values_node(value, stack, device, where, node.stack_dims())
        rows = self._batch_size
        shape = node.shape or ()
        if self._as_stack and rows and tuple(shape[: len(rows)]) == tuple(rows):
            return values_node(value, list(shape[: len(rows)]), device, where)
        return NonTensorData._make(value, self._batch_size, device)

    def get(self, key: Any, default: Any = None) -> Any:
        """The entry at ``key`` (read from the file), or ``default`` when absent."""
        node: Any = self
        for part in _keys.key_path(key):
            node = storage_of(node)
            if not isinstance(node, PersistentTensorDict) or not node._has_entry(part):
                return default
            node = node._entry(part)
        return node

    @overload
    def __getitem__(self, index: str | tuple[str, ...]) -> Any: ...  # an entry
    @overload
    def __getitem__(self, index: BatchIndex) -> PersistentTensorDictView: ...

    def __getitem__(self, index: Any) -> Any:
        """An entry by key (read from the file): a Python value as the value itself (one
        per element as nested lists), as ``TensorDict`` gives it; or the rows ``index``
        selects, as a view of the file that reads and writes them
        (``PersistentTensorDictView``)."""
        if isinstance(index, str):
            value = self._entry(index)
        elif isinstance(index, tuple) and _keys.is_key_tuple(index):
            value = self.get(index, _MISSING)
            if value is _MISSING:
                raise self._missing_key(index)
        else:
            return self._rows(index)
        return value._read() if isinstance(value, _NonTensorNode) else value

    def get_at(self, key: Any, index: Any, default: Any = None) -> Any:
        """The rows ``index`` of the entry ``key``, reading only those; ``default``
        (``None`` if not given) when there is no entry ``key``, as a TensorDict's."""
        path = _keys.key_path(key)
        try:
            node = self._group_at(path[:-1])
        except KeyNotFoundError:  # a group on the way is missing
            return default
        if not node._has_entry(path[-1]):
            return default
        try:  # (a CPU tensor of no storage, not a meta one: its errors are torch's own)
            batch: torch.Size | None = torch.empty(()).expand(node.batch_size)[index].shape
        except IndexError:  # past the batch dims: a tensor's own dims, as get(key)[index]
            batch = None
        try:
            return node._entry_rows(path[-1], index, batch)
        except IndexError as error:
            raise _batch.entry_index_error(
                f"get_at({key!r}, {index!r})", key, None, error
            ) from None

    def _rows(self, index: Any, steps: tuple[Any, ...] = ()) -> PersistentTensorDictView:
        """The rows ``index`` selects, as a view of the store (see ``_view``; ``steps``:
        the indices of the views it was composed of, which its dim names follow)."""
        return PersistentTensorDictView(self, index, steps)

    # What a record over this collection indexes it with.
    _index = _index_int = _index_slice = _rows

    def _entry_rows(
        self, key: str, index: Any, batch: torch.Size | None, steps: tuple[Any, ...] = ()
    ) -> Value:
        """The rows ``index`` of the entry ``key``; ``batch``: their batch size, None for
        an index past the batch dims (a tensor's own dims, as ``get(key)[index]``);
        ``steps``: a view's indices, which a group's view names its dims through."""
        node = self._node(key)
        if is_group(node):
            rows = self._child_of(key, node)._rows(index, steps)
            return self._as_record(key, rows)  # type: ignore[no-any-return]
        if node.dtype is None:
            value = self._value_of(key, node)
            if isinstance(value, NonTensorData) and batch is not None:
                return NonTensorData._make(value.data, batch, value.device)
            return value[index]
        device = self._device or torch.device("cpu")
        return read_rows(node, index, len(self._batch_size)).to(device)

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """Every entry read into memory, as a plain TensorDict (``retain_none``: the
        peer's keyword for tensorclass fields, which a file never holds)."""
        entries: dict[str, Value] = {}
        for key, value in self._items():
            entries[key] = in_memory(value)
        out = TensorDict._new_unchecked(entries, self._batch_size, self._device)
        out._assign_names(self._names)
        return out

    def is_memmap(self) -> bool:
        """False: the entries are read from the store."""
        return False

    # --- devices, copies, saving -----------------------------------------------------------

    def to(self, *args: ToArg, **kwargs: Any) -> Self:
        """To a device: the same file, read onto that device. With a dtype (or anything
        else): every entry read and converted, as a plain TensorDict.

        Raises:
            ArgumentError: (a ``TypeError``, as the peer raises) for ``inplace=True``: the
                file's datasets keep their dtype and are read onto one device.
        """
        if kwargs.get("inplace"):
            msg = (
                f"Cannot use inplace=True with {type(self).__name__}.to(): the file's "
                "datasets are not converted in place; use the collection it returns "
                "(to(...) without inplace), or to_tensordict().to(..., inplace=True)"
            )
            raise ArgumentError(msg)
        if _device_only(args, kwargs):  # non_blocking too: the same file, read there
            device = as_device(args[0] if args else kwargs["device"])
            if device is None or device == self._device:  # (None: no device asked for)
                return self
            require_device(device)
            return self._over_same_file(device)  # type: ignore[return-value]
        return self.to_tensordict().to(*args, **kwargs)  # type: ignore[return-value]

    def _over_same_file(
        self, device: torch.device | None, made: dict[int, PersistentTensorDict] | None = None
    ) -> PersistentTensorDict:
        """A collection over the same groups, read onto ``device``: the nested ones and
        the records they hold made again (a shared group once, in ``made``)."""
        made = {} if made is None else made
        out = made[id(self)] = PersistentTensorDict._over(
            self._group, self._mode, self._batch_size, device, self._as_stack,
            self._dataset_kwargs,
        )  # fmt: skip
        out._records, out._bound = dict(self._records), self._bound
        out._names, out._locked = self._names, self._locked
        for key, child in self._nested.items():
            copy = made.get(id(child))
            out._nested[key] = copy if copy is not None else child._over_same_file(device, made)
        return out

    def clone(self, recurse: bool = True, *, newfile: PathLike | None = None) -> Self:
        """Every entry read into memory (a plain TensorDict); ``newfile``: a copy written
        into that file (replaced if it exists, in this one's format) and opened for
        reading and writing, as the peer's; ``recurse=False``: a new PersistentTensorDict
        over the same file, unlocked."""
        if not recurse:  # unlocked, as a TensorDict's shallow clone (and the peer's)
            return self._over_same_file(self._device).unlock_()  # type: ignore[return-value]
        if newfile is not None:
            backend = self._group.file.backend
            return PersistentTensorDict.from_dict(  # type: ignore[return-value]
                self, filename=newfile, device=self._device, backend=backend
            )
        return self.to_tensordict()  # type: ignore[return-value]

    def memmap(
        self, prefix: PathLike | None = None, copy_existing: bool = False, **options: Any
    ) -> Any:
        """A memory-mapped TensorDict copy of the file's data, written dataset by
        dataset (the file's data never held in memory whole; see ``saved_copy_of``)."""
        return super().memmap(prefix, copy_existing, **options)

    save = memmap
    dumps = memmap

    def memmap_like(
        self, prefix: PathLike | None = None, copy_existing: bool = False, **options: Any
    ) -> Any:
        """A memory-mapped TensorDict shaped like the file's data (zeros, not filled)."""
        return super().memmap_like(prefix, copy_existing, **options)

    def memmap_(
        self, prefix: PathLike | None = None, copy_existing: bool = False, **options: Any
    ) -> Self:
        """Not possible: the entries live in the store; use :meth:`memmap`."""
        raise UnsupportedError(
            "Cannot build a memmap TensorDict in-place from a PersistentTensorDict: its "
            f"entries live in the {self._group.file.format}. Use ptd.memmap(prefix) for a "
            "memory-mapped copy"
        )

    def share_memory_(self) -> Self:
        """Not possible, as in the peer: the entries live in the store, and each read is
        a new tensor (sharing them would read the whole store for nothing)."""
        raise UnsupportedError(
            "Cannot call share_memory_ on a PersistentTensorDict: its entries live in the "
            f"{self._group.file.format}, and every read makes a new tensor. Call "
            "ptd.to_tensordict().share_memory_() for a shared copy in memory, or pass the "
            "PersistentTensorDict itself to other processes (it pickles as its file)"
        )

    # --- python protocols ----------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        if not self._group.file.is_open:  # a pickle reopens the file by name and group
            raise ClosedFileError(
                f"cannot pickle a collection over the {self._group.file.format} "
                f"{self._file_name!r}: the file is closed (a pickle reopens it by name); "
                "pickle it before close(), or open the file again (from_h5 / from_zarr)"
            )
        device = None if self._device is None else str(self._device)
        mode = _REOPEN.get(self._mode, "r")
        file = self._group.file
        where = (file.target, self._group.name, mode, list(self._batch_size), device)
        access = file.access
        options = (self._as_stack, self._dataset_kwargs, access.allow_external, records_of(self))
        names = None if self._names is None else list(self._names)
        bound = (file.backend, access.allow_pickle, names, self._bound)
        return (_reopen, (*where, *options, *bound))

    @shows_compact_repr
    def __repr__(self) -> str:
        if not self._group.file.is_open:
            return f"PersistentTensorDict(closed file {self._file_name!r})"
        return compact_repr(self)  # arrays shown by dtype and shape, not read


def _known(options: Mapping[str, Any], accepted: type, function: str) -> None:
    """Refuses an option ``from_h5`` / ``from_zarr`` does not take (``device=``, a typo),
    as Python refuses an unexpected keyword argument, and the peer's: it would be ignored;
    and ``batch_size`` with ``auto_batch_size=True``, as the peer.

    Raises:
        ArgumentError: (a ``TypeError``) naming it and the options taken.
    """
    if options.get("batch_size") is not None and options.get("auto_batch_size"):
        msg = (
            f"Conflicting batch sizes in {function}: batch_size and auto_batch_size cannot be "
            "both specified (give batch_size, or auto_batch_size=True to infer it)"
        )
        raise ArgumentError(msg)  # the peer's TypeError
    taken = list(accepted.__annotations__)
    for name in options:
        if name not in taken:
            msg = (
                f"{function}() got an unexpected keyword argument {name!r} (it takes "
                f"{', '.join(taken[:-1])} and {taken[-1]}; to read onto a device, "
                f"{function}(...).to(device))"
            )
            raise ArgumentError(msg)


def _reopen(
    filename: Any, group: str, mode: str, batch_size: list[int], device: str | None,
    as_stack: bool, kwargs: dict[str, Any], allow_external: bool = False,
    records: dict[str, Any] | None = None, backend: str = "h5", allow_pickle: bool = False,
    names: list[Any] | None = None, bound: type | None = None,
) -> PersistentTensorDict:  # fmt: skip
    """A pickled collection opened again (its group of the same store, the same mode, the
    dim names it had)."""
    root = BACKENDS[backend].reopen(filename, group, mode, Access(allow_external, allow_pickle))
    try:
        out = PersistentTensorDict._over(
            root, mode, torch.Size(batch_size), None if device is None else as_device(device),
            as_stack, kwargs,
        )  # fmt: skip
        walk_file(out)
        if names is not None:
            out._set_names(tuple(names))
    except BaseException:
        root.file.close()
        raise
    out._bound = bound
    rebind(out, records or {})
    return out


def _wrapped(native: Any, preferred: Backend, access: Access) -> StoreGroup:
    """An open group of h5py or zarr (``group=``) as a store group."""
    for backend in (preferred, *BACKENDS.values()):
        root = backend.wrap(native, access)
        if root is not None:
            return root
    msg = (
        "PersistentTensorDict(group=...) takes an open h5py.File, h5py.Group or zarr.Group, "
        f"not a {type(native).__name__}"
    )
    raise ArgumentError(msg)


# A PersistentTensorDict is a mutable mapping to code that asks (``isinstance(td, Mapping)``:
# torch's ``Module.load_state_dict(td)``, ``dict(td)``), as the peer's; records are not.
MutableMapping.register(PersistentTensorDict)
# Tree utilities read a file and its views as they read a TensorDict (rebuilt as one), as
# the peer's; torch.vmap maps over a view's rows, and refuses a file, as the peer's.
register_collection(PersistentTensorDictView)
register_collection(
    PersistentTensorDict,
    no_vmap=(
        "PersistentTensorDict cannot be used with torch.vmap (its entries live in the file): "
        "call to_tensordict() first, or map over a view of its rows (ptd[:])"
    ),
)


def _device_only(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``to(*args, **kwargs)`` asks for a device alone (``non_blocking=`` aside):
    ``to(device)`` or ``to(device=...)``."""
    if kwargs.keys() - {"non_blocking", "device"}:
        return False
    if args:
        if len(args) != 1 or "device" in kwargs:
            return False
        return args[0] is None or isinstance(args[0], (str, torch.device, int))
    return "device" in kwargs
