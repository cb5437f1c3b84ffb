"""Python values inside a collection: ``NonTensorData`` (here) and ``NonTensorStack``
(``_nontensor_stack.py``).

A non-tensor value (a string, a number, a dict, any object) lives in a collection as a
node with a batch size but no entries:

* ``NonTensorData`` holds one value shared by every element of the batch. Shape ops and
  indexing only change its batch size; the value is never copied or split, so
  ``broadcast_to((1000,))`` of a label is still one label.
* ``NonTensorStack`` holds one value per element, in a flat list shaped like the batch.
  It appears when nodes are stacked or concatenated with different values, when one
  element is overwritten with a different value, and (as the peer) when ``expand`` adds
  dims to or ``unsqueeze`` grows a ``NonTensorData`` (the value shared, not copied).

Both answer the collection protocol, so the engine indexes, reshapes and stacks them like
any nested collection. A structural op on a stack is worked out on a tensor of element
numbers (``arange(numel).reshape(batch)``): torch does the index arithmetic, numpy then
gathers the values, so every index and shape op torch accepts works here too.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, Literal, cast, overload

import numpy as np
import torch
from typing_extensions import Self, TypeVar

from tclass._base._inline import inline_inherited
from tclass._base._provided import ENGINE
from tclass._base._tensordict_base import Value
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._leaf_walk import Resize
from tclass._core import _batch
from tclass._core._batch import BatchSizeLike, as_batch_size
from tclass._core._device import DeviceLike, as_device
from tclass._core._method_names import name_methods_after
from tclass._core._names import DimName
from tclass._core._safe_globals import allow_unpickling, checked_class
from tclass._core._tracing import tracing
from tclass._engine._nontensor_ops import NonTensorOps
from tclass._engine._nontensor_state import NodeState, kept
from tclass._engine._typed_metadata import typed_metadata
from tclass._engine._value_positions import (
    batch_shapes,
    copy_containers,
    copy_value,
    same_value,
    unchanged_by,
)
from tclass.errors import (
    BatchMismatchError,
    BatchSizeError,
    ClassDefinitionError,
    DimError,
    EntryTypeError,
    InPlaceWriteError,
    LockedError,
    PickleRefusedError,
    UnknownFieldError,
)

if TYPE_CHECKING:
    from tclass._engine._nontensor_stack import NonTensorStack

__all__ = [
    "PADDED",
    "Meta",
    "MetaData",
    "NonTensorData",
    "is_non_tensor",
    "same_value",
]

_new_instance = object.__new__

# A stack's ``_meta`` (whether its members are ``MetaData``): ``PADDED`` for a pad's
# result, whose new members (``None``) are ``NonTensorData`` (see ``NonTensorStack``).
PADDED: Final = "padded"
Meta = bool | Literal["padded"]


@dataclasses.dataclass
class _PeerFields:
    """The fields ``dataclasses.fields`` names for a ``NonTensorData``: the peer's node is
    a dataclass with these three. The last two are not arguments here (``init=False``), so
    ``dataclasses.replace(node, data=...)`` builds a node as the peer's does."""

    data: Any
    _metadata: dict[str, Any] | None = dataclasses.field(default=None, init=False)
    _is_non_tensor: bool = dataclasses.field(default=True, init=False)


