"""``torch.func`` transforms over every kind of collection (``tests/helpers/collection_kinds``
and the kinds below): ``torch.vmap`` (``in_dims``, ``out_dims``, ``randomness``, nested,
``chunk_size``), ``grad``, ``grad_and_value``, ``jacrev`` and ``vmap`` of ``grad``.

Each case runs on a collection and, as the oracle, on a plain dict of its dense tensors
(what the collection's batch dims mean); the results must agree tensor by tensor. The
comparison with the peer is in ``test_transforms_peer.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass.errors import DimError, HeterogeneousEntryError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.collection_kinds import KINDS, arange  # noqa: E402

vmap = torch.vmap
func = torch.func


def _twice(t: Any) -> Any:
    return t * 2 + 1


def _running(t: Any) -> torch.Tensor:
    return t.get("a").cumsum(0)  # along the first dim vmap leaves: wrong if it slices wrong


def _drawn(t: Any) -> Any:
    return t * torch.rand(())  # one draw per lane with randomness="different"


def _drawn_plain(d: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    drawn = torch.rand(())
    return {key: value * drawn for key, value in d.items()}


def _loss(t: Any) -> torch.Tensor:
    return (t.get("a") ** 2).sum()


# name: (the case on a collection, the same on a dict of tensors); each gets a fresh input
CASES: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "vmap": (lambda c: vmap(_twice)(c), lambda d: vmap(_plain(_twice))(d)),
    "vmap in_dims=1": (lambda c: vmap(_twice, (1,))(c), lambda d: vmap(_plain(_twice), (1,))(d)),
    "vmap out_dims=1": (
        lambda c: vmap(_twice, out_dims=1)(c),
        lambda d: vmap(_plain(_twice), out_dims=1)(d),
    ),
    "vmap to a tensor": (lambda c: vmap(_running)(c), lambda d: vmap(_running_plain)(d)),
    "vmap in_dims=1 to a tensor": (
        lambda c: vmap(_running, (1,))(c),
        lambda d: vmap(_running_plain, (1,))(d),
    ),
    "vmap in_dims=None": (
        lambda c: vmap(lambda t, x: t.get("a") * x, (None, 0))(c, torch.arange(5.0)),
        lambda d: vmap(lambda t, x: t["a"] * x, (None, 0))(d, torch.arange(5.0)),
    ),
    "nested vmap": (lambda c: vmap(vmap(_twice))(c), lambda d: vmap(vmap(_plain(_twice)))(d)),
    "nested vmap in_dims=1": (
        lambda c: vmap(vmap(_running), (1,))(c),
        lambda d: vmap(vmap(_running_plain), (1,))(d),
    ),
    "vmap chunk_size=1": (
        lambda c: vmap(_twice, chunk_size=1)(c),
        lambda d: vmap(_plain(_twice), chunk_size=1)(d),
    ),
    "vmap in_dims=1 chunk_size=2": (
        lambda c: vmap(_twice, (1,), chunk_size=2)(c),
        lambda d: vmap(_plain(_twice), (1,), chunk_size=2)(d),
    ),
    "randomness=different": (
        lambda c: vmap(_drawn, randomness="different")(c),
        lambda d: vmap(_drawn_plain, randomness="different")(d),
    ),
    "randomness=same": (
        lambda c: vmap(_drawn, randomness="same")(c),
        lambda d: vmap(_drawn_plain, randomness="same")(d),
    ),
    "grad": (lambda c: func.grad(_loss)(c.float()), lambda d: func.grad(_loss_plain)(_floats(d))),
    "grad_and_value": (
        lambda c: func.grad_and_value(_loss)(c.float()),
        lambda d: func.grad_and_value(_loss_plain)(_floats(d)),
    ),
    "jacrev": (
        lambda c: func.jacrev(lambda t: t.get("a").sum())(c.float()),
        lambda d: func.jacrev(lambda t: t["a"].sum())(_floats(d)),
    ),
    "vmap of grad": (
        lambda c: vmap(func.grad(_loss))(c.float()),
        lambda d: vmap(func.grad(_loss_plain))(_floats(d)),
    ),
}


def _plain(body: Callable[[Any], Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda d: {key: body(value) for key, value in d.items()}


def _running_plain(d: dict[str, torch.Tensor]) -> torch.Tensor:
    return d["a"].cumsum(0)


def _loss_plain(d: dict[str, torch.Tensor]) -> torch.Tensor:
    return (d["a"] ** 2).sum()


def _floats(d: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: value.float() for key, value in d.items()}


# --- the kinds of this file, on top of the shared ones -----------------------------------

_AUTOCAST: dict[str, Any] = {}


def _autocast_record(lib: ModuleType, tmp: Path) -> Any:
    if lib.__name__ not in _AUTOCAST:

        @lib.tensorclass(autocast=True)
        class Cast:
            a: torch.Tensor
            b: torch.Tensor
            n: int

        _AUTOCAST[lib.__name__] = Cast
    cls = _AUTOCAST[lib.__name__]
    return cls(a=arange(2, 3, 4), b=arange(2, 3).long(), n=3, batch_size=[2, 3])


def _records_stacked(lib: ModuleType, tmp: Path) -> Any:
    """A record over a lazy stack (``lazy_stack`` of records), along dim 1."""
    plain = KINDS["plain_record"](lib, tmp)
    return lib.lazy_stack([plain[:, i] + 10.0 * i for i in range(3)], 1)


EXTRA_KINDS = {"autocast_record": _autocast_record, "records_stacked": _records_stacked}
ALL_KINDS = {**KINDS, **EXTRA_KINDS}
DENSE_KINDS = sorted(set(ALL_KINDS) - {"ragged", "h5"})  # h5: the store's own tests


def make(kind: str, tmp: Path, lib: ModuleType = tclass) -> Any:
    return ALL_KINDS[kind](lib, tmp)


def dense(collection: Any) -> dict[str, torch.Tensor]:
    """The collection's tensors, dense, by path."""
    out = {}
    for key in collection.keys(True, True):
        value = collection.get(key)
        if isinstance(value, torch.Tensor):
            out["/".join(key) if isinstance(key, tuple) else key] = value.detach().clone()
    return out


