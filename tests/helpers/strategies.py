"""Hypothesis strategies (and a few checking helpers) shared by the tclass test files.

Shapes are kept small (at most 3 batch dims of size <= 4, 2 feature dims of size <= 3)
so that every example builds in microseconds. Leaf values are distinct within and
across leaves, so a permuted, transposed or misplaced element changes the comparison.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tclass import NonTensorData, NonTensorStack, TensorDict

__all__ = [
    "DTYPES",
    "SETTINGS",
    "assert_leafwise",
    "assert_same_tree",
    "basic_indices",
    "batch_shapes",
    "bad_dims",
    "dims",
    "equal",
    "feature_shapes",
    "lazy_members",
    "leaf_items",
    "make_values",
    "nested_items",
    "same_storage",
    "tensordicts",
]

# One decorator for every property test: modest, deterministic in time.
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DTYPES = (torch.float32, torch.int64, torch.bool)

_counter = itertools.count()


# --- shapes and dims ------------------------------------------------------------------


def batch_shapes(
    min_dims: int = 0, max_dims: int = 3, min_side: int = 0, max_side: int = 4
) -> st.SearchStrategy[torch.Size]:
    """Batch sizes as ``torch.Size``; sides of 1 are common (squeeze, expand, broadcast)."""
    side = (
        st.one_of(st.just(1), st.integers(min_side, max_side))
        if min_side <= 1
        else (st.integers(min_side, max_side))
    )
    return st.lists(side, min_size=min_dims, max_size=max_dims).map(torch.Size)


def feature_shapes(max_dims: int = 2, max_side: int = 3) -> st.SearchStrategy[torch.Size]:
    """Per-leaf feature dims (the dims after the batch dims); never size 0."""
    return st.lists(st.integers(1, max_side), max_size=max_dims).map(torch.Size)


def dims(ndim: int, *, inclusive: bool = False) -> st.SearchStrategy[int]:
    """A valid dim for ``ndim`` dims, negative ones included (``inclusive``: one more)."""
    bound = ndim + 1 if inclusive else ndim
    assert bound > 0, "no valid dim"
    return st.integers(-bound, bound - 1)


def bad_dims(ndim: int, *, inclusive: bool = False) -> st.SearchStrategy[int]:
    """A dim just outside the valid range, on either side."""
    bound = ndim + 1 if inclusive else ndim
    return st.one_of(st.integers(-bound - 4, -bound - 1), st.integers(bound, bound + 4))


@st.composite
def basic_indices(draw: st.DrawFn, shape: Sequence[int]) -> tuple[Any, ...]:
    """A tuple index over ``shape`` of ints, positive-step slices, ``None`` and at most one
    ``...``, that never addresses more dims than ``shape`` has (torch semantics)."""
    items: list[Any] = []
    use_ellipsis = draw(st.booleans())
    indexed = draw(st.integers(0, len(shape)))
    for size in shape[:indexed]:
        kinds = ["slice"] + (["int"] if size else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
        else:
            start = draw(st.none() | st.integers(-size - 1, size + 1))
            stop = draw(st.none() | st.integers(-size - 1, size + 1))
            step = draw(st.none() | st.integers(1, 3))
            items.append(slice(start, stop, step))
        if draw(st.integers(0, 4)) == 0:
            items.append(None)
    if use_ellipsis:
        position = draw(st.integers(0, len(items)))
        items.insert(position, Ellipsis)
        # Moving indexed items after the Ellipsis keeps them valid only if they are
        # slices/None; ints were drawn for specific dims, so swap them for slices.
        items = [
            slice(None) if (i > position and isinstance(item, int)) else item
            for i, item in enumerate(items)
        ]
    return tuple(items)


# --- values and TensorDicts -----------------------------------------------------------


def make_values(shape: Sequence[int], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Distinct values (distinct across calls too, for float and int leaves)."""
    numel = math.prod(shape)
    offset = next(_counter) * 1000
    base = torch.arange(offset, offset + numel, dtype=torch.int64).reshape(tuple(shape))
    if dtype is torch.bool:
        return (base % 3) == 0
    return base.to(dtype)


@st.composite
def _leaves(
    draw: st.DrawFn, batch_size: torch.Size, prefix: str, min_leaves: int, max_leaves: int
) -> dict[str, torch.Tensor]:
    count = draw(st.integers(min_leaves, max_leaves))
    out = {}
    for i in range(count):
        features = draw(feature_shapes())
        dtype = draw(st.sampled_from(DTYPES))
        out[f"{prefix}{i}"] = make_values(batch_size + features, dtype)
    return out


