"""The pieces a lazy stack is built from: member checks, stacking of the members' entries,
splitting of values across members, and the shapes its repr shows.

Kept apart from ``_lazy.py`` so that the class itself reads as its API.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F

from tclass._base.implemented._collection import TensorCollection
from tclass._core._batch import (
    BatchSizeLike,
    all_equal,
    as_batch_size,
    format_shape,
    normalize_dim,
)
from tclass._core._device import DeviceLike, as_device
from tclass._core._records import storage_of
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._entry_values import fit_to_batch
from tclass._engine._nontensor import NonTensorData, _NonTensorNode
from tclass._engine._nontensor_stack import join_non_tensor
from tclass._engine._repr import LeafSummary, NodeSummary, ValueSummary
from tclass._engine._td import TensorDict
from tclass.errors import (
    ArgumentValueError,
    BatchMismatchError,
    BatchSizeError,
    DeviceError,
    HeterogeneousEntryError,
    MixedEntryError,
    ShapeError,
    StackError,
    StackTypeError,
    TclassError,
)

__all__ = [
    "check_declared",
    "check_members",
    "check_regular",
    "common_device",
    "common_keys",
    "dense_members",
    "empty_layout",
    "insert_dim",
    "lazily",
    "nested_to_update",
    "stacked_size",
    "padded_stack",
    "remove_dim",
    "split_operand",
    "split_tensor",
    "stack_entries",
    "summary_of",
]

_PAD_HINT = (
    "pad members of different lengths with tclass.pad_sequence, or build them with "
    "batch_size=[] so that the lengths become feature dims"
)


def insert_dim(size: torch.Size, dim: int, length: int) -> torch.Size:
    return torch.Size((*size[:dim], length, *size[dim:]))


def remove_dim(size: torch.Size, dim: int) -> torch.Size:
    return torch.Size((*size[:dim], *size[dim + 1 :]))


def empty_layout(stack_dim: int, batch_size: BatchSizeLike) -> tuple[int, torch.Size]:
    """The stack dim and batch size of an empty lazy stack whose members will have
    ``batch_size`` (``[0]`` when not given: the first member decides)."""
    if batch_size is None:
        return stack_dim, torch.Size([0])
    member = as_batch_size(batch_size)
    dim = normalize_dim(stack_dim, len(member), op="LazyStackedTensorDict", inclusive=True)
    return dim, insert_dim(member, dim, 0)


def check_declared(stack: Any, batch_size: BatchSizeLike, device: DeviceLike) -> None:
    """A ``batch_size`` or ``device`` given with the members must be the stack's."""
    if batch_size is not None and as_batch_size(batch_size) != stack.batch_size:
        msg = (
            f"LazyStackedTensorDict: batch_size={format_shape(as_batch_size(batch_size))} "
            f"but the members stack to {format_shape(stack.batch_size)}; drop batch_size "
            "or give members of that batch size"
        )
        raise BatchSizeError(msg)
    if device is not None and as_device(device) != stack.device:
        msg = (
            f"LazyStackedTensorDict: device={as_device(device)} but the members are "
            f"{'on ' + str(stack.device) if stack.device else 'on no one device'}; move "
            "them first (member.to(device)) or drop device"
        )
        raise DeviceError(msg)


def check_members(members: list[Any], op: str, strict_shape: bool = False) -> list[Any]:
    """Checks that ``members`` can be stacked lazily: collections (not Python-value
    nodes) of any kinds (records of any classes, dictionary-like collections), with as
    many batch dims (with ``strict_shape``, the same batch size)."""
    if not members:
        msg = f"{op} expects a non-empty sequence of collections"
        raise StackError(msg)
    first = members[0]
    kind = type(first)
    if (
        not torch.compiler.is_compiling()  # it cannot trace operator.attrgetter
        and issubclass(kind, TensorCollection)
        and not issubclass(kind, _NonTensorNode)
        and all(type(member) is kind for member in members)
    ):  # the common case, checked in C-level passes; the loop below names a culprit
        sizes = list(map(kind._get_batch_size, members))
        if sizes.count(sizes[0]) == len(sizes):
            return members
        if not strict_shape and len(set(map(len, sizes))) == 1:
            return members
    for position, member in enumerate(members):
        if not isinstance(member, TensorCollection) or isinstance(member, _NonTensorNode):
            msg = (
                f"{op}: member {position} is a {type(member).__name__}. Expected new value "
                "to be TensorDictBase instance: members must be TensorDicts, tensorclass "
                "records or lazy stacks (stack Python values with tclass.stack, which "
                "merges them into a NonTensorStack)"
            )
            raise StackTypeError(msg)
        if strict_shape and member.batch_size != first.batch_size:
            msg = (
                f"{op}: with strict_shape=True, stacking tensordicts requires equal batch "
                f"sizes (batch sizes in tensordicts differs): member {position} has "
                f"{format_shape(member.batch_size)} but member 0 has "
                f"{format_shape(first.batch_size)} (without strict_shape, the stack is "
                "ragged: -1 where the sizes differ)"
            )
            raise StackError(msg)
        if len(member.batch_size) != len(first.batch_size):
            msg = (
                f"{op}: member {position} has batch size {format_shape(member.batch_size)} "
                f"but member 0 has {format_shape(first.batch_size)}; the members of a lazy "
                "stack have as many batch dims (their sizes may differ: the stack's is -1 "
                f"there), or {_PAD_HINT}"
            )
            raise StackError(msg)
    return members


