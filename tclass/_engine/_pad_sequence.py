"""Padding members of different lengths to a common one and stacking them:
``pad_sequence``, and its inverse ``unpad_sequence``.

Both work on TensorDicts and tensorclass records (records come back as their class) and
recurse into nested collections. Tensors are padded with
``torch.nn.utils.rnn.pad_sequence``; Python values are placed at each member's valid
positions, ``None`` in the padding (``pad_sequence``'s docstring gives the cases).

``pad_sequence`` is built for batching many samples: one torch call per key, one validity
mask computed once and shared by every key, and results assembled with the unchecked
constructors, since every shape has already been checked here. Padding one collection's
own batch dims is ``pad`` (``_pad.py``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from operator import attrgetter, itemgetter
from typing import Any, Literal, NoReturn, TypeAlias, TypeVar, overload

import torch
from torch.nn.utils.rnn import pad_sequence as _torch_pad_sequence

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._core import _keys
from tclass._core._batch import format_shape
from tclass._core._options import OPTIONS
from tclass._core._records import RecordLike, is_record, is_record_class, storage_of
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._lazy._build import lazy_stack
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData, _NonTensorNode, same_value
from tclass._engine._nontensor_stack import join_non_tensor
from tclass._engine._ops import join_unbatched
from tclass._engine._pad import _pad_node
from tclass._engine._ragged_values import RaggedNonTensorStack
from tclass._engine._td import TensorDict
from tclass.errors import (
    ArgumentValueError,
    DimError,
    InvalidKeyError,
    KeyConflictError,
    KeyNotFoundError,
    StackError,
)

__all__ = ["pad_sequence", "unpad_sequence"]

C = TypeVar("C", bound=TensorDictBase)
T = TypeVar("T", bound=TensorDict)
R = TypeVar("R", bound=RecordLike)
MaskKey: TypeAlias = Literal[True] | str | tuple[str, ...]
PaddingValue: TypeAlias = float | Mapping[Any, float]


_Tensor = torch.Tensor
_numel = torch.Tensor.numel
_dim = torch.Tensor.dim
_get_dtype = attrgetter("dtype")
_get_device = attrgetter("device")


# --- pad_sequence ---------------------------------------------------------------------


class _Plan:
    """What every level of one pad_sequence call shares."""

    __slots__ = (
        "fill",
        "fills",
        "side",
        "masks",
        "mask_batch",
        "lengths",
        "length",
        "pad_dim",
        "_shared",
    )

    def __init__(self, fill: PaddingValue, side: str, masks: bool, pad_dim: int) -> None:
        # One value for every leaf, or one per leaf path (the others get 0).
        self.fills: dict[tuple[str, ...], float] = {}
        if isinstance(fill, Mapping):
            self.fills = {_keys.key_path(key): value for key, value in fill.items()}
            fill = 0.0
        self.fill = fill
        self.side = side
        self.masks = masks
        self.pad_dim = pad_dim
        self.mask_batch = torch.Size([])  # the result's batch size, set once known
        # Padding a batch dim: the members' lengths, and the one mask all keys share.
        self.lengths: list[int] | None = None
        self.length = 0
        self._shared: dict[torch.device, _Tensor] = {}

    def batch_mask(self, device: torch.device) -> _Tensor:
        """The validity mask over the result's batch, computed once per device."""
        mask = self._shared.get(device)
        if mask is None:
            assert self.lengths is not None
            lengths = torch.tensor(self.lengths, device=device)
            rows = _valid(lengths, self.length, self.side == "left")
            shape = [len(self.lengths)] + [1] * len(self.mask_batch[1:])
            shape[self.pad_dim + 1] = self.length
            mask = self._shared[device] = rows.view(shape).expand(self.mask_batch)
        return mask


def _valid(lengths: _Tensor, length: int, left: bool) -> _Tensor:
    """``[N, length]``: True at the positions holding member data."""
    positions = torch.arange(length, device=lengths.device)
    if left:
        return positions >= (length - lengths)[:, None]
    return positions < lengths[:, None]


