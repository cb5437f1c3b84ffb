"""Times tclass's memory-mapped save and load against the peer (``tensordict``) and baselines.

Usage: ``python benchmarks/io.py [--quick] [--repeat N] [--dir DIR] [--gather-rows N]
[--save-rows N] [--cases 12345] [--cpu]`` (``make bench-io``). ``--quick`` is a smoke run
(megabytes, one repeat). Cases 3 and 4 (per-operation) report each row twice, in
wall-clock time (``[wall]``) and in this process's CPU time (``[cpu]``, what a loaded
machine does not inflate: waiting for a core is not the code's), from the same samples;
``--cpu`` lists the CPU-time rows first.

The cases (the issue's targets in the table's last columns):

1. ``memmap_`` of a 2 GiB (``--save-rows 32768``: 1 GiB) tensorclass of 8 float32 leaves,
   in GB/s (1e9 bytes/s) into the page cache of the disk that holds ``--dir``, for
   ``num_threads`` in {0, 2, 4, 8}; baselines: the page cache's own limit, a plain
   ``pwrite`` of the same 8 buffers into 8 new files ("pwrite") and ``dd`` of one file
   of the same size from ``/dev/zero`` ("dd"), then safetensors ``save_file`` and
   ``torch.save`` of the same 8 tensors. Before each write the writeback is settled
   (``os.sync()``, then a wait until /proc/meminfo's Dirty + Writeback drain) and 1.25x
   the size in memory touched (see ``touch_memory``); the folder is deleted after it.
2. Gather of 256 random rows from a memory-mapped (3, 64, 64) uint8 field of
   ``--gather-rows`` rows (default 1,000,000: a 12.3 GB file, written with real bytes
   and fsynced), in rows/s, by tclass and the peer (``loaded["image"][idx]``, idx a
   LongTensor); baselines on the same file: numpy fancy indexing of an ``np.memmap``,
   ``torch.index_select`` on a plain ``torch.from_file`` mapping, and one ``preadv``
   per row (no mapping). Warm: the rows read once before timing; cold: the file's pages
   dropped with ``posix_fadvise(DONTNEED)`` and the file mapped afresh before each gather.
3. ``load_memmap`` of a folder of 8 leaves (a tensorclass) and of one of 256 small
   leaves (a TensorDict); ``memmap`` of the 256-leaf TensorDict into a fresh folder.
4. ``memmap_like`` of a record of one (3, 64, 64) uint8 image and a label expanded to
   1,000,000 rows (sparse files: no data is written).
   Cases 3 and 4 have a "by hand" baseline: the least a loader/writer does (map each
   leaf; create, fill or size and map each leaf and write meta.json), i.e. the file
   system's own cost, which bounds how far below the peer tclass can go. Both writes are
   also timed with ``durable=True`` (every file and folder fsynced, and the parent after
   the swap; the peer has no such option, so the ratio is against its plain save). Each
   sample of a write or a load starts with the writeback settled, as in case 1.
5. ``append_memmap`` of 10,000 rows of a (3, 64, 64) uint8 image, a float32 reward and a
   bool done to a saved folder of 10,000 and of 1,000,000 rows (allocated sparse, with
   ``memmap_like``); baseline: the same rows written by hand into a buffer preallocated
   on disk with room for them (``buffer[n:n + 10_000] = rows``, leaf by leaf). The
   issue's targets: at most 1.2x the baseline, whatever the rows already saved.

All implementations of a case run in this one process, interleaved repeat by repeat (the
order rotating) so that machine noise hits them alike; the table reports medians, and
each ratio's range over the repeats (each repeat's pair ran side by side).

No ``from __future__ import annotations`` here: the tensorclasses' annotations must
resolve even when the script runs under ``python -m cProfile`` or ``runpy``.
"""

import argparse
import fcntl
import gc
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

import tclass
from tclass._io.memmap import _read_cache as read_cache

sys.path.insert(0, str(Path(__file__).resolve().parent))

from io_table import (  # noqa: E402
    CLOCKS,
    COLUMNS,
    Impl,
    Row,
    Samples,
    measure,
    measure_both,
    note,
    primary_clock,
    print_row,
    use_cpu_time,
)

from _common import settle_writeback  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the peer's deprecation warnings
    try:
        import tensordict as peer
    except ImportError:  # the tclass and baseline columns still run
        peer = None  # type: ignore[assignment]
try:
    import safetensors.torch as safetensors_torch
except ImportError:
    safetensors_torch = None  # type: ignore[assignment]


# --- the records (module level: both libraries resolve a saved class by its name) -------


