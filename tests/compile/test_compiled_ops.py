"""The operations users compile (``benchmarks/compile_cases.py``), each under
``torch.compile(fullgraph=True, dynamic=True)``: no graph break (``fullgraph`` raises at
the first one), the results of eager at every batch size, and one graph for all batch
sizes (a second cache entry is a recompilation).

Every case compiles with the ``aot_eager`` backend (Dynamo's graph, functionalized and
run by AOTAutograd, without code generation); ``INDUCTOR`` names the few also compiled
with inductor, and ``TCLASS_COMPILE=full`` compiles every case with inductor.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
import torch

import tclass

import compile_cases
from compile_cases import CompileCase, Lib

pytestmark = [
    pytest.mark.compile,
    # inductor's first compile in a process imports a module that warns so
    pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"),
]

dynamo = pytest.importorskip("torch._dynamo")
from torch._dynamo.eval_frame import _debug_get_cache_entry_list  # noqa: E402

FULL = os.environ.get("TCLASS_COMPILE", "") == "full"
ROWS = (10, 17, 26)  # batch sizes: none 0 or 1 (specialized), none a feature dim
CASES = {case.name: case for case in compile_cases.compile_cases()}


def _backends(name: str) -> list[str]:
    if FULL:
        return ["inductor"]
    return ["aot_eager", "inductor"] if name in compile_cases.INDUCTOR else ["aot_eager"]


PARAMS = [
    pytest.param(name, backend, id=f"{name}-{backend}")
    for name in CASES
    for backend in _backends(name)
]


def assert_same(got: Any, expected: Any, path: str = "result") -> None:
    """``got`` (a compiled result) holds what ``expected`` (eager's) holds: the same
    type, batch size, keys, dtypes and values, at every level."""
    assert type(got) is type(expected), f"{path}: {type(got)} != {type(expected)}"
    if isinstance(expected, torch.Tensor):
        assert got.dtype == expected.dtype and got.shape == expected.shape, path
        torch.testing.assert_close(got, expected, msg=lambda m: f"{path}: {m}")
    elif tclass.is_tensor_collection(expected):
        assert got.batch_size == expected.batch_size, path
        mine = dict(got.items(include_nested=True, leaves_only=True))
        theirs = dict(expected.items(include_nested=True, leaves_only=True))
        assert mine.keys() == theirs.keys(), path
        for key, value in theirs.items():
            assert_same(mine[key], value, f"{path}[{key!r}]")
        if tclass.is_tensorclass(expected):  # its Python values too
            for field in dataclasses.fields(expected):
                value = getattr(expected, field.name)
                if not tclass.is_tensor_collection(value) and not isinstance(value, torch.Tensor):
                    assert getattr(got, field.name) == value, f"{path}.{field.name}"
    elif isinstance(expected, dict):
        assert got.keys() == expected.keys(), path
        for key, value in expected.items():
            assert_same(got[key], value, f"{path}[{key!r}]")
    else:
        assert got == expected, path


def cache_entries(fn: Any) -> int:
    """How many graphs torch.compile keeps for ``fn`` (more than one: it recompiled)."""
    return len(_debug_get_cache_entry_list(fn.__code__))


def mro_guards(fn: Any) -> list[str]:
    """The guards of ``fn``'s graph that a class attribute is absent from a class of an
    input's MRO: one per class between the instance's and the one defining what the
    trace read; none when the collection classes hold what they inherit
    (``tclass/_base/_inline.py``)."""
    guards = str(_debug_get_cache_entry_list(fn.__code__)[0].guard_manager).splitlines()
    return [line.strip() for line in guards if "DICT_CONTAINS" in line and "__mro__" in line]


def run_compiled(case: CompileCase, lib: Lib, backend: str) -> Any:
    """Compiles the case once and runs it at every batch size of ``ROWS``, checking each
    result against eager; returns the compiled function."""
    fn = compile_cases.bound(case, lib)
    compiled = torch.compile(fn, fullgraph=True, dynamic=True, backend=backend)
    with dynamo.config.patch(capture_dynamic_output_shape_ops=case.data_dependent):
        for rows in ROWS:
            expected = fn(*case.inputs(lib, rows))
            assert_same(compiled(*case.inputs(lib, rows)), expected, f"{case.name} at {rows}")
    return fn


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Any:
    dynamo.reset()
    yield
    dynamo.reset()


@pytest.mark.parametrize(("name", "backend"), PARAMS)
def test_compiles_whole_matches_eager_and_keeps_one_graph(name: str, backend: str) -> None:
    fn = run_compiled(CASES[name], compile_cases.tclass_lib(), backend)
    assert cache_entries(fn) == 1, f"{name}: recompiled when only the batch size changed"
    assert mro_guards(fn) == []


# --- the harness catches what it is for -------------------------------------------------

_PINNED = {10: 1.0}  # a dict looked up by a batch size pins that size


def _breaks(lib: Lib, td: Any) -> Any:
    out = td * 2
    dynamo.graph_break()
    return out


def _pins(lib: Lib, td: Any) -> Any:
    return td["obs"] * _PINNED.get(td.batch_size[0], 2.0)


def _differs(lib: Lib, td: Any) -> Any:
    return td["obs"] + (1.0 if torch.compiler.is_compiling() else 0.0)


def _case(name: str, body: Any) -> CompileCase:
    return CompileCase(name, body, lambda lib, rows: (compile_cases._td(lib, rows),))


def test_a_graph_break_fails_the_case() -> None:
    with pytest.raises(dynamo.exc.Unsupported):
        run_compiled(_case("breaks", _breaks), compile_cases.tclass_lib(), "eager")


def test_a_pinned_batch_size_counts_as_a_recompilation() -> None:
    fn = run_compiled(_case("pins", _pins), compile_cases.tclass_lib(), "eager")
    assert cache_entries(fn) == len(ROWS)


def test_mro_guards_finds_the_lookups_of_a_deep_class() -> None:
    """A subclass of a subclass: ``items`` found two classes down its MRO, a compiled
    ``td.items()`` guards its absence from the class between."""

    class Deep(tclass.TensorDict):
        pass

    class Deeper(Deep):
        pass

    lib = dataclasses.replace(compile_cases.tclass_lib(), TensorDict=Deeper)
    case = CompileCase("deeper", compile_cases.td_items, lambda lib, rows: (_deep(Deeper, rows),))
    fn = run_compiled(case, lib, "eager")
    assert any("'items'" in line for line in mro_guards(fn)), mro_guards(fn)


def _deep(cls: type, rows: int) -> Any:
    return cls({"a": torch.zeros(rows, 2), "b": torch.ones(rows)}, batch_size=[rows])


def test_a_result_unlike_eager_fails_the_case() -> None:
    with pytest.raises(AssertionError, match="differs at 10"):
        run_compiled(_case("differs", _differs), compile_cases.tclass_lib(), "eager")


@pytest.mark.parametrize(
    ("got", "expected", "match"),
    [
        (tclass.TensorDict(a=torch.zeros(2), batch_size=[2]), torch.zeros(2), "result"),
        (
            tclass.TensorDict(a=torch.zeros(2)),
            tclass.TensorDict(a=torch.zeros(2), batch_size=[2]),
            "result",
        ),
        (tclass.TensorDict(a=torch.zeros(2)), tclass.TensorDict(b=torch.zeros(2)), "result"),
        (tclass.TensorDict(a=torch.zeros(2)), tclass.TensorDict(a=torch.ones(2)), r"\['a'\]"),
        (torch.zeros(2, dtype=torch.float64), torch.zeros(2), "result"),
        ({"a": torch.zeros(1)}, {"a": torch.ones(1)}, r"\['a'\]"),
    ],
)
def test_assert_same_tells_results_apart(got: Any, expected: Any, match: str) -> None:
    with pytest.raises(AssertionError, match=match):
        assert_same(got, expected)


def test_assert_same_compares_a_records_python_values() -> None:
    named = compile_cases.tclass_lib().Named
    a = named(obs=torch.zeros(2, 4), env="pong", batch_size=[2])
    b = named(obs=torch.zeros(2, 4), env="breakout", batch_size=[2])
    assert_same(a, a.clone())
    with pytest.raises(AssertionError, match=r"result\.env"):
        assert_same(a, b)


# --- what tclass does under a trace -----------------------------------------------------


def test_a_spec_checked_records_first_row_write_compiles_once() -> None:
    """What a record class's row writes check is worked out when the class is built (a
    first write inside a trace could not: it generates code), so the first write may be
    compiled: one graph, and the check holds for an eager write after."""

    @tclass.tensorclass
    class Checked:
        obs: Annotated[torch.Tensor, tclass.Spec("4", torch.float32)]
        reward: torch.Tensor

    def write(buffer: Any, rows: Any, index: torch.Tensor) -> Any:
        buffer = buffer.clone()
        buffer[index] = rows
        return buffer

    def inputs(n: int) -> tuple[Any, ...]:
        index = torch.arange(n - 3)
        rows = Checked(obs=torch.ones(n - 3, 4), reward=torch.ones(n - 3), batch_size=[n - 3])
        return Checked(obs=torch.zeros(n, 4), reward=torch.zeros(n), batch_size=[n]), rows, index

    compiled = torch.compile(write, fullgraph=True, dynamic=True, backend="eager")
    for rows in ROWS:
        buffer, new, index = inputs(rows)
        out = compiled(buffer, new, index)
        assert torch.equal(out.obs[: rows - 3], new.obs) and torch.equal(
            out.obs[rows - 3 :], buffer.obs[rows - 3 :]
        )
    assert cache_entries(write) == 1
    buffer, _, index = inputs(10)
    bad = tclass.TensorDict(
        obs=torch.ones(7, 4, dtype=torch.float64), reward=torch.ones(7), batch_size=[7]
    )
    with pytest.raises(tclass.errors.FieldSpecError, match="obs"):
        buffer[index] = bad  # eager, the class's check kept
    assert Checked.__tclass_info__._row_check is not None


def _graph_inputs(fn: Any, *args: Any) -> tuple[Any, list[str]]:
    """``fn`` compiled and called on ``args``: its result and its graph's inputs."""
    inputs: list[str] = []

    def backend(gm: torch.fx.GraphModule, example: Any) -> Any:
        inputs.extend(node.name for node in gm.graph.nodes if node.op == "placeholder")
        return gm.forward

    out = torch.compile(fn, fullgraph=True, dynamic=True, backend=backend)(*args)
    return out, inputs


