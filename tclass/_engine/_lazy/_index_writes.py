"""Writing into a lazy stack at an index: ``lazy[index] = value``.

The value is split as the index says (``_index.py`` works out which member each element
comes from and where, on stand-ins shaped like the batch) and each part is written into
its member, after checks that make the write all-or-nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

import torch

from tclass._base._tensordict_base import TensorDictBase
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._entry_ops import EntryWrites
from tclass._base.implemented._grad_writes import refuse_grad_leaf_writes
from tclass._core import _batch, _keys
from tclass._engine._lazy._index import (
    _ALL,
    _items,
    _member_numbers,
    _probe,
)
from tclass._engine._lazy._ops import LazyStackOps
from tclass._engine._lazy._ragged_split import (
    MEMBER,
    STACK,
    RaggedSplit,
    checked_member,
    split_ragged,
)
from tclass._engine._part_checks import check_parts
from tclass._engine._td_setitem import check_empty_source, check_index_fits, source_batch_error
from tclass._engine._tensor_write import (
    check_number_write,
    check_tensor_write,
    fits_every_dtype,
    indexes_every_way,
    kernel_refused,
    leaf_dtypes,
    probe_index_put,
    tensor_refused,
    tensor_targets,
)
from tclass.errors import BatchSizeError, InPlaceKernelError, InPlaceWriteError

if TYPE_CHECKING:
    from tclass._engine._lazy._stack import LazyStackedTensorDict

__all__ = ["member_writes", "refuse_empty_grad_write", "write_lazy"]

_Plan = list[tuple[int, Any, Any, Any]]  # (number, member, where, part): member[where] = part


def member_writes(stack: LazyStackedTensorDict, index: Any, value: Any) -> _Plan:
    """The writes ``stack[index] = value`` makes, as ``(number, member, where, part)``
    (``where`` ``...``: all of the member), nothing written nor checked: for a caller to check each
    member's part before the write (a record's specs). A tensor or a number is each
    member's part as it is, where the write lines a tensor up with each entry.

    Raises:
        Whatever the write raises for an index or value it cannot split.
    """
    plan: _Plan = []
    write_lazy(stack, index, value, plan=plan)
    return plan


def write_lazy(
    stack: LazyStackedTensorDict,
    index: Any,
    value: Any,
    check_only: bool = False,
    plan: _Plan | None = None,
) -> None:
    """``stack[index] = value``: each part of ``value`` written into its member (with
    ``check_only``, a dict or collection ``value`` only checked, nothing written: for a
    lazy stack nested in one being written; with ``plan``, the writes added to it, not
    made: see :func:`member_writes`)."""
    if plan is None:  # (a plan is the split alone: the write checks the value)
        value = _checked_source(stack, index, value)
    if type(index) is int and stack._stack_dim == 0:
        member = stack._index_int(index)
        _write_planned(value, [(index % len(stack._members), member, ..., value)], check_only, plan)
        return
    items = _items(stack, index) if index is not Ellipsis else (Ellipsis,)
    items = _members_backwards(stack, items)
    if (
        -1 not in stack._batch_size  # (a ragged stack writes each member: below)
        and any(item is None for item in items)
        and (_basic(items) or _one_tensor(items))
    ):
        items, value = _without_none(stack, items, value)
    if -1 in stack._batch_size:  # (...: all)
        _write_members(stack, () if index is Ellipsis else items, value, check_only, plan)
        return
    if _write_separable(stack, items, value, _selected_shape(stack, items), check_only, plan):
        return
    ids, positions = _probe(stack, items)
    selected = ids.shape
    if not ids.numel() and plan is None:
        _check_no_element_write(stack, items, value, index)
    writes: list[tuple[int, Any, Any, Any]] = []
    for number in sorted(set(ids.reshape(-1).tolist())):
        mask = ids == number
        member = stack._members[number]
        if not member.batch_size:
            # Every element of a member without batch dims is the member; the last wins.
            last = tuple(mask.nonzero()[-1].tolist())
            writes.append((number, member, ..., _part_of(value, last, selected)))
            continue
        where = torch.unravel_index(positions[mask], member.batch_size)
        writes.append((number, member, where, _part_of(value, mask, selected)))
    _write_planned(value, writes, check_only, plan)


def _checked_source(stack: LazyStackedTensorDict, index: Any, value: Any) -> Any:
    """``value`` checked before ``stack[index] = value`` splits it (a collection without
    entries: its batch size; a number: against every dtype), a tensor with dims as each
    entry's part (:func:`_per_entry`)."""
    if isinstance(value, TensorCollection) and value.is_empty():  # (empty nested ones)
        check_empty_source(stack, index, value)  # nothing to split: its batch size checked
    elif isinstance(value, TensorCollection) and -1 not in stack._batch_size:
        error = source_batch_error(stack, index, value)  # both batch sizes named, as for a
        if error is not None:  # TensorDict, before the members' parts are tried
            raise error
    elif isinstance(value, torch.Tensor) and value.ndim and -1 not in stack._batch_size:
        return _per_entry(stack, index, value)
    elif isinstance(value, (int, float, complex)) and not fits_every_dtype(value):
        _check_number(stack, index, value)
    return value


