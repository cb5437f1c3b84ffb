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
little-endian]``. A file's JSON is tclass's followed by the peer's description, whose
length ends the file, so that the peer reads it (see :mod:`._consolidate_peer`).

A nested tensor of layout ``torch.jagged`` is stored as its parts (its values, offsets
and, for one with holes, lengths), each a leaf of the buffer, and rebuilt over their views
(``torch.nested.nested_tensor_from_jagged``), as the peer stores it; the strided layout
is refused, as in the peer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from typing_extensions import Unpack

from tclass._base._provided import ENGINE
from tclass._base._tensordict_base import TensorDictBase
from tclass._base.declared._packing import ConsolidateOptions
from tclass._base.implemented._device_ops import map_tensors, share
from tclass._core._device import as_device, wait_for_device_copies
from tclass._core._dtypes import DTYPES, dtype_named
from tclass._core._future import TensorDictFuture
from tclass._core._memmap import maps_file, rewrite_file, tensor_bytes
from tclass._core._nested import fill_array
from tclass._core._readonly import ReadOnlyTensor
from tclass._core._records import is_record, is_record_class, storage_of
from tclass._core._registry import resolve_class
from tclass._core._safe_globals import allow_unpickling
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._consolidate_peer import (
    encode,
    name_of,
    peer_description,
)
from tclass._engine._consolidate_trailer import LENGTH, mapped_file, memory_reader, read_trailer
from tclass._engine._consolidate_views import ALIGN, leaf_layout, leaf_views
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import PADDED, Meta, MetaData, NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._engine._walk import NodeVisitor
from tclass.errors import (
    BufferTypeError,
    ConsolidatedFileError,
    DeviceError,
    FileBusyError,
    KeyNotFoundError,
    MetadataError,
    NotSerializableError,
    PickleRefusedError,
    UnsupportedError,
)

__all__ = [
    "Consolidated",
    "Description",
    "Rebuild",
    "Target",
    "consolidate",
    "consolidation_of",
    "describe",
    "exact_json",
    "from_consolidated",
    "pinned",
    "rebuild_from_description",
]

_ZEROS = [bytes(n) for n in range(ALIGN)]  # the padding after a leaf, by its length
# json.dumps' separators, without its check for cycles (a fifth of its time)
_ENCODER = json.JSONEncoder(check_circular=False)
Rebuild = Callable[[Sequence[torch.Tensor], "Target"], Any]
Description = tuple[Rebuild, dict[str, Any]]  # how to rebuild a node, and its JSON tree


@dataclass(frozen=True)
class Target:
    """Where rebuilt nodes live: ``device``; ``moved`` when every node takes it (as after
    ``to(device)``), else only the nodes that had a device do (as after ``consolidate``)."""

    device: torch.device
    moved: bool


@dataclass
class Consolidated:
    """What a consolidated collection remembers: its buffer, the leaves it handed out
    (to notice a replaced leaf), and how to rebuild itself over another buffer."""

    buffer: torch.Tensor
    leaves: list[torch.Tensor]  # the tensors the node was given (a jagged one whole)
    layout: list[tuple[torch.dtype, torch.Size, int]]  # per buffer leaf: dtype, shape, offset
    rebuild: Rebuild
    standalone: bool = True  # the trailer describes the tree (all Python values are JSON)
    # consolidate() locked the node, which the user had not: no pickle keeps that lock
    # (as the peer's, which keeps the user's)
    own_lock: bool = False
    # its Python-value nodes and the values they held: one replaced or rewritten (a
    # load_state_dict of another value) ends the consolidation as a replaced leaf does
    values: list[tuple[Any, Any]] | None = None

    def __getitem__(self, key: str) -> torch.Tensor:
        """``state["storage"]``: the buffer, under the name the peer's consolidation
        state gives it (code written for the peer reads it so)."""
        if key != "storage":
            msg = f"a consolidation state holds 'storage' (the buffer); got {key!r}"
            raise KeyNotFoundError(msg)
        return self.buffer

    def is_current(self, node: Any) -> bool:
        """Whether ``node``'s leaves are still the views of the buffer."""
        mine = self.leaves
        walker = _Leaves()
        current = walker.of(node)
        if len(current) != len(mine) or any(a is not b for a, b in zip(current, mine)):
            return False
        kept = self.values
        return kept is None or (
            len(kept) == len(walker.values)
            and all(a is b and x is y for (a, x), (b, y) in zip(kept, walker.values))
        )

    def moved(self, node: Any, device: torch.device | None, non_blocking: bool) -> Any:
        """``node`` on ``device`` as one copy of the buffer (locked if ``node`` is), if its
        leaves are still the buffer's views and the device changes; None otherwise (the
        caller then moves it leaf by leaf)."""
        if device is None or device == node.device or not self.is_current(node):
            return None
        if device.type == "cuda" and not non_blocking and not self.buffer.is_pinned():
            # the driver has read a pageable source when the call returns: nothing to wait for
            buffer = self.buffer.to(device, non_blocking=True)
        else:
            buffer = self.buffer.to(device, non_blocking=non_blocking)
        if buffer is self.buffer and isinstance(buffer, ReadOnlyTensor):
            return None  # no copy: views of it must stay read-only, as the leaves are
        if non_blocking and device.type == "cpu":
            wait_for_device_copies()
        moved = _moved_buffer(node, self, buffer)
        return moved.lock_() if node.is_locked else moved  # locked as its source, as the peer

    def reduce(self, node: Any) -> tuple[Any, ...]:
        """``__reduce__`` of ``node``: the one buffer (whose trailer rebuilds the rest);
        when it cannot (leaves replaced since, or Python values that JSON would not give
        back), a copy of ``node`` whose leaves each have a storage of their own: views
        of one buffer at several dtypes are no storage ``torch.save`` can write (it
        refuses them, or writes a file ``torch.load`` cannot read)."""
        if self.standalone and self.is_current(node):
            return (_unpickle_buffer, (self.buffer, not is_record(node)))
        apart = node.clone()
        if node.is_locked:
            apart.lock_()
        return apart.__reduce__()  # type: ignore[no-any-return]


