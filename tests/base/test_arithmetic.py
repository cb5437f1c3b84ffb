"""The tensor-like algebra of collections: operators (reflected and in-place), pointwise
methods and their ``_`` variants, comparisons and bitwise masks, ``where`` / ``clamp`` /
``lerp`` / ``addcmul``..., and dtype casts with ``cast_filter``.

Every operation is compared leaf by leaf with torch on the same tensors, on TensorDicts
(nested ones with extra batch dims), lazy stacks whose members differ in shapes,
tensorclasses in both declaration forms and memory-mapped collections; where the peer
(``tensordict``) is installed, with the peer's results too.
"""

from __future__ import annotations

import operator
import pathlib
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import (
    LazyStackedTensorDict,
    NonTensorData,
    TensorClass,
    TensorDict,
    errors,
    lazy_stack,
    tensorclass,
)

from algebra_records import IDS, RECORDS, Rec, record  # noqa: E402
from strategies import (  # noqa: E402
    SETTINGS,
    assert_leafwise,
    equal,
    lazy_members,
    leaf_items,
    make_values,
    tensordicts,
)

KeyNotFoundError, LockedError = errors.KeyNotFoundError, errors.LockedError

# The peer's unary pointwise methods (each with an in-place `_` twin and a torch function).
UNARY = [
    "abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
    "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round",
    "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
]  # fmt: skip
# Unary methods without an in-place twin: predicates giving bool collections.
PREDICATES = ["isnan", "isfinite", "isneginf", "isposinf", "isreal"]
# Binary methods taking a number, a tensor over the batch dims or a collection.
BINARY = [
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "clamp_min", "clamp_max",
    "bitwise_and", "logical_and",
]  # fmt: skip
BINARY_INPLACE = ["add_", "sub_", "mul_", "div_", "pow_", "maximum_", "minimum_",
                  "clamp_min_", "clamp_max_"]  # fmt: skip
OPERATORS: list[Callable[[Any, Any], Any]] = [
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.mod, operator.pow, operator.eq, operator.ne, operator.lt, operator.le,
    operator.gt, operator.ge, operator.and_, operator.or_, operator.xor,
]  # fmt: skip
INPLACE_OPERATORS: list[Callable[[Any, Any], Any]] = [
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
]  # fmt: skip
# dtype shorthands (each takes cast_filter=) and the dtype each gives.
CASTS = {
    "float": torch.float32, "double": torch.float64, "half": torch.float16,
    "bfloat16": torch.bfloat16, "int": torch.int32, "long": torch.int64, "bool": torch.bool,
    "byte": torch.uint8, "float16": torch.float16, "float32": torch.float32,
    "float64": torch.float64, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "uint8": torch.uint8, "complex64": torch.complex64,
    "complex128": torch.complex128,
}  # fmt: skip


def _td() -> TensorDict:
    """batch [3, 4]: float leaves (one with a feature dim), a nested TD with an extra
    batch dim and a second level, and a Python value."""
    g = torch.Generator().manual_seed(0)
    return TensorDict(
        {
            "a": torch.randn(3, 4, 2, generator=g),
            "b": torch.rand(3, 4, generator=g) + 0.5,
            "n": TensorDict(
                {"c": torch.randn(3, 4, 5, generator=g),
                 "m": TensorDict({"d": torch.randn(3, 4, 5, 2, generator=g)}, [3, 4, 5])},
                [3, 4, 5],
            ),
            "label": tclass.NonTensorData("pong", batch_size=[3, 4]),
        },
        [3, 4],
    )  # fmt: skip


def _pad(tensor: torch.Tensor, batch_dims: int, leaf: torch.Tensor) -> torch.Tensor:
    """A tensor over the batch dims, with size-1 dims appended for ``leaf``'s feature dims."""
    return tensor.reshape(tensor.shape + (1,) * (leaf.ndim - batch_dims))


def _outcome(fn: Callable[..., torch.Tensor], *args: Any) -> Any:
    """``fn(*args)`` on leaves, or the exception class torch raises for them."""
    try:
        return fn(*args)
    except Exception as error:  # torch's error (or warning, raised as an error here)
        return type(error)


def _failures(outcomes: Any) -> tuple[type[BaseException], ...]:
    """The exception classes among ``outcomes`` (what the collection op must raise)."""
    return tuple(o for o in outcomes if isinstance(o, type))


def _by_hand(fn: Callable[..., torch.Tensor]) -> Callable[[torch.Tensor], Any]:
    """``fn`` on one leaf, or the exception class torch raises for it."""
    return lambda leaf: _outcome(fn, leaf)


def _check_like_torch(
    run: Callable[[], Any], source: Any, fn: Callable[[torch.Tensor], torch.Tensor]
) -> Any:
    """``run()`` gives ``fn`` on every leaf of ``source``, or raises where torch does."""
    failures = _failures(_by_hand(fn)(leaf) for _, leaf in leaf_items(source))
    if failures:
        with pytest.raises(failures):
            run()
        return None
    result = run()
    assert_leafwise(result, source, fn, source.batch_size)
    return result


def _without_python_values(td: TensorDict) -> TensorDict:
    return td.exclude("label")


# --- unary pointwise methods ------------------------------------------------------------


@pytest.mark.parametrize("name", UNARY + PREDICATES)
@SETTINGS
@given(td=tensordicts())
def test_unary_method_property(name: str, td: TensorDict) -> None:
    _check_like_torch(lambda: getattr(td, name)(), td, getattr(torch, name))


@pytest.mark.parametrize("name", UNARY)
@SETTINGS
@given(td=tensordicts())
def test_unary_inplace_method_property(name: str, td: TensorDict) -> None:
    expected = {path: _by_hand(getattr(torch, name))(leaf) for path, leaf in leaf_items(td)}
    storages = {path: leaf.data_ptr() for path, leaf in leaf_items(td)}
    failures = _failures(expected.values())
    if failures or any(value.dtype != td.get(path).dtype for path, value in expected.items()):
        with pytest.raises(failures or RuntimeError):
            getattr(td, name + "_")()
        return
    assert getattr(td, name + "_")() is td
    for path, value in expected.items():
        assert equal(td.get(path), value), path
        assert td.get(path).data_ptr() == storages[path], path


@pytest.mark.parametrize("name", UNARY)
def test_torch_unary_functions_and_their_inplace_forms(name: str) -> None:
    td = _without_python_values(_td())
    out = getattr(torch, name)(td)
    assert_leafwise(out, td, getattr(torch, name), td.batch_size)
    inplace = getattr(torch, name + "_", None)
    if inplace is not None:
        copy = td.clone()
        assert inplace(copy) is copy
        for path, leaf in leaf_items(td):
            assert equal(copy.get(path), getattr(torch, name)(leaf))


def test_unary_operators() -> None:
    td = _without_python_values(_td())
    assert_leafwise(-td, td, torch.neg, td.batch_size)
    assert_leafwise(abs(td), td, torch.abs, td.batch_size)
    mask = td > 0
    assert_leafwise(~mask, mask, torch.bitwise_not, td.batch_size)


def test_round_decimals_nan_to_num_and_softmax() -> None:
    td = _without_python_values(_td())
    assert_leafwise(td.round(decimals=1), td, lambda t: t.round(decimals=1), td.batch_size)
    holes = td.clone()
    holes["a"][0, 0, 0] = float("nan")
    holes["b"][1, 1] = float("inf")
    fixed = holes.nan_to_num(nan=-1.0, posinf=9.0)
    assert fixed["a"][0, 0, 0] == -1.0 and fixed["b"][1, 1] == 9.0
    assert holes.nan_to_num_() is holes and bool(holes.isfinite().all())
    for dim in (0, 1, -1):
        soft = td.softmax(dim)
        for path, leaf in leaf_items(td):
            assert torch.allclose(soft.get(path), leaf.softmax(dim % 2)), (dim, path)


# --- binary methods and operators -------------------------------------------------------


def _operands(td: TensorDict) -> list[Any]:
    """A number, a bool, a tensor over the batch dims and a collection with td's keys."""
    batch_tensor = make_values(td.batch_size) % 5 + 1
    return [2, 0.5, True, batch_tensor, td.apply(lambda t: t.flip(-1) if t.ndim else t)]


def _torch_binary(name: str) -> Callable[[torch.Tensor, Any], torch.Tensor]:
    """torch's function for a binary method; a number bounds like clamp_min/clamp_max
    for maximum/minimum (torch.maximum takes tensors only), as the peer does."""
    fn = getattr(torch, name)
    bound = {"maximum": torch.clamp_min, "minimum": torch.clamp_max}.get(name)
    if bound is None:
        return fn  # type: ignore[no-any-return]
    return lambda t, o: fn(t, o) if isinstance(o, torch.Tensor) else bound(t, o)


