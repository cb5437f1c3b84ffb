"""Walking a collection into a write plan: the folders, leaves and small files to write,
and how to rebuild the collection over the written files.

Planning touches no file. Each node kind writes what the peer's format says:

* TensorDict: ``meta.json`` with an entry per key, leaves as ``<key>.memmap``, nested
  collections as sub-folders;
* tensorclass: ``meta.json`` naming the class, the fields in ``_tensordict/``;
* lazy stack: ``meta.json`` with ``stack_dim`` and the member count, members in ``0/``, ``1/``...;
* NonTensorData / NonTensorStack: ``meta.json`` holding the value(s) as JSON (or a pickle
  file when allowed).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import torch

from tclass._base._tensordict_base import TensorDictBase
from tclass._core._constraints import Constraints
from tclass._core._dtypes import dtype_name
from tclass._core._memmap import MemoryMappedTensor
from tclass._core._names import DimName, unsaved_name
from tclass._core._records import field_names_of, storage_of
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import MetaData, NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._engine._walk import NodeVisitor
from tclass._io._schema import (
    check_values_to_save,
    class_schema,
    dense_parts,
    document_bytes,
    record_schema,
)
from tclass._io.memmap._format import (
    FORMAT_VERSION,
    MAX_FILE_BYTES,
    MAX_TREE_DEPTH,
    META,
    PEER_FIELDS,
    SCHEMA,
    TCLASS_FIELD,
    TENSORCLASS_DIR,
    class_id,
    escape_key,
    file_name,
    type_string,
)
from tclass._io.memmap._nested_leaf import (
    SIZES_SUFFIX,
    build_nested,
    nested_entry,
    nested_parts,
)
from tclass._io.memmap._values import dumps_pickle, require_json
from tclass.errors import FileConflictError, NotSerializableError, UnsupportedError

__all__ = ["Leaf", "Plan", "plan_tree", "stored_names"]

Rebuild = Callable[[list[torch.Tensor]], Any]


class Leaf(NamedTuple):
    """One tensor to put at ``path`` (relative to the folder being written)."""

    path: str
    tensor: torch.Tensor
    reuse: bool  # the tensor already maps exactly this file: link it, copy nothing
    keep: bool = False  # written with its data by memmap_like too (a nested leaf's sizes)


@dataclass
class Plan:
    dirs: list[str] = field(default_factory=list)
    leaves: list[Leaf] = field(default_factory=list)
    files: list[tuple[str, bytes]] = field(default_factory=list)


@dataclass
class _Options:
    root: str  # the final folder (absolute), to recognise tensors already saved there
    copy_existing: bool
    like: bool
    allow_pickle: bool
    anonymous: bool  # no folder: leaves only, no meta.json or value files
    link: Callable[[str], Any] | None = None  # what the saved TensorDicts hold (_saved_at)


def plan_tree(
    node: Any,
    root: str,
    *,
    copy_existing: bool,
    like: bool,
    allow_pickle: bool,
    anonymous: bool = False,
    link: Callable[[str], Any] | None = None,
    key: tuple[str, ...] = (),
) -> tuple[Plan, Rebuild]:
    """The plan that saves ``node`` into ``root`` and a function building the saved copy
    from the written leaves (in plan order); its TensorDict nodes hold ``link(folder)``.
    ``key``: the key of ``node`` in a collection it is written into (for messages)."""
    planner = _Planner(_Options(root, copy_existing, like, allow_pickle, anonymous, link))
    planner.keys[""] = key
    return planner.plan, planner.node(node, "")


class _Planner(NodeVisitor[Rebuild]):
    """Each node kind's part of the plan, at ``rel`` (its folder, relative to the root)."""

    def __init__(self, options: _Options) -> None:
        self.plan = Plan()
        self.options = options
        # Each node's key as the user knows it (lazy-stack members by index), by folder.
        self.keys: dict[str, tuple[str | int, ...]] = {"": ()}

    def _at(self, rel: str) -> str:
        """A node's key for messages: ``key 'info'``, ``key ('a', 'obj')``, the root."""
        keys = self.keys.get(rel, ())
        if not keys:
            return "the root"
        return f"key {keys[0]!r}" if len(keys) == 1 else f"key {keys!r}"

    def node(self, node: Any, rel: str, marker: dict[str, Any] | None = None) -> Rebuild:
        """Plans ``node`` at ``rel``; ``marker``: what a collection node adds to its
        ``_tclass`` entry (a record's fields: the record's schema)."""
        if rel.count("/") >= MAX_TREE_DEPTH and not self.options.anonymous:
            msg = (
                f"cannot save a collection nested more than {MAX_TREE_DEPTH} folders deep "
                f"(at {rel[:60]}..., a record takes two: its own and {TENSORCLASS_DIR}/); "
                "tclass does not read trees that deep. Flatten it first (flatten_keys())"
            )
            raise UnsupportedError(msg)
        self.plan.dirs.append(rel)
        return self.visit(node, rel, marker)

    def visit_other(self, node: Any, rel: str, marker: dict[str, Any] | None = None) -> Rebuild:
        if isinstance(node, TensorDictBase) and node._joined_as() is not node:
            # a wrapper (a TensorDictParams nested, or a lazy stack's member): what it
            # wraps, a TensorDict, as it saves at the top and as the peer saves it
            return self.visit(node._joined_as(), rel, marker)
        if isinstance(node, TensorDictBase):
            # another kind (a PersistentTensorDict nested, or a view of one): its
            # entries read into a TensorDict, saved as one, as the peer saves them
            return self.visit(node.to_tensordict(), rel, marker)
        msg = (
            f"cannot save a {type(node).__name__} at {rel or 'the root'}: not a collection "
            "tclass writes"
        )
        raise UnsupportedError(msg)

    def visit_tensordict(
        self, td: TensorDict, rel: str, marker: dict[str, Any] | None = None
    ) -> Rebuild:
        plan, options = self.plan, self.options
        listed: list[str] = []  # each key's entry of meta.json, as JSON text
        parts: list[tuple[str, int | Rebuild]] = []
        escaped = not PEER_FIELDS.isdisjoint(td._key_names())  # as stored_names
        for key, value in td._items():
            stored = escape_key(key) if escaped else key
            name = _join(rel, file_name(stored))
            if value.__class__ is UnbatchedTensor:
                msg = (
                    f"cannot save {name!r}: UnbatchedTensor entries have no place in the "
                    f"folder format (the peer refuses them too); save td.exclude({key!r}) "
                    "and keep the unbatched tensor apart"
                )
                raise UnsupportedError(msg)
            if isinstance(value, torch.Tensor) and value.is_nested:
                entry, rebuild_leaf = _plan_nested(value, name, plan, td, escaped, options.like)
                listed.append(f"{_json_str(stored)}: {entry}")
                parts.append((key, rebuild_leaf))
            elif isinstance(value, torch.Tensor):
                listed.append(f"{_json_str(stored)}: {_leaf_entry(value, name)}")
                parts.append((key, _plan_leaf(value, name + ".memmap", plan, options)))
            else:
                listed.append(f'{_json_str(stored)}: {{"type": {_json_str(type(value).__name__)}}}')
                self.keys[name] = (*self.keys.get(rel, ()), key)
                parts.append((key, self.node(value, name)))
        meta: dict[str, Any] = {"shape": list(td.batch_size), "device": "cpu"}
        meta.update(_class_fields(TensorDict))
        dim_names = td._dim_names
        if dim_names is not None:  # written only when a dim has a name, as the peer does
            _check_saved_names(dim_names, rel)
            meta["_names"] = list(dim_names)
        if escaped or marker:
            meta[TCLASS_FIELD] = {**({"escaped_keys": True} if escaped else {}), **(marker or {})}
        _add_meta(plan, rel, meta, options, listed=listed)
        batch_size, cls = td.batch_size, type(td)  # a TypedTensorDict stays one
        saved_at = (
            None
            if options.link is None
            else options.link(_join(options.root, rel) if rel else options.root)
        )

        def rebuild(written: list[torch.Tensor]) -> TensorDict:
            entries = {
                key: written[part] if isinstance(part, int) else part(written)
                for key, part in parts
            }
            saved = cls._new_unchecked(entries, batch_size, _CPU)
            saved._assign_names(dim_names)
            saved._attach_folder(saved_at)
            return saved

        return rebuild

    def visit_record(self, record: Any, rel: str, marker: dict[str, Any] | None = None) -> Rebuild:
        cls = type(record)
        constrained = _constrained_fields(record, self.options, self._at(rel))
        _add_meta(self.plan, rel, {"_type": type_string(cls)}, self.options)
        content_rel = _join(rel, TENSORCLASS_DIR)
        # In the fields' node, which the peer skips; the JSON Schema document beside it.
        schema = {"schema": record_schema(record, document_file=SCHEMA)}
        self.keys[content_rel] = self.keys.get(rel, ())
        content = self.node(record._tensordict, content_rel, schema)
        if not self.options.anonymous:
            self.plan.files.append((_join(content_rel, SCHEMA), document_bytes(cls)))
        fields = field_names_of(record)

        def rebuild(written: list[torch.Tensor]) -> Any:
            storage = content(written)
            _allow_fields(storage, fields)
            if self.options.like:
                _fill_allowed(storage, constrained)
            return cls._from_tensordict_unchecked(storage)

        return rebuild

    def visit_lazy(
        self, stack: LazyStackedTensorDict, rel: str, marker: dict[str, Any] | None = None
    ) -> Rebuild:
        members = stack.tensordicts
        meta: dict[str, Any] = _class_fields(LazyStackedTensorDict)
        meta["stack_dim"] = stack.stack_dim
        meta["stack_dim_name"] = stack.stack_dim_name
        # The peer counts member folders up to a gap: the count is recorded.
        meta[TCLASS_FIELD] = {"members": len(members), **(marker or {})}
        _add_meta(self.plan, rel, meta, self.options)
        keys = self.keys.get(rel, ())
        self.keys.update((_join(rel, str(i)), (*keys, i)) for i in range(len(members)))
        parts = [self.node(member, _join(rel, str(i))) for i, member in enumerate(members)]
        stack_dim, batch_size = stack.stack_dim, stack.batch_size
        name = stack.stack_dim_name

        def rebuild(written: list[torch.Tensor]) -> LazyStackedTensorDict:
            out = LazyStackedTensorDict._from_members(
                [part(written) for part in parts], stack_dim, batch_size
            )
            if name is not None:  # a lazy stack keeps the name of its stack dim only
                out._assign_names(
                    tuple(name if i == stack_dim else None for i in range(len(batch_size)))
                )
            return out

        return rebuild

    def visit_value(
        self, node: NonTensorData, rel: str, marker: dict[str, Any] | None = None
    ) -> Rebuild:
        plan, options = self.plan, self.options
        cls = MetaData if isinstance(node, MetaData) else NonTensorData  # named as the peer's
        meta: dict[str, Any] = {"_type": type_string(cls)}
        where = f"cannot save the value at {self._at(rel)}"
        if options.anonymous or require_json(node.data, where, options.allow_pickle):
            meta["data"] = node.data
        else:
            pickled = dumps_pickle({"data": node.data}, where)
            plan.files.append((_join(rel, "other.pickle"), pickled))
        meta["_metadata"] = None
        meta["_is_non_tensor"] = True
        _add_meta(plan, rel, meta, options)
        data, batch_size = node.data, node.batch_size
        # A saved copy is on the CPU, its Python values with it (as the peer's).
        return lambda written: _in_folder(
            cls._make(data, batch_size, torch.device("cpu")), options, rel
        )

    def visit_values(
        self, node: NonTensorStack, rel: str, marker: dict[str, Any] | None = None
    ) -> Rebuild:
        plan, options = self.plan, self.options
        meta: dict[str, Any] = _class_fields(NonTensorStack)
        meta["stack_dim"] = 0
        meta["device"] = None
        values = node.tolist()
        where = f"cannot save the values at {self._at(rel)}"
        if options.anonymous or require_json(values, where, options.allow_pickle):
            meta["data"] = values
        else:
            meta["data"] = "pickle.pkl"
            plan.files.append((_join(rel, "pickle.pkl"), dumps_pickle(values, where)))
        meta[TCLASS_FIELD] = {"batch_size": list(node.batch_size)}
        nesting = node._nesting()  # a dense stack of records: one value per member
        if nesting is not None:
            meta[TCLASS_FIELD]["stack_dims"] = list(nesting)
        _add_meta(plan, rel, meta, options, compact=True)
        saved = _in_folder(node._copy_on(torch.device("cpu")), options, rel)  # nests as node
        return lambda written: saved


