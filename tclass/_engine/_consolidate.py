"""Consolidation: every leaf of a collection in one contiguous storage.

``consolidate()`` copies the tensors of a collection (nested ones included) into one
``uint8`` buffer, each at an aligned offset, followed by a JSON description of the
structure (classes, batch sizes, Python values, each leaf's dtype, shape and offset) and
its length. The result is an equivalent collection whose leaves are views of that buffer.

Why: moving many small tensors costs one transfer each. A consolidated collection moves
with one copy of the buffer (``to(device)``), after which the views are rebuilt on the
other side; it pickles as that one buffer; and :func:`from_consolidated` rebuilds it from
the buffer alone (the JSON trailer says everything).

Layout of the buffer: ``[leaves, grouped by dtype, 16-byte aligned][JSON][length: 8 bytes,
little-endian]``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tclass._base._device_ops import share
from tclass._core._device import wait_for_device_copies
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData, NonTensorStack
from tclass._engine._td import TensorDict
from tclass.errors import MetadataError, NotSerializableError, UnsupportedError

__all__ = [
    "Consolidated",
    "consolidate",
    "from_consolidated",
    "moved",
    "moved_buffer",
    "reduce_consolidated",
]

_ALIGN = 16  # every leaf starts on a 16-byte boundary: any dtype's view is aligned
_LENGTH = struct.Struct("<Q")
Rebuild = Callable[[Sequence[torch.Tensor], "_Target"], Any]


@dataclass(frozen=True)
class _Target:
    """Where rebuilt nodes live: ``device``; ``moved`` when every node takes it (as after
    ``to(device)``), else only the nodes that had a device do (as after ``consolidate``)."""

    device: torch.device
    moved: bool


@dataclass
class Consolidated:
    """What a consolidated collection remembers: its buffer, the leaves it handed out
    (to notice a replaced leaf), and how to rebuild itself over another buffer."""

    buffer: torch.Tensor
    leaves: list[torch.Tensor]
    layout: list[tuple[torch.dtype, torch.Size, int]]  # per leaf: dtype, shape, byte offset
    rebuild: Rebuild
    standalone: bool = True  # the trailer describes the tree (all Python values are JSON)

    def is_current(self, node: Any) -> bool:
        """Whether ``node``'s leaves are still the views of the buffer."""
        mine = self.leaves
        current = _leaves_of(node)
        return len(current) == len(mine) and all(a is b for a, b in zip(current, mine))


def consolidate(
    node: Any,
    *,
    device: torch.device | None = None,
    pin_memory: bool = False,
    share_memory: bool = False,
) -> Any:
    """A copy of ``node`` whose leaves are views of one buffer (see the module doc)."""
    leaves: list[torch.Tensor] = []
    rebuild, description = _flatten(node, leaves)
    target = device if device is not None else _common_device(leaves)
    layout, end = _layout(leaves)
    trailer = _trailer(description, layout)
    size = end + len(trailer) + _LENGTH.size
    buffer = torch.empty(
        size, dtype=torch.uint8, device=target, pin_memory=pin_memory and target.type == "cpu"
    )
    if share_memory:
        share(buffer)
    views = _views(buffer, layout)
    for view, leaf in zip(views, leaves):
        view.copy_(leaf)
    tail = torch.frombuffer(bytearray(trailer + _LENGTH.pack(len(trailer))), dtype=torch.uint8)
    buffer[end:].copy_(tail)
    standalone = not trailer.startswith(b'{"tree": null')
    return _attach(
        rebuild(views, _Target(target, False)),
        Consolidated(buffer, views, layout, rebuild, standalone),
    )


def moved(node: Any, state: Consolidated, device: torch.device, non_blocking: bool) -> Any:
    """``node`` (consolidated, current) on ``device``: one copy of the buffer, then views."""
    buffer = state.buffer.to(device, non_blocking=non_blocking)
    if non_blocking and device.type == "cpu":
        wait_for_device_copies()
    return moved_buffer(node, state, buffer)


def moved_buffer(node: Any, state: Consolidated, buffer: torch.Tensor) -> Any:
    """``node`` rebuilt over ``buffer``, a copy of its consolidated buffer."""
    views = _views(buffer, state.layout)
    target = _Target(buffer.device, True)
    result = _attach(
        state.rebuild(views, target),
        Consolidated(buffer, views, state.layout, state.rebuild, state.standalone),
    )
    if hasattr(type(result), "__tclass_info__") and not hasattr(type(node), "__tclass_info__"):
        return result._tensordict  # a record's storage was moved: the record rewraps it
    return result


