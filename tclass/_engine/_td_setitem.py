"""Writing into a TensorDict with ``td[...] = value`` (a mixin of ``TensorDict``, which
holds the slots these methods write): a key sets an entry, a batch index writes into
every entry in place, from a collection or dict entry by entry, or broadcasting a tensor
or number into every entry as torch writes it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import torch

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._entry_ops import EntryWrites
from tclass._base.implemented._staged_writes import shares_memory
from tclass._core import _batch, _keys
from tclass._core._records import is_record
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._entry_values import raise_write_error, same_memory, value_as_tensor
from tclass._engine._nontensor import NonTensorData, _NonTensorNode, same_value
from tclass._engine._nontensor_writes import fills_leading
from tclass._engine._scope import write_unbatched
from tclass._engine._td_index import raise_no_batch_dims
from tclass._engine._tensor_write import (
    check_kernels_at,
    check_number_write,
    check_tensor_write,
    fits_every_dtype,
    indexes_every_way,
    kernel_refused,
    leaf_dtypes,
    probe_index_put,
    tensor_targets,
)
from tclass.errors import BatchSizeError, DimError, IndexTypeError, InPlaceWriteError, LockedError

if TYPE_CHECKING:
    from tclass._engine._saved import SavedAt
    from tclass._engine._td import TensorDict

__all__ = [
    "SetItemOps",
    "check_empty_source",
    "check_records_at",
    "direct_leaf_dtypes",
    "is_collection",
    "leading_ones_dropped",
    "source_batch_error",
]

_Tensor = torch.Tensor
_NUMBERS = (bool, int, float)
_Unbatched = UnbatchedTensor


class SetItemOps(TensorDictBase):
    """``__setitem__`` of ``TensorDict`` (see the module docstring)."""

    if TYPE_CHECKING:  # TensorDict's slots and methods, and ScopedOps' methods
        _tensors: dict[str, Value]
        _batch_size: torch.Size
        _locked: bool
        _saved_at: SavedAt | None

        def _can_fill(self, key: str) -> bool: ...
        def _refuse_set(self, key: str) -> LockedError: ...
        def _validate(self, key: object, value: Any) -> Value: ...
        def _parent_for_write(self, path: tuple[str, ...]) -> tuple[TensorCollection, Any]: ...
        def _preallocate(self, key: str, index: Any, sub: Any) -> Value: ...
        def _store_entry(self, key: str, value: Value, blank: bool = False) -> Value: ...
        def _holds_unbatched(self) -> bool: ...
        def _check_parts_at(self, index: Any, part: Any) -> None: ...
        def _write_rows(self, index: Any, pairs: Iterable[tuple[Any, Any]]) -> None: ...
    else:
        __slots__ = ()

    def __setitem__(self, index: Any, value: Any) -> None:
        """``td["key"] = v`` sets an entry; ``td[idx] = v`` writes into every entry in place
        (``v`` a TensorDict, a dict, a tensor broadcast into each entry, or a number)."""
        if type(index) is not str and isinstance(index, str):  # (a str: no call)
            index = _keys.plain_key(index)  # numpy.str_, a str enum: the key, as the peer
        if type(index) is str:
            if self._locked and not self._can_fill(index):
                if self._tensors.get(index) is value:
                    return  # `td[key] += x` on a locked td: written in place, stored as it was
                raise self._refuse_set(index)
            stored = self._validate(index, value)
            if self._saved_at is not None:
                stored = self._saved_at.entry_set(cast("TensorDict", self), index, stored, False)
            self._tensors[index] = stored
            return
        if type(index) is tuple and _keys.is_key_tuple(index):
            self.set(index, value)
            return
        kind = type(index)
        if (
            kind is int
            or kind is slice
            or (isinstance(index, _Tensor) and index.ndim == 1 and index.dtype is not torch.bool)
        ):
            # One index into the first batch dim: nothing to normalize.
            if not self._batch_size:
                raise_no_batch_dims(index)
        elif index is not Ellipsis:
            index = _batch.normalize_index(index if kind is tuple else (index,), self.batch_dims)
            if len(index) == 1 and kind is not list:  # a list stays `(list,)`, as `_index`
                index = index[0]
        if _shares_leaf_memory(self, index):  # `td[td["done"]] = 0`: the rows it selects now
            index = _read_index(index)
        if isinstance(value, TensorCollection):
            entries = value._entries()
            # Nothing to write (no entries, or only empty nested collections), but torch's
            # shape check still holds (the first leaf ends the walk).
            if all(map(is_collection, entries.values())) and value.is_empty():
                check_empty_source(self, index, value)
            try:  # every entry's part checked first: nothing written when one refuses
                self._check_parts_at(index, value)
                self._write_rows(index, entries.items())
            except BatchSizeError:
                error = source_batch_error(self, index, value)
                if error is not None:
                    raise error from None
                check_index_fits(self, index)  # an index the batch refuses: an IndexError
                raise
        elif type(value) is EntryWrites:
            self._check_parts_at(index, value)
            self._write_entries_at(index, value.items())
        elif isinstance(value, Mapping):
            pairs = self._dict_entries_at(index, value)
            self._check_parts_at(index, dict(pairs))
            self._write_rows(index, pairs)
        else:
            self._write_broadcast_at(index, value)

    def _value_past_batch(self, entry: _NonTensorNode, index: Any, sub: Any) -> torch.Size | None:
        """The selection of ``entry`` (a value node with dims past the batch size) that
        ``sub``, a node of one value of the rows' batch size, fills element by element,
        as the peer writes it (a stack, though the value is the same); None for a write
        torch's shape rule covers (or refuses)."""
        dims = len(self._batch_size)
        if type(sub) is not NonTensorData or len(entry.batch_size) <= dims:
            return None
        target = _batch.indexed_shape(entry.batch_size, index)
        rows = target[: len(target) - (len(entry.batch_size) - dims)]
        if _batch.broadcasts_to(sub.batch_size, target) or not (
            _batch.broadcasts_to(sub.batch_size, rows) and fills_leading(sub, target)
        ):
            return None
        return target

    def _write_entries_at(self, index: Any, pairs: Iterable[tuple[Any, Any]]) -> None:
        """``td[index] = collection_or_dict``: each entry into its counterpart."""
        tensors = self._tensors
        unbatched = self._holds_unbatched()
        for key, sub in pairs:
            if type(key) is not str:
                path = _keys.key_path(key)
                if len(path) > 1:
                    parent, rest = self._parent_for_write(path)
                    parent[index] = {rest: sub}
                    continue
                key = path[0]
            entry = tensors.get(key)
            if entry is None:
                entry = self._preallocate(key, index, sub)
            # A plain tensor into a plain tensor (the usual write) skips the checks below.
            if entry.__class__ is not _Tensor or sub.__class__ is not _Tensor:
                if isinstance(entry, _NonTensorNode):
                    saved = self._saved_at is not None
                    if saved and self._locked and _same_data(entry, sub):
                        continue  # as the peer's shared write: the same value, kept
                    past = self._value_past_batch(entry, index, sub)
                    if past is not None:  # one value into each element of a wider node
                        if not past.numel():
                            continue  # no element selected: nothing written
                        if isinstance(entry, NonTensorData):
                            entry = entry.maybe_to_stack()
                        sub = sub.data
                    # A different Python value at some elements turns the node into a stack.
                    if not saved:
                        tensors[key] = _written_through(entry, index, sub)
                    else:  # the folder's copy is rewritten first, and only on a change
                        new = entry._with_written(index, sub)
                        if new is not entry or past is not None:
                            self._store_entry(key, new)
                    continue
                if unbatched and entry.__class__ is _Unbatched:
                    write_unbatched(key, entry, sub)
                    continue
                if (
                    isinstance(sub, TensorCollection)
                    and isinstance(entry, TensorCollection)
                    and not isinstance(sub, _NonTensorNode)
                    and not len(sub.keys())
                ):
                    check_index_fits(self, index)  # nothing to write, but torch checks it
                    continue  # only the value written is checked, not its parts
                if isinstance(sub, NonTensorData) and isinstance(entry, _Tensor):
                    # a number kept as a Python value (a nocast record's row) fills the
                    # tensor; a value that is not a number is refused, naming the entry
                    sub = value_as_tensor(key, sub.data, None)
                if hasattr(sub, "__array__") and not isinstance(sub, torch.Tensor):
                    sub = torch.as_tensor(sub)  # a numpy array, as set() takes one
            if _overlaps(entry, sub) and not _reads_its_target(entry, index, sub):
                sub = sub.clone()  # read before written, as a copy would be
            try:
                entry[index] = sub
            except IndexError as error:  # out of range: the same for every entry
                raise _batch.index_error(index, self._batch_size, error) from None
            except RuntimeError as error:  # after IndexError: a DimError is both
                raise_write_error(key, entry, index, sub, error)

    def _dict_entries_at(self, index: Any, value: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
        """``td[index] = dict``'s entries: as the peer, the dict read as the constructor
        reads it at the batch size of the indexed destination (a Python value spans it,
        a number is a 0-dim tensor that must fit it), except that a number for a tensor
        entry is written over the selection, as ``td[index] = number`` writes it, and a
        dict for a nested collection is given to it as it is (a record reads it by its
        fields' rules: a number for an ``int`` field stays a Python value)."""
        tensors = self._tensors
        numbers = [
            (key, sub)
            for key, sub in value.items()
            if (type(sub) in _NUMBERS and type(tensors.get(key)) is _Tensor)
            or (type(sub) is dict and is_collection(tensors.get(key)))
        ]
        skip = {key for key, _ in numbers}
        rest = {key: sub for key, sub in value.items() if key not in skip} if skip else value
        target = _batch.indexed_shape(self._batch_size, index)
        built = self.from_dict_instance(rest, batch_size=target, device=self.device)
        return [*built._entries().items(), *numbers]

    def _write_broadcast_at(self, index: Any, value: Any) -> None:
        """``td[index] = tensor_or_number``: the value written into every tensor entry as
        torch writes ``entry[index] = value`` (lined up with the last dims of the entry's
        selection, as the peer), every entry checked first (nothing written when one
        refuses it)."""
        if not isinstance(value, (_Tensor, int, float, bool, complex)):
            value = value_as_tensor("<value>", value, None)
        unbatched = self._holds_unbatched()
        advanced = _is_advanced(index)
        if isinstance(value, _Tensor):
            check_tensor_write(self, index, value)  # (the index checked first, unless 0-dim)
            if advanced:
                _check_dtypes_at(self, index, value)
        elif not fits_every_dtype(value):  # one dtype may refuse it: none written then
            check_number_write(value, index, direct_leaf_dtypes(self, ()))
        elif advanced:  # torch may have no kernel for a dtype (uint16): the same
            check_kernels_at(value, index, direct_leaf_dtypes(self, (), stack=False))
        if advanced and (not isinstance(value, _Tensor) or not value.ndim):
            _check_rows_in_range(self._batch_size, index)
        if isinstance(value, _Tensor) and any(_overlaps(e, value) for e in self._tensors.values()):
            value = value.clone()  # read before written, as rows of a collection are
        check_records_at(self, index, value)
        written = False
        for key, entry in self._tensors.items():
            if isinstance(entry, _NonTensorNode) or (unbatched and entry.__class__ is _Unbatched):
                continue  # a number written over the batch leaves Python values alone
            written = True
            try:
                entry[index] = value
            except IndexError as error:  # out of range: the same for every entry
                raise _batch.index_error(index, self._batch_size, error) from None
            except RuntimeError as error:
                raise_write_error(key, entry, index, value, error)
        if not written:  # nothing written, but the index is checked as a tensor's would be
            _batch.indexed_shape(self._batch_size, index)


def direct_leaf_dtypes(
    td: TensorCollection, prefix: tuple[str, ...], *, stack: bool = True
) -> list[Any]:
    """:func:`leaf_dtypes` read straight from a TensorDict's entries (nested ones too;
    another collection through ``leaf_dtypes``), Python values and unbatched entries
    left out, as the number writes leave them; ``stack`` False: a lazy stack's tensors
    with the dtype None (not stacked to read it; their shapes ``-1`` where they differ)."""
    if not isinstance(td, SetItemOps):
        if not stack and td._is_lazy:
            return [
                ((*prefix, *_keys.key_path(k)), None, s)
                for k, s, _ in tensor_targets(cast(Any, td), ...)
            ]
        return [((*prefix, *_keys.key_path(k)), d, s) for k, d, s in leaf_dtypes(cast(Any, td))]
    found: list[Any] = []
    for key, entry in td._tensors.items():
        if isinstance(entry, TensorCollection) and not isinstance(entry, _NonTensorNode):
            found += direct_leaf_dtypes(entry, (*prefix, key), stack=stack)
        elif isinstance(entry, _Tensor) and not isinstance(entry, _Unbatched):
            found.append(((*prefix, key), entry.dtype, entry.shape))
    return found


def _check_rows_in_range(batch_size: torch.Size, index: Any) -> None:
    """Refuses an advanced ``index`` out of range for ``batch_size`` (or a mask of
    another shape), once, before any entry is written: torch's ``index_put_`` of a
    number writes the rows before the first out of range (in the first entry), then
    raises. An index on another device than the CPU is left to the write (an index out
    of range is a device-side assert there; checking it would wait for the device)."""
    parts = index if type(index) is tuple else (index,)
    for part in parts:
        if isinstance(part, _Tensor) and part.device.type != "cpu":
            return
    _batch.indexed_shape(batch_size, index)


def _is_advanced(index: Any) -> bool:
    """Whether ``index`` has a list or a tensor (torch's ``index_put``, which refuses a
    value of another dtype where a basic index casts it)."""
    parts = index if type(index) is tuple else (index,)
    return any(isinstance(part, (list, _Tensor)) for part in parts)


def _check_dtypes_at(
    td: SetItemOps, index: Any, value: _Tensor, prefix: tuple[str, ...] = ()
) -> None:
    """For ``td[index] = value`` at an advanced index: each tensor of another dtype than
    ``value`` (the TensorDicts nested in ``td`` too) tried on a stand-in of its shape
    first, as torch may refuse the dtype ("Index put requires the source and
    destination dtypes match"), so that no entry is written when one refuses it; one of
    the value's dtype too where torch may have no kernel for it (``uint16``); ``prefix``:
    the path of ``td`` in the collection written into, for the messages.

    Raises:
        InPlaceWriteError: (a ``RuntimeError``, as the peer's) naming the entry;
            :class:`InPlaceKernelError` (a ``NotImplementedError`` too) for a missing kernel.
    """
    for key, entry in td._tensors.items():
        if isinstance(entry, SetItemOps):
            _check_dtypes_at(entry, index, value, (*prefix, key))
        elif isinstance(entry, _Tensor) and not isinstance(entry, _Unbatched):
            if entry.dtype == value.dtype and indexes_every_way(entry.dtype):
                continue
            name = _keys.unravel_key((*prefix, key))
            try:
                probe_index_put(entry.shape, entry.dtype, index, value, entry.device)
            except NotImplementedError as error:  # no kernel for the dtype (uint16)
                raise kernel_refused(name, entry.dtype, entry.shape, index, error) from None
            except RuntimeError as error:
                if "dtype" not in str(error):
                    continue  # (the shapes are checked already; the write reports any other)
                msg = (
                    f"cannot write a {value.dtype} tensor into {name!r} ({entry.dtype}, shape "
                    f"{list(entry.shape)}) at index {index!r}: {error}; nothing was written. "
                    f"Cast the value (value.to({entry.dtype})) or write the entries one by one"
                )
                raise InPlaceWriteError(msg) from None


def check_records_at(td: Any, index: Any, value: Any) -> None:
    """``td[index] = value`` (a tensor or number into every entry): the records among
    ``td``'s nested collections (at any depth: below TensorDicts, lazy stacks and files,
    which each check their own, ``_check_row_write``) check it before any entry is
    written, so that one refusing it leaves the entries before it unwritten."""
    for entry in td._entries().values():
        if not isinstance(entry, TensorCollection) or isinstance(entry, _NonTensorNode):
            continue
        if is_record(entry) or entry._is_lazy or entry._is_store:
            entry._check_row_write(index, value)
        else:  # a TensorDict (or the TensorDict a TensorDictParams wraps): its entries
            check_records_at(entry, index, value)


def _shares_leaf_memory(td: Any, index: Any) -> bool:
    """Whether a tensor of ``index`` (a mask or positions) shares memory with one of
    ``td``'s tensors (``td[td["done"]] = 0``), which the write would change before the
    entries after it are written: they would get other rows than the ones selected."""
    if isinstance(index, _Tensor):
        indices: Any = (index,)
    elif type(index) is tuple:
        indices = [part for part in index if isinstance(part, _Tensor)]
    else:
        return False
    if not indices:
        return False
    for part in indices:
        for leaf in td._tensor_leaves():  # (a mask is a bool tensor, positions integers)
            if leaf.dtype == part.dtype and shares_memory(leaf, part):
                return True
    return False


def _read_index(index: Any) -> Any:
    """``index`` with its tensors copied (see :func:`_shares_leaf_memory`)."""
    if isinstance(index, _Tensor):
        return index.clone()
    return tuple(part.clone() if isinstance(part, _Tensor) else part for part in index)


def _overlaps(entry: object, sub: object) -> bool:
    """Whether tensor ``sub`` (rows being written) shares memory with the entry it is
    written into (``td[mask] = td[:2]``): torch refuses such a write at the entry it meets
    it, after the entries before it were written, so the rows are copied first."""
    if not (isinstance(entry, torch.Tensor) and isinstance(sub, torch.Tensor)):
        return False
    if torch.compiler.is_compiling():  # (before ``_is_view``, a graph break when traced)
        return False
    if not (sub._is_view() or entry._is_view()):  # (two tensors of their own: the usual)
        return False
    return shares_memory(entry, sub)


def _reads_its_target(entry: Any, index: Any, sub: _Tensor) -> bool:
    """Whether ``sub`` is the very selection it is written into (``td[...] = td[...]``):
    torch's copy of a tensor into its own memory writes nothing, where a copy of it into
    an entry whose elements share memory (an ``expand``) is refused."""
    try:
        return same_memory(entry[index], sub)
    except (IndexError, RuntimeError, TypeError, ValueError):
        return False


def is_collection(entry: object) -> bool:
    """Whether ``entry`` is a nested collection (a record or a TensorDict, not a node of
    Python values)."""
    return isinstance(entry, TensorCollection) and not isinstance(entry, _NonTensorNode)


def _same_data(entry: _NonTensorNode, sub: Any) -> bool:
    """Whether ``sub`` is a node of one value, the value ``entry`` holds for all."""
    both = isinstance(entry, NonTensorData) and isinstance(sub, NonTensorData)
    return both and same_value(entry.data, sub.data)


def _written_through(entry: _NonTensorNode, index: Any, sub: Any) -> _NonTensorNode:
    """``entry`` (not saved in a folder) with ``sub`` written at ``index``; where ``entry``
    is a view of another stack of values (read from it by index or a shape op), the write
    reaches that stack too, as the peer's shared nodes take it."""
    link = getattr(entry, "_member_of", None)
    new = entry._written(index, sub)
    if link is not None:
        if new is not entry:  # (one value turned into a stack: the same elements, in order)
            cast(Any, new)._member_of = link
        new._write_back(by_collection=True)
    return new


def check_empty_source(destination: TensorCollection, index: Any, value: TensorCollection) -> None:
    """For ``destination[index] = value`` where ``value`` has no entries (or only empty
    nested collections, which write nothing either): the
    ``BatchSizeError`` of :func:`source_batch_error` when its batch size does not
    broadcast to the indexed destination's. Writing it changes nothing, but torch checks
    a tensor's shape even when it has no elements (and a collection with entries is
    checked through them): without this, a mistaken index or batch size passes silently.

    Raises:
        DimError: (an ``IndexError``) the index does not fit the destination's batch size.
        BatchSizeError: (a ``RuntimeError``) the source's batch size does not broadcast.
    """
    check_index_fits(destination, index)
    error = source_batch_error(destination, index, value, empty=True)
    if error is not None:
        raise error


def check_index_fits(destination: TensorCollection, index: Any) -> None:
    """``index`` checked against ``destination``'s batch size, as torch checks an index
    into a tensor of that size (a ``DimError``, an ``IndexError``, when it does not fit)."""
    if -1 in destination.batch_size:
        _check_ragged_index(destination.batch_size, index)
    else:
        _batch.indexed_shape(destination.batch_size, index)  # out of range or ill-formed


def _check_ragged_index(batch_size: torch.Size, index: Any) -> None:
    """``index`` checked against the batch size of a ragged lazy stack, its ragged dims
    (-1) as of size 0, as the peer checks them as of size -1: a slice or ``...`` over
    them fits, an int, a list or a mask does not.

    Raises:
        DimError: (an ``IndexError``, as the peer raises) the index does not fit.
    """
    try:
        _batch.indexed_shape(torch.Size(max(size, 0) for size in batch_size), index)
    except IndexTypeError:
        raise
    except DimError as error:
        msg = (
            f"index {index!r} does not fit the batch size {list(batch_size)} of this lazy "
            "stack: its ragged dims (-1) take a slice or `...` only; index a member "
            f"(lazy[i]) to reach their elements ({error})"
        )
        raise DimError(msg) from None


def leading_ones_dropped(destination: TensorCollection, index: Any, value: Any) -> Any:
    """``value`` (a collection written at ``destination[index]``) without its leading
    batch dims of size 1 past the selection's dims, as torch drops a tensor's in
    ``t[idx] = v[None]`` (for a destination that writes each array's rows itself)."""
    try:  # a meta view: the indexed batch size without touching data
        target = torch.empty((), device="meta").expand(destination.batch_size)[index].shape
    except (IndexError, RuntimeError, TypeError, ValueError):
        return value
    while len(value.batch_size) > len(target) and value.batch_size[0] == 1:
        value = value[0]
    return value


def source_batch_error(
    destination: TensorCollection, index: Any, value: TensorCollection, *, empty: bool = False
) -> BatchSizeError | None:
    """For ``destination[index] = value``: the error that names both batch sizes when the
    source's does not broadcast to the indexed destination's, else None (an index the
    batch size refuses is left for the write to report). ``empty``: the source has no
    entries, or only empty nested collections (the message says that it is checked all
    the same)."""
    try:  # a meta view: the indexed batch size without touching data
        target = torch.empty((), device="meta").expand(destination.batch_size)[index].shape
    except (IndexError, RuntimeError, TypeError, ValueError):
        return None
    source = value.batch_size
    if _batch.broadcasts_to(source, target):
        return None
    kind = type(value).__name__
    note = ""
    if empty:
        nested = ", nor do the empty collections nested in it" if value.keys() else ""
        note = f" (a {kind} without entries writes nothing{nested}, but its batch size is"
        note += " checked as a tensor's shape is)"
    return BatchSizeError(
        f"cannot write a {kind} at index {index!r}: batch dimension "
        f"mismatch (the indexed destination {type(destination).__name__} batch size is "
        f"{list(target)}, and the source's batch size {list(source)} does not "
        f"broadcast to it{note}); index the source or the destination so that the two agree"
    )
