"""Helpers of a ``PersistentTensorDict``'s writes (``_writes.py``): the refusal of
tensors that require grad or hold no data, the warning of an array replaced, and the reading of an
update's source (what it holds, its entries left out, the keys below a path, an index's
``...`` spelled out)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import torch

from tclass._base._tensordict_base import TensorDictBase
from tclass._base.implemented._collection import TensorCollection
from tclass._core import _keys
from tclass._core._batch import normalize_index
from tclass._core._records import is_record, storage_of
from tclass._io.store._datasets import grad_refused, meta_refused
from tclass._io.store._records import source_items
from tclass.errors import EntryReplacedWarning

__all__ = [
    "batch_index",
    "dropped_entries",
    "holds_leaves",
    "paths_below",
    "refuse_unstorable",
    "warn_replaced",
]


def refuse_unstorable(value: Any, where: str, label: str) -> None:
    """Raises ``GradError`` if ``value`` (a tensor, a collection in memory, a record, a
    mapping of them) holds a tensor that requires grad, and ``MetaTensorError`` if it
    holds a meta tensor (no data), naming its key under ``where``, before anything is
    written (``label``: the kind of file). A collection over a store is not read: what a
    file holds never requires grad."""
    value = storage_of(value)
    if isinstance(value, torch.Tensor):
        _refuse_tensor(value, where, label)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            refuse_unstorable(item, f"{where} (key {key!r})", label)
    elif isinstance(value, TensorDictBase) and not value._is_store:
        for key, leaf in value.items(include_nested=True, leaves_only=True):
            if isinstance(leaf, torch.Tensor):
                _refuse_tensor(leaf, f"{where} (key {key!r})", label)


def _refuse_tensor(tensor: torch.Tensor, where: str, label: str) -> None:
    if tensor.requires_grad:
        raise grad_refused(where, tuple(tensor.shape))
    if tensor.is_meta:
        raise meta_refused(tensor, label, where)


def warn_replaced(where: str, in_place: bool = False) -> None:
    done = (
        f"wrote into {where} in place (same shape and dtype), as set(key, value, "
        "inplace=True) does; pass inplace=True or use set_() to say so"
        if in_place
        else f"deleted {where} and wrote a new one, which is slower than writing into it, "
        "and an HDF5 file keeps the old array's space. Write in place with set(key, value, "
        "inplace=True) or set_() (same shape), or use a new key"
    )
    warnings.warn(
        # the peer's opening words, which warning filters written for it match
        f"Replacing an array with another one is inefficient: set(key, value) {done}",
        EntryReplacedWarning,
        stacklevel=5,
    )


def holds_leaves(value: Any) -> bool:
    """Whether the mapping, collection or record ``value`` holds a tensor or a Python
    value at some depth (a nested collection without either writes nothing)."""
    if is_record(value) or isinstance(value, TensorCollection):
        return bool(list(storage_of(value).keys(True, True)))
    if isinstance(value, Mapping):
        return any(holds_leaves(part) for part in value.values())
    return True


def dropped_entries(source: Any, paths: list[tuple[str, ...]], prefix: tuple[str, ...]) -> Any:
    """``source`` as a dict without the entries at ``paths`` (under ``prefix``)."""
    out: dict[Any, Any] = {}
    for key, value in source_items(source):
        path = prefix + _keys.key_path(key)
        if path in paths:
            continue
        below = any(p[: len(path)] == path for p in paths)
        out[key] = dropped_entries(value, paths, path) if below else value
    return out


def batch_index(index: Any, batch: torch.Size) -> Any:
    """``index`` with its ``...`` spelled out over the batch dims (``ptd[..., 0]`` is
    the last batch dim's row 0, not the last dim of each array)."""
    if type(index) is tuple and any(part is Ellipsis for part in index):
        return normalize_index(index, len(batch))
    return index


def paths_below(path: tuple[str, ...], wanted: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """What ``update(keys_to_update=wanted)`` writes under ``path``: ``[()]`` for all of it
    (a wanted key names it or lies above it), the wanted paths inside it, or nothing."""
    below: list[tuple[str, ...]] = []
    for key in wanted:
        if path[: len(key)] == key:
            return [()]
        if key[: len(path)] == path:
            below.append(key[len(path) :])
    return below
