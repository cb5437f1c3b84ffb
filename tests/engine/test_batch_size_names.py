"""Dim names when ``batch_size`` is assigned: a named TensorDict given more batch dims
names the new ones ``None`` and its nested collections, which share those dims, take
the parent's names there, as the peer's (before, a nested collection kept a name of its
own under the parent's unnamed dim: ``['x', 'y', 'z']`` under ``['x', 'y', None]``).
Shrinking leaves the nested names alone, in both."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorClass, TensorDict


def _nested(names: list[str | None]) -> TensorDict:
    return TensorDict({"b": torch.arange(24.0).reshape(2, 3, 4)}, [2, 3, 4], names=names)


@pytest.mark.parametrize(
    ("parent", "expected"),
    [
        (["x", "y"], ["x", "y", None]),
        ([None, "y"], [None, "y", None]),
    ],
)
def test_growing_a_named_batch_names_the_nested_dims_as_the_parent(
    parent: list[str | None], expected: list[str | None]
) -> None:
    given = _nested([None, None, "z"])
    td = TensorDict({"n": given, "a": torch.zeros(2, 3, 4)}, [2, 3], names=parent)
    td.batch_size = [2, 3, 4]
    assert td.names == expected
    assert td["n"].names == expected
    assert given.names == [None, None, "z"]  # stored as a named copy
    assert td["n", "b"][1, 2, 3] == 23.0


def test_an_unnamed_parent_leaves_the_nested_names() -> None:
    td = TensorDict({"n": _nested([None, None, "z"]), "a": torch.zeros(2, 3, 4)}, [2, 3])
    td.batch_size = [2, 3, 4]
    assert td.names == [None, None, None]
    assert td["n"].names == [None, None, "z"]


def test_shrinking_leaves_the_nested_names() -> None:
    td = TensorDict({"n": _nested([None, None, "z"]), "a": torch.zeros(2, 3, 4)}, [2, 3])
    td.names = ["x", "y"]
    td.batch_size = [2]
    assert td.names == ["x"]
    assert td["n"].names == ["x", "y", "z"]


def test_a_grown_batch_can_then_be_named_whole() -> None:
    td = TensorDict({"n": _nested([None, None, "z"]), "a": torch.zeros(2, 3, 4)}, [2, 3])
    td.names = ["x", "y"]
    td.batch_size = [2, 3, 4]
    td.names = ["x", "y", "w"]
    assert td["n"].names == ["x", "y", "w"]


class Holder(TensorClass):
    a: torch.Tensor
    inner: TensorDict | None = None


def test_a_record_grown_names_its_nested_collection_so_too() -> None:
    rec = Holder(
        a=torch.zeros(2, 3, 4), inner=_nested(["x", None, "z"]), batch_size=[2], names=["x"]
    )
    rec.batch_size = [2, 3, 4]
    assert rec.names == ["x", None, None]
    assert rec.inner.names == ["x", None, None]


@pytest.mark.parametrize("cleared", [None, [None]])
def test_unnaming_the_parent_keeps_the_nested_dims_own_names(
    cleared: list[str | None] | None,
) -> None:
    """``td.names = None`` unnames the parent's dims only: a nested collection keeps the
    names of its own further dims, as the peer's (before, they were all cleared)."""
    td = TensorDict({"n": _nested(["x", "y", "z"])}, [2], names=["x"])
    td.names = cleared
    assert td.names == [None]
    assert td["n"].names == [None, "y", "z"]


def test_naming_a_batch_of_no_dims_leaves_the_nested_names() -> None:
    """``names = []`` of a collection with no batch dims (``TensorDict.from_tuple``'s
    result) touches no nested name (og33j, program 17,103,953 of the fuzzer)."""
    td = TensorDict({"n": _nested(["x", "y", "z"])}, [])
    td.names = []
    assert td.names == []
    assert td["n"].names == ["x", "y", "z"]
    td["n"].names = None
    assert td["n"].names == [None, None, None]
