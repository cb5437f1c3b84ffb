"""Building lazy stacks and undoing them: ``lazy_stack`` (collections, or tensors as the
peer stacks them), ``maybe_dense_stack``, ``dense_stack_tds``, ``to_lazystack`` and
``densify`` (a dense copy, nested tensors where the members' shapes differ)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

import torch
from typing_extensions import Unpack

from tclass._base._provided import ENGINE
from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.declared._stack_ops import LazyStackOptions
from tclass._base.implemented._collection import TensorCollection
from tclass._core import _batch
from tclass._core._records import RecordLike, storage_of
from tclass._engine._lazy._entries import uneven_keys
from tclass._engine._lazy._parts import (
    check_members,
    lazily,
    padded_stack,
    stack_entries,
    stacked_size,
)
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData, _NonTensorNode
from tclass._engine._ops import check_out, stack
from tclass._engine._td import TensorDict
from tclass.errors import ArgumentError, HeterogeneousEntryError, NestedLayoutError, StackError

if TYPE_CHECKING:
    from tclass._engine._nontensor_stack import NonTensorStack

__all__ = ["dense_stack_tds", "densify", "lazy_stack", "maybe_dense_stack", "to_lazystack"]

C = TypeVar("C", bound=TensorDictBase)
R = TypeVar("R", bound=RecordLike)


# Records give a record of their class; other collections a lazy stack of them, typed
# by its members along dim 0 (``stack[i]`` is member ``i``), else (``stack[i]`` indexes
# each member) of TensorDictBase members; NonTensorData a NonTensorStack.
@overload
def lazy_stack(  # type: ignore[overload-overlap]  # (not a lazy stack: a NonTensorStack)
    collections: Sequence[NonTensorData], dim: int = 0, **options: Unpack[LazyStackOptions]
) -> NonTensorStack[Any]: ...
@overload
def lazy_stack(
    collections: Sequence[R], dim: int = 0, **options: Unpack[LazyStackOptions]
) -> R: ...
@overload
def lazy_stack(
    collections: Sequence[C], dim: Literal[0] = 0, **options: Unpack[LazyStackOptions]
) -> LazyStackedTensorDict[C]: ...
@overload
def lazy_stack(
    collections: Sequence[TensorDictBase], dim: int = 0, **options: Unpack[LazyStackOptions]
) -> LazyStackedTensorDict: ...
@overload
def lazy_stack(
    collections: Sequence[torch.Tensor], dim: int = 0, **options: Unpack[LazyStackOptions]
) -> Any: ...


def lazy_stack(
    collections: Sequence[Any], dim: int = 0, **options: Unpack[LazyStackOptions]
) -> Any:
    """Stacks collections without copying: a :class:`LazyStackedTensorDict` of them.

    Members may differ in entry shapes and keys, and in their sizes along batch dims
    (the stack's batch size is ``-1`` there: a ragged dim, as the peer's). Records of a
    tensorclass give a record of that class over the lazy stack: fields read as the
    stacked values, ``stacked[i]`` is record ``i``; members of different kinds (records
    of two classes, records and TensorDicts) give a plain lazy stack whose members keep
    their kinds, as the peer's. Python-value nodes are merged as
    ``tclass.stack`` merges them. Tensors are stacked with ``torch.stack``, or given
    back as a list (``as_list=True``), padded to the largest shape
    (``as_padded_tensor=True``, with ``padding_value`` on ``padding_side``) or as a
    nested tensor (``as_nested_tensor=True``, ``layout`` jagged by default), as the peer
    does. See :class:`~tclass._base.declared._stack_ops.LazyStackOptions` for every keyword.

    Raises:
        StackError: if there are no members, or their numbers of batch dims differ.
        StackTypeError: if a member is not a collection.
    """
    members = list(collections)
    if members:
        if isinstance(members[0], torch.Tensor):
            return _stack_tensors(members, dim, options.get("out"), options)
        if isinstance(members[0], _NonTensorNode):
            return stack(members, dim)
    check_members(members, "lazy_stack", options.get("strict_shape", False))
    batch = members[0].batch_size
    dim = _batch.normalize_dim(dim, len(batch), op="lazy_stack", inclusive=True)
    result = lazily(members, dim, stacked_size(members, dim))
    if not options:
        return result
    stack_dim_name = options.get("stack_dim_name")
    if stack_dim_name is not None:
        names = result.names
        names[dim] = stack_dim_name
        result._assign_names(tuple(names))
    out = options.get("out")
    if out is not None:
        check_out(out, result.batch_size, "lazy_stack", ())
        out.update_(result)
        return out
    return result


def _stack_tensors(
    tensors: list[Any], dim: int, out: torch.Tensor | None, options: LazyStackOptions
) -> Any:
    """``lazy_stack`` of plain tensors (member 0 is one), as the peer answers it."""
    for position, tensor in enumerate(tensors):
        if not isinstance(tensor, torch.Tensor):
            msg = (
                f"lazy_stack: member {position} is a {type(tensor).__name__} but member 0 is "
                "a tensor; stack tensors with tensors only"
            )
            raise StackError(msg)
    as_list = options.get("as_list", False)
    padded = options.get("as_padded_tensor", False)
    nested = options.get("as_nested_tensor", False)
    if as_list + padded + nested > 1:
        msg = "lazy_stack: as_list, as_padded_tensor and as_nested_tensor are exclusive; pass one"
        raise ArgumentError(msg)
    if as_list:
        return tensors
    if padded:
        value = options.get("padding_value", 0.0)
        return padded_stack(tensors, 0, value, options.get("padding_side", "right"), ())
    if nested:
        layout = options.get("layout")
        return torch.nested.as_nested_tensor(tensors, layout=layout or torch.jagged)
    try:
        return torch.stack(tensors, dim, out=out)
    except RuntimeError as error:
        msg = (
            f"lazy_stack: the tensors do not stack ({error}); pass as_list=True, "
            "as_padded_tensor=True or as_nested_tensor=True for tensors of different shapes"
        )
        raise StackError(msg) from None


def maybe_dense_stack(
    collections: Sequence[C], dim: int = 0, *, out: C | None = None, strict: bool = False
) -> C:
    """The dense stack of ``collections`` when their keys, classes and shapes agree
    (as :func:`tclass.stack`), a lazy stack of them otherwise. ``out`` receives the
    result in place; ``strict`` is the peer's keyword (both kinds of stack check the
    batch sizes)."""
    members = list(collections)
    result: Any  # (a lazy stack of collections other than records is not a C)
    try:
        result = stack(members, dim)
    except HeterogeneousEntryError:
        raise
    except StackError:
        best = _dense_above(members, dim)
        result = best if best is not None else lazy_stack(members, dim)
    if out is not None:
        out.update_(result)
        return out
    return cast(C, result)


def _dense_above(members: list[Any], dim: int) -> Any:
    """The peer's best-intention stack of TensorDicts (or HDF5 files, whose tensors it
    reads) that hold the same keys, tensors of equal shapes and batch sizes, but nested
    collections that differ: a TensorDict with those nested collections stacked as
    :func:`maybe_dense_stack` stacks them (lazily where they differ); None when the
    members differ at this level."""
    first = members[0]
    keys = first._key_names()
    if not all(
        (type(m) is TensorDict or m._is_store) and m.batch_size == first.batch_size for m in members
    ):
        return None
    if any(m._key_names() != keys for m in members[1:]):
        return None
    d = _batch.normalize_dim(dim, first.batch_dims, op="maybe_dense_stack", inclusive=True)
    values: dict[str, Any] = {}
    for key in keys:
        parts = [m._entry(key) for m in members]
        if all(isinstance(p, torch.Tensor) for p in parts):
            if any(p.shape != parts[0].shape or p.dtype != parts[0].dtype for p in parts):
                return None
            values[key] = torch.stack(parts, d)
        elif all(isinstance(p, TensorCollection) and not p._is_leaf_node for p in parts):
            values[key] = maybe_dense_stack(parts, d)
        elif all(isinstance(p, _NonTensorNode) for p in parts):
            values[key] = stack_entries(parts, d, (key,))  # Python values, as stack merges
        else:
            return None  # a tensor in some members, a collection in others
    device = first.device if all(m.device == first.device for m in members) else None
    return TensorDict(values, batch_size=stacked_size(members, d), device=device)


def dense_stack_tds(collections: Sequence[C] | TensorDictBase, dim: int | None = None) -> Any:
    """The members of a lazy stack stacked along its stack dim as :func:`maybe_dense_stack`
    stacks them (dense where they line up; nested lazy stacks and members that differ stay
    lazy), or a list of collections stacked so along ``dim`` (0 by default); any other
    collection is returned as it is. As the peer, ``dim`` is not used for a lazy stack.
    """
    if isinstance(collections, TensorDictBase):
        storage = storage_of(collections)
        if not isinstance(storage, LazyStackedTensorDict):
            return collections
        return maybe_dense_stack(list(collections.unbind(storage.stack_dim)), storage.stack_dim)
    return maybe_dense_stack(list(collections), 0 if dim is None else dim)


def to_lazystack(collection: Any, dim: int = 0) -> Any:
    """A lazy stack of ``collection``'s slices along batch dim ``dim`` (views)."""
    batch = collection.batch_size
    d = _batch.normalize_dim(dim, len(batch), op="to_lazystack")
    if isinstance(collection, LazyStackedTensorDict) and collection.stack_dim == d:
        return collection  # already that lazy stack, as the peer
    members = list(collection.unbind(d))
    return type(collection)._stack_lazily(members, d, batch)