def consolidation_of(node: Any) -> Consolidated | None:
    """The consolidation state of ``node`` if its leaves are still the buffer's views."""
    # (a collection that is never consolidated, as a file or parameters, has no state)
    state: Consolidated | None = getattr(storage_of(node), "_consolidated", None)
    if state is None or not state.is_current(node):
        return None
    return state


def consolidate(
    node: Any,
    filename: str | os.PathLike[str] | None = None,
    *,
    return_early: bool = False,
    **options: Unpack[ConsolidateOptions],
) -> Any:
    """A copy of ``node`` whose leaves are views of one buffer (see the module doc):
    locked, and detached from autograd (the buffer is a new tensor), as in the peer; a
    ``node`` consolidated already, as asked, is returned itself, as the peer does."""
    if return_early and options.get("num_threads", 0) > 0:
        _check_return_early(options)
        future: Future[Any] = Future()  # the peer's is still copying; this one is done
        future.set_result(consolidate(node, filename, **options))
        return TensorDictFuture(future)
    device = options.get("device")
    pin_memory = options.get("pin_memory", False)
    if filename is None and not options.get("inplace") and _consolidated_as_asked(node, options):
        return node  # itself, as the peer returns an already consolidated collection
    if pin_memory:
        _require_pinning()
    flatten = _Flatten()
    flatten.locks = True
    rebuild, description = flatten.visit(node)
    leaves = flatten.leaves
    chosen = as_device(device) if device is not None else None
    target = chosen if chosen is not None else _common_device(leaves)
    layout, end = leaf_layout(leaves)
    trailer = _trailer(description, layout)
    length = len(trailer)
    if filename is not None:  # the peer's description last, where its reader looks
        trailer, length = _file_trailer(trailer, description, layout)
    tail = trailer + LENGTH.pack(length)
    size = end + len(tail)
    if filename is None:
        buffer = _new_buffer(size, target, pin_memory, options.get("share_memory", False))
        views = _fill(buffer, layout, leaves, tail, options)
    else:
        _refuse_store_read(node, filename)
        buffer, views = _fill_file(filename, size, target, layout, leaves, tail)
    # a buffer rebuilds its collection alone when JSON gives its Python values back as
    # they are (a tuple would come back a list: such a collection pickles its values)
    standalone = flatten.exact and not trailer.startswith(b'{"tree": null')
    result = rebuild(views, Target(target, filename is not None))  # a file's nodes: on cpu
    # the lock is consolidate()'s own unless the user had locked ``node`` (then it travels)
    own_lock = not storage_of(node).is_locked  # (a record's field may hide is_locked)
    walker = _Leaves()
    leaves = walker.of(result)
    state = Consolidated(buffer, leaves, layout, rebuild, standalone, own_lock, walker.values)
    _attach(result, state)
    storage_of(result).lock_()  # (a record's field may hide lock_: shadow=True)
    if options.get("inplace"):
        node._become(result)
        _attach(node, state)
        return node.lock_()
    return result


