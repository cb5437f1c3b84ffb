"""Dense forms and nesting of lazy stacks (``tests/engine/test_lazy.py`` has the rest):
``contiguous``, ``dense_stack_tds``, ``maybe_dense_stack``, nested collections read as
lazy stacks, lazy stacks as members or entries, and ``new_empty(empty_lazy=True)``."""

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
)

from strategies import make_values  # noqa: E402

HeterogeneousEntryError = errors.HeterogeneousEntryError


# --- dense conversions -----------------------------------------------------------------------


@pytest.mark.parametrize("d", DIMS)
def test_contiguous_gives_dense_stack(d: int) -> None:
    members = _members()
    lazy, dense = tclass.lazy_stack(members, d), tclass.stack(members, d)
    for convert in (lazy.contiguous, lazy.to_tensordict, lambda: tclass.dense_stack_tds(lazy)):
        got = convert()
        assert type(got) is TensorDict and type(got.get("n")) is TensorDict
        _assert_matches(got, dense)
    assert tclass.dense_stack_tds(lazy, d)["a"].shape == dense["a"].shape


@pytest.mark.parametrize(
    "members", [_ragged(), [_ragged()[0], _ragged()[0].exclude("x")]], ids=["shapes", "keys"]
)
def test_contiguous_of_heterogeneous_raises(members: list[TensorDict]) -> None:
    lazy = tclass.lazy_stack(members)
    for convert in (lazy.contiguous, lazy.to_tensordict):
        with pytest.raises(
            HeterogeneousEntryError, match="needs the dense stack of this lazy stack"
        ):
            convert()
    assert type(tclass.dense_stack_tds(lazy)) is LazyStackedTensorDict  # as the peer


def test_dense_stack_tds_of_lazy_stacks() -> None:
    first, second = _members(), _members()
    lazies = [tclass.lazy_stack(first), tclass.lazy_stack(second)]
    out = tclass.dense_stack_tds(lazies, 1)  # stacks of lazy stacks stay lazy, as the peer
    expected = tclass.stack([tclass.stack(first), tclass.stack(second)], 1)
    assert type(out) is LazyStackedTensorDict
    _assert_matches(out.contiguous(), expected)
    assert type(tclass.dense_stack_tds(lazies[0], 1)) is TensorDict  # dim unused, as the peer
    assert tclass.dense_stack_tds(first[0]) is first[0]  # not a lazy stack: as it is


def test_dense_stack_tds_keeps_nested_lazy_stacks_lazy() -> None:
    ragged = tclass.lazy_stack(
        [TensorDict(a=torch.zeros(3)), TensorDict(a=torch.zeros(4), b=torch.zeros(2))]
    )
    container = TensorDict(lazy=ragged)
    out = tclass.dense_stack_tds(tclass.lazy_stack([container, container.clone()]))
    assert type(out) is TensorDict and out.batch_size == torch.Size([2])
    assert out["lazy"].stack_dim == 1 and out["lazy"][:, 1]["b"].shape == (2, 2)
    again = tclass.dense_stack_tds([container, container.clone()], dim=0)
    tclass.assert_allclose_td(out, again)


def test_maybe_dense_stack() -> None:
    members = _members()
    dense = tclass.maybe_dense_stack(members, 1)
    assert type(dense) is TensorDict
    _assert_matches(dense, tclass.stack(members, 1))
    ragged = tclass.maybe_dense_stack(_ragged())
    assert type(ragged) is LazyStackedTensorDict
    keys_differ = tclass.maybe_dense_stack([members[0], members[1].exclude("b")])
    assert type(keys_differ) is LazyStackedTensorDict and list(keys_differ.keys()) == ["a", "n"]