def densify(collection: Any, layout: torch.layout = torch.strided) -> Any:
    """A dense copy of ``collection`` in which every lazy stack is stacked: entries of
    equal shapes with ``torch.stack``, of different shapes as nested tensors of
    ``layout`` (which needs the stack along dim 0), nested collections recursively. A
    collection that holds no lazy stack is returned itself, as the peer does."""
    if collection._is_leaf_node:
        return collection
    storage = storage_of(collection)
    values: dict[str, Value] = {}
    if isinstance(storage, LazyStackedTensorDict):
        members = storage.tensordicts
        uneven = uneven_keys(
            "densify()", members, lambda path: _empty_part(members, path) is not None
        )
        if uneven is not None:
            raise uneven
        d = storage.stack_dim
        for key in _held_keys(members):
            held = [member._entry(key) if member._has_entry(key) else None for member in members]
            parts = [part for part in held if part is not None]
            if isinstance(parts[0], torch.Tensor):
                if len(parts) < len(held):
                    empty = _empty_part(members, (key,))
                    parts = [empty if part is None else part for part in held]
                values[key] = _dense_parts(parts, d, layout, key)
            else:
                values[key] = densify(stack_entries(parts, d, (key,)), layout)
    else:
        changed = False
        for key, value in storage._items():
            if isinstance(value, TensorCollection):
                dense = densify(value, layout)
                changed = changed or dense is not value
                value = dense
            values[key] = value
        if not changed:
            return collection
    out = collection._new_like(values, collection.batch_size, collection.device)
    return collection._named_like_self(out)


