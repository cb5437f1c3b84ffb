"""Indexing the batch dims with first-class dims (``functorch.dim.dims()``), as tensordict
does: each dim bound to one leaves the batch size (its entries become ``functorch.dim``
tensors); a named collection keeps the names of the other dims (this failed inside the
naming, which read the dim object as a tensor index). A lazy stack's members are separate
tensors, so binding its stack dim is refused with a ``DimError`` (a ``ValueError``) that
names the way out (it failed with a bare ``max()`` error)."""

from __future__ import annotations

from typing import Any

import functorch.dim as ftdim
import pytest
import torch

from tclass import LazyStackedTensorDict, TensorDict
from tclass.errors import DimError


def _td() -> TensorDict:
    a = torch.arange(120.0).reshape(2, 3, 4, 5)
    return TensorDict({"a": a, "n": {"b": a + 1}}, [2, 3, 4, 5])


def test_bound_dims_leave_the_batch_size() -> None:
    td = _td()
    d0 = ftdim.dims(1)
    out = td[d0]
    assert out.batch_size == (3, 4, 5)
    d0, d1 = ftdim.dims(2)
    assert td[d0, d1].batch_size == (4, 5)
    d0 = ftdim.dims(1)
    assert td[:, d0].batch_size == (2, 4, 5)


@pytest.mark.parametrize(
    ("count", "leading", "names"),
    [(1, 0, ["x", "y", "z"]), (2, 0, ["y", "z"]), (3, 0, ["z"]), (1, 1, ["w", "y", "z"])],
)
def test_named_collection_keeps_the_other_names(count: int, leading: int, names: list[str]) -> None:
    td = _td()
    td.names = ["w", "x", "y", "z"]
    dims = ftdim.dims(count)
    index: tuple[Any, ...] = (slice(None),) * leading + (tuple(dims) if count > 1 else (dims,))
    out = td[index]
    assert out.names == names
    assert out["n"].names == names


def test_named_values_are_bound_tensors() -> None:
    td = _td()
    td.names = ["w", "x", "y", "z"]
    d0 = ftdim.dims(1)
    out = td[d0]
    # summing over the bound dim gives back the plain sum over dim 0
    assert torch.equal(out["a"].sum(d0), td["a"].sum(0))


def _stack(dim: int) -> LazyStackedTensorDict:
    members = [TensorDict({"a": torch.randn(4, 5)}, [4, 5]) for _ in range(3)]
    return LazyStackedTensorDict.lazy_stack(members, dim)


@pytest.mark.parametrize(
    ("dim", "count", "leading"), [(0, 1, 0), (0, 3, 0), (1, 2, 0), (1, 1, 1), (2, 3, 0)]
)
def test_lazy_stack_dim_is_refused(dim: int, count: int, leading: int) -> None:
    stack = _stack(dim)
    dims = ftdim.dims(count)
    index: tuple[Any, ...] = (slice(None),) * leading + (tuple(dims) if count > 1 else (dims,))
    with pytest.raises(DimError, match="contiguous") as info:
        stack[index]
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(("dim", "count", "size"), [(1, 1, (3, 5)), (2, 2, (3,)), (0, 0, ())])
def test_lazy_other_dims_are_bound_member_by_member(
    dim: int, count: int, size: tuple[int, ...]
) -> None:
    stack = _stack(dim)
    if count == 0:  # the stack dim kept by a slice, the next dim bound
        out = stack[:, ftdim.dims(1)]
        assert out.batch_size == (3, 5)
        return
    dims = ftdim.dims(count)
    out = stack[tuple(dims) if count > 1 else dims]
    assert isinstance(out, LazyStackedTensorDict)
    assert out.batch_size == size
