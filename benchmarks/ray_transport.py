"""Ray transport: ``ray.get(ray.put(record))`` for tclass, the peer and by hand.

Usage: ``python benchmarks/ray_transport.py [--quick] [--repeat N] [--mib N]``.
``--quick`` is a smoke run (16 MiB, 2 repeats, a few seconds after Ray starts).

One local Ray cluster (``ray.init(num_cpus=2)``, an object store big enough for two
copies of the payload). The payload is 100 float32 leaves of ``mib / 100`` MiB each
(1 GiB in all by default), sent as:

* ``tclass TensorDict`` and ``tclass record`` (a ``TensorClass`` with 100 tensor fields):
  pickle protocol 5, one out-of-band buffer (the issue's target: the ``get`` within
  10 ms, at most 16 MiB of reader memory growth, at least 5x faster than the peer);
* ``peer TensorDict``: the peer's ``tensordict.TensorDict`` of the same tensors;
* ``dict of numpy`` (Ray's own zero-copy path for numpy arrays, the by-hand baseline)
  and ``dict of torch`` (what plain tensors get from Ray: a copy).

Each repeat puts each payload from the driver (order rotating), then a reader actor (a
separate process, warmed up on a small payload of every kind) times ``ray.get`` of the
reference, wall and process CPU time, and the growth of its resident memory over the
``get`` (VmRSS: every page it maps or copies; RssAnon: its private copies), then drops
the result and hands freed memory back to the system (``malloc_trim``). The driver also
times its own ``ray.get`` of the object it put. Medians with min-max over the repeats.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

import tclass  # noqa: E402
from tclass import TensorClass, TensorDict  # noqa: E402

from _common import load_peer, memory  # noqa: E402

MIB = 1 << 20
LEAVES = 100
# A record of 100 tensor fields (a module-level class: the reader imports this module).
Wide = type(
    "Wide",
    (TensorClass,),
    {"__annotations__": {f"f{i:03d}": torch.Tensor for i in range(LEAVES)}, "__module__": __name__},
)


def payloads(total_mib: int, peer: Any) -> dict[str, Callable[[], Any]]:
    """Each way to send the same 100 leaves (built on demand, sharing the tensors)."""
    per_leaf = total_mib * MIB // LEAVES // 4
    leaves = {f"f{i:03d}": torch.full((per_leaf,), float(i)) for i in range(LEAVES)}
    ways: dict[str, Callable[[], Any]] = {
        "tclass TensorDict": lambda: TensorDict(leaves),
        "tclass record": lambda: Wide(**leaves),
        "dict of numpy": lambda: {key: value.numpy() for key, value in leaves.items()},
        "dict of torch": lambda: dict(leaves),
    }
    if peer is not None:
        ways["peer TensorDict"] = lambda: peer.TensorDict(leaves)
    return ways


def _trim() -> None:
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: freed memory may stay resident
        pass


def _leaf_values(value: Any) -> list[Any]:
    if tclass.is_tensorclass(value):
        return list(value._tensordict.values())
    return list(value.values())


def _first_elements(value: Any) -> float:
    return float(sum(float(leaf[0]) for leaf in _leaf_values(value)))


class Reader:
    """A separate process (a Ray actor) that times ``ray.get`` and its memory growth."""

    def get(self, boxed: list[Any]) -> dict[str, float]:
        import ray

        _trim()
        rss, anon = memory()
        start, cpu = time.perf_counter(), time.process_time()
        value = ray.get(boxed[0])
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        rss_after, anon_after = memory()
        check = _first_elements(value)
        del value
        _trim()
        return {
            "wall": wall, "cpu": cpu, "rss": rss_after - rss, "anon": anon_after - anon,
            "check": check,
        }  # fmt: skip


def _summary(values: list[float], scale: float, unit: str) -> str:
    scaled = [v * scale for v in values]
    return f"{statistics.median(scaled):.1f} {unit} ({min(scaled):.1f}-{max(scaled):.1f})"


def run(total_mib: int, repeat: int) -> int:
    import ray

    peer = load_peer()
    ways = payloads(total_mib, peer)
    folder = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join([folder, os.environ.get("PYTHONPATH", "")])
    store = max(3 * total_mib * MIB, 256 * MIB)
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=store,
        log_to_driver=False,
    )
    try:
        reader = ray.remote(num_cpus=0)(Reader).remote()
        warm = payloads(1, peer)
        for make in warm.values():  # imports and first calls, in the reader and here
            ray.get(reader.get.remote([ray.put(make())]))
        samples: dict[str, dict[str, list[float]]] = {name: {} for name in ways}
        names = list(ways)
        expected = float(sum(range(LEAVES)))
        for step in range(repeat):
            for name in names[step % len(names) :] + names[: step % len(names)]:
                payload = ways[name]()
                start = time.perf_counter()
                ref = ray.put(payload)
                put = time.perf_counter() - start
                start = time.perf_counter()
                mine = ray.get(ref)
                driver_get = time.perf_counter() - start
                del mine, payload
                result = ray.get(reader.get.remote([ref]))
                del ref
                _trim()
                assert result.pop("check") == expected, name
                for key, value in {**result, "put": put, "driver_get": driver_get}.items():
                    samples[name].setdefault(key, []).append(value)
        _report(samples, total_mib, repeat, peer is not None)
    finally:
        ray.shutdown()
    return 0


def _report(samples: dict[str, dict[str, list[float]]], mib: int, repeat: int, peer: bool) -> None:
    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"ray.get(ray.put(x)), {LEAVES} float32 leaves, {mib} MiB; {repeat} repeats; {load}")
    print("median (min-max); the reader is another process of the same node")
    print(
        "| payload | put (driver) | get (driver) | get (reader, wall) | get (reader, CPU) "
        "| reader VmRSS growth | reader RssAnon growth |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, values in samples.items():
        cells = [
            _summary(values["put"], 1e3, "ms"),
            _summary(values["driver_get"], 1e3, "ms"),
            _summary(values["wall"], 1e3, "ms"),
            _summary(values["cpu"], 1e3, "ms"),
            _summary(values["rss"], 1 / MIB, "MiB"),
            _summary(values["anon"], 1 / MIB, "MiB"),
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    ours = statistics.median(samples["tclass TensorDict"]["wall"])
    growth = statistics.median(samples["tclass TensorDict"]["rss"]) / MIB
    print(f"tclass TensorDict get {ours * 1e3:.1f} ms (target <= 10 ms), growth {growth:.1f} MiB")
    if peer:
        ratios = [
            p / t
            for p, t in zip(
                samples["peer TensorDict"]["wall"], samples["tclass TensorDict"]["wall"]
            )
        ]
        print(
            f"peer / tclass get (reader, wall): {statistics.median(ratios):.0f}x "
            f"({min(ratios):.0f}x-{max(ratios):.0f}x; target >= 5x)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 MiB, 2 repeats")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--mib", type=int, default=1024, help="payload size in MiB")
    args = parser.parse_args(argv)
    if args.quick:
        return run(16, 2)
    return run(args.mib, args.repeat)


if __name__ == "__main__":
    # Run from this module's own name, so that the reader (another process) imports the
    # same record class.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import ray_transport

    sys.exit(ray_transport.main())