def test_maybe_dense_stack_is_dense_above_nested_collections_that_differ() -> None:
    first = TensorDict({"a": 1, "b": TensorDict({"c": 2}, []), "s": "x"}, [])
    second = TensorDict({"a": 1, "b": TensorDict({"d": 2}, []), "s": "y"}, [])
    best = tclass.maybe_dense_stack([first, second])  # as the peer's best-intention stack
    assert type(best) is TensorDict and type(best.get("b")) is LazyStackedTensorDict
    assert best["a"].tolist() == [1, 1] and best["s"] == ["x", "y"]
    shapes = TensorDict({"a": 1, "b": TensorDict({"c": [2]}, [])}, [])
    assert type(tclass.maybe_dense_stack([first.exclude("s"), shapes]).get("b")) is (
        LazyStackedTensorDict
    )
    tensor_differs = TensorDict({"a": torch.ones(2), "b": TensorDict({"c": 2}, [])}, [])
    assert type(tclass.maybe_dense_stack([first.exclude("s"), tensor_differs])) is (
        LazyStackedTensorDict
    )


# --- nesting -------------------------------------------------------------------------------


def test_nested_collections_read_as_lazy_stacks() -> None:
    a, b = _ragged()
    a["n"] = TensorDict(z=make_values([4, 2]), u=make_values([4]), batch_size=[4])
    b["n"] = TensorDict(z=make_values([4, 7]), u=make_values([4]), batch_size=[4])
    lazy = tclass.lazy_stack([a, b])
    nested = lazy["n"]
    assert type(nested) is LazyStackedTensorDict and nested.batch_size == torch.Size([2, 4])
    assert nested.tensordicts[0] is a["n"] and nested.tensordicts[1] is b["n"]
    assert torch.equal(lazy["n", "u"], torch.stack([a["n", "u"], b["n", "u"]]))
    with pytest.raises(
        HeterogeneousEntryError, match=r"entry \('n', 'z'\) has shape \[4, 7\] in member 1"
    ):
        lazy["n", "z"]
    assert lazy.get(("n", "z"), as_padded_tensor=True).shape == torch.Size([2, 4, 7])


@pytest.mark.parametrize("d", DIMS)
def test_nested_reads_match_dense(d: int) -> None:
    members = _members()
    lazy, dense = tclass.lazy_stack(members, d), tclass.stack(members, d)
    assert lazy["n"].stack_dim == d
    assert torch.equal(lazy["n"]["c"], dense["n", "c"])
    assert torch.equal(lazy["n", "c"], dense["n", "c"])


def test_members_that_are_lazy_stacks() -> None:
    inner = [tclass.lazy_stack(_members()), tclass.lazy_stack(_members())]
    outer = tclass.lazy_stack(inner, 1)
    assert outer.batch_size == torch.Size([2, 2, 3, 4])
    assert outer[:, 1].tensordicts[0] is inner[1].tensordicts[0]
    dense = tclass.stack([i.contiguous() for i in inner], 1)
    _assert_matches(outer, dense)
    _assert_matches(outer[1, :, 2], dense[1, :, 2])
    assert type(outer.contiguous()) is TensorDict


def test_tensordict_holding_a_lazy_stack() -> None:
    a, b = _ragged()
    lazy = tclass.lazy_stack([a, b])
    parent = TensorDict(lazy=lazy, q=make_values([2, 4]), batch_size=[2, 4])
    assert parent["lazy"] is lazy
    assert parent[0]["lazy"] is a
    part = parent[:, 1:3]
    assert type(part.get("lazy")) is LazyStackedTensorDict and part.get(
        "lazy"
    ).batch_size == torch.Size([2, 2])
    assert torch.equal(part["lazy", "x"], torch.stack([a["x"][1:3], b["x"][1:3]]))
    picked = parent[:, torch.tensor([3, 0])]
    assert torch.equal(picked["lazy", "x"], torch.stack([a["x"][[3, 0]], b["x"][[3, 0]]]))
    copy = parent.clone()
    assert type(copy.get("lazy")) is LazyStackedTensorDict and copy["lazy"].tensordicts[0] is not a
    copy["lazy"].tensordicts[0]["x"].add_(1)
    assert not torch.equal(copy["lazy", "x"][0], a["x"])
    shifted = parent.apply(lambda v: v + 1)
    assert type(shifted.get("lazy")) is LazyStackedTensorDict
    assert torch.equal(shifted["lazy"].get("obs", as_list=True)[1], b["obs"] + 1)