def _plan_leaf(tensor: torch.Tensor, rel: str, plan: Plan, options: _Options) -> int:
    if not isinstance(tensor, MemoryMappedTensor) or tensor.filename is None:
        plan.leaves.append(Leaf(rel, tensor, False))  # the usual leaf: in memory
        return len(plan.leaves) - 1
    target = f"{options.root}/{rel}"
    source = tensor.filename
    # Only a shared mapping ("r+") holds what the file holds; a copy-on-write one ("r")
    # may hold writes that never reached it, so it is written out like any tensor.
    reuse = (
        source == target
        and not options.like
        and getattr(tensor, "_mode", None) == "r+"
        and _maps_whole_file(tensor)
        and not tensor.requires_grad
    )
    inside = source.startswith(options.root + os.sep)
    # A leaf that tracks gradients (written into from a parameter) is saved by its data,
    # as the peer's (``value.data``): a computed tensor, written anew without copy_existing.
    if not (inside or options.copy_existing or options.like or tensor.requires_grad):
        msg = (
            f"A filename was provided but the tensor already has a file associated: the "
            f"tensor for {rel!r} is saved in {source!r}; pass copy_existing=True to copy it "
            f"into {options.root!r}"
        )
        raise FileConflictError(msg)
    plan.leaves.append(Leaf(rel, tensor, reuse))
    return len(plan.leaves) - 1


