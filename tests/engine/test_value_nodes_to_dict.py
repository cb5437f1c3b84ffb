"""``to_dict()`` of a Python-value node (session 23, nu23d): what it holds, as the peer's,
not an empty dict (a node has no entries, so its values were silently dropped)."""

from __future__ import annotations

import torch

from tclass import MetaData, NonTensorData, NonTensorStack, TensorDict


def test_a_value_gives_its_value() -> None:
    assert NonTensorData("x").to_dict() == "x"
    assert NonTensorData("x", batch_size=[2]).to_dict() == "x"  # one value, as the peer
    assert MetaData({"k": 1}).to_dict() == {"k": 1}


def test_a_stack_gives_its_values_as_nested_lists() -> None:
    assert NonTensorStack("a", "b").to_dict() == ["a", "b"]
    td = TensorDict({"s": [["a", "b"], ["c", "d"]]}, [2, 2])
    assert td.get("s").to_dict() == [["a", "b"], ["c", "d"]]
    assert td.to_dict() == {"s": [["a", "b"], ["c", "d"]]}  # unchanged in a collection


def test_a_stack_of_tensors_gives_the_tensors() -> None:
    stack = NonTensorStack(torch.zeros(2), torch.ones(2))
    out = stack.to_dict()
    assert isinstance(out, list) and len(out) == 2
    assert torch.equal(out[1], torch.ones(2))


def test_numpy_of_a_stack_gives_its_values() -> None:
    # as the peer: the values (a NonTensorData's numpy() is {} in both)
    assert NonTensorStack("a", "b").numpy() == ["a", "b"]
    assert NonTensorData("x", batch_size=[2]).numpy() == {}
    assert TensorDict({"s": ["a", "b"]}, [2]).numpy() == {"s": ["a", "b"]}
