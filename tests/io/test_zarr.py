"""``PersistentTensorDict`` over zarr (the optional ``tclass[zarr]`` extra, zarr>=3.1.1):
``TensorDict.from_zarr``, ``collection.to_zarr``, ``PersistentTensorDict(...,
backend="zarr")`` and ``from_any(zarr.Group)``, through the same Store protocol as HDF5.

Round trips (nested groups, Python values, every dtype the format holds, batch sizes),
reads and writes of selected rows, locks, closing, pickles only when allowed, stores
the peer writes and reads, and the error naming the extra when zarr is missing (which
runs without zarr too).
"""

from __future__ import annotations

import json
import pickle
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import tclass
from tclass import NonTensorData, NonTensorStack, PersistentTensorDict, TensorClass, TensorDict
from tclass._io.store._view import PersistentTensorDictView
from tclass.errors import (
    ClosedFileError,
    FilePermissionError,
    LockedError,
    MetadataError,
    MissingDependencyError,
    NotSerializableError,
    PickleRefusedError,
    SchemaMismatchError,
    TclassError,
    UnsupportedError,
)

from store_samples import sample as store_sample  # noqa: E402
from strategies import python_value  # noqa: E402


def test_without_zarr_the_error_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``tclass._io._optional.need`` answers when zarr cannot be imported."""
    monkeypatch.setitem(sys.modules, "zarr", None)  # as if it were not installed
    data = TensorDict(a=torch.zeros(2), batch_size=[2])
    for call in (
        lambda: data.to_zarr(tmp_path / "x.zarr"),
        lambda: TensorDict.from_zarr(tmp_path / "x.zarr"),
        lambda: tclass.from_zarr(str(tmp_path / "x.zarr")),
        lambda: PersistentTensorDict(filename=tmp_path / "x.zarr", backend="zarr", mode="w"),
        lambda: TensorDict.from_schema({"a": ([], torch.float32)}, storage="zarr", filename="x"),
    ):
        with pytest.raises(MissingDependencyError, match=r"tclass\[zarr\]") as info:
            call()
        assert isinstance(info.value, ImportError) and isinstance(info.value, TclassError)
    assert not list(tmp_path.iterdir())  # nothing created


zarr = pytest.importorskip("zarr")


def test_an_old_zarr_is_refused_with_the_version_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zarr, "__version__", "2.18.4")
    with pytest.raises(MissingDependencyError, match=r"zarr>=3\.1\.1.*2\.18\.4"):
        TensorDict(a=torch.zeros(2)).to_zarr(tmp_path / "x.zarr")


def sample() -> TensorDict:
    """The HDF5 tests' collection, with per-row values and a nested Python value."""
    data = store_sample()
    data["tags"] = NonTensorStack("a", "b", "c", "d")
    data["info"] = NonTensorStack(*({"step": i, "ok": [True, None]} for i in range(4)))
    data.set_non_tensor("config", {"lr": 0.1, "layers": [64, 64]})
    return data


def same(a: Any, b: Any) -> bool:
    """The same keys, and equal tensors under them."""
    keys = sorted(a.keys(True, True), key=str)
    if keys != sorted(b.keys(True, True), key=str):
        return False
    tensors = [key for key in keys if isinstance(a.get(key), torch.Tensor)]
    return bool(tensors) and all(torch.equal(a.get(key), b.get(key)) for key in tensors)


@pytest.fixture
def saved(tmp_path: Path) -> Iterator[PersistentTensorDict]:
    ptd = sample().to_zarr(tmp_path / "data.zarr")
    yield ptd
    ptd.close()


# --- round trips -----------------------------------------------------------------------


def test_to_zarr_writes_arrays_and_groups(tmp_path: Path, saved: PersistentTensorDict) -> None:
    assert isinstance(saved, PersistentTensorDict) and saved.batch_size == (4,)
    assert isinstance(saved.file, zarr.Group) and saved.mode == "w"
    saved.close()
    group = zarr.open_group(tmp_path / "data.zarr", mode="r")
    assert group["obs"].dtype == np.uint8 and group["obs"].shape == (4, 3)
    assert group["obs"].chunks == (4, 3)  # one chunk per array, as the peer's default
    assert isinstance(group["next"], zarr.Group) and group["next/x"].shape == (4, 2, 2)
    assert group.attrs["__tensordict__"] == {"batch_size": [4], "version": 1}  # the peer's
    assert json.loads(group.attrs["_tclass"]) == {"batch_size": [4]}


