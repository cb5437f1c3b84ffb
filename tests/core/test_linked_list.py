"""Tests for tclass._core._linked_list: what ``td[key]`` gives for a ``NonTensorStack``."""

from __future__ import annotations

from tclass import TensorDict
from tclass._core._linked_list import LinkedList


def test_tolist_gives_plain_lists_of_the_current_values() -> None:
    td = TensorDict(batch_size=[3])
    td["names"] = ["a", "b", "c"]
    values = td["names"]
    assert isinstance(values, LinkedList)
    values[0] = "z"  # written through to the stack
    plain = values.tolist()
    assert plain == ["z", "b", "c"] and type(plain) is list
    assert td.get("names").tolist() == ["z", "b", "c"]
    plain[1] = "q"  # a copy: the stack keeps its values
    assert td["names"] == ["z", "b", "c"]


def test_tolist_of_nested_rows() -> None:
    td = TensorDict(batch_size=[2, 2])
    td["grid"] = [["a", "b"], ["c", "d"]]
    rows = td["grid"].tolist()
    assert rows == [["a", "b"], ["c", "d"]]
    assert all(type(row) is list for row in rows)
    assert LinkedList().tolist() == []
