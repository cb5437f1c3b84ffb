"""Torch functions called on collections (``torch.exp(td)``, ``torch.where(mask, td, 0)``,
``torch.flip(td, (0,))``, ``F.mse_loss(td, target)``, ``torch.autograd.grad``...).

``CALLS`` holds, for every torch function the peer's ``__torch_function__`` answers (and
a few more), a call on a collection and what it must give leaf by leaf; each is checked
on a TensorDict, a tensorclass in both declaration forms and, where the result keeps the
members apart, a lazy stack. With the peer installed, the table is checked to cover every
function the peer handles.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import tclass
from tclass import LazyStackedTensorDict, TensorClass, TensorDict, tensorclass

from strategies import equal, leaf_items  # noqa: E402

MASK = torch.tensor([[True, False, True], [False, False, True]])
INDEX = torch.tensor([[0, 0], [1, 2]])


@dataclass(frozen=True)
class Call:
    """``run(x, y)`` on collections of batch [2, 3] gives ``leaf(a, b, batch_dims)`` for
    every pair of leaves (``random``: only shapes and dtypes are compared)."""

    function: Callable[..., Any]
    run: Callable[[Any, Any], Any]
    leaf: Callable[[torch.Tensor, torch.Tensor, int], Any]
    random: bool = False
    keeps_members: bool = True


def _unary(function: Callable[..., Any]) -> Call:
    return Call(function, lambda x, y: function(x), lambda a, b, nb: function(a))


def _inplace(function: Callable[..., Any], reference: Callable[..., Any]) -> Call:
    return Call(function, lambda x, y: function(x.clone()), lambda a, b, nb: reference(a))


def _pad(t: torch.Tensor, leaf: torch.Tensor, nb: int) -> torch.Tensor:
    return t.reshape(t.shape + (1,) * (leaf.ndim - nb))


def _gather(a: torch.Tensor, nb: int) -> torch.Tensor:
    index = _pad(INDEX, a, nb).expand(INDEX.shape + a.shape[nb:])
    return torch.gather(a, 1, index)


def _roll_flat(a: torch.Tensor, nb: int) -> torch.Tensor:
    flat = a.reshape(-1, *a.shape[nb:])
    return flat.roll(1, 0).reshape(a.shape)


def _tile(a: torch.Tensor, nb: int) -> torch.Tensor:
    return a.repeat(2, 1, *([1] * (a.ndim - nb)))


UNARY = [
    torch.abs, torch.acos, torch.asin, torch.atan, torch.ceil, torch.cos, torch.cosh,
    torch.erf, torch.erfc, torch.exp, torch.expm1, torch.floor, torch.frac, torch.lgamma,
    torch.log, torch.log10, torch.log1p, torch.log2, torch.neg, torch.reciprocal, torch.round,
    torch.sigmoid, torch.sign, torch.sin, torch.sinh, torch.sqrt, torch.tan, torch.tanh,
    torch.trunc, torch.rsqrt, torch.isfinite, torch.isnan, torch.isneginf, torch.isposinf,
    torch.isreal, torch.isinf, torch.nan_to_num, torch.clone,
]  # fmt: skip
INPLACE = [
    (torch.abs_, torch.abs), (torch.acos_, torch.acos), (torch.asin_, torch.asin),
    (torch.atan_, torch.atan), (torch.ceil_, torch.ceil), (torch.cos_, torch.cos),
    (torch.cosh_, torch.cosh), (torch.erf_, torch.erf), (torch.erfc_, torch.erfc),
    (torch.exp_, torch.exp), (torch.expm1_, torch.expm1), (torch.floor_, torch.floor),
    (torch.frac_, torch.frac), (torch.log_, torch.log), (torch.log10_, torch.log10),
    (torch.log1p_, torch.log1p), (torch.log2_, torch.log2), (torch.neg_, torch.neg),
    (torch.reciprocal_, torch.reciprocal), (torch.round_, torch.round),
    (torch.sigmoid_, torch.sigmoid), (torch.sin_, torch.sin), (torch.sinh_, torch.sinh),
    (torch.sqrt_, torch.sqrt), (torch.tan_, torch.tan), (torch.tanh_, torch.tanh),
    (torch.trunc_, torch.trunc), (torch.clamp_max_, lambda a: a.clamp_max(0.5)),
    (torch.clamp_min_, lambda a: a.clamp_min(0.5)), (torch.rsqrt_, torch.rsqrt),
]  # fmt: skip

_ELEMENTWISE = {*UNARY, *(function for function, _ in INPLACE)}

CALLS: list[Call] = [
    *map(_unary, UNARY),
    *(
        Call(f, lambda x, y, f=f: f(x.clone(), 0.5), lambda a, b, nb, r=r: r(a))
        if f in (torch.clamp_max_, torch.clamp_min_)
        else _inplace(f, r)
        for f, r in INPLACE
    ),
    Call(torch.add, lambda x, y: torch.add(x, y, alpha=2), lambda a, b, nb: a.add(b, alpha=2)),
    Call(torch.sub, lambda x, y: torch.sub(x, 1.5), lambda a, b, nb: a - 1.5),
    Call(torch.rsub, lambda x, y: torch.rsub(x, 2), lambda a, b, nb: 2 - a),
    Call(torch.mul, lambda x, y: torch.mul(2, x), lambda a, b, nb: 2 * a),
    Call(torch.div, lambda x, y: torch.div(x, y), lambda a, b, nb: a / b),
    Call(torch.pow, lambda x, y: torch.pow(x.abs(), 0.5), lambda a, b, nb: a.abs() ** 0.5),
    Call(torch.maximum, lambda x, y: torch.maximum(x, y), lambda a, b, nb: torch.maximum(a, b)),
    Call(torch.minimum, lambda x, y: torch.minimum(y, x), lambda a, b, nb: torch.minimum(b, a)),
    Call(torch.clamp, lambda x, y: torch.clamp(x, -0.5, 0.5), lambda a, b, nb: a.clamp(-0.5, 0.5)),
    Call(torch.clamp_max, lambda x, y: torch.clamp_max(x, 0.1), lambda a, b, nb: a.clamp_max(0.1)),
    Call(torch.clamp_min, lambda x, y: torch.clamp_min(x, y), lambda a, b, nb: a.clamp_min(b)),
    Call(torch.lerp, lambda x, y: torch.lerp(x, y, 0.3), lambda a, b, nb: torch.lerp(a, b, 0.3)),
    Call(
        torch.addcmul,
        lambda x, y: torch.addcmul(x, y, y, value=2),
        lambda a, b, nb: torch.addcmul(a, b, b, value=2),
    ),
    Call(
        torch.addcdiv,
        lambda x, y: torch.addcdiv(x, y, y.abs() + 1),
        lambda a, b, nb: torch.addcdiv(a, b, b.abs() + 1),
    ),
    Call(
        torch.bitwise_and,
        lambda x, y: torch.bitwise_and(x > 0, y > 0),
        lambda a, b, nb: (a > 0) & (b > 0),
    ),
    Call(
        torch.logical_and,
        lambda x, y: torch.logical_and(x, y > 0),
        lambda a, b, nb: a.logical_and(b > 0),
    ),
    Call(
        torch.where,
        lambda x, y: torch.where(MASK, x, y),
        lambda a, b, nb: torch.where(_pad(MASK, a, nb), a, b),
    ),
    Call(
        torch.where,
        lambda x, y: torch.where(x > 0, x, 0.0),
        lambda a, b, nb: torch.where(a > 0, a, 0.0),
    ),
    Call(torch.mean, lambda x, y: torch.mean(x, 0), lambda a, b, nb: a.mean(0)),
    Call(torch.sum, lambda x, y: torch.sum(x), lambda a, b, nb: a.sum(), keeps_members=False),
    Call(
        torch.std,
        lambda x, y: torch.std(x, 1, correction=0),
        lambda a, b, nb: a.std(1, correction=0),
    ),
    Call(
        torch.var,
        lambda x, y: torch.var(x, (0, 1)),
        lambda a, b, nb: a.var((0, 1)),
        keeps_members=False,
    ),
    Call(torch.zeros_like, lambda x, y: torch.zeros_like(x), lambda a, b, nb: torch.zeros_like(a)),
    Call(
        torch.ones_like,
        lambda x, y: torch.ones_like(x, dtype=torch.int64),
        lambda a, b, nb: torch.ones_like(a, dtype=torch.int64),
    ),
    Call(
        torch.full_like,
        lambda x, y: torch.full_like(x, 7.0),
        lambda a, b, nb: torch.full_like(a, 7.0),
    ),
    Call(torch.empty_like, lambda x, y: torch.empty_like(x), lambda a, b, nb: a, random=True),
    Call(torch.rand_like, lambda x, y: torch.rand_like(x), lambda a, b, nb: a, random=True),
    Call(
        torch.randn_like,
        lambda x, y: torch.randn_like(x, dtype=torch.float64),
        lambda a, b, nb: a.double(),
        random=True,
    ),
    Call(torch.stack, lambda x, y: torch.stack([x, y], 1), lambda a, b, nb: torch.stack([a, b], 1)),
    Call(torch.cat, lambda x, y: torch.cat([x, y], 0), lambda a, b, nb: torch.cat([a, b], 0)),
    Call(torch.unsqueeze, lambda x, y: torch.unsqueeze(x, 1), lambda a, b, nb: a.unsqueeze(1)),
    Call(torch.squeeze, lambda x, y: torch.squeeze(x[:1], 0), lambda a, b, nb: a[:1].squeeze(0)),
    Call(torch.permute, lambda x, y: torch.permute(x, (1, 0)), lambda a, b, nb: a.transpose(0, 1)),
    Call(
        torch.transpose, lambda x, y: torch.transpose(x, 0, 1), lambda a, b, nb: a.transpose(0, 1)
    ),
    Call(torch.swapaxes, lambda x, y: torch.swapaxes(x, 0, 1), lambda a, b, nb: a.transpose(0, 1)),
    Call(torch.swapdims, lambda x, y: torch.swapdims(x, 1, 0), lambda a, b, nb: a.transpose(0, 1)),
    Call(torch.movedim, lambda x, y: torch.movedim(x, 1, 0), lambda a, b, nb: a.transpose(0, 1)),
    Call(torch.moveaxis, lambda x, y: torch.moveaxis(x, 0, -1), lambda a, b, nb: a.transpose(0, 1)),
    Call(
        torch.reshape,
        lambda x, y: torch.reshape(x, (3, 2)),
        lambda a, b, nb: a.reshape(3, 2, *a.shape[nb:]),
        keeps_members=False,
    ),
    Call(
        torch.flatten,
        lambda x, y: torch.flatten(x),
        lambda a, b, nb: a.flatten(0, 1),
        keeps_members=False,
    ),
    Call(
        torch.unflatten,
        lambda x, y: torch.unflatten(x, 1, (3, 1)),
        lambda a, b, nb: a.unflatten(1, (3, 1)),
    ),
    Call(torch.flip, lambda x, y: torch.flip(x, (1,)), lambda a, b, nb: a.flip(1)),
    Call(torch.fliplr, lambda x, y: torch.fliplr(x), lambda a, b, nb: a.flip(1)),
    Call(torch.flipud, lambda x, y: torch.flipud(x), lambda a, b, nb: a.flip(0)),
    Call(torch.roll, lambda x, y: torch.roll(x, 1, 1), lambda a, b, nb: a.roll(1, 1)),
    Call(
        torch.roll,
        lambda x, y: torch.roll(x, 1),
        lambda a, b, nb: _roll_flat(a, nb),
        keeps_members=False,
    ),
    Call(
        torch.rot90,
        lambda x, y: torch.rot90(x),
        lambda a, b, nb: a.rot90(1, (0, 1)),
        keeps_members=False,
    ),
    Call(torch.narrow, lambda x, y: torch.narrow(x, 1, 1, 2), lambda a, b, nb: a.narrow(1, 1, 2)),
    Call(torch.gather, lambda x, y: torch.gather(x, 1, INDEX), lambda a, b, nb: _gather(a, nb)),
    Call(
        torch.masked_select,
        lambda x, y: torch.masked_select(x, MASK),
        lambda a, b, nb: a[MASK],
        keeps_members=False,
    ),
    Call(
        torch.repeat_interleave,
        lambda x, y: torch.repeat_interleave(x, 2, dim=1),
        lambda a, b, nb: a.repeat_interleave(2, 1),
    ),
    Call(
        torch.tile,
        lambda x, y: torch.tile(x, (2, 1)),
        lambda a, b, nb: _tile(a, nb),
        keeps_members=False,
    ),
    Call(
        torch.broadcast_to,
        lambda x, y: torch.broadcast_to(x, (4, 2, 3)),
        lambda a, b, nb: a.expand(4, *a.shape),
    ),
    Call(torch.atleast_1d, lambda x, y: torch.atleast_1d(x), lambda a, b, nb: a),
    Call(torch.atleast_2d, lambda x, y: torch.atleast_2d(x), lambda a, b, nb: a),
    Call(torch.atleast_3d, lambda x, y: torch.atleast_3d(x), lambda a, b, nb: a.unsqueeze(0)),
    Call(torch.unbind, lambda x, y: torch.unbind(x, 1)[2], lambda a, b, nb: a[:, 2]),
    Call(torch.split, lambda x, y: torch.split(x, 2, 1)[1], lambda a, b, nb: a[:, 2:]),
    Call(torch.chunk, lambda x, y: torch.chunk(x, 2, 0)[0], lambda a, b, nb: a[:1]),
    Call(
        torch.tensor_split, lambda x, y: torch.tensor_split(x, [1], 1)[1], lambda a, b, nb: a[:, 1:]
    ),
    Call(
        F.mse_loss,
        lambda x, y: F.mse_loss(x, y),
        lambda a, b, nb: F.mse_loss(a, b),
        keeps_members=False,
    ),
    Call(
        F.l1_loss,
        lambda x, y: F.l1_loss(x, y, reduction="none"),
        lambda a, b, nb: F.l1_loss(a, b, reduction="none"),
    ),
    Call(
        F.smooth_l1_loss,
        lambda x, y: F.smooth_l1_loss(x, y, reduction="sum", beta=0.5),
        lambda a, b, nb: F.smooth_l1_loss(a, b, reduction="sum", beta=0.5),
        keeps_members=False,
    ),
    Call(torch.amax, lambda x, y: torch.amax(x, 1), lambda a, b, nb: a.amax(1)),
    Call(
        torch.prod, lambda x, y: torch.prod(x, 0), lambda a, b, nb: a.prod(0), keeps_members=False
    ),
    Call(torch.cumsum, lambda x, y: torch.cumsum(x, 1), lambda a, b, nb: a.cumsum(1)),
    Call(torch.logsumexp, lambda x, y: torch.logsumexp(x, 1), lambda a, b, nb: a.logsumexp(1)),
    Call(torch.softmax, lambda x, y: torch.softmax(x, 1), lambda a, b, nb: a.softmax(1)),
]


def _pair() -> tuple[TensorDict, TensorDict]:
    g = torch.Generator().manual_seed(11)
    x = TensorDict(
        {"a": torch.randn(2, 3, 4, generator=g), "n": {"c": torch.randn(2, 3, generator=g)}}, [2, 3]
    )
    y = TensorDict(
        {"a": torch.randn(2, 3, 4, generator=g), "n": {"c": torch.randn(2, 3, generator=g)}}, [2, 3]
    )
    return x, y  # fmt: skip


def _check(call: Call, got: Any, x: Any, y: Any) -> None:
    assert not isinstance(got, torch.Tensor)
    for (path, a), (_, b) in zip(leaf_items(x), leaf_items(y)):
        expected = call.leaf(a, b, x.batch_dims)
        value = got.get(path)
        assert isinstance(value, torch.Tensor), path
        if call.random:
            assert value.shape == expected.shape and value.dtype == expected.dtype, path
        else:
            assert equal(value, expected), (call.function.__name__, path)


@pytest.mark.parametrize(
    "call", CALLS, ids=[f"{i}-{c.function.__name__}" for i, c in enumerate(CALLS)]
)
def test_on_tensordicts(call: Call) -> None:
    x, y = _pair()
    got = call.run(x, y)
    assert type(got) is TensorDict
    _check(call, got, x, y)


class Inner(TensorClass):
    c: torch.Tensor


class Rec(TensorClass):
    a: torch.Tensor
    n: Inner
    env: str


@tensorclass
class DInner:
    c: torch.Tensor


@tensorclass
class DRec:
    a: torch.Tensor
    n: DInner
    env: str


@pytest.mark.parametrize(
    "kinds", [(Rec, Inner), (DRec, DInner)], ids=["TensorClass", "@tensorclass"]
)
@pytest.mark.parametrize(
    "call", CALLS, ids=[f"{i}-{c.function.__name__}" for i, c in enumerate(CALLS)]
)
def test_on_records(call: Call, kinds: tuple[type, type]) -> None:
    record_cls, inner_cls = kinds
    x, y = _pair()

    def record(td: TensorDict) -> Any:
        inner = inner_cls(c=td["n", "c"], batch_size=[2, 3])
        return record_cls(a=td["a"], n=inner, env="pong", batch_size=[2, 3])

    got = call.run(record(x), record(y))
    assert type(got) is record_cls and type(got.n) is inner_cls
    env = got._tensordict.get("env")  # one value, or (torch.stack) "pong" per element
    assert env.data == "pong" and env.batch_size == got.batch_size
    _check(call, got, x, y)


@pytest.mark.parametrize(
    "call", [c for c in CALLS if c.keeps_members], ids=lambda c: c.function.__name__
)
def test_on_lazy_stacks(call: Call) -> None:
    x, y = _pair()
    lazy_x = tclass.lazy_stack(list(x.unbind(0)), 0)
    lazy_y = tclass.lazy_stack(list(y.unbind(0)), 0)
    got = call.run(lazy_x, lazy_y)
    assert isinstance(got, (TensorDict, LazyStackedTensorDict))
    if call.function not in _ELEMENTWISE:
        _check(call, got, x, y)
        return
    # A lazy stack runs a function element by element member by member: each member is
    # compared with the function on that member's leaves (the vectorised kernels of cosh,
    # sinh... may round a whole tensor's last bit differently from its rows').
    for member in range(len(lazy_x.tensordicts)):
        _check(call, got[member], x[member], y[member])


def test_torch_where_with_a_collection_condition_on_either_side() -> None:
    x, y = _pair()
    out = torch.where(x > 0, 1.0, y)
    for (path, a), (_, b) in zip(leaf_items(x), leaf_items(y)):
        assert equal(out.get(path), torch.where(a > 0, 1.0, b))


def test_autograd_grad() -> None:
    leaves = {
        "a": torch.ones(2, 3, requires_grad=True),
        "n": {"c": torch.ones(2, requires_grad=True)},
    }
    x = TensorDict(leaves, [2])
    loss = (x * 2).sum()
    grads = torch.autograd.grad(loss, x)
    assert type(grads) is TensorDict
    assert equal(grads["a"], torch.full((2, 3), 2.0)) and equal(
        grads["n", "c"], torch.full((2,), 2.0)
    )
    y = x * 3
    grads = torch.autograd.grad(y, x, torch.ones_like(y))
    assert equal(grads["a"], torch.full((2, 3), 3.0))
    scalar = (x["a"] * 4).sum() + x["n", "c"].sum()
    grads = torch.autograd.grad(scalar, x)
    assert equal(grads["a"], torch.full((2, 3), 4.0)) and equal(grads["n", "c"], torch.ones(2))


def test_autograd_grad_of_collections_and_tensors_together() -> None:
    # The peer takes a collection only with collections on the other side: "only
    # supports TensorDictBase as output" / "as input".
    x = torch.ones(2, 3, requires_grad=True)
    out = TensorDict(a=x * 2, n={"b": x[:, 0] * 3}, batch_size=[2])
    seed = TensorDict(a=torch.ones(2, 3), n={"b": torch.ones(2)}, batch_size=[2])
    (grad,) = torch.autograd.grad(out, [x], seed)
    assert torch.equal(grad, torch.tensor([[5.0, 2.0, 2.0]] * 2))
    td = TensorDict(a=torch.ones(2, requires_grad=True), batch_size=[2])
    both = torch.autograd.grad((td["a"] * x[:, 0]).sum(), (td, x))
    assert type(both[0]) is TensorDict and torch.equal(both[0]["a"], torch.ones(2))
    assert torch.equal(both[1], torch.tensor([[1.0, 0.0, 0.0]] * 2))


def test_functions_not_in_the_table_say_so() -> None:
    x, _ = _pair()
    with pytest.raises(TypeError):
        torch.matmul(x, x)


@pytest.mark.peer
def test_every_function_the_peer_handles_is_covered() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pytest.importorskip("tensordict")
        from tensordict._torch_func import TD_HANDLED_FUNCTIONS
    covered = {call.function for call in CALLS} | {torch.autograd.grad}
    missing = [f.__name__ for f in TD_HANDLED_FUNCTIONS if f not in covered]
    assert not missing


def test_where_and_clamp_into_an_empty_out_give_it_the_entries() -> None:
    td = TensorDict({"a": torch.arange(6.0).reshape(2, 3), "n": {"b": torch.ones(2)}}, [2])
    mask = torch.tensor([True, False])
    out = td.empty()  # no entries: they are set, as the peer's out=
    assert td.where(mask, td.empty(), pad=1, out=out) is out
    assert out["a"].tolist() == [[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]] and out["n", "b"].tolist() == [
        1,
        1,
    ]
    out = td.empty()
    assert td.clamp(0, 2, out=out) is out and torch.equal(out["a"], td["a"].clamp(0, 2))


def test_where_and_gather_take_out_as_the_peer() -> None:
    td = TensorDict({"a": torch.rand(3, 4), "n": {"c": torch.rand(3, 4, 2)}}, [3, 4])
    cond = torch.zeros(3, 4, dtype=torch.bool)
    cond[0] = True
    for other in (td * 2, torch.zeros(())):  # torch itself refuses a number with out=
        out = td.clone().zero_()
        got = torch.where(cond, td, other, out=out)
        assert got is out and torch.equal(out["n", "c"], td.where(cond, other)["n", "c"])
    out = td.clone().zero_()
    half = torch.full((), 0.5)
    assert torch.where(cond, half, td, out=out) is out  # the collection second
    assert torch.equal(out["a"], torch.where(cond, half, td["a"]))
    index = torch.zeros(3, 2, dtype=torch.long)
    out = td.gather(1, index).zero_()
    assert torch.gather(td, 1, index, out=out) is out
    assert torch.equal(out["n", "c"], td["n", "c"][:, :1].expand(3, 2, 2))


def _out_of_where_clamp_norm(td: Any, name: str) -> tuple[Any, Any]:
    """``name``(td, out=...) and the same without out=."""
    mask = torch.tensor([True, False, True])
    if name == "norm":
        return td.norm(out=td.norm().detach().zero_()), td.norm()
    if name == "clamp":
        return td.clamp(-0.5, 0.5, out=td.detach().clone().zero_()), td.clamp(-0.5, 0.5)
    other = td.detach() * 2
    return torch.where(mask, td, other, out=td.detach().clone().zero_()), td.where(mask, other)


@pytest.mark.parametrize("name", ["where", "clamp", "norm"])
def test_out_takes_inputs_that_require_grad_and_records_the_graph(name: str) -> None:
    """As the peer's where / clamp / norm (which compute the result, then write it into
    out): out= runs on inputs that require grad, and a backward through out reaches
    them with the gradient of the result without out=."""
    x = torch.randn(3, 4, requires_grad=True)
    y = torch.randn(3, requires_grad=True)
    td = TensorDict({"a": x, "n": {"b": y}}, [3])
    got, expected = _out_of_where_clamp_norm(td, name)
    assert equal(got.detach(), expected.detach())
    assert got["a"].requires_grad and got["n", "b"].requires_grad
    grads = torch.autograd.grad(got["a"].sum() + got["n", "b"].sum(), (x, y))
    wanted = torch.autograd.grad(expected["a"].sum() + expected["n", "b"].sum(), (x, y))
    assert all(torch.equal(g, w) for g, w in zip(grads, wanted))


def test_out_whose_tensors_are_parameters_takes_the_result_as_its_entries() -> None:
    # Autograd forbids writing into a leaf that requires grad: out's entries become the
    # result's tensors (as the peer's where and norm), the parameter is left as it was.
    td = TensorDict({"a": torch.arange(3.0)}, [3])
    weight = torch.nn.Parameter(torch.zeros(3))
    out = TensorDict({"a": weight}, [3])
    assert td.where(torch.tensor([True, False, True]), -1.0, out=out) is out
    assert out["a"].tolist() == [0.0, -1.0, 2.0] and weight.tolist() == [0.0] * 3
    with torch.no_grad():  # without autograd, written in place as torch's out=
        td.clamp(0.5, 1.5, out=out)
    assert out["a"] is not weight and torch.equal(out["a"], td["a"].clamp(0.5, 1.5))


def test_logsumexp_and_gather_refuse_out_as_torch_kernels_with_grad() -> None:
    # The peer's call torch's out= kernels leaf by leaf: these refuse as torch's.
    td = TensorDict({"a": torch.randn(3, 4, requires_grad=True)}, [3])
    index = torch.zeros(3, dtype=torch.long)
    out = td.detach().clone()
    with pytest.raises(tclass.errors.GradError, match=r"gather\(out=...\).*requires grad"):
        torch.gather(td, 0, index, out=out)
    with pytest.raises(tclass.errors.GradError, match=r"logsumexp\(out=...\)"):
        td.logsumexp(0, out=out[0])
    assert torch.equal(out["a"], td["a"].detach())  # nothing written
    with torch.no_grad():
        assert torch.gather(td, 0, index, out=out) is out


def test_copy_of_tensors_that_require_grad_records_the_graph() -> None:
    # torch's fused copy has no derivative: copy_ of a graph copies tensor by tensor.
    x = torch.randn(3, requires_grad=True)
    dst = TensorDict({"a": torch.zeros(3), "b": torch.zeros(3)}, [3])
    dst.copy_(TensorDict({"a": x * 2, "b": x * 3}, [3]))
    (grad,) = torch.autograd.grad(dst["a"].sum() + dst["b"].sum(), x)
    assert grad.tolist() == [5.0] * 3


@pytest.mark.parametrize(
    "make", [torch.zeros_like, torch.ones_like, lambda x: torch.full_like(x, 2.0)]
)
def test_like_functions_lock_the_result_only_as_a_whole(make: Callable[[Any], Any]) -> None:
    """Found by the differential fuzzer: a nested collection of a locked member of a lazy
    stack came back locked (the function was applied to it as to a collection, and locked
    its result), where the stack and the member results were not (and the peer's are not)."""
    member = TensorDict({"a": torch.ones(2, 3), "n": {"c": torch.ones(2, 1)}}, [2]).lock_()
    lazy = tclass.lazy_stack([member, member.clone()], 0)
    out = make(lazy)
    assert not out.is_locked
    for piece in out.tensordicts:
        assert not piece.is_locked and not piece.get("n").is_locked
    out.tensordicts[0]["n", "d"] = torch.zeros(2)  # writable, as every other result
    assert equal(out.tensordicts[0]["n", "c"], make(torch.ones(2, 1)))
    locked = make(member)  # a locked collection gives a locked result, nested ones too
    assert locked.is_locked and locked.get("n").is_locked
    unlocked = TensorDict({"n": member.get("n")}, [2])  # a locked node under an unlocked one
    assert not make(unlocked).get("n").is_locked


@pytest.mark.parametrize("loss", [F.l1_loss, F.mse_loss, F.smooth_l1_loss])
def test_loss_of_locked_collection_is_unlocked(loss: Callable[..., Any]) -> None:
    """A per-element loss of locked collections is a new collection: unlocked at every
    node, the inputs left locked (as the peer's)."""
    x = TensorDict({"n": {"c": torch.ones(())}, "d": torch.ones(3)}, batch_size=[])
    x.lock_()
    result = loss(x, x * 2, reduction="none")
    assert not result.is_locked and not result["n"].is_locked
    result["e"] = torch.zeros(())  # a new key: the result takes it
    assert x.is_locked and x["n"].is_locked
    assert torch.equal(result["d"], loss(torch.ones(3), torch.full((3,), 2.0), reduction="none"))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_loss_keeps_empty_nested_collections(reduction: str) -> None:
    """A loss keeps an empty nested collection of its input (as the peer's), also where
    the target lacks it (``x * 2`` drops it: the peer's loss fails with a KeyError)."""
    x = TensorDict({"m": {}, "a": torch.ones(3)}, batch_size=[3])
    for target in (x.clone(), x * 2):
        result = F.l1_loss(x, target, reduction=reduction)
        assert list(result.keys()) == ["m", "a"] and result["m"].is_empty()
    assert torch.equal(F.l1_loss(x, x * 2, reduction="sum")["a"], torch.tensor(3.0))
