"""``is_contiguous()`` of a stack of Python values, and of a collection holding one:
False, as the peer's (its value stack is a lazy stack); ``contiguous()`` keeps the
stack (lead35b)."""

from __future__ import annotations

import torch

import tclass
from tclass import NonTensorData, NonTensorStack, TensorDict


def test_a_stack_of_values_is_not_contiguous() -> None:
    stack = NonTensorStack("a", "b")
    assert stack.is_contiguous() is False
    assert stack.contiguous() is stack
    assert NonTensorData("a", batch_size=[2]).is_contiguous() is True


def test_a_collection_holding_one_is_not_contiguous_nested_too() -> None:
    td = TensorDict(
        {"d": torch.zeros(1, 2), "n": TensorDict({"a": torch.zeros(1, 2), "v": "pong"}, [1, 2])},
        batch_size=[1, 2],
    )
    assert td.is_contiguous()  # one value for every element: no stack
    padded = tclass.pad(td, [0, 1], value=1.5)
    assert isinstance(padded.get(("n", "v")), NonTensorStack)
    assert not padded.is_contiguous() and not padded.get("n").is_contiguous()
    assert not TensorDict({"v": "x"}, batch_size=[2]).unsqueeze(0).is_contiguous()
    assert TensorDict({"a": torch.zeros(2)}, [2]).unsqueeze(0).is_contiguous()
