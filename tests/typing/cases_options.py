"""Class options in both forms: class keywords (base class) and decorator arguments
(through the tclass.mypy plugin), frozen typing, and what the checker refuses."""

from __future__ import annotations

import dataclasses

import torch
from typing_extensions import assert_type

from tclass import TensorClass, from_dataclass, tensorclass


def _floating(key: tuple[str, ...], value: torch.Tensor) -> bool:
    return value.is_floating_point()


class Cast(TensorClass, autocast=True):
    n: int


class Kept(TensorClass, nocast=True):
    x: torch.Tensor | int


class Tensors(TensorClass, tensor_only=True):
    x: torch.Tensor


class Shadowing(TensorClass, shadow=True, skip_post_init_on_rebuild=True):
    label: str


class Filtered(TensorClass, cast_filter=_floating, kw_only=True):
    p: torch.Tensor


class FrozenCast(TensorClass, frozen=True, autocast=True):
    n: int


@tensorclass(autocast=True)
class DCast:
    n: int


@tensorclass(nocast=True, shadow=True)
class DKept:
    x: torch.Tensor | int


@tensorclass(tensor_only=True, cast_filter=_floating)
class DTensors:
    x: torch.Tensor


@tensorclass(frozen=True, skip_post_init_on_rebuild=True)
class DFrozen:
    x: torch.Tensor


@dataclasses.dataclass
class Config:
    name: str
    size: int


def options_base() -> None:
    assert_type(Cast(n=1).n, int)
    assert_type(Kept(x=1).x, "torch.Tensor | int")
    assert_type(Tensors(x=torch.zeros(1)).x, torch.Tensor)
    assert_type(Shadowing(label="a").label, str)
    assert_type(Filtered(p=torch.zeros(1)).to(torch.float16), Filtered)
    assert_type(FrozenCast(n=1)[0], FrozenCast)


def options_decorator() -> None:
    assert_type(DCast(n=1).n, int)
    assert_type(DKept(x=1).x, "torch.Tensor | int")
    assert_type(DTensors(x=torch.zeros(1)).clone(), DTensors)
    assert_type(DFrozen(x=torch.zeros(1)).x, torch.Tensor)


def conversions() -> None:
    assert_type(Filtered(p=torch.zeros(1)).to(torch.float16, cast_filter=None), Filtered)
    from_dataclass(Config("a", 1))
    from_dataclass(Config, autocast=True)


def expected_errors() -> None:
    FrozenCast(n=1).n = 2  # type: ignore[misc]
    DFrozen(x=torch.zeros(1)).x = torch.ones(1)  # type: ignore[misc]
    Filtered(torch.zeros(1))  # type: ignore[call-arg, arg-type]
    tensorclass(autocast="yes")  # type: ignore[call-overload]
