"""A scan along a lazy stack's stack dim (``softmax``, ``cumsum``, ``cumprod``) is
computed on the dense stack and handed back as a lazy stack shaped as the input, each
member's tensors a view of the result: views that may be written in place, as the
peer's per-member results may, even where they need grad (``unbind``'s pieces of a tensor
that needs grad refuse an in-place write)."""

from __future__ import annotations

import pytest
import torch

import tclass


def _members(grad: bool = False) -> list[tclass.TensorDict]:
    return [
        tclass.TensorDict(
            {"a": torch.rand(3, 2, requires_grad=grad) * 1, "n": {"b": torch.rand(3, 4)}},
            batch_size=[3],
        )
        for _ in range(4)
    ]


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("op", ["softmax", "cumsum", "cumprod"])
def test_a_scan_along_the_stack_dim_equals_the_dense_one_and_stays_lazy(dim: int, op: str) -> None:
    lazy = tclass.lazy_stack(_members(), dim)
    out = getattr(lazy, op)(dim)
    assert isinstance(out, tclass.LazyStackedTensorDict) and out.stack_dim == dim
    assert (out.to_tensordict() == getattr(lazy.to_tensordict(), op)(dim)).all()


@pytest.mark.parametrize("dim", [0, 1])
def test_a_scan_result_that_needs_grad_can_be_written_in_place(dim: int) -> None:
    lazy = tclass.lazy_stack(_members(grad=True), dim)
    out = lazy.softmax(dim)
    expected = out.to_tensordict().detach().floor()
    out.floor_()
    assert (out.to_tensordict().detach() == expected).all()
    leaf = torch.rand(4, 3, 2, requires_grad=True)  # cumsum's backward keeps no output:
    lazy = tclass.lazy_stack(list(tclass.TensorDict(a=leaf * 1, batch_size=[4, 3])), 0)
    summed = lazy.cumsum(0)
    summed.add_(1)  # the graph still reaches the leaf through the written view
    summed.tensordicts[0]["a"].sum().backward()
    assert leaf.grad is not None and leaf.grad[0].eq(1).all() and leaf.grad[1:].eq(0).all()
