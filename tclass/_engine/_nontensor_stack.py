"""``NonTensorStack``: one Python value per element of a batch, and the stacking and
concatenation of Python-value nodes (``join_non_tensor``, which builds stacks).

The values are a flat list in row-major order, shaped like the batch; a structural op is
worked out on a tensor of element numbers (``arange(numel).reshape(batch)``): torch does
the index arithmetic, numpy then gathers the values. The node both kinds share and the
one-value node, ``NonTensorData``, are in ``_nontensor.py``, which reaches this class
through ``ENGINE.NonTensorStack`` (bound at the end of this module).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Generic, cast

import numpy as np
import torch
from typing_extensions import Self, TypeVar

from tclass._base._inline import inline_inherited
from tclass._base._provided import ENGINE
from tclass._base._tensordict_base import Value
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._reshape_ops import Span
from tclass._core import _batch
from tclass._core._batch import BatchSizeLike, format_shape
from tclass._core._device import DeviceLike, as_device
from tclass._core._linked_list import linked_values
from tclass._core._method_names import name_methods_after
from tclass._core._options import OPTIONS
from tclass._core._safe_globals import allow_unpickling
from tclass._core._shape_op import KeepsDims, PicksElements
from tclass._core._tracing import tracing
from tclass._engine._gathered_values import (
    Gather,
    copies_members,
    element_numbers,
    gathered_values,
    joined_numbers,
    traced_rows,
)
from tclass._engine._nontensor import (
    PADDED,
    Meta,
    MetaData,
    NonTensorData,
    _NonTensorNode,
    _rebuild_values,
    check_stack_batch_size,
)
from tclass._engine._nontensor_writes import fills_leading
from tclass._engine._stack_dims import cat_dims, dims_of, one_held, stack_repr, stacked_dims
from tclass._engine._value_index import advanced_at_stack_dim, member_element, member_rest
from tclass._engine._value_positions import (
    StackDims,
    copy_containers,
    copy_value,
    dims_after_expand,
    dims_after_index,
    dims_after_reshape,
    dims_after_squeeze,
    dims_after_view_op,
    dims_after_write,
    element_views,
    expanded,
    indexed,
    joined_shape,
    permutes_dims,
    removed_dim,
    same_value,
)
from tclass.errors import (
    BatchMismatchError,
    DimError,
    LockedError,
    ReductionError,
    StackError,
    UnsupportedError,
)

__all__ = ["NonTensorStack", "join_non_tensor"]

_new_instance = object.__new__
# The type of the values, for annotations only (``NonTensorStack[str]``, as the peer's).
_V = TypeVar("_V", default=Any)


@name_methods_after
class NonTensorStack(_NonTensorNode, Generic[_V]):
    """One Python value per element of a batch (``NonTensorStack[str]`` names the type of
    the values for annotations, as the peer's does; they are not checked against it).

    Built from values or nodes stacked along ``stack_dim`` (``NonTensorStack("a", "b")``,
    ``NonTensorStack(node_a, node_b, stack_dim=1)``), or from (nested) lists with
    :meth:`from_list`; stacking collections that hold Python values builds one too (one
    value per member, equal or not, as the peer does unless
    ``set_capture_non_tensor_stack(True)``). ``tolist()`` gives the values as nested lists
    in batch order; indexing one element gives a ``NonTensorData``.

    Stacking stacks, or unsqueezing or expanding a stack, nests it as the peer's stack of
    stacks: each dim the values were stacked along is a stack dim (``stack_dim`` is the
    outermost, ``tensordicts`` its members, stacks themselves while other stack dims are
    left), and an index gives one ``NonTensorData`` once it removes all of them.

    The values are a flat list in row-major order; a structural op is worked out on a
    tensor of element numbers (``arange(numel).reshape(batch)``) and the list is gathered
    with the result, so every index and shape op torch accepts works here, in pure Python
    and torch (which ``torch.compile`` traces).

    Example:
        >>> names = NonTensorStack("a", "b", "c")
        >>> names[1:].tolist(), names[0].data
        (['b', 'c'], 'a')
    """

    __slots__ = ("_list", "_shape", "_stack_dims", "_held", "_meta", "_gather")
    _copies_keep_lock = False  # flip, roll, tile, expand...: new members, unlocked (the peer's)

    # The values, flat in row-major order (read and written as ``_values``); None while
    # one value, ``_held[0]``, is repeated over the batch (:meth:`_repeated`), or while
    # they are numbers of other stacks' values (``_gather``, what ``torch.compile``
    # traces: see ``_gathered_values``), made a list when first read.
    _list: list[Any] | None
    _shape: torch.Size
    # The dims the members were stacked along, outermost first (the peer's stack of
    # stacks: a stack unsqueezed or stacked again has one more): values are the same
    # along every other dim, and an index that removes all of them gives one value back
    # (as the peer's stacks give a member's member). None when an operation mixed the
    # elements (each element is then its own member).
    _stack_dims: StackDims
    # The one value of the NonTensorData this stack grew from when it has no elements
    # (``(value,)``, else ``()``): what indexing or squeezing every stack dim away gives
    # back, as the peer's member, which keeps it.
    _held: tuple[Any, ...]
    # Whether the members are ``MetaData`` (copies holding equal values, which stack to
    # one value per member): what gives one member back gives a ``MetaData``, as the
    # peer's stack, which holds the members themselves (see :meth:`_of_members`);
    # ``PADDED`` (a pad's result): the members holding ``None`` are the ``NonTensorData``
    # the pad added, the others ``MetaData``, as the peer's pad stacks them. For
    # checkers only: typing.get_type_hints would read `bool` as the method of that name.
    if TYPE_CHECKING:
        _meta: Meta
    # ``()`` while one value is held once (``_list`` is None), the numbers of other
    # stacks' values while those are (``_list`` is None too), else None (a list).
    _gather: Gather | tuple[()] | None

    def __new__(cls, *values: Any, **kwargs: Any) -> Self:
        # Nodes of different batch sizes stack as the peer's lazy stack does: ragged.
        shapes = {v.batch_size for v in values if isinstance(v, _NonTensorNode)}
        if cls is NonTensorStack and (len(shapes) > 1 or -1 in dims_of(shapes)):
            return cast(Self, _new_instance(ENGINE.RaggedNonTensorStack))
        return _new_instance(cls)

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
        # The members' own stack dims (when they share them) are stack dims too.
        self._stack_dims = stacked_dims(nodes, stack_dim)
        self._held = ()
        self._meta = _all_meta(nodes)
        if device is None and nodes and all(node.device == nodes[0].device for node in nodes):
            device = nodes[0].device
        self._device = as_device(device)
        self._locked = False
        check_stack_batch_size(batch_size, self._shape)

    @classmethod
    def _make(
        cls,
        values: list[Any],
        shape: torch.Size,
        device: torch.device | None,
        stack_dims: StackDims | int = None,
    ) -> NonTensorStack:
        """A stack of ``values`` (flat, row-major) shaped ``shape``, unchecked (one int:
        the one stack dim)."""
        node = _new_instance(cls)
        node._values = values
        node._shape = shape
        node._stack_dims = (stack_dims,) if type(stack_dims) is int else stack_dims  # type: ignore[assignment]
        node._held = ()
        node._meta = False
        node._device = device
        node._locked = False
        return node

    @property
    def _values(self) -> list[Any]:
        values = self._list
        if values is None:
            gather = self._gather
            if gather:
                values = self._list = gathered_values(gather)
            else:
                values = self._list = [self._held[0]] * math.prod(self._shape)
            self._gather = None
        return values

    @_values.setter
    def _values(self, values: list[Any]) -> None:
        self._list, self._gather = values, None

    @classmethod
    def _repeated(
        cls, value: Any, shape: torch.Size, device: torch.device | None, stack_dims: StackDims
    ) -> NonTensorStack:
        """``value`` in every element of ``shape``, held once: no list of as many values
        as elements until one is read, so that under ``torch.compile`` a graph building
        it (stacking records with a ``str`` field) does not depend on the batch size."""
        node = cls._make([], shape, device, stack_dims)
        node._list, node._held, node._gather = None, (value,), ()
        return node

    @classmethod
    def _numbered(
        cls, gather: Gather, device: torch.device | None, stack_dims: StackDims
    ) -> NonTensorStack:
        """The values numbered by ``gather`` (see ``_gathered_values``), read when first
        asked for: what a traced structural op gives, not tied to the batch size."""
        node = cls._make([], gather[1].shape, device, stack_dims)
        node._list, node._gather = None, gather
        return node

    def _known_in_trace(self) -> bool:
        """Whether ``torch.compile`` can work on this stack's values without reading a
        list of them (tying the graph to its length): one value held once. (Dynamo ties
        the graph to the list's length as soon as it reads the attribute, even to compare
        it with None: ``_gather`` tells the three states apart, see its comment.)"""
        gather = getattr(self, "_gather", None)  # (unset: a stack built another way)
        return gather is not None and len(gather) == 0

    @classmethod
    def from_list(  # type: ignore[override]  # a stack of Python values, not of collections
        cls, values: Sequence[Any], device: DeviceLike = None
    ) -> NonTensorStack:
        """A stack of ``values``, as the peer's: each nested list one more dim (``-1``
        where the lists' lengths differ: ``[["a", "b"], ["c"]]`` gives ``[2, -1]``), a
        Python-value node a member (its dims follow); items nesting to different depths
        (``[[1, 2], 3]``, which the peer refuses) give a 1-d stack of them as values."""
        where = as_device(device)
        try:
            node = ENGINE.stack_of_lists(values, where)
        except StackError:
            return cls._from_values(values, where)
        if not isinstance(node, NonTensorStack):  # one value for all (capture option)
            return cls._make([node.data] * node.numel(), node.batch_size, node.device)
        return node

    @classmethod
    def _from_values(cls, values: Sequence[Any], device: DeviceLike = None) -> NonTensorStack:
        """A 1-d stack of ``values``, each kept as given (lists and tensors included)."""
        return cls._make(list(values), torch.Size([len(values)]), as_device(device))

    @classmethod
    def _from_array(
        cls, array: np.ndarray[Any, Any], device: torch.device | None, stack_dims: StackDims = None
    ) -> NonTensorStack:
        """A stack of the values of a numpy object array, shaped like it."""
        return cls._make(list(array.reshape(-1)), torch.Size(array.shape), device, stack_dims)

    def _nesting(self) -> StackDims:
        """The batch dims the values were stacked along, outermost first (None: values
        of their elements only), which an index along them reads one member's value."""
        return self._stack_dims

    def _copy_on(self, device: torch.device | None) -> NonTensorStack:
        """A stack of the same values, nested as this one, sharing no list with it."""
        out = NonTensorStack._from_array(self._as_array(), device, self._stack_dims)
        out._held, out._meta = self._held, self._meta
        return out

    @property
    def stack_dim(self) -> int:
        """The batch dim the members were stacked along (the outermost; 0 when unknown)."""
        return self._stack_dims[0] if self._stack_dims else 0

    @property
    def tensordicts(self) -> list[Any]:
        """The stacked members: one node per position along ``stack_dim``."""
        dim = self.stack_dim
        count = self._shape[dim] if self._shape else 0
        return [self[(slice(None),) * dim + (i,)] for i in range(count)]

    @property
    def batch_size(self) -> torch.Size:
        return self._shape

    def numpy(self) -> Any:
        """The values as nested lists shaped like the batch (:meth:`tolist`), as the peer's
        (the stack has no entries, so the collections' dict of arrays would be empty)."""
        return self.tolist()

    @property
    def data(self) -> Any:
        """The one value every element holds, or (when they differ) the values as nested
        lists, as a field holding different values reads; over no elements, the value the
        members hold where it is known (the peer's members keep theirs)."""
        values = self._values
        if not values and self._held:
            return self._held[0]
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
        stack_dims: StackDims = None,
        *,
        parts: bool = False,
    ) -> Any:
        """The values at ``positions`` (element numbers) shaped ``shape``, as a node: one
        value when no stack dim is left (all were indexed away) or for ``[]``; ``parts``:
        a piece of ``split`` / ``chunk``, which keeps a stack of one member (see
        :meth:`_of_members`)."""
        values = self._values
        picked = [values[i] for i in positions]
        node: _NonTensorNode
        if not shape or (stack_dims == () and picked):
            node = NonTensorData._make(picked[0], shape, device)
            return self._of_members(node, parts) if self._meta else node
        # none picked: the one value the members hold, kept over no elements (the peer's
        # members keep theirs) while stack dims are known
        one = stack_dims is not None and self._one_value()
        held = self._held or (tuple(values[:1]) if one else ())
        if not picked and held and stack_dims == ():
            node = NonTensorData._make(held[0], shape, device)
        else:
            node = NonTensorStack._make(picked, shape, device, stack_dims or None)
            if not picked and held:
                node._held = held
        return self._of_members(node, parts) if self._meta else node

    def _of_members(self, node: _NonTensorNode, parts: bool = False) -> _NonTensorNode:
        """``node``, picked from this stack of ``MetaData`` members, as the peer's stack
        gives it (its index stacks the members it picks again, which ``MetaData``
        holding one object stack to): one value (a member, or elements of one member:
        one object; over no elements, one member along each stack dim) a ``MetaData``;
        values of several members, or a piece of ``split`` (``parts``, the peer's new
        stack of the members), a stack of ``MetaData`` members."""
        if type(node) is NonTensorStack:
            values, dims = node._values, node._stack_dims
            if self._meta is PADDED and values and all(value is None for value in values):
                return node  # the pad's new members only (none of them a MetaData)
            if parts or (
                any(value is not values[0] for value in values)
                if values
                else not (node._held and dims and all(node._shape[d] == 1 for d in dims))
            ):
                node._meta = self._meta
                return node
            data = values[0] if values else node._held[0]
        elif type(node) is NonTensorData:
            data = node.data
        else:
            return node
        return self._kind_of(data)._make(data, node.batch_size, node._device)

    def _kind_of(self, value: Any) -> type[NonTensorData]:
        """The class of a node giving back ``value``, one member's (or elements of one
        member's): ``MetaData`` for a stack of ``MetaData`` members but for a pad's new
        members (``None``, see ``_meta``)."""
        if not self._meta or (self._meta is PADDED and value is None):
            return NonTensorData
        return MetaData

    def _rebatched(self, batch_size: torch.Size) -> Self:
        values = self._values
        if batch_size == self._shape:
            return self._make(list(values), batch_size, self._device, self._stack_dims)  # type: ignore[return-value]
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
        # the same stack (its stack dims too: rows read as the members were stacked)
        if tracing():
            return self._traced_copy(device)
        return self._copy_with(self._values, device)

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
        if tracing():
            return self._traced_copy(device)
        return self._copy_with(self._values, device)

    def _traced_copy(self, device: Any = ..., copies: str = "") -> Self:
        """:meth:`_copy_with` of the same values (copied as ``copies`` says: see
        ``_gathered_values.Gather``), under ``torch.compile``."""
        device = self._device if device is ... else device
        if self._known_in_trace():  # (one value: held as the clone's is, not copied)
            return self._filled(self._shape, device, self._stack_dims)  # type: ignore[no-any-return]
        sources, numbers, own = element_numbers(self)
        gather = (sources, numbers, "deep" if own and copies and own != copies else copies or own)
        return self._numbered(gather, device, self._stack_dims)  # type: ignore[return-value]

    def _with_each_value(self, fn: Callable[[Any], Any]) -> Self:
        values = [fn(value) for value in self._values]
        if all(new is old for new, old in zip(values, self._values)):
            return self
        out = self._make(values, self._shape, self._device, self._stack_dims)
        out._held, out._meta = tuple(map(fn, self._held)), self._meta
        return out  # type: ignore[return-value]

    def _map_batch(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        device = self._device if device is ... else device
        if tracing():
            if self._one_value():
                return self._filled(batch_size, device, None)  # type: ignore[no-any-return]
            sources, numbers, copies = element_numbers(self)
            dims = self._stack_dims if isinstance(fn, KeepsDims) else None
            return self._numbered((sources, fn(numbers), copies), device, dims)  # type: ignore[arg-type,return-value]
        pieces, views = element_views(self._shape, fn)
        shape, positions = pieces[0]
        node = self._at(shape, positions, device, self._dims_after(fn, shape, positions))
        return self._viewed(node, positions, views)  # type: ignore[no-any-return]

    def _viewed(self, node: Any, positions: list[int], views: bool) -> Any:
        """``node``, the result of a structural op at ``positions``; of a view (``views``:
        see ``element_views``), one whose writes reach this stack, as the peer's, whose
        view holds this stack's own members."""
        if views and positions:
            node._member_of = (self, positions)
        return node

    def _dims_after(
        self, fn: Callable[[Value], Value], shape: torch.Size, positions: list[int]
    ) -> StackDims:
        """Where the stack dims are after the structural op ``fn`` that gave ``shape``
        and ``positions``: a reshape keeping the order of the elements regroups them as
        the peer's stack does; other ops move dims as their strides tell (over no
        elements, where every op keeps the order of none, the strides tell first; a
        permute of size-1 dims, which keeps the order too, moves them); an op that keeps
        every dim in place (``KeepsDims``) keeps them."""
        if isinstance(fn, KeepsDims):
            return self._stack_dims
        moved = None if self._values else dims_after_view_op(self._shape, fn, self._stack_dims)
        if moved is not None:
            return moved
        if isinstance(fn, PicksElements):  # (the peer's flip, roll, rot90, tile, gather:
            return tuple(range(len(shape)))  # each element a member, nested along each dim)
        if (
            positions == list(range(len(positions)))
            and math.prod(shape) == len(self._values)
            and not permutes_dims(self._shape, fn)
        ):
            return dims_after_reshape(self._shape, shape, self._stack_dims)
        return dims_after_view_op(self._shape, fn, self._stack_dims)

    def _map_values_split(
        self, fn: Callable[[Value], Sequence[Value]], batch_sizes: Sequence[torch.Size]
    ) -> tuple[Self, ...]:
        dims = self._stack_dims
        if torch.compiler.is_compiling() and self._one_value():
            if dims is not None and batch_sizes and len(batch_sizes[0]) < len(self._shape):
                dims = ()  # unbind: each piece one member (or one row of equal values)
            return tuple(self._filled(size, self._device, dims) for size in batch_sizes)
        pieces, views = element_views(self._shape, fn)
        if dims is not None and pieces and len(pieces[0][0]) < len(self._shape):  # unbind
            removed = removed_dim(self._shape, fn)  # type: ignore[arg-type]
            dims = None if removed is None else dims_after_squeeze(dims, [removed])
        return tuple(
            self._viewed(
                self._at(shape, positions, self._device, dims, parts=True), positions, views
            )
            for shape, positions in pieces
        )

    def _one_value(self) -> bool:
        """Whether every element holds the same value (then no structural op changes
        what an element reads: what ``torch.compile`` needs, see :meth:`_filled`)."""
        if self._known_in_trace():  # held once (read without making the list)
            return math.prod(self._shape) > 0
        if tracing():  # the values are not read in the trace
            return False
        values = self._values
        return bool(values) and all(same_value(values[0], value) for value in values[1:])

    def _filled(self, shape: torch.Size, device: torch.device | None, stack_dims: StackDims) -> Any:
        """The result of a structural op giving ``shape`` when every element holds the
        same value: worked out without element numbers, which a compiled graph cannot
        turn into Python values when the op depends on tensor data (a gather index)."""
        value = self._held[0] if self._known_in_trace() else self._values[0]
        if not shape or stack_dims == ():
            return self._kind_of(value)._make(value, shape, device)
        node = NonTensorStack._repeated(value, shape, device, stack_dims)
        node._meta = self._meta
        return node

    def __getitem__(self, index: Any) -> Any:
        if type(index) is str:
            raise self._missing_key(index)
        if type(index) is tuple:
            index = _batch.normalize_index(index, len(self._shape), keys=True)
        if tracing():
            traced = traced_rows(self, index)
            if traced is not None:
                return traced
        shape, positions = indexed(self._shape, index)
        dims = dims_after_index(index, self._stack_dims, self._shape)
        node = self._at(shape, positions, self._device, dims)
        if dims == () and not positions and self._stack_dims and type(node) is NonTensorStack:
            # no element, but ints at the stack dims pick a member: its value, as the peer
            at = member_element(index, self._stack_dims, self._shape)
            if at is not None:
                value = self._values[at]
                node = self._kind_of(value)._make(value, shape, self._device)
        if type(node) is NonTensorStack and copies_members(index) and not self._copy_shared(index):
            return node  # a copy, unlocked, whose writes reach no member: the peer's clone
        if dims == () and self._indexes_past_member(index):
            return node  # a new node, unlocked: the peer's member indexed further
        node._member_of = (self, positions)  # a write into it by index reaches this stack
        return self._as_saved(node)  # saved and locked as this stack, as the peer's rows

    def _copy_shared(self, index: Any) -> bool:
        """Whether the copy an advanced ``index`` gives stays in shared memory, locked:
        the peer's copy of the members of a shared stack does, where the advanced items
        pick members (at a stack dim); at the other dims they index each member further,
        a ``NonTensorData`` giving a new node (unlocked)."""
        return self._shared_without_tensors() and advanced_at_stack_dim(
            index, self._stack_dims, self._shape
        )

    def _indexes_past_member(self, index: Any) -> bool:
        """Whether ``index`` (normalized), with an int at each stack dim, picks a member
        and then indexes it further so that the peer's ``NonTensorData`` rule gives a new
        node (see ``NonTensorData.__getitem__``), where the rest is neither whole nor,
        for a saved or shared stack, keeps the data pointer. ``s[1, 0]`` of a
        ``lazy_stack`` of ``NonTensorData`` over ``[3]``, or ``s[None, 1]``: unlocked, and
        a write into it (``.data = v``) leaves the stack as it is, as the peer's."""
        rest = member_rest(index, self._stack_dims, self._shape)
        if rest is None or _batch.is_whole_index(rest, len(self._shape)):
            return False
        return not (_batch.keeps_data_pointer(rest) and self._views_stay_locked())

    def clone(self, recurse: bool = True) -> Self:
        if tracing():
            return self._traced_copy(copies="deep" if recurse else "")
        values = copy.deepcopy(self._values) if recurse else list(self._values)
        return self._copy_with(values)

    def _shallow_clone(self) -> Self:
        if tracing():
            return self._traced_copy(copies="containers")
        return self._copy_with(list(map(copy_containers, self._values)))  # as the peer's (base)

    def _copy_with(self, values: list[Any], device: Any = ...) -> Self:
        """A stack of ``values`` shaped and nested as this one, on ``device`` (this one's
        by default), holding the value its members hold over no elements."""
        device = self._device if device is ... else device
        out = self._make(values, self._shape, device, self._stack_dims)
        out._held, out._meta = self._held, self._meta
        return out  # type: ignore[return-value]

    def contiguous(self, *, canonical: bool = False, inplace: bool = False) -> Self:
        """The stack itself: Python values have no memory layout (as the peer)."""
        return self

    def is_contiguous(self) -> bool:
        """False, as the peer's stack of values (a lazy stack there), so a collection
        holding one is not contiguous either; ``contiguous()`` keeps it as it is."""
        return False

    def _reshaped(self, new: torch.Size, *, always: bool = False, span: Span | None = None) -> Self:
        """``reshape``, ``flatten``, ``unflatten``: of a saved stack, saved too, as the
        peer's (a lazy stack of the same saved members; its one-value node, a collection,
        is not: it follows the peer's collections there)."""
        out = super()._reshaped(new, always=always, span=span)
        self._mark_view_of(out)
        return out

    def narrow(self, dim: int, start: int, length: int) -> Self:
        """A view of ``length`` elements along ``dim`` from ``start``: of a saved stack,
        saved too, as the peer's."""
        out = super().narrow(dim, start, length)
        self._mark_view_of(out)
        return out

    def squeeze(self, dim: int | None = None) -> Self:
        """Removes size-1 batch dims; removing every dim the values were stacked along
        gives one ``NonTensorData`` (its one member), as the peer; saved and locked as
        this stack (see ``_as_saved``)."""
        out = super().squeeze(dim)
        if out is self:
            return out
        return cast(Self, self._as_saved(self._squeezed(out, dim)))

    def _squeezed(self, out: Any, dim: int | None) -> Any:
        """The squeeze ``out`` (the base's) regrouped by the stack dims left."""
        dims = dims_after_squeeze(self._stack_dims, _batch.squeeze_dims(self._shape, dim))
        if not isinstance(out, NonTensorStack):
            if not dims:  # (a stack dim left keeps its members: the elements, in order)
                return out
            out = self._make(list(self._values), out.batch_size, out._device, dims)
        if dims == () and (out._values or self._held):
            value = out._values[0] if out._values else self._held[0]
            return self._kind_of(value)._make(value, out._shape, out._device)
        out._stack_dims, out._held = dims or None, self._held
        return self._of_members(out) if self._meta else out

    def unsqueeze(self, dim: int) -> Self:
        """Inserts a batch dim of size 1, a stack dim of its own (the peer stacks each
        member's one member along it)."""
        out = super().unsqueeze(dim)
        dims = self._stack_dims
        if dims is not None and isinstance(out, NonTensorStack):
            pos = _batch.normalize_dim(dim, len(self._shape), op="unsqueeze", inclusive=True)
            out._stack_dims, out._held = (
                (*(d + 1 if d >= pos else d for d in dims), pos),
                self._held,
            )
        return cast(Self, self._as_saved(out))

    def _expanded(self, shape: tuple[int, ...], leaf_op: str) -> Self:
        """``expand`` / ``broadcast_to``: to another batch size, a new stack of its own,
        unlocked (the peer's builds new members there: a write into it reaches no member
        of this stack), else a view whose writes reach this stack, locked as it."""
        out = super()._expanded(shape, leaf_op)
        if out is not self and out.batch_size != self._shape:
            cast(Any, out)._member_of = None
        if tracing() and isinstance(out, NonTensorStack):
            # a compiled stack is filled or numbered without its dims (see _map_batch):
            # the expand's, from the sizes alone
            dims = dims_after_expand(self._shape, out._shape, self._stack_dims)
            if out._stack_dims is None and dims:
                out._stack_dims = dims
        return out

    def maybe_to_stack(self) -> Self:
        """A new stack of the same values (each element already is one value)."""
        return self.clone(recurse=False)

    def _become(self, other: Self) -> None:
        """Takes the values and batch size of ``other`` (a NonTensorStack) in place: what
        ``pad(..., inplace=True)`` does, keeping this stack's identity, as the peer."""
        if self._locked:
            msg = (
                "Cannot modify locked TensorDict (a NonTensorStack): "
                "cannot change its batch size; unlock it first"
            )
            raise LockedError(msg)
        if not isinstance(other, NonTensorStack):
            super()._become(other)
        self._values, self._shape = list(other._values), other._shape
        self._stack_dims = other._stack_dims

    def insert(self, index: int, tensordict: Any) -> None:
        """Inserts a member before position ``index`` along the stack dim: a node whose
        batch size is a member's, or a Python value (held by every element of the new
        member).

        Raises:
            LockedError: the stack is locked.
            StackError: (a ``ValueError``) a node of another batch size.
        """
        if self._locked:
            msg = (
                "Cannot modify locked TensorDict (a NonTensorStack): "
                "cannot insert a member; unlock it first"
            )
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
            self._stack_dims = None
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
            raise self._locked_error("cannot write into it")
        new = self._with_written(index, value)  # never changes self: copy on write
        self._values, self._stack_dims = new._flat(), getattr(new, "_stack_dims", None)
        self._write_back()  # into the stack this one was read from by index, if any

    def _written(self, index: Any, value: Any) -> _NonTensorNode:
        """``value`` written at ``index``; the values it already holds there change
        nothing, the stack dims (its members) included, as the peer's."""
        values = self._values
        selected = self._selected(index, value)
        if all(same_value(values[position], new) for position, new in selected):
            return self
        for position, new in selected:
            values[position] = new
        # an element may now differ from its neighbours (unless each is a member)
        self._stack_dims = dims_after_write(self._stack_dims, len(self._shape))
        return self

    def _with_written(self, index: Any, value: Any) -> _NonTensorNode:
        values = self._values
        if all(same_value(values[position], new) for position, new in self._selected(index, value)):
            return self
        copied = self._make(list(values), self._shape, self._device, self._stack_dims)
        copied._meta = self._meta
        return copied._written(index, value)

    def _selected(self, index: Any, value: Any) -> list[tuple[int, Any]]:
        """Each element ``index`` selects, with the value written there (``value``
        broadcast to the selection)."""
        if type(index) is tuple:
            index = _batch.normalize_index(index, len(self._shape), keys=True)
        shape, positions = indexed(self._shape, index)
        if fills_leading(value, shape) and not _batch.broadcasts_to(value.batch_size, shape):
            value = value.data  # its one value into each element (see fills_leading)
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
        return stack_repr(repr(self.tolist()), self.batch_size, self._device)

    def __reduce__(self) -> tuple[Any, ...]:
        state = (self._values, self._shape, self._device, self._stack_dims)
        kept = (self._is_saved(), self._locked)  # as the peer's pickle keeps them
        if self._meta:  # (MetaData members: last, which older pickles lack)
            return (_rebuild_values, (*state, self._held, *kept, self._meta))
        if any(kept):
            return (_rebuild_values, (*state, self._held, *kept))
        # the value held over no elements, only when there is one (older pickles lack it)
        return (_rebuild_values, (*state, self._held) if self._held else state)


allow_unpickling(NonTensorStack)  # (its pickles name _nontensor._rebuild_values)


def join_non_tensor(
    parts: Sequence[Any], op: str, dim: int, path: tuple[str, ...]
) -> _NonTensorNode:
    """Stacks or concatenates non-tensor nodes (``dim`` already normalized), as the peer
    does: stacking gives one value per member (a ``NonTensorStack``, equal values
    included) unless ``set_capture_non_tensor_stack(True)`` is on (equal values) or the
    parts are ``MetaData`` holding one object (``is``, not ``==``, as the peer: equal
    copies, a clone's or a reload's, stack to one value per member); concatenating parts
    that hold one equal value keeps that one value."""
    first = parts[0]
    kind = type(first)
    if kind is MetaData or (
        kind is NonTensorData and (op == "cat" or OPTIONS.capture_non_tensor_stack)
    ):
        # One value shared by every part, in a single pass.
        data, device, batch = first.data, first._device, first._batch_size
        by_identity = kind is MetaData and op == "stack"
        total = 0
        for part in parts:
            if (
                type(part) is not kind
                or part._device != device
                or (part.data is not data and (by_identity or not same_value(part.data, data)))
            ):
                break
            if op == "stack":
                if part._batch_size != batch and not (
                    by_identity and len(part._batch_size) == len(batch)
                ):
                    break  # (one MetaData over parts of other sizes: a lazy stack's, ragged)
            else:
                total += part._batch_size[dim]
        else:
            if op == "stack":
                size = _ragged_size([part._batch_size for part in parts])
                size.insert(dim, len(parts))
            else:
                size = list(batch)
                size[dim] = total
            node: _NonTensorNode = kind._make(data, torch.Size(size), device)
            return node
    elif kind is NonTensorData and op == "stack" and not first._batch_size:
        stacked = _stack_values(parts)
        if stacked is not None:
            return stacked
    return _join_values(parts, op, dim, path)


def _ragged_size(sizes: list[torch.Size]) -> list[int]:
    """The batch size the parts of a stack (of one ``MetaData``) share, ``-1`` along the
    dims where they differ, as the peer's lazy stack of them."""
    return [size if all(s[i] == size for s in sizes) else -1 for i, size in enumerate(sizes[0])]


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
    # compared in a list, not a set: hashing a symbolic size would tie a compiled graph
    # to the batch size
    shapes = [part.batch_size for part in parts]
    ragged = any(size == -1 for shape in shapes for size in shape)
    ragged = ragged or any(type(p) is ENGINE.RaggedNonTensorStack for p in parts)  # (kept)
    if ragged or (op == "stack" and any(shape != shapes[0] for shape in shapes[1:])):
        return ENGINE.join_ragged(parts, op, dim, path)  # as the peer's lazy stack: ragged
    device = parts[0].device
    if any(part.device != device for part in parts):
        device = None
    shape = joined_shape([part.batch_size for part in parts], op, dim, path)
    dims = stacked_dims(parts, dim) if op == "stack" else cat_dims(parts, dim)
    one = one_held(parts)
    if one:  # one value in every element: held once, whatever the batch size
        return NonTensorStack._repeated(one[0], shape, device, dims)
    meta = _all_meta(parts)
    if tracing() and all(type(part) is NonTensorStack for part in parts):
        traced = NonTensorStack._numbered(joined_numbers(list(parts), op, dim), device, dims)
        traced._meta = meta
        return traced
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
    stack = NonTensorStack._make(values, shape, device, dims)
    stack._meta = meta
    if not values:  # no elements: the one value every part holds, if they agree
        held = [part._held if type(part) is NonTensorStack else (part.data,) for part in parts]
        if all(h and same_value(h[0], held[0][0]) for h in held):
            stack._held = held[0]
    return stack


def _all_meta(parts: Sequence[Any]) -> Meta:
    """Whether ``parts`` (at least one) are ``MetaData`` or stacks of ``MetaData``
    members: their stack holds ``MetaData`` members (see ``NonTensorStack._meta``;
    ``PADDED`` when a part is a pad's stack)."""
    if not parts:
        return False
    kinds = [True if type(part) is MetaData else getattr(part, "_meta", False) for part in parts]
    if not all(kinds):
        return False
    return PADDED if PADDED in kinds else True


ENGINE.NonTensorStack = NonTensorStack

# for torch.compile's guards: see _base/_inline.py
inline_inherited(NonTensorStack)