def _leaf_operand(other: Any, td: TensorDict, path: tuple[str, ...]) -> Any:
    if isinstance(other, torch.Tensor):
        return _pad(other, td.batch_dims, td.get(path))
    if isinstance(other, TensorDict):
        return other.get(path)
    return other


@pytest.mark.parametrize("name", BINARY)
@SETTINGS
@given(td=tensordicts(), which=st.integers(0, 4))
def test_binary_method_property(name: str, td: TensorDict, which: int) -> None:
    other = _operands(td)[which]
    outcomes = {}
    for path, leaf in leaf_items(td):
        outcomes[path] = _outcome(_torch_binary(name), leaf, _leaf_operand(other, td, path))
    if failures := _failures(outcomes.values()):
        with pytest.raises(failures):
            getattr(td, name)(other)
        return
    out = getattr(td, name)(other)
    assert type(out) is TensorDict and out.batch_size == td.batch_size
    for path, value in outcomes.items():
        assert equal(out.get(path), value), path


@pytest.mark.parametrize("op", OPERATORS, ids=lambda op: op.__name__)
@SETTINGS
@given(td=tensordicts(), which=st.integers(0, 4))
def test_operator_property(op: Callable[[Any, Any], Any], td: TensorDict, which: int) -> None:
    other = _operands(td)[which]
    outcomes = {}
    for path, leaf in leaf_items(td):
        outcomes[path] = _outcome(op, leaf, _leaf_operand(other, td, path))
    reflected = {}
    if not isinstance(other, TensorDict):
        for path, leaf in leaf_items(td):
            reflected[path] = _outcome(op, _leaf_operand(other, td, path), leaf)
    for expected, run in ((outcomes, lambda: op(td, other)), (reflected, lambda: op(other, td))):
        if not expected:
            continue
        if failures := _failures(expected.values()):
            with pytest.raises(failures):
                run()
            continue
        out = run()
        assert type(out) is TensorDict and out.batch_size == td.batch_size
        for path, value in expected.items():
            assert equal(out.get(path), value), (op, path)


@pytest.mark.parametrize("op", INPLACE_OPERATORS, ids=lambda op: op.__name__)
@SETTINGS
@given(td=tensordicts(), which=st.integers(0, 4))
def test_inplace_operator_property(
    op: Callable[[Any, Any], Any], td: TensorDict, which: int
) -> None:
    other = _operands(td)[which]
    expected = {}
    for path, leaf in leaf_items(td):
        expected[path] = _outcome(op, leaf.clone(), _leaf_operand(other, td, path))
    storages = {path: leaf.data_ptr() for path, leaf in leaf_items(td)}
    if failures := _failures(expected.values()):
        with pytest.raises(failures):
            op(td, other)
        return
    assert op(td, other) is td
    for path, value in expected.items():
        assert equal(td.get(path), value), path
        assert td.get(path).data_ptr() == storages[path]


@pytest.mark.parametrize("name", BINARY_INPLACE)
def test_binary_inplace_methods(name: str) -> None:
    td = _without_python_values(_td())
    other = td.apply(lambda t: t.flip(-1) * 0.5)
    for operand in (2.0, other, torch.full((3, 4), 0.25)):
        copy = td.clone()
        assert getattr(copy, name)(operand) is copy
        for path, leaf in leaf_items(td):
            expected = _torch_binary(name[:-1])(leaf, _leaf_operand(operand, td, path))
            assert equal(copy.get(path), expected), (name, path)


def test_alpha_rounding_mode_and_rsub() -> None:
    td = _without_python_values(_td())
    other = td.apply(lambda t: t * 3)
    for path, leaf in leaf_items(td):
        assert equal(td.add(other, alpha=2).get(path), leaf.add(other.get(path), alpha=2))
        assert equal(td.sub(1.5, alpha=2).get(path), leaf.sub(1.5, alpha=2))
        assert equal(td.rsub(1).get(path), 1 - leaf)
        floor = torch.div(leaf, other.get(path), rounding_mode="floor")
        assert equal(td.div(other, rounding_mode="floor").get(path), floor)
        assert equal(td.mod(0.7).get(path), leaf % 0.7)
    soft = td.clone()
    assert soft.mul_(0.99).add_(other, alpha=0.01) is soft
    for path, leaf in leaf_items(td):
        assert torch.allclose(soft.get(path), leaf * 0.99 + 0.01 * other.get(path))
    assert equal(td.clone().sub_(other, alpha=0.5)["b"], td["b"] - 0.5 * other["b"])


def test_ternary_methods() -> None:
    td = _without_python_values(_td())
    end, weight = td.apply(lambda t: t + 1), td.apply(lambda t: t.sigmoid())
    for path, leaf in leaf_items(td):
        e, w = end.get(path), weight.get(path)
        assert equal(td.lerp(end, 0.25).get(path), torch.lerp(leaf, e, 0.25))
        assert equal(td.lerp(end, weight).get(path), torch.lerp(leaf, e, w))
        assert equal(td.addcmul(end, weight, value=2).get(path), torch.addcmul(leaf, e, w, value=2))
        assert equal(td.addcdiv(end, weight, value=3).get(path), torch.addcdiv(leaf, e, w, value=3))
        assert equal(td.clamp(-0.5, 0.5).get(path), leaf.clamp(-0.5, 0.5))
        assert equal(td.clamp(max=0.1).get(path), leaf.clamp(max=0.1))
        assert equal(td.clamp(min=weight).get(path), torch.clamp(leaf, min=w))
        assert equal(td.clamp(torch.zeros(3, 4)).get(path), leaf.clamp_min(0))
    for name, args in (
        ("lerp_", (end, 0.25)), ("addcmul_", (end, weight)), ("addcdiv_", (end, weight)),
        ("clamp_", (-0.5, 0.5)),
    ):  # fmt: skip
        copy = td.clone()
        assert getattr(copy, name)(*args) is copy
        expected = getattr(td, name[:-1])(*args)
        for path, leaf in leaf_items(expected):
            assert equal(copy.get(path), leaf), (name, path)
    with pytest.raises(TypeError, match="min.*max"):
        td.clamp()


def test_a_tensor_operand_covers_the_batch_dims_and_broadcasts_them() -> None:
    td = TensorDict({"x": torch.ones(3, 4), "f": torch.ones(3, 4, 2)}, [3, 4])
    out = td + torch.arange(4.0)  # right-aligned with the batch dims, as torch broadcasts
    assert torch.equal(out["f"][:, :, 0], torch.arange(4.0).expand(3, 4) + 1)
    out = td * torch.arange(3.0).reshape(3, 1)
    assert torch.equal(out["f"][:, 1, 1], torch.arange(3.0))
    grown = td + torch.ones(2, 3, 4)  # a tensor with more dims adds batch dims
    assert grown.batch_size == torch.Size([2, 3, 4]) and grown["f"].shape == (2, 3, 4, 2)
    assert (td + torch.tensor(2.0))["f"].shape == (3, 4, 2)
    with pytest.raises((RuntimeError, ValueError), match=r"\[3, 4\]"):
        td + torch.ones(3)  # noqa: B018


def test_collection_operands_broadcast_their_batch_sizes() -> None:
    a = TensorDict({"x": torch.arange(12.0).reshape(3, 4), "f": torch.ones(3, 4, 2)}, [3, 4])
    row = TensorDict({"x": torch.arange(4.0).reshape(1, 4), "f": torch.ones(1, 4, 2)}, [1, 4])
    for out in (a + row, row + a):
        assert out.batch_size == torch.Size([3, 4])
        assert torch.equal(out["x"], a["x"] + row["x"])
    bad = TensorDict({"x": torch.zeros(3, 2), "f": torch.zeros(3, 2, 2)}, [3, 2])
    with pytest.raises(errors.BatchSizeError, match=r"\[3, 4\].*\[3, 2\]"):
        a + bad  # noqa: B018


def test_keys_that_differ_are_named() -> None:
    td = _without_python_values(_td())
    other = td.exclude("b")
    other["z"] = torch.zeros(3, 4)
    for run in (lambda: td + other, lambda: td.mul(other)):
        with pytest.raises(KeyNotFoundError, match=r"'b'.*'z'|'z'.*'b'") as info:
            run()
        assert isinstance(info.value, KeyError)
    # in place, as the peer's: the operand's extra 'z' is not read, the lacking 'b' named
    with pytest.raises(KeyNotFoundError, match=r"lacks the keys \['b'\]") as info:
        td.add_(other)
    assert isinstance(info.value, KeyError) and "'z'" not in str(info.value)
    nested = td.exclude(("n", "m", "d"))
    with pytest.raises(KeyNotFoundError, match="'d'"):
        td - nested  # noqa: B018
    flat = td.clone()
    flat["n"] = torch.zeros(3, 4)  # a tensor where the other has a collection
    with pytest.raises(KeyNotFoundError, match="'n'"):
        td * flat  # noqa: B018


