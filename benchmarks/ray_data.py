"""Ray across two nodes, and Ray Data reads of a saved folder: tclass, the peer, by hand.

Usage: ``python benchmarks/ray_data.py [--quick] [--repeat N] [--mib N] [--only PART]``.
``--quick`` is a smoke run (16 MiB, 2 repeats). ``PART`` is ``nodes`` or ``read``.

**nodes**: a two-node cluster on this machine (``ray.cluster_utils.Cluster``: the head
node and a second raylet, each with its own object store; on one machine, so the
transfer between the stores goes through the loopback interface, not a network). The
payload is 100 float32 leaves, ``mib`` MiB in all (1 GiB by default), put from the driver
on the head node and fetched by a reader actor on the second node, as:

* ``tclass record, in memory``: one out-of-band buffer, copied from the head's store
  into the second node's, then mapped there;
* ``tclass record, file reference``: the same record memory-mapped (saved in a folder
  both nodes see): the pickle holds file references, the reader maps the files;
* ``peer TensorDict, in memory`` (tensordict's pickling), and ``dict of numpy, in
  memory`` (Ray's own zero-copy path, the by-hand baseline).

Each repeat puts each payload (order rotating), then the reader times ``ray.get`` (wall),
then reading every value (a float64 sum of each leaf: from its store for the in-memory
payloads, from the page cache for the files), and the growth of its VmRSS and RssAnon.

**read**: a folder of ``mib`` MiB of rows (a TensorDict: ``obs`` 1,024 float32, ``action``
int64, ``reward`` float32, ``meta.seed`` int64: 4,116 bytes a row), saved once (in the
page cache: warm reads) and streamed in batches of 4,096 rows, each batch's ``obs``
summed, by:

* ``tclass.ray.read_memmap`` then ``tclass.ray.iter_records`` (Ray Data: read tasks map
  the folder and hand Arrow views of the rows to Ray, which copies each block into its
  object store; the batches are views of the store);
* ``Ray Data by hand``: a minimal datasource mapping the same ``.memmap`` files with
  ``np.memmap`` (same blocks), then ``iter_batches``;
* ``tclass load_memmap``, ``peer load_memmap`` and ``numpy memmap``: the folder mapped in
  this process and sliced batch by batch (no Ray).

Rows/s and MB/s (of rows) end to end: from making the dataset (or loading the folder) to
the last batch; ``os.sync()`` and the kernel's dirty pages drained before each sample.
Medians with min-max over the repeats, and the ratios per repeat.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tclass  # noqa: E402
import tclass.ray  # noqa: E402
from tclass import TensorDict  # noqa: E402

from _common import load_peer, memory, settle_writeback  # noqa: E402

MIB = 1 << 20
BATCH = 4096
WIDTH = 1024  # float32 values of obs per row
ROW_BYTES = WIDTH * 4 + 8 + 4 + 8


def _summary(values: list[float], scale: float, unit: str, digits: int = 1) -> str:
    scaled = [v * scale for v in values]
    low, mid, high = min(scaled), statistics.median(scaled), max(scaled)
    unit = f" {unit}" if unit else ""
    return f"{mid:,.{digits}f}{unit} ({low:,.{digits}f}-{high:,.{digits}f})"


def _ratio(name: str, top: list[float], bottom: list[float]) -> str:
    ratios = [t / b for t, b in zip(top, bottom)]
    mid = statistics.median(ratios)
    return f"{name}: {mid:.2f}x ({min(ratios):.2f}x-{max(ratios):.2f}x)"


def _rotated(names: list[str], step: int) -> list[str]:
    shift = step % len(names)
    return names[shift:] + names[:shift]


# --- nodes -------------------------------------------------------------------------------


def _leaves(value: Any) -> list[Any]:
    if tclass.is_tensorclass(value):
        return list(value._tensordict.values())
    return list(value.values())


class NodeReader:
    """A Ray actor on the second node: times ``ray.get``, then reading every value."""

    def node(self) -> str:
        import ray

        return str(ray.get_runtime_context().get_node_id())

    def get(self, boxed: list[Any]) -> dict[str, float]:
        import ray

        rss, anon = memory()
        start = time.perf_counter()
        value = ray.get(boxed[0])
        got = time.perf_counter() - start
        total = sum(
            float(torch.as_tensor(leaf).sum(dtype=torch.float64)) for leaf in _leaves(value)
        )
        read = time.perf_counter() - start
        rss_after, anon_after = memory()
        del value
        return {"get": got, "read": read, "rss": rss_after - rss, "anon": anon_after - anon,
                "check": total}  # fmt: skip


def _node_payloads(total_mib: int, folder: str, peer: Any) -> dict[str, Callable[[], Any]]:
    from ray_transport import Wide

    per_leaf = total_mib * MIB // 100 // 4
    leaves = {f"f{i:03d}": torch.full((per_leaf,), float(i)) for i in range(100)}
    saved = Wide(**leaves).memmap(os.path.join(folder, "wide"))
    ways: dict[str, Callable[[], Any]] = {
        "tclass record, in memory": lambda: Wide(**leaves),
        "tclass record, file reference": lambda: saved,
        "dict of numpy, in memory": lambda: {k: v.numpy() for k, v in leaves.items()},
    }
    if peer is not None:
        ways["peer TensorDict, in memory"] = lambda: peer.TensorDict(leaves)
    return ways


def run_nodes(total_mib: int, repeat: int) -> None:
    import ray
    from ray.cluster_utils import Cluster

    store = max(3 * total_mib * MIB, 256 * MIB)
    nodes = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "object_store_memory": store, "include_dashboard": False},
    )
    nodes.add_node(num_cpus=1, object_store_memory=store, resources={"second": 1})
    ray.init(address=nodes.address, log_to_driver=False)
    nodes.wait_for_nodes()
    peer = load_peer()
    try:
        with tempfile.TemporaryDirectory() as folder:
            ways = _node_payloads(total_mib, folder, peer)
            reader = ray.remote(num_cpus=0, resources={"second": 1})(NodeReader).remote()
            assert ray.get(reader.node.remote()) != ray.get_runtime_context().get_node_id()
            for make in _node_payloads(1, folder + "/warm", peer).values():
                ray.get(reader.get.remote([ray.put(make())]))  # imports, first calls
            samples: dict[str, dict[str, list[float]]] = {name: {} for name in ways}
            expected = float(sum(range(100))) * (total_mib * MIB // 100 // 4)
            for step in range(repeat):
                for name in _rotated(list(ways), step):
                    settle_writeback(limit=1 << 20, timeout=10.0)
                    ref = ray.put(ways[name]())
                    result = ray.get(reader.get.remote([ref]))
                    del ref
                    assert result.pop("check") == expected, name
                    for key, value in result.items():
                        samples[name].setdefault(key, []).append(value)
            _report_nodes(samples, total_mib, repeat)
    finally:
        ray.shutdown()
        nodes.shutdown()


def _report_nodes(samples: dict[str, dict[str, list[float]]], mib: int, repeat: int) -> None:
    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"across two nodes on one machine: 100 float32 leaves, {mib} MiB; {repeat} repeats")
    print(f"put on the head node, read by an actor on the second node; {load}")
    print("| payload | get (wall) | get + read every value | reader VmRSS growth "
          "| reader RssAnon growth |")  # fmt: skip
    print("|---|---:|---:|---:|---:|")
    for name, values in samples.items():
        cells = [
            _summary(values["get"], 1e3, "ms"),
            _summary(values["read"], 1e3, "ms"),
            _summary(values["rss"], 1 / MIB, "MiB"),
            _summary(values["anon"], 1 / MIB, "MiB"),
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    memory = samples["tclass record, in memory"]
    files = samples["tclass record, file reference"]
    print(_ratio("in memory / file reference, get", memory["get"], files["get"]))
    print(_ratio("in memory / file reference, get + read", memory["read"], files["read"]))


# --- read --------------------------------------------------------------------------------


def make_folder(path: str, total_mib: int) -> int:
    rows = max(total_mib * MIB // ROW_BYTES, 2 * BATCH)
    index = torch.arange(rows)
    td = TensorDict(
        {
            "obs": torch.rand(rows, WIDTH),
            "action": index % 6,
            "reward": index.float(),
            "meta": TensorDict({"seed": index}, [rows]),
        },
        [rows],
    )
    td.memmap(path)
    return rows


def _read_by_hand(path: str, start: int, stop: int) -> list[Any]:
    """A read task of the by-hand datasource: each file mapped with np.memmap."""
    import pyarrow as pa
    from ray.data.extensions import ArrowTensorArray

    def rows(name: str, dtype: Any, width: int = 0) -> np.ndarray[Any, Any]:
        shape = (-1, width) if width else (-1,)
        return np.memmap(os.path.join(path, name), dtype=dtype, mode="r").reshape(shape)

    arrays = [
        ArrowTensorArray.from_numpy(rows("obs.memmap", np.float32, WIDTH)[start:stop]),
        pa.array(rows("action.memmap", np.int64)[start:stop]),
        pa.array(rows("reward.memmap", np.float32)[start:stop]),
        pa.array(rows(os.path.join("meta", "seed.memmap"), np.int64)[start:stop]),
    ]
    return [pa.Table.from_arrays(arrays, names=["obs", "action", "reward", "meta.seed"])]


def _by_hand_dataset(path: str, rows: int, rows_per_block: int) -> Any:
    import ray
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask

    class ByHand(Datasource):  # type: ignore[misc]
        def estimate_inmemory_data_size(self) -> int:
            return rows * ROW_BYTES

        def get_read_tasks(self, parallelism: int, **_: Any) -> list[Any]:
            tasks = []
            for start in range(0, rows, rows_per_block):
                stop = min(start + rows_per_block, rows)
                meta = BlockMetadata(
                    num_rows=stop - start, size_bytes=(stop - start) * ROW_BYTES,
                    input_files=None, exec_stats=None,
                )  # fmt: skip
                tasks.append(ReadTask(functools.partial(_read_by_hand, path, start, stop), meta))
            return tasks

    blocks = -(-rows // rows_per_block)
    return ray.data.read_datasource(ByHand(), override_num_blocks=blocks)


class _NumpyRows:
    """The folder's four files mapped with ``np.memmap``; a slice slices each."""

    def __init__(self, path: str) -> None:
        def rows(name: str, dtype: Any, width: int = 0) -> np.ndarray[Any, Any]:
            shape = (-1, width) if width else (-1,)
            return np.memmap(os.path.join(path, name), dtype=dtype, mode="r").reshape(shape)

        self.arrays = {
            "obs": rows("obs.memmap", np.float32, WIDTH),
            "action": rows("action.memmap", np.int64),
            "reward": rows("reward.memmap", np.float32),
            "meta.seed": rows(os.path.join("meta", "seed.memmap"), np.int64),
        }

    def __getitem__(self, rows: slice) -> dict[str, Any]:
        return {name: array[rows] for name, array in self.arrays.items()}


