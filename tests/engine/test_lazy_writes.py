"""Writing into a lazy stack (``tests/engine/test_lazy.py`` has the rest): ``set`` and
indexed writes split along the stack dim into the members, ``update`` / ``update_``,
lists of one item per member, locks, and removing keys; checked against the dense stack
of the same members, or against the members."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from lazy_members import DIMS, _assert_matches, _members, _ragged  # noqa: E402

import tclass
from tclass import (
    LazyStackedTensorDict,
    TensorDict,
    errors,
    lazy_stack,
)

from strategies import make_values  # noqa: E402

KeyNotFoundError = errors.KeyNotFoundError
LockedError = errors.LockedError


# --- writing -------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [0, 1])
def test_set_splits_along_stack_dim(d: int) -> None:
    a, b = _ragged()
    lazy = tclass.lazy_stack([a, b], d)
    value = make_values(lazy.batch_size)
    assert lazy.set("new", value) is lazy
    assert torch.equal(a["new"], value.select(d, 0)) and torch.equal(b["new"], value.select(d, 1))
    lazy.set("sub", TensorDict(q=make_values([*lazy.batch_size, 3]), batch_size=lazy.batch_size))
    assert type(a.get("sub")) is TensorDict and a["sub", "q"].shape == torch.Size([4, 3])
    lazy.set("mapping", {"q": torch.ones(lazy.batch_size)})
    assert torch.equal(b["mapping", "q"], torch.ones(4))
    lazy["item"] = value
    assert torch.equal(lazy["item"], value)
    with pytest.raises(errors.BatchMismatchError, match="does not start with the batch size"):
        lazy.set("bad", torch.zeros(3, 4))


def test_set_in_place() -> None:
    members = _members()
    lazy = tclass.lazy_stack(members, 2)
    ptr = members[0]["a"].data_ptr()
    lazy.set_("a", torch.ones(3, 4, 2))
    assert members[0]["a"].data_ptr() == ptr and (members[1]["a"] == 1).all()
    with pytest.raises(KeyNotFoundError):
        lazy.set_("nope", torch.ones(3, 4, 2))


@pytest.mark.parametrize("source_kind", ["dense", "lazy", "mapping"])
def test_update(source_kind: str) -> None:
    members = _members()
    lazy = tclass.lazy_stack(members)
    new = TensorDict(a=torch.full((2, 3, 4), 7.0), z=torch.ones(2, 3, 4), batch_size=[2, 3, 4])
    if source_kind == "lazy":
        source: Any = tclass.lazy_stack(list(new.unbind(0)))
    elif source_kind == "mapping":
        source = {"a": new["a"], "z": new["z"]}
    else:
        source = new
    assert lazy.update(source) is lazy
    assert all((m["a"] == 7).all() and (m["z"] == 1).all() for m in members)


WRITES = [
    0,
    1,
    slice(1, None),
    (slice(None), 1),
    (0, slice(0, 2), 2),
    ...,
    (..., 1),
    torch.tensor([1, 0]),
    (slice(None), torch.tensor([2, 0])),
    torch.tensor([True, False]),
    (slice(None), torch.tensor([True, False, True])),
    torch.ones(2, 3, dtype=torch.bool),
]


@pytest.mark.parametrize("value_kind", ["number", "collection"])
@pytest.mark.parametrize("d", DIMS)
def test_setitem_matches_dense(d: int, value_kind: str) -> None:
    for index in WRITES:
        members = _members()
        dense = tclass.stack([m.clone() for m in members], d)
        lazy = tclass.lazy_stack(members, d)
        try:
            selected = dense[index]
        except (IndexError, RuntimeError, ValueError):
            continue
        value = -7.0 if value_kind == "number" else selected.apply(lambda v: -v - 1)
        dense[index] = value
        lazy[index] = value
        _assert_matches(tclass.stack(members, d), dense)


@pytest.mark.parametrize(
    "index",
    [(slice(None), 1), torch.tensor([1, 0]), torch.tensor([True, False])],
    ids=["slice", "tensor", "mask"],
)
def test_setitem_mapping_matches_dense(index: Any) -> None:
    members = _members()
    dense = tclass.stack([m.clone() for m in members])
    shape = dense[index].batch_size
    value = {
        "a": torch.full(shape, -1.0),
        "b": torch.zeros(*shape, 2, dtype=torch.int64),
        "n": {"c": torch.full(shape, 5.0)},
    }
    dense[index] = value
    tclass.lazy_stack(members)[index] = value
    _assert_matches(tclass.stack(members), dense)


def test_setitem_heterogeneous_members() -> None:
    a, b = _ragged()
    lazy = tclass.lazy_stack([a, b])
    lazy[:, 1] = 7
    assert (a["obs"][1] == 7).all() and (b["obs"][1] == 7).all() and b["y"][1] == 7
    lazy[torch.tensor([False, True])] = 0
    assert not b["obs"].any() and a["obs"][0].any()
    lazy[1, 2:] = TensorDict(
        obs=torch.full((2, 5), 9.0), x=torch.full((2,), 9.0), y=torch.zeros(2), batch_size=[2]
    )
    assert (b["obs"][2:] == 9).all() and not b["obs"][:2].any()


def test_locked_stack_refuses_set_allows_in_place() -> None:
    members = _members()
    lazy = tclass.lazy_stack(members).lock_()
    assert lazy.is_locked and all(m.is_locked for m in members)
    with pytest.raises(LockedError, match="locked TensorDict \\(a LazyStackedTensorDict"):
        lazy.set("a", torch.zeros(2, 3, 4))
    with pytest.raises(LockedError):
        lazy["new"] = torch.zeros(2, 3, 4)
    with pytest.raises(LockedError):
        lazy.update({"a": torch.zeros(2, 3, 4)})
    lazy.set_("a", torch.ones(2, 3, 4))
    lazy.set("a", torch.full((2, 3, 4), 2.0), inplace=True)
    lazy[0, 1] = 3.0
    lazy.update({"a": torch.full((2, 3, 4), 4.0)}, inplace=True)
    assert (members[1]["a"] == 4).all()
    with lazy.unlock_():
        lazy.set("new", torch.zeros(2, 3, 4))
    assert lazy.is_locked and "new" in members[0].keys()


def test_lock_context_nests_and_plain_with_keeps_state() -> None:
    lazy = tclass.lazy_stack(_members())
    with lazy:  # no lock_/unlock_ before it: the state is kept, not popped from nothing
        assert not lazy.is_locked
    assert not lazy.is_locked
    lazy.lock_()
    lazy.unlock_()  # calls outside a `with` leave nothing behind
    with lazy.lock_():
        with lazy.unlock_():
            assert not lazy.is_locked
        assert lazy.is_locked
    assert not lazy.is_locked


def test_a_list_of_one_item_per_member_is_split_as_the_peer() -> None:
    stack = LazyStackedTensorDict(TensorDict(), TensorDict(), stack_dim=0)
    stack["a"] = [torch.ones(2), torch.zeros(1)]  # ragged: no tensor, one item each
    assert torch.equal(stack[0]["a"], torch.ones(2)) and torch.equal(stack[1]["a"], torch.zeros(1))
    stack["b"] = ["a string", "another string"]
    assert stack[1]["b"] == "another string" and stack["b"] == ["a string", "another string"]
    stack["c"] = ["x", "y", "z"]  # not one per member: each member keeps the list
    assert stack[0]["c"] == ["x", "y", "z"]


def test_nested_lists_are_split_along_the_stack_dim() -> None:
    inner = [tclass.lazy_stack([TensorDict(), TensorDict()]) for _ in range(3)]
    stack = tclass.lazy_stack(inner, 1)  # batch [2, 3], its members along dim 1
    stack["a"] = [[torch.ones(i * 3 + j + 1) for j in range(3)] for i in range(2)]
    assert [stack[i, j]["a"].shape[0] for i in range(2) for j in range(3)] == [1, 2, 3, 4, 5, 6]
    rows = tclass.lazy_stack([TensorDict(batch_size=[2]), TensorDict(batch_size=[2])], 1)
    rows["s"] = [["a", "b"], ["c", "d"]]  # batch [2, 2] order: member j gets column j
    assert rows.tensordicts[0]["s"] == ["a", "c"] and rows.tensordicts[1]["s"] == ["b", "d"]


def _holder(offset: float) -> TensorDict:
    """A TensorDict holding a heterogeneous lazy stack (its "h" differs in shape)."""
    members = [TensorDict(h=torch.full((n,), offset)) for n in (3, 3, 2)]
    return TensorDict(lazy=tclass.lazy_stack(members), dense=torch.full((2,), offset))


def test_update_in_place_and_indexed_writes_from_heterogeneous_lazy_stacks() -> None:
    first, second = _holder(0.0), _holder(1.0)
    out = first.unsqueeze(0).expand(2).clone()  # "lazy": a lazy stack along dim 1
    assert tclass.lazy_stack([first, second], out=out) is out  # update_ member by member
    assert out["lazy"][1].get("h", as_list=True)[2].tolist() == [1.0, 1.0]
    assert (out["dense"][1] == 1).all() and (out["lazy"][0, 2]["h"] == 0).all()
    again = first.unsqueeze(0).expand(2).clone()
    again[1] = second  # an indexed write: each member takes its part
    assert again["lazy"][1].get("h", as_list=True)[0].tolist() == [1.0, 1.0, 1.0]
    assert again["lazy"][0].get("h", as_list=True)[0].tolist() == [0.0, 0.0, 0.0]


def test_update_in_place_of_members_of_different_shapes_goes_member_by_member() -> None:
    """Found by the differential fuzzer: as the peer, ``update_`` with a tensor over the
    batch writes each member's part, without reading the entry's dense stack."""
    members = [TensorDict(d=torch.zeros(1, 3, n), batch_size=[1]) for n in (1, 3)]
    stack = tclass.lazy_stack(members, 1)
    assert stack.update_({"d": torch.tensor([[1, 2]])}) is stack
    assert stack[:, 1]["d"].sum() == 18 and stack[:, 0]["d"].sum() == 3
    with pytest.raises(errors.KeyNotFoundError, match="'zz'"):
        stack.update_({"zz": torch.zeros(1, 2)})


def test_indexed_writes_broadcast_the_value_and_go_member_by_member() -> None:
    """Found by the differential fuzzer: as the peer, ``lazy[...] = lazy[0]`` broadcasts
    the value over the selection, and a write along a dim other than the stack dim into
    members of different feature shapes goes member by member."""
    members = [TensorDict(d=torch.full((3, 4, 2), float(i)), batch_size=[3, 4]) for i in (1, 2)]
    stack = tclass.lazy_stack(members, 0)
    stack[...] = stack[0].clone()
    assert stack.tensordicts[1]["d"].eq(1).all()
    ragged = [TensorDict(b=torch.ones(2, 1, 1, n), batch_size=[2, 1]) for n in (2, 1)]
    stack = tclass.lazy_stack(ragged, 2)
    stack[-1] = stack[-1].clone().zero_()
    assert [m["b"][1].sum().item() for m in stack.tensordicts] == [0.0, 0.0]
    assert [m["b"][0].sum().item() for m in stack.tensordicts] == [2.0, 1.0]


def test_set__of_a_missing_key_is_a_key_error_whatever_the_value() -> None:
    """Found by the differential fuzzer: as the peer, a missing key is checked before the
    value's shape; a missing key under an existing node after it."""
    stack = tclass.lazy_stack([TensorDict(c=torch.zeros(())), TensorDict(c=torch.ones(()))])
    for value in (torch.zeros(2), torch.zeros(3)):
        with pytest.raises(KeyNotFoundError, match="'zz'"):
            stack.set_("zz", value)
    for member in stack.tensordicts:
        member["n"] = TensorDict()
    with pytest.raises(errors.BatchMismatchError):
        stack.set_(("n", "zz"), torch.zeros(3))
    with pytest.raises(KeyNotFoundError):
        stack.set_(("n", "zz"), torch.zeros(2))


