"""Torch functions on collections: ``stack``, ``cat`` and the rest of the dispatch table.

``torch.stack([td_a, td_b])`` and ``tclass.stack([td_a, td_b])`` are the same call. Every
function registered here with :func:`~tclass._core._dispatch.implements` is answered by every
collection type through its ``__torch_function__``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any, NoReturn, TypeVar, cast

import torch

from tclass._base._provided import ENGINE
from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._grad_writes import writes_as_set_
from tclass._core import _batch, _names
from tclass._core._batch import format_shape
from tclass._core._device import as_device
from tclass._core._dispatch import implements
from tclass._core._jagged import cat_rows
from tclass._core._options import OPTIONS
from tclass._core._records import (
    bounds_values,
    is_record,
    is_record_class,
    storage_of,
    storages_of,
)
from tclass._core._tracing import tracing
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._lazy._legacy import LegacyLazyView
from tclass._engine._lazy._parts import check_members, dense_members, lazily, stacked_size
from tclass._engine._nontensor import _NonTensorNode
from tclass._engine._nontensor_stack import join_non_tensor
from tclass._engine._td import TensorDict
from tclass.errors import StackError, StackKeysError, StackTypeError

__all__ = ["cat", "check_out", "join_unbatched", "stack"]

C = TypeVar("C", bound=TensorDictBase)


_LAZY_HINT = "use tclass.lazy_stack for members whose keys or shapes differ"


@implements(torch.stack)
def stack(
    collections: Sequence[C], dim: int = 0, *, out: C | None = None, contiguous: bool = False
) -> C:
    """Stacks collections of the same type, keys and batch size along a new batch dim.

    Args:
        collections: a non-empty sequence of collections (lazy stacks among TensorDicts
            are stacked densely).
        dim: where the new dim goes (``-1`` means after the last batch dim).
        out: a collection with the stacked batch size to write into.
        contiguous: a dense result even for lazy stacks (as the peer, lazy stacks
            that all have as many members are otherwise stacked member by member into a
            lazy stack, and other collections densely; :func:`tclass.lazy_stack` stacks
            lazily).

    Raises:
        StackError: if the members differ in type, batch size, keys or entry shapes; the
            message names the first difference.
    """
    if _plain_tensors(collections):  # as the peer: torch.stack's work
        return cast(C, torch.stack(_as_tensors(collections), dim, out=cast(Any, out)))
    return _stack(_as_members(collections), dim, out, (), contiguous)


@implements(torch.cat, torch.concat)
def cat(collections: Sequence[C], dim: int = 0, *, out: C | None = None) -> C:
    """Concatenates collections along an existing batch dim.

    Members must have the same type and keys, and the same batch size except along
    ``dim``; records of one class and TensorDicts join into member 0's kind (a record
    of its class, or a TensorDict), as the peer's.

    Raises:
        StackError: naming the first member, key or shape that differs.
    """
    if _plain_tensors(collections):  # as the peer: torch.cat's work
        return cast(C, torch.cat(_as_tensors(collections), dim, out=cast(Any, out)))
    return _cat(_as_members(collections), dim, out, ())


def _as_tensors(collections: Sequence[Any]) -> list[torch.Tensor]:
    """``collections``, tensors only (``_plain_tensors``), as torch's functions take them
    (typed as tensors, so that tclass.mypy does not type the call as a stack of records).
    """
    return list(collections)


def _plain_tensors(collections: object) -> bool:
    """Whether ``collections`` is a non-empty list or tuple of tensors only."""
    return (
        isinstance(collections, (list, tuple))
        and bool(collections)
        and all(isinstance(item, torch.Tensor) for item in collections)
    )


@implements(torch.concatenate)
def _concatenate(collections: Sequence[C], axis: int = 0, *, out: C | None = None) -> C:
    return _cat(_as_members(collections), axis, out, ())


def _as_members(collections: Sequence[C] | C) -> Sequence[C]:
    """What to stack or concatenate: a collection given in place of a sequence of them
    (``torch.stack(batch)``, as a DataLoader's ``collate_fn=torch.stack`` gets one
    batch) stands for its rows, as iterating it gives them (the peer's reading)."""
    if isinstance(collections, TensorCollection):
        return cast("list[C]", list(collections.unbind(0)))
    return collections


def _stack(
    collections: Sequence[C], dim: int, out: C | None, path: tuple[str, ...], dense: bool = False
) -> C:
    if collections and isinstance(collections[0], _NonTensorNode):
        return _join_nodes(collections, "stack", dim, path)
    if out is not None and not _written_directly(out):
        return _written_into(out, _stack(collections, dim, None, path, dense), "stack", path)
    if dense:  # a lazy stack's dense form: records mixed with other kinds join as storages
        collections = dense_members(list(collections))
    members = _members(collections, "stack", path)
    kinds = set(map(type, members))
    if out is None and _records_over_lazy_stacks(members, kinds):
        stacked = _stack([storage_of(m) for m in members], dim, None, path, dense)
        return cast("C", _rewrapped(members[0], stacked))
    if out is None and _ragged_lazy(members, kinds):
        # A ragged lazy stack has no dense form: the result is lazy too, as the peer's.
        check_members(members, "stack")
        dim = _batch.normalize_dim(dim, members[0].batch_dims, op="stack", inclusive=True)
        size = stacked_size(members, dim)
        if not dense and all(map(_is_lazy, kinds)) and not OPTIONS.lazy_legacy:
            return _stack_lazy_stacks(members, dim, size, path)  # member by member if they line up
        return lazily(members, dim, size)  # type: ignore[no-any-return]
    lazy_stacks = (
        not dense and out is None and all(map(_is_lazy, kinds)) and not OPTIONS.lazy_legacy
    )
    if not lazy_stacks and (len(kinds) > 1 or members[0]._is_lazy):
        members = [m.contiguous() if _is_lazy(m) else m for m in members]
        _members(members, "stack", path)
    first = members[0]
    batch_size = first.batch_size
    sizes = _batch_sizes(members)
    if not _batch.all_equal(sizes, batch_size):
        position = next(i for i, size in enumerate(sizes) if size != batch_size)
        msg = (
            f"stack{_at(path)}: member {position} has batch size "
            f"{format_shape(sizes[position])} but member 0 has {format_shape(batch_size)}; "
            f"stacking tensordicts requires them to have congruent batch sizes ({_LAZY_HINT})"
        )
        raise StackError(msg)
    dim = _batch.normalize_dim(dim, len(batch_size), op="stack", inclusive=True)
    new_size = list(batch_size)
    new_size.insert(dim, len(members))
    if lazy_stacks:
        return _stack_lazy_stacks(members, dim, torch.Size(new_size), path)
    if OPTIONS.lazy_legacy and out is None and not path:  # set_lazy_legacy(True)
        legacy = type(collections[0])._stack_lazily
        return legacy(list(collections), dim, torch.Size(new_size))  # type: ignore[no-any-return]
    size = check_out(out, torch.Size(new_size), "stack", path)
    values = _join(members, "stack", dim, out, path, size, dense)
    result = _result(first, members, values, size, out)
    if out is None and first._dim_names is not None:  # the members' names, if they all agree
        result._assign_names(_names.stacked([m._dim_names for m in members], dim))
    return result  # ``out=`` keeps its own names, as the peer's (and ``cat``'s)


def _written_directly(out: Any) -> bool:
    """Whether ``out=`` takes the joined tensors straight into its own (``torch.stack(...,
    out=t)`` per entry): a TensorDict's, or a record's over one with no bounded field,
    and so for every collection it holds. Others (lazy stacks, files, views, records
    checking their values) get the result through ``copy_``, which writes each its own
    way (into the members, the file's rows) and checks every bounded field before it
    writes anything."""
    if not isinstance(storage_of(out), TensorDict) or bounds_values(out):
        return False
    for value in out._entries().values():
        if isinstance(value, TensorCollection) and not value._is_leaf_node:
            if not _written_directly(value):
                return False
    return True


def _written_into(out: C, result: C, op: str, path: tuple[str, ...]) -> C:
    """``out`` with ``result`` written into it by ``out``'s own ``copy_``."""
    check_out(out, result.batch_size, op, path)
    out.copy_(result)
    return out


def _stack_lazy_stacks(stacks: list[C], dim: int, size: torch.Size, path: tuple[str, ...]) -> C:
    """The peer's stack of lazy stacks: when they have as many members (and leaves),
    a lazy stack along the first one's stack dim of the dense stacks of their members
    taken in turn (so heterogeneous stacks stack as long as their members line up);
    otherwise a lazy stack of the lazy stacks."""
    first: Any = stacks[0]
    lazy: list[Any] = stacks
    groups = list(zip(*(stack.tensordicts for stack in lazy)))
    lengths = {len(stack.tensordicts) for stack in lazy}
    leaves = {len(list(stack.keys(True, True))) for stack in stacks}
    ragged = any(len({part.batch_size for part in group}) != 1 for group in groups)
    if len(lengths) != 1 or len(leaves) != 1 or ragged:
        return lazily(stacks, dim, size)  # type: ignore[no-any-return]
    outer = first.stack_dim
    if dim <= outer:
        outer += 1
    else:
        dim -= 1
    parts = [_stack(list(group), dim, None, path) for group in groups]
    return lazily(parts, outer, size)  # type: ignore[no-any-return]


def _cat(collections: Sequence[C], dim: int, out: C | None, path: tuple[str, ...]) -> C:
    if collections and isinstance(collections[0], _NonTensorNode):
        return _join_nodes(collections, "cat", dim, path)
    if out is not None and not _written_directly(out):
        return _written_into(out, _cat(collections, dim, None, path), "cat", path)
    if out is None and _records_and_plain(plain := _stores_read(collections)):
        joined = _cat([storage_of(m) for m in plain], dim, None, path)
        head: Any = plain[0]
        return cast(C, type(head)._rebuild(joined) if is_record(head) else joined)
    members = _members(collections, "cat", path)
    if out is None and _records_over_lazy_stacks(members, set(map(type, members))):
        joined = _cat([storage_of(m) for m in members], dim, None, path)
        return cast("C", _rewrapped(members[0], joined))
    first = members[0]
    last = type(members[-1])
    if (type(first) is not last and not _related_records(type(first), last)) or first._is_lazy:
        return cast(C, _cat_lazily(members, dim, out, path))
    batch_size = first.batch_size
    if not batch_size:
        msg = f"cat{_at(path)}: collections with no batch dims cannot be concatenated; use stack"
        raise StackError(msg)
    dim = _batch.normalize_dim(dim, len(batch_size), op="cat")
    sizes = _batch_sizes(members)
    if _batch.all_equal(sizes, batch_size):
        total = batch_size[dim] * len(sizes)
    else:
        total = 0
        for position, size in enumerate(sizes):
            if not _same_except(size, batch_size, dim):
                msg = (
                    f"cat{_at(path)}: member {position} has batch size {format_shape(size)}, "
                    f"incompatible with member 0's {format_shape(batch_size)} outside dim {dim}"
                )
                raise StackError(msg)
            total += size[dim]
    new_size = list(batch_size)
    new_size[dim] = total
    size = check_out(out, torch.Size(new_size), "cat", path)
    values = _join(members, "cat", dim, out, path, size)
    result = _result(first, members, values, size, out)
    if out is None and first._dim_names is not None:
        result._assign_names(first._dim_names)  # the first member's, as the peer
    return result


def _cat_lazily(members: list[Any], dim: int, out: Any, path: tuple[str, ...]) -> Any:
    """``cat`` of collections among which lazy stacks: a lazy stack along the first one's
    stack dim. Along that dim the members are the inputs' pieces, in order; along another
    dim, piece ``i`` of every input is concatenated into member ``i``."""
    lazy = next(m for m in members if _is_lazy(m))
    ndim = lazy.batch_dims
    if not ndim:
        msg = f"cat{_at(path)}: collections with no batch dims cannot be concatenated; use stack"
        raise StackError(msg)
    dim = _batch.normalize_dim(dim, ndim, op="cat")
    d = lazy.stack_dim
    # Along the stack dim the pieces become members: their sizes may differ (ragged).
    # Along another dim, piece i of every input joins member i: the pieces' sizes may
    # differ outside ``dim`` where the members are ragged stacks themselves.
    unlike = [
        position
        for position, member in enumerate(members)
        if member.batch_dims != ndim
        or (dim != d and not _same_except(member.batch_size, lazy.batch_size, dim))
    ]
    uneven = [
        p
        for p in unlike
        if members[p].batch_dims != ndim or members[p].batch_size[d] != lazy.batch_size[d]
    ]
    if uneven:
        raise _unlike_in_cat(members, min(uneven), lazy, dim, path)
    if dim == d:
        parts = [piece for member in members for piece in member.unbind(d)]
    else:
        pieces = [member.unbind(d) for member in members]
        inner = dim if dim < d else dim - 1
        try:
            parts = [_cat(list(group), inner, None, path) for group in zip(*pieces)]
        except StackError:
            if not unlike:
                raise
            raise _unlike_in_cat(members, unlike[0], lazy, dim, path) from None
    result = type(lazy)._from_members(parts, d, stacked_size(parts, d))
    if out is not None:
        with writes_as_set_():
            out.update_(result)
        return out
    return result


def _unlike_in_cat(
    members: list[Any], position: int, lazy: Any, dim: int, path: tuple[str, ...]
) -> StackError:
    """The error for input ``position`` of a ``cat`` with lazy stacks, whose batch size
    does not fit the first lazy stack's outside ``dim``."""
    member = members[position]
    d = lazy.stack_dim
    msg = (
        f"cat{_at(path)}: member {position} has batch size "
        f"{format_shape(member.batch_size)}, incompatible with "
        f"{format_shape(lazy.batch_size)} outside dim {dim}"
    )
    if member.batch_dims == lazy.batch_dims and member.batch_size[d] != lazy.batch_size[d]:
        msg += (
            f": a cat along a dim other than the lazy stack's dim {d} requires all "
            "inputs to have the same number of stacked tensordicts along it"
        )
    return StackError(msg)


def _batch_sizes(members: list[Any]) -> list[torch.Size]:
    if tracing():  # torch.compile cannot trace operator.attrgetter
        return [member.batch_size for member in members]
    return list(map(type(members[0])._get_batch_size, members))


def _entry_maps(members: list[Any]) -> list[Mapping[str, Value]]:
    if tracing():
        return [member._entries() for member in members]
    return list(map(type(members[0])._get_entries, members))


def _at(path: tuple[str, ...]) -> str:
    """`` at ('a', 'b')`` for messages about a nested level, nothing at the top."""
    return f" at {path!r}" if path else ""


def _same_except(size: torch.Size, reference: torch.Size, dim: int) -> bool:
    """Whether two batch sizes agree outside ``dim``; a ragged lazy-stack dim (``-1``)
    agrees with any size (its members are joined member by member)."""
    if len(size) != len(reference):
        return False
    return all(
        a == b or a == -1 or b == -1 for i, (a, b) in enumerate(zip(size, reference)) if i != dim
    )


def check_out(out: Any, size: torch.Size, op: str, path: tuple[str, ...]) -> torch.Size:
    """Checks ``out=`` before anything is written into it."""
    if out is not None and out.batch_size != size:
        # the peer's words for a stack, which code matches
        words = "out.batch_size and stacked batch size must match: " if "stack" in op else ""
        msg = (
            f"{op}{_at(path)}: {words}out= has batch size {format_shape(out.batch_size)}, "
            f"expected {format_shape(size)}; nothing was written"
        )
        raise StackError(msg)
    return size


def _join(
    members: list[Any],
    op: str,
    dim: int,
    out: Any,
    path: tuple[str, ...],
    size: torch.Size,
    dense: bool = False,
) -> dict[str, Value]:
    """Joins each entry across members: tensors with torch, collections recursively
    (``dense``: nested lazy stacks stacked densely too)."""
    maps = _entry_maps(members)
    reference = maps[0]
    # Every member holding each of member 0's keys (a KeyError below otherwise) and as
    # many keys in all as member 0 times the count means identical key sets.
    if sum(map(len, maps)) != len(reference) * len(maps):
        _raise_key_mismatch(op, maps, path)
    join_tensors = torch.stack if op == "stack" else torch.cat
    values: dict[str, Value] = {}
    for key, entry in reference.items():
        try:
            parts = list(map(itemgetter(key), maps))
        except KeyError:
            _raise_key_mismatch(op, maps, path)
        target = None if out is None else out._entry(key)
        if isinstance(entry, _NonTensorNode):
            node = join_non_tensor(parts, op, dim, path + (key,))
            if out is not None:
                out._entries()[key] = node  # the live dict of a TensorDict or record
            values[key] = node
            continue
        if isinstance(entry, TensorCollection):
            if op == "stack":
                values[key] = _stack(parts, dim, target, path + (key,), dense)
            else:
                values[key] = _cat(parts, dim, target, path + (key,))
            continue
        if entry.__class__ is UnbatchedTensor:
            values[key] = join_unbatched(parts, path + (key,))._with_batch_size(size)
            continue
        try:
            if target is None:
                values[key] = join_tensors(parts, dim)
            else:
                values[key] = join_tensors(parts, dim, out=target)
        except (RuntimeError, TypeError):
            # torch does not concatenate jagged nested tensors along their batch dim
            joined = cat_rows(parts) if op == "cat" and dim == 0 and target is None else None
            if joined is None:
                _raise_entry_mismatch(op, path + (key,), parts, dim if op == "cat" else None)
                raise
            values[key] = joined
    return values


def join_unbatched(parts: list[Any], path: tuple[str, ...]) -> Any:
    """Unbatched tensors are shared by the whole batch: the first member's is kept (its
    batch size is set by the result); different data in other members is dropped with a
    warning, as in the peer (a copy of the same values, ``torch.cat([td, td.clone()])``,
    is not warned about: the peer's ``cat`` never warns, its ``stack`` warns for any
    other storage)."""
    first = parts[0]
    if any(_other_data(part, first) for part in parts):
        name = path[0] if len(path) == 1 else path
        warnings.warn(
            f"stacking UnbatchedTensors with different data storage under {name!r}: only the "
            "first member's is kept. UnbatchedTensor is shared by the whole batch; use a "
            "regular tensor for per-element data",
            UserWarning,
            stacklevel=4,
        )
    return first


def _other_data(part: torch.Tensor, first: torch.Tensor) -> bool:
    """Whether ``part`` holds other values than ``first`` (compared only when it is
    another storage)."""
    if part is first or part.data_ptr() == first.data_ptr():
        return False
    plain, kept = part.as_subclass(torch.Tensor), first.as_subclass(torch.Tensor)
    if (plain.shape, plain.dtype, plain.device) != (kept.shape, kept.dtype, kept.device):
        return True
    return not torch.equal(plain, kept)


def _join_nodes(parts: Sequence[C], op: str, dim: int, path: tuple[str, ...]) -> C:
    """Stacks or concatenates Python-value nodes given directly (not as entries)."""
    ndim = len(parts[0].batch_size)
    dim = _batch.normalize_dim(dim, ndim, op=op, inclusive=op == "stack")
    return cast(C, join_non_tensor(list(parts), op, dim, path))


def _members(collections: Sequence[C], op: str, path: tuple[str, ...]) -> list[C]:
    # A TensorDictParams joins as the TensorDict it wraps (with TensorDicts too).
    members = [cast(C, m._joined_as()) if isinstance(m, TensorDictBase) else m for m in collections]
    if not members:
        msg = f"{op} expects a non-empty sequence of collections"
        raise StackError(msg)
    members = _stores_read(members)
    if len(set(map(type, members))) != 1 and any(isinstance(m, LegacyLazyView) for m in members):
        # A legacy lazy view joined with other kinds joins as its data, a TensorDict, as
        # the peer joins its views (two views join as they are).
        members = [
            cast(C, m.to_tensordict()) if isinstance(m, LegacyLazyView) else m for m in members
        ]
    if len(set(map(type, members))) != 1 and not any(_is_lazy(m) for m in members):
        kind = type(members[0])
        for position, member in enumerate(members):
            if type(member) is not kind and not _related_records(kind, type(member)):
                msg = (
                    f"{op}{_at(path)}: member {position} is a {type(member).__name__} but "
                    f"member 0 is a {kind.__name__}; no implementation found for members of "
                    "different types: convert them to one type first"
                    + _how_to_convert(kind, type(member))
                )
                raise StackTypeError(msg)
    first: object = members[0]  # the annotation promises a collection; callers may not
    if not isinstance(first, TensorCollection):
        msg = f"{op}{_at(path)} expects tensor collections, got {type(first).__name__}"
        raise StackError(msg)
    return members


def _how_to_convert(first: type, other: type) -> str:
    """How to join a record with a TensorDict, for the error that refuses them."""
    pair = {first, other}
    records = [kind for kind in pair if is_record_class(kind)]
    if len(records) != 1 or not pair - {records[0]} <= {TensorDict}:
        return ""
    name = records[0].__name__
    return f" (the record: record.to_tensordict(); the TensorDict: {name}.from_tensordict(td))"


def _stores_read(members: Sequence[C]) -> list[C]:
    """``members``, where a file (or its rows) is joined with other kinds read into
    memory, as the peer's (the result is a TensorDict, or a record of member 0's class
    joined with a record: ``torch.cat([file, record])``)."""
    if len(set(map(type, members))) != 1 and any(_is_store(m) for m in members):
        return [cast(C, m.to_tensordict()) if _is_store(m) else m for m in members]
    return list(members)


def _is_store(member: object) -> bool:
    """Whether ``member`` is a collection over an outside store (a file or its rows)."""
    return isinstance(member, TensorCollection) and member._is_store


def _records_and_plain(members: Sequence[Any]) -> bool:
    """Records of one class mixed with TensorDicts: they join as their storages, into
    member 0's kind (a record of its class, checked by the class), as the peer's ``cat``
    joins a TensorDict and a record (its ``cat`` with the record first fails inside;
    records of two unrelated classes are refused, as the peer's dispatch refuses them)."""
    kinds = set(map(type, members))
    return (
        len(kinds) == 2 and TensorDict in kinds and all(map(is_record_class, kinds - {TensorDict}))
    )


def _related_records(first: type, other: type) -> bool:
    """Record classes one of which subclasses the other: they join, into the first
    member's class, as the peer's."""
    related = issubclass(other, first) or issubclass(first, other)
    return related and is_record_class(first) and is_record_class(other)


def _records_over_lazy_stacks(members: list[Any], kinds: set[type]) -> bool:
    """Records of one class, some stored in a lazy stack: joined through their storages
    (member by member, as the peer's), the result wrapped in their class."""
    return (
        len(kinds) == 1
        and is_record(members[0])
        and any(map(_is_lazy, set(map(type, storages_of(members)))))
    )


def _ragged_lazy(members: list[Any], kinds: set[type]) -> bool:
    """Whether a member is a ragged lazy stack (``-1`` in its batch size)."""
    return any(map(_is_lazy, kinds)) and any(
        _is_lazy(member) and -1 in member.batch_size for member in members
    )


def _rewrapped(record: Any, storage: Any) -> Any:
    """``storage`` (the members' storages joined) in the class of the record ``record``
    (a record: the facade, above this layer, gives it ``_wrap``)."""
    return record._wrap(storage)


def _is_lazy(member: object) -> bool:
    """Whether ``member`` (or the class ``member``) is a lazy stack."""
    kind = member if isinstance(member, type) else type(member)
    return getattr(kind, "_is_lazy", False) is True


def _raise_key_mismatch(
    op: str, maps: list[Mapping[str, Value]], path: tuple[str, ...]
) -> NoReturn:
    keys = maps[0].keys()
    for position, entries in enumerate(maps):
        if entries.keys() != keys:
            missing = sorted(set(keys) - set(entries.keys()))
            extra = sorted(set(entries.keys()) - set(keys))
            msg = (
                f"{op}{_at(path)}: member {position} has different keys from member 0 "
                f"(missing: {missing}, extra: {extra}); all tensordicts must have the same keys "
                f"({_LAZY_HINT})"
            )
            raise StackKeysError(msg)
    raise AssertionError("unreachable: the key sets were found to differ")


def _raise_entry_mismatch(
    op: str, key: tuple[str, ...], parts: list[Value], cat_dim: int | None
) -> None:
    """Raises a StackError naming the first member whose entry ``key`` cannot join."""
    name = key[0] if len(key) == 1 else key
    first = parts[0]
    if not isinstance(first, torch.Tensor):
        return
    for position, part in enumerate(parts):
        if not isinstance(part, torch.Tensor):
            msg = (
                f"{op}: entry {name!r} is a tensor in member 0 but a "
                f"{type(part).__name__} in member {position}"
            )
            raise StackError(msg)
        if not _joinable(part.shape, first.shape, cat_dim):
            msg = (
                f"{op}: entry {name!r} has shape {format_shape(part.shape)} in member "
                f"{position} but {format_shape(first.shape)} in member 0 ({_LAZY_HINT})"
            )
            raise StackError(msg)
        if part.device != first.device:
            msg = (
                f"{op}: entry {name!r} is on {part.device} in member {position} but on "
                f"{first.device} in member 0; move them to one device first"
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
        return out
    if tracing():
        size = _size_of_joined(values, size)
    # (a record's field may hide its device: shadow=True)
    device = storage_of(first).device
    if device is not None and any(storage_of(member).device != device for member in members):
        device = None
    return first._new_like(values, size, device)


def _size_of_joined(values: dict[str, Value], size: torch.Size) -> torch.Size:
    """Under torch.compile, the joined batch size read off a joined tensor. Worked out
    from the members' batch sizes it is made of symbols of their own (a collection's
    batch size is an input of the graph apart from its tensors' shapes), which
    inductor's code for the graph can leave undefined (``2*s48`` of ``torch.cat``)."""
    for value in values.values():
        if value.__class__ is torch.Tensor:
            return value.shape[: len(size)]
    return size


# --- the rest of the table: thin adapters onto the collection methods -------------------


@implements(torch.unbind)
def _unbind(collection: TensorCollection, dim: int = 0) -> tuple[Any, ...]:
    if not is_record(collection):
        return collection.unbind(dim)
    parts = storage_of(collection).unbind(dim)  # a record: a field may hide unbind (shadow)
    return tuple(collection._results(parts))  # type: ignore[attr-defined]


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
    """``make(entry, **kwargs)`` for every entry; ``device=`` also becomes the device.
    The result is locked when ``collection`` is, as in the peer, and its nested
    collections with it only (the peer makes new leaves: a nested collection of a
    locked member of a lazy stack is no more locked than the stack)."""
    out = _made_like(collection, make, kwargs)
    return out.lock_() if collection._lock_state() else out  # (a field may hide is_locked)


def _made_like(collection: Any, make: Any, kwargs: dict[str, Any]) -> Any:
    device = kwargs.get("device")
    target = collection.device if device is None else as_device(device)

    def entry(value: Any) -> Any:
        if isinstance(value, TensorCollection):
            return _made_like(value, make, kwargs)
        return make(value, **kwargs)

    return collection._map_values(entry, collection.batch_size, target)


@implements(torch.zeros_like)
def _zeros_like(collection: Any, **kwargs: Any) -> Any:
    return _like(collection, torch.zeros_like, kwargs)


@implements(torch.ones_like)
def _ones_like(collection: Any, **kwargs: Any) -> Any:
    return _like(collection, torch.ones_like, kwargs)


@implements(torch.empty_like)
def _empty_like(collection: Any, **kwargs: Any) -> Any:
    return _like(collection, torch.empty_like, kwargs)


@implements(torch.rand_like)
def _rand_like(collection: Any, **kwargs: Any) -> Any:
    return _like(collection, torch.rand_like, kwargs)


@implements(torch.randn_like)
def _randn_like(collection: Any, **kwargs: Any) -> Any:
    return _like(collection, torch.randn_like, kwargs)


@implements(torch.full_like)
def _full_like(collection: Any, fill_value: Any, **kwargs: Any) -> Any:
    return _like(collection, lambda v, **kw: torch.full_like(v, fill_value, **kw), kwargs)


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

ENGINE.cat = cat
ENGINE.stack = stack
