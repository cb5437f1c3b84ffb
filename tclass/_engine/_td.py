"""``TensorDict``: a dictionary of tensors that share leading (batch) dims.

Entries live in one plain dict; the batch size is a ``torch.Size``; ``device`` is either
``None`` (entries may be anywhere) or the device every entry is on. Every public entry
point validates what it stores; internal constructors (``_new_like``) trust their caller,
which is how indexing, shape ops and stacking stay close to the cost of the tensor work.
"""

from __future__ import annotations

import difflib
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar, SupportsIndex, cast

import numpy as np
import torch
from typing_extensions import Self, Unpack

from tclass._base._inline import inline_inherited
from tclass._base._provided import ENGINE
from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.declared._stack_ops import LazyStackOptions
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._grad_writes import writes_as_set_
from tclass._core import _batch, _keys, _names
from tclass._core._batch import BatchSizeLike, as_batch_size
from tclass._core._device import (
    DeviceLike,
    as_device,
    move_error,
    moved,
    refuse_device_assignment,
)
from tclass._core._jagged import leaf_shape
from tclass._core._method_names import name_methods_after
from tclass._core._names import DimName, Names
from tclass._core._registry import collection_class_defined
from tclass._core._safe_globals import allow_unpickling, checked_class
from tclass._core._spec import viewable
from tclass._core._tracing import tracing
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._entry_values import (
    check_dict_fits,
    copy_error,
    entries_of,
    fit_to_batch,
    same_memory,
)
from tclass._engine._nontensor import NonTensorData, _NonTensorNode
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._nontensor_writes import keep_kind, write_one_value
from tclass._engine._part_checks import check_entries, grouped_parts
from tclass._engine._pyvalues import stored_value
from tclass._engine._repr import compact_repr, shows_compact_repr
from tclass._engine._saved import SavedAt, blank_like
from tclass._engine._scope import Scope, ScopedOps, named_to_fit
from tclass._engine._td_device import DeviceOps
from tclass._engine._td_index import IndexingOps
from tclass._engine._td_remove import LOCKED_MSG, RemovalOps
from tclass._engine._td_setitem import SetItemOps, check_records_at
from tclass._engine._td_walk import TreeWalkOps
from tclass._engine._update_plan import perform, plan_rows, plan_update, update_entries
from tclass.errors import (
    BatchMismatchError,
    EntriesTwiceError,
    InPlaceWriteError,
    KeyThroughTensorError,
    LockedError,
    PickleRefusedError,
    UnsupportedError,
)

if TYPE_CHECKING:
    from tclass._engine._consolidate import Consolidated
    from tclass._engine._lazy._stack import LazyStackedTensorDict

__all__ = ["TensorDict"]

_Tensor = torch.Tensor
_Unbatched = UnbatchedTensor
_MISSING: Any = object()
_PLAIN = frozenset({torch.Tensor})  # entries of exactly this type: the fast paths
_only_tensors = _PLAIN.issuperset  # of map(type, values): stops at the first other type
_new_instance = object.__new__
# One-dim batch sizes by their size, filled only after as_batch_size validated them.
_ONE_DIM: dict[int, torch.Size] = {}


