"""Tests for tclass._core._batch: the pure batch-size arithmetic, checked against torch."""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tclass._core import _batch
from tclass.errors import (
    ArgumentError,
    BatchSizeError,
    DimError,
    IndexTypeError,
    ShapeError,
    TclassError,
)

from strategies import (  # noqa: E402
    SETTINGS,
    bad_dims,
    basic_indices,
    batch_shapes,
    dims,
    feature_shapes,
)


def _torch_raises(fn: object) -> bool:
    try:
        fn()  # type: ignore[operator]
    except RuntimeError:
        return True
    return False


# --- error classes --------------------------------------------------------------------


def test_error_bases() -> None:
    for error in (BatchSizeError, ShapeError):
        assert issubclass(error, TclassError)
        assert issubclass(error, ValueError)
        assert issubclass(error, RuntimeError)
    assert issubclass(DimError, IndexError)
    assert issubclass(DimError, TclassError)


# --- format_shape / mismatch_message --------------------------------------------------


def test_format_shape() -> None:
    assert _batch.format_shape([4, 3]) == "[4, 3]"
    assert _batch.format_shape(torch.Size([])) == "[]"
    assert _batch.format_shape((0,)) == "[0]"


# --- as_batch_size --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, []),
        (0, [0]),
        (3, [3]),
        ([], []),
        ((), []),
        ([2, 3], [2, 3]),
        ((2, 0, 3), [2, 0, 3]),
        (torch.Size([4, 1]), [4, 1]),
        (range(2, 4), [2, 3]),
    ],
)
def test_as_batch_size_accepts(value: object, expected: list[int]) -> None:
    out = _batch.as_batch_size(value)
    assert type(out) is torch.Size
    assert out == torch.Size(expected)


def test_as_batch_size_returns_a_given_size_unchanged() -> None:
    size = torch.Size([2, 3])
    assert _batch.as_batch_size(size) is size


@pytest.mark.parametrize(
    "value",
    [-1, [-1], [2, -1], (3, -2), torch.Size([-1]), True, False, [True], [2, False],
     2.0, [2.0], [2, "3"], "23", b"\x02", {"a": 1}, object(), [None], [[2]]],
)  # fmt: skip
def test_as_batch_size_rejects(value: object) -> None:
    with pytest.raises(BatchSizeError, match="invalid batch_size") as info:
        _batch.as_batch_size(value)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, RuntimeError)
    assert "non-negative ints" in str(info.value)


@pytest.mark.parametrize("value", [[2, -1], (2, 3, -1), torch.Size([4, -1, -1]), [0, -1, 2]])
def test_as_batch_size_ragged_takes_minus_one_after_the_first_dim(value: Any) -> None:
    out = _batch.as_batch_size(value, ragged=True)
    assert type(out) is torch.Size and list(out) == list(value)


@pytest.mark.parametrize("value", [[-1], [-1, 2], (2, -2), [2, -1.0], -1, [2, True]])
def test_as_batch_size_ragged_rejects_the_rest(value: Any) -> None:
    with pytest.raises(BatchSizeError, match="invalid batch_size"):
        _batch.as_batch_size(value, ragged=True)


@SETTINGS
@given(st.lists(st.integers(0, 10**6), max_size=6), st.sampled_from([list, tuple, torch.Size]))
def test_as_batch_size_round_trips(sizes: list[int], kind: type) -> None:
    out = _batch.as_batch_size(kind(sizes))
    assert out == torch.Size(sizes)
    assert type(out) is torch.Size


# --- normalize_dim --------------------------------------------------------------------


@SETTINGS
@given(st.integers(1, 5).flatmap(lambda n: st.tuples(st.just(n), dims(n))))
def test_normalize_dim_matches_python_indexing(case: tuple[int, int]) -> None:
    ndim, dim = case
    assert _batch.normalize_dim(dim, ndim, op="x") == range(ndim)[dim]