@tclass.tensorclass
class TRecord:
    f0: torch.Tensor
    f1: torch.Tensor
    f2: torch.Tensor
    f3: torch.Tensor
    f4: torch.Tensor
    f5: torch.Tensor
    f6: torch.Tensor
    f7: torch.Tensor


if peer is not None:

    @peer.tensorclass
    class PRecord:
        f0: torch.Tensor
        f1: torch.Tensor
        f2: torch.Tensor
        f3: torch.Tensor
        f4: torch.Tensor
        f5: torch.Tensor
        f6: torch.Tensor
        f7: torch.Tensor


FIELDS = [f"f{i}" for i in range(8)]
ROW_SHAPE = (3, 64, 64)  # the gathered / expanded image


# --- sizes -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    save_rows: int  # rows of each (rows, 1024) float32 leaf of case 1
    gather_rows: int
    small_leaves: int  # leaves of the case-3 TensorDict, each (100, 4) float32
    expand_rows: int  # rows of the case-4 record
    append_rows: int  # rows appended in case 5
    append_saved: tuple[int, ...]  # rows already saved before the append, per case-5 row
    repeat: int
    budget: float  # seconds per timed batch of the fast statements
    collect: bool = True  # run the garbage collector (0.1 s) where files must be unmapped

    @property
    def save_bytes(self) -> int:
        return self.save_rows * 1024 * 4 * len(FIELDS)


FULL = Sizes(
    save_rows=65536,
    gather_rows=1_000_000,
    small_leaves=256,
    expand_rows=1_000_000,
    append_rows=10_000,
    append_saved=(10_000, 1_000_000),
    repeat=7,
    budget=0.2,
)
QUICK = Sizes(
    save_rows=64,
    gather_rows=2000,
    small_leaves=256,
    expand_rows=10_000,
    append_rows=100,
    append_saved=(100, 10_000),
    repeat=1,
    budget=0.0,
    collect=False,
)


# --- helpers ---------------------------------------------------------------------------------


def remove(path: str | os.PathLike[str]) -> None:
    shutil.rmtree(path, ignore_errors=True)