@overload
def pad_sequence(
    seq: Sequence[C],
    pad_dim: int = 0,
    padding_value: PaddingValue = 0.0,
    *,
    return_mask: Literal[False] = False,
    padding_side: str = "right",
) -> C: ...
@overload
def pad_sequence(
    seq: Sequence[R],
    pad_dim: int = 0,
    padding_value: PaddingValue = 0.0,
    *,
    return_mask: MaskKey,
    padding_side: str = "right",
) -> tuple[R, TensorDict]: ...
@overload
def pad_sequence(
    seq: Sequence[T],
    pad_dim: int = 0,
    padding_value: PaddingValue = 0.0,
    *,
    return_mask: MaskKey,
    padding_side: str = "right",
) -> T: ...
@overload
def pad_sequence(
    seq: Sequence[C],
    pad_dim: int = 0,
    padding_value: PaddingValue = 0.0,
    *,
    return_mask: bool | str | tuple[str, ...],
    padding_side: str = "right",
) -> C | tuple[C, TensorDict]: ...


def pad_sequence(
    seq: Sequence[Any],
    pad_dim: int = 0,
    padding_value: PaddingValue = 0.0,
    *,
    return_mask: bool | str | tuple[str, ...] = False,
    padding_side: str = "right",
) -> Any:
    """Pads collections of different lengths to a common one and stacks them on a new dim 0.

    Args:
        seq: TensorDicts, lazy stacks or tensorclass records, with the same keys. With
            a record first, the result is a record of its class (the others' entries,
            records of other classes or TensorDicts, padded into it, as the peer's).
        pad_dim: the dim to pad, counted from the first dim of each entry (a negative
            one from the last dim, when every tensor entry has as many dims). A batch dim
            (``pad_dim < batch_dims``): batch sizes may differ there only, every entry is
            padded to the longest member and the result's batch is
            ``[N, *batch with that length at pad_dim]``. A feature dim: batch sizes must
            be equal, each key is padded to its own longest length, and the result's
            batch is ``[N, *batch]``.
        padding_value: the value of the padded tensor elements, or a mapping from leaf
            keys (nested keys as tuples) to their values, the others padded with 0.
        return_mask: ``False`` for no masks. ``True`` stores them under the key
            ``"masks"``; a string or a tuple of strings under that (nested) key. The masks
            are a TensorDict shaped like the tensor leaves (Python values have none):
            bool tensors, True where a member has data. Padding a batch dim, each is
            ``[N, *result batch[1:]]`` (the same for every key); padding a feature dim,
            ``[N, *padded_leaf_shape[:pad_dim + 1]]``. A tensorclass cannot hold a key
            that is not a field, so records come back as ``(padded, masks)`` instead
            (the key is then not used; the peer refuses masks for tensorclasses).
        padding_side: ``"right"`` puts the padding after the data, ``"left"`` before.

    Python values: padding a batch dim, a value shared and equal across members stays one
    shared value (``set_capture_non_tensor_stack(True)``); otherwise each member's values
    are padded on their own (``None`` in the new slots) and kept as one member of the
    result's value stack, as the peer's lazy stack of them: ``padded[i]`` reads member
    ``i``'s values as given (one value for a member not padded). Padding a feature dim,
    or where no member is shorter than the longest, they are stacked as
    :func:`tclass.stack` does.

    Raises:
        StackError: if ``seq`` is empty or the members differ in keys, devices,
            batch sizes outside ``pad_dim`` or entry shapes outside ``pad_dim``.
        DimError: if an entry has no dim ``pad_dim``, or ``pad_dim`` is negative and the
            tensor entries differ in their number of dims.
        KeyConflictError: if the mask key is already an entry of the result.
        KeyNotFoundError: if a key of a ``padding_value`` mapping names no tensor leaf.
        ValueError: if ``padding_side`` is neither ``"right"`` nor ``"left"``.

    Example:
        >>> seq = [TensorDict({"x": torch.ones(n)}, [n]) for n in (2, 3)]
        >>> out = pad_sequence(seq, return_mask=True)
        >>> out["x"]
        tensor([[1., 1., 0.],
                [1., 1., 1.]])
        >>> out["masks", "x"]
        tensor([[ True,  True, False],
                [ True,  True,  True]])
    """
    members, record_cls = _sequence_members(seq)
    pad_dim = _check_pad_dim(_from_first_dim(members, pad_dim))
    if padding_side not in ("right", "left"):
        msg = f"pad_sequence: padding_side must be 'right' or 'left', got {padding_side!r}"
        raise ArgumentValueError(msg)
    mask_key = _mask_key(return_mask)
    plan = _Plan(padding_value, padding_side, mask_key is not None, pad_dim)
    if plan.fills:
        _check_fill_keys(plan.fills, members[0])
    batch, lengths = _level_batch(members, pad_dim, ())
    plan.mask_batch = batch
    if lengths is not None:
        plan.lengths, plan.length = lengths, batch[pad_dim + 1]
    padded, masks = _pad_level(members, batch, lengths, plan, ())
    if record_cls is not None:
        padded = record_cls._rebuild(padded)
    if mask_key is None:
        return padded
    assert masks is not None
    if is_record(padded):
        return padded, masks
    if masks.is_empty():
        return padded  # as the peer: no tensor, no masks
    if mask_key in padded:
        msg = (
            f"pad_sequence: the result already has an entry {mask_key!r}; pass another key "
            "as return_mask=... to store the masks under"
        )
        raise KeyConflictError(msg)
    padded.set(mask_key, masks)
    return padded


