"""The records the tensorclass ops tests build (tests/tensorclass/test_tensorclass_ops.py
and its neighbours): ``Rec`` has a tensor field with a feature dim, a nested record, a
``str`` field and an optional ``dict`` field; ``Inner`` is the nested record. They are
module-level (so that they pickle)."""

from __future__ import annotations

import math
from typing import Any

import torch

from tclass import TensorClass, tensorclass

__all__ = ["Deco", "Inner", "Rec", "assert_same_rec", "make"]


class Inner(TensorClass):
    x: torch.Tensor


class Rec(TensorClass):
    obs: torch.Tensor
    inner: Inner
    env: str
    meta: dict | None = None


@tensorclass
class Deco:
    obs: torch.Tensor
    env: str


def make(batch: tuple[int, ...] = (4, 3), env: str = "pong", offset: int = 0) -> Rec:
    """obs: [*batch, 2] float, inner.x: [*batch] long; values distinct per offset."""
    n = math.prod(batch)
    obs = torch.arange(offset, offset + 2 * n, dtype=torch.float32).reshape(*batch, 2)
    x = torch.arange(offset, offset + n).reshape(batch)
    return Rec(obs, Inner(x, batch_size=batch), env, batch_size=batch)


def assert_same_rec(got: Rec, obs: torch.Tensor, x: torch.Tensor, env: Any = "pong") -> None:
    assert type(got) is Rec and type(got.inner) is Inner
    assert got.batch_size == x.shape
    assert got.inner.batch_size == x.shape
    assert torch.equal(got.obs, obs) and torch.equal(got.inner.x, x)
    node = got._tensordict.get("env")  # one value, or (stacked) the same value per element
    assert node.data == env and node.batch_size == got.batch_size
