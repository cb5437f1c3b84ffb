"""A memory-mapped record passed between two RPC workers by reference (the peer's seed scenario).

Run it with ``python examples/distributed_rpc.py [--rows 1000] [--side 640] [--calls 5]``.

Worker 0 (this process) creates a record of shape ``(rows, side, side, 3)`` uint8 in
memory-mapped files with ``memmap_like``: at the default size that is 1.2 GB of sparse
files, which take no disk space until written. It starts worker 1, and both join
``torch.distributed.rpc`` (TensorPipe on 127.0.0.1). Worker 0 then asks worker 1 to fill
rows ``[4, 5, 6, 7, rows - 2]`` with ones and to return the record.

Pickling a memory-mapped record sends the files' paths, dtypes and shapes, never the data,
so the call costs milliseconds whatever the record's size, and the ones that worker 1
writes land in the files that worker 0 has mapped: worker 0 sees them in its own record.
Both workers must see the same files (one machine, or a shared file system).
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp

from tclass import TensorDict

# torch leaves these untyped; typed aliases keep ``mypy --strict`` meaningful here.
init_rpc: Callable[..., None] = rpc.init_rpc
shutdown_rpc: Callable[[], None] = rpc.shutdown


def fill_rows(record: TensorDict, rows: list[int]) -> TensorDict:
    """Runs on worker 1: writes ones at ``rows`` (into the shared files) and returns the
    record, which travels back by reference too."""
    image = record["memmap"].shape[1:]
    record[rows] = TensorDict(
        {"memmap": torch.ones(len(rows), *image, dtype=torch.uint8)}, [len(rows)]
    )
    return record


def join_rpc(rank: int, port: int) -> None:
    """Joins the two-worker RPC group as ``worker<rank>``."""
    options = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://127.0.0.1:{port}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a deprecation notice from inside torch
        init_rpc(f"worker{rank}", rank=rank, world_size=2, rpc_backend_options=options)


def serve(port: int) -> None:
    """Worker 1: answers calls until worker 0 shuts the group down."""
    join_rpc(1, port)
    shutdown_rpc()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def run(rows: int, side: int, calls: int, folder: Path) -> list[float]:
    """Worker 0's part; returns the duration of each call in milliseconds."""
    blank = torch.zeros(1, side, side, 3, dtype=torch.uint8).expand(rows, side, side, 3)
    record = TensorDict({"memmap": blank}, [rows]).memmap_like(folder / "images")
    print(
        f"record: {rows} x {side} x {side} x 3 uint8 = "
        f"{record['memmap'].numel() / 1e9:.2f} GB of sparse files in {folder}"
    )
    index = [4, 5, 6, 7, rows - 2]
    elapsed = []
    for _ in range(calls):
        start = time.perf_counter()
        out: Any = rpc.rpc_sync("worker1", fill_rows, args=(record, index))
        elapsed.append((time.perf_counter() - start) * 1e3)
        seen = record["memmap"][index, :1, :1, :1].flatten().tolist()
        assert seen == [1] * len(index), seen
        assert out["memmap"].filename == record["memmap"].filename  # the same file came back
        record["memmap"][index] = 0  # reset, so that the next call writes them again
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1000, help="rows of the record (at least 9)")
    parser.add_argument("--side", type=int, default=640, help="image side (default 640)")
    parser.add_argument("--calls", type=int, default=5, help="round trips to time")
    args = parser.parse_args()
    if args.rows < 9:
        parser.error("--rows must be at least 9 (rows 4..7 and rows - 2 are written)")
    port = free_port()
    worker = mp.get_context("spawn").Process(target=serve, args=(port,))
    worker.start()
    with tempfile.TemporaryDirectory(prefix="tclass-rpc-") as folder:
        join_rpc(0, port)
        try:
            elapsed = run(args.rows, args.side, args.calls, Path(folder))
        finally:
            shutdown_rpc()
    worker.join()
    print(f"worker 1 filled rows [4, 5, 6, 7, {args.rows - 2}]; worker 0 sees the ones")
    print("round trips (ms): " + ", ".join(f"{ms:.1f}" for ms in elapsed))


if __name__ == "__main__":
    main()