def _batches_of(view: Any, rows: int) -> Iterator[Any]:
    for start in range(0, rows, BATCH):
        yield view[start : start + BATCH]


def _readers(
    path: str, rows: int, peer: Any, rows_per_block: int
) -> dict[str, Callable[[], float]]:
    """Each way to stream every row in batches; each returns the sum of ``obs``."""

    def ray_tclass() -> float:
        ds = tclass.ray.read_memmap(path, rows_per_block=rows_per_block)
        return sum(float(b["obs"].sum()) for b in tclass.ray.iter_records(ds, batch_size=BATCH))

    def ray_by_hand() -> float:
        ds = _by_hand_dataset(path, rows, rows_per_block)
        batches = ds.iter_batches(batch_size=BATCH, batch_format="numpy")
        return sum(float(b["obs"].sum()) for b in batches)

    def local(load: Callable[[str], Any]) -> Callable[[], float]:
        return lambda: sum(float(b["obs"].sum()) for b in _batches_of(load(path), rows))

    def numpy_memmap(name: str) -> Any:
        return {
            "obs": np.memmap(os.path.join(name, "obs.memmap"), np.float32, "r").reshape(-1, WIDTH)
        }

    ways = {
        "tclass.ray.read_memmap + iter_records": ray_tclass,
        "Ray Data by hand (np.memmap datasource)": ray_by_hand,
        "tclass load_memmap, slices": local(lambda p: tclass.load_memmap(p, mode="r")),
        "numpy memmap, slices": local(_NumpyRows),
    }
    if peer is not None:
        ways["peer load_memmap, slices"] = local(peer.TensorDict.load_memmap)
    return ways


