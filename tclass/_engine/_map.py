"""``map`` / ``map_iter``: a function run on chunks of a collection in a pool of worker
processes, the results joined (``map``) or yielded (``map_iter``), as the peer's.

The collection is cut along ``dim`` into chunks (views, or rows of a memory-mapped
collection read by the workers from the files), sent to a ``torch.multiprocessing``
pool (tensors travel through shared memory), and ``fn`` runs on each. Each worker is
seeded from one base seed drawn from ``generator`` plus its own number, torch and numpy
alike, so that workers draw different random numbers.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import multiprocessing.pool
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import torch
import torch.multiprocessing as mp

try:  # the progress bar of pbar=True, when tqdm is installed (this module is imported
    # by the first map call only)
    _progress: Any = importlib.import_module("tqdm").tqdm
except ImportError:
    _progress = None

from tclass._base._provided import ENGINE
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._grad_writes import writes_as_set_
from tclass._core import _batch
from tclass._engine._lazy._build import maybe_dense_stack
from tclass.errors import ArgumentValueError, UnsupportedError

__all__ = ["MapOptions", "map_chunks", "map_iter"]


class MapOptions:
    """The keywords ``map`` and ``map_iter`` share, checked once."""

    __slots__ = (
        "chunksize",
        "dim",
        "generator",
        "index_with_generator",
        "max_tasks_per_child",
        "mp_start_method",
        "num_chunks",
        "num_workers",
        "pbar",
        "pool",
        "shuffle",
        "worker_threads",
    )

    def __init__(
        self,
        node: TensorCollection,
        dim: int,
        num_workers: int | None,
        *,
        chunksize: int | None,
        num_chunks: int | None,
        pool: multiprocessing.pool.Pool | None,
        generator: torch.Generator | None,
        max_tasks_per_child: int | None,
        worker_threads: int,
        index_with_generator: bool,
        pbar: bool,
        mp_start_method: str | None,
        shuffle: bool = False,
    ) -> None:
        if chunksize is not None and num_chunks is not None:
            msg = "map: give chunksize or num_chunks, not both"
            raise ArgumentValueError(msg)
        if shuffle and not index_with_generator:
            msg = (
                "map_iter(shuffle=True) indexes each chunk when a worker asks for it: pass "
                "index_with_generator=True (the default) with it"
            )
            raise UnsupportedError(msg)
        self.dim = _batch.normalize_dim(dim, node.batch_dims, op="map")
        self.num_workers = (
            getattr(pool, "_processes", None) or 1
            if pool is not None
            else num_workers or mp.cpu_count()
        )
        self.chunksize = chunksize
        self.num_chunks = num_chunks
        self.pool = pool
        self.generator = generator
        self.max_tasks_per_child = max_tasks_per_child
        self.worker_threads = worker_threads
        self.index_with_generator = index_with_generator
        self.pbar = pbar
        self.mp_start_method = mp_start_method
        self.shuffle = shuffle

    def index_sets(self, length: int) -> list[Any]:
        """The indices along ``dim`` of each chunk: ints (``chunksize=0``: one element,
        its dim removed), slices, or index tensors when shuffled."""
        order = torch.randperm(length, generator=self.generator) if self.shuffle else None
        if self.chunksize == 0:
            return list(range(length)) if order is None else order.tolist()
        if self.chunksize is not None:
            sizes = _batch.split_sizes(self.chunksize, length) if length else []
        else:
            sizes = _batch.chunk_sizes(self.num_chunks or self.num_workers, length)
        bounds = list(itertools.accumulate(sizes, initial=0))
        ranges = [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        if order is None:
            return [slice(a, b) for a, b in ranges]
        return [order[a:b] for a, b in ranges]

    def new_pool(self) -> multiprocessing.pool.Pool:
        """A pool whose workers seed themselves and set their torch threads."""
        ctx = mp.get_context(self.mp_start_method)
        generator = self.generator if self.generator is not None else torch.Generator()
        seed = int(torch.empty((), dtype=torch.int64).random_(generator=generator).item())
        counter = ctx.Value("i", 0)
        return ctx.Pool(
            processes=self.num_workers,
            initializer=_init_worker,
            initargs=(seed, counter, self.worker_threads),
            maxtasksperchild=self.max_tasks_per_child,
        )


def _init_worker(base_seed: int, counter: Any, threads: int) -> None:
    with counter.get_lock():
        worker = counter.value
        counter.value += 1
    torch.manual_seed(base_seed + worker)
    np.random.seed(int(np.random.SeedSequence([base_seed, worker]).generate_state(1)[0]))
    torch.set_num_threads(threads)


def _chunks(node: Any, dim: int, indices: list[Any], lazily: bool) -> Iterable[Any]:
    lead = (slice(None),) * dim
    if lazily:
        return (node[lead + (index,)] for index in indices)
    return [node[lead + (index,)] for index in indices]


def _call(fn: Callable[[Any], Any], chunk: Any) -> Any:
    return fn(chunk)


def _call_into(fn: Callable[[Any], Any], pair: tuple[Any, Any]) -> None:
    chunk, out = pair
    result = fn(chunk)
    if result is not None:
        with writes_as_set_():
            out.update_(result)


def _results(
    node: Any, fn: Callable[[Any], Any], options: MapOptions, pool: Any, out: Any
) -> tuple[Iterator[Any], list[Any]]:
    """The pool's results in chunk order (finish order if shuffled), and the indices."""
    indices = options.index_sets(node.batch_size[options.dim])
    lazily = options.index_with_generator
    chunks = _chunks(node, options.dim, indices, lazily)
    if out is not None and (out.is_shared() or out.is_memmap()):
        targets = _chunks(out, options.dim, indices, lazily)
        work: Callable[[Any], Any] = functools.partial(_call_into, fn)
        items: Iterable[Any] = zip(chunks, targets)
    else:
        work = functools.partial(_call, fn)
        items = chunks
    imap = pool.imap_unordered if options.shuffle else pool.imap
    results = imap(work, items, 1)
    if options.pbar and _progress is not None:
        results = _progress(results, total=len(indices))
    return results, indices


