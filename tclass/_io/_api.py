"""The persistence entry points: ``memmap``/``memmap_``/``memmap_like``/``save`` and
``load_memmap``/``load``, as module functions and as the methods every collection has."""

from __future__ import annotations

import functools
import os
from typing import Any, TypeVar, overload

import torch

from tclass._base._tensordict_base import TensorDictBase
from tclass._core._device import DeviceLike, as_device
from tclass._core._keys import NestedKey
from tclass._core._memmap import MemoryMappedTensor, Mode
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import _NonTensorNode
from tclass._engine._td import TensorDict
from tclass._io._read import load_tree
from tclass._io._saved_folder import linker
from tclass._io._subpath import descend, subpath_parts
from tclass._io._write import save_tree
from tclass.errors import KeyNotFoundError, ShapeError

__all__ = [
    "adopt_leaves",
    "is_memmap",
    "load",
    "load_into",
    "load_memmap",
    "memmap",
    "save",
    "saved_copy",
]

PathLike = str | os.PathLike[str]
C = TypeVar("C")


def saved_copy(
    node: C,
    prefix: PathLike | None,
    copy_existing: bool,
    num_threads: int,
    existsok: bool,
    like: bool,
    allow_pickle: bool,
    durable: bool = False,
) -> C:
    """A locked copy of ``node`` over memory-mapped files in ``prefix``."""
    _check_threads(num_threads)
    saved = save_tree(
        node, prefix, copy_existing=copy_existing, num_threads=num_threads,
        existsok=existsok, like=like, allow_pickle=allow_pickle, link=linker(allow_pickle),
        durable=durable,
    )  # fmt: skip
    saved.lock_()
    return saved  # type: ignore[no-any-return]


def adopt_leaves(target: Any, saved: Any) -> None:
    """Make ``target`` hold the leaves of ``saved`` (same structure), for ``memmap_``."""
    storage = getattr(target, "_tensordict", None)
    if storage is not None:
        adopt_leaves(storage, saved._tensordict)
    elif isinstance(target, LazyStackedTensorDict):
        for mine, theirs in zip(target.tensordicts, saved.tensordicts):
            adopt_leaves(mine, theirs)
        target._device = saved.device
    elif isinstance(target, TensorDict):
        for key, value in saved._tensors.items():
            current = target._tensors[key]
            if isinstance(value, torch.Tensor) or isinstance(current, _NonTensorNode):
                target._tensors[key] = value
            else:
                adopt_leaves(current, value)
        target._device = saved.device
        target._saved_at = saved._saved_at  # later writes reach the new folder


def is_memmap(node: Any) -> bool:
    """Whether every tensor leaf is a MemoryMappedTensor (and there is at least one)."""
    leaves = list(node.values(include_nested=True, leaves_only=True))
    return bool(leaves) and all(isinstance(leaf, MemoryMappedTensor) for leaf in leaves)


@overload
def load_memmap(
    prefix: PathLike,
    device: DeviceLike = ...,
    non_blocking: bool = ...,
    *,
    out: Any = ...,
    cls: type[C],
    subpath: NestedKey | None = ...,
    mode: Mode | None = ...,
    allow_pickle: bool = ...,
) -> C: ...
@overload
def load_memmap(
    prefix: PathLike,
    device: DeviceLike = ...,
    non_blocking: bool = ...,
    *,
    out: Any = ...,
    cls: None = ...,
    subpath: NestedKey | None = ...,
    mode: Mode | None = ...,
    allow_pickle: bool = ...,
) -> TensorDictBase: ...


