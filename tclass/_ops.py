"""Torch functions on collections: ``stack``, ``cat`` and the rest of the dispatch table.

``torch.stack([td_a, td_b])`` and ``tclass.stack([td_a, td_b])`` are the same call. Every
function registered here with :func:`~tclass._dispatch.implements` is answered by every
collection type through its ``__torch_function__``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any, NoReturn, TypeVar

import torch

from tclass import _batch
from tclass._batch import format_shape
from tclass._base import TensorDictBase, Value
from tclass._collection import TensorCollection
from tclass._dispatch import implements
from tclass._errors import StackError

__all__ = ["cat", "stack"]

C = TypeVar("C", bound=TensorDictBase)

_LAZY_HINT = "use tclass.lazy_stack for members whose keys or shapes differ"


@implements(torch.stack)
def stack(collections: Sequence[C], dim: int = 0, *, out: C | None = None) -> C:
    """Stacks collections of the same type, keys and batch size along a new batch dim.

    Args:
        collections: a non-empty sequence of collections.
        dim: where the new dim goes (``-1`` means after the last batch dim).
        out: a collection with the stacked batch size to write into.

    Raises:
        StackError: if the members differ in type, batch size, keys or entry shapes; the
            message names the first difference.
    """
    members = _members(collections, "stack")
    first = members[0]
    batch_size = first.batch_size
    sizes = list(map(type(first)._get_batch_size, members))
    if sizes.count(batch_size) != len(sizes):
        position = next(i for i, size in enumerate(sizes) if size != batch_size)
        msg = (
            f"stack: member {position} has batch size {format_shape(sizes[position])} "
            f"but member 0 has {format_shape(batch_size)}; all batch sizes must match "
            f"({_LAZY_HINT})"
        )
        raise StackError(msg)
    dim = _batch.normalize_dim(dim, len(batch_size), op="stack", inclusive=True)
    values = _join(members, "stack", dim, out, torch.stack, stack)
    new_size = list(batch_size)
    new_size.insert(dim, len(members))
    return _result(first, members, values, torch.Size(new_size), out)


@implements(torch.cat, torch.concat, torch.concatenate)
def cat(collections: Sequence[C], dim: int = 0, *, out: C | None = None) -> C:
    """Concatenates collections along an existing batch dim.

    Members must have the same type and keys, and the same batch size except along
    ``dim``.

    Raises:
        StackError: naming the first member, key or shape that differs.
    """
    members = _members(collections, "cat")
    first = members[0]
    batch_size = first.batch_size
    if not batch_size:
        msg = "cat: collections with no batch dims cannot be concatenated; use stack"
        raise StackError(msg)
    dim = _batch.normalize_dim(dim, len(batch_size), op="cat")
    sizes = list(map(type(first)._get_batch_size, members))
    if sizes.count(batch_size) == len(sizes):
        total = batch_size[dim] * len(sizes)
    else:
        total = 0
        for position, size in enumerate(sizes):
            if not _same_except(size, batch_size, dim):
                msg = (
                    f"cat: member {position} has batch size {format_shape(size)}, incompatible "
                    f"with member 0's {format_shape(batch_size)} outside dim {dim}"
                )
                raise StackError(msg)
            total += size[dim]
    values = _join(members, "cat", dim, out, torch.cat, cat)
    new_size = list(batch_size)
    new_size[dim] = total
    return _result(first, members, values, torch.Size(new_size), out)


def _same_except(size: torch.Size, reference: torch.Size, dim: int) -> bool:
    if len(size) != len(reference):
        return False
    return len(size) == 1 or (size[:dim] == reference[:dim] and size[dim + 1 :] == reference[dim + 1 :])


def _join(
    members: list[Any], op: str, dim: int, out: Any, join_tensors: Any, join_collections: Any
) -> dict[str, Value]:
    """Joins each entry across members with ``join_tensors`` (or recursively)."""
    maps = list(map(type(members[0])._get_entries, members))
    reference = maps[0]
    if len(set(map(len, maps))) != 1:
        _raise_key_mismatch(op, maps)
    values: dict[str, Value] = {}
    for key, entry in reference.items():
        try:
            parts = list(map(itemgetter(key), maps))
        except KeyError:
            _raise_key_mismatch(op, maps)
        target = None if out is None else out._entry(key)
        if isinstance(entry, TensorCollection):
            values[key] = join_collections(parts, dim, out=target)
            continue
        try:
            if target is None:
                values[key] = join_tensors(parts, dim)
            else:
                values[key] = join_tensors(parts, dim, out=target)
        except (RuntimeError, TypeError):
            _raise_entry_mismatch(op, key, parts, dim if op == "cat" else None)
            raise
    return values


def _members(collections: Sequence[C], op: str) -> list[C]:
    members = list(collections)
    if not members:
        msg = f"{op} expects a non-empty sequence of collections"
        raise StackError(msg)
    if len(set(map(type, members))) != 1:
        kind = type(members[0])
        for position, member in enumerate(members):
            if type(member) is not kind:
                msg = (
                    f"{op}: member {position} is a {type(member).__name__} but member 0 is a "
                    f"{kind.__name__}; all members must have the same type"
                )
                raise StackError(msg)
    first: object = members[0]  # the annotation promises a collection; callers may not
    if not isinstance(first, TensorCollection):
        msg = f"{op} expects tensor collections, got {type(first).__name__}"
        raise StackError(msg)
    return members


def _raise_key_mismatch(op: str, maps: list[Mapping[str, Value]]) -> NoReturn:
    keys = maps[0].keys()
    for position, entries in enumerate(maps):
        if entries.keys() != keys:
            missing = sorted(set(keys) - set(entries.keys()))
            extra = sorted(set(entries.keys()) - set(keys))
            msg = (
                f"{op}: member {position} has different keys from member 0 (missing: "
                f"{missing}, extra: {extra}); {_LAZY_HINT}"
            )
            raise StackError(msg)
    raise AssertionError("unreachable: the key sets were found to differ")


def _raise_entry_mismatch(op: str, key: str, parts: list[Value], cat_dim: int | None) -> None:
    """Raises a StackError naming the first member whose entry ``key`` cannot join."""
    first = parts[0]
    if not isinstance(first, torch.Tensor):
        return
    for position, part in enumerate(parts):
        if not isinstance(part, torch.Tensor):
            msg = f"{op}: entry {key!r} is a tensor in member 0 but a {type(part).__name__} in member {position}"
            raise StackError(msg)
        if not _joinable(part.shape, first.shape, cat_dim):
            msg = (
                f"{op}: entry {key!r} has shape {format_shape(part.shape)} in member {position} "
                f"but {format_shape(first.shape)} in member 0 ({_LAZY_HINT})"
            )
            raise StackError(msg)
        if part.dtype != first.dtype or part.device != first.device:
            msg = (
                f"{op}: entry {key!r} is {part.dtype} on {part.device} in member {position} "
                f"but {first.dtype} on {first.device} in member 0"
            )
            raise StackError(msg)


def _joinable(shape: torch.Size, reference: torch.Size, cat_dim: int | None) -> bool:
    if cat_dim is None:
        return shape == reference
    return len(shape) == len(reference) and all(
        a == b for i, (a, b) in enumerate(zip(shape, reference)) if i != cat_dim
    )


def _result(
    first: C, members: list[C], values: dict[str, Value], size: torch.Size, out: C | None
) -> C:
    if out is not None:
        if out.batch_size != size:
            msg = f"out= has batch size {format_shape(out.batch_size)}, expected {format_shape(size)}"
            raise StackError(msg)
        return out
    device = first.device
    if device is not None and any(member.device != device for member in members):
        device = None
    return first._new_like(values, size, device)


# --- the rest of the table: thin adapters onto the collection methods -------------------


@implements(torch.unbind)
def _unbind(collection: TensorCollection, dim: int = 0) -> tuple[Any, ...]:
    return collection.unbind(dim)


@implements(torch.split)
def _split(collection: Any, split_size_or_sections: Any, dim: int = 0) -> tuple[Any, ...]:
    return collection.split(split_size_or_sections, dim)  # type: ignore[no-any-return]


@implements(torch.chunk)
def _chunk(collection: Any, chunks: int, dim: int = 0) -> tuple[Any, ...]:
    return collection.chunk(chunks, dim)  # type: ignore[no-any-return]


@implements(torch.squeeze)
def _squeeze(collection: Any, dim: int | None = None) -> Any:
    return collection.squeeze(dim)


@implements(torch.unsqueeze)
def _unsqueeze(collection: Any, dim: int) -> Any:
    return collection.unsqueeze(dim)


@implements(torch.permute)
def _permute(collection: Any, dims: Sequence[int]) -> Any:
    return collection.permute(*dims)


@implements(torch.reshape)
def _reshape(collection: Any, shape: Sequence[int]) -> Any:
    return collection.reshape(*shape)


@implements(torch.clone)
def _clone(collection: Any, *, memory_format: torch.memory_format | None = None) -> Any:
    if memory_format is None:
        return collection.clone()
    return collection._map_values(
        lambda v: torch.clone(v, memory_format=memory_format), collection.batch_size
    )


def _like(collection: Any, make: Any, kwargs: dict[str, Any]) -> Any:
    device = kwargs.get("device")
    target = collection.device if device is None else torch.device(device)
    return collection._map_values(lambda v: make(v, **kwargs), collection.batch_size, target)


@implements(torch.zeros_like)
def _zeros_like(collection: Any, **kwargs: Any) -> Any:
    return _like(collection, torch.zeros_like, kwargs)


@implements(torch.ones_like)
def _ones_like(collection: Any, **kwargs: Any) -> Any:
    return _like(collection, torch.ones_like, kwargs)


@implements(torch.empty_like)
def _empty_like(collection: Any, **kwargs: Any) -> Any:
    return _like(collection, torch.empty_like, kwargs)


@implements(torch.full_like)
def _full_like(collection: Any, fill_value: Any, **kwargs: Any) -> Any:
    device = kwargs.get("device")
    target = collection.device if device is None else torch.device(device)
    return collection._map_values(
        lambda v: torch.full_like(v, fill_value, **kwargs), collection.batch_size, target
    )


@implements(torch.where)
def _where(condition: torch.Tensor, input: Any, other: Any) -> Any:
    if isinstance(input, TensorCollection):
        return input.where(condition, other)  # type: ignore[attr-defined]
    # `input` is a tensor or number and `other` the collection: swap the branches.
    return other.where(~condition, input)
