"""The record class the tests of schemas saved with the data write and load
(tests/io/test_json_schema_io.py, tests/io/test_schema_constraints_io.py): a constrained
tensor, a nested record with a constrained scalar, an unconstrained tensor and Python
values. Its module is importable by name (pytest's pythonpath), as loading a folder by the
class it names needs."""

from __future__ import annotations

from typing import Annotated

import torch

from tclass import Spec, TensorClass

__all__ = ["Part", "Scored", "scored"]

Tensor = torch.Tensor


class Part(TensorClass):
    level: Annotated[Tensor, Spec("", torch.int64, isin=(1, 2, 3))]


class Scored(TensorClass):
    prob: Annotated[Tensor, Spec("3", torch.float32, ge=0, le=1)]
    part: Part
    free: Tensor
    tag: str = "a"
    count: int = 3
    labels: list[str] | None = None


def scored(b: int = 4) -> Scored:
    return Scored(
        prob=torch.full((b, 3), 0.5),
        part=Part(level=torch.ones(b, dtype=torch.int64), batch_size=[b]),
        free=torch.full((b,), -9.0),
        labels=["x", "y"],
        batch_size=[b],
    )
