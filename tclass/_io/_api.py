"""The persistence entry points: ``memmap``/``memmap_``/``memmap_like``/``save`` and
``load_memmap``/``load``, as module functions and as the methods every collection has."""

from __future__ import annotations

import concurrent.futures
import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar, overload

import torch
from typing_extensions import Unpack

from tclass._base._provided import IO
from tclass._base._tensordict_base import TensorDictBase
from tclass._base.declared._persistence import LoadOptions, SaveOptions
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._device_ops import map_tensors
from tclass._core._device import DeviceLike, as_device
from tclass._core._future import TensorDictFuture
from tclass._core._keys import NestedKey
from tclass._core._memmap import in_memory_map
from tclass._core._memmap_args import Mode
from tclass._core._records import is_record, is_record_class, storage_of
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData, _NonTensorNode
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._engine._walk import NodeVisitor
from tclass._io._schema import check_loaded_values
from tclass._io.memmap._archive import save_archive, wants_archive
from tclass._io.memmap._format import TENSORCLASS_DIR
from tclass._io.memmap._read import load_tree
from tclass._io.memmap._saved_folder import linker, unlinked
from tclass._io.memmap._staging import stage_copy
from tclass._io.memmap._subpath import descend, subpath_parts
from tclass._io.memmap._values import pickle_policy
from tclass._io.memmap._write import save_tree
from tclass._io.store._persistent import PersistentTensorDict
from tclass._io.store._protocol import is_group
from tclass._io.store._surface import in_memory
from tclass._io.store._view import PersistentTensorDictView
from tclass.errors import (
    ArgumentError,
    ArgumentValueError,
    ClassMismatchError,
    LockedError,
    ShapeError,
    UnsupportedError,
)

__all__ = [
    "TensorDictFuture",
    "adopt_leaves",
    "is_memmap",
    "load",
    "load_into",
    "load_memmap",
    "memmap",
    "memmap_in_place",
    "save",
    "saved_copy",
]

PathLike = str | os.PathLike[str]
C = TypeVar("C")


def saved_copy(
    node: C,
    prefix: PathLike | None,
    copy_existing: bool = False,
    *,
    like: bool,
    num_threads: int = 0,
    existsok: bool = True,
    allow_pickle: bool = False,
    durable: bool = False,
    archive: bool | None = None,
    compression: str | int | None = None,
    mode: Mode | None = None,
    return_early: bool = False,
    atomic: bool = False,
    robust_key: bool | None = True,
    share_non_tensor: bool = False,
) -> C:
    """A locked copy of ``node`` over memory-mapped files in ``prefix``: the one
    implementation of every save (see ``TensorDictBase.memmap_`` for the arguments;
    ``like``: allocate the files without filling them). Into an archive, the copy is
    not locked (as the peer's), its leaves views into the archive mapped as ``mode``
    says (``memmap_like`` always shares it). ``atomic`` and ``robust_key`` change
    nothing: every save is atomic and encodes unsafe file names."""
    _check_threads(num_threads)
    allow_pickle = pickle_policy(allow_pickle, "memmap")
    if share_non_tensor:
        msg = (
            "share_non_tensor=True is not supported: Python values written into a saved "
            "collection reach its meta.json, and other processes see them when they load "
            "it; store values that must be shared live as tensors, or pass "
            "share_non_tensor=False"
        )
        raise UnsupportedError(msg)
    if return_early and num_threads > 1:
        if prefix is not None and wants_archive(prefix, archive):
            raise UnsupportedError("return_early=True is not supported for an archive")
        call = functools.partial(
            saved_copy, node, prefix, copy_existing, like=like, num_threads=num_threads,
            existsok=existsok, allow_pickle=allow_pickle, durable=durable, archive=archive,
            compression=compression, mode=mode,
        )  # fmt: skip
        return TensorDictFuture(_BACKGROUND.submit(call))  # type: ignore[return-value]
    if isinstance(storage_of(node), PersistentTensorDictView):  # the rows read, then saved
        node = in_memory(node)
    if isinstance(storage_of(node), PersistentTensorDict):  # read from the file, dataset by dataset
        save = functools.partial(
            saved_copy, prefix=prefix, copy_existing=copy_existing, like=True,
            num_threads=num_threads, existsok=existsok, allow_pickle=allow_pickle,
            durable=durable, archive=archive, compression=compression, mode=mode,
        )  # fmt: skip
        return _copy_of_file(node, save, like)  # type: ignore[no-any-return]
    node = _members_in_memory(node)  # a lazy stack's members over a store, read
    if prefix is not None and wants_archive(prefix, archive):
        return save_archive(  # type: ignore[no-any-return]
            node, prefix, like=like, existsok=existsok, allow_pickle=allow_pickle,
            durable=durable, compression=compression, mode=mode,
        )  # fmt: skip
    if compression is not None:
        msg = (
            f"compression={compression!r}: compression is only supported for archives; pass "
            "archive=True or a prefix ending in '.tdz'"
        )
        raise ArgumentValueError(msg)
    saved = save_tree(
        node, prefix, copy_existing=copy_existing, num_threads=num_threads,
        existsok=existsok, like=like, allow_pickle=allow_pickle, link=linker(allow_pickle),
        durable=durable,
    )  # fmt: skip
    saved._lock_each()  # as the peer: each level locked on its own (no lock graph)
    return saved  # type: ignore[no-any-return]


