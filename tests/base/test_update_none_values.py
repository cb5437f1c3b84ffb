"""``update_`` with ``None`` in the mapping, as tensordict 0.15.3: no value given, the
entry is left as it is (flat, nested, a lazy stack, a record's field); tclass raised
``InPlaceWriteError``. A key that is missing is still a ``KeyError``; ``update_at_`` with
``None`` stays a ``TypeError``, as the peer's (it does not take it)."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorDict, lazy_stack, tensorclass


def test_none_in_the_mapping_leaves_the_entry() -> None:
    td = TensorDict(a=torch.zeros(3), b=torch.zeros(3), batch_size=[3])
    td.update_({"a": torch.ones(3), "b": None})
    assert td["a"].tolist() == [1.0] * 3 and td["b"].tolist() == [0.0] * 3


def test_none_in_a_nested_mapping_leaves_the_nested_entry() -> None:
    inner = TensorDict(y=torch.zeros(3), z=torch.zeros(3), batch_size=[3])
    td = TensorDict(inner=inner, batch_size=[3])
    td.update_({"inner": {"y": torch.ones(3), "z": None}})
    assert td["inner", "y"].tolist() == [1.0] * 3 and td["inner", "z"].tolist() == [0.0] * 3


def test_none_in_the_mapping_of_a_lazy_stack_and_a_record() -> None:
    stack = lazy_stack([TensorDict(a=torch.zeros(()), b=torch.zeros(())) for _ in range(3)])
    stack.update_({"a": torch.ones(3), "b": None})
    assert stack["a"].tolist() == [1.0] * 3 and stack["b"].tolist() == [0.0] * 3

    @tensorclass
    class Point:
        x: torch.Tensor
        y: torch.Tensor

    point = Point(x=torch.zeros(3), y=torch.zeros(3), batch_size=[3])
    point.update_({"x": torch.ones(3), "y": None})
    assert point.x.tolist() == [1.0] * 3 and point.y.tolist() == [0.0] * 3


def test_none_for_a_missing_key_and_in_update_at_are_still_refused() -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    with pytest.raises(KeyError, match="zz"):
        td.update_({"zz": None})
    with pytest.raises(TypeError):
        td.update_at_({"a": None}, 0)
    assert td["a"].tolist() == [0.0] * 3
