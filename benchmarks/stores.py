"""Times reads of a ``PersistentTensorDict`` over HDF5 and zarr, against the peer
(``tensordict``) and the hand-written reads through h5py and zarr themselves.

Usage: ``OMP_NUM_THREADS=1 python benchmarks/stores.py [--quick] [--repeat N] [--leaves N]
[--rows N] [--dir DIR] [--backends h5,zarr]``. ``--quick`` is a smoke run (one repeat,
few calls).

The data: a TensorDict of ``--leaves`` (default 100) float32 leaves of shape
[``--rows``, 8] (default 64 rows: small leaves, so the per-leaf cost of each library
shows, not the bytes), written once per backend, then opened read-only. The cases:

1. ``read all``: every leaf read into memory (``ptd.to_tensordict()``; by hand, each
   dataset / array read and wrapped with ``torch.from_numpy``);
2. ``read rows``: rows 10..20 of every leaf (``ptd[10:20]``; the peer's result is a lazy
   view of the file, so its rows are read with ``.to_tensordict()``);
3. ``open``: opening the file (metadata only) and closing it; by hand, opening it and
   reading each array's metadata (shape, dtype, attributes).

Every implementation of a case runs in this one process, interleaved repeat by repeat
(the order rotating), in CPU time (``time.process_time``: run with ``OMP_NUM_THREADS=1``);
before each timed batch, dirty pages are written back (``os.sync``, then waiting until
``Dirty`` and ``Writeback`` in ``/proc/meminfo`` drain). The table gives the median time
per call of each implementation, and the ratio tclass / by hand (and tclass / peer) of
each repeat: median and min..max.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

import tclass

from _common import settle_writeback

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the peer's deprecation warnings
    try:
        import tensordict as peer
    except ImportError:  # the tclass and by-hand columns still run
        peer = None  # type: ignore[assignment]
try:
    import h5py
except ImportError:
    h5py = None  # type: ignore[assignment]
try:
    import zarr
except ImportError:
    zarr = None  # type: ignore[assignment]

Run = Callable[[], object]
Open = Callable[[], Any]  # a store opened, to read from (and close)


def batch(run: Run, number: int) -> float:
    """CPU seconds per call over ``number`` calls."""
    settle_writeback(limit=1 << 20, timeout=10.0)
    gc.collect()
    start = time.process_time()
    for _ in range(number):
        run()
    return (time.process_time() - start) / number


def measure(impls: dict[str, Run], repeat: int, budget: float) -> dict[str, list[float]]:
    """Seconds per call of each implementation in each repeat (interleaved, rotating)."""
    numbers = {}
    for name, run in impls.items():
        once = batch(run, 1)  # also a warm-up
        numbers[name] = max(1, min(2000, round(budget / max(once, 1e-7))))
    samples: dict[str, list[float]] = {name: [] for name in impls}
    names = list(impls)
    for r in range(repeat):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(batch(impls[name], numbers[name]))
    return samples


def ratio_text(mine: list[float], other: list[float]) -> str:
    ratios = [a / b for a, b in zip(mine, other)]
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}..{max(ratios):.2f})"


def report(case: str, samples: dict[str, list[float]], backend: str) -> None:
    medians = "  ".join(
        f"{name} {statistics.median(values) * 1e6:8.0f}us" for name, values in samples.items()
    )
    mine, hand, theirs = samples[f"tclass {backend}"], samples[f"hand {backend}"], None
    theirs = samples.get(f"peer {backend}")
    line = f"{case:18s} {medians}  t/hand {ratio_text(mine, hand)}"
    if theirs is not None:
        line += f"  t/peer {ratio_text(mine, theirs)}"
    print(line, flush=True)


def data(leaves: int, rows: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {f"k{i:03d}": torch.randn(rows, 8, generator=g) for i in range(leaves)}


def cases(
    backend: str, open_mine: Open, hand: tuple[Run, Run, Run], open_peer: Open | None
) -> dict[str, dict[str, Run]]:
    """The implementations of each case over one store: tclass's, the hand-written ones
    (``hand``: read all, read rows, open) and, where it is installed, the peer's."""
    mine = open_mine()
    hand_all, hand_rows, hand_open = hand
    impls: dict[str, dict[str, Run]] = {
        "read all": {f"tclass {backend}": mine.to_tensordict, f"hand {backend}": hand_all},
        "read rows": {f"tclass {backend}": lambda: mine[10:20], f"hand {backend}": hand_rows},
        "open": {f"tclass {backend}": lambda: open_mine().close(), f"hand {backend}": hand_open},
    }
    if open_peer is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = open_peer()
        impls["read all"][f"peer {backend}"] = theirs.to_tensordict
        impls["read rows"][f"peer {backend}"] = lambda: theirs[10:20].to_tensordict()
        impls["open"][f"peer {backend}"] = lambda: open_peer().close()
    return impls


