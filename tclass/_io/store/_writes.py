"""Every write of a ``PersistentTensorDict`` into its store (a mixin of
``PersistentTensorDict``, in ``_persistent.py``), through the Store protocol: new entries
(``ptd[key] = value``, ``set``, ``update``: an array, a group, Python values), deletes and
renames; writes into what the store already holds (``set_`` and ``update_``, ``ptd[idx]
= rows`` into the rows of every array); and the in-place methods (``zero_``, ``fill_``,
``apply_``, ``td += 1``...), whose results are written back to the store."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection
from tclass._core import _batch, _keys
from tclass._core._mapped_paths import MappedFiles
from tclass._core._records import is_record, storage_of
from tclass._engine._entry_values import fit_to_batch
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._pyvalues import stored_value
from tclass._engine._td import TensorDict
from tclass._engine._td_setitem import leading_ones_dropped, source_batch_error
from tclass._engine._tensor_write import (
    check_number_write,
    check_tensor_write,
    fits_every_dtype,
)
from tclass._engine._walk import NodeVisitor
from tclass._io._schema import check_values_to_save, check_written_values, record_schema
from tclass._io.store._datasets import (
    RepeatedRow,
    as_values,
    fill,
    list_index,
    plan_rows,
    rows_shape,
    to_numpy,
    torch_dtype_of,
    write_rows,
)
from tclass._io.store._protocol import Node, StoreGroup, is_group
from tclass._io.store._records import source_items
from tclass._io.store._surface import in_memory
from tclass._io.store._write_helpers import (
    batch_index,
    dropped_entries,
    holds_leaves,
    paths_below,
    refuse_unstorable,
    warn_replaced,
)
from tclass.errors import (
    BatchMismatchError,
    EntryTypeError,
    FileBusyError,
    HeterogeneousEntryError,
    InPlaceWriteError,
    KeyNotFoundError,
    KeyThroughTensorError,
    LockedError,
    ReadOnlyFileError,
)

if TYPE_CHECKING:
    from tclass._base.implemented._staged_writes import StagedWrites
    from tclass._io.store._persistent import PersistentTensorDict

__all__ = ["StoreWrites", "refuse_ragged_batch"]

_MISSING: Any = object()
_T = TypeVar("_T")


def refuse_ragged_batch(
    value: Any, label: str, where: tuple[str, ...] = (), replaced: Any = None,
    truncated: bool = False,
) -> None:  # fmt: skip
    """Refuses a collection (``value`` or one nested in it, a lazy stack's members' too)
    whose batch size has a ragged dim (``-1``: a lazy stack of members of different
    shapes), before anything is written: a group records one batch size, and the peer's
    store writes the ``-1``, which reads back as a batch size no collection can have.
    ``replaced``: the file or store (a path or a store object) a new one replaces; a
    node read from it (or from a store inside it, or holding it) is refused too, since
    creating the new one clears what it would read (the peer's zarr writes the zeros
    of the cleared arrays, and h5py refuses to truncate an open file). ``truncated``:
    ``replaced`` is a file the write truncates (HDF5's), and a tensor mapping it is
    refused too (it would read the new bytes before they are copied).

    Raises:
        HeterogeneousEntryError: (a ``RuntimeError``, as the peer's store raises for
            such a stack's tensors) naming the key and the batch size.
        FileBusyError: (a ``BlockingIOError``) a node is read from ``replaced``.
    """
    _WriteChecks(label, replaced, truncated).visit(value, where)


def _same_store(source: Any, replaced: Any) -> bool:
    """Whether writing the store ``replaced`` clears what the store ``source`` reads
    (paths or store objects): the same one, a folder holding it, or a part of it (an
    existing file or folder inside a zarr store; a new file beside its parts clears
    nothing)."""
    if isinstance(source, (str, os.PathLike)) and isinstance(replaced, (str, os.PathLike)):
        read, written = os.path.realpath(source), os.path.realpath(replaced)
        part = written.startswith(read + os.sep) and os.path.lexists(written)
        return read == written or read.startswith(written + os.sep) or part
    return source is replaced


# kinds whose tensors the walk visits itself, or that hold none mapped (a file's)
def _walked(node: TensorDictBase) -> bool:
    return isinstance(node, (TensorDict, LazyStackedTensorDict)) or node._is_store


class _WriteChecks(NodeVisitor[None]):
    """The walk of :func:`refuse_ragged_batch`: ragged batch sizes, and nodes read from
    the store a new one replaces (``where``: the key it has reached)."""

    action = "write"

    def __init__(self, label: str, replaced: Any, truncated: bool = False) -> None:
        self.label = label
        self.replaced = replaced
        is_file = isinstance(replaced, (str, os.PathLike)) and os.path.isfile(replaced)
        self.mapped = MappedFiles(replaced) if truncated and is_file else None

    def visit_tensordict(self, td: TensorDict, where: tuple[str, ...]) -> None:
        self.visit_other(td, where)
        for key, sub in td._entries().items():
            self.visit(sub, (*where, key))

    def visit_lazy(self, stack: LazyStackedTensorDict, where: tuple[str, ...]) -> None:
        self.visit_other(stack, where)
        self._refuse_exclusive_keys(stack, where)
        for member in stack.tensordicts:
            self.visit(member, where)

    def _refuse_exclusive_keys(self, stack: LazyStackedTensorDict, where: tuple[str, ...]) -> None:
        """A group holds the entries every member holds: one only some members hold (a
        record's optional field set in one) would be left out, as the peer's store does."""
        keys = [set(storage_of(member).keys(include_nested=True)) for member in stack.tensordicts]
        common = set.intersection(*keys) if keys else set()
        extra = {i: _outermost(found - common) for i, found in enumerate(keys) if found - common}
        if extra:
            at = f"key {where!r}" if where else "the root"
            shown = "; ".join(f"member {index}: {names}" for index, names in extra.items())
            msg = (
                f"cannot write a lazy stack ({at}) to {self.label}: some members hold entries "
                f"the others lack ({shown}), which it would leave out; give every member "
                "those entries, or save the stack with memmap(), which keeps each member"
            )
            raise HeterogeneousEntryError(msg)

    def visit_value(self, node: NonTensorData, where: tuple[str, ...]) -> None:
        return None

    def visit_values(self, node: NonTensorStack, where: tuple[str, ...]) -> None:
        return None

    def visit_other(self, node: Any, where: tuple[str, ...]) -> None:
        """A tensor (nothing to check), or a collection of another kind (a file, a
        ``TensorDictParams``): its own batch size only, and a file's location."""
        replaced = self.replaced
        if self.mapped is not None:
            self._refuse_mapped(node, where)
        if replaced is not None and isinstance(node, StoreWrites):
            source = cast("PersistentTensorDict", node)._group.file.target
            if _same_store(source, replaced):
                at = f"key {where!r}" if where else "the collection"
                msg = (
                    f"cannot write {self.label} {replaced!r}: {at} is read from {source!r}, "
                    "which creating it clears first (its values would be lost); write to "
                    "another path, or read it into memory first (td.to_tensordict())"
                )
                raise FileBusyError(msg)
        if isinstance(node, TensorCollection) and any(size < 0 for size in node.batch_size):
            at = f"key {where!r}" if where else "the root"
            msg = (
                f"cannot write a lazy stack of batch size {list(node.batch_size)} ({at}) to "
                f"{self.label}: its members differ in shape along the dims of size -1, which "
                "a group cannot record as a batch size; pad the members "
                "(tclass.pad_sequence) or save it with memmap(), which keeps each member"
            )
            raise HeterogeneousEntryError(msg)

    def _refuse_mapped(self, node: Any, where: tuple[str, ...]) -> None:
        """A tensor (or one of a kind's own, a ``TensorDictParams``') that maps the file
        replaced: truncating it would change what the write then reads."""
        assert self.mapped is not None
        if isinstance(node, torch.Tensor):
            found = [where] if self.mapped.maps(node) else []
        elif isinstance(node, TensorDictBase) and not _walked(node):
            found = [
                (*where, *((key,) if isinstance(key, str) else key))
                for key, value in node.items(include_nested=True, leaves_only=True)
                if isinstance(value, torch.Tensor) and self.mapped.maps(value)
            ]
        else:
            return
        if found:
            msg = (
                f"cannot write {self.label} {self.replaced!r}: key {found[0]!r} maps that "
                "file (a collection loaded from it, or saved there), and creating the new "
                "file truncates it first (its values would be lost); write to another path, "
                "or read the collection into memory first (td.clone())"
            )
            raise FileBusyError(msg)


def _outermost(keys: set[Any]) -> list[str]:
    """``keys`` (strings and tuples) without those inside another one, dotted."""
    paths = {(key,) if isinstance(key, str) else tuple(key) for key in keys}
    kept = [p for p in paths if not any(p[:n] in paths for n in range(1, len(p)))]
    return sorted(".".join(path) for path in kept)


class StoreWrites(TensorDictBase):
    """A mixin of ``PersistentTensorDict`` (see the module docstring)."""

    if TYPE_CHECKING:  # PersistentTensorDict's slots and methods
        _batch_size: torch.Size
        _locked: bool
        _nested: dict[str, PersistentTensorDict]
        _records: dict[str, type]
        _dataset_kwargs: dict[str, Any]
        _file_name: str

        @property
        def _label(self) -> str: ...
        def _live(self) -> StoreGroup: ...
        def _where(self, key: str | None = None) -> str: ...
        def _child_of(self, key: str, group: StoreGroup) -> PersistentTensorDict: ...
        def _group_at(self, path: Sequence[str]) -> PersistentTensorDict: ...
        def _as_record(self, key: str, value: Any) -> Any: ...
        def _staged_apply(
            self,
            record: type | None,
            fn: Callable[..., torch.Tensor | None],
            others: tuple[Any, ...],
            outer: StagedWrites | None = None,
        ) -> None: ...
    else:
        __slots__ = ()

    # --- writing -------------------------------------------------------------------------

    def _writable(self) -> StoreGroup:
        group = self._live()
        if group.file.read_only:
            msg = f"{self._file_name!r} {group.file.why_read_only}"
            raise ReadOnlyFileError(msg)
        return group

    def set(
        self, key: Any, value: Any, inplace: bool = False, *, non_blocking: bool = False
    ) -> Self:
        """Write ``value`` under ``key``: a tensor becomes an array, a collection or dict
        a group, a Python value an array in the store's format for values. A tensor is
        written into an existing array of its shape and dtype (keeping its chunks and
        compression); a collection or dict is merged into an existing group, as the
        peer's file merges it (the group's other entries stay); an entry of
        another kind, shape or dtype is replaced. With ``inplace`` and an existing entry,
        the data is written into it.

        Warns:
            EntryReplacedWarning: (a ``UserWarning``, as the peer warns) ``inplace=False``
                and the entry exists: replaced (slower than writing into it, and an HDF5
                file keeps the old array's space), or written into (the peer replaces it).

        Raises:
            GradError: (a ``RuntimeError``, as the peer raises) a tensor requires grad:
                the file would keep its values and silently drop the graph.
        """
        return self._put(key, value, inplace, warn=True)

    def _put(self, key: Any, value: Any, inplace: bool, warn: bool = False) -> Self:
        """:meth:`set`, warning of a replaced entry only with ``warn`` (the user's ``set``;
        ``ptd[key] = value``, ``update``, a record's field and tclass's own writes, which
        go through ``update``, replace entries without one)."""
        path = _keys.key_path(key)
        self._check_into_records(path, value)
        if len(path) > 1:
            self._parent_for(path)._put(path[-1], value, inplace, warn)
            return self
        key = path[0]
        group = self._writable()
        refuse_unstorable(value, self._where(key), self._label)  # before anything is written
        if inplace and key in group:
            return self.set_(key, value)
        if self._locked:
            raise LockedError(
                "Cannot modify locked TensorDict (a PersistentTensorDict): "
                f"cannot set {key!r}; unlock it first"
            )
        record = value if is_record(value) else None
        value = storage_of(value)
        if isinstance(value, dict):
            value = TensorDict(value, self._batch_size)
        elif not isinstance(value, (torch.Tensor, TensorCollection)):
            value = stored_value(value, self._batch_size, None)  # a string: a Python value
        if isinstance(value, (NonTensorData, NonTensorStack)):
            self._write_values(group, key, value, warn)
        elif isinstance(value, TensorCollection):
            self._set_collection(group, key, value, record, warn)
        else:
            tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
            self._check_rows(key, tensor.shape)
            array = to_numpy(tensor, self._label, self._where(key))
            if not self._write_into(group, key, array, warn):
                create = partial(group.create_array, key, array, self._dataset_kwargs)
                self._replace(group, key, create, warn)
        return self

    def _write_into(
        self, group: StoreGroup, key: str, array: np.ndarray[Any, Any], warn: bool = False
    ) -> bool:
        """Writes ``array`` into the array ``key`` when it has the same shape and dtype
        (its chunks and compression kept; an HDF5 file keeps no old copy): False when
        there is none, and the entry is replaced instead. With ``warn`` (the user's
        ``set``), an ``EntryReplacedWarning`` as the peer's, which replaces it."""
        node = group[key] if key in group else None
        if node is None or is_group(node) or node.dtype is None:
            return False
        if node.shape != array.shape or node.dtype != torch_dtype_of(array.dtype):
            return False
        if warn:
            warn_replaced(self._where(key), in_place=True)
        if array.size:
            node.write(..., array)
        return True

    def _replace(
        self, group: StoreGroup, key: str, create: Callable[[], _T], warn: bool = False
    ) -> _T:
        """What ``create`` makes under ``key``, in place of the entry there (with
        ``warn``, an ``EntryReplacedWarning`` if there is one)."""
        if key in group:
            if warn:
                warn_replaced(self._where(key))
            group.delete(key)
            self._nested.pop(key, None)
            self._records.pop(key, None)
        return create()

    def _write_values(
        self,
        group: StoreGroup,
        key: str,
        value: NonTensorData | NonTensorStack,
        warn: bool = False,
    ) -> None:
        """A Python-value node written as the store's format writes values, replacing
        the entry ``key`` once the values are known to fit the format."""
        self._values_writer(group, key, value, warn)()

    def _values_writer(
        self,
        group: StoreGroup,
        key: str,
        value: NonTensorData | NonTensorStack,
        warn: bool = False,
    ) -> Callable[[], object]:
        """:meth:`_write_values` checked: the write, to run."""
        values, where = as_values(value), self._where(key)
        allow_pickle = group.file.access.allow_pickle
        group.check_values(values, allow_pickle, where)
        create = partial(group.create_values, key, values, allow_pickle, where)
        return partial(self._replace, group, key, create, warn)

    def _set_collection(
        self,
        group: StoreGroup,
        key: str,
        value: TensorCollection,
        record: Any = None,
        warn: bool = False,
    ) -> None:
        """A group holding ``value`` (the storage of ``record``, whose class's schema is
        written with it and which reads back as a record of that class). Over a group of
        any batch size that holds no record, ``value`` is merged into the group entry by
        entry (the entries it lacks stay; each must fit the group's batch size), as the
        peer's file writes it."""
        refuse_ragged_batch(value, f"the {self._label} {self._file_name!r}", (key,))
        if value.batch_size[: len(self._batch_size)] != self._batch_size:
            # a shorter batch size (built without one) becomes this one when the entries
            # fit, as a TensorDict stores it; else BatchMismatchError
            value = fit_to_batch(cast(Any, value), self._batch_size, key)
        self._take_names_of(value)
        node = group[key] if key in group else None
        if node is not None and is_group(node) and record is None and key not in self._records:
            # merged whatever its batch size, as the peer's file updates the group: each
            # entry must fit the group's batch size (else its BatchMismatchError)
            self._child_of(key, node).update(value)
            return
        if record is not None:
            check_values_to_save(record, f"key {key!r}")
        made = self._replace(group, key, partial(group.create_group, key), warn)
        child = self._child_of(key, made)
        child._batch_size = value.batch_size
        child._write_meta(None if record is None else record_schema(record))
        if record is not None:
            self._records[key] = type(record)
        child.update(value)

    def _take_names_of(self, value: TensorCollection) -> None:
        """An unnamed group takes the names that a collection written into it gives the
        dims they share (recorded in the store), as a TensorDict setting it does, and
        the peer's file."""
        count = len(self._batch_size)
        mine, own = self._dim_names, value._dim_names
        if not count or own is None or (mine is not None and any(n is not None for n in mine)):
            return
        if any(name is not None for name in own[:count]):
            self._rename_all(tuple(own[:count]))

    def _check_rows(self, key: str, shape: torch.Size) -> None:
        batch = self._batch_size
        if tuple(shape[: len(batch)]) != tuple(batch):
            raise BatchMismatchError(key, shape, batch)

    def _parent_for(self, path: tuple[str, ...]) -> StoreWrites:
        """The group holding ``path``'s last part (groups on the way made as needed)."""
        node: StoreWrites = self
        for part in path[:-1]:
            group = node._writable()
            if part not in group:
                if node._locked:
                    raise LockedError(
                        "Cannot modify locked TensorDict (a PersistentTensorDict): "
                        f"cannot add {part!r}"
                    )
                child = node._child_of(part, group.create_group(part))
                child._write_meta()
            found = storage_of(node._entry(part))
            if not isinstance(found, StoreWrites):
                msg = (
                    f"cannot set {path!r}: {part!r} holds a tensor or a value, not a "
                    "group, so it has no entries"
                )
                raise KeyThroughTensorError(msg)
            node = found
        return node

    def __setitem__(self, index: Any, value: Any) -> None:
        """``ptd[key] = value`` writes an entry (into the existing one when locked, as
        the peer's); ``ptd[idx] = rows`` writes the rows of every dataset (``rows`` a
        collection, a dict, or a number for every tensor)."""
        if isinstance(index, str) or (isinstance(index, tuple) and _keys.is_key_tuple(index)):
            self._put(index, value, self._locked)
            return
        value = self._rows_value(index, value)
        self._check_into_records((), value)
        self._write_rows(index, value)

    def _check_row_write(self, index: Any, value: Any) -> None:
        """Checks ``self[index] = value`` for the collection holding this file (a
        TensorDict it is an entry of), writing nothing: as the write checks it."""
        value = self._rows_value(index, value)
        self._check_into_records((), value)
        self._plan_rows(index, value, True, [])

    def _rows_value(self, index: Any, value: Any) -> Any:
        """``value`` of ``self[index] = value``, checked against the batch size and the
        arrays (see :meth:`_checked_rows`); returns the value to write."""
        refuse_unstorable(value, self._where(), self._label)  # before any dataset is written
        if not isinstance(value, TensorCollection):
            return self._checked_rows(self, index, value)
        source = storage_of(value)  # (one without entries: the message says so)
        error = source_batch_error(self, index, source, empty=not list(source.keys()))
        if error is not None:
            raise error
        return leading_ones_dropped(self, index, value)

    def _checked_rows(self, target: TensorDictBase, index: Any, value: Any) -> Any:
        """``target[index] = value`` (``target``: this file or a view of its rows) for a
        value that is not a collection: a list or an array made a tensor once, then
        checked against every array before any is written (all or nothing): a tensor
        must fit each one's selection as torch writes it, a number each one's dtype
        (torch refuses ``300`` in ``int8``). Returns the value to write."""
        if isinstance(value, (int, float, complex)):
            if not fits_every_dtype(value):
                check_number_write(value, index, self._array_dtypes(()))
            return value
        if not isinstance(value, (torch.Tensor, Mapping)) and not is_record(value):
            try:
                value = torch.as_tensor(value)
            except (TypeError, ValueError, RuntimeError):
                return value  # (each array's write refuses it, before writing)
        if isinstance(value, torch.Tensor):  # into each array as torch writes it
            check_tensor_write(target, index, value)
        return value

    def _array_dtypes(self, prefix: tuple[str, ...]) -> list[tuple[Any, torch.dtype, torch.Size]]:
        """Each array of tensors (nested ones too) as ``(key, dtype, shape)``, read from
        the store's metadata (no data read)."""
        group = self._live()
        found: list[tuple[Any, torch.dtype, torch.Size]] = []
        for key in self._key_names():
            node = group[key]
            if is_group(node):
                found += self._child_of(key, node)._array_dtypes((*prefix, key))
            elif node.dtype is not None:
                found.append(((*prefix, key), node.dtype, torch.Size(node.shape or ())))
        return found

    def _check_into_records(self, path: tuple[str, ...], value: Any) -> None:
        """What a write at ``path`` (of entries or of rows: ``()`` for the rows of this
        collection) puts into the group of a record meets the constraints of its class,
        as the record's own writes are checked; checked before anything is written.

        Raises:
            FieldSpecError: naming the field and the first value that breaks them.
        """
        node, cls = self, None
        for depth, part in enumerate(path):
            group = node._live()
            entry = group[part] if part in group else None
            if entry is None or not is_group(entry):
                if cls is not None and depth == len(path) - 1:
                    check_written_values(cls, {part: value}, node._where(part))
                return
            cls = node._records.get(part)
            node = node._child_of(part, entry)
        if cls is not None:
            check_written_values(cls, value, node._where())
        node._check_rows_into(value)

    def _check_rows_into(self, value: Any) -> None:
        """:meth:`_check_into_records` of ``value`` written over this whole collection:
        the part of it that lands in each record group below."""
        source = storage_of(value)
        keyed = isinstance(source, (Mapping, TensorCollection))
        group = self._live()
        for key in self._key_names():
            node = group[key]
            if not is_group(node):
                continue
            part = source.get(key, _MISSING) if keyed else value
            if part is _MISSING:
                continue
            child = self._child_of(key, node)
            cls = self._records.get(key)
            if cls is not None:
                check_written_values(cls, part, child._where())
            child._check_rows_into(part)

    def _update_entries(
        self,
        source: Any,
        clone: bool,
        inplace: bool,
        keys_to_update: Sequence[Any] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> Self:
        """Write every entry of ``source`` (in place into existing datasets with
        ``inplace``); a mapping or collection under a key that is a group of the file is
        merged into that group key by key, as a TensorDict's ``update`` merges."""
        if self._locked and not inplace and not len(source.keys()):
            # nothing to write, but the peer refuses any update of a locked collection
            msg = (
                "Cannot modify locked TensorDict (a PersistentTensorDict): "
                "cannot update it; unlock it first, "
                "or write into its entries with update(..., inplace=True)"
            )
            raise LockedError(msg)
        paths = None if keys_to_update is None else [_keys.key_path(k) for k in keys_to_update]
        group = self._writable()
        refuse_unstorable(source, self._where(), self._label)  # before any entry is written
        self._check_rows_into(source)
        if inplace:  # the writes into the entries it holds, checked before the first
            self._require_keys(source, (), paths, [], missing_ok=True)
        for key, value in source_items(source):
            path = _keys.key_path(key)
            below = None if paths is None else paths_below(path, paths)
            if below == []:
                continue  # neither this key nor anything under it was asked for
            inner = None if below is None or () in below else below
            if len(path) > 1:
                self._put(path, value, inplace)
                continue
            node = group[path[0]] if path[0] in group else None
            merge = isinstance(value, Mapping) or (
                isinstance(value, TensorCollection)
                and not value._is_leaf_node
                and (is_leaf is None or not is_leaf(type(value)))
            )
            if node is not None and is_group(node) and merge:
                child = self._child_of(path[0], node)
                child._update_entries(value, clone, inplace, inner, is_leaf)
            else:
                self._put(key, value, inplace)
        return self

    def del_(self, key: Any) -> Self:
        """Delete the entry ``key`` from the file."""
        path = _keys.key_path(key)
        node = self._parent_for(path) if len(path) > 1 else self
        group = node._writable()
        if node._locked:
            raise LockedError(
                "Cannot modify locked TensorDict (a PersistentTensorDict): "
                f"cannot delete {path[-1]!r}"
            )
        if path[-1] not in group:
            raise self._missing_key(key)
        group.delete(path[-1])
        node._nested.pop(path[-1], None)
        node._records.pop(path[-1], None)
        return self

    def _store_entry(self, key: str, value: Value, blank: bool = False) -> Value:
        """Writes a record's field (its value checked by the record)."""
        self._put(key, value, False)
        return value

    def _remove_entry(self, key: str) -> None:
        """Deletes a record's field (set to None) from the file."""
        self.del_(key)

    def __delitem__(self, key: Any) -> None:
        self.del_(key)

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        """Read the entry ``key`` into memory, delete it from the file, and return it."""
        value = self.get(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise self._missing_key(key, popping=True)
            return default
        value = in_memory(value)
        self.del_(key)
        return value

    def rename_key_(self, old_key: Any, new_key: Any, safe: bool = False) -> Self:
        """Rename an entry in the file: moved, not copied, within one group; a nested key
        into another group is written there, then deleted (groups on the way are made).
        An entry already at ``new_key`` is replaced (a ``KeyError`` with ``safe``); an
        entry renamed to itself stays as it is, as a TensorDict's."""
        old, new = _keys.key_path(old_key), _keys.key_path(new_key)  # InvalidKeyError first
        if old == new:
            if self.get(old, _MISSING) is _MISSING:
                raise self._missing_key(old_key)
            self._writable()  # a file opened read-only refuses, as for any rename
            return self
        if len(old) == 1 and len(new) == 1:
            return self._rename_here(old[0], new[0], safe)
        if old[:-1] == new[:-1]:
            self._group_at(old[:-1])._rename_here(old[-1], new[-1], safe)
            return self
        if safe and new in self.keys(include_nested=True):
            raise KeyNotFoundError(
                f"cannot rename {old_key!r}: key {new_key!r} already present in TensorDict; "
                "delete it first, or rename to a free key"
            )
        value = self.get(old, _MISSING)
        if value is _MISSING:
            raise self._missing_key(old_key)
        if isinstance(value, TensorCollection):
            value = in_memory(value)
        if new[: len(old)] == old:  # into itself ("n" to ("n", "w")): n holds only w
            self.del_(old)
            self._put(new, value, False)
            return self
        if self.get(new, _MISSING) is not _MISSING:
            self.del_(new)  # replaced whole, as a TensorDict's entry (a group: not merged into)
        self._put(new, value, False)
        if old[: len(new)] == new:  # renamed to its own ancestor: replaced with it, gone
            return self
        return self.del_(old)

    def _rename_here(self, old_key: str, new_key: str, safe: bool) -> Self:
        group = self._writable()
        if old_key not in group:
            raise self._missing_key(old_key)
        if safe and new_key in group:
            raise KeyNotFoundError(
                f"cannot rename {old_key!r}: key {new_key!r} already present in TensorDict; "
                "delete it first, or rename to a free key"
            )
        if new_key in group:
            group.delete(new_key)
        group.move(old_key, new_key)
        self._nested.clear()
        held = self._records.pop(old_key, None)
        self._records.pop(new_key, None)
        if held is not None:
            self._records[new_key] = held
        return self

    # --- in place: written back to the store ----------------------------------------------

    def fill_(self, key: Any, value: float | bool | torch.Tensor) -> Self:
        """Fill the array ``key`` (or every array of a group) with ``value``."""
        target = storage_of(self.get(key, _MISSING))
        if target is _MISSING:
            raise self._missing_key(key)
        number = float(value) if isinstance(value, torch.Tensor) else value
        self._check_into_records(_keys.key_path(key), number)
        if isinstance(target, StoreWrites):
            target._fill_all(number)
            return self
        path = _keys.key_path(key)
        node = self._group_at(path[:-1])._writable()[path[-1]]
        if is_group(node) or node.dtype is None:
            msg = f"fill_: {path[-1]!r} holds Python values in {self._where()}, not a tensor"
            raise EntryTypeError(msg)
        fill(node, node.dtype, number)
        return self

    # --- into what the store holds ------------------------------------------------------

    def _existing(self, key: Any) -> tuple[PersistentTensorDict, StoreGroup, str, Node]:
        """For a write in place at ``key``: the node holding it, its writable group, the
        entry's name and the entry (an array or a group).

        Raises:
            KeyNotFoundError: (a ``KeyError``) ``key`` is not in the file.
        """
        path = _keys.key_path(key)
        node = self._group_at(path[:-1])
        group = node._writable()
        name = path[-1]
        if name not in group:
            raise self._missing_key(key)
        return node, group, name, group[name]

    def set_(self, key: Any, value: Any, *, non_blocking: bool = False) -> Self:
        """Write ``value`` into the existing entry ``key`` (a dataset, or a group entry
        by entry)."""
        node, group, name, target = self._existing(key)
        self._check_into_records(_keys.key_path(key), value)
        node._refuse_set_(name, target, value)
        if is_group(target):
            node._child_of(name, target).update(value, inplace=True)
        elif isinstance(value, (NonTensorData, NonTensorStack)):
            node._write_values(group, name, value)
        else:
            write_rows(target, ..., value, 0, self._label, node._where(name), copy=True)
        return self

    def _refuse_set_(self, name: str, target: Node, value: Any) -> None:
        """Refuses ``set_`` of a collection into a dataset, or of a tensor or a value
        into a group."""
        nested = isinstance(storage_of(value), (Mapping, TensorCollection))
        if is_group(target) != (nested and not isinstance(value, (NonTensorData, NonTensorStack))):
            held = "a group" if is_group(target) else "a dataset"
            msg = (
                f"cannot write a {type(value).__name__} into {name!r} in place: the file holds "
                f"{held} there; unlock the collection and set the entry to replace it"
            )
            raise InPlaceWriteError(msg)

    def set_at_(self, key: Any, value: Any, index: Any, *, non_blocking: bool = False) -> Self:
        """Write ``value`` into the rows ``index`` of the existing entry ``key`` (a
        dataset, or every dataset of a group: all or nothing); ``update_at_`` and
        ``copy_at_`` write through here."""
        plan: list[Callable[[], object]] = []
        try:  # (an index past a dataset's end: h5py refuses it at its first write)
            self._plan_at(key, value, index, plan)
            for write in plan:
                write()
        except IndexError as error:
            call = f"set_at_({key!r}, value, {index!r})"
            raise _batch.entry_index_error(call, key, None, error) from None
        return self

    def _plan_at(self, key: Any, value: Any, index: Any, plan: list[Callable[[], object]]) -> None:
        """:meth:`set_at_`'s writes, each checked, added to ``plan``."""
        node, group, name, target = self._existing(key)
        self._check_into_records(_keys.key_path(key), value)
        index = list_index(index)
        if not is_group(target) and target.dtype is not None:  # (a tensor's own dims)
            index = batch_index(index, torch.Size(target.shape or ()))
            where = node._where(name)
            plan.append(plan_rows(target, index, value, len(node._batch_size), self._label, where))
            return
        index = batch_index(index, self._batch_size)
        if is_group(target):
            node._child_of(name, target)._plan_rows(index, value, True, plan)
        else:  # a Python value: through the group's rows, as ptd[index] = {...}; checked now
            plan.append(node._planned_value_rows(group, name, index, value))

    def _check_writes_at(self, writes: Sequence[tuple[tuple[str, ...], Any, Any]]) -> None:
        """``update_at_``'s writes, each checked (at the index it is written at) before
        the first is made (all or nothing, as ``ptd[index] = {...}``), where the peer's
        file writes the entries before the one refused."""
        for path, value, index in writes:
            self._plan_at(path, value, index, [])

    def update_(
        self,
        input_dict_or_td: Any = None,
        clone: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Self:
        """Write every entry of ``input_dict_or_td`` (and ``kwargs``) into the existing
        datasets.

        Raises:
            KeyNotFoundError: (a ``KeyError``, as the peer's) a key the file does not
                hold; nothing is written.
        """
        source = dict(kwargs) if input_dict_or_td is None else input_dict_or_td
        if input_dict_or_td is not None and kwargs:
            source = {**dict(source_items(input_dict_or_td)), **kwargs}
        allowed = None if keys_to_update is None else [_keys.key_path(k) for k in keys_to_update]
        skipped: list[tuple[str, ...]] = []
        self._require_keys(source, (), allowed, skipped)
        if skipped:
            source = dropped_entries(source, skipped, ())
        return self.update(source, clone=clone, inplace=True, keys_to_update=keys_to_update)

    def _require_keys(
        self,
        source: Any,
        prefix: tuple[str, ...],
        allowed: list[tuple[str, ...]] | None,
        skipped: list[tuple[str, ...]],
        missing_ok: bool = False,
    ) -> None:
        """Raises the missing-key error of the first key of ``source`` (a mapping, a
        collection or a record; under ``prefix``) this file does not hold (``missing_ok``:
        passes it, for ``update(..., inplace=True)``, which sets it); a missing key whose
        value holds nothing to write is added to ``skipped``. Each write into a key it
        holds is checked as ``set_`` makes it."""
        for key, value in source_items(source):
            path = prefix + _keys.key_path(key)
            if allowed is not None and not any(
                path[: len(a)] == a or a[: len(path)] == path for a in allowed
            ):
                continue
            nested = is_record(value) or isinstance(value, (Mapping, TensorCollection))
            nested = nested and not isinstance(value, (NonTensorData, NonTensorStack))
            if path not in self:
                if missing_ok:
                    continue
                if nested and not holds_leaves(value):
                    skipped.append(path)  # nothing to write (a TensorDict's update_ too)
                    continue
                raise self._missing_key(path[0] if len(path) == 1 else path)
            node, _, name, target = self._existing(path)
            if nested and not holds_leaves(value) and not is_group(target):
                skipped.append(path)  # nothing to write into the dataset (a TensorDict's too)
            elif nested and is_group(target):
                self._require_keys(value, path, allowed, skipped, missing_ok)
            else:  # checked as set_ writes it, before any entry is (as the peer's file)
                node._refuse_set_(name, target, value)
                if not is_group(target) and target.dtype is not None:
                    plan_rows(target, ..., value, 0, self._label, node._where(name), copy=True)

    def _write_rows(self, index: Any, value: Any, values: bool = True) -> None:
        """``value`` (a collection, a dict, a tensor or a number for every array) written
        into the rows ``index`` of every array, and (``values``) the Python values a
        collection or dict holds into those rows of the arrays of values: all or nothing,
        every write checked (shapes and dtypes from the store's metadata) before the first
        is made, where the peer writes the entries before the one refused."""
        plan: list[Callable[[], object]] = []
        self._plan_rows(index, value, values, plan)
        for write in plan:
            write()

    def _plan_rows(
        self, index: Any, value: Any, values: bool, plan: list[Callable[[], object]]
    ) -> None:
        """:meth:`_write_rows`'s writes, each checked, added to ``plan``."""
        group = self._writable()
        index = batch_index(list_index(index), self._batch_size)
        # checked first, as a TensorDict's rows are: a file with no arrays (or none that
        # an index out of range reaches, over no elements) writes nothing to refuse it
        rows_shape(self._batch_size, index)
        if is_record(value):
            value = storage_of(value)
        keyed = isinstance(value, (Mapping, TensorCollection))
        for key in self._key_names():
            node = group[key]
            part: Any = value.get(key, _MISSING) if keyed else value
            if part is _MISSING:
                continue
            if is_group(node):
                self._child_of(key, node)._plan_rows(index, part, values, plan)
            elif node.dtype is not None:
                where = self._where(key)
                plan.append(plan_rows(node, index, part, len(self._batch_size), self._label, where))
            elif keyed and values:
                plan.append(self._planned_value_rows(group, key, index, part))
        if keyed and values:  # keys the file lacks: made last, checked now
            for key in value.keys():
                if type(key) is str and key not in group:
                    plan.append(self._planned_new(index, key, value.get(key)))

    def _planned_new(self, index: Any, key: str, part: Any) -> Callable[[], object]:
        """A key of the rows' value that the file lacks, made as a view of the rows makes
        it (zeros outside the rows, as the peer's file makes it; tclass dropped it),
        refused now where that would refuse it: a locked file, a value whose leading dims
        are not the rows' batch size, a Python value (the other rows would hold none)."""
        if self._locked:
            raise LockedError(
                "Cannot modify locked TensorDict (a PersistentTensorDict): "
                f"cannot add {key!r} at the rows "
                f"{index!r}; unlock it first, or write only the keys it holds"
            )
        view = cast("PersistentTensorDict", self)._rows(index)
        batch = view.batch_size
        sub = storage_of(part)
        if isinstance(sub, Mapping):
            sub = TensorDict(sub, batch)  # (its batch size checked now)
        if not isinstance(sub, (torch.Tensor, TensorCollection)) or isinstance(
            sub, (NonTensorData, NonTensorStack)
        ):
            if self._batch_size.numel():
                msg = (
                    f"cannot add the Python value {key!r} at the rows {index!r} of "
                    f"{self._where()}: the file's other rows would hold none; nothing was "
                    "written. Set it on the PersistentTensorDict (ptd[key] = value)"
                )
                raise InPlaceWriteError(msg)
        elif tuple(sub.shape[: len(batch)]) != tuple(batch):
            raise BatchMismatchError(key, sub.shape, batch)
        return partial(view.set, key, part)

    def _planned_value_rows(
        self, group: StoreGroup, key: str, index: Any, value: Any
    ) -> Callable[[], object]:
        """``value`` into the rows ``index`` of the Python values ``key``: read, written
        in memory (a TensorDict's rows) and checked now; written back by what it returns."""
        rows = TensorDict._new_unchecked({key: self._entry(key)}, self._batch_size, None)
        if isinstance(index, RepeatedRow):  # a file's one row, through a new dim
            lifted, positions = index.lifted(rows)
            lifted[positions] = {key: value}
            rows = lifted[0]
        else:
            rows[index] = {key: value}
        return self._values_writer(group, key, rows._entry(key))  # type: ignore[arg-type]

    def _apply_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...]
    ) -> Self:
        """``apply_``: each array read and worked on in memory, its result checked
        against the record whose group holds it and staged; written once all are (see
        ``_staged.py``): a function that raises or a result a record refuses leaves the
        file as it was, and the memory needed is about the largest array's."""
        self._staged_apply(None, fn, others)
        return self

    def _stage_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...], staged: Any
    ) -> None:
        """Nested in a collection's ``apply_``: staged by its own rules, written with
        the outer walk's results."""
        self._staged_apply(None, fn, others, staged)

    def _staging(self) -> tuple[PersistentTensorDict, Any, torch.Size]:
        """What in-place work an array at a time (``stage_in_place``) works on: this
        file, all its rows."""
        return cast("PersistentTensorDict", self), Ellipsis, self._batch_size

    def _write_back(self, local: TensorDictBase) -> None:
        """The tensors of ``local`` (the entries read and worked on in memory) written
        into the arrays."""
        self._write_rows(Ellipsis, local, values=False)

    def zero_(self) -> Self:
        """Write zeros into every array (nothing is read), once the records' groups are
        checked to take them (as ``fill_`` is)."""
        self._check_into_records((), 0)
        return self._fill_all(0)

    def _fill_all(self, value: float | bool) -> Self:
        group = self._writable()
        for key in self._key_names():
            node = group[key]
            if is_group(node):
                self._child_of(key, node)._fill_all(value)
            elif node.dtype is not None and 0 not in (node.shape or ()):
                fill(node, node.dtype, value)
        return self