def test_a_member_held_twice_loses_a_key_once() -> None:
    """Found by the differential fuzzer: ``torch.cat([lazy, lazy[:1]])`` holds member 0
    twice; ``del_``, ``pop`` and ``rename_key_`` reach it once, as the peer."""
    for op in (lambda s: s.del_("a"), lambda s: s.pop("a"), lambda s: s.rename_key_("a", "b")):
        members = [TensorDict(a=torch.zeros(3), c=torch.ones(3), batch_size=[3]) for _ in "xy"]
        stack = tclass.lazy_stack(members)
        joined = torch.cat([stack, stack[:1]], 0)
        op(joined)
        assert "a" not in joined.keys() and len(joined.tensordicts) == 3


def test_set__of_a_missing_key_on_a_locked_stack_is_locked_error() -> None:
    """Found by the differential fuzzer: as the peer, a locked lazy stack refuses a nested
    key under a node it lacks as locked, another missing key as missing (an existing one
    is written in place)."""
    stack = tclass.lazy_stack([TensorDict(c=torch.zeros(3)), TensorDict(c=torch.zeros(3))])
    stack.lock_()
    with pytest.raises(errors.LockedError):
        stack.set_(("n", "zz"), torch.zeros(2))  # the peer would have to add "n"
    with pytest.raises(KeyNotFoundError):
        stack.set_("zz", torch.zeros(2))  # a missing key, as the peer says
    stack.unlock_().set_(("n", "zz"), torch.arange(2))  # added, as by a TensorDict's set_
    assert stack.tensordicts[1]["n", "zz"] == 1
    assert stack.set_("c", torch.ones(2, 3)).tensordicts[1]["c"].sum() == 3


