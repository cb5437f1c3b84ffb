"""Tests for tclass's lazy stack: ``tclass.lazy_stack`` / ``LazyStackedTensorDict`` (members
kept as they are, entries stacked on read, writes split across members). Writes are in
``test_lazy_writes.py``, dense forms and nesting in ``test_lazy_nesting.py``, records over
a lazy stack in ``test_lazy_records.py`` (their shared members: ``helpers/lazy_members.py``).

Homogeneous stacks are checked against the dense stack of the same members
(``tclass.stack(members, d)``) for stack dims 0, 1 and 2 over members with a 2-d batch;
heterogeneous ones (ragged feature shapes, different key sets) against the members
themselves.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from lazy_members import DIMS, KEYS, _assert_matches, _member, _members, _ragged  # noqa: E402

import tclass
from tclass import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    errors,
)

from strategies import SETTINGS, basic_indices, make_values  # noqa: E402

StackError = errors.StackError
HeterogeneousEntryError = errors.HeterogeneousEntryError
KeyNotFoundError = errors.KeyNotFoundError
LockedError = errors.LockedError


# --- building ------------------------------------------------------------------------------


def test_members_are_kept_not_copied() -> None:
    members = _members(3)
    lazy = tclass.lazy_stack(members)
    assert type(lazy) is LazyStackedTensorDict
    assert lazy.batch_size == torch.Size([3, 3, 4]) and lazy.stack_dim == 0
    assert all(lazy[i] is m for i, m in enumerate(members))
    assert all(t is m for t, m in zip(lazy.tensordicts, members))
    assert lazy.tensordicts is not lazy.tensordicts  # a new list each time
    assert len(lazy) == 3


@pytest.mark.parametrize(
    ("dim", "normalized", "batch"),
    [
        (0, 0, [2, 3, 4]),
        (1, 1, [3, 2, 4]),
        (2, 2, [3, 4, 2]),
        (-1, 2, [3, 4, 2]),
        (-3, 0, [2, 3, 4]),
    ],
)
def test_stack_dim_and_batch_size(dim: int, normalized: int, batch: list[int]) -> None:
    members = _members()
    for lazy in (tclass.lazy_stack(members, dim), LazyStackedTensorDict(*members, stack_dim=dim)):
        assert lazy.stack_dim == normalized
        assert lazy.batch_size == torch.Size(batch)


def test_members_may_differ_in_shapes_and_keys() -> None:
    a, b = _ragged()
    lazy = LazyStackedTensorDict(a, b)
    assert lazy.batch_size == torch.Size([2, 4])
    assert lazy.tensordicts[1] is b


@pytest.mark.parametrize(
    "build", [lambda ms: tclass.lazy_stack(ms), lambda ms: LazyStackedTensorDict(*ms)]
)
def test_batch_dims_must_match(build: Callable[[list[Any]], Any]) -> None:
    assert build([_member((3, 4)), _member((3, 5))]).batch_size == (2, 3, -1)  # ragged
    members = [_member((3, 4)), _member((3,))]
    with pytest.raises(
        StackError,
        match=r"member 1 has batch size \[3\] but member 0 has \[3, 4\].*as many batch dims",
    ):
        build(members)


def test_empty_and_non_collections_refused() -> None:
    with pytest.raises(StackError, match="non-empty"):
        tclass.lazy_stack([])
    assert LazyStackedTensorDict().batch_size == torch.Size([0])  # grows with append()
    with pytest.raises(StackError, match="member 1 is a Tensor"):
        tclass.lazy_stack([_member(), torch.zeros(3, 4)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="member 1 is a Tensor"):  # a TypeError, as the peer
        tclass.lazy_stack([_member()]).append(torch.zeros(3, 4))  # type: ignore[arg-type]


def test_an_empty_stack_takes_a_batch_size_and_device() -> None:
    empty = LazyStackedTensorDict(stack_dim=1, batch_size=[1, 2], device="cpu")
    assert empty.batch_size == torch.Size([1, 0, 2]) and empty.device == torch.device("cpu")
    assert LazyStackedTensorDict(stack_dim=-1, batch_size=[3]).batch_size == (3, 0)
    members = [_member(), _member()]
    assert LazyStackedTensorDict(*members, batch_size=[2, 3, 4]).batch_size == (2, 3, 4)
    with pytest.raises(errors.BatchSizeError, match="members stack to \\[2, 3, 4\\]"):
        LazyStackedTensorDict(*members, batch_size=[3, 3, 4])
    with pytest.raises(errors.DeviceError, match="device=meta"):
        LazyStackedTensorDict(*members, device="meta")


def test_a_member_is_in_the_stack_by_identity() -> None:
    member = _member()
    stack = tclass.lazy_stack([member, member])
    assert member in stack and member.clone() not in stack and "a" in stack


def test_stack_dim_out_of_range() -> None:
    with pytest.raises(errors.DimError):
        tclass.lazy_stack(_members(), 3)


# --- indexing ------------------------------------------------------------------------------

BASIC = [
    0,
    -1,
    slice(None),
    slice(1, None),
    slice(None, None, 2),
    (slice(None), 1),
    (0, 1),
    (1, slice(0, 2), 2),
    ...,
    None,
    (None, 0),
    (..., 1),
    (0, ..., 1),
    (slice(None), None, 1),
]
ADVANCED = [
    torch.tensor([1, 0]),
    [1, 0, 1],
    torch.tensor(1),
    (slice(None), torch.tensor([2, 0])),
    (torch.tensor([0, 1]), torch.tensor([1, 2])),
    (torch.tensor([[0, 1], [1, 0]]),),
    (..., torch.tensor([0, 1])),
    (1, None, torch.tensor([0, 2])),
]
MASKS = [
    torch.tensor([True, False]),
    (slice(None), torch.tensor([True, False, True])),
    torch.ones(2, 3, dtype=torch.bool),
    (slice(None), slice(None), torch.tensor([True, False, False, True])),
]


@pytest.mark.parametrize("group", [BASIC, ADVANCED, MASKS], ids=["basic", "advanced", "mask"])
@pytest.mark.parametrize("d", DIMS)
def test_index_matches_dense(d: int, group: list[Any]) -> None:
    members = _members()
    lazy, dense = tclass.lazy_stack(members, d), tclass.stack(members, d)
    for index in group:
        try:
            expected = dense[index]
        except (IndexError, RuntimeError, ValueError):
            continue  # e.g. a mask shaped for another stack dim
        _assert_matches(lazy[index], expected)


@SETTINGS
@given(st.data())
def test_index_property(data: st.DataObject) -> None:
    d = data.draw(st.sampled_from(DIMS))
    members = [_member((2, 3)) for _ in range(data.draw(st.integers(1, 3)))]
    lazy, dense = tclass.lazy_stack(members, d), tclass.stack(members, d)
    index = data.draw(basic_indices(list(dense.batch_size)))
    expected = dense[index]
    if (
        expected.batch_size.numel() == 0
    ):  # empty selections: see test_empty_selection_reads_like_dense
        assert lazy[index].batch_size == expected.batch_size
    else:
        _assert_matches(lazy[index], expected)
    dim = data.draw(st.integers(0, 2))
    picks = torch.tensor(
        data.draw(st.lists(st.integers(0, dense.batch_size[dim] - 1), min_size=1, max_size=4))
    )
    advanced = (slice(None),) * dim + (picks,)
    _assert_matches(lazy[advanced], dense[advanced])


def test_index_along_stack_dim_selects_the_members() -> None:
    members = _members(3)
    lazy = tclass.lazy_stack(members)
    assert [m is x for m, x in zip(lazy[1:].tensordicts, members[1:])] == [True, True]
    picked = lazy[torch.tensor([2, 0])]
    assert type(picked) is LazyStackedTensorDict
    assert picked.tensordicts[0] is members[2] and picked.tensordicts[1] is members[0]
    assert lazy[[1, 2]].tensordicts[1] is members[2]
    masked = lazy[torch.tensor([True, False, True])]
    assert masked.tensordicts[1] is members[2]
    assert lazy[...].tensordicts[0] is members[0]


@pytest.mark.parametrize(
    "index",
    [torch.tensor([1]), torch.tensor([False, True]), [1], torch.tensor([1, 1])],
    ids=["tensor", "mask", "list", "repeat"],
)
def test_index_picking_one_member_is_a_lazy_stack(index: Any) -> None:
    members = _members()
    picked = tclass.lazy_stack(members)[index]
    assert type(picked) is LazyStackedTensorDict
    assert picked.tensordicts[0] is members[1]


def test_index_along_other_dims_indexes_each_member() -> None:
    members = _members()
    lazy = tclass.lazy_stack(members, 1)  # [3, 2, 4]
    row = lazy[1]
    assert type(row) is LazyStackedTensorDict and row.stack_dim == 0
    assert torch.equal(row.tensordicts[1]["a"], members[1]["a"][1])
    assert row.tensordicts[0]["a"].data_ptr() == members[0]["a"][1].data_ptr()  # a view


def test_index_heterogeneous_members() -> None:
    a, b = _ragged()
    lazy = tclass.lazy_stack([a, b])
    part = lazy[:, 1:3]
    assert part.batch_size == torch.Size([2, 2])
    assert [t.shape for t in part.get("obs", as_list=True)] == [
        torch.Size([2, 3]),
        torch.Size([2, 5]),
    ]
    assert torch.equal(
        lazy[:, torch.tensor([3, 0])]["x"], torch.stack([a["x"][[3, 0]], b["x"][[3, 0]]])
    )


def test_index_errors() -> None:
    lazy = tclass.lazy_stack(_members())
    with pytest.raises(IndexError, match="out of range for a lazy stack of 2 members"):
        lazy[2]
    with pytest.raises(ValueError, match="step cannot be zero"):
        lazy[::0]
    with pytest.raises(ValueError, match="step must be positive"):
        tclass.lazy_stack(_members(), 1)[::-1]  # a member dim: torch has no negative steps


def test_empty_selection_reads_like_dense() -> None:
    members = _members()
    lazy, dense = tclass.lazy_stack(members), tclass.stack(members)
    assert lazy[0:0].batch_size == dense[0:0].batch_size
    assert lazy[0:0]["a"].shape == dense[0:0]["a"].shape


def test_a_key_through_a_tensor_is_refused_before_the_lock() -> None:
    """As a TensorDict's: the key's error first, locked or not (the peer's order too)."""
    for locked in (False, True):
        lazy = tclass.lazy_stack(_members())
        if locked:
            lazy.lock_()
        with pytest.raises(KeyError, match=r"the entry \('a',\) is a tensor"):
            lazy.set(("a", "z"), "x y")
        assert lazy.is_locked is locked and "z" not in str(list(lazy.keys(True)))
    with pytest.raises(errors.LockedError):
        lazy.set(("n", "z"), torch.zeros(lazy.batch_size))  # through a collection: locked


def test_set__of_a_dict_into_a_tensor_is_refused_as_by_a_tensordict() -> None:
    """An in-place write keeps the entry's kind: a dict or collection copied into a
    tensor is an InPlaceWriteError, also where the members have no elements."""
    for size in (0, 2):
        members = [TensorDict({"c": torch.zeros(size)}, [size]) for _ in range(2)]
        for lazy in (
            tclass.lazy_stack(members),
            TensorDict({"c": torch.zeros(2, size)}, [2, size]),
        ):
            for value in ({"q": torch.ones(2, size)}, TensorDict(q=torch.ones(2, size))):
                with pytest.raises(
                    errors.InPlaceWriteError, match="cannot be copied into the tensor 'c'"
                ):
                    lazy.set_("c", value)
            assert isinstance(lazy["c"], torch.Tensor) and lazy["c"].shape == (2, size)


def test_an_empty_selection_of_saved_members_is_not_locked(tmp_path: Any) -> None:
    """It shares no element of the members, so it is not locked, whatever their lock
    (members saved in a folder are locked, and their rows at a slice from 0 are)."""
    lazy = tclass.lazy_stack(_members()).memmap_like(tmp_path / "w")
    assert lazy.is_locked and lazy.tensordicts[0].is_locked and lazy.tensordicts[0][0:1].is_locked
    for empty in (lazy[0:0], lazy[0:0:3, ...], lazy[torch.zeros(2, dtype=torch.bool)]):
        assert 0 in empty.batch_size and not empty.is_locked
        empty["new"] = torch.zeros(empty.batch_size)  # (an unlocked collection takes keys)
    assert lazy.is_locked and "new" not in lazy.keys()


# --- reading -------------------------------------------------------------------------------


@pytest.mark.parametrize("d", DIMS)
def test_read_stacks_equal_shapes(d: int) -> None:
    members = _members()
    lazy = tclass.lazy_stack(members, d)
    for key in KEYS:
        assert torch.equal(lazy[key], torch.stack([m[key] for m in members], d)), key
        assert torch.equal(lazy.get(key), lazy[key])


def test_read_ragged_raises_with_hints() -> None:
    lazy = tclass.lazy_stack(_ragged())
    with pytest.raises(
        HeterogeneousEntryError,
        match=r"entry 'obs' has shape \[4, 5\] in member 1 but \[4, 3\] in member 0",
    ) as info:
        lazy["obs"]
    for hint in ["as_list", "as_padded_tensor", "as_nested_tensor", "pad_sequence"]:
        assert hint in str(info.value)
    with pytest.raises(HeterogeneousEntryError):
        lazy.get("obs")
    assert isinstance(info.value, StackError)


def test_get_as_list_gives_member_tensors() -> None:
    a, b = _ragged()
    parts = tclass.lazy_stack([a, b]).get("obs", as_list=True)
    assert parts[0] is a["obs"] and parts[1] is b["obs"]


@pytest.mark.parametrize(
    ("side", "expected"),
    [
        ("right", [[1.0, 2.0, -1.0], [3.0, 4.0, -1.0]]),
        ("left", [[-1.0, 1.0, 2.0], [-1.0, 3.0, 4.0]]),
    ],
)
def test_get_as_padded_tensor(side: str, expected: list[list[float]]) -> None:
    a = TensorDict(v=torch.tensor([[1.0, 2.0], [3.0, 4.0]]), batch_size=[2])
    b = TensorDict(v=torch.tensor([[5.0, 6.0, 7.0], [8.0, 9.0, 10.0]]), batch_size=[2])
    padded = tclass.lazy_stack([a, b]).get(
        "v", as_padded_tensor=True, padding_value=-1, padding_side=side
    )  # type: ignore[arg-type]
    assert torch.equal(padded, torch.tensor([expected, [[5.0, 6.0, 7.0], [8.0, 9.0, 10.0]]]))
    across = tclass.lazy_stack([a, b], 1).get("v", as_padded_tensor=True)
    assert across.shape == torch.Size([2, 2, 3]) and torch.equal(across[:, 1], b["v"])
    assert torch.equal(across[:, 0, 2], torch.zeros(2))
    with pytest.raises(ValueError, match="padding_side must be 'left' or 'right'"):
        tclass.lazy_stack([a, b]).get("v", as_padded_tensor=True, padding_side="middle")  # type: ignore[arg-type]


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")
def test_get_as_nested_tensor() -> None:
    a = TensorDict(v=torch.tensor([1.0, 2.0]), batch_size=[])
    b = TensorDict(v=torch.tensor([5.0, 6.0, 7.0]), batch_size=[])
    lazy = tclass.lazy_stack([a, b])
    default = lazy.get("v", as_nested_tensor=True)
    assert default.is_nested and [t.tolist() for t in default.unbind()] == [
        [1.0, 2.0],
        [5.0, 6.0, 7.0],
    ]
    strided = lazy.get("v", as_nested_tensor=True, layout=torch.strided)
    assert strided.layout == torch.strided and [t.tolist() for t in strided.unbind()] == [
        [1.0, 2.0],
        [5.0, 6.0, 7.0],
    ]
    jagged = lazy.get("v", as_nested_tensor=True, layout=torch.jagged)
    assert jagged.layout == torch.jagged and [t.tolist() for t in jagged.unbind()] == [
        [1.0, 2.0],
        [5.0, 6.0, 7.0],
    ]
    across = tclass.lazy_stack([TensorDict(v=torch.zeros(2, 3), batch_size=[2])] * 2, 1)
    with pytest.raises(errors.ShapeError, match="needs stack_dim 0"):
        across.get("v", as_nested_tensor=True)


def test_key_in_some_members_names_them() -> None:
    lazy = tclass.lazy_stack(_ragged())
    with pytest.raises(
        HeterogeneousEntryError,
        match=r"key 'y' is in some members of this lazy stack but not in members \[0\]",
    ):
        lazy["y"]
    with pytest.raises(HeterogeneousEntryError, match=r"not in members \[0\]"):
        lazy.get("y")
    with pytest.raises(KeyError, match=r"not in members \[0\]"):  # as the peer raises
        lazy["y"]


def test_absent_key() -> None:
    ragged = tclass.lazy_stack(_ragged())
    assert ragged.get("nope") is None
    assert ragged.get("nope", 3) == 3
    lazy = tclass.lazy_stack(_members())
    with pytest.raises(KeyError, match="nope"):
        lazy["nope"]
    with pytest.raises(KeyNotFoundError):
        lazy["nope"]


def test_absent_key_with_ragged_entries_raises_key_error() -> None:
    lazy = tclass.lazy_stack(_ragged())
    with pytest.raises(KeyError, match="nope"):
        lazy["nope"]


def test_absent_nested_key_raises() -> None:
    lazy = tclass.lazy_stack(_members())
    with pytest.raises(KeyError):
        lazy["n", "nope"]


def test_pop_absent_key_returns_default() -> None:
    lazy = tclass.lazy_stack(_members())
    assert lazy.pop("nope", 5) == 5


def test_pop_and_delete_reach_members() -> None:
    members = _members()
    lazy = tclass.lazy_stack(members)
    expected = torch.stack([m["a"] for m in members])
    assert torch.equal(lazy.pop("a"), expected)
    assert all("a" not in m.keys() for m in members)
    del lazy["b"]
    assert list(lazy.keys()) == ["n"] and list(members[1].keys()) == ["n"]


def test_keys_are_common_to_all_members() -> None:
    a, b = _ragged()
    a["n"] = TensorDict(z=make_values([4, 2]), batch_size=[4])
    b["n"] = TensorDict(z=make_values([4, 7]), w=make_values([4]), batch_size=[4])
    lazy = tclass.lazy_stack([a, b])
    assert list(lazy.keys()) == ["obs", "x", "n"]
    # nested keys are listed without stacking the (ragged) leaves
    # ... a nested collection after its own keys, in the peer's order
    assert list(lazy.keys(include_nested=True)) == ["obs", "x", ("n", "z"), "n"]
    assert list(lazy.keys(include_nested=True, leaves_only=True)) == ["obs", "x", ("n", "z")]


def test_in_for_common_and_absent_keys() -> None:
    lazy = tclass.lazy_stack(_members())
    assert "a" in lazy and ("n", "c") in lazy
    assert "nope" not in lazy and ("n", "nope") not in lazy
    assert "a" in lazy.keys()


def test_in_for_ragged_key() -> None:
    lazy = tclass.lazy_stack(_ragged())
    assert "obs" in lazy.keys()
    assert "obs" in lazy


def test_in_for_key_in_some_members_agrees_with_keys() -> None:
    lazy = tclass.lazy_stack(_ragged())
    assert "y" not in lazy.keys()
    assert "y" not in lazy


# --- member-wise operations -----------------------------------------------------------------

ELEMENTWISE: dict[str, Callable[[Any], Any]] = {
    "apply": lambda t: t.apply(lambda v: v * 2),
    "apply_others": lambda t: t.apply(lambda v, w: v + w, t.clone()),
    "apply_dense_other": lambda t: t.apply(
        lambda v, w: v - w, tclass.stack(t.unbind(0), 0).clone()
    ),
    "named_apply": lambda t: t.named_apply(lambda k, v: v + 1 if k == "a" else v),
    "clone": lambda t: t.clone(),
    "detach": lambda t: t.detach(),
    "masked_fill": lambda t: t.masked_fill(torch.arange(24).reshape(t.batch_size) % 3 == 0, -1),
    "where": lambda t: t.where(torch.arange(24).reshape(t.batch_size) % 2 == 0, t.apply(torch.neg)),
    "where_number": lambda t: t.where(torch.arange(24).reshape(t.batch_size) % 2 == 0, 0),
    "eq_lazy": lambda t: t == t.clone(),
    "ne_number": lambda t: t != 3,
    "eq_tensor": lambda t: t == torch.arange(24).reshape(t.batch_size).float(),
}


@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_elementwise_matches_dense(name: str) -> None:
    op = ELEMENTWISE[name]
    for d in DIMS:
        members = _members()
        lazy, dense = tclass.lazy_stack(members, d), tclass.stack(members, d)
        got = op(lazy)
        assert type(got) is LazyStackedTensorDict and got.stack_dim == d, d
        _assert_matches(got, op(dense))


@pytest.mark.parametrize("d", DIMS)
def test_compare_with_dense(d: int) -> None:
    members = _members()
    lazy, dense = tclass.lazy_stack(members, d), tclass.stack(members, d)
    assert (lazy == dense).all() and (dense == lazy).all()
    assert not (lazy != dense).any()
    other = dense.clone()
    other["a"][(0,) * 3] = -1  # values are >= 0 (+1 can vanish in large float32 values)
    assert not (lazy == other).all()
    assert (lazy != other).any()


@pytest.mark.parametrize("d", DIMS)
def test_all_any_with_dims(d: int) -> None:
    lazy_eq = tclass.lazy_stack(_members(), d) == 0
    dense_eq = tclass.stack([m.clone() for m in lazy_eq.tensordicts], d)
    assert type(lazy_eq.all()) is bool and type(lazy_eq.any()) is bool
    assert lazy_eq.all() == dense_eq.all() and lazy_eq.any() == dense_eq.any()
    lazy = tclass.lazy_stack(_members(), d)
    assert (lazy != -1).all() and not (lazy == -1).any()
    assert (lazy == lazy).all() and not (lazy != lazy).any()
    for dim in [0, 1, 2, -1]:
        _assert_matches(lazy_eq.all(dim), dense_eq.all(dim))
        _assert_matches(lazy_eq.any(dim), dense_eq.any(dim))


SHAPES: dict[str, Callable[[Any], Any]] = {
    "unsqueeze0": lambda t: t.unsqueeze(0),
    "unsqueeze-1": lambda t: t.unsqueeze(-1),
    "unsqueeze2": lambda t: t.unsqueeze(2),
    "squeeze": lambda t: t[:, :, :1].squeeze(),
    "squeeze_dim": lambda t: t[:, :1].squeeze(1),
    "permute": lambda t: t.permute(2, 0, 1),
    "transpose": lambda t: t.transpose(-1, 0),
    "expand_after_unsqueeze": lambda t: t.unsqueeze(0).expand(5, *t.batch_size),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_shape_ops_match_dense(name: str) -> None:
    op = SHAPES[name]
    for d in DIMS:
        members = _members()
        lazy, dense = tclass.lazy_stack(members, d), tclass.stack(members, d)
        _assert_matches(op(lazy), op(dense))


@pytest.mark.parametrize("d", DIMS)
def test_expand_member_dim(d: int) -> None:
    members = [_member((1, 4)), _member((1, 4))]
    lazy, dense = tclass.lazy_stack(members, d), tclass.stack(members, d)
    target = list(dense.batch_size)
    target[1 if d == 0 else 0] = 3  # the members' size-1 dim
    got = lazy.expand(target)
    assert type(got) is TensorDict  # members that line up stack densely, as in the peer
    _assert_matches(got, dense.expand(target))
    members[1]["w"] = torch.zeros(1, 4, 2)
    members[0]["w"] = torch.zeros(1, 4, 3)  # members that differ stay a lazy stack
    got = tclass.lazy_stack(members, d).expand(target)
    assert type(got) is LazyStackedTensorDict and got.stack_dim == d
    assert [m["w"].shape[-1] for m in got.tensordicts] == [3, 2]


def test_expand_single_member_stack_dim() -> None:
    members = _members()
    lazy, dense = tclass.lazy_stack(members), tclass.stack(members)
    _assert_matches(lazy[:1].expand(3, 3, 4), dense[:1].expand(3, 3, 4))


@pytest.mark.parametrize("d", DIMS)
def test_expand_adds_leading_dims(d: int) -> None:
    members = _members()
    lazy, dense = tclass.lazy_stack(members, d), tclass.stack(members, d)
    _assert_matches(lazy.expand(5, *lazy.batch_size), dense.expand(5, *dense.batch_size))


@pytest.mark.parametrize("ragged", [False, True])
def test_broadcast_to_keeps_the_lock_and_expand_locks_what_stays_lazy(ragged: bool) -> None:
    # as the peer's: broadcast_to is one of its batch ops (flip, tile, narrow...), which
    # keep the lock; expand of a lazy stack gives a new dense stack, unlocked, or (members
    # of other keys) a lazy stack of views of the locked members, locked as they are
    members = [TensorDict({"a": torch.ones(1)}, [1]), TensorDict({"a": torch.ones(1)}, [1])]
    if ragged:
        members[1]["w"] = torch.zeros(1, 2)
    lazy = tclass.lazy_stack(members, 1).lock_()
    out = lazy.broadcast_to([2, 1, 2])
    assert out.batch_size == torch.Size([2, 1, 2]) and out.is_locked
    assert torch.equal(out["a"], torch.ones(2, 1, 2))
    expanded = lazy.expand(2, 1, 2)
    assert expanded.is_locked == ragged == isinstance(expanded, tclass.LazyStackedTensorDict)
    assert all(member.is_locked == ragged for member in expanded.unbind(2))
    fresh = [TensorDict({"a": torch.ones(1)}, [1]), TensorDict({"a": torch.ones(1)}, [1])]
    assert not tclass.lazy_stack(fresh, 1).broadcast_to([2, 1, 2]).is_locked


def test_broadcast_to_broadcasts_the_dense_stack_so_new_rows_share_memory() -> None:
    # as the peer's (and torch's broadcast_to): the new leading dim is a stride-0 view of
    # the dense stack, so a row written through it is every row (fuzzer program 8,700,711)
    members = [TensorDict({"b": torch.full((1, 1), v)}, [1]) for v in (3, 4)]
    lazy = torch.cat([tclass.lazy_stack(members), tclass.lazy_stack(members)], -1)
    out = lazy.broadcast_to([2, 2, 2])
    assert not isinstance(out, tclass.LazyStackedTensorDict) and out["b"].stride(0) == 0
    out[0] = out[0].apply(torch.ones_like)
    assert torch.equal(out["b"], torch.ones(2, 2, 2, 1, dtype=torch.int64))
    assert torch.equal(lazy["b"], torch.tensor([[3, 3], [4, 4]]).unsqueeze(-1))  # a copy


SPLITS: dict[str, Callable[[Any], Any]] = {
    "unbind": lambda t, dim: t.unbind(dim),
    "split1": lambda t, dim: t.split(1, dim),
    "split_sizes": lambda t, dim: t.split([1, t.batch_size[dim] - 1], dim),
    "chunk": lambda t, dim: t.chunk(2, dim),
}


@pytest.mark.parametrize("name", list(SPLITS))
@pytest.mark.parametrize("d", DIMS)
def test_splits_match_dense(d: int, name: str) -> None:
    members = _members()
    lazy, dense = tclass.lazy_stack(members, d), tclass.stack(members, d)
    for dim in [0, 1, 2, -1]:
        got, expected = SPLITS[name](lazy, dim), SPLITS[name](dense, dim)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_matches(g, e)


def test_unbind_and_split_along_stack_dim_give_members() -> None:
    members = _members(3)
    lazy = tclass.lazy_stack(members, 1)
    assert all(x is m for x, m in zip(lazy.unbind(1), members))
    first, rest = lazy.split([1, 2], 1)
    assert first.tensordicts[0] is members[0] and rest.tensordicts[1] is members[2]
    other = lazy.unbind(0)
    assert len(other) == 3 and all(
        type(p) is LazyStackedTensorDict and p.stack_dim == 0 for p in other
    )


def test_iteration_along_first_dim() -> None:
    members = _members()
    assert [x is m for x, m in zip(tclass.lazy_stack(members), members)] == [True, True]
    rows = list(tclass.lazy_stack(members, 1))
    assert len(rows) == 3 and all(type(r) is LazyStackedTensorDict for r in rows)
    assert torch.equal(rows[2]["a"], torch.stack([m["a"][2] for m in members]))


def test_apply_with_batch_size() -> None:
    members = _members()
    lazy, dense = tclass.lazy_stack(members), tclass.stack(members)
    # As the peer: with a batch size, fn gets the stacked tensors, the result is dense.
    got = lazy.apply(lambda v: v[:, :2], batch_size=[2, 2])
    assert type(got) is TensorDict
    _assert_matches(got, dense.apply(lambda v: v[:, :2], batch_size=[2, 2]))
    summed = lazy.named_apply(lambda k, v: v.sum(1), batch_size=[2])
    _assert_matches(summed, dense.named_apply(lambda k, v: v.sum(1), batch_size=[2]))
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        lazy.apply(lambda v: v[:2], batch_size=[3, 2])


def test_apply_with_a_batch_size_cutting_a_nested_stacks_stack_dim_densifies_it() -> None:
    """A lazy stack nested in a TensorDict whose ``apply(batch_size=...)`` changes the
    stack dim's size gives the dense stack's result, as the peer's (it was a
    ShapeError: "must keep its stack dim"); one that keeps it stays lazy."""
    td = TensorDict(a=torch.arange(3.0), batch_size=[3])
    td["n"] = tclass.lazy_stack([TensorDict(c=torch.tensor(float(i))) for i in range(3)])
    got = td.apply(lambda v: v[:1], batch_size=[1])
    assert type(got["n"]) is TensorDict and got["n"].batch_size == (1,)
    assert got["n", "c"].tolist() == [0.0]
    same = td.named_apply(lambda k, v: v * 2, batch_size=[3])
    assert type(same["n"]) is LazyStackedTensorDict and same["n", "c"].tolist() == [0.0, 2.0, 4.0]


def test_in_place_ops_reach_members() -> None:
    members = _members()
    before = [m.clone() for m in members]
    lazy = tclass.lazy_stack(members, 1)
    assert lazy.apply_(lambda v: v + 1) is lazy
    assert torch.equal(members[1]["a"], before[1]["a"] + 1)
    mask = torch.zeros(3, 2, 4, dtype=torch.bool)
    mask[:, 1, 0] = True
    assert lazy.masked_fill_(mask, -5) is lazy
    assert (members[1]["a"][:, 0] == -5).all() and not (members[0]["a"] == -5).any()
    assert lazy.zero_() is lazy
    assert all(not m["b"].any() and not m["n", "c"].any() for m in members)


def test_in_place_apply_that_filters_everything_out_gives_none() -> None:
    # As a TensorDict's (and the peer's, both kinds): None when every entry is filtered
    # out; the stack itself otherwise, its members written.
    members = _members()
    lazy = tclass.lazy_stack(members, 1)
    assert lazy.apply(lambda v: None, inplace=True, filter_empty=True) is None
    assert members[0].apply(lambda v: None, inplace=True, filter_empty=True) is None
    assert lazy.apply(lambda v: None, inplace=True, filter_empty=False) is lazy
    before = members[0]["a"].clone()
    assert lazy.apply(lambda v: v + 1, inplace=True, filter_empty=True) is lazy
    assert torch.equal(members[0]["a"], before + 1)
    empty = tclass.lazy_stack([TensorDict({}, []), TensorDict({}, [])])
    assert empty.apply(lambda v: v, inplace=True) is empty


def test_clone_is_lazy_and_independent() -> None:
    a, b = _ragged()
    lazy = tclass.lazy_stack([a, b])
    copy = lazy.clone()
    assert type(copy) is LazyStackedTensorDict and copy.tensordicts[0] is not a
    copy.tensordicts[1]["obs"].add_(100)
    assert not torch.equal(copy.tensordicts[1]["obs"], b["obs"])
    assert [t.shape for t in copy.get("obs", as_list=True)] == [
        torch.Size([4, 3]),
        torch.Size([4, 5]),
    ]
    assert "y" in copy.tensordicts[1].keys()


def test_heterogeneous_elementwise_ops() -> None:
    a, b = _ragged()
    lazy = tclass.lazy_stack([a, b])
    doubled = lazy.apply(lambda v: v * 2)
    assert torch.equal(doubled.get("obs", as_list=True)[1], b["obs"] * 2)
    assert (lazy == lazy.clone()).all()
    assert doubled.detach().tensordicts[1]["y"].shape == torch.Size([4])
    assert lazy.reshape(-1).batch_size == torch.Size([8])  # regrouped members: no copy
    with pytest.raises(HeterogeneousEntryError, match="needs the dense stack"):
        lazy.reshape(4, 2)
    with pytest.raises(HeterogeneousEntryError, match="stack dim 0"):
        lazy.all(0)


def test_to_returns_self_when_nothing_changes() -> None:
    members = [m.to("cpu") for m in _members()]
    lazy = tclass.lazy_stack(members)
    assert lazy.device == torch.device("cpu")
    assert lazy.to("cpu") is lazy and lazy.cpu() is lazy
    cast = lazy.to(torch.float64)
    assert type(cast) is LazyStackedTensorDict and cast["a"].dtype == torch.float64
    assert cast.tensordicts[0]["n", "c"].dtype == torch.float64
    assert members[0]["a"].dtype == torch.float32


def test_to_a_batch_size_that_drops_the_stack_dim_is_a_type_error() -> None:
    # As the peer: to(..., batch_size=) cannot change a lazy stack's stack dim; nothing
    # is moved or cast first.
    lazy = tclass.lazy_stack([TensorDict({"a": torch.zeros(3, 2)}, [3])] * 2, 1)
    with pytest.raises(errors.ArgumentError, match="Cannot pass batch-size to") as info:
        lazy.to(torch.float64, batch_size=[])
    assert isinstance(info.value, TypeError) and lazy["a"].dtype == torch.float32
    kept = lazy.to(torch.float64, batch_size=[3, 2])
    assert kept.batch_size == torch.Size([3, 2]) and kept["a"].dtype == torch.float64


# --- Python values -------------------------------------------------------------------------


def test_python_values_in_lazy_stacks() -> None:
    a, b = _member(), _member()
    a["same"], b["same"] = NonTensorData("x", [3, 4]), NonTensorData("x", [3, 4])
    a["label"], b["label"] = NonTensorData("p", [3, 4]), NonTensorData("q", [3, 4])
    lazy = tclass.lazy_stack([a, b], 2)
    same = lazy.get("same")
    assert type(same) is NonTensorStack and same.data == "x" and same.batch_size == lazy.batch_size
    assert same.tolist() == [[["x", "x"]] * 4] * 3  # one value per element, as the peer
    label = lazy.get("label")
    assert type(label) is NonTensorStack and label.tolist() == [[["p", "q"]] * 4] * 3
    assert lazy[:, :, 1].get("label").data == "q"
    assert lazy[0, 0].get("label").tolist() == ["p", "q"]


def test_per_element_python_values_in_members() -> None:
    a = TensorDict(s=NonTensorStack.from_list(["a", "b", "c"]), x=torch.zeros(3), batch_size=[3])
    b = TensorDict(s=NonTensorData("z", [3]), x=torch.ones(3), batch_size=[3])
    lazy = tclass.lazy_stack([a, b], 1)
    assert lazy.get("s").tolist() == [["a", "z"], ["b", "z"], ["c", "z"]]
    assert lazy[1].get("s").tolist() == ["b", "z"]
    assert lazy[:, 0].get("s").tolist() == ["a", "b", "c"]
    assert lazy[torch.tensor([2, 0])]["s"] == [["c", "z"], ["a", "z"]]
    assert lazy.contiguous().get("s").tolist() == lazy.get("s").tolist()
    lazy[0, 1] = TensorDict(s=NonTensorData("Q", []), x=torch.tensor(5.0), batch_size=[])
    assert b.get("s").tolist() == ["Q", "z", "z"] and b["x"][0] == 5
    assert pickle.loads(pickle.dumps(lazy))["s"] == [["a", "Q"], ["b", "z"], ["c", "z"]]
    direct = tclass.lazy_stack([NonTensorData("p", [2]), NonTensorData("q", [2])])
    assert type(direct) is NonTensorStack and direct.tolist() == [["p", "p"], ["q", "q"]]


def test_set_python_value_in_every_member() -> None:
    members = _members()
    lazy = tclass.lazy_stack(members)
    lazy.set("tag", NonTensorData("hello", lazy.batch_size))
    assert all(
        type(m.get("tag")) is NonTensorData and m.get("tag").data == "hello" for m in members
    )
    assert members[0].get("tag").batch_size == torch.Size([3, 4])
    assert lazy.get("tag").data == "hello"


# --- pickling and repr ---------------------------------------------------------------------


@pytest.mark.parametrize("d", [0, 1])
def test_pickle_round_trip(d: int) -> None:
    a, b = _ragged()
    lazy = tclass.lazy_stack([a, b], d)
    back = pickle.loads(pickle.dumps(lazy))
    assert (
        type(back) is LazyStackedTensorDict
        and back.stack_dim == d
        and back.batch_size == lazy.batch_size
    )
    assert [list(m.keys()) for m in back.tensordicts] == [list(a.keys()), list(b.keys())]
    assert all(
        torch.equal(x, y) for x, y in zip(back.get("obs", as_list=True), [a["obs"], b["obs"]])
    )


def test_repr_shows_stack_dim_and_ragged_sizes() -> None:
    text = repr(tclass.lazy_stack(_ragged(), 1))
    assert text.startswith("LazyStackedTensorDict(") and "stack_dim=1" in text
    assert "obs: f32[-1]" in text and "x: f32[]" in text
    homogeneous = repr(tclass.lazy_stack(_members()))
    assert "stack_dim=0" in homogeneous and "-1" not in homogeneous


def test_repr_shows_python_values_by_the_first_members() -> None:
    # as the peer: the compact form names the type of member 0's value, the detailed
    # form shows the stacked values
    stack = tclass.lazy_stack(
        [TensorDict(a=torch.zeros(2), s="x"), TensorDict(a=torch.zeros(2), s="y")]
    )
    assert repr(stack) == (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={a: f32[2], s: str})"
    )
    with tclass.set_printoptions(compact=False):
        assert "s: NonTensorStack(\n            ['x', 'y']," in repr(stack)


def test_an_empty_list_index_selects_no_member() -> None:
    """Found by the differential fuzzer: ``stack[[]]`` is an empty selection, as in the
    peer (the empty list is an integer index, not a float tensor)."""
    stack = tclass.lazy_stack([TensorDict({"a": torch.zeros(2)}, [2]) for _ in range(3)], 0)
    out = stack[[]]
    assert out.batch_size == torch.Size([0, 2]) and out["a"].shape == (0, 2)
    assert tclass.lazy_stack([TensorDict({}, []) for _ in range(3)], 0)[[]].batch_size == (0,)


def test_del_of_a_heterogeneous_entry() -> None:
    """Found by the differential fuzzer: deleting an entry needs no dense value of it."""
    a = TensorDict({"a": torch.zeros(3), "d": torch.zeros(3, 2)}, [3])
    b = TensorDict({"a": torch.zeros(3), "d": torch.zeros(3, 1)}, [3])
    stack = tclass.lazy_stack([a, b], 0)
    del stack["d"]
    assert list(stack.keys()) == ["a"] and "d" not in a.keys()
    with pytest.raises(KeyError):
        stack.del_("d")


def test_lazy_from_dict_one_dict_per_member() -> None:
    td = LazyStackedTensorDict.from_dict(
        [{"a": torch.zeros(3)}, {"a": torch.zeros(4)}], stack_dim_name="t"
    )
    assert td.batch_size == torch.Size([2]) and td.names == ["t"]
    assert td[1]["a"].shape == torch.Size([4])  # members of batch []: shapes may differ
    # batch_size is the members', as in the peer (the stack dim is added)
    two = LazyStackedTensorDict.from_dict(
        {"a": torch.zeros(2, 3)}, {"a": torch.ones(2, 3)}, batch_size=[2], stack_dim=1
    )
    assert two.batch_size == torch.Size([2, 2]) and two.stack_dim == 1
    assert torch.equal(two["a"][:, 1], torch.ones(2, 3))
    keyed = LazyStackedTensorDict.from_dict({"0": {"a": torch.zeros(2)}, "1": {"a": torch.ones(2)}})
    assert keyed.batch_size == torch.Size([2]) and keyed["a"][1].sum() == 2
    with pytest.raises(KeyError, match="one dict per member"):  # the peer: KeyError('0')
        LazyStackedTensorDict.from_dict({"a": torch.zeros(2)})


def test_indexing_a_locked_lazy_stack_gives_a_locked_stack() -> None:
    """Found by the differential fuzzer: as the peer, a lazy stack indexed from a locked
    one is locked (a dense result, as a TensorDict's index, is not)."""
    member = TensorDict({"a": torch.zeros(1)}, [1])
    stack = tclass.lazy_stack([member, member.clone()], 1).lock_()
    assert stack[::2].is_locked and stack[0].is_locked and stack[:, [0]].is_locked
    dim0 = tclass.lazy_stack([member.clone(), member.clone()], 0).lock_()
    assert dim0[:1].is_locked and not dim0[0, 0].is_locked


def test_setting_a_locked_stack_s_batch_size_to_its_own_changes_nothing() -> None:
    """Found by the differential fuzzer: as the peer (and a locked TensorDict), setting
    the batch size a locked lazy stack has is no error; another one is."""
    stack = tclass.lazy_stack([TensorDict(c=torch.zeros(4, 1), batch_size=[4])]).lock_()
    stack.batch_size = [1, 4]
    assert stack.batch_size == (1, 4) and stack.is_locked
    with pytest.raises(errors.LockedError):
        stack.batch_size = [1, 4, 1]


def test_python_values_devices_and_masked_select_of_a_lazy_stack() -> None:
    """As the peer's: ``set_non_tensor`` stores the value in every member,
    ``auto_device_`` records the members' device at every level, a lazy stack is not
    contiguous, and ``masked_select`` gives a TensorDict (nested stacks stay lazy)."""
    dense = TensorDict(
        {"a": torch.arange(12.0).view(3, 4), "n": {"d": torch.zeros(3, 4, 2)}}, [3, 4]
    )
    for dim in (0, 1):
        stack = tclass.lazy_stack(list(dense.unbind(dim)), dim)
        assert stack.set_non_tensor("word", "hi") is stack
        assert stack.get_non_tensor("word") == [["hi"] * 4] * 3
        assert all(member["word"] == "hi" for member in stack.tensordicts)
        assert stack.auto_device_().device == torch.device("cpu")
        assert stack["n"].device == torch.device("cpu") and stack.is_contiguous() is False
        mask = torch.arange(12).view(3, 4) % 2 == 0
        picked = stack.exclude("word").masked_select(mask)
        assert type(picked) is TensorDict and type(picked["n"]) is LazyStackedTensorDict
        assert torch.equal(picked["a"], dense["a"][mask]) and picked.batch_size == (6,)


def test_a_lazy_stacks_device_is_read_from_its_members() -> None:
    """As the peer's: a member's device set through another stack or a view that holds
    it (``auto_device_``) shows in every stack over it (fz28d, program 15,520,329 of
    methods,index,shape,combine: ``auto_device_`` of ``x[...]`` after ``torch.stack``)."""
    members = [TensorDict(x=torch.zeros(2), batch_size=[2]) for _ in range(2)]
    stack = tclass.lazy_stack(members)
    outer = torch.stack([stack], 1)
    assert stack.device is None and outer.device is None
    stack[...].auto_device_()  # a view over the same members
    assert stack.device == torch.device("cpu") and outer.device is None  # (copied members)
    members[1].clear_device_()
    assert stack.device is None
    empty = LazyStackedTensorDict(stack_dim=0, device="cpu")
    assert empty.device == torch.device("cpu")
