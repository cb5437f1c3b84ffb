"""Tests for the lazy stack's reshaping and reordering (tclass/_engine/_lazy/_reshape.py)
where they meet other kinds: a lazy stack built from records (it stays one where an op keeps
it lazy, a TensorDict where an op makes it dense, as the peer's), views over dims of size 1
and over no elements (the members regrouped, not copied)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from lazy_records import Agent, Inner  # noqa: E402

import tclass
from tclass import LazyStackedTensorDict, TensorDict
from tclass.errors import ShapeError, UnsupportedError


def _records_stack() -> LazyStackedTensorDict:
    """A lazy stack built from records by the class constructor."""
    agent = Agent(
        obs=torch.arange(2.0),
        reward=torch.ones(2),
        name="a",
        inner=Inner(x=torch.zeros(2), batch_size=[2]),
        batch_size=[2],
    )
    return LazyStackedTensorDict(agent, agent.clone(), stack_dim=1)


@pytest.mark.parametrize("op", [lambda x: x.clone(), lambda x: x.apply(lambda t: t)])
def test_a_lazy_stack_of_records_stays_one_where_an_op_keeps_it_lazy(op: Any) -> None:
    out = op(_records_stack())
    assert type(out) is LazyStackedTensorDict
    assert all(type(member) is Agent for member in out.tensordicts)


def test_a_record_from_a_shape_op_writes_back_on_exit() -> None:
    stacked = _records_stack()
    with stacked.unsqueeze(0) as out:
        assert type(out) is Agent
        out.reward = torch.full((1, 2, 2), 5.0)
    assert all(torch.equal(member.reward, torch.full((2,), 5.0)) for member in stacked.tensordicts)


@pytest.mark.parametrize(
    "op",
    [
        lambda x: x[0],
        lambda x: x.unbind(0)[1],
        lambda x: x.permute(1, 0)[:, 0],
        lambda x: x.unsqueeze(0)[0, 0],
        lambda x: x.unsqueeze(0).squeeze(0)[0],
    ],
)
def test_a_lazy_stack_of_records_indexed_across_its_stack_dim_is_a_record(op: Any) -> None:
    out = op(_records_stack())  # as the peer: the members' rows re-stacked as a record
    assert type(out) is Agent
    assert out.batch_size == torch.Size([2]) and out.obs.shape == torch.Size([2])


@pytest.mark.parametrize(
    "op",
    [
        lambda x: x.flip([1]),
        lambda x: x.roll(1, 1),
        lambda x: x.narrow(1, 0, 1),
        lambda x: x.gather(1, torch.ones(2, 2, dtype=torch.long)),
        lambda x: tclass.pad(x, [0, 0, 1, 0]),
    ],
)
def test_a_lazy_stack_of_records_made_dense_is_a_tensordict(op: Any) -> None:
    lazy = _records_stack()
    out = op(lazy)  # as the peer's (its dense stack): a TensorDict, nested records kept
    assert type(out) is TensorDict and type(out["inner"]) is Inner
    assert "extra" not in out.keys()  # the None field, as the peer's
    dense = op(lazy.to_tensordict())
    assert out.batch_size == dense.batch_size and out["name"] == dense["name"]
    assert torch.equal(out["obs"], dense["obs"])
    assert torch.equal(out["inner", "x"], dense["inner", "x"])


@pytest.mark.parametrize("shape", [(3, 1), (3, 1, 1, 1), (3,)])
def test_reshape_over_dims_of_size_one_keeps_the_members(shape: tuple[int, ...]) -> None:
    # Splitting or merging dims of size 1 regroups the members (the peer densifies some).
    members = [
        TensorDict(a=torch.arange(2.0).reshape(1, 1, 2) + i, batch_size=[1, 1]) for i in range(3)
    ]
    lazy = tclass.lazy_stack(members, 0)
    out = lazy.reshape(shape)
    assert type(out) is LazyStackedTensorDict and out.batch_size == torch.Size(shape)
    assert torch.equal(out["a"], lazy.to_tensordict()["a"].reshape(*shape, 2))


def test_a_view_of_no_elements_that_splits_the_members_keeps_them() -> None:
    members = [TensorDict(a=torch.zeros(0, 2), batch_size=[0]) for _ in range(3)]
    lazy = tclass.lazy_stack(members, 0)
    out = lazy.unflatten(0, [1, 3])
    assert type(out) is LazyStackedTensorDict and out.batch_size == torch.Size([1, 3, 0])
    assert out[0].tensordicts == members and out["a"].shape == (1, 3, 0, 2)
    flat = lazy.reshape(-1)  # no member left to stack: a TensorDict with the keys
    assert type(flat) is TensorDict and flat.batch_size == (0,) and list(flat.keys()) == ["a"]


def test_tile_with_more_counts_than_dims_adds_dims_to_a_ragged_stack() -> None:
    # Leading dims are added as unsqueeze adds them: a ragged stack has no reshape.
    members = [TensorDict(a=torch.arange(float(n)), batch_size=[n]) for n in (2, 1)]
    lazy = tclass.lazy_stack(members, 0)
    assert lazy.batch_size == (2, -1)
    out = lazy.tile([2, 1, 3])
    assert out.batch_size == (2, 2, -1) and out.stack_dim == 1
    assert [m.batch_size for m in out.tensordicts] == [torch.Size([2, 6]), torch.Size([2, 3])]
    for member, source in zip(out.tensordicts, members):
        assert torch.equal(member["a"], source["a"].unsqueeze(0).tile(2, 3))


def test_tile_with_more_counts_than_dims_keeps_a_python_value_shared() -> None:
    # Without a ragged dim the leading dims come from a reshape, which keeps one value
    td = TensorDict({"v": "pong", "a": torch.arange(3.0)}, batch_size=[3])
    out = td.tile([2, 1, 2])
    assert out.batch_size == (2, 1, 6) and out["v"] == "pong"
    assert torch.equal(out["a"], td["a"].reshape(1, 1, 3).tile(2, 1, 2))


@pytest.mark.parametrize(("dim", "sizes"), [(1, [2, 1, 1]), (2, [1, 1]), (0, [1, 3])])
def test_unflatten_names_the_dims_as_the_dense_unflatten(dim: int, sizes: list[int]) -> None:
    # By the shape alone, the trailing dim of size 1 could be the one split: the split
    # asked for is made, so the dim's name goes to the last new dim, as in the dense
    # unflatten (the peer's, which reshapes a dense copy there).
    member = TensorDict({"a": torch.arange(24.0).view(3, 2, 4)}, [3, 2], names=["j", "i"])
    stack = tclass.lazy_stack([member], 2)
    out = stack.unflatten(dim, sizes)
    dense = stack.to_tensordict().unflatten(dim, sizes)
    assert isinstance(out, LazyStackedTensorDict)
    assert out.batch_size == dense.batch_size
    assert out.names == dense.names
    assert torch.equal(out["a"], dense["a"])


def test_tensor_split_along_another_dim_splits_each_member() -> None:
    members = [TensorDict({"a": torch.arange(6.0).view(3, 2)}, [3, 2]) for _ in range(2)]
    stack = tclass.lazy_stack(members, 1)
    stack.names = ["i", "s", "j"]
    pieces = stack.tensor_split([1], 0)
    assert [p.batch_size for p in pieces] == [torch.Size([1, 2, 2]), torch.Size([2, 2, 2])]
    assert all(isinstance(p, LazyStackedTensorDict) for p in pieces)
    assert pieces[1].names == ["i", "s", "j"]
    pieces[1].tensordicts[0]["a"].fill_(-1.0)  # the members' pieces are views of them
    assert members[0]["a"][1:].eq(-1.0).all() and members[0]["a"][0].ge(0).all()
    by_stack_dim = stack.tensor_split(2, 1)  # along the stack dim: the members themselves
    assert by_stack_dim[0].tensordicts[0] is members[0]
    with pytest.raises(IndexError):
        stack.tensor_split(2, 3)


def test_repeat_interleave_in_place_of_a_ragged_lazy_stack_is_refused_as_any() -> None:
    """``repeat_interleave(n, dim, inplace=True)`` of a lazy stack is the
    ``UnsupportedError`` (a ``NotImplementedError``, as the peer's) of a batch size
    changed in place, also where the members differ in shape (the lazy result is
    computed first, no dense stack: program 15,000,214 of methods,index,shape,combine)."""
    a = TensorDict({"b": torch.arange(3.0)}, [])
    ragged = tclass.lazy_stack([a, TensorDict({"b": torch.arange(2.0)}, [])], 0)
    for stack in (ragged, tclass.lazy_stack([a, a.clone()], 0)):
        with pytest.raises(UnsupportedError, match="cannot change its batch size") as info:
            stack.repeat_interleave(2, dim=0, inplace=True)
        assert isinstance(info.value, NotImplementedError)
        assert stack.batch_size == torch.Size([2]) and len(stack.tensordicts) == 2
    assert ragged.repeat_interleave(2, dim=0).batch_size == torch.Size([4])


def test_reshape_of_a_ragged_lazy_stack_without_elements_gives_the_dense_empty_one() -> None:
    """A ragged lazy stack with a dim of size 0 holds no element (its ``numel()`` is 1,
    as the peer's): reshaped to a shape of no elements, it is the members' entries joined
    and reshaped (a dense TensorDict, as the peer's), not a ``ShapeError`` counting one
    element nor an ``IndexError`` for ``-1`` (program 16,022,075 of
    features,index,shape,combine L8)."""
    shapes = [(2, 4, 0), (1, 4, 0)]
    for keys in (False, True):
        members = [TensorDict({"a": torch.zeros(s)} if keys else {}, s) for s in shapes]
        stack = tclass.lazy_stack(members, 0)
        assert stack.batch_size == torch.Size([2, -1, 4, 0])
        for shape, expected in (([0, 2], [0, 2]), ([-1], [0]), ([2, 1, 4, 0], [2, 1, 4, 0])):
            out = stack.reshape(shape)
            assert type(out) is TensorDict and out.batch_size == torch.Size(expected)
            assert list(out.keys()) == (["a"] if keys else [])
        with pytest.raises(ShapeError, match="0 elements"):
            stack.reshape(2, 0, -1)


@pytest.mark.parametrize("op", ["view", "reshape"])
@pytest.mark.parametrize(
    ("count", "member", "shape"), [(1, [1, 1], [1, 1]), (2, [1, 1], [2, 1]), (2, [2, 3], [2, 6])]
)
def test_view_merging_dims_of_a_named_lazy_stack_is_unnamed(
    op: str, count: int, member: list[int], shape: list[int]
) -> None:
    """As a TensorDict's view / reshape in both libraries and the peer's lazy stack's
    (program 16,303,243 L12 of methods,index,shape,combine): merging or removing dims
    gives unnamed dims, the stack and its members keep theirs; splitting a dim keeps
    them, as ``unflatten``."""
    members = [TensorDict({"a": torch.zeros(*member, 2)}, member) for _ in range(count)]
    stack = tclass.lazy_stack(members, 0)
    stack.names = ["j"] + [None] * len(member)
    out = getattr(stack, op)(shape)
    assert isinstance(out, LazyStackedTensorDict) and out.batch_size == torch.Size(shape)
    assert out.names == [None] * len(shape)
    assert stack.names == ["j"] + [None] * len(member)
    assert all(m.names == [None] * len(member) for m in members)
    split = stack.view(*stack.batch_size, 1)  # a dim split: the names kept
    assert split.names == ["j"] + [None] * (len(member) + 1)


def _ragged(*extra: int) -> LazyStackedTensorDict:
    """A lazy stack of batch size ``[4, -1, 2, *extra]`` (members of lengths 1..4)."""
    members = [
        TensorDict({"a": torch.full((n, 2, *extra), float(n))}, [n, 2, *extra])
        for n in (1, 2, 3, 4)
    ]
    return tclass.lazy_stack(members, 0)


@pytest.mark.parametrize("extra", [(), (0,)])
def test_unflatten_and_flatten_of_regular_dims_of_a_ragged_lazy_stack_regroup_it(
    extra: tuple[int, ...],
) -> None:
    """Splitting or merging regular dims of a ragged lazy stack regroups its members, as the
    peer's does (tclass raised: a ``HeterogeneousEntryError`` with elements, a
    ``ShapeError`` over none, where it reshaped a dense copy: program 17,112,506 L8 of
    features,index,shape,combine)."""
    x = _ragged(*extra)
    split = x.unflatten(0, [2, 2])
    assert split.batch_size == (2, 2, -1, 2, *extra)
    assert [m.batch_size for m in split.tensordicts] == [(2, -1, 2, *extra)] * 2
    assert split[1, 0]["a"].shape == (3, 2, *extra)
    alone = x.unflatten(0, [4, 1])
    assert alone.batch_size == (4, 1, -1, 2, *extra) and alone.tensordicts[0] is x
    after = x.unflatten(2, [2, 1])
    assert after.batch_size == (4, -1, 2, 1, *extra)
    # (over no elements, the stack alone along the new dim, as the peer's)
    parts = [(4, -1, 1)] * 2 if not extra else [(4, -1, 2, 0)]
    assert [m.batch_size for m in after.tensordicts] == parts
    back = split.flatten(0, 1)
    assert back.batch_size == x.batch_size
    assert [m["a"].shape[0] for m in back.tensordicts] == [1, 2, 3, 4]
    with pytest.raises(tclass.errors.HeterogeneousEntryError):
        x.unflatten(1, [1, -1])  # the ragged dim has no one size to split