@SETTINGS
@given(st.integers(0, 5).flatmap(lambda n: st.tuples(st.just(n), dims(n, inclusive=True))))
def test_normalize_dim_inclusive_matches_unsqueeze(case: tuple[int, int]) -> None:
    ndim, dim = case
    got = _batch.normalize_dim(dim, ndim, op="unsqueeze", inclusive=True)
    assert got == range(ndim + 1)[dim]
    # torch.unsqueeze puts the new dim of size 1 exactly there.
    shape = torch.empty([2] * ndim).unsqueeze(dim).shape
    assert shape[got] == 1


@SETTINGS
@given(
    st.integers(0, 4).flatmap(
        lambda n: st.tuples(st.just(n), st.booleans()).flatmap(
            lambda c: st.tuples(st.just(c[0]), st.just(c[1]), bad_dims(c[0], inclusive=c[1]))
        )
    )
)
def test_normalize_dim_out_of_range(case: tuple[int, bool, int]) -> None:
    ndim, inclusive, dim = case
    with pytest.raises(
        DimError, match=rf"myop: dim {dim} is out of range for {ndim} batch"
    ) as info:
        _batch.normalize_dim(dim, ndim, op="myop", inclusive=inclusive)
    assert isinstance(info.value, IndexError)
    bound = ndim + 1 if inclusive else ndim
    assert f"[{-bound}, {bound - 1}]" in str(info.value)


def test_normalize_dim_types() -> None:
    import numpy as np

    assert _batch.normalize_dim(np.int64(-1), 3, op="x") == 2
    for bad in (True, 1.0, "1", None):
        # a TclassError (the peer's TypeError): a dim name is refused with the way to it
        with pytest.raises(ArgumentError, match="x: dim must be an int.*td.names"):
            _batch.normalize_dim(bad, 3, op="x")  # type: ignore[arg-type]


# --- shape_args -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [(2, 3), ((2, 3),), ([2, 3],), (torch.Size([2, 3]),)],
)
def test_shape_args_forms(args: tuple[object, ...]) -> None:
    assert _batch.shape_args(args, "reshape") == (2, 3)


def test_shape_args_empty_and_single() -> None:
    assert _batch.shape_args((), "reshape") == ()
    assert _batch.shape_args((5,), "reshape") == (5,)
    assert _batch.shape_args((-1,), "reshape") == (-1,)


@pytest.mark.parametrize(
    "args", [(2.0,), (2, 3.0), (2, (3,)), ((2, "3"),), (True,), ("ab",), (None,)]
)
def test_shape_args_rejects(args: tuple[object, ...]) -> None:
    with pytest.raises(ArgumentError, match="reshape: ") as caught:
        _batch.shape_args(args, "reshape")
    assert isinstance(caught.value, TypeError)
    with pytest.raises(ArgumentError, match="permute: give the order once"):
        _batch.permute_args((1, 0), (1, 0))


# --- view_shape -----------------------------------------------------------------------


@st.composite
def _view_targets(draw: st.DrawFn) -> tuple[torch.Size, tuple[int, ...]]:
    batch = draw(batch_shapes(max_dims=4))
    if draw(st.booleans()):
        target = list(draw(st.permutations(list(batch))))
        if target and draw(st.booleans()):
            target[draw(st.integers(0, len(target) - 1))] = -1
        target += [1] * draw(st.integers(0, 1))
        if len(target) >= 2 and draw(st.booleans()):  # merge two dims
            target = [target[0] * target[1]] + target[2:] if -1 not in target[:2] else target
    else:
        target = draw(st.lists(st.integers(-2, 8), max_size=4))
    return batch, tuple(target)


@SETTINGS
@given(_view_targets())
def test_view_shape_matches_torch_reshape(case: tuple[torch.Size, tuple[int, ...]]) -> None:
    batch, target = case
    base = torch.empty(batch)
    if _torch_raises(lambda: base.reshape(target)):
        with pytest.raises(ShapeError, match="reshape: "):
            _batch.view_shape(target, batch, "reshape")
    else:
        got = _batch.view_shape(target, batch, "reshape")
        assert type(got) is torch.Size
        assert got == base.reshape(target).shape


