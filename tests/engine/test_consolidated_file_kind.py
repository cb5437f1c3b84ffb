"""``from_consolidated(file)`` (tclass/_engine/_consolidate.py): the kind of collection a
class reads from a file ``consolidate(filename=...)`` wrote."""

from __future__ import annotations

from pathlib import Path

import torch

from tclass import TensorClass, TensorDict


class _Row(TensorClass):
    x: torch.Tensor
    label: str


def test_a_records_file_read_by_tensordict_is_a_tensordict(tmp_path: Path) -> None:
    # The peer's TensorDict.from_consolidated gives a TensorDict of a record's file, the
    # record's class a record (program 15,620,352 of features,index,shape,combine L8)
    rec = _Row(x=torch.arange(3.0), label="a", batch_size=[3])
    path = str(tmp_path / "rec.mmap")
    rec.consolidate(filename=path)
    td = TensorDict.from_consolidated(path)
    assert type(td) is TensorDict and td.batch_size == torch.Size([3])
    assert torch.equal(td["x"], torch.arange(3.0)) and td.get("label").data == "a"
    again = _Row.from_consolidated(path)
    assert type(again) is _Row and again.label == "a"