def _agree(result: Any, expected: Any) -> None:
    """``result`` (tclass's) holds what ``expected`` (the oracle's) holds."""
    if isinstance(expected, tuple):
        assert isinstance(result, tuple) and len(result) == len(expected)
        for mine, theirs in zip(result, expected):
            _agree(mine, theirs)
        return
    if isinstance(expected, torch.Tensor):
        assert isinstance(result, torch.Tensor) and torch.equal(result, expected)
        return
    assert tclass.is_tensor_collection(result), type(result)
    assert dense(result).keys() == expected.keys()
    first = next(iter(expected.values()))
    assert tuple(result.batch_size) == tuple(first.shape[: result.batch_dims])
    for path, tensor in expected.items():
        got = result.get(tuple(path.split("/")))
        assert got.shape == tensor.shape and torch.equal(got, tensor), path


@pytest.mark.parametrize("kind", DENSE_KINDS)
@pytest.mark.parametrize("case", CASES)
def test_as_on_plain_tensors(case: str, kind: str, tmp_path: Path) -> None:
    """Each transform gives, over the collection, what it gives over its tensors."""
    method, oracle = CASES[case]
    collection = make(kind, tmp_path)
    plain = dense(collection)
    torch.manual_seed(0)
    expected = oracle(plain)
    torch.manual_seed(0)
    _agree(method(collection), expected)


