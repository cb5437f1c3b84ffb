"""A Python number given to the CPU fused kernels as a 0-d tensor of the tensors' dtype
(``tclass/_base/implemented/_scalar_operand.py``): where it is routed, the results are
torch's own, bit for bit; where the results could differ (half precision, integers, a
mix of dtypes, autograd recording, subclasses, numbers torch rounds otherwise) the number
is left as it is."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tclass import TensorClass, TensorDict
from tclass._base.implemented import _scalar_operand
from tclass._base.implemented._scalar_operand import tensor_operand

NUMBERS = [0.99, 0.01, 1 / 3, -7, 3, 0, -0.0, 1e-30, 1e30, 2**24, -(2**24), math.inf, math.nan]
DTYPES = [torch.float32, torch.float64]
OPERATIONS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("add", lambda x, n: x + n),
    ("sub", lambda x, n: x - n),
    ("mul", lambda x, n: x * n),
    ("div", lambda x, n: x / n),
    ("add_", lambda x, n: x.add_(n)),
    ("sub_", lambda x, n: x.sub_(n)),
    ("mul_", lambda x, n: x.mul_(n)),
    ("div_", lambda x, n: x.div_(n)),
]


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.contiguous().view(torch.int64 if tensor.element_size() == 8 else torch.int32)


def _tree(dtype: torch.dtype) -> TensorDict:
    generator = torch.Generator().manual_seed(0)
    base = torch.randn(4, 6, generator=generator, dtype=dtype) * 1e3
    return TensorDict(
        {"a": base.clone(), "n": {"t": base.t().clone().t(), "s": base[:, ::2].clone()}}, []
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,op", OPERATIONS, ids=[name for name, _ in OPERATIONS])
def test_results_are_torch_bits(dtype: torch.dtype, name: str, op: Callable[..., Any]) -> None:
    for number in NUMBERS:
        td = _tree(dtype)
        expected = {key: op(value.clone(), number) for key, value in td.items(True, True)}
        out = op(td, number)
        for key, want in expected.items():
            got = out[key]
            assert got.dtype == want.dtype == dtype
            assert torch.equal(_bits(got), _bits(want)), (name, number, key)


def test_a_record_and_a_number() -> None:
    class Row(TensorClass):
        x: torch.Tensor
        tag: str

    row = Row(torch.linspace(-3, 3, 12).reshape(4, 3), "a", batch_size=[4])
    want = row.x.clone().mul_(0.3).div_(7)
    row.mul_(0.3).div_(7)
    assert torch.equal(_bits(row.x), _bits(want)) and row.tag == "a"
    assert torch.equal(_bits((row * 0.99).x), _bits(row.x * 0.99))


def _leaves(*tensors: torch.Tensor) -> list[torch.Tensor]:
    return list(tensors)


def test_routed_where_the_bits_are_the_same() -> None:
    leaves = _leaves(torch.ones(3), torch.ones(2, 2))
    routed = tensor_operand(torch._foreach_mul_, leaves, [0.5], None)
    assert routed is not None
    (pieces,) = routed
    assert len(pieces) == 2 and all(p.dim() == 0 and p.dtype == torch.float32 for p in pieces)
    assert pieces[0].item() == 0.5
    doubles = _leaves(torch.ones(3, dtype=torch.float64))
    assert tensor_operand(torch._foreach_add, doubles, [2**24], {}) is not None
    with torch.no_grad():  # parameters under no_grad (a soft update): no graph to change
        params = _leaves(torch.nn.Parameter(torch.ones(3)))
        assert tensor_operand(torch._foreach_mul_, params, [0.99], None) is not None


@pytest.mark.parametrize(
    "case",
    [
        "half",
        "bfloat16",
        "int",
        "complex",
        "mixed",
        "grad",
        "subclass",
        "bool",
        "complex number",
        "big int",
        "float32 overflow",
        "kwargs",
        "tensor operand",
        "no fused kernel",
        "mode",
    ],
)
def test_left_as_is(case: str) -> None:
    foreach: Any = torch._foreach_mul_
    leaves = _leaves(torch.ones(3))
    operands: list[Any] = [0.5]
    kwargs: Any = None
    if case in ("half", "bfloat16", "int", "complex"):
        dtype = {"half": torch.float16, "bfloat16": torch.bfloat16, "int": torch.int64}
        leaves = _leaves(torch.ones(3, dtype=dtype.get(case, torch.complex64)))
    elif case == "mixed":
        leaves = _leaves(torch.ones(3), torch.ones(3, dtype=torch.float64))
    elif case == "grad":
        leaves = _leaves(torch.ones(3, requires_grad=True) * 2)
    elif case == "subclass":

        class Sub(torch.Tensor):
            pass

        leaves = _leaves(torch.ones(3).as_subclass(Sub))
    elif case == "bool":
        operands = [True]
    elif case == "complex number":
        operands = [1j]
    elif case == "big int":
        operands = [2**24 + 1]
    elif case == "float32 overflow":
        operands = [1e39]
    elif case == "kwargs":
        foreach, kwargs = torch._foreach_add_, {"alpha": 2}
    elif case == "tensor operand":
        operands = [[torch.ones(3)]]
    elif case == "no fused kernel":
        foreach = torch._foreach_exp_
    if case == "mode":

        class Passing(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                return func(*args, **(kwargs or {}))

        with Passing():
            assert tensor_operand(foreach, leaves, operands, kwargs) is None
        return
    assert tensor_operand(foreach, leaves, operands, kwargs) is None


def test_recorded_graph_unchanged() -> None:
    """A tensor requiring grad while autograd records keeps torch's own node for a
    number (the routed call would record the tensor-operand one)."""
    x = torch.ones(3, requires_grad=True)
    td = TensorDict({"a": x * 2, "b": x * 3}, [])
    out = td * 0.5
    (want, _) = torch._foreach_mul([x * 2, x * 3], 0.5)
    assert out["a"].grad_fn.name() == want.grad_fn.name() == "ForeachMulBackward1Scalar"
    out["a"].sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 1.0))


def test_half_precision_keeps_torch_rounding() -> None:
    """float16 keeps what torch's fused kernel gives (a float16 0-d tensor gives other
    bits), so it is not routed."""
    td = TensorDict({"a": torch.linspace(0, 60, 50, dtype=torch.float16)}, [])
    want = td["a"].clone()
    torch._foreach_mul_([want], 0.99)  # (torch's in-place kernel rounds 0.99 to float16)
    assert torch.equal(_bits(td.mul_(0.99)["a"].float()), _bits(want.float()))


def test_in_place_math_with_a_number_reads_the_tensors_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``td.mul_(0.99)`` reads each tensor's class, dtype and ``requires_grad`` in one
    pass, which the all-or-nothing check and the route share; what the check refuses
    from them is refused as before, with nothing written."""
    from tclass import errors
    from tclass._base.implemented import _inplace, _scalar_operand

    reads: list[str] = []
    kind_of, dtype_of, grad_of = (
        _scalar_operand._kind_of,
        _inplace._dtype_of,
        _inplace._requires_grad,
    )

    def counted(name: str, read: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def wrapper(tensor: Any) -> Any:
            reads.append(name)
            return read(tensor)

        return wrapper

    monkeypatch.setattr(_inplace, "_KINDS", {})  # nothing remembered (remembered_kinds)
    monkeypatch.setattr(_inplace, "_KIND_BUILDS", {})
    monkeypatch.setattr(_scalar_operand, "_kind_of", counted("kind", kind_of))
    monkeypatch.setattr(_inplace, "_dtype_of", counted("dtype", dtype_of))
    monkeypatch.setattr(_inplace, "_requires_grad", counted("grad", grad_of))
    td = TensorDict({"a": torch.ones(3), "n": {"b": torch.ones(3, 2)}}, [3])
    expected = [leaf.clone().mul_(0.99) for leaf in (td["a"], td["n", "b"])]
    assert td.mul_(0.99) is td
    assert reads == ["kind", "kind"]  # one pass over the two tensors, nothing else
    assert all(map(torch.equal, (td["a"], td["n", "b"]), expected))
    mixed = TensorDict({"a": torch.ones(3), "i": torch.ones(3, dtype=torch.int64)}, [3])
    before = [mixed["a"].clone(), mixed["i"].clone()]
    with pytest.raises(errors.InPlaceWriteError, match="'i'"):
        mixed.mul_(0.5)  # float into int64: refused from the dtypes read with the kinds
    assert torch.equal(mixed["a"], before[0]) and torch.equal(mixed["i"], before[1])
    weights = torch.ones(3, requires_grad=True)
    grads = TensorDict({"a": torch.ones(3), "w": weights}, [3])
    with pytest.raises(errors.InPlaceWriteError, match="requires grad"):
        grads.mul_(0.5)
    assert torch.equal(grads["a"], torch.ones(3))
    with torch.no_grad():
        assert grads.mul_(0.5) is grads
    assert torch.equal(grads["a"], torch.full((3,), 0.5))
    assert torch.equal(weights.detach(), torch.full((3,), 0.5))


def test_the_zero_d_operand_is_kept_and_never_written() -> None:
    # Built once per (number, dtype) and given to every call; the in-place kernels write
    # the collection's tensors, never it, and a result is never it.
    _scalar_operand._ZERO_D.clear()
    td = _tree(torch.float32)
    before = td.clone()
    first = tensor_operand(torch._foreach_mul_, [td["a"]], [0.75], {})
    assert first is not None
    kept = first[0][0]
    for _ in range(3):
        td.mul_(0.75).add_(0.75)
        out = td * 0.75
        assert all(value is not kept for value in out.values(True, True))
    assert kept.item() == 0.75 and kept.dtype == torch.float32 and kept.shape == ()
    again = tensor_operand(torch._foreach_add, [td["a"]], [0.75], {})
    assert again is not None and again[0][0] is kept
    wide = tensor_operand(torch._foreach_add, [td["a"].double()], [0.75], {})
    assert wide is not None and wide[0][0] is not kept and wide[0][0].dtype == torch.float64
    want = before["n", "s"].clone()
    for _ in range(3):
        want = want.mul_(0.75).add_(0.75)
    assert torch.equal(_bits(td["n", "s"]), _bits(want))


@pytest.mark.parametrize("number", [0, 0.0, -0.0, math.nan])
def test_zeros_and_nan_are_not_kept(number: float) -> None:
    _scalar_operand._ZERO_D.clear()
    leaves = [torch.ones(2)]
    first = tensor_operand(torch._foreach_add, leaves, [number], {})
    second = tensor_operand(torch._foreach_add, leaves, [number], {})
    assert first is not None and second is not None
    assert first[0][0] is not second[0][0]
    assert not _scalar_operand._ZERO_D
    # -0.0 after 0.0 is its own operand (x + -0.0 keeps a -0.0 that x + 0.0 does not)
    got = (TensorDict({"a": torch.tensor([-0.0])}, []) + number)["a"]
    assert torch.equal(_bits(got), _bits(torch.tensor([-0.0]) + number))


def test_inference_mode_operands_are_not_kept() -> None:
    _scalar_operand._ZERO_D.clear()
    td = _tree(torch.float32)
    with torch.inference_mode():
        out = td * 0.5
    assert not _scalar_operand._ZERO_D
    assert torch.equal(out["a"], td["a"] * 0.5)
    out = td * 0.5  # outside: kept, and not an inference tensor
    (kept,) = _scalar_operand._ZERO_D.values()
    assert not kept.is_inference()
    with torch.inference_mode():
        assert torch.equal((td * 0.5)["a"], td["a"] * 0.5)
    assert torch.equal(out["a"], td["a"] * 0.5)
