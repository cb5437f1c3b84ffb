"""Entry queries and writes of lazy stacks and of records that keep their fields in one,
as the peer's (fz27c): ``get_nestedtensor`` checks the stack dim before the key,
``data_ptr`` of a record over a lazy stack lists its members, ``set`` of one Python value
(``NonTensorData``) spans the stack's batch as a TensorDict's does, and ``update_at_``
of a value torch does not broadcast to the elements is the ``ShapeError`` a TensorDict's
raises."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, NonTensorData, TensorDict, errors


@tclass.tensorclass
class _Point:
    x: torch.Tensor
    label: str


def _stack(dim: int) -> LazyStackedTensorDict[Any]:
    td = TensorDict(v=torch.arange(6.0).reshape(2, 3), batch_size=[2])
    return tclass.lazy_stack([td, td.clone()], dim)


def test_get_nestedtensor_checks_the_stack_dim_first() -> None:
    stack = _stack(1)
    for key in ("zz", "v"):  # a missing key too: the stack dim is checked first, as the peer
        with pytest.raises(errors.ShapeError, match="needs stack_dim 0") as raised:
            stack.get_nestedtensor(key)
        assert isinstance(raised.value, RuntimeError)
    nested = _stack(0).get_nestedtensor("v", layout=torch.jagged)
    assert [t.tolist() for t in nested.unbind()] == [[[0, 1, 2], [3, 4, 5]]] * 2
    with pytest.raises(errors.KeyNotFoundError):
        _stack(0).get_nestedtensor("zz")


def test_data_ptr_of_a_record_over_a_lazy_stack_lists_the_members() -> None:
    a = _Point(x=torch.zeros(2, 3), label="a", batch_size=[2])
    b = _Point(x=torch.ones(2, 3), label="b", batch_size=[2])
    stacked = tclass.lazy_stack([a, b], 1).permute(1, 0)  # a record over a lazy stack
    assert isinstance(stacked, _Point)
    assert stacked._tensordict._is_lazy
    ptrs = stacked.data_ptr()
    assert list(ptrs.keys(True, True)) == [("0", "x"), ("1", "x")]
    assert ptrs["0", "x"].item() == a.x.data_ptr()
    assert ptrs["1", "x"].item() == b.x.data_ptr()
    holder = TensorDict(r=stacked, batch_size=[2])
    assert list(holder.data_ptr(storage=True).keys(True, True)) == [
        ("r", "0", "x"),
        ("r", "1", "x"),
    ]


@pytest.mark.parametrize("value_batch", [[], [2], [5]])
def test_set_of_one_value_spans_the_stack(value_batch: list[int]) -> None:
    stack = _stack(1)  # batch [2, 2]
    stack.set("k", NonTensorData("q", batch_size=value_batch))
    assert stack.get("k").batch_size == torch.Size([2, 2])
    assert stack.get_non_tensor("k") == [["q", "q"], ["q", "q"]]
    assert [m.get_non_tensor("k") for m in stack.tensordicts] == ["q", "q"]
    nested = tclass.lazy_stack([TensorDict(n=TensorDict(batch_size=[3]), batch_size=[3])] * 2)
    nested.set(("n", "k"), NonTensorData("r"))
    assert nested.get(("n", "k")).batch_size == torch.Size([2, 3])
    with pytest.raises(errors.BatchMismatchError):  # a stack of values keeps its own size
        stack.set("s", tclass.NonTensorStack("q", "r", "s"))


@tclass.tensorclass
class _Outer:
    inner: _Point
    name: str


def test_set_non_tensor_of_a_record_stack_checks_the_field() -> None:
    a = _Point(x=torch.zeros(2, 3), label="a", batch_size=[2])
    outer = _Outer(inner=a, name="o", batch_size=[2])
    stacked = tclass.lazy_stack([outer, outer.clone()])
    stacked.set_non_tensor(("inner", "label"), "q")
    assert stacked.get_non_tensor(("inner", "label")) == [["q", "q"], ["q", "q"]]
    # a tensor field refuses it, as one record's does (it was a batch size mismatch)
    for record in (outer, stacked):
        with pytest.raises(errors.FieldTypeError, match="_Point.x is annotated Tensor"):
            record.set_non_tensor(("inner", "x"), "q")


def test_update_at_not_broadcast_is_a_shape_error() -> None:
    td = TensorDict(x=torch.zeros(2, 1, 3), batch_size=[2, 1])
    stack = tclass.lazy_stack([td, td.clone()], 1)  # [2, 2, 1]
    source = stack[..., None].apply(torch.zeros_like)
    with pytest.raises(errors.ShapeError, match="cannot write a value of shape") as raised:
        stack.update_at_(source, (..., None))
    assert isinstance(raised.value, RuntimeError)  # torch's and the peer's class
    dense = stack.contiguous()
    with pytest.raises(errors.ShapeError, match="cannot write a value of shape"):
        dense.update_at_(dense[..., None].apply(torch.zeros_like), (..., None))
    stack.update_at_(stack[:1].apply(torch.ones_like), (slice(0, 1),))  # a fitting one
    assert stack["x"][0].eq(1).all() and stack["x"][1].eq(0).all()
