"""The peer's methods that work on the folder a collection is saved in: ``saved_path``,
``make_memmap`` / ``make_memmap_from_tensor`` / ``make_memmap_from_storage`` (a new
entry allocated straight in the folder) and ``memmap_refresh_`` (the folder read back,
with the entries other processes added or removed).

A new entry goes through the node's saved folder (``_store_entry``), which writes its
file and lists it in ``meta.json`` before memory changes, as every write into a saved
collection does; a locked saved collection takes it too (the peer's ``memmap_``
leaves collections locked, and these methods are how it grows them).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

import torch

from tclass._base._provided import IO
from tclass._base.implemented._lock_graph import LockGraph
from tclass._core._jagged import leaf_shape
from tclass._core._keys import key_path
from tclass._core._memmap import MemoryMappedTensor
from tclass._core._memmap_files import storage_file
from tclass._core._records import is_record, storage_of
from tclass._engine._nontensor import _NonTensorNode
from tclass._engine._td import TensorDict
from tclass._engine._walk import NodeVisitor
from tclass._io._api import is_memmap, load_memmap
from tclass._io._schema import check_loaded_values
from tclass._io.memmap._format import file_name
from tclass._io.memmap._nested_leaf import build_nested
from tclass.errors import (
    BatchMismatchError,
    EntryExistsError,
    FileConflictError,
    NotSavedError,
    ShapeError,
    UnsupportedError,
)

__all__ = [
    "make_memmap",
    "make_memmap_from_storage",
    "make_memmap_from_tensor",
    "memmap_refresh",
    "saved_path",
]


def saved_path(node: Any) -> Path | None:
    """The folder ``node`` is saved in (``collection.saved_path``); None for one that is
    memory-mapped but in no folder (``memmap()`` without a prefix, a lazy stack), as
    the peer."""
    storage = storage_of(node)
    if not (isinstance(storage, TensorDict) and storage._saved is not None) and is_memmap(node):
        return None
    return Path(_saved_node(node, "saved_path")._saved.folder)  # type: ignore[union-attr]


def _saved_node(node: Any, op: str) -> TensorDict:
    """``node``'s storage, which must be a TensorDict saved in a folder."""
    storage = storage_of(node)
    if isinstance(storage, TensorDict) and storage._saved is not None:
        return storage
    msg = (
        f"{op}: this {type(node).__name__} is not saved in a folder (memmap_(prefix), "
        "memmap(prefix) or load_memmap(prefix) give one that is)"
    )
    raise NotSavedError(msg)


def _holder(node: Any, key: Any, op: str) -> tuple[TensorDict, str]:
    """The saved TensorDict that will hold the new entry ``key`` (nested TensorDicts on
    the way are created in the folder), and the entry's own name."""
    holder = _saved_node(node, op)
    path = key_path(key)
    for part in path[:-1]:
        if not holder._has_entry(part):  # as the peer, also under a lock (as the entry)
            holder._store_entry(
                part, TensorDict._new_unchecked({}, holder.batch_size, holder.device)
            )
        child = holder._entry(part)
        if not isinstance(child, TensorDict) or child._saved is None:
            msg = f"{op}: {part!r} on the way to {key!r} is not a TensorDict saved in the folder"
            raise NotSavedError(msg)
        holder = child
    name = path[-1]
    if holder._has_entry(name):
        msg = (
            f"{op}: {key!r} already exists within the target tensordict (the saved "
            "collection); delete it first (del_) to make a new one"
        )
        raise EntryExistsError(msg)
    return holder, name


def _check_shape(holder: TensorDict, key: Any, shape: torch.Size) -> None:
    batch = holder.batch_size
    if shape[: len(batch)] != batch:
        raise BatchMismatchError(key_path(key), shape, batch)


def make_memmap(node: Any, key: Any, shape: Any, dtype: torch.dtype | None) -> Any:
    """``collection.make_memmap(key, shape, dtype=)``: a new zero entry allocated in the
    folder (a sparse file: nothing is written)."""
    holder, name = _holder(node, key, "make_memmap")
    if isinstance(shape, torch.Tensor) and shape.dim() == 2:  # element shapes: nested
        nested = _zero_nested(shape, dtype or torch.get_default_dtype(), key)
        _check_shape(holder, key, leaf_shape(nested))
        return holder._store_entry(name, nested, blank=True)
    size = torch.Size(shape.tolist() if isinstance(shape, torch.Tensor) else shape)
    _check_shape(holder, key, size)
    blank = torch.zeros((), dtype=dtype or torch.get_default_dtype()).expand(size)
    return holder._store_entry(name, blank, blank=True)


def _zero_nested(sizes: torch.Tensor, dtype: torch.dtype, key: Any) -> torch.Tensor:
    """A nested tensor of zeros (strided layout) of element shapes ``sizes`` (one row
    per element), as ``make_memmap(key, shape=sizes)`` allocates it."""
    if sizes.is_floating_point() or sizes.is_complex() or not len(sizes) or (sizes < 0).any():
        msg = (
            f"make_memmap: shape={sizes.tolist()!r} for {key!r} is not a table of element "
            "shapes (one row of non-negative ints per element of a nested tensor)"
        )
        raise ShapeError(msg)
    sizes = sizes.to(torch.int64)
    return build_nested(torch.zeros(int(sizes.prod(1).sum()), dtype=dtype), sizes, "strided")