def _constrained_fields(record: Any, options: _Options, at: str) -> dict[str, Constraints]:
    """The value constraints of ``record``'s fields, its values checked against them
    when they are saved with their data into a folder (see :func:`check_values_to_save`)."""
    specs = class_schema(type(record))[1]
    if specs is None:
        return {}
    if not options.anonymous:  # memmap_like writes no values: its dtypes and dims count
        check_values_to_save(record, at, values=not options.like)
    return specs.constrained


def _fill_allowed(storage: Any, constrained: dict[str, Constraints]) -> None:
    """``memmap_like`` of a record: a field whose constraints refuse 0 holds the allowed
    value nearest its lower bound (as ``Cls.allocate`` fills it), so that its class
    loads the new folder; the others stay zero (sparse files)."""
    for part in dense_parts(storage):  # a lazy stack's members, each in its files
        for name, constraints in constrained.items():
            value = part._entry(name) if part._has_entry(name) else None
            if isinstance(value, torch.Tensor) and value.numel():
                fill = constraints.example(value.dtype)
                if fill is not None and fill != 0:
                    value.fill_(fill)


def _plan_nested(
    tensor: torch.Tensor, name: str, plan: Plan, td: TensorDict, escaped: bool, like: bool
) -> tuple[str, Rebuild]:
    """A nested leaf's ``meta.json`` entry and its two files (see ``_nested_leaf``),
    always written anew; and how to rebuild it over them."""
    sizes_file = name + SIZES_SUFFIX
    own = sizes_file.rpartition("/")[2]
    for other in td._key_names():  # the peer lets key "x.shape" overwrite x's sizes
        other_name = file_name(escape_key(other) if escaped else other)
        if own in (other_name, other_name + ".memmap"):
            msg = (
                f"cannot save {name!r}: the sizes of this nested tensor go to {own!r}, the "
                f"file of the entry {other!r} too; rename one of the two keys"
            )
            raise FileConflictError(msg)
    parts = nested_parts(tensor, name, data=not like)
    device = '"cpu"' if tensor.is_cpu else _json_str(str(tensor.device))
    plan.leaves.append(Leaf(name + ".memmap", parts.values, False))
    index = len(plan.leaves) - 1
    plan.leaves.append(Leaf(sizes_file, parts.sizes, False, keep=True))
    sizes, layout = parts.sizes, parts.layout

    def rebuild(written: list[torch.Tensor]) -> torch.Tensor:
        return build_nested(written[index], sizes, layout)

    return nested_entry(tensor, parts, device), rebuild


