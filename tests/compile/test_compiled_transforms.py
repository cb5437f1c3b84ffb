"""Function transforms and module swaps under ``torch.compile`` (sessions 27's lo27a and
28's lo28a): ``torch.vmap`` rebuilding collections (its inputs, its outputs) and
``to_module`` in compiled code, mostly with the ``eager`` backend (Dynamo's trace is what
these check; a few with inductor), results against eager and the peer's."""

from __future__ import annotations

from typing import Any

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
class Point:
    x: torch.Tensor


def _compiled(fn: Any, **vmap: Any) -> Any:
    return torch.compile(torch.vmap(fn, **vmap), fullgraph=True, dynamic=True, backend="eager")


def _builds(x: torch.Tensor) -> tuple[Any, ...]:
    return (
        tclass.TensorDict(a=x),
        tclass.TensorDict(a=x, batch_size=[3]),
        Point(x=x),
        tclass.TensorDict(n=tclass.TensorDict(b=x, batch_size=[3])),
    )


def _batched_builds(x: torch.Tensor) -> tuple[Any, ...]:
    return tclass.TensorDict(a=x, batch_size=[3]), Point(x=x, batch_size=[3])


@pytest.mark.parametrize(
    ("builds", "vmap", "batches"),
    [
        (_builds, {}, [[7], [7, 3], [7], [7]]),
        (_batched_builds, {"out_dims": 1}, [[3, 7], [3, 7]]),  # among the batch dims
    ],
    ids=["out-dims-0", "out-dims-1"],
)
def test_a_collection_built_inside_compiled_vmap_gets_the_mapped_dim(
    builds: Any, vmap: Any, batches: list[list[int]]
) -> None:
    """vmap gives back the mapped dim in each tensor of a collection its function
    returns; compiled, the pytree code could not read vmap's frames and rebuilt it
    with the batch size it had inside (``[]`` for ``TensorDict(a=x)``: a batch size
    that disagreed with its own tensors). The peer gives ``[7]``, eager and compiled."""
    compiled = _compiled(builds, **vmap)
    for n in (5, 7):  # one graph for both
        x = torch.arange(n * 3.0).view(n, 3)
        for got, expected in zip(compiled(x), torch.vmap(builds, **vmap)(x), strict=True):
            assert type(got) is type(expected)
            assert got.batch_size == expected.batch_size
            assert (got == expected).all()
    assert [list(got.batch_size) for got in compiled(x)] == batches
    for got in compiled(x):
        leaf = next(iter(got.values(include_nested=True, leaves_only=True)))
        assert torch.equal(leaf.reshape(-1).sort().values, torch.arange(21.0))


def test_a_collection_given_to_compiled_vmap_loses_the_mapped_dim_inside() -> None:
    """Inside vmap's function a collection has its batch size without the mapped dim,
    as in eager; compiled, it kept the mapped dim (``len(td.batch_size)`` was 1), unless
    ``in_dims`` maps a dim past the batch dims (the batch size stays, as the peer's)."""

    def dims(td: Any) -> Any:
        return tclass.TensorDict(dims=torch.tensor(float(len(td.batch_size))), a=td["a"] * 2)

    td = tclass.TensorDict(a=torch.arange(15.0).view(5, 3), batch_size=[5])
    got, expected = _compiled(dims)(td), torch.vmap(dims)(td)
    assert got.batch_size == expected.batch_size == torch.Size([5])
    assert torch.equal(got["dims"], torch.zeros(5)) and torch.equal(got["a"], td["a"] * 2)
    dynamo.reset()
    past = _compiled(dims, in_dims=1)(td)  # a feature dim: the batch size [5] stays inside
    assert past.batch_size == torch.Size([3]) and torch.equal(past["dims"], torch.ones(3))
    assert torch.equal(past["a"], td["a"].T * 2)