def _check_fill_keys(fills: Mapping[tuple[str, ...], float], first: Any) -> None:
    leaves = {
        _keys.key_path(key)
        for key, value in first.items(include_nested=True, leaves_only=True)
        if isinstance(value, _Tensor)
    }
    unknown = [path for path in fills if path not in leaves]
    if unknown:
        shown = [_name(path) for path in unknown]
        known = ", ".join(_name(path) for path in sorted(leaves))
        msg = (
            f"pad_sequence: padding_value names {', '.join(shown)}, which are not tensor "
            f"entries of the members (their tensor leaves: {known}); nested keys are tuples"
        )
        raise KeyNotFoundError(msg)


def _sequence_members(seq: Sequence[Any]) -> tuple[list[Any], Any]:
    members = list(seq)
    if not members:
        msg = "pad_sequence expects a non-empty sequence of TensorDicts or tensorclass records"
        raise StackError(msg)
    kind = type(members[0])
    if not issubclass(kind, TensorDictBase) or issubclass(kind, _NonTensorNode):
        msg = f"pad_sequence expects TensorDicts or tensorclass records, got a {kind.__name__}"
        raise StackError(msg)
    return _one_kind(_as_first_kind(members))


def _one_kind(parts: list[Any], where: str = "") -> tuple[list[Any], Any]:
    """``parts`` padded as they are, with ``None``; or, when ``parts[0]`` is a record and
    some others are not of its class (TensorDicts, lazy stacks, records of another
    class), the collections that hold their entries, padded as TensorDicts, with member
    0's class, which the result is made a record of (checked by the class), as the peer's
    result is of member 0's class."""
    kind = type(parts[0])
    if is_record_class(kind) and any(type(part) is not kind for part in parts):
        _check_one_kind(parts, where, mixed=True)
        return [storage_of(part) for part in parts], kind
    _check_one_kind(parts, where)
    return parts, None


def _as_first_kind(members: list[Any]) -> list[Any]:
    """Records beside lazy stacks of records of their class (slices of one stack: ``x[:0]``
    of a lazy stack of records is a record) padded as member 0's kind, as the peer's."""
    kind = type(members[0])
    if not is_record_class(kind):
        return [storage_of(m) if type(m) is not kind and is_record(m) else m for m in members]
    return [
        lazy_stack(list(m.tensordicts), m.stack_dim)
        if type(m) is LazyStackedTensorDict and all(type(r) is kind for r in m.tensordicts)
        else m
        for m in members
    ]


