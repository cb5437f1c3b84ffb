"""Tensorclass options in the three spellings the peer accepts: decorator arguments,
``TensorClass["..."]`` subscripts and class keywords: ``autocast``, ``nocast``, ``frozen``.
"""

import dataclasses

import torch

from compat.lib import TensorClass, tensorclass


@tensorclass(autocast=True)
class AutoCast:
    x: torch.Tensor
    n: int
    s: str


@tensorclass(nocast=True)
class NoCast:
    x: torch.Tensor
    n: int


class Frozen(TensorClass["nocast", "frozen"]):
    x: torch.Tensor
    n: int


class AutoKw(TensorClass, autocast=True):
    x: torch.Tensor


@tensorclass(frozen=True)
class FrozenDeco:
    x: torch.Tensor


class NoCastKw(TensorClass, nocast=True):
    x: torch.Tensor
    f: float


class Base(TensorClass["autocast"]):
    x: torch.Tensor


class Derived(Base):
    y: torch.Tensor


def expect_frozen(record: object, field: str, value: object) -> None:
    try:
        setattr(record, field, value)
    except dataclasses.FrozenInstanceError:  # an AttributeError, as code may catch it
        return
    raise AssertionError(f"assigning {field} of a frozen record must raise")


def main() -> None:
    a = AutoCast(x=[1.0, 2.0], n=3, s="k", batch_size=[2])
    assert isinstance(a.x, torch.Tensor) and a.x.tolist() == [1.0, 2.0]
    assert a.n == 3 and isinstance(a.n, int)
    assert a.s == "k"

    b = NoCast(x=torch.ones(2), n=3, batch_size=[2])
    assert isinstance(b.n, int) and b.n == 3
    b.n = 7
    assert b.n == 7

    f = Frozen(x=torch.ones(2), n=4, batch_size=[2])
    assert isinstance(f.n, int)
    expect_frozen(f, "x", torch.zeros(2))
    expect_frozen(f, "n", 5)
    f.x[0] = 5.0  # the tensors themselves stay writable
    assert f.x.tolist() == [5.0, 1.0]

    fd = FrozenDeco(x=torch.ones(2), batch_size=[2])
    expect_frozen(fd, "x", torch.zeros(2))
    assert isinstance(fd[0], FrozenDeco)

    k = AutoKw(x=[1, 2], batch_size=[2])
    assert isinstance(k.x, torch.Tensor) and k.x.tolist() == [1, 2]

    nk = NoCastKw(x=torch.zeros(2), f=0.5, batch_size=[2])
    assert nk.f == 0.5 and isinstance(nk.f, float)

    # options are inherited by subclasses
    d = Derived(x=[1.0, 2.0], y=[3.0, 4.0], batch_size=[2])
    assert isinstance(d.x, torch.Tensor) and isinstance(d.y, torch.Tensor)
    assert isinstance(d, Base)
    assert d[0].y.item() == 3.0
