"""HDF5 datasets for ``PersistentTensorDict`` (``_persistent.py``): opening a file, the peer's
marks, and the conversions between datasets and tensors or Python values (reading only
the rows an index selects, writing rows in place, writing a Python value as the peer
does). h5py is the optional extra ``tclass[h5]``: without it this module imports, and
:func:`need_h5py` says what to install."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import torch

from tclass._engine._nontensor import NonTensorData, NonTensorStack, _NonTensorNode
from tclass._io._optional import need
from tclass._io.memmap._format import MAX_JSON_DEPTH
from tclass._io.memmap._meta_file import fits_int64, is_sizes, json_depth_over
from tclass.errors import (
    FileBusyError,
    FileFormatError,
    MetadataError,
    MissingFileError,
    UnsafePathError,
    UnsupportedError,
)

__all__ = [
    "STACK_MARK",
    "check_dataset",
    "check_json",
    "common_prefix",
    "decode",
    "fill",
    "is_group",
    "is_numeric",
    "need_h5py",
    "open_file",
    "read_rows",
    "stack_shape",
    "to_numpy",
    "to_tensor",
    "torch_dtype",
    "values_node",
    "write_rows",
    "write_value",
]

_STR_MARK = "__tensordict_str__"  # the peer's: a string dataset it wrote
STACK_MARK = "__tensordict_stack__"  # the peer's: the shape of a per-row list of values
_JSON_MARK = "_tclass_json"  # tclass's: a value written as a JSON string
_SPAN_FACTOR = 4  # rows read as one span when it is at most this many times the rows asked


def need_h5py() -> Any:
    """The h5py module (imported on first use, not by ``import tclass``), or a
    MissingDependencyError naming the extra that installs it."""
    return need("h5py", "h5", "PersistentTensorDict")


def is_group(node: Any) -> bool:
    """Whether an HDF5 node (of an open file: h5py is imported) is a group."""
    return isinstance(node, need_h5py().Group)


def open_file(filename: str, mode: str) -> Any:
    """The h5py File, with tclass's errors for the usual failures."""
    lib = need_h5py()
    try:
        return lib.File(filename, mode)
    except BlockingIOError:
        msg = (
            f"{filename!r} is open for writing in another process (HDF5 locks the file); "
            "close it there first"
        )
        raise FileBusyError(msg) from None
    except FileNotFoundError:
        raise MissingFileError(f"no HDF5 file at {filename!r}; check the path") from None
    except OSError as error:
        if os.path.isfile(filename) and mode in ("r", "r+", "a"):
            msg = f"{filename!r} is not an HDF5 file h5py can open ({error})"
            raise FileFormatError(msg) from None
        raise


# --- datasets --------------------------------------------------------------------------------


_NUMERIC = {
    np.dtype(name): getattr(torch, name)
    for name in (
        "bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
        "float16", "float32", "float64", "complex64", "complex128",
    )
}  # fmt: skip


def is_numeric(node: Any) -> bool:
    """Whether a dataset holds a tensor (a numeric dtype torch has, not an opaque
    value the peer wrote, nor an ``h5py.Empty`` one, which has no shape)."""
    dtype = node.dtype
    return dtype in _NUMERIC and dtype.metadata is None and node.shape is not None


def check_dataset(node: Any, where: str, allow_external: bool) -> None:
    """Refuses a dataset torch cannot hold (more elements or bytes than int64 counts)
    and, unless ``allow_external``, one whose data lives in other files: raw external
    storage (``create_dataset(external=...)``) or a virtual dataset mapping another file.

    Raises:
        MetadataError: the shape is too large.
        UnsafePathError: the data is elsewhere and external data was not allowed.
    """
    shape = node.shape
    if shape is not None and not fits_int64([*shape, max(1, node.dtype.itemsize)]):
        msg = (
            f"{where}: the dataset has shape {list(shape)} of {node.dtype}, too large for "
            "torch (its byte count reaches 2**63); the file is damaged or crafted"
        )
        raise MetadataError(msg)
    if allow_external:
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