@pytest.mark.parametrize("kind", sorted(ALL_KINDS.keys() - {"h5"}))
def test_python_values_and_types_are_kept(kind: str, tmp_path: Path) -> None:
    """The collection vmap gives back has the input's class (a dense result when vmap
    maps a lazy stack's stack dim) and its Python values."""
    collection = make(kind, tmp_path)
    out = vmap(_twice, (1,))(collection)
    lazy = tclass.LazyStackedTensorDict
    expected = tclass.TensorDict if isinstance(collection, lazy) else type(collection)
    if isinstance(collection, lazy) and collection.stack_dim != 1:
        expected = lazy
    if isinstance(collection, tclass.TensorDictParams):
        expected = tclass.TensorDict  # results of params are plain TensorDicts
    assert type(out) is expected
    for key in _python_keys(collection):
        value = collection.get(key)
        assert out.get(key).tolist() == [[value.data] * 2] * 3, key  # one value, transposed


def _python_keys(collection: Any) -> list[Any]:
    keys = []
    for key in collection.keys(True, True):
        try:
            value = collection.get(key)
        except HeterogeneousEntryError:  # a ragged tensor
            continue
        if not isinstance(value, torch.Tensor):
            keys.append(key)
    return keys


class TestLazyStacks:
    """vmap maps a lazy stack's batch dims as they read, not its members' own dims."""

    def test_the_bug_of_issue_27(self) -> None:
        a = tclass.TensorDict(x=torch.randn(4, 3), batch_size=[4])
        b = tclass.TensorDict(x=torch.randn(4, 3), batch_size=[4])
        stacked = tclass.lazy_stack([a, b], 0)
        out = vmap(lambda t: t["x"] * 1)(stacked)
        assert out.shape == (2, 4, 3) and torch.equal(out, torch.stack([a["x"], b["x"]]))

    def test_another_dim_keeps_the_members_apart(self) -> None:
        members = [tclass.TensorDict(x=torch.randn(4, k + 2), batch_size=[4]) for k in range(3)]
        stacked = tclass.lazy_stack(members, 0)  # ragged: no dense x
        seen = []

        def body(t: Any) -> Any:
            seen.append((type(t).__name__, t.batch_size, [m["x"].shape for m in t.tensordicts]))
            return t.apply(lambda x: x.sum(-1))

        out = vmap(body, (1,))(stacked)
        assert seen == [("LazyStackedTensorDict", (3,), [(2,), (3,), (4,)])]
        assert isinstance(out, tclass.LazyStackedTensorDict) and out.batch_size == (4, 3)
        assert out.stack_dim == 1
        for member, given in zip(out.tensordicts, members):
            assert torch.equal(member["x"], given["x"].sum(-1))

    def test_a_ragged_entry_over_the_stack_dim_is_named(self) -> None:
        members = [tclass.TensorDict(x=torch.randn(4, k + 2), batch_size=[4]) for k in range(2)]
        with pytest.raises(HeterogeneousEntryError, match=r"'x'.*member 1"):
            vmap(lambda t: t)(tclass.lazy_stack(members, 0))

    def test_the_stack_dim_maps_one_member_per_lane(self) -> None:
        members = [
            tclass.TensorDict(x=torch.full((4,), float(i)), batch_size=[4]) for i in range(3)
        ]
        stacked = tclass.lazy_stack(members, 1)  # batch [4, 3]
        out = vmap(lambda t: t["x"].cumsum(0), (1,))(stacked)
        assert torch.equal(out, torch.stack([m["x"].cumsum(0) for m in members]))
        chunked = vmap(lambda t: t["x"].cumsum(0), (1,), chunk_size=2)(stacked)
        assert torch.equal(chunked, out)

    def test_members_with_other_keys_show_the_common_ones(self) -> None:
        a = tclass.TensorDict(x=torch.ones(2), w=torch.zeros(2), batch_size=[2])
        b = tclass.TensorDict(x=torch.ones(2) * 2, batch_size=[2])
        out = vmap(lambda t: t)(tclass.lazy_stack([a, b], 0))
        assert set(out.keys()) == {"x"} and out["x"].tolist() == [[1, 1], [2, 2]]

    def test_python_values_per_member(self) -> None:
        a = tclass.TensorDict(x=torch.zeros(4), s="hi", batch_size=[4])
        b = tclass.TensorDict(x=torch.ones(4), s="ho", batch_size=[4])
        for dims in (0, 1):
            out = vmap(lambda t: t.set("y", t["x"] + 1), (dims,))(tclass.lazy_stack([a, b], 0))
            assert out.get("s").tolist() == (
                [["hi"] * 4, ["ho"] * 4] if dims == 0 else [["hi", "ho"]] * 4
            )

    def test_out_dims_past_the_stack_dim(self) -> None:
        members = [tclass.TensorDict(x=torch.randn(2, 5), batch_size=[2]) for _ in range(3)]
        stacked = tclass.lazy_stack(members, 1)  # batch [2, 3]
        out = vmap(lambda t: t * 2, out_dims=1)(stacked)
        assert out.batch_size == (3, 2) and out.stack_dim == 0
        assert torch.equal(out["x"], (stacked["x"] * 2).transpose(0, 1))

    def test_tree_utilities_still_see_the_members(self) -> None:
        import torch.utils._pytree as pytree

        members = [tclass.TensorDict(x=torch.zeros(k + 1), batch_size=[]) for k in range(2)]
        stacked = tclass.lazy_stack(members, 0)
        assert [leaf.shape for leaf in pytree.tree_leaves(stacked)] == [(1,), (2,)]
        doubled = pytree.tree_map(lambda x: x + 2, stacked)
        assert [m["x"].tolist() for m in doubled.tensordicts] == [[2.0], [2.0, 2.0]]