def _check_one_kind(parts: list[Any], where: str = "", mixed: bool = False) -> None:
    """Records of one class, or collections that are not records (TensorDicts and lazy
    stacks mix, as in the peer); with ``mixed``, records of any class and collections."""
    kind = type(parts[0])
    plain = mixed or not is_record_class(kind)
    for position, part in enumerate(parts):
        other = type(part)
        if other is kind or (plain and _is_plain_collection(other)):
            continue
        if mixed and is_record_class(other):
            continue
        if where:
            what = f"entry {where} is a {kind.__name__} in member 0 but a {other.__name__}"
            msg = f"pad_sequence: {what} in member {position}"
        else:
            what = f"member {position} is a {other.__name__} but member 0 is a {kind.__name__}"
            msg = f"pad_sequence: {what}"
        msg += "; the members must be tensorclass records, TensorDicts or lazy stacks"
        raise StackError(msg)


def _is_plain_collection(kind: type) -> bool:
    return (
        issubclass(kind, TensorDictBase)
        and not issubclass(kind, _NonTensorNode)
        and not is_record_class(kind)
    )


def _entry_maps(members: list[Any]) -> list[Mapping[str, Value]]:
    kind = type(members[0])
    if all(type(member) is kind for member in members):
        return list(map(kind._get_entries, members))
    return [type(member)._get_entries(member) for member in members]


def _from_first_dim(members: list[Any], pad_dim: object) -> object:
    """A negative ``pad_dim`` (from the last dim of each entry, as the peer's) counted from
    the first dim, when every tensor entry has as many dims (a ``DimError`` otherwise)."""
    if isinstance(pad_dim, bool) or not isinstance(pad_dim, int) or pad_dim >= 0:
        return pad_dim
    leaves = (m.values(include_nested=True, leaves_only=True) for m in members)
    ndims = {leaf.ndim for values in leaves for leaf in values if isinstance(leaf, _Tensor)}
    if len(ndims) == 1 and next(iter(ndims)) + pad_dim >= 0:
        return next(iter(ndims)) + pad_dim
    named = "different dims of them" if len(ndims) > 1 else "no dim of them"
    msg = (
        f"pad_sequence: a negative pad_dim ({pad_dim}) counts from the last dim of each entry, "
        f"and the tensor entries have {sorted(ndims)} dims, so it names {named}; give pad_dim "
        "counted from the first dim of each entry (batch dims included)"
    )
    raise DimError(msg)


def _check_pad_dim(pad_dim: object) -> int:
    if isinstance(pad_dim, bool) or not isinstance(pad_dim, int) or pad_dim < 0:
        msg = (
            f"pad_sequence: pad_dim must be a non-negative int counted from the first dim "
            f"of each entry, got {pad_dim!r}"
        )
        raise DimError(msg)
    return pad_dim


def _mask_key(return_mask: object) -> str | tuple[str, ...] | None:
    if return_mask is False:
        return None
    if return_mask is True:
        return "masks"
    if isinstance(return_mask, (str, tuple)):
        return _keys.unravel_key(return_mask)
    msg = (
        f"pad_sequence: return_mask must be a bool, a key string or a tuple of strings, "
        f"got {return_mask!r}"
    )
    raise InvalidKeyError(msg)


def _level_batch(
    members: list[Any], pad_dim: int, path: tuple[str, ...]
) -> tuple[torch.Size, list[int] | None]:
    """The padded batch ``[N, ...]`` of one level, and the members' lengths along
    ``pad_dim`` when it is one of this level's batch dims (``None`` otherwise)."""
    sizes: list[torch.Size] = list(map(type(members[0])._get_batch_size, members))
    first = sizes[0]
    ndim = len(first)
    if pad_dim >= ndim:  # a feature dim here: the batch is stacked as it is
        if sizes.count(first) != len(sizes):
            position = next(i for i, size in enumerate(sizes) if size != first)
            _batch_mismatch(path, position, sizes[position], first, pad_dim, feature=True)
        return torch.Size((len(sizes), *first)), None
    before, after = first[:pad_dim], first[pad_dim + 1 :]
    if ndim == 1 and list(map(len, sizes)).count(1) == len(sizes):
        lengths = [size[0] for size in sizes]  # the common case, without slicing sizes
    else:
        lengths = []
        for position, size in enumerate(sizes):
            if len(size) != ndim or size[:pad_dim] != before or size[pad_dim + 1 :] != after:
                _batch_mismatch(path, position, size, first, pad_dim, feature=False)
            lengths.append(size[pad_dim])
    if min(lengths) < 0:
        _ragged_pad_dim(path, lengths.index(min(lengths)), sizes, pad_dim)
    return torch.Size((len(sizes), *before, max(lengths), *after)), lengths