def test_records_added_compile_to_a_graph_of_their_tensors_only() -> None:
    """``rec + rec`` over one batch size: the graph takes the tensors and their sizes, as
    the same addition written on dicts does; the batch sizes (ints on the records) are
    compared through the tensors, not taken in as more inputs."""
    lib = compile_cases.tclass_lib()
    a, b = compile_cases._rec(lib, 12), compile_cases._rec(lib, 12, seed=1)
    out, inputs = _graph_inputs(lambda x, y: x + y, a, b)
    assert_same(out, a + b)
    assert not [name for name in inputs if "batch_size" in name], inputs
    assert len(inputs) == 9, inputs  # 6 tensors; rows, obs and action features
    # Over another batch size (a broadcast), the walk does it: the result grows.
    one = compile_cases._rec(lib, 1, seed=2)
    dynamo.reset()
    grown, _ = _graph_inputs(lambda x, y: x + y, a, one)
    assert_same(grown, a + one)
    assert grown.batch_size == (12,)


def test_importing_tclass_leaves_dynamo_to_the_first_compile() -> None:
    """tests/project checks ``import tclass`` alone; the tracing test tclass uses
    under compile (``_core._tracing``) is a plain call that imports nothing either."""
    script = (
        "import sys, tclass; from tclass._core._tracing import tracing; "
        "assert tracing() is False; print('torch._dynamo' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(tclass.__file__).parents[1],
    )
    assert result.stdout.strip() == "False"


def test_split_and_chunk_by_the_batch_size_compile_whole() -> None:
    """``td.split([2, td.shape[0] - 2])`` and ``td.chunk(2)`` under ``dynamic=True`` take
    symbolic sizes: whole graphs, the pieces of eager (tclass broke the trace on the
    sizes' ``__index__`` and ``divmod``, where the peer compiles)."""
    lib = compile_cases.tclass_lib()

    def pieces(td: Any) -> tuple[Any, ...]:
        return (*td.split([2, td.shape[0] - 2]), *td.chunk(2), td.split(3)[-1])

    compiled = torch.compile(pieces, fullgraph=True, dynamic=True, backend="eager")
    for rows in ROWS:
        td = compile_cases._td(lib, rows)
        for got, expected in zip(compiled(td), pieces(td), strict=True):
            assert_same(got, expected)