def lazily(members: list[Any], dim: int, batch_size: torch.Size) -> Any:
    """The lazy stack of ``members`` (checked by the caller): a record of their class over
    the stack where they are records of one class (each class's ``_stack_lazily``), else
    a plain lazy stack whose members keep their kinds (records of two classes, or records
    and TensorDicts, as the peer's)."""
    kind = type(members[0])
    if any(type(member) is not kind for member in members):
        kind = TensorDict  # whose _stack_lazily is the plain lazy stack
    return kind._stack_lazily(members, dim, batch_size)


def dense_members(members: list[Any]) -> list[Any]:
    """The members a lazy stack's dense stack is made of: the members themselves where
    they are of one kind, their storages (a record's TensorDict) where the kinds are mixed
    (records of two classes, or records and TensorDicts), whose dense stack the peer gives
    as a TensorDict."""
    kind = type(members[0]) if members else None
    if all(type(member) is kind for member in members):
        return members
    return [storage_of(member) for member in members]


def check_regular(stack: Any, dims: Sequence[int], op: str) -> None:
    """Raises if one of ``dims`` of a lazy stack is ragged (``-1``: the members' sizes
    differ along it), where ``op`` needs one size.

    Raises:
        HeterogeneousEntryError: (a ``StackError``, so a ``ValueError`` and a
            ``RuntimeError``) naming the dim, the members' batch sizes and what works.
    """
    batch = stack.batch_size
    for dim in dims:
        if batch[dim] == -1:
            members = stack._members
            shown = ", ".join(format_shape(member.batch_size) for member in members[:4])
            more = ", ..." if len(members) > 4 else ""
            msg = (
                f"{op}: dim {dim} of this lazy stack (batch size {format_shape(batch)}) is "
                f"ragged: its members have batch sizes {shown}{more}. Work member by member "
                f"(lazy[i], lazy.unbind({stack.stack_dim})), read entries with "
                "get(key, as_nested_tensor=True) or as_padded_tensor=True, or pad the "
                "members with tclass.pad_sequence"
            )
            raise HeterogeneousEntryError(msg)


def stacked_size(members: Sequence[Any], dim: int) -> torch.Size:
    """The batch size of ``members`` stacked lazily along ``dim``: the number of members
    at ``dim``, and each other dim's size where the members agree, ``-1`` where they do
    not (a ragged dim, as the peer writes it)."""
    batches = [member.batch_size for member in members]
    first = sizes = batches[0]
    if not all_equal(batches, first):
        sizes = torch.Size(
            size if all(batch[i] == size for batch in batches) else -1
            for i, size in enumerate(first)
        )
    return insert_dim(sizes, dim, len(members))


def common_device(members: Sequence[Any]) -> torch.device | None:
    if not members:
        return None
    device: torch.device | None = members[0].device
    if device is None:
        return None
    for member in members:
        if member.device != device:
            return None
    return device


def common_keys(members: Sequence[Any]) -> list[str]:
    """The keys every member holds, in member 0's order."""
    if not members:
        return []
    keys: list[str] = members[0]._key_names()
    rest = [member._key_names() for member in members[1:]]
    if all(other == keys for other in rest):
        return keys
    shared = set(keys).intersection(*map(set, rest))
    return [key for key in keys if key in shared]


def _name(path: tuple[str, ...]) -> object:
    return path[0] if len(path) == 1 else path