def test_nested_stacks_carry_the_stack_dim_name() -> None:
    """Found by the differential fuzzer: a nested collection read from a lazy stack is
    a lazy stack whose stack dim has the stack's name, as in the peer."""
    member = TensorDict({"c": torch.zeros(()), "n": TensorDict({"c": torch.zeros(())}, [])}, [])
    stack = tclass.lazy_stack([member, member.clone()]).refine_names("j")
    assert stack["n"].names == ["j"] and stack.get("n").stack_dim_name == "j"


def test_nested_lazy_stacks_read_as_lists_and_padded_tensors() -> None:
    ragged = tclass.lazy_stack([TensorDict(a=torch.arange(3.0)), TensorDict(a=torch.arange(4.0))])
    outer = tclass.lazy_stack([ragged, ragged.copy()], 1)  # batch [2, 2]: members along dim 1
    lists = outer.get("a", as_list=True)  # member by member, as the peer
    assert [[t.tolist() for t in member] for member in lists] == [[[0, 1, 2], [0, 1, 2, 3]]] * 2
    padded = outer.get("a", as_padded_tensor=True)  # in batch order: outer[i, j]
    assert padded.shape == (2, 2, 4) and padded[0, 1].tolist() == [0, 1, 2, 0]
    assert padded[1, 0].tolist() == [0, 1, 2, 3]
    td = TensorDict(inner=ragged, batch_size=[2])  # a TensorDict passes them on
    assert [t.tolist() for t in td.get(("inner", "a"), as_list=True)] == [[0, 1, 2], [0, 1, 2, 3]]
    left = td.get(("inner", "a"), as_padded_tensor=True, padding_side="left", padding_value=9)
    assert (
        left[0].tolist() == [9, 0, 1, 2] and td.get(("inner", "a"), as_nested_tensor=True).is_nested
    )
    dense = TensorDict(a=torch.ones(2, 3), batch_size=[2])
    assert dense.get("a", as_list=True) is dense["a"]  # a stored tensor as it is, as the peer
    assert td.get(("inner", "zz"), 3, as_list=True) == 3


def test_new_empty_with_empty_lazy_gives_lazy_stacks_of_empty_members() -> None:
    members = [TensorDict(smth=torch.ones(1), batch_size=[1]) for _ in range(10)]
    td = TensorDict(dense=torch.randn(1, 10), sparse=LazyStackedTensorDict(*members, stack_dim=1))
    td.batch_size = torch.Size([1, 10])
    sparse = td.new_empty((1, 100, 1), empty_lazy=True)["sparse"]
    assert type(sparse) is LazyStackedTensorDict and sparse.stack_dim == 1
    assert sparse.batch_size == (1, 100, 1) and len(sparse.tensordicts) == 100
    assert sparse.is_empty() and td.new_empty((10, 1), empty_lazy=True)["sparse"].stack_dim == 1
    assert type(td.new_empty((10, 1))["sparse"]) is TensorDict  # without it: dense, as the peer
    top = td["sparse"].new_empty((3, 4), empty_lazy=True)
    assert type(top) is LazyStackedTensorDict and len(top.tensordicts) == 4


# --- scans along the stack dim keep the tree ----------------------------------------------------


@pytest.mark.parametrize("op", ["softmax", "cumsum", "cumprod"])
def test_scan_along_the_stack_dim_keeps_nested_lazy_members(op: str) -> None:
    """A scan along the stack dim gives each leaf its slice of the dense result, in a tree
    shaped as the stack: member lazy stacks stay lazy stacks (as the peer's ``softmax``),
    also without entries; the values are the dense stack's."""
    inner = [
        tclass.lazy_stack([TensorDict(a=torch.tensor(float(i + j))) for j in range(2)])
        for i in range(3)
    ]
    outer = tclass.lazy_stack(inner, 0)
    got = getattr(outer, op)(0)
    assert type(got) is LazyStackedTensorDict and got.batch_size == torch.Size([3, 2])
    assert all(type(m) is LazyStackedTensorDict for m in got.tensordicts)
    assert all(type(m) is TensorDict for m in got.tensordicts[0].tensordicts)
    torch.testing.assert_close(got["a"], getattr(outer.contiguous()["a"], op)(0))
    empty = tclass.lazy_stack([TensorDict(), TensorDict()]).unflatten(0, [2, 1, -1])
    out = getattr(empty, op)(-3)
    assert type(out.tensordicts[0].tensordicts[0]) is LazyStackedTensorDict
    assert out.batch_size == torch.Size([2, 1, 1])


