"""What the benchmark scripts share: the peer (``tensordict``) where it is installed, and
the CPU-time loop that times several implementations of one case side by side."""

from __future__ import annotations

import importlib
import timeit
import warnings
from types import ModuleType

__all__ = ["calls_per_repeat", "load_peer", "time_interleaved"]


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


def time_interleaved(timers: dict[str, timeit.Timer], repeat: int) -> dict[str, list[float]]:
    """Microseconds per call of each timer (``time.process_time`` ones: CPU time), one
    sample per repeat, the implementations interleaved and their order rotating."""
    numbers = {name: calls_per_repeat(timer) for name, timer in timers.items()}
    samples: dict[str, list[float]] = {name: [] for name in timers}
    names = list(timers)
    for r in range(repeat):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
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
