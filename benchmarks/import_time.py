"""Times ``import torch, tclass`` against ``import torch`` alone (and the peer's import).

Usage: ``python benchmarks/import_time.py [--repeat N] [--clock cpu|wall] [--quick]``
(``make bench-import``; ``--quick``: one repeat, a smoke run).

Each statement runs in a fresh interpreter (``python -c``), the three interleaved repeat
by repeat with the order rotating, after one unmeasured run of each that writes the
bytecode caches (``PYTHONDONTWRITEBYTECODE`` is dropped from the children's environment:
without the caches every run recompiles tclass's 230-odd modules, about 1.9 s, which no
installed copy does). The time of a run is the child's CPU time (user + system, from
``wait4``; what a loaded machine does not inflate) or its wall-clock time; the table
gives medians, the ratio of each repeat's pair and that ratio's range over the repeats.

Target (issue 29): ``import torch, tclass`` at most 1.1x ``import torch`` alone.
"""

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

STATEMENTS = {
    "torch": "import torch",
    "torch, tclass": "import torch, tclass",
    "torch, tensordict": (
        "import warnings; warnings.simplefilter('ignore'); import torch, tensordict"
    ),
}
TARGET = 1.1


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def has_peer() -> bool:
    return importlib.util.find_spec("tensordict") is not None


def run_once(statement: str, env: dict[str, str]) -> tuple[float, float]:
    """One fresh interpreter running ``statement``: (CPU seconds, wall seconds)."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", statement], env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"{statement!r} failed with status {process.returncode}")
    return usage.ru_utime + usage.ru_stime, wall


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--quick", action="store_true", help="one repeat (a smoke run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat = 1
    env = child_env()
    names = [name for name in STATEMENTS if "tensordict" not in name or has_peer()]
    for name in names:  # writes the bytecode caches; not timed
        run_once(STATEMENTS[name], env)
    clock = 0 if args.clock == "cpu" else 1
    samples: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(args.repeat):
        order = names[repeat % len(names) :] + names[: repeat % len(names)]
        for name in order:
            samples[name].append(run_once(STATEMENTS[name], env)[clock])
    base = samples["torch"]
    print(f"{args.clock} time of a fresh interpreter, median of {args.repeat} rotated repeats (s)")
    print(f"{'statement':<22} {'median':>8} {'/ torch':>8} {'range':>13}  target")
    for name in names:
        ratios = [a / b for a, b in zip(samples[name], base, strict=True)]
        median = statistics.median(samples[name])
        ratio = median / statistics.median(base)
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
        target = ""
        if name == "torch, tclass":
            target = f"<= {TARGET} {'met' if ratio <= TARGET else 'MISSED'}"
        print(f"import {name:<15} {median:8.3f} {ratio:8.2f} {spread:>13}  {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
