"""Compiled tclass against the compiled peer (``tensordict``), and each against eager.

Usage: ``python benchmarks/compile_bench.py [--rows N] [--repeat N] [--filter TEXT]
[--backend NAME]`` (``make bench-compile``: inductor on CPU, ``OMP_NUM_THREADS=1``).

Each case of ``compile_cases`` is compiled for both libraries with
``torch.compile(fullgraph=True, dynamic=True)``, warmed up at another batch size first
(so the timed graph is the one every batch size shares), and timed at ``--rows`` rows
together with the eager run of the same body: the four implementations interleaved
repeat by repeat, the order rotating, in CPU time (``time.process_time``: run with
``OMP_NUM_THREADS=1``, so that it is the one thread's time). The table reports median
microseconds per call, compiled tclass over the compiled peer with the quartiles of
that ratio over the repeats, and compiled over eager for each library.

Where the peer cannot compile a body whole (``fullgraph=True`` raises), the row says
so and times the peer compiled with graph breaks instead (marked ``break``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import compile_cases  # noqa: E402
from _common import load_peer, time_interleaved  # noqa: E402
from compile_cases import CompileCase, Lib  # noqa: E402
from run import quiet_allocator  # noqa: E402

WARM_ROWS = 100  # the first call's batch size, before the timed one


def compiled(case: CompileCase, lib: Lib, backend: str, rows: int) -> tuple[Any, str]:
    """The case compiled for ``lib`` and called once at ``WARM_ROWS`` and at ``rows``,
    and how: ``""`` whole, ``"break"`` with graph breaks (fullgraph raised)."""
    import torch._dynamo as dynamo

    with dynamo.config.patch(capture_dynamic_output_shape_ops=case.data_dependent):
        for fullgraph, how in ((True, ""), (False, "break")):
            fn = torch.compile(
                compile_cases.bound(case, lib), fullgraph=fullgraph, dynamic=True, backend=backend
            )
            try:
                fn(*case.inputs(lib, WARM_ROWS))
                fn(*case.inputs(lib, rows))
            except Exception as error:  # noqa: BLE001 (any failure to compile is reported)
                if not fullgraph:
                    raise
                reason = f"{type(error).__name__}: {str(error).splitlines()[0][:80]}"
                print(f"  {lib.name} cannot compile {case.name!r} whole: {reason}", flush=True)
                continue
            return fn, how
    raise AssertionError("unreachable")


def time_impls(
    impls: dict[str, tuple[Any, tuple[Any, ...]]], repeat: int
) -> dict[str, list[float]]:
    """CPU microseconds per call of each implementation, one sample per repeat, the
    implementations interleaved and their order rotating."""
    timers = {
        name: timeit.Timer("fn(*args)", timer=time.process_time, globals={"fn": fn, "args": args})
        for name, (fn, args) in impls.items()
    }
    return time_interleaved(timers, repeat)


def quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    low, _, high = statistics.quantiles(values, n=4)
    return low, high


def run_case(
    case: CompileCase, libs: dict[str, Lib], backend: str, rows: int, repeat: int
) -> dict[str, Any]:
    impls: dict[str, tuple[Any, tuple[Any, ...]]] = {}
    how: dict[str, str] = {}
    for name, lib in libs.items():
        args = case.inputs(lib, rows)
        fn, how[name] = compiled(case, lib, backend, rows)
        impls[f"{name} compiled"] = (fn, args)
        impls[f"{name} eager"] = (compile_cases.bound(case, lib), args)
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=case.data_dependent):
        samples = time_impls(impls, repeat)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    row: dict[str, Any] = {"case": case.name, "medians": medians, "how": how}
    if "peer" in libs:
        ratios = [t / p for t, p in zip(samples["tclass compiled"], samples["peer compiled"])]
        row["vs_peer"] = medians["tclass compiled"] / medians["peer compiled"]
        row["spread"] = quartiles(ratios)
    return row


def _rows_by_hand(leaves: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: value[0] for key, value in leaves.items()}


def _build_by_hand(
    obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor
) -> tuple[dict[str, torch.Tensor], int]:
    return {"obs": obs, "action": action, "reward": reward}, obs.shape[0]


def _add_by_hand(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: value + b[key] for key, value in a.items()}


# The hand-written references: each case's body on plain dicts of the three tensors (a
# build returns the batch size beside them, as a record holds one), with its inputs.
FLOORS: list[tuple[str, Any, Any]] = [
    ("td[0]", _rows_by_hand, lambda rows: (compile_cases._tensors(rows),)),
    ("rec build", _build_by_hand, lambda rows: tuple(compile_cases._tensors(rows).values())),
    (
        "rec + rec",
        _add_by_hand,
        lambda rows: (compile_cases._tensors(rows), compile_cases._tensors(rows, seed=1)),
    ),
]


def floor(backend: str, rows: int, repeat: int) -> str:
    """The hand-written references (:data:`FLOORS`), compiled and eager: what
    torch.compile costs a call with no collection at all, beside which the compiled
    collection's own part (its guards, rebuilding its result) is the difference."""
    lines = []
    for name, body, inputs in FLOORS:
        fn = torch.compile(body, fullgraph=True, dynamic=True, backend=backend)
        fn(*inputs(WARM_ROWS))
        args = inputs(rows)
        fn(*args)
        samples = time_impls({"compiled": (fn, args), "eager": (body, args)}, repeat)
        compiled, eager = (statistics.median(samples[key]) for key in ("compiled", "eager"))
        lines.append(
            f"by hand, {name} on dicts of the 3 tensors: {compiled:.1f} us compiled, "
            f"{eager:.1f} us eager (the floor of a compiled call)"
        )
    return "\n".join(lines)


