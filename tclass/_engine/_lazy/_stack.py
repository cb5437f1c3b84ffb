"""``LazyStackedTensorDict``: a stack of collections kept as its members, not copied.

A lazy stack holds a list of members that have as many batch dims and may differ in
anything else: entry shapes, key sets, nested structure, sizes along batch dims. Its
batch size is the members' with the number of members inserted at ``stack_dim``, and
``-1`` along a dim where the members' sizes differ (a ragged dim, as the peer's), which
operations needing one size there refuse with a ``HeterogeneousEntryError``. Nothing is
copied when it is built, indexed along the stack dim (``lazy[i]`` *is* member ``i``) or
transformed member by member (``apply``, ``to``, ``clone``, comparisons, ``unsqueeze``, ...).

Reading an entry stacks the members' entries on demand: tensors with ``torch.stack`` when
their shapes agree (a clear error suggesting ``as_list`` / ``as_padded_tensor`` /
``as_nested_tensor`` or padding when they do not), nested collections as a lazy stack of
the members' sub-collections, Python values as ``tclass.stack`` merges them. A stacked
read is a copy: write through ``set``, ``set_`` or ``lazy[index] = value``, which reach
the members.

Operations that mix elements of different members (``reshape``, ``flatten``, reductions
over the stack dim, ...) build the dense stack first, which works when the members agree.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    Literal,
    SupportsIndex,
    TypeVar,
    cast,
    overload,
)

import torch
from typing_extensions import Self
from typing_extensions import TypeVar as DefaultTypeVar

from tclass._base._inline import inline_inherited
from tclass._base._provided import ENGINE
from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection
from tclass._core import _batch, _keys
from tclass._core._batch import BatchSizeLike, as_batch_size, format_shape
from tclass._core._device import DeviceLike, as_device
from tclass._core._keys import BatchIndex
from tclass._core._method_names import name_methods_after
from tclass._core._names import DimName
from tclass._core._records import storage_of
from tclass._core._safe_globals import allow_unpickling, checked_class
from tclass._engine._lazy._entries import (
    StackedEntries,
    lacks,
    refuse_through_tensor,
    uneven_keys_error,
    walk_path,
)
from tclass._engine._lazy._index import as_records, empty_selection, index_lazy
from tclass._engine._lazy._index_writes import member_writes, write_lazy
from tclass._engine._lazy._locking import LazyLocking
from tclass._engine._lazy._parts import (
    check_declared,
    check_members,
    check_regular,
    common_device,
    common_keys,
    dense_members,
    empty_layout,
    padded_stack,
    remove_dim,
    stack_entries,
    stacked_size,
    summary_of,
)
from tclass._engine._lazy._value_nesting import nesting_after_index
from tclass._engine._lazy._writes import _LOCKED_MSG, _MISSING, LazyWrites
from tclass._engine._nontensor import _NonTensorNode
from tclass._engine._ops import stack
from tclass._engine._repr import compact_repr, shows_compact_repr
from tclass._engine._td import TensorDict
from tclass.errors import (
    ArgumentValueError,
    BatchSizeError,
    DimError,
    HeterogeneousEntryError,
    InvalidKeyError,
    KeyNotFoundError,
    LockedError,
    MemberKeyError,
    PickleRefusedError,
    ShapeError,
    StackError,
    UnsupportedError,
)

if TYPE_CHECKING:
    from tclass._engine._consolidate import Consolidated

__all__ = ["LazyStackedTensorDict"]

C = TypeVar("C", bound=TensorDictBase)
# The members' type, for checkers: ``lazy_stack([td, td])`` is a
# ``LazyStackedTensorDict[TensorDict]``; a stack of unknown members (one built by
# operations, or through the constructor) holds ``TensorDictBase``s.
M = DefaultTypeVar("M", bound=TensorDictBase, covariant=True, default=TensorDictBase)

_NO_DEFAULT: Any = object()
_new_instance = object.__new__


@name_methods_after
class LazyStackedTensorDict(LazyLocking, LazyWrites, Generic[M]):
    """A stack of collections that may differ in entry shapes and keys, kept lazily.

    Generic in its members' type for checkers (``LazyStackedTensorDict[TensorDict]``,
    what ``lazy_stack`` of TensorDicts along dim 0 gives): ``tensordicts`` is a list of
    them and ``lazy[i]`` one of them. Along another stack dim, ``lazy[i]`` indexes each
    member (a lazy stack): ``lazy_stack`` types such a stack's members
    ``TensorDictBase``.

    Args:
        *tensordicts: the members: collections (TensorDicts, records, lazy stacks) with
            as many batch dims (sizes that differ give ``-1`` in the batch size).
        stack_dim: where the member dim goes among the batch dims (``-1``: last).
        strict_shape: refuse members whose batch sizes differ.
        batch_size, device: of an empty stack, the members' batch size and the device
            (given with members, they must be the stack's).

    Raises:
        StackError: if there are no members, their numbers of batch dims differ, or
            (with ``strict_shape``) their batch sizes do.

    Example:
        >>> agents = LazyStackedTensorDict(
        ...     TensorDict(obs=torch.zeros(4, 3), batch_size=[4]),
        ...     TensorDict(obs=torch.zeros(4, 5), batch_size=[4]),
        ... )
        >>> agents.batch_size, agents[1]["obs"].shape
        (torch.Size([2, 4]), torch.Size([4, 5]))
    """

    __slots__ = (
        "_members",
        "_stack_dim",
        "_batch_size",
        "_own_device",
        "_locked",
        "_lock_context",
        "_lock_stack",
        "_on_exit",
        "_consolidated",
        "_stack_dim_name",
        "__weakref__",
    )

    _is_lazy: ClassVar[bool] = True

    _members: list[Any]
    _batch_size: torch.Size
    _own_device: torch.device | None  # an empty stack's (members: theirs, read live)
    # For checkers only: typing.get_type_hints, which must run, would read `int` and `bool`
    # as the methods of those names, and Consolidated is imported for checkers only.
    if TYPE_CHECKING:
        _stack_dim: int
        _locked: bool | None  # None: unlocked, or locked only through every member
        _lock_context: bool | None  # the state before the last lock_/unlock_, for `with`
        _consolidated: Consolidated | None  # set by consolidate(): the one buffer
    _lock_stack: list[bool]
    _stack_dim_name: DimName  # the name of the stack dim (the members name the others)
    # Members hold their own folders; entries stored here reach them through the members.
    _saved_at: ClassVar[None] = None

    def __init__(
        self,
        *tensordicts: TensorCollection,
        stack_dim: int = 0,
        stack_dim_name: DimName = None,
        names: Sequence[DimName] | None = None,
        strict_shape: bool = False,
        batch_size: BatchSizeLike = None,
        device: DeviceLike = None,
    ) -> None:
        if not tensordicts:  # an empty stack, which grows with append / insert
            self._init([], *empty_layout(stack_dim, batch_size))
            self._device = as_device(device)
        else:
            members = check_members(list(tensordicts), "LazyStackedTensorDict", strict_shape)
            member_batch = members[0].batch_size
            dim = _batch.normalize_dim(
                stack_dim, len(member_batch), op="lazy_stack", inclusive=True
            )
            self._init(members, dim, stacked_size(members, dim))
            check_declared(self, batch_size, device)
        self._stack_dim_name = stack_dim_name
        if names is not None:
            self.names = names

    def _init(self, members: list[Any], stack_dim: int, batch_size: torch.Size) -> None:
        self._members = members
        self._stack_dim = stack_dim
        self._batch_size = batch_size
        self._device = common_device(members)
        self._locked = None  # locked when every member is, until locked through the stack
        self._lock_context = None
        self._lock_stack = []
        self._on_exit: Callable[[], object] | None = None
        self._consolidated = None
        self._stack_dim_name = None

    @classmethod
    def _from_members(cls, members: list[Any], stack_dim: int, batch_size: torch.Size) -> Self:
        """A lazy stack over ``members``, unchecked (the caller knows the batch sizes)."""
        out = _new_instance(cls)
        out._init(members, stack_dim, batch_size)
        return out

    @classmethod
    def _value_nesting(
        cls, index: Any, dims: tuple[int, ...], shape: torch.Size
    ) -> tuple[int, ...] | None:
        """Where a stack of values nested along ``dims`` keeps its stack dims after
        ``index`` (:func:`nesting_after_index`)."""
        return nesting_after_index(cls, index, dims, shape)

    def _restacked(
        self,
        members: list[Any],
        stack_dim: int | None = None,
        batch_size: torch.Size | None = None,
    ) -> Self:
        """A lazy stack of new members with this stack's layout (``stack_dim`` and
        ``batch_size`` if given) and the name of its stack dim."""
        dim = self._stack_dim if stack_dim is None else stack_dim
        if batch_size is not None:
            size = batch_size
        elif members:
            size = stacked_size(members, dim)
        else:
            size = self._batch_size
        out = self._from_members(members, dim, size)
        out._stack_dim_name = self._stack_dim_name
        return out

    # --- what it is made of --------------------------------------------------------------

    @property
    def tensordicts(self) -> list[M]:
        """The members, in stack order (a new list; the members themselves are shared)."""
        return list(self._members)

    @property
    def stack_dim(self) -> int:
        """The batch dim along which the members are stacked."""
        return self._stack_dim

    @property
    def batch_size(self) -> torch.Size:
        """The members' batch size with the number of members inserted at ``stack_dim``."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: BatchSizeLike) -> None:
        new = as_batch_size(value)
        if new == self._batch_size:
            return  # nothing changes (a locked stack takes it too), as the peer
        if self._lock_state():
            raise LockedError(_LOCKED_MSG.format(action="change the batch size of"))
        check_regular(self, range(len(self._batch_size)), "setting batch_size")  # no -1 size
        self._check_new_batch_size(new, ())
        self._assign_batch_size(new)

    @property
    def device(self) -> torch.device | None:
        """The members' common device, or ``None`` if they differ or have none; read
        from the members each time, as the peer's, so that a member whose device is set
        through another stack or a view that holds it (``auto_device_``) shows here."""
        return self._device

    @property
    def _device(self) -> torch.device | None:
        members = self._members
        return common_device(members) if members else self._own_device

    @_device.setter
    def _device(self, device: torch.device | None) -> None:
        self._own_device = device  # (members: their own devices are read)

    @property
    def _tensors(self) -> StackedEntries:
        """The entries as a live mapping that stacks on read and splits on write: what a
        tensorclass record reads its fields through when it wraps a lazy stack."""
        return StackedEntries(self)

    # --- collection primitives -----------------------------------------------------------

    def _key_names(self) -> list[str]:
        return common_keys(self._members)

    def _has_entry(self, key: str) -> bool:
        members = self._members
        return bool(members) and all(member._has_entry(key) for member in members)

    def _items(self) -> Iterator[tuple[str, Value]]:
        for key in common_keys(self._members):
            yield key, self._entry(key)

    def _repr_items(self) -> Iterator[tuple[str, Any]]:
        for key in common_keys(self._members):
            yield key, summary_of(self._members, key, self._stack_dim)

    def _entry(self, key: str) -> Value:
        return self._stacked(self._parts(key), (key,))

    def _stacked(self, parts: list[Any], path: tuple[str, ...]) -> Value:
        """The members' entries at ``path`` stacked; a nested lazy stack has the name of
        this stack's dim, as the peer's."""
        value: Value = stack_entries(parts, self._stack_dim, path)
        lazy = storage_of(value)  # a record's lazy stack of records too
        if self._stack_dim_name is not None and isinstance(lazy, LazyStackedTensorDict):
            lazy._stack_dim_name = self._stack_dim_name
        elif isinstance(value, _NonTensorNode) and all(part.is_locked for part in parts):
            value.lock_()  # the values of locked members: locked, as a nested lazy stack
        return value

    def _parts(self, key: str) -> list[Any]:
        """Every member's entry ``key``; raises if some members lack it."""
        parts = []
        lacking = []
        for position, member in enumerate(self._members):
            try:
                parts.append(member._entry(key))
            except KeyNotFoundError:
                lacking.append(position)
        if lacking:
            if len(lacking) == len(self._members):
                raise self._missing_key(key)
            msg = (
                f"key {key!r} is in some members of this lazy stack but not in members "
                f"{lacking}; read it member by member (lazy.tensordicts) or set it in all "
                "of them first"
            )
            raise MemberKeyError(msg)
        return parts

    def _new_like(
        self, values: dict[str, Value], batch_size: torch.Size, device: torch.device | None
    ) -> Self:
        # Results built from stacked entries are dense: a TensorDict.
        out = TensorDict._new_unchecked(values, batch_size, device)
        out._mark_unbatched_if_any()
        return cast(Self, out)

    def _map_values(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        if batch_size != self._batch_size:
            dense = self._dense("this operation")
            if device is ...:
                return cast(Self, dense._map_values(fn, batch_size))
            return cast(Self, dense._map_values(fn, batch_size, device))
        # The batch size is kept: each member keeps its own (a ragged stack's differ).
        if device is ...:
            members = [m._map_values(fn, m.batch_size) for m in self._members]
        else:
            members = [m._map_values(fn, m.batch_size, device) for m in self._members]
        return self._restacked(members, self._stack_dim, batch_size)

    def _map_batch(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        no_entries = not any(m._key_names() for m in self._members)
        if no_entries and -1 in self._batch_size and -1 not in batch_size:  # as the peer
            return cast(Self, TensorDict({}, batch_size=batch_size, device=self.device))
        # elements move across members; a TensorDict, also over records (as the peer's)
        dense = storage_of(self._dense("this shape operation"))
        args = () if device is ... else (device,)
        return cast(Self, dense._map_batch(fn, batch_size, *args))

    def _map_values_split(
        self, fn: Callable[[Value], Sequence[Value]], batch_sizes: Sequence[torch.Size]
    ) -> tuple[Self, ...]:
        return cast(
            "tuple[Self, ...]", self._dense("this split")._map_values_split(fn, batch_sizes)
        )

    def _check_new_batch_size(self, new: torch.Size, prefix: tuple[str, ...]) -> None:
        d = self._stack_dim
        if len(new) <= d or new[d] != len(self._members):
            where = f" at {prefix!r}" if prefix else ""
            msg = (
                f"lazy stack{where}: batch size {format_shape(new)} does not keep the "
                f"stack dim {d} of size {len(self._members)}; only the members' own dims "
                "can change"
            )
            raise BatchSizeError(msg)
        member_batch = remove_dim(new, d)
        for member in self._members:
            if member.batch_size != member_batch:
                member._check_new_batch_size(member_batch, prefix)

    def _assign_batch_size(self, new: torch.Size) -> None:
        member_batch = remove_dim(new, self._stack_dim)
        for member in self._members:
            if member.batch_size != member_batch:
                member._assign_batch_size(member_batch)
        self._batch_size = new

    def _dense(self, action: str) -> Any:
        """The dense stack of the members, or an error saying why ``action`` needs it."""
        try:
            dense = stack(dense_members(self._members), self._stack_dim, contiguous=True)
        except HeterogeneousEntryError:
            raise  # a nested lazy stack's: it already says what differs
        except StackError as error:
            uneven = uneven_keys_error(action, self._members, error)
            if uneven is not None:
                raise uneven from None
            msg = (
                f"Failed to stack tensors within a tensordict: {action} needs the dense "
                f"stack of this lazy stack, but its members differ: {error}. Pad them first "
                "(tclass.pad_sequence), or work on the members (lazy.tensordicts)"
            )
            raise HeterogeneousEntryError(msg) from None
        if self._stack_dim_name is not None:  # the members name the other dims
            dense.names = self.names
        return dense

    @classmethod
    def from_dict(
        cls,
        input_dict: Mapping[Any, Any] | Sequence[Mapping[Any, Any]],
        *other: Mapping[Any, Any],
        auto_batch_size: bool | None = False,
        batch_size: BatchSizeLike = None,
        device: DeviceLike = None,
        batch_dims: int | None = None,
        names: Sequence[DimName] | None = None,
        stack_dim_name: DimName = None,
        stack_dim: int = 0,
    ) -> Self:
        """A lazy stack with one member per dict (``from_dict([d0, d1])``,
        ``from_dict(d0, d1)``, or, as the peer reads a dict, ``{"0": d0, "1": d1}``),
        each built by ``TensorDict.from_dict`` with ``auto_batch_size``, ``batch_size``
        (the members', as in the peer), ``device`` and ``batch_dims``; members may hold
        different keys and entry shapes. ``names`` names the result's dims (the stack dim
        included), ``stack_dim_name`` only the stack dim.

        Raises:
            InvalidKeyError: (a ``KeyError``, as the peer, and a ``TypeError``) a single
                dict that is not keyed ``"0"``, ``"1"``...: a lazy stack needs one dict
                per member.
        """
        sources: Sequence[Mapping[Any, Any]]
        if other:
            sources = [cast("Mapping[Any, Any]", input_dict), *other]
        elif isinstance(input_dict, Mapping):
            count = len(input_dict)
            if not count or any(str(i) not in input_dict for i in range(count)):
                msg = (
                    "LazyStackedTensorDict.from_dict takes one dict per member (a list of "
                    "dicts, several dicts, or a dict keyed '0', '1', ...); for one dict use "
                    "TensorDict.from_dict"
                )
                raise InvalidKeyError(msg)
            sources = [input_dict[str(i)] for i in range(count)]
        else:
            sources = input_dict
        members = [
            TensorDict.from_dict(
                source,
                auto_batch_size=auto_batch_size,
                batch_size=batch_size,
                device=device,
                batch_dims=batch_dims,
            )
            for source in sources
        ]
        return cls(*members, stack_dim=stack_dim, stack_dim_name=stack_dim_name, names=names)

    @classmethod
    def _stack_lazily(cls, members: list[Any], dim: int, batch_size: torch.Size) -> Any:
        return cls._from_members(members, dim, batch_size)

    @classmethod
    def _lazy_by_default(cls) -> bool:
        return True

    # --- reading -------------------------------------------------------------------------

    def get(
        self,
        key: Any,
        default: Any = _NO_DEFAULT,
        *,
        as_list: bool = False,
        as_padded_tensor: bool = False,
        as_nested_tensor: bool = False,
        padding_value: float = 0.0,
        padding_side: Literal["left", "right"] = "right",
        layout: torch.layout | None = None,
    ) -> Any:
        """The entry at ``key`` stacked across members, or ``default`` if no member has it.

        When the members' tensors have different shapes there is no dense value; ask for
        ``as_list=True`` (the members' tensors), ``as_padded_tensor=True`` (padded to the
        largest shape with ``padding_value``, on ``padding_side``) or
        ``as_nested_tensor=True`` (a ``torch.nested`` tensor, needs ``stack_dim == 0``;
        by default ``torch.jagged`` when the members differ in their first dim only,
        else ``torch.strided``, or the ``layout`` given).

        Raises:
            HeterogeneousEntryError: if the shapes differ and no alternative was asked
                for, or if only some members hold ``key``.
        """
        path = _keys.key_path(key)
        read = None
        if as_list or as_padded_tensor:  # nested lazy stacks give theirs, member by member

            def read(stack: Any, rest: tuple[str, ...]) -> Any:
                return stack.get(
                    rest,
                    as_list=as_list,
                    as_padded_tensor=as_padded_tensor,
                    padding_value=padding_value,
                    padding_side=padding_side,
                )

        try:
            parts = [walk_path(member, path, read) for member in self._members]
        except KeyNotFoundError:
            if all(lacks(member, path) for member in self._members):
                if default is _NO_DEFAULT and self._members:
                    refuse_through_tensor(self._members[0], path)
                return None if default is _NO_DEFAULT else default
            self._parts_along(path)  # raises, naming the members that lack it
            raise
        options = as_list or as_padded_tensor or as_nested_tensor
        if options and any(isinstance(part, TensorCollection) for part in parts):
            return self._stacked(parts, path)  # Python values, collections: stacked, as the peer
        if as_list:
            return parts
        if as_padded_tensor:
            return padded_stack(parts, self._stack_dim, padding_value, padding_side, path)
        if as_nested_tensor:
            return self._nested_tensor(parts, layout, path)
        return self._stacked(parts, path)

    def _parts_along(self, path: tuple[str, ...]) -> None:
        lacking = [i for i, member in enumerate(self._members) if lacks(member, path)]
        key = path[0] if len(path) == 1 else path
        msg = (
            f"key {key!r} is in some members of this lazy stack but not in members "
            f"{lacking}; read it member by member (lazy.tensordicts) or set it in all of "
            "them first"
        )
        raise MemberKeyError(msg)

    def _nested_tensor(
        self, parts: list[Any], layout: torch.layout | None, path: tuple[str, ...]
    ) -> torch.Tensor:
        key = path[0] if len(path) == 1 else path
        self._check_nested_dim(f"get({key!r}, as_nested_tensor=True)")
        if not all(isinstance(part, torch.Tensor) for part in parts):
            msg = f"get({key!r}, as_nested_tensor=True): the entry is not a tensor in every member"
            raise HeterogeneousEntryError(msg)
        if layout is not None:
            return torch.nested.nested_tensor(parts, layout=layout)
        try:  # jagged (torch's recommended layout) holds one ragged dim, the first
            return torch.nested.nested_tensor(parts, layout=torch.jagged)
        except (RuntimeError, ValueError):
            return torch.nested.nested_tensor(parts, layout=torch.strided)

    def _check_nested_dim(self, call: str) -> None:
        """A nested tensor nests along its first dim: the stack dim must be 0 (checked
        before the key is looked up, as the peer does)."""
        if self._stack_dim != 0:
            msg = (
                f"{call} needs stack_dim 0 (the nested dim comes first), this stack has "
                f"{self._stack_dim}; transpose it first or use as_padded_tensor=True"
            )
            raise ShapeError(msg)

    # A member (along stack dim 0; an int is also a BatchIndex, which gives Self).
    @overload
    def __getitem__(self, index: int) -> M: ...  # type: ignore[overload-overlap]
    @overload
    def __getitem__(self, index: str | tuple[str, ...]) -> Any: ...  # an entry
    @overload
    def __getitem__(self, index: BatchIndex) -> Self: ...

    def __getitem__(self, index: Any) -> Any:
        """``lazy["key"]`` reads a stacked entry; an int, slice, tensor, mask, ``...``,
        ``None`` or tuple of them indexes the batch dims: along the stack dim it selects
        members (``lazy[i]`` is member ``i``), along other dims it indexes each member."""
        if type(index) is not str and isinstance(index, str):  # numpy.str_, a str enum
            index = _keys.plain_key(index)  # the key, as the peer (a str: no call)
        kind = index.__class__
        if kind is str:
            value = self._entry(index)
            return value._read() if isinstance(value, _NonTensorNode) else value
        if kind is tuple and _keys.is_key_tuple(index):
            value = self.get(index, _MISSING)
            if value is _MISSING:
                for member in self._members:  # a key through a tensor: the peer's ValueError
                    refuse_through_tensor(member, _keys.key_path(index))
                raise self._missing_key(index)
            return value._read() if isinstance(value, _NonTensorNode) else value
        out = self._batch_item(index)
        return as_records(out) if isinstance(out, LazyStackedTensorDict) else out

    def _batch_item(self, index: Any) -> Any:
        """``self[index]`` for a batch index, a lazy stack kept as one (``__getitem__``
        makes a stack of records a record; ``split`` / ``chunk`` keep it, as the peer's)."""
        kind = index.__class__
        if kind is int:
            out = self._index_int(index)
        elif kind is slice:
            out = self._index_slice(index)
        else:
            out = self._index(index)
        if (  # a record's lazy stack too (a stack of records: fuzz program 13,110,472)
            isinstance(storage_of(out), LazyStackedTensorDict)
            and self._lock_state()
            and not out.is_locked
        ):
            out.lock_()  # as the peer: a lazy stack indexed from a locked one is locked
        return out

    def _index_int(self, index: int) -> Any:
        if self._stack_dim == 0:
            n = len(self._members)
            if not -n <= index < n:
                msg = f"index {index} is out of range for a lazy stack of {n} members"
                raise DimError(msg)
            return self._members[index]
        return self._restacked([member[index] for member in self._members], self._stack_dim - 1)

    def _index_slice(self, index: slice) -> Self:
        step = index.step
        backwards = step is not None and step < 0 and self._stack_dim != 0
        if backwards and all(isinstance(m, LazyStackedTensorDict) for m in self._members):
            backwards = False  # each member's own check: a nested stack along its stack dim
        if step is not None and (step == 0 or backwards):
            msg = (
                "slice step cannot be zero"
                if step == 0
                else f"slice step must be positive, got {step} (a negative step only picks "
                "the members of the stack dim backwards)"
            ) + "; reverse a dim with .flip(dim) instead"
            raise ArgumentValueError(msg)
        if self._stack_dim == 0:  # the members, as a list slice picks them
            members = self._members[index]
            if not members:
                return cast(Self, empty_selection(self, (index,)))
            return self._restacked(members, 0)
        if index.start is None and index.stop is None and step is None:
            # as the peer: a full slice keeps each member itself, not a view of it
            return self._restacked(list(self._members))
        return self._restacked([member[index] for member in self._members])

    def _index(self, index: Any) -> Any:
        return index_lazy(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        """``lazy["key"] = v`` sets ``key`` in every member; ``lazy[idx] = v`` writes ``v``
        into the indexed elements of the members, in place."""
        if type(index) is not str and isinstance(index, str):  # numpy.str_, a str enum
            index = _keys.plain_key(index)  # the key, as the peer (a str: no call)
        if type(index) is str or (type(index) is tuple and _keys.is_key_tuple(index)):
            self.set(index, value)
            return
        write_lazy(self, index, value)

    def _check_row_write(self, index: Any, value: Any) -> None:
        """Checks ``self[index] = value`` for the collection holding this stack, writing
        nothing: each member its part, as the write splits it (the records among the
        members, and those they hold, check their rows)."""
        if all(_flat_td(member) for member in self._members):
            return  # (the usual: no record below, no split to work out)
        for _, member, where, part in member_writes(self, index, value):
            member._check_row_write(where, part)

    def _can_fill(self, key: object) -> bool:
        """Whether a locked stack may still take ``key``: every member is a TensorDict
        (or stack of them) saved in a folder that lacks it (see ``TensorDict._can_fill``)."""
        members = self._members
        return (
            type(key) is str
            and bool(members)
            and all(
                isinstance(m, (TensorDict, LazyStackedTensorDict)) and m._can_fill(key)
                for m in members
            )
        )

    # --- saving ---------------------------------------------------------------------------

    @property
    def _saved(self) -> None:
        """The folder this node is saved in: none, the members hold their own."""
        return None

    valid_keys = TensorCollection.keys  # the peer's older name

    def get_nestedtensor(
        self, key: Any, default: Any = _NO_DEFAULT, *, layout: torch.layout | None = None
    ) -> Any:
        """The members' tensors at ``key`` as one nested tensor (``torch.strided`` unless
        ``layout`` says otherwise); the stack dim must be 0. A tensor ``default`` stands
        in for the members that lack ``key``; any other ``default`` is returned when one
        does (without a default, a missing key is a KeyNotFoundError). The peer's older
        spelling of ``get(key, as_nested_tensor=True)``."""
        path = _keys.key_path(key)
        self._check_nested_dim(f"get_nestedtensor({key!r})")
        parts = [member.get(path, _MISSING) for member in self._members]
        if any(part is _MISSING for part in parts):
            if default is _NO_DEFAULT:
                raise self._missing_key(key)
            if not isinstance(default, torch.Tensor):
                return default
            parts = [default if part is _MISSING else part for part in parts]
        return self._nested_tensor(parts, layout or torch.strided, path)

    # --- conversions ---------------------------------------------------------------------

    def contiguous(  # type: ignore[override]  # dense: a TensorDict, as the peer's
        self, *, canonical: bool = False, inplace: bool = False
    ) -> TensorDict:
        """The dense stack of the members: a TensorDict, as the peer's, also where the
        members are records (their nested records keep their classes).

        Raises:
            HeterogeneousEntryError: if the members differ in keys or shapes.
            UnsupportedError: for ``inplace=True``: a lazy stack cannot become dense in
                place.
        """
        if inplace:
            msg = "a lazy stack cannot become dense in place; use lazy.contiguous()"
            raise UnsupportedError(msg)
        return cast(TensorDict, storage_of(self._dense("contiguous()")))

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """A dense TensorDict copy of the stack (see :meth:`contiguous`)."""
        dense = self._dense("to_tensordict()")
        to_td = getattr(dense, "to_tensordict", None)
        return cast(TensorDict, dense if to_td is None else to_td())

    def numel(self) -> int:
        """The number of elements: the members' together (a ragged stack's batch size
        has a ``-1`` where their sizes differ); at least 1, as ``TensorDict.numel``."""
        return max(1, self._elements())

    def _elements(self) -> int:
        """The number of elements, 0 for an empty batch."""
        batch = self._batch_size
        if -1 not in batch:
            return math.prod(batch)
        return sum(
            member._elements()
            if isinstance(member, LazyStackedTensorDict)
            else math.prod(member.batch_size)
            for member in self._members
        )

    def unbind(self, dim: int = 0) -> tuple[Self, ...]:
        """Along the stack dim: the members themselves; along another dim: lazy stacks of
        the members' pieces."""
        dim = _batch.normalize_dim(dim, len(self._batch_size), op="unbind")
        d = self._stack_dim
        if dim == d:
            return tuple(self._members)
        check_regular(self, [dim], "unbind")
        pieces = [member.unbind(dim if dim < d else dim - 1) for member in self._members]
        new_d = d - 1 if dim < d else d
        return tuple(as_records(self._restacked(list(group), new_d)) for group in zip(*pieces))

    # --- python protocols ----------------------------------------------------------------

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        # Protocol 5: one out-of-band buffer of every tensor (``_pickle5.py``).
        if type(self).__reduce__ is LazyStackedTensorDict.__reduce__:
            reduced = ENGINE.reduce_out_of_band(self, operator.index(protocol))
            if reduced is not None:
                return reduced
        return self.__reduce__()

    def __reduce__(self) -> tuple[Any, ...]:
        if self._consolidated is not None:  # one buffer instead of leaves (or a copy)
            return self._consolidated.reduce(self)
        return (
            _rebuild,
            (type(self), self._members, self._stack_dim, self._batch_size, self._stack_dim_name),
        )

    @shows_compact_repr
    def __repr__(self) -> str:
        return compact_repr(self)

    def _repr_extra(self) -> str:
        return f", stack_dim={self._stack_dim}"

    def _repr_exclusive(self) -> list[list[tuple[str, Any]]]:
        common = set(common_keys(self._members))  # (only the others read: a ragged
        return [  # member has no dense value for its entries)
            [(key, member._entry(key)) for key in member._key_names() if key not in common]
            for member in self._members
        ]


def _rebuild(
    cls: type[LazyStackedTensorDict],
    members: list[Any],
    stack_dim: int,
    batch_size: torch.Size,
    stack_dim_name: DimName = None,
) -> LazyStackedTensorDict:
    checked_class(cls, LazyStackedTensorDict, "a lazy stack")
    if type(members) is not list or not all(isinstance(m, TensorCollection) for m in members):
        raise PickleRefusedError("a pickle of a lazy stack holds members that are not collections")
    out = cls._from_members(members, stack_dim, batch_size)
    out._stack_dim_name = stack_dim_name
    return out


allow_unpickling(LazyStackedTensorDict, _rebuild)  # torch.load(f, weights_only=True)


# A LazyStackedTensorDict is a mutable mapping to code that asks (``isinstance(td, Mapping)``:
# torch's ``Module.load_state_dict(td)``, ``dict(td)``), as the peer's; records are not.
MutableMapping.register(LazyStackedTensorDict)

# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

ENGINE.LazyStackedTensorDict = LazyStackedTensorDict

inline_inherited(LazyStackedTensorDict)  # for torch.compile's guards: see _base/_inline.py


def _flat_td(member: Any) -> bool:
    """Whether ``member`` is a TensorDict without nested collections (no record below)."""
    if type(member) is not TensorDict:
        return False
    for entry in member._entries().values():
        if isinstance(entry, TensorCollection) and not isinstance(entry, _NonTensorNode):
            return False
    return True
