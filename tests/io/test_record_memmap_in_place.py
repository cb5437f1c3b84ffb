"""``record.memmap_()`` without a prefix, on a record loaded from its folder, saves it
back into that folder, as a TensorDict's ``memmap_()`` does.

The record's storage is the ``_tensordict`` folder inside the record's folder: tclass
saved the whole record there, nesting a second record (``_tensordict/_tensordict/...``)
and overwriting the storage's ``meta.json`` with a record's, so that no load read the
folder again (a ``MetadataError``: "the folder is damaged"). The same happened to a
record nested in a loaded TensorDict.
"""

from __future__ import annotations

from pathlib import Path

import torch

from tclass import TensorDict, tensorclass


@tensorclass
class Saved:
    x: torch.Tensor
    label: str


def _files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def test_a_loaded_record_saves_back_into_its_folder(tmp_path: Path) -> None:
    Saved(x=torch.arange(3.0), label="a", batch_size=[3]).memmap(tmp_path / "r")
    before = _files(tmp_path / "r")
    record = Saved.load_memmap(tmp_path / "r")
    assert record.memmap_() is record
    assert _files(tmp_path / "r") == before
    again = Saved.load_memmap(tmp_path / "r")
    assert again.x.tolist() == [0.0, 1.0, 2.0] and again.label == "a"
    record.x[1] = 7.0  # its leaves are the folder's files
    assert Saved.load_memmap(tmp_path / "r").x.tolist() == [0.0, 7.0, 2.0]


def test_a_record_nested_in_a_loaded_tensordict_saves_back(tmp_path: Path) -> None:
    rec = Saved(x=torch.ones(2), label="b", batch_size=[2])
    TensorDict(rec=rec, y=torch.zeros(2), batch_size=[2]).memmap(tmp_path / "t")
    before = _files(tmp_path / "t")
    TensorDict.load_memmap(tmp_path / "t")["rec"].memmap_()
    assert _files(tmp_path / "t") == before
    loaded = TensorDict.load_memmap(tmp_path / "t")
    assert type(loaded["rec"]) is Saved and loaded["rec"].x.tolist() == [1.0, 1.0]
