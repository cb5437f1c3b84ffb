"""The one-pass walk of TensorDict trees (``tclass/_engine/_td_walk.py``): math on a
TensorDict whose nested collections are TensorDicts of its class gathers and rebuilds
the tree in one pass each. It must give what the general walk gives (each case is run
again with the one-pass walk turned off and the results compared: class, keys, batch
sizes, names, device, lock, Python values, tensors), write in place what the general
walk writes, and leave everything else to the general walk, which raises what is wrong.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorClass, TensorDict, errors

from strategies import assert_same_tree  # noqa: E402


class _Pair(TensorClass):
    x: torch.Tensor
    tag: str


class _Params(TensorDict):
    """A subclass: its trees are walked with its own class at every node."""


def _tree(seed: int = 0, batch: tuple[int, ...] = (2,), cls: type[TensorDict] = TensorDict) -> Any:
    """A root holding a tensor, a Python value and two nested TensorDicts (one two deep)."""
    g = torch.Generator().manual_seed(seed)

    def t(*shape: int) -> torch.Tensor:
        return torch.rand(*batch, *shape, generator=g) + 0.5

    inner = cls({"w": t(3), "b": t()}, batch_size=batch)
    deep = cls({"v": t(2), "n": cls({"u": t()}, batch_size=batch)}, batch_size=batch)
    return cls({"a": t(4), "s": "text", "inner": inner, "deep": deep}, batch_size=batch)


def _off(monkeypatch: pytest.MonkeyPatch, call: Callable[[], Any]) -> Any:
    """``call()`` with the one-pass walk turned off: what the general walk gives."""
    with monkeypatch.context() as patch:
        for cls in (TensorDict, _Params):
            patch.setattr(cls, "_flat_pointwise", lambda *args: None)
            patch.setattr(cls, "_gather_tree", lambda *args: False)
        return call()


def _assert_alike(mine: Any, walked: Any) -> None:
    assert_same_tree(mine, walked)
    for key in mine.keys(True):
        a, b = mine.get(key), walked.get(key)
        assert type(a) is type(b), key
        if isinstance(a, TensorDict):
            assert a.batch_size == b.batch_size and a.is_locked == b.is_locked, key
    if "s" in walked.keys():
        assert mine["s"] == walked["s"] and mine.get("s") is not walked.get("s")


_TWO = torch.full((2,), 2.0)


def _empty() -> TensorDict:
    return TensorDict(batch_size=[2])


def _lazy() -> Any:
    return tclass.lazy_stack([TensorDict(z=torch.ones(1)), TensorDict(z=torch.ones(1))])


def _with(key: Any, value: Any, cls: type[TensorDict] = TensorDict) -> Any:
    return _tree(cls=cls).set(key, value)


def _layers(seed: int = 0, cls: type[TensorDict] = TensorDict, order: int = 1) -> Any:
    """A model's parameters: a node per layer, each holding only tensors (``order=-1``:
    each layer's keys the other way round)."""
    g = torch.Generator().manual_seed(seed)
    keys = ["weight", "bias"][::order]
    layers = {f"l{i}": {k: torch.rand(3, 2 + i, generator=g) + 0.5 for k in keys} for i in range(3)}
    return cls({name: cls(entries) for name, entries in layers.items()})


def _layer_set(key: Any, value: Any) -> Any:
    return _layers(1).set(key, value)


