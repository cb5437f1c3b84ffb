"""Dim names after indexing with the Python items torch accepts besides ints, slices,
lists and tensors: a ``range`` indexes as the list of its numbers (the dim keeps its
name), a ``bool`` as a 0-d mask (a new unnamed dim of size 1 or 0 where it stands), as
the peer names them. Unnamed collections indexed so already worked; named ones failed
with an ``IndexError`` inside the naming."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tclass import LazyStackedTensorDict, TensorClass, TensorDict


class Pair(TensorClass):
    a: torch.Tensor
    label: str = "p"


def _named() -> TensorDict:
    a = torch.arange(6.0).reshape(2, 3)
    return TensorDict({"a": a, "n": {"b": a + 10}}, [2, 3], names=["x", "y"])


CASES: list[tuple[Any, list[int], list[str | None]]] = [
    (range(2), [2, 3], ["x", "y"]),
    ((slice(None), range(1, 3)), [2, 2], ["x", "y"]),
    (True, [1, 2, 3], [None, "x", "y"]),
    (False, [0, 2, 3], [None, "x", "y"]),
    ((slice(None), True), [2, 1, 3], ["x", None, "y"]),
    ((True, 0), [1, 3], [None, "y"]),
    ((0, True), [1, 3], [None, "y"]),
    ((range(2), range(2)), [2], [None]),
    ((False, slice(None), None), [0, 2, 1, 3], [None, "x", None, "y"]),
]


@pytest.mark.parametrize(("index", "shape", "names"), CASES)
def test_a_range_or_bool_index_of_a_named_tensordict(
    index: Any, shape: list[int], names: list[str | None]
) -> None:
    td = _named()
    out = td[index]
    assert out.batch_size == torch.Size(shape)
    assert out.names == names
    assert out["n"].names == names
    assert torch.equal(out["a"], td["a"][index])


def test_a_range_index_reads_the_rows_it_lists() -> None:
    out = _named()[:, range(1, 3)]
    assert out["n", "b"].tolist() == [[11.0, 12.0], [14.0, 15.0]]


def test_a_record_indexed_by_range_and_bool_keeps_its_names() -> None:
    rec = Pair(a=torch.arange(6.0).reshape(2, 3), batch_size=[2, 3], names=["x", "y"])
    assert rec[range(1)].names == ["x", "y"]
    assert rec[True].names == [None, "x", "y"]
    assert rec[:, True].names == ["x", None, "y"]
    assert rec[True].label == "p"
    assert rec[True].a.tolist() == [[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]]


def test_a_named_lazy_stack_indexed_by_range_and_bool() -> None:
    members = [TensorDict({"a": torch.full((3,), float(i))}, [3], names=["y"]) for i in (0, 1)]
    stack = LazyStackedTensorDict.lazy_stack(members, 0)
    assert stack[range(2)].names == [None, "y"]
    assert stack[True].names == [None, None, "y"]
    assert stack[True]["a"].tolist() == [[[0.0] * 3, [1.0] * 3]]


def test_a_write_at_a_range_or_bool_index_reaches_the_source() -> None:
    td = _named()
    td[:, True] = 3.0
    assert td["a"].eq(3.0).all() and td["n", "b"].eq(3.0).all()
    assert td.names == ["x", "y"]
    td[:, range(1)] = 0.0
    assert td["a"][:, 0].tolist() == [0.0, 0.0]