def _per_entry(stack: LazyStackedTensorDict, index: Any, value: torch.Tensor) -> Any:
    """``stack[index] = tensor`` as the peer writes it, into each entry as torch writes
    ``entry[index] = tensor`` (lined up with the last dims of the entry's selection): the
    tensor checked against every entry first, then spelled out over each one's selection
    (a view, no copy), which the members' parts are cut from."""
    shaped = _forwards(stack, index)  # (torch's stand-ins take no negative step)
    check_index_fits(stack, shaped)
    check_tensor_write(stack, shaped, value)
    parts: dict[Any, Any] = {}
    targets = tensor_targets(stack, shaped)
    numbers = None
    for key, shape, selected in targets:
        if selected is None:  # the members differ in a feature dim: each one checked
            numbers = _touched(stack, index) if numbers is None else numbers
            parts[key] = _uneven_part(stack, index, value, key, shape, numbers)
        else:
            parts[key] = _lined_up(value, selected)
    return EntryWrites(parts)


def _forwards(stack: LazyStackedTensorDict, index: Any) -> Any:
    """``index`` with each slice of negative step (``stack[::-1, 1] = t``, which the
    peer writes) as a forward slice of as many elements: the same selected shape, for
    the checks, which index stand-in tensors."""
    items = index if type(index) is tuple else (index,)
    if not any(type(i) is slice and i.step is not None and i.step < 0 for i in items):
        return index
    return _forward_items(stack, _items(stack, index))


