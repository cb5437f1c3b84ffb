"""Arrow tables (``from_arrow`` / ``to_arrow``), with the peer's conversions: numeric
columns view the Arrow buffers (DLPack), ``list`` columns of numbers become jagged nested
tensors, ``fixed_size_list`` and ``arrow.fixed_shape_tensor`` columns tensors with
trailing dims, ``struct`` columns nested TensorDicts, every other column a
``NonTensorStack`` of its Python values. Needs pyarrow 15 or later
(``pip install 'tclass[formats]'``).
"""

from __future__ import annotations

from typing import Any, Literal

import torch

from tclass._core._device import DeviceLike
from tclass._core._keys import NestedKey, key_path
from tclass._engine._nontensor import NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._io._optional import need
from tclass.errors import ArgumentValueError, BatchSizeError, MissingDependencyError, ShapeError

__all__ = ["from_arrow", "to_arrow"]

Nulls = Literal["raise", "fill", "mask"]
_NULLS = ("raise", "fill", "mask")
# masked_fill lacks the unsigned dtypes above 8 bits: fill a signed view of the same size.
_SIGNED = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


def _pyarrow(op: str) -> Any:
    pa = need("pyarrow", "formats", op)
    if int(pa.__version__.split(".")[0]) < 15:
        msg = f"{op} needs pyarrow 15 or later, got {pa.__version__}: pip install 'pyarrow>=15'"
        raise MissingDependencyError(msg)
    return pa


class _Columns:
    """One conversion of a table: its options, and the masks of ``nulls="mask"``."""

    def __init__(self, pa: Any, copy: bool | None, nulls: str) -> None:
        self.pa = pa
        self.copy = copy
        self.nulls = nulls
        self.masks: dict[tuple[str, ...], torch.Tensor] = {}

    def is_tensor_type(self, kind: Any) -> bool:
        types = self.pa.types
        if isinstance(kind, self.pa.FixedShapeTensorType):
            return self.is_tensor_type(kind.storage_type)
        if types.is_fixed_size_list(kind):
            return self.is_tensor_type(kind.value_type)
        return bool(types.is_integer(kind) or types.is_floating(kind) or types.is_boolean(kind))

    def check_nulls(self, array: Any, key: tuple[str, ...], nulls: str) -> None:
        if array.null_count and nulls == "raise":
            msg = (
                f"the Arrow column {key} has {array.null_count} null value(s): pass "
                "nulls='fill' to fill them, or nulls='mask' to also get a mask entry"
            )
            raise ArgumentValueError(msg)

    def check_inner(self, array: Any, key: tuple[str, ...]) -> None:
        """Raises for a null inside the rows of a list or a struct, at any depth."""
        types = self.pa.types
        kind = array.type
        if types.is_struct(kind):
            children = array.flatten()
        elif types.is_list(kind) or types.is_large_list(kind) or types.is_fixed_size_list(kind):
            children = [array.flatten()]
        else:
            return
        for child in children:
            self.check_nulls(child, key, "raise")
            self.check_inner(child, key)

    def convert(self, array: Any, key: tuple[str, ...]) -> Any:
        types = self.pa.types
        kind = array.type
        if types.is_struct(kind):
            fields = {
                field.name: self.convert(child, (*key, field.name))
                for field, child in zip(kind, array.flatten())
            }
            return TensorDict(fields, batch_size=[len(array)])
        self.check_nulls(array, key, self.nulls)
        if array.null_count and self.nulls == "mask":
            self.masks[key] = torch.from_numpy(array.is_valid().to_numpy(zero_copy_only=False))
        if self.is_tensor_type(kind):
            return self.tensor(array, key)
        if (types.is_list(kind) or types.is_large_list(kind)) and self.is_tensor_type(
            kind.value_type
        ):
            return self.jagged(array, key)
        if self.nulls == "raise":
            self.check_inner(array, key)
        if not len(array):
            return NonTensorStack()
        return NonTensorStack(*array.to_pylist(), batch_size=[len(array)])

    def primitive(self, array: Any) -> torch.Tensor:
        """A 1-D view (or copy) of a primitive array without nulls."""
        if self.pa.types.is_boolean(array.type):  # bits in Arrow: copied to bytes
            return torch.from_numpy(array.to_numpy(zero_copy_only=False))
        tensor: torch.Tensor = torch.utils.dlpack.from_dlpack(array)
        buffer = array.buffers()[1]
        # torch has no read-only tensors: a write into an immutable (mapped) buffer crashes.
        immutable = buffer is not None and not buffer.is_mutable
        if self.copy or (self.copy is None and immutable):
            tensor = tensor.clone()
        return tensor

    def tensor(self, array: Any, key: tuple[str, ...]) -> torch.Tensor:
        pa = self.pa
        kind = array.type
        rows = len(array)
        if isinstance(kind, pa.FixedShapeTensorType):
            tensor = self.tensor(array.storage, key).view(rows, *kind.shape)
            if kind.permutation is not None:
                tensor = tensor.permute(0, *[1 + dim for dim in kind.permutation])
            return tensor
        if pa.types.is_fixed_size_list(kind):
            size = kind.list_size
            values = array.values.slice(array.offset * size, rows * size)
            inner = self.tensor(values, key)
            tensor = inner.view(rows, size, *inner.shape[1:])
        elif array.null_count:
            bare = pa.Array.from_buffers(
                kind, rows, [None, array.buffers()[1]], null_count=0, offset=array.offset
            )
            tensor = self.primitive(bare)
        else:
            return self.primitive(array)
        if array.null_count:
            valid = torch.from_numpy(array.is_valid().to_numpy(zero_copy_only=False))
            dtype = tensor.dtype
            fill = float("nan") if tensor.is_floating_point() else 0
            hole = ~valid.view(rows, *[1] * (tensor.ndim - 1))
            tensor = tensor.view(_SIGNED.get(dtype, dtype)).masked_fill(hole, fill).view(dtype)
        return tensor

    def jagged(self, array: Any, key: tuple[str, ...]) -> torch.Tensor:
        if array.null_count:
            array = array.fill_null(self.pa.scalar([], type=array.type))
        offsets = self.primitive(array.offsets)
        start, stop = int(offsets[0]), int(offsets[-1])
        values = array.values.slice(start, stop - start)
        return torch.nested.nested_tensor_from_jagged(
            self.tensor(values, key), (offsets - start).to(torch.int64)
        )