def test_default_intersection_and_fill_value() -> None:
    a = TensorDict({"x": torch.ones(3), "y": torch.ones(3)}, [3])
    b = TensorDict({"x": torch.full((3,), 2.0), "z": torch.full((3,), 5.0)}, [3])
    common = a.add(b, default="intersection")
    assert set(common.keys()) == {"x"} and torch.equal(common["x"], torch.full((3,), 3.0))
    filled = a.mul(b, default=10)
    assert set(filled.keys()) == {"x", "y", "z"}
    assert torch.equal(filled["y"], torch.full((3,), 10.0))
    assert torch.equal(filled["z"], torch.full((3,), 50.0))


def test_default_keeps_python_values_and_the_lock() -> None:
    """``default=`` keeps what the plain operation keeps: the Python values of ``self``
    (``"intersection"`` restricts the tensors only) and its lock, nested nodes too, as the
    peer's (programs 15,815,332 / 15,815,350 of methods,index,shape,combine, fz28b)."""
    a = TensorDict({"v": NonTensorData(-1), "s": "t", "x": torch.ones(2), "y": torch.ones(2)}, [2])
    common = a.pow(a.select("x"), default="intersection")
    assert sorted(common.keys()) == ["s", "v", "x"] and common["s"] == "t" and common["v"] == -1
    stacked = LazyStackedTensorDict.lazy_stack([a, a.clone()], 0)
    assert sorted(stacked.pow(stacked.select(), default="intersection").keys()) == ["s", "v"]
    locked = TensorDict({"x": torch.ones(2), "n": {"y": torch.ones(2)}}, [2]).lock_()
    for out in (locked.mul(locked.clone(), default="intersection"), locked.add(locked, default=0)):
        assert out.is_locked and out["n"].is_locked
        with pytest.raises(RuntimeError, match="locked"):
            out["z"] = torch.ones(2)
    free = locked.clone().unlock_()
    assert not free.pow(free.clone(), default="intersection").is_locked


@pytest.mark.parametrize("default", [1, "intersection"])
@pytest.mark.parametrize("stacked", [False, True])
def test_default_keeps_the_lock_of_a_locked_collection(default: object, stacked: bool) -> None:
    """``x.pow(y, default=...)`` of a locked ``x`` is locked down to its nested nodes, as
    ``x.pow(y)`` is (and the peer's): the keys are lined up on an unlocked copy first
    (differential program 15,840,999)."""

    def make() -> TensorDict:
        inner = TensorDict({"d": torch.ones(1, 4)}, [1, 4])
        return TensorDict({"m": inner, "d": torch.full((1,), 2.0)}, [1])

    x = lazy_stack([make(), make()], 0) if stacked else make()
    x.lock_()
    out = x.pow(x.clone(), default=default)
    assert out.is_locked and out["m"].is_locked
    assert torch.equal(out["d"], x["d"] ** x["d"])
    unlocked = make().add(make(), default=default)
    assert not unlocked.is_locked and not unlocked["m"].is_locked


def test_operands_that_are_not_numbers_tensors_or_collections() -> None:
    td = _without_python_values(_td())
    for bad in ("x", None, [1, 2], object()):
        with pytest.raises(TypeError):
            td + bad  # noqa: B018
        with pytest.raises(TypeError):
            bad * td  # noqa: B018
        with pytest.raises(TypeError):
            td.add(bad)
    assert (td == "x") is False and (td != None) is True  # noqa: E711
    import numpy as np

    assert equal((td + np.float64(2.0))["b"], td["b"] + 2.0)
    assert equal((td * np.int64(3))["b"], td["b"] * 3)


def test_inplace_that_would_change_the_dtype_raises_like_torch() -> None:
    td = TensorDict({"i": torch.arange(4), "f": torch.ones(4)}, [4])
    with pytest.raises(RuntimeError, match="Long|result type"):
        td.div_(2)
    with pytest.raises(RuntimeError):
        td += 0.5


def test_tensors_off_the_cpu_go_through_the_kernels_per_device_and_dtype() -> None:
    # Meta tensors hold no data, but the kernels run grouped by (device, dtype) for them,
    # as on an accelerator: each result must land under its own key.
    td = TensorDict(
        {"a": torch.ones(3, device="meta"), "b": torch.ones(3, 2, dtype=torch.float64,
         device="meta"), "c": torch.ones(3, 4, device="meta")},
        [3],
    )  # fmt: skip
    layout = [(v.dtype, v.shape, v.device) for v in td.values()]
    for out in (td + 1, td * td, td.exp(), td.clamp(0, 1), td.lerp(td, 0.5), -td):
        assert [(v.dtype, v.shape, v.device) for v in out.values()] == layout
    assert td.mul_(2).add_(td, alpha=0.5) is td


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_results_match_the_cpu() -> None:
    td = _without_python_values(_td())
    td["i"] = torch.arange(12).reshape(3, 4)
    td["h"] = torch.rand(3, 4).half()
    gpu = td.to("cuda")
    calls: list[Callable[[Any], Any]] = [
        lambda x: x + 1, lambda x: x * x, lambda x: x.exp(), lambda x: 2 - x,
        lambda x: x.clamp(0, 1), lambda x: x.sum(), lambda x: x.float().mean(0),
        lambda x: x.clone().mul_(2).add_(x, alpha=2), lambda x: x > 0,
    ]  # fmt: skip
    for call in calls:
        expected, got = call(td), call(gpu)
        assert got.device == torch.device("cuda", 0) or got.device is None
        for path, leaf in leaf_items(expected):
            assert torch.allclose(got.get(path).cpu().double(), leaf.double(), atol=1e-3)


def test_data_gives_the_tensors_outside_autograd() -> None:
    params = TensorDict(
        {"w": torch.ones(3, requires_grad=True), "n": {"b": torch.zeros(2, requires_grad=True)}}
    )
    data = params.data
    assert not data["w"].requires_grad and data["w"].data_ptr() == params["w"].data_ptr()
    data.lerp_(data * 3, 0.5)  # in place, as a soft update of parameters does
    assert torch.equal(params["w"].detach(), torch.full((3,), 2.0))

    @tensorclass
    class WithData:  # a field named `data` replaces the member, as in the peer
        data: torch.Tensor
        label: str

    r = WithData(torch.ones(2), "x", batch_size=[2])
    assert torch.equal((r + 1).data, torch.full((2,), 2.0))


def test_empty_collections() -> None:
    empty = TensorDict(batch_size=[3])
    for out in (empty + 1, -empty, empty.exp(), empty * empty, empty.float(), empty == 1):
        assert type(out) is TensorDict and out.batch_size == torch.Size([3])
        assert list(out.keys()) == []
    assert empty.add_(1) is empty


# --- comparisons and masks ----------------------------------------------------------------


def test_comparisons_give_bool_collections_that_all_and_any_reduce() -> None:
    td = _without_python_values(_td())
    for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
        out = op(td, 0)
        assert type(out) is TensorDict and out.batch_size == td.batch_size
        for path, leaf in leaf_items(td):
            assert equal(out.get(path), op(leaf, 0))
    assert (td == td).all() is True and (td != td).any() is False
    assert (td > -100).all() is True and (td > 100).any() is False
    both = (td > 0) & (td < 1)
    for path, leaf in leaf_items(td):
        assert equal(both.get(path), (leaf > 0) & (leaf < 1))
        assert equal(((td > 0) | True).get(path), torch.ones_like(leaf, dtype=torch.bool))
        assert equal(((td > 0) ^ (td < 1)).get(path), (leaf > 0) ^ (leaf < 1))
    mask = td > 0
    assert (mask & (td < 1)) is not mask
    copy = mask.clone()
    copy &= td < 1
    assert equal(copy["b"], both["b"])


def test_comparing_with_a_tensor_is_right_aligned_with_the_batch_dims() -> None:
    td = TensorDict({"a": torch.arange(6).reshape(2, 3), "f": torch.zeros(2, 3, 2)}, [2, 3])
    out = td == torch.arange(3)
    assert torch.equal(out["a"], td["a"] == torch.arange(3))
    assert out["f"].shape == (2, 3, 2)
    with pytest.raises((RuntimeError, ValueError)):
        td == torch.tensor([0, 1])  # noqa: B015


class _AN(TensorClass):
    a: torch.Tensor
    n: TensorDict


