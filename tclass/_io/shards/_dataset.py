"""A sharded dataset read as one collection: ``open_sharded(path, cls=None)``.

The dataset is a snapshot: the committed rows of every shard when it was opened (or last
refreshed), in a fixed order: shards sorted by id, each shard's rows in the order they
were committed. Row ``i`` is found by bisecting the shards' first rows; a gather across
shards reads each shard once, in the order of its rows, then puts the rows back in the
order asked. A seeded order (``indices``, ``iter_batches``) is a permutation of the
snapshot's rows drawn from the seed alone; a worker takes every ``num_workers``-th row
(or batch) of it, so the workers' shares interleave into the one-worker order, whatever
their number. A pickled dataset (sent to a ``DataLoader`` worker or a Ray task) carries
its snapshot: it reopens the same rows, not the rows committed since.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar, overload

import numpy as np
import torch
from typing_extensions import Self

from tclass._core._readonly import read_only
from tclass._core._records import is_record_class
from tclass._engine._ops import cat
from tclass._io._api import load_memmap
from tclass._io.memmap._format import class_id
from tclass._io.memmap._info import describe
from tclass._io.shards._folder import (
    Manifest,
    list_shards,
    read_manifest,
    rows_folder,
    saved_rows,
)
from tclass._io.shards._layout import layout_of_info, saved_class
from tclass.errors import (
    ArgumentError,
    ArgumentValueError,
    ClassMismatchError,
    DimError,
    MetadataError,
    MissingFileError,
)

__all__ = ["ShardInfo", "ShardedDataset", "open_sharded"]

R = TypeVar("R")
PathLike = str | os.PathLike[str]
Index = int | slice | torch.Tensor | Sequence[int]
_RELOAD_TRIES = 3  # loads of a shard that an append swapped away (no atomic exchange)


class ShardInfo(NamedTuple):
    """One shard of a dataset's snapshot."""

    shard_id: str
    path: str  # its saved folder: load_memmap(path)[:rows] reads the snapshot's rows
    rows: int  # its committed rows in the snapshot
    start: int  # the dataset's index of its first row


@dataclass
class _Shard:
    shard_id: str
    path: str
    rows: Any  # the loaded collection, cut to ``count`` rows
    count: int