def make_memmap_from_tensor(node: Any, key: Any, tensor: torch.Tensor, copy_data: bool) -> Any:
    """``collection.make_memmap_from_tensor(key, tensor, copy_data=)``: a new entry in
    the folder holding ``tensor``'s data (zeros of its shape and dtype without
    ``copy_data``)."""
    holder, name = _holder(node, key, "make_memmap_from_tensor")
    _check_shape(holder, key, leaf_shape(tensor))
    if tensor.is_nested:  # its files are written anew either way (zeros unless copy_data)
        return holder._store_entry(name, tensor.detach(), blank=not copy_data)
    if not copy_data:
        blank = torch.zeros((), dtype=tensor.dtype).expand(tensor.shape)
        return holder._store_entry(name, blank, blank=True)
    return holder._store_entry(name, tensor.detach().cpu())


def make_memmap_from_storage(
    node: Any,
    key: Any,
    storage: torch.UntypedStorage,
    shape: Any,
    dtype: torch.dtype | None,
) -> Any:
    """``collection.make_memmap_from_storage(key, storage, shape, dtype=)``: a new entry
    in the folder holding the bytes of ``storage`` read as ``dtype`` and ``shape``."""
    if isinstance(shape, torch.Tensor) and shape.ndim == 2:  # (before _holder adds nodes)
        msg = (
            f"make_memmap_from_storage: {key!r} was given a nested shape (a tensor of "
            f"element shapes, {shape.tolist()}); a storage holds one dense tensor: build the "
            "nested tensor and pass it to make_memmap_from_tensor"
        )
        raise UnsupportedError(msg)
    size = torch.Size(shape.tolist() if isinstance(shape, torch.Tensor) else shape)
    holder, name = _holder(node, key, "make_memmap_from_storage")
    _check_shape(holder, key, size)
    folder = cast(Any, holder._saved).folder  # _holder checked that it is saved
    _check_storage_file(storage, os.path.join(folder, file_name(name) + ".memmap"))
    source = MemoryMappedTensor.from_storage(
        storage, shape=size, dtype=dtype or torch.get_default_dtype()
    )
    return holder._store_entry(name, source)


def _check_storage_file(storage: torch.UntypedStorage, target: str) -> None:
    """A storage mapping a file must map the entry's own file: the entry is a copy in
    the folder, so the other file would silently stop following it (the peer refuses
    too)."""
    filename = storage_file(storage)
    if filename is None:
        return
    filename = os.path.realpath(filename)
    if filename == os.path.realpath(target):
        return
    msg = (
        "make_memmap_from_storage: Providing a storage with an associated filename other "
        f"than the entry's file is refused (the storage maps {filename!r}, the entry's file "
        f"is {target!r}): writes to one would not reach the other; pass the tensor to "
        "make_memmap_from_tensor to copy it into the folder"
    )
    raise FileConflictError(msg)


def memmap_refresh(node: Any, allow_pickle: bool | None) -> Any:
    """``collection.memmap_refresh_()``: ``node`` made to hold what its folder holds now
    (entries added, removed or rewritten by another process), mapped as loaded."""
    folder = _saved_node(node, "memmap_refresh_")._saved.folder  # type: ignore[union-attr]
    loaded = load_memmap(folder, allow_pickle=allow_pickle)
    if is_record(node):  # its fields' folder loads as a TensorDict: checked here, as a load
        check_loaded_values(type(node), loaded, os.fspath(folder))  # of the record checks it
    _Refresh().visit(node, loaded)
    return node


class _Refresh(NodeVisitor[None]):
    """Gives each node of a tree the entries of the same node loaded again."""

    action = "refresh"

    def visit_tensordict(self, td: TensorDict, loaded: Any) -> None:
        loaded = storage_of(loaded)
        saved = td._saved
        td._attach_folder(None)  # dropped keys leave memory only: the folder has none
        try:
            for key in td._key_names():
                if not loaded._has_entry(key):
                    td._remove_entry(key)
        finally:
            td._attach_folder(saved)
        for key, value in loaded._items():
            # a nested record (here or loaded): its fields, refreshed in place (kept locked)
            current, fields = storage_of(td._entries().get(key)), storage_of(value)
            nested = isinstance(current, TensorDict) and isinstance(fields, TensorDict)
            if nested and not isinstance(fields, _NonTensorNode):
                self.visit(current, fields)
            elif type(value) is torch.Tensor and not value.numel() and not value.is_nested:
                # a tensor with no elements has no file: loaded, a plain tensor; memory-
                # mapped as the memmap() that saved it gave it (and as the peer's refresh)
                td._put(key, MemoryMappedTensor.empty(value.shape, dtype=value.dtype))
            else:
                if td.is_locked and isinstance(value, LockGraph):
                    value._lock_each()  # (a lazy stack: locked as memmap() left it)
                td._put(key, value)
        td._adopt(loaded)

    def visit_value(self, node: Any, loaded: Any) -> None:
        pass  # a Python value is replaced by its parent (td._put)

    visit_values = visit_value


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

IO.make_memmap = make_memmap
IO.make_memmap_from_storage = make_memmap_from_storage
IO.make_memmap_from_tensor = make_memmap_from_tensor
IO.memmap_refresh = memmap_refresh
IO.saved_path = saved_path
