"""The tensor-like algebra keeps the record's type: operators, pointwise methods,
reductions and casts return ``Self``; ``reduce=True`` returns a tensor."""

from __future__ import annotations

import torch
from records import DStep, Step, dstep, step
from typing_extensions import assert_type

from tclass import LazyStackedTensorDict, TensorDict


def operators() -> None:
    s, d = step(), dstep()
    assert_type(s + 1, Step)
    assert_type(1 - s, Step)
    assert_type(s * s, Step)
    assert_type(s / torch.ones(3), Step)
    assert_type(2**s, Step)
    assert_type(-s, Step)
    assert_type(abs(d), DStep)
    assert_type(d // 2, DStep)
    assert_type(d % 2, DStep)
    assert_type(s > 0, Step)
    assert_type((s > 0) & (s < 1), Step)
    assert_type(~(d == 0), DStep)
    t = step()
    t += 1
    assert_type(t, Step)
    s + "x"  # type: ignore[operator]


def pointwise() -> None:
    s, d = step(), dstep()
    assert_type(s.exp(), Step)
    assert_type(d.exp_(), DStep)
    assert_type(s.add(s, alpha=0.5), Step)
    assert_type(d.mul_(0.99).add_(d, alpha=0.01), DStep)
    assert_type(s.clamp(0, 1), Step)
    assert_type(d.lerp(d, 0.5), DStep)
    assert_type(s.addcmul(s, s, value=2), Step)
    assert_type(d.isnan(), DStep)
    assert_type(s.where(torch.ones(3, dtype=torch.bool), 0), Step)
    assert_type(d.copy_(d), DStep)
    s.exp(1)  # type: ignore[call-arg]


def reductions() -> None:
    s, d = step(), dstep()
    assert_type(s.sum(), Step)
    assert_type(d.mean(0, keepdim=True), DStep)
    assert_type(s.std(dim=(0,), correction=0), Step)
    assert_type(d.sum(reduce=True), torch.Tensor)
    assert_type(s.amax(dim="feature"), Step)
    assert_type(d.norm(), DStep)
    assert_type(s.logsumexp(), Step)
    assert_type(s.max(), Step)
    assert_type(s.max(0).values, Step)
    assert_type(d.min(0).indices, DStep)
    assert_type(s.all(), bool)
    assert_type(d.cumsum(0), DStep)
    s.sum(dim=0.5)  # type: ignore[call-overload]


def casts() -> None:
    s, d = step(), dstep()
    assert_type(s.float(), Step)
    assert_type(d.half(cast_filter=lambda key, value: value.is_floating_point()), DStep)
    assert_type(s.bfloat16(), Step)
    assert_type(d.int(), DStep)
    assert_type(s.type(torch.float64), Step)
    d.float(cast_filter="x")  # type: ignore[arg-type]


def collections(td: TensorDict, lazy: LazyStackedTensorDict) -> None:
    assert_type(td + td, TensorDict)
    assert_type(td.exp(), TensorDict)
    assert_type(td.sum(), TensorDict)
    assert_type(lazy * 2, LazyStackedTensorDict)
    assert_type(lazy.float(), LazyStackedTensorDict)
    assert_type(lazy.sum(reduce=True), torch.Tensor)
