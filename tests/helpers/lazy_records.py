"""The records the lazy-stack tests stack (tests/engine/test_lazy*.py): a record with a
tensor, a Python value, a nested record and an optional field."""

from __future__ import annotations

import torch

from tclass import TensorClass

__all__ = ["Agent", "Inner"]


class Inner(TensorClass):
    x: torch.Tensor


class Agent(TensorClass):
    obs: torch.Tensor
    reward: torch.Tensor
    name: str
    inner: Inner
    extra: torch.Tensor | None = None