@pytest.mark.parametrize("kind", ["dense", "lazy", "record"])
def test_comparing_with_a_dict_goes_key_by_key(kind: str) -> None:
    td = TensorDict({"a": torch.arange(6.0).reshape(2, 3), "n": {"b": torch.ones(2)}}, [2])
    subject: Any = {
        "dense": td,
        "lazy": tclass.lazy_stack([td[0], td[1]]),
        "record": _AN(a=td["a"], n=td["n"], batch_size=[2]),
    }[kind]
    assert (subject == subject.to_dict()).all() is True  # as the peer: a bool collection
    zeros = td.clone().zero_().to_dict()
    assert (subject != zeros).any() is True
    out = subject == {"a": 0, "n": {"b": 1}}  # numbers and nested dicts, leaf by leaf
    assert torch.equal(out.get("a"), td["a"] == 0) and bool(out.get(("n", "b")).all())
    with pytest.raises(errors.KeyNotFoundError, match="only in the left one: \\['n'\\]"):
        subject == {"a": td["a"]}  # noqa: B015


class _Node(TensorClass):
    x: torch.Tensor
    child: _Node | None = None
    label: str | None = None


def test_a_record_equals_its_round_trip_through_to_dict() -> None:
    # The unset fields of a record (None, not entries) face the None values to_dict()
    # gives for them: equal, both ways, as in the peer.
    inner = _Node(x=torch.ones(3), batch_size=[3])
    record = _Node(x=torch.zeros(3), child=inner, label="l", batch_size=[3])
    td = TensorDict({"r": record, "a": torch.arange(3)}, [3])
    back = TensorDict.from_dict(td.to_dict(), auto_batch_size=False)
    assert ("r", "child", "label") in back.keys(True) and back["r", "child", "label"] is None
    assert (back == td).all() and (td == back).all() and not (back != td).any()
    back["r", "child", "label"] = "set"  # a value, facing an unset field: keys differ
    with pytest.raises(errors.KeyNotFoundError, match="only in the left one: \\['label'\\]"):
        back == td  # noqa: B015


def test_where_masked_fill_and_torch_where() -> None:
    td = _without_python_values(_td())
    cond = td > 0
    out = torch.where(cond, td, 0.0)  # a condition collection, as tensors have
    for path, leaf in leaf_items(td):
        assert equal(out.get(path), torch.where(leaf > 0, leaf, 0.0))
    out = torch.where(cond, 1.0, td)
    for path, leaf in leaf_items(td):
        assert equal(out.get(path), torch.where(leaf > 0, 1.0, leaf))
    batch_cond = torch.arange(12).reshape(3, 4) % 2 == 0
    out = torch.where(batch_cond, td, td * 2)
    for path, leaf in leaf_items(td):
        assert equal(out.get(path), torch.where(_pad(batch_cond, 2, leaf), leaf, leaf * 2))
    out = td.where(batch_cond, 0)
    assert equal(out["b"], torch.where(batch_cond, td["b"], 0.0))
    filled = td.masked_fill(cond, 7.0)
    for path, leaf in leaf_items(td):
        assert equal(filled.get(path), leaf.masked_fill(leaf > 0, 7.0))
    copy = td.clone()
    assert copy.masked_fill_(batch_cond, -1.0) is copy
    assert equal(copy["b"], td["b"].masked_fill(batch_cond, -1.0))


def test_masked_fill_keeps_a_strided_layout() -> None:
    # the peer fills a clone in place: a transposed tensor's result stays non-contiguous
    # (program 14,210,202 of index,shape,combine --length 12); a contiguous one stays so
    base = torch.arange(24.0).reshape(3, 2, 4)
    td = TensorDict({"a": base.transpose(0, 1), "b": torch.zeros(2, 3)}, batch_size=[2, 3])
    mask = torch.tensor([[True, False, True], [False, False, True]])
    filled = td.masked_fill(mask, -1.5)
    assert not filled["a"].is_contiguous() and filled["b"].is_contiguous()
    assert filled["a"].stride() == td["a"].stride()
    assert not filled.is_contiguous()
    assert equal(filled["a"], td["a"].masked_fill(mask[..., None], -1.5))
    assert equal(filled["b"], torch.zeros(2, 3).masked_fill(mask, -1.5))
    assert equal(td["a"], base.transpose(0, 1))  # the source untouched
    # under vmap, with a mapped mask, out of place (no in-place fill of an unmapped clone)
    mapped = torch.vmap(lambda m: td.masked_fill(m, -1.5)["a"])(torch.stack([mask, ~mask]))
    assert equal(mapped[0], filled["a"])
    assert equal(mapped[1], td["a"].masked_fill(~mask[..., None], -1.5))


def test_copy_zero_fill() -> None:
    td = _without_python_values(_td())
    target = td.clone().zero_()
    assert all(bool((leaf == 0).all()) for _, leaf in leaf_items(target))
    storages = [leaf.data_ptr() for _, leaf in leaf_items(target)]
    assert target.copy_(td) is target
    assert [leaf.data_ptr() for _, leaf in leaf_items(target)] == storages
    for path, leaf in leaf_items(td):
        assert equal(target.get(path), leaf)
    assert target.zero_().copy_(td.exclude("b")) is target  # the source's keys only
    assert bool((target["b"] == 0).all()) and equal(target["a"], td["a"])
    extra = td.clone()
    extra["z"] = torch.zeros(3, 4)
    assert target.zero_().copy_(extra) is target  # the source's extra key unread (the peer's)
    assert "z" not in target.keys() and equal(target["b"], td["b"])
    assert torch.equal(target.fill_("b", 3.0)["b"], torch.full((3, 4), 3.0))


def test_copy_from_parameters_records_each_copy_as_torch() -> None:
    """A source holding a parameter beside an integer tensor (a TensorDictParams): each
    copy is recorded as ``Tensor.copy_`` records it (torch's fused copy would mark the
    integer destination as requiring grad, with no derivative), as the peer."""
    params = tclass.TensorDictParams(
        TensorDict(b=torch.ones(1), d=torch.arange(4).reshape(2, 2), batch_size=[])
    )
    target = TensorDict(b=torch.zeros(1), d=torch.zeros(2, 2, dtype=torch.long), batch_size=[])
    assert target.copy_(params) is target
    assert target["b"].requires_grad and not target["d"].requires_grad
    assert torch.equal(target["d"], torch.arange(4).reshape(2, 2))
    assert torch.equal(target.clamp(1, -1)["d"], torch.full((2, 2), -1))  # torch.clamp's rule
    target["b"].sum().backward()
    assert torch.equal(params["b"].grad, torch.ones(1))
    with torch.no_grad():
        plain = TensorDict(b=torch.zeros(1), d=torch.zeros(2, 2, dtype=torch.long))
        assert not plain.copy_(params)["b"].requires_grad


# --- Python values, classes, locks ------------------------------------------------------


def test_python_values_are_kept_and_shared() -> None:
    td = _td()
    for out in (td + 1, td * td, -td, td.exp(), td.float(), td.clamp(0, 1), td < 0):
        assert out.get("label").data == "pong"
    assert (td + 1).get("label").data is td.get("label").data
    p, q = tclass.NonTensorData("p"), tclass.NonTensorData("q")
    stacked = tclass.stack([TensorDict(x=torch.ones(2), s=p), TensorDict(x=torch.ones(2), s=q)])
    assert (stacked * 2).get("s").tolist() == ["p", "q"]


@pytest.mark.parametrize("kinds", RECORDS, ids=IDS)
def test_records_keep_their_class_and_python_values(kinds: tuple[type, type]) -> None:
    record_cls, inner_cls = kinds
    r = record(kinds, [4])
    other = record(kinds, [4], seed=1)
    results = [
        r + 1, 1 - r, r * other, r / other, -r, abs(r), r.exp(), r.sqrt(), r.clamp(-1, 1),
        torch.exp(r), torch.clamp(r, 0, 1), r.lerp(other, 0.5), r.float(), r.double(),
        torch.where(r > 0, r, 0.0), r ** 2, 2 ** r,
    ]  # fmt: skip
    for out in results:
        assert type(out) is record_cls
        assert type(out.inner) is inner_cls
        assert out.env is r.env and out.meta is r.meta
        assert out.batch_size == r.batch_size
    assert equal((r * other).obs, r.obs * other.obs)
    assert equal((1 - r).inner.x, 1 - r.inner.x)
    normed = (r - r.mean()) / r.std()
    assert type(normed) is record_cls
    assert torch.allclose(normed.obs, (r.obs - r.obs.mean()) / r.obs.std())
    mask = r > 0
    assert type(mask) is record_cls and mask.obs.dtype is torch.bool and mask.env == "pong"
    assert r.add_(1) is r and r.mul_(0.5).add_(other, alpha=0.1) is r


