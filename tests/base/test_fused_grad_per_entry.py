"""Out-of-place math run by one fused kernel marks an entry's result as requiring grad only
where that entry's own inputs do, as torch's per-tensor operation (autograd marks every
output of a fused kernel once one input requires grad)."""

from __future__ import annotations

import torch

from tclass import TensorDict, TensorDictParams


def _params_with_int_buffer() -> TensorDict:
    data = TensorDict({"w": torch.ones(4), "c": torch.ones(4, dtype=torch.int64)}, [4])
    return TensorDictParams(data).contiguous()


def test_pow_by_tensor_keeps_buffer_without_grad() -> None:
    out = _params_with_int_buffer() ** torch.full((4,), 2.0)
    assert out["w"].requires_grad
    assert not out["c"].requires_grad and out["c"].is_leaf
    assert out["c"].dtype == torch.float32
    assert torch.equal(out["c"], torch.ones(4))


def test_buffer_made_a_leaf_gets_its_grad() -> None:
    c = (_params_with_int_buffer() * torch.full((4,), 3.0))["c"]
    assert c.is_leaf
    c.requires_grad_()
    (c * 1.5).sum().backward()
    assert torch.equal(c.grad, torch.full((4,), 1.5))


def test_fused_grad_kept_where_an_input_asks() -> None:
    a = torch.ones(3, requires_grad=True)
    td = TensorDict({"a": torch.ones(3), "b": torch.ones(3)}, [3])
    other = TensorDict({"a": a, "b": torch.ones(3)}, [3])
    out = td * other
    assert out["a"].requires_grad and not out["b"].requires_grad
    out["a"].sum().backward()
    assert torch.equal(a.grad, torch.ones(3))


def test_tensor_operand_requiring_grad_reaches_every_entry() -> None:
    t = torch.ones(3, requires_grad=True)
    out = TensorDict({"a": torch.ones(3), "b": torch.ones(3)}, [3]) * t
    assert out["a"].requires_grad and out["b"].requires_grad


def test_no_grad_anywhere_is_unchanged() -> None:
    out = TensorDict({"a": torch.ones(3), "b": torch.ones(3)}, [3]) + 1
    assert not out["a"].requires_grad and not out["b"].requires_grad