class ShardedDataset(Generic[R]):
    """The committed rows of every shard of a sharded dataset, read as one collection.

    Read-only: rows come back as records of the dataset's class (a TensorDict for
    TensorDict rows). A row, or a slice within one shard, is a view of the shard's
    memory-mapped files whose tensors refuse in-place writes (``ReadOnlyError``;
    ``.clone()`` gives a writable copy); other selections are copies.

    ``len``; indexing by an int, a slice, a list or a tensor of indices (gathered across
    shards) or a boolean mask; ``iter_batches``; seeded orders per worker (``indices``);
    ``refresh()`` to see the rows committed since; ``shards``, the snapshot's shards.
    """

    def __init__(self, path: PathLike, cls: type[R] | None = None) -> None:
        if cls is not None and not isinstance(cls, type):
            raise ArgumentError(f"cls must be a record class, TensorDict or None, got {cls!r}")
        self._root = os.path.abspath(os.fspath(path))
        self._cls = cls
        self._manifest: Manifest | None = None
        self._loaded: dict[str, _Shard] = {}  # every shard with a saved folder, by id
        self._shards: list[_Shard] = []  # those with rows, in order
        self._starts: list[int] = [0]
        self.refresh()

    # --- the snapshot ---------------------------------------------------------------------

    @property
    def path(self) -> str:
        return self._root

    @property
    def class_name(self) -> str | None:
        """The class of the rows, ``module:QualName`` (None: TensorDict rows, or no rows
        committed yet)."""
        return None if self._manifest is None else self._manifest.class_id

    @property
    def shards(self) -> tuple[ShardInfo, ...]:
        """The shards of the snapshot, in the dataset's order (those with rows)."""
        return tuple(
            ShardInfo(s.shard_id, s.path, s.count, start)
            for s, start in zip(self._shards, self._starts)
        )

    def refresh(self) -> Self:
        """Take a new snapshot: rows committed since, and new shards, become visible (a
        shard whose id sorts before others' moves their rows' indices)."""
        if self._manifest is None:
            self._manifest = read_manifest(self._root)
            if self._manifest is not None:
                self._check_class(self._manifest)
        if self._manifest is None:
            return self  # no shard has rows yet
        loaded = {}
        for shard_id in list_shards(self._root):
            shard = self._load(shard_id, self._loaded.get(shard_id))
            if shard is not None:
                loaded[shard_id] = shard
        self._loaded = loaded
        self._shards = [shard for shard in loaded.values() if shard.count]
        self._starts = [0]
        for shard in self._shards:
            self._starts.append(self._starts[-1] + shard.count)
        return self

    def _check_class(self, manifest: Manifest) -> None:
        cls = self._cls
        if cls is None or (not is_record_class(cls) and manifest.class_id is None):
            return
        wanted = class_id(cls) if is_record_class(cls) else None
        if wanted != manifest.class_id:
            held = manifest.class_id or "TensorDict rows"
            asked = f"{cls.__name__} {'records' if wanted else 'rows'}"
            msg = (
                f"the sharded dataset {self._root!r} holds {held}, not {asked}: open it "
                "with the class it holds (or cls=None)"
            )
            raise ClassMismatchError(msg)

    def _load(self, shard_id: str, seen: _Shard | None) -> _Shard | None:
        """The shard's committed rows (None before its first commit); ``seen`` (the
        shard as last loaded) is kept while the shard holds as many rows: rows are only
        ever appended, so the same count means the same rows."""
        path = rows_folder(self._root, shard_id)
        if not os.path.isdir(path):
            return None
        if seen is not None and saved_rows(path) == seen.count:
            return seen
        if seen is None:
            self._check_layout(shard_id, path)
        for attempt in range(_RELOAD_TRIES):
            try:
                loaded: Any = load_memmap(path, cls=self._cls, mode="r")
                break
            except MissingFileError:  # swapped away where the OS cannot swap atomically
                if attempt == _RELOAD_TRIES - 1:
                    raise
        rows = loaded.apply(read_only)
        count = rows.batch_size[0]
        if seen is not None and count < seen.count:
            msg = (
                f"shard {shard_id!r} of {self._root!r} has {count} rows, fewer than the "
                f"{seen.count} it had: rows are only ever appended; was it rewritten?"
            )
            raise MetadataError(msg)
        return _Shard(shard_id, path, rows, count)

    def _check_layout(self, shard_id: str, path: str) -> None:
        assert self._manifest is not None
        info = describe(path)
        if info.problems:
            return  # load_memmap raises the first one
        saved = saved_class(info.root, self._manifest.class_id)
        self._manifest.check(saved, layout_of_info(info.root), shard_id)

    def __getstate__(self) -> dict[str, Any]:
        counts = [(shard.shard_id, shard.count) for shard in self._shards]
        return {"path": self._root, "cls": self._cls, "counts": counts}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """The pickled snapshot: the same shards, cut to the same row counts."""
        self._root, self._cls = state["path"], state["cls"]
        self._manifest = read_manifest(self._root)
        self._loaded, self._shards, self._starts = {}, [], [0]
        for shard_id, count in state["counts"]:
            shard = self._load(shard_id, None)
            if shard is None or shard.count < count:
                have = 0 if shard is None else shard.count
                msg = (
                    f"shard {shard_id!r} of {self._root!r} has {have} rows, fewer than the "
                    f"{count} of the snapshot sent here: was the dataset rewritten?"
                )
                raise MetadataError(msg)
            shard.rows, shard.count = shard.rows[:count], count
            self._loaded[shard_id] = shard
            self._shards.append(shard)
            self._starts.append(self._starts[-1] + count)

    def __repr__(self) -> str:
        held = self.class_name or "TensorDict"
        return (
            f"ShardedDataset({self._root!r}, rows={len(self)}, shards={len(self._shards)}, "
            f"class={held})"
        )

    # --- reading --------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._starts[-1]

    def __getitem__(self, index: Index) -> R:
        """Row ``index`` (an int), or the rows it selects (a slice, a sequence or tensor of
        ints, a boolean mask over all rows), in that order, as one collection."""
        if isinstance(index, int) and not isinstance(index, bool):
            position = self._position(index)
            shard = bisect.bisect_right(self._starts, position) - 1
            return self._shards[shard].rows[position - self._starts[shard]]  # type: ignore[no-any-return]
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:
                return self._range(start, max(start, stop))
            return self._gather(torch.arange(start, stop, step))
        return self._gather(self._positions(index))

    def __getitems__(self, indices: Sequence[int]) -> R:
        """The rows at ``indices`` as one collection (a ``DataLoader`` fetches a batch with
        one call)."""
        return self._gather(self._positions(indices))

    def __iter__(self) -> Iterator[R]:
        """Every row, one by one, in the dataset's order (``iter_batches`` reads faster)."""
        for shard in self._shards:
            for row in range(shard.count):
                yield shard.rows[row]

    def indices(
        self, seed: int | None = None, *, num_workers: int = 1, worker_id: int = 0
    ) -> torch.Tensor:
        """This worker's share of the dataset's order: every ``num_workers``-th index of
        ``torch.randperm(len(self))`` drawn with ``seed`` (``seed=None``: ``0, 1, ...``),
        from the ``worker_id``-th on. The shares of workers ``0..num_workers-1``,
        interleaved, are the one-worker order, for any number of workers."""
        _check_worker(num_workers, worker_id)
        return self._order(seed)[worker_id::num_workers]

    def iter_batches(
        self,
        batch_size: int,
        *,
        seed: int | None = None,
        num_workers: int = 1,
        worker_id: int = 0,
        drop_last: bool = False,
    ) -> Iterator[R]:
        """Batches of ``batch_size`` rows of the dataset's order (``seed``: a seeded
        permutation, as :meth:`indices`), each one collection; this worker gets every
        ``num_workers``-th batch from the ``worker_id``-th on, so the workers' batches
        together are the one-worker batches, whatever their number. The last batch is
        shorter unless ``drop_last``."""
        if type(batch_size) is not int or batch_size < 1:
            raise ArgumentValueError(f"batch_size must be a positive int, got {batch_size!r}")
        _check_worker(num_workers, worker_id)
        total = len(self)
        end = total - total % batch_size if drop_last else total
        order = None if seed is None else self._order(seed)
        for begin in range(worker_id * batch_size, end, num_workers * batch_size):
            stop = min(begin + batch_size, end)
            yield self._range(begin, stop) if order is None else self._gather(order[begin:stop])

    def _order(self, seed: int | None) -> torch.Tensor:
        if seed is None:
            return torch.arange(len(self))
        if type(seed) is not int:
            raise ArgumentValueError(f"seed must be an int or None, got {seed!r}")
        generator = torch.Generator().manual_seed(seed)
        return torch.randperm(len(self), generator=generator)

    def _position(self, index: int) -> int:
        total = len(self)
        if not -total <= index < total:
            raise DimError(f"index {index} is out of range for a dataset of {total} rows")
        return index + total if index < 0 else index

    def _positions(self, index: Any) -> torch.Tensor:
        """``index`` as a tensor of non-negative row indices (checked)."""
        if isinstance(index, (str, bytes)) or index is None:
            raise DimError(f"a sharded dataset is indexed by rows, got {index!r}")
        try:
            tensor = torch.as_tensor(index)
        except (TypeError, ValueError, RuntimeError) as error:
            raise DimError(f"cannot index a sharded dataset with {index!r}: {error}") from None
        total = len(self)
        if not tensor.numel():
            return tensor.to(torch.int64)  # [] is a float tensor
        if tensor.dtype == torch.bool:
            if tensor.shape != (total,):
                shape = list(tensor.shape)
                msg = f"a boolean mask must have one value per row ({total}), got shape {shape}"
                raise DimError(msg)
            return tensor.nonzero().squeeze(1)
        if tensor.is_floating_point() or tensor.is_complex():
            raise DimError(f"indices must be integers, got {tensor.dtype}")
        tensor = tensor.to(torch.int64)
        if not (-total <= int(tensor.min()) and int(tensor.max()) < total):
            bad = tensor[(tensor < -total) | (tensor >= total)][0]
            raise DimError(f"index {int(bad)} is out of range for a dataset of {total} rows")
        return torch.where(tensor < 0, tensor + total, tensor)

    def _empty(self) -> R:
        """No rows (of the dataset's class and layout): a shard's first zero rows."""
        for shard in self._loaded.values():
            return shard.rows[:0]  # type: ignore[no-any-return]
        msg = f"the sharded dataset {self._root!r} has no shards yet: nothing to select from"
        raise DimError(msg)

    def _range(self, start: int, stop: int) -> R:
        """Rows ``start:stop``: slices of the shards they span (a view for one shard)."""
        if start >= stop:
            return self._empty()
        first = bisect.bisect_right(self._starts, start) - 1
        pieces = []
        for shard in range(first, len(self._shards)):
            offset = self._starts[shard]
            if offset >= stop:
                break
            pieces.append(self._shards[shard].rows[max(start - offset, 0) : stop - offset])
        return pieces[0] if len(pieces) == 1 else cat(pieces)  # type: ignore[no-any-return]

    def _gather(self, positions: torch.Tensor) -> R:
        """The rows at ``positions`` (any shape, non-negative), each shard read once.
        The index arithmetic is numpy's: one thread (torch would hand a few hundred
        indices to its thread pool, which costs more than the work on a busy machine)."""
        flat = positions.reshape(-1).numpy()
        if not flat.size:
            result = self._empty()
        else:
            starts = np.asarray(self._starts[:-1], dtype=np.int64)
            shard_of = np.searchsorted(starts, flat, side="right") - 1
            low, high = int(shard_of.min()), int(shard_of.max())
            if low == high:
                result = self._shards[low].rows[torch.from_numpy(flat - starts[low])]
            else:
                result = self._across(flat, shard_of, starts)
        if positions.dim() != 1:
            rest = result.batch_size[1:]  # type: ignore[attr-defined]
            result = result.reshape(*positions.shape, *rest)  # type: ignore[attr-defined]
        return result

    def _across(self, flat: np.ndarray, shard_of: np.ndarray, starts: np.ndarray) -> R:
        """Rows of several shards: read grouped by shard, then put back in order."""
        order = np.argsort(shard_of, kind="stable")
        by_shard = shard_of[order]
        local = torch.from_numpy(flat[order] - starts[by_shard])
        ends = np.cumsum(np.bincount(by_shard, minlength=len(self._shards))).tolist()
        pieces, begin = [], 0
        for shard, end in enumerate(ends):
            if end > begin:
                pieces.append(self._shards[shard].rows[local[begin:end]])
            begin = end
        gathered = cat(pieces)
        if bool((order[1:] > order[:-1]).all()):
            return gathered  # type: ignore[no-any-return]  # asked in the shards' order
        back = np.empty_like(order)
        back[order] = np.arange(order.size)
        return gathered[torch.from_numpy(back)]  # type: ignore[no-any-return]