@pytest.mark.parametrize("kinds", RECORDS, ids=IDS)
def test_records_with_a_td_operand_and_optional_fields(kinds: tuple[type, type]) -> None:
    record_cls, _ = kinds
    r = record(kinds, [2])
    plain = r.to_tensordict().exclude("env", "meta")
    out = r + plain
    assert type(out) is record_cls and equal(out.obs, r.obs * 2)
    assert type(plain + r) is TensorDict
    no_meta = r.replace(meta=None)
    assert (no_meta * 2).meta is None


def test_frozen_records_support_out_of_place_and_in_place_math() -> None:
    class Frozen(TensorClass, frozen=True):
        x: torch.Tensor

    f = Frozen(x=torch.ones(3), batch_size=[3])
    assert type(f + 1) is Frozen and torch.equal((f + 1).x, torch.full((3,), 2.0))
    assert f.add_(1) is f and torch.equal(f.x, torch.full((3,), 2.0))


def test_lock_state_follows_the_peer() -> None:
    td = _without_python_values(_td()).lock_()
    assert (td + 1).is_locked and td.exp().is_locked and td.float().is_locked
    assert not (td == td).is_locked
    assert td.add_(1) is td and td.is_locked
    td["n"] += 1  # in place on a locked collection: the same object back under its key
    assert not (_without_python_values(_td()) + 1).is_locked


def test_lock_after_a_tensor_operand_with_dims_follows_the_peer() -> None:
    """A tensor with dims spread over the batch dims unlocks, unless a collection operand
    is paired beside it (``addcmul(t, td)``) or each lazy-stack member takes a 0-d slice
    of it (members without batch dims)."""
    td = TensorDict({"a": torch.ones(2, 3, 4), "n": {"b": torch.ones(2, 3)}}, [2, 3]).lock_()
    ones, row = torch.ones_like(td), torch.full((3,), 2.0)
    assert not (td * row).is_locked and not td.addcmul(row, row).is_locked
    assert td.addcmul(row, ones).is_locked and td.addcdiv(row, ones, value=2).is_locked
    assert torch.equal(td.addcmul(row, ones)["a"], torch.full((2, 3, 4), 3.0))
    scalars = tclass.lazy_stack([TensorDict({"c": torch.ones(())}, []) for _ in range(2)])
    scalars.lock_()
    pair = torch.tensor([2.0, 3.0])
    for out in (scalars * pair, scalars.minimum(pair), scalars**pair, pair - scalars):
        assert out.is_locked and all(member.is_locked for member in out.tensordicts)
    rows = tclass.lazy_stack([TensorDict({"c": torch.ones(3)}, [3]) for _ in range(2)])
    assert not (rows.lock_() * torch.ones(2, 3)).is_locked
    assert (rows * torch.tensor(2.0)).is_locked
    # so do the nested collections left empty: dropped as with a number
    hollow = [TensorDict({"c": torch.ones(1), "m": {}}, []) for _ in range(2)]
    assert list((tclass.lazy_stack(hollow) / pair).keys()) == ["c"]
    assert list((td.unlock_().set("e", TensorDict({}, [2, 3])) * row).keys()) == ["a", "n", "e"]


# --- lazy stacks ------------------------------------------------------------------------


def _member_check(result: Any, members: list[TensorDict], fn: Callable[..., Any]) -> None:
    assert type(result) is LazyStackedTensorDict
    assert len(result.tensordicts) == len(members)
    for got, member in zip(result.tensordicts, members):
        for path, leaf in leaf_items(member):
            assert equal(got.get(path), fn(leaf)), path


@SETTINGS
@given(data=lazy_members())
def test_lazy_stacks_apply_member_wise_without_densifying(
    data: tuple[list[TensorDict], int],
) -> None:
    members, dim = data
    lazy = tclass.lazy_stack(members, dim)
    floats = [m.float() for m in members]
    flazy = tclass.lazy_stack(floats, dim)
    _member_check(flazy + 1, floats, lambda t: t + 1)
    _member_check(2 * flazy, floats, lambda t: 2 * t)
    _member_check(flazy.exp(), floats, torch.exp)
    _member_check(torch.sigmoid(flazy), floats, torch.sigmoid)
    _member_check(flazy * flazy, floats, lambda t: t * t)
    _member_check(flazy.clamp(0, 3), floats, lambda t: t.clamp(0, 3))
    _member_check(lazy.float(), members, lambda t: t.float())
    _member_check(lazy == lazy, members, lambda t: t == t)
    assert (lazy == lazy).all() is True
    before = [[leaf.clone() for _, leaf in leaf_items(m)] for m in floats]
    assert flazy.mul_(2).add_(flazy, alpha=0.5) is flazy
    for member, leaves in zip(floats, before):
        for (_, leaf), old in zip(leaf_items(member), leaves):
            assert equal(leaf, old * 2 + old * 2 * 0.5)


def test_lazy_stack_with_a_batch_tensor_and_a_dense_operand() -> None:
    members = [
        TensorDict({"x": torch.ones(3, 2)}, [3]),
        TensorDict({"x": torch.ones(3, 5)}, [3]),
    ]
    lazy = tclass.lazy_stack(members, 0)
    scale = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    out = lazy * scale
    assert type(out) is LazyStackedTensorDict
    assert torch.equal(out.tensordicts[1]["x"][:, 0], scale[1])
    same = tclass.lazy_stack([m.clone() for m in members], 0)
    assert torch.equal((lazy + same).tensordicts[1]["x"], torch.full((3, 5), 2.0))
    dense = tclass.lazy_stack([TensorDict({"x": torch.ones(3, 2)}, [3])] * 2).contiguous()
    homogeneous = tclass.lazy_stack([TensorDict({"x": torch.ones(3, 2)}, [3])] * 2)
    assert torch.equal((homogeneous + dense)["x"], torch.full((2, 3, 2), 2.0))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_a_0d_tensor_operand_stays_0d_for_each_member(dim: int) -> None:
    """A 0-d tensor is a scalar in torch's type promotion: each member's integer entries
    keep their dtype, as the dense stack's do (and an in-place write casts it as torch)."""
    members = [
        TensorDict({"u": torch.arange(6, dtype=torch.uint8).reshape(2, 3) + i,
                    "h": torch.full((2, 3), 1.5, dtype=torch.float16)}, [2, 3])
        for i in range(2)
    ]  # fmt: skip
    lazy = tclass.lazy_stack(members, dim)
    dense = lazy.contiguous()
    for op in (operator.add, operator.sub, operator.mul, operator.pow, torch.maximum):
        for other in (torch.tensor(2), torch.tensor(0.5)):
            got, want = op(lazy, other).contiguous(), op(dense, other)
            for key in ("u", "h"):
                assert got[key].dtype == want[key].dtype == op(dense[key], other).dtype
                assert torch.equal(got[key], want[key]), (op, other, key)
    lazy %= torch.tensor(-1)  # -1 as uint8 is 255: 5 % 255 == 5, as on the tensor
    assert torch.equal(lazy.contiguous()["u"], dense["u"].remainder_(torch.tensor(-1)))
    assert lazy.contiguous()["u"].max() == 6


def test_dtypes_and_operand_alignment_are_torchs_entry_by_entry() -> None:
    """Where the peer's fused kernels keep or promote by operator: each entry gets the
    dtype torch gives it (a 0-d tensor a scalar); ``&`` lines a tensor up with the batch
    dims as the other operators; ``1 / td`` is torch's division."""
    entries = {"u": torch.tensor(3, dtype=torch.uint8), "v": torch.ones(2, 2).byte()}
    entries.update(h=torch.tensor(3.0).half(), b=torch.tensor([True, False]))
    td = TensorDict(entries, [])
    two, half = torch.tensor(2), torch.tensor(0.5)
    for op in (operator.add, operator.sub, operator.mul, operator.pow):
        for key, other in (("u", two), ("v", two), ("h", half)):
            assert op(td.exclude("b"), other)[key].dtype == op(td[key], other).dtype, (op, key)
    assert td.add(True, alpha=2)["b"].tolist() == [True, True]  # torch's bool result
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with"):
        td.select("b").sub(True, alpha=2)
    assert td.select("b").maximum(torch.tensor(True))["b"].tolist() == [True, True]
    mask = TensorDict({"m": torch.tensor([[True, False], [True, True]])}, [2])
    row = torch.tensor([False, True])
    assert equal((mask & row)["m"], mask["m"] & row[:, None])  # row i with element i
    assert equal((row & mask)["m"], mask["m"] & row[:, None])
    assert equal((1 / td.select("h"))["h"], 1 / td["h"])


def test_records_over_a_lazy_stack() -> None:
    parts = [record(RECORDS[0], [2], seed=i) for i in range(3)]
    parts[1] = parts[1].replace(obs=torch.randn(2, 5))  # heterogeneous obs
    stacked = tclass.lazy_stack(parts)
    out = stacked * 2
    assert type(out) is Rec and out.env == [["pong"] * 2] * 3  # per member, as the peer
    assert [tuple(p.obs.shape) for p in out.unbind(0)] == [(2, 3), (2, 5), (2, 3)]
    assert equal(out[1].obs, parts[1].obs * 2)
    assert stacked.add_(1) is stacked and equal(
        parts[2].reward, record(RECORDS[0], [2], 2).reward + 1
    )