def run_read(total_mib: int, repeat: int) -> None:
    import ray

    peer = load_peer()
    store = max(2 * total_mib * MIB, 512 * MIB)
    ray.init(
        address="local",  # a cluster of its own, never one another process started
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=store,
        log_to_driver=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "rows")
            rows = make_folder(path, total_mib)
            rows_per_block = max(1, min(rows, 64 * MIB // ROW_BYTES))  # 64 MiB blocks
            ways = _readers(path, rows, peer, rows_per_block)
            expected = {name: way() for name, way in ways.items()}  # warm: caches, workers
            samples: dict[str, list[float]] = {name: [] for name in ways}
            for step in range(repeat):
                for name in _rotated(list(ways), step):
                    settle_writeback(limit=1 << 20, timeout=10.0)
                    start = time.perf_counter()
                    total = ways[name]()
                    samples[name].append(time.perf_counter() - start)
                    assert abs(total - expected[name]) <= 1e-6 * abs(expected[name]), name
            _report_read(samples, rows, rows_per_block, repeat)
    finally:
        ray.shutdown()


def _report_read(samples: dict[str, list[float]], rows: int, block: int, repeat: int) -> None:
    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    mb = rows * ROW_BYTES / 1e6
    print(f"streaming {rows:,} rows ({mb:,.0f} MB) in batches of {BATCH}; Ray Data blocks of "
          f"{block:,} rows; {repeat} repeats; page cache warm; {load}")  # fmt: skip
    print("| reader | time | rows/s | MB/s |")
    print("|---|---:|---:|---:|")
    for name, times in samples.items():
        rates = [rows / t for t in times]
        print(f"| {name} | {_summary(times, 1, 's', 2)} | {_summary(rates, 1, '', 0)} "
              f"| {_summary([r * ROW_BYTES / 1e6 for r in rates], 1, '', 0)} |")  # fmt: skip
    ours = samples["tclass.ray.read_memmap + iter_records"]
    print(
        _ratio(
            "tclass.ray / Ray Data by hand, time",
            ours,
            samples["Ray Data by hand (np.memmap datasource)"],
        )
    )
    print(
        _ratio("tclass.ray / tclass load_memmap, time", ours, samples["tclass load_memmap, slices"])
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 MiB, 2 repeats")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--mib", type=int, default=1024, help="payload / folder size in MiB")
    parser.add_argument("--only", choices=("nodes", "read"), default=None)
    args = parser.parse_args(argv)
    mib, repeat = (16, 2) if args.quick else (args.mib, args.repeat)
    folder = str(Path(__file__).resolve().parent)  # the actors import this module
    os.environ["PYTHONPATH"] = os.pathsep.join([folder, os.environ.get("PYTHONPATH", "")])
    if args.only in (None, "nodes"):
        run_nodes(mib, repeat)
    if args.only in (None, "read"):
        run_read(mib, repeat)
    return 0


if __name__ == "__main__":
    # Run from this module's own name, so that the actors (other processes) import it.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import ray_data

    sys.exit(ray_data.main())
