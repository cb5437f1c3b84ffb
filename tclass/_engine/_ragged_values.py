"""Ragged stacks of Python values: a ``NonTensorStack`` whose members' batch sizes differ
(``-1`` in its batch size where they do, as the peer's, whose ``NonTensorStack`` is a
lazy stack).

They come from stacking Python-value nodes of different batch sizes
(``torch.stack``, ``lazy_stack``, ``NonTensorStack(a, b)``), from reading an entry of
Python values out of a ragged lazy stack (``lazy["s"]``, ``densify()``), and from
loading a saved one. ``pad_sequence`` keeps its padded members so too, all of one batch
size (no ``-1``), as the peer's lazy stack of them: such a stack also has an array of its
values (``_as_array``: comparisons, saving, reductions work on it) and stacks or
concatenates as a ragged one does, keeping its members. The members are kept as they are
(``stack[i]`` *is* member ``i`` along dim 0, so writes into it reach the stack); other
indexing and shape ops are worked out on a lazy stack of element numbers shaped like
this stack, so they do exactly what a lazy stack of those shapes does (and refuse what
needs one size along a ragged dim, with its errors). ``tolist()`` gives nested lists of
the members' lengths; comparisons, which would need a ragged bool tensor, are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from typing_extensions import Self

from tclass._base._provided import ENGINE
from tclass._base._tensordict_base import Value
from tclass._core._batch import BatchSizeLike, format_shape
from tclass._core._device import DeviceLike, as_device
from tclass._core._linked_list import link_nested
from tclass._core._safe_globals import allow_unpickling
from tclass._engine._nontensor import NonTensorData, _NonTensorNode, check_stack_batch_size
from tclass._engine._nontensor_stack import NonTensorStack, join_non_tensor
from tclass._engine._stack_dims import stack_repr
from tclass._engine._td import TensorDict
from tclass._engine._value_positions import StackDims, same_value, shifted_in
from tclass.errors import (
    HeterogeneousEntryError,
    LockedError,
    PickleRefusedError,
    ShapeError,
    StackError,
)

__all__ = ["RaggedNonTensorStack", "join_ragged", "ragged_from_lists", "stack_of_lists"]

_new_instance = object.__new__
_KEY = "position"  # the entry of the element-number collections
_BASIC_ITEMS = (int, slice, type(None), type(...))


class RaggedNonTensorStack(NonTensorStack):
    """A ``NonTensorStack`` of members whose batch sizes differ (see the module
    docstring); it answers as a ``NonTensorStack`` (``isinstance``, ``is_non_tensor``,
    the repr), with ``-1`` in its batch size along the dims where the members differ.

    Example:
        >>> words = NonTensorStack(NonTensorStack("a", "b"), NonTensorStack("c", "d", "e"))
        >>> words.batch_size, words.tolist(), words[1, 2].data
        (torch.Size([2, -1]), [['a', 'b'], ['c', 'd', 'e']], 'e')
    """

    __slots__ = ("_members",)

    _members: list[_NonTensorNode]

    def __init__(
        self,
        *values: Any,
        stack_dim: int = 0,
        device: DeviceLike = None,
        batch_size: BatchSizeLike = None,
    ) -> None:
        # Built by NonTensorStack.__new__ for nodes of different batch sizes.
        nodes = [v if isinstance(v, _NonTensorNode) else NonTensorData(v) for v in values]
        built = _ragged(nodes, stack_dim, None)
        self._members, self._shape = built._members, built._shape
        self._stack_dims, self._held, self._meta = built._stack_dims, (), False
        common = built._device
        self._device = as_device(device) if device is not None else common
        self._locked = False
        check_stack_batch_size(batch_size, self._shape)

    @classmethod
    def _of(
        cls, members: list[_NonTensorNode], stack_dim: int, device: torch.device | None
    ) -> RaggedNonTensorStack:
        """A ragged stack of ``members`` along ``stack_dim``, unchecked."""
        node = _new_instance(cls)
        node._members = members
        node._shape = _stacked_size([m.batch_size for m in members], stack_dim)
        node._stack_dims = (stack_dim,)
        node._held, node._meta = (), False
        node._device = device
        node._locked = False
        return node

    # --- what it is made of --------------------------------------------------------------

    @property
    def tensordicts(self) -> list[Any]:
        """The members, in stack order (a new list; the members themselves are shared)."""
        return list(self._members)

    @property
    def data(self) -> Any:
        """The one value every element holds, or the values as nested lists."""
        values = self._flat()
        if values and all(same_value(value, values[0]) for value in values[1:]):
            return values[0]
        return self._read()

    def _read(self) -> Any:
        return link_nested(self.tolist(), len(self._shape), self)  # item writes reach it

    def tolist(self, **kwargs: Any) -> Any:
        """The values as nested lists, a list per member along the stack dim (a ragged dim
        before it must have one size in every member at each index of the dims before it).

        Raises:
            HeterogeneousEntryError: a dim before the stack dim has different sizes in
                different members.
        """
        return self._listed(())

    def _listed(self, outer: tuple[int, ...]) -> Any:
        dim = len(outer)
        if dim == self.stack_dim:
            return [m[outer].tolist() if outer else m.tolist() for m in self._members]
        size = self._shape[dim]
        if size == -1:  # ragged inside the members: one size at these outer indices?
            sizes = {(m[outer] if outer else m).batch_size[0] for m in self._members}
            size = sizes.pop() if len(sizes) == 1 else -1
        if size == -1:
            msg = (
                f"tolist: dim {dim} of this NonTensorStack (batch size "
                f"{format_shape(self._shape)}) is ragged across its members and comes "
                f"before its stack dim {self.stack_dim}: there are no nested lists in that "
                "order; list the members instead ([m.tolist() for m in stack.tensordicts])"
            )
            raise HeterogeneousEntryError(msg)
        return [self._listed((*outer, i)) for i in range(size)]

    def _flat(self) -> list[Any]:
        """Every value, member after member (each member's in row-major order)."""
        values: list[Any] = []
        for member in self._members:
            values.extend(member._flat())
        return values

    def _flat_as(self, shape: torch.Size) -> list[Any]:
        if -1 not in self._shape:  # members of one batch size: an array holds them
            return self._dense()._flat_as(shape)
        msg = (
            f"a NonTensorStack of ragged batch size {format_shape(self._shape)} has no "
            f"element-wise form of batch size {format_shape(shape)} (comparisons and where "
            "need one); work on its members (stack.tensordicts)"
        )
        raise HeterogeneousEntryError(msg)

    def _as_array(self) -> Any:
        if -1 not in self._shape:
            parts = [member._as_array() for member in self._members]
            return np.stack(parts, axis=self.stack_dim)
        msg = (
            f"a NonTensorStack of ragged batch size {format_shape(self._shape)} has no array "
            "shaped like its batch (a table, a state dict or a store needs one); save it "
            "with memmap, or convert its members (stack.tensordicts)"
        )
        raise HeterogeneousEntryError(msg)

    def _dense(self) -> NonTensorStack:
        """The values of a stack whose members share one batch size, as one stack (each
        element read as its own value where the members are nested differently)."""
        return NonTensorStack._from_array(self._as_array(), self._device, self._nesting())

    def _one_value(self) -> bool:
        values = self._flat()
        return bool(values) and all(same_value(values[0], value) for value in values[1:])

    # --- element-wise: each member ---------------------------------------------------------

    def _with_members(
        self, fn: Callable[[_NonTensorNode], _NonTensorNode], device: Any = ...
    ) -> Self:
        members = [fn(member) for member in self._members]
        return self._of(members, self.stack_dim, self._device if device is ... else device)  # type: ignore[return-value]

    def _copy_on(self, device: torch.device | None) -> NonTensorStack:
        return self._with_members(lambda m: _member_on(m, device), device)

    def _nesting(self) -> StackDims:
        """The stack dim, then the members' own stack dims where they share them; None
        where they are nested differently (each element then reads as its own value)."""
        if -1 in self._shape:
            return self._stack_dims
        found = {m._nesting() if isinstance(m, NonTensorStack) else () for m in self._members}
        inner = found.pop() if len(found) == 1 else None
        return None if inner is None else shifted_in(inner, self.stack_dim)

    def clone(self, recurse: bool = True) -> Self:
        return self._with_members(lambda m: m.clone(recurse))

    def maybe_to_stack(self) -> Self:
        return self.clone(recurse=False)

    def _map_values(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        if batch_size != self._shape:
            return self._dense_or_refused("this reduction")._map_values(fn, batch_size, device)  # type: ignore[return-value]
        return self._with_members(lambda m: m._map_values(fn, m.batch_size, device), device)

    def _with_each_value(self, fn: Callable[[Any], Any]) -> Self:
        members = [member._with_each_value(fn) for member in self._members]
        if all(new is old for new, old in zip(members, self._members)):
            return self
        return self._of(members, self.stack_dim, self._device)  # type: ignore[return-value]

    def _new_like(
        self, values: dict[str, Value], batch_size: torch.Size, device: torch.device | None
    ) -> Self:
        if batch_size != self._shape:
            return self._dense_or_refused("this operation")._new_like(values, batch_size, device)  # type: ignore[return-value]
        return self._with_members(lambda m: m, device)

    def _rebatched(self, batch_size: torch.Size) -> Self:
        if batch_size != self._shape:
            return self._dense_or_refused("this reduction")._rebatched(batch_size)  # type: ignore[return-value]
        return self.clone(recurse=False)

    def _applies_at(self, batch_size: torch.Size) -> bool:
        return batch_size == self._shape

    def _dense_or_refused(self, action: str) -> NonTensorStack:
        """:meth:`_dense` for an operation that changes the batch size, which a ragged
        stack refuses."""
        if -1 in self._shape:
            self._refuse(action)
        return self._dense()

    def _refuse(self, action: str) -> None:
        msg = (
            f"{action} needs one size along every batch dim, but this NonTensorStack is "
            f"ragged (batch size {format_shape(self._shape)}: its members have "
            f"{', '.join(format_shape(m.batch_size) for m in self._members[:4])}); work on "
            "its members (stack.tensordicts)"
        )
        raise HeterogeneousEntryError(msg)

    # --- structural: worked out on a lazy stack of element numbers ------------------------

    def _numbers(self, start: int) -> tuple[Any, int]:
        """A lazy stack shaped like this stack whose entry holds each element's number
        (member after member, from ``start``), and the next free number."""
        parts = []
        for member in self._members:
            if isinstance(member, RaggedNonTensorStack):
                part, start = member._numbers(start)
            else:
                size = member.batch_size
                count = size.numel()
                numbers = torch.arange(start, start + count).reshape(size)
                part, start = TensorDict({_KEY: numbers}, batch_size=size), start + count
            parts.append(part)
        return ENGINE.LazyStackedTensorDict(*parts, stack_dim=self.stack_dim), start

    def _moved(self, fn: Callable[[Any], Any]) -> Any:
        """``fn`` (an index or shape op) applied to the element numbers, and what to
        build the result(s) from."""
        numbers, _ = self._numbers(0)
        try:
            return fn(numbers), numbers
        except (HeterogeneousEntryError, ShapeError) as error:  # sizes along a ragged dim
            op = str(error).split(":")[0]
            sizes = ", ".join(format_shape(m.batch_size) for m in self._members[:4])
            msg = (
                f"{op}: this NonTensorStack is ragged (batch size {format_shape(self._shape)}, "
                f"members of batch sizes {sizes}), and the operation needs one size along a "
                "ragged dim; index along the stack dim first (stack[i]) or work on its "
                "members (stack.tensordicts)"
            )
            raise HeterogeneousEntryError(msg) from None

    def _built(self, result: Any, numbers: Any) -> Any:
        return _from_numbers(result, self._flat(), _kept_parts(numbers, self), self._device)

    def _map_batch(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        result, numbers = self._moved(fn)
        out = self._built(result, numbers)
        if device is not ...:
            out = out._map_values(lambda v: v, out.batch_size, device)
        return out  # type: ignore[no-any-return]

    def _map_values_split(
        self, fn: Callable[[Value], Sequence[Value]], batch_sizes: Sequence[torch.Size]
    ) -> tuple[Self, ...]:
        pieces, numbers = self._moved(fn)
        return tuple(self._built(piece, numbers) for piece in pieces)

    def __getitem__(self, index: Any) -> Any:
        if type(index) is str:
            raise self._missing_key(index)
        member = self._member_at(index)
        if member is not None:
            return member
        result, numbers = self._moved(lambda stack: stack[index])
        return self._built(result, numbers)

    def _member_at(self, index: Any) -> Any:
        """``stack[..., i, ...]`` with ints or slices before the stack dim, an int or a
        slice ``i`` at it and basic items after it, as the peer's lazy stack indexes:
        member ``i``'s own index by the other items (it reads as its own nesting says),
        or a stack of those of the members ``i`` slices; None for any other index."""
        items = index if type(index) is tuple else (index,)
        d = self.stack_dim
        if len(items) <= d or any(type(item) not in (int, slice) for item in items[:d]):
            return None
        at, rest = items[d], items[:d] + items[d + 1 :]
        if any(type(item) not in _BASIC_ITEMS for item in rest):
            return None
        if type(at) is slice:
            members = self._members[at]
            if not members:
                return None
            picked = [member[rest] if rest else member for member in members]
            ints = sum(type(item) is int for item in items[:d])
            return self._of(picked, d - ints, self._device)
        if type(at) is not int or not -len(self._members) <= at < len(self._members):
            return None  # (the error of the general path)
        member = self._members[at]
        return member[rest] if rest else member

    def squeeze(self, dim: int | None = None) -> Self:
        return super(NonTensorStack, self).squeeze(dim)

    def unsqueeze(self, dim: int) -> Self:
        return super(NonTensorStack, self).unsqueeze(dim)

    # --- writes ----------------------------------------------------------------------------

    def __setitem__(self, index: Any, value: Any) -> None:
        """Writes ``value`` (one value, or a node of the selection's batch size) at
        ``index``, into the members, in place.

        Raises:
            LockedError: the stack is locked.
            HeterogeneousEntryError: the index needs one size along a ragged dim.
            StackError: a node of another number of elements than the selection.
        """
        if self._locked:
            raise LockedError(
                "Cannot modify locked TensorDict (a NonTensorStack): "
                "cannot write into it; unlock it first"
            )
        result, _ = self._moved(lambda stack: stack[index])
        positions = _numbers_of(result)
        if isinstance(value, _NonTensorNode):
            sources = value._flat()
            if len(sources) == 1:
                sources = sources * len(positions)
            elif len(sources) != len(positions):
                msg = (
                    f"cannot write values of batch size {format_shape(value.batch_size)} into "
                    f"the {len(positions)} elements selected by {index!r}"
                )
                raise StackError(msg)
        else:
            sources = [value] * len(positions)
        self._write_numbers(dict(zip(positions, sources)))

    def _write_numbers(self, writes: dict[int, Any]) -> None:
        """Writes ``{element number: value}`` into the members (a member holding one
        value becomes a stack of its elements first)."""
        start = 0
        for i, member in enumerate(self._members):
            count = len(member._flat())
            mine = {n - start: v for n, v in writes.items() if start <= n < start + count}
            start += count
            if not mine:
                continue
            if isinstance(member, RaggedNonTensorStack):
                member._write_numbers(mine)
                continue
            if isinstance(member, NonTensorData):
                member = self._members[i] = NonTensorStack.from_nontensordata(member)
            assert isinstance(member, NonTensorStack)
            for position, new in mine.items():
                member._values[position] = new
            member._stack_dims = None

    def _written(self, index: Any, value: Any) -> _NonTensorNode:
        self[index] = value
        return self

    def _with_written(self, index: Any, value: Any) -> _NonTensorNode:
        copied = self.clone()
        copied[index] = value
        return copied

    def _become(self, other: Any) -> None:
        """Takes the members of ``other``, a stack of members of its own (an in-place
        operation of the collection holding this stack keeps its identity, as a
        NonTensorStack's); another stack cannot be taken in place."""
        if not isinstance(other, RaggedNonTensorStack):
            msg = (
                "a NonTensorStack of kept members cannot be padded or reshaped in place; "
                "pad its members"
            )
            raise HeterogeneousEntryError(msg)
        if self._locked:
            msg = (
                "Cannot modify locked TensorDict (a NonTensorStack): "
                "cannot change its members; unlock it first"
            )
            raise LockedError(msg)
        self._members, self._shape = list(other._members), other._shape
        self._stack_dims, self._device = other._stack_dims, other._device

    def insert(self, index: int, tensordict: Any) -> None:
        """Inserts a member before position ``index`` along the stack dim: a node with as
        many batch dims as the members (any sizes), or a Python value (one element).

        Raises:
            LockedError: the stack is locked.
            StackError: a node with another number of batch dims.
        """
        if self._locked:
            raise LockedError(
                "cannot insert a member into a locked NonTensorStack; unlock it first"
            )
        ndim = len(self._shape) - 1
        node = tensordict if isinstance(tensordict, _NonTensorNode) else None
        if node is None:
            node = NonTensorData(tensordict, batch_size=[1] * ndim, device=self._device)
        if len(node.batch_size) != ndim:
            msg = (
                f"NonTensorStack.insert: the new member has batch size "
                f"{format_shape(node.batch_size)}, the stack's members have {ndim} batch dims"
            )
            raise StackError(msg)
        self._members.insert(index, node)
        self._shape = _stacked_size([m.batch_size for m in self._members], self.stack_dim)

    def append(self, tensordict: Any) -> None:
        self.insert(len(self._members), tensordict)

    def __repr__(self) -> str:
        try:
            shown = repr(self.tolist())
        except HeterogeneousEntryError:
            shown = "members " + repr([m.tolist() for m in self._members])
        return stack_repr(shown, self._shape, self._device)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_ragged, (list(self._members), self.stack_dim, self._device))


def _member_on(member: _NonTensorNode, device: torch.device | None) -> _NonTensorNode:
    """A copy of ``member`` on ``device``, nested as it is."""
    if isinstance(member, NonTensorStack):
        return member._copy_on(device)
    assert isinstance(member, NonTensorData)  # (a MetaData kept as one)
    return type(member)._make(member.data, member.batch_size, device)


def _stacked_size(sizes: list[torch.Size], dim: int) -> torch.Size:
    first = sizes[0]
    out = [size if all(s[i] == size for s in sizes) else -1 for i, size in enumerate(first)]
    out.insert(dim, len(sizes))
    return torch.Size(out)


def _ragged(
    nodes: list[_NonTensorNode], stack_dim: int, device: torch.device | None
) -> RaggedNonTensorStack:
    ndims = {len(node.batch_size) for node in nodes}
    if len(ndims) != 1:
        shown = ", ".join(format_shape(node.batch_size) for node in nodes)
        msg = (
            f"NonTensorStack: the values have different numbers of batch dims ({shown}); "
            "a stack of values of different sizes needs as many dims in each"
        )
        raise StackError(msg)
    if not 0 <= stack_dim <= ndims.pop():
        msg = f"NonTensorStack: stack_dim={stack_dim} is out of range for these values"
        raise StackError(msg)
    if device is None and all(node.device == nodes[0].device for node in nodes):
        device = nodes[0].device
    return RaggedNonTensorStack._of(list(nodes), stack_dim, device)


def join_ragged(parts: Sequence[Any], op: str, dim: int, path: tuple[str, ...]) -> NonTensorStack:
    """Python-value nodes stacked along ``dim`` when their batch sizes differ or one of
    them is ragged (a ragged stack of them, as the peer's lazy stack), or concatenated
    along ``dim`` when the ragged ones are stacks along it (a ragged stack of all their
    members).

    Raises:
        HeterogeneousEntryError: a ragged part to concatenate along another dim than its
            stack dim.
    """
    name = path[0] if len(path) == 1 else path
    for position, part in enumerate(parts):
        if not isinstance(part, _NonTensorNode):
            msg = (
                f"{op}: entry {name!r} holds a Python value in member 0 but a "
                f"{type(part).__name__} in member {position}"
            )
            raise StackError(msg)
    device = parts[0].device
    if any(part.device != device for part in parts):
        device = None
    if op == "stack":
        return _ragged(list(parts), dim, device)
    members: list[_NonTensorNode] = []
    for part in parts:
        if isinstance(part, RaggedNonTensorStack) and part.stack_dim == dim:
            members.extend(part._members)
        elif -1 in part.batch_size:
            where = f" under {name!r}" if path else ""
            msg = (
                f"cat: the Python values{where} are ragged (batch size "
                f"{format_shape(part.batch_size)}) along another dim than {dim}, which does "
                "not concatenate; concatenate along its stack dim, or its members"
            )
            raise HeterogeneousEntryError(msg)
        else:
            members.extend(part.unbind(dim))
    return _ragged(members, dim, device)


def ragged_from_lists(values: list[Any], shape: Sequence[int], device: Any) -> _NonTensorNode:
    """The stack of nested lists ``values`` shaped ``shape`` (``-1``: the lists' own
    lengths there), stacked along dim 0 at each level: what loading a saved ragged stack
    builds."""
    if not shape:
        return NonTensorData._make(values, torch.Size([]), device)
    if not isinstance(values, list) or (shape[0] != -1 and len(values) != shape[0]):
        msg = f"the saved values do not have the recorded batch size {list(shape)}"
        raise StackError(msg)
    if not values:
        return NonTensorStack._make([], torch.Size([0] * len(shape)), device)
    members = [ragged_from_lists(item, shape[1:], device) for item in values]
    return join_non_tensor(members, "stack", 0, ())


def stack_of_lists(values: Sequence[Any], device: torch.device | None = None) -> _NonTensorNode:
    """The stack of nested lists of Python values ``values`` as the peer's
    ``NonTensorStack.from_list`` (and its ``from_dict``) builds it: every list one stack
    dim, ragged (``-1``) where the lists' lengths differ, a Python-value node kept as a
    member (its batch dims follow), any other item one value.

    Raises:
        StackError: where items of one list nest to different depths (``[[1, 2], 3]``).
    """
    if not values:
        return NonTensorStack._make([], torch.Size([0]), device)
    members = [
        stack_of_lists(item, device)
        if isinstance(item, list)
        else item
        if isinstance(item, _NonTensorNode)
        else NonTensorData._make(item, torch.Size([]), device)
        for item in values
    ]
    return join_non_tensor(members, "stack", 0, ())


def _numbers_of(result: Any) -> list[int]:
    """The element numbers a result of :meth:`RaggedNonTensorStack._moved` holds, in
    member order."""
    if getattr(result, "_is_lazy", False):
        numbers: list[int] = []
        for member in result.tensordicts:
            numbers.extend(_numbers_of(member))
        return numbers
    return result.get(_KEY).reshape(-1).tolist()  # type: ignore[no-any-return]


def _kept_parts(numbers: Any, stack: RaggedNonTensorStack) -> dict[int, _NonTensorNode]:
    """``{id(numbers of a member): member}`` for every member of ``stack`` and of the
    stacks of kept members among them, at any depth (what ``_from_numbers`` gives back
    as they are)."""
    kept: dict[int, _NonTensorNode] = {}
    for part, member in zip(numbers.tensordicts, stack._members):
        kept[id(part)] = member
        if isinstance(member, RaggedNonTensorStack):
            kept.update(_kept_parts(part, member))
    return kept


def _from_numbers(
    result: Any, values: list[Any], kept: dict[int, _NonTensorNode], device: Any
) -> Any:
    """The Python-value node of ``result`` (element numbers shaped as the op left them):
    a member itself where the op gave one back, a ragged stack where ``result`` is a
    lazy stack, else a stack of the numbered values."""
    member = kept.get(id(result))
    if member is not None:
        return member
    if getattr(result, "_is_lazy", False):
        parts = [_from_numbers(part, values, kept, device) for part in result.tensordicts]
        if not parts:
            return NonTensorStack._make([], result.batch_size, device)
        return join_non_tensor(parts, "stack", result.stack_dim, ())
    numbers = result.get(_KEY)
    picked = [values[n] for n in numbers.reshape(-1).tolist()]
    if not numbers.ndim:
        return NonTensorData._make(picked[0], torch.Size([]), device)
    return NonTensorStack._make(picked, numbers.shape, device)


def _rebuild_ragged(
    members: list[Any], stack_dim: int, device: torch.device | None
) -> RaggedNonTensorStack:
    if type(members) is not list or not all(isinstance(m, _NonTensorNode) for m in members):
        raise PickleRefusedError("a pickle of a ragged NonTensorStack does not hold its members")
    if type(stack_dim) is not int or not members:
        raise PickleRefusedError("a pickle of a ragged NonTensorStack has no stack dim")
    return _ragged(members, stack_dim, device)


# A NonTensorStack to its users (its repr, the kind its parent's saved meta.json names, and
# code that reads type(value).__name__, as the peer's tests do): the peer has one class.
RaggedNonTensorStack.__name__ = "NonTensorStack"
allow_unpickling(_rebuild_ragged)
ENGINE.RaggedNonTensorStack = RaggedNonTensorStack
ENGINE.join_ragged = join_ragged
ENGINE.stack_of_lists = stack_of_lists
