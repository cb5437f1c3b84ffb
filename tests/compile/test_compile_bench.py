"""``benchmarks/compile_bench.py`` runs, falls back where a library cannot compile a case
whole, and reports what it measured."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import compile_bench
import compile_cases
from compile_cases import CompileCase, Lib

pytestmark = [
    pytest.mark.compile,
    pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"),
]
dynamo = pytest.importorskip("torch._dynamo")


def _breaks(lib: Lib, td: Any) -> Any:
    out = td * 2
    dynamo.graph_break()
    return out


def test_a_case_that_cannot_compile_whole_is_timed_with_graph_breaks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    case = CompileCase("breaks", _breaks, lambda lib, rows: (compile_cases._td(lib, rows),))
    lib = compile_cases.tclass_lib()
    fn, how = compile_bench.compiled(case, lib, "eager", 16)
    assert how == "break" and "cannot compile 'breaks' whole" in capsys.readouterr().out
    td = compile_cases._td(lib, 16)
    assert torch.equal(fn(td)["obs"], td["obs"] * 2)


def _row(name: str, ratio: float, how: str = "") -> dict[str, Any]:
    medians = {"tclass compiled": ratio, "peer compiled": 1.0, "tclass eager": 0.5}
    medians["peer eager"] = 0.25
    return {
        "case": name,
        "medians": medians,
        "how": {"tclass": "", "peer": how},
        "vs_peer": ratio,
        "spread": (ratio * 0.9, ratio * 1.1),
    }


def test_the_summary_counts_the_cases_and_names_the_slower_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = [_row("a", 0.8), _row("b", 1.0), _row("c", 1.3), _row("d", 1.1, how="break")]
    for row in rows:
        compile_bench.print_row(row)
    compile_bench.summary(rows)
    out = capsys.readouterr().out
    assert "compiled tclass <= compiled peer: 2 of 4 cases" in out
    slower = [line for line in out.splitlines() if line.strip().startswith("slower:")]
    assert slower == ["  slower: c 1.30 (1.17..1.43)", "  slower: d 1.10 (0.99..1.21)"]
    assert "the peer cannot compile whole: d" in out
    assert out.splitlines()[0].split()[-2:] == [
        "1.60",
        "4.00",
    ]  # compiled / eager: 0.8 / 0.5, 1 / 0.25


@pytest.mark.peer
def test_the_benchmark_runs_a_case_with_both_libraries(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tensordict")
    argv = ["--filter", "td[0]", "--backend", "eager", "--repeat", "2", "--rows", "64"]
    assert compile_bench.main(argv) == 0
    out = capsys.readouterr().out
    assert "tensordict 0.15.3" in out.splitlines()[0]
    (row,) = [line for line in out.splitlines() if line.startswith("td[0]")]
    assert len(row.split()) >= 8  # both libraries' times and the ratios
    assert "compiled tclass <= compiled peer:" in out and "of 1 cases" in out


def test_the_floor_times_each_hand_written_reference_compiled_and_eager() -> None:
    lines = compile_bench.floor("eager", 16, 1).splitlines()
    assert [line.split(" on dicts")[0] for line in lines] == [
        f"by hand, {name}" for name, _, _ in compile_bench.FLOORS
    ]
    assert all(" us compiled, " in line and " us eager " in line for line in lines)


def test_the_hand_written_references_compute_what_their_cases_compute() -> None:
    lib = compile_cases.tclass_lib()
    a, b = compile_cases._tensors(8), compile_cases._tensors(8, seed=1)
    rec_a, rec_b = lib.Rec(**a, batch_size=[8]), lib.Rec(**b, batch_size=[8])
    summed = compile_bench._add_by_hand(a, b)
    total = rec_a + rec_b
    assert all(torch.equal(summed[key], getattr(total, key)) for key in a)
    built, rows = compile_bench._build_by_hand(*a.values())
    record = compile_cases.rec_build(lib, *a.values())
    assert rows == record.batch_size[0] and all(built[k] is getattr(record, k) for k in a)
    first = compile_bench._rows_by_hand(a)
    assert all(torch.equal(first[key], getattr(rec_a[0], key)) for key in a)
