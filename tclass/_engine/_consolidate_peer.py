"""The peer's description of a consolidated file, written and read.

A file that ``consolidate(filename=...)`` writes ends with a JSON description and its
length (8 bytes, little-endian). The peer's ``from_consolidated`` reads a description of
its own shape, node by node::

    {"cls": "TensorDict", "non_tensors": {key: [value, batch, device]},
     "leaves": {key: [dtype, shape, start, stop, pad(, ragged dim)]},
     "cls_metadata": {"device", "names", "batch_size", "is_locked"}, key: sub-node, ...}

(a lazy stack's and a stack of values' ``cls_metadata`` holds ``stack_dim``,
``stack_dim_name`` and ``is_locked``, their members are the sub-nodes ``"0"``, ``"1"``...;
a record's ``cls`` is ``"<class 'module.QualName'>"``; a jagged tensor is three leaves,
``<NJT_VALUES>key``, ``<NJT_LENGTHS>key`` when it has holes, ``<NJT_OFFSETS>key``).

tclass writes that description last, so that the peer reads its files, and its own
description (:mod:`tclass._engine._consolidate`'s ``{"tree": ..., "leaves": ...}``, which
also keeps what the peer's has no room for: MetaData, value-stack dims, key order, a
lazy stack's batch) between the leaves and it, where the peer looks at nothing: the
leaves end where the description's first key, ``"size"``, says (the peer's reader skips
that key). A file the peer wrote has
no such part; tclass then rebuilds what the peer's description says (records through the
registry of classes defined in this process, never by importing or unpickling).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from tclass._core._dtypes import DTYPES, dtype_named
from tclass.errors import ConsolidatedFileError, MetadataError

__all__ = [
    "encode",
    "is_peer_description",
    "name_of",
    "own_part_at",
    "peer_description",
    "tree_of_peer",
]

_ALIGN = 16  # as _consolidate's layout: every leaf starts on a 16-byte boundary
# keys of a node of the peer's description: a sub-collection under one of them is lost
# ("size" is dropped by the peer's reader, the others overwrite the node's own fields)
_RESERVED = frozenset({"cls", "non_tensors", "leaves", "cls_metadata", "size"})
_WHERE = "the consolidated file"
Layout = Sequence[tuple[torch.dtype, torch.Size, int]]


# --- writing: tclass's tree -> the peer's description ----------------------------------------


def peer_description(tree: dict[str, Any], layout: Layout) -> dict[str, Any]:
    """The peer's description of the collection tclass's ``tree`` describes (the root
    of a record as the peer writes it: its TensorDict).

    Raises:
        ConsolidatedFileError: a sub-collection sits under a key the peer's description
            reserves for itself.
    """
    writer = _Writer(layout)
    end = _end(layout)
    if "record" in tree:
        tree = tree["content"]
    if "value" in tree:  # a value alone: the peer writes an empty node of its batch
        tree = {"batch": tree["batch"], "device": False, "entries": {}}
    # "size" (where the leaves end, which the peer's reader skips) first: tclass finds
    # its own part after it without parsing the rest
    return {"size": end, **writer.node(tree, None)}


_NAMES = {dtype: name for name, dtype in DTYPES.items()}


def name_of(dtype: torch.dtype) -> str:
    """``str(dtype)``, as the descriptions name it (looked up: ``str`` is slower)."""
    name = _NAMES.get(dtype)
    return str(dtype) if name is None else name


def _end(layout: Layout) -> int:
    """Where the leaves of ``layout`` end."""
    if not layout:
        return 0
    dtype, shape, offset = layout[-1]
    return offset + -(-shape.numel() * dtype.itemsize // _ALIGN) * _ALIGN


_SIZE = re.compile(rb'\{"size":(\d{1,20}),')


def own_part_at(peer: bytes) -> int | None:
    """Where tclass's own part starts in a file whose peer's description is ``peer``
    (where the leaves end, as its "size" says); None in a file the peer wrote."""
    found = _SIZE.match(peer)
    return None if found is None else int(found.group(1))


class _Writer:
    def __init__(self, layout: Layout) -> None:
        # each leaf's entry: it runs to where the next one starts (16-byte aligned)
        stops = [offset for _, _, offset in layout[1:]]
        stops.append(_end(layout))
        self.entries = [
            [
                name_of(dtype),
                list(shape),
                offset,
                stop,
                stop - offset - shape.numel() * dtype.itemsize,
            ]
            for (dtype, shape, offset), stop in zip(layout, stops)
        ]

    def node(self, tree: dict[str, Any], names: list[Any] | None) -> dict[str, Any]:
        if "record" in tree:
            out = self.tensordict(tree["content"])
            out["cls"] = f"<class '{tree['record']}'>"
            return out
        if "lazy" in tree:
            return self.lazy(tree)
        if "values" in tree:
            return self.values(tree["values"], list(tree["batch"]), names)
        return self.tensordict(tree)

    def tensordict(self, tree: dict[str, Any]) -> dict[str, Any]:
        batch = list(tree["batch"])
        names = tree.get("names") or [None] * len(batch)
        device = "cpu" if tree["device"] else None  # a file's collections are on the CPU
        non_tensors: dict[str, Any] = {}
        leaves: dict[str, Any] = {}
        nodes: dict[str, Any] = {}
        for key, entry in tree["entries"].items():
            if entry.__class__ is int:
                leaves[key] = self.entries[entry]
            elif "jagged" in entry:
                self.jagged(leaves, key, entry)
            elif "value" in entry:
                non_tensors[key] = [entry["value"], list(entry["batch"]), device]
            else:
                if key in _RESERVED:
                    msg = (
                        f"the sub-collection {key!r} cannot be written into a consolidated "
                        f"file: its description (the peer's) uses {key!r} for itself, so the "
                        "peer would read the file wrong; rename the key, or save with memmap"
                    )
                    raise ConsolidatedFileError(msg)
                nodes[key] = self.node(entry, names)
        metadata = {
            "device": device,
            "names": list(names),
            "batch_size": batch,
            "is_locked": bool(tree.get("locked", False)),
        }
        out = {"cls": "TensorDict", "non_tensors": non_tensors, "leaves": leaves}
        out["cls_metadata"] = metadata
        out.update(nodes)
        return out

    def lazy(self, tree: dict[str, Any]) -> dict[str, Any]:
        metadata = {
            "stack_dim": tree["lazy"],
            "stack_dim_name": tree.get("name"),
            "is_locked": bool(tree.get("locked", False)),
        }
        out: dict[str, Any] = {"cls": "LazyStackedTensorDict", "non_tensors": {}, "leaves": {}}
        out["cls_metadata"] = metadata
        for i, member in enumerate(tree["members"]):
            out[str(i)] = self.node(member, None)
        return out

    def values(self, values: Any, batch: list[int], names: list[Any] | None) -> dict[str, Any]:
        """A stack of values as the peer's nested stacks along their first dim."""
        name = names[0] if names else None
        out: dict[str, Any] = {"cls": "NonTensorStack", "non_tensors": {}, "leaves": {}}
        out["cls_metadata"] = {"stack_dim": 0, "stack_dim_name": name, "is_locked": False}
        if len(batch) == 1:
            out["non_tensors"] = {str(i): [v, [], None] for i, v in enumerate(values)}
        elif batch:
            rest = names[1:] if names else None
            for i, member in enumerate(values):
                out[str(i)] = self.values(member, batch[1:], rest)
        return out

    def leaf(self, position: int, ragged: int | None = None) -> list[Any]:
        entry = self.entries[position]
        return entry if ragged is None else [*entry, ragged]

    def jagged(self, leaves: dict[str, Any], key: str, entry: dict[str, Any]) -> None:
        """A jagged tensor's parts, in the order the peer reads them."""
        positions = entry["jagged"]
        leaves[f"<NJT_VALUES>{key}"] = self.leaf(positions[0])
        if len(positions) > 2:
            leaves[f"<NJT_LENGTHS>{key}"] = self.leaf(positions[2])
        leaves[f"<NJT_OFFSETS>{key}"] = self.leaf(positions[1], entry["ragged"])