def _ragged_pad_dim(
    path: tuple[str, ...], position: int, sizes: list[torch.Size], pad_dim: int
) -> NoReturn:
    """A member ragged at ``pad_dim`` (a lazy stack whose members differ there, its size
    -1) has no one length to pad from; the peer refuses it too."""
    msg = (
        f"pad_sequence{_at(path)}: member {position} has batch size "
        f"{format_shape(sizes[position])}, ragged (-1) at pad_dim {pad_dim}: it has no one "
        "length to pad; pad its members instead (pad_sequence(list(stack.tensordicts)))"
    )
    raise StackError(msg)


def _batch_mismatch(
    path: tuple[str, ...],
    position: int,
    size: torch.Size,
    first: torch.Size,
    pad_dim: int,
    *,
    feature: bool,
) -> NoReturn:
    rule = (
        f"pad_dim {pad_dim} is not a batch dim, so batch sizes must be equal"
        if feature
        else f"batch sizes may differ only at pad_dim {pad_dim}"
    )
    msg = (
        f"pad_sequence{_at(path)}: member {position} has batch size {format_shape(size)} "
        f"but member 0 has {format_shape(first)}; {rule}"
    )
    raise StackError(msg)


def _at(path: tuple[str, ...]) -> str:
    return f" at {path!r}" if path else ""


def _pad_level(
    members: list[Any],
    batch: torch.Size,
    lengths: list[int] | None,
    plan: _Plan,
    path: tuple[str, ...],
) -> tuple[Any, TensorDict | None]:
    """One level padded: every key of the members, and the masks of its tensors."""
    first = members[0]
    device = _common_device(members, path)
    maps = _entry_maps(members)
    reference = maps[0]
    if sum(map(len, maps)) != len(reference) * len(maps):
        _raise_key_mismatch(maps, path)
    values: dict[str, Value] = {}
    masks: dict[str, Value] = {}
    for key, entry in reference.items():
        try:
            parts = list(map(itemgetter(key), maps))
        except KeyError:
            _raise_key_mismatch(maps, path)
        where = path + (key,)
        if entry.__class__ is UnbatchedTensor:  # shared by the batch: as stack, member 0's
            values[key] = join_unbatched(parts, where)._with_batch_size(batch)
        elif isinstance(entry, _Tensor):
            values[key] = tensor = _pad_tensors(parts, lengths, device, plan, where)
            if plan.masks:
                masks[key] = _tensor_mask(parts, tensor, plan)
        elif isinstance(entry, _NonTensorNode):
            values[key] = _pad_nodes(parts, lengths, plan, where)
        else:
            values[key], sub_masks = _pad_nested(parts, plan, where)
            if sub_masks is not None and not sub_masks.is_empty():  # as the peer
                masks[key] = sub_masks
    padded = first._new_like(values, batch, device)
    if not plan.masks:
        return padded, None
    return padded, TensorDict._new_unchecked(masks, plan.mask_batch, device)


def _common_device(members: list[Any], path: tuple[str, ...]) -> torch.device | None:
    """The members' device, or ``None`` if some have none (their tensors are then checked
    one by one); two different devices are an error."""
    devices = set(map(_get_device, members))
    if len(devices) == 1:
        return members[0].device  # type: ignore[no-any-return]
    devices.discard(None)
    if len(devices) > 1:
        first = next(member.device for member in members if member.device is not None)
        position, other = next(
            (i, member.device)
            for i, member in enumerate(members)
            if member.device is not None and member.device != first
        )
        msg = (
            f"pad_sequence{_at(path)}: member {position} is on {other} but an earlier member "
            f"is on {first}; move them to one device first"
        )
        raise StackError(msg)
    return None


