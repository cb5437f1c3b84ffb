"""HDF5 and zarr files as a new user reaches them (session 23's programs run on tclass and
on the peer): what differed from the peer and was fixed, each on both stores.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch

from tclass import PersistentTensorDict, TensorClass, TensorDict
from tclass.errors import (
    ArgumentValueError,
    ClosedFileError,
    FileBusyError,
    FileFormatError,
    ReadOnlyFileError,
    StoreFormatError,
    TclassError,
)

pytest.importorskip("h5py")


def _store(tmp_path: Path, backend: str) -> str:
    if backend == "zarr":
        pytest.importorskip("zarr")
    return str(tmp_path / f"f.{backend}")


@pytest.mark.parametrize("backend", ["h5", "zarr"])
def test_pickling_a_closed_file_is_a_closed_file_error_at_once(
    tmp_path: Path, backend: str
) -> None:
    # was: the pickle was written, and loading it failed in h5py with a KeyError
    # ("object 'None' doesn't exist"), the group's name read off the closed file
    path = _store(tmp_path, backend)
    td = TensorDict({"a": torch.arange(4.0), "n": {"b": torch.ones(4, 2)}}, [4])
    ptd = td.to_h5(path) if backend == "h5" else td.to_zarr(path)
    view, group = ptd[1:3], ptd["n"]
    ptd.close()
    for closed in (ptd, view, group):
        with pytest.raises(ClosedFileError, match="closed") as caught:
            pickle.dumps(closed)
        assert isinstance(caught.value, ValueError)  # the peer's h5py raises a ValueError
        assert isinstance(caught.value, TclassError)
        assert path in str(caught.value) and "pickle it before close()" in str(caught.value)
    # open again, it pickles and reads back
    again = PersistentTensorDict.from_h5(path) if backend == "h5" else TensorDict.from_zarr(path)
    loaded = pickle.loads(pickle.dumps(again[1:3]))
    assert loaded["a"].tolist() == [1.0, 2.0]
    assert loaded["n", "b"].tolist() == [[1.0, 1.0], [1.0, 1.0]]


@pytest.mark.parametrize("backend", ["h5", "zarr"])
def test_from_dict_with_a_batch_size_gives_it_to_the_nested_dicts_as_the_peer(
    tmp_path: Path, backend: str
) -> None:
    # was: the nested dict got its own largest batch size ([3, 2]), as without batch_size;
    # the peer (and TensorDict(d, batch_size=[3]) in both) gives it the batch size given
    path = _store(tmp_path, backend)
    data = {"a": torch.ones(3, 2), "n": {"c": torch.arange(6.0).view(3, 2)}}
    ptd = PersistentTensorDict.from_dict(data, filename=path, batch_size=[3], backend=backend)
    assert ptd.batch_size == torch.Size([3])
    assert ptd["n"].batch_size == torch.Size([3])
    assert ptd["n", "c"].tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert ptd[1]["n"].batch_size == torch.Size([])
    ptd.close()
    reopened = PersistentTensorDict.from_h5(path) if backend == "h5" else TensorDict.from_zarr(path)
    assert reopened["n"].batch_size == torch.Size([3])  # recorded in the file
    # without batch_size, each dict still gets the largest one its entries share (as the peer)
    inferred = PersistentTensorDict.from_dict(
        data, filename=str(tmp_path / f"g.{backend}"), backend=backend
    )
    assert inferred.batch_size == torch.Size([3, 2])
    assert inferred["n"].batch_size == torch.Size([3, 2])
    # a batch size the entries do not have is refused, as TensorDict(d, batch_size=...)
    with pytest.raises(RuntimeError, match="batch"):
        PersistentTensorDict.from_dict(
            data, filename=str(tmp_path / f"h.{backend}"), batch_size=[4], backend=backend
        )


@pytest.mark.parametrize("order", [">", "<"], ids=["big-endian", "little-endian"])
def test_numbers_another_tool_wrote_big_endian_read_as_tensors(tmp_path: Path, order: str) -> None:
    # was: a big-endian dataset (MATLAB, Java and netCDF tools write them) read as a list
    # of Python values, and `+=` on it failed ("'int' object is not iterable"); the peer
    # fails on it. The file keeps its byte order; its numbers read and write as any others
    h5py = pytest.importorskip("h5py")
    np = pytest.importorskip("numpy")
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as file:
        file["a"] = np.arange(6, dtype=f"{order}i4").reshape(3, 2)
        file["f"] = np.arange(3, dtype=f"{order}f8")
    ptd = PersistentTensorDict.from_h5(path, mode="r+")
    assert ptd.batch_size == torch.Size([3])
    assert ptd["a"].dtype == torch.int32 and ptd["a"].tolist() == [[0, 1], [2, 3], [4, 5]]
    assert ptd[[2, 0]]["f"].tolist() == [2.0, 0.0] and ptd["f"].dtype == torch.float64
    assert ptd.get_at("a", 1).tolist() == [2, 3]
    ptd["a"] += 1
    ptd[0] = {"a": torch.tensor([7, 7], dtype=torch.int32)}
    assert ptd["a"].tolist() == [[7, 7], [3, 4], [5, 6]]
    assert ptd.to_tensordict()["f"].tolist() == [0.0, 1.0, 2.0]
    assert ptd.memmap(tmp_path / "mm")["a"].tolist() == [[7, 7], [3, 4], [5, 6]]
    assert ptd.file["a"].dtype == np.dtype(f"{order}i4")  # written in place, in its order


def test_a_file_open_in_this_process_in_a_mode_h5py_cannot_share_is_busy(tmp_path: Path) -> None:
    # was: a FileFormatError, "is not an HDF5 file h5py can open", for a good file opened
    # read-only, then with mode='r+' (the peer: h5py's OSError); and h5py's bare OSError for
    # to_h5 over a file open in this process. Now a FileBusyError (an OSError, as the peer's)
    path = tmp_path / "f.h5"
    td = TensorDict({"b": torch.arange(4)}, [4])
    td.to_h5(path).close()
    reader = PersistentTensorDict.from_h5(path)
    with pytest.raises(FileBusyError, match="already open in this process") as caught:
        PersistentTensorDict.from_h5(path, mode="r+")
    assert isinstance(caught.value, OSError) and "mode='r+'" in str(caught.value)
    with pytest.raises(FileBusyError, match="mode='w'"):
        td.to_h5(path)
    assert reader["b"].tolist() == [0, 1, 2, 3]  # nothing changed
    reader.close()
    writer = PersistentTensorDict.from_h5(path, mode="r+")  # closed: it opens
    writer["b"] += 1
    assert writer["b"].tolist() == [1, 2, 3, 4]
    writer.close()


def test_a_handle_opened_read_only_refuses_writes_while_another_holds_the_file_writable(
    tmp_path: Path,
) -> None:
    # was: h5py hands the second open the file this process holds open for writing, and
    # the handle asked for with mode='r' wrote into it (the peer's too)
    path = tmp_path / "f.h5"
    writer = TensorDict({"b": torch.arange(4)}, [4]).to_h5(path)
    reader = PersistentTensorDict.from_h5(path)  # mode='r', the default
    for write in (
        lambda: reader.__setitem__("b", torch.zeros(4, dtype=torch.int64)),
        lambda: reader.set_("b", torch.zeros(4, dtype=torch.int64)),
        lambda: reader.__setitem__("z", torch.zeros(4)),
        lambda: reader[0:2].fill_("b", 7),
        lambda: reader.update_({"b": torch.zeros(4, dtype=torch.int64)}),
    ):
        with pytest.raises(ReadOnlyFileError, match="mode='r'"):
            write()
    assert writer["b"].tolist() == [0, 1, 2, 3] and sorted(writer.keys()) == ["b"]
    writer["b"] += 1  # the writer writes, and the reader reads it
    assert reader["b"].tolist() == [1, 2, 3, 4]
    reader.close()
    assert writer["b"].tolist() == [1, 2, 3, 4]  # closing the reader leaves the writer open
    writer.close()


def test_a_key_holding_a_slash_is_a_path_in_a_zarr_store_as_in_an_hdf5_file(
    tmp_path: Path,
) -> None:
    # was: zarr listed "obs/pix" as one key of the root until reopened, then as a group
    # "obs" whose "obs/pix" read was a KeyError; HDF5 (and the peer's zarr) make the group
    pytest.importorskip("zarr")
    td = TensorDict({"x": torch.zeros(3), "obs": {"pix": torch.ones(3, 2)}}, [3])
    flat = td.flatten_keys("/")  # {"x", "obs/pix"}: a common layout of flat keys
    for path, save in (
        (tmp_path / "f.h5", flat.to_h5),
        (tmp_path / "f.zarr", flat.to_zarr),
    ):
        ptd = save(path)
        assert sorted(map(str, ptd.keys(True, True))) == ["('obs', 'pix')", "x"]
        assert ptd["obs/pix"].tolist() == [[1.0, 1.0]] * 3 and ptd["obs"].batch_size == (3,)
        ptd["a/b"] = torch.arange(3)
        ptd["a/c"] = torch.ones(3)
        assert sorted(ptd.keys()) == ["a", "obs", "x"]
        assert ptd["a", "b"].tolist() == [0, 1, 2] and ptd["a/c"].tolist() == [1.0] * 3
        del ptd["a/b"]
        assert sorted(ptd["a"].keys()) == ["c"]
        ptd.close()
        again = (
            PersistentTensorDict.from_h5(path)
            if path.suffix == ".h5"
            else TensorDict.from_zarr(path)
        )
        assert sorted(map(str, again.keys(True, True))) == ["('a', 'c')", "('obs', 'pix')", "x"]
        assert again["obs/pix"].shape == (3, 2)
        again.close()


@pytest.mark.parametrize("backend", ["h5", "zarr"])
def test_an_option_from_h5_does_not_take_is_a_type_error_as_the_peers(
    tmp_path: Path, backend: str
) -> None:
    # was: ignored without a word: from_h5(path, device="cuda") read onto the CPU, and a
    # misspelt mode (mod="r+") opened the file read-only; the peer raises a TypeError
    class Rec(TensorClass):
        a: torch.Tensor

    path = _store(tmp_path, backend)
    td = TensorDict({"a": torch.arange(2.0)}, [2])
    (td.to_h5(path) if backend == "h5" else td.to_zarr(path)).close()
    opener = "from_h5" if backend == "h5" else "from_zarr"
    for open_ in (getattr(PersistentTensorDict, opener), getattr(TensorDict, opener)):
        for option in ({"device": "cpu"}, {"mod": "r+"}):
            with pytest.raises(TypeError, match="unexpected keyword argument") as caught:
                open_(path, **option)
            assert isinstance(caught.value, TclassError) and opener in str(caught.value)
    with pytest.raises(TypeError, match="'device'"):
        getattr(Rec, opener)(path, device="cpu")
    opened = getattr(PersistentTensorDict, opener)(path, mode="r+", batch_size=[2])
    assert opened["a"].tolist() == [0.0, 1.0]  # the options it takes still work
    opened.close()


@pytest.mark.parametrize("backend", ["h5", "zarr"])
def test_conflicting_batch_size_options_are_refused_as_the_peer(
    tmp_path: Path, backend: str
) -> None:
    # was: batch_size won and auto_batch_size / batch_dims were dropped without a word;
    # the peer refuses both pairs (a TypeError for from_h5, a ValueError for from_dict)
    path = _store(tmp_path, backend)
    data = {"a": torch.zeros(2, 3, 4)}
    with pytest.raises(ValueError, match="batch_size or batch_dims, not both"):
        PersistentTensorDict.from_dict(
            data, filename=path, batch_size=[2], batch_dims=2, backend=backend
        )
    ptd = PersistentTensorDict.from_dict(data, filename=path, batch_dims=2, backend=backend)
    assert ptd.batch_size == torch.Size([2, 3])
    ptd.close()
    opener = getattr(PersistentTensorDict, "from_h5" if backend == "h5" else "from_zarr")
    with pytest.raises(TypeError, match="Conflicting batch sizes") as caught:
        opener(path, auto_batch_size=True, batch_size=[2])
    assert isinstance(caught.value, TclassError)
    assert opener(path, auto_batch_size=True).batch_size == torch.Size([2, 3, 4])
    assert opener(path, batch_size=[2]).batch_size == torch.Size([2])


def test_a_file_that_is_not_hdf5_is_an_oserror_too(tmp_path: Path) -> None:
    # nu24d: the peer's is h5py's OSError ("file signature not found"); was a FileFormatError
    # (a ValueError and RuntimeError only)
    junk = tmp_path / "g.h5"
    junk.write_text("x")
    with pytest.raises(StoreFormatError, match=r"g.h5' is not an HDF5 file h5py can open") as info:
        PersistentTensorDict.from_h5(str(junk))
    assert isinstance(info.value, OSError) and isinstance(info.value, FileFormatError)


def test_an_unknown_mode_names_the_modes(tmp_path: Path) -> None:
    # nu24d: was h5py's bare ValueError ("Invalid mode; must be one of r, r+, w, w-, x, a")
    path = str(tmp_path / "f.h5")
    TensorDict({"a": torch.zeros(2)}, [2]).to_h5(path).close()
    with pytest.raises(ArgumentValueError, match=r"mode='q' for .*'r' \(read only\), 'r\+'"):
        PersistentTensorDict.from_h5(path, mode="q")
    with PersistentTensorDict.from_h5(path, mode="r") as file:
        assert file["a"].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("backend", ["h5", "zarr"])
def test_get_at_and_set_at_past_the_end_name_the_call(tmp_path: Path, backend: str) -> None:
    """nu26c: an index past a dataset's end in ``get_at`` / ``set_at_`` is a ``DimError``
    (the peer's ``IndexError``, and a ``TclassError``) naming the call; it was the
    store's bare ``IndexError``. Nothing is written."""
    td = TensorDict({"a": torch.zeros(4, 3)}, [4])
    ptd = PersistentTensorDict.from_dict(td, _store(tmp_path, backend))
    with pytest.raises(IndexError, match=r"^get_at\('a', 9\): ") as read:
        ptd.get_at("a", 9)
    assert isinstance(read.value, TclassError)
    with pytest.raises(IndexError, match=r"^set_at_\('a', value, 9\): ") as write:
        ptd.set_at_("a", torch.ones(3), 9)
    assert isinstance(write.value, TclassError)
    assert ptd["a"].sum().item() == 0.0
    ptd.close()