def _refuse_store_read(node: Any, filename: str | os.PathLike[str]) -> None:
    """Refuse ``consolidate(filename=...)`` over a file that a node of ``node`` reads as a
    store (its HDF5 file, a part of its zarr store), before it is written: the store would
    then read the consolidated bytes (the file is rewritten in place, and an open HDF5
    file's later writes would land in them). Files that leaves map are kept by staging."""
    stores = _StoresRead()
    stores.visit(node, ())
    written = os.path.realpath(filename)
    for where, path in stores.found:
        read = os.path.realpath(path)
        if read == written or (written.startswith(read + os.sep) and os.path.lexists(written)):
            at = f"key {where!r}" if where else "the collection"
            msg = (
                f"cannot consolidate into {os.fspath(filename)!r}: {at} is read from {path!r}, "
                "which writing the file would overwrite (its values would be lost); write to "
                "another path, or read it into memory first (td.to_tensordict())"
            )
            raise FileBusyError(msg)


class _StoresRead(NodeVisitor[None]):
    """The files and stores a tree's nodes read (``found``: each node's key and path)."""

    action = "consolidate"

    def __init__(self) -> None:
        self.found: list[tuple[tuple[str, ...], str]] = []

    def visit_tensordict(self, td: TensorDict, where: tuple[str, ...]) -> None:
        for key, value in td._items():
            if not isinstance(value, torch.Tensor):
                self.visit(value, (*where, key))

    def visit_lazy(self, stack: LazyStackedTensorDict, where: tuple[str, ...]) -> None:
        for member in stack.tensordicts:
            self.visit(member, where)

    def visit_value(self, node: NonTensorData, where: tuple[str, ...]) -> None:
        return None

    def visit_values(self, node: NonTensorStack, where: tuple[str, ...]) -> None:
        return None

    def visit_other(self, node: Any, where: tuple[str, ...]) -> None:
        path = node._stored_in() if isinstance(node, TensorDictBase) else None
        if path is not None:
            self.found.append((where, path))


def _consolidated_as_asked(node: Any, options: ConsolidateOptions) -> bool:
    """Whether ``node``'s leaves are still the views of a buffer that is what ``options``
    ask for (on the device given, pinned or shared if asked): nothing to copy. (A file
    is always written: ``consolidate(filename=...)`` makes a new buffer in it.)"""
    state = consolidation_of(node)
    if state is None:
        return False
    buffer = state.buffer
    device = options.get("device")
    if device is not None and as_device(device) != buffer.device:
        return False
    if options.get("pin_memory", False) and not buffer.is_pinned():
        return False
    return not options.get("share_memory", False) or buffer.untyped_storage().is_shared()


def _check_return_early(options: ConsolidateOptions) -> None:
    """``return_early`` refuses the options whose work waits for every copy, as the peer."""
    for name in ("use_buffer", "non_blocking"):
        if options.get(name):
            msg = (
                f"consolidate(return_early=True) cannot take {name}=True: that work has to "
                f"wait for every copy; drop return_early or {name}"
            )
            raise UnsupportedError(msg)


def _new_buffer(
    size: int, device: torch.device, pin_memory: bool, share_memory: bool
) -> torch.Tensor:
    """The in-memory consolidation buffer: pinned, shared or plain; the padding between
    leaves is zeros, so equal collections give equal buffers."""
    buffer = torch.zeros(
        size, dtype=torch.uint8, device=device, pin_memory=pin_memory and device.type == "cpu"
    )
    if share_memory:
        share(buffer)
    return buffer


def _fill_file(
    filename: str | os.PathLike[str],
    size: int,
    device: torch.device,
    layout: Sequence[tuple[torch.dtype, torch.Size, int]],
    leaves: Sequence[torch.Tensor],
    tail: bytes,
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The buffer of ``consolidate(filename=...)`` and its views, written: the leaves'
    bytes (the padding between them zeros, so equal collections give equal files) and
    ``tail`` go into the file with one ``pwritev`` from their memory, then it is mapped.
    The file is rewritten in place, as the peer's, unless a leaf maps a file (it may be
    this one, whose bytes the write would overwrite before reading them): then a new
    file is moved over it once written, and the leaves keep the old one."""
    if device.type != "cpu":
        msg = f"consolidate(filename=...) writes a CPU buffer, but the leaves are on {device}"
        raise DeviceError(msg)
    staged = any(maps_file(leaf) for leaf in leaves)
    pieces: list[Any] = []  # arrays (buffers, which numpy's stubs do not say) and bytes
    for leaf in leaves:
        data = tensor_bytes(leaf)
        pieces.append(data)
        gap = -data.nbytes % ALIGN
        if gap:
            pieces.append(_ZEROS[gap])
    pieces.append(tail)
    buffer = rewrite_file(filename, pieces, size, staged)
    return buffer, leaf_views(buffer, layout)


def _fill(
    buffer: torch.Tensor,
    layout: Sequence[tuple[torch.dtype, torch.Size, int]],
    leaves: Sequence[torch.Tensor],
    tail: bytes,
    options: ConsolidateOptions,
) -> list[torch.Tensor]:
    """Copy ``leaves`` into ``buffer`` at ``layout``'s offsets, and ``tail`` (the
    description and its length) at its end; the leaves' views of the buffer."""
    views = leaf_views(buffer, layout)
    non_blocking = options.get("non_blocking", False)
    with torch.no_grad():
        _map_threads(
            # detached: grad mode is per thread, and the views share one base
            lambda pair: pair[0].copy_(pair[1].detach(), non_blocking=non_blocking),
            list(zip(views, leaves)),
            options.get("num_threads", 0),
        )
        buffer[buffer.numel() - len(tail) :].copy_(
            torch.frombuffer(bytearray(tail), dtype=torch.uint8)
        )
    if non_blocking and buffer.device.type == "cpu":
        wait_for_device_copies()
    return views