def _maps_whole_file(tensor: torch.Tensor) -> bool:
    storage = tensor.untyped_storage()
    return (
        not getattr(tensor, "_prefix", False)  # a padded legacy file is rewritten exact
        and tensor.storage_offset() == 0
        and tensor.is_contiguous()
        and storage.nbytes() == tensor.numel() * tensor.element_size()
    )


_CPU = torch.device("cpu")


def _leaf_entry(tensor: torch.Tensor, where: str) -> str:
    """A leaf's entry of ``meta.json``, as the JSON text the encoder writes for the peer's
    dict (``device``, ``shape``, ``dtype``, ``is_nested``), written directly: half
    the encoder's time, which counts in a save of many small leaves."""
    name = dtype_name(tensor.dtype)
    if name is None:
        msg = (
            f"cannot save {where!r}: dtype {tensor.dtype} has no faithful raw-file form "
            "(quantized and sub-byte dtypes are refused); convert it, e.g. .to(torch.uint8)"
        )
        raise UnsupportedError(msg)
    if tensor.is_nested or tensor.layout is not torch.strided:
        msg = f"cannot save {where!r}: only dense tensors are saved, got layout {tensor.layout}"
        raise UnsupportedError(msg + "; convert it with .to_dense() or pad it first")
    device = '"cpu"' if tensor.is_cpu else _json_str(str(tensor.device))
    shape = ", ".join(map(str, tensor.shape))  # an int's str is its JSON text
    return f'{{"device": {device}, "shape": [{shape}], "dtype": "{name}", "is_nested": false}}'