def _pad_nested(
    parts: list[Any], plan: _Plan, path: tuple[str, ...]
) -> tuple[Any, TensorDict | None]:
    parts, record_cls = _one_kind(parts, _name(path))
    batch, lengths = _level_batch(parts, plan.pad_dim, path)
    padded, masks = _pad_level(parts, batch, lengths, plan, path)
    if record_cls is not None:
        padded = record_cls._rebuild(padded)
    return padded, masks


def _name(path: tuple[str, ...]) -> str:
    return repr(path[0] if len(path) == 1 else path)


def _raise_key_mismatch(maps: list[Mapping[str, Value]], path: tuple[str, ...]) -> NoReturn:
    keys = list(maps[0])
    for position, entries in enumerate(maps):
        missing = [key for key in keys if key not in entries]
        extra = [key for key in entries if key not in maps[0]]
        if missing or extra:
            what = f"{missing[0]!r} is missing" if missing else f"{extra[0]!r} is extra"
            msg = (
                f"pad_sequence{_at(path)}: member {position} has different keys from member "
                f"0: {what} (missing: {missing}, extra: {extra}); every member must have "
                "the same keys"
            )
            raise StackError(msg)
    raise AssertionError("unreachable: the key sets were found to differ")


# --- pad_sequence: tensors --------------------------------------------------------------


def _pad_tensors(
    parts: list[Any],
    lengths: list[int] | None,
    device: torch.device | None,
    plan: _Plan,
    path: tuple[str, ...],
) -> _Tensor:
    """``[N, *shape with the longest length at pad_dim]``, one torch call for all members.

    ``lengths`` are the members' lengths when pad_dim is a batch dim of this level, and
    ``device`` the level's device (``None``: its tensors may be anywhere).
    """
    pad_dim = plan.pad_dim
    tensors = parts
    if not _known_to_fit(parts, lengths, device, pad_dim):
        tensors = _checked_tensors(parts, pad_dim, path)
    if pad_dim:  # torch pads dim 0 of each tensor: move pad_dim there and back
        tensors = [tensor.movedim(pad_dim, 0) for tensor in tensors]
    try:
        out = _torch_pad_sequence(
            tensors,
            batch_first=True,
            padding_value=plan.fills.get(path, plan.fill) if plan.fills else plan.fill,
            padding_side=plan.side,
        )
    except RuntimeError:
        _checked_tensors(parts, pad_dim, path)  # names a mismatch the quick check let by
        raise
    return out.movedim(1, pad_dim + 1) if pad_dim else out


def _known_to_fit(
    parts: list[Any], lengths: list[int] | None, device: torch.device | None, pad_dim: int
) -> bool:
    """A quick check (a few C-level passes) that ``parts`` pad as they are; False sends
    them to the full check, which also names what is wrong.

    torch copies each member into its slot with broadcasting: a member whose other dims
    differ either fails there, or broadcasts from fewer elements. So equal dim counts,
    dtypes, devices and a total element count of ``sum(lengths) * other dims`` rule out
    every silent mismatch, as long as no other dim is 0 (nothing to count then).
    """
    if lengths is None:
        return False  # a feature dim: lengths are read off each tensor by the full check
    first = parts[0]
    shape = first.shape
    per_step = (
        first.numel() // shape[pad_dim]
        if shape[pad_dim]
        else math.prod(shape[:pad_dim] + shape[pad_dim + 1 :])
    )
    if not per_step:
        return False
    try:
        if sum(map(_numel, parts)) != sum(lengths) * per_step:
            return False
        if list(map(_dim, parts)).count(first.ndim) != len(parts):
            return False
    except TypeError:  # a member holds something else than a tensor here
        return False
    if len(set(map(_get_dtype, parts))) != 1:
        return False
    # A collection with a device holds its tensors there: only device=None needs a look.
    return device is not None or len(set(map(_get_device, parts))) == 1


