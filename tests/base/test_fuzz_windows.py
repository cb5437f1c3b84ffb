"""Regressions from the differential fuzzer's windows (``tests/differential``): each test
is the shortest program of one signature, checked against the peer's answer."""

from __future__ import annotations

import pytest
import torch

from tclass import (
    LazyStackedTensorDict,
    NonTensorData,
    TensorDict,
    TensorDictParams,
    lazy_stack,
    maybe_dense_stack,
)
from tclass.errors import DimError


@pytest.mark.parametrize("keep", [True, False])
def test_masked_select_of_no_batch_dims_keeps_a_python_value(keep: bool) -> None:
    """A 0-dim mask adds one dim, as ``x[mask]`` does: a Python value stays one value
    (the peer's ``NonTensorData`` of batch size ``[1]`` / ``[0]``), not a stack of one."""
    td = TensorDict({"a": torch.zeros(()), "v": "pong", "n": {"b": torch.ones(2)}}, [])
    out = td.masked_select(torch.tensor(keep))
    size = 1 if keep else 0
    assert out.batch_size == torch.Size([size])
    assert type(out.get("v")) is NonTensorData
    assert out["v"] == "pong"
    assert out["n", "b"].shape == (size, 2)
    assert out["a"].shape == (size,)


def test_masked_select_refuses_a_mask_of_another_shape() -> None:
    td = TensorDict({"a": torch.zeros(())}, [])
    with pytest.raises(ValueError, match="batch size"):
        td.masked_select(torch.ones(2, dtype=torch.bool))


def test_masked_select_takes_a_mask_of_the_leading_dims_and_refuses_others_as_indexing() -> None:
    """A bool mask over the leading batch dims selects as ``x[mask]`` (the peer's answer,
    names kept); one of another shape is torch's ``IndexError``, as the peer's (fuzzer
    program 8,702,197 of index,shape,combine --length 8: a ragged lazy stack's)."""
    td = TensorDict({"b": torch.arange(6.0).reshape(3, 2), "s": "txt"}, [3, 2], names=["i", "j"])
    out = td.masked_select(torch.tensor([True, False, True]))
    assert out.batch_size == (2, 2) and out.names == ["i", "j"] and out["s"] == "txt"
    assert out["b"].tolist() == [[0.0, 1.0], [4.0, 5.0]]
    with pytest.raises(IndexError, match=r"mask's shape \[2, 2\] does not match"):
        td.masked_select(torch.ones(2, 2, dtype=torch.bool))


def test_masked_select_drops_trailing_size_one_dims_of_the_mask() -> None:
    """A ``[3, 2, 1]`` mask of a ``[3, 2]`` batch selects as its ``[3, 2]`` squeeze, as
    the peer's (which squeezes trailing dims past the batch dims); tclass refused it."""
    td = TensorDict({"a": torch.arange(6).reshape(3, 2), "n": {"c": torch.zeros(3, 2, 1)}}, [3, 2])
    mask = torch.tensor([[True, False], [True, True], [False, False]])
    out = td.masked_select(mask.unsqueeze(-1))
    assert out.batch_size == (3,) and out["a"].tolist() == [0, 2, 3]
    assert out["n", "c"].shape == (3, 1)
    with pytest.raises(IndexError, match="does not match"):
        td.masked_select(torch.ones(3, 2, 2, dtype=torch.bool))


def test_new_tensor_has_unnamed_dims() -> None:
    """``new_tensor`` makes new dims, unnamed (the peer's, as torch's ``new_tensor``), also
    when ``data`` is a named collection of the same batch size."""
    td = TensorDict(
        {"a": torch.zeros(3, 2), "n": TensorDict({"b": torch.zeros(3)}, [3])}, [3], names=["i"]
    )
    with pytest.warns(UserWarning):
        made = td.new_tensor(td.clone())
    assert made.names == [None]
    assert made["n"].names == [None]
    assert made.batch_size == torch.Size([3])
    assert td.names == ["i"]  # the source keeps its names
    assert td.new_tensor([1.0, 2.0, 3.0]).names == [None]