def pinned(node: Any, num_threads: int) -> Any:
    """``node`` with its tensors in pinned memory (see ``TensorDictBase.pin_memory``): a
    consolidated one pins its one buffer."""
    _require_pinning()
    state = consolidation_of(node)
    if state is not None:
        return _moved_buffer(node, state, state.buffer.pin_memory())
    leaves = [leaf for leaf in node.values(True, True) if not leaf.is_pinned()]
    pinned = _map_threads(lambda leaf: leaf.pin_memory(), leaves, num_threads)
    replacement = {id(leaf): new for leaf, new in zip(leaves, pinned)}
    return map_tensors(node, lambda leaf: replacement.get(id(leaf), leaf))


def _moved_buffer(node: Any, state: Consolidated, buffer: torch.Tensor) -> Any:
    """``node`` rebuilt over ``buffer``, a copy of its consolidated buffer."""
    views = leaf_views(buffer, state.layout)
    result = state.rebuild(views, Target(buffer.device, True))
    _attach(
        result,
        Consolidated(
            buffer,
            _Leaves().of(result),
            state.layout,
            state.rebuild,
            state.standalone,
            state.own_lock,
        ),
    )
    if is_record(result) and not is_record(node):
        return result._tensordict  # a record's storage was moved: the record rewraps it
    return result


def from_consolidated_file(filename: str | os.PathLike[str], cls: type) -> Any:
    """What ``cls.from_consolidated(filename)`` gives: the collection in a file written by
    ``consolidate(filename=...)``, over a copy-on-write mapping of it; a record of
    ``cls`` when it is a tensorclass, a record's TensorDict when it is not."""
    node = from_consolidated(filename, cls=cls if is_record_class(cls) else None)
    if is_record_class(cls) and not is_record(node):
        return cls.from_tensordict(node)  # type: ignore[attr-defined]
    if not is_record_class(cls) and is_record(node):
        return (
            node._tensordict
        )  # a record's file read by a collection class: its storage (the peer's)
    return node


def _described(value: object) -> str:
    """``value`` as an error message names it: a tensor by its dtype and shape."""
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {list(value.shape)}"
    return f"a value of type {type(value).__name__}"


def from_consolidated(
    buffer: torch.Tensor | str | os.PathLike[str], *, cls: type | None = None
) -> Any:
    """Rebuild the collection a consolidated buffer holds (its JSON trailer describes it);
    ``buffer`` may be the file ``consolidate(filename=...)`` wrote, mapped copy-on-write.

    Raises:
        MissingFileError: ``buffer`` names a file that does not exist.
        BufferTypeError: ``buffer`` is not a 1-d ``uint8`` tensor (a ``TypeError``).
        MetadataError: the tensor is not a consolidated buffer (no valid trailer).
    """
    if isinstance(buffer, (str, os.PathLike)):
        buffer, description = mapped_file(buffer)
    elif isinstance(buffer, torch.Tensor) and buffer.dtype == torch.uint8 and buffer.dim() == 1:
        description = read_trailer(memory_reader(buffer), buffer.numel())
    else:
        msg = (
            "from_consolidated expects the 1-d uint8 buffer of a consolidated "
            "collection (td.consolidate()._consolidated buffer) or the file "
            f"consolidate(filename=...) wrote, not {_described(buffer)}"
        )
        raise BufferTypeError(msg)
    if description["tree"] is None:
        msg = (
            "this buffer's collection holds Python values that are not JSON, so the buffer "
            "alone cannot rebuild it; move or pickle the consolidated collection instead"
        )
        raise NotSerializableError(msg)
    where = "the consolidated buffer"
    layout = [
        (DTYPES.get(d) or dtype_named(d, where), torch.Size(s), o)
        for d, s, o in description["leaves"]
    ]
    order: list[int] = []
    rebuild = rebuild_from_description(description["tree"], cls, order=order)
    views = leaf_views(buffer, layout)
    result = rebuild(views, Target(buffer.device, False))
    # the tensors it holds: the views, when a walk meets each once and in their order
    leaves = views if order == list(range(len(views))) else _Leaves().of(result)
    return _attach(result, Consolidated(buffer, leaves, layout, rebuild))


