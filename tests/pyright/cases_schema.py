# pyright: strict
"""Checked by pyright in strict mode (``make typecheck``), never run: constrained fields
read as ``Tensor``, ``Cls.rand`` returns the class, ``json_schema`` a dict (the base-class
form: pyright sees no method of ``@tensorclass`` classes, which only the mypy plugin adds;
mypy checks both forms in tests/typing/cases_schema.py); ``@checked`` keeps a function's
signature: its parameters and keywords, and its result's type."""

from __future__ import annotations

from typing import Annotated, Any

import torch
from annotated_types import Ge, Le
from typing_extensions import assert_type

from tclass import Spec, TensorClass, checked, checks_enabled, set_checks


class Probs(TensorClass):
    prob: Annotated[torch.Tensor, Spec("k", torch.float32), Ge(0), Le(1)]
    label: Annotated[torch.Tensor, Spec("", torch.int64, isin=(0, 1, 2))] | None = None


class Bounded(TensorClass):
    prob: Annotated[torch.Tensor, Spec("k", torch.float32, ge=0, le=1)]


def cases() -> None:
    probs = Probs.rand([4], dims={"k": 3}, generator=torch.Generator())
    assert_type(probs, Probs)
    assert_type(probs.prob, torch.Tensor)
    assert_type(probs.label, torch.Tensor | None)
    assert_type(Bounded.rand([2], device="cpu"), Bounded)
    assert_type(Bounded.rand([2]).prob, torch.Tensor)
    assert_type(Probs.json_schema(), dict[str, Any])


@checked
def step(probs: Probs, bounded: Annotated[Bounded, Spec("b")]) -> Probs:
    return probs


@checked
def scaled(probs: Probs, *, scale: float = 1.0) -> Annotated[torch.Tensor, Spec("b k")]:
    return probs.prob * scale


def checked_cases(probs: Probs, bounded: Bounded) -> None:
    assert_type(step(probs, bounded), Probs)
    assert_type(scaled(probs, scale=2.0), torch.Tensor)
    assert_type(checks_enabled(), bool)
    with set_checks(False):
        scaled(probs)