def test_view_shape_infers_minus_one() -> None:
    assert _batch.view_shape((-1,), torch.Size([2, 3]), "view") == torch.Size([6])
    assert _batch.view_shape((3, -1), torch.Size([2, 3]), "view") == torch.Size([3, 2])
    assert _batch.view_shape((-1, 4), torch.Size([0, 4]), "view") == torch.Size([0, 4])
    assert _batch.view_shape((), torch.Size([1, 1]), "view") == torch.Size([])


@pytest.mark.parametrize(
    ("target", "batch", "match"),
    [
        (
            (4,),
            [2, 3],
            r"view: shape \[4\] is invalid for a batch of 6 elements \(batch size \[2, 3\]\)",
        ),
        ((-1, -1), [2, 3], "only one dim may be -1"),
        ((-2, 3), [2, 3], "only one dim may be -1 and none below it"),
        ((0, -1), [0, 3], "invalid for a batch of 0 elements"),
        ((4, -1), [2, 3], "invalid for a batch of 6 elements"),
        ((), [2], "invalid for a batch of 2 elements"),
    ],
)
def test_view_shape_errors(target: tuple[int, ...], batch: list[int], match: str) -> None:
    with pytest.raises(ShapeError, match=match):
        _batch.view_shape(target, torch.Size(batch), "view")


# --- expand_shape ---------------------------------------------------------------------


@st.composite
def _expand_targets(draw: st.DrawFn) -> tuple[torch.Size, tuple[int, ...]]:
    batch = draw(batch_shapes(max_dims=3, max_side=3))
    lead = draw(st.lists(st.sampled_from([0, 1, 2, 3, -1]), max_size=2))
    if draw(st.integers(0, 5)) == 0:  # sometimes too few dims
        return batch, tuple(draw(st.lists(st.integers(-1, 3), max_size=max(len(batch) - 1, 0))))
    # (-2 is left out: torch accepts it when another dim is 0 and builds a negative shape)
    rest = [draw(st.sampled_from([size, size, -1, 1, 0, 3])) for size in batch]
    return batch, tuple(lead + rest)


@SETTINGS
@given(_expand_targets())
def test_expand_shape_matches_torch(case: tuple[torch.Size, tuple[int, ...]]) -> None:
    batch, target = case
    base = torch.empty(batch)
    # torch builds a negative size (instead of raising) when another dim is 0.
    if _torch_raises(lambda: base.expand(target)) or min(base.expand(target).shape, default=0) < 0:
        with pytest.raises(ShapeError, match="expand: "):
            _batch.expand_shape(target, batch)
    else:
        assert _batch.expand_shape(target, batch) == base.expand(target).shape


@pytest.mark.parametrize(
    ("target", "batch", "match"),
    [
        ((3,), [2, 3], r"fewer dims than the batch size \[2, 3\]"),
        ((2, 4), [2, 3], r"cannot expand batch size \[2, 3\] to \[2, 4\]: dim 1 has size 3"),
        ((-1, 2, 3), [2, 3], "-1 is only allowed for existing dims"),
        ((2, -2), [2, 1], "expand: "),
        ((0, 2, -2), [2, 1], "expand: "),
    ],
)
def test_expand_shape_errors(target: tuple[int, ...], batch: list[int], match: str) -> None:
    with pytest.raises(ShapeError, match=match):
        _batch.expand_shape(target, torch.Size(batch))


# --- squeeze_dims / permute_dims ------------------------------------------------------