def stack_shape(node: Any, where: str) -> list[int] | None:
    """The shape the peer's ``__tensordict_stack__`` mark gives a per-row list of values
    (None when unmarked); it must be the dataset's own shape.

    Raises:
        MetadataError: the mark is not the dataset's shape.
    """
    raw = node.attrs.get(STACK_MARK)
    if raw is None:
        return None
    sizes = np.asarray(raw).tolist() if isinstance(raw, np.ndarray) else raw
    if not is_sizes(sizes) or node.shape is None or tuple(sizes) != node.shape:
        shape = None if node.shape is None else list(node.shape)
        msg = (
            f"{where}: its {STACK_MARK} attribute says the values have shape "
            f"{sizes!r:.80}, but the dataset has shape {shape}; the file is damaged or crafted"
        )
        raise MetadataError(msg)
    return sizes


def check_json(text: str, where: str) -> None:
    """Refuses JSON nested deeper than a saved folder's ``meta.json`` may be (checked
    without recursion, before parsing).

    Raises:
        MetadataError: naming ``where``.
    """
    if json_depth_over(text.encode("utf-8", "surrogatepass"), MAX_JSON_DEPTH):
        msg = (
            f"{where}: holds JSON nested more than {MAX_JSON_DEPTH} levels deep; tclass "
            "never writes that: the file is damaged or crafted"
        )
        raise MetadataError(msg)


def torch_dtype(node: Any) -> torch.dtype:
    dtype: torch.dtype = _NUMERIC[node.dtype]
    return dtype


def to_tensor(data: Any) -> torch.Tensor:
    """What h5py read (an array, or a numpy scalar) as a tensor of the same shape."""
    array = np.asarray(data)
    if not array.flags.c_contiguous or not array.flags.writeable:
        array = np.array(array, order="C")
    return torch.from_numpy(array)


def to_numpy(tensor: torch.Tensor) -> np.ndarray[Any, Any]:
    if tensor.requires_grad:
        tensor = tensor.detach()
    if tensor.dtype == torch.bfloat16:
        raise UnsupportedError("HDF5 has no bfloat16; convert the tensor (.float()) first")
    return tensor.cpu().resolve_conj().resolve_neg().numpy()


def decode(node: Any, where: str) -> Any:
    """A non-numeric dataset's value as Python values: strings as str, the peer's
    opaque numbers as numbers, tclass's JSON strings parsed (their depth checked first),
    an ``h5py.Empty`` dataset (no shape, no data) as None."""
    lib = need_h5py()
    if node.shape is None:
        return None
    raw = node[()]
    if lib.check_string_dtype(node.dtype) is not None:
        value = np.asarray(raw, dtype=object)
        decoded = np.vectorize(_text, otypes=[object])(value) if value.size else value
        if node.attrs.get(_JSON_MARK, False) and value.size:
            for text in decoded.flat:
                check_json(text, where)
            decoded = np.vectorize(json.loads, otypes=[object])(decoded)
        return decoded.tolist() if decoded.ndim else decoded.item()
    if lib.check_opaque_dtype(node.dtype):
        plain = np.asarray(raw).view(np.dtype(node.dtype.str))
        return plain.tolist()
    return np.asarray(raw).tolist()


def _text(value: Any) -> Any:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def values_node(value: Any, shape: list[int], device: torch.device, where: str) -> _NonTensorNode:
    """Per-element values: ``value`` nested ``len(shape)`` lists deep, each element a
    value of its own (a list too, for a list field: it is not unpacked further)."""
    items = [value]
    for size in shape:
        if not all(isinstance(row, list) and len(row) == size for row in items):
            msg = f"{where}: the values do not have the shape {shape} the file records"
            raise MetadataError(msg)
        items = [item for row in items for item in row]
    flat = np.empty(len(items), dtype=object)
    for position, item in enumerate(items):
        flat[position] = item
    return NonTensorStack._from_array(flat.reshape(shape), device)


def write_value(
    group: Any, key: str, node: NonTensorData | NonTensorStack, kwargs: dict[str, Any]
) -> None:
    """A Python value (or per-row values) as the peer writes them: strings, or opaque
    numbers; anything else as JSON strings (tclass's)."""
    lib = need_h5py()
    if isinstance(node, NonTensorData):
        value, shape = node.data, None
        values = [value]
    else:
        array = node._as_array()
        value, shape, values = array.tolist(), list(array.shape), list(array.reshape(-1))
    kinds = {type(item) for item in values}
    if kinds == {str} and not any("\x00" in item for item in values):
        data: Any = value if shape is None else np.array(value, dtype=lib.string_dtype())
        dataset = group.create_dataset(key, data=data)
        if shape is None:
            dataset.attrs[_STR_MARK] = True
    elif len(kinds) == 1 and kinds <= {bytes, bool, int, float}:
        array = np.array(value)
        dataset = group.create_dataset(key, data=array.astype(lib.opaque_dtype(array.dtype)))
    else:
        texts = [json.dumps(item) for item in values]
        data = (
            texts[0] if shape is None else np.array(texts, dtype=lib.string_dtype()).reshape(shape)
        )
        dataset = group.create_dataset(key, data=data)
        dataset.attrs[_JSON_MARK] = True
    if shape is not None:
        dataset.attrs[STACK_MARK] = shape


