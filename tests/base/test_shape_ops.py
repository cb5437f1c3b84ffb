"""Tests for tclass._base.implemented._shape_ops: batch-shape operations on TensorDicts.

Each property test builds a TensorDict with random batch and feature dims (and a nested
TensorDict with extra batch dims), applies an op, and checks that the batch size is what
the same op gives on ``torch.empty(batch_size)``, that every leaf is the op applied by
hand over its leading batch dims, that nested TensorDicts keep their extra dims, and that
views share storage as torch's op would.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import TensorDict, errors

from collection_kinds import assert_as_the_peer  # noqa: E402
from strategies import (  # noqa: E402
    SETTINGS,
    assert_leafwise,
    bad_dims,
    dims,
    leaf_items,
    make_values,
    same_storage,
    tensordicts,
)

BatchSizeError, DimError = errors.BatchSizeError, errors.DimError
ShapeError, TclassError = errors.ShapeError, errors.TclassError


def _nested_td() -> TensorDict:
    """batch [2, 3]; a leaf with feature dims; a nested TD with one extra batch dim."""
    return TensorDict(
        {
            "a": make_values([2, 3, 4]),
            "b": make_values([2, 3], torch.int64),
            "n": TensorDict({"c": make_values([2, 3, 5, 2])}, [2, 3, 5]),
        },
        [2, 3],
    )


def _shape_arg(draw: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """``shape`` as ``op(*ints)``, ``op(tuple)``, ``op(list)`` or ``op(torch.Size)``."""
    form = draw(st.sampled_from(["ints", "tuple", "list", "size"]))
    if form == "ints":
        return shape
    if form == "tuple":
        return (tuple(shape),)
    if form == "list":
        return (list(shape),)
    return (torch.Size(shape) if min(shape, default=0) >= 0 else tuple(shape),)


def _error_is_tclass(info: Any) -> None:
    assert isinstance(info.value, TclassError)


# --- reshape / view -------------------------------------------------------------------


@st.composite
def _reshape_targets(draw: st.DrawFn, batch: torch.Size) -> tuple[int, ...]:
    target = list(draw(st.permutations(list(batch))))
    if len(target) >= 2 and draw(st.booleans()):
        target = [target[0] * target[1], *target[2:]]
    target += [1] * draw(st.integers(0, 1))
    if target and draw(st.booleans()) and math.prod(batch):
        target[draw(st.integers(0, len(target) - 1))] = -1
    return tuple(target)


@SETTINGS
@given(st.data())
def test_reshape_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts())
    batch, nb = td.batch_size, td.batch_dims
    target = data.draw(_reshape_targets(batch))
    new = torch.empty(batch).reshape(target).shape
    result = td.reshape(*_shape_arg(data.draw, target))
    assert_leafwise(result, td, lambda t: t.reshape(new + t.shape[nb:]), new, view=True)


@SETTINGS
@given(st.data())
def test_reshape_of_a_permuted_td_copies_like_torch(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=2, min_side=2))
    nb = td.batch_dims
    permuted = td.transpose(0, 1)
    new = torch.Size([-1])
    flat = torch.Size([permuted.numel()])
    result = permuted.reshape(new)
    assert_leafwise(result, permuted, lambda t: t.reshape(flat + t.shape[nb:]), flat, view=False)


@SETTINGS
@given(st.data())
def test_view_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts())
    batch, nb = td.batch_size, td.batch_dims
    target = data.draw(_reshape_targets(batch))
    new = torch.empty(batch).view(target).shape
    result = td.view(*_shape_arg(data.draw, target))
    assert_leafwise(result, td, lambda t: t.view(new + t.shape[nb:]), new, view=True)


def test_reshape_takes_size_as_a_keyword_as_the_peer() -> None:
    td = TensorDict({"a": torch.arange(6.0).reshape(2, 3)}, [2, 3])
    assert torch.equal(td.reshape(size=(3, 2))["a"], td["a"].reshape(3, 2))
    assert tclass.lazy_stack([td, td]).reshape(size=[12]).batch_size == (12,)
    with pytest.raises(errors.ShapeError, match="takes the shape once"):
        td.reshape(6, size=(6,))


def test_reshape_to_the_same_size_is_the_collection_itself() -> None:
    td = _nested_td()
    out = td.reshape(2, 3)
    assert out is td  # the collection itself, as in the peer (and torch, for a view)


@pytest.mark.parametrize("op", ["reshape", "view"])
def test_reshape_view_errors(op: str) -> None:
    td = _nested_td()
    with pytest.raises(
        ShapeError,
        match=rf"{op}: shape \[4\] is invalid for a batch of 6 elements \(batch size \[2, 3\]\)",
    ) as info:
        getattr(td, op)(4)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(ShapeError, match="only one dim may be -1"):
        getattr(td, op)(-1, -1)
    with pytest.raises(TypeError, match=f"{op}: "):
        getattr(td, op)(2.0, 3)


def test_view_of_a_non_contiguous_td_fails_like_torch() -> None:
    td = TensorDict({"a": make_values([2, 3, 4])}, [2, 3]).transpose(0, 1)
    with pytest.raises(RuntimeError, match="view"):
        td["a"].view(6, 4)
    with pytest.raises(RuntimeError):
        td.view(6)


def test_view_dtype() -> None:
    td = _nested_td()
    td["b"] = td["b"].float()
    out = td.view(torch.int32)
    assert out.batch_size == td.batch_size
    for path, leaf in leaf_items(td):
        got = out.get(path)
        assert got.dtype is torch.int32
        assert torch.equal(got, leaf.view(torch.int32))
        assert same_storage(got, leaf)
    assert out["n"].batch_size == torch.Size([2, 3, 5])
    # A smaller dtype scales the last feature dim only.
    small = TensorDict({"a": make_values([2, 3, 4])}, [2, 3]).view(torch.uint8)
    assert small["a"].shape == torch.Size([2, 3, 16])
    assert small.batch_size == torch.Size([2, 3])


def test_view_dtype_that_would_change_a_batch_dim_is_refused() -> None:
    # The last dim of "a" is a batch dim: viewing float32 as uint8 would make it 16.
    td = TensorDict({"a": torch.arange(4.0)}, [4])
    with pytest.raises((BatchSizeError, ShapeError)) as info:
        td.view(torch.uint8)
    assert isinstance(info.value, RuntimeError)  # what the peer raises
    assert "'a'" in str(info.value)


def test_view_dtype_with_a_batch_size_gives_it_to_nested_collections() -> None:
    # As the peer: view(dtype, batch_size=...) sets the batch size of the result and of
    # every nested collection (records too), so a batch dim may change size.
    class Pt(tclass.TensorClass):
        x: torch.Tensor

    td = TensorDict(
        {"a": torch.arange(4.0), "p": Pt(x=torch.ones(4, 3), batch_size=[4])}, [4], names=["n"]
    )
    out = td.view(torch.uint8, batch_size=[])
    assert out.batch_size == out["p"].batch_size == torch.Size([])
    assert out["a"].shape == (16,) and out["p"].x.shape == (4, 12) and type(out["p"]) is Pt
    assert out.names == [] and td.view(torch.int32, batch_size=[4]).names == ["n"]
    with pytest.raises(ShapeError, match="batch_size="):
        td.view(torch.uint8, batch_size=[4, 1])


# --- flatten / unflatten --------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_flatten_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1))
    batch, nb = td.batch_size, td.batch_dims
    start = data.draw(dims(nb))
    end = data.draw(dims(nb))
    s, e = start % nb, end % nb
    if s > e:
        with pytest.raises(RuntimeError):
            torch.empty(batch).flatten(start, end)
        with pytest.raises(
            ShapeError, match=f"flatten: start_dim {start} comes after end_dim {end}"
        ):
            td.flatten(start, end)
        return
    new = torch.empty(batch).flatten(start, end).shape
    result = td.flatten(start, end)
    assert_leafwise(result, td, lambda t: t.flatten(s, e), new, view=True)


def test_flatten_defaults_and_no_batch_dims() -> None:
    td = _nested_td()
    out = td.flatten()
    assert out.batch_size == torch.Size([6])
    assert out["a"].shape == torch.Size([6, 4])
    assert out["n"].batch_size == torch.Size([6, 5])
    scalar = TensorDict({"a": make_values([4])}, [])
    flat = scalar.flatten()
    assert flat.batch_size == torch.empty(()).flatten().shape == torch.Size([1])
    assert flat["a"].shape == torch.Size([1, 4])
    assert torch.equal(flat["a"][0], scalar["a"])


def test_flatten_errors() -> None:
    td = _nested_td()
    with pytest.raises(DimError, match="flatten: dim 2 is out of range for 2 batch dim"):
        td.flatten(0, 2)
    with pytest.raises(DimError, match="flatten: dim -3 is out of range"):
        td.flatten(-3)
    # torch raises IndexError for flatten(2) of a 0-d tensor; so should a TD with batch [].
    with pytest.raises(IndexError):
        torch.empty(()).flatten(2)
    with pytest.raises(DimError, match="flatten"):
        TensorDict({"a": make_values([4])}, []).flatten(2)


@st.composite
def _unflatten_case(draw: st.DrawFn) -> tuple[TensorDict, int, tuple[int, ...]]:
    td = draw(tensordicts(min_dims=1))
    dim = draw(dims(td.batch_dims))
    size = td.batch_size[dim]
    factors = [f for f in range(1, size + 1) if size % f == 0] or [0]
    first = draw(st.sampled_from(factors))
    sizes = [first, size // first if first else 0]
    if draw(st.booleans()) and size:
        sizes[draw(st.integers(0, 1))] = -1
    return td, dim, tuple(sizes)


@SETTINGS
@given(_unflatten_case())
def test_unflatten_property(case: tuple[TensorDict, int, tuple[int, ...]]) -> None:
    td, dim, sizes = case
    nb = td.batch_dims
    new = torch.empty(td.batch_size).unflatten(dim, sizes).shape
    result = td.unflatten(dim, sizes)
    assert_leafwise(result, td, lambda t: t.unflatten(dim % nb, sizes), new, view=True)


def test_unflatten_errors() -> None:
    td = _nested_td()
    with pytest.raises(
        ShapeError, match=r"unflatten: shape \[2, 2\] is invalid for a batch of 3 elements"
    ):
        td.unflatten(1, (2, 2))
    with pytest.raises(ShapeError, match="only one dim may be -1"):
        td.unflatten(1, (-1, -1))
    with pytest.raises(DimError, match="unflatten: dim 2 is out of range"):
        td.unflatten(2, (1, 1))
    out = td.unflatten(-1, (-1, 1))
    assert out.batch_size == torch.Size([2, 3, 1])
    assert out["n"].batch_size == torch.Size([2, 3, 1, 5])


def test_unflatten_to_the_same_size_gives_plain_tensors(tmp_path: Path) -> None:
    # As the peer: unflatten always reshapes its leaves, so the leaves of a memory-mapped
    # collection come back as plain tensors, even for a size that changes nothing.
    td = TensorDict({"b": torch.zeros(4, 3)}, batch_size=[4]).memmap(tmp_path)
    for out in (td.unflatten(-1, [4]), td.unflatten(0, [-1])):
        assert type(out["b"]) is torch.Tensor
        assert out["b"].untyped_storage().data_ptr() == td["b"].untyped_storage().data_ptr()


def test_unbind_of_a_saved_collection_without_tensors_gives_locked_slices(tmp_path: Path) -> None:
    # As its index does (and the peer's both): the slices of a locked saved collection
    # are locked, tensors or not.
    saved = TensorDict({"n": TensorDict({}, [2, 3])}, batch_size=[2, 3]).memmap(tmp_path)
    for dim in (0, 1, -1):
        slices = saved.unbind(dim)
        assert all(piece.is_locked and piece["n"].is_locked for piece in slices)
    assert saved[0].is_locked
    assert not any(piece.is_locked for piece in TensorDict({}, [2]).lock_().unbind(0))


@pytest.mark.parametrize(
    "view",
    [
        lambda t: t.unsqueeze(0),
        lambda t: t.unsqueeze(0).squeeze(0),
        lambda t: t.permute(1, 0),
        lambda t: t.transpose(0, 1),
        lambda t: t.view(6),
        lambda t: t.split(1, 0)[0],
        lambda t: t.unbind(0)[0].unsqueeze(-1),
        lambda t: t[0].unsqueeze(0),
    ],
)
def test_views_of_a_saved_collection_without_tensors_are_saved_views(
    tmp_path: Path, view: Callable[[Any], Any]
) -> None:
    # As the peer's: unsqueeze / squeeze / permute / transpose / view / split / unbind of
    # a saved (locked) collection holding no tensor are memory-mapped, their rows locked.
    saved = TensorDict({"s": "abc", "n": TensorDict({}, [2, 3])}, [2, 3]).memmap(tmp_path)
    out = view(saved)
    assert out.is_locked and out.is_memmap()
    assert out[0].is_locked and out.unbind(0)[0].is_locked and out[0]["n"].is_locked
    # reshape-like ops and copies make no such view, as the peer's; nor does a
    # collection locked by hand
    assert not saved.reshape(6)[0].is_locked and not saved.expand(4, 2, 3).is_memmap()
    assert not view(TensorDict({}, [2, 3]).lock_())[0].is_locked


# --- squeeze / unsqueeze --------------------------------------------------------------


def _squeeze_by_hand(tensor: torch.Tensor, removed: list[int]) -> torch.Tensor:
    for d in sorted(removed, reverse=True):
        tensor = tensor.squeeze(d)
    return tensor


@SETTINGS
@given(st.data())
def test_squeeze_all_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts(max_side=2))
    batch = td.batch_size
    removed = [i for i, s in enumerate(batch) if s == 1]
    new = torch.empty(batch).squeeze().shape
    result = td.squeeze()
    assert_leafwise(result, td, lambda t: _squeeze_by_hand(t, removed), new, view=True)


@SETTINGS
@given(st.data())
def test_squeeze_dim_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1, max_side=2))
    nb = td.batch_dims
    dim = data.draw(dims(nb))
    removed = [dim % nb] if td.batch_size[dim] == 1 else []
    new = torch.empty(td.batch_size).squeeze(dim).shape
    result = td.squeeze(dim)
    assert_leafwise(result, td, lambda t: _squeeze_by_hand(t, removed), new, view=True)


def test_squeeze_examples_and_errors() -> None:
    td = TensorDict(
        {
            "a": make_values([1, 3, 1, 2]),
            "n": TensorDict({"c": make_values([1, 3, 1, 1])}, [1, 3, 1, 1]),
        },
        [1, 3, 1],
    )
    assert td.squeeze().batch_size == torch.Size([3])
    assert td.squeeze()["a"].shape == torch.Size([3, 2])  # feature dims are kept
    assert td.squeeze()["n"].batch_size == torch.Size([3, 1])  # nested extra dim kept
    assert td.squeeze(-1).batch_size == torch.Size([1, 3])
    kept = td.squeeze(1)  # size 3: nothing removed
    assert kept.batch_size == td.batch_size
    assert kept["a"] is td["a"]
    with pytest.raises(DimError, match="squeeze: dim 3 is out of range for 3 batch dim"):
        td.squeeze(3)
    with pytest.raises(DimError, match="squeeze: dim -4 is out of range"):
        td.squeeze(-4)


@SETTINGS
@given(st.data())
def test_unsqueeze_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts())
    nb = td.batch_dims
    dim = data.draw(dims(nb, inclusive=True))
    pos = dim % (nb + 1)
    new = torch.empty(td.batch_size).unsqueeze(dim).shape
    result = td.unsqueeze(dim)
    assert_leafwise(result, td, lambda t: t.unsqueeze(pos), new, view=True)


def test_unsqueeze_examples_and_errors() -> None:
    td = _nested_td()
    last = td.unsqueeze(-1)
    assert last.batch_size == torch.Size([2, 3, 1])
    assert last["a"].shape == torch.Size([2, 3, 1, 4])  # not [2, 3, 4, 1]
    assert last["n"].batch_size == torch.Size([2, 3, 1, 5])
    assert td.unsqueeze(0)["a"].shape == torch.Size([1, 2, 3, 4])
    assert td.unsqueeze(-2).batch_size == torch.Size([2, 1, 3])
    assert td.unsqueeze(-3).batch_size == torch.Size([1, 2, 3])
    for bad in (4, -4):
        with pytest.raises(
            DimError, match=f"unsqueeze: dim {bad} is out of range for 2 batch dim"
        ) as info:
            td.unsqueeze(bad)
        _error_is_tclass(info)
    scalar = TensorDict({"a": make_values([4])}, [])
    assert scalar.unsqueeze(-1).batch_size == torch.Size([1])
    assert scalar.unsqueeze(-1)["a"].shape == torch.Size([1, 4])


# --- permute / transpose --------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_permute_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1))
    nb = td.batch_dims
    order = data.draw(st.permutations(range(nb)))
    negate = data.draw(st.lists(st.booleans(), min_size=nb, max_size=nb))
    given_dims = tuple(d - nb if neg else d for d, neg in zip(order, negate))
    new = torch.empty(td.batch_size).permute(given_dims).shape
    result = td.permute(*_shape_arg(data.draw, given_dims))
    assert_leafwise(result, td, lambda t: t.permute(*order, *range(nb, t.ndim)), new, view=True)


def test_permute_of_no_batch_dims_is_the_identity() -> None:
    # torch.empty(()).permute(()) is fine; so is permuting a TD with batch [] and 0-d leaves.
    td = TensorDict({"a": torch.tensor(1.0), "b": make_values([2])}, [])
    for args in ((), ((),), ([],)):
        out = td.permute(*args)
        assert out.batch_size == torch.Size([])
        assert torch.equal(out["a"], td["a"])
        assert torch.equal(out["b"], td["b"])


def test_permute_errors() -> None:
    td = _nested_td()
    with pytest.raises(ShapeError, match=r"expected at most 2 dims .*got \[0, 1, 2\]") as info:
        td.permute(0, 1, 2)  # a leaf's feature dim cannot be permuted
    assert isinstance(info.value, ValueError)
    with pytest.raises(ShapeError, match=r"permute: \[1, -1\] is not a permutation"):
        td.permute(1, -1)
    with pytest.raises(ShapeError, match=r"permute: \[1\] is not a permutation .* \[0\]"):
        td.permute(1)  # fewer dims reorder the leading dims only: [1] is no order of [0]
    with pytest.raises(DimError, match="permute: dim 2 is out of range"):
        td.permute(0, 2)


@pytest.mark.parametrize(
    ("dims", "order"),
    [([], (0, 1, 2)), ([0], (0, 1, 2)), ([1, 0], (1, 0, 2)), ([1, -3], (1, 0, 2)), ([-1], None)],
)
def test_permute_of_the_leading_dims_keeps_the_others(
    dims: list[int], order: tuple[int, ...] | None
) -> None:
    # As the peer: fewer dims than batch dims permute the leading dims (negative dims count
    # from the last batch dim), the other dims stay where they are.
    td = TensorDict({"a": make_values([2, 3, 4, 5]), "n": {"b": make_values([2, 3, 4])}}, [2, 3, 4])
    stack = tclass.lazy_stack([td[:, :, i] for i in range(4)], 2)
    for source in (td, stack):
        if order is None:
            with pytest.raises(ShapeError, match="not a permutation of the leading"):
                source.permute(dims)
            continue
        out = source.permute(dims)
        assert out.batch_size == torch.Size([(2, 3, 4)[d] for d in order])
        assert torch.equal(out["a"], td["a"].permute(*order, 3))
        assert torch.equal(out["n", "b"], td["n", "b"].permute(*order))


@SETTINGS
@given(st.data())
def test_transpose_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1))
    nb = td.batch_dims
    a, b = data.draw(dims(nb)), data.draw(dims(nb))
    new = torch.empty(td.batch_size).transpose(a, b).shape
    result = td.transpose(a, b)
    assert_leafwise(result, td, lambda t: t.transpose(a % nb, b % nb), new, view=True)


def test_transpose_errors() -> None:
    td = _nested_td()
    with pytest.raises(DimError, match="transpose: dim 2 is out of range for 2 batch dim"):
        td.transpose(0, 2)
    with pytest.raises(DimError, match="transpose: dim -3"):
        td.transpose(-3, 0)
    out = td.transpose(0, 1)
    assert out["n"].batch_size == torch.Size([3, 2, 5])
    assert not out["a"].is_contiguous()


# --- expand ---------------------------------------------------------------------------


@st.composite
def _expand_case(draw: st.DrawFn) -> tuple[TensorDict, tuple[int, ...]]:
    td = draw(tensordicts(max_side=3))
    lead = draw(st.lists(st.integers(0, 3), max_size=2))
    rest = [
        draw(st.sampled_from([size, -1] + ([0, 2, 3] if size == 1 else [])))
        for size in td.batch_size
    ]
    return td, tuple(lead + rest)


@SETTINGS
@given(_expand_case(), st.data())
def test_expand_property(case: tuple[TensorDict, tuple[int, ...]], data: st.DataObject) -> None:
    td, target = case
    nb = td.batch_dims
    new = torch.empty(td.batch_size).expand(target).shape
    result = td.expand(*_shape_arg(data.draw, target))
    assert_leafwise(result, td, lambda t: t.expand(new + t.shape[nb:]), new, view=True)


def test_expand_examples_and_errors() -> None:
    td = TensorDict(
        {"a": make_values([1, 3, 2]), "n": TensorDict({"c": make_values([1, 3, 4])}, [1, 3, 4])},
        [1, 3],
    )
    out = td.expand(5, 2, 4, 3)
    assert out.batch_size == torch.Size([5, 2, 4, 3])
    assert out["a"].shape == torch.Size([5, 2, 4, 3, 2])
    assert out["a"].stride()[:3] == (0, 0, 0)
    assert out["n"].batch_size == torch.Size([5, 2, 4, 3, 4])
    assert same_storage(out["a"], td["a"])
    kept = td.expand(2, -1, -1)  # -1 keeps a dim, even one of size 1
    assert kept.batch_size == torch.Size([2, 1, 3])
    assert torch.equal(kept["n", "c"][1], td["n", "c"])
    with pytest.raises(
        ShapeError, match=r"expand: cannot expand batch size \[1, 3\] to \[2, 4\]: dim 1 has size 3"
    ) as info:
        td.expand(2, 4)
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(ShapeError, match=r"fewer dims than the batch size \[1, 3\]"):
        td.expand(3)
    with pytest.raises(ShapeError, match="-1 is only allowed for existing dims"):
        td.expand(-1, 1, 3)


# --- split / chunk / unbind -----------------------------------------------------------


def _assert_pieces(
    pieces: tuple[Any, ...], td: TensorDict, dim: int, by_hand: Any, sizes_from: Any
) -> None:
    """Each piece is the matching torch piece of every leaf (a view)."""
    nb = td.batch_dims
    reference = sizes_from(torch.empty(td.batch_size))
    assert isinstance(pieces, tuple)
    assert len(pieces) == len(reference)
    for i, piece in enumerate(pieces):
        assert_leafwise(
            piece, td, lambda t, i=i: by_hand(t, dim % nb)[i], reference[i].shape, view=True
        )


@SETTINGS
@given(st.data())
def test_split_int_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1))
    dim = data.draw(dims(td.batch_dims))
    size = data.draw(st.integers(1, 5))
    pieces = td.split(size, dim)
    _assert_pieces(pieces, td, dim, lambda t, d: t.split(size, d), lambda e: e.split(size, dim))


@SETTINGS
@given(st.data())
def test_split_list_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1))
    dim = data.draw(dims(td.batch_dims))
    total = td.batch_size[dim]
    cuts = sorted(data.draw(st.lists(st.integers(0, total), max_size=3)))
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, total])]
    pieces = td.split(sizes, dim)
    _assert_pieces(pieces, td, dim, lambda t, d: t.split(sizes, d), lambda e: e.split(sizes, dim))


def test_split_errors() -> None:
    td = _nested_td()
    with pytest.raises(
        ShapeError, match=r"split: sizes \[1, 1\] do not add up to the dim size 3"
    ) as info:
        td.split([1, 1], 1)
    assert isinstance(info.value, ValueError)
    with pytest.raises(ShapeError, match=r"sizes \[2, 2\] do not add up to the dim size 3"):
        td.split([2, 2], -1)
    with pytest.raises(ShapeError, match="split_size must be positive"):
        td.split(0)
    with pytest.raises(DimError, match="split: Incompatible dim 2; dim 2 is out of range"):
        td.split(1, 2)
    pieces = td.split(2, dim=1)
    assert [p.batch_size for p in pieces] == [torch.Size([2, 2]), torch.Size([2, 1])]
    assert [p["n"].batch_size for p in pieces] == [torch.Size([2, 2, 5]), torch.Size([2, 1, 5])]


@SETTINGS
@given(st.data())
def test_chunk_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1, min_side=1))
    dim = data.draw(dims(td.batch_dims))
    chunks = data.draw(st.integers(1, 6))
    pieces = td.chunk(chunks, dim)
    _assert_pieces(pieces, td, dim, lambda t, d: t.chunk(chunks, d), lambda e: e.chunk(chunks, dim))


def test_chunk_examples_and_errors() -> None:
    td = _nested_td()
    more = td.chunk(5, dim=1)  # more chunks than the size: one per element, like torch
    assert len(more) == len(torch.empty(2, 3).chunk(5, 1)) == 3
    assert all(p.batch_size == torch.Size([2, 1]) for p in more)
    with pytest.raises(ShapeError, match="chunk: the number of chunks must be positive, got 0"):
        td.chunk(0)
    with pytest.raises(DimError, match="chunk: dim -3 is out of range"):
        td.chunk(2, -3)


@pytest.mark.parametrize("chunks", [1, 3])
def test_chunk_of_an_empty_dim_matches_torch(chunks: int) -> None:
    td = TensorDict({"a": make_values([0, 2, 3])}, [0, 2])
    pieces = td.chunk(chunks, 0)
    expected = torch.empty(0, 2).chunk(chunks, 0)
    assert len(pieces) == len(expected)
    assert [p.batch_size for p in pieces] == [e.shape for e in expected]
    assert all(p["a"].shape == torch.Size([0, 2, 3]) for p in pieces)


def _rows(nt: torch.Tensor) -> list[list[int]]:
    return [row.tolist() for row in nt.unbind(0)]


def test_jagged_leaves_are_sliced_split_and_gathered_by_row() -> None:
    parts = [torch.tensor([1, 2, 3]), torch.tensor([4, 5, 6, 7]), torch.tensor([8])]
    nt = torch.nested.as_nested_tensor(parts, layout=torch.jagged)
    td = TensorDict({"x": nt, "n": {"y": torch.arange(3)}}, batch_size=[3])
    first, second = td.chunk(2)  # torch cannot split a jagged tensor along dim 0
    assert _rows(first["x"]) == [[1, 2, 3], [4, 5, 6, 7]] and _rows(second["x"]) == [[8]]
    assert [_rows(p["x"]) for p in td.split([1, 2])] == [[[1, 2, 3]], [[4, 5, 6, 7], [8]]]
    assert _rows(td[1:]["x"]) == [[4, 5, 6, 7], [8]] and td[1:]["n", "y"].tolist() == [1, 2]
    assert _rows(td[torch.tensor([0, -1])]["x"]) == [[1, 2, 3], [8]]
    assert _rows(td[torch.tensor([True, False, True])]["x"]) == [[1, 2, 3], [8]]
    assert _rows(td[[2, 1]]["x"]) == [[8], [4, 5, 6, 7]] and td[1]["x"].tolist() == [4, 5, 6, 7]
    assert td[2:]["x"].layout is torch.jagged and td[2:].batch_size == torch.Size([1])
    holes = torch.nested.nested_tensor_from_jagged(  # lengths: the holes stay out
        torch.arange(10), torch.tensor([0, 2, 5, 8, 10]), lengths=torch.tensor([2, 3, 1, 2])
    )
    assert _rows(TensorDict(x=holes, batch_size=[4])[2:]["x"]) == [[5], [8, 9]]


@SETTINGS
@given(st.data())
def test_unbind_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1))
    dim = data.draw(dims(td.batch_dims))
    pieces = td.unbind(dim)
    _assert_pieces(pieces, td, dim, lambda t, d: t.unbind(d), lambda e: e.unbind(dim))


def test_unbind_examples_and_errors() -> None:
    td = _nested_td()
    pieces = td.unbind(-1)
    assert len(pieces) == 3
    assert pieces[2].batch_size == torch.Size([2])
    assert torch.equal(pieces[2]["a"], td["a"][:, 2])
    assert pieces[2]["n"].batch_size == torch.Size([2, 5])
    assert torch.equal(pieces[2]["n", "c"], td["n", "c"][:, 2])
    with pytest.raises(DimError, match="unbind: dim 2 is out of range for 2 batch dim"):
        td.unbind(2)
    empty = TensorDict({"a": make_values([0, 3])}, [0])
    assert empty.unbind(0) == ()
    with pytest.raises(DimError, match="unbind: dim 0 is out of range for 0 batch dim"):
        TensorDict({"a": make_values([3])}, []).unbind(0)


def test_iteration_is_unbind_0() -> None:
    td = _nested_td()
    rows = list(td)
    assert len(rows) == len(td) == 2
    for i, row in enumerate(rows):
        assert type(row) is TensorDict
        assert row.batch_size == torch.Size([3])
        assert torch.equal(row["a"], td["a"][i])
        assert torch.equal(row["n", "c"], td["n", "c"][i])
        assert same_storage(row["a"], td["a"])
    with pytest.raises(
        TypeError, match="iteration over a 0-d tensordict: this TensorDict has no batch dims"
    ):
        iter(TensorDict({"a": make_values([3])}, []))


# --- common facts ---------------------------------------------------------------------


def test_ops_keep_the_class_and_device() -> None:
    class Sub(TensorDict):
        pass

    td = Sub({"a": make_values([2, 3, 4])}, [2, 3], device="cpu")
    results = [
        td.reshape(6), td.view(3, 2), td.flatten(), td.unflatten(0, (1, 2)), td.squeeze(),
        td.unsqueeze(0), td.permute(1, 0), td.transpose(0, 1), td.expand(4, 2, 3),
        *td.split(1), *td.chunk(2, 1), *td.unbind(1),
    ]  # fmt: skip
    for out in results:
        assert type(out) is Sub
        assert out.device == torch.device("cpu")
        assert not out.is_locked


def test_ops_do_not_change_the_source() -> None:
    td = _nested_td()
    before = {path: leaf.clone() for path, leaf in leaf_items(td)}
    td.reshape(-1), td.permute(1, 0), td.expand(2, 2, 3), td.squeeze(), td.split(1, 1)
    assert td.batch_size == torch.Size([2, 3])
    for path, leaf in leaf_items(td):
        assert torch.equal(leaf, before[path])


@SETTINGS
@given(st.data())
def test_bad_dims_are_dim_errors(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1, max_dims=2))
    nb = td.batch_dims
    bad = data.draw(bad_dims(nb))
    for op in (
        lambda: td.squeeze(bad), lambda: td.transpose(bad, 0), lambda: td.split(1, bad),
        lambda: td.chunk(1, bad), lambda: td.unbind(bad), lambda: td.flatten(bad),
        lambda: td.unflatten(bad, (-1,)),
    ):  # fmt: skip
        with pytest.raises(DimError, match="out of range") as info:
            op()
        assert isinstance(info.value, IndexError)
    with pytest.raises(DimError, match="out of range"):
        td.unsqueeze(data.draw(bad_dims(nb, inclusive=True)))


def test_stack_of_unbind_is_the_identity() -> None:
    td = _nested_td()
    for dim in (0, 1, -1):
        back = tclass.stack(td.unbind(dim), dim)
        assert back.batch_size == td.batch_size
        for path, leaf in leaf_items(td):
            assert torch.equal(back.get(path), leaf)


def test_permute_takes_dims_by_keyword_as_the_peer() -> None:
    td = tclass.TensorDict(a=torch.randn(2, 3, 4), batch_size=[2, 3])
    stack = tclass.LazyStackedTensorDict(*td.unbind(0))
    for collection in (td, stack):
        for out in (collection.permute(dims=(1, 0)), collection.permute(dims=[-1, 0])):
            assert out.batch_size == torch.Size([3, 2])
            assert torch.equal(out["a"], td["a"].permute(1, 0, 2))
    with pytest.raises(TypeError, match="once"):
        td.permute(1, 0, dims=(1, 0))


# --- shape ops as context managers: the block's writes go back on exit ----------------------


def _add_one(view: Any) -> None:
    view["a"] += 1


def _add_key(view: Any) -> None:
    view["z"] = torch.zeros(view.batch_size)


def _in_block(make: Any, body: Any) -> Any:
    def method(collection: Any) -> Any:
        with make(collection) as view:
            body(view)
        return collection

    return method


_WRITE_BACKS = {
    "flatten": lambda c: c.flatten(0, 1),
    "unflatten": lambda c: (
        c.unflatten(1, (3, 1)) if c.batch_size[1] == 3 else c.unflatten(0, (2, 1))
    ),
    "view": lambda c: c.view(-1),
    "reshape": lambda c: c.reshape(-1),
    "permute": lambda c: c.permute(*reversed(range(c.batch_dims))),
    "transpose": lambda c: c.transpose(0, 1),
    "unsqueeze": lambda c: c.unsqueeze(0),
    "flip": lambda c: c.flip(0),
    "fliplr": lambda c: c.fliplr(),
    "roll": lambda c: c.roll(1, 0),
    "roll_flat": lambda c: c.roll(1),
    "rot90": lambda c: c.rot90(1, (0, 1)),
    "movedim": lambda c: c.movedim(0, 1),
    "flatten_keys": lambda c: c.flatten_keys(),
}


_BLOCK_KINDS = ["flat", "named", "indexed_view", "lazy_dim0", "lazy_dim1", "lazy_nested", "record"]


@pytest.mark.peer
@pytest.mark.parametrize("kind", _BLOCK_KINDS)
@pytest.mark.parametrize("op", sorted(_WRITE_BACKS))
@pytest.mark.parametrize("body", [_add_one, _add_key], ids=["update", "new_key"])
def test_shape_ops_as_context_managers_as_the_peer(
    kind: str, op: str, body: Any, tmp_path: Path
) -> None:
    """``with c.flatten(0, 1) as f: f["a"] += 1`` (or a new key) writes back into ``c`` on
    exit, as the peer, on TensorDicts, lazy stacks and records."""
    assert_as_the_peer(kind, tmp_path, _in_block(_WRITE_BACKS[op], body))


@pytest.mark.parametrize("stack_dim", [0, 1])
def test_lazy_shape_ops_write_back_in_a_with_block(stack_dim: int) -> None:
    members = [TensorDict({"a": torch.zeros(2 if stack_dim else 3, 4)}, [2 if stack_dim else 3])]
    for make in (
        lambda s: s.flatten(0, 1),
        lambda s: s.view(-1),
        lambda s: s.unsqueeze(0),
        lambda s: s.permute(1, 0),
        lambda s: s.flip(0),
        lambda s: s.roll(1, 1),
        lambda s: s.flatten_keys(),
        lambda s: s.unflatten_keys(),
    ):
        stack = tclass.lazy_stack(
            [m.clone() for m in members * (2 if stack_dim == 0 else 3)], stack_dim
        )
        with make(stack) as view:
            view["a"] += 1
            view["z"] = torch.ones(view.batch_size)
        assert bool((stack["a"] == 1).all()) and stack["z"].shape == stack.batch_size
        assert all("z" in member.keys() for member in stack.tensordicts)


@pytest.mark.parametrize("lazy", [False, True], ids=["td", "lazy"])
def test_a_lock_call_on_a_result_opens_its_own_block(lazy: bool) -> None:
    # As the peer: the last operation of `t` is then unlock_(), whose block only relocks
    # t; a write-back pending from the shape op is dropped (the source may be locked).
    source = TensorDict({"a": torch.zeros(2, 3)}, [2, 3])
    td: Any = tclass.lazy_stack([source, source.clone()], 0) if lazy else source
    td.lock_()
    t = td.transpose(-1, -2)
    with t.unlock_():
        t["new"] = torch.zeros(t.batch_size)
    assert "new" in t.keys() and "new" not in td.keys() and t.is_locked
    # A lock call inside the shape op's own block keeps its write-back.
    td.unlock_()
    with td.transpose(-1, -2) as t:
        t["b"] = torch.ones(t.batch_size)
        with t.lock_():
            pass
    assert "b" in td.keys()


def test_roll_and_rot90_write_back_in_place_of_the_source() -> None:
    td = TensorDict({"a": torch.arange(6.0).view(2, 3)}, [2, 3])
    with td.roll(1, 1) as rolled:
        rolled["a"] = rolled["a"] * 10  # a new tensor: only the write-back reaches td
    assert td["a"].tolist() == [[0.0, 10.0, 20.0], [30.0, 40.0, 50.0]]
    with td.rot90() as turned:
        turned["b"] = torch.arange(6).view(3, 2)
    assert td["b"].tolist() == torch.arange(6).view(3, 2).rot90(-1).tolist()
    nested = TensorDict({"n": {"c": torch.zeros(2)}}, [2])
    with nested.flatten_keys() as flat:
        flat["n.d"] = torch.ones(2)
    assert nested["n", "d"].tolist() == [1.0, 1.0]


# --- results that change nothing share no node with the source (the differential fuzzer) ---


def _member() -> TensorDict:
    return TensorDict(
        {
            "a": torch.arange(12.0).reshape(3, 2, 2),
            "n": TensorDict({"b": torch.arange(6.0).reshape(3, 2)}, [3, 2]),
        },
        [3, 2],
    )


def test_a_dense_collection_gets_new_nodes_there() -> None:
    td = _member()
    for out in (td.flatten(0, 0), td.unflatten(0, (3,))):
        assert out is not td and out["n"] is not td["n"]
        out["n", "z"] = torch.ones(3, 2)
        out.lock_()
        assert "z" not in td["n"].keys() and not td.is_locked and not td["n"].is_locked
        assert out["a"].data_ptr() == td["a"].data_ptr()  # the leaves are views still
    assert td.movedim(1, 1) is td


def test_a_nested_lazy_stack_flattens_itself() -> None:
    """As the peer: nested collections make the same call, so a nested lazy stack is kept
    where one dim is flattened, where a TensorDict is new."""
    members = [TensorDict({"b": torch.zeros(2)}, [2]) for _ in range(3)]
    td = TensorDict({"n": tclass.lazy_stack(members, 0), "m": {"c": torch.zeros(3, 2)}}, [3, 2])
    assert td.flatten(1, 1)["n"] is td["n"] and td.flatten(1, 1)["m"] is not td["m"]
    assert td.unflatten(1, (2,))["n"] is td["n"]
    assert td.unflatten(0, (3, 1))["n"].batch_size == torch.Size([3, 1, 2])


def test_movedim_checks_repeated_dims_first() -> None:
    with pytest.raises(errors.ShapeError, match="repeated dim"):
        _member().movedim((0, 0), (0, 0))


def test_record_unflatten_gives_new_nested_records() -> None:
    class Inner(tclass.TensorClass):
        y: torch.Tensor

    class Outer(tclass.TensorClass):
        x: torch.Tensor
        inner: Inner

    rec = Outer(
        x=torch.zeros(1, 2, 3),
        inner=Inner(y=torch.zeros(1, 2), batch_size=[1, 2]),
        batch_size=[1, 2],
    )
    out = rec.unflatten(1, [2])
    assert out.inner is not rec.inner
    out.inner.y = torch.ones(1, 2)  # a field of the result only
    assert torch.equal(rec.inner.y, torch.zeros(1, 2))