def map_chunks(
    node: Any,
    fn: Callable[[Any], Any],
    dim: int,
    num_workers: int | None,
    *,
    out: Any,
    **keywords: Any,
) -> Any:
    """``node.map(fn, ...)``: the results joined along ``dim`` (stacked for
    ``chunksize=0``), or written into ``out``."""
    options = MapOptions(node, dim, num_workers, **keywords)
    own = options.pool is None
    pool = options.new_pool() if options.pool is None else options.pool
    try:
        results, indices = _results(node, fn, options, pool, out)
        collected: list[Any] = []
        lead = (slice(None),) * options.dim
        for index, result in zip(indices, results):
            if result is None:
                continue
            if out is not None:
                with writes_as_set_():
                    out[lead + (index,)].update_(result)
            else:
                collected.append(result)
    finally:
        if own:
            pool.close()
            pool.join()
    if out is not None:
        return out
    if not collected:
        return None
    if options.chunksize == 0:
        if isinstance(collected[0], torch.Tensor):
            return torch.stack(collected, options.dim)
        return maybe_dense_stack(collected, options.dim)
    return torch.cat(collected, options.dim)


def map_iter(
    node: Any, fn: Callable[[Any], Any], dim: int, num_workers: int | None, **keywords: Any
) -> Iterator[Any]:
    """``node.map_iter(fn, ...)``: each chunk's result as soon as it is ready (the
    arguments are checked at the call, before the first result is asked for)."""
    return _iterate(node, fn, MapOptions(node, dim, num_workers, **keywords))


def _iterate(node: Any, fn: Callable[[Any], Any], options: MapOptions) -> Iterator[Any]:
    own = options.pool is None
    pool = options.new_pool() if options.pool is None else options.pool
    finished = False
    try:
        results, _ = _results(node, fn, options, pool, None)
        yield from results
        finished = True
    finally:
        if own:
            if finished:
                pool.close()
            else:  # the caller stopped early: the chunks left are not needed
                pool.terminate()
            pool.join()


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

ENGINE.map_chunks = map_chunks
ENGINE.map_iter = map_iter