def _members_in_memory(node: C) -> C:
    """``node``, a lazy stack (or a record over one) some of whose members are over a
    store (an HDF5 file or its rows), with those read into memory, as the peer saves
    them; any other ``node`` as it is."""
    storage = storage_of(node)
    if not isinstance(storage, LazyStackedTensorDict):
        return node
    members = storage.tensordicts
    read = [in_memory(_members_in_memory(member)) for member in members]
    if all(new is old for new, old in zip(read, members)):
        return node
    stack: Any = storage._restacked(read)
    record: Any = type(node)  # a tensorclass, when node is not the stack itself
    return stack if node is storage else record._from_tensordict_unchecked(stack)  # type: ignore[no-any-return]


def _copy_of_file(node: Any, save: Callable[[Any], Any], like: bool) -> Any:
    """A saved copy of a collection over a store (or a record over one): ``save``
    writes a tree like it whose tensors are zero-size expansions (no memory), then each
    dataset is read into its file (unless ``like``), one at a time."""
    storage: PersistentTensorDict = storage_of(node)
    skeleton: Any = _skeleton(storage)
    if node is not storage:
        skeleton = type(node)._from_tensordict_unchecked(skeleton)
    saved = save(skeleton)
    if not like:
        _copy_into(storage, storage_of(saved))
    return saved


def _skeleton(ptd: PersistentTensorDict) -> TensorDict:
    """A TensorDict like the file's data (records where the file holds them, its dim
    names) whose tensors are zero-size expansions (no memory); Python values read."""
    entries: dict[str, Any] = {}
    for key, found in ptd._nodes():
        if isinstance(found, PersistentTensorDict):
            entries[key] = ptd._as_record(key, _skeleton(found))
        elif isinstance(found, torch.Tensor):
            entries[key] = found
        else:
            entries[key] = ptd._read_dataset(found)
    skeleton = TensorDict._new_unchecked(entries, ptd.batch_size, None)
    skeleton._assign_names(ptd._dim_names)  # the copy keeps the dim names, as a TensorDict's
    return skeleton


def _copy_into(ptd: PersistentTensorDict, saved: Any) -> None:
    """Each array of the store read into the mapped file of ``saved``."""
    for key, found in ptd._nodes():
        target = saved._entry(key)
        if isinstance(found, PersistentTensorDict):
            _copy_into(found, storage_of(target))
        elif isinstance(found, torch.Tensor) and found.numel():
            node = ptd._node(key)
            if not is_group(node):
                node.read_into(target.numpy())


