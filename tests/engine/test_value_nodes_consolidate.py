"""``consolidate()`` of a Python-value node itself (``NonTensorData``,
``NonTensorStack``): the node, consolidated and locked, as the peer's; tclass raised an
``AttributeError`` ("'NonTensorData' object has no attribute '_consolidated'")."""

from __future__ import annotations

import pickle

import torch

from tclass import NonTensorData, NonTensorStack


def test_non_tensor_data_consolidates() -> None:
    node = NonTensorData("hello", batch_size=[3])
    packed = node.consolidate()
    assert isinstance(packed, NonTensorData)
    assert packed.is_consolidated()
    assert packed.is_locked
    assert packed.tolist() == ["hello"] * 3
    assert pickle.loads(pickle.dumps(packed)).data == "hello"
    assert not node.is_consolidated()


def test_non_tensor_stack_consolidates() -> None:
    stack = torch.stack([NonTensorData("a", batch_size=[]), NonTensorData("b", batch_size=[])])
    packed = stack.consolidate()
    assert isinstance(packed, NonTensorStack)
    assert packed.is_consolidated()
    assert packed.tolist() == ["a", "b"]
    assert packed.to("meta").tolist() == ["a", "b"]