def test_new_zeros_names_follow_the_new_batch_size() -> None:
    td = TensorDict({"a": torch.zeros(3, 2)}, [3], names=["i"])
    assert td.new_zeros(()).names == []
    assert td.new_zeros(4).names == ["i"]


@pytest.mark.parametrize("index", [(-2,), (-2, slice(-3, 0, 3)), (5,), (0, 7)])
def test_write_at_an_index_out_of_range_of_nested_collections_without_tensors(
    index: tuple[object, ...],
) -> None:
    """``td[idx] = rows`` where only empty nested collections are written: the index is
    still checked against the batch size, as torch (and the peer's) ``IndexError``."""
    td = TensorDict({"m": {}}, batch_size=[1, 3])
    rows = td[0, :1].clone()
    with pytest.raises(IndexError, match="out of bounds"):
        td[index] = rows
    td[0, 1:2] = rows  # an index that fits writes (nothing)
    assert list(td.keys()) == ["m"]


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_any_and_all_of_unsigned_dtypes_torch_cannot_count(dtype: torch.dtype) -> None:
    """``any()`` / ``all()`` of ``uint16``/``uint32``/``uint64`` tensors, which torch's CPU
    ``count_nonzero`` refuses: answered as torch's own ``any()`` / ``all()`` answer."""
    empty = TensorDict({"x": torch.zeros(0, 2, dtype=dtype)}, [0])
    assert not bool(empty.any())
    assert bool(empty.all())
    td = TensorDict({"x": torch.tensor([0, 3], dtype=dtype)}, [2])
    assert bool(td.any())
    assert not bool(td.all())
    assert bool(TensorDict({"x": torch.tensor([1, 3], dtype=dtype)}, [2]).all())


@pytest.mark.parametrize(
    ("keys", "error"),
    [
        ((("d",), "a", "d"), RuntimeError),  # a key given twice, the first one present
        (("a", "zz"), RuntimeError),
        (("zz", "a"), KeyError),  # the first key is missing
    ],
)
def test_separates_of_a_locked_collection_raises_for_its_first_key(
    keys: tuple[object, ...], error: type[Exception]
) -> None:
    """As the peer, which pops the keys in order: a locked collection refuses the removal
    when the first key is present, and a missing first key is a ``KeyError``; nothing
    changes either way."""
    td = TensorDict({"d": torch.zeros(2), "a": torch.zeros(2)}, [2]).lock_()
    with pytest.raises(error):
        td.separates(*keys, filter_empty=False)
    assert list(td.keys()) == ["d", "a"]


def test_separates_without_filter_empty_keeps_empty_collections_nested_two_deep() -> None:
    """``separates(..., filter_empty=False)`` removes only the keys given: an empty
    collection nested in another stays, and its rows with it (the peer's drops it)."""
    td = TensorDict({"c": torch.ones(4, 3), "zz": {"a": TensorDict({}, [4, 3])}}, [4, 3])
    out = td.separates("c", filter_empty=False)
    assert list(out.keys()) == ["c"]
    assert list(td.keys(True)) == [("zz", "a"), "zz"]
    assert list(td[..., 1:3:2].keys(True)) == [("zz", "a"), "zz"]


def test_separates_of_no_key_on_a_locked_collection_changes_nothing() -> None:
    """Nothing to remove: no lock error, an empty nested collection kept (the peer's
    ``filter_empty_()`` raises its lock error dropping it)."""
    td = TensorDict({"n": {}, "b": torch.ones(1, 0, 4)}, [1, 0]).lock_()
    assert list(td.separates(strict=False).keys()) == []
    assert list(td.keys()) == ["n", "b"] and td.is_locked


def test_separates_takes_a_python_value_out_of_a_node_without_tensors() -> None:
    """The separated value leaves the source and its emptied node goes, as for a tensor
    leaf or a node holding a tensor too (the peer's result shares a node holding only
    Python values with the source, which keeps the value); the result's node is its own."""
    td = TensorDict({"b": torch.zeros(4)}, [4])
    td["n", "zz"] = ""
    out = td.separates(("n", "zz"))
    assert list(td.keys(True)) == ["b"]
    assert list(out.keys(True)) == [("n", "zz"), "n"] and out["n", "zz"] == ""
    td["n", "q"] = "a"
    td["n", "zz"] = "b"
    out = td.separates(("n", "zz"))
    assert list(td.keys(True)) == ["b", ("n", "q"), "n"]
    out["n", "new"] = "c"
    assert "new" not in td["n"].keys()


