"""Times tclass against the peer (``tensordict``) and a hand-written baseline.

Usage: ``python benchmarks/run.py [--repeat N] [--filter TEXT] [--group NAME]`` (``make
bench``); ``--filter "tc"`` keeps the tensorclass cases, whose names all start with "tc";
``--group algebra`` runs one group.

Every implementation of a case is timed in the same process, interleaved repeat by
repeat (the order rotating) so that machine noise hits all of them alike, in CPU time
(``time.process_time``: run with ``OMP_NUM_THREADS=1``, as ``make bench`` does, so that
it is the time of the one thread); the table reports the median time per call, the
ratios tclass/peer and tclass/baseline of the medians, and the spread of the
tclass/baseline ratio over the repeats (each repeat's times divided): its quartiles,
the middle half of the repeats (min..max on a shared machine is the noise's range;
``--spread range`` shows min..max instead). A case of file I/O (``io``: the consolidated
file's) settles the kernel's writeback before each sample, untimed.

On glibc, the allocator is told to keep freed memory in the process (``mallopt``: no
trimming of the heap, blocks up to 32 MiB from the heap) for all three implementations
alike.
Otherwise a call that frees megabytes of results may hand them back to the system and
the next call takes page faults for them, depending on the order the results happen to
be freed in: that swings the tensor-bound rows by up to 50% from run to run.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
import timeit
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import algebra_cases  # noqa: E402
import engine_cases  # noqa: E402
import stacking_cases  # noqa: E402
import tensorclass_cases  # noqa: E402
from _common import load_peer, settle_writeback, time_interleaved  # noqa: E402
from engine_cases import Case  # noqa: E402

PEER_TARGET = 0.5  # tclass at most half the peer's time, unless a case sets its own
BASELINE_TARGET = 2.0  # tensor-bound cases within 2x of the hand-written loop

# Each group of cases with the namespace its statements run in.
GROUPS: list[tuple[str, Callable[[], list[Any]], Callable[[ModuleType | None], dict[str, Any]]]] = [
    ("engine", engine_cases.engine_cases, engine_cases.namespace),
    ("tensorclass", tensorclass_cases.tensorclass_cases, tensorclass_cases.namespace),
    ("stacking", stacking_cases.stacking_cases, stacking_cases.namespace),
    ("algebra", algebra_cases.algebra_cases, algebra_cases.namespace),
]


def peer_target(case: Case) -> float:
    """The case's own bound on tclass/peer (the default where it sets none)."""
    return float(getattr(case, "peer_target", PEER_TARGET))


def verdicts(case: Case, vs_peer: float | None, vs_base: float | None) -> list[tuple[str, bool]]:
    """Each target the case is held to, and whether the ratios meet it. A case with a
    ``floor_target`` meets its peer target also by staying within that of the baseline
    (half the peer's time can be below the hand-written floor)."""
    out = []
    floor = getattr(case, "floor_target", None)
    if vs_peer is not None:
        target = peer_target(case)
        ok = vs_peer <= target
        label = f"peer<={target:g}"
        if floor is not None:
            ok = ok or (vs_base is not None and vs_base <= floor)
            label += f" or base<={floor:g}"
        out.append((label, ok))
    limit = getattr(case, "baseline_target", None)
    if limit is None and case.tensor_bound:
        limit = BASELINE_TARGET
    if limit is not None and vs_base is not None:
        out.append((f"base<={limit:g}", vs_base <= limit))
    return out


