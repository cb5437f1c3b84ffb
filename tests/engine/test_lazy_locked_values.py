"""The Python values read from a locked lazy stack (``get`` of a value key, nested or
not) are locked, as its nested collections are and as tensordict gives them: a write
into that stack of values is refused rather than lost (it is a merged copy)."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import LockedError


def _stack() -> tclass.LazyStackedTensorDict:
    rows = [TensorDict(s=s, a=torch.zeros(2), n=TensorDict(t=s * 2)) for s in "xy"]
    return tclass.lazy_stack(rows)


@pytest.mark.parametrize("key", ["s", ("n", "t")])
def test_values_of_a_locked_stack_are_locked(key: object) -> None:
    stack = _stack().lock_()
    values = stack.get(key)
    assert values.is_locked and stack.get("n").is_locked
    assert values.tolist() == (["x", "y"] if key == "s" else ["xx", "yy"])
    with pytest.raises(LockedError):
        values[0] = "z"


def test_values_of_an_unlocked_stack_stay_unlocked() -> None:
    stack = _stack()
    assert not stack.get("s").is_locked
    stack.lock_().unlock_()
    assert not stack.get("s").is_locked and not stack.get(("n", "t")).is_locked
    partly = tclass.lazy_stack([TensorDict(s="x").lock_(), TensorDict(s="y")])
    assert not partly.get("s").is_locked  # (the stack is not locked)


def test_selected_and_indexed_results_of_a_locked_stack_keep_their_values_locked() -> None:
    stack = _stack().lock_()
    assert stack.select("s").get("s").is_locked
    assert stack[0:1].get("s").is_locked