@st.composite
def tensordicts(
    draw: st.DrawFn,
    batch_size: Sequence[int] | None = None,
    *,
    min_dims: int = 0,
    max_dims: int = 3,
    min_side: int = 0,
    max_side: int = 4,
    nested: bool | None = None,
    max_extra_dims: int = 2,
    min_leaves: int = 1,
    max_leaves: int = 3,
) -> TensorDict:
    """A TensorDict of float/int/bool leaves with random feature dims and, if ``nested``
    (random when None), a nested TensorDict under ``"n"`` that has up to
    ``max_extra_dims`` more batch dims than its parent, itself maybe holding a second
    level ``("n", "m")`` with yet more batch dims."""
    size = (
        draw(batch_shapes(min_dims, max_dims, min_side, max_side))
        if batch_size is None
        else torch.Size(batch_size)
    )
    source: dict[str, Any] = draw(_leaves(size, "k", min_leaves, max_leaves))
    if nested is None:
        nested = draw(st.booleans())
    if nested:
        extra = torch.Size(draw(st.lists(st.integers(1, 3), max_size=max_extra_dims)))
        inner_size = size + extra
        inner: dict[str, Any] = draw(_leaves(inner_size, "i", 1, 2))
        if draw(st.booleans()):
            deeper = inner_size + torch.Size(draw(st.lists(st.integers(1, 2), max_size=1)))
            inner["m"] = TensorDict(draw(_leaves(deeper, "j", 1, 1)), deeper)
        source["n"] = TensorDict(inner, inner_size)
    return TensorDict(source, size)


# --- checking helpers -----------------------------------------------------------------


def _as_path(key: str | tuple[str, ...]) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


def leaf_items(td: Any) -> list[tuple[tuple[str, ...], torch.Tensor]]:
    """Every tensor of ``td``, with its full key as a tuple."""
    return [(_as_path(k), v) for k, v in td.items(include_nested=True, leaves_only=True)]


def nested_items(td: Any) -> list[tuple[tuple[str, ...], Any]]:
    """Every nested collection of ``td``, with its full key as a tuple."""
    return [
        (_as_path(k), v)
        for k, v in td.items(include_nested=True)
        if not isinstance(v, torch.Tensor)
    ]


def same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors are backed by the same memory."""
    return bool(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())


def equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape, dtype and values, NaN equal to NaN (math ops make NaNs)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return torch.equal(a, b)


@st.composite
def lazy_members(
    draw: st.DrawFn, *, max_members: int = 3, nested: bool | None = None
) -> tuple[list[TensorDict], int]:
    """Members for a lazy stack (same keys and batch size, feature shapes that differ
    from member to member) and a stack dim for them."""
    size = draw(batch_shapes(0, 2, 1, 3))
    count = draw(st.integers(1, max_members))
    kinds = draw(st.lists(st.sampled_from(DTYPES), min_size=1, max_size=3))
    with_nested = draw(st.booleans()) if nested is None else nested
    members = []
    for _ in range(count):
        leaves: dict[str, Any] = {
            f"k{i}": make_values(size + draw(feature_shapes()), dtype)
            for i, dtype in enumerate(kinds)
        }
        if with_nested:
            leaves["n"] = TensorDict({"x": make_values(size + draw(feature_shapes()))}, size)
        members.append(TensorDict(leaves, size))
    dim = draw(st.integers(0, len(size)))
    return members, dim


def assert_same_tree(mine: Any, other: Any) -> None:
    """``mine`` and ``other`` alike: the same class, batch size, device, names and lock,
    the same keys at every depth in the same order, equal tensors (by :func:`equal`)."""
    assert type(mine) is type(other)
    assert mine.batch_size == other.batch_size and mine.device == other.device
    assert mine.names == other.names and mine.is_locked == other.is_locked
    assert list(mine.keys(True)) == list(other.keys(True))
    mine_leaves, other_leaves = leaf_items(mine), leaf_items(other)
    assert [k for k, _ in mine_leaves] == [k for k, _ in other_leaves]
    assert all(equal(a, b) for (_, a), (_, b) in zip(mine_leaves, other_leaves))


def assert_leafwise(
    result: Any,
    source: Any,
    by_hand: Callable[[torch.Tensor], torch.Tensor],
    batch_size: Sequence[int],
    *,
    view: bool | None = None,
) -> None:
    """``result`` is ``source`` with ``by_hand`` applied to every leaf over the root batch
    dims: same class and keys, batch size ``batch_size``, nested collections keeping
    their extra batch dims, equal leaves. ``view=True``: every leaf shares storage with
    the source leaf and has the strides torch's op gives; ``False``: none shares."""
    nb = source.batch_dims
    assert type(result) is type(source)
    assert result.batch_size == torch.Size(batch_size)
    assert set(result.keys(include_nested=True)) == set(source.keys(include_nested=True))
    for path, sub in nested_items(source):
        got = result.get(path)
        assert type(got) is type(sub)
        assert got.batch_size == torch.Size(batch_size) + sub.batch_size[nb:], path
    for path, leaf in leaf_items(source):
        expected = by_hand(leaf)
        got = result.get(path)
        assert isinstance(got, torch.Tensor), path
        assert got.shape == expected.shape, (path, got.shape, expected.shape)
        assert got.dtype == expected.dtype, path
        assert equal(got, expected), path
        if view is True:
            assert same_storage(got, leaf), path
            if got.numel() > 1:
                assert got.stride() == expected.stride(), path
        elif view is False and leaf.numel():
            assert not same_storage(got, leaf), path


def python_value(node: Any) -> Any:
    """A Python value as a collection holds it (tclass may give the value's node where
    the peer gives the value): the value, or the list of per-row values."""
    if isinstance(node, NonTensorData):
        return node.data
    if isinstance(node, NonTensorStack):
        return node.tolist()
    return node
