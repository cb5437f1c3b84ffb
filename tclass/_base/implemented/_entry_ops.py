"""Entry-level methods every collection has: keys, indexed reads and writes, facts,
inference of batch size and device, filters, new collections shaped like this one, and
conversions (``copy``, ``numpy``, ``tolist``).

Written against the collection primitives and the public ``get`` / ``set`` / ``set_`` /
``select`` / ``exclude`` of each kind, so TensorDicts, records and lazy stacks answer
them alike (a lazy stack overrides those whose result should stay lazy). Python-value
nodes (``NonTensorData``, ``NonTensorStack``) and unbatched tensors count as leaves
here, as in the peer: ``is_empty`` and ``depth`` see them.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

import torch
from typing_extensions import Self, Unpack

from tclass._base.implemented._apply import names_from_nested
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._entry_walk import (
    _as_numpy,
    _byte_parts,
    _common_device,
    _constant,
    _depth,
    _element_dict,
    _fit_empty,
    _is_node,
    _leaf_paths,
    _nested_empty_size,
    _pairs,
    _ragged_rows,
    values_as_numpy,
    written_paths,
)
from tclass._base.implemented._grad_writes import refuse_grad_leaf_writes
from tclass._base.implemented._staged_writes import shares_memory
from tclass._core import _batch, _keys, _names
from tclass._core._device import DeviceLike, as_device
from tclass._core._linked_list import holds_none, link_nested, unlinked
from tclass._core._memmap import first_class_data
from tclass._core._names import DimName
from tclass._core._records import is_record, storage_of
from tclass._core._unbatched import UnbatchedTensor
from tclass.errors import (
    ArgumentError,
    ArgumentValueError,
    DimError,
    KeyConflictError,
    LockedError,
    locked_prefix,
)

if TYPE_CHECKING:
    from tclass._base._tensordict_base import TensorDictBase, Value

__all__ = ["EntryOps", "EntryWrites", "NewOptions", "written_paths"]

_MISSING: Any = object()
_NO_DEFAULT: Any = object()
_SPLIT_LOCKED = (
    "{0}: split_keys(inplace=True) would remove {1!r} from its "
    "members; unlock it first (unlock_()), or split without inplace"
)
# torch's own warning for ``Tensor.new_tensor(tensor)``, which the peer emits per entry.
_COPY_CONSTRUCT_MSG = (
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
    "or sourceTensor.detach().clone().requires_grad_(True), rather than "
    "collection.new_tensor(sourceTensor)"
)


class EntryWrites(dict[str, Any]):
    """Entries written at an index as they are (``holder[index] = EntryWrites(...)``):
    each value broadcast into its entry, where a plain dict is first read as the
    constructor reads it at the indexed batch size (a number a 0-dim tensor)."""


class NewOptions(TypedDict, total=False):
    """The peer's keywords of ``new_empty`` / ``new_zeros`` / ``new_ones`` / ``new_full``:
    ``dtype`` and ``device`` override every leaf's (default: each leaf's own, the
    collection's device); ``requires_grad``, ``layout``, ``pin_memory`` as torch's;
    ``empty_lazy`` (``new_empty`` only): a lazy stack becomes a lazy stack of empty
    TensorDicts (no entries) along the same stack dim, as the peer."""

    dtype: torch.dtype | None
    device: DeviceLike
    requires_grad: bool
    layout: torch.layout
    pin_memory: bool | None
    empty_lazy: bool


class EntryOps(TensorCollection):
    """flatten_keys, split_keys, get_at / set_at_, update_, bytes, depth, new_zeros,
    empty, tolist... over the entries."""

    __slots__ = ()

    # --- keys --------------------------------------------------------------------------------

    def flatten_keys(
        self,
        separator: str = ".",
        inplace: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> Self:
        """One level of entries, nested keys joined with ``separator`` (``"b.c"``); the
        tensors and Python values are shared (in new value nodes). ``is_leaf`` says which
        nested collections to keep whole.

        Raises:
            KeyConflictError: if two entries flatten to one key.
        """
        flat: dict[str, Value] = {}
        tops: list[str] = []
        for path, value in _leaf_paths(self, (), is_leaf):
            key = separator.join(path)
            if key in flat:
                msg = (
                    f"flatten_keys: Flattening keys in tensordict causes keys to collide: "
                    f"{path!r} and another entry both flatten to {key!r}; choose another "
                    f"separator than {separator!r}"
                )
                raise KeyConflictError(msg)
            if type(value) is not torch.Tensor and getattr(value, "_is_value_node", False):
                value = value.copy()  # a node of its own, not held by a locked source (the peer)
            flat[key] = value
            if len(path) == 1:
                tops.append(key)
        if inplace:  # as the peer: the top entries keep their places, the flattened follow
            flat = {**{key: flat[key] for key in tops}, **flat}
        out = self._new_like(flat, self.batch_size, self.device)
        out = self._named_like_self(out)
        if inplace:
            self._become(out)
            return self
        # ``with td.flatten_keys() as flat:`` writes flat's entries back on exit (the peer).
        out._call_on_exit(lambda: self.update(out.unflatten_keys(separator)))
        return out

    def unflatten_keys(self, separator: str = ".", inplace: bool = False) -> Self:
        """The inverse of :meth:`flatten_keys`: ``"b.c"`` becomes the nested ``("b", "c")``.

        Raises:
            KeyConflictError: if a key is both a value and a prefix of nested keys.
            ArgumentValueError: (a ``ValueError``, as the peer's) for an empty separator.
        """
        if not separator:
            msg = (
                f"unflatten_keys: the separator {separator!r} is empty; give the string that "
                "joins the parts of a flattened key (the default '.', as flatten_keys joins them)"
            )
            raise ArgumentValueError(msg)
        out = self.empty()
        # As the peer: the plain keys first, then the groups in the order their prefix first
        # appears; the nested collections already there keep their keys as they are.
        items = list(self._items())
        first: dict[str, int] = {}
        for key, _ in items:
            if separator in key:
                first.setdefault(key.split(separator, 1)[0], len(first))
        items.sort(key=lambda kv: first[kv[0].split(separator, 1)[0]] if separator in kv[0] else -1)
        for key, value in items:
            if isinstance(value, TensorCollection):
                value = value.clone(False)  # new nodes sharing the tensors, as the peer's
            path = tuple(key.split(separator)) if separator in key else (key,)
            if len(path) > 1 and out.get(path[:-1], _MISSING) is not _MISSING:
                parent = out.get(path[:-1])
                if not _is_node(parent):
                    msg = (
                        "unflatten_keys: Unflattening key(s) in tensordict will override an "
                        f"existing for unflattened key: {key!r} nests under {path[:-1]!r}, "
                        "which is a value; rename one of them first (rename_key_)"
                    )
                    raise KeyConflictError(msg)
            if path in out:
                msg = (
                    "unflatten_keys: Unflattening key(s) in tensordict will override an "
                    f"existing for unflattened key: two entries unflatten to {path!r}; rename "
                    "one of them first (rename_key_)"
                )
                raise KeyConflictError(msg)
            out.set(path, value)
        if inplace:
            self._become(out)
            return self
        out._call_on_exit(lambda: self.update(out.flatten_keys(separator)))
        return out

    @property
    def sorted_keys(self) -> list[str]:
        """The direct keys, sorted."""
        return sorted(self._key_names())

    def split_keys(
        self,
        *key_sets: Sequence[Any] | Callable[[tuple[str, ...], Any], bool],
        inplace: bool = False,
        default: Any = _NO_DEFAULT,
        strict: bool = True,
        reproduce_struct: bool = False,
    ) -> tuple[Self, ...]:
        """One collection per set of keys, then one with the keys left over. A set may be
        a predicate ``(key, value) -> bool``, asked of each tensor leaf (``key`` as a tuple)
        that an earlier set did not take.

        A missing key raises with ``strict`` (``default`` ignored, as the peer); without,
        ``default`` fills it (``None``, or none given: it is skipped). A key an earlier
        set took (or, in the same set, a key inside one before it) is missing, as in the
        peer, which moves each key out of the source; a key repeated as it is in one set is
        taken once, as the peer's dict of the set's keys does. ``reproduce_struct`` gives
        every part the nested structure of this collection, empty where it holds none of
        the keys; ``inplace`` removes the keys from this collection, which is then the last
        part. The other parts (and the last, without ``inplace``) are new, unlocked trees
        sharing this collection's leaves.

        Raises:
            KeyNotFoundError: for a missing key with ``strict``.
            KeyThroughTensorError: for a nested key through a tensor with ``strict`` (a
                ``KeyError`` and a ``ValueError``, as the peer's).
            LockedError: (a ``RuntimeError``) ``inplace`` of a locked collection, or of
                a locked lazy stack given a key twice (the peer's lock error).
        """
        parts: list[Self] = []
        taken: list[Any] = []
        source = self.copy()  # as the peer: the parts' nested collections are new, unlocked
        for keys in key_sets:
            part = self.empty(recurse=True) if reproduce_struct else self.empty()
            if callable(keys):
                keys = source._leaf_keys_where(keys, taken)
            for key in _each_once(keys):
                value = source.get(key, _MISSING)
                if value is _MISSING:
                    if strict:  # as the peer: strict ignores default
                        source.get(key)  # through a tensor: KeyThroughTensorError, as the peer
                        if key not in self:
                            raise self._missing_key(key)
                        if inplace and self._is_lazy and self.is_locked:
                            # the peer's lazy stack splits its locked members in place then
                            raise LockedError(
                                _SPLIT_LOCKED.format(locked_prefix(type(self).__name__), key)
                            )
                        raise self._given_twice(key)
                    if default is not _NO_DEFAULT and default is not None:
                        part.set(key, default)  # a None default skips the key, as the peer
                    continue
                part.update(source.select(key))
                taken.append(key)
                source = source.exclude(key)  # as the peer: a key is taken once
            parts.append(part)
        rest = self.exclude(*taken, inplace=True) if inplace else source.exclude(*taken)
        if not reproduce_struct:
            rest.filter_empty_()  # a nested collection emptied by the sets goes, as the peer
        parts.append(rest)
        return tuple(parts)

    def _leaf_keys_where(
        self, predicate: Callable[[tuple[str, ...], Any], bool], taken: Sequence[Any]
    ) -> list[Any]:
        """The keys of the tensor leaves outside ``taken`` for which ``predicate`` holds."""
        paths = [_keys.key_path(key) for key in taken]
        out = []
        for key, value in self.items(include_nested=True, leaves_only=True):
            path = _keys.key_path(key)
            if not isinstance(value, torch.Tensor) or any(path[: len(p)] == p for p in paths):
                continue
            if predicate(path, value):
                out.append(key)
        return out

    # --- reads and writes at an index --------------------------------------------------------

    def setdefault(self, key: Any, default: Any, inplace: bool = False) -> Any:
        """The entry ``key``; if there is none, ``default`` is stored there first."""
        value = self.get(key, _MISSING)
        if value is _MISSING or value is None:
            self.set(key, default, inplace=inplace)
            return self.get(key)
        return value

    def get_at(self, key: Any, index: Any, default: Any = _NO_DEFAULT) -> Any:
        """``self.get(key)[index]``, or ``default`` (``None`` if not given) when there
        is no entry ``key``; a nested key through a tensor is a ``KeyThroughTensorError``
        even with a default, as the peer's."""
        value = self.get(key, _MISSING)
        if value is _MISSING or value is None:
            if value is _MISSING and type(_keys.unravel_key(key)) is tuple:
                self.get(key)  # raises if the key passes through a tensor
            return None if default is _NO_DEFAULT else default
        try:
            return value[index]
        except IndexError as error:
            raise _batch.entry_index_error(
                f"get_at({key!r}, {index!r})", key, value, error
            ) from None

    def set_at_(self, key: Any, value: Any, index: Any, *, non_blocking: bool = False) -> Self:
        """Writes ``value`` into the elements ``index`` of the existing entry ``key``.

        Raises:
            KeyNotFoundError: if there is no entry ``key``.
        """
        owner, name = cast(Any, self)._holder_of(key)  # (a mixin of KeyOps)
        if owner is not self:  # written by what holds it (a record checks its fields)
            owner.set_at_(name, value, index, non_blocking=non_blocking)
            return self
        target = self.get(key, _MISSING)
        if target is _MISSING or target is None:
            raise self._missing_key(key)
        if isinstance(target, TensorCollection) and target._is_value_node:
            path = _keys.key_path(key)  # written through its holder, as td[index] = {...}
            holder = self if len(path) == 1 else self.get(path[:-1])
            holder[index] = EntryWrites({path[-1]: value})
            return self
        if isinstance(target, TensorCollection) and _walked(value):
            # each leaf checked by its full key first: an error names ("n", "z"), its shapes
            at = _leaf_index(index, target)
            if at is not None:
                path = _keys.key_path(key)
                self._check_writes_at([(p, v, at) for p, v in _pairs(value, {}, path, True)])
        if isinstance(value, (list, tuple)) or (
            hasattr(value, "__array__") and not isinstance(value, torch.Tensor)
        ):
            value = torch.as_tensor(value)  # a list or numpy array, as set() and the peer take one
        try:
            target[index] = value
        except NotImplementedError:  # a dtype torch cannot index_put: torch's own error
            raise
        except IndexError as error:
            raise _batch.entry_index_error(
                f"set_at_({key!r}, value, {index!r})", key, target, error
            ) from None
        except RuntimeError as error:  # torch's words, with the key and shapes
            if not shares_memory(target, value):
                raise _batch.entry_write_error(key, value, index, target, error) from error
            try:  # torch refused a value over the entry's own memory: read it first
                target[index] = value.clone()
            except RuntimeError as again:
                raise _batch.entry_write_error(key, value, index, target, again) from again
        return self

    def update_(
        self,
        input_dict_or_td: Mapping[Any, Any] | TensorCollection | None = None,
        clone: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Self:
        """Copies every value into the existing entry of its key, in place (locked and
        memory-mapped collections included); nested mappings reach nested entries. A
        ``None`` value in the mapping leaves its entry as it is, as the peer's.

        Raises:
            KeyNotFoundError: for a key this collection does not have.
        """
        if input_dict_or_td is self and not kwargs:  # nothing to copy, as the peer
            return self
        allowed = None if keys_to_update is None else [_keys.key_path(k) for k in keys_to_update]
        pairs = [
            (path, value)
            for path, value in _pairs(input_dict_or_td, kwargs, (), whole_lazy=True)
            if allowed is None or any(path[: len(a)] == a for a in allowed)
        ]
        for path, _ in pairs:
            if path not in self:  # (not read: a lazy stack's members may differ in shape)
                raise self._missing_key(path[0] if len(path) == 1 else path)
        # None in the mapping is no value given: the entry is left as it is, as the peer's
        pairs = [(p, v) for p, v in pairs if v is not None or p[0] in kwargs]
        self._check_nested_writes(pairs, ..., "update_")
        self._check_writes_at([(path, value, ...) for path, value in pairs])
        refuse_grad_leaf_writes(self, written_paths(pairs))
        for path, value in pairs:
            if isinstance(value, TensorCollection) and value._is_lazy:
                target = self.get(path)
                if isinstance(target, TensorCollection):
                    target.update_(value, non_blocking=non_blocking)  # member by member
                    continue
            self.set_(path, value)
        return self

    def update_at_(
        self,
        input_dict_or_td: Mapping[Any, Any] | TensorCollection,
        idx: Any,
        clone: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[Any] | None = None,
    ) -> Self:
        """Writes every value into the elements ``idx`` of the existing entry of its key
        (an ``UnbatchedTensor`` entry, which has no batch dims, whole: as ``td[idx] =
        rows`` and the peer write it).

        Raises:
            KeyNotFoundError: for a key this collection does not have.
        """
        allowed = None if keys_to_update is None else [_keys.key_path(k) for k in keys_to_update]
        pairs = [
            (path, value)
            for path, value in _pairs(input_dict_or_td, {}, (), whole_lazy=True)
            if allowed is None or any(path[: len(a)] == a for a in allowed)
        ]
        self._check_nested_writes(pairs, idx, "update_at_")
        # an UnbatchedTensor entry has no batch dims: written whole, as td[idx] = rows
        whole = [self.entry_class(path) is UnbatchedTensor for path, _ in pairs]  # (no read)
        writes = [
            (path, value, ... if alone else self._row_index(path, idx, input_dict_or_td))
            for (path, value), alone in zip(pairs, whole, strict=True)
        ]
        self._make_writes_at(writes, whole)
        return self

    def _make_writes_at(
        self, writes: Sequence[tuple[tuple[str, ...], Any, Any]], whole: Sequence[bool]
    ) -> None:
        """``update_at_``'s ``(path, value, index)`` writes: every one checked
        (:meth:`_check_writes_at`) before the first is made, then each made (``whole``:
        an entry without batch dims, by ``set_``). A collection whose check reads what it
        writes (a file view's rows) makes the writes from that one check instead."""
        self._check_writes_at(writes)
        for (path, value, index), alone in zip(writes, whole, strict=True):
            if alone:
                self.set_(path, value)
            else:
                self.set_at_(path, value, index)

    def _check_writes_at(self, writes: Sequence[tuple[tuple[str, ...], Any, Any]]) -> None:
        """Checks every ``(path, value, index)`` write of ``update_at_`` (``update_``'s at
        ``...``) before the first is made, so that one refused leaves every entry as it
        was (README: indexed writes are all or nothing; the peer writes the entries
        before it); each kind of collection checks its own way (each write checks
        again)."""

    def _row_index(self, path: tuple[str, ...], idx: Any, rows: Any) -> Any:
        """The index ``update_at_`` writes the leaf ``path`` at. The peer writes a nested
        collection of ``rows`` (a collection) as ``nested[idx] = rows[key]``: its ``...``
        covers the nested collection's batch dims (spelled out here); a leaf of this
        collection, or rows given as a mapping, read ``idx`` as it is (``...`` then
        reaches the leaf's feature dims too, as ``set_at_``)."""
        if len(path) == 1 or not isinstance(rows, TensorCollection):
            return idx
        if type(idx) is not tuple or not any(item is Ellipsis for item in idx):
            return idx  # (the same elements either way)
        nested = self.get(path[0], None)
        at = _leaf_index(idx, nested) if isinstance(nested, TensorCollection) else None
        return idx if at is None else at

    def _check_nested_writes(
        self, pairs: Sequence[tuple[tuple[str, ...], Any]], index: Any, op: str
    ) -> None:
        """Checks the values ``pairs`` writes into records (this one or nested ones) at
        ``index``, each record's together, before the first is written (each write
        checks again)."""
        groups: dict[int, tuple[TensorCollection, dict[str, Any]]] = {}
        whole = is_record(self)
        for path, value in pairs:
            if len(path) == 1 and not whole:
                continue  # an entry of this collection: no record holds it
            holder = cast(Any, self)._holder(path)  # (a mixin of KeyOps)
            if holder is not None and is_record(holder):
                groups.setdefault(id(holder), (holder, {}))[1][path[-1]] = value
        for holder, values in groups.values():
            holder._check_in_place(values, index, op)

    # --- facts -------------------------------------------------------------------------------

    def bytes(self, *, count_duplicates: bool = True) -> int:
        """The bytes of every tensor (nested ones included), as the peer counts them: a
        leaf's gradient too, and a jagged nested tensor's values, offsets and lengths;
        with ``count_duplicates`` false, memory seen under several keys counts once."""
        seen: set[tuple[int, int]] = set()
        total = 0
        for leaf in self._tensor_leaves():
            for tensor in _byte_parts(leaf):
                size = tensor.numel() * tensor.element_size()
                if not count_duplicates:
                    mark = (tensor.data_ptr(), size)
                    if mark in seen:
                        continue
                    seen.add(mark)
                total += size
        return total

    def _tensor_leaves(self) -> Iterator[torch.Tensor]:
        """Every tensor held, without stacking (a lazy stack yields its members'; a
        first-class dim tensor, what it reads)."""
        items = cast("Iterator[tuple[str, object]]", self._items())  # (first-class: neither)
        for _, value in items:
            if isinstance(value, torch.Tensor):
                yield value
            elif isinstance(value, TensorCollection):
                yield from value._tensor_leaves()
            else:
                data = first_class_data(value)
                if data is not None:
                    yield data

    @property
    def depth(self) -> int:
        """How deep the nesting goes: 0 when every leaf is a direct entry."""
        return max(_depth(self), 0)

    def is_empty(self) -> bool:
        """Whether there is no leaf anywhere: no tensor and no Python value."""
        for _, value in self._items():
            if not _is_node(value) or not value.is_empty():
                return False
        return True

    # --- inference ---------------------------------------------------------------------------

    def auto_batch_size_(
        self, batch_dims: int | None = None, keep_compliant_size: bool = False
    ) -> Self:
        """Sets the batch size to the largest leading shape every entry shares (at most
        ``batch_dims`` dims), nested collections first (a lazy stack keeps its batch size,
        as the peer leaves it); with ``keep_compliant_size`` and ``batch_dims``, a nested
        collection (not those below it) that has ``batch_dims`` dims or more keeps its
        batch size, as the peer's. A Python value counts
        with its batch size (none: it does not), one shared value first cut to
        ``batch_dims`` dims (without ``keep_compliant_size``), as the peer's; unbatched
        tensors do not count: a collection holding nothing else (or nothing) keeps its
        batch size, cut to ``batch_dims`` dims if given, as the peer's."""
        shapes: list[torch.Size] = []
        empty: list[TensorDictBase] = []  # nested collections without a leaf: they follow
        for _, value in self._items():
            if _is_node(value):
                lazy = storage_of(value)._is_lazy
                keep = keep_compliant_size and batch_dims is not None
                keep = keep and value.batch_dims >= (batch_dims or 0)
                if not keep and not lazy:  # lazy: as the peer, kept
                    value.auto_batch_size_(batch_dims)  # (keep_compliant_size: one level)
                if not lazy and value.is_empty():
                    empty.append(value)
                    continue
                shapes.append(value.batch_size)
            elif isinstance(value, TensorCollection) and value._is_value_node:
                if batch_dims and not keep_compliant_size and value.batch_dims > batch_dims:
                    value._cut_batch_dims(batch_dims)  # one shared value's (not a stack's)
                if value.batch_dims:
                    shapes.append(value.batch_size)
            elif isinstance(value, torch.Tensor) and value.__class__ is not UnbatchedTensor:
                shapes.append(value.shape)
        if not shapes:  # only empty collections: their batch sizes count, as the peer's
            shapes = [value.batch_size for value in empty]
            empty = []
        if not shapes:  # nothing to infer a batch size from: cut to batch_dims, as the peer
            if batch_dims and self.batch_dims > batch_dims:
                self.batch_size = self.batch_size[:batch_dims]  # type: ignore[misc]
            return self
        common = _batch.common_prefix(shapes)
        if batch_dims is not None:
            common = common[:batch_dims]
        for value in empty:  # (the peer skips them after the first entry only)
            if value.batch_size[: len(common)] != common:
                _fit_empty(value, common)  # (the peer's would not fit in the new batch size)
        if common != self.batch_size:
            self.batch_size = common  # type: ignore[misc]
        return self

    def auto_device_(self) -> Self:
        """Sets the device to the one every tensor (nested ones included) is on, and the
        same in every nested collection and Python value, as the peer; ``None`` (here and
        nested) if they are on several or there is no tensor; a record over a lazy stack
        or a file sets its storage's (the members' too), as the peer's."""
        storage = storage_of(self)
        if storage is not self and _sets_its_own_device(storage):
            storage.auto_device_()
            return self
        device = _common_device(self)
        self.clear_device_()
        if device is not None:
            _record_device(self, device)
        return self

    # --- filters -----------------------------------------------------------------------------

    def filter_non_tensor_data(self) -> Self:
        """A copy without Python values (nested collections filtered too)."""
        values: dict[str, Value] = {}
        for key, value in self._items():
            if isinstance(value, TensorCollection):
                if value._is_value_node:
                    continue
                if not value._is_leaf_node:
                    value = value.filter_non_tensor_data()
            values[key] = value
        names = names_from_nested(self, values, self.batch_dims)  # (as the peer's)
        out = self._named_like_self(self._new_like(values, self.batch_size, self.device))
        if names is not None:
            out._rename_all(names)
        return out

    def filter_empty_(self) -> Self:
        """Removes the nested collections that hold no leaf, in place (a lazy stack's
        tensors are not read: they may differ in shape)."""
        for key in list(self._key_names()):
            value = self._child(key)
            if _is_node(value):
                value.filter_empty_()
                if value.is_empty():
                    self.del_(key)
        return self

    # --- new collections shaped like this one ---------------------------------------------------

    def new_empty(self, *size: int | Sequence[int], **options: Unpack[NewOptions]) -> Self:
        """A collection of batch size ``size`` with this one's keys, dtypes and feature
        dims, uninitialised (``dtype`` / ``device`` override every leaf's); with
        ``empty_lazy=True``, lazy stacks as lazy stacks of empty members."""
        return self._new_filled("empty", size, None, options)

    def new_zeros(self, *size: int | Sequence[int], **options: Unpack[NewOptions]) -> Self:
        """Like :meth:`new_empty`, filled with zeros."""
        return self._new_filled("zeros", size, None, options)

    def new_ones(self, *size: int | Sequence[int], **options: Unpack[NewOptions]) -> Self:
        """Like :meth:`new_empty`, filled with ones."""
        return self._new_filled("ones", size, None, options)

    def new_full(self, size: Sequence[int], fill_value: Any, **options: Unpack[NewOptions]) -> Self:
        """Like :meth:`new_empty`, filled with ``fill_value``."""
        return self._new_filled("full", (size,), fill_value, options)

    def _new_filled(self, kind: str, size: tuple[Any, ...], fill: Any, options: NewOptions) -> Self:
        shape = torch.Size(_batch.shape_args(size, f"new_{kind}")) if size else torch.Size([])
        device = options.get("device", _NO_DEFAULT)
        target = self.device if device is _NO_DEFAULT else as_device(device)
        dtype = options.get("dtype")
        nb = self.batch_dims
        if kind == "empty" and options.get("empty_lazy") and self._is_lazy and shape:
            return self._empty_members(shape, target)  # type: ignore[attr-defined,no-any-return]

        def make(value: Any) -> Any:
            if isinstance(value, TensorCollection):
                nested = (shape + value.batch_size[nb:],)
                return value._new_filled(kind, nested, fill, options)  # type: ignore[attr-defined]
            made: dict[str, Any] = {
                "dtype": value.dtype if dtype is None else dtype,
                "device": value.device if target is None else target,
                "requires_grad": options.get("requires_grad", False),
                "layout": options.get("layout", torch.strided),
                "pin_memory": bool(options.get("pin_memory")),
            }
            full = shape + value.shape[nb:]
            if kind == "full":
                return torch.full(full, fill, **made)
            return getattr(torch, kind)(full, **made)

        out = self._map_batch(make, shape, target)
        names = _names.right_aligned(self._dim_names, len(shape))
        if names is not None:
            out._assign_names(names)
        return out

    def new_tensor(
        self,
        data: Any,
        *,
        dtype: torch.dtype | None = None,
        device: DeviceLike = _NO_DEFAULT,
        requires_grad: bool = False,
        pin_memory: bool | None = None,
    ) -> Self:
        """A collection with this one's keys whose every tensor is ``data`` (a tensor,
        array or number; a collection pairs its entries by key) in that tensor's dtype;
        the batch size is ``data``'s shape. The result is on ``device``, by default on
        ``data``'s device (a number or list: the CPU), as the peer; its batch dims
        (``data``'s) are unnamed, nested ones too, as the peer's, but for a lazy stack's
        result with as many batch dims as the stack (a record's over one too), which keeps its
        names (and so do its nested collections' first dims), as the peer's
        ``apply(batch_size=)``. An
        ``UnbatchedTensor`` is kept as it is, as the peer keeps it. A tensor or a
        collection given as ``data`` is copied with torch's ``UserWarning``, as
        ``Tensor.new_tensor`` warns (and the peer, which calls it per entry)."""
        if isinstance(data, (torch.Tensor, TensorCollection)):
            warnings.warn(_COPY_CONSTRUCT_MSG, UserWarning, stacklevel=2)
        return self._new_tensor_of(data, dtype, device, requires_grad)

    def _new_tensor_of(
        self, data: Any, dtype: torch.dtype | None, device: DeviceLike, requires_grad: bool
    ) -> Self:
        """``new_tensor`` without its warning (nested collections are given tensors)."""
        if isinstance(data, TensorCollection):
            batch = data.batch_size
            source: Callable[[str], Any] = data._entry
        else:
            data = torch.as_tensor(data)
            batch = data.shape
            source = _constant(data)
        target = data.device if device is _NO_DEFAULT else as_device(device)
        values: dict[str, Value] = {}
        for key, value in self._items():
            if value.__class__ is UnbatchedTensor:  # no batch dims: kept, as the peer
                values[key] = value
                continue
            piece = source(key)
            if isinstance(value, TensorCollection):
                if value._is_leaf_node:  # Python values: as new_empty keeps them
                    values[key] = value._new_filled("empty", (batch,), None, {})
                    continue
                values[key] = value._new_tensor_of(piece, dtype, target, requires_grad)
                continue
            tensor = (
                torch.as_tensor(piece)
                .detach()
                .to(
                    dtype=value.dtype if dtype is None else dtype,
                    device=value.device if target is None else target,
                    copy=True,
                )
            )
            values[key] = tensor.requires_grad_(requires_grad) if requires_grad else tensor
        out = self._new_like(values, torch.Size(batch), target)
        lazy = storage_of(self)._is_lazy  # (a record over a lazy stack too, as the peer's)
        if lazy and len(batch) == self.batch_dims and self._dim_names is not None:
            # a lazy stack's names fit a batch of as many dims: kept, as the peer's (and
            # as its ``apply(batch_size=)`` keeps them), nested collections' first dims too
            out._rename_all(self._dim_names)
        elif out._dim_names is not None:  # the batch dims are data's: unnamed, as the peer
            out._assign_names(None)
        return out

    def empty(
        self,
        recurse: bool = False,
        *,
        batch_size: _batch.BatchSizeLike = None,
        device: DeviceLike = _NO_DEFAULT,
        names: Sequence[DimName] | None = _NO_DEFAULT,
    ) -> Self:
        """A collection like this one (batch size, device, names) with no tensors; with
        ``recurse``, the nested collections (and Python values) are kept, emptied. With
        another ``batch_size`` (and no ``names``), the first dims keep their names, as the
        peer's batch-size setter keeps them; new dims are unnamed. ``names=None`` gives
        unnamed dims (the peer's ``TensorDict.empty``, and ``apply(names=None)``)."""
        size = self.batch_size if batch_size is None else _batch.as_batch_size(batch_size)
        target = self.device if device is _NO_DEFAULT else as_device(device)
        values: dict[str, Value] = {}
        if recurse:
            for key, value in self._items():
                if isinstance(value, TensorCollection) and not value._is_leaf_node:
                    nested = _nested_empty_size(key, value.batch_size, size)
                    values[key] = value.empty(recurse=True, device=device, batch_size=nested)
                elif isinstance(value, TensorCollection) and value._is_value_node:
                    values[key] = value
        out = self._new_like(values, size, target)
        if names is None:
            out._rename_all(None)
        elif names is not _NO_DEFAULT:
            out._assign_names(_names.as_names(names, len(size)))
        elif self._dim_names is not None:  # the names of the dims kept, as the peer
            kept = tuple(self._dim_names[: len(size)])
            out._assign_names(kept + (None,) * (len(size) - len(kept)))
        return out

    def copy(self) -> Self:
        """A shallow copy, ``copy.copy(self)``: new collections all the way down, sharing
        the tensors (a node of Python values copies its containers, as the peer's)."""
        return copy.copy(self)

    # --- conversions -------------------------------------------------------------------------

    def numpy(self) -> dict[str, Any]:
        """The entries as nested dicts of numpy arrays sharing memory with the tensors
        (``Tensor.numpy()``: a tensor that requires gradients or is not on the CPU raises
        torch's error; ``detach()`` / ``cpu()`` first); Python values as they are, a
        nested tensor as a tuple of arrays; a record's absent fields and ``None`` values
        left out (the peer's ``to_dict(retain_none=False)``)."""
        out: dict[str, Any] = {}
        for key, value in self._items():
            if not isinstance(value, TensorCollection):
                out[key] = _as_numpy(value)
            elif value._is_leaf_node:  # a Python value node
                read = value._read()
                if isinstance(read, torch.Tensor):
                    out[key] = _as_numpy(read)
                elif not holds_none(read, value.batch_size.numel(), getattr(value, "data", read)):
                    out[key] = values_as_numpy(unlinked(read))  # plain lists, tensors as arrays
            else:
                out[key] = value.numpy()
        return out

    def tolist(
        self,
        *,
        convert_nodes: bool = True,
        convert_tensors: bool | Literal["numpy"] = False,
        tolist_first: bool = False,
        as_linked_list: bool = False,
    ) -> Any:
        """The batch as nested lists (one level per batch dim) of per-element dicts of
        the entries; with ``convert_tensors`` the tensors become Python numbers and lists
        (``"numpy"``: arrays); with ``convert_nodes=False`` the elements stay collections;
        with ``tolist_first`` a nested collection with batch dims of its own becomes a
        list too (of dicts) rather than a dict of tensors.

        Raises:
            ArgumentError: (a ``TypeError``) ``convert_tensors`` without ``convert_nodes``.

        With ``as_linked_list=True`` the lists are :class:`~tclass.utils.LinkedList`
        objects: assigning an item (``out[i] = {...}``) writes it into the collection.
        """
        if convert_tensors and not convert_nodes:
            msg = (
                "tolist(convert_tensors=...) converts the tensors of the per-element dicts, "
                "which convert_nodes=False does not make; pass convert_nodes=True"
            )
            raise ArgumentError(msg)
        if as_linked_list:
            plain = self.tolist(
                convert_nodes=convert_nodes, convert_tensors=convert_tensors,
                tolist_first=tolist_first,
            )  # fmt: skip
            return link_nested(plain, self.batch_dims, self)
        if self.batch_size:
            rows = self.unbind(0) if self.batch_size[0] != -1 else _ragged_rows(self)
            return [
                child.tolist(
                    convert_nodes=convert_nodes,
                    convert_tensors=convert_tensors,
                    tolist_first=tolist_first,
                )
                for child in rows
            ]
        if not convert_nodes:
            return self
        return _element_dict(self, convert_tensors, tolist_first)


def _each_once(keys: Iterable[Any]) -> list[Any]:
    """A key set's keys in order, a key repeated as it is (``["a", "a"]``) once, as the
    peer takes a set as a dict of its keys (``"a"`` and ``("a",)`` stay two keys; keys
    that are not hashable, which ``get`` refuses, are left as given)."""
    keys = list(keys)
    try:
        return list(dict.fromkeys(keys))
    except TypeError:
        return keys


def _walked(value: Any) -> bool:
    """Whether ``set_at_`` of a collection writes ``value`` leaf by leaf (a mapping or a
    collection of entries; not a lazy stack, whose members may differ)."""
    if isinstance(value, TensorCollection):
        return not value._is_lazy and not value._is_leaf_node
    return isinstance(value, Mapping)


def _leaf_index(index: Any, collection: TensorCollection) -> Any:
    """The index each leaf of ``collection`` is written at by ``collection[index] =
    rows``: ``index`` itself, or its ``...`` spelled out over the batch dims (which it
    covers there, where a leaf's own ``...`` would reach its feature dims too); None
    where that cannot be told (a lazy stack's ragged dim, more dims than the batch: the
    write itself says so)."""
    if index is not Ellipsis and (
        type(index) is not tuple or not any(i is Ellipsis for i in index)
    ):
        return index
    if -1 in collection.batch_size:
        return None
    try:
        return _batch.convert_ellipsis_to_idx(index, collection.batch_size)
    except DimError:
        return None


def _record_device(collection: TensorCollection, device: torch.device) -> None:
    """Records ``device`` here and in every nested collection and Python value (data is
    not moved); a nested lazy stack or file sets its own (its ``auto_device_``)."""
    collection._assign_device(device)
    for _, value in collection._items():
        if not isinstance(value, TensorCollection):
            continue
        if _sets_its_own_device(storage_of(value)):
            value.auto_device_()
        else:
            _record_device(value, device)


def _sets_its_own_device(storage: Any) -> bool:
    """Whether ``storage`` (a lazy stack, a file) has an ``auto_device_`` of its own."""
    return isinstance(storage, EntryOps) and type(storage).auto_device_ is not EntryOps.auto_device_