def test_from_zarr_reads_back_what_to_zarr_wrote(
    tmp_path: Path, saved: PersistentTensorDict
) -> None:
    saved.close()
    for opened in (
        PersistentTensorDict.from_zarr(tmp_path / "data.zarr"),
        TensorDict.from_zarr(tmp_path / "data.zarr"),
        tclass.from_zarr(str(tmp_path / "data.zarr")),
        PersistentTensorDict(filename=tmp_path / "data.zarr", backend="zarr", batch_size=[4]),
    ):
        assert isinstance(opened, PersistentTensorDict) and opened.batch_size == (4,)
        assert isinstance(opened["next"], PersistentTensorDict)
        assert opened["next"].batch_size == (4,)
        assert python_value(opened["env"]) == "pong"
        assert python_value(opened["tags"]) == ["a", "b", "c", "d"]
        assert python_value(opened["info"])[2] == {"step": 2, "ok": [True, None]}
        assert python_value(opened["config"]) == {"lr": 0.1, "layers": [64, 64]}
        assert same(opened.to_tensordict(), sample())
        opened.close()


@pytest.mark.parametrize(
    "dtype",
    [
        torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
        torch.uint16, torch.uint32, torch.uint64, torch.float16, torch.float32,
        torch.float64, torch.complex64, torch.complex128,
    ],
)  # fmt: skip
def test_every_dtype_zarr_holds_round_trips(tmp_path: Path, dtype: torch.dtype) -> None:
    data = (torch.arange(12) % 3).to(dtype).reshape(4, 3)
    TensorDict(x=data, batch_size=[4]).to_zarr(tmp_path / "d.zarr").close()
    opened = TensorDict.from_zarr(tmp_path / "d.zarr")
    assert opened["x"].dtype == dtype and torch.equal(opened["x"], data)
    opened.close()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn])
def test_dtypes_zarr_lacks_are_a_clear_error(tmp_path: Path, dtype: torch.dtype) -> None:
    data = TensorDict(x=torch.zeros(2, dtype=dtype), batch_size=[2])
    name = str(dtype).removeprefix("torch.")
    with pytest.raises(UnsupportedError, match=f"zarr has no {name}; convert"):
        data.to_zarr(tmp_path / "b.zarr")
    written = TensorDict(y=torch.zeros(2), batch_size=[2]).to_zarr(tmp_path / "c.zarr")
    with pytest.raises(NotImplementedError, match=f"zarr has no {name}"):
        written["x"] = torch.zeros(2, dtype=dtype)
    assert set(written.keys()) == {"y"}
    written.close()


@pytest.mark.parametrize("batch", [(), (4,), (4, 3)])
def test_batch_sizes_are_kept(tmp_path: Path, batch: tuple[int, ...]) -> None:
    data = TensorDict(a=torch.zeros(4, 3, 2), n={"b": torch.ones(4, 3)}, batch_size=batch)
    data.to_zarr(tmp_path / "b.zarr").close()
    opened = TensorDict.from_zarr(tmp_path / "b.zarr")
    assert opened.batch_size == batch and opened["n"].batch_size == batch
    opened.close()
    flat = TensorDict(a=torch.zeros(4, 3, 2), batch_size=batch).to_zarr(tmp_path / "f.zarr")
    flat.close()
    wider = TensorDict.from_zarr(tmp_path / "f.zarr", batch_size=[4, 3])  # checked, kept
    assert wider.batch_size == (4, 3)
    wider.close()
    with pytest.raises(TclassError, match="does not fit"):
        TensorDict.from_zarr(tmp_path / "f.zarr", batch_size=[5])


