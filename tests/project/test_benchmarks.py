"""The benchmark cases still run and compute the same thing with tclass and by hand.

Timings are not checked here (they live in ``make bench``); this keeps the benchmark
statements from rotting as the API grows. The tclass and hand-written statements never
need the peer; the peer's statements are checked too where ``tensordict`` is installed.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass

import algebra_cases
import algebra_overhead
import engine_cases
import stacking_cases
import tensorclass_cases

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def quick_output(script: str, timeout: int, *, warnings_are_errors: bool = True) -> str:
    """What ``benchmarks/<script> --quick`` prints, run as a script in a process of its own
    (spawned ranks and Ray workers re-import it), checked to exit 0."""
    strict = ["-W", "error"] if warnings_are_errors else []
    result = subprocess.run(
        [sys.executable, *strict, str(BENCHMARKS / script), "--quick"],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def assert_rows(out: str, rows: tuple[str, ...]) -> None:
    """Each of ``rows`` stands in ``out``."""
    missing = [row for row in rows if row not in out]
    assert not missing, (missing, out)


Namespace = Callable[[Any], dict[str, Any]]
CASES: list[tuple[Any, Namespace]] = [
    *((case, engine_cases.namespace) for case in engine_cases.engine_cases()),
    *((case, tensorclass_cases.namespace) for case in tensorclass_cases.tensorclass_cases()),
    *((case, stacking_cases.namespace) for case in stacking_cases.stacking_cases()),
    *((case, algebra_cases.namespace) for case in algebra_cases.algebra_cases()),
]
IDS = [case.name for case, _ in CASES]


def _leaves(result: Any) -> dict[str, torch.Tensor] | None:
    if isinstance(result, dict):
        return result
    if hasattr(result, "items"):
        return {str(k): v for k, v in result.items(include_nested=True, leaves_only=True)}
    return None


def _is_expression(source: str) -> bool:
    try:
        compile(source, "<case>", "eval")
    except SyntaxError:
        return False
    return True


def _assert_same(mine: Any, reference: Any, *, ours: bool = True) -> None:
    """``mine`` (a statement's result) holds what ``reference`` (the baseline's) holds.

    A stack of records holds the hand-written record's one string once per element
    (nested lists, as the peer's stacks read).
    """
    if isinstance(reference, bool):
        assert type(mine) is bool and mine == reference
        return
    if isinstance(reference, (list, tuple)) and all(isinstance(r, torch.Tensor) for r in reference):
        # A collection against the list of its tensors (the foreach floor), in walk order.
        leaves = list(mine.values(include_nested=True, leaves_only=True))
        assert len(leaves) == len(reference)
        for leaf, expected in zip(leaves, reference):
            assert torch.allclose(leaf, expected)
        return
    if isinstance(reference, list):  # a lazy stack, by hand the list of its members
        assert len(mine) == len(reference)
        for position, member in enumerate(reference):
            _assert_same(mine[position], member, ours=ours)
        return
    if isinstance(reference, torch.Tensor):
        assert type(mine) is type(reference) and torch.equal(mine, reference)
        return
    if dataclasses.is_dataclass(reference):  # a tensorclass against the hand-written record
        assert type(mine).__name__[1:] == type(reference).__name__[1:], type(mine)
        assert tclass.is_tensorclass(mine) or not ours, type(mine)
        if isinstance(reference, tensorclass_cases.DTransition):  # obs is (*batch, 3, 4)
            assert mine.batch_size == reference.obs.shape[:-2]
        for field in dataclasses.fields(reference):
            value = getattr(reference, field.name)
            if isinstance(value, torch.Tensor) or dataclasses.is_dataclass(value):
                _assert_same(getattr(mine, field.name), value, ours=ours)
            else:
                assert _each_element(getattr(mine, field.name), value), field.name
        return
    mine_leaves, reference_leaves = _leaves(mine), _leaves(reference)
    assert mine_leaves is not None and reference_leaves is not None
    assert mine_leaves.keys() == reference_leaves.keys()
    for key, value in reference_leaves.items():
        assert torch.equal(mine_leaves[key], value), key


def _each_element(got: Any, value: Any) -> bool:
    """Whether ``got`` is ``value``, or nested lists holding ``value`` in every place."""
    if isinstance(got, list) and not isinstance(value, list):
        return bool(got) and all(_each_element(item, value) for item in got)
    return bool(got == value)


def _run(statement: str, ns: dict[str, Any]) -> Any:
    """The statement's value, or None for an assignment (which must simply run)."""
    if _is_expression(statement):
        return eval(statement, ns)
    exec(statement, ns)
    return None


def _check(case: Any, make_namespace: Namespace, peer: Any) -> None:
    ns = make_namespace(peer)
    statement = case.tclass if peer is None else case.peer
    mine = _run(statement, ns)
    if mine is None:
        return
    if case.baseline is None or case.name.startswith("MemoryMappedTensor"):
        assert isinstance(mine, torch.Tensor)
        return
    # The baseline on a namespace of its own: the algebra cases' statements share their
    # tensors, which the in-place ones write.
    _assert_same(mine, eval(case.baseline, make_namespace(peer)), ours=peer is None)


@pytest.mark.parametrize(("case", "make_namespace"), CASES, ids=IDS)
def test_case_runs_and_matches_the_hand_written_baseline(
    case: Any, make_namespace: Namespace
) -> None:
    _check(case, make_namespace, peer=None)


@pytest.mark.peer
@pytest.mark.parametrize(("case", "make_namespace"), CASES, ids=IDS)
def test_peer_statement_runs_and_matches_the_hand_written_baseline(
    case: Any, make_namespace: Namespace
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the peer's deprecation warnings
        peer = pytest.importorskip("tensordict")
        assert case.peer is not None
        _check(case, make_namespace, peer)


def test_tensorclass_cases_have_their_own_targets() -> None:
    targets = {case.name: case.peer_target for case in tensorclass_cases.tensorclass_cases()}
    attribute = ("tc init", "tc read", "tc write", "tc nested init", "tc nested read")
    attribute += ("tc init, 3 spec'd fields",)  # building a record, with specs
    assert all(targets[name] == 0.25 for name in attribute)
    copy_bound = ("tc[idx] = 256 replay rows, spec'd",)  # held to the peer's time
    assert all(targets[name] == 1.0 for name in copy_bound)
    # The constraint issue's replay rows: the peer checks nothing, the two passes over
    # the 256 values written cost a few percent.
    checked_copy = ("tc[idx] = 256 replay rows, constrained",)
    assert all(targets[name] == 1.1 for name in checked_copy)
    # In-place math runs at the peer's speed; constrained fields add a copy and a check.
    assert targets["tc.mul_(1.0), 3 spec'd fields"] == 1.1
    checked_inplace = (
        "tc.mul_(1.0), 3 constrained fields",
        "tc.copy_(other), 3 constrained fields",
    )
    assert all(targets[name] == 3.0 for name in checked_inplace)
    special = (*attribute, *copy_bound, *checked_copy, *checked_inplace)
    special += ("tc.mul_(1.0), 3 spec'd fields",)
    others = [t for name, t in targets.items() if name not in special]
    assert all(target == 0.5 for target in others)
    assert all(name.startswith("tc") for name in targets)
    # The schema issue's bounds: specs cost at most 20% on building a record and on
    # writing rows into one.
    bounds = {c.name: c.baseline_target for c in tensorclass_cases.tensorclass_cases()}
    assert bounds["tc init, 3 spec'd fields"] == 1.2
    assert bounds["tc[idx] = rows, 3 spec'd fields"] == 1.2
    assert bounds["tc[idx] = 256 replay rows, spec'd"] == 1.2
    # The constraint issue's (31): one fused pass per constrained field, against the same
    # record with unconstrained specs.
    assert bounds["tc init, 3 constrained fields"] == 5.0
    assert bounds["tc[idx] = rows, 3 constrained fields"] == 3.0
    assert bounds["tc[idx] = 256 replay rows, constrained"] == 1.3
    assert bounds["tc.mul_(1.0), 3 spec'd fields"] == 1.2  # unconstrained: nothing more
    assert bounds["tc.mul_(1.0), 3 constrained fields"] == 3.0
    assert bounds["tc.copy_(other), 3 constrained fields"] == 3.0


@pytest.mark.peer
def test_io_benchmark_quick_mode_runs_and_cleans_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``benchmarks/io.py --quick`` (megabytes, one repeat) prints every case's row and
    leaves nothing behind. Loaded under its own name: ``io`` is the standard library's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the peer's deprecation warnings
        pytest.importorskip("tensordict")
        spec = importlib.util.spec_from_file_location("tclass_bench_io", BENCHMARKS / "io.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its records are loaded back by their module's name
        spec.loader.exec_module(module)
    assert module.main(["--quick", "--cpu", "--save-rows", "32", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for case in (
        "memmap_ 1MiB x8 threads=0",
        "memmap_ 1MiB x8 threads=0/pwrite",
        "pwrite ",  # the page cache's limit, beside every memmap_ row
        "best threads",
        "gather 256 of 2k warm",
        "gather 256 of 2k cold",
        "load_memmap 8 leaves",
        "load_memmap 256 leaves",
        "memmap 256 leaves",
        "memmap_like 10k-row",
        "memmap 256 leaves durable=True",
        "memmap_like 10k-row durable=True",
    ):
        assert case in out, case
    assert "tensordict" in out.splitlines()[0] and "load average" in out.splitlines()[0]
    assert "CPU time first" in out
    assert "by hand, atomic" in out  # memmap_like's floor with the staging folder
    assert "load_memmap 8 leaves (tensorclass) [cpu]" in out and "[wall]" in out
    assert list(tmp_path.iterdir()) == []


@pytest.mark.peer
def test_io_syscalls_benchmark_counts_each_library() -> None:
    """``benchmarks/io_syscalls.py --cases load8,nested`` counts both libraries' calls
    under strace: one ``mmap`` per leaf each (8; 5 in the nested folders)."""
    if shutil.which("strace") is None:
        pytest.skip("needs strace")
    pytest.importorskip("tensordict")
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "io_syscalls.py"), "--cases", "load8,nested"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if result.returncode and "PTRACE" in result.stderr:
        pytest.skip("strace may not trace here")
    assert result.returncode == 0, result.stderr
    rows = result.stdout.splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["load8", "nested"]
    assert "mmap 8 (8)" in rows[0] and "mmap 5 (5)" in rows[1]
    assert all(int(row.split()[1]) > 0 and int(row.split()[2]) > 0 for row in rows)


@pytest.mark.peer
def test_stores_benchmark_quick_mode_runs_and_cleans_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``benchmarks/stores.py --quick`` times each store's cases once, with the peer and
    by hand, and leaves nothing behind."""
    pytest.importorskip("h5py")
    pytest.importorskip("zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the peer's deprecation warnings
        pytest.importorskip("tensordict")
        import stores

        assert stores.main(["--quick", "--leaves", "4", "--dir", str(tmp_path)]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    cases = [f"{b} {c}" for b in ("h5", "zarr") for c in ("read all", "read rows", "open")]
    assert [row[:18].strip() for row in rows] == cases
    assert all("t/hand" in row and "t/peer" in row for row in rows)
    assert list(tmp_path.iterdir()) == []


def test_distributed_benchmark_quick_mode_runs() -> None:
    """``benchmarks/distributed.py --quick``: two spawned ranks run the gloo and RPC cases
    at small sizes and print both tables."""
    out = quick_output("distributed.py", timeout=120)
    assert_rows(
        out, ("| 100 x 1 KiB |", "| 10 x 64 KiB |", "| rpc_sync fill |", "tclass / by hand")
    )


def test_import_benchmark_quick_mode_runs() -> None:
    """``benchmarks/import_time.py --quick``: fresh interpreters import torch, torch and
    tclass, torch and the peer, and the table holds each with its ratio to torch alone."""
    out = quick_output("import_time.py", timeout=300, warnings_are_errors=False)
    assert_rows(out, ("import torch ", "import torch, tclass", "<= 1.1"))


def test_ray_benchmark_quick_mode_runs() -> None:
    """``benchmarks/ray_transport.py --quick``: a local Ray cluster, every payload put
    and read back by another process at 16 MiB, and the table and the target lines."""
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'tclass[ray]'")
    out = quick_output("ray_transport.py", timeout=300)
    rows = ("| tclass TensorDict |", "| tclass record |", "| dict of numpy |", "target <= 10 ms")
    assert_rows(out, rows)


def test_ray_data_benchmark_quick_mode_runs() -> None:
    """``benchmarks/ray_data.py --quick``: a two-node cluster moving a 16 MiB record in
    memory and by file reference, then Ray Data and local reads of a small folder."""
    pytest.importorskip("ray.data", reason="Ray Data is not installed: pip install 'tclass[ray]'")
    out = quick_output("ray_data.py", timeout=400)
    rows = (
        "| tclass record, in memory |",
        "| tclass record, file reference |",
        "| tclass.ray.read_memmap + iter_records |",
        "| Ray Data by hand (np.memmap datasource) |",
        "tclass.ray / tclass load_memmap, time",
    )
    assert_rows(out, rows)


def test_gpu_benchmark_runs_or_says_why() -> None:
    """``benchmarks/gpu.py --quick`` runs its cases on a GPU, and says it needs one (exit
    0) elsewhere."""
    out = quick_output("gpu.py", timeout=600, warnings_are_errors=False)
    if torch.cuda.is_available():
        assert "200 leaves to cuda, consolidated" in out
    else:
        assert "no CUDA device" in out


def test_algebra_overhead_quick_mode_runs() -> None:
    """``benchmarks/algebra_overhead.py --quick`` times every algebra case and the soft
    update's two halves on one-element tensors, against the hand-written statement."""
    out = quick_output("algebra_overhead.py", timeout=300)
    rows = (*(case.name for case in algebra_cases.algebra_cases()), "td.add_(o, alpha=0.01)")
    assert_rows(out, ("tclass-hand", *rows))


def test_python_calls_counts_each_call_of_a_statement_once() -> None:
    """``algebra_overhead.python_calls``: the calls of one run (an empty statement's
    taken off), the same however many runs are counted."""

    def inner() -> int:
        return len("ab")  # a builtin: counted too

    def outer() -> int:
        return inner() + inner()

    ns: dict[str, Any] = {"outer": outer}
    assert algebra_overhead.python_calls("pass", ns) == 0
    assert algebra_overhead.python_calls("outer()", ns) == 5  # outer, 2 inner, 2 len
    assert algebra_overhead.python_calls("outer()", ns, runs=3) == 5


def test_algebra_overhead_counts_calls() -> None:
    """``algebra_overhead.py --calls --filter lerp``: the calls of the tclass and
    hand-written statements (one: the fused kernel) of the cases named so."""
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "algebra_overhead.py"), "--calls", "--filter", "lerp"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (row,) = [line for line in result.stdout.splitlines() if line.startswith("td.lerp_")]
    tclass_calls, *_, hand_calls = row.split()[-3:]
    assert int(hand_calls) == 1
    assert int(tclass_calls) > 1
    assert "td + 1" not in result.stdout


@pytest.mark.parametrize("case", algebra_cases.algebra_cases(), ids=lambda case: case.name)
def test_algebra_cases_on_one_element_tensors_match_the_baseline(case: Any) -> None:
    """The trees ``algebra_overhead.py`` times: the same statements and results."""
    _check(case, lambda peer: algebra_cases.namespace(peer, tiny=True), peer=None)


def test_checked_benchmark_quick_mode_runs() -> None:
    """``benchmarks/checked.py --quick``: every implementation of the three-record
    contract runs (jaxtyped + beartype where installed) and the table says so."""
    out = quick_output("checked.py", timeout=300)
    assert_rows(out, ("| checked |", "| checked, off |", "| by hand |", "target: checked <= 2 us"))
    if importlib.util.find_spec("beartype") and importlib.util.find_spec("jaxtyping"):
        assert "| jaxtyped + beartype |" in out