def stack_entries(parts: list[Any], dim: int, path: tuple[str, ...]) -> Any:
    """The members' entries at ``path`` stacked along ``dim``: a tensor (equal shapes
    only), a merged Python-value node, or a lazy stack of nested collections."""
    first = parts[0]
    if first.__class__ is UnbatchedTensor:  # shared by the whole batch: member 0's
        return first._with_batch_size(insert_dim(first.batch_size, dim, len(parts)))
    if isinstance(first, torch.Tensor):
        shape = first.shape
        device = first.device
        for position, part in enumerate(parts):
            if not isinstance(part, torch.Tensor):
                _raise_kinds(path, first, part, position)
            if part.shape != shape:
                _raise_shapes(path, shape, part.shape, position)
            if part.device != device:
                msg = (
                    f"entry {_name(path)!r} is on {part.device} in member {position} but on "
                    f"{device} in member 0; move the lazy stack to one device first"
                )
                raise HeterogeneousEntryError(msg)
        return torch.stack(parts, dim)
    if isinstance(first, _NonTensorNode):
        for position, part in enumerate(parts):
            if not isinstance(part, _NonTensorNode):
                _raise_kinds(path, first, part, position)
        return join_non_tensor(parts, "stack", dim, path)
    for position, part in enumerate(parts):
        if not isinstance(part, TensorCollection) or isinstance(part, _NonTensorNode):
            _raise_kinds(path, first, part, position)
    check_members(parts, f"lazy stack entry {_name(path)!r}")
    return lazily(parts, dim, stacked_size(parts, dim))


def _raise_kinds(path: tuple[str, ...], first: object, part: object, position: int) -> None:
    msg = (
        f"entry {_name(path)!r} is a {type(first).__name__} in member 0 but a "
        f"{type(part).__name__} in member {position}; read it member by member "
        "(lazy.tensordicts)"
    )
    raise MixedEntryError(msg)


def _raise_shapes(
    path: tuple[str, ...], shape: torch.Size, other: torch.Size, position: int
) -> None:
    name = _name(path)
    msg = (
        f"Failed to stack tensors within a tensordict: entry {name!r} has shape "
        f"{format_shape(other)} in member {position} but "
        f"{format_shape(shape)} in member 0, so this lazy stack has no dense value for it. "
        f"Read it with get({name!r}, as_list=True), as_padded_tensor=True or "
        "as_nested_tensor=True (layout=torch.jagged for one ragged dim), or pad the "
        "members with tclass.pad_sequence"
    )
    raise HeterogeneousEntryError(msg)


def padded_stack(
    parts: list[Any], dim: int, value: float, side: str, path: tuple[str, ...]
) -> torch.Tensor:
    """The members' tensors padded to the largest size in every dim, then stacked."""
    if side not in ("left", "right"):
        msg = f"padding_side must be 'left' or 'right', got {side!r}"
        raise ArgumentValueError(msg)
    first = parts[0]
    for position, part in enumerate(parts):
        if not isinstance(part, torch.Tensor) or part.ndim != first.ndim:
            msg = (
                f"get({_name(path)!r}, as_padded_tensor=True) needs tensors with the same "
                f"number of dims in every member; member {position} holds "
                f"{type(part).__name__} {getattr(part, 'shape', '')}"
            )
            raise HeterogeneousEntryError(msg)
    target = [max(sizes) for sizes in zip(*(part.shape for part in parts))]
    padded = []
    for part in parts:
        widths: list[int] = []
        for size, want in zip(reversed(part.shape), reversed(target)):
            missing = want - size
            widths += [missing, 0] if side == "left" else [0, missing]
        padded.append(F.pad(part, widths, value=value) if any(widths) else part)
    return torch.stack(padded, dim)


def summary_of(members: list[Any], key: str, dim: int) -> Any:
    """What the repr shows for entry ``key`` of the members: shapes with -1 where they
    differ (a member that is a lazy stack without a dense value for it: unknown)."""
    try:
        parts = [_summary_part(member, key) for member in members]
    except StackError:  # HeterogeneousEntryError included
        return LeafSummary(None, None, None)
    path = (key,)
    first = parts[0]
    if all(type(part) is UnbatchedTensor for part in parts):
        if len({part.shape for part in parts}) == 1:
            return first  # shared by the members, not stacked: its own shape (the peer's)
    if isinstance(first, (torch.Tensor, LeafSummary)):
        if not all(isinstance(part, (torch.Tensor, LeafSummary)) for part in parts):
            return LeafSummary(None, None, None)
        # the dtype the stacked tensor would have (promoted, as the peer's repr shows it)
        dtypes = [part.dtype for part in parts]
        dtype = None if None in dtypes else functools.reduce(torch.promote_types, dtypes)
        shapes = {part.shape for part in parts}
        if None in shapes or len({len(shape) for shape in shapes}) != 1:
            known = all(getattr(part, "ranks_differ", True) for part in parts)
            summary = LeafSummary(dtype, None, first.device, ranks_differ=known)
        else:
            sizes = [group[0] if len(set(group)) == 1 else -1 for group in zip(*shapes)]
            model = first if -1 in sizes and isinstance(first, torch.Tensor) else None
            stacked = (*sizes[:dim], len(parts), *sizes[dim:])
            summary = LeafSummary(dtype, stacked, first.device, model)
        # every member's device, shown after the entry where the stack has none (the peer's)
        summary.devices = frozenset().union(*(_devices(part) for part in parts))
        return summary
    if isinstance(first, _NonTensorNode) and any(p.batch_size != first.batch_size for p in parts):
        return first  # a ragged stack's Python values: shown by member 0's kind
    try:
        stacked = stack_entries(parts, dim, path)
    except StackError:  # HeterogeneousEntryError included
        return LeafSummary(None, None, None)
    if isinstance(first, _NonTensorNode):
        return ValueSummary(first, stacked)
    if isinstance(first, TensorCollection):
        return NodeSummary(type(_first_entry(members[0], key)).__name__, stacked)
    return stacked