CALLS: list[tuple[str, Callable[[], Any]]] = [
    ("layers + 1", lambda: _layers() + 1),
    ("layers * layers", lambda: _layers() * _layers(1)),
    ("layers * layers, keys in another order", lambda: _layers() * _layers(1, order=-1)),
    ("layers ** layers with a value node", lambda: _layers() ** _layer_set(("l2", "b"), "v")),
    ("layers with an empty layer", lambda: _layers().set("e", TensorDict()) * 2),
    ("layers with a parameter", lambda: _layer_set(("l0", "p"), torch.nn.Parameter(_TWO)) + 1),
    ("subclass layers", lambda: _layers(cls=_Params) * _layers(1, cls=_Params)),
    ("locked layers", lambda: _layers().lock_() - 1),

    ("tree + 1", lambda: _tree() + 1),
    ("tree * tree", lambda: _tree() * _tree(1)),
    ("tree - tree of batch []", lambda: _tree() - _tree(1).apply(lambda v: v[0], batch_size=[])),
    ("exp(tree)", lambda: torch.exp(_tree())),
    ("tree.float() from half", lambda: _tree().half().float()),
    ("tree ** 2", lambda: _tree() ** 2),
    ("tree.clamp(max=)", lambda: _tree().clamp(max=0.7)),
    ("locked tree", lambda: _tree().lock_() / 2),
    ("named tree", lambda: _tree().refine_names("t") + 1),
    ("subclass tree", lambda: _tree(cls=_Params) * _tree(1, cls=_Params)),
    ("tree of batch [2, 3] - [3]", lambda: _tree(batch=(2, 3)) - _tree(1, batch=(3,))),
    ("nested of more dims", lambda: _with("inner", _tree(batch=(2, 5))["inner"]) * 3),
    ("an empty nested node", lambda: _with("e", _empty()) + 1),
    ("an empty nested node, tree op", lambda: _with("e", _empty()) * _tree(1).set("e", _empty())),
    ("a record in the tree", lambda: _with("p", _Pair(torch.ones(2), "t", batch_size=[2])) + 1),
    ("a parameter in the tree", lambda: _with(("inner", "p"), torch.nn.Parameter(_TWO)) * 2),
    ("an operand value node facing one", lambda: _tree() + _tree(1).set("s", "other")),
    ("a lazy stack in the tree", lambda: _with("l", _lazy()) + 1),
    ("a TensorDict in a subclass tree", lambda: _with("d", _empty().set("q", _TWO), _Params) - 1),
]  # fmt: skip


@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=[n for n, _ in CALLS])
def test_the_one_pass_walk_gives_what_the_general_walk_gives(
    call: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _assert_alike(call(), _off(monkeypatch, call))


def _refuse(*args: Any) -> Any:
    raise AssertionError("the general walk ran")


def test_a_tree_is_walked_once_and_its_nodes_are_new(monkeypatch: pytest.MonkeyPatch) -> None:
    td, other = _tree(), _tree(1)
    for name in ("_collect", "_rebuilt"):
        monkeypatch.setattr(TensorDict, name, _refuse)
    out = td * 2
    assert out["inner"] is not td["inner"] and out.get("s") is not td.get("s")
    assert torch.equal(out["deep", "n", "u"], td["deep", "n", "u"] * 2)
    assert out["s"] == "text"
    assert torch.equal((td - other)["inner", "w"], td["inner", "w"] - other["inner", "w"])
    w = td["inner", "w"].clone()
    td.mul_(0.5).add_(other, alpha=0.1).lerp_(other, 0.5)
    assert torch.allclose(
        td["inner", "w"], torch.lerp(w * 0.5 + other["inner", "w"] * 0.1, other["inner", "w"], 0.5)
    )


def test_nested_nodes_holding_nothing_are_left_out_as_by_the_general_walk() -> None:
    out = _tree().set("e", TensorDict(batch_size=[2])) + 1
    assert "e" not in out.keys() and "inner" in out.keys()


INPLACE: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("mul_ then add_", lambda t, o: t.mul_(0.99).add_(o, alpha=0.01)),
    ("lerp_", lambda t, o: t.lerp_(o, 0.25)),
    ("+= tree", lambda t, o: operator.iadd(t, o)),
    ("copy_", lambda t, o: t.copy_(o)),
    ("exp_", lambda t, o: t.exp_()),
    ("clamp_", lambda t, o: t.clamp_(max=o)),
]


