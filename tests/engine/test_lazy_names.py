"""Tests for the name of a lazy stack's stack dim (tclass._engine._lazy): which results keep
it, as the peer's do. Found by the differential fuzzer: pointwise math, ``to``, slices,
``expand``, the dense stack and the nested records read from a stack of records dropped it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorClass, TensorDict


class Inner(TensorClass):
    y: torch.Tensor


class Outer(TensorClass):
    x: torch.Tensor
    inner: Inner


def _named_stack() -> Any:
    members = [
        TensorDict({"a": torch.arange(8.0).reshape(4, 2) - seed}, batch_size=[4])
        for seed in range(2)
    ]
    return tclass.lazy_stack(members, 0).rename("i", "l")


KEEP_BOTH: dict[str, Callable[[Any], Any]] = {
    "abs": lambda x: abs(x),
    "add": lambda x: x + 1,
    "clamp": lambda x: x.clamp(min=0),
    "maximum": lambda x: torch.maximum(x, x),
    "zeros_like": lambda x: torch.zeros_like(x),
    "masked_fill": lambda x: x.masked_fill(torch.ones(2, 4, dtype=torch.bool), 0),
    "to": lambda x: x.to(torch.float64),
    "float": lambda x: x.float(),
    "slice along the stack dim": lambda x: x[1:],
    "slice along a member dim": lambda x: x[:, 1:],
    "contiguous": lambda x: x.contiguous(),
    "flip": lambda x: x.flip(1),
    "roll": lambda x: x.roll(1, 1),
    "amax along a member dim": lambda x: x.amax(1, keepdim=True),
}


@pytest.mark.parametrize("op", list(KEEP_BOTH))
def test_results_keep_the_stack_dim_name(op: str) -> None:
    x = _named_stack()
    out = KEEP_BOTH[op](x)
    assert out.names == ["i", "l"]
    if isinstance(out, tclass.LazyStackedTensorDict):
        assert out.stack_dim_name == "i"


def test_reductions_and_expand_keep_the_stack_dim_name() -> None:
    x = _named_stack()
    assert x.sum(1).names == ["i"]
    assert x.expand(3, 2, 4).names == [None, "i", "l"]


def test_a_nested_record_of_a_stack_of_records_is_named_as_the_stack() -> None:
    rec = Outer(
        x=torch.zeros(2, 3), inner=Inner(y=torch.ones(2, 1), batch_size=[2]), batch_size=[2]
    )
    x = tclass.LazyStackedTensorDict(rec, rec.apply(torch.zeros_like), stack_dim=1)
    x.names = ["l", "k"]
    assert x["inner"].names == ["l", "k"]
    empty = Outer(
        x=torch.zeros(0, 3), inner=Inner(y=torch.ones(0, 1), batch_size=[0]), batch_size=[0]
    )
    y = tclass.LazyStackedTensorDict(empty, empty.clone(), stack_dim=-2)
    y.names = ["l", None]
    assert y["inner"].names == ["l", None]


def test_an_unnamed_stack_stays_unnamed() -> None:
    x = tclass.lazy_stack([TensorDict({"a": torch.zeros(4)}, batch_size=[4])] * 2, 0)
    assert (x + 1).names == [None, None] and x.contiguous().names == [None, None]


KEEP_PER_DIM: dict[str, Callable[[Any], Any]] = {
    "tile": lambda x: x.tile((2, 1)),
    "tile with fewer counts": lambda x: x.tile((3,)),
    "apply with a batch size": lambda x: x.apply(lambda v: v[:, :1], batch_size=[2, 1]),
    "named_apply with a batch size": lambda x: x.named_apply(
        lambda key, v: v[:, :3], batch_size=[2, 3]
    ),
}


@pytest.mark.parametrize("op", list(KEEP_PER_DIM))
def test_results_of_as_many_dims_keep_the_names(op: str) -> None:
    # The peer's lazy stack keeps its names through tile and apply(batch_size=...)
    # whenever the result has as many batch dims (its dense TensorDict drops them).
    out = KEEP_PER_DIM[op](_named_stack())
    assert isinstance(out, TensorDict)
    assert out.names == ["i", "l"]


def test_results_of_other_dims_are_unnamed() -> None:
    x = _named_stack()
    assert x.tile((1, 2, 1)).names == [None, None, None]
    assert x.apply(lambda v: v.sum(1), batch_size=[2]).names == [None]
    assert x.apply(lambda v: v, batch_size=[2, 4], names=["p", "q"]).names == ["p", "q"]
    dense = x.contiguous()
    assert dense.tile((2, 1)).names == [None, None]  # as the peer's TensorDict


def test_the_stack_dim_name_of_members_without_dims_is_kept() -> None:
    """A stack of 0-d members names its one dim itself; dense copies keep that name as
    they keep any other (the peer drops it)."""
    stack = tclass.lazy_stack([tclass.TensorDict({"a": torch.zeros(2)}, [])] * 3)
    stack.names = ["i"]
    assert stack.to_tensordict().names == ["i"] and stack.contiguous().names == ["i"]
    assert stack.apply(torch.zeros_like, batch_size=[3]).names == ["i"]


_MASK = torch.tensor([[True, False], [False, True], [True, True]])
INDICES: list[Any] = [
    (None, _MASK),
    (_MASK,),
    (None, ..., torch.tensor([0])),
    (..., torch.tensor([0])),
    (torch.tensor([0]),),
    (slice(2, 0),),
    ([],),
    (..., slice(2, 0)),
    (torch.tensor([False, False, False]),),
    (slice(None), torch.tensor([False, False])),
    (slice(None), torch.tensor([1, 1, 0])),
    (torch.tensor([2, 0]), slice(1, 2)),
    (torch.tensor([[0, 1]]), torch.tensor([1])),
]


@pytest.mark.parametrize("stack_dim", [0, 1])
@pytest.mark.parametrize("index", INDICES)
def test_an_index_names_the_result_as_the_dense_collection(stack_dim: int, index: Any) -> None:
    """Tensor, list and empty indices name the result's dims as the same index of the
    dense collection does (the stack dim's name kept where a 1-d index or slice keeps
    the dim, dropped under a mask of several dims), as the peer names both; the stack
    and its members keep their names."""
    shape = [3, 2]
    members = [
        TensorDict({"a": torch.zeros(shape[1 - stack_dim], 4)}, [shape[1 - stack_dim]])
        for _ in range(shape[stack_dim])
    ]
    lazy = tclass.lazy_stack(members, stack_dim).rename("j", "k")
    dense = lazy.to_tensordict()
    try:
        expected = dense[index]
    except IndexError:
        with pytest.raises(IndexError):
            lazy[index]
        return
    result = lazy[index]
    assert result.batch_size == expected.batch_size
    assert result.names == expected.names
    assert lazy.names == ["j", "k"]
    assert all(member.names == [("k", "j")[stack_dim]] for member in lazy.tensordicts)


def test_the_one_name_of_a_stack_of_members_without_batch_dims_reaches_nested_ones() -> None:
    # The peer's stack answers ["j"] too, but its to_tensordict() drops it ([None], and
    # [None] for its nested collections: its lazy stack has names only where its members'
    # dims have): the name is kept, as for a stack of members with batch dims (in both).
    member = TensorDict({"a": torch.zeros(2), "m": {"d": torch.zeros(3)}}, [])
    x = tclass.lazy_stack([member, member.clone()], 0).apply(lambda v: v * 0, names=["j"])
    assert x.names == ["j"]
    dense = x.to_tensordict()
    assert dense.names == ["j"] and dense["m"].names == ["j"]
    assert x.contiguous()["m"].names == ["j"]


@pytest.mark.parametrize("shape", [[2], [3, 2]])
def test_broadcast_to_drops_the_stack_dim_name_in_nested_collections_too(shape: list[int]) -> None:
    """``broadcast_to`` names no dim, as the peer's: a lazy stack's stack dim name, which
    its nested collections share, is dropped there too (fz42b: they kept it)."""
    member = TensorDict({"n": {"d": torch.zeros(3)}, "d": torch.zeros(1)}, [])
    lazy = tclass.lazy_stack([member, member.clone()], 0, stack_dim_name="s")
    assert lazy["n"].names == ["s"]
    out = lazy.broadcast_to(shape)
    assert out.batch_size == torch.Size(shape)
    assert out.names == [None] * len(shape) and out["n"].names == [None] * len(shape)
    assert lazy.expand(*shape)["n"].names[-1] == "s"  # expand keeps it, as the peer's
