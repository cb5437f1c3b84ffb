"""``copy.copy`` / ``copy.deepcopy`` of a ``PersistentTensorDict`` (HDF5). ``copy.copy``
is the peer's ``clone(recurse=False)``: a new object over the same file (its nested
groups new objects too). ``copy.deepcopy`` is ``clone()``, which tclass reads into memory
(a TensorDict; the peer copies the file to a temporary one, see README "Differences"):
either way, writes into the deep copy leave the file alone."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

import tclass

pytest.importorskip("h5py")


def _file(path: Path) -> tclass.PersistentTensorDict:
    source = tclass.TensorDict({"sub": {"v": torch.zeros(2)}}, [2])
    return tclass.PersistentTensorDict.from_dict(source, filename=path / "f.h5")


def test_copy_is_a_new_object_over_the_same_file(tmp_path: Path) -> None:
    ptd = _file(tmp_path)
    out = copy.copy(ptd)
    assert type(out) is tclass.PersistentTensorDict and out is not ptd
    assert out.filename == ptd.filename and out["sub"] is not ptd["sub"]
    out["sub", "v"] = torch.ones(2)  # the same file: the write shows in the source
    assert torch.equal(ptd["sub", "v"], torch.ones(2))


def test_deepcopy_leaves_the_file_alone(tmp_path: Path) -> None:
    ptd = _file(tmp_path)
    out = copy.deepcopy(ptd)
    assert type(out) is tclass.TensorDict and not out.is_locked
    out["sub", "v"].add_(3)
    out["sub", "w"] = torch.zeros(2)
    assert torch.equal(ptd["sub", "v"], torch.zeros(2)) and "w" not in ptd["sub"].keys()