def test_a_store_another_tool_wrote_opens(tmp_path: Path) -> None:
    group = zarr.open_group(tmp_path / "o.zarr", mode="w")
    group.create_array("x", data=np.arange(6).reshape(3, 2))
    group.create_array("names", data=np.array(["a", "bb", "c"], dtype=np.dtypes.StringDType()))
    group.create_group("g").create_array("y", data=np.ones(3, dtype="f2"))
    opened = TensorDict.from_zarr(tmp_path / "o.zarr")
    assert opened.batch_size == (3,)  # the largest batch the arrays share
    assert opened["x"].dtype == torch.int64 and opened["g", "y"].dtype == torch.float16
    assert python_value(opened["names"]) == ["a", "bb", "c"]
    opened.close()
    rows = TensorDict.from_zarr(tmp_path / "o.zarr", non_tensor_as_stack=True)
    assert isinstance(rows.get("names"), NonTensorStack)
    assert python_value(rows[1:]["names"]) == ["bb", "c"]
    rows.close()


def test_one_value_whose_bytes_match_the_rows_is_not_taken_per_row(tmp_path: Path) -> None:
    data = TensorDict(x=torch.zeros(4), batch_size=[4])
    data.set_non_tensor("tag", "ab")  # written as the 4 bytes '"ab"'
    data.to_zarr(tmp_path / "v.zarr").close()
    rows = TensorDict.from_zarr(tmp_path / "v.zarr", non_tensor_as_stack=True)
    assert isinstance(rows.get("tag"), NonTensorData) and python_value(rows["tag"]) == "ab"
    rows.close()


# --- reads and writes of rows ----------------------------------------------------------


@pytest.mark.parametrize(
    "index",
    [1, -1, slice(1, 3), slice(0, 4, 2), [0, 3], torch.tensor([3, 1, 1]),
     torch.tensor([True, False, True, False]), (slice(None),)],
    ids=["int", "negative", "slice", "step", "list", "tensor", "mask", "tuple"],
)  # fmt: skip
def test_indexing_gives_a_view_of_the_rows(saved: PersistentTensorDict, index: Any) -> None:
    rows = saved[index]
    expected = sample()[index]
    assert type(rows) is PersistentTensorDictView and rows.batch_size == expected.batch_size
    assert type(rows.to_tensordict()) is TensorDict and same(rows.to_tensordict(), expected)
    assert torch.equal(saved.get_at("reward", index), expected["reward"])


def test_writes_reach_the_store(tmp_path: Path, saved: PersistentTensorDict) -> None:
    saved[1:3] = TensorDict(reward=torch.tensor([9.0, 8.0]), batch_size=[2])
    saved[0] = {"obs": torch.full((3,), 7, dtype=torch.uint8)}
    saved.set_at_("reward", torch.tensor(-1.0), 3)
    saved["next", "extra"] = torch.ones(4, 5)
    saved["label"] = "breakout"
    saved.set_("obs", torch.zeros(4, 3, dtype=torch.uint8))
    saved["next"].zero_()
    saved.apply_(lambda t: t * 2 if t.is_floating_point() else t)
    saved.close()
    opened = TensorDict.from_zarr(tmp_path / "data.zarr")
    assert opened["reward"].tolist() == [0.0, 18.0, 16.0, -2.0]
    assert not opened["obs"].any() and not opened["next", "x"].any()
    assert opened["next", "extra"].shape == (4, 5) and python_value(opened["label"]) == "breakout"
    opened.close()


def test_deletes_renames_and_a_read_only_store(tmp_path: Path, saved: PersistentTensorDict) -> None:
    del saved["obs"]
    saved.rename_key_("reward", "r")
    saved.rename_key_("next", "later")  # a group: copied, then removed
    with pytest.raises(KeyError, match="'r' already present in TensorDict"):  # the peer's words
        saved.rename_key_("later", "r", safe=True)
    assert sorted(saved.keys()) == ["config", "env", "info", "later", "r", "tags"]
    assert saved["later", "x"].shape == (4, 2, 2) and saved["later"].batch_size == (4,)
    saved.close()
    read_only = TensorDict.from_zarr(tmp_path / "data.zarr")
    assert sorted(read_only.keys()) == ["config", "env", "info", "later", "r", "tags"]
    with pytest.raises(FilePermissionError, match="mode='r\\+'"):
        read_only["new"] = torch.zeros(4)
    read_only.close()