def _checked_tensors(parts: list[Any], pad_dim: int, path: tuple[str, ...]) -> list[_Tensor]:
    """``parts`` once they are known to pad together: torch would broadcast mismatched
    trailing dims and cast to member 0's dtype silently, so both are checked here."""
    first = parts[0]
    shape, ndim, device = first.shape, first.ndim, first.device
    if ndim <= pad_dim:
        msg = (
            f"pad_sequence: entry {_name(path)} has shape {format_shape(shape)}, which has "
            f"no dim {pad_dim} to pad; choose a pad_dim below {ndim} or reshape the entry"
        )
        raise DimError(msg)
    before, after = shape[:pad_dim], shape[pad_dim + 1 :]
    dtypes: set[torch.dtype] = set()
    for position, part in enumerate(parts):
        if not isinstance(part, _Tensor):
            msg = (
                f"pad_sequence: entry {_name(path)} is a tensor in member 0 but a "
                f"{type(part).__name__} in member {position}"
            )
            raise StackError(msg)
        size = part.shape
        if len(size) != ndim or size[pad_dim + 1 :] != after or size[:pad_dim] != before:
            msg = (
                f"pad_sequence: entry {_name(path)} has shape {format_shape(size)} in member "
                f"{position} but {format_shape(shape)} in member 0; shapes may differ only "
                f"at pad_dim {pad_dim}"
            )
            raise StackError(msg)
        if part.device != device:
            msg = (
                f"pad_sequence: entry {_name(path)} is on {part.device} in member {position} "
                f"but on {device} in member 0; move them to one device first"
            )
            raise StackError(msg)
        dtypes.add(part.dtype)
    if len(dtypes) > 1:  # promote, as torch.stack and tclass.stack do
        dtype = functools.reduce(torch.promote_types, dtypes)
        return [part.to(dtype) for part in parts]
    return parts


def _tensor_mask(parts: list[_Tensor], padded: _Tensor, plan: _Plan) -> _Tensor:
    """The validity mask of one padded tensor (a copy: users may write into masks)."""
    if plan.lengths is not None:  # a batch dim: the shared mask
        return plan.batch_mask(padded.device).clone()
    pad_dim = plan.pad_dim
    lengths = torch.tensor([part.shape[pad_dim] for part in parts], device=padded.device)
    length = padded.shape[pad_dim + 1]
    rows = _valid(lengths, length, plan.side == "left")
    view = [len(parts)] + [1] * pad_dim + [length]
    return rows.view(view).expand(padded.shape[: pad_dim + 2]).clone()


# --- pad_sequence: Python values --------------------------------------------------------


def _pad_nodes(
    parts: list[Any], lengths: list[int] | None, plan: _Plan, path: tuple[str, ...]
) -> _NonTensorNode:
    for position, part in enumerate(parts):
        if not isinstance(part, _NonTensorNode):
            msg = (
                f"pad_sequence: entry {_name(path)} holds a Python value in member 0 but a "
                f"{type(part).__name__} in member {position}"
            )
            raise StackError(msg)
    if lengths is None:  # a feature dim: the batch does not change, stack as stack does
        return join_non_tensor(parts, "stack", 0, path)
    first = parts[0]
    pad_dim = plan.pad_dim
    shape = list(first.batch_size)
    shape[pad_dim] = max(lengths)
    shape.insert(0, len(parts))
    if all(part.batch_size[pad_dim] == shape[pad_dim + 1] for part in parts):
        # No member is padded: stacked as stack stacks them (one MetaData if they hold one
        # object; a value over no elements kept), as the peer's lazy stack of the members
        return join_non_tensor(parts, "stack", 0, path)
    device = first.device
    if OPTIONS.capture_non_tensor_stack and all(
        type(part) is NonTensorData and part.device == device and same_value(part.data, first.data)
        for part in parts
    ):
        # Captured: one value shared by every member describes the padded elements too.
        return NonTensorData._make(first.data, torch.Size(shape), device)
    return _padded_members(parts, shape[pad_dim + 1], plan.side == "left", pad_dim)