def memmap_in_place(
    node: C, prefix: PathLike | None, copy_existing: bool, **options: Unpack[SaveOptions]
) -> C:
    """``node.memmap_(...)``: save (without ``prefix``, into the folder ``node`` is saved
    in, if it is), then make ``node``'s leaves the saved files (an
    archive's: mapped shared, so that writes reach it); with ``return_early``, a
    ``TensorDictFuture`` whose ``result()`` does that once the save is done."""
    _check_no_store(node)
    if prefix is None:  # a collection saved in a folder stays there, as in the peer
        prefix = _saved_prefix(node)
    saved = saved_copy(node, prefix, copy_existing, like=False, mode="r+", **options)
    if isinstance(saved, TensorDictFuture):
        return TensorDictFuture(saved.future, then=lambda copy: _adopted(node, copy))  # type: ignore[return-value]
    return _adopted(node, saved)


def _saved_prefix(node: Any) -> str | None:
    """The folder ``node`` is saved in, or None: its storage's, but for a record saved as
    one, whose storage is the ``_tensordict`` folder inside the record's folder (saving
    the record there nested a second record in its own folder, which no load reads)."""
    storage = storage_of(node)
    if not isinstance(storage, TensorDict) or storage._saved is None:
        return None
    folder = storage._saved.folder
    if is_record(node) and os.path.basename(folder) == TENSORCLASS_DIR:
        return os.path.dirname(folder)
    return folder


def _check_no_store(node: Any) -> None:
    """Refuses ``memmap_`` of ``node`` over a persistent store, or holding one (as the
    peer's), before any file is written: the store's entries live there, and its
    memory-mapped copy would silently stand in its place."""
    found = _FindStore().visit(node, ())
    if found is not None:
        key, kind = found
        shown = key[0] if len(key) == 1 else key
        label = "key" if all(type(part) is str for part in key) else "key / member index"
        where = f" (at {label} {shown!r}: a {kind})" if key else ""
        msg = (
            f"Cannot build a memmap TensorDict in-place from a {type(node).__name__}{where} "
            "over a persistent store (an HDF5 file or a zarr store): its entries live there. "
            "Use .memmap(prefix) for a memory-mapped copy"
        )
        raise UnsupportedError(msg)


class _FindStore(NodeVisitor["tuple[tuple[Any, ...], str] | None"]):
    """The key (and kind) of the first persistent store in a tree, without reading any
    tensor (a ragged lazy stack's members are walked one by one, by index)."""

    def visit_tensordict(self, td: TensorDict, key: tuple[Any, ...]) -> Any:
        for name, value in td._items():
            if not isinstance(value, torch.Tensor):
                found = self.visit(value, (*key, name))
                if found is not None:
                    return found
        return None

    def visit_lazy(self, stack: LazyStackedTensorDict, key: tuple[Any, ...]) -> Any:
        for index, member in enumerate(stack.tensordicts):
            found = self.visit(member, (*key, index))
            if found is not None:
                return found
        return None

    def visit_value(self, node: NonTensorData, key: tuple[Any, ...]) -> Any:
        return None

    def visit_values(self, node: NonTensorStack, key: tuple[Any, ...]) -> Any:
        return None

    def visit_other(self, node: Any, key: tuple[Any, ...]) -> Any:
        if isinstance(node, (PersistentTensorDict, PersistentTensorDictView)):
            return key, type(node).__name__
        return None  # another wrapper (a TensorDictParams): saved as it saves


def _adopted(node: C, saved: Any) -> C:
    adopt_leaves(node, saved)
    node._lock_each()  # type: ignore[attr-defined]  # each level on its own, as the peer
    return node


# Saves asked to return early run one after the other in this thread (each writes its
# leaves with its own num_threads).
_BACKGROUND = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tclass-save")


def adopt_leaves(target: Any, saved: Any) -> None:
    """Make ``target`` hold the leaves of ``saved`` (same structure), for ``memmap_``."""
    _Adopt().visit(target, saved)