def test_an_ellipsis_write_reaches_every_member_of_a_ragged_stack() -> None:
    """Found by the differential fuzzer: ``ragged[...] = 0`` writes every element, as the
    peer (the ragged dim needs no size for that)."""
    stack = tclass.lazy_stack(list(TensorDict(b=torch.arange(3), batch_size=[3]).chunk(2)))
    stack[...] = 7
    assert [m["b"].tolist() for m in stack.tensordicts] == [[7, 7], [7]]


def test_removing_a_key_through_a_tensor_is_a_value_error_as_the_peer() -> None:
    """Found by the differential fuzzer: as for a TensorDict, ``del_`` / ``pop`` of a
    lazy stack with a key through a tensor raise KeyThroughTensorError (a ValueError)."""
    stack = tclass.lazy_stack([TensorDict(zz=torch.zeros(2, 2), batch_size=[2])] * 2)
    for remove in (lambda: stack.del_(("zz", "a")), lambda: stack.pop(("zz", "a"))):
        with pytest.raises(errors.KeyThroughTensorError) as info:
            remove()
        assert isinstance(info.value, ValueError)
    with pytest.raises(KeyNotFoundError):
        stack.del_(("n", "zz"))


def test_reading_a_key_through_a_tensor_is_a_value_error_as_the_peer() -> None:
    """left46a (fuzz program 11,916): ``lazy[("zz", "a")]`` where ``"zz"`` is a tensor is
    KeyThroughTensorError (the peer's ValueError), as ``get`` and a TensorDict's index;
    a key some member lacks stays KeyNotFoundError."""
    stack = tclass.lazy_stack([TensorDict({}, []), TensorDict({}, [])])
    stack["zz"] = torch.zeros(2)
    with pytest.raises(errors.KeyThroughTensorError, match="'zz',\\) is a tensor") as info:
        stack["zz", "a"]
    assert isinstance(info.value, ValueError)
    with pytest.raises(KeyNotFoundError) as missing:
        stack["n", "a"]
    assert not isinstance(missing.value, ValueError)


