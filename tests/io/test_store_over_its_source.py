"""``to_zarr`` / ``to_h5`` (``PersistentTensorDict.from_dict``) of a collection read from
the store it would replace (tclass/_io/store/_writes.py): creating the new store clears
the old one first, so the write is refused before anything is cleared. The peer's zarr
writes the zeros of the cleared arrays; HDF5 refuses to truncate the open file."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import tclass
from tclass import PersistentTensorDict, TensorDict
from tclass.errors import FileBusyError, TclassError

pytest.importorskip("zarr", reason="the zarr extra is not installed")
h5py = pytest.importorskip("h5py", reason="the h5 extra is not installed")


def _collection() -> TensorDict:
    return TensorDict(
        {"a": torch.arange(6.0).reshape(3, 2), "n": {"c": torch.ones(3)}}, batch_size=[3]
    )


def test_a_zarr_store_written_over_itself_is_refused_and_kept(tmp_path: Path) -> None:
    path = str(tmp_path / "x.zarr")
    _collection().to_zarr(path)
    read = TensorDict.from_zarr(path)
    with pytest.raises(FileBusyError, match="clears it first|clears first") as caught:
        read.to_zarr(path)
    assert isinstance(caught.value, TclassError) and isinstance(caught.value, BlockingIOError)
    assert path in str(caught.value) and "to_tensordict" in str(caught.value)
    again = TensorDict.from_zarr(path)
    assert torch.equal(again["a"], torch.arange(6.0).reshape(3, 2))
    # read into memory first, the same write replaces the store
    read.to_tensordict().to_zarr(path)
    assert torch.equal(TensorDict.from_zarr(path)["n", "c"], torch.ones(3))


def test_a_nested_group_read_from_the_store_names_its_key(tmp_path: Path) -> None:
    path = str(tmp_path / "x.zarr")
    _collection().to_zarr(path)
    holder = TensorDict({"inner": TensorDict.from_zarr(path)}, batch_size=[3])
    with pytest.raises(FileBusyError, match=r"key \('inner',\)"):
        holder.to_zarr(path)
    assert torch.equal(TensorDict.from_zarr(path)["a"], torch.arange(6.0).reshape(3, 2))


def test_a_store_inside_the_folder_replaced_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    _collection().to_zarr(str(folder / "x.zarr"))
    with pytest.raises(FileBusyError):
        TensorDict.from_zarr(str(folder / "x.zarr")).to_zarr(str(folder))
    assert (folder / "x.zarr").exists()


def test_another_path_and_an_in_memory_copy_are_written(tmp_path: Path) -> None:
    path, other = str(tmp_path / "x.zarr"), str(tmp_path / "y.zarr")
    _collection().to_zarr(path)
    TensorDict.from_zarr(path).to_zarr(other)
    assert torch.equal(TensorDict.from_zarr(other)["a"], torch.arange(6.0).reshape(3, 2))


def test_an_hdf5_file_written_over_itself_is_refused_with_the_same_error(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "x.h5")
    PersistentTensorDict.from_dict(_collection(), path).close()
    read = PersistentTensorDict.from_h5(path)
    with pytest.raises(FileBusyError, match="is read from"):
        PersistentTensorDict.from_dict(read, path)
    assert torch.equal(read["a"], torch.arange(6.0).reshape(3, 2))
    read.close()


def _saved(tmp_path: Path) -> TensorDict:
    _collection().memmap(str(tmp_path / "saved"))
    return TensorDict.load_memmap(str(tmp_path / "saved"))


def _kept(read: TensorDict) -> None:
    assert torch.equal(read["a"], torch.arange(6.0).reshape(3, 2))
    assert torch.equal(read["n", "c"], torch.ones(3))


def test_an_hdf5_file_over_a_leaf_file_of_its_source_is_refused(tmp_path: Path) -> None:
    # h5py truncates the file it creates: the leaf mapping it would read the new bytes
    read = _saved(tmp_path)
    leaf = str(tmp_path / "saved" / "n" / "c.memmap")
    with pytest.raises(FileBusyError, match=r"key \('n', 'c'\) maps that file") as caught:
        read.to_h5(leaf)
    assert isinstance(caught.value, BlockingIOError) and leaf in str(caught.value)
    _kept(read)
    _kept(TensorDict.load_memmap(str(tmp_path / "saved")))
    with pytest.raises(FileBusyError):  # a view of it, and a params over it, alike
        PersistentTensorDict.from_dict(read[1:], leaf)
    read.clone().to_h5(leaf).close()  # in memory first: written


def test_an_hdf5_file_over_a_consolidated_file_or_archive_read_is_refused(
    tmp_path: Path,
) -> None:
    consolidated = str(tmp_path / "c.bin")
    _collection().consolidate(filename=consolidated)
    read = TensorDict.from_consolidated(consolidated)
    with pytest.raises(FileBusyError, match="maps that file"):
        read.to_h5(consolidated)
    _kept(read)
    _kept(TensorDict.from_consolidated(consolidated))
    archive = str(tmp_path / "x.tdz")
    tclass.save(_collection(), archive)
    loaded = tclass.load(archive)
    with pytest.raises(FileBusyError, match="maps that file"):
        loaded.to_h5(archive)
    _kept(loaded)
    _kept(tclass.load(archive))


def test_a_new_hdf5_file_inside_a_zarr_store_read_is_written(tmp_path: Path) -> None:
    # creating a new file beside the store's parts clears nothing (the peer writes it)
    path = str(tmp_path / "x.zarr")
    _collection().to_zarr(path)
    read = TensorDict.from_zarr(path)
    read.to_h5(str(tmp_path / "x.zarr" / "copy.h5")).close()
    _kept(read)
    with pytest.raises(FileBusyError):  # a group of the store replaced: refused
        read.to_zarr(str(tmp_path / "x.zarr" / "n"))
    _kept(TensorDict.from_zarr(path))


def test_consolidate_into_the_file_a_store_reads_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "x.h5")
    PersistentTensorDict.from_dict(_collection(), path).close()
    read = PersistentTensorDict.from_h5(path)
    holder = TensorDict({"inner": read}, batch_size=[3])
    with pytest.raises(FileBusyError, match=r"key \('inner',\) is read from") as caught:
        holder.consolidate(filename=path)
    assert isinstance(caught.value, TclassError) and isinstance(caught.value, BlockingIOError)
    with pytest.raises(FileBusyError, match="the collection is read from"):
        read[1:].consolidate(filename=path)
    _kept(read)
    read.close()
    store = str(tmp_path / "y.zarr")
    _collection().to_zarr(store)
    chunk = next(
        p for p in (tmp_path / "y.zarr" / "a").rglob("*") if p.is_file() and p.name != "zarr.json"
    )
    with pytest.raises(FileBusyError):  # a part of the store
        TensorDict.from_zarr(store).consolidate(filename=str(chunk))
    _kept(TensorDict.from_zarr(store))
    other = TensorDict.from_zarr(store).consolidate(filename=str(tmp_path / "c.bin"))
    _kept(other)
