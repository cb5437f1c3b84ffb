"""The compact repr of a collection, in the peer's 0.15 form.

``TensorDict(batch_size=[4], device=cpu, fields={a: f32[3], b: {c: i64[]}})``: each tensor
shows its dtype code and its feature dims (the dims after the batch dims); a nested
collection shows the batch dims it adds, then its own fields. Keys are sorted. A repr
longer than 80 columns puts one field per line, and so does any nested collection whose
own line would be too long.
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypeVar

import torch
from torch.nn.parameter import is_lazy

from tclass._base.implemented._collection import TensorCollection
from tclass._core._jagged import leaf_shape
from tclass._core._printoptions import PRINT_OPTIONS, in_print_order
from tclass._core._records import storage_of
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._nontensor import MetaData, NonTensorData, is_non_tensor
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._repr_detail import (
    NodeSummary,
    ValueSummary,
    declared_fields,
    detailed_repr,
)

__all__ = [
    "COMPACT_REPRS",
    "Field",
    "LeafSummary",
    "NodeSummary",
    "ValueSummary",
    "compact_repr",
    "dtype_code",
    "entry_tree",
    "header",
    "shows_compact_repr",
]

_WIDTH = 80
_M = TypeVar("_M")
_INDENT = "    "

_NAME_PREFIXES = (("float", "f"), ("uint", "u"), ("int", "i"), ("complex", "c"))
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
    """``f32`` for float32 and so on; other dtypes by their torch name, shortened the same
    way (``float8_e5m2`` -> ``f8_e5m2``)."""
    code = _DTYPE_CODES.get(dtype)
    if code is None:
        code = str(dtype).removeprefix("torch.")
        for long, short in _NAME_PREFIXES:
            if code.startswith(long):
                code = short + code[len(long) :]
                break
        _DTYPE_CODES[dtype] = code
    return code


def _dims(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(size) for size in shape) + "]"


class LeafSummary:
    """A stand-in for a tensor a lazy stack would have to build to show it: its dtype
    (``None`` if members differ), full shape with -1 where members differ (``None`` if
    they differ in dims) and device; where sizes differ, member 0's tensor, whose class and
    sharing the detailed form shows (the peer's). ``ranks_differ``: the shape is ``None``
    because the members' tensors have different numbers of dims (shown ``[-1]``, as the
    peer's), not because an entry could not be read (``[?]``)."""

    __slots__ = ("device", "devices", "dtype", "first", "ranks_differ", "shape")

    def __init__(
        self,
        dtype: torch.dtype | None,
        shape: tuple[int, ...] | None,
        device: torch.device | None,
        first: torch.Tensor | None = None,
        *,
        ranks_differ: bool = False,
    ) -> None:
        self.dtype = dtype
        self.shape = shape
        self.device = device
        self.first = first
        self.ranks_differ = ranks_differ
        # the members' devices (set by the lazy stack), shown as the peer: "@cpu,meta"
        self.devices: frozenset[torch.device] = frozenset()

    def text(self, parent_dims: int, parent_device: torch.device | None = None) -> str:
        code = "?" if self.dtype is None else dtype_code(self.dtype)
        if not PRINT_OPTIONS["show_dtype"]:
            code = ""
        if self.shape is None:
            code += "[-1]" if self.ranks_differ else "[?]"
        else:
            code += _dims(self.shape[parent_dims:])
        if parent_device is None and self.devices and self.devices != _CPU:
            code += "@" + ",".join(sorted(map(str, self.devices)))
        return code


_CPU = frozenset((torch.device("cpu"),))


COMPACT_REPRS: set[Any] = set()  # the __repr__ methods that give compact_repr's text


def shows_compact_repr(method: _M) -> _M:
    """Marks a ``__repr__`` as ``compact_repr``'s text (the notebook display then shows
    nested blocks; a class keeping another repr is shown as that text)."""
    COMPACT_REPRS.add(method)
    return method


def compact_repr(collection: TensorCollection) -> str:
    """The whole repr: one line if it fits in 80 columns, else one field per line (the
    detailed form of ``_repr_detail`` with ``set_printoptions(compact=False)``)."""
    if not PRINT_OPTIONS["compact"]:
        return detailed_repr(collection)
    parts = header(collection)
    parts.append("fields={")
    head = f"{type(collection).__name__}(" + ", ".join(parts)
    fields, exclusive = entry_tree(collection)
    # the fields' last line is followed by ``, exclusive_fields={`` where members differ
    tail = _EXCLUSIVE if exclusive else ""
    one_line = head + ", ".join(field.text for field in fields) + "}"
    if not fields or len(one_line) + len(tail) + 1 <= _WIDTH:
        out = one_line
    else:
        out = head + "\n" + _field_lines(fields, _INDENT, "}" + tail + ")")
        out = out[: len(out) - len(tail) - 1]
    if exclusive:
        used = len(out.rsplit("\n", 1)[-1]) + len(_EXCLUSIVE) - 1
        out += _EXCLUSIVE[:-1] + _exclusive_text(exclusive, used)
    return out + ")"


def header(collection: TensorCollection) -> list[str]:
    """``batch_size=[...]``, ``device=...`` and a lazy stack's ``stack_dim=...``, as the
    options show them."""
    parts = []
    own = storage_of(collection)  # a record's fields may hide batch_size and device (shadow)
    fields = declared_fields(collection)  # ... and are then not shown, as the peer's
    if PRINT_OPTIONS["show_batch_size"] and "batch_size" not in fields:
        parts.append(f"batch_size={_dims(own.batch_size)}")
    if own.device is not None and PRINT_OPTIONS["show_device"] and "device" not in fields:
        parts.append(f"device={own.device}")
    extra = collection._repr_extra()  # after the device, as the peer's (stack_dim)
    if extra:
        parts.append(extra.removeprefix(", "))
    return parts


_EXCLUSIVE = ", exclusive_fields={"


class Field(NamedTuple):
    """An entry as the compact repr shows it (``key: shown``), found in the one walk that
    the text and the notebook display render; a nested collection's ``prefix`` (its class
    and the batch dims it adds) and own fields (``nested``; None for a leaf)."""

    key: str
    shown: str
    value: Any = None
    prefix: str = ""
    nested: list[Field] | None = None

    @property
    def text(self) -> str:
        return f"{self.key}: {self.shown}"


def entry_tree(collection: TensorCollection) -> tuple[list[Field], list[Field]]:
    """The entries the compact repr shows, as a tree, and a lazy stack's exclusive ones,
    one node per member position holding some (the peer lists them after the others)."""
    exclusive = []
    stack: Any = collection  # a lazy stack: the only collection with exclusive keys
    for position, own in enumerate(collection._repr_exclusive() or ()):
        if own:
            keys = {key for key, _ in own}
            fields = [f for f in _fields(stack.tensordicts[position]) if f.key in keys]
            shown = "{" + ", ".join(f.text for f in fields) + "}"
            exclusive.append(Field(str(position), shown, nested=fields))
    return _fields(collection), exclusive


def _exclusive_text(exclusive: list[Field], used: int) -> str:
    """``{1: {...}, ...}``: on one line if it fits after the ``used`` columns, else one
    member per line, each split as ``_field_lines`` splits the fields."""
    flat = "{" + ", ".join(f.text for f in exclusive) + "}"
    if used + len(flat) + 1 <= _WIDTH:
        return flat
    return ("{\n" + _field_lines(exclusive, _INDENT, "})"))[:-1]


def _fields(collection: TensorCollection) -> list[Field]:
    """Its entries (nested ones within), sorted by their text as the peer does."""
    own = storage_of(collection)
    dims = len(own.batch_size)
    by_class = collection._repr_values_by_class()
    fields = [
        _field(key, value, dims, own.device, by_class) for key, value in collection._repr_items()
    ]
    fields = in_print_order(fields, _text)
    # Declared fields holding None come last, as the peer lists them.
    fields.extend(Field(name, "None") for name in collection._repr_absent())
    return fields


def _field(
    key: str, value: Any, parent_dims: int, parent_device: torch.device | None, by_class: bool
) -> Field:
    if _is_leaf(value):
        return Field(key, _one_line(value, parent_dims, parent_device, by_class), value)
    nested = _fields(_node(value))
    prefix = _prefix(value, parent_dims)
    shown = prefix + "{" + ", ".join(f.text for f in nested) + "}"
    return Field(key, shown, value, prefix, nested)


def _is_leaf(value: Any) -> bool:
    return (
        value is None
        or isinstance(value, (torch.Tensor, LeafSummary, ValueSummary))
        or is_non_tensor(value)
        or not isinstance(_node(value), TensorCollection)
    )


def _text(field: Field) -> str:
    return field.text


def _node(value: Any) -> Any:
    """The collection a lazy stack's ``NodeSummary`` shows; any other value as it is."""
    return value.node if isinstance(value, NodeSummary) else value


def _prefix(value: TensorCollection | NodeSummary, parent_dims: int) -> str:
    """What precedes a nested collection's fields: its class (unless TensorDict; for a
    lazy stack's entry, the class of member 0's) and the batch dims it adds to its
    parent's."""
    name = value.name if isinstance(value, NodeSummary) else type(value).__name__
    extra = tuple(storage_of(_node(value)).batch_size[parent_dims:])
    return ("" if name == "TensorDict" else name) + (_dims(extra) if extra else "")


def _one_line(
    value: Any, parent_dims: int, parent_device: torch.device | None, by_class: bool = False
) -> str:
    if isinstance(value, LeafSummary):
        return value.text(parent_dims, parent_device)
    if isinstance(value, ValueSummary):
        return _one_line(value.first, parent_dims, parent_device)
    if by_class and isinstance(value, NonTensorData):
        return "NonTensorData"
    if isinstance(value, torch.Tensor):
        shown = 0 if value.__class__ is UnbatchedTensor else parent_dims  # no batch dims
        code = dtype_code(value.dtype) if PRINT_OPTIONS["show_dtype"] else ""
        # An uninitialized parameter (of a lazy module) has no shape yet: [-1], as the peer.
        dims = (-1,) if is_lazy(value) else tuple(leaf_shape(value)[shown:])
        text = code + _dims(dims)
        # Without a common device, say where a tensor is unless it is on the CPU.
        if parent_device is None and value.device.type != "cpu":
            text += f"@{value.device}"
        return text
    if isinstance(value, MetaData):
        return "MetaData"  # its class, as the peer (a MetaData is no NonTensorData there)
    if isinstance(value, NonTensorData):
        return type(value.data).__name__  # the type of the value the batch shares
    if isinstance(value, NonTensorStack):
        return "NonTensorStack"
    return repr(value)  # a placeholder leaf of a pytree spec (torch's treespec_pprint)


def _field_lines(fields: list[Field], indent: str, closer: str) -> str:
    """Fields one per line at ``indent``; ``closer`` ends the last one."""
    lines = []
    for position, field in enumerate(fields):
        end = closer if position == len(fields) - 1 else ","
        text = field.text
        if field.nested is None or len(indent) + len(text) + len(end) <= _WIDTH:
            lines.append(indent + text + end)
        elif not field.nested:
            lines.append(f"{indent}{field.key}: {field.prefix}{{}}{end}")
        else:
            inner = _field_lines(field.nested, indent + _INDENT, "}" + end)
            lines.append(f"{indent}{field.key}: {field.prefix}{{\n{inner}")
    return "\n".join(lines)