def test_expanding_a_stack_to_no_member_gives_an_indexable_empty_collection() -> None:
    # a stack dim of size 1 expanded to 0 keeps no member: the dense stack of none,
    # shaped by member 0 (tclass answers where the peer's lazy_stack of none raises)
    x = LazyStackedTensorDict.lazy_stack([TensorDict({"a": torch.ones(4, 3)}, [4])])
    out = x.expand(0, 4)
    assert type(out) is TensorDict and out.batch_size == (0, 4)
    assert out["a"].shape == (0, 4, 3)
    assert out[:, 1:2].batch_size == (0, 1) and out[..., 0]["a"].shape == (0, 3)


def test_a_write_broadcast_to_no_element_of_a_stack_writes_nothing_as_torch() -> None:
    # program 51,918 of index,entries: the value [1, 4] broadcasts to the selection
    # [1, 0, 4] (torch writes nothing; the peer refuses the batch sizes); it was a bare
    # IndexError from a stack of no member
    for entries in ({}, {"a": torch.arange(4.0)}):
        x = LazyStackedTensorDict.lazy_stack([TensorDict(dict(entries), [4])] * 2)
        before = x.to_dict()
        x[None, 0:0:3] = x[torch.tensor([True, False])].clone().apply(torch.zeros_like)
        assert x.batch_size == (2, 4)
        assert all(torch.equal(x[key], before[key]) for key in before)


def _uneven_rows() -> LazyStackedTensorDict:
    """Three members whose entry 'c' differs in its feature dim (3, 1, 2), stacked at 1."""
    return lazy_stack([TensorDict({"c": torch.full((4, n), float(n))}, [4]) for n in (3, 1, 2)], 1)


@pytest.mark.parametrize("index", [slice(None, -5), (torch.zeros(4, dtype=torch.bool), ...)])
def test_a_write_of_no_element_refuses_a_value_that_fits_no_reached_member(index: Any) -> None:
    """inv20e (programs 1,503,127 of the six families and 53,751 of index,entries): as
    torch's ``torch.zeros(0, 2)[:] = torch.ones(3)`` raises, a value whose entry fits
    member 0 ('c' of 3) but not member 1 or 2 is refused, as the peer, even over no
    element; nothing is written."""
    stack = _uneven_rows()
    with pytest.raises(errors.BatchSizeError, match=r"'c'.*member 1") as caught:
        stack[index] = stack[-1, 0].clone()  # member 0's row: 'c' of 3
    assert isinstance(caught.value, RuntimeError)
    assert [m["c"][0, 0].item() for m in stack.tensordicts] == [3.0, 1.0, 2.0]