@SETTINGS
@given(
    batch_shapes(min_dims=1, max_dims=4, max_side=2).flatmap(
        lambda b: st.tuples(st.just(b), st.none() | dims(len(b)))
    )
)
def test_squeeze_dims_matches_torch(case: tuple[torch.Size, int | None]) -> None:
    batch, dim = case
    removed = _batch.squeeze_dims(batch, dim)
    expected = torch.empty(batch).squeeze() if dim is None else torch.empty(batch).squeeze(dim)
    assert torch.Size(s for i, s in enumerate(batch) if i not in removed) == expected.shape
    assert all(batch[i] == 1 for i in removed)


def test_squeeze_dims_errors() -> None:
    with pytest.raises(DimError, match="squeeze: dim 2 is out of range for 2 batch dim"):
        _batch.squeeze_dims(torch.Size([1, 1]), 2)
    assert _batch.squeeze_dims(torch.Size([]), None) == ()


@SETTINGS
@given(
    batch_shapes(max_dims=4).flatmap(
        lambda b: st.tuples(
            st.just(b),
            st.permutations(range(len(b))),
            st.lists(st.booleans(), min_size=4, max_size=4),
        )
    )
)
def test_permute_dims_matches_torch(case: tuple[torch.Size, list[int], list[bool]]) -> None:
    batch, order, negate = case
    n = len(batch)
    dims_ = tuple(d - n if neg else d for d, neg in zip(order, negate))
    assert _batch.permute_dims(dims_, n) == tuple(order)
    assert torch.Size(batch[d] for d in order) == torch.empty(batch).permute(dims_).shape


def test_permute_dims_errors() -> None:
    # Fewer dims than batch dims permute the leading dims, as the peer.
    assert _batch.permute_dims((0,), 2) == (0, 1)
    assert _batch.permute_dims((), 2) == (0, 1)
    assert _batch.permute_dims((1, -3), 3) == (1, 0, 2)
    with pytest.raises(ShapeError, match=r"permute: \[1\] is not a permutation .*\[0\]"):
        _batch.permute_dims((1,), 2)
    with pytest.raises(ShapeError, match=r"expected at most 2 dims .* got \[0, 1, 2\]"):
        _batch.permute_dims((0, 1, 2), 2)
    with pytest.raises(ShapeError, match=r"permute: \[0, -2\] is not a permutation"):
        _batch.permute_dims((0, -2), 2)
    with pytest.raises(DimError, match="permute: dim 2 is out of range"):
        _batch.permute_dims((0, 2), 2)


# --- split_sizes / chunk_sizes --------------------------------------------------------


@SETTINGS
@given(st.integers(0, 12), st.integers(1, 14))
def test_split_sizes_int_matches_torch(dim_size: int, split_size: int) -> None:
    expected = [p.shape[0] for p in torch.empty(dim_size).split(split_size)]
    assert _batch.split_sizes(split_size, dim_size) == expected


@SETTINGS
@given(st.lists(st.integers(0, 4), min_size=1, max_size=5))
def test_split_sizes_list_matches_torch(sizes: list[int]) -> None:
    dim_size = sum(sizes)
    expected = [p.shape[0] for p in torch.empty(dim_size).split(sizes)]
    assert _batch.split_sizes(sizes, dim_size) == expected
    assert _batch.split_sizes(tuple(sizes), dim_size) == expected


def test_split_sizes_errors() -> None:
    with pytest.raises(ShapeError, match=r"split: sizes \[2, 2\] do not add up to the dim size 5"):
        _batch.split_sizes([2, 2], 5)
    with pytest.raises(ShapeError, match="do not add up"):
        _batch.split_sizes([6, -1], 5)
    with pytest.raises(ShapeError, match="split_size must be positive, got 0"):
        _batch.split_sizes(0, 5)
    with pytest.raises(ShapeError, match="split_size must be positive, got -2"):
        _batch.split_sizes(-2, 5)