# torch's first jvp compiles its decompositions with the deprecated torch.jit.script
_JIT_WARNING = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")


class TestArithmeticUnderTransforms:
    """The fused kernels (``torch._foreach_*``) have no batching rule: under a transform
    the operations run leaf by leaf."""

    @pytest.mark.parametrize(
        "body",
        [
            lambda t: t * 2,
            lambda t: (t + 1).exp(),
            lambda t: t.clone().mul_(0.5).add_(t, alpha=2.0),
            lambda t: t.lerp(t * 0, 0.25),
        ],
    )
    @_JIT_WARNING
    def test_vmap_grad_jvp(self, body: Callable[[Any], Any]) -> None:
        td = tclass.TensorDict(a=torch.randn(4, 3), n={"b": torch.randn(4)}, batch_size=[4])
        plain = {"a": td["a"], "b": td["n", "b"]}
        expected = {k: body(tclass.TensorDict(x=v, batch_size=[4]))["x"] for k, v in plain.items()}
        out = vmap(body)(td)
        assert torch.allclose(out["a"], expected["a"]) and torch.allclose(
            out["n", "b"], expected["b"]
        )
        grads = func.grad(lambda t: body(t)["a"].sum())(td)
        assert grads["a"].shape == (4, 3)
        _, tangent = func.jvp(body, (td,), (td.clone(),))
        assert tangent["n", "b"].shape == (4,)


class TestMappedDims:
    def test_a_dim_past_the_batch_dims_is_refused(self) -> None:
        td = tclass.TensorDict(a=torch.zeros(2, 3, 3), b=torch.zeros(2, 3), batch_size=[2, 3])
        with pytest.raises(DimError, match=r"dim 2 of 'a', dim 1 of 'b'.*non-negative"):
            vmap(lambda t: t, (-1,))(td)  # -1 is a for a, b's batch dim 1 for b

    def test_names_follow_the_mapped_dim(self) -> None:
        td = tclass.TensorDict(a=torch.zeros(2, 3, 4), batch_size=[2, 3], names=["x", "y"])
        inside = []
        out = vmap(lambda t: inside.append(t.names) or t * 2, out_dims=1)(td)
        assert inside == [["y"]] and out.names == ["y", None]
        assert func.grad(lambda t: t["a"].sum())(td).names == ["x", "y"]

    def test_locked_stays_locked_inside(self) -> None:
        td = tclass.TensorDict(a=torch.zeros(2, 3), batch_size=[2]).lock_()
        seen = []
        out = vmap(lambda t: seen.append(t.is_locked) or t)(td)
        assert seen == [True] and out.is_locked

    @_JIT_WARNING
    def test_primal_and_tangent_need_not_share_lock_or_names(self) -> None:
        td = tclass.TensorDict(a=torch.ones(2), batch_size=[2], names=["x"]).lock_()
        _, tangent = func.jvp(
            lambda t: t * 3, (td,), (tclass.TensorDict(a=torch.ones(2), batch_size=[2]),)
        )
        assert tangent["a"].tolist() == [3.0, 3.0]


