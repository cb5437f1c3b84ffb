"""Padding a collection's batch dims: ``pad`` grows (or crops) them with a constant.

It works on TensorDicts, lazy stacks and tensorclass records (records come back as their
class) and recurses into nested collections. Tensors are padded with ``F.pad``; Python
values follow their kind:

* a ``NonTensorStack`` holds one value per element; new slots hold ``None``.
* a ``NonTensorData`` (one value shared by every element of its batch) becomes such a
  stack when a dim grows or shrinks: the kept elements hold its value and the new ones
  ``None``, as padded tensor elements hold the fill value rather than data (as the peer).

Padding members of different lengths to a common one and stacking them is
``pad_sequence`` (``_pad_sequence.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn, TypeVar, cast

import numpy as np
import torch
import torch.nn.functional as F

from tclass._base._provided import ENGINE
from tclass._base._tensordict_base import TensorDictBase
from tclass._core._batch import as_int_arg, format_shape
from tclass._core._records import storage_of
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._lazy._parts import stacked_size
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import PADDED, Meta, MetaData, NonTensorData, _NonTensorNode
from tclass._engine._nontensor_stack import NonTensorStack, join_non_tensor
from tclass._engine._ragged_values import RaggedNonTensorStack
from tclass._engine._value_positions import StackDims
from tclass.errors import LockedError, ShapeError, UnsupportedError

__all__ = ["pad"]

C = TypeVar("C", bound=TensorDictBase)

_Tensor = torch.Tensor
_Pairs = tuple[tuple[int, int], ...]

# --- pad ------------------------------------------------------------------------------


def pad(
    collection: C,
    pad_size: Sequence[int],
    value: float = 0.0,
    inplace: bool = False,
    safe: bool = True,
) -> C:
    """Pads (or crops) the batch dims of a collection with a constant.

    Args:
        collection: a TensorDict, lazy stack or tensorclass record (the result has the
            same class; a lazy stack gets new members, filled with ``value``, along its
            stack dim, and its members are padded along the other dims).
        pad_size: ``(dim0_left, dim0_right, dim1_left, dim1_right, ...)``: how many
            elements to add before and after each batch dim, starting from the *first*
            batch dim (``torch.nn.functional.pad`` starts from the last). Dims it does not
            reach are left alone, and so are feature dims. Negative amounts crop, as in
            ``F.pad``'s constant mode.
        value: the value of the new tensor elements.
        inplace: pad ``collection`` itself (nested collections keep their identity) and
            return it.
        safe: the peer's switch for checking every entry before changing any; the pad
            is always worked out before anything is changed here.

    Python values get ``None`` in the new slots: a per-element stack (``NonTensorStack``)
    directly, a shared value (``NonTensorData``) by becoming such a stack, which holds
    its value in the kept slots.

    Raises:
        UnsupportedError: (a ``RuntimeError``) ``inplace=True`` on a ``NonTensorData``
            itself that the pad changes, since the result is another kind of node.
        ShapeError: if ``pad_size`` is not a sequence of ints, has an odd length, covers
            more dims than the batch has, or crops a batch dim below zero.

    Example:
        >>> td = TensorDict({"x": torch.ones(2, 3)}, [2])
        >>> pad(td, [1, 0], value=-1.0)["x"][:, 0]
        tensor([-1.,  1.,  1.])
    """
    pairs = _pad_pairs(pad_size, collection.batch_size)
    _check_ragged_crops(collection, pairs, pad_size)
    if inplace and isinstance(collection, NonTensorData):
        if any(amount for pair in pairs for amount in pair):
            msg = (
                "pad(inplace=True) of a NonTensorData cannot preserve the identity of the "
                "node: the padded result is a NonTensorStack (None in the new slots); use "
                "inplace=False"
            )
            raise UnsupportedError(msg)
        return collection
    if inplace and isinstance(storage_of(collection), LazyStackedTensorDict):
        _pad_lazy_in_place(storage_of(collection), pairs, value)
        return collection
    padded: C = _pad_value(collection, pairs, value)
    names = collection._dim_names
    if names is not None:
        padded._rename_all(names)  # nested collections keep the names too, as in the peer
    if inplace:
        collection._become(padded)
        return collection
    storage = storage_of(padded)
    if isinstance(storage, LazyStackedTensorDict):
        # As the peer, which pads the dense stack: dense when the members line up (a
        # record over a lazy stack too: the record over the dense one).
        dense = storage._densified(storage)
        record: Any = padded
        padded = cast("C", dense if storage is padded else record._wrap(dense))
        if names is not None:
            padded._rename_all(names)
    return padded


def _pad_pairs(pad_size: object, batch: torch.Size) -> _Pairs:
    """``pad_size`` as one ``(left, right)`` pair per padded batch dim, validated."""
    if isinstance(pad_size, (str, bytes)) or not isinstance(pad_size, Sequence):
        _bad_pad_size(pad_size, "it must be a sequence of ints")
    amounts = [a if (value := as_int_arg(a)) is None else value for a in pad_size]
    if any(isinstance(a, bool) or not isinstance(a, int) for a in amounts):
        _bad_pad_size(pad_size, "every entry must be an int")
    if len(amounts) % 2:
        _bad_pad_size(
            pad_size,
            f"it has an odd number of entries ({len(amounts)}); give a (left, right) "
            "pair for each padded batch dim, starting from dim 0",
        )
    if len(amounts) > 2 * len(batch):
        _bad_pad_size(
            pad_size,
            f"it pads {len(amounts) // 2} dims but the batch size "
            f"{format_shape(batch)} has {len(batch)}; pad feature dims with "
            "torch.nn.functional.pad on the tensors themselves",
        )
    pairs = tuple(zip(amounts[0::2], amounts[1::2]))
    for dim, (left, right) in enumerate(pairs):
        # A ragged dim (-1) has no one size: its members check their own sizes.
        if batch[dim] != -1 and batch[dim] + left + right < 0:
            _bad_pad_size(
                pad_size,
                f"it crops batch dim {dim} (size {batch[dim]}) to a negative output size "
                f"{batch[dim] + left + right}; crop at most {batch[dim]} elements from it",
            )
    return pairs


def _check_ragged_crops(value: Any, pairs: _Pairs, pad_size: object) -> None:
    """Along a ragged dim (``-1``) of a lazy stack, each member's own size must stand
    the crop (checked before anything is padded, nested lazy stacks too)."""
    storage = storage_of(value)
    if not isinstance(storage, LazyStackedTensorDict) or -1 not in storage.batch_size:
        return
    d = storage.stack_dim
    member_pairs = pairs[:d] + pairs[d + 1 :]
    for position, member in enumerate(storage.tensordicts):
        for dim, (left, right) in enumerate(member_pairs):
            size = member.batch_size[dim]
            if size != -1 and size + left + right < 0:
                outer = dim if dim < d else dim + 1
                _bad_pad_size(
                    pad_size,
                    f"it crops batch dim {outer} (ragged: member {position} has {size} "
                    f"elements there) to a negative output size {size + left + right}",
                )
        _check_ragged_crops(member, member_pairs, pad_size)


def _bad_pad_size(pad_size: object, why: str) -> NoReturn:
    msg = f"pad: invalid pad_size {pad_size!r}: {why}"
    raise ShapeError(msg)


def _padded_shape(shape: torch.Size, pairs: _Pairs) -> torch.Size:
    sizes = list(shape)
    for dim, (left, right) in enumerate(pairs):
        sizes[dim] += left + right
    return torch.Size(sizes)


def _pad_value(value: Any, pairs: _Pairs, fill: float) -> Any:
    """One entry padded: a tensor with F.pad, a Python-value node by kind, a collection
    entry by entry (its own extra batch dims are feature dims here: untouched)."""
    if value.__class__ is UnbatchedTensor:
        return value._with_batch_size(_padded_shape(value.batch_size, pairs))
    if isinstance(value, _Tensor):
        # F.pad lists pairs from the last dim backwards: zeros for the untouched dims.
        amounts = [0, 0] * (value.ndim - len(pairs))
        for left, right in reversed(pairs):
            amounts += (left, right)
        return F.pad(value, amounts, value=fill) if amounts else value.clone()
    if isinstance(value, _NonTensorNode):
        return _pad_node(value, pairs)
    storage = storage_of(value)
    if isinstance(storage, LazyStackedTensorDict):
        lazy = _pad_lazy(storage, pairs, fill)
        return lazy if storage is value else value._wrap(lazy)
    out = value._map_values(
        lambda entry: _pad_value(entry, pairs, fill), _padded_shape(value.batch_size, pairs)
    )
    names = value._dim_names
    if names is not None:  # a nested collection keeps its own dims' names, as in the peer
        out._rename_all(names)
    return out


def _pad_lazy(stack: LazyStackedTensorDict, pairs: _Pairs, fill: float) -> Any:
    """A lazy stack padded: its members along their own dims, and along the stack dim
    new members filled with ``fill`` (or members dropped, for a crop)."""
    d = stack.stack_dim
    member_pairs = pairs[:d] + pairs[d + 1 :]
    # Copies even where only the stack dim is padded, as F.pad and the peer's dense pad.
    members = [_pad_value(m, member_pairs, fill) for m in stack.tensordicts]
    left, right = pairs[d] if d < len(pairs) else (0, 0)
    members = _grown(members, left, right, fill)
    size = _padded_shape(stack.batch_size, pairs)
    if members and -1 in stack.batch_size:  # a ragged dim stays ragged (not -1 + pads)
        size = stacked_size(members, d)
    return type(stack)._from_members(members, d, size)


def _grown(members: list[Any], left: int, right: int, fill: float) -> list[Any]:
    """``members`` with ``left`` / ``right`` members added (filled copies of the first
    one) or removed (negative amounts)."""
    start, stop = max(0, -left), len(members) - max(0, -right)
    kept = members[start:stop]
    template = members[0]
    before = [_filled_like(template, fill) for _ in range(max(0, left))]
    after = [_filled_like(template, fill) for _ in range(max(0, right))]
    return before + kept + after


def _filled_like(member: Any, fill: float) -> Any:
    """A new member shaped like ``member``: tensors full of ``fill``, Python values None."""

    def filled(value: Any) -> Any:
        if isinstance(value, _Tensor):
            # F.pad's check first: a fill the dtype cannot hold (-1 for uint8) is torch's
            # error, as for the members' own dims, where full_like would wrap it to 255.
            F.pad(value.new_empty(0), (0, 1), value=fill)
            return torch.full_like(value, fill)
        if isinstance(value, _NonTensorNode):
            return NonTensorData._make(None, value.batch_size, value.device)
        return _filled_like(value, fill)

    if isinstance(storage_of(member), LazyStackedTensorDict):
        stack = storage_of(member)
        copies = [_filled_like(m, fill) for m in stack.tensordicts]
        lazy = type(stack)._from_members(copies, stack.stack_dim, stack.batch_size)
        return lazy if stack is member else member._wrap(lazy)
    return member._map_values(filled, member.batch_size)


def _pad_lazy_in_place(stack: LazyStackedTensorDict, pairs: _Pairs, fill: float) -> None:
    """``pad(stack, ..., inplace=True)``: members padded in place, members added or
    removed along the stack dim."""
    if stack.is_locked:
        msg = "pad(inplace=True) cannot add or remove members of a locked lazy stack"
        raise LockedError(msg)
    d = stack.stack_dim
    member_pairs = [amount for pair in pairs[:d] + pairs[d + 1 :] for amount in pair]
    if any(member_pairs):
        for member in stack.tensordicts:
            pad(member, member_pairs, fill, inplace=True)
        stack._relayout(stack.tensordicts[0].batch_size)  # the members' new batch size
    left, right = pairs[d] if d < len(pairs) else (0, 0)
    for _ in range(max(0, -left)):
        stack._drop_member(0)
    for _ in range(max(0, -right)):
        stack._drop_member(-1)
    template = stack.tensordicts[0]
    for _ in range(max(0, left)):
        stack.insert(0, _filled_like(template, fill))
    for _ in range(max(0, right)):
        stack.append(_filled_like(template, fill))


def _pad_node(node: _NonTensorNode, pairs: _Pairs) -> _NonTensorNode:
    shape = _padded_shape(node.batch_size, pairs)
    if not any(amount for pair in pairs for amount in pair):  # a copy, nested as the node
        if isinstance(node, NonTensorData):  # (a MetaData kept, as the peer's)
            return type(node)._make(node.data, shape, node.device)
        return node.clone(recurse=False)
    if isinstance(node, RaggedNonTensorStack):
        return _pad_ragged(node, pairs)
    if isinstance(node, NonTensorData):
        source = np.empty(tuple(node.batch_size), dtype=object)
        source.fill(node.data)  # the value in every slot, a list value kept whole
    else:
        source = node._as_array()
    # Copy the kept region into a None-filled array: a negative amount moves the source
    # start (or end), a positive one the destination start.
    src: list[slice] = []
    dst: list[slice] = []
    for size, (left, right) in zip(source.shape, pairs):
        start, stop = max(0, -left), size - max(0, -right)
        src.append(slice(start, max(start, stop)))
        dst.append(slice(max(0, left), max(0, left) + max(0, stop - start)))
    out = np.empty(tuple(shape), dtype=object)
    out[tuple(dst)] = source[tuple(src)]
    stack = NonTensorStack._from_array(out, node.device, _padded_stack_dims(node, pairs))
    stack._meta = _padded_meta(node, pairs)
    return stack


def _padded_meta(node: _NonTensorNode, pairs: _Pairs) -> Meta:
    """Whether the pad of ``node`` holds ``MetaData`` members (see ``NonTensorStack.
    _meta``): the peer's pad stacks the kept ones (a ``MetaData``'s elements are) beside
    new ``NonTensorData`` holding ``None`` (``PADDED``)."""
    meta = type(node) is MetaData or getattr(node, "_meta", False)
    if not meta or not any(amount > 0 for pair in pairs for amount in pair):
        return meta  # (a crop adds no member)
    return PADDED


def _pad_ragged(node: RaggedNonTensorStack, pairs: _Pairs) -> _NonTensorNode:
    """A ragged stack padded as a lazy stack is (the peer's is one): its members along
    their own dims, and along the stack dim new members, empty along the ragged dims
    (they read as ``[]``, as the peer's), or members dropped, for a crop."""
    d = node.stack_dim
    members = [_pad_node(m, pairs[:d] + pairs[d + 1 :]) for m in node.tensordicts]
    left, right = pairs[d] if d < len(pairs) else (0, 0)
    start, stop = max(0, -left), len(members) - max(0, -right)
    sizes = list(_padded_shape(node.batch_size, pairs))
    del sizes[d]
    empty = torch.Size([max(size, 0) for size in sizes])  # -1 (ragged): no element
    before = [NonTensorStack._make([], empty, node.device) for _ in range(max(0, left))]
    after = [NonTensorStack._make([], empty, node.device) for _ in range(max(0, right))]
    return join_non_tensor(before + members[start:stop] + after, "stack", d, ())


def _padded_stack_dims(node: _NonTensorNode, pairs: _Pairs) -> StackDims:
    """The stack dims of a padded value node, nested as the peer nests it: the node's
    elements along each dim up to the last padded one are members (stacked beside the
    new slots), outermost first, then the node's own stack dims beyond it. An element of
    a slot added along an earlier dim reads as one ``None`` in the peer (its slot is one
    value); here it reads as its neighbours do, one ``None`` per element."""
    last = max(dim for dim, pair in enumerate(pairs) if any(pair))
    own = () if isinstance(node, NonTensorData) else cast("NonTensorStack", node)._stack_dims
    if own is None:
        return None
    return tuple(range(last + 1)) + tuple(d for d in own if d > last)


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

ENGINE.pad = pad
