"""In-place work over a store (``apply_``, in-place math) that is all or nothing and
bounded in memory: one array at a time is read, worked on in memory and checked (the
constraints of the record whose group holds it), and its result staged; the arrays are
written only once every result is staged, so a function that raises or a value a record
refuses leaves the store as it was. Results are kept in memory when the arrays hold
``_BUDGET`` bytes at most, else each is spilled to a temporary folder beside the file
(removed afterwards), so the memory needed is about that of the largest array, as the
peer's ``apply_``, which writes each array as it goes, needs (not the whole file). A
scratch folder, not scratch datasets in the file itself: an HDF5 file never gives back
the space of a deleted dataset, so it would grow by every array worked on."""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._staged_writes import StagedWrites
from tclass._core._records import storage_of
from tclass._engine._td import TensorDict
from tclass._io._schema import check_written_values
from tclass._io.store._datasets import read_rows, rows_shape, to_numpy, to_tensor, write_rows
from tclass._io.store._protocol import StoreArray, is_group
from tclass.errors import FieldSpecError

if TYPE_CHECKING:
    from tclass._io.store._persistent import PersistentTensorDict

__all__ = ["Work", "applied", "same_keys", "stage_in_place"]

_BUDGET = 64 << 20  # the bytes of arrays whose results are kept in memory, not spilled
_CHUNK = 32 << 20  # the rows written at once from a spilled result
_MISSING: Any = object()

# ``work(local, operands)``: the in-place work done on ``local`` (a TensorDict holding one
# array's data at its key path), ``operands`` the caller's cut to that path
Work = Callable[[TensorDict, tuple[Any, ...]], object]


@dataclass
class _Leaf:
    """A tensor array of the store and the groups on the way to it (the root first)."""

    path: tuple[str, ...]
    node: StoreArray
    chain: list[PersistentTensorDict]
    record: type | None  # the record class of the group holding it


def stage_in_place(
    root: PersistentTensorDict,
    selection: Any,
    batch: torch.Size,
    work: Work,
    operands: Sequence[Any],
    record: type | None = None,
    what: str | None = None,
    outer: StagedWrites | None = None,
) -> None:
    """Does ``work`` on each tensor array of ``root`` (its rows ``selection``: ``...``
    for all of them; ``batch`` their batch size), an array at a time, with ``operands``
    (collections cut to the array's key; other values as they are); checks each result
    against the record holding it (``record``: the class of a record over ``root``,
    whose operation ``what`` opens the message of a refusal); writes the results once
    all are staged (``outer``, the staged writes of an ``apply_`` of a collection
    holding ``root``: once the outer walk writes its own).

    Raises:
        ReadOnlyFileError: the file was opened read-only (for a record, once its
            results are checked, as its writes in memory check first).
        FieldSpecError: results a record's constraints refuse (each array's named);
            nothing was written.
        (and whatever ``work`` raises: nothing was written)
    """
    if record is None:
        root._writable()  # a read-only file refuses first (a record's: once checked)
    leaves = list(_leaves(root, [root], record, ()))
    size = sum(_nbytes(leaf.node) for leaf in leaves)
    staged = _Staged(root._live().file.filename, spill=size > _BUDGET)
    refused: list[FieldSpecError] = []
    deferred = False
    try:
        for leaf in leaves:
            holder = leaf.chain[-1]
            if selection is Ellipsis:
                rows = to_tensor(leaf.node.read())
            else:
                rows = read_rows(leaf.node, selection, len(holder._batch_size))
            data = rows.to(root._device or torch.device("cpu"))
            sizes = [_rows_shape(node, selection, batch) for node in leaf.chain]
            local = _nested(leaf.path, data, sizes, root._device)
            cut = tuple(_cut(op, leaf.path) for op in operands)
            work(local, cut)
            result = local.get(leaf.path)
            if leaf.record is not None:
                where = holder._where(leaf.path[-1])
                try:
                    check_written_values(leaf.record, {leaf.path[-1]: result}, where)
                except FieldSpecError as error:
                    refused.append(error)  # the other arrays are still checked
                    continue
            if not refused:
                staged.add(leaf.node, selection, len(holder._batch_size), result, holder)
        if refused:
            raise _every_refusal(refused, what)
        root._writable()
        if outer is not None:
            outer.defer(staged.write, staged.close)
            deferred = True
        else:
            staged.write()
    finally:
        if not deferred:
            staged.close()


def applied(fn: Callable[..., torch.Tensor | None]) -> Work:
    """``apply_``'s work on one array's TensorDict (``others`` cut to its key)."""

    def work(local: TensorDict, others: tuple[Any, ...]) -> None:
        local._apply_in_place(fn, others)

    return work


def _every_refusal(refused: list[FieldSpecError], what: str | None) -> FieldSpecError:
    """One error naming every array whose result a record refused (``what``: the
    operation, for a record's)."""
    tail = ". Nothing was written"
    listed = "; ".join(str(error).removesuffix(tail) for error in refused)
    opening = "" if what is None else f"{what}: "
    problems = [problem for error in refused for problem in error.problems]
    return FieldSpecError(f"{opening}{listed}{tail}", problems)


def same_keys(root: TensorCollection, operands: Sequence[Any]) -> bool:
    """Whether every collection among ``operands`` holds the keys of ``root`` (no other,
    none fewer) over its batch size: in-place math with them can be done an array at a
    time, each operand cut to the array's key."""
    keys: set[Any] | None = None
    for op in operands:
        source = storage_of(op)
        if not isinstance(source, TensorCollection):
            continue
        if keys is None:
            keys = set(root.keys(True, True))
        if source.batch_size != root.batch_size or set(source.keys(True, True)) != keys:
            return False
    return True