class TestModules:
    """Parameters as the peer's documentation uses them: ``from_module`` / ``to_module``,
    ``from_modules`` ensembles under vmap, ``TensorDictParams``."""

    def _setup(self) -> tuple[list[torch.nn.Linear], torch.nn.Linear, torch.Tensor]:
        torch.manual_seed(0)
        return [torch.nn.Linear(3, 2) for _ in range(4)], torch.nn.Linear(3, 2), torch.randn(5, 3)

    def test_ensemble_and_grads(self) -> None:
        modules, base, x = self._setup()

        def call(params: Any, x: torch.Tensor) -> torch.Tensor:
            with params.to_module(base):
                return base(x)

        ensemble = tclass.TensorDict.from_modules(*modules)
        out = vmap(call, (0, None))(ensemble, x)
        assert torch.allclose(out, torch.stack([m(x) for m in modules]), atol=1e-6)
        loss = lambda p: call(p, x).pow(2).sum()  # noqa: E731
        grads = vmap(func.grad(loss))(ensemble)
        for i, module in enumerate(modules):
            module.zero_grad()
            module(x).pow(2).sum().backward()
            assert torch.allclose(grads["weight"][i], module.weight.grad, atol=1e-5)
        params = tclass.TensorDictParams(tclass.TensorDict.from_module(modules[0]))
        grad, value = func.grad_and_value(loss)(params)
        assert torch.allclose(grad["bias"], modules[0].bias.grad, atol=1e-5)
        assert torch.allclose(value, modules[0](x).pow(2).sum())

    def test_functional_call(self) -> None:
        modules, _, x = self._setup()
        params = tclass.TensorDict.from_module(modules[0])
        flat = dict(params.flatten_keys(".").items())
        assert torch.equal(func.functional_call(modules[1], flat, (x,)), modules[0](x))
        jac = func.jacrev(lambda p: func.functional_call(modules[1], p, (x,)).sum())(flat)
        assert torch.allclose(jac["bias"], torch.full((2,), 5.0))


class Pair(tclass.TypedTensorDict):
    a: torch.Tensor
    inner: tclass.TensorDict


def test_typed_tensordict_subclasses_are_pytree_nodes() -> None:
    # Each subclass registers itself when defined: vmap maps it and gives it back.
    pair = Pair(
        a=torch.arange(12.0).reshape(3, 4),
        inner=tclass.TensorDict({"b": torch.ones(3, 4, 2)}, [3, 4]),
        batch_size=[3, 4],
        names=["x", "y"],
    )
    out = vmap(lambda p: p * 2)(pair)
    assert type(out) is Pair and out.batch_size == pair.batch_size
    assert torch.equal(out.a, pair.a * 2) and torch.equal(out.inner["b"], pair.inner["b"] * 2)
    assert vmap(lambda p: p, in_dims=1)(pair).batch_size == torch.Size([4, 3])
    leaves, spec = torch.utils._pytree.tree_flatten(pair)
    rebuilt = torch.utils._pytree.tree_unflatten(leaves, spec)
    assert type(rebuilt) is Pair and rebuilt.names == ["x", "y"] and len(leaves) == 2
