"""A set of a new key into a lazy stack one of whose members is locked on its own (the
stack is not, as not every member is): the peer writes the members before the locked one,
then raises; tclass refuses before any member is written, naming the locked member."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import errors

WRITES: list[Any] = [
    pytest.param(lambda s: s.set("new", torch.ones(2, 2)), id="set"),
    pytest.param(lambda s: s.__setitem__("new", torch.ones(2, 2)), id="setitem"),
    pytest.param(lambda s: s.update({"new": torch.ones(2, 2)}), id="update"),
    pytest.param(lambda s: s.set_non_tensor("new", "tag"), id="set_non_tensor"),
    pytest.param(lambda s: s.set("r", torch.ones(2, 2)), id="set-present-key"),
]


@pytest.mark.parametrize("write", WRITES)
def test_no_member_is_written_when_one_is_locked(write: Callable[[Any], Any]) -> None:
    a = tclass.TensorDict(obs=torch.zeros(2, 3), r=torch.zeros(2), batch_size=[2])
    b = tclass.TensorDict(obs=torch.zeros(2, 4), r=torch.zeros(2), batch_size=[2])
    stack = tclass.lazy_stack([a, b])
    b.lock_()
    assert not stack.is_locked
    with pytest.raises(errors.LockedError, match="member 1 of the lazy stack is locked") as e:
        write(stack)
    assert isinstance(e.value, RuntimeError)
    assert "new" not in a.keys() and "new" not in b.keys()
    assert a["r"].tolist() == [0.0, 0.0]


def test_unlocked_members_and_in_place_writes_still_work() -> None:
    a = tclass.TensorDict(r=torch.zeros(2), batch_size=[2])
    b = tclass.TensorDict(r=torch.zeros(2), batch_size=[2])
    stack = tclass.lazy_stack([a, b])
    b.lock_()
    stack.set("r", torch.ones(2, 2), inplace=True)  # present key, in place: allowed
    stack.set_("r", torch.full((2, 2), 2.0))
    assert b["r"].tolist() == [2.0, 2.0]
    b.unlock_()
    stack.set("new", torch.ones(2, 2))
    assert a["new"].tolist() == b["new"].tolist() == [1.0, 1.0]
