"""A record's ``update`` with tensor values (the usual call: set without the merge checks
a mapping needs, then all checked together on a copy of the storage before the record
takes them): what it writes, and that a refused field leaves every field as it was."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
import torch

from tclass import (
    LazyStackedTensorDict,
    MetaData,
    NonTensorData,
    Spec,
    TensorClass,
    TensorDict,
    errors,
    lazy_stack,
    tensorclass,
)


class Step(TensorClass):
    obs: torch.Tensor
    reward: torch.Tensor
    note: str | None = None


class Frames(TensorClass):
    obs: Annotated[torch.Tensor, Spec("h", torch.float32)]
    mask: Annotated[torch.Tensor, Spec("h", torch.bool)]


def _step() -> Step:
    return Step(torch.zeros(3, 2), torch.zeros(3), "a", batch_size=[3])


def test_tensors_set_as_given_or_cloned() -> None:
    step, obs = _step(), torch.ones(3, 2)
    step.update({"obs": obs, "reward": torch.ones(3)})
    assert step.obs is obs and torch.equal(step.reward, torch.ones(3)) and step.note == "a"
    step.update({"obs": obs, "reward": torch.ones(3)}, clone=True)
    assert step.obs is not obs and torch.equal(step.obs, obs)


def test_a_value_node_and_none() -> None:
    step = _step()
    step.update({"obs": torch.ones(3, 2), "note": NonTensorData("b", batch_size=[3])})
    assert step.note == "b" and torch.equal(step.obs, torch.ones(3, 2))
    step.update({"obs": torch.zeros(3, 2), "note": None})
    assert step.note is None


def test_a_refused_field_leaves_the_others() -> None:
    step = _step()
    obs, reward = step.obs, step.reward
    with pytest.raises(errors.BatchSizeError, match="reward"):
        step.update({"obs": torch.ones(3, 2), "reward": torch.ones(4)})
    assert step.obs is obs and step.reward is reward
    with pytest.raises(errors.UnknownFieldError, match="nope"):
        step.update({"obs": torch.ones(3, 2), "nope": torch.ones(3)})
    assert step.obs is obs


def test_specs_checked_together() -> None:
    frames = Frames(torch.zeros(2, 4), torch.zeros(2, 4, dtype=torch.bool), batch_size=[2])
    frames.update({"obs": torch.ones(2, 5), "mask": torch.ones(2, 5, dtype=torch.bool)})
    assert frames.obs.shape == (2, 5)  # the dim h changed size in both fields at once
    with pytest.raises(errors.FieldSpecError):
        frames.update({"obs": torch.ones(2, 6), "mask": torch.ones(2, 7, dtype=torch.bool)})
    assert frames.obs.shape == (2, 5) and frames.mask.shape == (2, 5)


class Ragged(TensorClass):
    obs: torch.Tensor
    note: str
    opt: torch.Tensor | None = None


def test_update_in_place_of_a_lazy_stack_whose_other_fields_do_not_stack() -> None:
    """Only the fields written are read: ``obs`` of another shape in each member (no
    dense value) does not stop ``update_`` of ``note`` or ``opt``, as in the peer; a
    field unset in a member is a ``KeyError`` for it (both raised the stacking error)."""
    first = Ragged(torch.zeros(3, 2), "a", torch.zeros(3), batch_size=[3])
    second = Ragged(torch.zeros(3, 5), "b", torch.zeros(3), batch_size=[3])
    stack = lazy_stack([first, second])
    stack.update_({"note": "c", "opt": torch.ones(2, 3)})
    assert stack[0].note == "c" and stack[1].note == "c"
    assert torch.equal(first.opt, torch.ones(3)) and torch.equal(second.opt, torch.ones(3))
    unset = lazy_stack([Ragged(torch.zeros(3, 2), "a", batch_size=[3]), second])
    with pytest.raises(KeyError, match="opt"):
        unset.update_({"opt": torch.zeros(2, 3)})


def test_update_in_place_of_a_field_whose_members_differ_in_shape() -> None:
    """``update_`` of the ragged field itself broadcasts each member's row into its own
    shape, as the peer does (tclass read the field first, to find a nested record, and
    raised the stacking error); saved with ``memmap``, the write reaches the files."""
    members = [Ragged(torch.zeros(()), "a"), Ragged(torch.zeros(3, 2), "b")]
    for stack in (lazy_stack(members), lazy_stack(members).clone().memmap()):
        stack.update_({"obs": torch.tensor([1.0, 2.0])})
        assert torch.equal(stack[0].obs, torch.tensor(1.0))
        assert torch.equal(stack[1].obs, torch.full((3, 2), 2.0))


class Outer(TensorClass):
    step: Step
    tag: str | None = None


@pytest.mark.parametrize("key", ["step", ("step",)])
def test_a_collection_for_a_nested_record_merges_by_either_key(key: object) -> None:
    """``update({("step",): td})``: a one-part path names the field as its string does,
    so an empty TensorDict merges into the nested record (nothing changes), as the peer."""
    outer = Outer(_step(), "t", batch_size=[3])
    obs = outer.step.obs
    for source in ({key: TensorDict({}, batch_size=[3])}, {key: {"reward": torch.ones(3)}}):
        assert outer.update(source, inplace=False) is outer
    assert outer.step.obs is obs and outer.step.note == "a"
    assert torch.equal(outer.step.reward, torch.ones(3))


class Listed(TensorClass, autocast=True):
    x: torch.Tensor
    lst: list


@pytest.mark.parametrize("kind", ["lazy", "dense"])
@pytest.mark.parametrize("op", ["update", "update_", "attribute"])
def test_a_list_over_values_held_per_element_is_split_among_them(kind: str, op: str) -> None:
    """As the peer: a stack of records whose ``list`` field holds a value per element
    takes a list of one item per element given to ``update`` as those values
    (``update(x.to_dict())`` gives each element its own list back), not the whole list
    in every element; an attribute set keeps the list one value (the peer's too).
    (``update_``: the peer's lazy stack writes nothing, its dense one raises.)"""
    members = [Listed(x=torch.zeros(()), lst=[1, 2]), Listed(x=torch.ones(()), lst=[])]
    stacked = lazy_stack(members) if kind == "lazy" else torch.stack(members)
    values = stacked.to_dict()
    assert values["lst"] == [[1, 2], []]
    values["lst"] = [[3], [4, 5]]
    if op == "attribute":
        stacked.lst = values["lst"]
        assert [list(stacked[i].lst) for i in range(2)] == [[[3], [4, 5]]] * 2
        return
    getattr(stacked, op)(values)
    assert [list(stacked[i].lst) for i in range(2)] == [[3], [4, 5]]
    assert stacked.to_dict()["lst"] == [[3], [4, 5]]


def test_a_list_over_one_value_stays_one_value() -> None:
    record = Listed(x=torch.zeros(2), lst=[1, 2], batch_size=[2])  # one list, as the peer
    record.update({"lst": [3, 4]})
    assert record.lst == [3, 4] and record[0].lst == [3, 4]


@pytest.mark.parametrize("rows", [slice(None, 1), slice(0, 0)])
def test_update_at_of_a_lazy_stack_of_records_writes_the_indexed_part(rows: slice) -> None:
    # the peer's members call ``update`` with the indexed source and refuse its batch size
    # ("update() got a source with batch size"); tclass writes the part the index takes
    def step() -> Step:
        return Step(torch.ones(2, 2, 3), torch.ones(2, 2), "a", batch_size=[2, 2])

    lazy = lazy_stack([step(), step()], 2)
    index, notes = (rows, slice(None, 1)), lazy.note
    lazy.update_at_(lazy[index].apply(torch.zeros_like), index)
    expected = torch.ones(2, 2, 2)
    expected[index] = 0
    assert torch.equal(lazy.reward, expected) and torch.equal(lazy.obs.sum(-1), 3 * expected)
    assert lazy.note == notes and [m.note for m in lazy.unbind(2)] == ["a", "a"]


def test_update_at_of_a_record_at_an_index_that_drops_a_dim() -> None:
    # the peer's record passes the source (batch [1]) to ``update`` and raises its batch
    # mismatch; tclass writes it at the index, as a TensorDict does in both
    step = Step(torch.ones(1, 1, 3), torch.ones(1, 1), "a", batch_size=[1, 1])
    obs = step.obs
    step.update_at_(step[-1].apply(torch.zeros_like), -1)
    assert step.obs is obs and not step.obs.any() and not step.reward.any()
    assert step.batch_size == torch.Size([1, 1]) and step.note == "a"


@tensorclass(nocast=True)
class Loose:
    x: torch.Tensor
    v: Any = None


class Anything(TensorClass):
    x: torch.Tensor
    v: Any = None


@pytest.mark.parametrize("cls", [Loose, Anything])
@pytest.mark.parametrize("op", ["update", "set", "attribute"])
def test_an_any_field_of_a_lazy_stack_splits_a_list_per_element(cls: Any, op: str) -> None:
    """``update(stack.to_dict())`` of a lazy stack of records gives each member its own
    value of an ``Any`` field back (to_dict lists it per member and element); the stack
    stored the list as one value over the stack, which every member got whole (program
    1,600,987 of ``--families records``). The peer splits such a list among its members."""
    stack = lazy_stack([cls(x=torch.zeros(2), v=[i, i + 10], batch_size=[2]) for i in range(2)])
    values = stack.to_dict()
    assert values["v"] == [[[0, 10], [0, 10]], [[1, 11], [1, 11]]]
    if op == "update":
        stack.update(values)
    elif op == "set":
        stack.set("v", values["v"])
    else:
        stack.v = values["v"]
    assert stack.to_dict()["v"] == values["v"]
    assert [list(member.v) for member in stack.unbind(0)] == values["v"]
    peer = pytest.importorskip("tensordict")

    @peer.tensorclass(nocast=cls is Loose)
    class Theirs:
        x: torch.Tensor
        v: Any = None

    theirs = peer.lazy_stack([Theirs(x=torch.zeros(2), v="a", batch_size=[2]) for _ in range(2)])
    theirs.set("v", values["v"])  # the peer's members: the same values (as tensors)
    assert [torch.as_tensor(member.v).tolist() for member in theirs.unbind(0)] == values["v"]


@tensorclass(autocast=True)
class Cast:
    x: torch.Tensor
    v: Any = None


def _peer_class(peer: Any, cls: Any) -> Any:
    options = {Loose: {"nocast": True}, Cast: {"autocast": True}}.get(cls, {})

    @peer.tensorclass(**options)
    class Theirs:
        x: torch.Tensor
        v: Any = None

    return Theirs


@pytest.mark.parametrize("cls", [Loose, Anything])
@pytest.mark.parametrize("op", ["set", "attribute", "update"])
def test_an_any_field_of_a_lazy_stack_splits_a_list_per_member(cls: Any, op: str) -> None:
    """A list with one item per member along the stack dim gives each member its item, as
    the peer splits it (its members make the numbers tensors, even under nocast: tclass
    stores each as that member's field stores it, a Python value); before, every member
    got the whole list."""
    stack = lazy_stack([cls(x=torch.zeros(3), v=0, batch_size=[3]) for _ in range(2)])
    if op == "set":
        stack.set("v", [5, 6])
    elif op == "attribute":
        stack.v = [5, 6]
    else:
        stack.update({"v": [5, 6]})
    assert [member.v for member in stack.unbind(0)] == [5, 6]
    assert stack[1].v == 6 and stack.to_dict()["v"] == [[5, 5, 5], [6, 6, 6]]
    stack.v = [["a", "b"], ["c", "d"]]  # nested as the members only: one list each
    assert [member.v for member in stack.unbind(0)] == [["a", "b"], ["c", "d"]]
    peer = pytest.importorskip("tensordict")
    Theirs = _peer_class(peer, cls)
    theirs = peer.lazy_stack([Theirs(x=torch.zeros(3), v="s", batch_size=[3]) for _ in range(2)])
    theirs.set("v", [5, 6])
    assert [int(member.v) for member in theirs.unbind(0)] == [5, 6]


def test_a_list_per_member_of_an_autocast_field_and_other_lengths_stay_one_value() -> None:
    """``autocast`` gives every member the whole list (as the peer); a list not as long as
    the stack is one value for every member (the peer: a ValueError from its zip)."""
    stack = lazy_stack([Cast(x=torch.zeros(3), v="s", batch_size=[3]) for _ in range(2)])
    stack.v = [5, 6]
    assert [member.v for member in stack.unbind(0)] == [[5, 6], [5, 6]]
    peer = pytest.importorskip("tensordict")
    Theirs = _peer_class(peer, Cast)
    theirs = peer.lazy_stack([Theirs(x=torch.zeros(3), v="s", batch_size=[3]) for _ in range(2)])
    theirs.v = [5, 6]
    assert [member.v for member in theirs.unbind(0)] == [[5, 6], [5, 6]]
    loose = lazy_stack([Loose(x=torch.zeros(3), v=0, batch_size=[3]) for _ in range(2)])
    loose.v = [5, 6, 7]
    assert [member.v for member in loose.unbind(0)] == [[5, 6, 7], [5, 6, 7]]


def test_a_list_per_member_along_a_later_stack_dim_and_nested_stacks() -> None:
    stack = lazy_stack([Loose(x=torch.zeros(3, 4), batch_size=[3, 4]) for _ in range(2)], 1)
    stack.v = [["a", "b"], ["c", "d"], ["e", "f"]]  # batch [3, 2, 4]: the members along dim 1
    assert stack.batch_size == (3, 2, 4)
    assert [member.v for member in stack.unbind(1)] == [["a", "c", "e"], ["b", "d", "f"]]
    rows = [[Loose(x=torch.zeros(3), batch_size=[3]) for _ in "ab"] for _ in "ab"]
    outer = lazy_stack([lazy_stack(row) for row in rows])
    outer.v = [[1, 2], [3, 4]]  # each inner stack splits its row again
    assert [[row.v for row in inner.unbind(0)] for inner in outer.unbind(0)] == [[1, 2], [3, 4]]
    outer.v = [7, 8]
    assert [[row.v for row in inner.unbind(0)] for inner in outer.unbind(0)] == [[7, 7], [8, 8]]


def test_a_refused_item_per_member_leaves_every_member_as_it_was() -> None:
    stack = lazy_stack([Loose(x=torch.zeros(3), v=0, batch_size=[3]) for _ in range(2)])
    with pytest.raises(errors.BatchMismatchError, match="batch"):
        stack.v = [torch.ones(3), torch.ones(5)]  # the second does not start with [3]
    assert [member.v for member in stack.unbind(0)] == [0, 0]
    stack.v = [torch.ones(3), torch.zeros(3)]
    assert [member.v.tolist() for member in stack.unbind(0)] == [[1.0] * 3, [0.0] * 3]


@pytest.mark.parametrize("source", [{}, 3])
def test_a_locked_record_refuses_an_update_of_nothing(source: Any) -> None:
    # the peer's locked record refuses update({}) and update(3) with its lock error
    # (tclass took {} and raised NotAMappingError for 3); update(None) is taken by both
    @tensorclass
    class Point:
        x: torch.Tensor

    point = Point(x=torch.zeros(3), batch_size=[3]).lock_()
    with pytest.raises(errors.LockedError, match="cannot update this Point: it is locked"):
        point.update(source)
    assert point.update(None) is point and point.update({}, inplace=True) is point
    assert (point.x == 0).all()


def test_a_locked_record_takes_update_of_none_and_refuses_one_of_itself() -> None:
    # the peer's tensorclass returns itself from update(None) / update() when locked
    # (its TensorDict refuses them: README, Locking), but refuses update(itself) and
    # update(..., keys_to_update=[]) with its lock error; tclass returned the record
    @tensorclass
    class Point:
        x: torch.Tensor

    point = Point(x=torch.zeros(3), batch_size=[3]).lock_()
    assert point.update(None) is point and point.update() is point
    with pytest.raises(errors.LockedError, match="cannot update this Point: it is locked"):
        point.update(point)
    with pytest.raises(errors.LockedError, match="cannot update this Point: it is locked"):
        point.update({"x": torch.ones(3)}, keys_to_update=[])
    assert point.update(point, inplace=True) is point and (point.x == 0).all()
    assert Point(x=torch.zeros(3), batch_size=[3]).update(None).x.tolist() == [0.0] * 3


def _with_wider_note() -> Step:
    """A record of batch [1] whose ``note`` keeps the dims it had before the batch size
    was cut ([1, 4]: one value per element there), as the peer's does."""
    step = Step(torch.zeros(1, 4), torch.zeros(1, 4), "pong", batch_size=[1, 4])
    step.batch_size = [1]
    assert step._tensordict.get("note").batch_size == (1, 4)
    return step


def test_a_value_with_dims_past_the_batch_keeps_them_through_update() -> None:
    step = _with_wider_note()
    step.update(_with_wider_note().clone(), inplace=True)
    assert step._tensordict.get("note").batch_size == (1, 4)
    assert step._tensordict.get("note").tolist() == [["pong"] * 4]


def test_a_lazy_stack_of_such_records_written_whole_keeps_them() -> None:
    """``stack[...] = stack[...].clone()`` updates each member with its part (program
    16,021,491 of features,index,shape,combine L12: the labels read one level
    shallower after the write, fz30c)."""
    stack = LazyStackedTensorDict(_with_wider_note(), _with_wider_note(), stack_dim=-1)
    stack[...] = stack[...].clone().zero_()
    notes = [member._tensordict.get("note").batch_size for member in stack.tensordicts]
    assert notes == [(1, 4), (1, 4)]
    assert stack.get("note").tolist() == [[["pong"] * 4, ["pong"] * 4]]


class Tagged(TensorClass):
    obs: torch.Tensor
    tag: str | None = None


@pytest.mark.parametrize("batch", [[0], [2]])
def test_a_metadata_list_is_one_value_for_the_whole_batch(batch: list[int]) -> None:
    """Program 15,982,891 (L8) of features,entries,math,records: ``update`` read a
    ``MetaData``'s list as its value and stored it as one item per element, so the
    update of a record over ``[0]`` from its own copy refused the list of 2
    (BatchMismatchError), and over ``[2]`` each element read one item, where the peer
    keeps the list for every element."""
    rec = Tagged(torch.zeros(*batch), batch_size=batch)
    rec.set("tag", MetaData([1, 2], batch_size=batch))
    rec.update(rec.clone().apply(torch.zeros_like))
    assert rec.tag == [1, 2]
    assert [row.tag for row in rec] == [[1, 2]] * batch[0]
    rec.update({"tag": MetaData([3, 4], batch_size=batch)})
    assert rec.tag == [3, 4] and rec.to_dict()["tag"] == [3, 4]