def _unpickle_buffer(buffer: torch.Tensor, storage_only: bool) -> Any:
    """A consolidated collection from its pickled buffer (its record classes come from
    the registry of classes defined in this process, as in ``load_memmap``)."""
    if not isinstance(buffer, torch.Tensor):  # from_consolidated would open a file by name
        raise PickleRefusedError("a pickle of a consolidated collection holds no buffer")
    node = from_consolidated(buffer)
    return storage_of(node) if storage_only else node


allow_unpickling(_unpickle_buffer)  # torch.load(f, weights_only=True)


# --- the tree ------------------------------------------------------------------------------


_JSON_SCALARS = (str, int, float, bool, type(None))


def exact_json(value: Any) -> bool:
    """Whether JSON gives ``value`` back exactly (same types: no tuple, no subclass; a
    list or dict met twice is not: JSON would copy it, or never end if it holds itself)."""
    pending = [value]
    seen: set[int] = set()
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind in _JSON_SCALARS:
            continue
        if id(item) in seen:
            return False
        seen.add(id(item))
        if kind is list:
            pending.extend(item)
        elif kind is dict and all(type(key) is str for key in item):
            pending.extend(item.values())
        else:
            return False
    return True


def describe(node: Any, leaves: list[torch.Tensor]) -> Description:
    """How to rebuild ``node`` over views of its leaves, and its JSON tree (classes by
    name, batch sizes, Python values); its leaves are appended to ``leaves`` in the
    order the rebuild takes them."""
    flatten = _Flatten()
    flatten.leaves = leaves
    return flatten.visit(node)