def drop_cache(path: str) -> None:
    """Drop the file's clean pages from the page cache (none may be mapped, or they stay)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def touch_memory(nbytes: int) -> None:
    """Touch and free ``nbytes`` of memory, so that the next allocations get pages the
    machine has just used. (On a virtual machine whose host reclaims free guest memory,
    the first touch of a page can cost as much as the write being timed, and whether a
    write meets such pages is luck: this takes the luck out, for every writer alike.)"""
    if nbytes:
        filled = np.ones(nbytes, dtype=np.uint8)
        del filled


def collect(sizes: Sizes) -> None:
    """Unmap the files of dropped collections caught in reference cycles."""
    if sizes.collect:
        gc.collect()


def fresh_paths(base: Path, stem: str) -> Callable[[], str]:
    """A function returning a new path under ``base`` at each call."""
    counter = itertools.count()
    return lambda: str(base / f"{stem}{next(counter)}")


def each_path(paths: Callable[[], str], run: Callable[[str], Any]) -> Callable[[], Any]:
    """A function calling ``run`` with a new path from ``paths`` at each call."""
    return lambda: run(paths())


def write_impl(folder: Path, stem: str, save: Callable[[str], Any]) -> Impl:
    """Saves into new folders under ``folder`` (removed after each batch), each batch
    starting with the writeback settled."""
    return Impl(each_path(fresh_paths(folder, stem), save), settle_writeback, clear(folder))


def clear(folder: Path) -> Callable[[], None]:
    def after() -> None:
        for child in folder.iterdir():
            remove(child)

    return after


def map_file(path: str, dtype: torch.dtype, shape: Sequence[int]) -> torch.Tensor:
    return torch.from_file(path, shared=True, size=math.prod(shape), dtype=dtype).view(*shape)


def size_text(nbytes: int) -> str:
    return f"{nbytes / 2**30:.3g}GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.3g}MiB"


def count_text(rows: int) -> str:
    return f"{rows / 1e6:g}M" if rows >= 1_000_000 else f"{rows / 1e3:g}k"


# --- case 1: memmap_ of 8 leaves ---------------------------------------------------------------


THREADS = (0, 2, 4, 8)


def case_save(base: Path, sizes: Sizes) -> list[Row]:
    rows = sizes.save_rows
    generator = torch.Generator().manual_seed(0)
    leaves = {name: torch.rand(rows, 1024, generator=generator) for name in FIELDS}
    target = base / "save"
    state: dict[str, Any] = {}

    def settle() -> None:
        settle_writeback()  # every write starts with no dirty pages to compete with
        touch_memory(sizes.save_bytes * 5 // 4)

    def prepare(make: Callable[[], Any]) -> Callable[[], None]:
        def before() -> None:
            remove(target)
            state["record"] = make()
            settle()

        return before

    def after() -> None:
        state.clear()  # unmaps the written files
        collect(sizes)
        remove(target)

    def record_impl(cls: type, threads: int) -> Impl:
        make = lambda: cls(**leaves, batch_size=[rows])  # noqa: E731
        return Impl(
            lambda: state["record"].memmap_(target, num_threads=threads),
            prepare(make),
            after,
            number=1,
        )

    impls: dict[str, Impl] = {}
    for threads in THREADS:
        impls[f"tclass/{threads}"] = record_impl(TRecord, threads)
        if peer is not None:
            impls[f"peer/{threads}"] = record_impl(PRecord, threads)

    def in_folder(save: Callable[[dict[str, torch.Tensor], str], object], name: str) -> Impl:
        def before() -> None:
            remove(target)
            target.mkdir()
            settle()

        return Impl(lambda: save(leaves, str(target / name)), before, after, number=1)

    impls["pwrite"] = in_folder(pwrite_leaves, "")
    if shutil.which("dd") is not None:
        impls["dd"] = in_folder(lambda _, path: dd_zeros(path, sizes.save_bytes), "data")
    if safetensors_torch is not None:
        impls["safetensors"] = in_folder(safetensors_torch.save_file, "model.safetensors")
    impls["torch.save"] = in_folder(torch.save, "data.pt")

    _check_save(leaves, target)
    note(f"case 1: {len(impls)} writers x {sizes.repeat} repeats of {size_text(sizes.save_bytes)}")
    return _save_rows(measure(impls, sizes.repeat, sizes.budget), sizes)


def pwrite_leaves(leaves: dict[str, torch.Tensor], folder: str) -> None:
    """The page cache's limit for these bytes: each buffer written whole into a new file
    (``pwrite``, in this thread), nothing mapped, no meta.json."""
    for name, value in leaves.items():
        data = value.numpy().data.cast("B")
        fd = os.open(os.path.join(folder, f"{name}.memmap"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            done = 0
            while done < len(data):
                done += os.pwrite(fd, data[done:], done)
        finally:
            os.close(fd)


def dd_zeros(path: str, nbytes: int) -> None:
    """``dd`` of ``nbytes`` from /dev/zero into a new file (1 MiB blocks, no sync)."""
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={nbytes}", "iflag=count_bytes",
         "status=none"],
        check=True,
    )  # fmt: skip


# The targets, as rates over the peer's (time ratios 0.8 and 0.6), and over a
# plain pwrite of the same bytes (within 1.25x of its time).
SAVE_TARGETS = {0: 1.25, 2: 1 / 0.6}
PWRITE_TARGET = 0.8


def _save_rows(samples: dict[str, list[float]], sizes: Sizes) -> list[Row]:
    """Case 1's rows: one per thread count; one thread against a plain pwrite; the best
    of them against the peer and against safetensors."""
    scale = sizes.save_bytes / 1e9
    size = size_text(sizes.save_bytes)
    baselines = ("pwrite", "dd", "safetensors", "torch.save")
    out = [
        Row.of(f"memmap_ {size} x8 threads={threads}", "GB/s", samples, scale,
               tclass_key=f"tclass/{threads}", peer_key=f"peer/{threads}", baselines=baselines,
               target=SAVE_TARGETS.get(threads))
        for threads in THREADS
    ]  # fmt: skip
    out.append(
        Row.of(f"memmap_ {size} x8 threads=0/pwrite", "GB/s", samples, scale,
               tclass_key="tclass/0", peer_key="peer/0", baselines=baselines,
               against="pwrite", target=PWRITE_TARGET)
    )  # fmt: skip
    best = max(out, key=lambda row: row.tclass)
    peers = [row.peer for row in out if row.peer is not None]
    peer_best = max(peers) if peers else None
    out.append(
        Row(
            f"memmap_ {size} x8 best threads",
            "GB/s",
            best.tclass,
            peer_best,
            best.baselines,
            "peer",
            1.0,
        )
    )
    if "safetensors" in best.baselines:
        out.append(
            Row(
                f"memmap_ {size} x8 best/safetensors",
                "GB/s",
                best.tclass,
                peer_best,
                best.baselines,
                "safetensors",
                0.9,
            )
        )
    return out


def _check_save(leaves: dict[str, torch.Tensor], target: Path) -> None:
    """Both libraries' writers save what they are given (checked on a few rows)."""
    small = {name: value[:4] for name, value in leaves.items()}
    for cls in (TRecord, PRecord) if peer is not None else (TRecord,):
        cls(**small, batch_size=[4]).memmap_(target)
        back = cls.load_memmap(target)
        assert all(torch.equal(getattr(back, name), small[name]) for name in FIELDS), cls
        del back
        gc.collect()
        remove(target)