class _Adopt(NodeVisitor[None]):
    """Gives each node of a tree the leaves, device and folder of its saved copy."""

    def visit_record(self, record: Any, saved: Any) -> None:
        self.visit(record._tensordict, saved._tensordict)

    def visit_lazy(self, stack: LazyStackedTensorDict, saved: Any) -> None:
        for mine, theirs in zip(stack.tensordicts, saved.tensordicts):
            self.visit(mine, theirs)
        stack._adopt(saved)

    def visit_tensordict(self, td: TensorDict, saved: Any) -> None:
        for key, value in saved._items():
            current = td._entry(key)
            if isinstance(value, torch.Tensor) or isinstance(current, _NonTensorNode):
                td._put(key, value)
            else:
                self.visit(current, value)
        td._adopt(saved)  # later writes reach the new folder

    def visit_other(self, node: Any, saved: Any) -> None:
        """A wrapper (a TensorDictParams member of a lazy stack): what it wraps."""
        if not (isinstance(node, TensorDictBase) and node._adopt_wrapped(saved, self.visit)):
            super().visit_other(node, saved)

    def visit_value(self, node: NonTensorData, saved: Any) -> None:
        """A Python-value node saved on its own (``memmap_`` of it): its value is the
        saved copy's, in memory already; the node is locked, as the peer's, and saved in
        the folder its copy is (its ``is_memmap()``)."""
        _saved_as(node, saved)

    def visit_values(self, node: NonTensorStack, saved: Any) -> None:
        """As :meth:`visit_value`, for a stack of values."""
        _saved_as(node, saved)


def _saved_as(node: _NonTensorNode, saved: Any) -> None:
    if getattr(saved, "_in_folder", False):
        node._in_folder = True
    folder = getattr(saved, "_saved_folder", None)
    if folder is not None:
        node._saved_folder = folder


def is_memmap(node: Any) -> bool:
    """Whether every tensor leaf's data is in a memory-mapped file: a MemoryMappedTensor
    or a view of one (``td.view(-1)`` of a saved collection); for a collection with no
    tensor leaf (only Python values or empty collections), whether it is saved in a
    folder (``memmap(prefix)`` / ``memmap_(prefix)`` / ``load_memmap``) or is a locked
    view of one (an index's rows, ``unsqueeze``...), as the peer answers True for what it
    memory-mapped.

    A lazy stack's leaves are its members' own (as the peer, which asks each member),
    not the dense tensors that reading one of its keys stacks."""
    leaves, mapped = _MemmapLeaves().visit(node)
    return mapped if leaves > 0 else _saved_in_folder(node)


def _saved_in_folder(node: Any) -> bool:
    """Whether ``node`` (a lazy stack: each of its members, and it has some) is saved."""
    if isinstance(node, _NonTensorNode):
        return node._is_saved()
    storage = storage_of(node)
    if isinstance(storage, LazyStackedTensorDict):
        members = storage.tensordicts
        return bool(members) and all(_saved_in_folder(member) for member in members)
    return isinstance(storage, TensorDict) and storage._saved_or_view_of_saved()


class _MemmapLeaves(NodeVisitor[tuple[int, bool]]):
    """How many tensor leaves a tree holds, and whether all are memory-mapped."""

    action = "check whether memory-mapped"

    def visit_tensordict(self, td: TensorDict) -> tuple[int, bool]:
        count, mapped = 0, True
        for _, value in td._items():
            if not isinstance(value, TensorCollection):  # a tensor (or a first-class dim one)
                count, mapped = count + 1, mapped and in_memory_map(value)
            else:
                n, m = self.visit(value)
                count, mapped = count + n, mapped and m
        return count, mapped

    def visit_lazy(self, stack: LazyStackedTensorDict) -> tuple[int, bool]:
        results = [self.visit(member) for member in stack.tensordicts]
        return sum(n for n, _ in results), all(m for _, m in results)

    def visit_value(self, node: NonTensorData) -> tuple[int, bool]:
        return 0, True

    def visit_values(self, node: NonTensorStack) -> tuple[int, bool]:
        return 0, True

    def visit_other(self, node: Any) -> tuple[int, bool]:
        wrapped = node._joined_as() if isinstance(node, TensorDictBase) else node
        if wrapped is not node:  # TensorDictParams: what it wraps (a lazy stack's members)
            return self.visit(wrapped)
        leaves = list(node.values(include_nested=True, leaves_only=True))
        return len(leaves), all(in_memory_map(leaf) for leaf in leaves)