def from_consolidated(buffer: torch.Tensor, *, cls: type | None = None) -> Any:
    """Rebuild the collection a consolidated buffer holds (its JSON trailer describes it).

    Raises:
        MetadataError: the tensor is not a consolidated buffer (no valid trailer).
    """
    if not isinstance(buffer, torch.Tensor) or buffer.dtype != torch.uint8 or buffer.dim() != 1:
        msg = "from_consolidated expects the 1-d uint8 buffer of a consolidated collection (td.consolidate()._consolidated buffer)"
        raise MetadataError(msg)
    description = _read_trailer(buffer)
    if description["tree"] is None:
        msg = (
            "this buffer's collection holds Python values that are not JSON, so the buffer "
            "alone cannot rebuild it; move or pickle the consolidated collection instead"
        )
        raise NotSerializableError(msg)
    layout = [(_dtype(d), torch.Size(s), o) for d, s, o in description["leaves"]]
    rebuild = _rebuild_from_description(description["tree"], cls)
    views = _views(buffer, layout)
    return _attach(
        rebuild(views, _Target(buffer.device, False)), Consolidated(buffer, views, layout, rebuild)
    )


def reduce_consolidated(node: Any) -> tuple[Any, ...] | None:
    """``__reduce__`` of a current consolidated collection: the one buffer (whose trailer
    rebuilds the rest); None when it cannot (not consolidated, or non-JSON values)."""
    from tclass._base._device_ops import consolidation_of

    state = consolidation_of(node)
    if state is None or not state.standalone:
        return None
    return (_unpickle_buffer, (state.buffer, not hasattr(type(node), "__tclass_info__")))


def _unpickle_buffer(buffer: torch.Tensor, storage_only: bool) -> Any:
    node = from_consolidated(buffer)
    return getattr(node, "_tensordict", node) if storage_only else node


# --- the tree ------------------------------------------------------------------------------


def _flatten(node: Any, leaves: list[torch.Tensor]) -> tuple[Rebuild, dict[str, Any]]:
    """Collects ``node``'s tensors into ``leaves``; returns its rebuild and description."""
    if hasattr(type(node), "__tclass_info__"):
        content, inner = _flatten(node._tensordict, leaves)
        cls = type(node)
        name = f"{cls.__module__}.{cls.__qualname__}"
        return (lambda views, target: cls._from_tensordict_unchecked(content(views, target))), {
            "record": name,
            "content": inner,
        }
    if isinstance(node, LazyStackedTensorDict):
        parts = [_flatten(member, leaves) for member in node.tensordicts]
        dim, batch = node.stack_dim, node.batch_size
        return (
            lambda views, target: LazyStackedTensorDict._from_members(
                [p(views, target) for p, _ in parts], dim, batch
            )
        ), {"lazy": dim, "members": [d for _, d in parts]}
    if isinstance(node, (NonTensorData, NonTensorStack)):
        return _flatten_value(node)
    if type(node) is TensorDict:
        return _flatten_td(node, leaves)
    msg = f"cannot consolidate a {type(node).__name__}"
    raise UnsupportedError(msg)


def _flatten_td(td: TensorDict, leaves: list[torch.Tensor]) -> tuple[Rebuild, dict[str, Any]]:
    parts: list[tuple[str, int | Rebuild]] = []
    entries: dict[str, Any] = {}
    for key, value in td._items():
        if isinstance(value, torch.Tensor):
            parts.append((key, len(leaves)))
            entries[key] = len(leaves)
            leaves.append(value)
        else:
            rebuild, entries[key] = _flatten(value, leaves)
            parts.append((key, rebuild))
    batch, keeps_device = td.batch_size, td.device is not None

    def rebuild_td(views: Sequence[torch.Tensor], target: _Target) -> TensorDict:
        tensors = {key: views[p] if isinstance(p, int) else p(views, target) for key, p in parts}
        return TensorDict._new_unchecked(
            tensors, batch, target.device if keeps_device or target.moved else None
        )

    return rebuild_td, {"batch": list(batch), "device": keeps_device, "entries": entries}


def _flatten_value(node: NonTensorData | NonTensorStack) -> tuple[Rebuild, dict[str, Any]]:
    batch = node.batch_size
    if isinstance(node, NonTensorData):
        data = node.data
        description: dict[str, Any] = {"value": data, "batch": list(batch)}
        rebuild: Rebuild = lambda views, target: NonTensorData._make(data, batch, target.device)
    else:
        array = node._as_array()
        description = {"values": node.tolist(), "batch": list(batch)}
        rebuild = lambda views, target: NonTensorStack._from_array(array, target.device)
    return rebuild, description