# --- case 2: gather of 256 rows ------------------------------------------------------------------


GATHERED = 256
ROW_BYTES = math.prod(ROW_SHAPE)


def write_gather_file(folder: Path, rows: int) -> str:
    """A saved TensorDict of ``rows`` (3, 64, 64) uint8 images, every byte written."""
    record = tclass.TensorDict({"image": torch.zeros(ROW_SHAPE, dtype=torch.uint8)}, [])
    record.expand(rows).memmap_like(folder)  # allocates a sparse file...
    path = str(folder / "image.memmap")
    chunk_rows = 4096
    chunk = np.random.default_rng(0).integers(0, 256, chunk_rows * ROW_BYTES, dtype=np.uint8)
    fd = os.open(path, os.O_WRONLY)
    try:  # ...then fills every block with real bytes (a hole reads zeros from no disk)
        for start in range(0, rows, chunk_rows):
            count = min(chunk_rows, rows - start)
            view = memoryview(np.roll(chunk, start)[: count * ROW_BYTES])
            done = 0
            while done < len(view):
                done += os.pwrite(fd, view[done:], start * ROW_BYTES + done)
        os.fsync(fd)  # clean pages: posix_fadvise can drop them
    finally:
        os.close(fd)
    return path


def pread_rows(path: str, index: torch.Tensor) -> torch.Tensor:
    """The rows of ``index``, one ``preadv`` each (no mapping, no read-ahead)."""
    out = torch.empty(len(index), *ROW_SHAPE, dtype=torch.uint8)
    rows = out.numpy().reshape(len(index), ROW_BYTES)
    fd = os.open(path, os.O_RDONLY)
    try:
        for position, row in enumerate(index.tolist()):
            os.preadv(fd, [rows[position]], row * ROW_BYTES)
    finally:
        os.close(fd)
    return out


def case_gather(base: Path, sizes: Sizes) -> list[Row]:
    rows = sizes.gather_rows
    folder = base / "gather"
    remove(folder)
    note(f"case 2: writing {rows} rows ({rows * ROW_BYTES / 1e9:.3g} GB) for the gather")
    start = time.perf_counter()
    path = write_gather_file(folder, rows)
    note(f"case 2: written in {time.perf_counter() - start:.1f}s")
    generator = torch.Generator().manual_seed(1)
    state: dict[str, Any] = {}

    def new_index() -> None:
        state["idx"] = torch.randperm(rows, generator=generator)[:GATHERED]
        state["idx_np"] = state["idx"].numpy()

    openers: dict[str, Callable[[], Any]] = {
        "tclass": lambda: tclass.TensorDict.load_memmap(folder),
        "numpy": lambda: np.memmap(path, dtype=np.uint8, mode="r", shape=(rows, *ROW_SHAPE)),
        "index_select": lambda: map_file(path, torch.uint8, (rows, *ROW_SHAPE)),
        "pread": lambda: path,
    }
    statements: dict[str, Callable[[dict[str, Any]], object]] = {
        "tclass": lambda s: s["tclass"]["image"][s["idx"]],
        "numpy": lambda s: s["numpy"][s["idx_np"]],
        "index_select": lambda s: torch.index_select(s["index_select"], 0, s["idx"]),
        "pread": lambda s: pread_rows(s["pread"], s["idx"]),
    }
    if peer is not None:
        openers["peer"] = lambda: peer.TensorDict.load_memmap(folder)
        statements["peer"] = lambda s: s["peer"]["image"][s["idx"]]

    new_index()
    state.update({name: opener() for name, opener in openers.items()})
    expected = torch.from_numpy(np.asarray(statements["numpy"](state)))
    assert expected.any(), "the gathered rows are holes"
    for name, statement in statements.items():
        got = statement(state)
        assert isinstance(got, (torch.Tensor, np.ndarray)) and torch.equal(
            torch.as_tensor(got).as_subclass(torch.Tensor), expected
        ), name

    # Warm: each repeat draws new rows and reads them once with each implementation.
    def warm_up() -> None:
        new_index()
        for statement in statements.values():
            statement(state)

    warm = {name: Impl(lambda f=statement: f(state)) for name, statement in statements.items()}
    note(f"case 2: warm gather, {sizes.repeat} repeats")
    warm_samples = measure(warm, sizes.repeat, sizes.budget, each_repeat=warm_up)
    for name in openers:
        state.pop(name, None)
    collect(sizes)

    # Cold: before each gather nothing maps the file and its pages are dropped.
    def cold_impl(name: str) -> Impl:
        def before() -> None:
            collect(sizes)
            drop_cache(path)
            state[name] = openers[name]()  # opening reads no rows

        def after() -> None:
            state.pop(name, None)

        return Impl(lambda: statements[name](state), before, after, number=1)

    cold = {name: cold_impl(name) for name in statements}
    note(f"case 2: cold gather, {sizes.repeat} repeats")
    cold_samples = measure(cold, sizes.repeat, sizes.budget, each_repeat=new_index)
    state.clear()
    collect(sizes)
    remove(folder)
    label = count_text(rows)
    baselines = ("numpy", "index_select", "pread")
    return [
        Row.of(f"gather 256 of {label} warm", "rows/s", warm_samples, GATHERED, baselines=baselines,
               against="numpy", target=0.8),
        Row.of(f"gather 256 of {label} cold", "rows/s", cold_samples, GATHERED, baselines=baselines,
               against="peer", target=1.0),
    ]  # fmt: skip