def test_a_reduction_over_a_regular_dim_of_a_ragged_stack_of_no_entries_stays_lazy() -> None:
    """``var(dim=2)`` of a ``[2, -1, 0]`` stack: a lazy stack ``[2, -1]`` of the members'
    reductions (the peer's dense TensorDict holds the ``-1`` no TensorDict can have)."""
    stack = lazy_stack([TensorDict({}, [2, 0]), TensorDict({}, [1, 0])], 0)
    for reduce in (stack.var, stack.sum, stack.amax):
        out = reduce(dim=2)
        assert type(out) is LazyStackedTensorDict and out.batch_size == (2, -1)
        assert [m.batch_size for m in out.tensordicts] == [(2,), (1,)]


def test_flip_of_a_lazy_stack_along_its_stack_dim_reverses_uint16_members() -> None:
    """No dense ``flip`` (torch has no ``uint16`` kernel on the CPU, the peer's fails):
    the members in reverse order; a TensorDict's ``flip`` raises torch's error."""
    members = [TensorDict({"b": torch.tensor(v, dtype=torch.uint16)}, []) for v in (1, 2)]
    out = torch.flip(lazy_stack(members, 0), [-1])
    assert out["b"].tolist() == [2, 1] and out["b"].dtype == torch.uint16
    with pytest.raises(NotImplementedError, match="flip_cpu"):
        TensorDict({"b": torch.arange(3).to(torch.uint16)}, [3]).flip(0)


def test_gather_of_uint16_entries_refuses_an_index_out_of_bounds_first() -> None:
    """An index outside the batch dim is tclass's ``DimError`` (an ``IndexError`` and a
    ``RuntimeError``, as torch's for other dtypes) before any entry is gathered; the peer
    gathers first and fails inside torch, which has no ``uint16`` kernel."""
    index = torch.zeros(4, 2, dtype=torch.long)
    empty = TensorDict({"c": torch.zeros(4, 0, dtype=torch.uint16)}, [4, 0])
    with pytest.raises(DimError, match="out of bounds for batch dim 1 of size 0") as error:
        empty.gather(1, index)
    assert isinstance(error.value, IndexError) and isinstance(error.value, RuntimeError)
    full = TensorDict({"c": torch.zeros(4, 3, dtype=torch.uint16)}, [4, 3])
    with pytest.raises(NotImplementedError, match="scatter_gather"):  # torch's, as the peer's
        full.gather(1, index)
    assert full.float().gather(1, index)["c"].shape == (4, 2)


def test_tensor_split_piece_of_no_inner_members_keeps_keys_and_lock() -> None:
    """A ``tensor_split`` piece of size 0 of a locked lazy stack of lazy stacks takes none
    of the inner stacks' members: a TensorDict of the right batch size with their keys,
    locked as the stack is (the peer's lazy stack of no members lists no keys, unlocked)."""
    inner = lazy_stack([TensorDict({"c": torch.zeros(()), "d": torch.ones(())}, [])], 0)
    inner.lock_()
    outer = lazy_stack(list(inner.chunk(1, -1)), -1)
    empty, also_empty, whole = outer.tensor_split([0, 0], 0)
    for piece in (empty, also_empty):
        assert piece.batch_size == torch.Size([0, 1]) and piece.is_locked
        assert sorted(piece.keys()) == ["c", "d"]
        (member,) = piece.tensordicts
        assert type(member) is TensorDict and member.batch_size == torch.Size([0])
        assert member.is_locked and member["c"].shape == (0,)
    assert whole.batch_size == torch.Size([1, 1]) and whole.is_locked
    assert torch.equal(whole["d"], torch.ones(1, 1))