def _rebuild_from_description(tree: dict[str, Any], cls: type | None) -> Rebuild:
    """The rebuild function of a tree read back from a buffer's JSON trailer."""
    from tclass._io._classes import resolve_class

    if "record" in tree:
        record_cls = resolve_class(
            tree["record"], (cls,) if cls is not None else (), "the consolidated buffer"
        )
        content = _rebuild_from_description(tree["content"], None)
        return lambda views, target: record_cls._from_tensordict_unchecked(content(views, target))  # type: ignore[attr-defined]
    if "lazy" in tree:
        members = [_rebuild_from_description(member, None) for member in tree["members"]]
        dim = tree["lazy"]
        return lambda views, target: LazyStackedTensorDict(
            *(m(views, target) for m in members), stack_dim=dim
        )
    batch = torch.Size(tree["batch"])
    if "value" in tree:
        data = tree["value"]
        return lambda views, target: NonTensorData._make(data, batch, target.device)
    if "values" in tree:
        from tclass._io._read import fill_array

        shaped: np.ndarray[Any, Any] = np.empty(tuple(batch), dtype=object)
        fill_array(shaped, tree["values"], list(batch), "the consolidated buffer")
        return lambda views, target: NonTensorStack._from_array(shaped, target.device)
    parts = {
        key: (entry if isinstance(entry, int) else _rebuild_from_description(entry, None))
        for key, entry in tree["entries"].items()
    }
    keeps_device = tree["device"]

    def rebuild_td(views: Sequence[torch.Tensor], target: _Target) -> TensorDict:
        tensors = {
            key: views[p] if isinstance(p, int) else p(views, target) for key, p in parts.items()
        }
        return TensorDict._new_unchecked(
            tensors, batch, target.device if keeps_device or target.moved else None
        )

    return rebuild_td


# --- the buffer ----------------------------------------------------------------------------


def _layout(
    leaves: Sequence[torch.Tensor],
) -> tuple[list[tuple[torch.dtype, torch.Size, int]], int]:
    """Each leaf's (dtype, shape, byte offset), and where the leaves end."""
    layout = []
    offset = 0
    for leaf in leaves:
        layout.append((leaf.dtype, leaf.shape, offset))
        offset += -(-leaf.numel() * leaf.element_size() // _ALIGN) * _ALIGN
    return layout, offset


def _views(
    buffer: torch.Tensor, layout: Sequence[tuple[torch.dtype, torch.Size, int]]
) -> list[torch.Tensor]:
    """The leaves as views of ``buffer``."""
    views = []
    storage = buffer.untyped_storage()
    base = buffer.storage_offset()
    device = buffer.device
    for dtype, shape, offset in layout:
        view = torch.empty(0, dtype=dtype, device=device)
        views.append(view.set_(storage, (base + offset) // dtype.itemsize, shape))  # type: ignore[call-overload]
    return views


def _trailer(
    description: dict[str, Any], layout: Sequence[tuple[torch.dtype, torch.Size, int]]
) -> bytes:
    """The JSON description; ``{"tree": null}`` when a Python value is not JSON (the
    buffer then moves and pickles with its container, but cannot rebuild it alone)."""
    records = _leaf_records(layout)
    try:
        return json.dumps({"tree": description, "leaves": records}).encode()
    except (TypeError, ValueError):
        return json.dumps({"tree": None, "leaves": records}).encode()


def _leaf_records(layout: Sequence[tuple[torch.dtype, torch.Size, int]]) -> list[list[Any]]:
    return [[str(dtype), list(shape), offset] for dtype, shape, offset in layout]


def _dtype(name: str) -> torch.dtype:
    from tclass._io._format import DTYPES

    dtype = DTYPES.get(name)
    if dtype is None:
        raise MetadataError(f"the consolidated buffer names an unknown dtype {name!r}")
    return dtype


def _read_trailer(buffer: torch.Tensor) -> dict[str, Any]:
    data = buffer.cpu() if buffer.device.type != "cpu" else buffer
    total = data.numel()
    if total < _LENGTH.size:
        raise MetadataError("the buffer is too short to be a consolidated collection")
    (length,) = _LENGTH.unpack(bytes(data[total - _LENGTH.size :].tolist()))
    if length > total - _LENGTH.size:
        raise MetadataError(
            "the buffer's trailer length is out of range: not a consolidated collection"
        )
    raw = bytes(data[total - _LENGTH.size - length : total - _LENGTH.size].numpy().tobytes())
    try:
        description = json.loads(raw)
    except ValueError as error:
        raise MetadataError(f"the buffer's trailer is not valid JSON ({error})") from None
    if (
        not isinstance(description, dict)
        or "tree" not in description
        or "leaves" not in description
    ):
        raise MetadataError("the buffer's trailer does not describe a collection")
    return description


def _common_device(leaves: Sequence[torch.Tensor]) -> torch.device:
    devices = {leaf.device for leaf in leaves}
    if len(devices) > 1:
        msg = f"cannot consolidate leaves on several devices ({sorted(map(str, devices))}); pass device="
        raise UnsupportedError(msg)
    return devices.pop() if devices else torch.device("cpu")


def _leaves_of(node: Any) -> list[torch.Tensor]:
    leaves: list[torch.Tensor] = []
    _collect(node, leaves)
    return leaves


def _collect(node: Any, leaves: list[torch.Tensor]) -> None:
    storage = getattr(node, "_tensordict", None)
    if storage is not None:
        _collect(storage, leaves)
    elif isinstance(node, LazyStackedTensorDict):
        for member in node.tensordicts:
            _collect(member, leaves)
    elif isinstance(node, TensorDict):
        for value in node._tensors.values():
            if isinstance(value, torch.Tensor):
                leaves.append(value)
            else:
                _collect(value, leaves)


def _attach(node: Any, state: Consolidated) -> Any:
    target = getattr(node, "_tensordict", node)
    target._consolidated = state
    return node