@pytest.mark.parametrize("split_size", ["1", ["1", 2], 1.5, [1.0, 4], True])
def test_split_sizes_refuses_what_is_no_int_or_list_of_ints(split_size: Any) -> None:
    with pytest.raises(ArgumentError, match="must be int or list of ints") as info:
        _batch.split_sizes(split_size, 5)
    assert isinstance(info.value, TypeError)


def test_split_sizes_take_numpy_ints_and_refuse_an_empty_list() -> None:
    assert _batch.split_sizes(np.int64(2), 5) == [2, 2, 1]
    assert _batch.split_sizes([np.int64(2), 3], 5) == [2, 3]
    with pytest.raises(ShapeError, match="Insufficient number of elements in split_size"):
        _batch.split_sizes([], 5)
    with pytest.raises(ShapeError, match="expects split_size to sum exactly"):
        _batch.split_sizes([1, 1], 5)
    assert _batch.split_sizes([], 0) == []  # as torch: a dim of size 0 in no pieces


@SETTINGS
@given(st.integers(1, 12), st.integers(1, 14))
def test_chunk_sizes_matches_torch(dim_size: int, chunks: int) -> None:
    expected = [p.shape[0] for p in torch.empty(dim_size).chunk(chunks)]
    assert _batch.chunk_sizes(chunks, dim_size) == expected


@pytest.mark.parametrize("chunks", [1, 2, 5])
def test_chunk_sizes_of_an_empty_dim_match_torch(chunks: int) -> None:
    # torch.empty(0).chunk(5) gives 5 empty pieces.
    expected = [p.shape[0] for p in torch.empty(0).chunk(chunks)]
    assert _batch.chunk_sizes(chunks, 0) == expected


def test_chunk_sizes_errors() -> None:
    for bad in (0, -3):
        with pytest.raises(
            ShapeError, match=f"chunk: the number of chunks must be positive, got {bad}"
        ):
            _batch.chunk_sizes(bad, 4)


# --- index_dims_consumed / normalize_index --------------------------------------------


@pytest.mark.parametrize(
    ("item", "consumed"),
    [
        (None, 0),
        (Ellipsis, 0),
        (True, 0),
        (False, 0),
        (0, 1),
        (-1, 1),
        (slice(None), 1),
        ([0, 1], 1),
        (torch.tensor([0, 1]), 1),
        (torch.tensor(1), 1),
        (torch.tensor([[0, 1]]), 1),
        (torch.ones(3, dtype=torch.bool), 1),
        (torch.ones(3, 2, dtype=torch.bool), 2),
    ],
)
def test_index_dims_consumed(item: object, consumed: int) -> None:
    assert _batch.index_dims_consumed(item) == consumed
    # Cross-check with torch on a tensor that has exactly enough dims.
    base = torch.empty(3, 2, 4)
    extra = base[item] if item is not Ellipsis else base
    if item is not Ellipsis:
        assert base.ndim - consumed == extra.ndim - _added_dims(item, base)


def _added_dims(item: object, base: torch.Tensor) -> int:
    """How many dims an index item produces in the result (besides the ones it consumes)."""
    if item is None or isinstance(item, bool):
        return 1
    if isinstance(item, int):
        return 0
    if isinstance(item, slice):
        return 1
    tensor = torch.as_tensor(item)
    return 1 if tensor.dtype is torch.bool else tensor.ndim


def test_index_dims_consumed_zero_dim_bool_tensor_is_like_a_bool() -> None:
    # torch: a 0-d bool tensor index adds a dim and consumes none, like True.
    assert torch.empty(2, 3)[torch.tensor(True), 0, 0].shape == torch.Size([1])
    assert _batch.index_dims_consumed(torch.tensor(True)) == 0
    assert _batch.normalize_index((torch.tensor(True), 0, 0), 2)[1:] == (0, 0)


