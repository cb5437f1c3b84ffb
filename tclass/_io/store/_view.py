"""``PersistentTensorDictView``: the rows of a ``PersistentTensorDict`` (an HDF5 file or a
zarr store) that an index selects, as a collection that reads from and writes into the
store: what ``ptd[index]`` gives (``ptd[2:4]``, ``ptd[1]``, ``ptd[mask]``, ``ptd[[0, 3]]``),
as the peer's ``_SubTensorDict`` of a file.

Reads go to the store each time and read only the selected rows (``read_rows``: a span,
or the distinct rows of a list); a group reads as the view of that group through the
same index, and indexing a view gives a view of the store through both indexes
(``ptd[2:8][1:3]`` is ``ptd[3:5]``). Every in-place write goes to those rows of the
store: ``view["a"] = x``, ``set`` and ``set_`` of an existing entry, ``update`` (with or
without ``inplace``), ``update_``, ``view[i] = rows``, ``set_at_``, ``fill_``,
``zero_``, ``apply_``, the in-place math (``+=``, ``mul_``, ``clamp_``...) and
``copy_``; the rows are read, worked on in memory and written back where the method
needs their values. A new key set on a view makes an array of the store's whole batch
size, zeros outside the view's rows (as the peer's); a deletion or a rename deletes or
renames the store's entry (the peer's too).

``to_tensordict()``, ``clone()``, ``contiguous()`` and ``unbind`` read the rows into
plain TensorDicts; math and every out-of-place method give in-memory results. The
batch size is what the index gives (assigning another is refused), the names are the
store's through the index (renaming is refused: rename the store), the device and the
lock are the store's (``lock_`` locks the store; the peer refuses it on a view). After
the store is closed, reading or writing is a ``ClosedFileError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, cast, overload

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection, ToArg
from tclass._base.implemented._lock_blocks import SourceLock
from tclass._base.implemented._view_entries import ViewEntries
from tclass._core import _batch, _keys, _names
from tclass._core._batch import format_shape
from tclass._core._keys import BatchIndex
from tclass._core._method_names import name_methods_after
from tclass._core._names import DimName, Names
from tclass._core._records import storage_of
from tclass._engine._nontensor import NonTensorData, _NonTensorNode
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._repr import compact_repr, shows_compact_repr
from tclass._engine._td import TensorDict
from tclass._engine._td_setitem import leading_ones_dropped, source_batch_error
from tclass._io.store._datasets import RepeatedRow, list_index, rows_shape
from tclass._io.store._protocol import is_group
from tclass._io.store._records import source_items
from tclass._io.store._surface import RowsInMemory, in_memory
from tclass.errors import (
    BatchMismatchError,
    BatchSizeError,
    DimNameError,
    InPlaceWriteError,
    LockedError,
    StoreShapeError,
    UnsupportedError,
)

if TYPE_CHECKING:
    from tclass._core._device import DeviceLike
    from tclass._io.store._persistent import PersistentTensorDict

__all__ = ["PersistentTensorDictView", "compose", "normalized"]

_MISSING: Any = object()
# the methods that move entries elsewhere, deleting them here (cat_tensors / stack_tensors
# without keep_entries=True): refused on a view, whose file would lose every row of them
_MOVES = frozenset({"separates", "cat_tensors", "stack_tensors"})


def normalized(index: Any, batch: torch.Size) -> Any:
    """``index`` as a view keeps it: a list as a tensor, ``...`` spelled out over the
    batch dims (a dataset's trailing dims are its features)."""
    if isinstance(index, list):
        index = list_index(index)
    elif type(index) is tuple:
        index = tuple(list_index(part) for part in index)
    return _batch.convert_ellipsis_to_idx(index, batch)


def compose(first: Any, second: Any, batch: torch.Size) -> Any:
    """An index into a collection of batch size ``batch`` equal to indexing with
    ``first``, then with ``second``: along the first dim where ``first`` selects rows
    only (a slice, rows or a mask; slices give a slice, so the store still reads a
    span), else the positions both select, one tensor per batch dim (of a batch size
    ``[]``: new dims only, or a :class:`RepeatedRow` where they repeat its one row)."""
    rows = _rows_of(first, batch)
    items = second if type(second) is tuple else (second,)
    # Rows picked by a tensor or an int beside a later tensor would index together (one
    # broadcast advanced index, ``[rows, []]``), not one after the other: positions then.
    later_tensor = any(isinstance(part, torch.Tensor) for part in items[1:])
    if rows is not None and items and not later_tensor:
        picked = _pick(rows, items[0])
        if picked is not None:
            return picked if len(items) == 1 else (picked, *items[1:])
    if isinstance(first, RepeatedRow):  # the one row of a 0-d batch, repeated
        positions = torch.zeros(first.shape, dtype=torch.long)[second]
    else:
        positions = torch.arange(batch.numel()).reshape(batch)[first][second]
    if not batch and positions.dim():  # no dim to index: only new dims of one row
        sizes = tuple(positions.shape)
        if sizes.count(0) == 1 and all(size in (0, 1) for size in sizes):
            # no row: a 0-d False mask makes the one dim of size 0 (None the others)
            return tuple(torch.tensor(False) if size == 0 else None for size in sizes)
        if any(size != 1 for size in sizes):  # (torch has no one index for it)
            return RepeatedRow(sizes)
        return (None,) * positions.dim()
    return tuple(torch.unravel_index(positions, batch))


def _rows_of(index: Any, batch: torch.Size) -> range | torch.Tensor | None:
    """The rows of the first dim an index selecting along that dim only picks (a range
    for a slice), else None."""
    items = index if type(index) is tuple else (index,)
    if not batch or not items or any(part != slice(None) for part in items[1:]):
        return None
    head = items[0]
    if isinstance(head, slice):
        return range(batch[0])[head]
    if isinstance(head, torch.Tensor) and head.ndim == 1 and not head.is_floating_point():
        if head.dtype is torch.bool:
            return head.nonzero().squeeze(-1) if head.shape[0] == batch[0] else None
        return torch.where(head < 0, head + batch[0], head)
    return None


def _pick(rows: range | torch.Tensor, head: Any) -> Any:
    """``rows[head]`` as an index of the first dim (an int, a slice or rows), or None
    when ``head`` is not an index of one dim."""
    if isinstance(head, bool) or head is None or head is Ellipsis:
        return None
    if isinstance(head, int) or (isinstance(head, torch.Tensor) and head.ndim == 0):
        picked = rows[int(head)]
        return int(picked)
    if isinstance(rows, range) and isinstance(head, slice):
        span = rows[head]
        return slice(span.start, max(span.stop, 0), span.step)
    if isinstance(head, (slice, torch.Tensor)):
        # (a range of no rows may run backwards, range(4)[5:-3], which arange refuses)
        tensor = (
            torch.arange(len(rows)) * rows.step + rows.start if isinstance(rows, range) else rows
        )
        if isinstance(head, torch.Tensor) and (head.is_floating_point() or head.ndim != 1):
            return None
        return tensor[head]
    return None


@name_methods_after
class PersistentTensorDictView(SourceLock, RowsInMemory, TensorDictBase):
    """The rows ``index`` of a ``PersistentTensorDict`` (see the module docstring): made
    by indexing it (``ptd[2:4]``), or a view (``view[0]``)."""

    __slots__ = ("_source", "_selection", "_steps", "_batch", "_lock_block", "__weakref__")

    _source: PersistentTensorDict

    _is_store = True  # over a file: never copied as a TensorDict would be
    _saved_at = None  # records read this: a file is not a saved folder

    def __init__(
        self, source: PersistentTensorDict, index: Any, steps: tuple[Any, ...] = ()
    ) -> None:
        """``steps``: the indices (normalized) of the views this one was made through,
        after the first, so that the dim names follow each (a composed index of several
        tensors would name no dim)."""
        batch = source.batch_size
        if isinstance(index, RepeatedRow):  # (new dims: no names)
            normal: Any = (None,) * len(index.shape)
        else:
            index = normalized(index, batch)
            items = index if type(index) is tuple else (index,)
            normal = _batch.normalize_index(items, len(batch))  # DimError: too many dims
        self._source = source
        self._selection = index
        self._steps = steps or (tuple(normal),)
        self._batch = rows_shape(batch, index)  # DimError: out of range
        self._lock_block = None

    @property
    def source(self) -> PersistentTensorDict:
        """The ``PersistentTensorDict`` this view reads and writes."""
        return self._source

    @property
    def index(self) -> Any:
        """The index of the source's batch dims this view selects."""
        return self._selection

    def _stored_in(self) -> str:
        return self._source._stored_in()

    def _at(self, index: Any) -> PersistentTensorDictView:
        """The rows ``index`` of this view, as a view of the source."""
        second = normalized(index, self._batch)
        items = second if type(second) is tuple else (second,)
        normal = _batch.normalize_index(items, len(self._batch))
        _batch.indexed_shape(self._batch, second)  # a DimError (an IndexError) now
        composed = compose(self._selection, second, self._source.batch_size)
        steps = (*self._steps, tuple(normal))
        return PersistentTensorDictView(self._source, composed, steps)

    # --- collection primitives ----------------------------------------------------------

    @property
    def batch_size(self) -> torch.Size:
        """The batch size the index gives; assigning another is refused (a view cannot
        change its file's)."""
        return self._batch

    @batch_size.setter
    def batch_size(self, value: Any) -> None:
        self._assign_batch_size(torch.Size(value))

    @property
    def _batch_size(self) -> torch.Size:  # what records read
        return self._batch

    @property
    def device(self) -> torch.device | None:
        """The device entries are read onto (the source's)."""
        return self._source.device

    @property
    def _device(self) -> torch.device | None:
        return self._source.device

    @property
    def _tensors(self) -> ViewEntries:
        """The entries as a mapping read from the store (a record's fields use it)."""
        return ViewEntries(self)

    def _key_names(self) -> list[str]:
        return self._source._key_names()

    def _has_entry(self, key: str) -> bool:
        return self._source._has_entry(key)

    def _items(self) -> Iterator[tuple[str, Value]]:
        for key in self._key_names():
            yield key, self._entry(key)

    def _entry(self, key: str) -> Value:
        """The entry ``key``: the rows of an array, read; the view of a group."""
        return self._source._entry_rows(key, self._selection, self._batch, self._steps)

    def _entry_class(self, key: str) -> type:
        """An array of tensor data is a ``torch.Tensor`` by the store's metadata, nothing
        read (``update_at_`` asks it of every entry written)."""
        node = self._source._node(key)
        if not is_group(node) and node.dtype is not None:
            return torch.Tensor
        return super()._entry_class(key)

    def _child(self, key: str) -> TensorCollection | None:
        node = self._source._node(key)
        if not is_group(node) and node.dtype is not None:
            return None  # a tensor: nothing read
        found: TensorCollection = self._entry(key)  # type: ignore[assignment]
        return found

    def _repr_items(self) -> Iterator[tuple[str, Any]]:
        """Arrays shown by dtype and shape (nothing read), groups as views."""
        source = self._source
        for key in self._key_names():
            node = source._node(key)
            if is_group(node) or node.dtype is None or node.shape is None:
                yield key, self._entry(key)
            else:
                tail = tuple(node.shape[len(source.batch_size) :])
                yield key, torch.zeros((), dtype=node.dtype).expand((*self._batch, *tail))

    def _new_like(
        self, values: dict[str, Value], batch_size: torch.Size, device: torch.device | None
    ) -> Self:
        out = TensorDict._new_unchecked(values, batch_size, device)
        names = self._dim_names
        if names is not None and batch_size == self._batch:
            out._assign_names(names)
        return out  # type: ignore[return-value]

    def _map_values(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        values = {key: fn(value) for key, value in self._items()}
        return self._new_like(values, batch_size, self.device if device is ... else device)

    def _map_values_split(
        self, fn: Callable[[Value], Sequence[Value]], batch_sizes: Sequence[torch.Size]
    ) -> tuple[Self, ...]:
        return self.to_tensordict()._map_values_split(fn, batch_sizes)  # type: ignore[return-value]

    def _check_new_batch_size(self, new: torch.Size, prefix: tuple[str, ...]) -> None:
        if new != self._batch:
            self._refuse_batch_size(new)

    def _assign_batch_size(self, new: torch.Size) -> None:
        if new != self._batch:
            self._refuse_batch_size(new)

    def _refuse_batch_size(self, new: torch.Size) -> None:
        msg = (
            f"cannot give batch size {format_shape(new)} to a view of rows of "
            f"{self._source.filename!r} (batch size {format_shape(self._batch)}): a view "
            "cannot change its file's batch size; call to_tensordict() first for a copy"
        )
        raise BatchSizeError(msg)

    # --- names ---------------------------------------------------------------------------

    @property
    def _dim_names(self) -> Names:
        names = self._source._dim_names
        for items in self._steps:  # each view's index in turn, as the peer's sub-views
            names = _names.indexed(names, items)
        return names

    @property
    def names(self) -> list[Any]:  # str names usually: any hashable, as the peer
        """The source's dim names through the index; assigning other names is refused
        (rename the source, or a copy)."""
        return _names.show(self._dim_names, len(self._batch))

    @names.setter
    def names(self, value: Sequence[DimName] | None) -> None:
        self._rename_all(_names.as_names(value, len(self._batch)))

    def _assign_names(self, names: Names) -> None:
        self._rename_all(names)

    def _rename_all(self, names: Names) -> None:
        if names == self._dim_names:
            return
        msg = (
            f"Names of a PersistentTensorDictView (a view of rows of {self._source.filename!r}) "
            f"cannot be modified ({self.names}): they are the file's; rename the "
            "PersistentTensorDict, or call to_tensordict() first"
        )
        raise DimNameError(msg)

    # --- reading -------------------------------------------------------------------------

    def get(self, key: Any, default: Any = None) -> Any:
        """The entry at ``key`` (its rows read from the store), or ``default`` when
        absent."""
        node: Any = self
        for part in _keys.key_path(key):
            node = storage_of(node)
            if not isinstance(node, PersistentTensorDictView) or not node._has_entry(part):
                return default
            node = node._entry(part)
        return node

    @overload
    def __getitem__(self, index: str | tuple[str, ...]) -> Any: ...  # an entry
    @overload
    def __getitem__(self, index: BatchIndex) -> Self: ...

    def __getitem__(self, index: Any) -> Any:
        """An entry by key (its rows read; a Python value as the value itself), or the
        rows ``index`` selects of this view: a view of the store too."""
        if isinstance(index, str) or (type(index) is tuple and _keys.is_key_tuple(index)):
            value = self.get(index, _MISSING)
            if value is _MISSING:
                raise self._missing_key(index)
            return value._read() if isinstance(value, _NonTensorNode) else value
        return self._at(index)

    def _index(self, index: Any) -> PersistentTensorDictView:
        """The rows ``index`` of this view (what a record over it indexes it with)."""
        return self._at(index)

    _index_int = _index_slice = _index

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """The rows read into memory, as a plain TensorDict."""
        entries = {key: in_memory(value) for key, value in self._items()}
        out = TensorDict._new_unchecked(entries, self._batch, self.device)
        out._assign_names(self._dim_names)
        return out

    def clone(self, recurse: bool = True) -> Self:
        """The rows read into memory (a plain TensorDict); ``recurse=False``: the same
        view of a new PersistentTensorDict over the same file."""
        if recurse:
            return self.to_tensordict()  # type: ignore[return-value]
        return type(self)(self._source.clone(False), self._selection, self._steps)

    def is_contiguous(self) -> bool:
        """False, as the source's: the entries are in the store (``contiguous()`` reads
        them into a TensorDict)."""
        return False

    def is_memmap(self) -> bool:
        """False: the entries are read from the store."""
        return False

    def unbind(self, dim: int = 0) -> tuple[Self, ...]:
        """The rows read into memory, cut along ``dim`` into TensorDicts (as the peer's)."""
        return self.to_tensordict().unbind(dim)  # type: ignore[return-value]

    def rename(self, *names: str | None, **rename_map: str) -> Self:
        """The rows read into a TensorDict whose dims are renamed (the file keeps its
        names)."""
        return self.to_tensordict().rename(*names, **rename_map)  # type: ignore[return-value]

    def rename_keys(self, mapping: Mapping[Any, Any], *, strict: bool = True) -> Self:
        """The rows read into a TensorDict with keys renamed; the file is not changed."""
        return self.to_tensordict().rename_keys(mapping, strict=strict)  # type: ignore[return-value]

    def replace(self, *args: Mapping[Any, Any] | TensorCollection, **kwargs: Any) -> Self:
        """The rows read into a TensorDict with the given entries written into it; the
        file is not changed."""
        return self.to_tensordict().replace(*args, **kwargs)  # type: ignore[return-value]

    def auto_device_(self) -> Self:
        """Records the file's device (see ``PersistentTensorDict.auto_device_``)."""
        self._source.auto_device_()
        return self

    def clear_device_(self) -> Self:
        """Forgets the file's device: entries are then read onto the CPU."""
        self._source.clear_device_()
        return self

    def to(self, *args: ToArg, **kwargs: Any) -> Self:
        """To a device: the same rows of the store, read onto that device (``self`` when
        it does not change); with a dtype (or anything else): the rows read and
        converted, as a plain TensorDict."""
        moved: Any = self._source.to(*args, **kwargs)
        if moved is self._source:
            return self
        if type(moved) is type(self._source):
            return type(self)(moved, self._selection, self._steps)
        return self.to_tensordict().to(*args, **kwargs)  # type: ignore[return-value]

    def cpu(self) -> Self:
        """The same rows, read onto the CPU."""
        return self.to("cpu")

    def cuda(self, device: int | DeviceLike = None) -> Self:
        """The same rows, read onto a CUDA device."""
        return type(self)(self._source.cuda(device), self._selection, self._steps)

    # --- writing: into the rows of the store ----------------------------------------------

    def _parent(self, path: tuple[str, ...], make: bool = True) -> PersistentTensorDictView:
        """The view holding ``path``'s last part (the views of the groups on the way;
        missing groups made, as ``set`` makes them, when ``make``: else the deepest group
        of the way that the file holds)."""
        node = self
        for part in path[:-1]:
            if not node._has_entry(part):
                if not make:
                    return node
                node._source._parent_for((part, ""))
            found = storage_of(node._entry(part))
            if not isinstance(found, PersistentTensorDictView):
                msg = f"cannot write {path!r}: {part!r} is not a group in {self._where()}"
                raise InPlaceWriteError(msg)
            node = found
        return node

    def _where(self) -> str:
        return f"the rows {_shown(self._selection)} of {self._source._where()}"

    def set_(self, key: Any, value: Any, *, non_blocking: bool = False) -> Self:
        """Write ``value`` into the view's rows of the existing entry ``key`` (an array,
        or a group entry by entry).

        Raises:
            KeyNotFoundError: (a ``KeyError``) ``key`` is not in the store.
            BatchMismatchError: ``value``'s leading dims are not the view's batch size.
        """
        path = _keys.key_path(key)
        parent = self._parent(path, make=False)  # (no group made on the way)
        if path not in self:
            raise self._missing_key(key)
        _run(parent._write_into, path[-1], value)
        return self

    def _write_into(self, name: str, value: Any, plan: list[Callable[[], object]]) -> None:
        """``value`` written into this view's rows of the entry ``name``: checked now,
        the writes added to ``plan``."""
        source = self._source
        node = source._node(name)
        value = storage_of(value)
        if is_group(node) and isinstance(value, (Mapping, TensorCollection)):
            if not isinstance(value, (NonTensorData, NonTensorStack)):
                found: Any = storage_of(self._entry(name))
                found._plan_update(value, True, None, None, plan)
                return
        nested = isinstance(value, (Mapping, TensorCollection)) and not isinstance(
            value, (NonTensorData, NonTensorStack)
        )
        if is_group(node) or nested:
            held = "a group" if is_group(node) else "an array"
            msg = (
                f"cannot write a {type(value).__name__} into {name!r} of {self._where()}: the "
                f"file holds {held} there, and a view of rows cannot replace it; set the entry "
                "on the PersistentTensorDict"
            )
            raise InPlaceWriteError(msg)
        if isinstance(value, torch.Tensor) and node.dtype is not None:
            tail = tuple(node.shape or ())[len(source.batch_size) :]
            value = self._check_rows(name, value, tail)
        source._plan_at(name, value, self._selection, plan)

    def _check_rows(self, name: str, value: torch.Tensor, tail: tuple[int, ...]) -> torch.Tensor:
        """Refuses a tensor that does not fit the view's rows of the array ``name``; the
        tensor without its leading dims of size 1 beyond the rows' dims (as the store's
        write, and torch's ``rows[...] = value``, drop them: the peer's write of a ``[1]``
        tensor into a view's ``[]`` rows)."""
        nb = len(self._batch)
        if tuple(value.shape[:nb]) != tuple(self._batch) and value.ndim >= nb:
            raise BatchMismatchError(name, value.shape, self._batch)
        dropped = value
        while dropped.ndim > nb + len(tail) and dropped.shape[0] == 1:
            dropped = dropped[0]
        if tuple(dropped.shape[:nb]) == tuple(self._batch):
            value = dropped
        given = tuple(value.shape[nb:])
        if len(given) > len(tail) or any(
            s not in (1, t) for s, t in zip(reversed(given), reversed(tail), strict=False)
        ):
            msg = (
                f"cannot write a tensor of shape {list(value.shape)} into {name!r} of "
                f"{self._where()}: its rows have shape {[*self._batch, *tail]}, and a view "
                "of rows cannot replace the file's entry (its other rows); set the entry on "
                "the PersistentTensorDict to replace it"
            )
            raise StoreShapeError(msg)
        return value

    def set(
        self, key: Any, value: Any, inplace: bool = False, *, non_blocking: bool = False
    ) -> Self:
        """Write ``value`` into the view's rows of the entry ``key``; a new key becomes an
        array (or a group) of the store's whole batch size, zeros outside these rows, as
        the peer's.

        Raises:
            LockedError: (a ``RuntimeError``) for a new key of a locked store.
            InPlaceWriteError: for a new key holding a Python value (its other rows
                would have none: set it on the PersistentTensorDict), unless the file
                has no rows.
        """
        return self._set(key, value, inplace)

    def _set(self, key: Any, value: Any, inplace: bool) -> Self:
        """:meth:`set`: ``inplace`` broadcasts a tensor into an array's rows, as
        ``set_`` and ``update_`` do; else its leading dims must be the rows' batch size,
        as for a TensorDict's ``set`` of an existing key."""
        _run(self._plan_set, key, value, inplace)
        return self

    def _plan_set(
        self, key: Any, value: Any, inplace: bool, plan: list[Callable[[], object]]
    ) -> None:
        """:meth:`_set`'s writes, each checked, added to ``plan`` (a new key's too: made
        when the plan is run)."""
        path = _keys.key_path(key)
        if path not in self:  # its groups on the way made by the write, not the check
            self._parent(path, make=False)._check_new(path[-1], value)
            plan.append(partial(self._add_at, path, value))
            return
        parent = self._parent(path)
        name = path[-1]
        if not inplace and isinstance(value, torch.Tensor):
            if tuple(value.shape[: len(parent._batch)]) != tuple(parent._batch):
                raise BatchMismatchError(name, value.shape, parent._batch)
        parent._write_into(name, value, plan)

    def _add_at(self, path: tuple[str, ...], value: Any) -> None:
        """The new entry ``path`` made (its missing groups, then :meth:`_add`), then
        ``value`` written into it."""
        parent = self._parent(path)
        parent._add(path[-1], value)
        _run(parent._write_into, path[-1], value)

    def _add(self, name: str, value: Any) -> None:
        """A new entry ``name`` in the store, zeros of its whole batch size, shaped as
        ``value`` gives this view's rows."""
        source = self._source
        made = self._check_new(name, value)
        if made is None:  # no rows outside the view: the file's entry
            source.set(name, value)
            return
        value = made
        nb, whole = len(self._batch), source.batch_size

        def zeros(tensor: torch.Tensor) -> torch.Tensor:
            return torch.zeros((*whole, *tensor.shape[nb:]), dtype=tensor.dtype)

        if isinstance(value, torch.Tensor):
            source.set(name, zeros(value))
        else:
            source.set(name, cast(Any, value).apply(zeros, batch_size=whole))

    def _check_new(self, name: str, value: Any) -> Any:
        """Refuses ``value`` for the new entry ``name`` where :meth:`_add` would; the
        value it makes the entry from (None: a Python value the file's entry takes)."""
        source = self._source
        if source.is_locked:
            raise LockedError(
                "Cannot modify locked TensorDict (a PersistentTensorDict): "
                f"cannot set {name!r} (through a view "
                "of its rows); unlock it first"
            )
        value = storage_of(value)
        if isinstance(value, dict):
            value = TensorDict(value, self._batch)
        if isinstance(value, (NonTensorData, NonTensorStack)) or not isinstance(
            value, (torch.Tensor, TensorCollection)
        ):
            if not source.batch_size.numel():  # no rows outside the view: the file's entry
                return None
            msg = (
                f"cannot add the Python value {name!r} through a PersistentTensorDictView "
                f"({self._where()}): the file's other rows would hold none; set it on the "
                "PersistentTensorDict"
            )
            raise InPlaceWriteError(msg)
        nb = len(self._batch)
        if tuple(value.shape[:nb]) != tuple(self._batch):
            raise BatchMismatchError(name, value.shape, self._batch)
        return value

    def __setitem__(self, index: Any, value: Any) -> None:
        """``view[key] = value`` writes the view's rows of an entry (a new key: see
        :meth:`set`); ``view[idx] = rows`` writes those rows of every array."""
        if isinstance(index, str) or (type(index) is tuple and _keys.is_key_tuple(index)):
            self.set(index, value)
            return
        if isinstance(value, TensorCollection):  # checked before any array is written
            source = storage_of(value)  # (one without entries: the message says so)
            error = source_batch_error(self, index, source, empty=not list(source.keys()))
            if error is not None:
                raise error
            value = leading_ones_dropped(self, index, value)
        else:  # checked against every array first (a tensor, a number, a list)
            value = self._source._checked_rows(self, index, value)
        self._at(index)._write_all(value)

    def _write_all(self, value: Any) -> None:
        """``value`` (a collection, a dict, a tensor or a number) into every entry (what
        lands in a record's group checked against its class first)."""
        self._source._check_into_records((), value)
        self._source._write_rows(self._selection, value)

    def _update_entries(
        self,
        source: Any,
        clone: bool,
        inplace: bool,
        keys_to_update: Sequence[Any] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> Self:
        """Every entry of ``source`` written into the view's rows (a new key: see
        :meth:`set`): all or nothing, every entry checked (the store's metadata) before
        the first is written, where the peer's view writes the entries before the one
        refused."""
        _run(self._plan_update, source, inplace, keys_to_update, is_leaf)
        return self

    def _check_writes_at(self, writes: Sequence[tuple[tuple[str, ...], Any, Any]]) -> None:
        """``update_``'s writes (at ``...``), each checked as :meth:`set_` writes it
        before the first is made (all or nothing)."""
        for path, value, _ in writes:
            if path in self:  # (else the write says so)
                self._parent(path)._write_into(path[-1], value, [])

    def _make_writes_at(
        self, writes: Sequence[tuple[tuple[str, ...], Any, Any]], whole: Sequence[bool]
    ) -> None:
        """``update_at_``'s writes, all or nothing: each entry's rows read once, written
        in memory (the check, :meth:`_plan_at`) and written back from that read once
        every one is checked (a view's entries all have its batch dims: ``whole`` is all
        False)."""
        _run(self._plan_writes_at, writes)

    def _plan_writes_at(
        self, writes: Sequence[tuple[tuple[str, ...], Any, Any]], plan: list[Callable[[], object]]
    ) -> None:
        """Each ``update_at_`` write checked (:meth:`_plan_at`), added to ``plan``."""
        for path, value, index in writes:
            self._plan_at(path, value, index, plan)

    def _plan_update(
        self,
        source: Any,
        inplace: bool,
        keys_to_update: Sequence[Any] | None,
        is_leaf: Callable[[type], bool] | None,
        plan: list[Callable[[], object]],
    ) -> None:
        """:meth:`_update_entries`'s writes, each checked, added to ``plan``."""
        wanted = None if keys_to_update is None else [_keys.key_path(k) for k in keys_to_update]
        for key, value in source_items(source):
            path = _keys.key_path(key)
            inner = None  # what is wanted below path: None for everything
            if wanted is not None and not any(path[: len(w)] == w for w in wanted):
                inner = [w[len(path) :] for w in wanted if w[: len(path)] == path]
                if not inner:
                    continue  # neither this key nor anything under it was asked for
            merge = isinstance(value, Mapping) or (
                isinstance(value, TensorCollection)
                and not value._is_leaf_node
                and (is_leaf is None or not is_leaf(type(value)))
            )
            found = storage_of(self.get(path, None)) if merge else None
            if isinstance(found, PersistentTensorDictView):
                found._plan_update(value, inplace, inner, is_leaf, plan)
            else:
                self._plan_set(path, value, inplace, plan)

    def set_at_(self, key: Any, value: Any, index: Any, *, non_blocking: bool = False) -> Self:
        """Write ``value`` into the elements ``index`` (of this view's rows) of the entry
        ``key``: those rows read, written in memory and written back."""
        _run(self._plan_at, key, value, index)
        return self

    def _plan_at(self, key: Any, value: Any, index: Any, plan: list[Callable[[], object]]) -> None:
        """:meth:`set_at_`'s write: the rows read and written in memory (the check),
        their write back added to ``plan`` (``update_at_`` checks each entry so, before
        the first is written)."""
        path = _keys.key_path(key)
        parent = self._parent(path, make=False)  # (no group made on the way)
        if path not in self:
            raise self._missing_key(key)
        current = self.get(path)
        if isinstance(current, TensorCollection):
            current = in_memory(current)
            current[index] = value
        else:
            try:
                current[index] = value
            except RuntimeError as error:  # torch's: the value does not broadcast there
                shape = list(getattr(value, "shape", ()))
                msg = (
                    f"cannot write a tensor of shape {shape} into {_keys.unravel_key(path)!r} "
                    f"at {index!r} of "
                    f"{self._where()} (its rows have shape {list(current.shape)}): it does "
                    f"not broadcast to the elements written; give a tensor of their shape "
                    f"({error})"
                )
                raise InPlaceWriteError(msg) from error
        parent._write_into(path[-1], current, plan)

    def fill_(self, key: Any, value: float | bool | torch.Tensor) -> Self:
        """Fill the view's rows of the array ``key`` (or of every array of a group)."""
        path = _keys.key_path(key)
        parent = self._parent(path, make=False)  # (no group made on the way)
        if path not in self:
            raise self._missing_key(key)
        number = value.item() if isinstance(value, torch.Tensor) else value
        parent._source.set_at_(path[-1], number, parent._selection)
        return self

    def zero_(self) -> Self:
        """Write zeros into the view's rows of every array (nothing is read)."""
        self._source._check_into_records((), 0)
        self._source._write_rows(self._selection, 0)
        return self

    def _apply_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...]
    ) -> Self:
        """``apply_`` on the view's rows, an array at a time, all or nothing (see
        ``_staged.py``)."""
        self._staged_apply(None, fn, others)
        return self

    def _stage_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...], staged: Any
    ) -> None:
        """Nested in a collection's ``apply_``: staged by its own rules, written with
        the outer walk's results."""
        self._staged_apply(None, fn, others, staged)

    def _staging(self) -> tuple[PersistentTensorDict, Any, torch.Size]:
        """The file, the rows and their batch size, for in-place math an array at a time."""
        return self._source, self._selection, self._batch

    def _write_back(self, local: TensorDict) -> None:
        """The tensors of ``local`` (the rows, worked on) written into the store."""
        self._source._check_into_records((), local)
        self._source._write_rows(self._selection, local, values=False)

    def del_(self, key: Any) -> Self:
        """Delete the entry ``key`` from the store (every row of it, as the peer's)."""
        self._source.del_(key)
        return self

    def __delitem__(self, key: Any) -> None:
        self._source.del_(key)

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        """The view's rows of the entry ``key`` read into memory; the entry is then
        deleted from the store (every row of it, as the peer's)."""
        value = self.get(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise self._missing_key(key, popping=True)
            return default
        value = in_memory(value)
        self._source.del_(key)
        return value

    def rename_key_(self, old_key: Any, new_key: Any, safe: bool = False) -> Self:
        """Rename the store's entry ``old_key``."""
        self._source.rename_key_(old_key, new_key, safe=safe)
        return self

    def _drop_paths(self, paths: Sequence[Any]) -> None:
        self._refuse_moves("separates")

    def _refuse_moves(self, method: str) -> None:
        msg = (
            f"Cannot call {method} on a PersistentTensorDictView ({self._where()}): moving "
            "entries deletes them from the file, every row of them, and the new entry would "
            "hold only these rows. Call it on the PersistentTensorDict"
            + (", with keep_entries=True," if method != "separates" else "")
            + " or on to_tensordict()"
        )
        raise UnsupportedError(msg)

    def _store_entry(self, key: str, value: Value, blank: bool = False) -> Value:
        """Writes a record's field into the view's rows."""
        self.set(key, value)
        return value

    def _remove_entry(self, key: str) -> None:
        """Deletes a record's field (set to None) from the store."""
        self._source.del_(key)

    def select(self, *keys: Any, inplace: bool = False, strict: bool = True) -> Self:
        """The entries ``keys`` read into a plain TensorDict.

        Raises:
            UnsupportedError: (a ``RuntimeError``, as the peer's) with ``inplace=True``.
        """
        self._refuse_in_place("select", inplace)
        return self.to_tensordict().select(*keys, strict=strict)  # type: ignore[return-value]

    def exclude(self, *keys: Any, inplace: bool = False) -> Self:
        """Every entry but ``keys`` read into a plain TensorDict.

        Raises:
            UnsupportedError: (a ``RuntimeError``, as the peer's) with ``inplace=True``.
        """
        self._refuse_in_place("exclude", inplace)
        return self.to_tensordict().exclude(*keys)  # type: ignore[return-value]

    def _check_removable(self, method: str, paths: Sequence[Any] | None = None) -> None:
        if method in _MOVES:  # separates, cat_tensors / stack_tensors without keep_entries
            self._refuse_moves(method)
        self._refuse_in_place(method, True)

    def _refuse_in_place(self, method: str, inplace: bool) -> None:
        if inplace:
            msg = (
                f"Cannot call {method} in place on a view of rows of {self._source.filename!r}: "
                f"the file keeps its entries; delete entries with del_(key), or call "
                f"{method}(...) for a TensorDict read from the file"
            )
            raise UnsupportedError(msg)

    def _become(self, other: Self) -> None:
        msg = (
            f"Cannot rewrite the keys or the shape of a view of rows of "
            f"{self._source.filename!r} in place: call the method with inplace=False (a "
            "TensorDict read from the file)"
        )
        raise UnsupportedError(msg)

    def memmap_(self, prefix: Any = None, copy_existing: bool = False, **options: Any) -> Self:
        """Not possible: the entries live in the store; use :meth:`memmap`."""
        raise UnsupportedError(
            "Cannot call memmap_ on a PersistentTensorDictView (a view of rows of "
            f"{self._source.filename!r}): its entries live in the file. Use "
            "view.memmap(prefix) for a memory-mapped copy"
        )

    # --- python protocols ----------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._source, self._selection, self._steps))

    @shows_compact_repr
    def __repr__(self) -> str:
        if not self._source._group.file.is_open:
            return f"{type(self).__name__}(closed file {self._source.filename!r})"
        return compact_repr(self)


def _shown(index: Any) -> str:
    """An index, short, for messages."""
    if isinstance(index, slice):
        start, stop = ("" if end is None else end for end in (index.start, index.stop))
        return f"{start}:{stop}"
    if isinstance(index, torch.Tensor):
        return f"tensor of shape {list(index.shape)}" if index.numel() > 8 else str(index.tolist())
    if type(index) is tuple:
        return "(" + ", ".join(_shown(part) for part in index) + ")"
    return repr(index)


def _run(planner: Callable[..., None], *args: Any) -> None:
    """Runs ``planner(*args, plan)`` (which checks every write and adds it to ``plan``),
    then makes the writes: all or nothing."""
    plan: list[Callable[[], object]] = []
    planner(*args, plan)
    for write in plan:
        write()
