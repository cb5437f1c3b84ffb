"""Tests for reading a record's fields (``tclass/_engine/_record_fields.py``) over a lazy
stack whose members do not all set a field: the members' values, ``None`` where unset,
as a list in the members' order; a field set in every member stacks as before."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass
from tclass import TensorClass, errors


class Part(TensorClass):
    y: torch.Tensor
    z: torch.Tensor | None = None
    note: Any = None


def _members() -> list[Part]:
    unset = Part(y=torch.zeros(3, 2), batch_size=[3])
    both = Part(y=torch.ones(3, 2), z=torch.arange(3.0), note="b", batch_size=[3])
    return [unset, both]


@pytest.mark.parametrize("dim", [0, 1])
def test_a_field_set_in_some_members_reads_member_by_member(dim: int) -> None:
    members = _members()
    stack = tclass.lazy_stack(members, dim)
    for read in (lambda r: r.z, lambda r: r.get("z"), lambda r: r.get("z", 5)):
        z = read(stack)
        assert isinstance(z, list) and len(z) == 2
        assert z[0] is None and torch.equal(z[1], members[1].z)
    assert stack.note == [None, "b"] and stack.get("note") == [None, "b"]


def test_a_field_every_member_sets_stacks() -> None:
    members = _members()
    stack = tclass.lazy_stack(members, 0)
    assert torch.equal(stack.y, torch.stack([m.y for m in members]))
    assert stack[1].note == "b" and stack[0].z is None


def test_parts_that_do_not_stack_still_raise() -> None:
    a = Part(y=torch.zeros(3, 2), z=torch.zeros(3), batch_size=[3])
    b = Part(y=torch.zeros(3, 4), z=torch.zeros(3), batch_size=[3])
    stack = tclass.lazy_stack([a, b], 0)
    with pytest.raises(errors.StackError):
        _ = stack.y
    assert torch.equal(stack.z, torch.zeros(2, 3))


def test_get_with_options_keeps_the_stack_error() -> None:
    stack = tclass.lazy_stack(_members(), 0)
    with pytest.raises(errors.HeterogeneousEntryError, match="'z'"):
        stack.get("z", as_list=True)


def test_a_stack_of_stacks_reads_a_list_of_lists() -> None:
    stack = tclass.lazy_stack(_members(), 0)
    outer = tclass.lazy_stack([stack, stack.clone()], 0)
    z = outer.z
    assert [len(part) for part in z] == [2, 2]
    assert z[0][0] is None and z[1][0] is None and torch.equal(z[1][1], torch.arange(3.0))
    unset = tclass.lazy_stack([Part(y=torch.zeros(3, 2), batch_size=[3])] * 2, 0)
    assert tclass.lazy_stack([unset, unset], 0).z is None


class Plain(TensorClass):
    x: torch.Tensor
    y: torch.Tensor | None = None


class Still(TensorClass, frozen=True):
    x: torch.Tensor


def test_a_locked_lazy_stack_of_records_refuses_assignment() -> None:
    stack = tclass.lazy_stack([Plain(x=torch.zeros(2), batch_size=[2])] * 2, 0).lock_()
    with pytest.raises(errors.LockedError, match="'x'"):
        stack.x = torch.ones(2, 2)
    with pytest.raises(errors.LockedError):
        stack.set("x", torch.ones(2, 2))
    assert torch.equal(stack.x, torch.zeros(2, 2))
    locked = Plain(x=torch.zeros(2), batch_size=[2]).lock_()
    partly = tclass.lazy_stack([locked, Plain(x=torch.zeros(2), batch_size=[2])], 0)
    with pytest.raises(errors.LockedError):  # it would write into the locked member
        partly.x = torch.ones(2, 2)
    assert torch.equal(locked.x, torch.zeros(2))
    frozen = tclass.lazy_stack([Still(x=torch.zeros(2), batch_size=[2])], 0)
    with pytest.raises(errors.FrozenInstanceError):
        frozen.set("x", torch.ones(1, 2))
    unlocked = tclass.lazy_stack([Plain(x=torch.zeros(2), batch_size=[2])] * 2, 0)
    unlocked.x = torch.ones(2, 2)
    assert torch.equal(unlocked.x, torch.ones(2, 2))


def test_data_ptr_lists_the_top_level_tensors_first() -> None:
    """As the peer's: the top level's tensors before its nested collections, whose own
    order is kept (a lazy stack's members keep theirs); fuzzer, fz26d."""
    td = tclass.TensorDict(
        {"n": {"a": torch.zeros(()), "m": {"q": torch.zeros(())}, "c": torch.zeros(())}}, []
    )
    td["b"] = torch.zeros(())
    assert list(td.data_ptr().keys(True, True)) == ["b", ("n", "a"), ("n", "m", "q"), ("n", "c")]
    stack = tclass.lazy_stack([td, td.clone()], 0)
    assert list(stack.data_ptr(storage=True).keys(True, True))[:4] == [
        ("0", "n", "a"),
        ("0", "n", "m", "q"),
        ("0", "n", "c"),
        ("0", "b"),
    ]
    assert int(td.data_ptr()["b"]) == td["b"].data_ptr()