def _devices(part: torch.Tensor | LeafSummary) -> frozenset[torch.device]:
    if isinstance(part, LeafSummary):
        return part.devices
    return frozenset((part.device,))


def _first_entry(member: Any, key: str) -> Any:
    """Entry ``key`` of the first member that is no lazy stack, down ``member``'s first
    members: the entry whose class names a nested collection in the peer's repr."""
    while getattr(member, "_is_lazy", False) and member._members:
        member = member._members[0]
    return member._entry(key)


def _summary_part(member: Any, key: str) -> Any:
    """A member's entry ``key`` for the repr; a lazy stack's own summary of it (tensors
    that need not stack)."""
    if getattr(member, "_is_lazy", False):
        summary = summary_of(member._members, key, member._stack_dim)
        if isinstance(summary, LeafSummary):
            return summary
    return member._entry(key)


def split_tensor(value: torch.Tensor, dim: int, count: int) -> list[torch.Tensor]:
    """``value`` cut along ``dim`` into ``count`` pieces; a tensor with fewer dims, or
    size 1 there, is shared by every piece (it broadcasts); a nested tensor's components
    are the pieces."""
    if value.is_nested:
        return nested_parts(value, count, dim, "the operand")
    if value.ndim <= dim:
        return [value] * count
    if value.shape[dim] == 1 and count != 1:
        return [value.select(dim, 0)] * count
    return list(value.unbind(dim))


_NUMBERS = (bool, int, float, complex, np.bool_, np.number)


def split_operand(value: Any, stack: Any, key: object, *, fill: bool = False) -> list[Any]:
    """``value`` cut along the stack dim, one part per member, for a write at ``key``.
    A Python number is a 0-d tensor, as a TensorDict stores it, so it spans no batch:
    a ``BatchMismatchError``, unless ``fill`` (an in-place write into an existing
    entry, which every member fills with it)."""
    count = len(stack._members)
    dim = stack._stack_dim
    batch = stack._batch_size
    ndim = len(batch)
    if isinstance(value, _NUMBERS) and not fill and ndim:
        raise BatchMismatchError(key, (), batch)
    if isinstance(value, (list, tuple, np.ndarray)):
        try:
            value = torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError):
            parts = _list_parts(value, dim, batch)
            # One item per member (the items at depth stack_dim of nested lists in batch
            # order), as the peer; else a Python value the members store as they do.
            return parts if parts is not None else [value] * count
    if isinstance(value, NonTensorData) and value._batch_size[:ndim] != batch:
        # one Python value spans the batch of the collection that holds it, as a
        # TensorDict's set makes it (and the peer's lazy stack): each member its part
        value = value._make(value.data, batch, value._device)
    if isinstance(value, TensorCollection):
        if value.batch_size[:ndim] != batch:
            # a collection of a shorter batch size (built without one) takes the stack's,
            # as a TensorDict stores it, when its entries fit; else BatchMismatchError
            value = fit_to_batch(cast(Any, value), batch, key)
        return list(value.unbind(dim))
    if isinstance(value, torch.Tensor) and value.is_nested:
        return nested_parts(value, count, dim, key)
    if isinstance(value, torch.Tensor):
        if value.shape[:ndim] != batch:
            if fill:  # an in-place write broadcasts, as into a TensorDict's entry
                return _broadcast_parts(value, stack, key)
            raise BatchMismatchError(key, value.shape, batch)
        return list(value.unbind(dim))
    if isinstance(value, Mapping):
        return list(TensorDict(value, batch_size=batch).unbind(dim))
    return [value] * count


