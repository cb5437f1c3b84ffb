"""The detailed repr of a collection (``set_printoptions(compact=False)``), in the peer's
form: one ``Tensor(shape=..., device=..., dtype=..., is_shared=...)`` line per leaf, the
collection's own batch size, device and sharing last. Which attributes show is read from
``PRINT_OPTIONS`` at each call.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import torch

from tclass._core._printoptions import PRINT_OPTIONS, in_print_order
from tclass._core._records import is_record, storage_of
from tclass._engine._nontensor import NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack

if TYPE_CHECKING:
    from tclass._base.implemented._collection import TensorCollection

__all__ = ["ValueSummary", "declared_fields", "detailed_repr"]

_INDENT = "    "
_shared: Any = torch.Tensor.is_shared  # untyped in torch


class ValueSummary:
    """A lazy stack's Python values at one key, for the repr: the compact form shows the
    kind of member 0's (``str`` for its ``NonTensorData("a")``), as the peer's, and the
    detailed form the stacked values."""

    __slots__ = ("first", "stacked")

    def __init__(self, first: Any, stacked: Any) -> None:
        self.first = first
        self.stacked = stacked


class NodeSummary:
    """A lazy stack's nested collection at one key, for the repr: the compact form names
    it by the class of member 0's entry (``{...}`` for a TensorDict, as the peer's), not
    by the lazy stack that stacks the members' entries."""

    __slots__ = ("name", "node")

    def __init__(self, name: str, node: Any) -> None:
        self.name = name
        self.node = node


def detailed_repr(collection: TensorCollection) -> str:
    return _node(collection, "")


def _node(value: Any, indent: str) -> str:
    """The text of one entry, its continuation lines indented by ``indent``."""
    if value is None:
        return "None"
    if isinstance(value, ValueSummary):  # a lazy stack's Python values, stacked
        value = value.stacked
    if isinstance(value, NodeSummary):
        value = value.node
    if isinstance(value, (NonTensorData, NonTensorStack)):  # their own repr, indented
        return textwrap.indent(repr(value), indent)[len(indent) :]
    if isinstance(value, torch.Tensor) or not hasattr(value, "_repr_items"):
        return _leaf(value)
    return _collection(value, indent)


def _collection(collection: Any, indent: str) -> str:
    inner = indent + _INDENT
    items = list(collection._repr_items())
    lines = [f"{type(collection).__name__}("]
    if is_record(collection):  # ``key=...`` lines, sorted as the peer sorts their text
        texts = in_print_order([f"{key}={_node(value, inner)}" for key, value in items], str)
        texts.extend(f"{name}=None" for name in collection._repr_absent())
        lines.extend(f"{inner}{text}," for text in texts)
    else:
        lines.append(inner + "fields={" + _entries(items, inner + _INDENT) + "},")
        exclusive = collection._repr_exclusive()
        if exclusive is not None:
            lines.append(inner + "exclusive_fields={" + _exclusive(exclusive, inner) + "},")
    lines.extend(f"{inner}{part}," for part in _attributes(collection))
    lines[-1] = lines[-1][:-1] + ")"
    return "\n".join(lines)


def _entries(items: list[tuple[str, Any]], indent: str) -> str:
    """``key: ...`` lines, in the order ``sort_keys`` gives their text (the peer's)."""
    texts = in_print_order([f"{key}: {_node(value, indent)}" for key, value in items], str)
    return "".join(f",\n{indent}{text}" for text in texts)[1:] or "\n" + indent[: -len(_INDENT)]


def _exclusive(members: list[list[tuple[str, Any]]], indent: str) -> str:
    texts = []
    for position, items in enumerate(members):
        if items:
            body = _entries(items, indent + _INDENT * 2)
            texts.append(f"\n{indent}{_INDENT}{position} ->{body}")
    return ",".join(texts) if texts else "\n" + indent


