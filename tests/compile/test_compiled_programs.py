"""Programs new users compile (session 26's nu26d pass), each the smallest form of what
broke the graph: ``torch.compile(fullgraph=True, dynamic=True)`` with the ``eager``
backend (Dynamo's trace is what these check), results against eager."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
import torch

import tclass

pytestmark = [
    pytest.mark.compile,
    # inductor's first compile in a process imports a module that warns so
    pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"),
]

dynamo = pytest.importorskip("torch._dynamo")


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Any:
    dynamo.reset()
    yield
    dynamo.reset()


@tclass.tensorclass
class Rec:
    obs: torch.Tensor
    reward: torch.Tensor


@tclass.tensorclass
class Bounded:
    obs: Annotated[torch.Tensor, tclass.Spec("4", torch.float32, ge=0)]


def _rec(n: int) -> Rec:
    return Rec(obs=torch.arange(4.0 * n).view(n, 4), reward=torch.arange(1.0 * n), batch_size=[n])


def test_a_python_float_argument_is_a_symbolic_float_in_the_arithmetic() -> None:
    """Under ``dynamic=True`` a float argument reaches the trace as a symbolic float,
    whose ``__class__`` Dynamo cannot read: the flat arithmetic of a record or a
    TensorDict broke the graph there (the peer compiles it)."""

    def fn(rec: Any, td: Any, x: float) -> Any:
        return rec + x, td * x, td[0] - x

    compiled = torch.compile(fn, fullgraph=True, dynamic=True, backend="eager")
    for n, x in ((10, 1.5), (17, 0.25)):
        rec = _rec(n)
        td = tclass.TensorDict(a=torch.ones(n, 2) * 3, batch_size=[n])
        got, expected = compiled(rec, td, x), fn(rec, td, x)
        for g, e in zip(got, expected, strict=True):
            assert type(g) is type(e) and g.batch_size == e.batch_size
            assert (g == e).all()
    assert torch.equal(got[0].obs, torch.arange(4.0 * 17).view(17, 4) + 0.25)


def test_a_constrained_record_built_in_compiled_code_checks_its_values_there() -> None:
    """Building a record whose field bounds its values: eager reads the values (an
    ``.item()``, which breaks a graph); traced, each constraint is an assertion in the
    graph, raised when the compiled code runs on a value that breaks it."""

    def build(o: torch.Tensor) -> Bounded:
        return Bounded(obs=o, batch_size=[o.shape[0]])

    compiled = torch.compile(build, fullgraph=True, dynamic=True, backend="eager")
    for n in (10, 17):
        good = torch.arange(4.0 * n).view(n, 4)
        assert torch.equal(compiled(good).obs, good)
    bad = torch.arange(4.0 * 12).view(12, 4) - 1
    with pytest.raises(RuntimeError, match=r"Bounded\.obs holds a value that breaks ge=0"):
        compiled(bad)
    with pytest.raises(tclass.errors.FieldSpecError, match="obs"):
        build(bad)  # eager: the error that names the index and the value


@tclass.tensorclass
class Tagged:
    x: torch.Tensor
    s: str


def _grown(r: Any) -> tuple[Any, ...]:
    stacked = torch.stack([r, r])
    return stacked, r.unsqueeze(1), r.expand(2, r.shape[0]), torch.stack([stacked, stacked])


def test_a_str_field_grown_into_a_stack_does_not_tie_the_graph_to_the_batch_size() -> None:
    """Stacking, unsqueezing or expanding a record with a ``str`` field makes the value
    a stack over the new batch: held as ``[value] * n`` (and the parts' batch sizes
    compared in a set), Dynamo specialized on ``n`` and compiled again for every batch
    size (4 graphs for 4 sizes). The value is now held once until read: one graph, as
    the peer's (which holds one value per member)."""
    from torch._dynamo.testing import CompileCounter

    counter = CompileCounter()
    compiled = torch.compile(_grown, backend=counter, dynamic=True, fullgraph=True)
    for n in (5, 7):  # a second batch size: no second graph
        rec = Tagged(x=torch.arange(3.0 * n).view(n, 3), s="hi", batch_size=[n])
        for got, expected in zip(compiled(rec), _grown(rec), strict=True):
            assert got.batch_size == expected.batch_size and torch.equal(got.x, expected.x)
            assert got.s == expected.s and got[-1].s == expected[-1].s
            assert str(got.s).count("'hi'") == got.numel()  # the value in every element
    assert counter.frame_count == 1