@name_methods_after
class TensorDict(ScopedOps, IndexingOps, SetItemOps, RemovalOps, TreeWalkOps, DeviceOps):
    """A dictionary of tensors (and nested TensorDicts) sharing a batch size.

    Args:
        source: a mapping from keys to values. Keys are strings or tuples of strings
            (nested). Values are tensors, array-likes (through ``torch.as_tensor``),
            tensor collections, or dicts (which become nested TensorDicts).
        batch_size: the leading dims every value shares; ``None`` means none.
        device: if given, every value is moved there now and whenever it is set later;
            ``None`` allows values on different devices.
        names: names of the batch dims (a ``str`` or ``None`` each); shape operations
            carry them as the peer does (see :attr:`names`).
        non_blocking: move values to ``device`` with non-blocking copies.
        lock: lock the result (see :meth:`lock_`).
        **kwargs: entries given as keyword arguments, when ``source`` is not given.

    Raises:
        BatchSizeError: if a value's leading dims differ from ``batch_size``.
        EntryTypeError: if a value is not a tensor, collection, dict or array-like.

    Example:
        >>> td = TensorDict({"obs": torch.zeros(4, 3), "next": {"r": torch.ones(4)}}, [4])
        >>> td[:2]["next", "r"]
        tensor([1., 1.])
    """

    __slots__ = (
        "_tensors",
        "_batch_size",
        "_device",
        "_locked",
        "_consolidated",
        "_saved_at",
        "_scope",
        "__weakref__",
    )

    _get_entries: ClassVar[Callable[[Any], Mapping[str, Value]]] = attrgetter("_tensors")
    _get_batch_size: ClassVar[Callable[[Any], torch.Size]] = attrgetter("_batch_size")

    _tensors: dict[str, Value]
    _batch_size: torch.Size
    _device: torch.device | None
    # For checkers only: typing.get_type_hints would read `bool` as the method of that
    # name, and Consolidated is imported for checkers only.
    if TYPE_CHECKING:
        _locked: bool
        _consolidated: Consolidated | None  # set by consolidate(): the one buffer of the leaves
    _saved_at: SavedAt | None  # the folder this node is saved in (see _saved.py)
    # What a TensorDict rarely needs, created on first use: what `with td:` blocks
    # restore, the names of the batch dims, whether it holds unbatched tensors.
    _scope: Scope | None

    def __init__(
        self,
        source: Mapping[Any, Any] | TensorCollection | None = None,
        batch_size: BatchSizeLike = None,
        device: DeviceLike = None,
        names: Sequence[DimName] | None = None,
        non_blocking: bool = False,
        lock: bool = False,
        **kwargs: Any,
    ) -> None:
        if type(batch_size) is list and len(batch_size) == 1:
            # `batch_size=[n]`, the most common spelling, without a call.
            size = batch_size[0]
            # (not while torch.compile traces: a lookup by a symbolic size pins the size)
            batch = _ONE_DIM.get(size) if type(size) is int and not tracing() else None
            if batch is None:
                batch = as_batch_size(batch_size)
                if type(size) is int and not tracing():
                    if len(_ONE_DIM) >= 4096:
                        _ONE_DIM.clear()
                    _ONE_DIM[size] = batch
        else:
            batch = as_batch_size(batch_size, ragged=True)
        dev = None if device is None else as_device(device)
        self._batch_size = batch
        self._device = dev
        self._locked = False
        self._consolidated = None
        self._saved_at = None
        self._scope = None
        if names is not None:
            self._assign_names(_names.as_names(names, len(batch)))
        tensors: dict[str, Value] = {}
        self._tensors = tensors
        if source is None:
            entries: Any = kwargs.items()
        elif kwargs:
            msg = "TensorDict() takes entries either as `source` or as keyword arguments, not both"
            raise EntriesTwiceError(msg + _misspelled_option(kwargs))
        elif type(source) is dict:
            # A plain dict's entries as they come, but for its tuple (nested) keys, which
            # wait in `later` for the plain ones (as `entries_of` orders them, without
            # its scan of the keys: a tenth of the time of a small build).
            entries = source.items()
        else:
            entries = entries_of(source)
        later: list[tuple[Any, Any]] | None = None
        n = len(batch)
        if n == 1 and dev is None:
            # The most common build, one batch dim and no device, with its checks alone.
            first = batch[0]
            for key, value in entries:
                if type(key) is str and value.__class__ is _Tensor:
                    try:
                        shape = value.shape
                    except RuntimeError:  # a strided nested tensor: no shape, ragged dims
                        shape = leaf_shape(value)
                    if not shape or shape[0] != first:
                        raise BatchMismatchError(key, shape, batch)
                    tensors[key] = value
                elif type(key) is tuple and type(source) is dict:
                    later = [] if later is None else later
                    later.append((key, value))
                else:
                    self.set(key, value)
        else:
            for key, value in entries:
                # The common case, a string key and a plain tensor, is checked inline:
                # this loop is most of the cost of building a TensorDict.
                if type(key) is str and value.__class__ is _Tensor:
                    if dev is not None and value.device != dev:
                        try:
                            value = value.to(dev, non_blocking=non_blocking)
                        except (AssertionError, RuntimeError) as error:
                            raise move_error(error, dev, value, key) from error
                    if n:
                        try:
                            shape = value.shape
                        except RuntimeError:  # a strided nested tensor: ragged dims
                            shape = leaf_shape(value)
                        if shape[:n] != batch:
                            raise BatchMismatchError(key, shape, batch)
                    tensors[key] = value
                elif type(key) is tuple and type(source) is dict:
                    later = [] if later is None else later
                    later.append((key, value))
                else:
                    self.set(key, value)
        if later is not None:
            for key, value in later:
                self.set(key, value)
        if lock:
            self.lock_()

    def __init_subclass__(cls, **options: Any) -> None:
        super().__init_subclass__(**options)
        collection_class_defined(cls)  # pytree registration, in the interop layer

    @classmethod
    def _new_unchecked(
        cls,
        tensors: dict[str, Value],
        batch_size: torch.Size,
        device: torch.device | None,
    ) -> Self:
        self = _new_instance(cls)
        self._tensors = tensors
        self._batch_size = batch_size
        self._device = device
        self._locked = False
        self._consolidated = None
        self._saved_at = None
        self._scope = None
        return self

    @classmethod
    def lazy_stack(  # type: ignore[override]  # not Self: a lazy stack, as the peer's
        cls, input: Sequence[Any], dim: int = 0, **options: Unpack[LazyStackOptions]
    ) -> LazyStackedTensorDict:
        """Same as :func:`tclass.lazy_stack`: a ``LazyStackedTensorDict``."""
        return cast("LazyStackedTensorDict", ENGINE.lazy_stack(input, dim, **options))

    @classmethod
    def _from_plain(cls, td: TensorDict) -> Self:
        if type(td) is cls:
            return td
        out = cls._new_unchecked(td._tensors, td._batch_size, td._device)
        if td._scope is not None:  # its dim names and unbatched tensors, kept
            out._scope = td._scope.carried(same_batch=True)
        return out

    # --- primitives ----------------------------------------------------------------------

    @property
    def batch_size(self) -> torch.Size:
        """The leading dims every entry shares. Assigning checks every entry; as in the
        peer, a locked TensorDict's batch size may change (its entries stay the same)."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: BatchSizeLike) -> None:
        new = as_batch_size(value, ragged=True)
        self._check_new_batch_size(new, ())
        self._assign_batch_size(new)

    def _check_new_batch_size(self, new: torch.Size, prefix: tuple[str, ...]) -> None:
        n = len(new)
        for key, value in self._tensors.items():
            shape = leaf_shape(value) if value.__class__ is _Tensor else value.shape
            if shape[:n] == new or value.__class__ is _Unbatched:
                continue
            if isinstance(value, TensorCollection):
                value._check_new_batch_size(new, prefix + (key,))
            else:
                raise BatchMismatchError(prefix + (key,), shape, new)

    def _assign_batch_size(self, new: torch.Size) -> None:
        n = len(new)
        grown = n > len(self._batch_size)
        self._batch_size = new
        scope = self._scope
        if scope is not None and scope.names is not None:
            scope.names = _names.resized(scope.names, n)
        tensors = self._tensors
        for key, value in tensors.items():
            # A shared Python value spans exactly its parent's batch, shrinking with it.
            if isinstance(value, NonTensorData) or (
                isinstance(value, TensorCollection) and value.batch_size[:n] != new
            ):
                value._assign_batch_size(new)
            elif value.__class__ is _Unbatched:
                tensors[key] = value._with_batch_size(new)
        if grown and scope is not None and scope.names is not None:
            # The nested collections share the new dims, unnamed here: as the peer, they
            # take these names (a name of their own there is dropped).
            self._rename_all(scope.names)

    @property
    def device(self) -> torch.device | None:
        """The device of every entry, or ``None`` if they may be on different devices."""
        return self._device

    @device.setter
    def device(self, value: DeviceLike) -> None:
        refuse_device_assignment(self, value)

    def _lock_state(self) -> bool:
        return self._locked

    def _items(self) -> Iterator[tuple[str, Value]]:
        return iter(self._tensors.items())

    def _key_names(self) -> list[str]:
        return list(self._tensors)

    def _has_entry(self, key: str) -> bool:
        return key in self._tensors

    def _entries(self) -> dict[str, Value]:
        """The live entry dict (read-only by convention), for stack and cat."""
        return self._tensors

    def _flat_entries(self) -> dict[str, Value]:
        return self._tensors

    def _walk_leaves(self) -> list[torch.Tensor]:
        tensors = self._tensors
        if _only_tensors(map(type, tensors.values())):  # only tensors: no walk
            return list(tensors.values())  # type: ignore[arg-type]
        return super()._walk_leaves()

    def _rebuilt(
        self,
        results: Iterator[torch.Tensor],
        resize: Callable[[torch.Size], torch.Size] | None,
        values: Iterator[Any] | None = None,
    ) -> Self:
        # LeafWalkOps._rebuilt with the attributes read directly: it runs once per nested
        # TensorDict of every element-wise result.
        tensors = self._tensors
        if _only_tensors(map(type, tensors.values())):  # only tensors here: one zip
            entries: dict[str, Value] = dict(zip(tensors, results))
        else:
            entries = self._rebuilt_entries(tensors, results, resize, values)
        batch = self._batch_size
        return self._new_like(entries, batch if resize is None else resize(batch), self._device)

    def _entry(self, key: str) -> Value:
        try:
            return self._tensors[key]
        except KeyError:
            raise self._missing_key(key) from None

    def _new_like(
        self, values: dict[str, Value], batch_size: torch.Size, device: torch.device | None
    ) -> Self:
        out = _new_instance(self.__class__)
        out._tensors = values
        out._batch_size = batch_size
        out._device = device
        out._locked = False
        out._consolidated = None
        out._saved_at = None
        # Names carry over to a result over the same batch (clone, apply, to...); shape
        # operations set their result's names themselves.
        scope = self._scope
        out._scope = None if scope is None else scope.carried(batch_size == self._batch_size)
        return out

    def _map_values(
        self,
        fn: Callable[[Value], Value],
        batch_size: torch.Size,
        device: Any = _MISSING,
    ) -> Self:
        values = {key: fn(value) for key, value in self._tensors.items()}
        if device is _MISSING or device is ...:
            device = self._device
        return self._new_like(values, batch_size, device)

    def _map_batch(
        self,
        fn: Callable[[Value], Value],
        batch_size: torch.Size,
        device: Any = _MISSING,
    ) -> Self:
        """Like :meth:`_map_values` for a function that moves batch elements around:
        unbatched tensors are kept as they are (with the new batch size)."""
        if not self._holds_unbatched():
            return self._map_values(fn, batch_size, device)
        values = {
            key: fn(value)
            if value.__class__ is not _Unbatched
            else value._with_batch_size(batch_size)
            for key, value in self._tensors.items()
        }
        if device is _MISSING or device is ...:
            device = self._device
        return self._new_like(values, batch_size, device)

    def _map_values_split(
        self, fn: Callable[[Value], Sequence[Value]], batch_sizes: Sequence[torch.Size]
    ) -> tuple[Self, ...]:
        parts: list[dict[str, Value]] = [{} for _ in batch_sizes]
        unbatched = self._holds_unbatched()
        for key, value in self._tensors.items():
            if unbatched and value.__class__ is _Unbatched:
                for part, size in zip(parts, batch_sizes):
                    part[key] = value._with_batch_size(size)
                continue
            for part, piece in zip(parts, fn(value)):
                part[key] = piece
        device = self._device
        out = tuple(
            self._new_unchecked(part, size, device) for part, size in zip(parts, batch_sizes)
        )
        if unbatched:
            for piece in out:
                piece._mark_unbatched()
        return out

    # --- replacing in place, devices (names: ScopedOps) ---------------------------------

    def _flag_lock(self, locked: bool) -> None:
        self._locked = locked
        if not locked:
            self._consolidated = None  # unlocking ends the consolidation, as in the peer

    def _become(self, other: Self) -> None:
        if self._locked:
            raise LockedError(LOCKED_MSG.format(action="change the shape or the key layout of"))
        if self._saved_at is not None:
            msg = (
                "an in-place change of the shape or the key layout of a TensorDict saved in a "
                "folder would leave the folder behind; use the out-of-place form "
                "(inplace=False) and save it again"
            )
            raise UnsupportedError(msg)
        tensors = self._tensors
        new = dict(other._tensors)
        for key, value in new.items():
            mine = tensors.get(key)
            if mine is value:
                continue
            if (
                isinstance(mine, TensorDict)
                and isinstance(value, TensorDict)
                and not mine._locked
                and mine._saved_at is None
            ):
                mine._become(value)  # nested collections keep their identity
                new[key] = mine
            elif (
                isinstance(mine, NonTensorStack)
                and isinstance(value, NonTensorStack)
                and not mine._locked
            ):
                mine._become(value)  # and so do stacks of Python values, as the peer
                new[key] = mine
        self._tensors = new
        self._batch_size = other._batch_size
        self._assign_names(other._dim_names)
        if other._holds_unbatched():
            self._mark_unbatched()

    def _assign_device(self, device: torch.device | None) -> None:
        self._device = device

    # --- writing entries -----------------------------------------------------------------

    def set(
        self, key: Any, value: Any, inplace: bool = False, *, non_blocking: bool = False
    ) -> Self:
        """Stores ``value`` under ``key`` (a string or a nested tuple); returns ``self``.

        Intermediate nested TensorDicts are created as needed. With ``inplace=True`` and
        an existing entry, the data is copied into it instead (see :meth:`set_`), without
        waiting for a device copy with ``non_blocking=True``.

        Raises:
            LockedError: if the TensorDict is locked (and the write is not in place).
            BatchSizeError: if the value's leading dims differ from the batch size.
        """
        if type(key) is not str:
            path = _keys.key_path(key)
            if len(path) > 1:
                parent, rest = self._parent_for_write(path)
                parent.set(rest, value, inplace=inplace)
                return self
            key = path[0]
        if inplace and key in self._tensors:
            return self.set_(key, value, non_blocking=non_blocking)
        if self._locked and not self._can_fill(key):
            if key in self._tensors and self._tensors[key] is value:
                return self  # the entry itself (written in place): nothing to replace
            # (not ``_tensors.get(key) is value``: a new key set to None is a new entry)
            raise self._refuse_set(key)
        stored = self._validate(key, value)
        if self._saved_at is not None:
            stored = self._saved_at.entry_set(self, key, stored, False)
        self._tensors[key] = stored
        return self

    def _store_entry(self, key: str, value: Value, blank: bool = False) -> Value:
        """Stores a checked ``value`` (in the folder first, if saved in one)."""
        if value.__class__ is _Unbatched:
            self._mark_unbatched()
        if self._saved_at is not None:
            value = self._saved_at.entry_set(self, key, value, blank)
        self._tensors[key] = value
        return value

    def _remove_entry(self, key: str) -> Value:
        """Removes the entry ``key`` (which must exist) and returns it."""
        if self._saved_at is not None:
            self._saved_at.entry_removed(self, key)
        return self._tensors.pop(key)

    def _refuse_set(self, key: str) -> LockedError:
        saved = self._saved_at
        if key not in self._tensors:
            where = "" if saved is None else f" (saved in {saved.folder!r})"
            after = "" if saved is None else "; a key added then is written into the folder too"
            return LockedError(
                "Cannot modify locked TensorDict. For in-place modification, use set_() on a "
                f"key that is present: cannot add {key!r}, a locked collection{where} takes no "
                f"new keys. Unlock it first (with td.unlock_(): ...){after}"
            )
        if saved is None or isinstance(self._tensors.get(key), _NonTensorNode):
            return LockedError(LOCKED_MSG.format(action=f"set {key!r} in"))
        return LockedError(
            f"Cannot modify locked TensorDict saved in {saved.folder!r}: cannot set {key!r}; "
            "write in place "
            "(set_() or td[index] = value) to change the saved data. Replacing the entry after "
            "unlock_() changes memory only (the folder keeps its data; save again with memmap_())"
        )

    def _can_fill(self, key: str) -> bool:
        """Whether a locked TensorDict takes ``key`` all the same: an absent field of the
        record it stores, allocated in the folder it is saved in (a field that was
        ``None`` when it was saved). Any other new key is refused, as in the peer."""
        saved = self._saved_at
        return saved is not None and key in saved.fields and key not in self._tensors

    def _validate(self, key: object, value: Any) -> Value:
        """``value`` as it will be stored under ``key``: checked, converted and moved."""
        device = self._device
        batch = self._batch_size
        stored: Value
        named = False  # a nested collection takes this one's dim names, once its batch fits
        if value.__class__ is _Tensor:
            stored = (
                value if device is None or value.device == device else moved(value, device, key)
            )
        elif isinstance(value, _Tensor):
            stored = (
                value if device is None or value.device == device else moved(value, device, key)
            )
            if stored.__class__ is _Unbatched:  # any shape: it belongs to the whole batch
                self._mark_unbatched()
                return stored._with_batch_size(batch)
        elif isinstance(value, TensorDictBase):
            stored = value if device is None or value.device == device else value.to(device)
            if isinstance(stored, NonTensorData) and stored._batch_size[: len(batch)] != batch:
                # One value spans the batch of the collection that holds it (the given
                # node is left as it is).
                stored = stored._make(stored.data, batch, stored._device)
            named = self._dim_names is not None and not value._is_leaf_node
        elif isinstance(value, Mapping):
            try:
                return TensorDict(value, batch, device, self._dim_names)  # the parent's names
            except BatchMismatchError as error:
                if not isinstance(key, str):
                    raise
                raise error.under(key) from None
        elif isinstance(value, np.ndarray) and value.dtype.names is not None:
            stored = TensorDict.from_struct_array(value, device=device)
        else:
            stored = stored_value(value, batch, device)
        n = len(batch)
        plain = stored.__class__ is _Tensor
        if n:
            # leaf_shape only for a nested tensor (a strided one has no shape): this runs per set
            if plain and cast(_Tensor, stored).is_nested:
                shape = leaf_shape(cast(_Tensor, stored))
            else:
                shape = stored.shape
            if (not shape or shape[0] != batch[0]) if n == 1 else shape[:n] != batch:
                if not isinstance(stored, TensorDictBase):
                    raise BatchMismatchError(key, shape, batch)
                stored = fit_to_batch(stored, batch, key)
        if plain:
            return stored
        if named and (names := self._dim_names) is not None and any(x is not None for x in names):
            stored = named_to_fit(stored, names, key)
        elif n and isinstance(stored, TensorDictBase) and not stored._is_leaf_node:
            own = stored._dim_names  # an unnamed collection takes the names it is given
            if own is not None and any(name is not None for name in own[:n]):
                self._rename_all(tuple(own[:n]))
        return stored

    def _parent_for_write(self, path: tuple[str, ...]) -> tuple[TensorCollection, Any]:
        """The collection that will write ``path[-1]``, creating missing levels, and the
        key it writes: ``path[-1]``, or the rest of the path below a record's unset
        field (read as ``None``), which the record makes and checks whole."""
        node: TensorCollection = self
        for depth, part in enumerate(path[:-1]):
            child = node.get(part, _MISSING)
            if child is None and node is not self:  # a record's unset field
                return node, path[depth:]
            if child is _MISSING:
                node.set(part, TensorDict._new_unchecked({}, node.batch_size, node.device))
                child = node.get(part)  # what was stored (a folder stores its own copy)
            elif not isinstance(child, TensorCollection):
                msg = (
                    f"cannot set {path!r}: the entry {path[: depth + 1]!r} is a tensor, "
                    "not a collection; delete it first"
                )
                raise KeyThroughTensorError(msg)
            node = child
        return node, path[-1]

    def _lacks_parent(self, path: tuple[str, ...]) -> bool:
        """Whether a collection on the way to ``path[-1]`` is missing."""
        node: Any = self
        for part in path[:-1]:
            if not isinstance(node, TensorCollection):
                return False  # through a tensor: the read raises
            node = node.get(part, _MISSING)
            if node is _MISSING or node is None:  # None: a record's unset field
                return True
        return False

    def set_(self, key: Any, value: Any, *, non_blocking: bool = False) -> Self:
        """Copies ``value`` into the existing entry ``key`` in place (allowed when locked).

        A nested key whose parent collections are missing is set as by :meth:`set` (the
        missing levels created), as in the peer.

        Raises:
            KeyNotFoundError: if there is no entry ``key``.
            BatchSizeError: if ``value`` cannot be broadcast to the entry's shape.
            InPlaceWriteError: (a ``RuntimeError``) if torch refuses the copy otherwise
                (autograd, for a tensor that requires grad).
        """
        if type(key) is not str or self._tensors.__class__ is not dict:  # (else: its own)
            if type(key) is not str and self._lacks_parent(_keys.key_path(key)):
                return self.set(key, value)
            owner, name = self._holder_of(key)
            if owner is not self:  # written by what holds it: a record checks its fields, a
                owner.set_(name, value, non_blocking=non_blocking)  # lazy stack its members,
                return self  # a view over another collection (TypedTensorDict) that one
            key = name
        target = self._get_nested(key) if type(key) is not str else self._entry(key)
        if isinstance(target, _NonTensorNode):  # a Python value: replaced, as in the peer
            # (a list, tuple or numpy array would be stored as a tensor, as set() stores
            # it: refused, as the peer refuses it)
            if isinstance(value, (_Tensor, Mapping, list, tuple, np.ndarray)) or (
                isinstance(value, TensorCollection) and not value._is_value_node
            ):
                msg = (
                    f"set_: {key!r} holds a Python value; a {type(value).__name__} cannot be "
                    "copied into it (an in-place write keeps the entry's kind, and a list "
                    "is stored as a tensor: use set() to replace it, or write the value "
                    "with set_non_tensor())"
                )
                raise InPlaceWriteError(msg)
            if isinstance(value, (int, float, complex, str, bytes)):  # a Python value still,
                # at the node's batch size (past the collection's: a flattened nested node)
                value = NonTensorData._make(value, target.batch_size, target.device)
            path = _keys.key_path(key)
            parent = self if len(path) == 1 else self._get_nested(path[:-1])
            if isinstance(parent, TensorDict):
                stored = keep_kind(target, parent._validate(path[-1], value))
                # written into the node itself (the peer): every collection sharing it sees
                # the write; in a folder, the folder is written first, then the node
                if parent._saved_at is not None:
                    if isinstance(target, NonTensorStack):  # the folder keeps a stack too
                        shaped = target.clone(recurse=False)
                        stored = shaped if write_one_value(shaped, stored) else stored
                    stored = parent._store_entry(path[-1], stored)
                    if write_one_value(target, stored):
                        parent._tensors[path[-1]] = target  # the node kept, written
                elif not write_one_value(target, stored):
                    parent._store_entry(path[-1], stored)
                return self
            if isinstance(parent, TensorCollection):  # a record's field: its own rules
                parent.set_(path[-1], value, non_blocking=non_blocking)
                return self
        if not isinstance(target, _Tensor):  # a nested collection: entry by entry
            if not isinstance(value, (Mapping, TensorCollection)):
                msg = (
                    f"set_: {key!r} is a nested collection; a {type(value).__name__} cannot "
                    "be copied into it (pass a collection or a dict of its entries, or "
                    "use set() to replace it)"
                )
                raise InPlaceWriteError(msg)
            if isinstance(value, dict):  # its shapes at the batch size of the collection
                # holding it first, then its keys, then the copy (as the peer)
                path = _keys.key_path(key)
                holder = self if len(path) == 1 else self._get_nested(path[:-1])
                check_dict_fits(value, holder.batch_size)
            with writes_as_set_():
                target.update_(value)
            return self
        if isinstance(value, TensorCollection) and not value._is_value_node:
            msg = (
                f"set_: a {type(value).__name__} cannot be copied into the tensor {key!r} "
                "(an in-place write keeps the entry's kind: use set() to replace it)"
            )
            raise InPlaceWriteError(msg)
        try:
            source = value if isinstance(value, _Tensor) else torch.as_tensor(viewable(value))
        except (TypeError, ValueError, RuntimeError) as error:
            msg = (
                f"set_: a {type(value).__name__} cannot be copied into the tensor {key!r}: {error}"
            )
            raise InPlaceWriteError(msg) from None
        if source is target:  # the entry itself (an apply_ returning it): as the peer
            return self
        try:
            target.copy_(source, non_blocking=non_blocking)
        except RuntimeError as error:
            # nothing to write, or the entry's own memory (a parameter's data): as the peer
            if not _batch.writes_nothing(target, source) and not same_memory(target, source):
                raise copy_error(key, source, target, error) from None
        return self

    def _check_writes_at(self, writes: Sequence[tuple[tuple[str, ...], Any, Any]]) -> None:
        """``update_at_``'s (and ``update_``'s) writes, each index's parts tried before
        any is written (see :func:`check_entries`), where the peer writes the entries
        before the one refused."""
        for index, part in grouped_parts(writes):
            check_entries(self, index, part)

    def _check_parts_at(self, index: Any, part: Any) -> None:
        """For ``self[index] = part`` (a collection or a dict): every entry's part tried
        before any is written (see :func:`check_entries`)."""
        check_entries(self, index, part)

    def _write_rows(self, index: Any, pairs: Iterable[tuple[Any, Any]]) -> None:
        """``self[index] = rows``' writes (``pairs``: the rows' entries, checked against
        this TensorDict's already): planned, each record reached checking its rows, then
        made (``_update_plan.py``). The usual rows, tensors and numbers, reach no nested
        collection: their plan would be this TensorDict writing them, so it writes them
        at once."""
        for _, value in pairs:
            if value.__class__ is not _Tensor and isinstance(value, (Mapping, TensorCollection)):
                perform(plan_rows(self, index, pairs, []), False, False, None)
                return
        self._write_entries_at(index, pairs)

    def _check_row_write(self, index: Any, value: Any) -> None:
        """Checks ``self[index] = value`` for the collection holding this one (a
        TensorDict it is an entry of, a lazy stack it is a member of), writing nothing:
        the records it holds, at any depth, check their rows; a dict's or a collection's
        parts are tried against the entries too (see :func:`check_entries`)."""
        if isinstance(value, TensorCollection):
            self._check_parts_at(index, value)
            plan_rows(self, index, list(value._entries().items()), [])
        elif isinstance(value, Mapping):
            pairs = self._dict_entries_at(index, value)
            self._check_parts_at(index, dict(pairs))
            plan_rows(self, index, pairs, [])
        else:
            check_records_at(self, index, value)

    def _preallocate(self, key: str, index: Any, sub: Any) -> Value:
        """A zero-filled entry for ``key`` whose indexed part will receive ``sub``."""
        if self._locked and not self._can_fill(key):
            raise LockedError(LOCKED_MSG.format(action=f"add {key!r} to"))
        indexed_dims = len(_batch.indexed_shape(self._batch_size, index))
        if isinstance(sub, Mapping):
            sub = TensorDict(sub, self._batch_size[:0], None)
        if self._saved_at is not None:  # allocated whole in the folder, then written into
            blank = blank_like(sub, self._batch_size, indexed_dims, self._device)
            return self._store_entry(key, blank, blank=True)
        if isinstance(sub, _NonTensorNode):  # the written value everywhere (None: per element)
            entry: Value = blank_like(sub, self._batch_size, indexed_dims, self._device)
        elif isinstance(sub, TensorCollection):
            size = self._batch_size + sub.batch_size[indexed_dims:]
            entry = cast(TensorDictBase, sub)._new_like({}, size, self._device)  # same kind
        else:
            sub = sub if isinstance(sub, _Tensor) else torch.as_tensor(sub)
            size = self._batch_size + sub.shape[indexed_dims:]
            entry = torch.zeros(size, dtype=sub.dtype, device=self._device or sub.device)
        self._tensors[key] = entry
        return entry

    def _update_entries(
        self,
        source: Mapping[Any, Any] | TensorCollection,
        clone: bool,
        inplace: bool,
        keys_to_update: Sequence[Any] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> Self:
        """Sets every entry of ``source``; nested collections are updated key by key (unless
        ``is_leaf`` says their type is a leaf), tensors inside plain dicts cloned too: every
        write planned first, the records reached checking their parts (``_update_plan.py``)."""
        allowed = None if keys_to_update is None else [_keys.key_path(k) for k in keys_to_update]
        update_entries(self, source, clone, inplace, allowed, is_leaf)
        return self

    def _check_update(
        self,
        source: Any,
        inplace: bool,
        allowed: list[tuple[str, ...]] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> None:
        plan_update(self, source, False, inplace, allowed, is_leaf, [])

    # --- accessors for the other layers ------------------------------------------------
    # io, interop, distributed and the facade read a TensorDict through the collection
    # primitives (_items, _entries, _entry, _key_names), batch_size, device and is_locked,
    # build one with _new_unchecked and change one with the methods below; only the
    # engine touches the slots.
    def _take_moved(self, moved: Self) -> None:
        if self._locked:
            raise LockedError(LOCKED_MSG.format(action="move the entries of"))
        for key, value in moved._tensors.items():
            mine = self._tensors.get(key)
            if type(mine) is TensorDict and type(value) is TensorDict:
                mine._take_moved(value)
            else:
                self._tensors[key] = value
        self._device = moved._device

    @property
    def _saved(self) -> SavedAt | None:
        """The folder this node is saved in (written through), or None."""
        return self._saved_at

    def _attach_folder(self, saved: SavedAt | None) -> None:
        """Makes later changes of entries reach ``saved`` (see ``_saved.py``)."""
        self._saved_at = saved

    # --- python protocols ----------------------------------------------------------------

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        # Protocol 5: one out-of-band buffer of every tensor (``_pickle5.py``); a subclass
        # with its own __reduce__ keeps it.
        if type(self).__reduce__ is TensorDict.__reduce__:
            reduced = ENGINE.reduce_out_of_band(self, operator.index(protocol))
            if reduced is not None:
                return reduced
        return self.__reduce__()

    def __reduce__(self) -> tuple[Any, ...]:
        if self._consolidated is not None:  # one buffer instead of leaves (or a copy)
            return self._consolidated.reduce(self)
        state = (type(self), self._tensors, self._batch_size, self._device, self._locked)
        if self._saved_at is not None:
            # saved in a folder: the copy a worker unpickles maps the same files, and its
            # Python values and new entries reach the folder too (not its memory only)
            return (_rebuild, (*state, self._dim_names, self._saved_at))
        return (_rebuild, (*state, self._dim_names))

    def _copy_top(self) -> Self:
        """A new TensorDict holding the same entries (nested collections shared): the
        one-level copy internal edits start from (``copy.copy`` copies the whole tree)."""
        return self._new_like(dict(self._tensors), self._batch_size, self._device)

    @shows_compact_repr
    def __repr__(self) -> str:
        return compact_repr(self)


def _rebuild(
    cls: type[TensorDict],
    tensors: dict[str, Value],
    batch_size: torch.Size,
    device: torch.device | None,
    locked: bool,
    names: Names = None,
    saved: SavedAt | None = None,
) -> TensorDict:
    checked_class(cls, TensorDict, "a TensorDict")
    if type(tensors) is not dict or not all(
        type(key) is str and isinstance(value, (torch.Tensor, TensorCollection))
        for key, value in tensors.items()
    ):
        msg = "a pickle of a TensorDict holds entries that are not tensors or collections"
        raise PickleRefusedError(msg)
    td = cls._new_unchecked(tensors, batch_size, device)
    td._assign_names(names)
    td._mark_unbatched_if_any()
    if saved is not None:
        td._attach_folder(saved)
    if locked:
        td.lock_()
    return td


allow_unpickling(TensorDict, _rebuild)  # torch.load(f, weights_only=True)


# A TensorDict is a mutable mapping to code that asks (``isinstance(td, Mapping)``:
# torch's ``Module.load_state_dict(td)``, ``dict(td)``), as the peer's; records are not.
MutableMapping.register(TensorDict)

inline_inherited(TensorDict)  # for torch.compile's guards: see _base/_inline.py


def _misspelled_option(kwargs: Mapping[str, Any]) -> str:
    """A hint for keyword entries given with a ``source`` that look like a misspelled
    option of the constructor (``batch_sze=[3]``), which Python took as an entry."""
    for name in kwargs:
        close = difflib.get_close_matches(name, _OPTIONS, n=1, cutoff=0.75)
        if close:
            return f"; {name}= is taken as an entry: did you mean {close[0]}=?"
    return ""


_OPTIONS = ("batch_size", "device", "names", "non_blocking", "lock")