def _fmt(value: float | None, spec: str) -> str:
    width = int(spec.split(".")[0] or 0)
    return "-".rjust(width) if value is None else format(value, spec)


def print_row(row: dict[str, Any]) -> None:
    m = row["medians"]
    peer = m.get("peer compiled")
    spread = row.get("spread")
    over = m["tclass compiled"] / m["tclass eager"]
    peer_over = None if peer is None else peer / m["peer eager"]
    note = "peer: break" if row["how"].get("peer") else ""
    if row["how"].get("tclass"):
        note = "tclass: break " + note
    print(
        f"{row['case']:26s} {m['tclass compiled']:8.1f} {_fmt(peer, '8.1f')} "
        f"{_fmt(row.get('vs_peer'), '6.2f')} "
        f"{'-' if spread is None else f'{spread[0]:.2f}..{spread[1]:.2f}':>10s} "
        f"{m['tclass eager']:8.1f} {over:6.2f} {_fmt(peer_over, '6.2f')}  {note}",
        flush=True,
    )


def summary(rows: list[dict[str, Any]]) -> None:
    compared = [r for r in rows if "vs_peer" in r]
    if not compared:
        return
    at_most = [r for r in compared if r["vs_peer"] <= 1.0]
    slower = sorted((r for r in compared if r["vs_peer"] > 1.0), key=lambda r: -r["vs_peer"])
    print(f"\ncompiled tclass <= compiled peer: {len(at_most)} of {len(compared)} cases")
    for r in slower:
        low, high = r["spread"]
        print(f"  slower: {r['case']} {r['vs_peer']:.2f} ({low:.2f}..{high:.2f})")
    breaks = [r["case"] for r in rows if r["how"].get("peer")]
    if breaks:
        print(f"the peer cannot compile whole: {', '.join(breaks)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--filter", default="", help="only the cases whose name contains TEXT")
    parser.add_argument("--backend", default="inductor")
    args = parser.parse_args(argv)
    peer = load_peer()
    quiet = quiet_allocator()
    libs = {"tclass": compile_cases.tclass_lib()}
    if peer is not None:
        libs["peer"] = compile_cases.peer_lib(peer)
    print(
        f"peer: {'tensordict ' + peer.__version__ if peer else 'not installed'}; torch "
        f"{torch.__version__}, backend {args.backend}, {args.rows} rows, "
        f"{torch.get_num_threads()} thread(s); median of {args.repeat} interleaved repeats, "
        f"CPU us per call; allocator "
        f"{'keeps freed memory (mallopt)' if quiet else 'as the system sets it'}\n"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        print(floor(args.backend, args.rows, args.repeat) + "\n")
    header = (
        f"{'case':26s} {'t comp':>8s} {'p comp':>8s} {'t/p':>6s} {'quartiles':>10s} "
        f"{'t eager':>8s} {'t c/e':>6s} {'p c/e':>6s}"
    )
    print(header)
    print("-" * len(header))
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the peer's deprecation warnings, inductor's
        for case in compile_cases.compile_cases():
            if args.filter not in case.name:
                continue
            row = run_case(case, libs, args.backend, args.rows, args.repeat)
            print_row(row)
            rows.append(row)
    summary(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