def _expanded_stacks(r: Any) -> tuple[Any, ...]:
    n = r.shape[0]
    return r.unsqueeze(0).expand(2, n), r.expand(2, n), r.unsqueeze(1).expand(n, 3)


def _assert_same_values(got: Any, expected: Any) -> None:
    for g, e in zip(got, expected, strict=True):
        assert g.batch_size == e.batch_size and torch.equal(g.x, e.x)
        for index in (-1, 0, (0, 1), (-1, -1)):
            assert type(g[index].s) is type(e[index].s), index
            assert g[index].s == e[index].s, index


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_compiled_expand_of_a_value_stack_keeps_its_stack_dims(backend: str) -> None:
    """Expanding a stack of Python values nests it along the new dims, as the peer's
    stack of stacks: an index that removes every stack dim gives the one value back.
    Compiled, the one-value stack was filled without its stack dims, so
    ``r.unsqueeze(0).expand(2, n)[-1].s`` was a list of ``n`` values, not ``"a"``."""
    compiled = torch.compile(_expanded_stacks, fullgraph=True, dynamic=True, backend=backend)
    for n in (5, 7):
        r = Tagged(x=torch.arange(3.0 * n).view(n, 3), s="a", batch_size=[n])
        got, expected = compiled(r), _expanded_stacks(r)
        assert got[0][-1].s == expected[0][-1].s == "a"
        _assert_same_values(got, expected)


def _labelled(n: int) -> Any:
    """``n`` records stacked from rows with different labels: a stack of ``str`` values."""
    rows = [Tagged(x=torch.full((3,), float(i)), s=f"l{i % 3}", batch_size=[]) for i in range(n)]
    return torch.stack(rows)


def _label_ops(r: Any) -> tuple[Any, ...]:
    n = r.shape[0]
    return (
        r[1:],
        r[torch.tensor([0, 2, 1])],
        r.unsqueeze(0).expand(2, n),
        torch.stack([r, r], 1),
        torch.cat([r, r[:2]]),
        r * 2,
        r.clone(),
    )


def test_a_stack_of_different_str_values_compiles_once_for_every_batch_size() -> None:
    """Records stacked from rows with different labels hold a list of ``str`` values:
    reading it (to index, expand, stack, clone it, or to carry it through ``r * 2``)
    tied the graph to its length, so each batch size compiled again (the peer's too),
    and an index by a tensor or an expand broke the graph. Traced, the ops now work on
    a tensor of element numbers, and the values are picked from the list when first
    read, after the graph: one graph (inductor), eager's values and stack dims (an
    index that removes every stack dim gives one value)."""
    from torch._dynamo.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("inductor")
    compiled = torch.compile(_label_ops, backend=counter, dynamic=True, fullgraph=True)
    for n in (5, 7, 9):
        r = _labelled(n)
        for got, expected in zip(compiled(r), _label_ops(r), strict=True):
            assert got.batch_size == expected.batch_size and torch.equal(got.x, expected.x)
            assert got.s == expected.s
            for index in (-1, 0, (0, 1), (-1, -1)):
                if len(index if isinstance(index, tuple) else (index,)) <= got.batch_dims:
                    assert type(got[index].s) is type(expected[index].s), index
                    assert got[index].s == expected[index].s, index
    assert counter.frame_count == 1
    expanded = compiled(r)[2]
    assert expanded[-1, 0].s == "l0" and expanded[0].s == r.s  # an int per stack dim: one value