@SETTINGS
@given(
    batch_shapes(max_dims=3, max_side=3).flatmap(
        lambda b: st.tuples(st.just(b), basic_indices(b), feature_shapes())
    )
)
def test_normalize_index_addresses_only_batch_dims(
    case: tuple[torch.Size, tuple[object, ...], torch.Size],
) -> None:
    batch, index, features = case
    normalized = _batch.normalize_index(index, len(batch))
    assert Ellipsis not in normalized
    expected = torch.empty(batch)[index].shape + features
    assert torch.empty(batch + features)[normalized].shape == expected


def test_normalize_index_refuses_a_list_of_keys() -> None:
    for index, hint in (
        (["a", "b"], re.escape("use select('a', 'b')")),
        ([("a", "b"), "c"], re.escape("use select(('a', 'b'), 'c')")),
        ([0, "a"], "not entries by key$"),
    ):
        with pytest.raises(IndexTypeError, match=hint) as caught:
            _batch.normalize_index((index,), 1)
        assert isinstance(caught.value, TypeError) and str(index) in str(caught.value)
    # lists of ints, bools and int pairs are row indices, as torch reads them
    for rows in ([0, 1], [True, False], [(0, 1), (1, 0)], []):
        assert _batch.normalize_index((rows,), 2) == (rows,)


def test_normalize_index_expands_ellipsis() -> None:
    s = slice(None)
    assert _batch.normalize_index((Ellipsis, 0), 3) == (s, s, 0)
    assert _batch.normalize_index((0, Ellipsis), 3) == (0, s, s)
    assert _batch.normalize_index((None, Ellipsis, 0), 2) == (None, s, 0)
    assert _batch.normalize_index((Ellipsis,), 0) == ()
    assert _batch.normalize_index((0, Ellipsis, 1), 2) == (0, 1)
    index = (0, slice(1, 2))
    assert _batch.normalize_index(index, 3) is index


def test_normalize_index_errors() -> None:
    with pytest.raises(
        DimError, match=r"too many indices: .* indexes 3 dims but there are only 2 batch dims"
    ) as info:
        _batch.normalize_index((0, 0, 0), 2)
    assert isinstance(info.value, IndexError)
    assert "apply(" in str(info.value)
    with pytest.raises(DimError, match="indexes 2 dims but there are only 1"):
        _batch.normalize_index((Ellipsis, torch.ones(2, 2, dtype=torch.bool)), 1)
    with pytest.raises(DimError, match="only 0 batch dims"):
        _batch.normalize_index((slice(None),), 0)
    with pytest.raises(IndexError, match="single ellipsis"):
        _batch.normalize_index((Ellipsis, 0, Ellipsis), 3)
    # None and booleans consume nothing.
    assert _batch.normalize_index((None, True, 0), 1) == (None, True, 0)


def test_as_batch_size_accepts_integer_arrays_like_the_peer() -> None:
    assert _batch.as_batch_size(np.array([4, 3])) == torch.Size([4, 3])
    assert _batch.as_batch_size(torch.tensor([4, 3])) == torch.Size([4, 3])
    assert _batch.as_batch_size(torch.tensor(2)) == torch.Size([2])
    assert _batch.as_batch_size([np.int64(2), 3]) == torch.Size([2, 3])
    for bad in (np.array([1.5]), torch.tensor([True]), torch.tensor([[1]]), np.array([-1])):
        with pytest.raises(BatchSizeError, match="invalid batch_size"):
            _batch.as_batch_size(bad)


# --- tclass.utils.convert_ellipsis_to_idx, as the peer's -----------------------------------

_ELLIPSIS_CASES = [
    ((..., 0), [1, 2, 3]),
    (..., [2, 3]),
    (0, [2]),
    ((None, ..., 0), [2, 3]),
    ((0, ...), [2, 3]),
    ((True, ...), [2]),
    ((None, ...), []),
    ((0, 1, 2), [2, 3]),  # no ellipsis: returned as it is, even past the batch dims
]


