"""Tensors that share memory with a numpy structured array, both ways.

A structured array is a batch of records laid side by side: field ``f`` of element
``i`` lives at ``i * itemsize + offset(f)``. ``from_struct_array`` gives each numeric
field as a strided view of the array's memory (the peer does so too), and
``to_struct_array`` gives back a structured array over the very same memory when a
collection's tensors (two or more) are such views of one buffer (the round trip shares
memory both ways). A lone tensor is no evidence of a record buffer (any contiguous tensor
looks like a one-field one): its array is a copy, as the peer's ``to_struct_array`` always
makes, so that writing into it leaves the collection as it was. Either falls back to
copies when the layout does not allow a view: a field whose offset or strides are not a
multiple of its element size, a non-contiguous or read-only array, tensors from different
buffers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from tclass._base.implemented._collection import TensorCollection

__all__ = ["field_view", "shared_array", "storage_of_array"]


def storage_of_array(array: np.ndarray[Any, Any]) -> torch.UntypedStorage | None:
    """The memory of ``array`` as a torch storage (no copy), when its fields can be viewed:
    a C-contiguous, writable array in native byte order; else None."""
    if not (array.flags.c_contiguous and array.flags.writeable) or not array.size:
        return None
    if array.dtype.hasobject:  # Python objects: their fields are read one by one anyway
        return None
    raw = torch.from_numpy(array.reshape(-1).view(np.uint8))
    return raw.untyped_storage()


def field_view(field: np.ndarray[Any, Any], storage: torch.UntypedStorage) -> torch.Tensor | None:
    """The numeric ``field`` (a view of the array ``storage`` holds) as a tensor over the
    same memory, or None when its layout cannot be a torch view."""
    base = field.dtype.base
    if not base.isnative or base.kind not in "biufc":
        return None
    try:
        dtype = torch.from_numpy(np.empty(0, dtype=base)).dtype
    except TypeError:
        return None
    size = base.itemsize
    offset = field.__array_interface__["data"][0] - storage.data_ptr()
    strides = field.strides
    if offset % size or any(stride % size or stride < 0 for stride in strides):
        return None
    view = torch.empty(0, dtype=dtype)
    return view.set_(storage, offset // size, field.shape, [s // size for s in strides])


def shared_array(collection: TensorCollection) -> np.ndarray[Any, Any] | None:
    """A structured array over the memory of ``collection``'s tensors, when they are the
    fields of one record buffer (as ``from_struct_array`` makes them); else None (a
    lone tensor too: see the module docstring)."""
    batch = tuple(collection.batch_size)
    if not batch or not math.prod(batch):
        return None
    leaves = _leaves(collection, ())
    if len(leaves) < 2:
        return None
    storage = leaves[0][1].untyped_storage()
    ptr = storage.data_ptr()
    record = _record_size(leaves[0][1], len(batch))
    if record is None:
        return None
    fields: dict[tuple[str, ...], tuple[np.dtype[Any], int]] = {}
    for path, tensor in leaves:
        layout = _field_layout(tensor, batch, record, ptr)
        if layout is None:
            return None
        fields[path] = layout
    start = min(offset for _, offset in fields.values())
    if any(offset - start + dtype.itemsize > record for dtype, offset in fields.values()):
        return None
    dtype = _nested_dtype(collection, fields, start, record, ())
    buffer = torch.empty(0, dtype=torch.uint8).set_(storage).numpy()
    strides = [record * math.prod(batch[i + 1 :]) for i in range(len(batch))]
    try:
        out: np.ndarray[Any, Any] = np.ndarray(
            batch, dtype=dtype, buffer=buffer, offset=start, strides=strides
        )
    except (TypeError, ValueError):
        return None
    return out


def _leaves(
    collection: TensorCollection, path: tuple[str, ...]
) -> list[tuple[tuple[str, ...], torch.Tensor]]:
    """Every tensor, or nothing when the collection holds anything else (Python values,
    nested collections with extra batch dims)."""
    out: list[tuple[tuple[str, ...], torch.Tensor]] = []
    for key, value in collection._items():
        if isinstance(value, TensorCollection):
            if value._is_leaf_node or value.batch_size != collection.batch_size:
                return []
            nested = _leaves(value, path + (key,))
            if not nested:
                return []
            out.extend(nested)
        elif value.device.type != "cpu" or value.requires_grad:
            return []
        else:
            out.append((path + (key,), value))
    return out


def _record_size(tensor: torch.Tensor, nb: int) -> int | None:
    """The record size the batch strides of ``tensor`` give (C order assumed, checked by
    the caller), or None when every batch dim has size 1."""
    for dim in reversed(range(nb)):
        if tensor.shape[dim] > 1:
            step = math.prod(tensor.shape[dim + 1 : nb])
            stride = tensor.stride(dim) * tensor.element_size()
            return stride // step if stride % step == 0 else None
    return None


def _field_layout(
    tensor: torch.Tensor, batch: tuple[int, ...], record: int, ptr: int
) -> tuple[np.dtype[Any], int] | None:
    """The numpy sub-array dtype and the byte offset of ``tensor`` as a field of records of
    ``record`` bytes starting at ``ptr``, or None when it is not laid out so."""
    if tensor.untyped_storage().data_ptr() != ptr:
        return None
    size = tensor.element_size()
    nb = len(batch)
    for i in range(nb):
        if tensor.shape[i] > 1 and tensor.stride(i) * size != record * math.prod(batch[i + 1 :]):
            return None
    features = tuple(tensor.shape[nb:])
    step = 1
    for dim in reversed(range(nb, tensor.ndim)):
        if tensor.shape[dim] > 1 and tensor.stride(dim) != step:
            return None
        step *= tensor.shape[dim]
    try:
        base = tensor.new_empty(0).numpy().dtype
    except TypeError:
        return None
    field: np.dtype[Any] = np.dtype((base, features)) if features else base
    return field, int(tensor.storage_offset()) * size


def _nested_dtype(
    collection: TensorCollection,
    fields: dict[tuple[str, ...], tuple[np.dtype[Any], int]],
    start: int,
    itemsize: int,
    path: tuple[str, ...],
) -> np.dtype[Any]:
    """The structured dtype of ``collection`` (fields at their offsets from ``start``)."""
    names: list[str] = []
    formats: list[Any] = []
    offsets: list[int] = []
    for key, value in collection._items():
        here = path + (key,)
        if isinstance(value, TensorCollection):
            inner = [offset for p, (_, offset) in fields.items() if p[: len(here)] == here]
            low = min(inner)
            extent = max(
                offset + dtype.itemsize
                for p, (dtype, offset) in fields.items()
                if p[: len(here)] == here
            )
            formats.append(_nested_dtype(value, fields, low, extent - low, here))
            offsets.append(low - start)
        else:
            dtype, offset = fields[here]
            formats.append(dtype)
            offsets.append(offset - start)
        names.append(key)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": itemsize})