def h5_impls(path: str, leaves: dict[str, torch.Tensor], rows: int) -> dict[str, dict[str, Run]]:
    """The implementations of each case over one HDF5 file (written here)."""
    tclass.TensorDict(leaves, batch_size=[rows]).to_h5(path).close()
    file = h5py.File(path, "r")

    def hand_all() -> object:
        return {key: torch.from_numpy(file[key][()]) for key in file.keys()}

    def hand_rows() -> object:
        return {key: torch.from_numpy(file[key][10:20]) for key in file.keys()}

    def hand_open() -> None:  # open, and read each dataset's metadata (what opening needs)
        with h5py.File(path, "r") as opened:
            for key in opened.keys():
                node = opened[key]
                _ = (node.shape, node.dtype, dict(node.attrs))

    return cases(
        "h5",
        lambda: tclass.PersistentTensorDict.from_h5(path),
        (hand_all, hand_rows, hand_open),
        None if peer is None else lambda: peer.PersistentTensorDict.from_h5(path),
    )


def zarr_impls(path: str, leaves: dict[str, torch.Tensor], rows: int) -> dict[str, dict[str, Run]]:
    """The implementations of each case over one zarr store (written here)."""
    tclass.TensorDict(leaves, batch_size=[rows]).to_zarr(path).close()
    group = zarr.open_group(path, mode="r")
    arrays = dict(group.members())

    def hand_all() -> object:
        return {key: torch.from_numpy(array[...]) for key, array in arrays.items()}

    def hand_rows() -> object:
        return {key: torch.from_numpy(array[10:20]) for key, array in arrays.items()}

    def hand_open() -> None:
        dict(zarr.open_group(path, mode="r").members())

    return cases(
        "zarr",
        lambda: tclass.PersistentTensorDict.from_zarr(path),
        (hand_all, hand_rows, hand_open),
        None if peer is None else lambda: peer.PersistentTensorDict.from_zarr(path),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one repeat, few calls")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--leaves", type=int, default=100)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--budget", type=float, default=0.2, help="seconds per timed batch")
    parser.add_argument("--dir", default=None, help="where the files go (default: a temp dir)")
    parser.add_argument("--backends", default="h5,zarr", help="which stores to time")
    args = parser.parse_args(argv)
    repeat, budget = (1, 0.005) if args.quick else (args.repeat, args.budget)
    folder = Path(tempfile.mkdtemp(prefix="tclass-stores-", dir=args.dir))
    warnings.simplefilter("ignore")  # the peer's FutureWarnings on every open
    try:
        leaves = data(args.leaves, args.rows)
        print(
            f"# {args.leaves} float32 leaves of [{args.rows}, 8]; repeat {repeat}; "
            f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; "
            f"load {' '.join(f'{v:.1f}' for v in os.getloadavg())}; CPU time per call",
            flush=True,
        )
        backends: list[tuple[str, Callable[..., dict[str, dict[str, Run]]], str]] = []
        wanted = set(args.backends.split(","))
        if h5py is not None and "h5" in wanted:
            backends.append(("h5", h5_impls, str(folder / "data.h5")))
        if zarr is not None and hasattr(tclass.TensorDict, "to_zarr") and "zarr" in wanted:
            backends.append(("zarr", zarr_impls, str(folder / "data.zarr")))
        for backend, impls_of, path in backends:
            for case, impls in impls_of(path, leaves, args.rows).items():
                report(f"{backend} {case}", measure(impls, repeat, budget), backend)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
