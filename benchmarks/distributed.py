"""Distributed benchmarks: records over gloo, and a memory-mapped record over RPC by reference.

Usage: ``python benchmarks/distributed.py [--quick] [--repeat N] [--rows N]``.
``--quick`` is a smoke run (small records, 3 repeats, no peer, a few seconds).

Two processes on 127.0.0.1 (spawned once; both cases run in them):

1. gloo: a TensorDict of 100 float32 leaves (1 KiB, 64 KiB and 1 MiB each) goes from rank 0
   to rank 1 and back (ping-pong; one way = half the round trip). ``td.send``/``td.recv``
   against the same tensors sent by hand, one ``dist.send``/``dist.recv`` per leaf (the
   issue's baseline; target: tclass <= 1.2x), against all of them posted at once by hand
   (``isend``/``irecv`` + wait), and against the peer's ``send``/``recv`` where
   ``tensordict`` is installed. Methods are interleaved repeat by repeat; medians.
2. RPC (TensorPipe): worker 0 creates a memory-mapped record of shape (rows, 640, 640, 3)
   uint8 (sparse, via ``memmap_like``), passes it to worker 1 with ``rpc_sync``; worker 1
   writes ones at rows [4, 5, 6, 7, rows - 2] and returns it; worker 0 checks the ones.
   The record travels as file references. Target: round trip < 50 ms at 1000 rows.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp

import tclass
from tclass import TensorDict

from _common import load_peer

Case = tuple[str, int, int]  # name, leaves, bytes per leaf


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# --- gloo ------------------------------------------------------------------------------------


def _methods(rank: int, leaves: list[torch.Tensor], peer: Any) -> dict[str, Callable[[], None]]:
    """Each way to move the leaves from this rank to the other and back (ping-pong)."""
    other = 1 - rank
    td = TensorDict({f"leaf{i:03d}": t for i, t in enumerate(leaves)}, batch_size=[])

    def tclass_way() -> None:
        for step in range(2):
            td.send(other) if step == rank else td.recv(other)

    def by_hand() -> None:
        for step in range(2):
            for t in leaves:
                dist.send(t, other) if step == rank else dist.recv(t, other)

    def by_hand_async() -> None:
        for step in range(2):
            post = dist.isend if step == rank else dist.irecv
            works = [post(t, other, tag=i) for i, t in enumerate(leaves)]
            for work in works:
                assert work is not None
                work.wait()

    methods = {"tclass": tclass_way, "by hand": by_hand, "by hand, async": by_hand_async}
    if peer is not None:
        theirs = peer.TensorDict({f"leaf{i:03d}": t for i, t in enumerate(leaves)}, batch_size=[])

        def peer_way() -> None:
            for step in range(2):
                theirs.send(other) if step == rank else theirs.recv(other)

        methods["tensordict"] = peer_way
    return methods


def _gloo_case(rank: int, case: Case, repeat: int, peer: Any) -> dict[str, float]:
    """Median one-way milliseconds of each method (rank 0's clock)."""
    _, count, nbytes = case
    leaves = [torch.full((nbytes // 4,), float(rank)) for _ in range(count)]
    methods = _methods(rank, leaves, peer)
    samples: dict[str, list[float]] = {name: [] for name in methods}
    names = list(methods)
    for name in names:  # warm-up: connections, allocations, description caches
        methods[name]()
    for round_ in range(repeat):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            dist.barrier()
            start = time.perf_counter()
            methods[name]()
            samples[name].append((time.perf_counter() - start) / 2 * 1e3)
    return {name: statistics.median(values) for name, values in samples.items()}


# --- RPC -------------------------------------------------------------------------------------


def fill_rows(record: TensorDict, rows: list[int]) -> TensorDict:
    """Runs on worker 1: ones at ``rows`` of the (memory-mapped) record, which is returned."""
    record[rows] = TensorDict(
        {"memmap": torch.ones(len(rows), *record["memmap"].shape[1:], dtype=torch.uint8)},
        [len(rows)],
    )
    return record


def _rpc_case(rows: int, repeat: int, folder: str) -> tuple[float, float]:
    """(first, median) round-trip milliseconds on worker 0; checks the ones each time."""
    row = torch.zeros(1, 640, 640, 3, dtype=torch.uint8)
    record = TensorDict({"memmap": row.expand(rows, 640, 640, 3)}, [rows]).memmap_like(folder)
    index = [4, 5, 6, 7, rows - 2]
    samples = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        out = rpc.rpc_sync("worker1", fill_rows, args=(record, index))
        samples.append((time.perf_counter() - start) * 1e3)
        assert bool(out["memmap"][index].eq(1).all()) and bool(record["memmap"][index].eq(1).all())
        record["memmap"][index] = 0  # the next round trip writes them again
    return samples[0], statistics.median(samples[1:])


# --- the two processes -----------------------------------------------------------------------


def _worker(
    rank: int,
    ports: tuple[int, int],
    cases: Sequence[Case],
    repeat: int,
    rows: int,
    folder: str,
    with_peer: bool,
    queue: Any,
) -> None:
    peer = load_peer() if with_peer else None
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{ports[0]}", rank=rank, world_size=2
    )
    results: dict[str, Any] = {}
    for case in cases:
        results[case[0]] = _gloo_case(rank, case, repeat, peer)
    dist.destroy_process_group()
    options = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://127.0.0.1:{ports[1]}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's own deprecation notice in init_rpc
        rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2, rpc_backend_options=options)
    if rank == 0:
        results["rpc"] = _rpc_case(rows, repeat, os.path.join(folder, "record"))
        queue.put(results)
    rpc.shutdown()


def _report(results: dict[str, Any], cases: Sequence[Case], rows: int) -> bool:
    """Prints the tables; whether every target was met."""
    methods = list(results[cases[0][0]])
    print(
        f"\ngloo send/recv, one way, ms (median), torch {torch.__version__}, tclass "
        f"{tclass.__version__}"
    )
    print("| case | " + " | ".join(methods) + " | tclass / by hand | target |")
    print("|---|" + "---:|" * (len(methods) + 2))
    ok = True
    for name, _, _ in cases:
        row = results[name]
        ratio = row["tclass"] / row["by hand"]
        ok &= ratio <= 1.2
        cells = " | ".join(f"{row[method]:.3f}" for method in methods)
        print(f"| {name} | {cells} | {ratio:.2f} | <= 1.2 {'ok' if ratio <= 1.2 else 'MISS'} |")
    first, median = results["rpc"]
    met = median < 50
    ok &= met
    print(
        f"\nRPC round trip of a ({rows}, 640, 640, 3) uint8 memory-mapped record by "
        "reference, fill of 5 rows included"
    )
    print("| case | first call (ms) | median (ms) | target |")
    print("|---|---:|---:|---|")
    print(f"| rpc_sync fill | {first:.2f} | {median:.2f} | < 50 ms {'ok' if met else 'MISS'} |")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small records, 3 repeats")
    parser.add_argument(
        "--repeat", type=int, default=None, help="timed repeats per method (default 15; quick 3)"
    )
    parser.add_argument(
        "--rows", type=int, default=None, help="rows of the RPC record (default 1000; quick 16)"
    )
    args = parser.parse_args(argv)
    repeat = args.repeat or (3 if args.quick else 15)
    rows = args.rows or (16 if args.quick else 1000)
    if args.quick:
        cases: list[Case] = [("100 x 1 KiB", 100, 1024), ("10 x 64 KiB", 10, 64 * 1024)]
    else:
        cases = [
            ("100 x 1 KiB", 100, 1024),
            ("100 x 64 KiB", 100, 64 * 1024),
            ("100 x 1 MiB", 100, 1024 * 1024),
        ]
    context = mp.get_context("spawn")
    queue = context.SimpleQueue()
    with tempfile.TemporaryDirectory(prefix="tclass-bench-dist-") as folder:
        ports = (_free_port(), _free_port())
        mp.start_processes(
            _worker,
            args=(ports, cases, repeat, rows, folder, not args.quick, queue),
            nprocs=2,
            start_method="spawn",
        )
        results = queue.get()
    ok = _report(results, cases, rows)
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
