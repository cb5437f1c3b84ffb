"""``copy.copy`` / ``copy.deepcopy`` of a ``PersistentTensorDict`` (HDF5). ``copy.copy``
is the peer's ``clone(recurse=False)``: a new object over the same file (its nested
groups new objects too). ``copy.deepcopy`` is ``clone()``, which tclass reads into memory
(a TensorDict; the peer copies the file to a temporary one, see README "Differences"):
either way, writes into the deep copy leave the file alone. So a clone (of a lazy stack
of files too) loads a folder as a TensorDict does, and so does ``memmap(folder)``'s copy
of a file refresh from its folder."""

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


def test_a_shallow_clone_of_a_locked_file_is_unlocked(tmp_path: Path) -> None:
    """inv20e (program 10,804,534 of index,combine,shape,entries --length 4): as a
    TensorDict's ``clone(False)``, and the peer's of a file, the new object over the
    file (and its nested groups) is unlocked; the file's own stays locked."""
    ptd = _file(tmp_path).lock_()
    out = ptd.clone(False)
    assert type(out) is tclass.PersistentTensorDict and out.filename == ptd.filename
    assert not out.is_locked and not out["sub"].is_locked
    assert ptd.is_locked and ptd["sub"].is_locked
    out["sub", "w"] = torch.ones(2)  # a new dataset in the same file
    assert torch.equal(
        tclass.PersistentTensorDict.from_h5(tmp_path / "f.h5")["sub", "w"], torch.ones(2)
    )


def test_deepcopy_leaves_the_file_alone(tmp_path: Path) -> None:
    ptd = _file(tmp_path)
    out = copy.deepcopy(ptd)
    assert type(out) is tclass.TensorDict and not out.is_locked
    out["sub", "v"].add_(3)
    out["sub", "w"] = torch.zeros(2)
    assert torch.equal(ptd["sub", "v"], torch.zeros(2)) and "w" not in ptd["sub"].keys()


@tclass.tensorclass
class _Inner:
    z: torch.Tensor
    y: torch.Tensor


@tclass.tensorclass
class _Outer:
    x: torch.Tensor
    inner: _Inner


def test_replace_of_a_record_over_a_file_leaves_the_file_alone(tmp_path: Path) -> None:
    """``replace`` is out of place: a record over a file gives a record in memory, as the
    file's own ``replace`` does, and the file keeps its values (the peer's record writes
    the changed fields, nested ones included, into the file)."""
    zeros = torch.zeros(3)
    inner = _Inner(z=zeros, y=zeros, batch_size=[3])
    _Outer(x=zeros, inner=inner, batch_size=[3]).to_h5(tmp_path / "f.h5")
    saved = _Outer.from_h5(tmp_path / "f.h5")
    for view in (saved, saved[1:]):
        out = view.replace(x=torch.ones(len(view)))
        assert type(out._tensordict) is tclass.TensorDict and out.x.eq(1).all()
        merged = view.replace(inner={"z": torch.ones(len(view))})
        assert merged.inner.z.eq(1).all() and not merged.inner.y.any()
        n = len(view)
        whole = view.replace(inner=_Inner(z=zeros[:n], y=zeros[:n] + 2, batch_size=[n]))
        assert whole.inner.y.eq(2).all()
    again = _Outer.from_h5(tmp_path / "f.h5")
    assert not again.x.any() and not again.inner.z.any() and not again.inner.y.any()


@pytest.mark.parametrize("load", ["load_memmap_", "load_"])
def test_a_clone_of_a_lazy_stack_of_files_loads_a_folder(tmp_path: Path, load: str) -> None:
    """``x.clone().load_memmap_(folder)`` (``load_``: its other name) of a lazy stack of
    files: the clone's members are in memory, so they take the folder's memory-mapped
    tensors, as a TensorDict's do in both (the peer's clone copies each file to a
    temporary one and copies the folder in; programs 15,510,204 / 15,510,334 of
    methods,index,shape,combine L12), and the files keep their values."""
    files = [
        tclass.PersistentTensorDict.from_dict(
            tclass.TensorDict({"c": torch.full((1, 3), float(i))}, []), tmp_path / f"w{i}.h5"
        )
        for i in range(2)
    ]
    stack = tclass.lazy_stack(files, 0)
    saved = stack.memmap(tmp_path / "folder")
    clone = stack.clone()
    assert all(type(member) is tclass.TensorDict for member in clone.tensordicts)
    clone.apply_(torch.zeros_like)
    out = getattr(clone, load)(tmp_path / "folder")
    assert out is clone and torch.equal(out["c"], saved["c"])
    for member in out.tensordicts:
        assert type(member) is tclass.TensorDict
        assert isinstance(member["c"], tclass.MemoryMappedTensor)
    assert torch.equal(files[1]["c"], torch.ones(1, 3))  # the file as it was


def test_a_files_memmap_copy_refreshes_from_its_folder(tmp_path: Path) -> None:
    """``f.memmap(folder)`` of a file is a TensorDict saved in that folder, so its
    ``memmap_refresh_()`` reloads it, as a TensorDict's in both (the peer's copy says it
    has no folder and refuses: program 15,540,046 of methods,index,shape,combine L16)."""
    source = tclass.TensorDict({"a": torch.arange(8.0).reshape(4, 2)}, [4])
    ptd = source.to_h5(tmp_path / "w.h5")
    saved = ptd.memmap(tmp_path / "folder")
    assert type(saved) is tclass.TensorDict and saved.saved_path == tmp_path / "folder"
    refreshed = saved.memmap_refresh_()
    assert refreshed is saved and refreshed.is_locked and refreshed.is_memmap()
    assert isinstance(refreshed["a"], tclass.MemoryMappedTensor)
    assert torch.equal(refreshed["a"], source["a"])