def _check_worker(num_workers: int, worker_id: int) -> None:
    if type(num_workers) is not int or num_workers < 1:
        raise ArgumentValueError(f"num_workers must be a positive int, got {num_workers!r}")
    if type(worker_id) is not int or not 0 <= worker_id < num_workers:
        msg = f"worker_id must be an int in [0, {num_workers}), got {worker_id!r}"
        raise ArgumentValueError(msg)


@overload
def open_sharded(path: PathLike, cls: type[R]) -> ShardedDataset[R]: ...
@overload
def open_sharded(path: PathLike, cls: None = None) -> ShardedDataset[Any]: ...
def open_sharded(path: PathLike, cls: type[R] | None = None) -> ShardedDataset[Any]:
    """Open the sharded dataset in the folder ``path`` (written by ``shard_writer``s) as
    one read-only collection of the committed rows of all its shards (see
    :class:`ShardedDataset`). ``cls``: the record class of its rows, or ``TensorDict``
    for TensorDict rows (checked); None: the class the manifest names, which must be
    defined in this process.

    Raises:
        MissingFileError: no such folder, or it holds no sharded dataset.
        NotAFileError: ``path`` is a file, or a saved folder (use ``load_memmap``).
        ClassMismatchError: the dataset holds rows of another class than ``cls``.
        ShardSchemaError: a shard's rows differ from the dataset's schema (names it).
        MetadataError: the manifest or a shard's folder is malformed.
    """
    return ShardedDataset(path, cls)