# --- in-place math is all or nothing: every entry checked before any is written ----------


class _Flagged(TensorClass):
    obs: torch.Tensor
    flag: torch.Tensor


def _one_refused(kind: str, good: torch.dtype, bad: torch.dtype, path: Path) -> tuple[Any, Any]:
    """A collection of ``kind`` whose entries are of dtype ``good`` but one of ``bad``,
    last in walk order (so the others would be written first), and that entry's key."""
    if kind == "record":
        obs = torch.full((3, 2), 2, dtype=good)
        return _Flagged(obs=obs, flag=torch.ones(3, dtype=bad), batch_size=[3]), "flag"
    if kind == "lazy":  # members of different shapes: the walk goes member by member
        flags = torch.ones(4, dtype=bad)
        members = [
            TensorDict({"a": torch.full((4, i + 1), 2, dtype=good), "bad": flags.clone()}, [4])
            for i in range(3)
        ]
        return tclass.lazy_stack(members), "bad"
    td = TensorDict(
        {"a": torch.full((3, 4), 2, dtype=good),
         "n": {"x": torch.full((3, 2), 2, dtype=good), "bad": torch.ones(3, dtype=bad)}},
        [3],
    )  # fmt: skip
    return (td.memmap(path / "td") if kind == "memmap" else td), ("n", "bad")


def _snapshot(collection: Any) -> list[torch.Tensor]:
    """Copies of every tensor (a lazy stack's member by member)."""
    if isinstance(collection, LazyStackedTensorDict):
        return [leaf.clone() for member in collection.tensordicts for _, leaf in leaf_items(member)]
    return [leaf.clone() for _, leaf in leaf_items(collection)]


# (what is called, the name the error gives, the dtype of the other entries, the dtype torch
# refuses): a result type the entry cannot hold, a kernel its dtype lacks, a number refused
# for its dtype (a negative integer power, a bound that overflows float16).
REFUSED: list[tuple[Callable[[Any], Any], str, torch.dtype, torch.dtype]] = [
    (lambda c: operator.iadd(c, 1), "+=", torch.float32, torch.bool),
    (lambda c: c.add_(1), "add_", torch.float32, torch.bool),
    (lambda c: operator.isub(c, 1), "-=", torch.int64, torch.bool),
    (lambda c: c.mul_(0.5), "mul_", torch.float32, torch.int64),
    (lambda c: operator.imul(c, 0.5), "*=", torch.float32, torch.int64),
    (lambda c: operator.itruediv(c, 2), "/=", torch.float32, torch.int64),
    (lambda c: c.div_(2), "div_", torch.float32, torch.int32),
    (lambda c: c.exp_(), "exp_", torch.float32, torch.int64),
    (lambda c: c.sqrt_(), "sqrt_", torch.float64, torch.uint8),
    (lambda c: c.pow_(-1), "pow_", torch.float32, torch.int64),
    (lambda c: operator.ipow(c, 0.5), "**=", torch.float32, torch.int64),
    (lambda c: c.clamp_(-1e5, 1e5), "clamp_", torch.float32, torch.float16),
    (lambda c: c.clamp_min_(0.5), "clamp_min_", torch.float32, torch.int64),
    (lambda c: c.neg_(), "neg_", torch.float32, torch.bool),
    (lambda c: c.abs_(), "abs_", torch.float32, torch.bool),
    (lambda c: c.frac_(), "frac_", torch.float32, torch.int64),
    (lambda c: c.lerp_(c, 0.5), "lerp_", torch.float32, torch.int64),
    (lambda c: operator.ior(c, 1), "|=", torch.int64, torch.float32),
    (lambda c: operator.imod(c, 0), "%=", torch.float32, torch.int64),
]
REFUSED_IDS = [f"{name}-{str(bad)[6:]}" for _, name, _, bad in REFUSED]


@pytest.mark.parametrize("kind", ["nested", "lazy", "record", "memmap"])
@pytest.mark.parametrize(("call", "name", "good", "bad"), REFUSED, ids=REFUSED_IDS)
def test_inplace_math_refused_for_one_entry_changes_nothing(
    kind: str,
    call: Callable[[Any], Any],
    name: str,
    good: torch.dtype,
    bad: torch.dtype,
    tmp_path: pathlib.Path,
) -> None:
    collection, key = _one_refused(kind, good, bad, tmp_path)
    before = _snapshot(collection)
    raised_by_torch = _outcome(call, torch.ones(3, dtype=bad))  # the entry alone, in torch
    assert isinstance(raised_by_torch, type) and issubclass(raised_by_torch, RuntimeError)
    with pytest.raises(errors.InPlaceWriteError) as info:
        call(collection)
    assert isinstance(info.value, raised_by_torch)  # and what torch raises there
    message = str(info.value)
    assert f"{name}: " in message and repr(key) in message and str(bad) in message
    assert "Nothing was changed" in message
    assert all(map(equal, _snapshot(collection), before))
    if kind == "memmap":  # nor on disk
        on_disk = TensorDict.load_memmap(tmp_path / "td")
        assert all(map(equal, _snapshot(on_disk), before))


def test_an_operand_entry_that_does_not_broadcast_changes_nothing() -> None:
    td = TensorDict(
        {"a": torch.ones(3, 4), "n": {"x": torch.ones(3, 2), "y": torch.ones(3, 5)}}, [3]
    )
    before = _snapshot(td)
    other = td.clone()
    other["n", "y"] = torch.ones(3, 2)  # [3, 2] does not broadcast into [3, 5]
    for call in (
        lambda: td.add_(other),
        lambda: operator.imul(td, other),
        lambda: td.lerp_(other, 0.5),
        lambda: td.clamp_(other, None),
        lambda: td.addcmul_(other, td),
        lambda: td.copy_(other),  # copy_ takes any dtype: its shapes are checked
    ):
        with pytest.raises(errors.InPlaceWriteError, match=r"\('n', 'y'\) of shape \[3, 2\]"):
            call()
        assert all(map(equal, _snapshot(td), before))
    other["n", "y"] = torch.ones(3, 5, 1)  # a dim more: torch's result would grow
    with pytest.raises(RuntimeError, match=r"into the shape \[3, 5\]"):
        td.sub_(other)
    assert all(map(equal, _snapshot(td), before))
    other["n", "y"] = torch.full((3, 1), 2.0)  # broadcasts into [3, 5]: taken
    assert td.mul_(other) is td and torch.equal(td["n", "y"], torch.full((3, 5), 2.0))


def test_a_lazy_stack_refusing_an_operand_entry_changes_no_member() -> None:
    members = [TensorDict({"a": torch.ones(4, i + 1), "b": torch.ones(4)}, [4]) for i in range(2)]
    lazy = tclass.lazy_stack(members)
    other = tclass.lazy_stack([m.clone() for m in members])
    other.tensordicts[1]["b"] = torch.ones(4, 3)
    before = _snapshot(lazy)
    with pytest.raises(errors.InPlaceWriteError, match="'b' of shape"):
        lazy.add_(other)
    assert all(map(equal, _snapshot(lazy), before))


def test_operands_refused_for_one_entry_change_nothing() -> None:
    """Tensors and collections as operands: a dtype one entry cannot take, a batch the
    operand would grow, a key it lacks (at any depth) all raise before any write."""
    td = TensorDict({"f": torch.ones(3, 2), "n": {"i": torch.ones(3, dtype=torch.int64)}}, [3])
    before = _snapshot(td)
    floats = td.float()
    lacking = td.float().exclude(("n", "i"))
    grown = r"batch size \[3\] to \[2, 3\]"
    for call, error, match in [
        (lambda: td.add_(torch.full((3,), 0.5)), errors.InPlaceWriteError, r"\('n', 'i'\)"),
        (lambda: operator.iadd(td, floats), errors.InPlaceWriteError, r"\('n', 'i'\)"),
        (lambda: td.mul_(torch.ones(2, 3)), errors.InPlaceWriteError, grown),
        (lambda: td.lerp_(lacking, 0.5), errors.KeyNotFoundError, "'i'"),
        (lambda: td.lerp_(lacking.set("z", torch.ones(3)), 0.5), errors.KeyNotFoundError, "'i'"),
    ]:  # fmt: skip
        with pytest.raises(error, match=match):
            call()
        assert all(map(equal, _snapshot(td), before))
    assert isinstance(errors.InPlaceWriteError("x"), RuntimeError)


