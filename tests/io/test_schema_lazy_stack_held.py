"""A lazy stack of records whose member holds a tensor in a value field (an array given to
a ``list`` field, which the constructor makes a tensor as the peer does; an op's result: a
``str`` field compared into a bool tensor) loads back, from a folder or an archive, as a
single record does: the stack's schema, which its members share, records that the field
held a tensor (before, the members were checked without it: a ``SchemaMismatchError``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tclass import errors, lazy_stack, load_memmap, tensorclass


@tensorclass
class Row:
    x: torch.Tensor
    tags: list
    name: str


def _save(record: Any, path: Path, form: str) -> Any:
    if form == "archive":
        record.save(path / "r.tdz")
        return Row.load(path / "r.tdz")
    record.memmap(path / "r")
    return Row.load_memmap(path / "r")


@pytest.mark.parametrize("form", ["folder", "archive"])
def test_a_tensor_in_a_list_field_of_a_member(tmp_path: Path, form: str) -> None:
    a = Row(x=torch.zeros(2), tags=np.array([1, 2]), name="a", batch_size=[2])
    b = Row(x=torch.ones(2), tags=[3, 4], name="b", batch_size=[2])
    assert isinstance(a.tags, torch.Tensor)
    loaded = _save(lazy_stack([a, b]), tmp_path, form)
    assert torch.equal(loaded[0].tags, torch.tensor([1, 2])) and loaded[1].tags == [3, 4]
    assert (loaded[0].name, loaded[1].name) == ("a", "b")


def test_records_compared_then_stacked(tmp_path: Path) -> None:
    a = Row(x=torch.zeros(2), tags=[1], name="a", batch_size=[2])
    b = Row(x=torch.ones(2), tags=[1], name="b", batch_size=[2])
    stacked = lazy_stack([a != b, a == b])  # name: a bool tensor in a str field
    loaded = _save(stacked, tmp_path, "folder")
    assert torch.equal(loaded[0].name, torch.tensor([True, True]))
    assert torch.equal(loaded[1].name, torch.tensor([False, False]))
    assert type(load_memmap(tmp_path / "r")) is Row  # the class from the folder


def test_a_tensor_put_in_a_member_by_hand_is_still_a_difference(tmp_path: Path) -> None:
    """The stack's schema says which fields held a tensor: a member that holds one where
    the schema says none did differs from the class."""
    a = Row(x=torch.zeros(2), tags=[1], name="a", batch_size=[2])
    lazy_stack([a, a.clone()]).memmap(tmp_path / "r")
    torch.zeros(2).numpy().tofile(tmp_path / "r" / "_tensordict" / "1" / "name.memmap")
    meta = tmp_path / "r" / "_tensordict" / "1" / "meta.json"
    text = meta.read_text().replace(
        '"shape": [2], "device": "cpu", "_type"',
        '"name": {"device": "cpu", "shape": [2], "dtype": "torch.float32", "is_nested": false}, '
        '"shape": [2], "device": "cpu", "_type"',
    )
    assert text != meta.read_text()
    meta.write_text(text)
    with pytest.raises(errors.SchemaMismatchError, match="Row.name"):
        Row.load_memmap(tmp_path / "r")