def _broadcast_parts(value: torch.Tensor, stack: Any, key: object) -> list[torch.Tensor]:
    """One part per member of a tensor that does not start with the batch size, written
    in place into the entry ``key``: lined up with the entry's last dims as torch
    broadcasts it, a value without the stack dim is every member's part, one of size 1
    there too, and one with a part per member there is cut along it. Each member
    broadcasts its part into its own entry (or refuses it).

    Raises:
        BatchMismatchError: if ``key`` is no tensor entry (a missing key included).
        BatchSizeError: if ``value`` does not broadcast to the entry (more dims, a size
            at the stack dim that is neither 1 nor the number of members, or a part that
            does not broadcast to its member's entry), before any member is written.
    """
    count = len(stack._members)
    shape = _entry_shape(stack, key)
    if shape is None:  # (a missing key or a collection: the members' own checks)
        raise BatchMismatchError(key, value.shape, stack._batch_size)
    axis = value.ndim - (len(shape) - stack._stack_dim)
    if value.ndim > len(shape) or (axis >= 0 and value.shape[axis] not in (1, count)):
        raise _not_broadcast(key, value, shape)
    if axis < 0:
        parts = [value] * count
    elif value.shape[axis] == 1:
        parts = [value.select(axis, 0)] * count
    else:
        parts = list(value.unbind(axis))
    for member, part in zip(stack._members, parts):  # each checked before any write
        own = _entry_shape(member, key)
        pairs = zip(reversed(part.shape), reversed(own or ()))
        if not all(size == 1 or wanted in (-1, size) for size, wanted in pairs):
            raise _not_broadcast(key, value, shape)
    return parts


def _not_broadcast(key: object, value: torch.Tensor, shape: torch.Size) -> BatchSizeError:
    """The error of an in-place write of ``value`` that does not broadcast into the
    lazy stack's entry ``key`` (of ``shape``, -1 where the members differ)."""
    if type(key) is tuple and len(key) == 1:  # a top-level key reached by a walk: 'a'
        key = key[0]
    return BatchSizeError(
        f"cannot write a tensor of shape {list(value.shape)} in place into {key!r} of the lazy "
        f"stack (shape {list(shape)}): it neither starts with the batch size nor "
        "broadcasts to the entry (to each member's part); nothing was written"
    )


def _entry_shape(stack: Any, key: object) -> torch.Size | None:
    """The shape of the stacked tensor entry ``key`` of ``stack``, -1 where its
    members differ (read without stacking), or None when it is no tensor."""
    try:
        if not issubclass(stack.entry_class(key), torch.Tensor):
            return None
        return torch.Size(stack.get_item_shape(key))
    except TclassError:
        return None


def nested_parts(value: torch.Tensor, count: int, dim: int, key: object) -> list[torch.Tensor]:
    """A nested tensor's components, one per member of a stack along dim 0 (each member
    checks its own part), as the peer splits it."""
    parts = list(value.unbind(0))
    if dim != 0 or len(parts) != count:
        msg = (
            f"a nested tensor of {len(parts)} components written at {key!r} needs a lazy "
            f"stack of as many members along dim 0; this one has {count} along dim {dim}. "
            "Write the members one by one (lazy.tensordicts) or give a padded tensor"
        )
        raise ShapeError(msg)
    return parts


def _list_parts(value: Any, dim: int, batch: torch.Size) -> list[Any] | None:
    """Nested lists laid out like ``batch`` (in batch order) cut at depth ``dim``: one
    nested list per member, the others' levels kept; None when the lists do not have
    the batch sizes down to that depth."""
    if not isinstance(value, list) or batch[0] not in (-1, len(value)):
        return None
    if dim == 0:
        return list(value)
    columns = [_list_parts(item, dim - 1, batch[1:]) for item in value]
    if any(column is None for column in columns):
        return None
    return [[column[j] for column in columns if column is not None] for j in range(batch[dim])]


def nested_to_update(
    stack: Any, key: Any, value: Any, is_leaf: Callable[[type], bool] | None
) -> TensorCollection | None:
    """The nested collection of ``stack`` at ``key`` that ``value`` (a mapping or a
    collection) is merged into by ``update``, or None when ``value`` replaces the entry."""
    if not isinstance(value, (Mapping, TensorCollection)):
        return None
    if isinstance(value, TensorCollection) and (
        value._is_leaf_node or (is_leaf is not None and is_leaf(type(value)))
    ):
        return None
    if issubclass(stack.entry_class(key), torch.Tensor):
        return None  # a tensor is replaced: not stacked (its members' shapes may differ)
    target = stack.get(key, None)
    if not isinstance(target, TensorCollection) or target._is_leaf_node:
        return None
    return target