# --- case 3: load_memmap, and memmap of many small leaves ---------------------------------------


def load_by_hand(folder: Path) -> dict[str, torch.Tensor]:
    """The least a loader does: read meta.json, map each leaf (no checks, no classes)."""
    where = os.fspath(folder)
    with open(f"{where}/meta.json", "rb") as stream:
        meta = json.loads(stream.read())
    return {
        key: map_file(f"{where}/{key}.memmap", DTYPES[entry["dtype"]], entry["shape"])
        for key, entry in meta.items()
        if isinstance(entry, dict) and "dtype" in entry
    }


def save_by_hand(
    leaves: dict[str, torch.Tensor], batch: list[int], folder: str, like: bool
) -> dict[str, torch.Tensor]:
    """The least a writer does: a folder, each leaf written (or sized) and mapped, and a
    meta.json (no staging, no fsync, no checks)."""
    os.mkdir(folder)
    out = {}
    meta: dict[str, Any] = {}
    for key, value in leaves.items():
        path = f"{folder}/{key}.memmap"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            if like:
                os.ftruncate(fd, value.numel() * value.element_size())
            else:
                os.write(fd, value.numpy().data.cast("B"))
        finally:
            os.close(fd)
        out[key] = map_file(path, value.dtype, value.shape)
        meta[key] = {
            "device": "cpu",
            "shape": list(value.shape),
            "dtype": str(value.dtype),
            "is_nested": False,
        }
    meta.update({"shape": batch, "device": "cpu", "_type": "<class 'tensordict._td.TensorDict'>"})
    with open(f"{folder}/meta.json", "w") as stream:
        json.dump(meta, stream)
    return out


def save_by_hand_atomic(
    leaves: dict[str, torch.Tensor], batch: list[int], folder: str, like: bool
) -> dict[str, torch.Tensor]:
    """:func:`save_by_hand` made atomic, the least a writer does that never leaves a
    half-written folder at ``folder``: a staging folder beside it, held locked (so that
    another writer's cleanup of dead staging folders leaves it alone), filled, then
    renamed into place. What tclass adds to this is its own cost."""
    parent, name = os.path.split(folder)
    staging = os.path.join(parent, f".{name}.staging-{os.getpid()}")
    os.mkdir(staging)
    fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        out = save_by_hand(leaves, batch, f"{staging}/tree", like)
        os.rename(f"{staging}/tree", folder)
        os.rmdir(staging)
    finally:
        os.close(fd)
    return out


DTYPES = {str(dtype): dtype for dtype in (torch.float32, torch.uint8, torch.int64)}


def case_load(base: Path, sizes: Sizes) -> list[Row]:
    return [*_load_record_rows(base, sizes), *_small_leaves_rows(base, sizes)]