_json_str = json.encoder.encode_basestring_ascii  # a str as JSON text, as the encoder writes it


def _check_saved_names(dim_names: tuple[DimName, ...], rel: str) -> None:
    """Refuses dim names that ``meta.json`` would not give back (a tuple comes back as a
    list, which the peer's loader then refuses; another object is not JSON): before
    anything is written."""
    name = unsaved_name(dim_names)
    if name is not None:
        where = f"the node {rel!r}" if rel else "the root"
        msg = (
            f"cannot save the dim names {list(dim_names)} of {where}: {name!r} "
            f"({type(name).__name__}) would not load back as it is (meta.json keeps str, int, "
            "float and bool names); rename the dim with a str (td.rename(...)) before saving"
        )
        raise NotSerializableError(msg)


def stored_names(td: TensorDict) -> dict[str, str]:
    """Each key of a TensorDict node under the name its ``meta.json`` stores it.

    Keys are escaped only in a node holding a key named like a peer node field; a key
    named "_tclass" elsewhere is stored as it is, and the peer reads it back so."""
    keys = td._key_names()
    if PEER_FIELDS.isdisjoint(keys):
        return {key: key for key in keys}
    return {key: escape_key(key) for key in keys}


def _allow_fields(storage: Any, fields: frozenset[str]) -> None:
    """Lets a saved record's storage take its absent fields while locked (a field that
    was ``None`` when saved is allocated on its first write): ``SavedAt.fields``."""
    if isinstance(storage, LazyStackedTensorDict):
        for member in storage.tensordicts:
            _allow_fields(storage_of(member), fields)
    elif isinstance(storage, TensorDict) and storage._saved is not None:
        storage._saved.fields = fields


