"""The record types the typing cases use, in both declaration forms (same fields)."""

from __future__ import annotations

import torch

from tclass import TensorClass, tensorclass


class Inner(TensorClass):
    z: torch.Tensor


class Step(TensorClass):
    """Base-class form."""

    obs: torch.Tensor
    name: str
    inner: Inner
    extra: torch.Tensor | None = None
    count: int = 0


class Frame(TensorClass, frozen=True):
    pixels: torch.Tensor


class Point(TensorClass, kw_only=True):
    x: torch.Tensor


@tensorclass
class DInner:
    z: torch.Tensor


@tensorclass
class DStep:
    """Decorator form (typed through the tclass.mypy plugin)."""

    obs: torch.Tensor
    name: str
    inner: DInner
    extra: torch.Tensor | None = None
    count: int = 0


@tensorclass(frozen=True)
class DFrame:
    pixels: torch.Tensor


@tensorclass(kw_only=True)
class DPoint:
    x: torch.Tensor


def step() -> Step:
    return Step(torch.zeros(3, 2), "walk", Inner(torch.zeros(3), batch_size=[3]), batch_size=[3])


def dstep() -> DStep:
    return DStep(torch.zeros(3, 2), "walk", DInner(torch.zeros(3), batch_size=[3]), batch_size=[3])
