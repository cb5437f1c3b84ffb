"""Methods that read facts about entries by key, or move, add and remove entries: the
peer's ``entry_class``, ``get_item_shape``, ``is_non_tensor``, ``non_tensor_items``,
``param_count``, ``popitem``, ``clear``, ``replace``, ``rename_keys``, ``separates``,
``create_nested``, ``cat_tensors`` / ``stack_tensors`` and ``copy_at_``.

Written against the public ``get`` / ``set`` / ``set_at_`` / ``select`` / ``exclude`` /
``del_`` of each kind and two per-key primitives (``_entry_class``, ``_item_shape``) that
a lazy stack answers from its members without stacking them; so TensorDicts, records
(whose field rules apply to every write) and lazy stacks answer them alike.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import torch
from typing_extensions import Self

from tclass._base.implemented._collection import TensorCollection
from tclass._core._batch import convert_ellipsis_to_idx
from tclass._core._keys import key_path, lies_inside, unravel_key
from tclass._core._records import is_record, storage_of
from tclass.errors import (
    IgnoredValuesWarning,
    KeyConflictError,
    KeyNotFoundError,
    KeyRenameError,
    KeyThroughTensorError,
    LockedError,
    ShapeError,
    StackError,
    UpdateArgumentError,
    locked_prefix,
)

if TYPE_CHECKING:
    from tclass._base._tensordict_base import TensorDictBase

__all__ = ["KeyOps", "renamed"]

_MISSING: Any = object()
_NO_DEFAULT: Any = object()
Path = tuple[str, ...]
C = TypeVar("C", bound="KeyOps")


class KeyOps(TensorCollection):
    """entry_class, get_item_shape, is_non_tensor, non_tensor_items, param_count, popitem,
    clear, replace, rename_keys, separates, create_nested, cat_tensors, stack_tensors,
    copy_at_."""

    __slots__ = ()

    if TYPE_CHECKING:

        def copy(self) -> Self: ...
        def _renamed(self, key_transform: Callable[[str], str]) -> Self: ...
        def update_at_(
            self,
            input_dict_or_td: Mapping[Any, Any] | TensorCollection,
            idx: Any,
            clone: bool = False,
            *,
            non_blocking: bool = False,
            keys_to_update: Sequence[Any] | None = None,
        ) -> Self: ...
        def set_at_(
            self, key: Any, value: Any, index: Any, *, non_blocking: bool = False
        ) -> Self: ...
        def pop(self, key: Any, default: Any = ...) -> Any: ...

    # --- per-key primitives (a lazy stack answers them from its members) -------------------

    def _entry_class(self, key: str) -> type:
        """The class of the direct entry ``key`` as stored."""
        return type(self._entry(key))

    def _item_shape(self, key: str) -> torch.Size:
        """The shape of the direct entry ``key`` (a collection's: its batch size)."""
        value = self._entry(key)
        return value.batch_size if isinstance(value, TensorCollection) else value.shape

    def _holder_of(self, key: Any) -> tuple[KeyOps, str]:
        """The collection holding the entry at ``key``, and its name there.

        Raises:
            KeyNotFoundError: there is no entry at ``key``.
        """
        path = key_path(key)
        holder = self._holder(path)
        if holder is None or not holder._has_entry(path[-1]):
            raise self._absent_key(path)
        return holder, path[-1]

    def _absent_key(self, path: Path) -> KeyNotFoundError | KeyThroughTensorError:
        """The error for ``path``, which has no entry: ``KeyThroughTensorError`` (a
        ``ValueError`` too, as the peer raises) where it runs through a tensor."""
        node: TensorCollection = self
        for depth, part in enumerate(path[:-1], 1):
            if not node._has_entry(part):
                break
            if node._child_type(part) is None:
                msg = (
                    f"key {path!r} not found: {path[:depth]!r} is a tensor, not a "
                    f"collection, so it has no entry {path[depth]!r}"
                )
                return KeyThroughTensorError(msg)
            child = node._child(part)
            if child is None or child._is_leaf_node:
                break
            node = child
        return self._missing_key(path[0] if len(path) == 1 else path)

    def _holder(self, path: Path) -> KeyOps | None:
        """The collection holding the entry ``path`` (``None`` if the path breaks off)."""
        node: Any = self
        for part in path[:-1]:
            if not node._has_entry(part):
                return None
            child = node._child(part)
            if child is None or child._is_leaf_node:
                return None
            node = child
        return node if node._has_entry(path[-1]) else None

    # --- facts -------------------------------------------------------------------------------

    def entry_class(self, key: Any) -> type:
        """The class of the entry at ``key`` as stored, without reading a lazy stack's
        tensors: ``torch.Tensor`` (or its subclass), a collection class,
        ``NonTensorData`` / ``NonTensorStack`` for a Python value (also in a record,
        whose ``get`` gives the value itself); ``type(None)`` when there is no entry
        there, as the peer."""
        path = key_path(key)
        holder = self._holder(path)
        if holder is None:
            return self._missing_entry_class(key)
        return holder._entry_class(path[-1])

    def _missing_entry_class(self, key: Any) -> type:
        """``entry_class`` of a key with no entry: ``type(None)``, as the peer's (the type
        of its ``get``'s ``None``); a file's raises (see ``RowsInMemory``).

        Raises:
            KeyThroughTensorError: (a ``KeyError`` and the peer's ``ValueError``) the key
                runs through a tensor (``("a", "x")`` where ``"a"`` is a tensor), as
                ``get`` refuses it; through a Python value it is ``type(None)``, as the
                peer's.
        """
        error = self._absent_key(key_path(key))
        if isinstance(error, KeyThroughTensorError):
            raise error
        return type(None)

    def get_item_shape(self, key: Any) -> torch.Size:
        """The shape of the entry at ``key`` (a collection's or Python value's: its batch
        size), without stacking a lazy stack's tensors: a dim whose size differs between
        its members is ``-1``, as the peer.

        Raises:
            KeyNotFoundError: (a ``KeyError``) if there is no entry at ``key``.
        """
        holder, name = self._holder_of(key)
        return holder._item_shape(name)

    def is_non_tensor(self, key: Any) -> bool:
        """Whether the entry at ``key`` holds Python values (``NonTensorData`` or
        ``NonTensorStack``), as stored: also for a record, whose ``get`` gives the value.

        Raises:
            KeyNotFoundError: (a ``KeyError``) if there is no entry at ``key``.
        """
        holder, name = self._holder_of(key)
        cls = holder._entry_class(name)
        return issubclass(cls, TensorCollection) and cls._is_value_node

    def non_tensor_items(self, include_nested: bool = False) -> tuple[tuple[Any, Any], ...]:
        """The ``(key, node)`` pairs of the Python values (each a ``NonTensorData`` or
        ``NonTensorStack``), with those of nested collections under nested keys if
        ``include_nested``; in key order, a collection's own values first."""
        return tuple(
            (path[0] if len(path) == 1 else path, node)
            for path, node in _value_nodes(self, (), include_nested)
        )

    def param_count(self, *, count_duplicates: bool = True) -> int:
        """The number of elements of every tensor (nested included, Python values not
        counted); with ``count_duplicates=False``, a tensor stored under several keys
        counts once (two views of one tensor still count twice, as in the peer)."""
        total = 0
        seen: set[int] = set()
        for leaf in self._tensor_leaves():
            if not count_duplicates:
                if id(leaf) in seen:
                    continue
                seen.add(id(leaf))
            total += leaf.numel()
        return total

    # --- removing entries --------------------------------------------------------------------

    def popitem(self) -> tuple[str, Any]:
        """Removes the last entry and returns ``(key, value)``, as ``dict.popitem``.

        Raises:
            KeyNotFoundError: (a ``KeyError``) if there is no entry.
            LockedError: (a ``RuntimeError``) if the collection is locked.
        """
        if self.is_locked:  # checked first, as the peer: a locked empty one raises this
            raise _locked("remove an entry from", self)
        keys = self._key_names()
        if not keys:
            msg = f"popitem(): the {type(self).__name__} holds no entry"
            raise KeyNotFoundError(msg)
        key = keys[-1]
        return key, self.pop(key)

    def clear(self) -> Self:
        """Removes every entry (a record's fields then read ``None``); returns ``self``.

        Raises:
            LockedError: (a ``RuntimeError``) if the collection is locked.
        """
        if self.is_locked:
            raise _locked("clear", self)
        for key in self._key_names():
            self.del_(key)
        return self

    def separates(
        self,
        *keys: Any,
        default: Any = _NO_DEFAULT,
        strict: bool = True,
        filter_empty: bool = True,
    ) -> Self:
        """Removes the entries at ``keys`` from this collection and returns them in a new
        one, shared, not copied (with the nested collections that held them, and this
        collection's batch size): ``split_keys`` in place, returning the separated part.
        As in the peer, the Python values (``NonTensorData``) stay here and are also
        given to the result, under the same keys.

        Args:
            keys: the keys to remove (nested keys allowed).
            default: given, a missing key does not raise and the result holds
                ``default`` there.
            strict: ``False``: a missing key gives the result ``default`` there, or a
                ``None`` Python value without a default.
            filter_empty: also remove the nested collections the removal leaves empty.

        Raises:
            KeyNotFoundError: a key is missing, or given twice, with ``strict`` and no
                ``default``.
            LockedError: (a ``RuntimeError``) the collection is locked; nothing changed.
        """
        present: list[Any] = []
        missing: list[Any] = []
        repeated: list[Any] = []  # a key given twice (or after a key holding it) is gone
        for key in keys:  # the second time, as in the peer
            path = unravel_key(key)
            if any(lies_inside(path, done) for done in present):
                repeated.append(path)
                continue
            (present if path in self else missing).append(path)
        locked = bool(present) and self.is_locked
        if locked and present[0] == unravel_key(keys[0]):
            raise _locked("remove entries from", self)  # the first key decides, as the peer
        if missing and strict and default is _NO_DEFAULT:
            raise self._missing_key(missing[0])
        if repeated and strict and default is _NO_DEFAULT:
            raise self._given_twice(repeated[0])
        if locked:
            raise _locked("remove entries from", self)
        # As the peer: the empty tree of this collection, with its Python values (they
        # go with both parts), then each key in the order given, then no empty nodes.
        out: Any = cast(Any, self).empty(recurse=True)  # (EntryOps, a mixin beside this)
        for path, node in self.non_tensor_items(include_nested=True):
            out.set(path, node)
        for path in dict.fromkeys(unravel_key(key) for key in keys):
            if path in present:
                part = self.select(path)
                node = part.get(path)
                if isinstance(node, TensorCollection) and not node._is_leaf_node:
                    out.set(path, node)  # in its own key order, as the peer's set of it
                else:
                    out.update(part)
            elif path in missing:  # (not one repeated: it went with the key holding it)
                out.set(path, None if default is _NO_DEFAULT else default)
        out.filter_empty_()
        # not what lies inside a key also given: ``out`` may share that key's nodes
        outer = [p for p in present if not any(q != p and lies_inside(p, q) for q in present)]
        if keys:  # no keys remove nothing: a locked TensorDictParams answers, as the peer's
            self._drop_paths(outer)
        if filter_empty:
            _prune_emptied(self, [key_path(path) for path in outer], keep_root=False)
        return cast(Self, out)

    # --- adding and renaming entries ---------------------------------------------------------

    def replace(self, *args: Mapping[Any, Any] | TensorCollection, **kwargs: Any) -> Self:
        """A shallow copy (:meth:`copy`) with the given entries written into it with
        :meth:`update` (nested collections merged); this collection is not changed.
        ``replace()`` with no entry returns ``self``. Keyword entries take precedence over
        the positional mapping's.

        Raises:
            UpdateArgumentError: (a ``TypeError`` and a ``RuntimeError``, what the peer
                raises) more than one positional argument, or one that is not a mapping
                or a collection.
        """
        if len(args) > 1:
            msg = (
                f"replace() takes at most one mapping of entries, got {len(args)}; merge "
                "them into one dict"
            )
            raise UpdateArgumentError(msg)
        given: object = args[0] if args else None
        if given is not None and not isinstance(given, (Mapping, TensorCollection)):
            msg = f"replace() takes a dict or a collection of entries, got {type(given).__name__}"
            raise UpdateArgumentError(msg)
        source = given
        if not kwargs and (source is None or not _has_entries(source)):
            return self
        out = self.copy()
        if source is not None:
            out.update(source)
        if kwargs:
            out.update(kwargs)
        return out

    def rename_keys(self, mapping: Mapping[Any, Any], *, strict: bool = True) -> Self:
        """A copy (a new tree of nested collections sharing every leaf, unlocked) with
        several keys renamed at once; this collection is not changed. Every source is
        read before any destination is written, so swaps (``{"a": "b", "b": "a"}``)
        and chains work; keys may be nested on either side (an entry can move to another
        nested collection, and a whole nested collection can be renamed). A nested
        collection that the renaming leaves empty is removed; a record's fields never
        are (a renamed field reads ``None``).

        Raises:
            KeyNotFoundError: a source is missing and ``strict`` (else it is skipped).
            KeyRenameError: (a ``ValueError``, as the peer raises) two sources have one
                destination, two sources or two destinations lie inside one another, or
                a destination is already present and not renamed away.
            UnknownFieldError: (an ``AttributeError``) on a record, a destination that
                is not one of its fields.
        """
        return renamed(self, mapping, strict, keep_root=False)

    def create_nested(self, key: Any) -> Self:
        """Adds an empty nested collection at ``key`` with this collection's batch size,
        device and names (those of the collection it is added to); an entry there is
        replaced. For a nested key, the unlocked TensorDicts already on the path are
        kept (``("a", "b")`` adds ``"b"`` to ``td["a"]``); anything else on the path (a
        tensor, a lazy stack, a record, a locked collection) is replaced by a new empty
        TensorDict. A record's field rules apply (a nested record field gets its class).
        Returns ``self``.

        Raises:
            LockedError: (a ``RuntimeError``) if the collection is locked.
        """
        if self.is_locked:
            raise _locked("add an entry to", self)
        path = key_path(key)
        node: TensorCollection = self
        for part in path[:-1]:
            child = node._child(part) if node._has_entry(part) else None
            if child is None or not _is_plain_open(child):
                node.set(part, {})
                child = node._child(part)
            assert child is not None
            node = child
        if node._is_store and node._has_entry(path[-1]):
            node.del_(path[-1])  # (a file's set merges into the group there: replace it)
        node.set(path[-1], {})
        return self

    def cat_tensors(
        self, *keys: Any, out_key: Any, dim: int = 0, keep_entries: bool = False
    ) -> Self:
        """Writes ``torch.cat`` of the entries at ``keys`` (``dim`` counted in the
        entries' own dims) under ``out_key``, then removes those entries unless
        ``keep_entries`` (if the concatenation or the write fails, nothing changes);
        returns ``self``."""
        return self._join_entries(torch.cat, "cat_tensors", keys, out_key, dim, keep_entries)

    def stack_tensors(
        self, *keys: Any, out_key: Any, dim: int = 0, keep_entries: bool = False
    ) -> Self:
        """Writes ``torch.stack`` of the entries at ``keys`` (``dim``, the new dim,
        counted in the result's dims) under ``out_key``, then removes those entries
        unless ``keep_entries`` (if the stack or the write fails, nothing changes);
        returns ``self``."""
        return self._join_entries(torch.stack, "stack_tensors", keys, out_key, dim, keep_entries)

    def _join_entries(
        self,
        join: Any,
        op: str,
        keys: tuple[Any, ...],
        out_key: Any,
        dim: int,
        keep_entries: bool,
    ) -> Self:
        if not keys:
            msg = f"{op}: give at least one key to join"
            raise ShapeError(msg)
        paths = [unravel_key(key) for key in keys]
        values = []
        for path in paths:
            value = self.get(path, _MISSING)
            if value is _MISSING:
                raise self._absent_key(key_path(path))
            values.append(value)
        out = unravel_key(out_key)
        dropped = [path for path in paths if path != out]
        _check_one_kind(op, paths, values)
        joined = join(values, dim)  # (a join that fails raises first, as the peer's)
        # the peer's second del_ of a key given twice raises its KeyError; a nested
        # record's field is set to None instead (removed twice, as tclass's record does),
        # but not across a lazy stack's members (the peer's raises there too: fz28b)
        lazy = storage_of(self)._is_lazy
        twice = [
            i
            for i, path in enumerate(paths)
            if path in paths[:i]
            and (lazy or not (len(path) > 1 and is_record(self.get(path[:-1]))))
        ]
        # the peer removes the keys in order: a lock met before the key's second removal
        # (self's, a member's of a lazy stack, or a nested parent's, which exclude keeps
        # locked in an unlocked copy) is its error, the key given twice comes after
        if (
            twice
            and not keep_entries
            and not any(_removal_refused(self, path) for path in paths[: twice[0]])
        ):
            msg = (
                f"{op}: the key {paths[twice[0]]!r} is given twice, and without "
                "keep_entries each key joined is removed: give it once, or pass "
                "keep_entries=True"
            )
            raise KeyConflictError(msg)
        if not keep_entries and not self.is_locked:  # (locked: set refuses, as the peer's)
            # before the new entry is written: a view of a file's rows (or a record or a
            # lazy stack over one) refuses to delete entries, every row of them
            # (``out`` among the keys is removed too, then written last, as the peer's)
            removed = [*dropped, out] if out in paths else dropped
            storage_of(self)._check_removable(op, removed)
            _check_parents_unlocked(self, op, removed)
        self.set(out_key, joined)
        if not keep_entries:
            self._drop_paths(dropped)
            if out in paths:  # removed and written again: last in its parent, as the peer's
                self._drop_paths([out])
                self.set(out_key, joined)
        return self

    def _drop_paths(self, paths: Sequence[Any]) -> None:
        """Removes the entries at ``paths`` (the methods that move entries elsewhere);
        a collection that cannot ``exclude`` in place (a file) deletes them one by one."""
        self.exclude(*paths, inplace=True)

    def copy_at_(
        self,
        tensordict: TensorDictBase | Mapping[Any, Any],
        idx: Any,
        non_blocking: bool = False,
        *,
        fast: bool = True,
    ) -> Self:
        """Writes the tensors of ``tensordict`` into the existing entries at ``idx`` (an
        index over the batch dims; ``tensordict`` has the leading dims of ``self[idx]``);
        returns ``self``. Works on locked and memory-mapped collections.

        ``fast=True`` writes tensors only: Python values in ``tensordict`` are skipped
        with an :class:`~tclass.errors.IgnoredValuesWarning`, as the peer does; a ``...``
        in ``idx`` stands for the batch dims it skips (``(..., 0)`` writes the last batch
        dim's first elements, as the peer's fast path and ``self[idx] = tensordict``);
        ``fast=False`` is :meth:`update_at_`, which writes the Python values too.

        Raises:
            KeyNotFoundError: (a ``KeyError``) a key of ``tensordict`` is not an entry.
            UpdateArgumentError: (a ``RuntimeError``) with ``fast``, ``tensordict`` holds
                Python values only.
        """
        if not fast:
            return self.update_at_(tensordict, idx, non_blocking=non_blocking)
        tensors: list[tuple[Path, Any]] = []
        skipped: list[tuple[Path, Any]] = []
        for path, value, is_tensor in _source_leaves(tensordict, ()):
            (tensors if is_tensor else skipped).append((path, value))
        if skipped and not tensors:
            msg = (
                "copy_at_(fast=True) copies tensors, and the source holds Python values "
                f"only ({[path for path, _ in skipped]}); use fast=False or update_at_"
            )
            raise UpdateArgumentError(msg)
        if skipped:
            msg = (
                f"copy_at_(fast=True) skips the Python values at {[p for p, _ in skipped]}; "
                "use fast=False (update_at_) to write them too"
            )
            warnings.warn(msg, IgnoredValuesWarning, stacklevel=2)
        for path, _ in tensors:
            if path not in self:
                raise self._missing_key(path[0] if len(path) == 1 else path)
        # ``idx`` indexes the batch dims (as ``self[idx]``): its ``...`` covers them only,
        # not a leaf's feature dims, as the peer spells it out
        if tensors:  # (nothing to write: the index is not read, as the peer's)
            idx = convert_ellipsis_to_idx(idx, self.batch_size)
            # every write checked before the first is made, as update_at_'s: a record's
            # constraints refused at its second entry leave the first as it was too
            checks = cast(Any, self)  # (EntryOps, mixed in beside this class)
            checks._check_nested_writes(tensors, idx, "copy_at_")
            checks._check_writes_at([(path, tensor, idx) for path, tensor in tensors])
        for path, tensor in tensors:
            self.set_at_(path, tensor, idx, non_blocking=non_blocking)
        return self


def _check_one_kind(op: str, paths: Sequence[Any], values: Sequence[Any]) -> None:
    """Refuses to join a Python value with a tensor, naming both keys (torch's join of
    the two would name none; the peer fails inside, an ``AttributeError``)."""
    kinds = [isinstance(value, TensorCollection) and value._is_value_node for value in values]
    if any(kinds) and not all(kinds):
        other = kinds.index(False)
        msg = (
            f"{op}: the entry {paths[kinds.index(True)]!r} holds a Python value "
            f"and {paths[other]!r} a {type(values[other]).__name__}, which do "
            "not join; join Python values with Python values and tensors with tensors"
        )
        raise StackError(msg)


def _locked(action: str, collection: TensorCollection) -> LockedError:
    return LockedError(
        f"{locked_prefix(type(collection).__name__)}: cannot {action} a locked "
        "collection; unlock it first (unlock_())"
    )


def _is_plain_open(node: TensorCollection) -> bool:
    """A nested collection ``create_nested`` keeps on its path: a TensorDict-like node
    that is neither a lazy stack, a record, a Python value nor locked."""
    return not (node._is_leaf_node or node._is_lazy or is_record(node) or node.is_locked)


def _has_entries(source: Mapping[Any, Any] | TensorCollection) -> bool:
    if isinstance(source, TensorCollection):
        return bool(source._key_names())
    return bool(source)


def _value_nodes(
    node: TensorCollection, prefix: Path, include_nested: bool
) -> Iterator[tuple[Path, TensorCollection]]:
    nested: list[tuple[Path, TensorCollection]] = []
    for key in node._key_names():
        child = node._child(key)
        if child is None:
            continue
        if child._is_value_node:
            yield prefix + (key,), child
        elif include_nested and not child._is_leaf_node:
            nested.append((prefix + (key,), child))
    for path, child in nested:
        yield from _value_nodes(child, path, include_nested)


def _source_leaves(source: Any, prefix: Path) -> Iterator[tuple[Path, Any, bool]]:
    """The leaves of a collection or nested mapping, each with whether it is a tensor
    (array-likes and numbers in a mapping count as tensors) or a Python value."""
    if isinstance(source, TensorCollection):
        for key in source._key_names():
            child = source._child(key)
            if child is None:
                yield prefix + (key,), source._entry(key), True
            elif child._is_value_node:
                yield prefix + (key,), child, False
            elif child._is_leaf_node:
                yield prefix + (key,), child._read(), True
            else:
                yield from _source_leaves(child, prefix + (key,))
        return
    for key, value in source.items():
        path = prefix + key_path(key)
        if isinstance(value, (Mapping, TensorCollection)):
            yield from _source_leaves(value, path)
        else:
            tensor_like = isinstance(value, (torch.Tensor, int, float, bool, complex)) or hasattr(
                value, "__array__"
            )
            yield path, value, tensor_like


def renamed(collection: C, mapping: Mapping[Any, Any], strict: bool, keep_root: bool) -> C:
    """``collection.rename_keys(mapping, strict=strict)``; with ``keep_root``, the
    direct entries the renaming empties are kept (a record's storage keeps its fields).

    As the peer's: every source is read and removed, the nested collections that this
    empties are removed, then each destination must be free (so one that held only
    sources is, and a destination under an emptied collection makes a new one at the end
    of its parent's keys), and the values are written without renaming the dims of the
    collections they go into (the result has this collection's dim names)."""
    # a key renamed to itself stays where it is (checked with the others, not moved)
    pairs = [(src, dst) for src, dst in _rename_plan(collection, mapping, strict) if src != dst]
    # a new tree sharing the leaves, as the peer's ``_fast_apply``: a TensorDictParams
    # (nested or not) gives a TensorDict, as its ``exclude`` does; records keep their class
    out = collection._renamed(_same_key)
    if out.is_locked:
        out.unlock_()
    holders = [out if len(src) == 1 else out.get(src[:-1]) for src, _ in pairs]
    values = [holder._entry(src[-1]) for holder, (src, _) in zip(holders, pairs)]
    for holder, (src, _) in zip(holders, pairs):
        holder.del_(src[-1])
    _prune_emptied(out, [src for src, _ in pairs], keep_root)
    named = [(node, node._dim_names) for node in _destination_parents(out, pairs)]
    for (_, dst), value in zip(pairs, values):
        out.set(dst if len(dst) > 1 else dst[0], value)
    for node, names in named:
        if node._dim_names != names:
            node._assign_names(names)  # (the peer writes without renaming dims)
    return out


def _same_key(key: str) -> str:
    return key


def _rename_plan(
    collection: TensorCollection, mapping: Mapping[Any, Any], strict: bool
) -> list[tuple[Path, Path]]:
    """The ``(source, destination)`` paths of ``mapping`` to rename, checked (the
    destinations are checked once the sources are removed: ``_destination_parents``)."""
    pairs: list[tuple[Path, Path]] = []
    for src, dst in mapping.items():
        source, dest = key_path(src), key_path(dst)
        if unravel_key(src) not in collection:
            if strict:
                raise collection._missing_key(unravel_key(src))
            continue
        pairs.append((source, dest))
    seen: set[Path] = set()
    for _, dest in pairs:
        if dest in seen:
            raise KeyRenameError(f"rename_keys: {dest!r} is the destination of two sources")
        seen.add(dest)
    _refuse_nesting([src for src, _ in pairs], "sources")
    _refuse_nesting([dst for _, dst in pairs], "destinations")
    return pairs


def _destination_parents(
    out: TensorCollection, pairs: Sequence[tuple[Path, Path]]
) -> list[TensorCollection]:
    """``out`` and the collections already there that will hold a destination, once
    the sources are removed from ``out``; checks that each destination is free.

    Raises:
        KeyRenameError: a destination is an entry (one not renamed away), or its path
            runs through a Python value.
        KeyThroughTensorError: (a ``ValueError`` too) its path runs through a tensor.
    """
    parents: list[TensorCollection] = [out]
    for src, dest in pairs:
        if (dest[0] if len(dest) == 1 else dest) in out:
            msg = (
                f"rename_keys: the destination {dest!r} is already an entry and is not "
                "renamed away; rename or remove it first"
            )
            raise KeyRenameError(msg)
        node: TensorCollection = out
        for depth, part in enumerate(dest[:-1], 1):
            if not node._has_entry(part):
                break
            child = node._child(part)
            if child is None or child._is_leaf_node:
                what = "a tensor" if child is None else "a Python value"
                msg = (
                    f"rename_keys: the destination {dest!r} of {src!r} runs through "
                    f"{dest[:depth]!r}, {what}, not a collection"
                )
                if child is None:
                    raise KeyThroughTensorError(msg)
                raise KeyRenameError(msg)
            node = child
        else:
            if all(node is not seen for seen in parents):
                parents.append(node)
    return parents


def _refuse_nesting(paths: Sequence[Path], what: str) -> None:
    for i, a in enumerate(paths):
        for b in paths[i + 1 :]:
            short, long = (a, b) if len(a) <= len(b) else (b, a)
            if long[: len(short)] == short:
                msg = (
                    f"rename_keys: the {what} {short!r} and {long!r} lie inside one another, "
                    "so the result would depend on the order of the mapping"
                )
                raise KeyRenameError(msg)


def _prune_emptied(root: TensorCollection, removed: Sequence[Path], keep_root: bool) -> None:
    """Removes the nested collections (deepest first) that held a removed entry and are
    now empty; records and a record's fields (and, with ``keep_root``, ``root``'s
    entries) are kept, as the peer's (whose records list their ``None`` fields)."""
    parents = sorted({path[:end] for path in removed for end in range(1, len(path))}, key=len)
    for parent in reversed(parents):
        holder = root if len(parent) == 1 else root.get(parent[:-1], None)
        if not isinstance(holder, TensorCollection) or is_record(holder):
            continue
        if keep_root and holder is root:
            continue
        if not holder._has_entry(parent[-1]):
            continue
        child = holder._child(parent[-1])
        if child is None or child._is_leaf_node or is_record(child):
            continue
        if not child._key_names():
            holder.del_(parent[-1])


def _check_parents_unlocked(node: Any, op: str, paths: Sequence[Any]) -> None:
    """Raises the lock error the removal of ``paths`` (present) from ``node`` (not
    locked) would meet, before anything is written: a nested parent locked, in ``node``
    or in a member of a lazy stack (the peer removes first and puts everything back)."""
    for path in paths:
        if _removal_refused(node, path):
            msg = (
                f"Cannot modify locked TensorDict: {op} cannot remove {path!r}, whose parent "
                "is a locked collection (a nested or a lazy stack member's): unlock it "
                "first (unlock_()), or pass keep_entries=True"
            )
            raise LockedError(msg)


def _removal_refused(node: Any, key: Any) -> bool:
    """Whether a lock refuses removing the entry at ``key`` (present) of ``node``: its
    parent is locked, or (a lazy stack) one of the parent's members is."""
    path = key_path(key)
    return _set_refused(node.get(path[:-1]) if len(path) > 1 else node)


def _set_refused(node: Any) -> bool:
    """Whether ``set`` of a new entry refuses ``node``: it is locked, or (a lazy stack)
    one of its members is (a memory-mapped member of a lazy stack that is not locked)."""
    storage = storage_of(node)
    if storage.is_locked:
        return True
    return bool(storage._is_lazy) and any(_set_refused(m) for m in storage.tensordicts)