def load_memmap(
    prefix: PathLike,
    device: DeviceLike = None,
    non_blocking: bool = False,
    *,
    out: Any = None,
    cls: type[C] | None = None,
    subpath: NestedKey | None = None,
    mode: Mode | None = None,
    allow_pickle: bool = False,
) -> Any:
    """Load what ``memmap``/``save`` wrote in ``prefix`` (see ``TensorDict.load_memmap``
    for every argument; ``cls`` checks that the folder holds that class).

    ``mode="r"`` maps the files copy-on-write (nothing ever reaches them); ``"r+"``
    shares them (writes reach the files; a file this process may not write is a
    ``FilePermissionError``); the default ``None`` shares each file it may write and
    maps the others copy-on-write. ``subpath`` (``"a/b"`` or ``("a", "b")``) loads one
    nested collection, stepping through records' fields."""
    target = as_device(device) if device is not None else None
    staged = target is not None and target.type == "cuda" and out is None
    parts = subpath_parts(subpath)
    at = functools.partial(descend, parts=parts, subpath=subpath) if parts else None
    loaded = load_tree(
        prefix, cls, None if out is not None or staged else target, allow_pickle, mode, at
    )
    if staged:
        assert target is not None
        loaded = _staged_to(loaded, target, non_blocking)
    if cls is not None and not isinstance(loaded, cls):
        where = repr(os.fspath(prefix)) + (f" at subpath={subpath!r}" if subpath else "")
        msg = (
            f"{where} holds a {type(loaded).__name__}, not a {cls.__name__}; "
            f"load it with {type(loaded).__name__}.load_memmap or tclass.load_memmap"
        )
        raise TypeError(msg)
    if out is not None:
        load_into(out, loaded, non_blocking, os.fspath(prefix))
        loaded = out
    if target is not None and target.type == "cuda" and not non_blocking and not staged:
        torch.cuda.synchronize(target)
    return loaded


def _staged_to(loaded: Any, device: torch.device, non_blocking: bool) -> Any:
    """The mapped tree copied to ``device`` through pinned staging buffers."""
    from tclass._base._device_ops import map_tensors
    from tclass._io._staging import stage_copy

    leaves = list(loaded.values(include_nested=True, leaves_only=True))
    copies = {
        id(leaf): copy for leaf, copy in zip(leaves, stage_copy(leaves, device, non_blocking))
    }
    return map_tensors(loaded, lambda leaf: copies[id(leaf)], device)


def load_into(out: Any, loaded: Any, non_blocking: bool, where: str) -> None:
    """Copy the loaded data into ``out``'s own tensors (same keys and shapes required)."""
    mine, theirs = getattr(out, "_tensordict", out), getattr(loaded, "_tensordict", loaded)
    if isinstance(mine, LazyStackedTensorDict) or isinstance(theirs, LazyStackedTensorDict):
        members, saved = mine.tensordicts, theirs.tensordicts
        if len(members) != len(saved):
            msg = (
                f"{where}: cannot load {len(saved)} stacked members into a stack of {len(members)}"
            )
            raise ShapeError(msg)
        for member, source in zip(members, saved):
            load_into(member, source, non_blocking, where)
        return
    if isinstance(mine, _NonTensorNode):
        return
    mine_keys, their_keys = set(mine.keys()), set(theirs.keys())
    if mine_keys != their_keys:
        missing = sorted(their_keys - mine_keys) or sorted(mine_keys - their_keys)
        msg = f"{where}: out= must have the saved keys; they differ at {missing[0]!r}"
        raise KeyNotFoundError(msg)
    for key, value in theirs._tensors.items():
        current = mine._tensors[key]
        if isinstance(value, torch.Tensor):
            if current.shape != value.shape:
                msg = f"{where}: entry {key!r} is saved with shape {list(value.shape)}, out= has {list(current.shape)}"
                raise ShapeError(msg)
            current.copy_(value, non_blocking=non_blocking)
        elif isinstance(value, _NonTensorNode):
            mine._store_entry(key, value)  # into out's own folder too, if it has one
        else:
            load_into(current, value, non_blocking, where)


def memmap(
    data: C, prefix: PathLike | None = None, copy_existing: bool = False, *, num_threads: int = 0,
    existsok: bool = True, allow_pickle: bool = False, durable: bool = False,
) -> C:  # fmt: skip
    """``data.memmap(prefix, ...)``: a memory-mapped copy of a collection."""
    return saved_copy(
        data, prefix, copy_existing, num_threads, existsok, False, allow_pickle, durable
    )


def save(
    data: C, prefix: PathLike | None = None, copy_existing: bool = False, *, num_threads: int = 0,
    existsok: bool = True, allow_pickle: bool = False, durable: bool = False,
) -> C:  # fmt: skip
    """Alias of :func:`memmap`."""
    return saved_copy(
        data, prefix, copy_existing, num_threads, existsok, False, allow_pickle, durable
    )


load = load_memmap  # the peer's second name


def _check_threads(num_threads: int) -> None:
    if type(num_threads) is not int or num_threads < 0:
        msg = f"num_threads must be a non-negative int, got {num_threads!r}"
        raise ValueError(msg)
