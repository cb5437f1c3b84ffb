"""``close()`` of a group node of a file or store (``ptd["n"].close()``) closes the whole
file or store it belongs to, as the peer's zarr backend does (it closes the store from any
node; the peer's HDF5 node raises h5py's ``AttributeError`` and leaves the file open): every
node of it then raises ``ClosedFileError`` naming the file, and ``close()`` again does
nothing (README, "close() of a zarr store closes it")."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tclass import PersistentTensorDict, TensorDict
from tclass.errors import ClosedFileError


@pytest.mark.parametrize("backend", ["h5", "zarr"])
def test_closing_a_group_node_closes_its_file(tmp_path: Path, backend: str) -> None:
    pytest.importorskip("h5py" if backend == "h5" else "zarr")
    data = TensorDict(
        a=torch.zeros(3), n=TensorDict(x=torch.ones(3), batch_size=[3]), batch_size=[3]
    )
    path = tmp_path / ("f.h5" if backend == "h5" else "f.zarr")
    PersistentTensorDict.from_dict(data, str(path), backend=backend).close()
    opened = (
        PersistentTensorDict.from_h5(path, mode="r+")
        if backend == "h5"
        else PersistentTensorDict.from_zarr(str(path), mode="r+")
    )
    node = opened["n"]
    assert torch.equal(node["x"], torch.ones(3))
    node.close()
    for read in (lambda: opened["a"], lambda: node["x"], lambda: opened["n", "x"]):
        with pytest.raises(ClosedFileError, match="closed"):
            read()
    opened.close()  # nothing left to close
    reopened = PersistentTensorDict.from_h5(path) if backend == "h5" else None
    if reopened is not None:  # the file's handle was released: it opens again
        assert torch.equal(reopened["a"], torch.zeros(3))
        reopened.close()
