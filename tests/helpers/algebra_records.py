"""The records the algebra tests work on, in both declaration forms (same fields): a
tensor field with a feature dim, one without, a nested record, a ``str`` and an optional
``dict``; ``record()`` builds one with random values."""

from __future__ import annotations

from typing import Any

import torch

from tclass import TensorClass, tensorclass


class Inner(TensorClass):
    x: torch.Tensor


class Rec(TensorClass):
    obs: torch.Tensor
    reward: torch.Tensor
    inner: Inner
    env: str
    meta: dict | None = None


@tensorclass
class DInner:
    x: torch.Tensor


@tensorclass
class DRec:
    obs: torch.Tensor
    reward: torch.Tensor
    inner: DInner
    env: str
    meta: dict | None = None


RECORDS = [(Rec, Inner), (DRec, DInner)]
IDS = ["TensorClass", "@tensorclass"]


def record(kinds: tuple[type, type], batch: list[int], seed: int = 0) -> Any:
    """A record of class ``kinds[0]`` (nested ``kinds[1]``) of batch size ``batch``."""
    record_cls, inner_cls = kinds
    g = torch.Generator().manual_seed(seed)
    return record_cls(
        obs=torch.randn(*batch, 3, generator=g),
        reward=torch.rand(*batch, generator=g) + 0.5,
        inner=inner_cls(x=torch.randn(*batch, 2, generator=g), batch_size=batch),
        env="pong",
        meta={"seed": seed},
        batch_size=batch,
    )