def _convert_ellipsis_to_idx() -> Any:
    """The deprecated helper, looked up as code written for the peer does: the lookup
    warns (as the peer's), the calls do not."""
    with pytest.warns(DeprecationWarning, match="convert_ellipsis_to_idx"):
        from tclass.utils import convert_ellipsis_to_idx  # noqa: PLC0415
    return convert_ellipsis_to_idx


@pytest.mark.parametrize(("idx", "batch_size"), _ELLIPSIS_CASES)
def test_convert_ellipsis_to_idx(idx: Any, batch_size: list[int]) -> None:
    convert_ellipsis_to_idx = _convert_ellipsis_to_idx()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = convert_ellipsis_to_idx(idx, batch_size)
    assert Ellipsis not in (out if isinstance(out, tuple) else (out,))
    peer = pytest.importorskip("tensordict.utils")
    with pytest.warns(DeprecationWarning):
        assert out == peer.convert_ellipsis_to_idx(idx, batch_size)


@pytest.mark.parametrize("idx", [(..., ...), (0, 1, 2, ...)])
def test_convert_ellipsis_to_idx_errors(idx: Any) -> None:
    with pytest.raises(RuntimeError, match="ellipsis|indices"):
        _convert_ellipsis_to_idx()(idx, [2, 3])


# --- indexed_shape ---------------------------------------------------------------------


def test_indexed_shape_matches_torch_across_many_batch_sizes() -> None:
    # More batch sizes than the stand-ins kept: each answer is still torch's, and an
    # index torch refuses is refused the same way after the cache turned over.
    index = torch.tensor([0, -1, 1])
    for rows in range(1, 2 * _batch._STAND_IN_LIMIT + 2):
        batch = torch.Size([rows + 1, 2])
        assert _batch.indexed_shape(batch, index) == torch.empty(batch)[index].shape
        assert _batch.indexed_shape(batch, (slice(None, rows), 1)) == torch.Size([rows])
    assert len(_batch._STAND_INS) <= _batch._STAND_IN_LIMIT
    with pytest.raises(DimError, match="out of range|out of bounds"):
        _batch.indexed_shape(torch.Size([3]), torch.tensor([5]))
    with pytest.raises(DimError):
        _batch.indexed_shape(torch.Size([3]), 3)


def test_indexed_shape_under_a_fake_mode_makes_its_stand_in_there() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    batch = torch.Size([4, 5])
    _batch.indexed_shape(batch, 0)  # a real stand-in cached first
    with FakeTensorMode():
        assert _batch.indexed_shape(batch, slice(1, 3)) == torch.Size([2, 5])
        assert _batch.indexed_shape(batch, torch.tensor([0, 2])) == torch.Size([2, 5])


def test_indexed_shape_under_a_default_device_keeps_checking_the_range() -> None:
    batch = torch.Size([3, 701])  # a size no other test indexes
    with torch.device("meta"):  # a stand-in made here must not be the one kept
        assert _batch.indexed_shape(batch, torch.tensor([2])) == torch.Size([1, 701])
    with pytest.raises(DimError):
        _batch.indexed_shape(batch, torch.tensor([3]))


def test_interleave_repeats_of_a_non_integer_dtype_are_a_type_error() -> None:
    """A float (or bool) tensor of repeats is an ``ArgumentError`` (a ``TypeError``, as the
    peer's, which makes a ``torch.Size`` of the counts; program 15,000,579 of
    methods,index,shape,combine); one of two dims stays a ``ShapeError``."""
    for repeats in (torch.tensor([]), torch.tensor([1.0, 2.0, 0.0]), torch.tensor([True] * 3)):
        with pytest.raises(ArgumentError, match="repeats.long") as info:
            _batch.interleaved_length(repeats, 3, None)
        assert isinstance(info.value, TypeError)
    with pytest.raises(ShapeError, match="1-d integer tensor"):
        _batch.interleaved_length(torch.tensor([[1, 2, 0]]), 3, None)
    assert _batch.interleaved_length(torch.tensor([1, 2, 0]), 3, None) == 3