def _join(rel: str, name: str) -> str:
    """``rel/name`` (relative, "/"-separated; ``name`` alone at the root)."""
    return f"{rel}/{name}" if rel else name


def _class_fields(cls: type) -> dict[str, Any]:
    items = _CLASS_ITEMS.get(cls)
    if items is None:  # the built-in node classes only: a few
        items = (("_type", type_string(cls)), ("_format_version", FORMAT_VERSION))
        items += (("_class", class_id(cls)),)
        _CLASS_ITEMS[cls] = items
    return dict(items)


_CLASS_ITEMS: dict[type, tuple[tuple[str, Any], ...]] = {}


def _encoder(item_separator: str, key_separator: str) -> Callable[[Any], str]:
    """``json.JSONEncoder(separators=...).encode``, made once (``json.dumps`` with
    separators makes an encoder per call), less what ``encode`` sets up on each call
    (the C encoder it builds, and the markers that catch a cycle: about 3 µs of a
    save's ``meta.json``; what is written is JSON already checked by ``require_json``,
    whose depth limit refuses a cycle). The plain ``encode`` where the C encoder is
    missing or writes other text."""
    encode = json.JSONEncoder(separators=(item_separator, key_separator)).encode
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encode
    try:
        chunks = make(
            None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None,
            key_separator, item_separator, False, False, True,
        )  # fmt: skip
        probe = {"a": [1, -2.5, None, True, "\u00e9\n"], "b": {"c": float("nan")}, "d": []}
        if "".join(chunks(probe, 0)) != encode(probe):
            return encode
    except TypeError:  # another signature
        return encode
    return lambda value: "".join(chunks(value, 0))


# The encoders of meta.json.
_SPACED = _encoder(", ", ": ")
_COMPACT = _encoder(",", ":")


def _add_meta(
    plan: Plan,
    rel: str,
    meta: dict[str, Any],
    options: _Options,
    compact: bool = False,
    listed: list[str] | None = None,
) -> None:
    """Plans the ``meta.json`` of ``meta``, after the ``listed`` items (JSON text) if given."""
    if options.anonymous:
        return
    text = (_COMPACT if compact else _SPACED)(meta)
    if listed:
        text = f"{{{', '.join(listed)}, {text[1:]}" if meta else f"{{{', '.join(listed)}}}"
    data = text.encode()
    if len(data) > MAX_FILE_BYTES:
        where = _join(rel, META)
        msg = (
            f"cannot save {where!r}: it would hold {len(data)} bytes, and files of the format "
            f"larger than {MAX_FILE_BYTES >> 20} MiB are refused (loading reads them whole). "
            "Store such values as a tensor (for example indices into a list kept elsewhere)"
        )
        raise NotSerializableError(msg)
    plan.files.append((_join(rel, META), data))


_N = TypeVar("_N", NonTensorData, NonTensorStack)


def _in_folder(node: _N, options: _Options, rel: str) -> _N:
    """``node``, the saved copy of a value node at ``rel``, marked as saved in a folder
    (its ``is_memmap()``: true, as the peer's; not for an anonymous save, as a collection
    with no tensors), and that folder its ``saved_path`` where the saved TensorDicts have
    theirs."""
    if not options.anonymous:
        node._in_folder = True
    if options.link is not None:
        node._saved_folder = _join(options.root, rel) if rel else options.root
    return node
