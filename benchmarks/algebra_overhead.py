"""The Python time of the algebra cases: the same statements on one-element tensors.

On the algebra group's trees (``algebra_cases.namespace(tiny=True)``: the same 200
tensors in 20 nested collections, each of one element, and the record with 4 rows) the
kernels cost next to nothing, so a statement's time is the Python around them: the
walk, the checks, the rebuilt result. ``tclass - by hand`` (and ``peer - by hand``) is
what each library adds to the hand-written ``torch._foreach_*`` statement per call,
the figure the algebra rows' ratios depend on, and one that a loaded machine moves far
less than the ratios themselves.

Usage: ``OMP_NUM_THREADS=1 python benchmarks/algebra_overhead.py [--repeat N] [--quick]``. CPU
time (``time.process_time``), the three implementations interleaved and rotated; each
row gives the medians (µs per call) and the min..max over the repeats of each repeat's
difference.

``--calls``: instead of times, the Python-level calls each statement makes (functions
and builtins, as ``cProfile`` counts them; the count of an empty statement taken off):
a count that no load moves, to compare two trees' fixed cost per operation.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
import timeit
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import algebra_cases  # noqa: E402
from _common import load_peer, time_interleaved  # noqa: E402

# The soft update's two halves, timed apart (statement, peer's, by hand).
HALVES = [
    ("td.mul_(0.99)", "tp1.mul_(0.99)", "pp1.mul_(0.99)", "torch._foreach_mul_(L1, 0.99)"),
    (
        "td.add_(o, alpha=0.01)",
        "tp1.add_(tp2, alpha=0.01)",
        "pp1.add_(pp2, alpha=0.01)",
        "torch._foreach_add_(L1, L2, alpha=0.01)",
    ),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--filter", default="", help="only the cases whose name contains TEXT")
    parser.add_argument("--quick", action="store_true", help="one repeat: a smoke run")
    parser.add_argument("--calls", action="store_true", help="Python calls per statement")
    args = parser.parse_args()
    if args.quick:
        args.repeat = 1
    peer = load_peer()
    rows = [(c.name, c.tclass, c.peer, c.baseline) for c in algebra_cases.algebra_cases()]
    rows += HALVES
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the peer's deprecation warnings
        ns = algebra_cases.namespace(peer, tiny=True)
        if args.calls:
            return _print_calls(rows, ns, args.filter)
        print(
            f"one-element tensors; median of {args.repeat} interleaved repeats, CPU µs per "
            "call; the differences' min..max over the repeats\n"
        )
        header = (
            f"{'case':34s} {'tclass':>8s} {'peer':>8s} {'by hand':>8s} "
            f"{'tclass-hand':>17s} {'peer-hand':>17s}"
        )
        print(header)
        print("-" * len(header))
        for name, mine, theirs, hand in rows:
            if args.filter not in name:
                continue
            stmts = {"tclass": mine, "peer": theirs if peer else None, "hand": hand}
            timers = {
                key: timeit.Timer(stmt, timer=time.process_time, globals=ns)
                for key, stmt in stmts.items()
                if stmt is not None
            }
            samples = time_interleaved(timers, args.repeat)
            medians = {key: statistics.median(times) for key, times in samples.items()}
            line = f"{name:34s} {medians['tclass']:8.2f} "
            line += f"{medians['peer']:8.2f} " if "peer" in samples else f"{'-':>8s} "
            line += f"{medians['hand']:8.2f} "
            for key in ("tclass", "peer"):
                if key not in samples:
                    line += f"{'-':>17s} "
                    continue
                diffs = [a - b for a, b in zip(samples[key], samples["hand"])]
                low, high = min(diffs), max(diffs)
                line += f"{statistics.median(diffs):6.1f} ({low:.1f}..{high:.1f})".rjust(18)
            print(line, flush=True)
    return 0


def python_calls(stmt: str, ns: dict[str, Any], runs: int = 10) -> float:
    """The calls one run of ``stmt`` makes, as ``cProfile`` counts them (those of an
    empty statement taken off), after one run that warms its caches."""

    def counted(code: str) -> float:
        compiled = compile(code, "<statement>", "exec")
        exec(compiled, ns)  # noqa: S102 - the benchmark's own statements
        profiler = cProfile.Profile()
        for _ in range(runs):
            profiler.runctx(compiled, ns, None)
        stats: Any = pstats.Stats(profiler)
        return sum(entry[1] for entry in stats.stats.values()) / runs

    return counted(stmt) - counted("pass")


def _print_calls(rows: list[tuple[str, str, str, str]], ns: dict[str, Any], only: str) -> int:
    header = f"{'case':34s} {'tclass':>8s} {'peer':>8s} {'by hand':>8s}"
    print("Python calls per statement (cProfile's count: functions and builtins)\n")
    print(header)
    print("-" * len(header))
    for name, mine, theirs, hand in rows:
        if only not in name:
            continue
        counts = [python_calls(mine, ns), python_calls(theirs, ns) if ns["peer"] else None]
        counts.append(python_calls(hand, ns))
        cells = ["-" if count is None else f"{count:.0f}" for count in counts]
        print(f"{name:34s} " + " ".join(f"{cell:>8s}" for cell in cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
