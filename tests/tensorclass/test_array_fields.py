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


def _list_record(**options: bool) -> type:
    namespace = {"__annotations__": {"v": list, "w": list[int] | None}}
    return tclass.tensorclass(**options)(type("ListRecord", (), namespace))


def test_array_given_to_a_list_field_makes_a_tensor_as_the_peer() -> None:
    """The peer makes every numpy array a tensor (unless ``autocast`` or ``nocast``): a
    ``list`` field kept the array. It now holds the tensor, which indexes, stacks and
    takes a tensor written there as the peer's does; a list stays a list."""
    record = _list_record()(v=np.arange(6).reshape(3, 2), w=np.ones(3), batch_size=[3])
    assert isinstance(record.v, torch.Tensor) and record.v.dtype == torch.int64
    assert torch.equal(record.v, torch.arange(6).reshape(3, 2))
    assert torch.equal(record.w, torch.ones(3, dtype=torch.float64))
    assert torch.equal(record[1].v, torch.tensor([2, 3]))
    stacked = torch.stack([record, record])
    assert stacked.v.shape == (2, 3, 2)
    record.v = torch.zeros(3)
    assert torch.equal(record.v, torch.zeros(3))
    assert _list_record()(v=[1, 2], w=None, batch_size=[]).v == [1, 2]


@pytest.mark.parametrize(("option", "kind"), [("autocast", list), ("nocast", np.ndarray)])
def test_array_given_to_a_list_field_under_autocast_or_nocast(option: str, kind: type) -> None:
    """As the peer: ``autocast`` casts the array to a list, ``nocast`` keeps it."""
    record = _list_record(**{option: True})(v=np.arange(3.0), w=None, batch_size=[])
    assert type(record.v) is kind
    assert list(record.v) == [0.0, 1.0, 2.0]


def test_optional_array_field_under_autocast_keeps_the_array() -> None:
    """Decided (README, "Differences from tensordict"): under ``autocast`` an
    ``Optional[np.ndarray]`` field casts as an ``np.ndarray`` one does, keeping the
    array, as ``Optional[int]`` casts to ``int``; the peer reads any ``Optional`` as
    ``Any`` there and makes the array a tensor. Without options both make a tensor."""
    array = np.arange(3.0)
    record = _record(autocast=True)(a=array, b=array, batch_size=[3])
    assert isinstance(record.b, np.ndarray) and np.array_equal(record.b, array)
    assert isinstance(_record()(a=array, b=array, batch_size=[3]).b, torch.Tensor)