class _NonTensorNode(NodeState):
    """What both node kinds share: no entries, a device, a lock flag (see
    :class:`NonTensorOps`), where it is saved, shared or read from (see
    :class:`NodeState`), and the operations that mix the two kinds."""

    # _member_of: set on what indexing a NonTensorStack gives, (the stack, the element
    # numbers it reads): writes into it by index reach the stack, as into the peer's
    # members (unset elsewhere). _in_folder: True on a node saved in a folder or read
    # from one, and on what indexing it gives (unset elsewhere): see _is_saved.
    __slots__ = (
        "_device",
        "_locked",
        "_lock_parents",
        "_member_of",
        "_in_folder",
        "_in_shared",
        "_saved_folder",
        "_consolidated",  # consolidate()'s state (read with getattr: unset elsewhere)
        "__weakref__",
    )

    _is_leaf_node: ClassVar[bool] = True
    _is_value_node: ClassVar[bool] = True  # math leaves the value alone: see NonTensorOps._rebuilt

    _device: torch.device | None
    _locked: bool
    _in_folder: bool  # see __slots__ (read with getattr: unset on most nodes)
    _in_shared: bool  # True in a collection put in shared memory (read with getattr too)
    # the folder holding this node's meta.json: set on the node a save gives or a load
    # reads, where its collection's saved_path names a folder (unset elsewhere)
    _saved_folder: str

    @property
    def data(self) -> Any:
        raise NotImplementedError

    def _read(self) -> Any:
        """What ``collection[key]`` gives for this node: the value (one value), or the
        values as nested lists (one per element)."""
        raise NotImplementedError

    def _picked(self, condition: torch.Tensor, other: Any) -> Any:
        """Values from ``self`` where ``condition`` holds and from ``other`` (a node)
        elsewhere, for ``where``; a tensor or number ``other`` leaves the values alone."""
        if not isinstance(other, _NonTensorNode):
            return self
        if (
            isinstance(self, NonTensorData)
            and isinstance(other, NonTensorData)
            and same_value(self.data, other.data)
        ):
            # a new node: the result's lock is its own (self may be in a locked tree)
            return self._rebuilt(iter(()), None)
        shape = self.batch_size
        flags = condition.detach().cpu()
        flags = flags.reshape(flags.shape + (1,) * (len(shape) - flags.ndim)).expand(shape)
        if not isinstance(self, NonTensorData):  # a stack: member by member, as the peer's
            return self._picked_by_member(flags, other)
        mine, theirs = self._flat_as(shape), other._flat_as(shape)
        values = [a if flag else b for flag, a, b in zip(flags.reshape(-1).tolist(), mine, theirs)]
        if values and all(same_value(values[0], value) for value in values[1:]):
            return NonTensorData._make(values[0], shape, self._device)  # one value: as the peer
        # nested along each dim in turn, as the peer's stack from nested lists
        return ENGINE.NonTensorStack._make(values, shape, self._device, tuple(range(len(shape))))

    def _picked_by_member(self, flags: torch.Tensor, other: Any) -> Any:
        """``where`` of a stack: each member (along the stack dim) picks from its part of
        ``other``, and the results are stacked along that dim again (the peer's lazy
        ``where``: a member the condition takes or leaves whole is that member's or
        ``other``'s part as it is), so the result is nested as ``self``."""
        d = cast(Any, self).stack_dim
        shape = self.batch_size
        if other.batch_size != shape:
            other = other.expand(shape)
        members = []
        for member, flag, theirs in zip(self.unbind(d), flags.unbind(d), other.unbind(d)):
            if flag.numel() == 1:  # the whole member, or other's part, copied
                members.append((member if bool(flag) else theirs)._rebuilt(iter(()), None))
            else:
                members.append(member._picked(flag, theirs))
        return ENGINE.NonTensorStack(*members, stack_dim=d)

    def _new_filled(self, kind: str, size: tuple[Any, ...], fill: Any, options: Any) -> Any:
        """``new_empty`` / ``new_zeros`` / ``new_full``...: Python values are no numbers to
        fill, so the node of the new batch size holds the first value (as the peer's)."""
        shape = torch.Size(_batch.shape_args(size, f"new_{kind}")) if size else torch.Size([])
        device = options.get("device", ...)
        device = self._device if device is ... else as_device(device)
        if isinstance(self, NonTensorData):  # its one value, over no elements too
            return type(self)._make(self.data, shape, device)  # a MetaData kept (the peer's)
        values = self._flat()
        node = NonTensorData._make(values[0] if values else None, shape, device)
        return node.maybe_to_stack()

    def _logic(self, op: Callable[[Any, Any], Any], other: Any = None) -> Any:
        """``op`` (``|``, ``^``) of two single values as a bool mask over the batch (a
        tensor or array result as a tensor), as the peer; anything else keeps the value."""
        if not (isinstance(self, NonTensorData) and isinstance(other, NonTensorData)):
            return self
        result = op(self.data, other.data)
        if isinstance(result, (torch.Tensor, np.ndarray)):
            return torch.as_tensor(result, device=self._device)
        shape = batch_shapes(self._batch_size, other._batch_size)
        return torch.full(shape, bool(result), device=self._device)

    def where(
        self,
        condition: TensorCollection | torch.Tensor,
        other: Any,
        *,
        out: TensorCollection | None = None,
        pad: float | None = None,
        update_batch_size: bool = False,
    ) -> Self:
        """The values of ``self`` where ``condition`` holds and of ``other`` (a node)
        elsewhere; ``out``, a NonTensorStack of that batch size, takes them in place."""
        if not isinstance(condition, torch.Tensor) or not isinstance(other, _NonTensorNode):
            return super().where(
                condition, other, out=out, pad=pad, update_batch_size=update_batch_size
            )
        picked = self._picked(condition, other)
        if out is None:
            return picked  # type: ignore[no-any-return]
        if not isinstance(out, ENGINE.NonTensorStack) or out.batch_size != picked.batch_size:
            return super().where(
                condition, other, out=out, pad=pad, update_batch_size=update_batch_size
            )
        if out._locked:
            msg = (
                "Cannot modify locked TensorDict (a NonTensorStack): "
                "where(..., out=) writes into it; "
                "unlock it first"
            )
            raise LockedError(msg)
        out._values, out._stack_dims = picked._flat(), None
        return out  # type: ignore[return-value]

    def _written(self, index: Any, value: Any) -> _NonTensorNode:
        """The node that results from writing ``value`` at ``index`` (maybe a new one)."""
        raise NotImplementedError

    def _with_written(self, index: Any, value: Any) -> _NonTensorNode:
        """Like :meth:`_written`, but ``self`` is never changed: ``self`` itself when the
        write changes nothing, else a new node (what a node saved in a folder needs: the
        folder is written before memory changes)."""
        raise NotImplementedError

    def _take_values(
        self, source: NonTensorOps, index: Any, clone: bool, inplace: bool, op: str
    ) -> Self:
        """Writes the value(s) of ``source`` at ``index`` in place (broadcast to the
        selection; ``clone``: deep copies of them), as ``stack[index] = source``.

        Raises:
            LockedError: (a ``RuntimeError``) the node is locked.
        """
        self._check_unlocked(op, inplace)
        if clone:
            source = source._with_each_value(copy.deepcopy)
        self[index] = source
        return self

    def __setitem__(self, index: Any, value: Any) -> None:
        msg = (
            f"cannot write at index {index!r} of a {type(self).__name__}: it holds one value "
            "for all its elements; call maybe_to_stack() for a NonTensorStack, which holds a "
            "value per element, or write through the collection that holds it"
        )
        raise InPlaceWriteError(msg)

    def _compare(self, other: object, op: Callable[[Any, Any], Any]) -> Any:
        """``==``/``!=`` give a bool tensor over the batch, element by element."""
        negate = op is operator.ne
        if isinstance(self, NonTensorData) and isinstance(other, NonTensorData):
            equal = same_value(self.data, other.data)
            shape = batch_shapes(self._batch_size, other._batch_size)
            if self._device is None:  # (a keyword argument costs torch a sixth of the call)
                return torch.full(shape, equal != negate)
            return torch.full(shape, equal != negate, device=self._device)
        if isinstance(other, _NonTensorNode):
            shape = batch_shapes(self.batch_size, other.batch_size)
            theirs = other._flat_as(shape)
        elif isinstance(other, TensorCollection):
            return NotImplemented
        else:
            shape = self.batch_size
            theirs = [other] * math.prod(shape)
        mine = self._flat_as(shape)
        flags = [same_value(a, b) != negate for a, b in zip(mine, theirs)]
        return torch.tensor(flags, dtype=torch.bool, device=self._device).reshape(shape)

    def __reduce__(self) -> tuple[Any, ...]:
        raise NotImplementedError


