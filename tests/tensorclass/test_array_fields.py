"""A field annotated ``np.ndarray``: an array given to it becomes a tensor, as the peer's
(it kept the array before); under ``autocast`` or ``nocast`` it stays an array, as there."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tclass


def _record(**options: bool) -> type:
    namespace = {"__annotations__": {"a": np.ndarray, "b": np.ndarray | None}}
    return tclass.tensorclass(**options)(type("ArrayRecord", (), namespace))


def test_array_field_makes_a_tensor_as_the_peer() -> None:
    record = _record()(a=np.arange(6.0).reshape(3, 2), b=None, batch_size=[3])
    assert isinstance(record.a, torch.Tensor)
    assert record.a.dtype == torch.float64
    assert torch.equal(record.a, torch.arange(6.0, dtype=torch.float64).reshape(3, 2))
    assert torch.equal(record[1].a, torch.tensor([2.0, 3.0], dtype=torch.float64))
    record.b = np.ones(3, dtype=np.int32)
    assert isinstance(record.b, torch.Tensor) and record.b.dtype == torch.int32
    record.a = torch.zeros(3, 1)  # a tensor is accepted as it is
    assert torch.equal(record.a, torch.zeros(3, 1))
    stacked = torch.stack([record, record])
    assert isinstance(stacked.a, torch.Tensor) and stacked.a.shape == (2, 3, 1)


@pytest.mark.parametrize("option", ["autocast", "nocast"])
def test_array_field_keeps_the_array_under_autocast_or_nocast(option: str) -> None:
    array = np.arange(3.0)
    record = _record(**{option: True})(a=array, b=None, batch_size=[3])
    assert isinstance(record.a, np.ndarray)
    assert np.array_equal(record.a, array)
