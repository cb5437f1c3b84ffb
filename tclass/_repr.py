"""The compact repr of a collection, in the peer's 0.15 form.

``TensorDict(batch_size=[4], device=cpu, fields={a: f32[3], b: {c: i64[]}})``: each tensor
shows its dtype code and its feature dims (the dims after the batch dims); a nested
collection shows the batch dims it adds, then its own fields. Keys are sorted. A repr
longer than 80 columns puts one field per line, and so does any nested collection whose
own line would be too long.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from tclass._base import Value
    from tclass._collection import TensorCollection

__all__ = ["compact_repr", "dtype_code"]

_WIDTH = 80
_INDENT = "    "

_DTYPE_CODES = {
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float32: "f32",
    torch.float64: "f64",
    torch.complex32: "c32",
    torch.complex64: "c64",
    torch.complex128: "c128",
    torch.bool: "bool",
    torch.uint8: "u8",
    torch.uint16: "u16",
    torch.uint32: "u32",
    torch.uint64: "u64",
    torch.int8: "i8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
}


def dtype_code(dtype: torch.dtype) -> str:
    """``f32`` for float32 and so on; other dtypes by their torch name (``float8_e5m2``)."""
    return _DTYPE_CODES.get(dtype) or str(dtype).removeprefix("torch.")


def _dims(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(size) for size in shape) + "]"


def compact_repr(collection: TensorCollection) -> str:
    """The whole repr: one line if it fits in 80 columns, else one field per line."""
    head = f"{type(collection).__name__}(batch_size={_dims(collection.batch_size)}"
    if collection.device is not None:
        head += f", device={collection.device}"
    head += ", fields={"
    fields = _sorted_fields(collection)
    one_line = head + ", ".join(f"{key}: {_one_line(value, dims)}" for key, value, dims in fields)
    one_line += "})"
    if len(one_line) <= _WIDTH:
        return one_line
    return head + "\n" + _field_lines(fields, _INDENT, "})")


def _sorted_fields(collection: TensorCollection) -> list[tuple[str, Value, int]]:
    dims = len(collection.batch_size)
    return [(key, value, dims) for key, value in sorted(collection._items(), key=_first)]


def _first(pair: tuple[str, Value]) -> str:
    return pair[0]


def _prefix(value: TensorCollection, parent_dims: int) -> str:
    """What precedes a nested collection's fields: its class (unless TensorDict) and the
    batch dims it adds to its parent's."""
    name = type(value).__name__
    extra = tuple(value.batch_size[parent_dims:])
    return ("" if name == "TensorDict" else name) + (_dims(extra) if extra else "")


def _one_line(value: Value, parent_dims: int) -> str:
    if isinstance(value, torch.Tensor):
        return dtype_code(value.dtype) + _dims(tuple(value.shape[parent_dims:]))
    inner = ", ".join(f"{k}: {_one_line(v, d)}" for k, v, d in _sorted_fields(value))
    return _prefix(value, parent_dims) + "{" + inner + "}"


def _field_lines(fields: list[tuple[str, Value, int]], indent: str, closer: str) -> str:
    """Fields one per line at ``indent``; ``closer`` ends the last one."""
    lines = []
    for position, (key, value, dims) in enumerate(fields):
        end = closer if position == len(fields) - 1 else ","
        text = f"{indent}{key}: {_one_line(value, dims)}"
        if isinstance(value, torch.Tensor) or len(text) + len(end) <= _WIDTH:
            lines.append(text + end)
            continue
        nested = _sorted_fields(value)
        opening = f"{indent}{key}: {_prefix(value, dims)}" + "{"
        if not nested:
            lines.append(opening + "}" + end)
            continue
        lines.append(opening + "\n" + _field_lines(nested, indent + _INDENT, "}" + end))
    return "\n".join(lines)
