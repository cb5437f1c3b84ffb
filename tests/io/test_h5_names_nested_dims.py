"""Assigning an HDF5 file's names (``None`` included) names the dims its groups share
with it and leaves a group's own further dims named as they were, as a TensorDict's
setter and the peer's (they were cleared, in memory and in the file)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tclass import PersistentTensorDict, TensorDict

pytest.importorskip("h5py")


def test_a_file_keeps_the_names_of_its_groups_own_dims(tmp_path: Path) -> None:
    inner = TensorDict({"x": torch.zeros(3, 4, 5)}, [3, 4, 5])
    source = TensorDict({"n": inner}, [3, 4])
    ptd = PersistentTensorDict.from_dict(source, filename=str(tmp_path / "f.h5"))
    assert ptd.get("n").names == [None, None, None]
    ptd.get("n").names = ["a", "b", "c"]
    ptd.names = ["p", "q"]
    assert ptd.get("n").names == ["p", "q", "c"]
    ptd.names = None
    assert ptd.names == [None, None] and ptd.get("n").names == [None, None, "c"]
    ptd.close()
    reopened = PersistentTensorDict.from_h5(str(tmp_path / "f.h5"))
    assert reopened.get("n").names == [None, None, "c"]  # recorded in the group