def test_quantiles_of_a_transposed_collection_are_stacked_contiguous() -> None:
    """``quantile`` with a 1-D ``q`` along a dim stacks one result per quantile: contiguous
    tensors, which ``view`` takes (torch's result of a transposed tensor is strided, so
    the peer's ``view`` refuses it); the values are torch's."""
    source = torch.arange(24.0).reshape(2, 3, 4)
    td = TensorDict({"a": source}, [2, 3]).transpose(0, 1)
    q = torch.tensor([0.25, 0.75])
    out = td.quantile(q, dim=1, keepdim=True)
    expected = torch.quantile(source.transpose(0, 1), q, dim=1, keepdim=True)
    assert out.batch_size == torch.Size([2, 3, 1]) and torch.equal(out["a"], expected)
    assert out["a"].is_contiguous()
    viewed = out.view(-1)
    assert viewed.batch_size == torch.Size([6])
    assert viewed["a"].data_ptr() == out["a"].data_ptr()  # a view, sharing the memory


def test_maybe_dense_stack_of_lazy_stacks_of_params_restacks_member_by_member() -> None:
    """``maybe_dense_stack`` of lazy stacks of as many members along another dim restacks
    them member by member, as ``torch.stack`` does, whatever the members' kind (the peer
    gives a lazy stack of the lazy stacks where a member is a ``TensorDictParams``)."""
    params = TensorDictParams(TensorDict({"w": torch.zeros(3)}, [3], names=["i"]))
    stack = LazyStackedTensorDict(params, params.apply(torch.ones_like), stack_dim=0)
    out = maybe_dense_stack([stack, stack.clone(), stack.clone()], -2)
    assert type(out) is LazyStackedTensorDict and out.stack_dim == 0
    assert out.batch_size == torch.Size([2, 3, 3]) and out.names == [None, None, "i"]
    assert [type(m) for m in out.tensordicts] == [TensorDict, TensorDict]
    assert torch.equal(out["w"], torch.stack([stack["w"]] * 3, 1))


def test_expand_of_a_locked_lazy_stack_is_a_locked_lazy_view() -> None:
    """``expand`` of a lazy stack whose members differ in shape stays lazy (each member
    expanded, a view of it), so the expand of a locked stack is locked as its members are
    (the peer's dense copy is not; program 2,937 of shape,combine)."""

    def member(n: int) -> TensorDict:
        inner = TensorDict({"b": torch.ones(1, 1, 3), "a": torch.ones(1, n)}, [1])
        return TensorDict({"m": inner}, [1])

    stack = lazy_stack([member(1), member(3)], 0)
    stack.lock_()
    out = stack.expand(torch.Size([3, 2, 1]))
    assert type(out) is LazyStackedTensorDict and out.batch_size == torch.Size([3, 2, 1])
    assert out.is_locked and out["m"].is_locked
    assert out["m", "b"].shape == (3, 2, 1, 1, 3)
    first = out.tensordicts[0]["m", "b"]
    assert first.data_ptr() == stack.tensordicts[0]["m", "b"].data_ptr()  # a view


def test_comparing_a_lazy_stack_with_a_tensor_unnames_its_stack_dims() -> None:
    """Program 11,420,544 of math,entries ``--length 8``: ``==``, ``!=`` and the orderings
    of a lazy stack with a tensor with dims keep the members' dim names but not the stack
    dims' (a nested lazy member's too), as the peer's ``lazy_stack`` of its members'
    results; arithmetic keeps them all, and the source keeps its names."""
    empty = lazy_stack([TensorDict({}, []), TensorDict({}, [])], 0).rename("j")
    assert (empty != torch.tensor([2.0])).names == [None]
    members = [TensorDict({"a": torch.arange(3.0) + i}, [3]) for i in range(2)]
    inner = lazy_stack(members, 1).rename("i", "j")
    assert (inner == torch.ones(3, 2)).names == ["i", None]
    assert (inner < torch.ones(2)).names == ["i", None]
    assert (inner >= torch.ones(3, 1)).get("a").tolist() == [
        [False, True],
        [True, True],
        [True, True],
    ]
    assert (inner + torch.ones(2)).names == ["i", "j"]
    assert inner.names == ["i", "j"]
    outer = lazy_stack([inner, inner.clone()], 0).rename("o", "i", "j")
    out = outer == torch.ones(2, 3, 2)
    assert out.names == [None, "i", None] and out[0].names == ["i", None]
    assert outer.names == ["o", "i", "j"] and outer[0].names == ["i", "j"]
