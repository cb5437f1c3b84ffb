"""Arrays of a store and tensors, for ``PersistentTensorDict`` (``_persistent.py``), over
the Store protocol (``_protocol.py``) whatever the backend: the dtypes a store's arrays
and torch share, the conversions between arrays and tensors or Python values, reading
only the rows an index selects, writing rows in place, and the checks every backend
applies while opening (shapes torch cannot hold, JSON nested too deep, per-row marks)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, cast

import numpy as np
import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core._batch import broadcasts_to, indexed_shape
from tclass._engine._nontensor import NonTensorData, _NonTensorNode
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._tensor_write import fits_every_dtype, number_refused
from tclass._io.memmap._format import MAX_JSON_DEPTH
from tclass._io.memmap._meta_file import fits_int64, is_sizes, json_depth_over
from tclass._io.store._protocol import STACK_DIMS_MARK, STACK_MARK, StoreArray, Values
from tclass.errors import (
    FileConflictError,
    GradError,
    InPlaceWriteError,
    MetadataError,
    MetaTensorError,
    MissingFileError,
    StoreDtypeError,
    StoreShapeError,
    TclassError,
)

__all__ = [
    "RepeatedRow",
    "as_values",
    "check_json",
    "check_size",
    "check_stack",
    "common_prefix",
    "fill",
    "grad_refused",
    "list_index",
    "open_refused",
    "plan_rows",
    "read_rows",
    "rows_shape",
    "to_numpy",
    "to_tensor",
    "torch_dtype_of",
    "values_node",
    "write_rows",
]

_SPAN_FACTOR = 4  # rows read as one span when it is at most this many times the rows asked

_NUMERIC = {
    np.dtype(name): getattr(torch, name)
    for name in (
        "bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
        "float16", "float32", "float64", "complex64", "complex128",
    )
}  # fmt: skip
_STORABLE = frozenset(_NUMERIC.values())


class RepeatedRow:
    """The index a view of a store of batch size ``[]`` holds when it repeats the store's
    one row (``ptd[None][[0, 0]]``, batch size ``[2]``): torch has no one index for it (a
    dim ``None`` makes cannot be indexed in the same index), so it reads as
    ``row[None][zeros(shape)]`` (:meth:`lifted`), and writes there as torch's do (a
    row written twice holds the last)."""

    __slots__ = ("shape",)

    def __init__(self, shape: Sequence[int]) -> None:
        self.shape = torch.Size(shape)

    def lifted(self, data: Any) -> tuple[Any, torch.Tensor]:
        """``data`` (an array's whole value, or a collection of batch size ``[]``) with a
        leading dim of size 1 (a view of it), and the index of that dim that repeats it."""
        return data[None], torch.zeros(self.shape, dtype=torch.long)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RepeatedRow) and other.shape == self.shape

    def __hash__(self) -> int:
        return hash(("RepeatedRow", tuple(self.shape)))

    def __repr__(self) -> str:
        return f"its one row repeated to batch size {list(self.shape)}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (RepeatedRow, (tuple(self.shape),))


def rows_shape(batch: torch.Size, index: Any) -> torch.Size:
    """The batch size of the rows ``index`` selects of a batch size ``batch`` (a
    :class:`RepeatedRow` too).

    Raises:
        DimError: (an ``IndexError``) for an index out of range or that does not fit.
    """
    if isinstance(index, RepeatedRow):
        return index.shape
    return indexed_shape(batch, index)


def torch_dtype_of(dtype: np.dtype[Any]) -> torch.dtype | None:
    """The torch dtype of an array's numpy dtype, or None when torch has none (strings,
    the peer's opaque HDF5 numbers, records...)."""
    if dtype.metadata is not None:  # h5py's special dtypes (opaque, strings) carry some
        return None
    if not dtype.isnative:  # numbers another tool wrote big-endian ('>i4'): the same numbers
        dtype = dtype.newbyteorder("=")
    return _NUMERIC.get(dtype)


def check_size(shape: tuple[int, ...] | None, itemsize: int, where: str) -> None:
    """Refuses a shape torch cannot hold (more elements or bytes than int64 counts).

    Raises:
        MetadataError: naming ``where``.
    """
    if shape is not None and not fits_int64([*shape, max(1, itemsize)]):
        msg = (
            f"{where}: the array has shape {list(shape)} of {itemsize}-byte items, too large "
            "for torch (its byte count reaches 2**63); the file is damaged or crafted"
        )
        raise MetadataError(msg)


def check_stack(
    raw: Any, shape: tuple[int, ...] | None, where: str, *, own: bool = True
) -> list[int]:
    """The shape a ``__tensordict_stack__`` mark gives per-row values: sizes, which with
    ``own`` must be the array's own ``shape`` (an array holding one value per row).

    Raises:
        MetadataError: the mark is not the array's shape.
    """
    sizes = np.asarray(raw).tolist() if isinstance(raw, np.ndarray) else raw
    if is_sizes(sizes) and fits_int64(sizes) and (not own or tuple(sizes) == shape):
        return list(sizes)
    held = f", but the array has shape {None if shape is None else list(shape)}" if own else ""
    msg = (
        f"{where}: its {STACK_MARK} attribute says the values have shape {sizes!r:.80}"
        f"{held}; the file is damaged or crafted"
    )
    raise MetadataError(msg)


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


def open_refused(
    error: FileNotFoundError | FileExistsError, described: str, mode: str, format: str
) -> TclassError:
    """tclass's error for a store that opening did not find, or that ``mode`` would have
    replaced (``format``: ``"HDF5 file"``, ``"zarr store"``)."""
    if isinstance(error, FileNotFoundError):
        return MissingFileError(f"no {format} at {described!r}; check the path")
    noun = format.rpartition(" ")[2]
    msg = f"{described!r} exists and mode={mode!r} creates a new {noun}; use mode='w' to replace it"
    return FileConflictError(msg)


def to_tensor(data: Any) -> torch.Tensor:
    """What a store read (an array, or a numpy scalar) as a tensor of the same shape."""
    array = np.asarray(data)
    if not array.dtype.isnative:  # torch holds native byte order only
        array = array.astype(array.dtype.newbyteorder("="))
    if not array.flags.c_contiguous or not array.flags.writeable:
        array = np.array(array, order="C")
    return torch.from_numpy(array)


def to_numpy(
    tensor: torch.Tensor, label: str = "HDF5", where: str | None = None
) -> np.ndarray[Any, Any]:
    """A tensor's data as numpy, to write into a store (``label`` names it in errors,
    ``where`` the file and entry).

    Raises:
        StoreDtypeError: (an ``UnsupportedError`` and a ``TypeError``, as the peer raises)
            a dtype the stores have no type for (bfloat16, float8...).
        GradError: (a ``RuntimeError``, as the peer raises) the tensor requires grad.
        MetaTensorError: (a ``NotImplementedError``, as torch raises) a meta tensor.
    """
    if tensor.dtype not in _STORABLE:
        name = str(tensor.dtype).removeprefix("torch.")
        raise StoreDtypeError(f"{label} has no {name}; convert the tensor (.float()) first")
    if tensor.requires_grad:
        raise grad_refused(where or f"a {label} file", tuple(tensor.shape))
    if tensor.is_meta:
        raise meta_refused(tensor, label, where)
    return tensor.cpu().resolve_conj().resolve_neg().numpy()


def meta_refused(tensor: torch.Tensor, label: str, where: str | None) -> MetaTensorError:
    """The error for a meta tensor (a shape and a dtype, no data) written into a store."""
    return MetaTensorError(
        f"cannot write a meta tensor of shape {list(tensor.shape)} into "
        f"{where or f'a {label} file'}: a meta tensor holds a shape and a dtype but no "
        "data; write a tensor with values (e.g. torch.zeros(..., device='cpu'))"
    )


def grad_refused(where: str, shape: tuple[int, ...]) -> GradError:
    """The error for a tensor requiring grad written into a store: the store keeps its
    values, not the autograd graph, so gradients would silently stop there."""
    return GradError(
        f"Cannot set a tensor that has requires_grad=True (shape {list(shape)}) into {where}: "
        "the file keeps its values, not the autograd graph, so no gradient would flow back "
        "through what is read from it. Write value.detach() (or compute it under "
        "torch.no_grad())"
    )


def as_values(node: NonTensorData | NonTensorStack) -> Values:
    """A Python-value node's value(s), as a store writes them."""
    if isinstance(node, NonTensorData):
        return Values(node.data, None, [node.data])
    array = node._as_array()
    nesting = node._nesting()  # a dense stack of records: one value per member
    dims = None if nesting is None else list(nesting)
    return Values(array.tolist(), list(array.shape), list(array.reshape(-1)), dims)


def values_node(
    value: Any, shape: list[int], device: torch.device, where: str, stack_dims: Any = None
) -> _NonTensorNode:
    """Per-element values: ``value`` nested ``len(shape)`` lists deep, each element a
    value of its own (a list too, for a list field: it is not unpacked further);
    ``stack_dims``: the raw mark of the dense stack they were written from, if any."""
    nesting = _stack_dims(stack_dims, len(shape), where)
    items = [value]
    for size in shape:
        if not all(isinstance(row, list) and len(row) == size for row in items):
            msg = f"{where}: the values do not have the shape {shape} the file records"
            raise MetadataError(msg)
        items = [item for row in items for item in row]
    flat = np.empty(len(items), dtype=object)
    for position, item in enumerate(items):
        flat[position] = item
    return NonTensorStack._from_array(flat.reshape(shape), device, nesting)


def _stack_dims(raw: Any, dims: int, where: str) -> tuple[int, ...] | None:
    """The stack dims a ``_tclass_stack_dims`` mark records (None without one).

    Raises:
        MetadataError: they are not distinct batch dims of the values.
    """
    if raw is None:
        return None
    if (
        type(raw) is not list
        or not all(type(d) is int and 0 <= d < dims for d in raw)
        or len(set(raw)) != len(raw)
    ):
        msg = (
            f"{where}: its {STACK_DIMS_MARK} attribute must list distinct dims below {dims} "
            f"(the values' dims), got {raw!r:.80}; the file is damaged or crafted"
        )
        raise MetadataError(msg)
    return tuple(raw)


def fill(node: StoreArray, dtype: torch.dtype, value: float | bool) -> None:
    """Write ``value`` everywhere in an array of ``dtype``, a block of rows at a time."""
    shape = node.shape or ()
    if not shape:
        node.write((), to_numpy(torch.tensor(value, dtype=dtype)))
        return
    inner = 1
    for size in shape[1:]:
        inner *= size
    row = max(1, inner * dtype.itemsize)
    rows = max(1, min(shape[0], (64 << 20) // row))
    block = to_numpy(torch.full((rows, *shape[1:]), value, dtype=dtype))
    for start in range(0, shape[0], rows):
        stop = min(start + rows, shape[0])
        node.write(slice(start, stop), block[: stop - start])


def _rows_plan(index: Any, length: int) -> tuple[Any, Any] | None:
    """How to read ``index`` (along the first dim) from an array: ``(store selection,
    local index into what it returns or None)``; None if the store cannot select it."""
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


def read_rows(node: StoreArray, index: Any, batch_dims: int) -> torch.Tensor:
    """``node[index]`` along the batch dims, reading only the rows needed (a span, or
    the distinct rows, for a list of rows; the rows the first part of a tuple index
    selects, the rest picked in memory; the whole array only for an index the store
    cannot select, such as ``None`` or a list of rows over several batch dims)."""
    shape = node.shape
    head, rest = _split(index)
    plan = _rows_plan(head, shape[0]) if shape and batch_dims else None
    if plan is None:
        if isinstance(index, RepeatedRow):
            lifted, positions = index.lifted(to_tensor(node.read()))
            return cast(torch.Tensor, lifted[positions])
        return to_tensor(node.read())[index]
    selection, local = plan
    data = to_tensor(node.read(selection))
    return data[_within(selection, local, rest)] if rest or local is not None else data


def list_index(index: Any) -> Any:
    """A list index (rows, or one part of a tuple index) as a tensor, as torch reads it:
    an empty list selects no rows (a ``long`` tensor, not ``torch.tensor([])``'s float
    one, which no array takes)."""
    if not isinstance(index, list):
        return index
    return torch.tensor(index) if index else torch.zeros(0, dtype=torch.long)


def write_rows(
    node: StoreArray,
    index: Any,
    value: Any,
    batch_dims: int,
    label: str,
    where: str | None = None,
    *,
    copy: bool = False,
) -> None:
    """``node[index] = value``: :func:`plan_rows`, written at once."""
    plan_rows(node, index, value, batch_dims, label, where, copy=copy)()


def plan_rows(
    node: StoreArray,
    index: Any,
    value: Any,
    batch_dims: int,
    label: str,
    where: str | None = None,
    *,
    copy: bool = False,
) -> Callable[[], None]:
    """``node[index] = value`` checked, without reading or writing the array (its shape
    and dtype are the store's metadata), as torch checks ``tensor[index] = value``: the
    write to run, once every array a write reaches is checked (all or nothing). The
    write goes through the store where it can select the rows (the span of rows a list of
    rows or a tuple index covers is read, written in memory and written back), else the
    array is read, written in memory and written back (``where``: the file and entry,
    for messages). With ``copy`` (``set_``: torch's ``copy_``), a value's leading dims
    of size 1 past the array's are refused, not dropped.

    Raises:
        GradError: ``value`` requires grad (see :func:`to_numpy`).
        MetaTensorError: ``value`` is a meta tensor (no data).
        StoreShapeError: (an ``InPlaceWriteError``, also a ``TypeError`` as h5py's in
            the peer's file) ``value`` does not broadcast to the rows written.
        InPlaceWriteError: (a ``RuntimeError``, as torch's) ``value`` is a number the
            array's dtype cannot hold (``300`` in ``int8``), a collection, or not a
            tensor and torch cannot make one of it.
    """
    place = where or f"a {label} file"
    if isinstance(value, (Mapping, TensorCollection)) and not isinstance(
        value, (NonTensorData, NonTensorStack)
    ):
        msg = (
            f"cannot write a {type(value).__name__} into {place}: it holds a tensor, not a "
            "group; nothing was written. Write a tensor there, or replace the entry through "
            "the file itself (ptd[key] = value)"
        )
        raise InPlaceWriteError(msg)
    if type(value) in (int, float) and node.dtype is not None:  # (a complex: cast, as torch
        _check_number(value, node.dtype, index, place)  # casts a complex tensor, and a TensorDict)
    try:
        source = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as error:
        msg = (
            f"cannot write a {type(value).__name__} into {place}: its rows hold a tensor and "
            f"torch cannot make one of it ({error}); nothing was written. Give a tensor, or "
            "replace the entry through the file itself (ptd[key] = value)"
        )
        raise InPlaceWriteError(msg) from None
    if source.requires_grad:
        raise grad_refused(place, tuple(source.shape))
    if source.is_meta:
        raise meta_refused(source, label, where)
    shape = torch.Size(node.shape or ())
    selected = _selected(shape, index)
    if selected is not None and source.shape != selected:
        leading = 0  # torch drops a value's leading dims of size 1 past the selection's
        while not copy and leading < source.ndim - len(selected) and source.shape[leading] == 1:
            leading += 1
        source = source.reshape(source.shape[leading:]) if leading else source
        if not broadcasts_to(source.shape, selected):
            msg = _unbroadcast(source, shape, index, label, where)
            msg += f" ({list(selected)}); nothing was written. Give a tensor of their shape"
            raise StoreShapeError(msg)
    return partial(_write_planned, node, shape, index, source, batch_dims, label, where)


def _selected(shape: torch.Size, index: Any) -> torch.Size | None:
    """What ``index`` selects of an array of ``shape`` (None where torch would refuse
    it: the write reports it, as torch does); a row at once, the usual write."""
    if type(index) is int and shape and -shape[0] <= index < shape[0]:
        return shape[1:]
    try:
        return indexed_shape(shape, index)
    except (IndexError, TypeError, ValueError, RuntimeError):
        return None


def _check_number(value: float, dtype: torch.dtype, index: Any, place: str) -> None:
    """Refuses a Python number ``dtype`` cannot hold, as torch refuses ``tensor[index] =
    value`` (``300`` in ``int8``, ``nan`` in an integer), where ``torch.as_tensor`` then a
    cast would wrap it silently."""
    error = None if fits_every_dtype(value) else number_refused(value, dtype)
    if error is not None:
        msg = (
            f"cannot write {value!r} into {place} ({dtype}) at index {index!r}: {error}; "
            f"nothing was written. Write a value that {dtype} holds"
        )
        raise InPlaceWriteError(msg)


def _write_planned(
    node: StoreArray,
    shape: tuple[int, ...],
    index: Any,
    source: torch.Tensor,
    batch_dims: int,
    label: str,
    where: str | None,
) -> None:
    """The write :func:`plan_rows` checked."""
    try:
        _write_rows_of(node, shape, index, source, batch_dims, label)
    except RuntimeError as error:  # torch's: an index the check could not work out
        if isinstance(error, TclassError):
            raise
        msg = _unbroadcast(source, shape, index, label, where)
        raise InPlaceWriteError(f"{msg}; give a tensor of their shape ({error})") from error


def _unbroadcast(
    source: torch.Tensor,
    shape: Sequence[int],
    index: Any,
    label: str,
    where: str | None,
) -> str:
    """The head of the message for ``source`` not broadcasting to the rows ``index`` of
    an array of ``shape``."""
    rows = "" if index is Ellipsis else f" at {index!r}"
    return (
        f"cannot write a tensor of shape {list(source.shape)} into "
        f"{where or f'a {label} array'} (shape {list(shape)}){rows}: it does not broadcast "
        "to the rows written"
    )


def _write_rows_of(
    node: StoreArray,
    shape: tuple[int, ...],
    index: Any,
    source: torch.Tensor,
    batch_dims: int,
    label: str,
) -> None:
    """:func:`write_rows` once ``source`` is checked: converted to the array's dtype
    first, as torch's in-place copy converts (the store may have no conversion between
    them: h5py has none from a float to a bool); ``shape``: the array's."""
    if node.dtype is not None and source.dtype != node.dtype:
        source = source.to(node.dtype)
    if index is Ellipsis:
        node.write(..., to_numpy(source.expand(shape) if source.shape != shape else source, label))
        return
    head, rest = _split(index)
    plan = _rows_plan(head, shape[0]) if shape and batch_dims else None
    if plan is not None:
        selection, local = plan
        if isinstance(selection, np.ndarray):  # distinct rows: read, written, written back
            data = to_tensor(node.read(selection))
            data[_within(selection, local, rest)] = source.to(data.dtype)
            _write_runs(node, selection, to_numpy(data, label))
            return
        if local is None and not rest:
            rows = np.empty(shape[0], dtype=bool)[selection].shape + shape[1:]
            expanded = source.expand(rows) if tuple(source.shape) != rows else source
            node.write(selection, to_numpy(expanded, label))
            return
        data = to_tensor(node.read(selection))
        data[_within(selection, local, rest)] = source.to(data.dtype)
        node.write(selection, to_numpy(data, label))
        return
    data = to_tensor(node.read())
    if isinstance(index, RepeatedRow):  # into a view of the row: a row written twice holds
        lifted, positions = index.lifted(data)  # the last, as torch's index_put_
        lifted[positions] = source.to(data.dtype)
    else:
        data[index] = source.to(data.dtype)
    node.write(..., to_numpy(data, label))


def _write_runs(node: StoreArray, rows: np.ndarray[Any, Any], data: np.ndarray[Any, Any]) -> None:
    """``data`` (one row per entry of the sorted distinct ``rows``) written into those
    rows, one write per run of consecutive rows."""
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    for start, stop in zip([0, *breaks.tolist()], [*breaks.tolist(), len(rows)], strict=True):
        first = int(rows[start])
        node.write(slice(first, first + stop - start), data[start:stop])


def _split(index: Any) -> tuple[Any, tuple[Any, ...]]:
    """A tuple index as its first part (what the store selects) and the parts after it
    (picked in memory); ``None`` and ``...`` after the first part leave it whole."""
    if type(index) is not tuple or len(index) < 2:
        return index, ()
    if any(part is None or part is Ellipsis for part in index):
        return index, ()  # new dims or an ellipsis: read whole (no plan for the tuple)
    return index[0], index[1:]


def _within(selection: Any, local: Any, rest: tuple[Any, ...]) -> Any:
    """The index into what ``selection`` read that picks what the whole index asks."""
    if isinstance(selection, int):
        return rest if rest else ...
    return (slice(None) if local is None else local, *rest)


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
