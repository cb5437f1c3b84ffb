"""The standalone differential runner: many programs, grouped findings, repro scripts.

    python -m tests.differential.run --examples 20000
    python -m tests.differential.run --seconds 600          # as many programs as fit
    python -m tests.differential.run --examples 2000 --families shape,math --seed 7
    python -m tests.differential.run --replay 1234 --families index   # one program, verbose
    python -m tests.differential.run --examples 8000 --open-seen   # which OPEN lines show

Programs are numbered from ``--seed``; program ``n`` is fully determined by ``n``, the
families and ``--length``, so ``--replay n`` shows it again. Findings are grouped by
signature (family, op, kind, first difference); for each group the shortest program is
printed as a script that reproduces it (prefix ``L = tensordict`` or ``L = tclass``, and
``from tests.differential.libs import *``, ``from tests.differential.world import t``).
The peer iterates sets of keys in places, so its outcome may hang on Python's string hash
seed: run as a script, the runner re-executes itself under ``PYTHONHASHSEED=0`` (unless
one is set), so that a run and a replay see the same program (``PYTHONHASHSEED=random``
to vary it).
The exit status is 1 when a finding is neither a deliberate difference (``allowlist.ENTRIES``)
nor a known open one (``allowlist.OPEN``).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections import defaultdict
from collections.abc import Iterable

from .chooser import RandomChooser
from .engine import Finding, Stats, run_program
from .libs import libraries
from .ops import DEFAULT_FAMILIES, generators, world_of


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.differential.run")
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=None, help="run until this long")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--families", default=",".join(DEFAULT_FAMILIES))
    parser.add_argument("--length", type=int, default=4, help="ops per program")
    parser.add_argument("--replay", type=int, default=None, help="run one program, verbose")
    parser.add_argument("--show-allowed", action="store_true", help="and the open ones")
    parser.add_argument("--stats", action="store_true", help="steps per op")
    parser.add_argument(
        "--print-open", action="store_true", help="new discrepancies as open_findings.py lines"
    )
    parser.add_argument(
        "--open-seen",
        action="store_true",
        help="the OPEN (and new) signatures seen, with their programs",
    )
    args = parser.parse_args(argv)
    libs = libraries()
    if libs is None:
        print("the peer (tensordict) is not installed: nothing to compare")
        return 0
    families = args.families.split(",")
    gens = generators(families)
    build = world_of(families)
    stats = Stats()
    start = time.perf_counter()
    if args.replay is not None:
        seeds: Iterable[int] = [args.replay]
    elif args.seconds is not None:
        seeds = itertools.count(args.seed)
    else:
        seeds = range(args.seed, args.seed + args.examples)
    seen: dict[str, list[int]] = defaultdict(list)  # OPEN signature -> programs
    fresh: dict[str, list[int]] = defaultdict(list)  # new signature -> programs
    for n in seeds:
        if args.seconds is not None and time.perf_counter() - start > args.seconds:
            break
        before = len(stats.findings)
        finding = run_program(RandomChooser(n), libs, gens, stats, args.length, build)
        for found in stats.findings[before:]:
            if found.open is not None:
                seen[found.signature()].append(n)
            elif found.is_bug:
                fresh[found.signature()].append(n)
        if args.replay is not None:
            print(finding.report() if finding else "no finding")
    elapsed = time.perf_counter() - start
    code = _summary(stats, elapsed, families, args.show_allowed, args.stats)
    if args.print_open:
        new = sorted({f.signature(): f.kind for f in stats.findings if f.is_bug}.items())
        for signature, kind in new:
            print(f"    {signature!r}: {kind!r},")
    if args.open_seen:
        for signature, programs in sorted(seen.items()):
            print(f"open-seen {signature!r} programs {programs}")
        for signature, programs in sorted(fresh.items()):
            print(f"new-seen {signature!r} programs {programs}")
    return code


def _summary(stats: Stats, elapsed: float, families: list[str], allowed: bool, ops: bool) -> int:
    groups: dict[str, list[Finding]] = defaultdict(list)
    for finding in stats.findings:
        groups[finding.signature()].append(finding)
    bugs = {s: f for s, f in groups.items() if any(finding.is_bug for finding in f)}
    allowed_groups = {s: f for s, f in groups.items() if f[0].allowed is not None}
    open_groups = {s: f for s, f in groups.items() if s not in bugs and s not in allowed_groups}
    steps = sum(stats.steps.values())
    print(
        f"{stats.programs} programs, {steps} steps compared ({', '.join(families)}) "
        f"in {elapsed:.1f}s; {sum(stats.both_raised.values())} steps raised in both"
    )
    if stats.missing:
        print(f"skipped (tclass lacks the method): {dict(stats.missing)}")
    if stats.peer_lacks:
        print(f"skipped (the peer lacks the method): {dict(stats.peer_lacks)}")
    if ops:
        print("steps per op:", dict(sorted(stats.steps.items())))
    print(f"{len(bugs)} discrepancies ({sum(map(len, bugs.values()))} programs)")
    print(f"{len(allowed_groups)} allowed ({sum(map(len, allowed_groups.values()))} programs)")
    print(f"{len(open_groups)} open ({sum(map(len, open_groups.values()))} programs)")
    shown = list(bugs.items())
    if allowed:
        shown += list(allowed_groups.items()) + list(open_groups.items())
    for signature, findings in sorted(shown, key=lambda item: -len(item[1])):
        candidates = [f for f in findings if f.is_bug] or findings
        shortest = min(candidates, key=lambda f: sum(map(len, f.lines)))
        label = f" [allowed: {shortest.allowed}]" if shortest.allowed else ""
        label += f" [open: {shortest.open}]" if shortest.open else ""
        print(f"\n=== {len(findings)}x {signature}{label}\n{shortest.report()}")
    return 1 if bugs else 0


def _with_fixed_hash_seed() -> None:
    """Re-execute this runner under ``PYTHONHASHSEED=0`` unless a seed is already set."""
    if "PYTHONHASHSEED" not in os.environ:
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable, "-m", __spec__.name, *sys.argv[1:]], env)


if __name__ == "__main__":
    _with_fixed_hash_seed()
    sys.exit(main())