# --- reading: the peer's description -> tclass's tree ----------------------------------------


def is_peer_description(description: Any) -> bool:
    """Whether a file's JSON description is the peer's (a node, not tclass's own)."""
    return (
        isinstance(description, dict)
        and "cls" in description
        and "cls_metadata" in description
        and "leaves" in description
    )


def tree_of_peer(description: dict[str, Any], size: int) -> dict[str, Any]:
    """tclass's description (``{"tree", "leaves"}``) of the collection the peer's
    ``description`` describes, over leaves that end before ``size`` bytes.

    Raises:
        MetadataError: the description is damaged, or names a class the peer's files
            do not hold.
    """
    reader = _Reader(size)
    tree = reader.node(description, "the root")
    return {"tree": tree, "leaves": reader.leaves}


def _damaged(where: str, what: str) -> MetadataError:
    return MetadataError(f"{_WHERE}'s description of {where} {what}; the file is damaged")


def _sizes(value: Any, where: str, what: str) -> list[int]:
    if type(value) is not list or not all(type(v) is int and v >= 0 for v in value):
        raise _damaged(where, f"has a {what} that is not a list of sizes ({value!r:.60})")
    return list(value)


def _fields(node: Any, where: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A node's non_tensors, leaves and cls_metadata, checked to be dicts."""
    if not isinstance(node, dict):
        raise _damaged(where, "is not a JSON object")
    values, leaves, metadata = (node.get(k) for k in ("non_tensors", "leaves", "cls_metadata"))
    if not (isinstance(values, dict) and isinstance(leaves, dict) and isinstance(metadata, dict)):
        raise _damaged(where, "lacks non_tensors, leaves or cls_metadata")
    return values, leaves, metadata


class _Reader:
    def __init__(self, size: int) -> None:
        self.size = size
        self.leaves: list[list[Any]] = []  # tclass's leaf records: dtype, shape, offset

    def node(self, node: Any, where: str) -> dict[str, Any]:
        cls = node.get("cls") if isinstance(node, dict) else None
        if cls == "TensorDict":
            return self.tensordict(node, where)
        if cls == "LazyStackedTensorDict":
            return self.lazy(node, where)
        if cls == "NonTensorStack":
            array = self.values(node, where)
            return {"values": array.tolist(), "batch": list(array.shape)}
        if isinstance(cls, str) and cls.startswith("<class '") and cls.endswith("'>"):
            name = cls[len("<class '") : -len("'>")]
            return {"record": name, "content": self.tensordict(node, where)}
        raise _damaged(where, f"names the class {cls!r:.80}, which the peer's files do not hold")

    def tensordict(self, node: Any, where: str) -> dict[str, Any]:
        non_tensors, leaves, metadata = _fields(node, where)
        batch = _sizes(metadata.get("batch_size"), where, "batch_size")
        entries: dict[str, Any] = {}
        for key, value in non_tensors.items():
            entries[key] = self.value(value, f"{key!r}")
        self.tensors(leaves, entries, where)
        for key, sub in node.items():
            if key not in _RESERVED:
                entries[key] = self.node(sub, f"{key!r}")
        tree: dict[str, Any] = {
            "batch": batch,
            "device": metadata.get("device") is not None,
            "entries": entries,
        }
        names = metadata.get("names")
        if names is not None and any(name is not None for name in names):
            if type(names) is not list or len(names) != len(batch):
                raise _damaged(where, f"has names {names!r:.60} for a batch of {batch}")
            tree["names"] = names
        if metadata.get("is_locked") is True:
            tree["locked"] = True
        return tree

    def value(self, value: Any, where: str) -> dict[str, Any]:
        if type(value) is not list or len(value) != 3:
            raise _damaged(where, "is not a value's [data, batch size, device]")
        return {"value": value[0], "batch": _sizes(value[1], where, "batch size")}

    def tensors(self, leaves: dict[str, Any], entries: dict[str, Any], where: str) -> None:
        """The leaves of a node into ``entries``: tensors, and jagged tensors from parts."""
        parts: dict[str, list[int]] = {}  # a jagged tensor's values (and lengths) so far
        for key, entry in leaves.items():
            if key.startswith("<NJT_VALUES>"):
                parts[key[len("<NJT_VALUES>") :]] = [self.leaf(entry, key)]
            elif key.startswith("<NJT_LENGTHS>"):
                self.part_of(parts, key[len("<NJT_LENGTHS>") :], where).append(
                    self.leaf(entry, key)
                )
            elif key.startswith("<NJT_OFFSETS>"):
                name = key[len("<NJT_OFFSETS>") :]
                found = self.part_of(parts, name, where)
                offsets = self.leaf(entry, key)
                ragged = entry[5] if len(entry) > 5 else 1
                if type(ragged) is not int:
                    raise _damaged(f"{key!r}", f"has a ragged dim {ragged!r:.40}")
                entries[name] = {"jagged": [found[0], offsets, *found[1:]], "ragged": ragged}
                del parts[name]
            else:
                entries[key] = self.leaf(entry, key)
        if parts:
            raise _damaged(where, f"has a jagged tensor {next(iter(parts))!r} without offsets")

    def part_of(self, parts: dict[str, list[int]], name: str, where: str) -> list[int]:
        found = parts.get(name)
        if found is None:
            raise _damaged(where, f"has a part of the jagged tensor {name!r} before its values")
        return found

    def leaf(self, entry: Any, key: str) -> int:
        """The position of a leaf among tclass's leaf records, after checking it lies
        in the file."""
        where = f"{key!r}"
        if type(entry) is not list or len(entry) not in (5, 6) or type(entry[0]) is not str:
            raise _damaged(where, "is not a leaf's [dtype, shape, start, stop, pad]")
        dtype = dtype_named(entry[0], _WHERE)
        shape = _sizes(entry[1], where, "shape")
        start, stop = entry[2], entry[3]
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if (
            type(start) is not int
            or type(stop) is not int
            or not 0 <= start <= stop <= self.size
            or stop - start < size
        ):
            raise _damaged(where, f"places {size} bytes at {start}..{stop!r:.20} of {self.size}")
        if start % dtype.itemsize:
            raise _damaged(where, f"places a {dtype} leaf at the unaligned offset {start}")
        self.leaves.append([entry[0], shape, start])
        return len(self.leaves) - 1

    def lazy(self, node: Any, where: str) -> dict[str, Any]:
        _, _, metadata = _fields(node, where)
        dim = metadata.get("stack_dim", 0)
        if type(dim) is not int or dim < 0:
            raise _damaged(where, f"has a stack dim {dim!r:.40}")
        members = [self.node(m, f"{where}[{i}]") for i, m in enumerate(_members(node, where))]
        tree: dict[str, Any] = {"lazy": dim, "members": members}
        if not members:
            tree["batch"] = [0]  # (the peer's empty stack)
        name = metadata.get("stack_dim_name")
        if name is not None:
            tree["name"] = name
        if metadata.get("is_locked") is True:
            tree["locked"] = True
        return tree

    def values(self, node: Any, where: str) -> np.ndarray[Any, Any]:
        """A stack of values as one array of objects (its members stacked along its
        stack dim)."""
        non_tensors, _, metadata = _fields(node, where)
        dim = metadata.get("stack_dim", 0)
        arrays: dict[str, np.ndarray[Any, Any]] = {}
        for key, value in non_tensors.items():
            item = self.value(value, f"{where}[{key}]")
            array: np.ndarray[Any, Any] = np.empty(tuple(item["batch"]), dtype=object)
            flat = array.reshape(-1)  # (one value per element: a list stays one value)
            for i in range(flat.size):
                flat[i] = item["value"]
            arrays[key] = array
        for key, sub in node.items():
            if key not in _RESERVED:
                arrays[key] = self.values(sub, f"{where}[{key}]")
        members = [arrays[str(i)] for i in range(len(arrays)) if str(i) in arrays]
        if len(members) != len(arrays):
            raise _damaged(where, "has members that are not numbered 0, 1, ...")
        if not members:
            return np.empty((0,), dtype=object)
        if type(dim) is not int or not 0 <= dim <= members[0].ndim:
            raise _damaged(where, f"has a stack dim {dim!r:.40}")
        if any(m.shape != members[0].shape for m in members):
            raise _damaged(where, "stacks members of different batch sizes")
        return np.stack(members, axis=dim)


def _members(node: dict[str, Any], where: str) -> list[Any]:
    """A lazy stack's members, the sub-nodes "0", "1", ..."""
    keys = [key for key in node if key not in _RESERVED]
    if sorted(keys) != sorted(str(i) for i in range(len(keys))):
        raise _damaged(where, "has members that are not numbered 0, 1, ...")
    return [node[str(i)] for i in range(len(keys))]


_ENCODER = json.JSONEncoder(check_circular=False, separators=(",", ":"))


def encode(description: dict[str, Any]) -> bytes:
    """The peer's description as the file's JSON."""
    return _ENCODER.encode(description).encode()