def test_a_write_of_no_element_keeps_accepting_what_broadcasts() -> None:
    stack = _uneven_rows()
    stack[:-5] = TensorDict({"c": torch.ones(1)}, [])  # broadcasts to every member
    stack[:-5, 2] = stack[-1, 2].clone()  # reaches member 2 only, which it fits
    assert [m["c"][0, 0].item() for m in stack.tensordicts] == [3.0, 1.0, 2.0]


def test_a_write_at_no_element_of_a_stack_of_ragged_lazy_stacks_writes_nothing() -> None:
    """``x[0, mask] = v`` with an all-False mask over the members' dim, where the members
    are lazy stacks whose entry ``b`` is ragged: nothing is written, as in the peer (fuzz
    program 10,950,708 of index,combine --length 6). Before, the dtype check of such a
    write read the member's dense ``b`` and raised a ``HeterogeneousEntryError``."""
    rows = [TensorDict({"b": torch.zeros(n)}, batch_size=[]) for n in (1, 2)]
    inner = tclass.lazy_stack(rows, 0)  # b ragged: [1] and [2]
    stack = tclass.lazy_stack([inner, inner.clone()], 0)  # batch (2, 2)
    none = torch.tensor([False, False])
    for index in [(0, none), (slice(None), none)]:
        stack[index] = stack[index].apply(torch.ones_like)
    assert [b.tolist() for b in stack.tensordicts[0].get("b", as_list=True)] == [[0.0], [0.0, 0.0]]


def test_set_nested_value_off_the_batch_locked_is_a_batch_error() -> None:
    """``set_`` of a nested key under a node a locked stack lacks, with a value that does
    not fit the batch size: the batch error first, as the peer's (was the LockedError)."""
    stack = lazy_stack([TensorDict({"d": torch.zeros(())}), TensorDict({"d": torch.ones(())})])
    stack.lock_()
    with pytest.raises(errors.BatchMismatchError, match="batch dimension mismatch") as raised:
        stack.set_(("n", "zz"), torch.zeros(3))
    assert isinstance(raised.value, RuntimeError)
    assert list(stack.keys(True)) == ["d"]
    assert stack["d"].tolist() == [0.0, 1.0]


# --- a Python number written (fz28f) --------------------------------------------------------


def _lazy_and_dense() -> tuple[LazyStackedTensorDict, TensorDict]:
    members = [TensorDict({"a": torch.zeros(()), "n": {"b": torch.zeros(())}}) for _ in range(3)]
    return lazy_stack(members), torch.stack([m.clone() for m in members])


@pytest.mark.parametrize(
    "write",
    [
        lambda x: x.set("md", 3),
        lambda x: x.set(("n", "md"), 3.5),
        lambda x: x.set("a", True),
        lambda x: x.update({"md": 3}),
        lambda x: x.update({"n": {"b": 3}}),
        lambda x: x.__setitem__("md", 2),
    ],
)
def test_number_spans_no_batch_as_in_a_tensordict(write: Any) -> None:
    """A Python number is a 0-d tensor: a lazy stack refuses it as the dense stack does
    (and the peer), nothing written, where it used to give each member a copy."""
    lazy, dense = _lazy_and_dense()
    for target in (dense, lazy):
        with pytest.raises(
            errors.BatchMismatchError, match=r"its shape \[\] does not start"
        ) as err:
            write(target)
        assert isinstance(err.value, RuntimeError) and err.value.batch_size == (3,)
    assert "md" not in lazy.keys(True) and ("n", "md") not in lazy.keys(True)
    assert torch.equal(lazy["a"], torch.zeros(3)) and torch.equal(lazy["n", "b"], torch.zeros(3))


def test_number_fills_an_existing_entry_in_place() -> None:
    """In place into an existing entry (``set_``, ``set(..., inplace=True)``,
    ``update_``), a number fills every member, as a TensorDict's fills its tensor."""
    lazy, dense = _lazy_and_dense()
    for target in (dense, lazy):
        target.set_("a", 2)
        target.set(("n", "b"), 4, inplace=True)
        target.update_({"a": 5})
        assert torch.equal(target["a"], torch.full((3,), 5.0))
        assert torch.equal(target["n", "b"], torch.full((3,), 4.0))