def test_inplace_math_that_every_entry_takes_runs_as_before() -> None:
    """Mixed dtypes where each takes the operation: no refusal, the results as torch's."""
    td = TensorDict(
        {"f": torch.ones(3, 2), "h": torch.ones(3, dtype=torch.float16),
         "i": torch.arange(3), "b": torch.ones(3, dtype=torch.bool)},
        [3],
    )  # fmt: skip
    expected = {k: v.clone() for k, v in td.items()}
    assert td.mul_(td).add_(td) is td  # bool * bool and bool + bool stay bool
    td.exclude("b").clamp_(0, 3)
    for k, v in expected.items():
        v.mul_(v).add_(v)
        assert equal(td[k], v if k == "b" else v.clamp_(0, 3)), k
    td.exclude("b", "i").pow_(-1)  # floats take negative powers
    assert torch.equal(td["i"], torch.tensor([0, 2, 3])) and td["h"].dtype == torch.float16
    assert torch.equal(td["f"], torch.full((3, 2), 0.5))


# --- memory-mapped collections ------------------------------------------------------------


def test_inplace_math_writes_into_memory_mapped_files(tmp_path: pathlib.Path) -> None:
    td = TensorDict({"a": torch.zeros(3, 4), "n": {"c": torch.ones(3)}}, [3])
    saved = td.memmap(tmp_path / "td")
    saved += 1
    saved.mul_(2).add_(saved, alpha=0.5)
    saved["n"] += 1
    saved.exp_().clamp_(0, 100)
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert torch.equal(loaded["a"], saved["a"]) and torch.equal(loaded["n", "c"], saved["n", "c"])
    assert torch.allclose(loaded["a"], torch.full((3, 4), 3.0).exp().clamp(0, 100))
    out = saved + 1  # out-of-place: in memory, the files unchanged
    assert not isinstance(out["a"], tclass.MemoryMappedTensor)
    assert torch.equal(TensorDict.load_memmap(tmp_path / "td")["a"], loaded["a"])


