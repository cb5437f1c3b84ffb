"""Tensorclasses declared with explicit class statements (both forms) and helpers, shared
by the declaration tests (test_tensorclass_declaration.py, test_tensorclass_fields.py)."""

import re
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorClass, TensorDict

__all__ = [
    "Color",
    "Frame",
    "Inner",
    "Keyed",
    "Outer",
    "Sample",
    "Transition",
    "raises",
    "transition",
]


@tclass.tensorclass
class Transition:
    obs: torch.Tensor
    env: str
    mask: torch.Tensor | None = None


class Frame(TensorClass, frozen=True):
    pixels: torch.Tensor
    step: int = 0


@tclass.tensorclass(frozen=True, kw_only=True)
class Sample:
    x: torch.Tensor
    tag: str = "s"


class Keyed(TensorClass, kw_only=True):
    x: torch.Tensor
    tag: str = "k"


@tclass.tensorclass
class Inner:
    x: torch.Tensor


@tclass.tensorclass
class Outer:
    inner: Inner
    td: TensorDict | None = None


class Color:
    """A plain class used as a field annotation."""


def transition(n: int = 4) -> Any:
    return Transition(torch.zeros(n, 3), "pong", batch_size=[n])


def raises(error: type[BaseException], *also: type[BaseException], match: str | None = None) -> Any:
    """``pytest.raises(error)`` that also checks the builtins it must derive from."""
    for base in also:
        assert issubclass(error, base), f"{error.__name__} is not a {base.__name__}"
    return pytest.raises(error, match=match)


def mismatch(key: str, shape: list[int], batch: list[int]) -> str:
    dims = lambda s: "[" + ", ".join(map(str, s)) + "]"  # noqa: E731
    return re.escape(
        f"for key {key}: its shape {dims(shape)} does not start with the batch size {dims(batch)}"
    )
