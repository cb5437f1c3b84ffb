"""Indexing a lazy stack, and writing into it at an index.

Basic indices (ints, slices, ``None``, ``...``) are split in two: the item at the stack
dim picks members, the rest indexes each picked member, so results share the members'
storage as a dense collection's views do.

Any other index (tensors, masks, lists) is worked out on two stand-ins shaped like the
batch: the member number of every element and its position inside its member. torch
indexes the stand-ins, which says for every element of the result which member it comes
from and where; the result is then built from the members (a member itself where it is
taken whole, member pieces otherwise, lazily stacked along the dim where the member
changes). Writes (``_index_writes.py``) use the same stand-ins to route each part of the
value to its member.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from tclass._base._provided import ENGINE
from tclass._base._tensordict_base import TensorDictBase
from tclass._base.implemented._collection import TensorCollection
from tclass._core import _batch, _names
from tclass._core._records import is_record, storage_of
from tclass._engine._lazy._parts import check_regular, lazily, remove_dim, stacked_size
from tclass._engine._lazy._ragged_split import MEMBER, STACK, split_ragged
from tclass._engine._lazy._ragged_split import checked_member as _checked
from tclass.errors import ArgumentValueError, DimError

if TYPE_CHECKING:
    from tclass._engine._lazy._stack import LazyStackedTensorDict

__all__ = ["empty_selection", "index_lazy"]


def _items(stack: LazyStackedTensorDict, index: Any) -> tuple[Any, ...]:
    items = index if type(index) is tuple else (index,)
    items = tuple(_as_item(item) for item in items)
    return _batch.normalize_index(items, len(stack._batch_size), keys=True)


def _as_item(item: Any) -> Any:
    """One index item in the forms the lazy indexing reads: a list, range or array as a
    tensor, a numpy integer (``np.int64(3)``, as a replay buffer's sampler gives) as an
    int, as torch and a TensorDict read it."""
    if isinstance(item, (list, range, np.ndarray)):
        return _as_index(item)
    if isinstance(item, np.integer):
        return int(item)
    return item


def _as_index(item: list[Any] | range | np.ndarray[Any, Any]) -> torch.Tensor:
    """A list, range or array index as a tensor; an empty one selects nothing (as in
    torch)."""
    _batch.refuse_key_list(item)
    tensor = torch.as_tensor(item)
    return tensor.long() if tensor.numel() == 0 else tensor


_ALL = slice(None)
# what each dim of a part is: -1 a new dim, -2 a dim the tensors give, else the batch
# dim a slice keeps (see _layout); None where unknown
Layout = tuple[int, ...] | None


def as_records(out: LazyStackedTensorDict) -> Any:
    """``out`` as a record of its members' class where it is a plain lazy stack of
    records of one tensorclass (as the constructor builds, where ``lazy_stack`` gives a
    record): the peer's indexing and ``unbind`` re-stack such members into a record, so
    ``LazyStackedTensorDict(rec, rec2, stack_dim=1)[0].x`` reads the field. Any
    other stack is returned as it is."""
    members = out._members
    if not members or not is_record(members[0]):
        return out
    cls = type(members[0])
    if any(type(member) is not cls for member in members):
        return out
    record = cls._stack_lazily(members, out._stack_dim, out._batch_size)
    storage_of(record)._stack_dim_name = out._stack_dim_name
    return record


def index_lazy(stack: LazyStackedTensorDict, index: Any) -> Any:
    """``stack[index]`` for any index other than a key, an int or a slice."""
    if index is Ellipsis:
        return stack._restacked(list(stack._members))
    items = _items(stack, index)
    if all(map(_batch.is_basic_item, items)):
        return _index_basic(stack, items)
    at = _stack_item_position(stack, items)
    if at < len(items) and _batch.is_first_class_dim(items[at]):
        msg = (
            "Cannot index the stack dim of a lazy stack with a first-class dim "
            "(functorch.dim): its members are separate tensors; index "
            "stack.contiguous() instead"
        )
        raise DimError(msg)
    if -1 in stack._batch_size:
        return _named(stack, items, _index_ragged(stack, items), owned=False)
    if at < len(items) and _batch.selects_first(items[at]):  # as torch (an int or a 0-d integer
        # tensor selects first) and the peer: the member, indexed by the rest (a lazy
        # member stays lazy)
        member = stack._members[_checked(stack, int(items[at]))]
        return _named(stack, items, member[items[:at] + items[at + 1 :]], owned=False)
    each = _index_each_member(stack, items)
    if each is not None:
        return _named(stack, items, each, owned=False)
    picked = _index_stack_dim(stack, items)
    if picked is not None:
        return _named(stack, items, picked, owned=False)
    ids, positions = _probe(stack, items)
    numbers = ids if ids.numel() else _picked_members(stack, items)
    if numbers.numel() == 0:
        return empty_selection(stack, items)
    # Tensors over the stack dim and other dims: every element a copy, as torch's
    # advanced indexing (and the peer) gives, even of a member taken whole.
    over = _advanced_dims(stack, items)
    kept = _kept_dims(items, len(stack._batch_size))
    ints = _int_dims(items)
    layout = _layout(items, len(stack._batch_size))
    out = _gather(
        stack, ids, positions, over, copy=True, numbers=numbers, kept=kept, ints=ints, layout=layout
    )
    return _named(stack, items, out, owned=True)


def _picked_members(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> torch.Tensor:
    """Where ``items`` select no element but tensors pick members (a mask over the stack
    dim and a dim of size 0, or with an empty slice elsewhere): the member number of every
    position along the dims the tensors give, the other dims of size 1 (probed on a batch
    whose other dims have size 1, indexed whole). No numbers where the tensors pick none
    (or pick no member): the selection then keeps no member, as the peer's."""
    if not stack_item_is_tensor(stack, items):
        return torch.empty(0, dtype=torch.long)
    batch = list(stack._batch_size)
    shrunk: list[Any] = []
    dim = 0
    for item in items:
        width = _batch.index_dims_consumed(item)
        if isinstance(item, torch.Tensor):
            shrunk.append(item)
        else:
            batch[dim : dim + width] = [1] * width
            shrunk.append(0 if type(item) is int else _ALL if type(item) is slice else item)
        dim += width
    batch[dim:] = [1] * (len(batch) - dim)
    shape = [1] * len(batch)
    shape[stack._stack_dim] = batch[stack._stack_dim]
    ids = torch.arange(batch[stack._stack_dim]).reshape(shape).expand(batch)
    return ids[tuple(shrunk)]


def _named(stack: LazyStackedTensorDict, items: tuple[Any, ...], out: Any, *, owned: bool) -> Any:
    """``out`` (``stack[items]``) named as a dense collection's index names its dims
    (:func:`_names.indexed`, as the peer names them): the stack dim's name goes to the
    dim the members' picker becomes, and a mask over several dims leaves its dim
    unnamed. ``owned``: ``out``'s members are its own (copies), so they are renamed
    too; shared members keep theirs (indexed alike, they are named so already)."""
    names = stack._dim_names
    if names is None or not isinstance(out, TensorCollection):
        return out
    expected = _names.indexed(names, items)
    if out._dim_names != expected:
        if owned:
            out._rename_all(expected)
        else:  # a lazy stack (or a record of one): its stack dim's name only
            out._assign_names(expected)
    return out


def _index_stack_dim(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> Any:
    """As the peer: a tensor index along the stack dim alone, with ints, slices and
    ``None`` elsewhere, picks members, each indexed by those basic items, so the result
    shares their storage as a basic index does (``lazy[idx, :1]`` is a lazy stack of
    views of the picked members, the members themselves where nothing else indexes
    them). None where this does not apply (other tensors, a mask over several dims, the
    tensor's dims landing elsewhere than the stack dim, no member picked). Members
    without elements are picked by number, as the peer picks them."""
    advanced = [i for i, item in enumerate(items) if not _batch.is_basic_item(item)]
    if len(advanced) != 1 or not stack_item_is_tensor(stack, items):
        return None
    at = advanced[0]
    tensor = items[at]
    if tensor.dtype is torch.bool and tensor.ndim != 1:
        return None
    viewed = _index_basic(stack, items[:at] + (_ALL,) + items[at + 1 :])
    start, _ = _advanced_dims(stack, items)
    if not hasattr(viewed, "_stack_dim") or viewed._stack_dim != start:
        return None
    picking = (_ALL,) * start + (tensor,)
    ids, positions = _probe(viewed, picking)
    if ids.numel() == 0:  # members without elements: picked all the same, by number
        if tensor.ndim != 1:  # (the dims a 2-d tensor gives: the general path's)
            return None
        numbers = _member_numbers(viewed, tensor)
        members = [viewed._members[number] for number in numbers]
        return viewed._restacked(members, start) if members else None
    over = _advanced_dims(viewed, picking)
    kept = _kept_dims(picking, len(viewed._batch_size))
    return _gather(viewed, ids, positions, over, copy=False, kept=kept)


def _index_each_member(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> Any:
    """As the peer: an index that takes the stack dim with a slice (or leaves it) and
    other dims with tensors indexes every picked member alike, and the result stays a
    lazy stack, even of one member. ``None`` where this does not apply (the stack dim
    taken by a tensor or an int, tensors on both sides of it that only it parts after
    a dim, no member picked). Tensors that another slice (or ``None``) still parts in
    each member put their dims in front there, as torch does in the dense stack."""
    d = stack._stack_dim
    at = _stack_item_position(stack, items)
    stack_item = _stack_item(stack, items)
    tensors = [i for i, item in enumerate(items) if not _batch.is_basic_item(item)]
    if type(stack_item) is not slice:
        return None
    rest = items[:at] + items[at + 1 :]
    if tensors[0] < at < tensors[-1]:
        between = rest[tensors[0] : tensors[-1] - 1]  # (positions after ``at`` move by one)
        before = items[: tensors[0]]  # where no dim comes before the tensors' dims, they
        # lead in each member as in the dense stack (``x[[0, 2], 0:1, mask]``: 114,209)
        if not any(item is None or type(item) is slice for item in between) and any(
            item is None or type(item) is slice for item in before
        ):
            return None
    members = stack._members[stack_item]
    if not members:
        return None
    whole = items[:at] + (_ALL,) + items[at + 1 :]
    shapes = []
    for size in (2, 3):
        probe = list(stack._batch_size)
        probe[d] = size
        shapes.append(_batch.indexed_shape(torch.Size(probe), whole))
    dim = next(i for i, (a, b) in enumerate(zip(*shapes)) if a != b)
    return stack._restacked([member[rest] for member in members], dim)


def _stack_item_position(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> int:
    """The position in ``items`` of the item that indexes the stack dim (``len(items)``
    when none does)."""
    d = stack._stack_dim
    consumed = 0
    for position, item in enumerate(items):
        if item is None:
            continue
        width = _batch.index_dims_consumed(item)
        if consumed <= d < consumed + width:
            return position
        consumed += width
    return len(items)


def _stack_item(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> Any:
    """The item of ``items`` that indexes the stack dim (a full slice when none does)."""
    at = _stack_item_position(stack, items)
    return items[at] if at < len(items) else _ALL


def _index_ragged(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> Any:
    """A lazy stack with a ragged dim (a ``-1`` in its batch size) indexed with tensors,
    as the peer's: member by member (``_ragged_split.py``), the members' parts stacked
    where the split says (a selection of no member: :func:`empty_selection`)."""
    split = split_ragged(stack, items)
    members = stack._members
    if split.kind == MEMBER:
        ((number, where, _),) = split.parts
        return members[number] if where is None else members[number][where]
    if not split.parts:
        return empty_selection(stack, items)
    if split.kind == STACK:
        parts = [members[n] if where is None else members[n][where] for n, where, _ in split.parts]
        if split.keep:
            parts = [part.squeeze(split.dim) for part in parts]
        return stack._restacked(parts, split.dim)
    elements: list[Any] = [None] * split.shape.numel()
    for number, where, flat in split.parts:
        part = members[number] if where is None else members[number][where]
        pieces = part.unbind(split.dim) if split.block else [part] * len(flat)
        for position, piece in zip(flat, pieces, strict=True):
            elements[position] = piece
    return _stack_block(stack, elements, split.shape, split.dim)


def _stack_block(
    stack: LazyStackedTensorDict, elements: list[Any], shape: torch.Size, dim: int
) -> Any:
    """``elements`` (a block of shape ``shape``, flat) lazily stacked at ``dim``, the
    block's first dim outermost."""
    if len(shape) > 1:
        step = len(elements) // shape[0]
        elements = [
            _stack_block(stack, elements[i * step : (i + 1) * step], shape[1:], dim)
            for i in range(shape[0])
        ]
    return stack._restacked(elements, dim)


def empty_selection(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> Any:
    """What an index selecting no element gives: an empty dense collection shaped by
    member 0 (there is no member left to keep lazily, and readers still find the keys
    and feature shapes; along a ragged dim, member 0's size, as the peer's). Where member 0
    is a lazy stack whose members differ in shape (which its ``expand`` keeps lazy), its
    expansion is stacked as ``maybe_dense_stack`` stacks it before it is indexed (a
    TensorDict holding lazy stacks where only nested entries differ, as the peer's
    ``expand``), so a nested entry its members hold in different shapes stays a lazy
    stack however few of them the index keeps; pieces still lazy are stacked so too.
    It shares no element, so it is not locked (as the peer's), whatever member 0's lock."""
    d = stack._stack_dim
    picked = _stack_item(stack, items)  # an int there picks the member that shapes it
    first = stack._members[picked] if type(picked) is int else stack._members[0]
    shape = list(first.batch_size)  # a ragged dim: member 0's size there, as the peer
    shape.insert(d, len(stack._members))
    template = first.unsqueeze(d).expand(shape)
    names = stack._dim_names
    if names is not None:  # the stack dim's name too (a new view: its own names)
        template._rename_all(names)
    out = _dense_where_it_lines_up(_dense_where_it_lines_up(template)[items])
    return out.unlock_() if out.is_locked else out


def _dense_where_it_lines_up(collection: Any) -> Any:
    """A lazy stack (not a record's) stacked as ``maybe_dense_stack`` stacks its members,
    its dim names kept; any other collection itself."""
    if not collection._is_lazy or is_record(collection):
        return collection
    names = collection._dim_names
    out = ENGINE.maybe_dense_stack(collection._members, collection._stack_dim)
    if names is not None and out._dim_names != names:
        out._rename_all(names)
    return out


def stack_item_is_tensor(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> bool:
    """Whether the index picks members with a tensor (so a dim of the result runs over
    members even where it picks one member, or one member repeatedly)."""
    consumed = 0
    for item in items:
        if item is None:
            continue
        width = _batch.index_dims_consumed(item)
        if consumed <= stack._stack_dim < consumed + max(width, 1):
            return isinstance(item, torch.Tensor)
        consumed += width
    return False


def _advanced_dims(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> tuple[int, int]:
    """Where the dims of a tensor index that picks members land in the result, as
    ``(first dim, count)`` (``_batch.advanced_block``); ``(0, 0)`` when no tensor picks
    members."""
    if not stack_item_is_tensor(stack, items):
        return 0, 0
    return _batch.advanced_block(items)


def _index_basic(stack: LazyStackedTensorDict, items: tuple[Any, ...]) -> Any:
    d = stack._stack_dim
    consumed = 0
    dims_before = 0  # result dims that come before the stack dim
    member_items: list[Any] = []
    stack_item: Any = slice(None)
    for item in items:
        if item is None:
            member_items.append(None)
            dims_before += consumed <= d
            continue
        if consumed == d:
            stack_item = item
        else:
            member_items.append(item)
            dims_before += consumed < d and type(item) is slice
        consumed += 1
    if consumed <= d:  # dims left unaddressed are kept, the stack dim among them
        dims_before += d - consumed
    # Members indexed by full slices only are taken as they are, not as new views.
    member_index = () if all(item == _ALL for item in member_items) else tuple(member_items)
    if type(stack_item) is slice and not stack._members[stack_item]:
        return empty_selection(stack, items)
    if type(stack_item) is int:
        member = stack._members[_checked(stack, stack_item)]
        return member[member_index] if member_index else member
    if stack_item.step == 0:  # (a negative step picks the members backwards, as a list's)
        msg = "slice step cannot be zero; reverse a dim with .flip(dim) instead"
        raise ArgumentValueError(msg)
    picked = stack._members[stack_item]
    results = [member[member_index] for member in picked] if member_index else picked
    if results:
        size = stacked_size(results, dims_before)
    else:
        size = _batch.indexed_shape(stack._batch_size, items)
    out = stack._from_members(results, dims_before, size)
    out._stack_dim_name = stack._stack_dim_name
    return out


def _probe(
    stack: LazyStackedTensorDict, items: tuple[Any, ...]
) -> tuple[torch.Tensor, torch.Tensor]:
    """For every element ``items`` selects: its member number and its flat position in
    that member."""
    batch = stack._batch_size
    d = stack._stack_dim
    count = len(stack._members)
    member_batch = remove_dim(batch, d)
    shape = [1] * len(batch)
    shape[d] = count
    ids = torch.arange(count).reshape(shape).expand(batch)
    flat = torch.arange(math.prod(member_batch)).reshape(member_batch)
    positions = flat.unsqueeze(d).expand(batch)
    try:
        return ids[items], positions[items]
    except IndexError as error:
        raise _batch.index_error(items, batch, error) from None


def _gather(
    stack: LazyStackedTensorDict,
    ids: torch.Tensor,
    positions: torch.Tensor,
    over: tuple[int, int],
    *,
    copy: bool,
    numbers: torch.Tensor | None = None,
    kept: frozenset[int] = frozenset(),
    ints: frozenset[int] = frozenset(),
    layout: Layout = None,
) -> Any:
    """The result whose element at every index comes from member ``ids[index]`` at
    ``positions[index]``. Where a tensor picks members, its ``over = (first, count)``
    dims run over (possibly repeated) members, as in the peer: the result is a lazy stack
    along each of them, nested, of the members' parts. Otherwise it is a lazy stack
    along the first dim where the member changes. ``copy``: a member taken whole is
    copied rather than shared. ``numbers``: the member numbers along the ``over`` dims
    where ``ids`` has no element (see :func:`_picked_members`); each member then gives a
    part with no elements, as the peer keeps one member per picked position. ``kept``:
    the batch dims a slice keeps as dims of the result, ``ints`` those an int selects
    (see :func:`_member_part`), ``layout`` the dims of each part (see :func:`_layout`)."""
    numbers = ids if numbers is None else numbers
    first, count = over
    along = first if count else _first_dim(ids, varies=True) if ids.numel() else None
    if along is None:
        member = stack._members[int(numbers.reshape(-1)[0])]
        d = stack._stack_dim
        return _member_part(
            member,
            positions,
            copy,
            _member_dims(kept, d),
            _member_dims(ints, d),
            _member_layout(layout, d),
        )
    inner = (first, count - 1) if count else over
    parts = [
        _gather(
            stack,
            ids.select(along, j),
            positions.select(along, j),
            inner,
            copy=copy,
            numbers=numbers.select(along, j),
            kept=kept,
            ints=ints,
            layout=None if layout is None else layout[:along] + layout[along + 1 :],
        )
        for j in range(ids.shape[along])
    ]
    return lazily(parts, along, stacked_size(parts, along))


def _first_dim(values: torch.Tensor, *, varies: bool) -> int | None:
    """The first dim along which ``values`` changes (``varies``) or stays the same."""
    for dim in range(values.ndim):
        constant = bool((values == values.narrow(dim, 0, 1)).all())
        if constant != varies:
            return dim
    return None


def _member_part(
    member: Any,
    positions: torch.Tensor,
    copy: bool,
    kept: frozenset[int] = frozenset(),
    ints: frozenset[int] = frozenset(),
    layout: Layout = None,
) -> Any:
    """The elements of ``member`` at flat ``positions``, shaped like ``positions``
    (``copy``: never the member's own storage; ``kept``: the member's dims a slice of
    the index keeps). Those of a locked lazy member are locked, none or a copy too, as
    the peer's: it indexes the member, whose result is then locked, and takes the
    elements from that (fuzz program 10,900,824 of index,combine --length 6); but
    where a slice keeps the member's stack dim, the parts are new stacks of copies,
    unlocked with their members (the peer unbinds that result along another dim); and
    where an int of the index (``ints``: the member's dims an int selects) picks one of
    its members, the part keeps the lock that member's part has, as the peer's (which
    takes that member's part, as it gives it; a copy, unlocked)."""
    part = _elements(member, positions, copy, kept, ints, layout)
    if not member.is_locked or not storage_of(member)._is_lazy:
        return part
    if storage_of(member)._stack_dim in ints:
        return part
    if copy and storage_of(member)._stack_dim in kept:  # a new stack of copies of its
        return part.unlock_() if part.is_locked else part  # members' parts (the peer's unbind)
    return part if part.is_locked else part.lock_()


def _elements(
    member: Any,
    positions: torch.Tensor,
    copy: bool,
    kept: frozenset[int],
    ints: frozenset[int],
    layout: Layout,
) -> Any:
    """:func:`_member_part` but for the lock."""
    member_batch = member.batch_size
    shape = positions.shape
    if not member_batch:
        part = member.expand(shape) if shape else member
        return part.clone() if copy else part
    if _tensors_take_stack_dim(member, layout, ints) and positions.numel():
        # a dim the tensors give, which take a lazy member's stack dim: each position's
        # part on its own, stacked lazily along it (as the member's own index gathers
        # them), so a Python value keeps its stack dims in each
        assert layout is not None
        at = layout.index(-2)
        rest = layout[:at] + layout[at + 1 :]
        parts = [
            _elements(member, positions.select(at, j), copy, kept, ints, rest)
            for j in range(positions.shape[at])
        ]
        return lazily(parts, at, stacked_size(parts, at))
    inner = _inner_member(member, positions, kept)
    if (
        inner is None
        and shape == member_batch
        and torch.equal(positions.reshape(-1), torch.arange(positions.numel()))
        and (layout is None or layout == tuple(range(len(member_batch))))
    ):
        return member.clone() if copy else member  # taken whole: the member itself
    if inner is not None:  # as the peer: a part of that member, not a lazy stack of one
        inner_member, inner_positions, inner_kept = inner
        inner_ints = _member_dims(ints, storage_of(member)._stack_dim)
        # a member of its own taken whole (a tensor at its stack dim, slices elsewhere)
        # is that member, shared, as the peer's (fuzz program 10,900,216)
        whole = inner_kept == frozenset(range(inner_member.batch_dims))
        inner_layout = _member_layout(layout, storage_of(member)._stack_dim)
        part = _member_part(
            inner_member, inner_positions, copy and not whole, inner_kept, inner_ints, inner_layout
        )
        return member._wrap(part) if is_record(member) and not is_record(part) else part
    basic = _basic_index(member_batch, positions, layout)
    if basic is not None:  # as the peer indexes a member: ints, slices and ``None``, so
        # a Python value keeps its stack dims (coordinate tensors make each a stack dim)
        return _taken(member[basic], copy, False)
    row = _whole_row(member_batch, positions)
    if row is not None:  # one row of its leading dims, whole: indexed by ints, as the
        return _taken(member[row], copy, False)  # peer's (a stack of one value: that value)
    part = member[torch.unravel_index(positions, member_batch)]
    return _taken(part, copy, bool(shape))  # a 0-d index gives a view


def _taken(part: Any, copy: bool, view: bool) -> Any:
    """``part`` of a member, a copy where ``copy`` says (a file's rows read, as the
    peer's: it unbinds them; else cloned unless ``view``)."""
    if copy and isinstance(part, TensorDictBase) and part._is_store:
        return part.to_tensordict()
    return _copied(part) if copy and not view else part


def _copied(part: Any) -> Any:
    """A copy of ``part``'s tensors, its Python values shared: what an advanced index
    of a collection gives (torch copies the elements; a value is the same object, as
    the peer's index of its members gives it, so ``MetaData`` picked from one member
    stack back to one value)."""

    def entry(value: Any) -> Any:
        if isinstance(value, TensorCollection):
            return value.clone(False) if value._is_value_node else _copied(value)
        return value.clone()

    return part._map_values(entry, part.batch_size)


def _whole_row(member_batch: torch.Size, positions: torch.Tensor) -> tuple[int, ...] | None:
    """Where flat ``positions`` are, in order, every element of one row of the
    member's leading dims (the trailing dims whole): that row's ints. None otherwise."""
    lead = len(member_batch) - positions.ndim
    if lead <= 0 or positions.shape != member_batch[lead:] or not positions.numel():
        return None
    flat, count = positions.reshape(-1), positions.numel()
    start = int(flat[0])
    if start % count or not torch.equal(flat, torch.arange(start, start + count)):
        return None
    row = torch.unravel_index(torch.tensor(start // count), member_batch[:lead])
    return tuple(int(c) for c in row)


def _inner_member(
    member: Any, positions: torch.Tensor, kept: frozenset[int]
) -> tuple[Any, torch.Tensor, frozenset[int]] | None:
    """Where ``member`` is a lazy stack (or a record over one) whose stack dim the index
    does not keep (a slice over it keeps a lazy stack, as in the peer, even of one
    member) and all ``positions`` fall in one of its own members: that member, the flat
    positions in it and its dims kept (the peer indexes a lazy member by the index's
    part, then takes the elements, which are its members' parts). None otherwise."""
    stack = storage_of(member)
    if not stack._is_lazy or not positions.numel() or -1 in stack.batch_size:
        return None
    d = stack._stack_dim
    if d in kept:
        return None
    coords = torch.unravel_index(positions, stack.batch_size)
    numbers = coords[d]
    first = int(numbers.reshape(-1)[0])
    if not bool((numbers == first).all()):
        return None
    flat = torch.zeros_like(positions)
    for coord, size in zip(coords[:d] + coords[d + 1 :], remove_dim(stack.batch_size, d)):
        flat = flat * size + coord
    return stack._members[first], flat, _member_dims(kept, d)


def _layout(items: tuple[Any, ...], ndim: int) -> Layout:
    """What each dim of the result of ``items`` is: ``-1`` a new dim (``None``), ``-2``
    a dim the tensors give, else the batch dim a slice keeps (trailing dims no item
    reaches too)."""
    layout: list[int] = []
    dim = 0
    for item in items:
        if item is None:
            layout.append(-1)
        elif type(item) is slice:
            layout.append(dim)
        dim += _batch.index_dims_consumed(item)
    layout.extend(range(dim, ndim))
    first, count = _batch.advanced_block(items)
    return (*layout[:first], *(-2,) * count, *layout[first:])


def _tensors_take_stack_dim(member: Any, layout: Layout, ints: frozenset[int]) -> bool:
    """Whether ``member`` is a lazy stack whose stack dim the index's tensors take (the
    part has a dim they give, and the stack dim is no dim of it nor taken by an int)."""
    if layout is None or -2 not in layout or not storage_of(member)._is_lazy:
        return False
    d = storage_of(member)._stack_dim
    return d not in layout and d not in ints


def _member_layout(layout: Layout, d: int) -> Layout:
    """``layout`` in a member's dims (None where the stack dim ``d`` is still a dim of
    the part: one member left under a slice)."""
    if layout is None or d in layout:
        return None
    return tuple(k if k < d else k - 1 for k in layout)


def _basic_index(
    member_batch: torch.Size, positions: torch.Tensor, layout: Layout
) -> tuple[Any, ...] | None:
    """The index of ints, slices and ``None`` (at the dims ``layout`` gives) that takes
    the elements at flat ``positions`` of a member; None where there is none."""
    if layout is None or len(layout) != positions.ndim or not positions.numel():
        return None
    coords = torch.unravel_index(positions, member_batch)
    first = [int(c.reshape(-1)[0]) for c in coords]
    strides = [math.prod(member_batch[d + 1 :]) for d in range(len(member_batch))]
    # the flat positions the index takes, built from the positions' own size (never the
    # member's: a member of a million rows gives a few elements here)
    taken = torch.tensor(sum(f * s for f, s in zip(first, strides, strict=True)))
    items: list[Any] = []
    done = 0
    for at, dim in enumerate(layout):
        size = positions.shape[at]
        if dim < 0:
            if size != 1:
                return None
            items.append(None)
            continue
        if dim < done:
            return None
        items.extend(first[done:dim])
        step = int(coords[dim].narrow(at, 1, 1).reshape(-1)[0]) - first[dim] if size > 1 else 1
        if step <= 0 or first[dim] + step * (size - 1) >= member_batch[dim]:
            return None
        items.append(slice(first[dim], first[dim] + step * (size - 1) + 1, step))
        along = [1] * positions.ndim
        along[at] = size
        taken = taken + (torch.arange(size) * (step * strides[dim])).reshape(along)
        done = dim + 1
    items.extend(first[done:])
    return tuple(items) if torch.equal(taken.expand(positions.shape), positions) else None


def _kept_dims(items: tuple[Any, ...], ndim: int) -> frozenset[int]:
    """The batch dims ``items`` keep as dims of the result: those a slice indexes, and
    the trailing ones no item reaches."""
    kept, dim = set(), 0
    for item in items:
        if type(item) is slice:
            kept.add(dim)
        dim += _batch.index_dims_consumed(item)
    return frozenset(kept | set(range(dim, ndim)))


def _int_dims(items: tuple[Any, ...]) -> frozenset[int]:
    """The batch dims an int of ``items`` selects."""
    ints, dim = set(), 0
    for item in items:
        if type(item) is int:
            ints.add(dim)
        dim += _batch.index_dims_consumed(item)
    return frozenset(ints)


def _member_dims(kept: frozenset[int], d: int) -> frozenset[int]:
    """``kept`` (dims of a lazy stack) as dims of its members (stack dim ``d`` left out)."""
    return frozenset(k if k < d else k - 1 for k in kept if k != d)


def _member_numbers(stack: LazyStackedTensorDict, picked: Any) -> list[int]:
    """The members a tensor (numbers of any dims, or a 1-d mask) picks along the stack
    dim, in the tensor's flat order."""
    count = len(stack._members)
    if not isinstance(picked, torch.Tensor) or picked.dtype is torch.bool and picked.ndim != 1:
        check_regular(stack, range(len(stack._batch_size)), "indexing with a tensor")
    if picked.dtype is torch.bool:
        if picked.shape[0] != count:
            msg = f"a mask of {picked.shape[0]} elements indexes a lazy stack of {count} members"
            raise DimError(msg)
        picked = picked.nonzero().squeeze(-1)
    return [_checked(stack, int(number)) for number in picked.reshape(-1).tolist()]