def fill(node: Any, value: float | bool) -> None:
    """Write ``value`` everywhere in a dataset, a block of rows at a time."""
    if not node.shape:
        node[()] = value
        return
    row = max(1, int(np.prod(node.shape[1:])) * node.dtype.itemsize)
    rows = max(1, min(node.shape[0], (64 << 20) // row))
    block = np.full((rows, *node.shape[1:]), value, dtype=node.dtype)
    for start in range(0, node.shape[0], rows):
        stop = min(start + rows, node.shape[0])
        node[start:stop] = block[: stop - start]


def _rows_plan(index: Any, length: int) -> tuple[Any, Any] | None:
    """How to read ``index`` (along the first dim) from a dataset: ``(h5py index,
    local index into what it returns or None)``; None if h5py cannot select it."""
    if isinstance(index, tuple) and len(index) == 1:
        index = index[0]
    if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
        position = int(index) + length if index < 0 else int(index)
        return (position, None) if 0 <= position < length else None
    if isinstance(index, slice):
        start, stop, step = index.indices(length)
        return (slice(start, stop, step), None) if step > 0 else None
    if isinstance(index, (torch.Tensor, np.ndarray)):
        tensor = torch.as_tensor(index)
        if tensor.dtype is torch.bool:
            if tensor.shape != (length,):
                return None
            tensor = tensor.nonzero().squeeze(-1)
        elif (
            tensor.is_floating_point()
            or tensor.is_complex()
            or tensor.ndim != 1
            or tensor.dtype is torch.uint8
        ):
            return None
        if not tensor.numel():
            return None
        tensor = torch.where(tensor < 0, tensor + length, tensor).long()
        if int(tensor.min()) < 0 or int(tensor.max()) >= length:
            return None
        start, stop = int(tensor.min()), int(tensor.max()) + 1
        if stop - start <= _SPAN_FACTOR * tensor.numel():
            return slice(start, stop), tensor - start
        distinct, inverse = torch.unique(tensor, sorted=True, return_inverse=True)
        return distinct.numpy(), inverse
    return None


def read_rows(node: Any, index: Any, batch_dims: int) -> torch.Tensor:
    """``node[index]`` along the batch dims, reading only the rows needed (a span, or
    the distinct rows, for a list of rows; the whole dataset only for an index h5py
    cannot select, such as one over several batch dims)."""
    plan = _rows_plan(index, node.shape[0]) if node.shape and batch_dims else None
    if plan is None:
        return to_tensor(node[()])[index]
    selection, local = plan
    data = to_tensor(node[selection])
    return data if local is None else data[local]


def write_rows(node: Any, index: Any, value: Any, batch_dims: int) -> None:
    """``node[index] = value``, through h5py where it can select the rows, else by
    reading the dataset, writing in memory and writing it back."""
    source = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
    plan = (
        _rows_plan(index, node.shape[0])
        if node.shape and batch_dims and index is not Ellipsis
        else None
    )
    if index is Ellipsis:
        node[...] = to_numpy(source.expand(node.shape) if source.shape != node.shape else source)
        return
    if plan is not None and plan[1] is None:
        selection = plan[0]
        shape = np.empty(node.shape[0], dtype=bool)[selection].shape + node.shape[1:]
        node[selection] = to_numpy(source.expand(shape) if tuple(source.shape) != shape else source)
        return
    data = to_tensor(node[()])
    data[index] = source.to(data.dtype)
    node[...] = to_numpy(data)


def common_prefix(shapes: list[tuple[int, ...]], limit: int | None) -> torch.Size:
    """The longest leading dims all ``shapes`` share (at most ``limit``)."""
    if not shapes:
        return torch.Size([])
    common: list[int] = []
    for dim in range(min(len(shape) for shape in shapes)):
        sizes = {shape[dim] for shape in shapes}
        if len(sizes) != 1 or (limit is not None and dim >= limit):
            break
        common.append(sizes.pop())
    return torch.Size(common)
