"""Writes into a ``PersistentTensorDict`` (``tclass/_io/store/_writes.py``) on each backend
whose library is installed (``h5``: h5py, ``zarr``: zarr>=3.1.1): what a file refuses to
keep (a tensor that requires grad), when replacing an entry warns, as the peer warns, and
the mistakes a user makes (missing keys, bad shapes and indices, meta tensors, missing
devices), each a TclassError that writes nothing.
Every check reads the file back."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tclass import PersistentTensorDict, TensorDict, tensorclass
from tclass.errors import (
    DeviceUnavailableError,
    DimError,
    EntryReplacedWarning,
    FilePermissionError,
    GradError,
    IndexTypeError,
    InPlaceWriteError,
    KeyNotFoundError,
    KeyThroughTensorError,
    LockedError,
    MetaTensorError,
    NotSerializableError,
    TclassError,
)

LIBRARIES = {"h5": "h5py", "zarr": "zarr"}


@pytest.fixture(params=sorted(LIBRARIES))
def backend(request: pytest.FixtureRequest) -> str:
    pytest.importorskip(LIBRARIES[request.param])
    return str(request.param)


def data() -> TensorDict:
    return TensorDict({"a": torch.zeros(3, 4), "n": {"b": torch.zeros(3, 4, 2)}}, [3, 4])


@pytest.fixture
def ptd(tmp_path: Path, backend: str) -> Iterator[PersistentTensorDict]:
    written = PersistentTensorDict.from_dict(data(), tmp_path / f"f.{backend}", backend=backend)
    yield written
    written.close()


def grad(*shape: int) -> torch.Tensor:
    return torch.ones(*shape, requires_grad=True)


# --- tensors that require grad --------------------------------------------------------------

WRITES: dict[str, Callable[[PersistentTensorDict], Any]] = {
    "set": lambda p: p.set("a", grad(3, 4)),
    "set a new key": lambda p: p.set("new", grad(3, 4)),
    "set a nested key": lambda p: p.set(("n", "b"), grad(3, 4, 2)),
    "setitem": lambda p: p.__setitem__("a", grad(3, 4)),
    "set_": lambda p: p.set_("a", grad(3, 4)),
    "set_at_": lambda p: p.set_at_("a", grad(4), 0),
    "update": lambda p: p.update({"a": torch.ones(3, 4), "n": {"b": grad(3, 4, 2)}}),
    "update_": lambda p: p.update_({"a": grad(3, 4)}),
    "rows": lambda p: p.__setitem__(0, TensorDict({"a": torch.ones(4), "n": {"b": grad(4, 2)}})),
    "a view's rows": lambda p: p[1:].set("a", grad(2, 4)),
    "in-place math": lambda p: p.add_(TensorDict({"a": grad(3, 4), "n": {"b": grad(3, 4, 2)}})),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_a_tensor_that_requires_grad_is_refused_and_nothing_is_written(
    ptd: PersistentTensorDict, write: str
) -> None:
    with pytest.raises(
        GradError, match="Cannot set a tensor that has requires_grad=True"
    ) as caught:
        WRITES[write](ptd)
    assert isinstance(caught.value, RuntimeError) and isinstance(caught.value, TclassError)
    assert ptd.filename in str(caught.value) and "detach()" in str(caught.value)
    assert set(ptd.keys(True, True)) == {"a", ("n", "b")}  # nothing was added
    assert not ptd["a"].any() and not ptd["n", "b"].any()  # nor written


def test_the_error_names_the_entry(ptd: PersistentTensorDict) -> None:
    with pytest.raises(GradError, match=r"\(shape \[3, 4, 2\]\) into '.*' at '/n/b'"):
        ptd.set(("n", "b"), grad(3, 4, 2))
    with pytest.raises(GradError, match=r"key 'b'"):
        ptd.update({"n": {"b": grad(3, 4, 2)}})


def test_detached_values_and_no_grad_results_are_written(ptd: PersistentTensorDict) -> None:
    weights = grad(3, 4)
    ptd.set_("a", weights.detach() * 2)
    with torch.no_grad():
        ptd.set_("n", TensorDict({"b": weights.unsqueeze(-1).expand(3, 4, 2) * 3}, [3, 4]))
    assert (ptd["a"] == 2).all() and (ptd["n", "b"] == 3).all()


def test_saving_a_collection_that_requires_grad_writes_its_values(
    tmp_path: Path, backend: str
) -> None:
    """from_dict / to_h5 / to_zarr make a new file from the values (the peer refuses)."""
    source = data().apply(lambda t: t + 1).requires_grad_()
    saved = PersistentTensorDict.from_dict(source, tmp_path / f"s.{backend}", backend=backend)
    assert (saved["a"] == 1).all() and not saved["a"].requires_grad
    assert source.requires_grad  # the source is left as it was
    saved.close()
    # the method, as memmap writes them (programs 15,630,231 / 15,630,418 of
    # features,index,shape,combine L12: the peer's to_zarr refuses, its store left empty)
    path = tmp_path / f"m.{backend}"
    getattr(source, f"to_{backend}")(path).close()
    back = getattr(TensorDict, f"from_{backend}")(path).to_tensordict()
    assert torch.equal(back["n", "b"], source["n", "b"].detach())
    assert not back["a"].requires_grad and (back["a"] == 1).all()


# --- replacing an entry ----------------------------------------------------------------------


def test_set_replacing_an_entry_warns_as_the_peer(ptd: PersistentTensorDict) -> None:
    peer_words = "^Replacing an array with another one is inefficient"  # filters match them
    with pytest.warns(EntryReplacedWarning, match=peer_words) as caught:
        ptd.set("a", torch.ones(3, 4), inplace=False)
    assert issubclass(caught[0].category, UserWarning) and "'/a'" in str(caught[0].message)
    with pytest.warns(EntryReplacedWarning, match="'/n/b'"):
        ptd.set(("n", "b"), torch.ones(3, 4, 5, dtype=torch.int64))  # another shape and dtype
    # a collection of another batch size is merged into the group, silently, as the
    # peer's file does (its entries checked against the group's batch size)
    _quiet(lambda: ptd.set("n", TensorDict({"c": torch.ones(3, 4, 2)}, [3, 4, 2])))
    ptd.set_non_tensor("s", "one")
    with pytest.warns(EntryReplacedWarning, match="'/s'"):
        ptd.set_non_tensor("s", "two")
    assert (ptd["a"] == 1).all() and set(ptd["n"].keys()) == {"b", "c"}
    assert ptd["n"].batch_size == (3, 4) and ptd.get_non_tensor("s") == "two"


SET_GROUP: dict[str, Callable[[PersistentTensorDict, Any], Any]] = {
    "setitem": lambda p, v: p.__setitem__("n", v),
    "set": lambda p, v: p.set("n", v),
    "set nested": lambda p, v: p.set(("n",), v),
}


@pytest.mark.parametrize("write", list(SET_GROUP))
@pytest.mark.parametrize("kind", ["dict", "TensorDict"])
def test_a_collection_set_over_a_group_is_merged_into_it_as_the_peer(
    ptd: PersistentTensorDict, write: str, kind: str
) -> None:
    """The peer's file updates the group (the entries the value lacks stay), silently;
    a TensorDict's set replaces it."""
    value: Any = {"c": torch.ones(3, 4)}
    if kind == "TensorDict":
        value = TensorDict(value, [3, 4])
    ptd["n", "b"] = torch.full((3, 4, 2), 5.0)
    _quiet(lambda: SET_GROUP[write](ptd, value))
    assert set(ptd["n"].keys()) == {"b", "c"} and ptd["n"].batch_size == (3, 4)
    assert (ptd["n", "b"] == 5).all() and (ptd["n", "c"] == 1).all()