@overload
def load_memmap(
    prefix: PathLike,
    device: DeviceLike = ...,
    non_blocking: bool = ...,
    *,
    out: Any = ...,
    cls: type[C],
    **options: Unpack[LoadOptions],
) -> C: ...
@overload
def load_memmap(
    prefix: PathLike,
    device: DeviceLike = ...,
    non_blocking: bool = ...,
    *,
    out: Any = ...,
    cls: None = ...,
    **options: Unpack[LoadOptions],
) -> TensorDictBase: ...


def load_memmap(
    prefix: PathLike,
    device: DeviceLike = None,
    non_blocking: bool = False,
    *,
    out: Any = None,
    cls: type[C] | None = None,
    **options: Unpack[LoadOptions],
) -> Any:
    """Load what ``memmap``/``save`` wrote in ``prefix`` (see ``TensorDict.load_memmap``
    for every argument; a tensorclass ``cls`` checks that the folder holds that class).

    ``mode="r"`` maps the files copy-on-write (nothing ever reaches them); ``"r+"``
    shares them (writes reach the files; a file this process may not write is a
    ``FilePermissionError``); the default ``None`` shares each file it may write and
    maps the others copy-on-write. ``subpath`` (``"a/b"`` or ``("a", "b")``) loads one
    nested collection, stepping through records' fields. A ``cls`` that is not a
    tensorclass (``TensorDict``...) loads whatever the folder holds, as the peer does;
    ``robust_key`` and ``num_threads`` are accepted for the peer's code (both file-name
    layouts are always read; archives decompress in this thread)."""
    return _load(prefix, device, non_blocking, out, cls, **options)


def _load(
    prefix: PathLike,
    device: DeviceLike,
    non_blocking: bool,
    out: Any,
    cls: type[C] | None,
    *,
    subpath: NestedKey | None = None,
    mode: Mode | None = None,
    allow_pickle: bool | None = False,
    robust_key: bool | None = True,
    num_threads: int = 0,
    strict: bool = True,
    widen: bool = False,
) -> Any:
    """:func:`load_memmap` with its options spelled out (their defaults live here)."""
    given: object = prefix  # (typed as a path, but often given a number or None)
    if not isinstance(given, (str, os.PathLike)):
        msg = (
            f"load_memmap expects the path of a saved folder or .tdz archive (a str or "
            f"os.PathLike), got {type(prefix).__name__} {prefix!r:.80}"
        )
        raise ArgumentError(msg)
    _check_threads(num_threads)
    if cls is not None and not is_record_class(cls):
        cls = None  # the generic loader: whatever the folder holds
    allow_pickle = pickle_policy(allow_pickle, "load_memmap")
    target = as_device(device) if device is not None else None
    staged = target is not None and target.type == "cuda" and out is None
    parts = subpath_parts(subpath)
    at = functools.partial(descend, parts=parts, subpath=subpath) if parts else None
    into_file = isinstance(storage_of(out), (PersistentTensorDict, PersistentTensorDictView))
    if out is not None and target is None and not into_file:
        target = out.device  # the leaves out will hold live where out's do, as the peer
    device_now = None if staged or into_file else target
    loaded = load_tree(prefix, cls, device_now, allow_pickle, mode, at, strict=strict, widen=widen)
    if staged:
        assert target is not None
        loaded = _staged_to(loaded, target, non_blocking)
    if cls is not None and not isinstance(loaded, cls):
        raise ClassMismatchError(_other_class(prefix, subpath, type(loaded), cls))
    if out is not None:
        load_into(out, loaded, non_blocking, os.fspath(prefix))
        loaded = out
    if target is not None and target.type == "cuda" and not non_blocking and not staged:
        torch.cuda.synchronize(target)
    if is_record(loaded):  # data that comes in: the class's __post_init__ runs, as the peer's
        with unlinked(loaded):  # (what it sets stays in memory: a load changes no file)
            loaded._incoming()
    return loaded