def _leaves(
    node: PersistentTensorDict,
    chain: list[PersistentTensorDict],
    record: type | None,
    path: tuple[str, ...],
) -> Iterator[_Leaf]:
    group = node._live()
    for key in node._key_names():
        entry = group[key]
        if is_group(entry):
            child = node._child_of(key, entry)
            yield from _leaves(child, [*chain, child], node._records.get(key), (*path, key))
        elif entry.dtype is not None and entry.shape is not None:
            yield _Leaf((*path, key), entry, chain, record)


def _nbytes(node: StoreArray) -> int:
    """The bytes of a tensor array (0 for an array of values)."""
    if node.dtype is None or node.shape is None:
        return 0
    return node.dtype.itemsize * math.prod(node.shape)


def _rows_shape(node: PersistentTensorDict, selection: Any, batch: torch.Size) -> torch.Size:
    """The batch size of the group ``node``'s rows ``selection`` (the root's: ``batch``)."""
    if selection is Ellipsis:
        return node._batch_size
    shape = rows_shape(node._batch_size, selection)
    return shape if len(shape) >= len(batch) else batch


def _nested(
    path: tuple[str, ...], value: Any, sizes: Sequence[torch.Size], device: torch.device | None
) -> TensorDict:
    """A TensorDict holding ``value`` at ``path`` (``sizes``: each level's batch size);
    ``value`` ``_MISSING``: the levels without it."""
    inner: dict[str, Any] = {} if value is _MISSING else {path[-1]: value}
    out = TensorDict._new_unchecked(inner, sizes[-1], device)
    for depth in range(len(path) - 2, -1, -1):
        out = TensorDict._new_unchecked({path[depth]: out}, sizes[depth], device)
    return out


def _cut(operand: Any, path: tuple[str, ...]) -> Any:
    """An operand as the work on the array at ``path`` takes it: a collection holding
    only that entry (read), or with no entry there when it lacks it; anything else as
    it is."""
    source = storage_of(operand)
    if not isinstance(source, TensorCollection):
        return operand
    sizes = [source.batch_size]
    node: Any = source
    for part in path[:-1]:
        node = storage_of(node.get(part, _MISSING))
        if not isinstance(node, TensorCollection):
            return _nested(path, _MISSING, [*sizes] * len(path), source.device)
        sizes.append(node.batch_size)
    value = node.get(path[-1], _MISSING)
    return _nested(path, value, sizes, source.device)


class _Staged:
    """The results waiting to be written: in memory, or (``spill``) each in a file of a
    scratch folder beside ``filename`` (or in the temporary folder when that one cannot
    be written)."""

    def __init__(self, filename: str, spill: bool) -> None:
        real = bool(filename) and os.path.exists(filename)  # (a store in memory: no path)
        self._near = os.path.dirname(os.path.abspath(filename)) if real else None
        self._folder: str | None = None
        self._spill = spill
        self._items: list[tuple[StoreArray, Any, int, Any, PersistentTensorDict]] = []

    def add(
        self,
        node: StoreArray,
        selection: Any,
        batch_dims: int,
        result: torch.Tensor,
        holder: PersistentTensorDict,
    ) -> None:
        array = to_numpy(result, holder._label, holder._where(node.name.rsplit("/", 1)[-1]))
        data: Any = array
        if self._spill and array.nbytes:
            data = _Spilled(os.path.join(self._scratch(), str(len(self._items))), array)
        self._items.append((node, selection, batch_dims, data, holder))

    def _scratch(self) -> str:
        if self._folder is None:
            near = self._near if self._near and os.path.isdir(self._near) else None
            try:
                self._folder = tempfile.mkdtemp(prefix=".tclass-staged-", dir=near)
            except OSError:
                self._folder = tempfile.mkdtemp(prefix=".tclass-staged-")
        return self._folder

    def write(self) -> None:
        """Every staged result into its array (a spilled one a part at a time)."""
        for node, selection, batch_dims, data, holder in self._items:
            if isinstance(data, _Spilled) and selection is Ellipsis and data.shape:
                for start, part in data.parts():
                    node.write(slice(start, start + len(part)), part)
                continue
            array = data.read() if isinstance(data, _Spilled) else data
            if not array.size:
                continue
            if selection is Ellipsis:
                node.write(..., array)
            else:
                where = holder._where(node.name.rsplit("/", 1)[-1])
                tensor = to_tensor(array)
                write_rows(node, selection, tensor, batch_dims, holder._label, where)

    def close(self) -> None:
        """Removes the scratch folder (the staged results are dropped)."""
        self._items.clear()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


class _Spilled:
    """A staged result in a file of its own (its raw bytes), read back a part at a time
    (read, not mapped: the pages of a mapped file would count in the process's memory)."""

    def __init__(self, path: str, array: np.ndarray[Any, Any]) -> None:
        self.path, self.shape, self.dtype = path, array.shape, array.dtype
        np.ascontiguousarray(array).tofile(path)

    def read(self) -> np.ndarray[Any, Any]:
        data: np.ndarray[Any, Any] = np.fromfile(self.path, dtype=self.dtype)
        return np.reshape(data, self.shape)

    def parts(self) -> Iterator[tuple[int, np.ndarray[Any, Any]]]:
        """The rows (along the first dim) from each start, ``_CHUNK`` bytes at most at once."""
        row = self.dtype.itemsize * int(np.prod(self.shape[1:], dtype=np.int64))
        step = max(1, _CHUNK // max(1, row))
        with open(self.path, "rb") as file:
            for start in range(0, self.shape[0], step):
                count = min(step, self.shape[0] - start)
                part = np.fromfile(file, dtype=self.dtype, count=count * row // self.dtype.itemsize)
                yield start, part.reshape((count, *self.shape[1:]))
