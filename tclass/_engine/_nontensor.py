"""Python values inside a collection: ``NonTensorData`` and ``NonTensorStack``.

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
import math
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from operator import attrgetter
from typing import Any, ClassVar, Generic

import numpy as np
import torch
from typing_extensions import Self, TypeVar

from tclass._base._inline import inline_inherited
from tclass._base._tensordict_base import Value
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._leaf_walk import Resize
from tclass._core import _batch
from tclass._core._batch import BatchSizeLike, as_batch_size, format_shape
from tclass._core._device import DeviceLike, as_device
from tclass._core._linked_list import linked_values
from tclass._core._options import OPTIONS
from tclass._core._safe_globals import allow_unpickling, checked_class
from tclass._engine._nontensor_ops import NonTensorOps
from tclass._engine._typed_metadata import typed_metadata
from tclass._engine._value_positions import (
    batch_shapes,
    copy_value,
    dim_after_index,
    element_positions,
    expanded,
    flattened,
    indexed,
    joined_shape,
    removed_dim,
    same_value,
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
    ReductionError,
    StackError,
    UnknownFieldError,
    UnsupportedError,
)

__all__ = [
    "MetaData",
    "NonTensorData",
    "NonTensorStack",
    "is_non_tensor",
    "join_non_tensor",
    "same_value",
]

_new_instance = object.__new__


class _NonTensorNode(NonTensorOps):
    """What both node kinds share: no entries, a device, a lock flag (see
    :class:`NonTensorOps`), and the operations that mix the two kinds."""

    __slots__ = ("_device", "_locked", "_lock_parents", "__weakref__")

    _is_leaf_node: ClassVar[bool] = True
    _is_value_node: ClassVar[bool] = True  # math leaves the value alone: see NonTensorOps._rebuilt

    _device: torch.device | None
    _locked: bool

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
            return self
        shape = self.batch_size
        flags = condition.detach().cpu()
        flags = flags.reshape(flags.shape + (1,) * (len(shape) - flags.ndim)).expand(shape)
        mine, theirs = self._flat_as(shape), other._flat_as(shape)
        values = [a if flag else b for flag, a, b in zip(flags.reshape(-1).tolist(), mine, theirs)]
        return NonTensorStack._make(values, shape, self._device)

    def _new_filled(self, kind: str, size: tuple[Any, ...], fill: Any, options: Any) -> Any:
        """``new_empty`` / ``new_zeros`` / ``new_full``...: Python values are no numbers to
        fill, so the node of the new batch size holds the first value (as the peer's)."""
        shape = torch.Size(_batch.shape_args(size, f"new_{kind}")) if size else torch.Size([])
        device = options.get("device", ...)
        device = self._device if device is ... else as_device(device)
        values = self._flat()
        node = NonTensorData._make(values[0] if values else None, shape, device)
        return node if isinstance(self, NonTensorData) else node.maybe_to_stack()

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
        if not isinstance(out, NonTensorStack) or out.batch_size != picked.batch_size:
            return super().where(
                condition, other, out=out, pad=pad, update_batch_size=update_batch_size
            )
        if out._locked:
            raise LockedError("where: out is a locked NonTensorStack; unlock it first")
        out._values, out._stack_dim = picked._flat(), None
        return out  # type: ignore[return-value]

    def _written(self, index: Any, value: Any) -> _NonTensorNode:
        """The node that results from writing ``value`` at ``index`` (maybe a new one)."""
        raise NotImplementedError

    def _with_written(self, index: Any, value: Any) -> _NonTensorNode:
        """Like :meth:`_written`, but ``self`` is never changed: ``self`` itself when the
        write changes nothing, else a new node (what a node saved in a folder needs: the
        folder is written before memory changes)."""
        raise NotImplementedError

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

    __slots__ = ("data", "_batch_size")

    data: Any
    # expand to new dims and unsqueeze give a NonTensorStack of the value, as the peer
    # stacks the node there (its MetaData keeps one value)
    _grows_to_stack: ClassVar[bool] = True

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
        names: Sequence[str | None] | None = None,
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
        self.data = data
        self._batch_size = as_batch_size(batch_size)
        self._device = as_device(device)
        self._locked = False

    @classmethod
    def _make(cls, data: Any, batch_size: torch.Size, device: torch.device | None) -> NonTensorData:
        node = _new_instance(cls)
        node.data = data
        node._batch_size = batch_size
        node._device = device
        node._locked = False
        return node

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
        if type(index) is str:
            raise self._missing_key(index)
        batch = self._batch_size
        if type(index) is int and batch:
            if not -batch[0] <= index < batch[0]:
                msg = f"index {index} is out of bounds for batch dim 0 of size {batch[0]}"
                raise IndexError(msg)
            return self._make(self.data, batch[1:], self._device)
        kind = type(index)
        if kind is slice and batch:
            start, stop, step = index.indices(batch[0])
            if step > 0:
                length = max(0, (stop - start + step - 1) // step)
                return self._make(self.data, torch.Size((length, *batch[1:])), self._device)
        elif kind is torch.Tensor and index.ndim == 1 and index.dtype is not torch.bool and batch:
            return self._make(self.data, torch.Size((index.shape[0], *batch[1:])), self._device)
        if kind is tuple:
            index = _batch.normalize_index(index, len(batch))
        return self._make(self.data, _batch.indexed_shape(batch, index), self._device)

    def expand(self, *shape: int | Sequence[int]) -> Any:
        """The value over ``shape``: a ``NonTensorStack`` (along dim 0) of the value when
        ``shape`` adds dims, as the peer; stretching size-1 dims keeps one node."""
        out = super().expand(*shape)
        if not self._grows_to_stack or out.ndim == len(self._batch_size):
            return out
        return NonTensorStack._make([self.data] * out.numel(), out.batch_size, self._device, 0)

    def unsqueeze(self, dim: int) -> Any:
        """A ``NonTensorStack`` of the value along the new dim, as the peer's."""
        out = super().unsqueeze(dim)
        if not self._grows_to_stack:
            return out
        pos = _batch.normalize_dim(dim, len(self._batch_size), op="unsqueeze", inclusive=True)
        return NonTensorStack._make([self.data] * out.numel(), out.batch_size, self._device, pos)

    def _assign_batch_size(self, new: torch.Size) -> None:
        self._batch_size = new  # one shared value spans whatever batch its parent has

    def _rebatched(self, batch_size: torch.Size) -> Self:
        return self._make(self.data, batch_size, self._device)  # type: ignore[return-value]

    def _rebuilt(
        self,
        results: Iterator[torch.Tensor],
        resize: Resize | None,
        values: Iterator[Any] | None = None,
    ) -> Self:
        batch = self._batch_size if resize is None else resize(self._batch_size)
        return self._make(self.data, batch, self._device)  # type: ignore[return-value]

    def clone(self, recurse: bool = True) -> Self:
        data = copy_value(self.data) if recurse else self.data
        return self._make(data, self._batch_size, self._device)  # type: ignore[return-value]

    def _written(self, index: Any, value: Any) -> _NonTensorNode:
        if (
            not isinstance(value, NonTensorStack)
            and same_value(value.data if isinstance(value, NonTensorData) else value, self.data)
            and not self._widened_by(index, value)
        ):
            return self  # the value it already holds (a node, or a plain value broadcast)
        stack = NonTensorStack._make(self._flat(), self._batch_size, self._device)
        return stack._written(index, value)

    _with_written = _written  # never changes self: a different value gives a new stack

    def _widened_by(self, index: Any, value: Any) -> bool:
        """Whether ``value`` is a node with more batch dims than ``self[index]``: the
        peer then holds the value per element (a stack), though it is the same value."""
        if type(self) is not NonTensorData or not isinstance(value, NonTensorData):
            return False  # a MetaData keeps its one value
        dims = len(value._batch_size)
        return dims > 0 and dims > len(_batch.indexed_shape(self._batch_size, index))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the value (a function stored in a collection), as the peer."""
        return self.data(*args, **kwargs)

    def maybe_to_stack(self) -> _NonTensorNode:
        """A ``NonTensorStack`` holding the value in every element (shared, not copied);
        ``self`` when the batch size is empty."""
        if not self._batch_size:
            return self
        return NonTensorStack._from_array(self._as_array(), self._device)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(data={self.data!r}, "
            f"batch_size={format_shape(self._batch_size)}, device={self._device})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_value, (type(self), self.data, self._batch_size, self._device))


# The type of the values a node holds, for annotations only (``MetaData[str]``, as the
# peer's); a bare ``MetaData`` is ``MetaData[Any]``.
_V = TypeVar("_V", default=Any)


class MetaData(NonTensorData, Generic[_V]):
    """One Python value describing a whole batch (the peer's class of that name).

    ``MetaData[str]`` names the type of the value for annotations (a tensorclass field
    ``run: MetaData[str]``); as the peer's, it is a subclass of ``MetaData`` that builds
    a ``MetaData`` when called, checking the value's type, and ``isinstance(node,
    MetaData[str])`` tells whether a ``MetaData`` holds a ``str``.

    As the peer's, a ``MetaData`` keeps one value (and its type) through stacking equal
    values, ``unsqueeze`` and ``expand``, where a :class:`NonTensorData` becomes a
    :class:`NonTensorStack`; stacking different values gives a stack for both.

    Example:
        >>> torch.stack([MetaData("run-7"), MetaData("run-7")])
        MetaData(data='run-7', batch_size=[2], device=None)
    """

    __slots__ = ()
    _grows_to_stack: ClassVar[bool] = False

    def __class_getitem__(cls, item: Any) -> Any:
        if cls is not MetaData:
            return super().__class_getitem__(item)
        return typed_metadata(cls, item)


class NonTensorStack(_NonTensorNode, Generic[_V]):
    """One Python value per element of a batch (``NonTensorStack[str]`` names the type of
    the values for annotations, as the peer's does; they are not checked against it).

    Built from values or nodes stacked along ``stack_dim`` (``NonTensorStack("a", "b")``,
    ``NonTensorStack(node_a, node_b, stack_dim=1)``), or from (nested) lists with
    :meth:`from_list`; stacking collections that hold Python values builds one too (one
    value per member, equal or not, as the peer does unless
    ``set_capture_non_tensor_stack(True)``). ``tolist()`` gives the values as nested lists
    in batch order; indexing one element gives a ``NonTensorData``.

    The values are a flat list in row-major order; a structural op is worked out on a
    tensor of element numbers (``arange(numel).reshape(batch)``) and the list is gathered
    with the result, so every index and shape op torch accepts works here, in pure Python
    and torch (which ``torch.compile`` traces).

    Example:
        >>> names = NonTensorStack("a", "b", "c")
        >>> names[1:].tolist(), names[0].data
        (['b', 'c'], 'a')
    """

    __slots__ = ("_values", "_shape", "_stack_dim")

    _values: list[Any]
    _shape: torch.Size
    # The dim the members were stacked along: values are then the same along every other
    # dim, and an index that removes this dim gives one value back (as the peer's stack
    # of members gives a member). None when an operation mixed the elements.
    _stack_dim: int | None

    def __init__(
        self,
        *values: Any,
        stack_dim: int = 0,
        device: DeviceLike = None,
        batch_size: BatchSizeLike = None,
    ) -> None:
        nodes = [v if isinstance(v, _NonTensorNode) else NonTensorData(v) for v in values]
        if nodes:
            shapes = {tuple(node.batch_size) for node in nodes}
            if len(shapes) > 1:
                shown = ", ".join(sorted(str(list(shape)) for shape in shapes))
                msg = f"NonTensorStack: the values have different batch sizes ({shown})"
                raise StackError(msg)
            if not 0 <= stack_dim <= len(nodes[0].batch_size):
                msg = (
                    f"NonTensorStack: stack_dim={stack_dim} is out of range for values of "
                    f"batch size {list(nodes[0].batch_size)} (0 to {len(nodes[0].batch_size)})"
                )
                raise DimError(msg)
            joined = _join_values(nodes, "stack", stack_dim, ())
            self._values, self._shape = joined._values, joined._shape
        else:
            self._values, self._shape = [], torch.Size([0])
        # Values differ along stack_dim only when each member holds one value (members
        # that are stacks themselves may differ along their own dims too).
        single = all(isinstance(node, NonTensorData) for node in nodes)
        self._stack_dim = stack_dim if single else None
        if device is None and nodes and all(node.device == nodes[0].device for node in nodes):
            device = nodes[0].device
        self._device = as_device(device)
        self._locked = False
        if batch_size is not None and as_batch_size(batch_size) != self._shape:
            msg = (
                f"NonTensorStack: batch_size={list(as_batch_size(batch_size))} but the "
                f"stacked values have batch size {list(self._shape)}"
            )
            raise BatchSizeError(msg)

    @classmethod
    def _make(
        cls,
        values: list[Any],
        shape: torch.Size,
        device: torch.device | None,
        stack_dim: int | None = None,
    ) -> NonTensorStack:
        """A stack of ``values`` (flat, row-major) shaped ``shape``, unchecked."""
        node = _new_instance(cls)
        node._values = values
        node._shape = shape
        node._stack_dim = stack_dim
        node._device = device
        node._locked = False
        return node

    @classmethod
    def from_list(  # type: ignore[override]  # a stack of Python values, not of collections
        cls, values: Sequence[Any], device: DeviceLike = None
    ) -> NonTensorStack:
        """A stack of ``values``; nested lists of equal lengths give more dims (other
        items, lists of other lengths included, are values)."""
        flat, shape = flattened(values)
        return cls._make(flat, torch.Size(shape), as_device(device))

    @classmethod
    def _from_values(cls, values: Sequence[Any], device: DeviceLike = None) -> NonTensorStack:
        """A 1-d stack of ``values``, each kept as given (lists and tensors included)."""
        return cls._make(list(values), torch.Size([len(values)]), as_device(device))

    @classmethod
    def _from_array(
        cls, array: np.ndarray[Any, Any], device: torch.device | None, stack_dim: int | None = None
    ) -> NonTensorStack:
        """A stack of the values of a numpy object array, shaped like it."""
        return cls._make(list(array.reshape(-1)), torch.Size(array.shape), device, stack_dim)

    @property
    def stack_dim(self) -> int:
        """The batch dim the values were stacked along (0 when unknown)."""
        return self._stack_dim or 0

    @property
    def tensordicts(self) -> list[Any]:
        """The stacked members: one node per position along ``stack_dim``."""
        dim = self.stack_dim
        count = self._shape[dim] if self._shape else 0
        return [self[(slice(None),) * dim + (i,)] for i in range(count)]

    @property
    def batch_size(self) -> torch.Size:
        return self._shape

    @property
    def data(self) -> Any:
        """The one value every element holds, or (when they differ) the values as nested
        lists, as a field holding different values reads."""
        values = self._values
        if values and all(same_value(value, values[0]) for value in values[1:]):
            return values[0]
        return self._read()

    def _read(self) -> Any:
        return linked_values(self._values, self._shape, self)  # item writes reach the stack

    def _flat(self) -> list[Any]:
        return self._values

    def _at(
        self,
        shape: torch.Size,
        positions: list[int],
        device: torch.device | None,
        stack_dim: int | None = None,
    ) -> Any:
        """The values at ``positions`` (element numbers) shaped ``shape``, as a node: one
        value when ``stack_dim`` is -1 (the stack dim was indexed away) or for ``[]``."""
        values = self._values
        picked = [values[i] for i in positions]
        if not shape or (stack_dim == -1 and picked):
            return NonTensorData._make(picked[0], shape, device)
        return NonTensorStack._make(picked, shape, device, None if stack_dim == -1 else stack_dim)

    def _rebatched(self, batch_size: torch.Size) -> Self:
        values = self._values
        if batch_size == self._shape:
            return self._make(list(values), batch_size, self._device, self._stack_dim)  # type: ignore[return-value]
        if not values:  # an empty batch reduced: no values to merge, none to give
            if batch_size.numel() == 0:
                return self._make([], batch_size, self._device)  # type: ignore[return-value]
            return NonTensorData._make(None, batch_size, self._device)  # type: ignore[return-value]
        if values and all(same_value(values[0], value) for value in values[1:]):
            return NonTensorData._make(values[0], batch_size, self._device)  # type: ignore[return-value]
        try:
            shape, positions = expanded(self._shape, batch_size)
        except RuntimeError:
            msg = (
                f"it holds a different Python value per element (batch size "
                f"{format_shape(self.batch_size)}), which a reduction to "
                f"{format_shape(batch_size)} would merge; select the elements first"
            )
            raise ReductionError(msg) from None
        return self._at(shape, positions, self._device)  # type: ignore[no-any-return]

    def _applies_at(self, batch_size: torch.Size) -> bool:
        return batch_size == self._shape

    def _new_like(
        self, values: dict[str, Value], batch_size: torch.Size, device: torch.device | None
    ) -> Self:
        if batch_size != self._shape:
            msg = (
                "internal: a NonTensorStack of batch size "
                f"{format_shape(self.batch_size)} cannot become {format_shape(batch_size)}"
            )
            raise UnsupportedError(msg)
        return self._make(self._values, batch_size, device)  # type: ignore[return-value]

    def _map_values(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        # Element-wise operations leave Python values alone; only the device changes.
        if batch_size != self._shape:
            msg = (
                f"cannot reduce a batch dim of a field holding a different value per element "
                f"(batch size {format_shape(self.batch_size)}); select the elements first"
            )
            raise UnsupportedError(msg)
        device = self._device if device is ... else device
        return self._make(self._values, batch_size, device, self._stack_dim)  # type: ignore[return-value]

    def _with_each_value(self, fn: Callable[[Any], Any]) -> Self:
        values = [fn(value) for value in self._values]
        if all(new is old for new, old in zip(values, self._values)):
            return self
        return self._make(values, self._shape, self._device, self._stack_dim)  # type: ignore[return-value]

    def _map_batch(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        device = self._device if device is ... else device
        if torch.compiler.is_compiling() and self._one_value():
            return self._filled(batch_size, device, None)  # type: ignore[no-any-return]
        shape, positions = element_positions(self._shape, fn)[0]
        return self._at(shape, positions, device)  # type: ignore[no-any-return]

    def _map_values_split(
        self, fn: Callable[[Value], Sequence[Value]], batch_sizes: Sequence[torch.Size]
    ) -> tuple[Self, ...]:
        dim = self._stack_dim
        if torch.compiler.is_compiling() and self._one_value():
            if dim is not None and batch_sizes and len(batch_sizes[0]) < len(self._shape):
                dim = -1  # unbind: each piece one member (or one row of equal values)
            return tuple(self._filled(size, self._device, dim) for size in batch_sizes)
        pieces = element_positions(self._shape, fn)
        if dim is not None and pieces and len(pieces[0][0]) < len(self._shape):  # unbind
            removed = removed_dim(self._shape, pieces[0][1])
            dim = -1 if removed == dim else None if removed is None else dim - (removed < dim)
        return tuple(self._at(shape, positions, self._device, dim) for shape, positions in pieces)

    def _one_value(self) -> bool:
        """Whether every element holds the same value (then no structural op changes
        what an element reads: what ``torch.compile`` needs, see :meth:`_filled`)."""
        values = self._values
        return bool(values) and all(same_value(values[0], value) for value in values[1:])

    def _filled(self, shape: torch.Size, device: torch.device | None, stack_dim: int | None) -> Any:
        """The result of a structural op giving ``shape`` when every element holds the
        same value: worked out without element numbers, which a compiled graph cannot
        turn into Python values when the op depends on tensor data (a gather index)."""
        value = self._values[0]
        if not shape or stack_dim == -1:
            return NonTensorData._make(value, shape, device)
        return NonTensorStack._make([value] * math.prod(shape), shape, device, stack_dim)

    def __getitem__(self, index: Any) -> Any:
        if type(index) is str:
            raise self._missing_key(index)
        if type(index) is tuple:
            index = _batch.normalize_index(index, len(self._shape))
        dim = self._stack_dim
        if dim is not None:
            dim = dim_after_index(index, dim)
        shape, positions = indexed(self._shape, index)
        return self._at(shape, positions, self._device, dim)

    def clone(self, recurse: bool = True) -> Self:
        values = copy.deepcopy(self._values) if recurse else list(self._values)
        return self._make(values, self._shape, self._device, self._stack_dim)  # type: ignore[return-value]

    def contiguous(self, *, canonical: bool = False, inplace: bool = False) -> Self:
        """The stack itself: Python values have no memory layout (as the peer)."""
        return self

    def squeeze(self, dim: int | None = None) -> Self:
        """Removes size-1 batch dims; removing the dim the values were stacked along
        gives one ``NonTensorData`` (its one member), as the peer."""
        out = super().squeeze(dim)
        stack_dim = self._stack_dim
        if stack_dim is None or not isinstance(out, NonTensorStack) or not out._values:
            return out
        dims = _batch.squeeze_dims(self._shape, dim)
        if stack_dim in dims:
            return NonTensorData._make(out._values[0], out._shape, out._device)  # type: ignore[return-value]
        out._stack_dim = stack_dim - sum(d < stack_dim for d in dims)
        return out

    def unsqueeze(self, dim: int) -> Self:
        out = super().unsqueeze(dim)
        stack_dim = self._stack_dim
        if stack_dim is not None and isinstance(out, NonTensorStack):
            pos = _batch.normalize_dim(dim, len(self._shape), op="unsqueeze", inclusive=True)
            out._stack_dim = stack_dim + (pos <= stack_dim)
        return out

    def maybe_to_stack(self) -> Self:
        """A new stack of the same values (each element already is one value)."""
        return self.clone(recurse=False)

    def _become(self, other: Self) -> None:
        """Takes the values and batch size of ``other`` (a NonTensorStack) in place: what
        ``pad(..., inplace=True)`` does, keeping this stack's identity, as the peer."""
        if self._locked:
            msg = "cannot change the batch size of a locked NonTensorStack; unlock it first"
            raise LockedError(msg)
        if not isinstance(other, NonTensorStack):
            super()._become(other)
        self._values, self._shape = list(other._values), other._shape
        self._stack_dim = other._stack_dim

    def insert(self, index: int, tensordict: Any) -> None:
        """Inserts a member before position ``index`` along the stack dim: a node whose
        batch size is a member's, or a Python value (held by every element of the new
        member).

        Raises:
            LockedError: the stack is locked.
            StackError: (a ``ValueError``) a node of another batch size.
        """
        if self._locked:
            msg = "cannot insert a member into a locked NonTensorStack; unlock it first"
            raise LockedError(msg)
        dim = self.stack_dim
        member = list(self.batch_size)
        del member[dim]
        node = tensordict if isinstance(tensordict, _NonTensorNode) else None
        if node is None:
            node = NonTensorData(tensordict, batch_size=member, device=self._device)
        if list(node.batch_size) != member:
            msg = (
                f"NonTensorStack.insert: the new member has batch size "
                f"{list(node.batch_size)}, the stack's members have {member}"
            )
            raise StackError(msg)
        array = self._as_array()
        length = array.shape[dim]
        position = min(max(index + length if index < 0 else index, 0), length)  # list.insert
        parts = np.split(array, [position], axis=dim)
        added = node._as_array().reshape([*member[:dim], 1, *member[dim:]])
        joined = np.concatenate([parts[0], added, parts[1]], dim)
        self._values, self._shape = list(joined.reshape(-1)), torch.Size(joined.shape)
        if not isinstance(node, NonTensorData):  # the values may now differ along other dims
            self._stack_dim = None
        if node.device != self._device:
            self._device = None

    def append(self, tensordict: Any) -> None:
        """Adds a member at the end of the stack dim (see :meth:`insert`)."""
        self.insert(self._shape[self.stack_dim], tensordict)

    def extend(self, tensordict: Sequence[Any] | TensorCollection) -> None:
        """Appends each of a list of members, or each part of a stack along the stack
        dim (see :meth:`insert`)."""
        parts = (
            tensordict.unbind(self.stack_dim)
            if isinstance(tensordict, TensorCollection)
            else tensordict
        )
        for part in parts:
            self.append(part)

    valid_keys = TensorCollection.keys  # the peer's older name (no keys here)

    @classmethod
    def from_nontensordata(cls, non_tensor: NonTensorData) -> _NonTensorNode:
        """A stack holding a copy of ``non_tensor``'s value in every element (a copy of
        ``non_tensor`` itself when its batch size is empty); see
        ``NonTensorData.maybe_to_stack``, which shares the value instead."""
        if not non_tensor.batch_size:
            return non_tensor.clone()
        array = np.empty(tuple(non_tensor.batch_size), dtype=object)
        for index in np.ndindex(array.shape):
            array[index] = copy_value(non_tensor.data)
        return cls._from_array(array, non_tensor.device)

    def __setitem__(self, index: Any, value: Any) -> None:
        """Writes ``value`` (a value, or a node broadcast to the selection) at ``index``,
        in place, as the peer. Raises:
            LockedError: (a ``RuntimeError``) if the stack is locked (a saved one too)."""
        if self._locked:
            raise LockedError("cannot write into a locked NonTensorStack; unlock it first")
        new = self._with_written(index, value)  # never changes self: copy on write
        self._values, self._stack_dim = new._flat(), getattr(new, "_stack_dim", None)

    def _written(self, index: Any, value: Any) -> _NonTensorNode:
        values = self._values
        for position, new in self._selected(index, value):
            values[position] = new
        self._stack_dim = None  # an element may now differ from its neighbours
        return self

    def _with_written(self, index: Any, value: Any) -> _NonTensorNode:
        values = self._values
        if all(same_value(values[position], new) for position, new in self._selected(index, value)):
            return self
        copied = self._make(list(values), self._shape, self._device, self._stack_dim)
        return copied._written(index, value)

    def _selected(self, index: Any, value: Any) -> list[tuple[int, Any]]:
        """Each element ``index`` selects, with the value written there (``value``
        broadcast to the selection)."""
        if type(index) is tuple:
            index = _batch.normalize_index(index, len(self._shape))
        shape, positions = indexed(self._shape, index)
        if isinstance(value, _NonTensorNode):
            extra = len(value.batch_size) - len(shape)
            if extra > 0 and all(size == 1 for size in value.batch_size[:extra]):
                value = value[(0,) * extra]  # leading dims of size 1 dropped, as torch does
            try:
                sources = value._flat_as(shape)
            except RuntimeError:
                msg = (
                    f"cannot write values of batch size {list(value.batch_size)} into the "
                    f"elements {list(shape)} selected by {index!r}"
                )
                raise StackError(msg) from None
        else:
            sources = [value] * len(positions)
        return list(zip(positions, sources))

    def _check_new_batch_size(self, new: torch.Size, prefix: tuple[str, ...]) -> None:
        if self._shape[: len(new)] != new:
            raise BatchMismatchError(prefix, self._shape, new)

    def __repr__(self) -> str:
        return (
            f"NonTensorStack({self.tolist()!r}, batch_size={format_shape(self.batch_size)}, "
            f"device={self._device})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_values, (self._values, self._shape, self._device, self._stack_dim))


# Pickles name these (a classmethod pickles through getattr, which weights_only refuses).


def _rebuild_value(
    cls: type[NonTensorData], data: Any, batch_size: torch.Size, device: torch.device | None
) -> NonTensorData:
    return checked_class(cls, NonTensorData, "a Python value")._make(data, batch_size, device)


def _rebuild_values(
    values: list[Any], shape: torch.Size, device: torch.device | None, stack_dim: int | None
) -> NonTensorStack:
    if type(values) is not list or len(values) != math.prod(shape):
        msg = f"a pickle of a NonTensorStack of shape {shape!r} does not hold one value per element"
        raise PickleRefusedError(msg)
    return NonTensorStack._make(values, shape, device, stack_dim)


allow_unpickling(NonTensorData, MetaData, NonTensorStack, _rebuild_value, _rebuild_values)


def is_non_tensor(value: object) -> bool:
    """Whether ``value`` is a ``NonTensorData`` or ``NonTensorStack`` node."""
    return isinstance(value, _NonTensorNode)


def join_non_tensor(
    parts: Sequence[Any], op: str, dim: int, path: tuple[str, ...]
) -> _NonTensorNode:
    """Stacks or concatenates non-tensor nodes (``dim`` already normalized), as the peer
    does: stacking gives one value per member (a ``NonTensorStack``, equal values
    included) unless ``set_capture_non_tensor_stack(True)`` is on or the parts are
    ``MetaData``; concatenating parts that hold one equal value keeps that one value."""
    first = parts[0]
    kind = type(first)
    if kind is MetaData or (
        kind is NonTensorData and (op == "cat" or OPTIONS.capture_non_tensor_stack)
    ):
        # One value shared by every part, in a single pass.
        data, device, batch = first.data, first._device, first._batch_size
        total = 0
        for part in parts:
            if (
                type(part) is not kind
                or part._device != device
                or (part.data is not data and not same_value(part.data, data))
            ):
                break
            if op == "stack":
                if part._batch_size != batch:
                    break
            else:
                total += part._batch_size[dim]
        else:
            size = list(batch)
            if op == "stack":
                size.insert(dim, len(parts))
            else:
                size[dim] = total
            node: _NonTensorNode = kind._make(data, torch.Size(size), device)
            return node
    elif kind is NonTensorData and op == "stack" and not first._batch_size:
        stacked = _stack_values(parts)
        if stacked is not None:
            return stacked
    return _join_values(parts, op, dim, path)


def _stack_values(parts: Sequence[Any]) -> NonTensorStack | None:
    """The common stack, of ``NonTensorData`` parts with no batch dims (records'
    values), in one pass: ``None`` if another part comes up."""
    if torch.compiler.is_compiling():  # it cannot trace operator.attrgetter
        return None  # the general join
    if set(map(type, parts)) != {NonTensorData} or any(map(_batch_of, parts)):
        return None  # C-level passes: the common case costs no Python loop
    devices = set(map(_device_of, parts))
    device = next(iter(devices)) if len(devices) == 1 else None
    values = list(map(_data_of, parts))
    return NonTensorStack._make(values, torch.Size([len(values)]), device, 0)


_batch_of = attrgetter("_batch_size")
_device_of = attrgetter("_device")
_data_of = attrgetter("data")


def _join_values(parts: Sequence[Any], op: str, dim: int, path: tuple[str, ...]) -> NonTensorStack:
    """The values of ``parts`` stacked or concatenated along ``dim``, one per element."""
    for position, part in enumerate(parts):
        if not isinstance(part, _NonTensorNode):
            name = path[0] if len(path) == 1 else path
            msg = (
                f"{op}: entry {name!r} holds a Python value in member 0 but a "
                f"{type(part).__name__} in member {position}"
            )
            raise StackError(msg)
    device = parts[0].device
    if any(part.device != device for part in parts):
        device = None
    # Values differ along `dim` only when each part holds one value (or, for cat, when
    # each part's values differ along `dim` only).
    along_dim = all(
        type(part) is not NonTensorStack or (op == "cat" and part._stack_dim == dim)
        for part in parts
    )
    shape = joined_shape([part.batch_size for part in parts], op, dim, path)
    # Row-major: for each index of the dims before `dim`, each part's block in turn (a
    # part's block spans `dim` and the dims after it). Pure Python, which torch.compile
    # traces whatever the values are.
    values: list[Any] = []
    for outer in range(math.prod(shape[:dim])):
        for part in parts:
            inner = math.prod(part.batch_size[dim:] if op == "cat" else shape[dim + 1 :])
            if type(part) is NonTensorStack:
                values.extend(part._values[outer * inner : (outer + 1) * inner])
            else:
                values.extend([part.data] * inner)
    return NonTensorStack._make(values, shape, device, dim if along_dim else None)


# for torch.compile's guards: see _base/_inline.py
inline_inherited(NonTensorData)
inline_inherited(NonTensorStack)