def _padded_members(parts: list[Any], length: int, left: bool, pad_dim: int) -> _NonTensorNode:
    """Each member's values padded as ``pad`` pads them, to ``length`` along ``pad_dim``
    (``None`` in the new slots), kept as the members of one value stack along dim 0, as
    the peer's lazy stack of them: each reads back as it was padded (a member that is not
    padded as it was given)."""
    padded = []
    for part in parts:
        short = length - part.batch_size[pad_dim]
        pairs = ((0, 0),) * pad_dim + ((short, 0) if left else (0, short),)
        padded.append(_pad_node(part, pairs) if short else part)
    device = padded[0].device
    if any(part.device != device for part in padded):
        device = None
    return RaggedNonTensorStack._of(padded, 0, device)


# --- unpad_sequence ---------------------------------------------------------------------


def unpad_sequence(
    padded: TensorDictBase, mask: TensorDictBase | torch.Tensor | None = None, *, pad_dim: int = 0
) -> LazyStackedTensorDict:
    """The members :func:`pad_sequence` padded, without their padding: a lazy stack.

    Args:
        padded: a result of :func:`pad_sequence` (dim 0 runs over the members).
        mask: the validity masks: a TensorDict of them per key (``pad_sequence``'s
            ``return_mask``), or one bool tensor for every key. ``None`` reads them from
            the ``"masks"`` entry of ``padded``, which is then left out of the members.
        pad_dim: the ``pad_dim`` given to ``pad_sequence``.

    Each member comes back with its own length along the unpadded batch dim, so the
    stack is ragged there (batch size ``[members, -1, ...]``, as the peer's).

    Raises:
        ValueError: if there is no mask to read.
        DimError: if ``pad_dim`` is negative.
    """
    pad_dim = _check_pad_dim(pad_dim)
    source: Any = padded
    if mask is None:
        found = padded.get("masks", None) if "masks" in padded.keys() else None
        if found is None:
            msg = (
                "unpad_sequence needs a mask: pass mask=..., or pad with "
                "pad_sequence(..., return_mask=True)"
            )
            raise ArgumentValueError(msg)
        mask = found
        source = padded.exclude("masks")
    member_dims = source.batch_dims - 1
    members = []
    for position, member in enumerate(source.unbind(0)):
        if pad_dim < member_dims:
            keep = _kept(_first_mask(mask)[position], pad_dim)
            member = member[(slice(None),) * pad_dim + (keep,)]
        else:
            member = member.named_apply(
                lambda key, leaf, i=position: leaf.index_select(
                    pad_dim, _kept(_mask_of(mask, key)[i], pad_dim)
                ),
                nested_keys=True,
            )
        members.append(member)
    stacked: LazyStackedTensorDict = LazyStackedTensorDict(*members)
    return stacked


def _first_mask(mask: TensorDictBase | torch.Tensor) -> torch.Tensor:
    if isinstance(mask, torch.Tensor):
        return mask
    for value in mask.values(include_nested=True, leaves_only=True):
        return value
    msg = "unpad_sequence: the masks hold no tensor; pass the mask pad_sequence returned"
    raise ArgumentValueError(msg)


def _mask_of(mask: TensorDictBase | torch.Tensor, key: Any) -> torch.Tensor:
    if isinstance(mask, torch.Tensor):
        return mask
    found = mask.get(key)
    if not isinstance(found, torch.Tensor):
        msg = f"unpad_sequence: the masks have no entry {key!r}; pass a mask for every key"
        raise ArgumentValueError(msg)
    return found


def _kept(valid: torch.Tensor, pad_dim: int) -> torch.Tensor:
    """The positions along ``pad_dim`` where a member's mask holds data."""
    moved = valid.movedim(pad_dim, 0)  # (sizes given whole: a reshape to -1 fails on none)
    along = moved.reshape(moved.shape[0], math.prod(moved.shape[1:])).any(1)
    return along.nonzero().squeeze(1)