def _other_class(prefix: PathLike, subpath: NestedKey | None, saved: type, asked: type) -> str:
    where = repr(os.fspath(prefix)) + (f" at subpath={subpath!r}" if subpath else "")
    kind = "record" if is_record_class(saved) else "collection"
    return (
        f"{where} holds a {kind} of class {saved.__name__} ({saved.__module__}."
        f"{saved.__qualname__}), not of class {asked.__name__} ({asked.__module__}."
        f"{asked.__qualname__}), which load_memmap was asked for; load it with "
        f"{saved.__name__}.load_memmap or tclass.load_memmap, which rebuild the class it was "
        "saved from (or check the path)"
    )


def _staged_to(loaded: Any, device: torch.device, non_blocking: bool) -> Any:
    """The mapped tree copied to ``device`` through pinned staging buffers."""
    leaves = list(loaded.values(include_nested=True, leaves_only=True))
    copies = {
        id(leaf): copy for leaf, copy in zip(leaves, stage_copy(leaves, device, non_blocking))
    }
    return map_tensors(loaded, lambda leaf: copies[id(leaf)], device)


def load_into(out: Any, loaded: Any, non_blocking: bool, where: str) -> None:
    """Makes ``out`` hold the loaded data, as the peer: each leaf replaced by the loaded
    (memory-mapped) tensor, so that writes reach the loaded folder, and nothing is read
    before it is used; nested collections kept and filled alike; keys that were not
    saved removed. A memory-mapped ``out`` moves to the loaded folder (and stays locked);
    another is left without a folder, so entries set later stay in memory. Into a
    file (a ``PersistentTensorDict``, or a view of its rows): the loaded entries written
    there, the others deleted from it."""
    target = storage_of(out)
    if isinstance(target, (PersistentTensorDict, PersistentTensorDictView)):
        for key in [key for key in target._key_names() if not loaded._has_entry(key)]:
            target.del_(key)
        target.update(loaded)
        return
    if out.is_locked and not out.is_memmap():
        msg = (
            f"cannot load {where!r} into a locked {type(out).__name__}: its entries would "
            "be replaced; unlock_() it first (a memory-mapped one moves to the folder "
            "while locked)"
        )
        raise LockedError(msg)
    # a memory-mapped out moves to the loaded folder (the peer maps it there again);
    # another keeps later entries in memory, as the peer's. The first pass checks what
    # out's records (out itself, nested ones) get against their classes' specs; the
    # second makes out hold it: a refused load leaves out as it was.
    node = out if is_record(out) else target
    for write in (False, True):
        _LoadInto(non_blocking, where, out.is_memmap(), write).visit(node, loaded)


