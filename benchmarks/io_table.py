"""The timing and the result table of ``benchmarks/io.py``: each implementation of a
case timed in interleaved repeats (:func:`measure`), and one :class:`Row` per case with
tclass, the peer and the hand-written baselines side by side (medians), the ratio and
its target.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

# --- timing ------------------------------------------------------------------------------

# Each sample is timed on both clocks: wall-clock time and this process's CPU time (on a
# loaded machine, waiting for a core is not the code's). ``measure`` gives the primary
# one (CPU time with ``--cpu``, for the per-operation cases), ``measure_both`` both.
_primary = "wall"
CLOCKS = ("wall", "cpu")


def use_cpu_time(cpu: bool) -> None:
    global _primary
    _primary = "cpu" if cpu else "wall"


def primary_clock() -> str:
    return _primary


def _noop() -> None:
    return None


@dataclass
class Impl:
    """One implementation of a case: ``run`` is timed; ``before`` and ``after`` are not
    (they run around each timed batch). ``number`` calls per batch, or None to pick a
    number that takes about the budget (the calibrating batch doubles as a warm-up)."""

    run: Callable[[], object]
    before: Callable[[], None] = _noop
    after: Callable[[], None] = _noop
    number: int | None = None

    def batch(self, number: int) -> dict[str, float]:
        """Seconds per call over ``number`` calls, on each clock (see ``CLOCKS``)."""
        self.before()
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(number):
                self.run()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        finally:
            self.after()
        return {"wall": wall / number, "cpu": cpu / number}

    def calibrate(self, budget: float) -> int:
        if self.number is None:
            once = self.batch(1)[_primary]
            self.number = max(1, min(10_000, round(budget / max(once, 1e-9))))
        return self.number


def measure_both(
    impls: dict[str, Impl], repeat: int, budget: float, each_repeat: Callable[[], None] = _noop
) -> dict[str, dict[str, list[float]]]:
    """Seconds per call of each implementation in each of ``repeat`` interleaved repeats,
    by clock: ``{"wall": samples, "cpu": samples}`` (each sample timed on both)."""
    numbers = {name: impl.calibrate(budget) for name, impl in impls.items()}
    samples: dict[str, dict[str, list[float]]] = {
        clock: {name: [] for name in impls} for clock in CLOCKS
    }
    names = list(impls)
    for r in range(repeat):
        each_repeat()
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            timed = impls[name].batch(numbers[name])
            for clock in CLOCKS:
                samples[clock][name].append(timed[clock])
    return samples


def measure(
    impls: dict[str, Impl], repeat: int, budget: float, each_repeat: Callable[[], None] = _noop
) -> dict[str, list[float]]:
    """:func:`measure_both`'s samples on the primary clock."""
    return measure_both(impls, repeat, budget, each_repeat)[_primary]


# --- the table -----------------------------------------------------------------------------


Samples = dict[str, list[float]]  # seconds per call, one per repeat, by implementation


@dataclass
class Row:
    """One line of the table. Values are in ``unit``: "GB/s" and "rows/s" (higher is
    better) are ``scale`` / seconds, "s" (lower is better) the seconds themselves."""

    case: str
    unit: str
    tclass: float
    peer: float | None
    baselines: dict[str, float] = field(default_factory=dict)
    against: str | None = None  # "peer" or a baseline's name: what the ratio divides by
    target: float | None = None  # the bound on the ratio (>= for rates, <= for times)
    spread: tuple[float, float] | None = None  # tclass's lowest and highest sample
    # The ratio's lowest and highest over the repeats (each repeat's tclass sample over
    # the same repeat's sample of what the ratio divides by: they ran side by side).
    ratio_spread: tuple[float, float] | None = None

    @classmethod
    def of(
        cls,
        case: str,
        unit: str,
        samples: Samples,
        scale: float = 1.0,
        *,
        tclass_key: str = "tclass",
        peer_key: str = "peer",
        baselines: Sequence[str] = (),
        against: str | None = "peer",
        target: float | None = None,
    ) -> Row:
        """The row of ``samples``: medians (the tclass / peer / baseline keys picked)."""

        def values(key: str) -> list[float]:
            return [scale / s if unit != "s" else s for s in samples[key]]

        def median(key: str) -> float | None:
            return statistics.median(values(key)) if key in samples else None

        mine = values(tclass_key)
        other_key = peer_key if against == "peer" else against
        paired = None
        if other_key in samples and len(mine) > 1 and len(samples[other_key]) == len(mine):
            ratios = [a / b for a, b in zip(mine, values(other_key)) if b]
            paired = (min(ratios), max(ratios)) if ratios else None
        return cls(
            case, unit, statistics.median(mine), median(peer_key),
            {name: median(name) for name in baselines if name in samples},  # type: ignore[misc]
            against, target, (min(mine), max(mine)) if len(mine) > 1 else None, paired,
        )  # fmt: skip

    @property
    def ratio(self) -> float | None:
        other = self.peer if self.against == "peer" else self.baselines.get(self.against or "")
        return None if other is None or not other else self.tclass / other

    @property
    def higher_is_better(self) -> bool:
        return self.unit != "s"

    @property
    def verdict(self) -> str:
        ratio = self.ratio
        if self.target is None or ratio is None:
            return ""
        ok = ratio >= self.target if self.higher_is_better else ratio <= self.target
        return "ok" if ok else "MISS"

    @property
    def target_text(self) -> str:
        if self.target is None or self.against is None:
            return ""
        return f"t/{self.against} {'>=' if self.higher_is_better else '<='} {self.target:g}"


def quantity(value: float | None, unit: str) -> str:
    """``value`` readably: GB/s with 2 decimals, rates with k/M, times in us or ms."""
    if value is None:
        return "-"
    if unit == "GB/s":
        return f"{value:.2f}"
    if unit == "s":
        if value < 1e-3:
            return f"{value * 1e6:.0f}us"
        if value < 1:
            return f"{value * 1e3:.2f}ms"
        return f"{value:.2f}s"
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}"


COLUMNS = (
    f"{'case':46s} {'unit':>6s} {'tclass':>8s} {'peer':>8s}  {'baseline(s)':48s} {'ratio':>5s} "
    f"{'(range)':11s}  {'target':20s} {'ok':4s} tclass range"
)


def print_row(row: Row) -> None:
    unit = "time" if row.unit == "s" else row.unit
    base = ", ".join(f"{name} {quantity(value, row.unit)}" for name, value in row.baselines.items())
    ratio = "-" if row.ratio is None else f"{row.ratio:.2f}"
    ratios = "" if row.ratio_spread is None else "({:.2f}-{:.2f})".format(*row.ratio_spread)
    spread = "" if row.spread is None else "..".join(quantity(v, row.unit) for v in row.spread)
    print(
        f"{row.case:46s} {unit:>6s} {quantity(row.tclass, row.unit):>8s} "
        f"{quantity(row.peer, row.unit):>8s}  {base or '-':48s} {ratio:>5s} {ratios:11s}  "
        f"{row.target_text:20s} {row.verdict:4s} {spread}".rstrip(),
        flush=True,
    )


def note(text: str) -> None:
    print(f"  .. {text}", file=sys.stderr, flush=True)
