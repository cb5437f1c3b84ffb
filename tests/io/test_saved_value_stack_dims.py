"""A dense stack of records (or TensorDicts) holding Python values keeps, once saved and
loaded, one value per member: ``torch.stack([a, b]).memmap(p)``, loaded, reads
``loaded[1].label == "b"`` as the stack in memory does, where the values read one per
element (``["b", "b"]``) before: the stack dims of a ``NonTensorStack`` are saved in
tclass's marker of its ``meta.json``, which the peer does not read (its own load gives one
value per element, as it saves no stack dim)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tclass import TensorDict, errors, lazy_stack, tensorclass


@tensorclass
class Labelled:
    x: torch.Tensor
    label: str
    count: int


def _pair() -> object:
    a = Labelled(x=torch.zeros(2), label="a", count=1, batch_size=[2])
    b = Labelled(x=torch.ones(2), label="b", count=2, batch_size=[2])
    return torch.stack([a, b])


@pytest.mark.parametrize("where", ["folder", "archive"])
def test_a_dense_stack_of_records_keeps_one_value_per_member(tmp_path: Path, where: str) -> None:
    stacked = _pair()
    if where == "folder":
        stacked.memmap(tmp_path / "s")  # type: ignore[attr-defined]
        loaded = Labelled.load_memmap(tmp_path / "s")
    else:
        stacked.save(tmp_path / "s.tdz")  # type: ignore[attr-defined]
        loaded = Labelled.load(tmp_path / "s.tdz")
    assert loaded[1].label == "b" and loaded[1].count == 2 and loaded[0].label == "a"
    assert loaded[:, 0].label == ["a", "b"]  # a row across members: one value each
    again = lazy_stack([loaded[0], loaded[1]])[1]
    assert again.label == "b"


def test_along_another_dim_and_in_a_tensordict(tmp_path: Path) -> None:
    a = TensorDict(x=torch.zeros(2), s="p", batch_size=[2])
    b = TensorDict(x=torch.ones(2), s="q", batch_size=[2])
    stacked = torch.stack([a, b], 1)  # [2, 2], stacked along dim 1
    stacked.memmap(tmp_path / "t")
    loaded = TensorDict.load_memmap(tmp_path / "t")
    assert loaded[:, 1]["s"] == "q" and loaded[:, 0]["s"] == "p"
    assert loaded[0]["s"] == stacked[0]["s"]


def test_a_damaged_record_of_stack_dims_is_an_error(tmp_path: Path) -> None:
    stacked = torch.stack([TensorDict(s="p", batch_size=[]), TensorDict(s="q", batch_size=[])])
    stacked.memmap(tmp_path / "d")
    meta_path = tmp_path / "d" / "s" / "meta.json"
    meta = json.loads(meta_path.read_text())
    assert meta["_tclass"]["stack_dims"] == [0]
    meta["_tclass"]["stack_dims"] = [3]
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(errors.MetadataError, match="stack_dims"):
        TensorDict.load_memmap(tmp_path / "d")


def test_the_peer_reads_the_folder(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    stacked = torch.stack([TensorDict(x=torch.zeros(2), s="p", batch_size=[2])] * 2)
    stacked.memmap(tmp_path / "p")
    theirs = tensordict.TensorDict.load_memmap(tmp_path / "p")
    assert theirs.batch_size == torch.Size([2, 2]) and theirs["x"].shape == (2, 2)
