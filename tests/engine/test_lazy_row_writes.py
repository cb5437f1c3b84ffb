"""Row writes into lazy stacks (``lazy[idx] = v``, ``set_at_``, ``update_at_``) written
member by member, as the peer writes them: each member indexed with the rest of the
index as a collection is (a basic index casts the value's dtype; an int down to no batch
dims takes a value without them), a lazy source split among the members unread (its
members may differ in shape), nested lazy stacks through their own stack dim (lazy35)."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, TensorDict
from tclass.errors import BatchMismatchError, BatchSizeError, KeyNotFoundError


def _rows(count: int = 2, stack_dim: int = 0, *, ragged: bool = False) -> LazyStackedTensorDict:
    members = [
        TensorDict(
            d=torch.ones(3, 2 + (i if ragged else 0)),
            n=TensorDict(e=torch.ones(3, 2, dtype=torch.bool), batch_size=[3]),
            batch_size=[3],
        )
        for i in range(count)
    ]
    return LazyStackedTensorDict.lazy_stack(members, stack_dim)


def _sums(lazy: LazyStackedTensorDict, key: object = "d") -> list[float]:
    return [float(member.get(key).float().sum()) for member in lazy.tensordicts]


def test_an_index_down_to_no_batch_dims_takes_a_dict_without_them() -> None:
    lazy = _rows()
    lazy[1, 0] = {"d": torch.zeros(2)}
    assert _sums(lazy) == [6.0, 4.0]
    assert torch.equal(lazy.tensordicts[1]["d"][0], torch.zeros(2))
    lazy = _rows(stack_dim=1)
    lazy[0, 1] = {"d": torch.zeros(2)}  # (row 0 of member 1)
    assert _sums(lazy) == [6.0, 4.0]


def test_a_dict_still_needs_the_selected_batch_dims() -> None:
    lazy = _rows(3)
    with pytest.raises(BatchMismatchError):
        lazy[1:3] = {"d": torch.zeros(())}  # read at batch [2, 3], as a TensorDict's
    assert _sums(lazy) == [6.0, 6.0, 6.0]  # nothing written
    with pytest.raises(BatchMismatchError):
        TensorDict(d=torch.ones(3, 3, 2), batch_size=[3, 3])[1:3] = {"d": torch.zeros(())}


@pytest.mark.parametrize("stack_dim", [0, 1])
def test_a_tensor_picking_one_member_three_times_casts_as_a_basic_index(stack_dim: int) -> None:
    lazy = _rows(stack_dim=stack_dim)
    picks = torch.tensor([1, 1, -1])
    index = (picks, 2) if stack_dim == 0 else (2, picks)
    value = torch.zeros(3, 2, dtype=torch.long)  # into a bool entry: cast, as lazy[1][2] = v
    lazy.set_at_(("n", "e"), value, index)
    assert [int(m["n", "e"].sum()) for m in lazy.tensordicts] == [6, 4]
    assert not lazy.tensordicts[1]["n", "e"][2].any()


def test_the_peers_program_2406() -> None:
    members = [TensorDict(d=torch.ones(4, 3), batch_size=[4]) for _ in range(2)]
    x = LazyStackedTensorDict.lazy_stack(members, 1)
    x["n", "zz"] = torch.ones(4, 2, dtype=torch.bool)
    index = (-2, torch.tensor([0, 0, -2]))
    x.set_at_(("n", "zz"), x.get(("n", "zz"))[index] * 0, index)
    assert x.get(("n", "zz")).tolist() == [[True] * 2, [True] * 2, [False, True], [True] * 2]


def test_an_advanced_index_inside_a_member_keeps_torchs_dtype_check() -> None:
    lazy = _rows()  # (the peer refuses it too: index_put needs one dtype)
    with pytest.raises(RuntimeError, match="dtype"):
        lazy[0, torch.tensor([1, 2])] = {"n": {"e": torch.zeros(2, 2, dtype=torch.long)}}
    assert bool(lazy.tensordicts[0]["n", "e"].all())


def test_update_at_of_a_lazy_source_whose_members_differ_in_shape() -> None:
    lazy = _rows(3, ragged=True)
    lazy.update_at_(lazy[1].apply(torch.zeros_like), 1)
    assert _sums(lazy) == [6.0, 0.0, 12.0]
    lazy = _rows(3, stack_dim=1, ragged=True)
    source = lazy[1].apply(torch.zeros_like)  # a lazy stack of the members' rows 1
    assert isinstance(source, LazyStackedTensorDict)
    lazy.update_at_(source, 1)
    assert _sums(lazy) == [4.0, 6.0, 8.0]
    assert _sums(lazy, ("n", "e")) == [4.0, 4.0, 4.0]


def test_the_peers_program_5178_stack_dim_2() -> None:
    members = [
        TensorDict(
            a=torch.ones(3, 4, 1, 1 + (i > 0)),
            m=TensorDict(b=torch.ones(3, 4, 2)),
            batch_size=[3, 4],
        )
        for i in range(3)
    ]
    x = LazyStackedTensorDict.lazy_stack(members, 2)
    x.update_at_(x[1].apply(torch.zeros_like), 1)
    for member in x.tensordicts:
        assert not member["a"][1].any() and bool(member["a"][0].all())
        assert not member["m", "b"][1].any()


def test_update_at_of_a_lazy_source_refuses_a_missing_key_before_writing() -> None:
    lazy = _rows(ragged=True)
    source = lazy[:, 1].apply(torch.zeros_like)
    source["new"] = torch.zeros(2)
    with pytest.raises(KeyNotFoundError):
        lazy.update_at_(source, (slice(None), 1))
    assert _sums(lazy) == [6.0, 9.0]  # nothing written
    lazy.update_at_(source, (slice(None), 1), keys_to_update=["d"])
    assert _sums(lazy) == [4.0, 6.0]
    assert _sums(lazy, ("n", "e")) == [6.0, 6.0]  # not in keys_to_update


def test_writes_reach_nested_lazy_stacks_along_their_stack_dim() -> None:
    inner = [_rows(), _rows()]
    outer = LazyStackedTensorDict.lazy_stack(inner, 1)  # batch [2, 2, 3]
    assert outer[::-1].batch_size == torch.Size([2, 2, 3])  # (the inner stacks' dim)
    value = outer[:, 0].apply(lambda t: torch.zeros_like(t, dtype=torch.long))
    value[0, 1] = value[0, 1].apply(torch.ones_like)  # row 1 of inner[0][1] (reversed)
    outer[::-1, 0] = value
    assert _sums(inner[0]) == [0.0, 2.0]
    assert _sums(inner[1]) == [6.0, 6.0]
    outer.set_at_(("n", "e"), torch.zeros(2, 2, dtype=torch.long), (0, slice(None), 0))
    assert [_sums(stack, ("n", "e")) for stack in inner] == [[0.0, 2.0], [4.0, 6.0]]


def test_update_at_reaches_nested_lazy_stacks_whose_members_differ() -> None:
    inner = [_rows(ragged=True), _rows(ragged=True)]
    outer = LazyStackedTensorDict.lazy_stack(inner, 0)  # batch [2, 2, 3]
    source = outer[1, 1].apply(torch.zeros_like)  # a TensorDict: member 1 of inner[1]
    outer.update_at_(source, (1, 1))
    assert _sums(inner[1]) == [6.0, 0.0] and _sums(inner[0]) == [6.0, 9.0]
    outer.update_at_(outer[0, :, 2].apply(torch.zeros_like), (0, slice(None), 2))
    assert _sums(inner[0]) == [4.0, 6.0]


def test_a_record_over_a_lazy_stack_writes_a_row_of_another_dtype() -> None:
    @tclass.tensorclass
    class Row:
        d: torch.Tensor
        e: torch.Tensor

    rows = tclass.lazy_stack(
        [Row(d=torch.ones(3, 2 + i), e=torch.ones(3), batch_size=[3]) for i in range(2)], 0
    )
    rows[1, 0] = rows[1, 0].apply(lambda t: torch.zeros_like(t, dtype=torch.long))
    assert float(rows[1].d.sum()) == 6.0 and float(rows[1].e.sum()) == 2.0
    rows.set_at_("e", torch.zeros(2, dtype=torch.long), (slice(None), 2))
    assert [float(rows[i].e.sum()) for i in range(2)] == [2.0, 1.0]


def test_a_shape_mismatch_still_raises() -> None:
    lazy = _rows()
    with pytest.raises(BatchSizeError):
        lazy[1, 0] = {"d": torch.zeros(5)}
    assert _sums(lazy) == [6.0, 6.0]


def test_update_at_of_a_tensordict_reaches_its_nested_lazy_stack_unread() -> None:
    members = [TensorDict(d=torch.ones(3, 2 + i), batch_size=[3]) for i in range(2)]
    td = TensorDict(
        n=LazyStackedTensorDict.lazy_stack(members, 1), a=torch.ones(3, 2), batch_size=[3, 2]
    )
    td.update_at_(td[1].apply(torch.zeros_like), 1)  # its 'n': members differ in shape
    assert [float(m["d"].sum()) for m in members] == [4.0, 6.0]
    assert float(td["a"].sum()) == 4.0


@pytest.mark.parametrize("stack_dim", [0, 1])
def test_a_source_of_another_batch_size_names_both_batch_sizes(stack_dim: int) -> None:
    # As for a TensorDict: the source's batch size is checked against the indexed one
    # before any member's part is tried (the message names both; nothing is written).
    stack = _rows(2, stack_dim)
    before = stack.clone()
    source = stack[:1].to_tensordict().zero_()
    with pytest.raises(BatchSizeError, match=r"batch dimension mismatch .*\[1, 3\]|\[1, 2\]"):
        stack[:1] = torch.cat([source, source], 0)
    assert (stack == before).all()
    stack[:1] = source  # the right batch size writes
    assert (stack[:1]["d"] == 0).all() and (stack[1:]["d"] == 1).all()