class _Flatten(NodeVisitor[Description]):
    """Collects a tree's tensors into ``leaves``; gives each node's rebuild and description."""

    action = "consolidate"

    def __init__(self) -> None:
        self.leaves: list[torch.Tensor] = []
        # The offsets (and lengths) of jagged tensors, by id: tensors that share them (a
        # transpose, tensors built over one offsets) share them again when rebuilt, and
        # so keep torch's one ragged size, which lets them be combined.
        self.shared: dict[int, int] = {}
        # Whether the tree records which nodes are locked: a file or buffer that
        # ``consolidate`` writes does, so that ``from_consolidated`` (and the pickle of
        # the result) locks what the user had locked, as the peer's metadata does.
        self.locks = False
        # Whether JSON gives every Python value of the tree back as it is (no tuple, no
        # dict with other keys than strings, no subclass of a JSON type).
        self.exact = True

    def locked(self, node: Any, tree: dict[str, Any]) -> None:
        """Mark ``tree`` locked when ``node`` is and the locks are recorded."""
        if self.locks and node.is_locked:
            tree["locked"] = True

    def visit_record(self, record: Any) -> Description:
        content, inner = self.visit(record._tensordict)
        cls = type(record)
        name = f"{cls.__module__}.{cls.__qualname__}"
        return (lambda views, target: cls._from_tensordict_unchecked(content(views, target))), {
            "record": name,
            "content": inner,
        }

    def visit_lazy(self, stack: LazyStackedTensorDict) -> Description:
        parts = [self.visit(member) for member in stack.tensordicts]
        dim, batch, name = stack.stack_dim, stack.batch_size, stack.stack_dim_name

        def rebuild(views: Sequence[torch.Tensor], target: Target) -> LazyStackedTensorDict:
            out = LazyStackedTensorDict._from_members(
                [p(views, target) for p, _ in parts], dim, batch
            )
            out._stack_dim_name = name  # the name of its stack dim kept, as the peer's
            return out

        tree: dict[str, Any] = {"lazy": dim, "members": [d for _, d in parts]}
        if name is not None:
            tree["name"] = name
        self.locked(stack, tree)
        return rebuild, tree

    def visit_value(self, node: NonTensorData) -> Description:
        batch, data = node.batch_size, node.data
        cls = MetaData if isinstance(node, MetaData) else NonTensorData
        tree: dict[str, Any] = {"value": data, "batch": list(batch)}
        self.exact = self.exact and exact_json(data)
        if cls is MetaData:  # kept as the peer keeps it (it does not grow into a stack)
            tree["meta"] = True
        keeps = node.device is not None  # consolidate() gives no device to a value without
        return (lambda views, target: cls._make(data, batch, _device(target, keeps))), tree

    def visit_values(self, node: NonTensorStack) -> Description:
        array, dims = node._as_array(), node._stack_dims  # (nested as it was: the peer's
        # stack of stacks, which its index and unbind read as one value per stack)
        tree: dict[str, Any] = {"values": node.tolist(), "batch": list(node.batch_size)}
        self.exact = self.exact and exact_json(tree["values"])
        if dims is not None:
            tree["stack_dims"] = list(dims)
        held = node._held  # the one value kept over no elements, as the peer's members
        if held and not array.size:  # (with elements, they hold it)
            tree["held"] = list(held)
        meta = node._meta  # MetaData members, which an index gives back as the peer's
        if meta:
            tree["meta"] = meta  # (PADDED: a pad's, whose new members are NonTensorData)
        keeps = node.device is not None
        return (
            lambda views, target: _values_at(array, _device(target, keeps), dims, held, meta)
        ), tree

    def visit_tensordict(self, td: TensorDict) -> Description:
        parts: list[tuple[str, int | Rebuild]] = []
        entries: dict[str, Any] = {}
        for key, value in td._items():
            if value.__class__ is UnbatchedTensor:
                msg = (
                    f"UnbatchedTensor entries cannot be consolidated (the peer refuses them "
                    f"too), but {key!r} is one; consolidate td.exclude({key!r}) instead"
                )
                raise UnsupportedError(msg)
            if isinstance(value, torch.Tensor) and value.is_nested:
                rebuild, entries[key] = self.jagged(key, value)
                parts.append((key, rebuild))
            elif isinstance(value, torch.Tensor):
                part, entries[key] = self.visit_leaf(value)
                parts.append((key, part))
            else:
                rebuild, entries[key] = self.visit(value)
                parts.append((key, rebuild))
        batch, keeps_device, names = td.batch_size, td.device is not None, td._dim_names
        cls = type(td)  # a TypedTensorDict stays one

        def rebuild_td(views: Sequence[torch.Tensor], target: Target) -> TensorDict:
            tensors = {
                key: views[p] if isinstance(p, int) else p(views, target) for key, p in parts
            }
            out = cls._new_unchecked(
                tensors, batch, target.device if keeps_device or target.moved else None
            )
            out._assign_names(names)
            return out

        tree = {"batch": list(batch), "device": keeps_device, "entries": entries}
        if names is not None:
            tree["names"] = list(names)
        self.locked(td, tree)
        return rebuild_td, tree

    def visit_leaf(self, tensor: torch.Tensor) -> tuple[int | Rebuild, Any]:
        """Where a dense tensor goes and its description: its position among ``leaves``."""
        self.leaves.append(tensor)
        return len(self.leaves) - 1, len(self.leaves) - 1

    def visit_other(self, node: Any) -> Description:
        """A kind of its own (a PersistentTensorDict, a TensorDictParams): its entries as
        the TensorDict ``to_tensordict`` gives, what the peer consolidates them into."""
        if isinstance(node, TensorDictBase) and not isinstance(node, TensorDict):
            rebuild, tree = self.visit_tensordict(node.to_tensordict())
            self.locked(node, tree)
            return rebuild, tree
        return super().visit_other(node)

    def jagged(self, key: str, tensor: torch.Tensor) -> Description:
        """A nested tensor's parts added to the leaves (values, offsets, lengths if it has
        holes), and how to rebuild it over their views; only the jagged layout has parts."""
        if tensor.layout is not torch.jagged:
            msg = (
                f"{key!r} is a nested tensor of layout {tensor.layout}, which cannot be "
                "consolidated (the peer refuses it too): convert it to the jagged layout "
                "first, torch.nested.nested_tensor(list(t.unbind()), layout=torch.jagged)"
            )
            raise UnsupportedError(msg)
        jagged: Any = tensor  # torch types a NestedTensor's parts on its own class
        lengths = jagged.lengths()
        parts = [jagged.values(), jagged.offsets(), *([] if lengths is None else [lengths])]
        self.leaves.append(parts[0])
        positions = [len(self.leaves) - 1] + [self.position(part) for part in parts[1:]]
        ragged = jagged._ragged_idx
        return (lambda views, target: _jagged([views[p] for p in positions], ragged)), {
            "jagged": positions,
            "ragged": ragged,
        }

    def position(self, part: torch.Tensor) -> int:
        """Where the leaves hold ``part`` (added once, whoever shares it)."""
        position = self.shared.get(id(part))
        if position is None:
            position = self.shared[id(part)] = len(self.leaves)
            self.leaves.append(part)
        return position


def _jagged(parts: Sequence[torch.Tensor], ragged: int) -> torch.Tensor:
    """The jagged nested tensor over ``parts`` (views: no copy)."""
    lengths = parts[2] if len(parts) > 2 else None
    return torch.nested.nested_tensor_from_jagged(
        parts[0], parts[1], lengths=lengths, jagged_dim=ragged
    )


def _device(target: Target, keeps: bool) -> torch.device | None:
    """The device of a rebuilt node that had one (``keeps``) or every node is moved to."""
    return target.device if keeps or target.moved else None


