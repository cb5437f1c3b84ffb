"""``state_dict`` / ``load_state_dict`` for every collection, in the form ``nn.Module`` uses.

A state dict maps dotted keys (``"next.obs"``) to tensors, or with ``flatten=False``
nests ``OrderedDict``s like the collection. Everything else goes in
``state_dict._metadata``, where ``nn.Module`` keeps its own extras, written as the peer
(tensordict 0.15.3) writes them, so that each library loads the other's strict: one
entry per collection node, under its dotted key (``""`` for the root; nested, each
nested dict carries its own ``_metadata``), holding its ``batch_size`` and ``device``; a
record's adds its class (``_type``: its ``__qualname__``, informative only) and its
Python values (``_non_tensor``, ``None`` for a field not set); a Python value held in a
TensorDict is a node of its own (``_type`` ``"NonTensorData"`` / ``"MetaData"``, the
value in ``_non_tensor["data"]``), and a stack of values per element too, its values
under ``_non_tensor[PER_ELEMENT]`` (the peer's entry has none: it loses them), a record
field's beside its ``_non_tensor``, under ``PER_ELEMENT`` (the peer skips both). State
dicts of earlier tclass versions (a TensorDict's values in its node's ``_non_tensor``,
a nested dict's metadata all at its root) still load. The dict
can go through ``torch.save`` / ``torch.load(weights_only=True)``, and a state dict taken
with ``keep_vars=True`` holds the collection's own tensors, so a checkpoint library can
restore into them in place (a memory-mapped destination is written without the data
passing through RAM in one piece).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar, cast

import numpy as np
import torch

from tclass._base._provided import INTEROP
from tclass._base.implemented._collection import TensorCollection
from tclass._core._records import is_record
from tclass._core._spec import viewable
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import MetaData, NonTensorData, _NonTensorNode, same_value
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass.errors import (
    BatchSizeError,
    EntryTypeError,
    KeyConflictError,
    MetaTensorError,
    StateDictDestinationError,
    StateDictKeyError,
    UnknownFieldError,
)

__all__ = ["PER_ELEMENT", "load_state_dict", "state_dict"]

C = TypeVar("C", bound=TensorCollection)

Path = tuple[str, ...]
# A per-element value stack is recorded as {PER_ELEMENT: nested lists in batch order}:
# plain data, so that torch.load(weights_only=True) reads it.
PER_ELEMENT = "_tclass_per_element"
_DIMS = "_tclass_batch_size"  # beside it: the stack's batch size, where not its node's


# --- taking a state dict ------------------------------------------------------------------


def state_dict(
    collection: TensorCollection,
    destination: dict[str, Any] | None,
    prefix: str,
    keep_vars: bool,
    flatten: bool,
) -> OrderedDict[str, Any]:
    """The state dict of ``collection`` (see the module docstring)."""
    out: OrderedDict[str, Any] = OrderedDict() if destination is None else destination  # type: ignore[assignment]
    metadata = getattr(out, "_metadata", None)
    if metadata is None:
        metadata = OrderedDict()
        try:
            out._metadata = metadata  # type: ignore[attr-defined]
        except AttributeError:
            msg = (
                f"state_dict: the destination, a {type(out).__name__}, cannot carry the "
                "_metadata that holds batch sizes and Python values; pass an OrderedDict"
            )
            raise StateDictDestinationError(msg) from None
    _write_node(out, metadata, collection, (), prefix, keep_vars, flatten, set())
    return out


def _write_node(
    out: dict[str, Any],
    metadata: dict[str, Any],
    node: TensorCollection,
    path: Path,
    prefix: str,
    keep_vars: bool,
    flatten: bool,
    written: set[str],
) -> None:
    """One node's tensors and metadata, its nested nodes in place among its keys
    (depth first, in key order: the peer's order). Flat, every node's metadata goes in
    ``metadata`` under its dotted key; nested (``flatten=False``), each nested
    ``OrderedDict`` carries its own ``_metadata`` (``""``: itself), as the peer's."""
    metadata[_node_key(prefix, path)] = _node_metadata(node)
    if isinstance(node, _NonTensorNode):
        return  # a Python value: its node's entry holds it
    record = is_record(node)
    for key, value in node._items():
        if isinstance(value, TensorCollection):
            if isinstance(value, _NonTensorNode) and record:
                continue  # a record's Python values are in its own node's entry
            if flatten:
                _write_node(out, metadata, value, path + (key,), prefix, keep_vars, True, written)
                continue
            child: OrderedDict[str, Any] = OrderedDict()
            child._metadata = OrderedDict()  # type: ignore[attr-defined]
            _write_node(child, child._metadata, value, (), "", keep_vars, False, set())  # type: ignore[attr-defined]
            out[prefix + key if not path else key] = child
            continue
        name = prefix + ".".join(path + (key,)) if flatten else (prefix + key if not path else key)
        if flatten and name in written:
            msg = (
                f"state_dict: two entries flatten to the key {name!r} (a key holds a '.'); "
                "use state_dict(flatten=False)"
            )
            raise KeyConflictError(msg)
        written.add(name)
        out[name] = value if keep_vars else value.detach()


def _is_field(node: TensorCollection, key: str) -> bool:
    """Whether ``key`` is a field of the record ``node``."""
    return is_record(node) and key in cast(Any, node).__tclass_info__.field_names


def _node_key(prefix: str, path: Path) -> str:
    if path:
        return prefix + ".".join(path)
    return prefix[:-1] if prefix.endswith(".") else prefix


def _node_metadata(node: TensorCollection) -> dict[str, Any]:
    """A node's ``_metadata`` entry, as the peer writes it: ``batch_size`` and ``device``;
    a record adds its class's ``_type`` (its ``__qualname__``) and its Python values
    (``_non_tensor``, ``None`` for a field not set); a Python value held in a TensorDict
    is a node of its own (``_type`` ``"NonTensorData"`` or ``"MetaData"``, the value in
    ``_non_tensor["data"]``); a stack of values per element (which the peer's entry
    does not hold) records them as nested lists in ``_non_tensor[PER_ELEMENT]``, and a
    record's field holding one in ``entry[PER_ELEMENT][field]`` (not in ``_non_tensor``,
    whose every value the peer's load sets as one value shared by all elements: it
    keeps its own field, as for the stack's node)."""
    entry: dict[str, Any] = {
        "batch_size": torch.Size(node.batch_size),  # as the peer (weights_only loads it)
        "device": None if node.device is None else str(node.device),
    }
    shared = _one_metadata(node)
    if shared is not None:
        node = shared
    if isinstance(node, NonTensorData):
        entry["_type"] = "MetaData" if isinstance(node, MetaData) else "NonTensorData"
        entry["_non_tensor"] = {"data": node.data, "_metadata": None, "_is_non_tensor": True}
    elif isinstance(node, _NonTensorNode):
        entry["_non_tensor"] = {PER_ELEMENT: node.tolist()}
    elif is_record(node):
        values: dict[str, Any] = dict.fromkeys(cast(Any, node).__tclass_info__.field_names)
        per_element: dict[str, Any] = {}
        for key, value in node._items():
            if isinstance(value, NonTensorData):
                values[key] = value.data
                continue
            del values[key]
            if isinstance(value, _NonTensorNode):  # one value per element, in batch order
                per_element[key] = {PER_ELEMENT: value.tolist()}
                if value.batch_size != node.batch_size and -1 not in value.batch_size:
                    per_element[key][_DIMS] = list(value.batch_size)
        entry["_type"] = type(node).__qualname__
        entry["_non_tensor"] = values
        if per_element:  # beside _non_tensor, which the peer sets as one value each
            entry[PER_ELEMENT] = per_element
    return entry


def _one_metadata(node: TensorCollection) -> MetaData | None:
    """The one ``MetaData`` a stack of ``MetaData`` members holds (equal copies, as a
    clone's or ``apply``'s members, which stack to one value per member), recorded as
    that ``MetaData``: its per-element values would lose the value over no elements."""
    if not isinstance(node, NonTensorStack) or node._meta is not True:
        return None
    members = node.tensordicts
    if not members or any(type(member) is not MetaData for member in members):
        return None
    first = members[0]
    if any(not same_value(member.data, first.data) for member in members[1:]):
        return None
    return cast("MetaData", MetaData._make(first.data, node.batch_size, node.device))


def _nested_target(out: dict[str, Any], prefix: str, path: Path) -> dict[str, Any]:
    node = out
    for depth, part in enumerate(path):
        key = prefix + part if depth == 0 else part
        child = node.get(key)
        if child is None:
            child = node[key] = OrderedDict()
        node = child
    return node


# --- loading one --------------------------------------------------------------------------


def load_state_dict(
    collection: C,
    source: Mapping[str, Any],
    strict: bool,
    assign: bool,
    from_flatten: bool | None,
) -> C:
    """Loads ``source`` into ``collection``: tensors copied in place (``assign``: set
    instead), then Python values; returns ``collection``. An empty destination takes the
    whole structure; another takes the batch sizes the state dict records for its
    nodes, as the peer sets them. A collection given as the state dict is read as its
    own state dict, Python values and nested records included (its batch sizes are not
    taken: the peer reads a collection as a plain mapping)."""
    from_collection = isinstance(source, TensorCollection)
    if from_collection:
        own = cast(TensorCollection, source)
        source, from_flatten = state_dict(own, None, "", True, False), None
    elif "_tensordict" in source and "_non_tensordict" in source:
        return _load_legacy(collection, source, strict, assign)
    metadata: Mapping[str, Any] = _gathered_metadata(source, "")
    source, legacy = _without_node_entries(source, "")
    if legacy:  # an older tensordict's state dict: node facts beside the tensors
        metadata = {**legacy, **metadata}
    leaves = _leaves_of(source, collection, from_flatten)
    if not collection._key_names():
        _adopt_structure(collection, metadata)
        for path, value in leaves.items():
            tensor = _as_leaf(path, value)
            collection.set(path, tensor if assign else tensor.clone())
    else:
        expected = dict(_tensor_leaves(collection, ()))
        if strict:  # unexpected keys first, whatever they hold (as the peer)
            _check_keys(collection, leaves, expected)
        loaded = {path: _as_leaf(path, v) for path, v in leaves.items() if path in expected}
        if not assign:  # every tensor checked before the first is copied in
            for path, tensor in loaded.items():
                _check_shape(path, tensor, expected[path])
            writes = list(loaded.items())
            cast(Any, collection)._check_nested_writes(writes, ..., "load_state_dict")
        if not from_collection:
            _adopt_batch_sizes(collection, metadata)
        with torch.no_grad():
            for path, tensor in loaded.items():
                _load_leaf(collection, path, tensor, assign)
    for path, value in _python_values(metadata, collection):
        _set_value(collection, path, value, strict)
    return collection


def _gathered_metadata(source: Mapping[str, Any], node: str) -> dict[str, Any]:
    """The ``_metadata`` of ``source`` by dotted node key: a nested state dict's nested
    dicts each carry their own (``""``: themselves, the peer's and this format), an
    older tclass one all of them at its root."""
    gathered: dict[str, Any] = {}
    for key, value in source.items():
        if isinstance(value, Mapping):
            gathered.update(_gathered_metadata(value, f"{node}.{key}" if node else key))
    for key, entry in (getattr(source, "_metadata", None) or {}).items():
        where = ".".join(part for part in (node, key) if part)
        gathered[where] = entry  # (a level's own over what a nested dict records)
    return gathered


_NODE_ENTRIES = ("__batch_size", "__device")  # older tensordict versions' node facts


def _without_node_entries(
    source: Mapping[str, Any], node: str
) -> tuple[Mapping[str, Any], dict[str, dict[str, Any]]]:
    """``source`` without the ``__batch_size`` / ``__device`` entries older tensordict
    versions wrote beside each node's tensors (``"sub.__batch_size"`` flat, or inside the
    nested dict), and those facts as ``_metadata`` entries by node key; ``source``
    itself when it has none."""
    metadata: dict[str, dict[str, Any]] = {}
    kept: dict[str, Any] = {}
    for key, value in source.items():
        head, _, last = key.rpartition(".")
        if last in _NODE_ENTRIES:
            where = f"{node}.{head}".strip(".") if head else node
            metadata.setdefault(where, {})[last[2:]] = value
        elif isinstance(value, Mapping):
            kept[key], below = _without_node_entries(value, f"{node}.{key}".strip("."))
            metadata.update(below)
        else:
            kept[key] = value
    if not metadata:
        return source, metadata
    for entry in metadata.values():  # as the current format writes them
        entry.setdefault("batch_size", torch.Size([]))
        entry["device"] = None if entry.get("device") is None else str(entry["device"])
    return kept, metadata


def _load_legacy(collection: C, source: Mapping[str, Any], strict: bool, assign: bool) -> C:
    """A record's state dict from older tensordict versions: its tensors under
    ``_tensordict`` (beside ``__batch_size`` / ``__device``), its Python values under
    ``_non_tensordict`` (``None``: a field not set)."""
    tensors = {k: v for k, v in source["_tensordict"].items() if not k.startswith("__")}
    load_state_dict(collection, tensors, strict, assign, False)
    for name, value in source["_non_tensordict"].items():
        if value is not None:
            _set_value(collection, (name,), value, strict)
    return collection


def _leaves_of(
    source: Mapping[str, Any], collection: TensorCollection, from_flatten: bool | None
) -> dict[Path, object]:
    """The leaves of ``source`` (tensors, unchecked yet) by key path. A flat key is
    resolved against the destination's own keys first (a key may hold a '.'), then
    split on '.'."""
    nested = (
        any(isinstance(v, Mapping) for v in source.values())
        if from_flatten is None
        else not from_flatten
    )
    if nested:
        return dict(_walk_nested(source, ()))
    known = {".".join(path): path for path in _all_paths(collection, ())}
    return {known.get(key) or tuple(key.split(".")): value for key, value in source.items()}


def _walk_nested(source: Mapping[str, Any], path: Path) -> Iterator[tuple[Path, object]]:
    for key, value in source.items():
        if isinstance(value, Mapping):
            yield from _walk_nested(value, path + (key,))  # an empty one: a Python value's place
        else:
            yield path + (key,), value


def _as_leaf(path: Path, value: Any) -> torch.Tensor:
    """A state dict's leaf as a tensor: array-likes (numbers, numpy arrays, lists of
    numbers) converted, as the peer's ``set`` converts them; anything else refused."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (bool, int, float, complex, np.ndarray, np.generic, list, tuple)):
        try:
            return torch.as_tensor(viewable(value))
        except (TypeError, ValueError, RuntimeError):
            pass
    msg = (
        f"load_state_dict: the state dict holds a {type(value).__name__} under "
        f"{'.'.join(path)!r}; its entries are tensors or array-likes (Python values go in "
        "its _metadata)"
    )
    raise EntryTypeError(msg)


def _all_paths(collection: TensorCollection, path: Path) -> Iterator[Path]:
    for key, value in collection._items():
        yield path + (key,)
        if isinstance(value, TensorCollection) and not isinstance(value, _NonTensorNode):
            yield from _all_paths(value, path + (key,))


def _tensor_leaves(collection: TensorCollection, path: Path) -> Iterator[tuple[Path, torch.Tensor]]:
    for key, value in collection._items():
        if isinstance(value, torch.Tensor):
            yield path + (key,), value
        elif not isinstance(value, _NonTensorNode):
            yield from _tensor_leaves(value, path + (key,))


def _check_keys(
    collection: TensorCollection,
    leaves: Mapping[Path, object],
    expected: Mapping[Path, torch.Tensor],
) -> None:
    unexpected = sorted(".".join(path) for path in leaves if path not in expected)
    missing = sorted(".".join(path) for path in expected if path not in leaves)
    if unexpected or missing:
        # (the first unexpected key in the peer's words, which its users match)
        first = f": Key {unexpected[0]!r} wasn't expected in the state-dict" if unexpected else ""
        msg = (
            f"load_state_dict into {type(collection).__name__}: the keys differ{first} "
            f"(unexpected keys {unexpected}, missing keys {missing}); pass strict=False to "
            "load the keys both have"
        )
        raise StateDictKeyError(msg)


def _load_leaf(
    collection: TensorCollection,
    path: Path,
    tensor: torch.Tensor,
    assign: bool,
) -> None:
    if assign:
        collection.set(path, tensor)
        return
    # Through set_: a lazy stack's leaves are stacked copies, its members take the parts.
    collection.set_(path, tensor)


def _check_shape(path: Path, tensor: torch.Tensor, target: torch.Tensor) -> None:
    """Refuses a tensor that cannot be copied into ``target``: another shape, or a meta
    tensor (no data) into one with data, before anything is loaded."""
    if tensor.is_meta and not target.is_meta:
        msg = (
            f"load_state_dict: {'.'.join(path)!r} is a meta tensor in the state dict (a shape "
            "and a dtype, no data), which cannot be copied into the destination; nothing was "
            "loaded. Load a state dict with values, or pass assign=True to replace the tensor"
        )
        raise MetaTensorError(msg)
    if target.shape != tensor.shape:
        msg = (
            f"load_state_dict: {'.'.join(path)!r} has shape {list(tensor.shape)} in the state "
            f"dict but {list(target.shape)} in the destination; load a state dict of the same "
            "shapes, or pass assign=True to replace the tensor"
        )
        raise BatchSizeError(msg)


def _adopt_structure(collection: TensorCollection, metadata: Mapping[str, Any]) -> None:
    """Gives an empty destination the batch size, device and nested nodes recorded in
    the metadata (nested records come back as TensorDicts: no class is imported)."""
    root = metadata.get("")
    if isinstance(collection, TensorDict) and isinstance(root, Mapping) and "batch_size" in root:
        collection.batch_size = root["batch_size"]
    for key in sorted((k for k in metadata if k), key=lambda k: k.count(".")):
        entry = metadata[key]
        if not isinstance(entry, Mapping) or "batch_size" not in entry or _is_value_node(entry):
            continue
        path = tuple(key.split("."))
        if collection.get(path, None) is None:
            collection.set(path, TensorDict({}, entry["batch_size"], entry.get("device")))


def _adopt_batch_sizes(collection: TensorCollection, metadata: Mapping[str, Any]) -> None:
    """Sets the batch size the metadata records for each node the destination has, the
    root first, as the peer's ``load_state_dict`` does (a lazy stack keeps its own: its
    batch size follows its members)."""
    known = {".".join(path): path for path in _all_paths(collection, ())}
    done: list[tuple[TensorCollection, torch.Size]] = []
    for key in sorted(metadata, key=lambda k: (k != "", k.count("."))):
        entry = metadata[key]
        if not isinstance(entry, Mapping) or "batch_size" not in entry or _is_value_node(entry):
            continue
        node = collection if not key else collection.get(known.get(key, (key,)), None)
        if not isinstance(node, TensorCollection) or isinstance(
            node, (_NonTensorNode, LazyStackedTensorDict)
        ):
            continue
        size, before = torch.Size(entry["batch_size"]), node.batch_size
        if size == before:
            continue
        try:
            cast(Any, node).batch_size = size  # TensorDict and records: settable
        except BatchSizeError as error:
            for changed, old in reversed(done):  # nothing changed when one does not fit
                cast(Any, changed).batch_size = old
            where = f"node {key!r}" if key else "the root"
            msg = (
                f"load_state_dict: the state dict records the batch size {list(size)} for "
                f"{where}, which holds batch size {list(before)} and entries that do not "
                f"fit it ({error}); load a state dict taken from a collection of this shape"
            )
            raise BatchSizeError(msg) from None
        done.append((node, before))


def _is_value_node(entry: Mapping[str, Any]) -> bool:
    """A Python value's own node entry: the peer's ``NonTensorData`` / ``MetaData``
    (``_non_tensor["data"]``), or a stack of values per element (``PER_ELEMENT``)."""
    kind, values = entry.get("_type"), entry.get("_non_tensor")
    if isinstance(kind, str) and kind.rsplit(".", 1)[-1].endswith(("NonTensorData", "MetaData")):
        return True
    return kind is None and isinstance(values, Mapping) and set(values) == {PER_ELEMENT}


def _python_values(
    metadata: Mapping[str, Any], collection: TensorCollection
) -> Iterator[tuple[Path, Any]]:
    for key, entry in metadata.items():
        if not isinstance(entry, Mapping):
            continue
        node = tuple(key.split(".")) if key else ()
        values = entry.get("_non_tensor") or {}
        if _is_value_node(entry):
            if PER_ELEMENT in values and node:
                batch = list(entry.get("batch_size") or [])
                yield (
                    node,
                    {
                        PER_ELEMENT: values[PER_ELEMENT],
                        **({_DIMS: batch} if -1 not in batch else {}),
                    },
                )
            elif "data" in values and node:
                kind = str(entry.get("_type"))
                yield (
                    node,
                    _MetaValue(values["data"]) if kind.endswith("MetaData") else values["data"],
                )
            continue
        for name, value in (*values.items(), *(entry.get(PER_ELEMENT) or {}).items()):
            yield node + tuple(name.split(".")), value


class _MetaValue:
    """A value the state dict records as a ``MetaData`` (set as one into a TensorDict)."""

    __slots__ = ("data",)

    def __init__(self, data: Any) -> None:
        self.data = data


def _signed_zeros_differ(held: object, given: object) -> bool:
    """Whether ``held`` and ``given`` are floats equal but for the sign of a zero (``0.0``
    and ``-0.0``: equal, yet what is loaded must be what was saved, as the peer sets it)."""
    return type(held) is float and type(given) is float and str(held) != str(given)


def _set_value(collection: TensorCollection, path: Path, value: Any, strict: bool) -> None:
    """Sets a Python value (skipped when the destination already holds an equal one)."""
    parent = collection.get(path[:-1], None) if len(path) > 1 else collection
    if not isinstance(parent, TensorCollection) or isinstance(parent, _NonTensorNode):
        if strict:
            msg = (
                f"load_state_dict into {type(collection).__name__}: the state dict has a "
                f"Python value at {'.'.join(path)!r} but the destination has no node "
                f"{'.'.join(path[:-1])!r}; pass strict=False to skip it"
            )
            raise StateDictKeyError(msg)
        return
    kind = MetaData if isinstance(value, _MetaValue) else NonTensorData
    if isinstance(value, _MetaValue):
        value = value.data
    if isinstance(value, Mapping) and set(value) in ({PER_ELEMENT}, {PER_ELEMENT, _DIMS}):
        batch = torch.Size(value.get(_DIMS, parent.batch_size))
        value = _value_stack(value[PER_ELEMENT], batch, path)
    current = parent._entries().get(path[-1])
    if value is None and current is None and _is_field(parent, path[-1]):  # unset in both:
        return  # nothing to write (a locked or memmapped record keeps it so)
    if isinstance(current, NonTensorData) and not isinstance(value, _NonTensorNode):
        if same_value(current.data, value) and not _signed_zeros_differ(current.data, value):
            return
    if isinstance(current, NonTensorStack) and isinstance(value, NonTensorStack):
        if current.batch_size == value.batch_size and same_value(current.tolist(), value.tolist()):
            return  # the same values per element (a locked record keeps them)
    if _takes_value_nodes(parent) and not isinstance(value, _NonTensorNode):
        value = kind._make(value, parent.batch_size, parent.device)
    try:
        if isinstance(current, _NonTensorNode) and parent.is_locked:
            parent.set_(path[-1], value)  # in place, as the tensors (the peer ignores the lock)
        else:
            parent.set(path[-1], value)
    except UnknownFieldError as error:
        if strict:  # an unexpected key, in the peer's words (a KeyError)
            where = ".".join(path)
            msg = (
                f"load_state_dict into {type(collection).__name__}: Key {where!r} wasn't "
                "expected in the state-dict: it holds a Python value there, which is not a "
                f"key of the destination ({error}); pass strict=False to skip it"
            )
            raise StateDictKeyError(msg) from None
        # not a field of this tensorclass: a key only the state dict has, skipped


def _takes_value_nodes(parent: TensorCollection) -> bool:
    """Whether a Python value is set into ``parent`` as a node of its batch size: a
    TensorDict, or a lazy stack that is not ragged (which would read a list as rows)."""
    if isinstance(parent, LazyStackedTensorDict):
        return -1 not in parent.batch_size
    return isinstance(parent, TensorDict)


def _value_stack(values: Any, batch: torch.Size, path: Path) -> NonTensorStack:
    """The per-element values recorded as nested lists, shaped like ``batch`` again."""
    if not _fits(values, tuple(batch)):
        msg = (
            f"load_state_dict: the per-element values at {'.'.join(path)!r} do not fit the "
            f"destination's batch size {list(batch)}; load a state dict of the same batch size"
        )
        raise BatchSizeError(msg)
    array = np.empty(tuple(batch), dtype=object)
    for index in np.ndindex(*batch):
        item = values
        for position in index:
            item = item[position]
        array[index] = item
    return NonTensorStack._from_array(array, None)


def _fits(values: Any, batch: tuple[int, ...]) -> bool:
    """Whether nested lists have exactly the sizes of ``batch``."""
    if not batch:
        return True
    if not isinstance(values, list) or len(values) != batch[0]:
        return False
    return all(_fits(item, batch[1:]) for item in values)


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

INTEROP.load_state_dict = load_state_dict
INTEROP.state_dict = state_dict