def test_chunks_and_compressors_reach_the_arrays(tmp_path: Path) -> None:
    data = TensorDict(a=torch.arange(40.0).reshape(10, 4), b=torch.zeros(10), batch_size=[10])
    written = data.to_zarr(tmp_path / "c.zarr", chunks=(3,))
    assert written.file["a"].chunks == (3, 4) and written.file["b"].chunks == (3,)
    assert torch.equal(written[4:9]["a"], data["a"][4:9])
    written.close()
    codec = zarr.codecs.ZstdCodec(level=3)
    packed = data.to_zarr(tmp_path / "z.zarr", compressors=[codec])
    assert packed.file["a"].compressors and torch.equal(packed["a"], data["a"])
    packed.close()


# --- locks, closing, pickling ------------------------------------------------------------


def test_locking_and_closing(saved: PersistentTensorDict) -> None:
    with saved.lock_():
        assert saved.is_locked and saved["next"].is_locked
        saved["reward"] = torch.ones(4)  # into the existing array, as the peer
        with pytest.raises(LockedError):
            saved["new"] = torch.zeros(4)
        with pytest.raises(LockedError):
            del saved["obs"]
    assert not saved.is_locked and saved["reward"].tolist() == [1.0] * 4
    saved.close()
    with pytest.raises(ClosedFileError, match="zarr store .* is closed"):
        saved["reward"]  # noqa: B018
    assert "closed" in repr(saved)
    saved.close()  # again: nothing to do


def test_pickling_reopens_the_store(saved: PersistentTensorDict) -> None:
    nested = pickle.loads(pickle.dumps(saved["next"]))
    assert isinstance(nested, PersistentTensorDict) and nested.batch_size == (4,)
    assert torch.equal(nested["x"], sample()["next", "x"])
    nested.close()


def test_from_any_and_the_group_argument_take_a_zarr_group(tmp_path: Path) -> None:
    sample().to_zarr(tmp_path / "g.zarr").close()
    group = zarr.open_group(tmp_path / "g.zarr", mode="r+")
    opened = TensorDict.from_any(group)
    assert isinstance(opened, PersistentTensorDict) and opened.mode == "r+"
    assert torch.equal(opened["next", "x"], sample()["next", "x"])
    held = tclass.from_any({"store": group["next"], "n": torch.zeros(4)})
    assert isinstance(held["store"], PersistentTensorDict)
    assert torch.equal(held["store", "done"], sample()["next", "done"])
    given = TensorDict.from_zarr(group)  # an open group: its saved batch size
    assert given.batch_size == (4,) and given.filename.endswith("g.zarr")
    explicit = PersistentTensorDict(group=group["next"], batch_size=[4])
    assert explicit.batch_size == (4,) and sorted(explicit.keys()) == ["done", "x"]
    with pytest.raises(TypeError, match="zarr.Group"):
        PersistentTensorDict(group={"a": 1}, backend="zarr")


# --- pickles, only when allowed --------------------------------------------------------


class Opaque:
    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque) and other.value == self.value

    __hash__ = None  # type: ignore[assignment]


def test_values_json_cannot_hold_need_allow_pickle(tmp_path: Path) -> None:
    data = TensorDict(a=torch.zeros(2), batch_size=[2])
    data.set_non_tensor("o", Opaque(3))
    with pytest.raises(NotSerializableError, match=r"Opaque.*allow_pickle=True"):
        data.to_zarr(tmp_path / "p.zarr")
    written = data.to_zarr(tmp_path / "p.zarr", allow_pickle=True)
    assert written["o"] == Opaque(3)  # it wrote them: it reads them (the value, as td["o"])
    kept = TensorDict(a=torch.zeros(2), batch_size=[2]).to_zarr(tmp_path / "k.zarr")
    kept.set_non_tensor("s", "before")
    with pytest.raises(NotSerializableError):
        kept.set_non_tensor("s", Opaque(1))
    assert python_value(kept["s"]) == "before"  # the refused write changed nothing
    kept.close()
    written.close()
    refusing = TensorDict.from_zarr(tmp_path / "p.zarr")
    with pytest.raises(PickleRefusedError, match="allow_pickle=True"):
        refusing["o"]  # noqa: B018
    assert refusing["a"].shape == (2,)  # the rest reads
    refusing.close()
    allowing = TensorDict.from_zarr(tmp_path / "p.zarr", allow_pickle=True)
    assert allowing["o"] == Opaque(3)
    allowing.close()