def _values_at(
    array: np.ndarray[Any, Any],
    device: torch.device | None,
    dims: Any,
    held: tuple[Any, ...],
    meta: Meta = False,
) -> NonTensorStack:
    """A stack of ``array``'s values on ``device``, holding ``held`` over no elements
    (of ``MetaData`` members: ``meta``)."""
    stack = NonTensorStack._from_array(array, device, dims)
    stack._held, stack._meta = held, meta
    return stack


def _stack_dims_of(tree: dict[str, Any], batch: torch.Size) -> tuple[int, ...] | None:
    """The stack dims a stack of values was nested along (None: not recorded).

    Raises:
        MetadataError: they are not batch dims of ``batch``.
    """
    dims = tree.get("stack_dims")
    if dims is None:
        return None
    if type(dims) is not list or not all(type(d) is int and 0 <= d < len(batch) for d in dims):
        msg = (
            f"the consolidated buffer's stack dims {dims!r:.80} are not dims of a batch "
            f"of {len(batch)} dims; the buffer is damaged"
        )
        raise MetadataError(msg)
    return tuple(dims)


def rebuild_from_description(
    tree: dict[str, Any],
    cls: type | None,
    known: Mapping[str, type] | None = None,
    order: list[int] | None = None,
) -> Rebuild:
    """The rebuild function of a tree :func:`describe` gave, read back from JSON (a
    buffer's trailer, a broadcast message, a protocol-5 pickle's header).

    ``known`` maps class names to the classes to rebuild them with (a pickle carries
    them); a tree may also say, as a pickle's does, which nodes were locked, the batch
    size and dim name of a lazy stack and the class of a TensorDict subclass.

    ``order``, if given, gets the buffer positions of the rebuilt tree's tensors in the
    order a walk of it meets them (-1 for a tensor that is not one of the views: a
    jagged one, one given beside the buffer)."""
    known = known or {}
    if "record" in tree:
        name = tree["record"]
        record_cls = known.get(name) or resolve_class(
            name, (cls,) if cls is not None else (), "the consolidated buffer"
        )
        content = rebuild_from_description(tree["content"], None, known, order)
        return lambda views, target: record_cls._from_tensordict_unchecked(content(views, target))  # type: ignore[attr-defined]
    if order is not None and ("jagged" in tree or "tensor" in tree):
        order.append(-1)
    if "jagged" in tree:
        positions, ragged = list(tree["jagged"]), tree["ragged"]
        return lambda views, target: _jagged([views[p] for p in positions], ragged)
    if "lazy" in tree:
        return _rebuild_lazy(tree, known, order)
    if "tensor" in tree:  # a tensor given beside the buffer (a pickle's file reference)
        tensor = tree["tensor"]
        return lambda views, target: tensor
    batch = torch.Size(tree["batch"])
    if "value" in tree:
        data, cls = tree["value"], MetaData if tree.get("meta") else NonTensorData
        return lambda views, target: cls._make(data, batch, target.device)
    if "values" in tree:
        shaped: np.ndarray[Any, Any] = np.empty(tuple(batch), dtype=object)
        fill_array(shaped, tree["values"], list(batch), "the consolidated buffer")
        dims = _stack_dims_of(tree, batch)
        held = tuple(tree.get("held", ()))[:1] if not shaped.size else ()
        meta: Meta = PADDED if tree.get("meta") == PADDED else tree.get("meta") is True
        return lambda views, target: _values_at(shaped, target.device, dims, held, meta)
    parts: dict[str, int | Rebuild] = {}
    for key, entry in tree["entries"].items():
        if not isinstance(entry, int):
            parts[key] = rebuild_from_description(entry, None, known, order)
        else:
            parts[key] = entry
            if order is not None:
                order.append(entry)
    keeps_device = tree["device"]
    names = tree.get("names")
    dim_names = None if names is None else tuple(names)
    td_cls: type[TensorDict] = known.get(tree.get("class", ""), TensorDict)
    locked = tree.get("locked", False)

    def rebuild_td(views: Sequence[torch.Tensor], target: Target) -> TensorDict:
        tensors = {
            key: views[p] if isinstance(p, int) else p(views, target) for key, p in parts.items()
        }
        out = td_cls._new_unchecked(
            tensors, batch, target.device if keeps_device or target.moved else None
        )
        out._assign_names(dim_names)
        return out.lock_() if locked else out

    return rebuild_td


def _rebuild_lazy(
    tree: dict[str, Any], known: Mapping[str, type], order: list[int] | None
) -> Rebuild:
    members = [rebuild_from_description(member, None, known, order) for member in tree["members"]]
    dim = tree["lazy"]
    if "batch" not in tree:  # a consolidation trailer: the batch size follows the members
        name, locked = tree.get("name"), tree.get("locked", False)

        def rebuild_stack(views: Sequence[torch.Tensor], target: Target) -> LazyStackedTensorDict:
            out = LazyStackedTensorDict(*(m(views, target) for m in members), stack_dim=dim)
            out._stack_dim_name = name
            return out.lock_() if locked else out

        return rebuild_stack
    batch, name, locked = torch.Size(tree["batch"]), tree.get("name"), tree.get("locked", False)

    def rebuild_lazy(views: Sequence[torch.Tensor], target: Target) -> LazyStackedTensorDict:
        out = LazyStackedTensorDict._from_members([m(views, target) for m in members], dim, batch)
        out._stack_dim_name = name
        return out.lock_() if locked else out

    return rebuild_lazy