def test_an_empty_collection_returned_by_compiled_vmap_gets_the_mapped_size() -> None:
    """No tensor carries the mapped dim back: the size is vmap's, inserted at out_dims."""

    def empty(x: torch.Tensor) -> Any:
        return x + 1, tclass.TensorDict(batch_size=[2])

    x = torch.zeros(5, 3)
    for vmap, batch in (({}, [5, 2]), ({"out_dims": 1}, [2, 5])):
        dynamo.reset()
        got = _compiled(empty, **vmap)(x)[1]
        assert got.batch_size == torch.vmap(empty, **vmap)(x)[1].batch_size == torch.Size(batch)


def test_to_module_in_compiled_code_is_traced_whole() -> None:
    """``with params.to_module(module):`` in a compiled function: Dynamo took torch's
    ``nn.parameter.is_lazy`` for an op of the graph, which cannot return a bool, and
    gave up the whole frame (``explain``: no graph; ``fullgraph=True`` raised). The
    peer compiles it in one graph, and now so does tclass; the module's own parameters
    are back afterwards."""
    module = torch.nn.Linear(3, 2)
    own = module.weight.detach().clone()
    # tensors that require grad, as from_module gives them (plain ones are made
    # parameters, so that the module stays trainable: Dynamo breaks the graph there)
    ones = tclass.from_module(module).apply(lambda p: torch.ones_like(p).requires_grad_())

    def call(x: torch.Tensor, params: Any) -> torch.Tensor:
        with params.to_module(module):
            return module(x)

    compiled = torch.compile(call, fullgraph=True, dynamic=True, backend="eager")
    for n in (5, 7):
        x = torch.arange(3.0 * n).view(n, 3)
        expected = x.sum(-1, keepdim=True).expand(n, 2) + 1
        assert torch.equal(compiled(x, ones).detach(), expected)
        assert torch.equal(module.weight, own)
    assert dynamo.explain(call)(x, ones).graph_break_count == 0


def test_to_module_inside_compiled_vmap_runs_an_ensemble_in_one_graph() -> None:
    """An ensemble of ``from_modules`` parameters mapped by vmap, each swapped into the
    module: functorch's test of a wrapped tensor is not traceable (Dynamo gave up the
    frame); compiled, a transform being active stands for it."""
    module = torch.nn.Linear(3, 2)
    members = [torch.nn.Linear(3, 2) for _ in range(4)]
    stacked = tclass.from_modules(*members)

    def ensemble(x: torch.Tensor, params: Any) -> torch.Tensor:
        def one(p: Any, x: torch.Tensor) -> torch.Tensor:
            with p.to_module(module):
                return module(x)

        return torch.vmap(one, (0, None))(params, x)

    x = torch.randn(5, 3)
    got = torch.compile(ensemble, fullgraph=True, backend="eager")(x, stacked)
    torch.testing.assert_close(got, torch.stack([m(x) for m in members]))


def test_apply_inside_compiled_vmap_is_one_graph() -> None:
    """``torch.vmap(lambda td: td.apply(fn))`` compiled: the collection inside kept the
    mapped dim in its batch size (see above), so ``apply`` raised a batch-size error
    whose message Dynamo could not format (a graph break on ``str`` of a symbolic int);
    now one graph, as the peer's."""

    def fn(td: Any) -> Any:
        return torch.vmap(lambda t: t.apply(lambda v: v * 2 + 1))(td)

    td = tclass.TensorDict(a=torch.arange(15.0).view(5, 3), b=torch.arange(5.0), batch_size=[5])
    got = torch.compile(fn, fullgraph=True, dynamic=True, backend="eager")(td)
    assert got.batch_size == torch.Size([5]) and torch.equal(got["a"], td["a"] * 2 + 1)
    assert torch.equal(got["b"], td["b"] * 2 + 1)