@pytest.mark.parametrize("call", [c for _, c in INPLACE], ids=[n for n, _ in INPLACE])
def test_in_place_math_writes_what_the_general_walk_writes(
    call: Callable[[Any, Any], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, walked = _tree(), _tree()
    assert call(mine, _tree(1)) is mine
    _off(monkeypatch, lambda: call(walked, _tree(1)))
    _assert_alike(mine, walked)


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (lambda o: o.exclude(("deep", "n", "u")), errors.KeyNotFoundError, "u"),
        (lambda o: o.set(("inner", "extra"), torch.ones(2)), errors.KeyNotFoundError, "extra"),
        (lambda o: o.set("a", _empty().set("q", torch.ones(2))), errors.KeyNotFoundError, "'a'"),
        (lambda o: o.set("inner", torch.ones(2, 3)), errors.KeyNotFoundError, "inner"),
        (lambda o: o.set(("inner", "w"), torch.ones(2, 7)), RuntimeError, "size"),
    ],
    ids=["key missing", "key more", "collection for tensor", "tensor for collection", "shapes"],
)  # fmt: skip
def test_operands_the_general_walk_refuses_are_still_refused(
    change: Callable[[Any], Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        _tree() + change(_tree(1))


LAYER_OPERANDS: list[tuple[str, Callable[[], Any], str]] = [
    ("a key more", lambda: _layer_set(("l1", "x"), torch.ones(3)), r"\['x'\]"),
    ("a key less", lambda: _layers(1).exclude(("l1", "bias")), r"\['bias'\]"),
    ("a layer more", lambda: _layer_set("l9", TensorDict(x=torch.ones(3))), r"\['l9'\]"),
    ("a tensor for a layer", lambda: _layer_set("l0", torch.ones(3)), "'l0'"),
]


@pytest.mark.parametrize(
    ("operand", "match"), [c[1:] for c in LAYER_OPERANDS], ids=[c[0] for c in LAYER_OPERANDS]
)
def test_layer_operands_the_general_walk_refuses_are_refused_alike(
    operand: Callable[[], Any], match: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree of layers (walked a layer at a time) against an operand nested otherwise:
    the general walk's error, out of place and in place (nothing written); in place, an
    operand holding more keys is read for the tree's own (as the peer's)."""
    with pytest.raises(errors.KeyNotFoundError, match=match):
        _layers() - operand()
    with pytest.raises(errors.KeyNotFoundError, match=match):
        _off(monkeypatch, lambda: _layers() - operand())
    td = _layers()
    before = td.clone()
    if "l9" in match or "'x'" in match:  # more keys: in place, the extras are not read
        assert td.add_(operand()) is td and td.keys(True, True) == before.keys(True, True)
        return  # (as the peer's in-place math)
    with pytest.raises(errors.KeyNotFoundError, match=match):
        td.add_(operand())
    assert (td == before).all()


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (lambda o: o.exclude(("deep", "n", "u")), errors.KeyNotFoundError, "u"),
        (lambda o: o.set(("inner", "w"), torch.ones(2, 7)), errors.InPlaceWriteError, "'w'"),
        (lambda o: o.set(("deep", "v"), torch.ones(2, 2, dtype=torch.complex64)),
         errors.InPlaceWriteError, "'v'"),
    ],
    ids=["a key missing", "shapes", "dtypes"],
)  # fmt: skip
def test_in_place_refusals_still_change_nothing(
    change: Callable[[Any], Any], error: type[Exception], match: str
) -> None:
    td = _tree()
    before = td.clone()
    with pytest.raises(error, match=match):
        td.add_(change(_tree(1)))
    _assert_alike(td, before)


def test_an_integer_tensor_deep_in_the_tree_stops_mul_before_any_write() -> None:
    td = _tree().set(("deep", "n", "i"), torch.ones(2, dtype=torch.int64))
    before = td.clone()
    with pytest.raises(errors.InPlaceWriteError, match="'i'"):
        td.mul_(0.5)
    _assert_alike(td, before)


def test_layers_are_walked_a_layer_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node of layers holding only tensors: one call walks it (no call per layer), the
    operand's keys in any order, and the general walk never runs."""
    td, other = _layers(), _layers(1, order=-1)
    before = td.clone()
    expected = {key: td[key] * other[key] for key in td.keys(True, True)}
    calls: list[int] = []
    walk = TensorDict._walk_tree

    def counted(self: Any, *args: Any) -> Any:
        calls.append(1)
        return walk(self, *args)

    monkeypatch.setattr(TensorDict, "_walk_tree", counted)
    for name in ("_collect", "_rebuilt"):
        monkeypatch.setattr(TensorDict, name, _refuse)
    out = td * other
    assert len(calls) == 1 and out["l1"] is not td["l1"]
    assert all(torch.equal(out[key], value) for key, value in expected.items())
    td.lerp_(other, 0.5)
    assert len(calls) == 2
    want = before["l2", "bias"].lerp(other["l2", "bias"], 0.5)
    assert torch.equal(td["l2", "bias"], want)


def test_layers_are_rebuilt_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node of layers holding only tensors: its result is built by one call (no call
    per layer), each layer a new node of its class, batch size and device."""
    td = _layers(cls=_Params)
    calls: list[int] = []
    rebuilt = TensorDict._tree_rebuilt

    def counted(self: Any, *args: Any) -> Any:
        calls.append(1)
        return rebuilt(self, *args)

    monkeypatch.setattr(TensorDict, "_tree_rebuilt", counted)
    out = td + 1
    assert len(calls) == 1
    for name in ("l0", "l1", "l2"):
        layer = out[name]
        assert type(layer) is _Params and layer is not td[name]
        assert layer.batch_size == td[name].batch_size and layer.device == td[name].device
        assert list(layer.keys()) == list(td[name].keys())
        assert all(torch.equal(layer[k], td[name][k] + 1) for k in layer.keys())
