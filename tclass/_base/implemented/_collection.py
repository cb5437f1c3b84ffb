"""The base every tensor collection derives from, and what follows from its primitives.

A collection is a mapping from string keys to *values*, each a tensor or another
collection, that share leading dims: the collection's ``batch_size``. Concrete containers
(``TensorDict`` today; lazy stacks and tensorclasses build on the same protocol) provide a
few primitives: ``batch_size``, ``device``, ``_items()``, ``_entry()`` and the two
``_map_values*`` constructors. The mixins in ``_shape_ops.py`` and ``_apply.py`` are
written against those primitives only.

Values are duck-typed: a nested collection answers the same batch-dim methods a tensor
answers for its dims (``reshape``, ``permute``, indexing, ...), so most operations are a
single call per value, whatever its kind.
"""

from __future__ import annotations

import collections.abc
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import attrgetter, methodcaller
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias, overload

import torch
from typing_extensions import Self

from tclass._base._provided import ENGINE
from tclass._base.implemented._batch_facts import (
    BatchFacts,
    _check_batch_size_update,
    check_replaced_keys,
)
from tclass._base.implemented._entry_views import EntryItems, EntryValues
from tclass._base.implemented._key_walk import (
    _has_key,
    _sort_key,
    _walk_keys,
)
from tclass._core._device import DeviceLike
from tclass._core._keys import unravel_key
from tclass._core._names import Names
from tclass._core._records import is_record, storage_of
from tclass.errors import (
    InvalidKeyError,
    KeyNotFoundError,
    LockedError,
    NotAMappingError,
    UnravelKeyError,
    UnsupportedError,
    locked_prefix,
)

if TYPE_CHECKING:
    from tclass._base._tensordict_base import Value

__all__ = [
    "KeysView",
    "TensorCollection",
    "ToArg",
    "check_replaced_keys",
]