def _held_keys(members: Sequence[Any]) -> list[str]:
    """The keys any of ``members`` holds, in the order they first appear."""
    keys: dict[str, None] = {}
    for member in members:
        keys.update(dict.fromkeys(member._key_names()))
    return list(keys)


def _empty_part(members: Sequence[Any], path: tuple[str, ...]) -> torch.Tensor | None:
    """What ``densify()`` gives the members that lack the entry at ``path`` (whose
    parent they all hold), as the peer's: an empty tensor of the holders' dtype with
    their batch dims and no rows (0 in the first dim past them; 0 in the last where
    the holders' later dims differ). None where the holders' entries are not all
    tensors with dims past their batch size (an empty part would break the batch)."""
    found: list[tuple[torch.Tensor, int]] = []
    for member in members:
        node = member
        for key in path[:-1]:
            if not node._has_entry(key):
                return None
            node = node._entry(key)
            if not isinstance(node, TensorCollection) or node._is_leaf_node:
                return None
        if not node._has_entry(path[-1]):
            continue
        entry = node._entry(path[-1])
        rows = len(node.batch_size)
        if not isinstance(entry, torch.Tensor) or entry.is_nested or entry.dim() <= rows:
            return None
        found.append((entry, rows))
    if not found:
        return None
    first, rows = found[0]
    shape = first.shape
    if all(entry.shape[rows + 1 :] == shape[rows + 1 :] for entry, _ in found):
        return first.new_zeros((*shape[:rows], 0, *shape[rows + 1 :]))
    return first.new_zeros((*shape[:-1], 0))


def _dense_parts(parts: list[Any], dim: int, layout: torch.layout, key: str) -> torch.Tensor:
    shape = parts[0].shape
    if all(part.shape == shape for part in parts):
        return torch.stack(parts, dim)
    if dim != 0:
        msg = (
            f"densify: the members' {key!r} differ in shape, which needs a nested tensor, and "
            f"nested tensors stack along dim 0; this stack's dim is {dim} (transpose it first)"
        )
        raise NestedLayoutError(msg)
    return torch.nested.as_nested_tensor(parts, layout=layout)


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

ENGINE.densify = densify
ENGINE.lazy_stack = lazy_stack
ENGINE.maybe_dense_stack = maybe_dense_stack
ENGINE.to_lazystack = to_lazystack
