"""A dense stack of records holding Python values keeps, written to an HDF5 file or a
zarr store and read back, one value per member, as in memory and from a saved folder:
``torch.stack([a, b]).to_h5(p)`` then ``Rec.from_h5(p)[1].label == "b"`` (a ``str``, where
a row read ``["b", "b"]``, one value per element, before). The stack dims are an attribute
of the values' array (``_tclass_stack_dims``) beside the peer's ``__tensordict_stack__``
shape; the peer ignores it (its reads give one value per element)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import PersistentTensorDict, TensorDict, errors, lazy_stack, tensorclass


@tensorclass
class Tagged:
    x: torch.Tensor
    label: str
    tags: list


def _stacked(lazy: bool = False) -> Any:
    a = Tagged(x=torch.zeros(2), label="a", tags=[1, 2], batch_size=[2])
    b = Tagged(x=torch.ones(2), label="b", tags=["z"], batch_size=[2])
    return lazy_stack([a, b]) if lazy else torch.stack([a, b])


def _write(record: Any, path: Path, backend: str) -> Any:
    if backend == "zarr":
        pytest.importorskip("zarr")
        record.to_zarr(path / "s.zarr")
        return Tagged.from_zarr(path / "s.zarr")
    pytest.importorskip("h5py")
    record.to_h5(path / "s.h5")
    return Tagged.from_h5(path / "s.h5")


@pytest.mark.parametrize("lazy", [False, True], ids=["dense", "lazy"])
@pytest.mark.parametrize("backend", ["h5", "zarr"])
def test_rows_of_a_stack_read_one_value_each(tmp_path: Path, backend: str, lazy: bool) -> None:
    stacked = _stacked(lazy)
    read = _write(stacked, tmp_path, backend)
    for row in (0, 1):
        for name in ("label", "tags"):  # a str stays a str, a list one list
            assert getattr(read[row], name) == getattr(stacked[row], name)
    assert (read[1].label, read[1].tags, read[1, 0].tags) == ("b", ["z"], ["z"])
    assert read[:, 0].label == ["a", "b"]  # a column across members: one value each
    assert read[1].to_tensordict().get("label").tolist() == ["b", "b"]


def test_a_file_written_before_reads_one_value_per_element(tmp_path: Path) -> None:
    """Without the attribute (the peer's files, older tclass's), a row's values are one
    per element, as they were read."""
    h5py = pytest.importorskip("h5py")
    _stacked().to_h5(tmp_path / "s.h5")
    with h5py.File(tmp_path / "s.h5", "r+") as file:
        del file["label"].attrs["_tclass_stack_dims"]
    assert Tagged.from_h5(tmp_path / "s.h5")[1].label == ["b", "b"]


@pytest.mark.parametrize("mark", [[5], [0, 0], "0", [0.5]])
def test_a_damaged_mark_is_an_error_naming_it(tmp_path: Path, mark: Any) -> None:
    h5py = pytest.importorskip("h5py")
    _stacked().to_h5(tmp_path / "s.h5")
    with h5py.File(tmp_path / "s.h5", "r+") as file:
        file["label"].attrs["_tclass_stack_dims"] = mark
    opened = PersistentTensorDict.from_h5(tmp_path / "s.h5")
    with pytest.raises(errors.MetadataError, match="_tclass_stack_dims"):
        opened.get("label")
    opened.close()


def test_a_tensordict_stack_along_dim_1(tmp_path: Path) -> None:
    pytest.importorskip("h5py")
    a = TensorDict(x=torch.zeros(2), s="p", batch_size=[2])
    b = TensorDict(x=torch.ones(2), s="q", batch_size=[2])
    stacked = torch.stack([a, b], 1)
    stacked.to_h5(tmp_path / "t.h5")
    read = PersistentTensorDict.from_h5(tmp_path / "t.h5")
    assert read[:, 1]["s"] == "q" and read[:, 0]["s"] == "p"
    assert read[0].get("s").tolist() == ["p", "q"]
    read.close()


@pytest.mark.peer
def test_the_peer_reads_the_file(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    pytest.importorskip("h5py")
    _stacked().to_h5(tmp_path / "s.h5")
    read = tensordict.PersistentTensorDict.from_h5(str(tmp_path / "s.h5"))
    assert read.batch_size == (2, 2)
    assert torch.equal(read["x"], torch.tensor([[0.0, 0.0], [1.0, 1.0]]))
    read.close()