@name_methods_after
class NonTensorData(_NonTensorNode):
    """One Python value shared by every element of a batch.

    Args:
        data: the value (anything but a tensor collection; a tensor too, kept as a value).
        batch_size: the batch it spans; indexing and shape ops change only this.
        device: the device recorded for it (the value itself is not moved).

    Example:
        >>> label = NonTensorData("cat", batch_size=[4])
        >>> label[:2].batch_size, label[:2].data
        (torch.Size([2]), 'cat')
    """

    __slots__ = ("_data", "_batch_size")

    _data: Any
    # a dataclass to the dataclasses module (the peer's node is one, and is_tensorclass
    # says True for it): code that then walks dataclasses.fields / asdict works
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]] = (
        _PeerFields.__dataclass_fields__
    )
    _metadata: ClassVar[None] = None
    _is_non_tensor: ClassVar[bool] = True
    # expand to new dims and unsqueeze give a NonTensorStack of the value, as the peer
    # stacks the node there (its MetaData keeps one value)
    _grows_to_stack: ClassVar[bool] = True
    # its repeat_interleave of no batch dims keeps the one value, as the peer's
    _repeats_one_value = True

    def __class_getitem__(cls, item: Any) -> Any:
        """``MetaData[str]`` names a value's type; ``NonTensorData[str]`` is refused (a
        ``TypeError``, as the peer), which annotations spell with the value's own type."""
        if cls is NonTensorData:
            msg = (
                f"NonTensorData is not generic (NonTensorData[{getattr(item, '__name__', item)}]); "
                "annotate the field "
                "with the value's type (str, int...) or with MetaData[...]"
            )
            raise ClassDefinitionError(msg)
        return super().__class_getitem__(item)

    def __init__(
        self,
        data: Any,
        batch_size: BatchSizeLike = None,
        device: DeviceLike = None,
        names: Sequence[DimName] | None = None,
    ) -> None:
        del names  # the peer's argument; names of batch dims are not kept
        if isinstance(data, NonTensorData):  # the peer unwraps a node given as the value
            data = data.data
        if isinstance(data, TensorCollection):  # a tensor is a value as any other (the peer)
            msg = (
                f"NonTensorData holds Python values, not a {type(data).__name__}; store "
                "collections as entries directly"
            )
            raise EntryTypeError(msg)
        self._data = data
        self._batch_size = as_batch_size(batch_size)
        self._device = as_device(device)
        self._locked = False

    @classmethod
    def _make(cls, data: Any, batch_size: torch.Size, device: torch.device | None) -> NonTensorData:
        node = _new_instance(cls)
        node._data = data
        node._batch_size = batch_size
        node._device = device
        node._locked = False
        return node

    def to_dict(self, **options: Any) -> Any:
        """The value (the node has no entries), as the peer's ``to_dict()``."""
        return self._data

    @property
    def data(self) -> Any:
        """The value."""
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        """Replaces the value, unless the node is locked (on its own or by a locked
        collection holding it), as the peer refuses; a node read by index from a
        ``NonTensorStack`` writes it into that stack too, as the peer's member does."""
        if self._locked:
            fix = (
                "unlock it first (node.unlock_()), or write the value into its collection (set_())"
            )
            raise self._locked_error("cannot set its data", fix)
        self._data = value
        self._write_back()  # into the stack this one was read from by index, if any

    @property
    def batch_size(self) -> torch.Size:
        return self._batch_size

    @classmethod
    def from_tensordict(
        cls,
        tensordict: TensorCollection,
        non_tensordict: Mapping[str, Any] | None = None,
        safe: bool | None = None,
    ) -> NonTensorData:
        """The node a TensorDict holding its value under ``"data"`` describes (the value
        given in ``non_tensordict`` when the TensorDict has none; ``None`` without
        either), with the TensorDict's batch size and device.

        Raises:
            UnknownFieldError: (a ``ValueError``) an entry other than ``"data"``.
        """
        others = sorted(set(map(str, tensordict.keys())) - {"data"})
        if others:
            msg = (
                f"NonTensorData.from_tensordict: the TensorDict may hold only 'data', got {others}"
            )
            raise UnknownFieldError(msg)
        if "data" in tensordict.keys():
            value = tensordict.get("data")
            data = value.tolist() if isinstance(value, torch.Tensor) else value
        else:
            data = (non_tensordict or {}).get("data")
        return cls(data, tensordict.batch_size, tensordict.device)

    def _read(self) -> Any:
        return self.data

    def _flat(self) -> list[Any]:
        return [self.data] * math.prod(self._batch_size)

    def _new_like(
        self, values: dict[str, Value], batch_size: torch.Size, device: torch.device | None
    ) -> Self:
        return self._make(self.data, batch_size, device)  # type: ignore[return-value]

    def _map_values(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        return self._make(self.data, batch_size, self._device if device is ... else device)  # type: ignore[return-value]

    def _map_values_split(
        self, fn: Callable[[Value], Sequence[Value]], batch_sizes: Sequence[torch.Size]
    ) -> tuple[Self, ...]:
        return tuple(self._make(self.data, size, self._device) for size in batch_sizes)  # type: ignore[misc]

    def _with_each_value(self, fn: Callable[[Any], Any]) -> Self:
        value = fn(self.data)
        return self if value is self.data else self._make(value, self._batch_size, self._device)  # type: ignore[return-value]

    def __or__(self, other: Any) -> Any:
        """With another single value: the bool mask of ``data | other.data`` (the peer)."""
        if isinstance(other, NonTensorData):
            return self._logic(operator.or_, other)
        return super().__or__(other)

    def __xor__(self, other: Any) -> Any:
        """With another single value: the bool mask of ``data ^ other.data`` (the peer)."""
        if isinstance(other, NonTensorData):
            return self._logic(operator.xor, other)
        return super().__xor__(other)

    def __getitem__(self, index: Any) -> Any:
        """The rows at ``index``: one value over the selection's batch size. As the peer's
        (its collections' views), rows of a node saved in a folder or in shared memory at
        an index that keeps the data pointer (ints, ``None``, ``...``, slices from 0) are
        saved and locked as it, and so are all of it (``...``, ``:``: the peer's collection
        itself); other rows, those of a node locked in a collection never saved too, are
        new nodes, unlocked."""
        node = self._indexed(index)
        if not (self._locked or self._is_saved() or self._shared_without_tensors()):
            return node  # nothing to carry (the common case: ~2.5 us of index tests saved)
        whole = _batch.is_whole_index(index, len(self._batch_size))
        if whole or (_batch.keeps_data_pointer(index) and self._views_stay_locked()):
            return self._as_saved(node)
        return node

    def _indexed(self, index: Any) -> NonTensorData:
        if type(index) is str:
            raise self._missing_key(index)
        batch = self._batch_size
        if type(index) is int and batch:
            if not -batch[0] <= index < batch[0]:
                msg = f"index {index} is out of bounds for batch dim 0 of size {batch[0]}"
                raise DimError(msg)
            return self._make(self.data, batch[1:], self._device)
        kind = type(index)
        if kind is slice and batch and not tracing():  # traced: symbolic, on a stand-in
            start, stop, step = index.indices(batch[0])
            if step > 0:
                length = max(0, (stop - start + step - 1) // step)
                return self._make(self.data, torch.Size((length, *batch[1:])), self._device)
        elif kind is torch.Tensor and index.ndim == 1 and index.dtype is not torch.bool and batch:
            return self._make(self.data, torch.Size((index.shape[0], *batch[1:])), self._device)
        if kind is tuple:
            index = _batch.normalize_index(index, len(batch), keys=True)
        return self._make(self.data, _batch.indexed_shape(batch, index), self._device)

    def __setitem__(self, index: Any, value: Any) -> None:
        """Only at an index that selects the one element of a node of batch size ``[]``
        (``True``, ``None``, ``...``, a true 0-d bool tensor), as the peer: takes the value
        (of a node, its one value once its size-1 dims are squeezed), and writes it into
        the stack this node was read from, if any.

        Raises:
            InPlaceWriteError: (a ``ValueError``) any other index, or a node of several
                values.
            LockedError: (a ``RuntimeError``) this node, or its stack, is locked.
        """
        if self._batch_size or not _selects_all(index):
            super().__setitem__(index, value)
        if isinstance(value, _NonTensorNode):
            value = value.squeeze() if value.batch_size else value
            if not isinstance(value, NonTensorData):
                msg = (
                    f"cannot write {type(value).__name__} of batch size "
                    f"{list(value.batch_size)} (several values) into a NonTensorData of "
                    "batch size []"
                )
                raise InPlaceWriteError(msg)
            value = value.data
        if self._locked:
            raise self._locked_error("cannot write into it")
        self._data = value
        self._write_back()

    def _take_values(
        self, source: NonTensorOps, index: Any, clone: bool, inplace: bool, op: str
    ) -> Self:
        """Takes the one value of ``source``, a ``NonTensorData`` (a deep copy with
        ``clone``), for all the elements (``index``: all of them), and writes it into the
        stack this node was read from, if any.

        Raises:
            InPlaceWriteError: (a ``ValueError``) ``source`` holds a value per element, or
                ``index`` selects part of the batch.
            LockedError: (a ``RuntimeError``) the node is locked.
        """
        whole = index is Ellipsis or (type(index) is slice and index == slice(None))
        if not isinstance(source, NonTensorData) or not (whole or _selects_all(index)):
            what = f"at {index!r}" if isinstance(source, NonTensorData) else "from a stack"
            msg = (
                f"{op}: cannot write into a NonTensorData {what}: it holds one value for "
                "all its elements; call maybe_to_stack() for a NonTensorStack, which holds "
                "a value per element, and update that"
            )
            raise InPlaceWriteError(msg)
        self._check_unlocked(op, inplace)
        self.data = copy.deepcopy(source.data) if clone else source.data
        self._write_back()
        return self

    def expand(self, *shape: int | Sequence[int]) -> Any:
        """The value over ``shape``: a ``NonTensorStack`` of the value when ``shape`` adds
        dims (stacked along each new dim, as the peer); stretching size-1 dims keeps one
        node."""
        out = super().expand(*shape)
        added = out.ndim - len(self._batch_size)
        if not self._grows_to_stack or not added:
            return out
        return self._grown(out.batch_size, tuple(range(added)))

    def unsqueeze(self, dim: int) -> Any:
        """A ``NonTensorStack`` of the value along the new dim, as the peer's."""
        out = super().unsqueeze(dim)
        if not self._grows_to_stack:
            return out
        pos = _batch.normalize_dim(dim, len(self._batch_size), op="unsqueeze", inclusive=True)
        return self._as_saved(self._grown(out.batch_size, (pos,)))

    def _grown(self, shape: torch.Size, stack_dims: tuple[int, ...]) -> Any:
        """The value in each element of ``shape``, stacked along ``stack_dims`` (held
        for when ``shape`` has no element: the peer's member keeps it)."""
        return ENGINE.NonTensorStack._repeated(self.data, shape, self._device, stack_dims)

    def _check_new_batch_size(self, new: torch.Size, prefix: tuple[str, ...]) -> None:
        """The parent's new batch size must extend this node's or start it (a value keeps
        dims of its own when its parent drops them, as a nested collection does)."""
        own = self._batch_size
        if new[: len(own)] != own and own[: len(new)] != new:
            raise BatchMismatchError(prefix, own, new)

    def _assign_batch_size(self, new: torch.Size) -> None:
        # One shared value grows with its parent's batch and keeps its own dims when the
        # parent's shrinks (``td.batch_size = [3]`` leaves a ``[3, 4]`` value so, as in
        # the peer: ``td[0]`` still holds it over ``[4]``).
        if self._batch_size[: len(new)] != new:
            self._batch_size = new

    def _rebatched(self, batch_size: torch.Size) -> Self:
        return self._make(self.data, batch_size, self._device)  # type: ignore[return-value]

    def _cut_batch_dims(self, count: int) -> bool:
        # in place also under a lock, as the peer: a lock guards the value, not the batch
        # size (a locked collection's batch size may change too)
        self._batch_size = self._batch_size[:count]
        return True

    def _rebuilt(
        self,
        results: Iterator[torch.Tensor],
        resize: Resize | None,
        values: Iterator[Any] | None = None,
    ) -> Self:
        batch = self._batch_size if resize is None else resize(self._batch_size)
        return self._make(self._data, batch, self._device)  # type: ignore[return-value]

    def clone(self, recurse: bool = True) -> Self:
        data = copy_value(self.data) if recurse else self.data
        return self._make(data, self._batch_size, self._device)  # type: ignore[return-value]

    def _shallow_clone(self) -> Self:
        data = copy_containers(self.data)  # as the peer's collections copy it (see base)
        return self._make(data, self._batch_size, self._device)  # type: ignore[return-value]

    def _written(self, index: Any, value: Any) -> _NonTensorNode:
        target = None  # the selection's batch size, worked out once (see _check_fits)
        if isinstance(value, _NonTensorNode):
            target = self._check_fits(index, value)
        if _selects_none(self._batch_size, index, target):
            return self  # no element selected: nothing written (as the peer), one value kept
        if isinstance(value, ENGINE.NonTensorStack):  # kept when it holds only this value
            if all(same_value(item, self.data) for item in value._flat()):
                return self
        elif self._kept_by(index, value, target) and not self._widened_by(index, value, target):
            return self  # the value it already holds (a node, or a plain value broadcast)
        if (
            not self._batch_size
            and not isinstance(value, ENGINE.NonTensorStack)
            and not self._widened_by(index, value)
            and _selects_all(index)
        ):  # its one element: the new value, not a stack without dims (as the peer)
            data = value.data if isinstance(value, NonTensorData) else value
            return self._make(data, self._batch_size, self._device)
        # each element its own member: the peer's stack of it is nested along each dim
        dims = tuple(range(len(self._batch_size)))
        stack = ENGINE.NonTensorStack._make(self._flat(), self._batch_size, self._device, dims)
        return stack._written(index, value)

    _with_written = _written  # never changes self: a different value gives a new stack

    def _check_fits(self, index: Any, value: _NonTensorNode) -> torch.Size:
        """torch's shape check of ``tensor[index] = value`` for a node written over
        ``self[index]``: it holds, even where the same value leaves the node as it is.

        Raises:
            BatchSizeError: (a ``RuntimeError``) ``value``'s batch size does not broadcast
                to the selection's.
        """
        target = _batch.indexed_shape(self._batch_size, index)
        if not _batch.broadcasts_to(value.batch_size, target):
            msg = (
                f"cannot write a value of batch size {list(value.batch_size)} at index "
                f"{index!r} of a {type(self).__name__} of batch size "
                f"{list(self._batch_size)}: it does not broadcast to the selection's "
                f"{list(target)}; index the source or the destination so that the two agree"
            )
            raise BatchSizeError(msg)
        return target

    def _kept_by(self, index: Any, value: Any, target: torch.Size | None) -> bool:
        """Whether writing ``value`` at ``index`` leaves the value held, as the peer's
        write asks: it compares the lists of the selection's values, so over a selection
        with dims the very object held is unchanged (Python's lists compare items by
        identity first: a numpy array, ``nan``), where without dims the value is compared
        with the one held (:func:`unchanged_by`: an array counts as a change)."""
        new = value.data if isinstance(value, NonTensorData) else value
        if unchanged_by(new, self.data):
            return True
        if new is not self.data:
            return False
        if target is None:
            target = _batch.indexed_shape(self._batch_size, index)
        return len(target) > 0

    def _widened_by(self, index: Any, value: Any, target: torch.Size | None = None) -> bool:
        """Whether ``value`` is a node with more batch dims than ``self[index]``: the
        peer then holds the value per element (a stack), though it is the same value."""
        if type(self) is not NonTensorData or not isinstance(value, NonTensorData):
            return False  # a MetaData keeps its one value
        if not self._batch_size:
            return False  # a node without batch dims keeps one value (as the peer)
        dims = len(value._batch_size)
        if dims == 0:
            return False
        if target is None:
            target = _batch.indexed_shape(self._batch_size, index)
        return dims > len(target)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the value (a function stored in a collection), as the peer."""
        return self.data(*args, **kwargs)

    def maybe_to_stack(self) -> _NonTensorNode:
        """A ``NonTensorStack`` holding the value in every element (shared, not copied);
        ``self`` when the batch size is empty."""
        if not self._batch_size:
            return self
        return ENGINE.NonTensorStack._from_array(self._as_array(), self._device)

    def __repr__(self) -> str:
        # The peer's form: the value's str (cut in the middle past 200 characters) and
        # the batch size as a torch.Size.
        shown = str(self.data)
        if len(shown) > 200:
            shown = f"{shown[:20]}  ...  {shown[-20:]}"
        return (
            f"{type(self).__name__}(data={shown}, batch_size={self._batch_size}, "
            f"device={self._device})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        state = (type(self), self.data, self._batch_size, self._device)
        kept = (self._is_saved(), self._locked)  # as the peer's pickle keeps them
        return (_rebuild_value, (*state, *kept) if any(kept) else state)


# The type of the values a node holds, for annotations only (``MetaData[str]``, as the
# peer's); a bare ``MetaData`` is ``MetaData[Any]``.
_V = TypeVar("_V", default=Any)


class MetaData(NonTensorData, Generic[_V]):
    """One Python value describing a whole batch (the peer's class of that name).

    ``MetaData[str]`` names the type of the value for annotations (a tensorclass field
    ``run: MetaData[str]``); as the peer's, it is a subclass of ``MetaData`` that builds
    a ``MetaData`` when called, checking the value's type, and ``isinstance(node,
    MetaData[str])`` tells whether a ``MetaData`` holds a ``str``.

    As the peer's, a ``MetaData`` keeps one value (and its type) through stacking
    members that hold one object (``is``, not ``==``), ``unsqueeze`` and ``expand``,
    where a :class:`NonTensorData` becomes a :class:`NonTensorStack`; stacking other
    values (equal copies included: a clone's, a reload's) gives a stack for both.

    Example:
        >>> run = "run-7"
        >>> torch.stack([MetaData(run), MetaData(run)])
        MetaData(data=run-7, batch_size=torch.Size([2]), device=None)
    """

    __slots__ = ()
    _grows_to_stack: ClassVar[bool] = False

    if TYPE_CHECKING:
        # For checkers: a field ``run: MetaData[str]`` reads as its value (a ``str``), as
        # at runtime, and takes the value or a node holding one (descriptor typing, as
        # the keywords of _tensorclass/_typing.py).
        def __init__(
            self,
            data: _V,
            batch_size: BatchSizeLike = None,
            device: DeviceLike = None,
            names: Sequence[DimName] | None = None,
        ) -> None: ...
        @overload
        def __get__(self, instance: None, owner: Any = None, /) -> Self: ...
        @overload
        def __get__(self, instance: object, owner: Any = None, /) -> _V: ...
        def __get__(self, instance: object, owner: Any = None, /) -> _V | Self: ...
        def __set__(self, instance: object, value: _V | MetaData[_V], /) -> None: ...

    def __class_getitem__(cls, item: Any) -> Any:
        if cls is not MetaData:
            return super().__class_getitem__(item)
        return typed_metadata(cls, item)


# Pickles name these (a classmethod pickles through getattr, which weights_only refuses),
# the stack's rebuild too: its pickles name this module.


def _rebuild_value(
    cls: type[NonTensorData],
    data: Any,
    batch_size: torch.Size,
    device: torch.device | None,
    saved: bool = False,  # (older pickles lack these two)
    locked: bool = False,
) -> NonTensorData:
    node = checked_class(cls, NonTensorData, "a Python value")._make(data, batch_size, device)
    return cast("NonTensorData", kept(node, saved, locked))


def _selects_none(batch_size: torch.Size, index: Any, target: torch.Size | None) -> bool:
    """Whether ``index`` selects no element of ``batch_size`` (``target``: the selection's
    batch size when already worked out); an index torch refuses is left to the write."""
    if target is None:
        try:
            target = _batch.indexed_shape(batch_size, index)
        except (IndexError, TypeError, ValueError, RuntimeError):
            return False
    return not target.numel()


def _selects_all(index: Any) -> bool:
    """Whether ``index`` selects the one element of batch size ``[]`` (a new dim aside)."""
    if type(index) is tuple:
        return not index or (len(index) == 1 and _selects_all(index[0]))
    if isinstance(index, torch.Tensor):
        return index.dtype is torch.bool and index.ndim == 0 and bool(index)
    return index is True or index is None or index is Ellipsis


def _rebuild_values(
    values: list[Any],
    shape: torch.Size,
    device: torch.device | None,
    stack_dims: Any,  # an int (older pickles), a tuple of ints, or None
    held: Any = (),  # the one value held over no elements: ``(value,)`` or ``()``
    saved: bool = False,  # saved in a folder and locked (older pickles lack them)
    locked: bool = False,
    meta: Meta = False,  # its members are MetaData (older pickles lack it)
) -> NonTensorStack:
    if type(values) is not list or len(values) != math.prod(shape):
        msg = f"a pickle of a NonTensorStack of shape {shape!r} does not hold one value per element"
        raise PickleRefusedError(msg)
    dims = (stack_dims,) if type(stack_dims) is int else stack_dims
    if dims is not None and (
        type(dims) is not tuple or not all(type(d) is int and 0 <= d < len(shape) for d in dims)
    ):
        msg = f"a pickle of a NonTensorStack of shape {shape!r} has stack dims {stack_dims!r:.80}"
        raise PickleRefusedError(msg)
    if type(held) is not tuple or len(held) > 1:
        msg = (
            f"a pickle of a NonTensorStack of shape {shape!r} holds {held!r:.80} as the "
            "value its members hold, not a tuple of one value or none"
        )
        raise PickleRefusedError(msg)
    stack = ENGINE.NonTensorStack._make(values, shape, device, dims)
    stack._held, stack._meta = held, PADDED if meta == PADDED else meta is True
    return cast("NonTensorStack", kept(stack, saved, locked))


allow_unpickling(NonTensorData, MetaData, _rebuild_value, _rebuild_values)


def check_stack_batch_size(batch_size: BatchSizeLike, shape: torch.Size) -> None:
    """Refuses the ``batch_size`` given to ``NonTensorStack(...)`` (dense or ragged) where it
    is not the batch size of the stacked values (``shape``)."""
    if batch_size is not None and as_batch_size(batch_size) != shape:
        msg = (
            f"NonTensorStack: batch_size={list(as_batch_size(batch_size))} but the "
            f"stacked values have batch size {_batch.format_shape(shape)}"
        )
        raise BatchSizeError(msg)


def is_non_tensor(value: object) -> bool:
    """Whether ``value`` is a ``NonTensorData`` or ``NonTensorStack`` node."""
    return isinstance(value, _NonTensorNode)


# for torch.compile's guards: see _base/_inline.py
inline_inherited(NonTensorData)
