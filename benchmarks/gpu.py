"""GPU transfer benchmarks: tclass side by side with the peer on one CUDA device.

Usage: ``python benchmarks/gpu.py [--quick]`` on a machine with CUDA (``make bench-gpu``).
Without CUDA it says so and exits 0. Every figure is printed with the raw limits measured
in the same run (pinned and pageable host-to-device bandwidth), as the devices issue asks:

* 200 leaves of 256x64 float32 ``.to("cuda")``: plain, and consolidated (consolidation
  timed separately). Target: consolidated <= 1 ms and <= 0.25x the peer's consolidated.
* a 300 MB tensorclass, pinned, ``to("cuda", non_blocking=True)``: >= 90% of raw pinned.
* ``load_memmap`` of a 300 MB folder onto cuda, from page cache: >= 20 GB/s and >= 4x the peer.
* gather of 4096 random rows from a cuda-resident tensorclass: <= the peer's time.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

import tclass

from _common import load_peer


def _time(fn: Callable[[], Any], repeat: int) -> float:
    """Median seconds of ``fn`` (synchronised), after one warm-up call."""
    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _row(
    name: str, ours: float, theirs: float | None, unit: str, target: str, ok: bool | None
) -> None:
    peer = "-" if theirs is None else f"{theirs:10.3f}"
    verdict = "" if ok is None else ("ok" if ok else "MISS")
    print(f"{name:46s} {ours:10.3f} {peer:>10s} {unit:6s} {target:28s} {verdict}", flush=True)


def raw_bandwidth(nbytes: int, repeat: int) -> tuple[float, float]:
    """GB/s of a pinned and of a pageable host-to-device copy of ``nbytes``."""
    pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    pageable = torch.empty(nbytes, dtype=torch.uint8)
    pinned_s = _time(lambda: pinned.to("cuda", non_blocking=True), repeat)
    pageable_s = _time(lambda: pageable.to("cuda"), repeat)
    return nbytes / pinned_s / 1e9, nbytes / pageable_s / 1e9


def small_leaves(peer: ModuleType | None, repeat: int) -> None:
    leaves = {f"k{i}": torch.randn(256, 64) for i in range(200)}
    ours = tclass.TensorDict(dict(leaves), batch_size=[256])
    start = time.perf_counter()
    packed = ours.consolidate()
    consolidation = time.perf_counter() - start
    plain_s = _time(lambda: ours.to("cuda"), repeat)
    packed_s = _time(lambda: packed.to("cuda"), repeat)
    peer_plain = peer_packed = None
    if peer is not None:
        theirs = peer.TensorDict(dict(leaves), batch_size=[256])
        their_packed = theirs.consolidate()
        peer_plain = _time(lambda: theirs.to("cuda"), repeat) * 1e3
        peer_packed = _time(lambda: their_packed.to("cuda"), repeat) * 1e3
    _row(
        "200 leaves to cuda",
        plain_s * 1e3,
        peer_plain,
        "ms",
        "<= peer",
        peer_plain is None or plain_s * 1e3 <= peer_plain,
    )
    ok = packed_s * 1e3 <= 1.0 and (peer_packed is None or packed_s * 1e3 <= 0.25 * peer_packed)
    _row(
        "200 leaves to cuda, consolidated",
        packed_s * 1e3,
        peer_packed,
        "ms",
        "<= 1 ms, <= 0.25x peer",
        ok,
    )
    _row("  (consolidate() itself, once)", consolidation * 1e3, None, "ms", "", None)
    pinned = ours.consolidate(pin_memory=True)
    pinned_s = _time(lambda: pinned.to("cuda", non_blocking=True), repeat)
    peer_pinned = None
    if peer is not None:
        their_pinned = theirs.consolidate(pin_memory=True)
        peer_pinned = _time(lambda: their_pinned.to("cuda", non_blocking=True), repeat) * 1e3
    _row("200 leaves, consolidated pinned, non_blocking", pinned_s * 1e3, peer_pinned, "ms",
         "<= 1 ms, <= 0.25x peer", pinned_s * 1e3 <= 1.0 and (
             peer_pinned is None or pinned_s * 1e3 <= 0.25 * peer_pinned))  # fmt: skip


def _record_classes(peer: ModuleType | None) -> tuple[type, type | None]:
    @tclass.tensorclass
    class Frames:
        pixels: torch.Tensor
        reward: torch.Tensor

    peer_cls = None
    if peer is not None:

        @peer.tensorclass
        class PeerFrames:
            pixels: torch.Tensor
            reward: torch.Tensor

        peer_cls = PeerFrames
    return Frames, peer_cls


def pinned_record(peer: ModuleType | None, rows: int, raw_pinned: float, repeat: int) -> None:
    Frames, PeerFrames = _record_classes(peer)
    pixels = torch.randint(0, 255, (rows, 3, 64, 64), dtype=torch.uint8)
    reward = torch.rand(rows)
    nbytes = pixels.numel() + reward.numel() * 4
    ours = Frames(pixels, reward, batch_size=[rows]).pin_memory()
    ours_s = _time(lambda: ours.to("cuda", non_blocking=True), repeat)
    theirs_gbs = None
    if PeerFrames is not None:
        theirs = PeerFrames(pixels, reward, batch_size=[rows]).pin_memory()
        theirs_gbs = nbytes / _time(lambda: theirs.to("cuda", non_blocking=True), repeat) / 1e9
    gbs = nbytes / ours_s / 1e9
    _row(f"{nbytes / 1e6:.0f} MB record, pinned, non_blocking", gbs, theirs_gbs, "GB/s",
         f">= 0.9x raw pinned ({raw_pinned:.1f})", gbs >= 0.9 * raw_pinned)  # fmt: skip


def load_to_cuda(peer: ModuleType | None, rows: int, repeat: int) -> None:
    Frames, PeerFrames = _record_classes(peer)
    folder = Path(tempfile.mkdtemp(prefix="tclass-gpu-bench-"))
    try:
        record = Frames(
            torch.randint(0, 255, (rows, 3, 64, 64), dtype=torch.uint8),
            torch.rand(rows),
            batch_size=[rows],
        )
        nbytes = rows * (3 * 64 * 64 + 4)
        record.memmap(folder / "ours")
        ours_s = _time(lambda: Frames.load_memmap(folder / "ours", device="cuda"), repeat)
        theirs_gbs = None
        if PeerFrames is not None:
            PeerFrames(record.pixels.clone(), record.reward.clone(), batch_size=[rows]).memmap(
                folder / "theirs"
            )
            theirs_gbs = (
                nbytes
                / _time(lambda: PeerFrames.load_memmap(folder / "theirs", device="cuda"), repeat)
                / 1e9
            )
        gbs = nbytes / ours_s / 1e9
        ok = gbs >= 20 and (theirs_gbs is None or gbs >= 4 * theirs_gbs)
        _row(
            f"load_memmap {nbytes / 1e6:.0f} MB onto cuda",
            gbs,
            theirs_gbs,
            "GB/s",
            ">= 20 GB/s, >= 4x peer",
            ok,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def gather(peer: ModuleType | None, rows: int, repeat: int) -> None:
    Frames, PeerFrames = _record_classes(peer)
    pixels = torch.randint(0, 255, (rows, 3, 64, 64), dtype=torch.uint8, device="cuda")
    reward = torch.rand(rows, device="cuda")
    index = torch.randint(0, rows, (4096,), device="cuda")
    ours = Frames(pixels, reward, batch_size=[rows], device="cuda")
    ours_s = _time(lambda: ours[index], repeat)
    theirs_us = None
    if PeerFrames is not None:
        theirs = PeerFrames(pixels, reward, batch_size=[rows], device="cuda")
        theirs_us = _time(lambda: theirs[index], repeat) * 1e6
    _row(
        "gather 4096 rows on cuda",
        ours_s * 1e6,
        theirs_us,
        "us",
        "<= peer",
        theirs_us is None or ours_s * 1e6 <= theirs_us,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, few repeats (a smoke run)"
    )
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: the GPU benchmarks need one (run this on a GPU machine)")
        return 0
    peer = load_peer()
    repeat = 3 if args.quick else 11
    rows = 2_000 if args.quick else 24_000  # 24k rows of 3x64x64 uint8: ~300 MB
    print(
        f"device: {torch.cuda.get_device_name()}; peer: "
        f"{peer.__version__ if peer else 'not installed'}"
    )
    pinned, pageable = raw_bandwidth(rows * 3 * 64 * 64, repeat)
    print(f"raw host-to-device: pinned {pinned:.1f} GB/s, pageable {pageable:.1f} GB/s\n")
    print(f"{'case':46s} {'tclass':>10s} {'peer':>10s} {'unit':6s} {'target':28s}")
    small_leaves(peer, repeat)
    pinned_record(peer, rows, pinned, repeat)
    load_to_cuda(peer, rows, repeat)
    gather(peer, rows * 4, repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
