"""Tests for what a lazy stack's results share with it (tclass._engine._lazy): the stack
itself, its members (so keys, locks and names written later show in both), views of their
tensors, or copies; as the peer's results do. Found by the differential fuzzer, which
writes into a collection after an operation and compares the earlier result in both
libraries.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, TensorDict, errors


def _member(seed: float) -> TensorDict:
    """Batch [3, 2]: a leaf with a feature dim and a nested collection."""
    return TensorDict(
        {
            "a": torch.arange(12.0).reshape(3, 2, 2) + seed,
            "n": TensorDict({"b": torch.arange(6.0).reshape(3, 2) + seed}, [3, 2]),
        },
        [3, 2],
    )


def _stack(dim: int) -> LazyStackedTensorDict:
    """Batch [3, 2] in either case: three members of batch [2] along dim 0, or two of
    batch [3] along dim 1."""
    if dim == 0:
        return tclass.lazy_stack([_member(10.0 * i)[0] for i in range(3)], 0)
    return tclass.lazy_stack([_member(10.0 * i)[:, 0] for i in range(2)], 1)


def _bump_members(stack: LazyStackedTensorDict) -> None:
    for member in stack.tensordicts:
        member["a"].add_(100)


# --- no-ops return the stack itself ------------------------------------------------------

NO_OPS: dict[str, Callable[[Any], Any]] = {
    "flatten(0, 0)": lambda x: x.flatten(0, 0),
    "flatten(-1)": lambda x: x.flatten(-1),
    "flatten(1, -1)": lambda x: x.flatten(1, -1),
    "torch.flatten(x, 1, 1)": lambda x: torch.flatten(x, 1, 1),
    "unflatten(0, (3,))": lambda x: x.unflatten(0, (3,)),
    "unflatten(1, (-1,))": lambda x: x.unflatten(1, (-1,)),
    "movedim(0, 0)": lambda x: x.movedim(0, 0),
    "movedim((0, 1), (0, 1))": lambda x: x.movedim((0, 1), (0, 1)),
}


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("name", sorted(NO_OPS))
def test_an_op_that_changes_nothing_returns_the_stack(dim: int, name: str) -> None:
    stack = _stack(dim)
    out = NO_OPS[name](stack)
    assert out is stack
    # so a key written into the result is the stack's (as with the peer's, and with a tensor)
    out["c"] = torch.ones(3, 2)
    assert torch.equal(stack["c"], torch.ones(3, 2))


# --- tensor indices: members picked, or copies --------------------------------------------

SHARED: dict[str, Any] = {
    "list": [0, 2],
    "tensor": torch.tensor([0, 2]),
    "mask": torch.tensor([True, False, True]),
    "range": range(3),
    "None, mask": (None, torch.tensor([True, False, True])),
    "tensor, slice": (torch.tensor([0, 2]), slice(0, 1)),
    "tensor, int": (torch.tensor([0, 2]), 1),
}


@pytest.mark.parametrize("name", sorted(SHARED))
def test_a_tensor_along_the_stack_dim_alone_picks_members(name: str) -> None:
    stack = _stack(0)
    out = stack[SHARED[name]]
    expected = stack.to_tensordict()[SHARED[name]]
    assert torch.equal(out["a"], expected["a"])
    _bump_members(stack)  # views of the picked members: they see the write
    assert torch.equal(out["a"], expected["a"] + 100)


COPIED: dict[str, Any] = {
    "mask over both dims": torch.tensor([[True, False], [True, True], [False, True]]),
    "full mask over both dims": torch.ones(3, 2, dtype=torch.bool),
    "tensors along both dims": ([0, 1, 2], [0, 1, 0]),
}


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("name", sorted(COPIED))
def test_tensors_beyond_the_stack_dim_copy(dim: int, name: str) -> None:
    stack = _stack(dim)
    out = stack[COPIED[name]]
    expected = stack.to_tensordict()[COPIED[name]]
    assert torch.equal(out["a"], expected["a"])
    assert torch.equal(out["n", "b"], expected["n", "b"])
    _bump_members(stack)  # as torch's advanced indexing: a copy, even of whole members
    assert torch.equal(out["a"], expected["a"])


def test_an_int_at_the_stack_dim_and_a_mask_elsewhere_copy() -> None:
    index = (0, torch.tensor([True, True]))
    across, along = _stack(0), _stack(1)  # the mask is along a member dim, then the stack dim
    out_across, out_along = across[index], along[index]
    _bump_members(across)
    _bump_members(along)
    assert torch.equal(out_across["a"], _stack(0)[index]["a"])  # member 0's rows, copied
    assert torch.equal(out_along["a"], _stack(1)[index]["a"] + 100)  # members picked: views


# --- locks and names follow the members -----------------------------------------------------


def test_a_saved_stack_is_locked_through_its_members() -> None:
    with tempfile.TemporaryDirectory() as folder:
        saved = _stack(0).memmap(folder + "/w")
        assert saved.is_locked and all(m.is_locked for m in saved.tensordicts)
        view = saved.reshape(1, 3, 2)  # nested stacks over the same members
        view.unlock_()
        assert not any(m.is_locked for m in saved.tensordicts)
        assert not saved.is_locked  # it follows them, as the peer's
        saved["c"] = torch.zeros(3, 2)
        assert "c" in saved.tensordicts[0].keys()


def test_members_named_differently_raise_on_read() -> None:
    stack = tclass.lazy_stack([TensorDict(a=torch.zeros(1, 2), batch_size=[1]) for _ in range(2)])
    stack[[0]].refine_names("j", "i")  # renames member 0 only, through another stack
    with pytest.raises(errors.DimNameError, match="Not all dim names match") as info:
        stack.names  # noqa: B018
    assert isinstance(info.value, ValueError)
    assert "['i'] (member 0) and [None] (member 1)" in str(info.value)
    stack.names = [None, "k"]  # one set of names again
    assert stack.names == [None, "k"] and stack.tensordicts[0].names == ["k"]


def test_a_member_resized_through_a_view_raises_on_read() -> None:
    # the peer's ValueError (program 8,706,641 of index,shape): a member's batch size set
    # through the view `stack[0]` leaves members of 1 and 2 dims, unnamed both
    stack = tclass.lazy_stack([TensorDict({}, batch_size=[0, 4]) for _ in range(2)])
    member = stack[0]
    assert member is stack.tensordicts[0]
    member.batch_size = [0]
    with pytest.raises(errors.DimNameError, match="Not all dim names match") as info:
        stack.names  # noqa: B018
    assert isinstance(info.value, ValueError)
    assert "[None] (member 0) and [None, None] (member 1)" in str(info.value)
    member.batch_size = [0, 4]  # one batch size again
    assert stack.names == [None, None, None]


# --- an entry of another kind in some members ----------------------------------------------

MIXED: dict[str, list[Any]] = {
    "tensor, value": [TensorDict(a=torch.zeros(2)), TensorDict(a="x")],
    "value, tensor": [TensorDict(a="x"), TensorDict(a=torch.zeros(2))],
    "collection, tensor": [TensorDict(a=TensorDict()), TensorDict(a=torch.zeros(2))],
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_an_entry_of_mixed_kinds_is_a_type_error(name: str) -> None:
    stack = tclass.lazy_stack(MIXED[name], 0)
    for read in (lambda: stack["a"], lambda: stack.get("a")):
        with pytest.raises(errors.MixedEntryError, match="read it member by member") as info:
            read()
        assert isinstance(info.value, TypeError)  # as the peer's, where member 0 is a collection
        assert isinstance(info.value, errors.HeterogeneousEntryError)


# --- a dim of size 1 inserted or removed between two others ---------------------------------

INSERTED: dict[str, Callable[[Any], Any]] = {
    "unflatten(0, (3, 1))": lambda x: x.unflatten(0, (3, 1)),
    "unflatten(1, (1, 2))": lambda x: x.unflatten(1, (1, 2)),
    "unflatten(-1, (1, -1))": lambda x: x.unflatten(-1, (1, -1)),
    "view(3, 1, 2)": lambda x: x.view(3, 1, 2),
    "reshape(3, 1, 2)": lambda x: x.reshape(3, 1, 2),
}


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("name", sorted(INSERTED))
def test_a_dim_of_size_one_between_two_others_stacks_the_stack_itself(dim: int, name: str) -> None:
    # As the peer's: a stack of the stack alone along the new dim, so keys written into
    # the result reach the members (where a split of a neighbour dim copies them).
    stack = _stack(dim)
    out = INSERTED[name](stack)
    assert type(out) is LazyStackedTensorDict and out.batch_size == (3, 1, 2)
    assert out.stack_dim == 1 and out.tensordicts == [stack]
    assert torch.equal(out["a"], stack.to_tensordict()["a"].unsqueeze(1))
    out["c"] = torch.ones(3, 1, 2)
    assert torch.equal(stack["c"], torch.ones(3, 2))
    assert all("c" in member.keys() for member in stack.tensordicts)


def test_a_dim_of_size_one_after_another_stacks_the_stack_itself() -> None:
    # [3, 1] to [3, 1, 1]: the first size that differs from either end is the new dim's
    members = [TensorDict(a=torch.full((1,), float(i)), batch_size=[1]) for i in range(3)]
    stack = tclass.lazy_stack(members, 0)
    out = stack.unflatten(1, (1, 1))
    assert out.batch_size == (3, 1, 1) and out.stack_dim == 1 and out.tensordicts == [stack]
    assert torch.equal(out["a"], stack.to_tensordict()["a"].reshape(3, 1, 1))
    last = stack.unflatten(0, (3, 1))  # [3, 1] to [3, 1, 1] by splitting dim 0: the same
    assert last.tensordicts == [stack]


def test_a_dim_of_size_one_removed_between_two_others_unbinds_it() -> None:
    # [2, 1, 3] to [2, 3]: the members unbound along it, one level of stack as the peer's
    members = [TensorDict(a=torch.arange(3.0).reshape(1, 3) + i, batch_size=[1, 3]) for i in (0, 5)]
    stack = tclass.lazy_stack(members, 0)
    for out in (stack.reshape(2, 3), stack.view(2, 3), stack.flatten(1, 2)):
        assert type(out) is LazyStackedTensorDict and out.stack_dim == 0
        assert [m.batch_size for m in out.tensordicts] == [torch.Size([3])] * 2
        assert torch.equal(out["a"], stack.to_tensordict()["a"].reshape(2, 3))
        members[0]["a"].add_(1)  # views of the members' tensors
        assert torch.equal(out["a"][0], members[0]["a"][0])


def test_unflatten_keeps_the_members_names_without_repeating_one() -> None:
    # The stack cannot rename its members (the result shares them): their names stay and
    # the new stack dim has none, as in the peer, rather than a name twice.
    members = [TensorDict({}, batch_size=[1], names=["i"]) for _ in range(3)]
    stack = tclass.lazy_stack(members, 1)
    assert stack.names == ["i", None]
    for out in (stack.unflatten(0, [1, 1]), stack.unflatten(1, [1, 3]), stack.view(1, 1, 3)):
        assert out.names == ["i", None, None] and out.tensordicts == [stack]
    assert stack.names == ["i", None] and members[0].names == ["i"]


def test_a_cast_of_an_unlocked_stack_with_a_locked_member_is_unlocked() -> None:
    locked = TensorDict(
        b=torch.zeros(2), m=TensorDict(c=torch.ones(2), batch_size=[2]), batch_size=[2]
    )
    locked.lock_()
    stack = tclass.lazy_stack([locked, locked.clone()], 0)
    assert not stack.is_locked
    cast = stack.to(torch.bool)
    assert not cast.is_locked
    assert [m.is_locked for m in cast.tensordicts] == [False, False]
    assert cast.tensordicts[0]["b"].dtype == torch.bool
    cast.tensordicts[0]["new"] = torch.ones(2)  # a new collection, writable as the stack
    assert locked.is_locked and locked["m"].is_locked and "new" not in locked.keys()
    # a locked stack's cast stays locked, as a TensorDict's
    stack.lock_()
    assert stack.to(torch.float64).is_locked
    assert all(m.is_locked for m in stack.to(torch.float64).tensordicts)


def test_a_cast_shares_no_python_value_node_with_a_locked_source() -> None:
    """Found by the differential fuzzer: a cast kept the source's value nodes, so the
    cast of a locked collection could not be unlocked (they stayed held by the source),
    and the cast of a lazy stack over a locked member raised. The peer casts them to new
    nodes."""
    locked = TensorDict(
        x=torch.zeros(2), s=tclass.NonTensorData("a", batch_size=[2]), batch_size=[2]
    ).lock_()
    cast = locked.to(torch.bool)
    assert cast.is_locked and cast.get("s") is not locked.get("s")
    cast.unlock_()
    assert not cast.is_locked and locked.is_locked and locked.get("s").is_locked
    cast["s"] = "b"
    assert locked["s"] == "a" and cast["x"].dtype == torch.bool
    stack = tclass.lazy_stack([locked, locked.clone()], 0).to(torch.bool)
    assert not stack.is_locked and stack[0]["s"] == "a"
    node = tclass.NonTensorData("a", batch_size=[2])
    assert node.to(torch.bool) is not node
    assert node.to(torch.bool).data == "a"


def test_a_move_of_an_unlocked_stack_has_unlocked_members() -> None:
    """Found by the differential fuzzer (program 11,501,179): as a cast (above), a move
    gives new members and nested nodes, unlocked when the stack is, as the peer's."""
    nested = TensorDict(c=torch.ones(()))
    member = TensorDict(a=torch.zeros(()), m=nested)
    locked = TensorDict(a=torch.zeros(())).lock_()
    stack = tclass.lazy_stack([member, locked], 0)
    nested.lock_()
    moved = stack.to("cpu")
    assert moved.device == torch.device("cpu") and not moved.is_locked
    assert [m.is_locked for m in moved.tensordicts] == [False, False]
    assert not moved.tensordicts[0]["m"].is_locked and moved.tensordicts[0]["m"] is not nested
    assert nested.is_locked and locked.is_locked
    stack.lock_()
    assert all(m.is_locked for m in stack.to("cpu").tensordicts)