# --- records ---------------------------------------------------------------------------


class Meta(TensorClass):
    score: torch.Tensor
    tag: str


class Run(TensorClass):
    obs: torch.Tensor
    meta: Meta
    env: str


class Other(TensorClass):
    obs: torch.Tensor


def run() -> Run:
    meta = Meta(score=torch.ones(3), tag="m", batch_size=[3])
    return Run(obs=torch.arange(6.0).view(3, 2), meta=meta, env="pong", batch_size=[3])


def test_records_over_a_zarr_store(tmp_path: Path) -> None:
    written = run().to_zarr(tmp_path / "r.zarr")
    assert type(written) is Run and type(written.meta) is Meta and written.env == "pong"
    written.env = "breakout"
    written.close()
    opened = Run.from_zarr(tmp_path / "r.zarr")
    assert type(opened) is Run and type(opened.meta) is Meta and opened.meta.tag == "m"
    assert opened.env == "breakout" and torch.equal(opened.obs, run().obs)
    rows = opened[1:]
    assert type(rows) is Run and type(rows.meta) is Meta
    saved = opened.memmap(tmp_path / "folder")  # read array by array into the folder
    assert type(saved) is Run and torch.equal(saved.obs, run().obs)
    opened.close()
    Other(obs=torch.zeros(3, 2), batch_size=[3]).to_zarr(tmp_path / "other.zarr").close()
    with pytest.raises(SchemaMismatchError) as info:
        Run.from_zarr(tmp_path / "other.zarr")  # meta and env were never fields there
    assert sorted((d.field, d.kind) for d in info.value.differences) == [
        ("env", "missing"),
        ("meta", "missing"),
    ]


def test_from_schema_allocates_a_zarr_store(tmp_path: Path) -> None:
    schema = {"obs": ([3], torch.uint8), ("n", "r"): ([], torch.float32)}
    made = TensorDict.from_schema(schema, batch_size=[5], storage="zarr", filename=tmp_path / "s")
    assert isinstance(made, PersistentTensorDict) and made["obs"].shape == (5, 3)
    assert not made["n", "r"].any()
    made.close()


# --- damaged or crafted stores -----------------------------------------------------------


def _edit(path: Path, change: Any) -> None:
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


def test_crafted_stores_are_refused(tmp_path: Path) -> None:
    data = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
    data.set_non_tensor("v", {"k": 1})
    data["s"] = NonTensorStack("x", "y", "z")
    data.to_zarr(tmp_path / "c.zarr").close()
    store = tmp_path / "c.zarr"

    def crafted_shape(meta: dict[str, Any]) -> None:  # in the consolidated metadata
        meta["consolidated_metadata"]["metadata"]["a"].update(shape=[2**62, 2**10])

    _edit(store / "zarr.json", crafted_shape)  # what a reader reads through
    with pytest.raises(MetadataError, match="too large"):
        TensorDict.from_zarr(store)
    _edit(store / "zarr.json", lambda m: m.pop("consolidated_metadata"))  # each node's, then
    _edit(store / "a" / "zarr.json", lambda m: m.update(shape=[2**62, 2**10]))
    with pytest.raises(MetadataError, match="too large"):
        TensorDict.from_zarr(store)
    _edit(store / "a" / "zarr.json", lambda m: m.update(shape=[3, 2]))

    _edit(store / "s" / "zarr.json", lambda m: m["attributes"].update(__tensordict_stack__=[4]))
    with pytest.raises(MetadataError, match="__tensordict_stack__"):
        TensorDict.from_zarr(store)
    _edit(store / "s" / "zarr.json", lambda m: m["attributes"].update(__tensordict_stack__=[3]))

    unknown = {"__tensordict_non_tensor__": {"encoding": "marshal"}}
    _edit(store / "v" / "zarr.json", lambda m: m["attributes"].update(unknown))
    opened = TensorDict.from_zarr(store)
    with pytest.raises(MetadataError, match="marshal"):
        opened["v"]  # noqa: B018
    opened.close()

    deep = "[" * 300 + "]" * 300
    TensorDict(a=torch.zeros(3), batch_size=[3]).to_zarr(tmp_path / "d.zarr").close()
    group = zarr.open_group(tmp_path / "d.zarr", mode="r+")
    group.attrs["_tclass"] = deep
    with pytest.raises(MetadataError, match="nested"):
        TensorDict.from_zarr(tmp_path / "d.zarr")