class _LoadInto(NodeVisitor[None]):
    """Gives an existing tree the leaves of a loaded one of the same structure, node by
    node (its nested collections kept)."""

    def __init__(self, non_blocking: bool, where: str, to_folder: bool, write: bool) -> None:
        self.non_blocking = non_blocking
        self.where = where
        self.to_folder = to_folder
        self.write = write  # False: check only (the first pass), True: make out hold it

    def visit_record(self, record: Any, loaded: Any) -> None:
        if not self.write and not isinstance(loaded, type(record)):
            # a folder of another kind (a TensorDict's): its entries checked against the
            # record's specs and constraints (one of the class was checked as it loaded)
            check_loaded_values(type(record), loaded, self.where)
        self.visit(storage_of(record), loaded)

    def visit_lazy(self, stack: LazyStackedTensorDict, loaded: Any) -> None:
        members, saved = stack.tensordicts, storage_of(loaded).tensordicts
        if len(members) != len(saved):
            msg = (
                f"{self.where}: cannot load {len(saved)} stacked members into a stack of "
                f"{len(members)}"
            )
            raise ShapeError(msg)
        for member, source in zip(members, saved):
            self.visit(member, source)

    def visit_other(self, node: Any, loaded: Any) -> None:
        """A wrapper (a TensorDictParams member of a lazy stack): what it wraps, checked
        and loaded as a TensorDict, its own objects kept over the loaded data (as its
        ``load_memmap_``)."""
        if not isinstance(node, TensorDictBase) or node._joined_as() is node:
            super().visit_other(node, loaded)
        elif not self.write:
            self.visit(node._joined_as(), loaded)
        elif not node._load_wrapped(lambda wrapped: self.visit(wrapped, loaded)):
            super().visit_other(node, loaded)

    def visit_value(self, node: NonTensorData, loaded: Any) -> None:
        return None  # the parent stores the loaded value

    def visit_values(self, node: NonTensorStack, loaded: Any) -> None:
        return None

    def visit_tensordict(self, mine: TensorDict, loaded: Any) -> None:
        theirs = storage_of(loaded)
        if isinstance(theirs, LazyStackedTensorDict):
            self.visit_lazy(mine, theirs)  # type: ignore[arg-type]  # refused: no members
            return
        if mine.batch_size != theirs.batch_size:  # the peer would leave out inconsistent
            msg = (
                f"{self.where}: saved with batch size {list(theirs.batch_size)}, out= has "
                f"{list(mine.batch_size)}; load without out= or give one of that batch size"
            )
            raise ShapeError(msg)
        if self.write:
            mine._attach_folder(None)  # its old folder (if saved) keeps what it held
            for key in [key for key in mine._key_names() if not theirs._has_entry(key)]:
                mine._remove_entry(key)  # not saved: out ends up holding what was saved
        for key, value in theirs._items():
            current = mine._entry(key) if mine._has_entry(key) else None
            nested = isinstance(current, TensorDictBase) and not isinstance(value, torch.Tensor)
            if nested and not isinstance(value, _NonTensorNode):
                self.visit(current, value)
            elif self.write:
                mine._put(key, _fitted(current, value))  # the loaded leaf (its file), as the peer
        if self.to_folder and self.write:
            device = mine.device
            mine._adopt(theirs)  # the loaded folder (the batch size is the same)
            mine._assign_device(device)  # its own device stays, as the peer's


def _fitted(current: Any, value: Any) -> Any:
    """The loaded ``value`` for an entry that held ``current``: a single Python value
    saved without dims of its own (a ``NonTensorData`` over more dims than its parent's
    batch size: the format records none, so it loads at the parent's) keeps the dims
    ``current`` had past them, as the peer's load into an existing node keeps them."""
    if isinstance(current, NonTensorData) and isinstance(value, NonTensorData):
        held, loaded = current.batch_size, value.batch_size
        if len(loaded) < len(held) and held[: len(loaded)] == loaded:
            return NonTensorData._make(value.data, held, value.device)
    return value


def memmap(
    data: C,
    prefix: PathLike | None = None,
    copy_existing: bool = False,
    **options: Unpack[SaveOptions],
) -> C:
    """``data.memmap(prefix, ...)``: a memory-mapped copy of a collection (``save`` is
    the same function); the collection's own method, so that one that saves another way
    (a ``TensorDictParams``: its TensorDict) does so here too."""
    saving: Callable[..., C] = data.memmap  # type: ignore[attr-defined]
    return saving(prefix, copy_existing, **options)


save = memmap  # the peer's second name
load = load_memmap  # the peer's second name


def _check_threads(num_threads: int) -> None:
    if type(num_threads) is not int or num_threads < 0:
        msg = f"num_threads must be a non-negative int (0: no thread pool), got {num_threads!r}"
        raise ArgumentValueError(msg)


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

IO.is_memmap = is_memmap
IO.load_memmap = load_memmap
IO.memmap_in_place = memmap_in_place
IO.saved_copy = saved_copy
