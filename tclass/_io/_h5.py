"""``PersistentTensorDict``: a collection whose entries live in an HDF5 file (h5py, the
optional extra ``tclass[h5]``).

Opening a file reads its metadata only. Reading a key reads that dataset (a new tensor
each time: writing into it changes memory only); indexing the collection reads only the
selected rows of each dataset (a contiguous span, or the sorted distinct rows, never the
whole dataset for a few rows) and gives a plain TensorDict. Writes go to the file:
``ptd[key] = value`` (a new dataset, or a group for a collection), ``ptd[idx] = rows``,
``set_``, ``update``, and the in-place methods (``zero_``, ``apply_``...). Groups are
nested ``PersistentTensorDict``s.

The file format is the peer's: one dataset per tensor, one group per nested collection,
Python values as HDF5 strings (marked ``__tensordict_str__``) or opaque numbers, a
per-row list of values as an array marked ``__tensordict_stack__`` with its shape.
tclass adds one string attribute per group, ``_tclass``, holding JSON
(``{"batch_size": [...]}``), which the peer ignores: a file tclass wrote opens with its
batch size; any other file gets the largest batch size its datasets share, as the peer
infers it. Values that are neither strings nor numbers are written as JSON strings
(marked ``_tclass_json``). Nothing in a file makes tclass run code: h5py decodes
numbers and strings, and nothing is unpickled.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

import torch
from typing_extensions import Self, Unpack

from tclass._base._collection import TensorCollection
from tclass._base._persistence import H5Options
from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._core._device import DeviceLike, as_device
from tclass._core._records import is_record, is_record_class, storage_of
from tclass._engine._nontensor import NonTensorData, NonTensorStack
from tclass._engine._repr import compact_repr
from tclass._engine._td import TensorDict
from tclass._io._h5_datasets import (
    STACK_MARK,
    common_prefix,
    decode,
    fill,
    is_group,
    is_numeric,
    need_h5py,
    open_file,
    read_rows,
    to_numpy,
    to_tensor,
    torch_dtype,
    values_node,
    write_rows,
    write_value,
)
from tclass.errors import (
    BatchMismatchError,
    BatchSizeError,
    ClosedFileError,
    FilePermissionError,
    KeyNotFoundError,
    LockedError,
    UnsupportedError,
)

__all__ = ["PersistentTensorDict", "from_h5", "open_as", "to_h5"]

PathLike = str | os.PathLike[str]
_META = "_tclass"  # tclass's: the group's batch size, as JSON
_MAX_META = 1 << 16
_REOPEN = {"w": "r+", "w-": "r+", "x": "r+", "a": "a", "r+": "r+", "r": "r"}
_MISSING: Any = object()


class _Entries(Mapping[str, Value]):
    """The entries of a PersistentTensorDict as a mapping (read on access, written to the
    file): what a record over one reads its fields through."""

    def __init__(self, owner: PersistentTensorDict) -> None:
        self.owner = owner

    def __getitem__(self, key: str) -> Value:
        return self.owner._entry(key)

    def __setitem__(self, key: str, value: Any) -> None:
        self.owner.set(key, value)

    def __iter__(self) -> Iterator[str]:
        return iter(self.owner._key_names())

    def __len__(self) -> int:
        return len(self.owner._key_names())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.owner._has_entry(key)


class PersistentTensorDict(TensorDictBase):
    """A collection over an HDF5 file or group (needs ``pip install 'tclass[h5]'``).

    Open one with :meth:`from_h5` (or ``TensorDict.from_h5``, ``tclass.from_h5``), write
    one with :meth:`from_dict` or ``collection.to_h5(filename)``; call :meth:`close`
    when done. See the module docstring for what reads and writes do.

    Args:
        batch_size: the leading dims the entries share (checked against the datasets'
            shapes unless ``validate_batch_size=False``); None: ``[]``.
        filename: the HDF5 file to open (exclusive with ``group``).
        group: an open ``h5py.File`` or ``h5py.Group`` holding the data.
        mode: as ``h5py.File``'s: ``"r"`` (the default: read only), ``"r+"`` (read and
            write), ``"w"`` (create or truncate), ``"w-"``/``"x"`` (create, fail if it
            exists), ``"a"`` (read and write, create if needed).
        backend: ``"h5"`` (the peer's zarr backend is not supported).
        device: the device entries are read onto (None: the CPU).
        validate_batch_size: check ``batch_size`` against the datasets.
        non_tensor_as_stack: read a string (or other non-numeric) dataset written by
            another tool whose leading dims are the batch size as one value per row.
        allow_pickle: accepted for the peer's signature; HDF5 files hold no pickles.
        **kwargs: passed to ``h5py.Group.create_dataset`` when an entry is written
            (``compression="gzip"``, ``chunks=...``).

    Concurrency and crashes (what HDF5 promises): h5py locks the file, so while a
    process has it open for writing no other process can open it (a ``FileBusyError``),
    and a writer cannot open it while other processes read it; readers share it. HDF5
    has no journal: a writer killed while the file is open can leave it damaged (later
    opens or writes fail). Close the file (or ``ptd.file.flush()``) after writing; for
    data that must survive a killed writer, write a new file and rename it over the old
    one, or use ``memmap`` folders, whose writes are crash-safe.
    """

    __slots__ = (
        "_group",
        "_file_name",
        "_mode",
        "_batch_size",
        "_device",
        "_locked",
        "_nested",
        "_dataset_kwargs",
        "_as_stack",
        "_view",
        "__weakref__",
    )

    _saved_at = None  # records read this: a file is not a saved folder

    def __init__(
        self,
        *,
        batch_size: Any = None,
        filename: PathLike | None = None,
        group: Any = None,
        mode: str = "r",
        backend: str = "h5",
        device: DeviceLike = None,
        validate_batch_size: bool = True,
        non_tensor_as_stack: bool = False,
        allow_pickle: bool | None = None,
        **kwargs: Any,
    ) -> None:
        if backend != "h5":
            raise UnsupportedError(
                f"PersistentTensorDict(backend={backend!r}): tclass reads and writes HDF5 only"
            )
        if (filename is None) == (group is None):
            raise ValueError("PersistentTensorDict takes a filename or a group (one of them)")
        if group is None:
            group = open_file(os.fspath(filename), mode)  # type: ignore[arg-type]
        else:
            need_h5py()
        self._group = group
        self._file_name = group.file.filename
        self._mode = mode if filename is not None else ("r" if group.file.mode == "r" else "r+")
        self._device = None if device is None else as_device(device)
        self._locked = False
        self._nested: dict[str, PersistentTensorDict] = {}
        self._dataset_kwargs = kwargs
        self._as_stack = non_tensor_as_stack
        self._view: _Entries | None = None
        batch = torch.Size([]) if batch_size is None else torch.Size(batch_size)
        self._batch_size = batch
        if validate_batch_size:
            self._check_shapes(batch)

    # --- opening and creating ------------------------------------------------------------

    @classmethod
    def from_h5(cls, filename: PathLike, **options: Unpack[H5Options]) -> PersistentTensorDict:
        """Open an HDF5 file (metadata only): ``mode`` as ``h5py.File``'s (default
        ``"r"``); without ``batch_size``, the batch size tclass saved in the file, else
        the largest one its datasets share (at most ``batch_dims`` dims);
        ``non_tensor_as_stack`` as the constructor's."""
        batch_size = options.get("batch_size")
        out = cls(
            filename=filename,
            mode=options.get("mode", "r"),
            batch_size=batch_size,
            non_tensor_as_stack=options.get("non_tensor_as_stack", False),
        )
        if batch_size is None:
            out._settle_batch(options.get("batch_dims"))
        return out

    @classmethod
    def from_dict(  # type: ignore[override]  # the peer's signature: a file to write
        cls,
        input_dict: Any,
        filename: PathLike,
        *,
        auto_batch_size: bool = False,
        batch_size: Any = None,
        device: DeviceLike = None,
        backend: str = "h5",
        batch_dims: int | None = None,
        allow_pickle: bool | None = None,
        **kwargs: Any,
    ) -> PersistentTensorDict:
        """Write a dict or a collection to a new HDF5 file (truncated if it exists) and
        return it opened for reading and writing. Without ``batch_size``: a
        collection's own, else the largest one the dict's entries share."""
        if is_record(input_dict):
            input_dict = storage_of(input_dict)
        if isinstance(input_dict, TensorCollection):
            source: TensorCollection = input_dict
        else:
            source = TensorDict.from_dict(input_dict, batch_dims=batch_dims)
        batch = source.batch_size if batch_size is None else torch.Size(batch_size)
        out = cls(
            filename=filename, mode="w", batch_size=batch, device=device, backend=backend,
            validate_batch_size=False, **kwargs,
        )  # fmt: skip
        out._write_meta()
        out.update(source)
        return out

    def close(self) -> None:
        """Close the file (reading or writing afterwards is a ``ClosedFileError``);
        closing it again does nothing."""
        if self._group.id.valid:
            self._group.file.close()

    @property
    def file(self) -> Any:
        """The open ``h5py`` file or group."""
        return self._group

    @property
    def filename(self) -> str:
        """The path of the HDF5 file."""
        return str(self._file_name)

    @property
    def mode(self) -> str:
        """The mode the file was opened with."""
        return self._mode

    # --- metadata ----------------------------------------------------------------------------

    def _node(self, key: str) -> Any:
        group = self._live()
        try:
            return group[key]
        except KeyError:
            raise self._missing_key(key) from None

    def _live(self) -> Any:
        if not self._group.id.valid:
            raise ClosedFileError(f"the HDF5 file {self._file_name!r} is closed")
        return self._group

    def _saved_batch(self) -> torch.Size | None:
        raw = self._live().attrs.get(_META)
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", "replace")
        if not isinstance(raw, str) or len(raw) > _MAX_META:
            return None
        try:
            meta = json.loads(raw)
        except ValueError:
            return None
        sizes = meta.get("batch_size") if isinstance(meta, dict) else None
        if isinstance(sizes, list) and all(type(s) is int and s >= 0 for s in sizes):
            return torch.Size(sizes)
        return None

    def _write_meta(self) -> None:
        if self._mode != "r":
            self._live().attrs[_META] = json.dumps({"batch_size": list(self._batch_size)})

    def _settle_batch(self, batch_dims: int | None) -> None:
        """The saved batch size, else the largest the datasets share (and so below)."""
        saved = self._saved_batch()
        if saved is not None:
            self._check_shapes(saved)
            self._batch_size = saved
        else:
            shapes = self._shapes(infer=True)
            self._batch_size = common_prefix(shapes, batch_dims)
        for child in self._children():
            child._settle_batch(batch_dims)

    def _shapes(self, infer: bool = False) -> list[tuple[int, ...]]:
        """The shapes that bound the batch size: each numeric dataset's, each per-row
        list's, and each group's batch size (inferred first when ``infer``)."""
        shapes = []
        for key in self._key_names():
            node = self._node(key)
            if is_group(node):
                child = self._child_of(key, node)
                if infer:
                    child._settle_batch(None)
                shapes.append(tuple(child.batch_size))
            elif is_numeric(node):
                shapes.append(node.shape)
            elif STACK_MARK in node.attrs:
                shapes.append(tuple(int(size) for size in node.attrs[STACK_MARK]))
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

    def _children(self) -> list[PersistentTensorDict]:
        return [
            self._child_of(key, node)
            for key in self._key_names()
            if is_group(node := self._node(key))
        ]

    def _child_of(self, key: str, group: Any) -> PersistentTensorDict:
        child = self._nested.get(key)
        if child is None or child._group != group:
            child = PersistentTensorDict(
                group=group, batch_size=self._batch_size, device=self._device,
                validate_batch_size=False, non_tensor_as_stack=self._as_stack,
                **self._dataset_kwargs,
            )  # fmt: skip
            child._mode = self._mode
            saved = child._saved_batch()
            if saved is not None:
                child._batch_size = saved
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
            self._view = _Entries(self)
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
            return self._child_of(key, node)
        return self._read_dataset(node)

    def _child(self, key: str) -> TensorCollection | None:
        node = self._node(key)
        if is_group(node):
            return self._child_of(key, node)
        if is_numeric(node):
            return None
        value: TensorCollection = self._read_dataset(node)  # type: ignore[assignment]  # a value node
        return value

    def _repr_items(self) -> Iterator[tuple[str, Any]]:
        for key in self._key_names():
            node = self._node(key)
            if is_group(node):
                yield key, self._child_of(key, node)
            elif is_numeric(node):  # a stand-in of its dtype and shape: nothing read
                yield key, torch.zeros((), dtype=torch_dtype(node)).expand(node.shape)
            else:
                yield key, self._read_dataset(node)

    def _new_like(
        self, values: dict[str, Value], batch_size: torch.Size, device: torch.device | None
    ) -> Self:
        return TensorDict._new_unchecked(values, batch_size, device)  # type: ignore[return-value]

    def _map_values(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        values = {key: fn(value) for key, value in self._items()}
        return self._new_like(values, batch_size, self._device if device is ... else device)

    def _map_values_split(
        self, fn: Callable[[Value], Sequence[Value]], batch_sizes: Sequence[torch.Size]
    ) -> tuple[Self, ...]:
        return self.to_tensordict()._map_values_split(fn, batch_sizes)  # type: ignore[return-value]

    def _check_batch_size(self, new: torch.Size, prefix: tuple[str, ...]) -> None:
        self._check_shapes(new)

    def _assign_batch_size(self, new: torch.Size) -> None:
        self._batch_size = new
        self._write_meta()

    # --- reading -------------------------------------------------------------------------

    def _read_dataset(self, node: Any) -> Value:
        """A dataset read whole: a tensor, or a Python-value node."""
        device = self._device or torch.device("cpu")
        if is_numeric(node):
            return to_tensor(node[()]).to(device)
        value = decode(node)
        stack = node.attrs.get(STACK_MARK)
        if stack is not None:
            return values_node(value, [int(size) for size in stack], device)
        rows = self._batch_size
        if self._as_stack and rows and tuple(node.shape[: len(rows)]) == tuple(rows):
            return values_node(value, list(node.shape[: len(rows)]), device)
        return NonTensorData._make(value, self._batch_size, device)

    def get(self, key: Any, default: Any = None) -> Any:
        """The entry at ``key`` (read from the file), or ``default`` when absent."""
        node: Any = self
        for part in (key,) if isinstance(key, str) else tuple(key):
            if not isinstance(node, PersistentTensorDict) or not node._has_entry(part):
                return default
            node = node._entry(part)
        return node

    def __getitem__(self, index: Any) -> Any:
        """An entry by key (read from the file), or the rows ``index`` selects, read
        from each dataset into a plain TensorDict."""
        if isinstance(index, str):
            return self._entry(index)
        if isinstance(index, tuple) and index and all(isinstance(part, str) for part in index):
            value = self.get(index, _MISSING)
            if value is _MISSING:
                raise self._missing_key(index)
            return value
        return self._rows(index)

    def get_at(self, key: Any, index: Any, default: Any = _MISSING) -> Any:
        """The rows ``index`` of the entry ``key``, reading only those."""
        path = (key,) if isinstance(key, str) else tuple(key)
        node: Any = self
        for part in path[:-1]:
            node = node._entry(part)
        if not node._has_entry(path[-1]):
            if default is _MISSING:
                raise self._missing_key(key)
            return default
        return node._entry_rows(
            path[-1], index, torch.empty(node.batch_size, device="meta")[index].shape
        )

    def _rows(self, index: Any) -> TensorDict:
        if isinstance(index, list):
            index = torch.tensor(index)
        batch = torch.empty(self._batch_size, device="meta")[index].shape
        entries = {key: self._entry_rows(key, index, batch) for key in self._key_names()}
        return TensorDict._new_unchecked(entries, batch, self._device)

    # What a record over this collection indexes it with.
    _index = _index_int = _index_slice = _rows

    def _entry_rows(self, key: str, index: Any, batch: torch.Size) -> Value:
        node = self._node(key)
        if is_group(node):
            return self._child_of(key, node)._rows(index)
        if not is_numeric(node):
            value = self._read_dataset(node)
            if isinstance(value, NonTensorData):
                return NonTensorData._make(value.data, batch, value.device)
            return value[index]
        device = self._device or torch.device("cpu")
        return read_rows(node, index, len(self._batch_size)).to(device)

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """Every entry read into memory, as a plain TensorDict (``retain_none``: the
        peer's keyword for tensorclass fields, which a file never holds)."""
        entries: dict[str, Value] = {}
        for key, value in self._items():
            entries[key] = (
                value.to_tensordict() if isinstance(value, PersistentTensorDict) else value
            )
        return TensorDict._new_unchecked(entries, self._batch_size, self._device)

    def is_memmap(self) -> bool:
        """False: the entries are read from an HDF5 file."""
        return False

    # --- writing -------------------------------------------------------------------------

    def _writable(self) -> Any:
        group = self._live()
        if group.file.mode == "r":
            msg = (
                f"{self._file_name!r} was opened read-only (mode='r'); open it with "
                "mode='r+' (or 'a') to write into it"
            )
            raise FilePermissionError(msg)
        return group

    def set(
        self, key: Any, value: Any, inplace: bool = False, *, non_blocking: bool = False
    ) -> Self:
        """Write ``value`` under ``key``: a tensor becomes a dataset (replacing one of that
        name), a collection or dict a group, a Python value a string or number dataset.
        With ``inplace`` and an existing dataset, the data is written into it."""
        path = (key,) if isinstance(key, str) else tuple(key)
        if len(path) > 1:
            self._parent_for(path).set(path[-1], value, inplace=inplace)
            return self
        key = path[0]
        group = self._writable()
        if inplace and key in group and isinstance(group[key], need_h5py().Dataset):
            return self.set_(key, value)
        if self._locked:
            raise LockedError(
                f"cannot set {key!r} in a locked PersistentTensorDict; unlock it first"
            )
        if is_record(value):
            value = storage_of(value)
        if isinstance(value, dict):
            value = TensorDict(value, self._batch_size)
        if isinstance(value, (NonTensorData, NonTensorStack)):
            self._replace(group, key, lambda: write_value(group, key, value, self._dataset_kwargs))
        elif isinstance(value, TensorCollection):
            self._set_collection(group, key, value)
        else:
            tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
            self._check_rows(key, tensor.shape)
            array = to_numpy(tensor)
            self._replace(
                group, key, lambda: group.create_dataset(key, data=array, **self._dataset_kwargs)
            )
        return self

    def _replace(self, group: Any, key: str, create: Callable[[], Any]) -> None:
        if key in group:
            del group[key]
            self._nested.pop(key, None)
        create()

    def _set_collection(self, group: Any, key: str, value: TensorCollection) -> None:
        self._check_rows(key, value.batch_size)
        self._replace(group, key, lambda: group.create_group(key))
        child = self._child_of(key, group[key])
        child._batch_size = value.batch_size
        child._write_meta()
        child.update(value)

    def _check_rows(self, key: str, shape: torch.Size) -> None:
        batch = self._batch_size
        if tuple(shape[: len(batch)]) != tuple(batch):
            raise BatchMismatchError(key, shape, batch)

    def _parent_for(self, path: tuple[str, ...]) -> PersistentTensorDict:
        node = self
        for part in path[:-1]:
            group = node._writable()
            if part not in group:
                if node._locked:
                    raise LockedError(f"cannot add {part!r} to a locked PersistentTensorDict")
                group.create_group(part)
                child = node._child_of(part, group[part])
                child._write_meta()
            found = node._entry(part)
            if not isinstance(found, PersistentTensorDict):
                raise KeyNotFoundError(f"cannot set {path!r}: {part!r} is not a group")
            node = found
        return node

    def __setitem__(self, index: Any, value: Any) -> None:
        """``ptd[key] = value`` writes an entry; ``ptd[idx] = rows`` writes the rows of
        every dataset (``rows`` a collection, a dict, or a number for every tensor)."""
        if isinstance(index, str) or (
            isinstance(index, tuple) and index and all(isinstance(part, str) for part in index)
        ):
            self.set(index, value)
            return
        self._write_rows(index, value)

    def _write_rows(self, index: Any, value: Any) -> None:
        group = self._writable()
        if isinstance(index, list):
            index = torch.tensor(index)
        if is_record(value):
            value = storage_of(value)
        for key in self._key_names():
            node = group[key]
            if isinstance(value, (int, float, bool)):
                part: Any = value
            elif isinstance(value, Mapping) or isinstance(value, TensorCollection):
                part = value.get(key, _MISSING)
                if part is _MISSING:
                    continue
            else:
                part = value
            if is_group(node):
                self._child_of(key, node)._write_rows(index, part)
            elif is_numeric(node):
                write_rows(node, index, part, len(self._batch_size))

    def set_(self, key: Any, value: Any, *, non_blocking: bool = False) -> Self:
        """Write ``value`` into the existing entry ``key`` (a dataset, or a group entry
        by entry)."""
        path = (key,) if isinstance(key, str) else tuple(key)
        node: Any = self
        for part in path[:-1]:
            node = node._entry(part)
        group = node._writable()
        name = path[-1]
        if name not in group:
            raise self._missing_key(key)
        target = group[name]
        if is_group(target):
            node._child_of(name, target).update(value, inplace=True)
        elif isinstance(value, (NonTensorData, NonTensorStack)):
            node._replace(
                group, name, lambda: write_value(group, name, value, node._dataset_kwargs)
            )
        else:
            write_rows(target, Ellipsis, value, 0)
        return self

    def _update_entries(
        self,
        source: Any,
        clone: bool,
        inplace: bool,
        keys_to_update: Sequence[Any] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> Self:
        """Write every entry of ``source`` (in place into existing datasets with
        ``inplace``)."""
        items = _source_items(source)
        wanted = (
            None
            if keys_to_update is None
            else {k if isinstance(k, str) else k[0] for k in keys_to_update}
        )
        for key, value in items:
            if wanted is None or key in wanted:
                self.set(key, value, inplace=inplace)
        return self

    def update_(
        self,
        input_dict_or_td: Any = None,
        clone: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Self:
        """Write every entry of ``input_dict_or_td`` (and ``kwargs``) into the existing
        datasets."""
        source = dict(kwargs) if input_dict_or_td is None else input_dict_or_td
        if input_dict_or_td is not None and kwargs:
            source = {**dict(_source_items(input_dict_or_td)), **kwargs}
        return self.update(source, clone=clone, inplace=True, keys_to_update=keys_to_update)

    def del_(self, key: Any) -> Self:
        """Delete the entry ``key`` from the file."""
        path = (key,) if isinstance(key, str) else tuple(key)
        node = self._parent_for(path) if len(path) > 1 else self
        group = node._writable()
        if node._locked:
            raise LockedError(f"cannot delete {path[-1]!r} from a locked PersistentTensorDict")
        if path[-1] not in group:
            raise self._missing_key(key)
        del group[path[-1]]
        node._nested.pop(path[-1], None)
        return self

    def __delitem__(self, key: Any) -> None:
        self.del_(key)

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        """Read the entry ``key`` into memory, delete it from the file, and return it."""
        value = self.get(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise self._missing_key(key)
            return default
        if isinstance(value, PersistentTensorDict):
            value = value.to_tensordict()
        self.del_(key)
        return value

    def rename_key_(self, old_key: str, new_key: str, safe: bool = False) -> Self:
        """Rename an entry in the file (moved, not copied)."""
        group = self._writable()
        if safe and new_key in group:
            raise KeyNotFoundError(f"cannot rename {old_key!r}: {new_key!r} exists")
        if new_key in group:
            del group[new_key]
        group.move(old_key, new_key)
        self._nested.clear()
        return self

    def lock_(self) -> Self:
        """Refuse new or removed entries (in-place writes still work)."""
        self._locked = True
        for child in self._nested.values():
            child.lock_()
        return self

    def unlock_(self) -> Self:
        """Accept new and removed entries again."""
        self._locked = False
        for child in self._nested.values():
            child.unlock_()
        return self

    # --- in-place: written back to the file ----------------------------------------------

    def _apply_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...]
    ) -> Self:
        group = self._writable()
        for key in self._key_names():
            node = group[key]
            paired = tuple(other._entry(key) for other in others)
            if is_group(node):
                self._child_of(key, node)._apply_in_place(fn, paired)
            elif is_numeric(node):
                tensor = to_tensor(node[()])
                result = fn(tensor, *paired)
                node[...] = to_numpy(tensor if result is None else result)
        return self

    def _pointwise_(
        self,
        foreach: Callable[..., Any] | None,
        each: Callable[..., Any],
        operands: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> Self:
        """In-place math (``td += 1``, ``mul_``, ``lerp_``...) on the file: the datasets
        read, worked on in memory, written back."""
        local = self.to_tensordict()
        local._pointwise_(foreach, each, operands, kwargs, **options)
        return self.update_(local)

    def zero_(self) -> Self:
        """Write zeros into every dataset (nothing is read)."""
        return self._fill_all(0)

    def _fill_all(self, value: float | bool) -> Self:
        group = self._writable()
        for key in self._key_names():
            node = group[key]
            if is_group(node):
                self._child_of(key, node)._fill_all(value)
            elif is_numeric(node) and node.size:
                fill(node, value)
        return self

    def fill_(self, key: Any, value: float | bool | torch.Tensor) -> Self:
        """Fill the dataset ``key`` (or every dataset of a group) with ``value``."""
        target = self.get(key, _MISSING)
        if target is _MISSING:
            raise self._missing_key(key)
        if isinstance(target, PersistentTensorDict):
            target._fill_all(float(value) if isinstance(value, torch.Tensor) else value)
            return self
        path = (key,) if isinstance(key, str) else tuple(key)
        parent = self.get(path[:-1]) if len(path) > 1 else self
        fill(
            parent._writable()[path[-1]], float(value) if isinstance(value, torch.Tensor) else value
        )
        return self

    # --- devices, copies, saving -----------------------------------------------------------

    def to(self, *args: Any, **kwargs: Any) -> Self:
        """To a device: the same file, read onto that device. With a dtype (or anything
        else): every entry read and converted, as a plain TensorDict."""
        if len(args) == 1 and not kwargs and isinstance(args[0], (str, torch.device, int)):
            device = as_device(args[0])
            return self if device == self._device else self._over_same_file(device)  # type: ignore[return-value]
        return self.to_tensordict().to(*args, **kwargs)  # type: ignore[return-value]

    def _over_same_file(self, device: torch.device | None) -> PersistentTensorDict:
        out = PersistentTensorDict(
            group=self._group, batch_size=self._batch_size, device=device,
            validate_batch_size=False, non_tensor_as_stack=self._as_stack,
            **self._dataset_kwargs,
        )  # fmt: skip
        out._mode = self._mode
        return out

    def clone(self, recurse: bool = True) -> Self:
        """Every entry read into memory (a plain TensorDict); ``recurse=False``: a new
        PersistentTensorDict over the same file."""
        if not recurse:
            return self._over_same_file(self._device)  # type: ignore[return-value]
        return self.to_tensordict()  # type: ignore[return-value]

    def memmap(
        self, prefix: PathLike | None = None, copy_existing: bool = False, **options: Any
    ) -> Any:
        """A memory-mapped TensorDict copy of the file's data, written dataset by
        dataset (the file's data never held in memory whole)."""
        saved = self._skeleton().memmap_like(prefix, copy_existing, **options)
        self._copy_into(saved)
        return saved

    save = memmap
    dumps = memmap

    def memmap_like(
        self, prefix: PathLike | None = None, copy_existing: bool = False, **options: Any
    ) -> Any:
        """A memory-mapped TensorDict shaped like the file's data (zeros, not filled)."""
        return self._skeleton().memmap_like(prefix, copy_existing, **options)

    def memmap_(
        self, prefix: PathLike | None = None, copy_existing: bool = False, **options: Any
    ) -> Self:
        """Not possible: the entries live in the HDF5 file; use :meth:`memmap`."""
        raise UnsupportedError(
            "a PersistentTensorDict cannot become memory-mapped in place: its entries live in "
            "the HDF5 file. Use ptd.memmap(prefix) for a memory-mapped copy"
        )

    def _skeleton(self) -> TensorDict:
        """A TensorDict like the file's data whose tensors are zero-size expansions
        (no memory), for ``memmap_like``."""
        entries: dict[str, Value] = {}
        for key in self._key_names():
            node = self._node(key)
            if is_group(node):
                entries[key] = self._child_of(key, node)._skeleton()
            elif is_numeric(node):
                entries[key] = torch.zeros((), dtype=torch_dtype(node)).expand(node.shape)
            else:
                entries[key] = self._read_dataset(node)
        return TensorDict._new_unchecked(entries, self._batch_size, None)

    def _copy_into(self, saved: TensorDict) -> None:
        for key in self._key_names():
            node = self._node(key)
            target = saved._entry(key)
            if is_group(node):
                self._child_of(key, node)._copy_into(target)  # type: ignore[arg-type]
            elif is_numeric(node) and node.size:
                node.read_direct(target.numpy())  # into the mapped file

    # --- python protocols ----------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        device = None if self._device is None else str(self._device)
        mode = _REOPEN.get(self._mode, "r")
        where = (self._file_name, self._group.name, mode, list(self._batch_size), device)
        return (_reopen, (*where, self._as_stack, self._dataset_kwargs))

    def __repr__(self) -> str:
        if not self._group.id.valid:
            return f"PersistentTensorDict(closed file {self._file_name!r})"
        return compact_repr(self)  # datasets shown by dtype and shape, not read


def _reopen(
    filename: str, group: str, mode: str, batch_size: list[int], device: str | None,
    as_stack: bool, kwargs: dict[str, Any],
) -> PersistentTensorDict:  # fmt: skip
    file = open_file(filename, mode)
    out = PersistentTensorDict(
        group=file if group == "/" else file[group], batch_size=batch_size, device=device,
        validate_batch_size=False, non_tensor_as_stack=as_stack, **kwargs,
    )  # fmt: skip
    out._mode = mode
    return out


# --- module functions (and the forwarders' implementations) ------------------------------------


def from_h5(h5_file: PathLike, **options: Unpack[H5Options]) -> TensorDictBase:
    """Open an HDF5 file as a :class:`PersistentTensorDict` (see
    ``PersistentTensorDict.from_h5``)."""
    return PersistentTensorDict.from_h5(h5_file, **options)


def open_as(cls: type, filename: PathLike, **options: Unpack[H5Options]) -> Any:
    """``cls.from_h5(filename, ...)``: the file as a PersistentTensorDict, or a record of
    ``cls`` over one for a tensorclass."""
    opened = PersistentTensorDict.from_h5(filename, **options)
    if is_record_class(cls):
        return cls._from_tensordict_unchecked(opened)  # type: ignore[attr-defined]
    return opened


def to_h5(node: Any, filename: PathLike, **kwargs: Any) -> Any:
    """``collection.to_h5(filename, **kwargs)``: written to a new file, returned opened
    for reading and writing (a record of the same class over it, for a record)."""
    written = PersistentTensorDict.from_dict(node, filename, **kwargs)
    if is_record(node):
        return type(node)._from_tensordict_unchecked(written)
    return written


def _source_items(source: Any) -> Iterable[tuple[Any, Any]]:
    """The (key, value) pairs of what ``update`` writes (a record's, a collection's, a
    mapping's)."""
    if is_record(source):
        source = storage_of(source)
    if isinstance(source, TensorCollection):
        return source._items()
    return cast(Iterable[tuple[Any, Any]], source.items())
