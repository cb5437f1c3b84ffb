"""``map`` and ``map_iter``: a function run on chunks of a collection in worker processes
(implemented in ``_engine/_map.py``, read from ``_provided.ENGINE``: it builds on the
engine)."""

from __future__ import annotations

import multiprocessing.pool
from collections.abc import Callable, Iterator
from typing import Any

import torch
from typing_extensions import Self

from tclass._base._provided import ENGINE

__all__ = ["MapOps"]


class MapOps:
    """map, map_iter."""

    __slots__ = ()

    def map(
        self,
        fn: Callable[[Any], Any],
        dim: int = 0,
        num_workers: int | None = None,
        *,
        out: Any = None,
        chunksize: int | None = None,
        num_chunks: int | None = None,
        pool: multiprocessing.pool.Pool | None = None,
        generator: torch.Generator | None = None,
        max_tasks_per_child: int | None = None,
        worker_threads: int = 1,
        index_with_generator: bool = False,
        pbar: bool = False,
        mp_start_method: str | None = None,
    ) -> Self:
        """``fn`` on chunks of this collection cut along ``dim``, in a pool of worker
        processes, the results joined along ``dim`` (``torch.cat``; stacked for
        ``chunksize=0``, which passes the elements one by one): a collection or a tensor,
        as ``fn`` returns, or ``None`` when ``fn`` returns ``None`` for every chunk.

        ``fn`` must be picklable (a module-level function). The chunks are views: on a
        memory-mapped collection the workers read their rows from the files, so data
        larger than memory can be processed.

        Args:
            fn: called on each chunk; returns a collection, a tensor or ``None``.
            dim: the batch dim to cut along.
            num_workers: the number of worker processes (default: one per CPU); ignored
                with ``pool``.
            out: a collection (the result's batch size) to write the results into; in
                shared memory or memory-mapped, the workers write into it themselves.
                ``out`` is then returned.
            chunksize: the length of each chunk (``0``: one element at a time);
                exclusive with ``num_chunks``.
            num_chunks: the number of chunks (default: one per worker).
            pool: a ``multiprocessing`` pool to use (and leave open) instead of a new
                one; ``num_workers``, ``generator``, ``max_tasks_per_child``,
                ``worker_threads`` and ``mp_start_method`` are then ignored.
            generator: draws the base seed of the workers: worker ``i`` seeds torch with
                base + ``i`` and numpy from both, so workers draw different numbers.
                ``None``: a new ``torch.Generator()`` (the same base seed every call, as
                the peer); ``torch.default_generator`` draws it from the global RNG.
            max_tasks_per_child: chunks a worker handles before it is replaced.
            worker_threads: torch threads in each worker.
            index_with_generator: index each chunk when a worker asks for it, instead of
                cutting them all before the pool starts.
            pbar: show a progress bar (needs ``tqdm``; none without it).
            mp_start_method: ``"fork"``, ``"spawn"``... (default: torch.multiprocessing's).

        Raises:
            ArgumentValueError: (a ``ValueError``, as the peer) both ``chunksize`` and
                ``num_chunks``.
            DimError: ``dim`` is not a batch dim.
        """
        return ENGINE.map_chunks(  # type: ignore[no-any-return]
            self,
            fn,
            dim,
            num_workers,
            out=out,
            chunksize=chunksize,
            num_chunks=num_chunks,
            pool=pool,
            generator=generator,
            max_tasks_per_child=max_tasks_per_child,
            worker_threads=worker_threads,
            index_with_generator=index_with_generator,
            pbar=pbar,
            mp_start_method=mp_start_method,
        )

    def map_iter(
        self,
        fn: Callable[[Any], Any],
        dim: int = 0,
        num_workers: int | None = None,
        *,
        shuffle: bool = False,
        chunksize: int | None = None,
        num_chunks: int | None = None,
        pool: multiprocessing.pool.Pool | None = None,
        generator: torch.Generator | None = None,
        max_tasks_per_child: int | None = None,
        worker_threads: int = 1,
        index_with_generator: bool = True,
        pbar: bool = False,
        mp_start_method: str | None = None,
    ) -> Iterator[Any]:
        """:meth:`map` as an iterator: each chunk's result as soon as it is ready, in
        chunk order; a data loader over the collection. ``shuffle``: the chunks take
        their elements from a random permutation (drawn from ``generator``) and come in
        the order the workers finish them (needs ``index_with_generator``, the default
        here). Stopping the iteration early stops the pool it made. Other arguments as
        :meth:`map`.

        Raises:
            UnsupportedError: (a ``RuntimeError``) ``shuffle`` without
                ``index_with_generator``.
        """
        return ENGINE.map_iter(
            self,
            fn,
            dim,
            num_workers,
            shuffle=shuffle,
            chunksize=chunksize,
            num_chunks=num_chunks,
            pool=pool,
            generator=generator,
            max_tasks_per_child=max_tasks_per_child,
            worker_threads=worker_threads,
            index_with_generator=index_with_generator,
            pbar=pbar,
            mp_start_method=mp_start_method,
        )