def test_to_module_of_plain_tensors_in_compiled_code_is_one_graph() -> None:
    """Plain tensors (no grad) put into parameter slots become parameters over the same
    storage, so that the module stays trainable: made of ``tensor.detach()``, a tensor
    of the graph, Dynamo broke the graph there (``torch.nn.Parameter()`` constructor).
    Made of the tensor given to the compiled function, Dynamo lifts it out of the graph;
    inductor's results are eager's, grad included, and the module gets its own back."""
    module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    own = module[0].weight
    plain = tclass.from_module(module).apply(lambda p: torch.full_like(p, 0.5).detach())

    def call(x: torch.Tensor, params: Any) -> torch.Tensor:
        with params.to_module(module):
            return module(x)

    compiled = torch.compile(call, fullgraph=True, dynamic=True, backend="inductor")
    for n in (5, 7):
        x = torch.arange(3.0 * n).view(n, 3) / 10
        got, expected = compiled(x, plain), call(x, plain)
        torch.testing.assert_close(got, expected)
        assert got.requires_grad and expected.requires_grad
        assert module[0].weight is own and type(own) is torch.nn.Parameter
    assert dynamo.explain(call)(x, plain).graph_break_count == 0


def _feature(w: torch.Tensor, data: Any) -> Any:
    """The batch dims ``data`` has inside vmap, and its tensor times ``w``."""
    x = data["x"] if isinstance(data, tclass.TensorDict) else data.x
    return tclass.TensorDict(dims=torch.tensor(float(data.batch_dims)), y=x * w)


@pytest.mark.parametrize("record", [False, True], ids=["td", "record"])
@pytest.mark.parametrize(
    ("in_dims", "w"),
    [((None, 1), torch.tensor(2.0)), ((0, 1), torch.arange(3.0)), ((-1, 1), torch.arange(3.0))],
    ids=["None-1", "0-1", "neg-1"],
)
def test_compiled_vmap_maps_a_feature_dim_of_one_argument(
    record: bool, in_dims: tuple[int | None, int], w: torch.Tensor
) -> None:
    """``in_dims=(0, 1)``: a feature dim of the collection (its batch size stays inside,
    as the peer's) beside a plain tensor mapped at its dim 0. Compiled, the flat in_dims
    of every argument's leaves were read as the collection's (0: a batch dim), so it
    lost its batch dim inside; each collection now reads its own leaves' in_dims.
    ``(-1, 1)``: the -1 is the tensor's, not the collection's; eager refused it (any
    negative in_dims did), the peer runs it."""
    data: Any = tclass.TensorDict(x=torch.arange(15.0).view(5, 3), batch_size=[5])
    if record:
        data = Point(x=data["x"], batch_size=[5])
    expected = torch.vmap(_feature, in_dims)(w, data)
    backend = "inductor" if in_dims == (0, 1) and not record else "eager"
    got = torch.compile(torch.vmap(_feature, in_dims), fullgraph=True, backend=backend)(w, data)
    assert got.batch_size == expected.batch_size == torch.Size([3])
    assert torch.equal(got["dims"], expected["dims"]) and torch.equal(got["dims"], torch.ones(3))
    torch.testing.assert_close(got["y"], expected["y"])


@pytest.mark.parametrize("in_dims", [(None, -1), (0, -1)], ids=["None-neg", "0-neg"])
def test_compiled_vmap_refuses_a_negative_in_dims_past_the_batch_as_eager(
    in_dims: tuple[int | None, int],
) -> None:
    """A negative ``in_dims`` of a collection that reaches past its batch dims (``-1``
    counts from each tensor's last dim): eager refuses it; compiled, it mapped the
    feature dim. Now the same ``DimError`` (Dynamo runs the frame eagerly to raise it;
    with ``fullgraph=True`` its error names it)."""
    data = tclass.TensorDict(x=torch.arange(15.0).view(5, 3), batch_size=[5])
    w = torch.arange(3.0) if in_dims[0] == 0 else torch.tensor(2.0)
    match = r"torch.vmap mapped dim 1 of 'x' of a collection of batch size \[5\]"
    with pytest.raises(tclass.errors.DimError, match=match):
        torch.vmap(_feature, in_dims)(w, data)
    with pytest.raises(tclass.errors.DimError, match=match):
        torch.compile(torch.vmap(_feature, in_dims), dynamic=True, backend="eager")(w, data)
    dynamo.reset()
    with pytest.raises(dynamo.exc.Unsupported, match="Observed exception") as raised:
        torch.compile(torch.vmap(_feature, in_dims), fullgraph=True, backend="eager")(w, data)
    assert "DimError" in str(raised.value)