@pytest.mark.parametrize("op", ["softmax", "sum", "cumsum", "amax", "all"])
def test_a_reduction_along_the_stack_dim_over_a_ragged_lazy_member_raises(op: str) -> None:
    """A lazy stack whose one member is itself a lazy stack of members that differ in
    shape (batch [2, 1, 2, -1], stack dim 1): along the stack dim there is no dense
    stack, which is said (the peer's RuntimeError), where it recursed without end (fz42b;
    the peer refuses every reduction but softmax, which it runs leaf by leaf)."""
    ragged = tclass.lazy_stack(
        [TensorDict({"d": torch.ones(2, n, 3)}, batch_size=[2, n]) for n in (2, 1)], 1
    )  # batch [2, 2, -1]
    outer = tclass.LazyStackedTensorDict(ragged, stack_dim=1)  # batch [2, 1, 2, -1]
    assert outer.batch_size == torch.Size([2, 1, 2, -1])
    with pytest.raises(RuntimeError, match="along the stack dim 1.*differ in shape"):
        getattr(outer, op)(1)
    kept = op in ("softmax", "cumsum")  # along a member's dim: member by member, as before
    expected = [2, 1, 2, -1] if kept else [1, 2, -1]
    assert getattr(outer, op)(0).batch_size == torch.Size(expected)


def _holding_nested(lib: Any) -> Any:
    @lib.tensorclass
    class Point:
        y: torch.Tensor

    stack = lib.lazy_stack([lib.TensorDict({"d": torch.arange(4.0) + i}, [4]) for i in range(2)])
    return lib.TensorDict(
        {"n": stack, "p": Point(y=torch.ones(2), batch_size=[2]), "deep": {"n2": stack.clone()}},
        [2],
    )


_KINDS = {
    "n": "TensorDict",
    ("n", "d"): "Tensor",
    "p": "TensorDict",
    ("p", "y"): "Tensor",
    "deep": "TensorDict",
    ("deep", "n2"): "TensorDict",
    ("deep", "n2", "d"): "Tensor",
}


def test_to_tensordict_makes_nested_collections_tensordicts() -> None:
    # tclass's was clone(): a nested lazy stack or record stayed one (program 8,305,569
    # of --length 8 index,entries,records, fz18a); the peer converts them all
    x = _holding_nested(tclass)
    x.names = ["b"]
    out = x.to_tensordict()
    assert {key: type(value).__name__ for key, value in out.items(True)} == _KINDS
    assert torch.equal(out["n", "d"], torch.stack([torch.arange(4.0), torch.arange(4.0) + 1]))
    assert out.names == ["b"] and out["n"].names == ["b", None]
    out["n", "d"].zero_()  # a copy
    assert x["n", "d"].sum() > 0


def test_to_tensordict_of_nested_collections_as_the_peers() -> None:
    peer = pytest.importorskip("tensordict")
    out = _holding_nested(peer).to_tensordict()
    assert {key: type(value).__name__ for key, value in out.items(True)} == _KINDS


def test_tensors_over_both_stack_dims_give_the_inner_members_parts() -> None:
    """As the peer's block-path index (fuzz 11,201,346 of index,shape --length 8, and
    8,706,712 of index,shape --length 4, decided before): each member is indexed with the
    tensors and its result unbound along their dim, which unbinds an inner lazy stack whose
    stack dim a tensor takes: the parts are the inner members' (was: lazy stacks of one)."""
    members = [TensorDict({"a": torch.full((3,), float(i))}, []) for i in range(2)]
    x = tclass.lazy_stack(members, 0)[[1]].view(1, 1)  # a lazy stack of a lazy stack of one
    out = x[None, torch.tensor([[True]])]
    assert out.batch_size == torch.Size([1, 1]) and out.stack_dim == 1
    (part,) = out.tensordicts
    assert type(part) is TensorDict and part.batch_size == torch.Size([1])
    assert torch.equal(part["a"], torch.ones(1, 3))