def test_to_zarr_writes_consolidated_metadata_kept_true(tmp_path: Path) -> None:
    written = sample().to_zarr(tmp_path / "c.zarr")

    def listed() -> set[str]:
        root = zarr.open_group(tmp_path / "c.zarr", mode="r")
        consolidated = root.metadata.consolidated_metadata
        assert consolidated is not None  # as the peer's to_zarr writes it
        return set(consolidated.metadata)

    assert {"obs", "next", "env"} <= listed()
    written["added"] = torch.ones(4)
    written.del_("obs")
    assert "added" in listed() and "obs" not in listed()
    written.close()
    reopened = TensorDict.from_zarr(tmp_path / "c.zarr")
    assert "added" in reopened.keys() and "obs" not in reopened.keys()
    reopened.close()


# --- the peer ----------------------------------------------------------------------------


@pytest.mark.peer
@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
def test_stores_the_peer_writes_open(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    theirs = tensordict.TensorDict(
        {"a": torch.arange(6).view(3, 2), "n": {"b": torch.rand(3, 4)}, "s": "hello"},
        batch_size=[3],
    )
    theirs["rows"] = tensordict.NonTensorStack("x", "y", "z")
    theirs["dicts"] = tensordict.NonTensorStack({"u": 1}, {"u": 2}, {"u": 3})
    theirs.to_zarr(tmp_path / "p.zarr").close()  # with consolidated metadata
    mine = TensorDict.from_zarr(tmp_path / "p.zarr")
    assert mine.batch_size == (3,)  # the peer's recorded batch size, not [3, 2]
    assert torch.equal(mine["a"], theirs["a"]) and torch.equal(mine["n", "b"], theirs["n", "b"])
    assert python_value(mine["s"]) == "hello" and python_value(mine["rows"]) == ["x", "y", "z"]
    assert python_value(mine["dicts"]) == [{"u": 1}, {"u": 2}, {"u": 3}]
    mine.close()
    writer = TensorDict.from_zarr(tmp_path / "p.zarr", mode="r+")
    writer["added"] = torch.ones(3)  # the consolidated metadata is kept true
    writer.close()
    again = tensordict.TensorDict.from_zarr(tmp_path / "p.zarr")
    assert "added" in again.keys() and torch.equal(again["added"], torch.ones(3))
    again.close()


@pytest.mark.peer
@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
def test_the_peer_opens_stores_tclass_writes(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    sample().to_zarr(tmp_path / "t.zarr").close()
    theirs = tensordict.TensorDict.from_zarr(tmp_path / "t.zarr")
    expected = sample()
    assert theirs.batch_size == (4,)
    assert torch.equal(theirs["obs"], expected["obs"])
    assert torch.equal(theirs["next", "x"], expected["next", "x"])
    assert theirs["env"] == "pong" and list(theirs["tags"]) == ["a", "b", "c", "d"]
    assert theirs["config"] == {"lr": 0.1, "layers": [64, 64]}
    assert list(theirs["info"])[1] == {"step": 1, "ok": [True, None]}
    theirs.close()


def test_an_append_only_store_is_read(tmp_path: Path) -> None:
    source = tmp_path / "source.zarr"
    sample().to_zarr(source).close()
    with zipfile.ZipFile(tmp_path / "s.zip", "w") as archive:  # the directory store, zipped
        for path in sorted(source.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(source).as_posix())
    reading = zarr.storage.ZipStore(tmp_path / "s.zip", mode="r")
    opened = TensorDict.from_zarr(reading)
    assert opened.batch_size == (4,) and same(opened.to_tensordict(), sample())
    opened.close()


@pytest.mark.filterwarnings("error::UserWarning")  # zipfile's "Duplicate name": none
def test_to_zarr_writes_an_append_only_store_whole_each_key_once(tmp_path: Path) -> None:
    target = tmp_path / "w.zip"
    named = sample()
    named.names = ["t"]
    written = named.to_zarr(zarr.storage.ZipStore(target, mode="w"))
    assert same(written.to_tensordict(), sample())  # readable before it is closed
    assert written.names == ["t"]
    with pytest.raises(FilePermissionError, match="append-only.*holds each key once"):
        written["obs"] = torch.zeros(4, 3)
    with pytest.raises(FilePermissionError, match="directory store"):
        written.zero_()
    written.close()
    names = zipfile.ZipFile(target).namelist()
    assert len(names) == len(set(names)) and "zarr.json" in names
    loaded = TensorDict.from_zarr(zarr.storage.ZipStore(target, mode="r"))
    assert loaded.batch_size == (4,) and same(loaded.to_tensordict(), sample())
    assert loaded.names == ["t"]
    assert loaded["env"] == "pong" and loaded["config"] == {"lr": 0.1, "layers": [64, 64]}
    assert list(loaded["tags"]) == ["a", "b", "c", "d"]
    loaded.close()


def test_an_append_only_store_opens_for_writing_with_an_error(tmp_path: Path) -> None:
    writing = zarr.storage.ZipStore(tmp_path / "w.zip", mode="w")
    with pytest.raises(UnsupportedError, match=r"append-only.*to_zarr\(store\).*mode='r\+'"):
        PersistentTensorDict(filename=writing, mode="r+", backend="zarr")
    assert not (tmp_path / "w.zip").exists()  # refused before anything was written


def test_a_record_round_trips_through_an_append_only_store(tmp_path: Path) -> None:
    class Zipped(TensorClass):
        obs: torch.Tensor
        label: str

    record = Zipped(obs=torch.arange(6.0).reshape(3, 2), label="x", batch_size=[3])
    record.to_zarr(zarr.storage.ZipStore(tmp_path / "r.zip", mode="w")).close()
    loaded = Zipped.from_zarr(zarr.storage.ZipStore(tmp_path / "r.zip", mode="r"))
    assert isinstance(loaded, Zipped) and loaded.label == "x"
    assert torch.equal(loaded.obs, record.obs)
    loaded.close()


@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
def test_the_peer_reads_an_append_only_store_tclass_writes(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    sample().to_zarr(zarr.storage.ZipStore(tmp_path / "w.zip", mode="w")).close()
    theirs = tensordict.TensorDict.from_zarr(zarr.storage.ZipStore(tmp_path / "w.zip", mode="r"))
    assert torch.equal(theirs["obs"], sample()["obs"]) and theirs["env"] == "pong"
    theirs.close()


def test_an_unnamed_store_takes_the_names_of_a_group_written_into_it(tmp_path: Path) -> None:
    # As a TensorDict setting a named collection (and the peer's store): the dims they
    # share take its names, recorded in the store. to_zarr of a collection without names
    # holding a named lazy stack over its batch (from_tuple(..., auto_batch_size=True))
    # reads the names back (program 15,981,543 of methods,features,entries,records L12)
    member = TensorDict({"a": torch.zeros(3)}, [3], names=["q"])
    inner = tclass.lazy_stack([member, member.clone()], 0)
    source = TensorDict.from_tuple((inner,), auto_batch_size=True)  # a root left unnamed
    assert source.names == [None, None] and source["0"].names == [None, "q"]
    source.to_zarr(tmp_path / "s.zarr")
    back = TensorDict.from_zarr(tmp_path / "s.zarr")
    assert back.names == [None, "q"] and back["0"].names == [None, "q"]
    store = PersistentTensorDict.from_dict(
        TensorDict({"a": torch.zeros(2, 3)}, [2, 3]), tmp_path / "t.zarr", backend="zarr"
    )
    store["m"] = TensorDict({"b": torch.ones(2, 3)}, [2, 3], names=[None, "q"])
    assert store.names == [None, "q"] and store["m"].names == [None, "q"]
    assert TensorDict.from_zarr(tmp_path / "t.zarr").names == [None, "q"]
    named = TensorDict({"b": torch.ones(2, 3)}, [2, 3], names=["r", None])
    store["k"] = named  # a named store keeps its names
    assert store.names == [None, "q"]