def _quiet(call: Callable[[], Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", EntryReplacedWarning)
        call()


def test_writes_that_replace_nothing_or_that_the_peer_leaves_silent_do_not_warn(
    ptd: PersistentTensorDict,
) -> None:
    _quiet(lambda: ptd.set("new", torch.ones(3, 4)))  # a new key
    _quiet(lambda: ptd.set("a", torch.full((3, 4), 2.0), inplace=True))  # written into it
    _quiet(lambda: ptd.__setitem__("a", torch.full((3, 4), 3.0)))  # as the peer's ptd[k] = v
    _quiet(lambda: ptd.update({"a": torch.full((3, 4), 4.0)}))  # tclass's own writes use it
    _quiet(lambda: ptd.rename_key_("new", "a2"))
    assert (ptd["a"] == 4).all() and "a2" in ptd.keys()


def test_a_refused_replacement_neither_warns_nor_changes_the_file(
    ptd: PersistentTensorDict,
) -> None:
    ptd.set_non_tensor("s", "before")
    with warnings.catch_warnings():
        warnings.simplefilter("error", EntryReplacedWarning)
        with pytest.raises(NotSerializableError):
            ptd.set_non_tensor("s", object())
        with pytest.raises(GradError):
            ptd.set("a", grad(3, 4))
    assert ptd.get_non_tensor("s") == "before" and not ptd["a"].any()


# --- an entry of the same shape and dtype is written into --------------------------------------


def open_again(path: Path, backend: str, mode: str = "r+") -> PersistentTensorDict:
    if backend == "h5":
        return PersistentTensorDict.from_h5(path, mode=mode, batch_size=[3])
    return PersistentTensorDict.from_zarr(path, mode=mode, batch_size=[3])


def laid_out(path: Path, backend: str) -> Path:
    """A file holding ``x`` (3, 4) in chunks of one row, compressed, and ``n/b`` (3, 4, 2)
    in chunks of two rows, written by the library itself."""
    if backend == "h5":
        import h5py

        with h5py.File(path, "w") as file:
            file.create_dataset("x", data=np.zeros((3, 4), "f4"), chunks=(1, 4), compression="gzip")
            file.create_group("n").create_dataset("b", data=np.zeros((3, 4, 2)), chunks=(2, 4, 2))
    else:
        import zarr
        from zarr.codecs import GzipCodec

        root = zarr.open_group(path, mode="w")
        x = root.create_array("x", shape=(3, 4), dtype="f4", chunks=(1, 4), compressors=GzipCodec())
        x[...] = 0
        b = root.create_group("n").create_array("b", shape=(3, 4, 2), dtype="f8", chunks=(2, 4, 2))
        b[...] = 0
    return path


def layout(path: Path, backend: str) -> dict[str, Any]:
    """The chunks and compression of ``x`` and ``n/b``, as the library reads them."""
    if backend == "h5":
        import h5py

        with h5py.File(path, "r") as file:
            return {k: (file[k].chunks, file[k].compression, file[k].dtype) for k in ("x", "n/b")}
    import zarr

    root = zarr.open_group(path, mode="r")
    return {k: (root[k].chunks, str(root[k].compressors), root[k].dtype) for k in ("x", "n/b")}


SAME_SHAPE: dict[str, Callable[[PersistentTensorDict, float], Any]] = {
    "setitem": lambda p, v: p.__setitem__("x", torch.full((3, 4), v)),
    "set": lambda p, v: p.set("x", torch.full((3, 4), v)),
    "update": lambda p, v: p.update(
        {"x": torch.full((3, 4), v), "n": {"b": torch.full((3, 4, 2), v, dtype=torch.float64)}}
    ),
    "nested set": lambda p, v: p.set(("n", "b"), torch.full((3, 4, 2), v, dtype=torch.float64)),
    "update from a TensorDict": lambda p, v: p.update(
        TensorDict({"x": torch.full((3, 4), v)}, [3])
    ),
}


@pytest.mark.parametrize("write", list(SAME_SHAPE))
def test_a_same_shape_write_keeps_the_chunks_and_compression(
    tmp_path: Path, backend: str, write: str
) -> None:
    path = laid_out(tmp_path / f"f.{backend}", backend)
    before = layout(path, backend)
    ptd = open_again(path, backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EntryReplacedWarning)  # set warns, as the peer's
        SAME_SHAPE[write](ptd, 5.0)
    ptd.close()
    assert layout(path, backend) == before
    reopened = open_again(path, backend, "r")
    written = reopened["n", "b"] if write == "nested set" else reopened["x"]
    assert (written == 5).all()
    reopened.close()


def test_set_of_the_same_shape_warns_with_the_peers_words_and_says_it_wrote_in_place(
    ptd: PersistentTensorDict,
) -> None:
    with pytest.warns(EntryReplacedWarning, match="^Replacing an array") as caught:
        ptd.set("a", torch.ones(3, 4))  # the peer replaces it, and warns
    assert "wrote into '" in str(caught[0].message) and "in place" in str(caught[0].message)
    assert (ptd["a"] == 1).all()


def test_same_shape_writes_do_not_grow_an_hdf5_file(tmp_path: Path) -> None:
    pytest.importorskip("h5py")
    path = tmp_path / "loop.h5"
    source = TensorDict({k: torch.zeros(100, 1000) for k in ("a", "x", "y")}, [100])
    PersistentTensorDict.from_dict(source, path).close()
    size = path.stat().st_size
    ptd = PersistentTensorDict.from_h5(path, mode="r+")
    for step in range(50):  # a training loop writing its state each step
        ptd["x"] = torch.full((100, 1000), float(step))
        ptd.update({"y": torch.full((100, 1000), -float(step))})
        if step % 10 == 9:
            ptd.close()  # the space HDF5 frees is lost once the file is closed
            assert path.stat().st_size == size
            ptd = PersistentTensorDict.from_h5(path, mode="r+")
    assert (ptd["x"] == 49).all() and (ptd["y"] == -49).all() and not ptd["a"].any()
    ptd.close()


def test_another_shape_or_dtype_still_replaces_the_entry(tmp_path: Path, backend: str) -> None:
    path = laid_out(tmp_path / f"f.{backend}", backend)
    ptd = open_again(path, backend)
    with pytest.warns(EntryReplacedWarning, match="deleted '.*' at '/x' and wrote a new one"):
        ptd.set("x", torch.arange(12).reshape(3, 4))  # int64 into float32
    ptd["n", "b"] = torch.ones(3, 4, 5)  # another shape, silent as the peer's setitem
    ptd.close()
    reopened = open_again(path, backend, "r")
    assert reopened["x"].dtype == torch.int64 and reopened["x"].tolist()[2] == [8, 9, 10, 11]
    assert reopened["n", "b"].shape == (3, 4, 5) and (reopened["n", "b"] == 1).all()
    reopened.close()
    layouts = layout(path, backend)
    if backend == "h5":  # written as new datasets, without the old ones' settings
        assert layouts["x"][:2] == (None, None) and layouts["n/b"][0] is None


def test_locked_and_read_only_files_still_refuse(tmp_path: Path, backend: str) -> None:
    path = laid_out(tmp_path / f"f.{backend}", backend)
    ptd = open_again(path, backend)
    ptd.lock_()
    with pytest.raises(LockedError, match="Cannot modify locked .*cannot set 'x'"):
        ptd.set("x", torch.ones(3, 4))
    with pytest.raises(LockedError):
        ptd.set("x", torch.ones(3, 4, 2))
    ptd["x"] = torch.full((3, 4), 2.0)  # written into, as the peer's locked setitem
    ptd.close()
    read_only = open_again(path, backend, "r")
    for write in SAME_SHAPE.values():
        with pytest.raises(FilePermissionError, match=str(path.name)):
            write(read_only, 7.0)
    # A new key too; also a ValueError, as h5py's error the peer passes on for it.
    with pytest.raises(ValueError, match="read-only \\(mode='r'\\); open it with mode='r\\+'"):
        read_only.set("new", torch.ones(3, 4))
    assert "new" not in read_only.keys()
    assert (read_only["x"] == 2).all() and not read_only["n", "b"].any()
    read_only.close()


IN_PLACE: dict[str, Callable[[PersistentTensorDict], Any]] = {
    "update_": lambda p: p.update_({"x": torch.ones(3, 4)}),
    "add_": lambda p: p.add_(1),
    "mul_ of a view": lambda p: p[1:].mul_(2),
    "copy_": lambda p: p.copy_(p.to_tensordict() + 1),
    "apply_": lambda p: p.apply_(lambda x: x + 1),
    "update_at_": lambda p: p.update_at_({"x": torch.ones(4)}, 0),
}


@pytest.mark.parametrize("write", list(IN_PLACE))
def test_a_read_only_file_refuses_in_place_writes_the_peer_drops(
    tmp_path: Path, backend: str, write: str
) -> None:
    # The peer's update_, add_ and copy_ into an HDF5 file opened with mode="r" return
    # as if they had written, and the file keeps its old values: refused here, naming the fix.
    path = laid_out(tmp_path / f"f.{backend}", backend)
    read_only = open_again(path, backend, "r")
    with pytest.raises(FilePermissionError, match=f"{path.name}.*open it with mode='r\\+'"):
        IN_PLACE[write](read_only)
    read_only.close()
    reopened = open_again(path, backend, "r")
    assert not reopened["x"].any() and not reopened["n", "b"].any()
    reopened.close()


# --- mistakes: TclassErrors naming the entry, and nothing written --------------------------


def _unchanged(ptd: PersistentTensorDict) -> None:
    assert set(ptd.keys()) == {"a", "n"}
    assert torch.equal(ptd["a"], torch.zeros(3, 4)) and torch.equal(
        ptd["n", "b"], torch.zeros(3, 4, 2)
    )


def test_update_in_place_of_a_key_the_file_lacks_writes_nothing(ptd: PersistentTensorDict) -> None:
    for source in (
        {"a": torch.ones(3, 4), "zzz": torch.ones(3, 4)},
        {"n": {"zzz": torch.ones(3, 4)}},
    ):
        with pytest.raises(KeyNotFoundError, match="zzz"):
            ptd.update_(source)
        _unchanged(ptd)
    ptd.update_({"a": torch.ones(3, 4), "zzz": torch.ones(3, 4)}, keys_to_update=["a"])
    assert torch.equal(ptd["a"], torch.ones(3, 4)) and "zzz" not in ptd.keys()


def test_update_in_place_of_a_missing_collection_without_entries_writes_nothing(
    ptd: PersistentTensorDict,
) -> None:
    """Nothing to write, as a TensorDict's ``update_`` (and the peer's file): no error,
    and no group made."""
    for source in (
        {"zz": TensorDict({}, [3, 4])},
        {"zz": {}, "a": torch.ones(3, 4)},
        {"n": {"zz": {"q": TensorDict({}, [3, 4])}}},
    ):
        ptd.update_(source)
        assert set(ptd.keys(True)) == {"a", "n", ("n", "b")}
    assert torch.equal(ptd["a"], torch.ones(3, 4))  # the rest was written
    with pytest.raises(KeyNotFoundError, match="zz"):
        ptd.update_({"zz": {"q": {}, "r": torch.ones(3, 4)}})


def test_a_key_through_a_tensor_is_a_key_through_tensor_error(ptd: PersistentTensorDict) -> None:
    """As a TensorDict's (a ``KeyError`` and a ``ValueError``); nothing is written."""
    for write in (
        lambda: ptd.set(("a", "x"), torch.ones(3, 4)),
        lambda: ptd.set_(("a", "x"), torch.ones(3, 4)),
        lambda: ptd.__setitem__(("a", "x", "y"), torch.ones(3, 4)),
    ):
        with pytest.raises(KeyThroughTensorError, match="'a' holds a tensor or a value"):
            write()
        _unchanged(ptd)


def test_rename_of_a_missing_key_is_a_key_error(ptd: PersistentTensorDict) -> None:
    with pytest.raises(KeyNotFoundError, match="'zzz'"):
        ptd.rename_key_("zzz", "new")
    with pytest.raises(KeyNotFoundError, match="zzz"):
        ptd[1:].rename_key_("zzz", "new")
    _unchanged(ptd)


@pytest.mark.parametrize(
    "write",
    [
        lambda p: p.set_("a", torch.ones(3, 4, 7)),
        lambda p: p.set_at_("a", torch.ones(9), 0),
        lambda p: p.set_at_(("n", "b"), torch.ones(5), (0, 1)),
        lambda p: p[1:].set_at_("a", torch.ones(9), 0),
    ],
    ids=["set_", "set_at_", "set_at_ nested", "rows set_at_"],
)
def test_a_value_that_does_not_broadcast_names_the_entry_and_shapes(
    ptd: PersistentTensorDict, write: Callable[[PersistentTensorDict], Any]
) -> None:
    with pytest.raises(
        InPlaceWriteError, match=r"cannot write a tensor of shape \[(9|5|3, 4, 7)\]"
    ) as info:
        write(ptd)
    assert isinstance(info.value, RuntimeError) and (
        "/a'" in str(info.value) or "'a'" in str(info.value) or "/n/b'" in str(info.value)
    )
    _unchanged(ptd)


@pytest.mark.parametrize(
    ("index", "error", "words"),
    [
        (10, DimError, "10"),
        (-10, DimError, "-10"),
        (torch.tensor([0, 9]), DimError, "9"),
        (torch.ones(5, dtype=torch.bool), DimError, "[5]"),
        (1.5, IndexTypeError, "1.5"),
    ],
    ids=["range", "negative", "tensor", "mask", "float"],
)
def test_rows_at_a_bad_index_are_refused_at_once(
    ptd: PersistentTensorDict, index: Any, error: type[Exception], words: str
) -> None:
    for target in (ptd, ptd[1:]):
        with pytest.raises(error, match=re.escape(words)) as info:
            target[index]
        assert isinstance(info.value, IndexError)


@pytest.mark.parametrize("index", [2, -3, (0, 1)])
def test_rows_written_at_an_index_out_of_range_are_refused_though_nothing_is_written(
    tmp_path: Path, backend: str, index: Any
) -> None:
    # Found by the differential fuzzer: a file with no arrays, or none with elements
    # (batch size [2, 0, 4]), wrote nothing and so refused nothing; the peer's IndexError.
    for batch, entries in (([2, 0, 4], {}), ([2, 0, 4], {"a": torch.zeros(2, 0, 4)})):
        source = TensorDict(entries, batch)
        ptd = PersistentTensorDict.from_dict(source, tmp_path / f"e{len(entries)}.{backend}")
        with pytest.raises(DimError, match="out of range for the batch size") as info:
            ptd[index] = True
        assert isinstance(info.value, IndexError)
        ptd[1] = True  # in range: written (nothing to write over no elements)
        ptd.close()


def test_a_meta_tensor_is_refused_naming_the_entry(ptd: PersistentTensorDict) -> None:
    meta = torch.zeros(3, 4, device="meta")
    with pytest.raises(MetaTensorError, match="/m'") as info:
        ptd.set("m", meta)
    assert isinstance(info.value, NotImplementedError)
    with pytest.raises(MetaTensorError, match="/a'"):
        ptd.set_("a", meta)
    _unchanged(ptd)


def test_to_a_device_the_machine_lacks_is_refused_at_to(ptd: PersistentTensorDict) -> None:
    for target in (ptd, ptd[1:]):
        with pytest.raises(DeviceUnavailableError, match="cuda:97") as info:
            target.to("cuda:97")
        assert isinstance(info.value, AssertionError)


def test_stack_and_cat_with_another_kind_read_the_file(ptd: PersistentTensorDict) -> None:
    memory = data()
    memory["a"] = torch.ones(3, 4)
    stacked = torch.stack([ptd, memory], 0)
    assert type(stacked) is TensorDict and stacked.batch_size == (2, 3, 4)
    assert torch.equal(stacked["a"], torch.stack([torch.zeros(3, 4), torch.ones(3, 4)]))
    joined = torch.cat([ptd, ptd[:2]], 0)
    assert type(joined) is TensorDict and joined.batch_size == (5, 4)
    assert torch.equal(joined["n", "b"], torch.zeros(5, 4, 2))


@tensorclass
class _Rows:
    a: torch.Tensor
    n: Any


def test_cat_of_a_file_and_a_record_reads_the_file(ptd: PersistentTensorDict) -> None:
    # as torch.cat([td, record]) in both libraries: a TensorDict (the peer's too)
    record = _Rows(a=torch.ones(3, 4), n=TensorDict(b=torch.ones(3, 4, 2)), batch_size=[3, 4])
    joined = torch.cat([ptd, record], 0)
    assert type(joined) is TensorDict and joined.batch_size == (6, 4)
    assert torch.equal(joined["n", "b"], torch.cat([torch.zeros(3, 4, 2), torch.ones(3, 4, 2)]))
    back = torch.cat([record, ptd[:1]], 0)
    assert type(back) is _Rows and back.batch_size == (4, 4)
    assert torch.equal(back.a, torch.cat([torch.ones(3, 4), torch.zeros(1, 4)]))
    with pytest.raises(TypeError, match="member 1 is a _Rows"):
        torch.stack([ptd, record], 0)  # stack refuses records with TensorDicts (as the peer)


@pytest.mark.parametrize(
    "write",
    [
        lambda p: p.__setitem__(
            (slice(0, 2), ..., -3), {"a": torch.ones(2), "n": {"b": torch.ones(2, 2)}}
        ),
        lambda p: p.set_at_(("n", "b"), torch.ones(2, 2), (slice(0, 2), -3, ...)),
        lambda p: p.set_at_("a", torch.ones(2), (slice(0, 2), ..., 1)),
    ],
)
def test_an_ellipsis_in_the_rows_written_spans_the_batch_dims_only(
    ptd: PersistentTensorDict, write: Callable[[PersistentTensorDict], Any]
) -> None:
    """``...`` of a collection's rows covers the remaining batch dims (as in a TensorDict,
    and the peer's file), not each array's own dims: ``n/b`` (shape [3, 4, 2]) is written
    at batch column -3 or 1 (the same), not at its last dim. ``set_at_`` of one array
    indexes that array (its ``...`` its own dims, below)."""
    write(ptd)
    expected = torch.zeros(3, 4)
    expected[:2, 1] = 1
    if "a" in ptd.keys() and ptd["a"].any():
        assert torch.equal(ptd["a"], expected)
    if ptd["n", "b"].any():
        assert torch.equal(ptd["n", "b"], expected.unsqueeze(-1).expand(3, 4, 2))
    assert ptd["a"].any() or ptd["n", "b"].any()


def test_set_at__of_an_array_indexes_its_own_dims(ptd: PersistentTensorDict) -> None:
    """As ``tensor[index] = value`` (a TensorDict's ``set_at_`` and the peer's file):
    ``...`` covers the array's own dims, a mask selecting nothing writes nothing (program
    55,636 of index,entries: an InPlaceWriteError, the index spelled out over the batch)."""
    with pytest.raises(IndexError, match="out of bounds"):
        ptd.set_at_(("n", "b"), torch.ones(2, 2), (slice(0, 2), ..., -3))  # its last dim
    none = torch.tensor([False, False, False, False])
    ptd.set_at_(("n", "b"), ptd["n", "b"][..., none, -1] + 1, (..., none, -1))
    ptd.set_at_(("n", "b"), torch.ones(3, 4), (..., -1))
    assert torch.equal(ptd["n", "b"], torch.stack([torch.zeros(3, 4), torch.ones(3, 4)], -1))
    assert not ptd["a"].any()


# --- rename_key_ onto a group that exists -----------------------------------------------------


def test_rename_key_onto_an_existing_group_replaces_it_whole(ptd: PersistentTensorDict) -> None:
    """As a TensorDict's entry (and the peer's file): the group at the new key is replaced,
    not merged into (fz40c)."""
    ptd.set(("m", "c"), torch.ones(3, 4))
    ptd.set(("k", "g", "r"), torch.full((3, 4), 2.0))
    ptd.rename_key_(("k", "g"), "m")
    assert sorted(ptd["m"].keys()) == ["r"] and (ptd["m", "r"] == 2).all()
    assert not list(ptd["k"].keys())


def test_rename_key_onto_its_own_group_keeps_only_what_it_held(
    ptd: PersistentTensorDict,
) -> None:
    ptd.set(("z", "a", "q"), torch.full((3, 4), 5.0))
    ptd.rename_key_(("z", "a"), "z")
    assert sorted(ptd["z"].keys()) == ["q"] and (ptd["z", "q"] == 5).all()