# --- the buffer ----------------------------------------------------------------------------


def _trailer(
    description: dict[str, Any], layout: Sequence[tuple[torch.dtype, torch.Size, int]]
) -> bytes:
    """The JSON description; ``{"tree": null}`` when a Python value is not JSON (the
    buffer then moves and pickles with its container, but cannot rebuild it alone)."""
    records = _leaf_records(layout)
    try:
        return _ENCODER.encode({"tree": description, "leaves": records}).encode()
    except (TypeError, ValueError, RecursionError):  # (a value holding itself: the last)
        return _ENCODER.encode({"tree": None, "leaves": records}).encode()


def _file_trailer(
    trailer: bytes,
    description: dict[str, Any],
    layout: Sequence[tuple[torch.dtype, torch.Size, int]],
) -> tuple[bytes, int]:
    """A file's trailer: tclass's description, then the peer's (see
    :mod:`._consolidate_peer`), and the length of the peer's, which ends the file.

    Raises:
        ConsolidatedFileError: a Python value is not JSON (the peer refuses it too), or
            a sub-collection's key is one the peer's description uses.
    """
    if trailer.startswith(b'{"tree": null'):
        msg = (
            "consolidate(filename=...) writes the collection's Python values as JSON, and "
            "some are not JSON (the peer refuses them too); consolidate without a filename, "
            "or save with memmap"
        )
        raise ConsolidatedFileError(msg)
    peer = encode(peer_description(description, layout))
    return trailer + peer, len(peer)


def _leaf_records(layout: Sequence[tuple[torch.dtype, torch.Size, int]]) -> list[list[Any]]:
    return [[name_of(dtype), list(shape), offset] for dtype, shape, offset in layout]


def _common_device(leaves: Sequence[torch.Tensor]) -> torch.device:
    devices = {leaf.device for leaf in leaves}
    if len(devices) > 1:
        msg = (
            "cannot consolidate leaves on several devices "
            f"({sorted(map(str, devices))}); pass device="
        )
        raise UnsupportedError(msg)
    return devices.pop() if devices else torch.device("cpu")


class _Leaves(NodeVisitor[None]):
    """The tensors of a tree in the order :class:`_Flatten` collects them (and, in
    ``values``, its Python-value nodes with the values they hold)."""

    def of(self, node: Any) -> list[torch.Tensor]:
        self.leaves: list[torch.Tensor] = []
        self.values: list[tuple[Any, Any]] = []
        self.visit(node)
        return self.leaves

    def visit_value(self, node: NonTensorData) -> None:
        self.values.append((node, node.data))

    def visit_values(self, node: NonTensorStack) -> None:
        self.values.append((node, None))

    def visit_lazy(self, stack: LazyStackedTensorDict) -> None:
        for member in stack.tensordicts:
            self.visit(member)

    def visit_tensordict(self, td: TensorDict) -> None:
        for value in td._tensors.values():
            if isinstance(value, torch.Tensor):
                self.leaves.append(value)
            else:
                self.visit(value)

    def visit_other(self, node: Any) -> None:
        return None  # Python values hold no tensor


def _attach(node: Any, state: Consolidated) -> Any:
    storage_of(node)._consolidated = state
    return node


def unlocked_consolidation(node: Any) -> Any:
    """``node`` (consolidated) unlocked and still consolidated, as the peer's collections
    rebuilt from a buffer are (received with ``from_remote_init``, unpickled)."""
    state = consolidation_of(node)
    node.unlock_()  # unlocking ends a consolidation: attach it again
    return node if state is None else _attach(node, state)


def _require_pinning() -> None:
    if not torch.cuda.is_available():
        msg = (
            "pinned memory needs an accelerator runtime (CUDA), and none is available; "
            "skip pin_memory() on this machine, or pass pin_memory=False"
        )
        raise DeviceError(msg)


def _map_threads(fn: Any, items: list[Any], num_threads: int) -> list[Any]:
    if num_threads > 1 and len(items) > 1:
        with ThreadPoolExecutor(min(num_threads, len(items))) as pool:
            return list(pool.map(fn, items))
    return [fn(item) for item in items]


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

ENGINE.consolidate = consolidate
ENGINE.consolidation_of = consolidation_of
ENGINE.from_consolidated_file = from_consolidated_file
ENGINE.pinned = pinned
