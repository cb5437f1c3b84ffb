"""``roll(shifts, dims, inplace=True)`` of a lazy stack (tclass/_engine/_lazy/_roll.py),
as the peer's: the stack, its members and their nested collections keep their identity,
each member's entries are replaced by rolled copies, and a member that refuses the write
leaves every member as it was (the peer leaves the members before it rolled)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass.errors import LockedError


def _members(lib: ModuleType) -> tuple[Any, Any]:
    a = lib.TensorDict(
        a=torch.arange(6).reshape(2, 3),
        n=lib.TensorDict(x=torch.arange(2), batch_size=[2]),
        batch_size=[2],
    )
    return a, a.clone() + 10


def _state(stack: Any) -> list[list[Any]]:
    return [[m["a"].tolist(), m["n", "x"].tolist()] for m in stack.tensordicts]


@pytest.mark.parametrize(
    ("stack_dim", "shifts", "dims"),
    [(0, 1, 0), (0, 1, 1), (1, 1, 1), (1, (1, -1), (0, 1)), (0, 1, None), (1, 3, None)],
)
def test_roll_in_place_rolls_the_members_as_the_peer(
    stack_dim: int, shifts: Any, dims: Any
) -> None:
    a, b = _members(tclass)
    nested, tensor = a["n"], a["a"]
    stack = tclass.lazy_stack([a, b], stack_dim)
    expected = stack.roll(shifts, dims)
    assert stack.roll(shifts, dims, inplace=True) is stack
    assert stack.tensordicts[0] is a and a["n"] is nested  # identities kept
    assert torch.equal(tensor, torch.arange(6).reshape(2, 3))  # a copy, not a write into it
    assert torch.equal(stack["a"], expected["a"]) and torch.equal(
        stack["n", "x"], expected["n", "x"]
    )
    peer = pytest.importorskip("tensordict")
    pa, pb = _members(peer)
    theirs = peer.lazy_stack([pa, pb], stack_dim)
    theirs.roll(shifts, dims, inplace=True)
    assert _state(stack) == _state(theirs)


def test_roll_in_place_along_the_stack_dim_copies_the_rotated_tensors() -> None:
    a, b = _members(tclass)
    old_b = b["a"]
    tclass.lazy_stack([a, b], 0).roll(1, 0, inplace=True)
    assert a["a"] is not old_b and torch.equal(a["a"], old_b)
    a["a"] += 100
    assert torch.equal(old_b, torch.arange(6).reshape(2, 3) + 10)  # nothing shared


def test_roll_in_place_keeps_the_keys_only_some_members_have() -> None:
    a = tclass.TensorDict(a=torch.arange(2), z=torch.ones(2), batch_size=[2])
    b = tclass.TensorDict(a=torch.arange(2, 4), batch_size=[2])
    tclass.lazy_stack([a, b], 0).roll(1, 0, inplace=True)
    assert a["a"].tolist() == [2, 3] and b["a"].tolist() == [0, 1]
    assert set(a.keys()) == {"a", "z"} and set(b.keys()) == {"a"}


def test_roll_in_place_moves_python_values_too() -> None:
    a = tclass.TensorDict(a=torch.arange(2), s="x", batch_size=[2])
    b = tclass.TensorDict(a=torch.arange(2), s="y", batch_size=[2])
    tclass.lazy_stack([a, b], 0).roll(1, 0, inplace=True)
    assert (a["s"], b["s"]) == ("y", "x")


def test_roll_in_place_of_a_locked_stack_is_the_peers_lock_error() -> None:
    a, b = _members(tclass)
    stack = tclass.lazy_stack([a, b], 0).lock_()
    with pytest.raises(RuntimeError) as info:
        stack.roll(1, 1, inplace=True)
    assert isinstance(info.value, LockedError) and "unlock" in str(info.value)
    assert _state(stack) == [
        [[[0, 1, 2], [3, 4, 5]], [0, 1]],
        [[[10, 11, 12], [13, 14, 15]], [10, 11]],
    ]


def test_a_member_that_refuses_the_write_leaves_every_member_as_it_was() -> None:
    a, b = _members(tclass)
    stack = tclass.lazy_stack([a, b], 0)
    before = _state(stack)
    b.lock_()  # the peer rolls a's entries, then raises at b's: a partial write
    with pytest.raises(LockedError):
        stack.roll(1, 1, inplace=True)
    assert _state(stack) == before