def _load_record_rows(base: Path, sizes: Sizes) -> list[Row]:
    """load_memmap of a record of 8 leaves (files allocated, never written)."""
    # 8 leaves of case 1's shapes; memmap_like allocates the files without writing them.
    shape_only = {
        name: torch.empty(sizes.save_rows, 1024).expand(sizes.save_rows, 1024) for name in FIELDS
    }
    folders = {"tclass": base / "load8-tclass", "peer": base / "load8-peer"}
    TRecord(**shape_only, batch_size=[sizes.save_rows]).memmap_like(folders["tclass"])
    load8 = {
        "tclass": Impl(lambda: TRecord.load_memmap(folders["tclass"]), settle_writeback),
        "by hand": Impl(lambda: load_by_hand(folders["tclass"] / "_tensordict"), settle_writeback),
        # a first load: what a load learnt from these meta.json bytes forgotten before each
        "tclass, first load": Impl(
            lambda: _first_load(TRecord, folders["tclass"]), settle_writeback
        ),
    }
    if peer is not None:
        PRecord(**shape_only, batch_size=[sizes.save_rows]).memmap_like(folders["peer"])
        load8["peer"] = Impl(lambda: PRecord.load_memmap(folders["peer"]), settle_writeback)
    note(f"case 3: load_memmap of 8 leaves, {sizes.repeat} repeats")
    clocks = measure_both(load8, sizes.repeat, sizes.budget)
    for folder in folders.values():
        remove(folder)
    first = "load_memmap 8 leaves, first load of its meta.json (tensorclass)"
    return [
        *clock_rows(
            "load_memmap 8 leaves (tensorclass)", clocks, baselines=["by hand"], target=0.5
        ),
        *clock_rows(first, clocks, tclass_key="tclass, first load", baselines=["by hand"]),
    ]


def _first_load(cls: Any, folder: Path) -> object:
    """``cls.load_memmap(folder)`` as the first load of its ``meta.json`` bytes would run."""
    read_cache.clear()
    return cls.load_memmap(folder)


def clock_rows(case: str, clocks: dict[str, Samples], **options: Any) -> list[Row]:
    """A per-operation case's rows: one per clock (``[wall]``, ``[cpu]``), the primary
    clock's first (see ``--cpu``)."""
    first = primary_clock()
    order = [first, *(clock for clock in CLOCKS if clock != first)]
    return [Row.of(f"{case} [{clock}]", "s", clocks[clock], **options) for clock in order]


def _small_leaves_rows(base: Path, sizes: Sizes) -> list[Row]:
    """load_memmap and memmap of a TensorDict of many small leaves."""
    out: list[Row] = []
    generator = torch.Generator().manual_seed(2)
    leaves = {
        f"leaf{i}": torch.rand(100, 4, generator=generator) for i in range(sizes.small_leaves)
    }
    mine = tclass.TensorDict(leaves, [100])
    theirs = peer.TensorDict(leaves, [100]) if peer is not None else None
    folders256 = {"tclass": base / "load256-tclass", "peer": base / "load256-peer"}
    mine.memmap(folders256["tclass"])
    load256 = {
        "tclass": Impl(
            lambda: tclass.TensorDict.load_memmap(folders256["tclass"]), settle_writeback
        ),
        "by hand": Impl(lambda: load_by_hand(folders256["tclass"]), settle_writeback),
    }
    if theirs is not None:
        theirs.memmap(folders256["peer"])
        load256["peer"] = Impl(
            lambda: peer.TensorDict.load_memmap(folders256["peer"]), settle_writeback
        )
    back = load256["tclass"].run()
    assert isinstance(back, tclass.TensorDict) and torch.equal(back["leaf7"], leaves["leaf7"])
    assert torch.equal(load_by_hand(folders256["tclass"])["leaf7"], leaves["leaf7"])
    del back
    note(f"case 3: load_memmap of {sizes.small_leaves} leaves, {sizes.repeat} repeats")
    clocks = measure_both(load256, sizes.repeat, sizes.budget)
    out += clock_rows(
        f"load_memmap {sizes.small_leaves} leaves (TensorDict)",
        clocks,
        baselines=["by hand"],
        target=0.5,
    )

    writes = base / "writes"
    writes.mkdir()
    save256 = {
        "tclass": write_impl(writes, "t", lambda path: mine.memmap(path)),
        "by hand": write_impl(writes, "h", lambda path: save_by_hand(leaves, [100], path, False)),
        "tclass durable": write_impl(writes, "d", lambda path: mine.memmap(path, durable=True)),
    }
    if theirs is not None:
        save256["peer"] = write_impl(writes, "p", lambda path: theirs.memmap(path))
    note(f"case 3: memmap of {sizes.small_leaves} leaves, {sizes.repeat} repeats")
    clocks = measure_both(save256, sizes.repeat, sizes.budget)
    out += clock_rows(
        f"memmap {sizes.small_leaves} leaves (TensorDict)",
        clocks,
        baselines=["by hand"],
        target=0.5,
    )
    out += clock_rows(
        f"memmap {sizes.small_leaves} leaves durable=True",
        clocks,
        tclass_key="tclass durable",
        baselines=["by hand"],
    )
    for folder in (*folders256.values(), writes):
        remove(folder)
    return out