def test_math_on_an_hdf5_collection(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("h5py")
    td = TensorDict({"a": torch.ones(3, 4), "n": {"b": torch.arange(3.0)}}, [3])
    h5 = tclass.PersistentTensorDict.from_dict(td, filename=tmp_path / "x.h5")
    out = h5 * 2 + 1  # out of place: a TensorDict in memory
    assert type(out) is TensorDict and torch.equal(out["n", "b"], td["n", "b"] * 2 + 1)
    h5.mul_(2).add_(1)  # in place: written into the file
    h5 += h5
    reread = tclass.PersistentTensorDict.from_h5(tmp_path / "x.h5")
    assert torch.equal(reread["a"], torch.full((3, 4), 6.0))
    assert torch.equal(reread["n", "b"], (td["n", "b"] * 2 + 1) * 2)
    assert torch.equal(h5.sum()["a"], torch.tensor(72.0))
    h5["n", "flag"] = torch.zeros(3, dtype=torch.bool)
    with pytest.raises(tclass.errors.InPlaceWriteError, match=r"\('n', 'flag'\)"):
        h5 += 1  # the bool dataset refuses: no dataset of the file is written
    reread = tclass.PersistentTensorDict.from_h5(tmp_path / "x.h5")
    assert torch.equal(reread["a"], torch.full((3, 4), 6.0))


@pytest.mark.parametrize("kinds", RECORDS, ids=IDS)
def test_inplace_math_on_a_memory_mapped_record(
    kinds: tuple[type, type], tmp_path: pathlib.Path
) -> None:
    record_cls, _ = kinds
    r = record(kinds, [3]).memmap(tmp_path / "r")
    expected = r.obs * 0.5 + 1
    r.mul_(0.5).add_(1)
    loaded = record_cls.load_memmap(tmp_path / "r")
    assert equal(loaded.obs, expected) and loaded.env == "pong"


# --- casts --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASTS))
def test_dtype_shorthands(name: str) -> None:
    td = _td()
    out = getattr(td, name)()
    assert type(out) is TensorDict and out.get("label").data == "pong"
    for path, leaf in leaf_items(td):
        assert out.get(path).dtype is CASTS[name]
        assert equal(out.get(path), leaf.to(CASTS[name]))


def test_cast_filter_type_and_to() -> None:
    td = TensorDict({"x": torch.ones(3), "i": torch.arange(3), "n": {"y": torch.ones(3)}}, [3])
    keep_ints = td.half(cast_filter=lambda key, value: value.is_floating_point())
    assert keep_ints["x"].dtype is torch.float16 and keep_ints["i"].dtype is torch.int64
    assert keep_ints["n", "y"].dtype is torch.float16
    seen = []
    td.float(cast_filter=lambda key, value: seen.append(key) or key == ("n", "y"))
    assert sorted(seen) == [("i",), ("n", "y"), ("x",)]
    assert td.type(torch.float64)["i"].dtype is torch.float64
    assert td.type(torch.float64, cast_filter=lambda k, v: k == ("x",))["i"].dtype is torch.int64
    assert td.to(torch.float16)["i"].dtype is torch.float16
    only_x = td.to(torch.float64, cast_filter=lambda key, value: key == ("x",))
    assert only_x["x"].dtype is torch.float64 and only_x["n", "y"].dtype is torch.float32
    lazy = tclass.lazy_stack([td, td.clone()])
    assert lazy.to(torch.float16, cast_filter=tclass.is_inexact)[0]["i"].dtype is torch.int64
    assert tclass.is_inexact(torch.ones(1)) and not tclass.is_inexact("k", torch.arange(1))
    assert td.dtype is None and td.float().dtype is torch.float32  # one dtype, or None
    assert td.double().is_floating_point() and not td.is_floating_point()
    assert td.int(cast_filter=tclass.is_inexact)["x"].dtype is torch.int32


@pytest.mark.parametrize("kinds", RECORDS, ids=IDS)
def test_casts_on_records(kinds: tuple[type, type]) -> None:
    record_cls, inner_cls = kinds
    r = record(kinds, [2])
    out = r.bfloat16()
    assert type(out) is record_cls and type(out.inner) is inner_cls
    assert out.obs.dtype is torch.bfloat16 and out.env is r.env
    only_obs = r.double(cast_filter=lambda key, value: key == ("obs",))
    assert only_obs.obs.dtype is torch.float64 and only_obs.reward.dtype is torch.float32


def test_the_class_cast_filter_is_the_default() -> None:
    class Mesh(TensorClass, cast_filter=tclass.is_inexact):
        points: torch.Tensor
        cells: torch.Tensor

    mesh = Mesh(points=torch.zeros(4, 3), cells=torch.zeros(4, 3, dtype=torch.long), batch_size=[4])
    assert mesh.bfloat16().points.dtype is torch.bfloat16
    assert mesh.bfloat16().cells.dtype is torch.int64  # the class's filter keeps it
    assert mesh.half(cast_filter=None).cells.dtype is torch.float16  # None: every tensor
    assert mesh.double(cast_filter=lambda key, value: key == ("cells",)).points.dtype is (
        torch.float32
    )


def test_casts_on_lazy_stacks_stay_lazy() -> None:
    members = [TensorDict({"x": torch.ones(2, 3)}, [2]), TensorDict({"x": torch.ones(2, 4)}, [2])]
    out = tclass.lazy_stack(members).half()
    assert type(out) is LazyStackedTensorDict
    assert [m["x"].dtype for m in out.tensordicts] == [torch.float16, torch.float16]


# --- against the peer ---------------------------------------------------------------------


def _peer() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pytest.importorskip("tensordict")


def _both(peer: Any) -> tuple[TensorDict, Any]:
    g = torch.Generator().manual_seed(5)
    leaves = {"a": torch.randn(3, 4, generator=g), "b": torch.rand(3, generator=g) + 0.1}
    inner = {"c": torch.randn(3, 2, generator=g)}
    mine = TensorDict({**leaves, "n": inner}, [3])
    theirs = peer.TensorDict({k: v.clone() for k, v in leaves.items()}, batch_size=[3])
    theirs["n"] = peer.TensorDict({k: v.clone() for k, v in inner.items()}, batch_size=[3])
    return mine, theirs


def _same_leaves(mine: Any, theirs: Any) -> None:
    expected = {(k,) if isinstance(k, str) else k: v for k, v in theirs.items(True, True)}
    got = dict(leaf_items(mine))
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert equal(got[key], value), key


PEER_CALLS: list[Callable[[Any, Any], Any]] = [
    lambda x, y: x + 1, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x / y,
    lambda x, y: 1 - x, lambda x, y: 3 / x, lambda x, y: x**2, lambda x, y: -x,
    lambda x, y: abs(x), lambda x, y: x % 0.3, lambda x, y: x == y, lambda x, y: x < 0,
    lambda x, y: (x > 0) & (y > 0), lambda x, y: ~(x > 0), lambda x, y: x.exp(),
    lambda x, y: x.sigmoid(), lambda x, y: x.clamp(-0.5, 0.5), lambda x, y: x.clamp_min(0),
    lambda x, y: x.lerp(y, 0.3), lambda x, y: x.addcmul(y, y, value=2),
    lambda x, y: x.add(y, alpha=3), lambda x, y: x.maximum(y), lambda x, y: x.pow(y.abs()),
    lambda x, y: x + torch.ones(3), lambda x, y: x.half(), lambda x, y: x.bool(),
    lambda x, y: torch.where(torch.tensor([True, False, True]), x, y),
    lambda x, y: torch.clamp(x, 0, 1), lambda x, y: torch.lerp(x, y, 0.5),
    lambda x, y: x.isfinite(), lambda x, y: x.reciprocal(), lambda x, y: x.round(),
    lambda x, y: x.clone().mul_(0.99).add_(y, alpha=0.01),
    lambda x, y: x.clone().addcdiv_(y, y.abs() + 1), lambda x, y: x.clone().exp_(),
]  # fmt: skip


@pytest.mark.peer
@pytest.mark.parametrize("call", PEER_CALLS, ids=range(len(PEER_CALLS)))
def test_same_leaves_as_the_peer(call: Callable[[Any, Any], Any]) -> None:
    peer = _peer()
    mine, theirs = _both(peer)
    other_mine, other_theirs = mine.apply(lambda t: t.flip(0)), theirs.apply(lambda t: t.flip(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = call(theirs, other_theirs)
    _same_leaves(call(mine, other_mine), expected)


@pytest.mark.peer
def test_the_peer_algebra_surface_is_covered() -> None:
    peer = _peer()
    names = [
        name
        for name in dir(peer.TensorDict)
        if not name.startswith("_") and name in dir(peer._base.pointwise._PointwiseOps)
    ]
    missing = [name for name in names if not hasattr(TensorDict, name)]
    assert not missing
    for name in names:
        for cls in (TensorDict, LazyStackedTensorDict, Rec):
            assert callable(getattr(cls, name)), (cls, name)


def test_a_0_dim_tensor_operand_keeps_the_leaf_dtypes() -> None:
    """Found by the differential fuzzer: a 0-dim tensor is not reshaped against leaves
    with feature dims, so torch's type promotion keeps ``int32`` (as in the peer)."""
    td = TensorDict({"a": torch.ones(1, 2, 2), "c": torch.ones(1, 2, 3, dtype=torch.int32)}, [1, 2])
    out = td.mul(torch.tensor(1))
    assert out["c"].dtype == torch.int32 and out["a"].dtype == torch.float32
    assert (td + torch.tensor(2))["c"].dtype == torch.int32


def test_a_tensor_operand_over_the_batch_dims_gives_an_unlocked_result() -> None:
    # As the peer: a tensor operand with dims is spread over the batch dims into a new,
    # unlocked collection; a number or a 0-d tensor keeps the lock.
    td = TensorDict({"a": torch.ones(4, 3), "n": TensorDict({"b": torch.ones(4)}, [4])}, [4])
    td.lock_()
    t = torch.ones(4)
    for out in (td + t, t - td, td.pow(t), td.maximum(t), td % t, td.div(t)):
        assert not out.is_locked and not out["n"].is_locked
    for out in (td + torch.tensor(2), td.mul(torch.tensor(2.0)), td + 1):
        assert out.is_locked and out["n"].is_locked


def test_arithmetic_on_a_locked_collection_without_tensors_is_unlocked_as_the_peer() -> None:
    empty = TensorDict({}, [3]).lock_()
    values = TensorDict({"s": "x"}, [3]).lock_()
    for td in (empty, values):
        for out in (td + 1, td * td.clone(), 2 - td, td.maximum(True), td.pow(td)):
            assert not out.is_locked
        assert td.float().is_locked and td.isnan().is_locked  # as the peer's
        assert td.where(torch.ones(3, dtype=torch.bool), 1.5).is_locked


def test_or_and_xor_results_are_unlocked_as_the_peer() -> None:
    td = TensorDict({"d": torch.ones(3, dtype=torch.uint8)}, [3]).lock_()
    assert not (td | td).is_locked and not (td ^ 1).is_locked and (td & td).is_locked


def test_binary_arithmetic_leaves_out_nested_collections_holding_nothing() -> None:
    """Found by the differential fuzzer: as the peer, ``+``, ``-``, ``**``, ``&``,
    ``minimum``... leave out nested collections with no entries (at any depth); unary
    operations and comparisons keep them."""
    td = TensorDict({"a": torch.ones(2), "m": {}, "n": {"o": {}, "b": torch.ones(2)}}, [])
    for result in (td + 1, 1 - td, td**2, td.minimum(td), td.clamp_min(0)):
        assert list(result.keys(True)) == ["a", ("n", "b"), "n"]
    assert "m" in abs(td).keys() and "m" in (td == td).keys()
    stack = tclass.lazy_stack([td, td.clone()])
    assert list((stack * 2).keys(True)) == ["a", ("n", "b"), "n"]


def test_where_pad_takes_the_other_collections_keys() -> None:
    """``where(cond, other, pad=)``: each side's missing entries are ``pad``, keys only
    ``other`` has included (nested ones too), as the peer's; Python values are left out."""
    cond = torch.tensor([True, False])
    td = TensorDict(x=torch.ones(2, 3), s="text", n={"a": torch.ones(2)}, batch_size=[2])
    other = TensorDict(
        x=torch.zeros(2, 3),
        y=torch.zeros(2),
        n={"b": torch.zeros(2)},
        m={"q": torch.zeros(2, 1)},
        batch_size=[2],
    )
    out = td.where(cond, other, pad=-1)
    assert sorted(out.keys(True, True), key=str) == [("m", "q"), ("n", "a"), ("n", "b"), "x", "y"]
    assert out["y"].tolist() == [-1.0, 0.0] and out["m", "q"].tolist() == [[-1.0], [0.0]]
    assert out["n", "a"].tolist() == [1.0, -1.0] and out["n", "b"].tolist() == [-1.0, 0.0]
    assert out["x"].tolist() == [[1.0] * 3, [0.0] * 3]
    assert set(td.keys()) == {"x", "s", "n"}  # the operands are unchanged
    assert set(other.keys()) == {"x", "y", "n", "m"}
    fewer = td.where(cond, TensorDict(y=torch.zeros(2), batch_size=[2]), pad=5)
    assert fewer["x"].tolist() == [[1.0] * 3, [5.0] * 3] and fewer["y"].tolist() == [5.0, 0.0]


def test_where_of_a_locked_collection_gives_an_unlockable_result() -> None:
    # A Python value both sides share is a new node in the result, not the locked one.
    td = TensorDict(x=torch.ones(3), s="text", batch_size=[3]).lock_()
    out = td.where(torch.tensor([True, False, True]), td.apply(torch.zeros_like))
    assert out.unlock_() is out and not out.is_locked and td.is_locked
    assert out["x"].tolist() == [1.0, 0.0, 1.0] and out["s"] == "text"
    out["s"] = "other"
    assert td["s"] == "text"


@pytest.mark.parametrize("stacked", [False, True])
def test_default_of_a_locked_collection_holding_nothing_is_unlocked(stacked: bool) -> None:
    """As ``x.pow(y)`` of a collection without entries and the peer's (program 15,910,879
    of methods,features,entries,records): ``default=`` gives a new unlocked collection."""

    def make() -> TensorDict:
        return TensorDict({}, batch_size=[3])

    x = lazy_stack([make(), make()], 1) if stacked else make()
    x.lock_()
    assert not x.pow(x.clone()).is_locked
    assert not x.pow(x.clone(), default=1).is_locked


@pytest.mark.parametrize("stacked", [False, True])
def test_default_of_a_locked_collection_of_python_values_is_unlocked(stacked: bool) -> None:
    """The same for a collection holding Python values and no tensor, nested ones too:
    ``default=`` gives a new unlocked collection, as without ``default`` and as the peer's
    (program 16,025,096 L12 of methods,features,entries,records, fz30a); one that holds a
    tensor keeps the lock (test above)."""

    def make() -> TensorDict:
        return TensorDict({"v": "x y", "n": {"s": "a"}}, batch_size=[3])

    x = lazy_stack([make(), make()], 1) if stacked else make()
    x.lock_()
    for default in (1, "intersection"):
        assert not x.pow(x.clone()).is_locked
        out = x.pow(x.clone(), default=default)
        assert not out.is_locked and sorted(out.keys()) == ["n", "v"]
        out["w"] = torch.zeros(out.batch_size)  # a new entry: unlocked