def from_arrow(
    table: Any,
    *,
    copy: bool | None = None,
    nulls: Nulls = "raise",
    mask_key: NestedKey | None = None,
    device: DeviceLike = None,
) -> TensorDict:
    """A TensorDict with one entry per column of an Arrow table (or record batch, or
    anything ``pyarrow.table`` takes: a Polars frame...), batch size ``[num_rows]``.

    Args:
        table: the table.
        copy: None (default) views mutable Arrow buffers and copies immutable ones (a
            memory-mapped file's); True copies every column; False views every column it
            can (a write into a view of an immutable buffer then crashes the process).
        nulls: ``"raise"`` (a ``ValueError`` naming the column), ``"fill"`` (NaN in float
            tensors, 0/False in others, empty rows in jagged ones, None among Python
            values), or ``"mask"`` (filled, plus a bool entry under ``mask_key`` per
            column with nulls, True where valid).
        mask_key: where ``nulls="mask"`` puts the masks (default ``"_mask"``).
        device: move the result there.

    Raises:
        MissingDependencyError: pyarrow is not installed.
        ArgumentValueError: (a ``ValueError``) a null with ``nulls="raise"``, a bad
            ``nulls``, a ``mask_key`` without ``nulls="mask"`` or naming a column.
    """
    pa = _pyarrow("from_arrow")
    if nulls not in _NULLS:
        raise ArgumentValueError(f"nulls must be one of {_NULLS}, got {nulls!r}")
    if mask_key is not None and nulls != "mask":
        msg = f"from_arrow got a mask_key but nulls={nulls!r}, not 'mask'"
        raise ArgumentValueError(msg)
    masks_at = key_path("_mask" if mask_key is None else mask_key)
    if not isinstance(table, (pa.Table, pa.RecordBatch)):
        table = pa.table(table)
    if nulls == "mask" and masks_at[0] in table.column_names:
        msg = f"nulls='mask' puts the masks under {masks_at[0]!r}, which is a column of the table"
        raise ArgumentValueError(msg)
    columns = _Columns(pa, copy, nulls)
    data = {}
    for name, column in zip(table.column_names, table.columns):
        if isinstance(column, pa.ChunkedArray):
            column = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
        data[name] = columns.convert(column, (name,))
    result = TensorDict(data, batch_size=[table.num_rows])
    for key, mask in columns.masks.items():
        result.set((*masks_at, *key), mask)
    return result if device is None else result.to(device)


def to_arrow(td: Any) -> Any:
    """An Arrow table with one column per entry of a collection of one batch dim: 1-D
    tensors as primitive columns (viewing CPU data; bools copied), tensors of more dims
    as ``arrow.fixed_shape_tensor`` columns, jagged nested tensors (ragged dim 1) as
    ``large_list`` columns, nested collections as ``struct`` columns, Python values as
    the column type ``pyarrow.array`` infers.

    Raises:
        MissingDependencyError: pyarrow is not installed.
        BatchSizeError: the collection has not exactly one batch dim (``reshape(-1)``).
        ShapeError: a nested tensor not of layout ``torch.jagged`` with its ragged dim 1.
    """
    pa = _pyarrow("to_arrow")
    if td.batch_dims != 1:
        msg = (
            "to_arrow needs a collection with one batch dim, got the batch size "
            f"{list(td.batch_size)}; call reshape(-1) first to flatten it"
        )
        raise BatchSizeError(msg)
    return pa.table({key: _array(pa, value, (key,)) for key, value in td.items()})


def _array(pa: Any, value: Any, key: tuple[str, ...]) -> Any:
    if isinstance(value, (NonTensorData, NonTensorStack)):
        return pa.array(value.tolist())
    if not isinstance(value, torch.Tensor):
        items = list(value.items())
        if not items:
            return pa.array([{}] * value.shape[0], type=pa.struct([]))
        children = [_array(pa, item, (*key, name)) for name, item in items]
        return pa.StructArray.from_arrays(children, names=[name for name, _ in items])
    tensor = value.detach().cpu().contiguous()
    if tensor.is_nested:
        if tensor.layout is not torch.jagged or tensor._ragged_idx != 1:  # type: ignore[attr-defined]
            msg = (
                f"to_arrow converts nested tensors of layout torch.jagged with their ragged "
                f"dim at 1; {key} is not (transpose it, or use a jagged layout)"
            )
            raise ShapeError(msg)
        offsets = pa.array(tensor.offsets().numpy())  # type: ignore[attr-defined]
        return pa.LargeListArray.from_arrays(offsets, _array(pa, tensor.values(), key))
    if tensor.ndim == 1:
        return pa.array(tensor.numpy())
    if not len(tensor):
        kind = pa.fixed_shape_tensor(pa.from_numpy_dtype(tensor.numpy().dtype), tensor.shape[1:])
        return pa.ExtensionArray.from_storage(kind, pa.array([], kind.storage_type))
    return pa.FixedShapeTensorArray.from_numpy_ndarray(tensor.numpy())