# --- case 4: memmap_like of an expanded record ----------------------------------------------------


def case_like(base: Path, sizes: Sizes) -> list[Row]:
    rows = sizes.expand_rows
    image, label = torch.zeros(ROW_SHAPE, dtype=torch.uint8), torch.tensor(0)
    mine = tclass.TensorDict({"image": image, "label": label}, []).expand(rows)
    expanded = {"image": image.expand(rows, *ROW_SHAPE), "label": label.expand(rows)}
    folder = base / "like"
    folder.mkdir()
    impls = {
        "tclass": write_impl(folder, "t", lambda path: mine.memmap_like(path)),
        "by hand": write_impl(folder, "h", lambda path: save_by_hand(expanded, [rows], path, True)),
        "by hand, atomic": write_impl(
            folder, "a", lambda path: save_by_hand_atomic(expanded, [rows], path, True)
        ),
        "tclass durable": write_impl(
            folder, "d", lambda path: mine.memmap_like(path, durable=True)
        ),
    }
    if peer is not None:
        theirs = peer.TensorDict({"image": image, "label": label}, []).expand(rows)
        impls["peer"] = write_impl(folder, "p", lambda path: theirs.memmap_like(path))
    liked = impls["tclass"].run()
    assert isinstance(liked, tclass.TensorDict) and liked["image"].shape == (rows, *ROW_SHAPE)
    del liked
    clear(folder)()
    note(f"case 4: memmap_like of {rows} expanded rows, {sizes.repeat} repeats")
    clocks = measure_both(impls, sizes.repeat, sizes.budget)
    remove(folder)
    label_rows = count_text(rows)
    return [
        *clock_rows(
            f"memmap_like {label_rows}-row expand",
            clocks,
            baselines=["by hand", "by hand, atomic"],
            target=0.5,
        ),
        *clock_rows(
            f"memmap_like {label_rows}-row durable=True",
            clocks,
            tclass_key="tclass durable",
            baselines=["by hand"],
        ),
    ]


# --- case 5: append_memmap --------------------------------------------------------------------


def _append_rows(lib: Any, start: int, count: int) -> Any:
    """``count`` transitions: an image, a reward and a done flag per row."""
    generator = torch.Generator().manual_seed(start)
    return lib.TensorDict(
        {
            "obs": torch.randint(
                0, 256, (count, *ROW_SHAPE), dtype=torch.uint8, generator=generator
            ),
            "reward": torch.rand(count, generator=generator),
            "done": torch.zeros(count, dtype=torch.bool),
        },
        batch_size=[count],
    )


def _allocate(lib: Any, path: str, rows: int) -> Any:
    """A saved folder of ``rows`` rows, sparse (allocated, not written)."""
    return _append_rows(lib, 0, 1)[0].expand(rows).memmap_like(path)


def case_append(base: Path, sizes: Sizes) -> list[Row]:
    rows = [_append_to(base, saved, sizes) for saved in sizes.append_saved]
    first, last = rows[0], rows[-1]
    note(
        f"case 5: an append to {count_text(sizes.append_saved[-1])} saved rows takes "
        f"{last.tclass / first.tclass:.2f}x one to {count_text(sizes.append_saved[0])}"
    )
    return rows


def _append_to(base: Path, saved: int, sizes: Sizes) -> Row:
    added = sizes.append_rows
    mine = _append_rows(tclass, 1, added)
    folder = base / f"append{saved}"
    folder.mkdir()
    paths = {name: str(folder / name) for name in ("t", "hand", "p")}
    buffers: dict[str, Any] = {}

    def setup(name: str, lib: Any, extra: int) -> Callable[[], None]:
        def before() -> None:
            buffers.pop(name, None)
            remove(paths[name])
            buffers[name] = _allocate(lib, paths[name], saved + extra)
            settle_writeback()

        return before

    def by_hand() -> None:
        buffer = buffers["hand"]
        for key in ("obs", "reward", "done"):
            buffer[key][saved : saved + added] = mine[key]

    impls = {
        "tclass": Impl(
            lambda: tclass.append_memmap(paths["t"], mine), before=setup("t", tclass, 0), number=1
        ),
        "by hand": Impl(by_hand, before=setup("hand", tclass, added), number=1),
    }
    if peer is not None:
        theirs = _append_rows(peer, 1, added)
        impls["peer"] = Impl(
            lambda: peer.append_memmap(paths["p"], theirs), before=setup("p", peer, 0), number=1
        )
    note(f"case 5: append {added} rows to {saved} saved rows, {sizes.repeat} repeats")
    samples = measure(impls, sizes.repeat, sizes.budget)
    check = tclass.load_memmap(paths["t"])
    assert check.batch_size == (saved + added,) and torch.equal(check["obs"][saved:], mine["obs"])
    del check
    buffers.clear()
    remove(folder)
    return Row.of(
        f"append_memmap {count_text(added)} rows to {count_text(saved)}",
        "s",
        samples,
        baselines=["by hand"],
        against="by hand",
        target=1.2,
    )