class TensorCollection(BatchFacts):
    """Base of every tensor collection. Subclasses implement the primitives below."""

    __slots__ = ()

    # Class attributes, annotated for checkers only: typing.get_type_hints of a record's
    # class gives its fields alone, as the peer's (and Value is a name for checkers only).
    if TYPE_CHECKING:
        # Accessors that stack and cat map over hundreds of members at once; a subclass
        # may replace them with C-level getters (operator.attrgetter) of its own fields.
        _get_entries: ClassVar[Callable[[Any], Mapping[str, Value]]]
        _get_batch_size: ClassVar[Callable[[Any], torch.Size]]
        # A node that is a leaf of the tree although it is a collection: a Python value
        # (NonTensorData, NonTensorStack, which also set _is_value_node: math leaves them
        # alone) or an unbatched tensor. It has no entries; shape ops only change its batch.
        _is_leaf_node: ClassVar[bool]
        _is_value_node: ClassVar[bool]
        _is_lazy: ClassVar[bool]  # a lazy stack of members (LazyStackedTensorDict)
        _is_store: ClassVar[bool]  # over an outside store (an HDF5 file): never copied
        # copy_ writes the data outside autograd (TensorDictParams: into its parameters)
        _copies_without_grad: ClassVar[bool]
        # a parent's update merges into it, which it keeps (TensorDictParams: its
        # parameters stay registered), as the peer updates any nested collection
        _kept_by_update: ClassVar[bool]
        # a parent's to() moves it as its data: a TensorDict over the moved tensors
        # (TensorDictParams: its own to() makes new parameters), as the peer's
        _moves_as_data: ClassVar[bool]
    _get_entries = methodcaller("_entries")
    _get_batch_size = attrgetter("batch_size")
    _is_leaf_node = False
    _is_value_node = False
    _is_lazy = False
    _is_store = False
    _copies_without_grad = False
    _kept_by_update = False
    _moves_as_data = False

    # --- primitives ----------------------------------------------------------------------

    @property
    def batch_size(self) -> torch.Size:
        """The leading dims every entry shares."""
        raise NotImplementedError

    @property
    def device(self) -> torch.device | None:
        """The device of every entry, or ``None`` if entries may be on different devices."""
        raise NotImplementedError

    def _lock_state(self) -> bool:
        """Whether this collection is locked: what :attr:`is_locked` reads."""
        raise NotImplementedError

    def _results_locked(self) -> bool:
        """Whether the results that keep the lock (views, reshapes, ``data``) are locked:
        this collection's lock (a TensorDictParams's is its wrapped TensorDict's)."""
        return self._lock_state()

    @property
    def is_locked(self) -> bool:
        """Whether entries can be added, replaced or removed (in-place writes always can).

        Assigning it locks or unlocks, as the peer's ``td.is_locked = True`` does (the
        same as :meth:`lock_` / :meth:`unlock_`)."""
        return self._lock_state()

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        if value:
            self.lock_()
        else:
            self.unlock_()

    def _items(self) -> Iterator[tuple[str, Value]]:
        """The direct entries, in insertion order."""
        raise NotImplementedError

    def _entries(self) -> Mapping[str, Value]:
        """The direct entries as a mapping (read-only by convention)."""
        return dict(self._items())

    def _entry(self, key: str) -> Value:
        """The direct entry ``key``; raises KeyNotFoundError if absent."""
        raise NotImplementedError

    def _new_like(
        self, values: dict[str, Value], batch_size: torch.Size, device: torch.device | None
    ) -> Self:
        """A collection of the same kind holding ``values``, unchecked."""
        raise NotImplementedError

    def _map_values(
        self,
        fn: Callable[[Value], Value],
        batch_size: torch.Size,
        device: Any = ...,
    ) -> Self:
        """A new collection of the same kind holding ``fn(value)`` for every entry.

        The caller guarantees the results have ``batch_size``; nothing is re-checked.
        ``device`` defaults to this collection's device.
        """
        raise NotImplementedError

    def _map_batch(
        self,
        fn: Callable[[Value], Value],
        batch_size: torch.Size,
        device: Any = ...,
    ) -> Self:
        """Like :meth:`_map_values`, for a function that moves batch elements around
        (reshape, permute, expand, ...). Collections of per-element Python values
        override it to move their values the same way."""
        if device is ...:
            return self._map_values(fn, batch_size)
        return self._map_values(fn, batch_size, device)

    def _map_values_split(
        self, fn: Callable[[Value], Sequence[Value]], batch_sizes: Sequence[torch.Size]
    ) -> tuple[Self, ...]:
        """One new collection per piece, where ``fn(value)`` cuts each entry in pieces."""
        raise NotImplementedError

    def _check_new_batch_size(self, new: torch.Size, prefix: tuple[str, ...]) -> None:
        """Raises BatchMismatchError (naming ``prefix``) if ``new`` does not fit."""
        raise NotImplementedError

    def _assign_batch_size(self, new: torch.Size) -> None:
        """Sets the batch size to ``new``, already checked with ``_check_new_batch_size``."""
        raise NotImplementedError

    def _cut_batch_dims(self, count: int) -> bool:
        """Keeps the first ``count`` dims of the batch size of one shared Python value, in
        place (what the peer's ``auto_batch_size_`` does to one): ``False``, nothing done,
        for any other collection."""
        del count
        return False

    def _key_names(self) -> list[str]:
        """The direct keys, in order, without reading the values (a lazy stack would
        have to stack them)."""
        return [key for key, _ in self._items()]

    def _has_entry(self, key: str) -> bool:
        """Whether ``key`` is a direct key (for a lazy stack: of every member)."""
        return key in self._key_names()

    def _child(self, key: str) -> TensorCollection | None:
        """The nested collection at ``key`` (Python-value nodes included, as
        :func:`_walk` treats them), or ``None`` if the entry is a tensor."""
        value = self._entry(key)
        return value if isinstance(value, TensorCollection) else None

    def _child_type(self, key: str) -> type[TensorCollection] | None:
        """The class of the nested collection at ``key``, or ``None`` for a tensor: what
        the key walk needs of a Python-value node (a lazy stack of ragged members has no
        stacked value to build)."""
        child = self._child(key)
        return None if child is None else type(child)

    def _repr_items(self) -> Iterator[tuple[str, Any]]:
        """What the repr shows per key (a lazy stack shows stand-ins, not stacked copies)."""
        return self._items()

    def _repr_values_by_class(self) -> bool:
        """Whether the compact repr names a Python value by its node's class
        (``NonTensorData``) rather than by its value's type (a file's: the peer's)."""
        return False

    def _repr_html_(self) -> str | None:
        """The display of notebooks: the compact repr's entries in nested ``<details>``
        blocks, as the peer's (None with ``set_printoptions(html=False)``)."""
        return ENGINE.html_repr(self)

    def _repr_extra(self) -> str:
        """Text the repr adds after the batch size (a lazy stack's ``stack_dim``)."""
        return ""

    def _repr_exclusive(self) -> list[list[tuple[str, Any]]] | None:
        """For the detailed repr, a lazy stack's entries per member that not every member
        has; ``None`` for other collections."""
        return None

    @classmethod
    def _stack_lazily(cls, members: list[Any], dim: int, batch_size: torch.Size) -> Any:
        """A lazy stack of ``members`` (collections of this class, checked by the
        caller); tensorclasses override it to wrap the stack in their class."""
        return ENGINE.LazyStackedTensorDict._from_members(members, dim, batch_size)

    def _absent_fields(self) -> Sequence[str]:
        """Declared fields that hold nothing (``None``), for the repr to list last."""
        return ()

    def _repr_absent(self) -> Sequence[str]:
        """The ``_absent_fields`` the repr lists (a record leaves out its ``repr=False``
        fields)."""
        return self._absent_fields()

    # --- what results inherit: names, in-place replacement -------------------------------

    @property
    def _dim_names(self) -> Names:
        """The names of the batch dims, or ``None`` when no dim has one."""
        return None

    def _assign_names(self, names: Names) -> None:
        """Sets the names of this collection's batch dims (checked by the caller); kinds
        without names of their own (Python values) ignore them."""

    def _rename_all(self, names: Names) -> None:
        """Names this collection's dims ``names``, and the dims nested collections share
        with it."""
        self._assign_names(names)

    def _named_like_self(self, out: Self) -> Self:
        """``out`` (a result with this batch size) given this collection's names."""
        names = self._dim_names
        if names is not None and out.batch_size == self.batch_size:
            out._assign_names(names)
        return out

    def _become(self, other: Self) -> None:
        """Takes ``other``'s entries, batch size and names, in place (nested collections
        held by both keep their identity): what ``inplace=True`` shape ops do."""
        msg = f"a {type(self).__name__} cannot change its batch size in place; use inplace=False"
        raise UnsupportedError(msg)

    def _check_removable(self, method: str, paths: Sequence[Any] | None = None) -> None:
        """Raises the error ``method`` (an in-place removal of entries: ``exclude`` /
        ``select`` with ``inplace=True``, ``separates``) would raise here, before anything
        is removed: a lazy stack checks every member first, so that none loses entries
        when another refuses. ``paths``: the keys to remove (``None``: any entry)."""
        if self.is_locked and (paths is None or any(unravel_key(p) in self for p in paths)):
            msg = (
                f"{locked_prefix(type(self).__name__)}: {method} cannot remove entries "
                "from a locked collection; unlock it first (unlock_())"
            )
            raise LockedError(msg)

    def _assign_device(self, device: torch.device | None) -> None:
        """Records ``device`` as the device of this level (data is not moved)."""
        msg = f"a {type(self).__name__} cannot record a device"
        raise UnsupportedError(msg)

    if TYPE_CHECKING:
        # Written by the mixins of TensorDictBase or by each kind; declared here so that
        # one mixin can call another's (every collection answers them).
        def set_(self, key: Any, value: Any, *, non_blocking: bool = False) -> Self: ...
        def select(self, *keys: Any, inplace: bool = False, strict: bool = True) -> Self: ...
        def exclude(self, *keys: Any, inplace: bool = False) -> Self: ...
        def del_(self, key: Any) -> Self: ...
        def lock_(self) -> Self: ...
        def unlock_(self) -> Self: ...
        def clear_device_(self) -> Self: ...
        def entry_class(self, key: Any) -> type: ...
        def clone(self, recurse: bool = True) -> Self: ...
        def is_empty(self) -> bool: ...
        def update_(
            self,
            input_dict_or_td: Mapping[Any, Any] | TensorCollection | None = None,
            clone: bool = False,
            *,
            non_blocking: bool = False,
            keys_to_update: Sequence[Any] | None = None,
            **kwargs: Any,
        ) -> Self: ...
        def _tensor_leaves(self) -> Iterator[torch.Tensor]: ...

    def _check_in_place(self, values: Mapping[str, Any], index: Any, op: str) -> None:
        """Checks ``values`` (entry name -> value) before they are written into this
        collection's entries at ``index`` (``...``: whole), by the method ``op`` of a
        collection holding it; only records have checks (their fields' specs)."""

    def _check_row_write(self, index: Any, value: Any) -> None:
        """Checks ``self[index] = value`` (a tensor or a number written into every
        entry) before a collection holding this one writes any entry; only records have
        checks (their fields' specs)."""

    def _check_update(
        self,
        source: Any,
        inplace: bool,
        allowed: list[tuple[str, ...]] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> None:
        """Raises what ``self.update(source, inplace=inplace)`` (``allowed`` its keys to
        update as paths) would refuse in a record it writes into, writing nothing; the
        caller checks before its first write (an update is all or nothing). Kinds that
        may hold no record have nothing to check."""

    def _stored_in(self) -> str | None:
        """The file or store this collection reads from and writes into (a
        ``PersistentTensorDict`` or its rows: its path); ``None`` in memory."""
        return None

    def _read(self) -> Any:
        """What reading this node as an entry gives (a leaf node gives its value)."""
        return self

    def _call_on_exit(self, callback: Callable[[], object]) -> None:
        """Makes the next ``with`` block on this collection run ``callback`` on exit;
        kinds without ``with`` scopes ignore it."""

    def get(self, key: Any, default: Any = None) -> Any:
        """The entry at ``key`` (a string or nested tuple), or ``default`` if absent."""
        raise NotImplementedError

    def set(
        self, key: Any, value: Any, inplace: bool = False, *, non_blocking: bool = False
    ) -> Self:
        """Stores ``value`` under ``key``; see TensorDict.set."""
        raise NotImplementedError

    def update(
        self,
        input_dict_or_td: Mapping[Any, Any] | TensorCollection | None = None,
        clone: bool = False,
        inplace: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[Any] | None = None,
        is_leaf: Callable[[type], bool] | None = None,
        update_batch_size: bool = False,
        ignore_lock: bool = False,
        **kwargs: Any,
    ) -> Self:
        """Sets every entry of ``input_dict_or_td`` and of ``kwargs`` (entries by key);
        nested collections are updated key by key. Returns ``self``.

        ``clone`` copies the values first; ``inplace`` writes into existing entries (allowed
        when locked); ``keys_to_update`` restricts the update to those keys (a nested key
        selects that entry, a shorter key everything below it); ``is_leaf(type)`` says which
        values are set whole instead of merged (default: tensors and Python values).
        ``update_batch_size`` takes the source's batch size when neither batch size starts
        with the other; every key of ``self`` must then be in the source. ``non_blocking``
        is accepted as the peer's transfer hint; ``ignore_lock`` is deprecated in the peer
        and, as there, does not lift the lock (it warns).

        Raises:
            LockedError: (a ``RuntimeError``) if locked and the update adds or replaces an
                entry without ``inplace``.
            BatchSizeError: with ``update_batch_size``, if a key of ``self`` is not in the
                source.
        """
        del non_blocking  # a blocking copy gives the same result
        if ignore_lock:
            msg = (
                "update(ignore_lock=True) does not lift the lock (as in tensordict, which "
                "deprecates it): use inplace=True or `with td.unlock_(): td.update(...)`"
            )
            warnings.warn(msg, FutureWarning, stacklevel=2)
        source: Any = input_dict_or_td
        if kwargs:
            if source is not None and not isinstance(source, dict):
                self.update(source, clone, inplace, keys_to_update=keys_to_update, is_leaf=is_leaf)
                source = None
            source = kwargs if source is None else {**source, **kwargs}
        if source is None or source is self or (keys_to_update is not None and not keys_to_update):
            if self.is_locked and not (
                inplace or ignore_lock or (source is None and is_record(self))
            ):
                # nothing to write, but the peer refuses the update of a locked collection
                # (its tensorclass takes update(None): README, Locking)
                self._update_entries({}, clone, inplace, keys_to_update, is_leaf)
            return self
        if not hasattr(source, "items"):
            # a locked collection refuses the update first, as the peer's (each kind its
            # own way: an empty update is refused unless in place)
            self._update_entries({}, clone, inplace, keys_to_update, is_leaf)
            msg = (
                f"update expects a mapping of entries (a dict or a tensor collection), got "
                f"{type(source).__name__} {source!r:.80}; pass e.g. td.update({{'key': value}})"
            )
            raise NotAMappingError(msg)
        if self.is_locked and not inplace and _passes_through_a_tensor(self, source):
            # a locked collection refuses the new key before its path is checked, as the
            # peer's (which says the collection is locked)
            self._update_entries({}, clone, inplace, keys_to_update, is_leaf)
        if isinstance(source, TensorCollection):
            own, new = self.batch_size, source.batch_size
            if own[: len(new)] != new[: len(own)]:  # neither starts with the other
                _check_batch_size_update(self, source, update_batch_size, inplace, keys_to_update)
            if update_batch_size:
                self._take_batch_size_of(source)
        return self._update_entries(source, clone, inplace, keys_to_update, is_leaf)

    def _update_entries(
        self,
        source: Mapping[Any, Any] | TensorCollection,
        clone: bool,
        inplace: bool,
        keys_to_update: Sequence[Any] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> Self:
        """What :meth:`update` does once its arguments are normalized (``source`` is not
        ``None``); each kind of collection writes its own way."""
        raise NotImplementedError

    def _take_batch_size_of(self, source: TensorCollection) -> None:
        """``update(update_batch_size=True)``: unless one batch size starts with the other,
        empties ``self`` (whose keys must all be in ``source``) and takes the source's.
        Nested collections (not lazy stacks) that the source has too do the same and are
        kept, so they keep their identity, as in the peer."""
        own, new = self.batch_size, source.batch_size
        n = min(len(own), len(new))
        theirs = dict(source._items())
        if own[:n] == new[:n]:
            for key, mine in list(self._items()):
                _take_nested_batch_size(mine, theirs.get(key))
            return  # kept, as the peer keeps it
        check_replaced_keys(self, source)
        for key, mine in list(self._items()):
            if not _take_nested_batch_size(mine, theirs[key]):
                self.del_(key)
        self._assign_batch_size(new)

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError

    def __getitems__(self, indices: Sequence[int] | torch.Tensor) -> Self:
        """The rows ``indices`` of the first batch dim at once, as one collection of this
        kind (a lazy stack gives a lazy stack, a record a record of its class): what
        ``DataLoader`` and ``Subset`` ask a dataset for, so that a batch is one
        collection whatever the ``collate_fn``."""
        return self[torch.as_tensor(indices, dtype=torch.long)]  # type: ignore[no-any-return]

    def __setitem__(self, index: Any, value: Any) -> None:
        raise NotImplementedError

    def to(self, *args: ToArg, **kwargs: Any) -> Self:
        """Moves or casts every entry; see TensorDict.to."""
        raise NotImplementedError

    # --- keys ----------------------------------------------------------------------------

    def keys(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        *,
        sort: bool = False,
    ) -> KeysView:
        """A view of the keys; nested keys are tuples when ``include_nested`` is true and
        come after the keys below them, as in the peer (before them over a file, as the
        peer's file lists its groups).

        ``is_leaf(type)`` says which values ``leaves_only`` keeps (by default tensors, not
        collections nor Python values); ``sort`` orders the keys (tuples by their parts).
        """
        return KeysView(self, include_nested, leaves_only, is_leaf, sort)

    # Without options, values() and items() are live views (len, re-iteration, `in`), as
    # the peer's dict_values / dict_items, that next() also takes, as the peer's
    # generators (_entry_views.py); with options generators; with leaves_only=True (and
    # the default is_leaf) only tensors come out. The overloads tell type checkers so.
    @overload
    def values(
        self,
        include_nested: Literal[False] = ...,
        leaves_only: Literal[False] = ...,
        is_leaf: None = ...,
        *,
        sort: Literal[False] = ...,
    ) -> EntryValues[Value]: ...
    @overload
    def values(
        self, include_nested: bool = ..., *, leaves_only: Literal[True], sort: bool = ...
    ) -> Iterator[torch.Tensor]: ...
    @overload
    def values(
        self, include_nested: bool, leaves_only: Literal[True], *, sort: bool = ...
    ) -> Iterator[torch.Tensor]: ...
    @overload
    def values(
        self,
        include_nested: Literal[True],
        leaves_only: bool = ...,
        is_leaf: Callable[[type], bool] | None = ...,
        *,
        sort: bool = ...,
    ) -> Iterator[Value]: ...
    @overload
    def values(
        self,
        include_nested: bool = ...,
        leaves_only: bool = ...,
        is_leaf: Callable[[type], bool] | None = ...,
        *,
        sort: Literal[True],
    ) -> Iterator[Value]: ...
    @overload
    def values(
        self,
        include_nested: bool = ...,
        leaves_only: bool = ...,
        is_leaf: Callable[[type], bool] | None = ...,
        *,
        sort: bool = ...,
    ) -> Iterable[Value]: ...

    def values(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        *,
        sort: bool = False,
    ) -> Iterable[Any]:
        """The values, in the same order as :meth:`keys` (which ``is_leaf`` and ``sort``
        change as there): without options a live view of this collection's own entries
        (``len``, iterable again and again, ``in``), as ``dict.values()``, which ``next()``
        takes one by one as a generator; else a generator."""
        if not (include_nested or leaves_only or sort):
            return EntryValues(self)
        return self._iter_values(include_nested, leaves_only, is_leaf, sort)

    def _iter_values(
        self,
        include_nested: bool,
        leaves_only: bool,
        is_leaf: Callable[[type], bool] | None,
        sort: bool,
    ) -> Iterator[Any]:
        if is_leaf is None and not sort:
            for _, value in _walk(self, (), include_nested, leaves_only):
                yield value
            return
        for _, value in self._iter_items(include_nested, leaves_only, is_leaf, sort):
            yield value

    @overload
    def items(
        self,
        include_nested: Literal[False] = ...,
        leaves_only: Literal[False] = ...,
        is_leaf: None = ...,
        *,
        sort: Literal[False] = ...,
    ) -> EntryItems[Value]: ...
    @overload
    def items(
        self, include_nested: bool = ..., *, leaves_only: Literal[True], sort: bool = ...
    ) -> Iterator[tuple[str | tuple[str, ...], torch.Tensor]]: ...
    @overload
    def items(
        self, include_nested: bool, leaves_only: Literal[True], *, sort: bool = ...
    ) -> Iterator[tuple[str | tuple[str, ...], torch.Tensor]]: ...
    @overload
    def items(
        self,
        include_nested: Literal[True],
        leaves_only: bool = ...,
        is_leaf: Callable[[type], bool] | None = ...,
        *,
        sort: bool = ...,
    ) -> Iterator[tuple[str | tuple[str, ...], Value]]: ...
    @overload
    def items(
        self,
        include_nested: bool = ...,
        leaves_only: bool = ...,
        is_leaf: Callable[[type], bool] | None = ...,
        *,
        sort: Literal[True],
    ) -> Iterator[tuple[str | tuple[str, ...], Value]]: ...
    @overload
    def items(
        self,
        include_nested: bool = ...,
        leaves_only: bool = ...,
        is_leaf: Callable[[type], bool] | None = ...,
        *,
        sort: bool = ...,
    ) -> Iterable[tuple[str | tuple[str, ...], Value]]: ...

    def items(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        *,
        sort: bool = False,
    ) -> Iterable[tuple[str | tuple[str, ...], Any]]:
        """``(key, value)`` pairs, the keys :meth:`keys` lists (which ``is_leaf`` and
        ``sort`` change as there), a nested node before its entries, as the peer's
        (``keys`` lists it after them), unless sorted: without options a live view of
        this collection's own entries (``len``, iterable again and again, ``in``), as
        ``dict.items()``, which ``next()`` takes one by one as a generator; else a
        generator."""
        if not (include_nested or leaves_only or sort):
            return EntryItems(self)
        return self._iter_items(include_nested, leaves_only, is_leaf, sort)

    def _iter_items(
        self,
        include_nested: bool,
        leaves_only: bool,
        is_leaf: Callable[[type], bool] | None,
        sort: bool,
    ) -> Iterator[tuple[str | tuple[str, ...], Any]]:
        if is_leaf is None and not sort:
            for path, value in _walk(self, (), include_nested, leaves_only):
                yield (path[0] if len(path) == 1 else path), value
            return
        keys: Iterable[str | tuple[str, ...]]
        if sort or is_leaf is None:
            keys = self.keys(include_nested, leaves_only, is_leaf, sort=sort)
        else:  # a node before the entries below it, as without is_leaf (the peer's order)
            paths = _walk_keys(self, (), include_nested, leaves_only, is_leaf, node_first=True)
            keys = (path[0] if len(path) == 1 else path for path in paths)
        for key in keys:
            node: Any = self
            for part in (key,) if type(key) is str else key:
                node = node._entry(part)
            yield key, node

    @staticmethod
    def _as_item(value: Value) -> Value:
        """An entry as ``items()`` and ``values()`` give it: a leaf node read (its
        ``_read()``), but a Python value's node as it is."""
        if isinstance(value, TensorCollection) and value._is_leaf_node:
            return value if value._is_value_node else value._read()
        return value

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` (a string or a nested tuple of strings) names an entry.

        Raises:
            UnravelKeyError: (a ``RuntimeError``) ``key`` is no key at all (``0``, a
                list, ``()``), as the peer refuses it.
        """
        try:
            path = unravel_key(key)
        except InvalidKeyError:
            msg = f"'in' takes a key, a NestedKey (a str or a non-empty tuple of str), got {key!r}"
            raise UnravelKeyError(msg) from None
        return _has_key(self, path)

    def set_non_tensor(self, key: Any, value: Any) -> Self:
        """Stores ``value`` under ``key`` as one Python value spanning the batch, whatever
        it is (a list stays one list); returns ``self``."""
        return ENGINE.set_non_tensor(self, key, value)

    def get_non_tensor(self, key: Any, default: Any = KeyNotFoundError) -> Any:
        """The Python value under ``key`` (a ``NonTensorStack`` as nested lists), or
        ``default`` when the key is absent (``KeyNotFoundError`` if none is given)."""
        return ENGINE.get_non_tensor(self, key, default)

    def _missing_key(self, key: object, *, popping: bool = False) -> KeyNotFoundError:
        node, depth = self._deepest_on(key)
        keys = node._key_names()
        where = f"{type(node).__name__} with keys {keys}"
        if depth:  # a nested key: where it stops, not the top-level keys
            assert isinstance(key, tuple)
            under = key[0] if depth == 1 else key[:depth]
            where += f" (the {type(node).__name__} under {under!r}, which has no {key[depth]!r})"
        if popping:
            return KeyNotFoundError(
                f"You are trying to pop key {key!r}, which was not found in {where}; pass a "
                "default (pop(key, None)) to get it when the key is absent"
            )
        return KeyNotFoundError(f"key {key!r} was not found in {where}")

    def _deepest_on(self, key: object) -> tuple[TensorCollection, int]:
        """The deepest nested collection that nested ``key`` reaches, and how many of its
        parts lead there (``(self, 0)`` for a plain key): where a missing key stops."""
        node: TensorCollection = self
        if type(key) is not tuple:
            return node, 0
        for depth, part in enumerate(key[:-1]):
            try:
                child = node._child(part) if part in node._key_names() else None
            except (KeyError, ValueError, RuntimeError):  # (a ragged entry of a lazy stack)
                child = None
            if child is None or child._is_leaf_node:
                return node, depth
            node = child
        return node, len(key) - 1

    def _given_twice(self, key: object) -> KeyNotFoundError:
        """The error for a key that an earlier one of the same call took (``separates``
        / ``split_keys``): the peer's KeyError, saying why it is missing."""
        if type(key) is tuple and len(key) == 1:
            key = key[0]
        return KeyNotFoundError(
            f"key {key!r} is given twice (or inside a key given before it): the first "
            "takes it, so the second finds nothing in "
            f"{type(self).__name__} (the peer's KeyError); give each key once, or pass "
            "strict=False"
        )


def _walk(
    collection: TensorCollection,
    prefix: tuple[str, ...],
    include_nested: bool,
    leaves_only: bool,
) -> Iterator[tuple[tuple[str, ...], Value]]:
    for key, value in collection._items():
        path = prefix + (key,)
        if isinstance(value, TensorCollection):
            if value._is_leaf_node and not value._is_value_node:
                yield path, value._read()
                continue
            if not leaves_only:
                yield path, value
            if include_nested:
                yield from _walk(value, path, include_nested, leaves_only)
        else:
            yield path, value


def _passes_through_a_tensor(target: TensorCollection, source: Any) -> bool:
    """Whether a nested key (a tuple) of the mapping ``source`` passes through a tensor
    of ``target``: a key ``update`` could never add."""
    if isinstance(source, TensorCollection):
        return False
    for key in source:
        if type(key) is not tuple:
            continue
        node: Any = target
        for part in key[:-1]:
            if not isinstance(node, TensorCollection) or part not in node.keys():
                break
            node = node.get(part)
            if isinstance(node, torch.Tensor):
                return True
    return False


def _is_default_leaf(cls: type) -> bool:
    """What ``leaves_only`` keeps by default: tensors (unbatched ones included), not
    collections nor Python values (public as ``tclass.default_is_leaf``)."""
    if not issubclass(cls, TensorCollection):
        return True
    return cls._is_leaf_node and not cls._is_value_node


_Key = str | tuple[str, ...]  # a key as keys() gives it


class KeysView(collections.abc.KeysView[_Key]):
    """The keys of a collection, live: it reflects later changes, like ``dict.keys()``.

    A set, as ``dict.keys()`` and the peer's ``keys()`` of a TensorDict: ``==`` another
    set of keys (a ``set``, ``dict.keys()``, another view) by its members, never a list;
    ``&``, ``|``, ``-``, ``<=`` and ``isdisjoint`` as for sets; ``reversed`` as
    ``dict.keys()``.
    """

    __slots__ = ("_collection", "_include_nested", "_leaves_only", "_is_leaf", "_sort")

    def __init__(
        self,
        collection: TensorCollection,
        include_nested: bool,
        leaves_only: bool,
        is_leaf: Callable[[type], bool] | None = None,
        sort: bool = False,
    ) -> None:
        self._collection = collection
        self._include_nested = include_nested
        self._leaves_only = leaves_only
        self._is_leaf = _is_default_leaf if is_leaf is None else is_leaf
        self._sort = sort

    def __iter__(self) -> Iterator[_Key]:
        if self._sort:
            yield from sorted(self._unsorted(), key=_sort_key)
        else:
            yield from self._unsorted()

    def _unsorted(self) -> Iterator[_Key]:
        if not (self._include_nested or self._leaves_only):
            yield from self._collection._key_names()
            return
        collection = self._collection
        paths = _walk_keys(
            collection,
            (),
            self._include_nested,
            self._leaves_only,
            self._is_leaf,
            node_first=storage_of(collection)._is_store,  # a file lists groups first
        )
        for path in paths:
            yield path[0] if len(path) == 1 else path

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, item: object) -> bool:
        """Whether ``item`` names an entry (a nested key only with ``include_nested``)
        that iterating the view lists: with ``leaves_only``, a leaf, as the peer's lazy
        stack (the peer's TensorDict lets ``leaves_only`` not filter membership).

        Raises:
            InvalidKeyError: (a ``TypeError``, as the peer raises) ``item`` is no key at
                all (``1``, ``None``, a list such as ``["n", "c"]``, ``()``): a list is
                not a nested key, so it is never silently ``False``.
        """
        try:
            key = unravel_key(item)
        except InvalidKeyError:
            msg = (
                f"`in keys()`: {item!r} ({type(item).__name__}) is not a key; membership "
                "checks take a string or a non-empty tuple of strings (a nested key)"
                + (
                    "; write a nested key as a tuple, " + repr(tuple(item))
                    if type(item) is list and item
                    else ""
                )
            )
            raise InvalidKeyError(msg) from None
        if type(key) is tuple and not self._include_nested:
            return False
        return _has_key(self._collection, key, self._is_leaf if self._leaves_only else None)

    def __reversed__(self) -> Iterator[_Key]:
        return reversed(list(self))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        # The peer's text, which names its key-view classes: printing td.keys() reads
        # the same in both libraries.
        if getattr(self._collection, "_is_lazy", False):
            return f"_LazyStackedTensorDictKeysView({tuple(self)!r})"
        if not (self._include_nested or self._leaves_only):
            return f"_StringKeys(dict_keys({list(self)!r}))"
        return (
            f"_TensorDictKeysView({list(self)!r},\n    include_nested={self._include_nested},"
            f"\n    leaves_only={self._leaves_only})"
        )


def _take_nested_batch_size(mine: Any, theirs: Any) -> bool:
    """Whether the nested collection ``mine`` took the batch size of ``theirs`` in place
    (both collections; a dense ``mine`` from a dense ``theirs``, a lazy stack from
    either): it is then kept by the update."""
    if not isinstance(mine, TensorCollection) or not isinstance(theirs, TensorCollection):
        return False
    mine, theirs = storage_of(mine), storage_of(theirs)
    if (theirs._is_lazy and not mine._is_lazy) or mine._is_leaf_node or mine.is_locked:
        return False
    mine._take_batch_size_of(theirs)
    return True


ToArg: TypeAlias = DeviceLike | torch.dtype | torch.Tensor | TensorCollection
"""A positional argument of a collection's ``to``: a device, a dtype, a tensor (its
device and dtype) or a collection (its device)."""