def declared_fields(collection: Any) -> frozenset[str]:
    """A record's field names (empty for other collections): a field named ``batch_size``
    or ``device`` (``shadow=True``) takes the place of that attribute in the repr."""
    return type(collection).__expected_keys__ if is_record(collection) else frozenset()


def _attributes(collection: Any) -> list[str]:
    parts = []
    own = storage_of(collection)  # a record's fields may hide batch_size and device (shadow)
    fields = declared_fields(collection)
    if PRINT_OPTIONS["show_batch_size"]:
        if "batch_size" not in fields:
            parts.append(f"batch_size={own.batch_size}")
        elif "shape" not in fields:  # the peer's
            parts.append(f"shape={own.batch_size}")
    if PRINT_OPTIONS["show_device"] and "device" not in fields:
        parts.append(f"device={own.device}")
    if PRINT_OPTIONS["show_is_shared"]:
        parts.append(f"is_shared={_collection_shared(collection)}")
    stack_dim = collection._repr_extra()
    if stack_dim:
        parts.append(stack_dim.removeprefix(", "))
    return parts


def _leaf(tensor: Any) -> str:
    """``Tensor(...)`` with the attributes the options show; a lazy stack's stand-in for a
    tensor it would have to build shows its dtype, shape (-1 where members differ) and
    device."""
    options = PRINT_OPTIONS
    parts = []
    shape = getattr(tensor, "shape", None)
    if shape is None and getattr(tensor, "ranks_differ", False):
        shape = (-1,)  # a lazy stack's members' tensors of different dims, as the peer
    if options["show_shape"]:
        parts.append(f"shape={torch.Size(shape) if shape is not None else '?'}")
    if options["show_field_device"]:
        parts.append(f"device={tensor.device}")
    if options["show_dtype"]:
        parts.append(f"dtype={tensor.dtype}")
    real = isinstance(tensor, torch.Tensor)
    # the leaf's class, as the peer's (``MemoryMappedTensor(...)``, ``Parameter(...)``); for
    # a lazy stack's members of different sizes, member 0's
    model = tensor if real else getattr(tensor, "first", None)
    if options["show_field_is_shared"]:
        parts.append(f"is_shared={model is not None and _is_shared(model)}")
    if real:
        parts.extend(_tensor_details(tensor))
    return f"{type(model).__name__ if model is not None else 'Tensor'}(" + ", ".join(parts) + ")"


def _collection_shared(collection: Any) -> bool:
    if collection._repr_exclusive() is not None:  # a lazy stack: its members may differ
        return all(member.is_shared() for member in collection.tensordicts)
    return bool(collection.is_shared())


def _is_shared(tensor: torch.Tensor) -> bool:
    return tensor.device.type != "meta" and (tensor.is_cuda or bool(_shared(tensor)))


def _tensor_details(tensor: torch.Tensor) -> list[str]:
    options = PRINT_OPTIONS
    parts = []
    if options["show_grad"]:
        parts.append(f"requires_grad={tensor.requires_grad}")
    if options["show_is_contiguous"]:
        parts.append(f"is_contiguous={tensor.is_contiguous()}")
    if options["show_is_view"]:
        parts.append(f"is_view={tensor._base is not None}")
    if options["show_storage_size"]:
        parts.append(f"storage_size={tensor.untyped_storage().nbytes()}")
    if options["plain"]:
        parts.append(_summary(tensor))
    return parts


def _summary(tensor: torch.Tensor) -> str:
    """``mean=..., std=...`` of a float tensor, ``min=..., max=...`` of others."""
    if tensor.numel() == 0 or tensor.device.type == "meta":
        return "[]"
    data = tensor.detach()
    if data.is_floating_point() or data.is_complex():
        data = data.to(torch.complex128 if data.is_complex() else torch.float64)
        std = data.std().item() if data.numel() > 1 else float("nan")
        return f"mean={data.mean().item():.4g}, std={std:.4g}"
    return f"min={data.min().item()}, max={data.max().item()}"