# --- main -----------------------------------------------------------------------------------------


CASES: dict[str, Callable[[Path, Sizes], list[Row]]] = {
    "1": case_save,
    "2": case_gather,
    "3": case_load,
    "4": case_like,
    "5": case_append,
}


CPU_CASES = "34"  # the per-operation cases, whose CPU-time rows --cpu lists first


def load_text() -> str:
    try:
        return "/".join(f"{load:.1f}" for load in os.getloadavg())
    except OSError:
        return "unknown"


def tclass_revision() -> str:
    """The commit of the tclass imported (``-dirty`` with uncommitted changes), if git can
    tell."""
    where = str(Path(tclass.__file__).resolve().parent)
    try:
        done = subprocess.run(
            ["git", "-C", where, "describe", "--always", "--dirty"],
            capture_output=True, text=True, timeout=10, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def needed_bytes(sizes: Sizes, cases: str) -> int:
    gather = sizes.gather_rows * ROW_BYTES if "2" in cases else 0
    save = sizes.save_bytes * 2 if "1" in cases else 0  # a folder and a baseline's leftovers
    return gather + save + (64 << 20)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, one repeat")
    parser.add_argument(
        "--repeat", type=int, help=f"repeats (default {FULL.repeat}; 1 with --quick)"
    )
    parser.add_argument("--dir", help="folder to write in (default: a new temporary folder)")
    parser.add_argument(
        "--gather-rows", type=int, help="rows of the gathered file (default 1,000,000)"
    )
    parser.add_argument(
        "--save-rows",
        type=int,
        help="rows of each (rows, 1024) float32 leaf of case 1 (default 65536: 2 GiB; "
        "32768: 1 GiB)",
    )
    parser.add_argument("--cases", default="12345", help="which cases to run, e.g. 13")
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="cases 3 and 4: the CPU-time rows first (a loaded machine)",
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.repeat is not None:
        sizes = Sizes(**{**sizes.__dict__, "repeat": max(1, args.repeat)})
    if args.gather_rows is not None:
        sizes = Sizes(**{**sizes.__dict__, "gather_rows": args.gather_rows})
    if args.save_rows is not None:
        sizes = Sizes(**{**sizes.__dict__, "save_rows": max(1, args.save_rows)})
    base = Path(tempfile.mkdtemp(prefix="tclass-bench-io-", dir=args.dir))
    free = shutil.disk_usage(base).free
    if free < needed_bytes(sizes, args.cases):
        remove(base)
        print(
            f"{base.parent}: {free / 1e9:.1f} GB free, the cases need "
            f"{needed_bytes(sizes, args.cases) / 1e9:.1f} GB; "
            "pass --dir on a larger disk or a smaller --gather-rows",
            file=sys.stderr,
        )
        return 2
    rows: list[Row] = []
    load_at_start = load_text()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the peer's deprecation warnings
            print(
                f"tclass {tclass_revision()}; peer: "
                f"{'tensordict ' + peer.__version__ if peer is not None else 'not installed'}; "
                "safetensors: "
                f"{'installed' if safetensors_torch is not None else 'not installed'}; "
                f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
                f"{os.cpu_count()} CPUs; load average {load_at_start}; "
                f"writing in {base}"
            )
            print(
                f"median of {sizes.repeat} interleaved repeats; GB/s = 1e9 bytes/s; "
                "ratio = tclass / the target's reference (range: over the repeats); "
                "tclass range = its lowest..highest repeat; cases 3-4 in wall-clock [wall] "
                f"and CPU [cpu] time, {'CPU' if args.cpu else 'wall-clock'} time first\n"
            )
            print(COLUMNS)
            print("-" * len(COLUMNS))
            for key, case in CASES.items():
                if key in args.cases:
                    use_cpu_time(args.cpu and key in CPU_CASES)
                    for row in case(base, sizes):
                        rows.append(row)
                        print_row(row)
    finally:
        gc.collect()
        remove(base)
    print(f"\nload average {load_text()} at the end; {load_at_start} at the start")
    misses = [
        f"{row.case} ({row.target_text}: {row.ratio:.2f})" for row in rows if row.verdict == "MISS"
    ]
    print(f"\nmissed: {'; '.join(misses) if misses else 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
