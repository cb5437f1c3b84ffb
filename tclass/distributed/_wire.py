"""How a record becomes tensor messages for ``torch.distributed`` (used by ``distributed.py``).

A record is walked in a fixed order on every rank: keys sorted at each level, the members
of a lazy stack in stack order, a tensorclass through its storage. The walk gives the
*leaves* (tensors) and the *value slots* (Python values: ``NonTensorData`` /
``NonTensorStack`` nodes), and from their keys, dtypes and shapes a JSON *description*
whose BLAKE2b digest identifies the structure. Descriptions are cached per structure, so
a record sent every step costs one walk and one dict lookup.

A transfer is a fixed sequence of messages, all on the wire device:

0. the header, 8 int64: magic, version, digest, small-leaf threshold, bucket size, and the
   byte lengths of the description, of the Python values and of the (broadcast-only)
   tree that rebuilds the record on a rank that has none;
1. the description, values and tree, as one uint8 message;
2. the data: small leaves (at most ``threshold`` bytes) packed back to back into buckets of
   at most ``bucket`` bytes, then each larger leaf alone, received in place when it can be.

The receiver knows from the header alone whether the structures agree (equal digests):
if so it derives every message size from its own record; if not it reads the sender's
description, receives and drops the remaining messages (so the sender is never left
blocked) and names the first differing key. No message ever goes back to the sender.

A sender that refuses where its receivers already wait (a ``scatter`` source given the
wrong number of records, a ``broadcast``, ``send``, ``isend`` or ``init_remote`` sender
whose record cannot travel) sends a *refusal* instead: a header whose bucket size is
``REFUSED``, then its error's text as message 1; each receiver raises
``DistributedError`` with that text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tclass._core._nested import fill_array
from tclass._engine._consolidate import Target, describe, rebuild_from_description
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData, _NonTensorNode, same_value
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._engine._walk import NodeVisitor
from tclass.errors import DistributedError, NotSerializableError, UnsupportedError

__all__ = [
    "HEADER_SIZE", "Header", "Layout", "Slot", "bucket_plan", "build_from_tree", "decode_values",
    "describe_tree", "encode_values", "first_difference", "layout_of", "pack", "parse_description",
    "set_values", "unpack", "value_array",
]  # fmt: skip

Path = tuple[str | int, ...]  # an int is a lazy-stack member
Spec = tuple[Path, torch.dtype | None, torch.Size]  # dtype None: a Python value

MAGIC = 0x7463_6C61_7373_5444  # "tclassTD": the first int64 of every header
VERSION = 1
HEADER_SIZE = 8
SMALL_LEAF = 32 * 1024  # leaves up to this size are packed (measured on gloo, see README)
BUCKET = 1024 * 1024  # a packed message stays under this size
REFUSED = -1  # the bucket size of a refusal's header (a real one is never negative)
_CACHE_LIMIT = 256


@dataclass(frozen=True)
class Slot:
    """A Python value of the record: the TensorDict holding it, its key and node."""

    path: Path
    parent: TensorDict
    key: str
    node: _NonTensorNode


@dataclass(frozen=True)
class _Structure:
    description: bytes
    digest: int


@dataclass(frozen=True)
class Layout:
    """A record's leaves and value slots in wire order, and its structure's identity."""

    leaves: list[torch.Tensor]
    slots: list[Slot]
    description: bytes
    digest: int

    def nbytes(self) -> list[int]:
        return [leaf.numel() * leaf.element_size() for leaf in self.leaves]


@dataclass(frozen=True)
class Header:
    """The first message of a transfer, decoded."""

    digest: int
    threshold: int
    bucket: int
    description_size: int
    values_size: int
    tree_size: int

    def encode(self, device: torch.device) -> torch.Tensor:
        fields = [MAGIC, VERSION, self.digest, self.threshold, self.bucket,
                  self.description_size, self.values_size, self.tree_size]  # fmt: skip
        return torch.tensor(fields, dtype=torch.int64).to(device)

    @classmethod
    def decode(cls, tensor: torch.Tensor, sender: str) -> Header:
        fields = tensor.tolist()
        if fields[0] != MAGIC:
            msg = (
                f"{sender} did not send a tclass record (the first message is not a tclass "
                "header): both sides must call the record methods (send/recv, broadcast...) "
                "with the same ranks and tags"
            )
            raise DistributedError(msg)
        if fields[1] != VERSION:
            msg = (
                f"{sender} uses tclass wire format {fields[1]}, this process {VERSION}: install "
                "the same tclass version on both"
            )
            raise DistributedError(msg)
        return cls(*fields[2:])

    def meta_size(self) -> int:
        return self.description_size + self.values_size + self.tree_size

    @classmethod
    def refusal(cls, text_size: int) -> Header:
        """The header of a refusal: the sender raised instead of sending (message 1 then
        holds its error's text, ``text_size`` bytes), so that no receiver is left waiting."""
        return cls(0, 0, REFUSED, text_size, 0, 0)

    @property
    def refused(self) -> bool:
        return self.bucket == REFUSED


# --- the walk ------------------------------------------------------------------------------

_structures: dict[tuple[Spec, ...], _Structure] = {}


def layout_of(record: Any) -> Layout:
    """The leaves and value slots of ``record`` in wire order, with its description."""
    walk = _Walk()
    walk.visit(record, ())
    signature = tuple(walk.specs)
    structure = _structures.get(signature)
    if structure is None:
        structure = _describe(signature)
        if len(_structures) >= _CACHE_LIMIT:
            _structures.clear()
        _structures[signature] = structure
    return Layout(walk.leaves, walk.slots, structure.description, structure.digest)


class _Walk(NodeVisitor[None]):
    """Collects leaves, value slots and their specs in wire order: keys sorted at each
    level, lazy-stack members in order, a record through its storage."""

    def __init__(self) -> None:
        self.leaves: list[torch.Tensor] = []
        self.slots: list[Slot] = []
        self.specs: list[Spec] = []

    def visit_lazy(self, stack: LazyStackedTensorDict, path: Path) -> None:
        for position, member in enumerate(stack.tensordicts):
            self.visit(member, (*path, position))

    def visit_tensordict(self, td: TensorDict, path: Path) -> None:
        entries = td._entries()
        for key in sorted(entries):
            value = entries[key]
            where = (*path, key)
            if isinstance(value, torch.Tensor):
                if value.is_nested:
                    raise _nested_refused(where, value)
                self.leaves.append(value)
                self.specs.append((where, value.dtype, value.shape))
            elif isinstance(value, _NonTensorNode):
                self.slots.append(Slot(where, td, key, value))
                self.specs.append((where, None, value.batch_size))
            else:
                self.visit(value, where)

    def visit_other(self, node: Any, path: Path) -> None:
        if isinstance(node, TensorDict):  # a subclass of TensorDict travels as one
            self.visit_tensordict(node, path)
            return
        msg = (
            f"cannot transfer a {type(node).__name__} with torch.distributed: send a "
            "TensorDict, a lazy stack or a tensorclass"
        )
        raise UnsupportedError(msg)


def _nested_refused(path: Path, tensor: torch.Tensor) -> UnsupportedError:
    """A nested tensor has no fixed shape to receive into (torch.distributed has no
    kernel for it either: the peer fails there too)."""
    msg = (
        f"cannot transfer the nested tensor at key {path!r} (layout {tensor.layout}) with "
        "torch.distributed: send its parts as entries instead (t.values() and t.offsets() "
        "of a jagged one), or a padded tensor (torch.nested.to_padded_tensor)"
    )
    return UnsupportedError(msg)


def _describe(signature: tuple[Spec, ...]) -> _Structure:
    leaves = [
        [list(path), str(dtype), list(shape)]
        for path, dtype, shape in signature
        if dtype is not None
    ]
    values = [[list(path), list(shape)] for path, dtype, shape in signature if dtype is None]
    description = json.dumps({"leaves": leaves, "values": values}, separators=(",", ":")).encode()
    digest = int.from_bytes(
        hashlib.blake2b(description, digest_size=8).digest(), "little", signed=True
    )
    return _Structure(description, digest)


def parse_description(
    raw: bytes,
) -> tuple[list[tuple[Path, torch.dtype, list[int]]], list[tuple[Path, list[int]]]]:
    """The leaves (path, dtype, shape) and value slots (path, batch) of a description."""
    data = json.loads(raw)
    leaves = [(tuple(path), _dtype_named(name), shape) for path, name, shape in data["leaves"]]
    values = [(tuple(path), shape) for path, shape in data["values"]]
    return leaves, values


def _dtype_named(name: str) -> torch.dtype:
    dtype = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise DistributedError(
            f"the sender's record has a leaf of dtype {name!r}, unknown to this torch"
        )
    return dtype


# --- the data messages ---------------------------------------------------------------------


def bucket_plan(nbytes: Sequence[int], threshold: int, bucket: int) -> list[list[int]]:
    """The data messages: lists of leaf positions. Small leaves are grouped in key order
    into buckets of at most ``bucket`` bytes; a message of one leaf is that leaf alone."""
    messages: list[list[int]] = []
    current: list[int] = []
    filled = 0
    for position, size in enumerate(nbytes):
        if size > threshold or size == 0:  # an empty leaf has no bytes to send
            continue
        if current and filled + size > bucket:
            messages.append(current)
            current, filled = [], 0
        current.append(position)
        filled += size
    if current:
        messages.append(current)
    messages.extend([position] for position, size in enumerate(nbytes) if size > threshold and size)
    return messages


def pack(leaves: Sequence[torch.Tensor], device: torch.device) -> torch.Tensor:
    """The bytes of ``leaves`` back to back (one leaf: the leaf itself, contiguous)."""
    if len(leaves) == 1:
        return leaves[0].to(device).contiguous()
    parts = [_as_bytes(leaf) for leaf in leaves]
    try:
        return torch.cat(parts).to(device)
    except RuntimeError:  # leaves on several devices: gather them on the wire device
        return torch.cat([part.to(device) for part in parts])


def _as_bytes(leaf: torch.Tensor) -> torch.Tensor:
    if leaf.is_conj() or leaf.is_neg():  # lazy bits: materialise the values first
        leaf = leaf.resolve_conj().resolve_neg()
    flat = leaf.reshape(-1)
    return flat if flat.dtype is torch.uint8 else flat.view(torch.uint8)


def unpack(buffer: torch.Tensor, leaves: Sequence[torch.Tensor]) -> None:
    """Copies the bytes of ``buffer`` (as :func:`pack` laid them out) into ``leaves``."""
    sizes = [leaf.numel() * leaf.element_size() for leaf in leaves]
    parts = torch.split(buffer.view(torch.uint8).reshape(-1), sizes)
    direct_dst: list[torch.Tensor] = []
    direct_src: list[torch.Tensor] = []
    for leaf, part in zip(leaves, parts):
        if leaf.is_contiguous() and leaf.device == buffer.device and not leaf.is_conj():
            direct_dst.append(leaf.view(-1).view(torch.uint8))
            direct_src.append(part)
        else:  # a fresh copy is aligned for any dtype; then one strided copy
            leaf.copy_(part.clone().view(leaf.dtype).view(leaf.shape))
    if direct_dst:
        torch._foreach_copy_(direct_dst, direct_src)


# --- Python values -------------------------------------------------------------------------


def encode_values(slots: Sequence[Slot]) -> bytes:
    """The Python values, as JSON (no pickle: receiving never runs code)."""
    if not slots:
        return b""
    entries = [_value_entry(slot.node) for slot in slots]
    try:
        return json.dumps(entries).encode()
    except (TypeError, ValueError):
        pass
    for slot, entry in zip(slots, entries):
        try:
            json.dumps(entry)
        except (TypeError, ValueError) as error:
            msg = (
                f"cannot send the Python value at key {slot.path!r} ({error}): values travel "
                "as JSON (str, int, float, bool, None, lists and dicts of them); make it "
                "JSON, turn it into a tensor, or send it yourself with "
                "torch.distributed.send_object_list between trusted ranks"
            )
            raise NotSerializableError(msg) from None
    raise AssertionError("unreachable: some value failed to encode")


def _value_entry(node: _NonTensorNode) -> dict[str, Any]:
    if isinstance(node, NonTensorData):
        return {"one": node.data}
    return {"each": node.tolist()}


def decode_values(raw: bytes) -> list[dict[str, Any]]:
    return json.loads(raw) if raw else []


def set_values(slots: Sequence[Slot], entries: Sequence[dict[str, Any]]) -> None:
    """Gives each slot its received value, as ``record[:] = other`` does: a changed
    value replaces the node (also in a locked record; its tensors are untouched)."""
    for slot, entry in zip(slots, entries):
        node = slot.node
        if "one" in entry:
            if isinstance(node, NonTensorData) and same_value(node.data, entry["one"]):
                continue
            new: _NonTensorNode = NonTensorData._make(entry["one"], node.batch_size, node.device)
        else:
            new = NonTensorStack._from_array(value_array(entry, node.batch_size), node.device)
        slot.parent._store_entry(slot.key, new)  # a memory-mapped record's folder too


def value_array(entry: dict[str, Any], batch: torch.Size) -> np.ndarray[Any, Any]:
    """A value entry as an object array shaped like ``batch``."""
    array: np.ndarray[Any, Any] = np.empty(tuple(batch), dtype=object)
    if "one" in entry or not batch:
        array.fill(entry.get("one", entry.get("each")))  # fill() never unpacks a list value
    else:
        fill_array(array, entry["each"], list(batch), "the received values")
    return array


# --- rebuilding a record on a rank that has none (broadcast) -------------------------------


def describe_tree(record: Any, leaves: Sequence[torch.Tensor]) -> bytes:
    """JSON that rebuilds ``record`` around received leaves: the consolidation tree
    (classes by name, batch sizes, Python values), each of its leaves' wire position,
    and its lock (a locked record is built locked, as the peer's broadcast builds it)."""
    in_tree_order: list[torch.Tensor] = []
    _, tree = describe(record, in_tree_order)
    position = {id(leaf): index for index, leaf in enumerate(leaves)}
    order = [position[id(leaf)] for leaf in in_tree_order]
    try:
        built = {"tree": tree, "order": order, "locked": bool(record.is_locked)}
        return json.dumps(built).encode()
    except (TypeError, ValueError) as error:
        raise NotSerializableError(
            f"cannot broadcast this record's Python values as JSON ({error})"
        ) from None


def build_from_tree(raw: bytes, leaves: Sequence[torch.Tensor], cls: type | None = None) -> Any:
    """The record :func:`describe_tree` described, its leaves being ``leaves``; its
    root's record class resolved with ``cls`` first (the class the receiver names)."""
    data = json.loads(raw)
    rebuild = rebuild_from_description(data["tree"], cls)
    device = leaves[0].device if leaves else torch.device("cpu")
    built = rebuild([leaves[index] for index in data["order"]], Target(device, False))
    return built.lock_() if data.get("locked") else built


# --- naming a difference -------------------------------------------------------------------


def first_difference(mine: bytes, theirs: bytes) -> tuple[Path, str, str]:
    """The first key (in wire order) where two descriptions differ, and what each side
    has there (``"nothing"`` for an absent key)."""
    ours, others = _entries(mine), _entries(theirs)
    for path in sorted(ours.keys() | others.keys(), key=_sort_key):
        a, b = ours.get(path, "nothing"), others.get(path, "nothing")
        if a != b:
            return path, a, b
    return (), "the same structure", "the same structure"


def _entries(raw: bytes) -> dict[Path, str]:
    leaves, values = parse_description(raw)
    described = {
        path: f"{str(dtype).removeprefix('torch.')} {list(shape)}" for path, dtype, shape in leaves
    }
    described.update((path, f"a Python value over batch {list(batch)}") for path, batch in values)
    return described


def _sort_key(path: Path) -> tuple[tuple[int, str], ...]:
    return tuple((0, f"{part:012d}") if isinstance(part, int) else (1, part) for part in path)
