"""What the benchmark scripts share: the peer (``tensordict``) where it is installed, the
CPU-time loop that times several implementations of one case side by side, this process's
memory, and the wait for the kernel's writeback before an I/O sample. Standard library
only."""

from __future__ import annotations

import importlib
import os
import time
import timeit
import warnings
from collections.abc import Callable
from types import ModuleType

__all__ = ["calls_per_repeat", "load_peer", "memory", "settle_writeback", "time_interleaved"]


def load_peer() -> ModuleType | None:
    """The peer's module (its import warnings silenced), or None where it is not installed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module("tensordict")
    except ImportError:
        return None


def calls_per_repeat(timer: timeit.Timer, budget: float = 0.02) -> int:
    """How many runs take about ``budget`` seconds (at least 1)."""
    number = 1
    while True:
        elapsed = timer.timeit(number=number)
        if elapsed >= budget or number >= 1_000_000:
            return max(1, int(number * budget / max(elapsed, 1e-9)))
        number *= 4


def time_interleaved(
    timers: dict[str, timeit.Timer], repeat: int, before: Callable[[], None] | None = None
) -> dict[str, list[float]]:
    """Microseconds per call of each timer (``time.process_time`` ones: CPU time), one
    sample per repeat, the implementations interleaved and their order rotating;
    ``before`` runs before each sample, untimed (``settle_writeback`` for I/O)."""
    numbers = {name: calls_per_repeat(timer) for name, timer in timers.items()}
    samples: dict[str, list[float]] = {name: [] for name in timers}
    names = list(timers)
    for r in range(repeat):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            if before is not None:
                before()
            elapsed = timers[name].timeit(number=numbers[name])
            samples[name].append(elapsed / numbers[name] * 1e6)
    return samples


def memory() -> tuple[int, int]:
    """VmRSS and RssAnon of this process, in bytes."""
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon"):
                found[key] = int(value.split()[0]) * 1024
    return found["VmRSS"], found["RssAnon"]


def settle_writeback(limit: int = 32 << 20, timeout: float = 120.0) -> None:
    """Write dirty pages back (``os.sync()``) and wait until /proc/meminfo's Dirty +
    Writeback are under ``limit`` bytes (or ``timeout`` seconds pass: other programs may
    keep writing), so that no sample pays for the writeback of the one before."""
    os.sync()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open("/proc/meminfo") as stream:
                fields = dict(line.split(":", 1) for line in stream)
        except OSError:
            return  # not Linux: os.sync() is all there is
        pending = sum(int(fields.get(name, "0 kB").split()[0]) for name in ("Dirty", "Writeback"))
        if pending * 1024 < limit:
            return
        time.sleep(0.01)