def quiet_allocator() -> bool:
    """Keeps freed memory in the process on glibc (see the module docstring); False
    elsewhere, where nothing is changed."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's mallopt parameters
    # Setting the trim threshold also freezes the mmap threshold where it stands, which
    # depends on whether the process has freed a large block yet (importing the peer
    # does): fixed here, at glibc's largest (32 MiB on 64-bit), so every run maps alike.
    kept = libc.mallopt(m_trim_threshold, 1 << 30)
    return bool(kept and libc.mallopt(m_mmap_threshold, 32 << 20))


def time_case(
    case: Case, ns: dict[str, Any], repeat: int, has_peer: bool, spread_of: str = "quartiles"
) -> tuple[dict[str, float | None], tuple[float, float] | None]:
    """Median CPU microseconds per run of each implementation's statement, and the
    quartiles (``spread_of="range"``: the least and the greatest) of the tclass/baseline
    ratio of one repeat (None without a baseline)."""
    impls = {
        "tclass": case.tclass,
        "peer": case.peer if has_peer else None,
        "baseline": case.baseline,
    }
    live = {
        name: timeit.Timer(stmt, timer=time.process_time, globals=ns)
        for name, stmt in impls.items()
        if stmt is not None
    }
    # a case of file I/O: each sample starts with the writeback of the last one done
    settle = settle_writeback if getattr(case, "io", False) else None
    samples = time_interleaved(live, repeat, settle)
    spread = None
    if "baseline" in samples:
        ratios = [t / b for t, b in zip(samples["tclass"], samples["baseline"]) if b > 0]
        if len(ratios) > 1 and spread_of == "range":
            spread = (min(ratios), max(ratios))
        elif len(ratios) > 1:
            low, _, high = statistics.quantiles(ratios, n=4)
            spread = (low, high)
    medians = {
        name: statistics.median(samples[name]) if name in samples else None for name in impls
    }
    return medians, spread


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a / b


def fmt(value: float | None, spec: str) -> str:
    """``value`` formatted by ``spec``, or a dash as wide (for a missing implementation)."""
    width = int(spec.split(".")[0] or 0)
    return "-".rjust(width) if value is None else format(value, spec)


def _range(spread: tuple[float, float] | None) -> str:
    return "-" if spread is None else f"{spread[0]:.2f}..{spread[1]:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--filter", default="", help="only the cases whose name contains TEXT")
    parser.add_argument(
        "--group", default="", help="only this group: " + ", ".join(name for name, *_ in GROUPS)
    )
    parser.add_argument(
        "--spread",
        choices=["quartiles", "range"],
        default="quartiles",
        help="the spread shown of the tclass/baseline ratio over the repeats",
    )
    args = parser.parse_args()
    peer = load_peer()
    quiet = quiet_allocator()
    misses: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the peer's deprecation warnings
        print(
            f"peer: {'tensordict ' + peer.__version__ if peer else 'not installed'}; "
            f"median of {args.repeat} interleaved repeats, CPU us per call; allocator "
            f"{'keeps freed memory (mallopt)' if quiet else 'as the system sets it'}\n"
        )
        header = (
            f"{'case':34s} {'tclass':>9s} {'peer':>9s} {'baseline':>9s} {'t/peer':>7s} "
            f"{'t/base':>7s} {args.spread:>11s}  target"
        )
        print(header)
        print("-" * len(header))
        for group, make_cases, make_namespace in GROUPS:
            if args.group and group != args.group:
                continue
            cases = [c for c in make_cases() if args.filter in c.name]
            if not cases:
                continue
            ns = make_namespace(peer)
            for case in cases:
                times, spread = time_case(case, ns, args.repeat, peer is not None, args.spread)
                vs_peer = ratio(times["tclass"], times["peer"])
                vs_base = ratio(times["tclass"], times["baseline"])
                verdict = []
                for label, ok in verdicts(case, vs_peer, vs_base):
                    verdict.append(f"{label} {'ok' if ok else 'MISS'}")
                    if not ok:
                        ratios = f"t/peer {fmt(vs_peer, '.2f')}, t/base {fmt(vs_base, '.2f')}"
                        misses.append(f"{case.name} ({ratios}; {label})")
                print(
                    f"{case.name:34s} {fmt(times['tclass'], '9.2f')} {fmt(times['peer'], '9.2f')} "
                    f"{fmt(times['baseline'], '9.2f')} {fmt(vs_peer, '7.2f')} "
                    f"{fmt(vs_base, '7.2f')} {_range(spread):>11s}  "
                    f"{', '.join(verdict)}",
                    flush=True,
                )
    print(
        f"\ntargets: tclass/peer <= each case's bound ({PEER_TARGET} unless shown otherwise); "
        f"tensor-bound cases also tclass/baseline <= {BASELINE_TARGET} (the algebra cases: "
        "as shown)"
    )
    print(f"missed: {'; '.join(misses) if misses else 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