def _forward_items(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> tuple[Any, ...]:
    """``items`` with each slice of negative step as a forward slice of as many elements
    (a nested lazy stack member takes it along its own stack dim)."""
    batch = stack._batch_size
    forwards = list(items)
    consumed = 0
    for position, item in enumerate(items):
        if type(item) is slice and item.step is not None and item.step < 0:
            forwards[position] = slice(0, len(range(batch[consumed])[item]))
        consumed += item is not Ellipsis and _batch.index_dims_consumed(item)
    return tuple(forwards)


def _lined_up(value: torch.Tensor, target: tuple[int, ...]) -> torch.Tensor:
    """``value`` spelled out over ``target`` (a view) as torch writes it into a
    selection of that shape: leading dims of size 1 dropped (``[1, 2, 2]`` into a
    ``[2, 2]`` selection), the rest lined up with the last dims (a ``-1`` in ``target``
    keeps the size ``value`` has there)."""
    while value.ndim > len(target) and value.shape[0] == 1:
        value = value[0]
    value = value.reshape((1,) * (len(target) - value.ndim) + tuple(value.shape))
    return value.expand(target)


def _uneven_part(
    stack: LazyStackedTensorDict,
    index: Any,
    value: torch.Tensor,
    key: Any,
    shape: torch.Size,
    numbers: list[int],
) -> torch.Tensor:
    """The part of ``value`` for an entry whose members differ in a feature dim (a
    ``-1`` in ``shape``), as the peer writes it: torch's rule for each member reached
    (``numbers``) as if its entry were stacked alone (``value`` lined up with the last
    dims of ``(*selected batch, *its feature dims)``), each checked before any is
    written; spelled out over the selected batch dims (a view), the uneven dims kept
    as ``value`` has them, for each member's write to broadcast.

    Raises:
        BatchSizeError: (a ``RuntimeError``) naming the key and the first member that
            refuses ``value``.
    """
    nb = len(stack._batch_size)
    batch = _batch.indexed_shape(stack._batch_size, _forwards(stack, index))
    for where, feature in _reached_features(stack, index, numbers, key):
        if not _batch.broadcasts_to(value.shape, (*batch, *feature)):
            full = torch.Size((*stack._batch_size, *feature))
            selected = torch.Size((*batch, *feature))
            error = tensor_refused(key, full, index, value.shape, selected, nb)
            raise type(error)(f"{error} ({where} of the lazy stack)") from None
    return _lined_up(value, (*batch, *shape[nb:]))


def _reached_features(
    stack: LazyStackedTensorDict, index: Any, numbers: list[int], key: Any
) -> Iterator[tuple[str, torch.Size]]:
    """Where and the feature dims (past the batch dims) of the entry ``key`` in each
    member ``stack[index]`` reaches (``numbers``), through a nested lazy stack whose
    members differ there (a ``-1``): each of its members the selected elements reach,
    for their write to be checked before any is written."""
    reach: tuple[torch.Tensor, torch.Tensor] | None = None
    for number in numbers:
        member = stack._members[number]
        feature = member.get_item_shape(key)[len(member.batch_size) :]
        if -1 not in feature:
            yield f"member {number}", feature
            continue
        if not isinstance(member, LazyStackOps) or not member.batch_size:
            continue  # (not a lazy stack: nothing to check ahead)
        if reach is None:
            try:
                reach = _probe(stack, _members_backwards(stack, _items(stack, index)))
            except (IndexError, TypeError, ValueError, RuntimeError):
                return  # an index the write itself reports
        ids, positions = reach
        where = torch.unravel_index(positions[ids == number], member.batch_size)
        nested = cast("LazyStackedTensorDict", member)
        for inner, found in _reached_features(nested, where, _touched(nested, where), key):
            yield f"{inner} of member {number}", found


def _touched(stack: LazyStackedTensorDict, index: Any) -> list[int]:
    """The numbers of the members that ``stack[index]`` reaches (all of them when the
    index does not say: the write then reports it)."""
    try:
        items = _items(stack, index) if index is not Ellipsis else ()
        if -1 in stack._batch_size:
            return sorted({number for number, _, _ in split_ragged(stack, items).parts})
        shape = [1] * len(stack._batch_size)  # the member number of every element,
        shape[stack._stack_dim] = len(stack._members)  # as torch indexes a stand-in
        ids = torch.arange(len(stack._members)).reshape(shape).expand(stack._batch_size)
        return sorted(set(ids[items].reshape(-1).tolist()))
    except (IndexError, TypeError, ValueError, RuntimeError):
        return list(range(len(stack._members)))


def _check_number(stack: LazyStackedTensorDict, index: Any, value: complex) -> None:
    """``stack[index] = number``: every tensor of the members the index reaches checked
    to take the number (torch refuses ``300`` in an ``int8`` tensor), before any member
    is written (the members may hold one key in different dtypes)."""
    leaves = [leaf_dtypes(member) for member in stack._members]
    if not leaves:
        return
    if all(found == leaves[0] for found in leaves):
        check_number_write(value, index, leaves[0])
        return
    numbers = _touched(stack, index)
    check_number_write(value, index, [leaf for n in numbers for leaf in leaves[n]])


def _check_no_element_write(
    stack: LazyStackedTensorDict, items: tuple[Any, ...], value: Any, index: Any
) -> None:
    """A write at an index that selects no element writes nothing, but where a tensor
    index falls on the members' dims (and the stack dim's item picks members), each
    member is written at a tensor index, and torch's ``index_put`` refuses a tensor of
    another dtype even for no element (as the peer raises, and a TensorDict in both);
    and a collection value is checked against each member it reaches (see
    :func:`_check_no_element_shapes`)."""
    numbers, reaches = _no_element_picks(stack, items)
    if numbers is None:  # a tensor over the stack dim and others: a gather
        _refuse_gathered(stack, items, value)
        return
    if isinstance(value, TensorDictBase):
        _check_no_element_shapes(stack, numbers, value, index)
    refuse_grad_members(stack, numbers, value, items)
    if reaches and numbers:
        _check_no_element_dtypes(stack, numbers, items, value, index)


def _check_no_element_dtypes(
    stack: LazyStackedTensorDict, numbers: list[int], items: tuple[Any, ...], value: Any, index: Any
) -> None:
    """The dtype checks of :func:`_check_no_element_write`, for the members ``numbers``
    that a tensor item on their dims reaches: a member that is itself a lazy stack takes
    the rest of the index (an empty tensor on its own stack dim picks none of its
    members, which then write nothing: ``x[[], 2] = v`` of a stack of lazy stacks along
    dim 0, as the peer's nested setitem)."""
    member = stack._members[numbers[0]]
    inner = _member_items(stack, items)
    if inner is not None and isinstance(member, LazyStackOps):
        nested = cast("LazyStackedTensorDict", member)
        member_items = _members_backwards(nested, inner)
        picked, reaches = _no_element_picks(nested, member_items)
        if picked is not None:  # (a gather over its stack dim: checked whole, below)
            if picked and reaches:
                _check_no_element_dtypes(nested, picked, member_items, value, index)
            return
    if isinstance(value, (int, float, complex)):  # torch's kernel for a number, as below
        for key, entry in member.items(True, True):
            if isinstance(entry, torch.Tensor) and not indexes_every_way(entry.dtype):
                raise _no_kernel(key, entry, index)
    for path, tensor in _tensor_parts(value, ()):
        entries = list(member._tensor_leaves()) if not path else list(_entries_at(member, path))
        for entry in entries:
            if isinstance(entry, torch.Tensor) and entry.dtype == tensor.dtype:
                if not indexes_every_way(entry.dtype):  # (uint32): torch has no index_put
                    raise _no_kernel(path, entry, index)
            elif isinstance(entry, torch.Tensor):
                where = f"entry {path if len(path) > 1 else path[0]!r}" if path else "an entry"
                msg = (
                    f"cannot write a {tensor.dtype} tensor into {where} of dtype "
                    f"{entry.dtype} at a tensor index (even one that selects no element): "
                    f"torch's index_put requires the same dtype; cast the value with "
                    f".to({entry.dtype})"
                )
                raise InPlaceWriteError(msg)


def _no_kernel(key: Any, entry: torch.Tensor, index: Any) -> InPlaceKernelError:
    """The refusal of a write at a tensor index into ``entry``, whose dtype torch has no
    ``index_put`` for (``uint32``), even where the index selects no element: torch's,
    the peer's and a TensorDict's (with torch's own words, from a one-element try)."""
    try:
        probe_index_put(torch.Size([1]), entry.dtype, torch.tensor([0]), 0)
    except NotImplementedError as missing:
        return kernel_refused(key or "an entry", entry.dtype, entry.shape, index, missing)
    absent = NotImplementedError(f'"index_put" not implemented for {entry.dtype}')
    return kernel_refused(key or "an entry", entry.dtype, entry.shape, index, absent)


def _no_element_picks(
    stack: LazyStackedTensorDict, items: tuple[Any, ...]
) -> tuple[list[int] | None, bool]:
    """The members an index that selects no element still writes into, as the peer
    splits it (None for a tensor over the stack dim and others, which it does not
    split), and whether a tensor item falls on the members' own dims. A tensor on the
    stack dim beside one on the members' dims is one index with it (torch broadcasts
    them together: ``[mask, []]`` selects no pair), split as a gather: None too."""
    d, consumed, reaches = stack._stack_dim, 0, False
    picked: Any = _ALL
    for item in items:
        dims = 0 if item is None else _batch.index_dims_consumed(item)
        if consumed == d and dims == 1:
            picked = item
        elif isinstance(item, torch.Tensor) and consumed <= d < consumed + dims:
            return None, reaches
        elif isinstance(item, torch.Tensor):
            reaches = True
        consumed += dims
    if reaches and isinstance(picked, torch.Tensor):
        return None, reaches
    return (_members_picked(stack, picked) if stack._members else []), reaches


def refuse_empty_grad_write(
    stack: LazyStackedTensorDict, index: Any, value: Any, prefix: tuple[int, ...] = ()
) -> None:
    """``stack[index] = value`` where ``index`` selects no element: refused as
    :func:`refuse_grad_members` says, for the members the index picks (``prefix``: the
    member numbers above ``stack``)."""
    items = _items(stack, index) if index is not Ellipsis else (Ellipsis,)
    items = _members_backwards(stack, items)
    numbers, _ = _no_element_picks(stack, items)
    if numbers is None:
        _refuse_gathered(stack, items, value, prefix)
    elif numbers:
        refuse_grad_members(stack, numbers, value, items, prefix)


def _refuse_gathered(
    stack: LazyStackedTensorDict, items: tuple[Any, ...], value: Any, prefix: tuple[int, ...] = ()
) -> None:
    """A write at tensors over the stack dim and other dims that selects no element (a
    dim of size 0 past them): the peer still writes each member they pick at its
    positions (``True`` at the stack dim), which autograd refuses as for
    :func:`refuse_grad_members`; a member that is a lazy stack is checked at its
    positions alike."""
    for number, where, _ in split_ragged(stack, items).parts:
        member = stack._members[number]
        if where is not None and isinstance(member, LazyStackOps):
            nested = cast("LazyStackedTensorDict", member)
            refuse_empty_grad_write(nested, where, value, (*prefix, number))
        else:
            refuse_grad_members(stack, [number], value, prefix=prefix)


def refuse_grad_members(
    stack: LazyStackedTensorDict,
    numbers: list[int],
    value: Any,
    items: tuple[Any, ...] | None = None,
    prefix: tuple[int, ...] = (),
) -> None:
    """A write that selects no element of the members ``numbers`` still writes into
    each one in the peer, and autograd refuses that in-place write (of no element too)
    into a leaf tensor that requires grad, or a view of one, under grad mode: refused
    before anything is written, naming the entry and the member. ``value``'s keys say
    the entries written (a tensor without keys, a number: every entry). A member that is itself a
    lazy stack takes the rest of the index ``items`` (see :func:`_member_items`) and
    writes only into the members that picks, as the peer's nested setitem does (an
    empty slice or tensor on its stack dim picks none: nothing refused); ``prefix`` is
    the member numbers above ``stack``, for the message.

    Raises:
        InPlaceWriteError: (a ``RuntimeError``, as torch's in the peer).
    """
    paths = {path for path, _ in _tensor_parts(value, ())}
    if type(value) in (int, float, bool, complex):
        paths = {()}  # a number written into every entry, as a tensor without keys
    inner = None if items is None else _member_items(stack, items)
    for number in numbers:
        member = stack._members[number]
        if inner is not None and isinstance(member, LazyStackOps):
            nested = cast("LazyStackedTensorDict", member)
            member_items = _members_backwards(nested, inner)
            picked, _ = _no_element_picks(nested, member_items)
            if picked is None:  # a gather over its stack dim and others
                _refuse_gathered(nested, member_items, value, (*prefix, number))
            else:
                refuse_grad_members(nested, picked, value, member_items, (*prefix, number))
            continue
        written = paths
        if () in paths:
            written = {_keys.key_path(key) for key in member.keys(True, True)}
        refuse_grad_leaf_writes(
            member, written, action="a write at an index", member=(*prefix, number)
        )


def _member_items(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The index each member picked by ``items`` takes, as the peer passes it on: the
    items without the one on the stack dim (all of them where none reaches it); None
    where the peer does not pass the rest on as it is (a tensor on the stack dim beside
    other tensors, a slice there between tensors, a mask over the stack dim and others),
    for the caller to treat the member as written whole."""
    d, consumed = stack._stack_dim, 0
    tensors = [
        p for p, item in enumerate(items) if isinstance(item, torch.Tensor) or type(item) is bool
    ]
    for position, item in enumerate(items):
        dims = 0 if item is None else _batch.index_dims_consumed(item)
        if consumed == d and dims == 1:
            if isinstance(item, torch.Tensor) and tensors != [position]:
                return None
            if type(item) is slice and tensors and tensors[0] < position < tensors[-1]:
                return None
            return (*items[:position], *items[position + 1 :])
        if consumed <= d < consumed + dims:
            return None
        consumed += dims
    return items


def _check_no_element_shapes(
    stack: LazyStackedTensorDict, numbers: list[int], value: TensorDictBase, index: Any
) -> None:
    """Torch's rule for a write that selects no element, as the peer applies it to each
    member reached (``numbers``): the value must still broadcast to the selection, so
    each entry's dims past the value's batch dims must broadcast to those of the
    member's entry (a ragged stack's members may differ there: ``x[:0] = x[0, 0]`` of a
    member whose entry is ``[3]`` where another's is ``[2]`` raises, as
    ``torch.zeros(0, 2)[:] = torch.ones(3)`` does); what broadcasts stays accepted.

    Raises:
        BatchSizeError: (a ``RuntimeError``) naming the key and the member that refuses.
    """
    nv = len(value.batch_size)
    keys = list(value.keys(include_nested=True, leaves_only=True))
    for number in numbers:
        member = stack._members[number]
        nm = len(member.batch_size)
        for key in keys:
            try:
                own = member.get_item_shape(key)[nm:]
            except KeyError:
                continue
            given = value.get_item_shape(key)[nv:]
            if -1 in own or -1 in given or _broadcasts(given, own):
                continue
            msg = (
                f"shape mismatch: cannot write the value's entry {key!r} (dims {list(given)} "
                f"past its batch dims) at index {index!r} of this lazy stack: member "
                f"{number}'s entry has dims {list(own)} there, and torch requires the value "
                "to broadcast to the selection even when it selects no element; nothing "
                "was written: write a value whose entries fit every member reached"
            )
            raise BatchSizeError(msg)


def _entries_at(member: Any, path: tuple[str, ...]) -> Any:
    """The entry at ``path`` of ``member``; of a lazy one, its members' (a ragged entry
    has no dense value to read: fuzz program 10,950,708 of index,combine --length 6)."""
    if isinstance(member, TensorCollection) and member._is_lazy:
        for inner in cast("LazyStackedTensorDict", member)._members:
            yield from _entries_at(inner, path)
    else:
        yield member.get(path, None)


def _tensor_parts(value: Any, prefix: tuple[str, ...]) -> Any:
    """The tensors of a value written into a collection, with their keys (``()``: a
    tensor written into every entry); a lazy stack's are its members' (a ragged one has
    no dense entry to read)."""
    if isinstance(value, torch.Tensor):
        yield prefix, value
    elif isinstance(value, TensorCollection) and value._is_lazy:
        for member in cast("LazyStackedTensorDict", value)._members:
            yield from _tensor_parts(member, prefix)
    elif isinstance(value, (TensorCollection, Mapping)):
        for key, sub in value.items():
            yield from _tensor_parts(sub, (*prefix, key))


def _basic(items: tuple[Any, ...]) -> bool:
    return all(item is None or type(item) in (int, slice) for item in items)


def _one_tensor(items: tuple[Any, ...]) -> bool:
    """Whether ``items`` (with ``None`` items) holds one tensor of one dim, with slices
    and ``None`` only: torch keeps the tensor's dim where it stands (no other advanced
    index to move it in front), so the selection is the one without the ``None`` items
    plus their unit dims."""
    tensors = [item for item in items if isinstance(item, torch.Tensor)]
    return (
        len(tensors) == 1
        and tensors[0].ndim == 1
        and all(item is None or type(item) is slice or item is tensors[0] for item in items)
    )


def _without_none(
    stack: LazyStackedTensorDict, items: tuple[Any, ...], value: Any
) -> tuple[tuple[Any, ...], Any]:
    """A basic index with ``None`` items (``stack[None, 0] = v``) as the same index
    without them, and ``value`` without the unit dims they add to the selection: then
    written member by member as a basic index, where a value of another dtype is cast
    (as torch and the peer write it; an advanced index would refuse it). An index of one
    1-d tensor besides (``stack[[2, 0], None] = v``, see :func:`_one_tensor`) keeps its
    dim in place: written as the peer writes it without the ``None`` (into whole members
    where the tensor picks them, so a dtype torch cannot index, such as ``uint64``,
    is written, as in the peer)."""
    selected = _selected_shape(stack, items)
    at: list[Any] = []
    for item in items:
        if item is None:
            at.append(0)
        elif type(item) is slice or isinstance(item, torch.Tensor):
            at.append(_ALL)
    kept = tuple(item for item in items if item is not None)
    return kept, _part_of(value, tuple(at), selected)


def _write_separable(
    stack: LazyStackedTensorDict,
    items: tuple[Any, ...],
    value: Any,
    selected: torch.Size,
    check_only: bool = False,
    plan: _Plan | None = None,
) -> bool:
    """Writes ``value`` member by member, as the peer, when the index splits in two (see
    :func:`_member_dim`): the item at the stack dim picks members (an int, a slice or a
    1-d tensor) and the rest indexes each member as a collection is indexed (with ints
    and slices, a basic index: values of another dtype are cast, an int reaching no
    batch dims takes a value without them). Each member gets its part of ``value`` along
    the selection's member dim (the last write to a member picked twice wins, as in
    torch). Returns False, writing nothing, for any other index."""
    ndim = len(stack._batch_size)
    if items == (Ellipsis,):
        items = ()  # every element (a write into a whole nested lazy stack)
    if len(items) > ndim or any(item is None for item in items) or not selected.numel():
        return False
    items = items + (_ALL,) * (ndim - len(items))
    d = stack._stack_dim
    along = _member_dim(items, d)
    if along is None:
        return False
    picked, rest = items[d], items[:d] + items[d + 1 :]
    numbers = _members_picked(stack, picked)
    if type(picked) is not int and not _spans(value, selected):
        return False  # a dict read at the selection's batch size refuses it (below)
    whole = all(type(item) is slice and item == _ALL for item in rest)
    writes: list[tuple[int, Any, Any, Any]] = []
    for j, number in enumerate(numbers):
        at = (_ALL,) * along + (j,)
        part = value if type(picked) is int else _part_of(value, at, selected)
        member = stack._members[number]
        writes.append((number, member, ... if whole or not member.batch_size else rest, part))
    _write_planned(value, writes, check_only, plan)
    return True


def _selected_shape(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> torch.Size:
    """The batch size ``items`` selects; a slice of negative step counted as its length."""
    return _probe(stack, _forward_items(stack, items))[0].shape


def _member_dim(items: tuple[Any, ...], d: int) -> int | None:
    """Where the dim running over the members lands in the selection of ``items`` (one
    per batch dim; any value when an int picks one member), or None when the index does
    not split into the stack dim's item and the members' index: more than one tensor,
    one of more than one dim, or a tensor and ints split apart by a slice (torch then
    moves the tensor's dim in front, which the members' index would not)."""
    tensors = [i for i, item in enumerate(items) if isinstance(item, torch.Tensor)]
    if len(tensors) > 1 or any(items[i].ndim != 1 for i in tensors):
        return None
    if not all(type(item) in (int, slice) for i, item in enumerate(items) if i not in tensors):
        return None
    advanced = [i for i, item in enumerate(items) if type(item) is not slice]
    contiguous = not advanced or advanced[-1] - advanced[0] + 1 == len(advanced)
    if tensors and not contiguous:
        if tensors != [d]:
            return None
        return 0  # torch puts the picked members' dim first
    return d - sum(type(item) is int for item in items[:d])


def _spans(value: Any, selected: torch.Size) -> bool:
    """Whether every tensor of a plain dict ``value`` (nested dicts too) has the
    selection's batch dims, as a dense collection reads the dict at the indexed batch
    size (a member's part, which lacks the member dim, would take a tensor without it)."""
    if isinstance(value, TensorCollection) or not isinstance(value, Mapping):
        return True
    if type(value) is EntryWrites:
        return True
    n = len(selected)
    return all(
        _spans(sub, selected)
        if isinstance(sub, Mapping)
        else not isinstance(sub, torch.Tensor) or sub.shape[:n] == selected
        for sub in value.values()
    )


def _members_backwards(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> tuple[Any, ...]:
    """``items`` with a slice of negative step on the stack dim (``stack[::-1] = v``, which
    picks the members backwards, as a list slice) spelled as the member numbers it picks."""
    consumed = 0
    for position, item in enumerate(items):
        if item is None:
            continue
        if consumed == stack._stack_dim:
            if type(item) is slice and item.step is not None and item.step < 0:
                numbers = list(range(len(stack._members)))[item]
                return (
                    *items[:position],
                    torch.tensor(numbers, dtype=torch.long),
                    *items[position + 1 :],
                )
            break
        consumed += 1
    return items


def _write_members(
    stack: LazyStackedTensorDict,
    items: tuple[Any, ...],
    value: Any,
    check_only: bool = False,
    plan: _Plan | None = None,
) -> None:
    """A write into a ragged stack (a ``-1`` size), as the peer's: the index read member
    by member (``_ragged_split.py``), each member it reaches written at its part. A
    tensor goes whole to each member, as torch writes it there (each checked before any
    is written); a collection is parted along the selection's dims that run over the
    members where it spans them (:func:`_ragged_parts`), else written whole into each."""
    split = split_ragged(stack, items)
    parts = _ragged_parts(split, value, stack._members)
    writes = [
        (number, stack._members[number], ... if where is None else where, part)
        for (number, where, _), part in zip(split.parts, parts, strict=True)
    ]
    if isinstance(value, torch.Tensor) and plan is None:
        for _, member, where, _ in writes:
            check_tensor_write(member, where, value)
    _write_planned(value, writes, check_only, plan)


def _missing_dims(split: RaggedSplit, members: list[Any], size: torch.Size) -> int:
    """How many leading dims of the selection a collection of batch size ``size`` lacks
    (it broadcasts over them, as the peer expands it to the selection's batch size), for
    a ``STACK`` split: the selection has a member's part's dims and the stack dim."""
    number, where, _ = split.parts[0]
    batch = members[number].batch_size
    if where is not None:
        try:  # (a ragged member's -1 read as a size of 1: only the dims count)
            batch = _batch.indexed_shape(torch.Size(max(n, 1) for n in batch), where)
        except (IndexError, RuntimeError):
            return 0  # an index past a ragged member's dim: lined up from the start
    return max(len(batch) + (not split.keep) - len(size), 0)


def _ragged_parts(split: RaggedSplit, value: Any, members: list[Any]) -> list[Any]:
    """Each member's part of ``value`` for ``split``: a collection with one part per
    member along the stack dim's dim (a slice there; with its dim of size 1 kept where
    the member's index keeps one; its batch lined up with the selection's last dims),
    or with the block's shape where a tensor picks the members (each member's
    positions; without other tensors, its last one, as torch writes the last); anything
    else whole."""
    count = len(split.parts)
    if not isinstance(value, TensorCollection) or split.kind == MEMBER or not count:
        return [value] * count
    size = value.batch_size
    if split.kind == STACK:
        dim = split.dim - _missing_dims(split, members, size)
        if not 0 <= dim < len(size) or size[dim] != count:
            return [value] * count
        pieces: list[Any] = list(value.unbind(dim))
        return [piece.unsqueeze(dim) for piece in pieces] if split.keep else pieces
    if tuple(size[split.dim : split.dim + len(split.shape)]) != tuple(split.shape):
        return [value] * count
    out = []
    for _, _, flat in split.parts:
        taken = torch.tensor(flat) if split.block else torch.tensor(flat[-1])
        where = torch.unravel_index(taken, split.shape)
        out.append(value[(_ALL,) * split.dim + tuple(where)])
    return out


def _members_picked(stack: LazyStackedTensorDict, picked: Any) -> list[int]:
    """The numbers (from 0) of the members an index along the stack dim picks: an int,
    a slice or a 1-d tensor (numbers or a mask)."""
    count = len(stack._members)
    if type(picked) is int:
        return [checked_member(stack, picked)]
    if type(picked) is slice:
        return list(range(count))[picked]
    return [number % count for number in _member_numbers(stack, picked)]


def _broadcasts(shape: torch.Size, target: torch.Size) -> bool:
    """Whether ``shape`` broadcasts to ``target`` (as torch lines up trailing dims)."""
    if len(shape) > len(target):
        return False
    return all(size in (1, wanted) for size, wanted in zip(reversed(shape), reversed(target)))


def _part_of(value: Any, index: Any, selected: torch.Size) -> Any:
    """The part of ``value`` for the selected elements at ``index`` (a mask or a tuple of
    ints over ``selected``): values with one element per selected element are indexed,
    mappings entry by entry, anything else broadcasts as it is."""
    n = len(selected)
    if n and isinstance(value, TensorCollection):
        if value.batch_size[:n] != selected and _broadcasts(value.batch_size, selected):
            value = cast(Any, value).expand(selected)  # as torch broadcasts it to the selection
        return value[index] if value.batch_size[:n] == selected else value
    if isinstance(value, TensorCollection):
        return value  # no selected dims (a lazy stack too): written whole, broadcast
    if isinstance(value, Mapping):
        parts = {key: _part_of(sub, index, selected) for key, sub in value.items()}
        return EntryWrites(parts) if type(value) is EntryWrites else parts
    if n == 0:
        return value
    if not isinstance(value, torch.Tensor) and hasattr(value, "__array__"):
        value = torch.as_tensor(value)  # a numpy array is split as the tensor it becomes
    if isinstance(value, torch.Tensor) and value.ndim >= n and value.shape[:n] == selected:
        return value[index]
    return value


def _write_planned(
    value: Any,
    writes: list[tuple[int, Any, Any, Any]],
    check_only: bool = False,
    plan: _Plan | None = None,
) -> None:
    """Writes each ``(number, member, where, part)`` (``where`` ``...``: all of the member),
    a dict or collection ``value``'s parts all checked first where more than one member
    is written (nothing written when one member refuses its part; a tensor or a number
    is checked before it is split), a nested lazy stack's members too; ``check_only``:
    the checks alone; ``plan``: neither, the writes added to it."""
    if plan is not None:
        plan.extend(writes)
        return
    if isinstance(value, (Mapping, TensorCollection)) and (check_only or len(writes) > 1):
        check_parts(writes)
        for _, member, where, part in writes:
            if isinstance(member, LazyStackOps):
                write_lazy(cast("LazyStackedTensorDict", member), where, part, check_only=True)
    if check_only:
        return
    for _, member, where, part in writes:
        if where is Ellipsis:
            _write_whole(member, part)
        else:
            member[where] = part


def _write_whole(member: Any, value: Any) -> None:
    """Writes ``value`` over all of ``member``: a collection of the member's batch size
    updates it in place, as the peer's (a Python value stays one value, where an indexed
    write would store it per element); anything else is written as ``member[...]``."""
    if isinstance(value, TensorCollection) and value.batch_size == member.batch_size:
        member.update(value, inplace=True)
        return
    member[...] = value
