"""``PersistentTensorDict`` over HDF5 (the optional ``tclass[h5]`` extra, h5py): a
collection whose entries live in an HDF5 file, read on access.

Opening reads metadata only; reading a key reads that dataset, indexing reads only the
selected rows; writes (``ptd[key] = ...``, ``ptd[idx] = ...``, in-place methods of the
collection) go to the file; groups are nested collections. Files the peer writes load,
and the peer loads what tclass writes. Nothing in a file can make tclass run code: values
are HDF5 strings and numbers, never pickles. The module skips without h5py; the check
that tclass imports without it, and names the extra, runs either way.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pytest
import torch

import tclass
from tclass import (
    NonTensorData,
    NonTensorStack,
    PersistentTensorDict,
    Spec,
    TensorClass,
    TensorDict,
)
from tclass._io.store._view import PersistentTensorDictView
from tclass.errors import MetadataError, SchemaMismatchError, UnsafePathError

from store_samples import sample  # noqa: E402
from strategies import python_value  # noqa: E402

try:
    import jaxtyping
except ImportError:  # pragma: no cover - an optional dependency
    jaxtyping = None


def test_without_h5py_tclass_imports_and_the_error_names_the_extra(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["h5py"] = None  # as if it were not installed
        import torch
        import tclass
        for call in (
            lambda: tclass.PersistentTensorDict.from_h5({str(tmp_path / "x.h5")!r}),
            lambda: tclass.TensorDict(a=torch.zeros(2)).to_h5({str(tmp_path / "y.h5")!r}),
            lambda: tclass.from_h5({str(tmp_path / "x.h5")!r}),
        ):
            try:
                call()
            except ImportError as error:
                assert isinstance(error, tclass.TclassError), type(error)
                assert "tclass[h5]" in str(error), error
            else:
                raise AssertionError("no error")
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
    assert not list(tmp_path.iterdir())  # no file created


h5py = pytest.importorskip("h5py")


def same(a: TensorDict, b: TensorDict) -> bool:
    return bool((a == b).all())


@pytest.fixture
def saved(tmp_path: Path) -> Iterator[PersistentTensorDict]:
    ptd = sample().to_h5(tmp_path / "data.h5")
    yield ptd
    ptd.close()


# --- writing and reading back -------------------------------------------------------------


def test_to_h5_writes_datasets_and_groups(tmp_path: Path, saved: PersistentTensorDict) -> None:
    assert isinstance(saved, PersistentTensorDict) and saved.batch_size == torch.Size([4])
    saved.close()
    with h5py.File(tmp_path / "data.h5", "r") as file:
        assert file["obs"].dtype == np.uint8 and file["obs"].shape == (4, 3)
        assert isinstance(file["next"], h5py.Group) and file["next/x"].shape == (4, 2, 2)
        assert file["env"][()] == b"pong"


def test_from_h5_reads_back_what_to_h5_wrote(tmp_path: Path, saved: PersistentTensorDict) -> None:
    saved.close()
    for opened in (
        PersistentTensorDict.from_h5(tmp_path / "data.h5"),
        TensorDict.from_h5(tmp_path / "data.h5"),
        tclass.from_h5(str(tmp_path / "data.h5")),
    ):
        assert isinstance(opened, PersistentTensorDict)
        assert opened.batch_size == torch.Size([4])  # the saved batch size, kept
        assert isinstance(opened["next"], PersistentTensorDict)
        assert opened["next"].batch_size == torch.Size([4])
        assert python_value(opened["env"]) == "pong"  # a str comes back as str
        assert same(opened.to_tensordict(), sample())
        opened.close()


def test_from_dict_and_the_constructor(tmp_path: Path) -> None:
    ptd = PersistentTensorDict.from_dict(
        {"a": torch.zeros(3, 4), "b": {"c": torch.ones(3)}}, tmp_path / "d.h5"
    )
    assert ptd.batch_size == torch.Size([3]) and ptd["b", "c"].tolist() == [1, 1, 1]
    ptd.close()
    data = PersistentTensorDict(filename=tmp_path / "n.h5", batch_size=[3], mode="w")
    data["a", "b"] = torch.zeros(3, 4)
    data["a", "b"] += 1  # read, add, written back
    assert isinstance(data["a"], PersistentTensorDict)
    assert data["a", "b"][0].tolist() == [1, 1, 1, 1]
    data.close()
    with h5py.File(tmp_path / "n.h5", "r") as file:
        assert file["a/b"][:].sum() == 12


def test_the_saved_batch_size_wins_over_inference(tmp_path: Path) -> None:
    TensorDict({"x": torch.zeros(4, 3)}, [4]).to_h5(tmp_path / "x.h5").close()
    opened = TensorDict.from_h5(tmp_path / "x.h5")
    assert opened.batch_size == torch.Size([4])  # inferred, it would be [4, 3]
    opened.close()
    with h5py.File(tmp_path / "y.h5", "w") as file:  # a file without tclass's attribute
        file["x"] = np.zeros((4, 3))
    inferred = TensorDict.from_h5(tmp_path / "y.h5")
    assert inferred.batch_size == torch.Size([4, 3])  # as the peer infers it
    inferred.close()


def test_from_any_opens_an_h5py_file_or_group(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "raw.h5", "w") as file:
        file["a"] = np.zeros((4, 3), dtype=np.float32)
        file.create_group("nested")["inner"] = np.ones(4, dtype=np.float32)
        opened = TensorDict.from_any(file)
        assert isinstance(opened, PersistentTensorDict)  # as it is, not copied
        assert torch.equal(opened["nested", "inner"], torch.ones(4))
        held = tclass.from_any(({"h5py": file}, [1, 2]))  # nested, as the peer
        assert isinstance(held["0", "h5py"], PersistentTensorDict)
        assert set(held.keys(True, True)) == {
            ("0", "h5py", "a"),
            ("0", "h5py", "nested", "inner"),
            "1",
        }


def test_a_batch_size_given_at_open_is_checked(tmp_path: Path, saved: PersistentTensorDict) -> None:
    saved.close()
    opened = PersistentTensorDict.from_h5(tmp_path / "data.h5", batch_size=[4])
    assert opened.batch_size == torch.Size([4])
    with pytest.raises(RuntimeError):
        opened.batch_size = [3]
    assert opened.batch_size == torch.Size([4])
    opened.close()
    with pytest.raises(ValueError):
        PersistentTensorDict.from_h5(tmp_path / "data.h5", batch_size=[5])


# --- lazy: metadata on open, only the selected rows on indexing ---------------------------

_LAZY = """
import resource, sys, time
import h5py, torch
from tclass import PersistentTensorDict, TensorDict
from tclass._io.store._view import PersistentTensorDictView

path = sys.argv[1]
with h5py.File(path, "w") as file:  # 4 GB of float32 that no one ever wrote: no storage
    file.create_dataset("x", shape=(1_000_000, 1024), dtype="f4", chunks=(64, 1024))
    file.create_dataset("y", shape=(1_000_000,), dtype="i8", chunks=(4096,))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
ptd = PersistentTensorDict.from_h5(path, mode="r+")
assert ptd.batch_size == torch.Size([1_000_000])
row = ptd[123_456]
assert isinstance(row, PersistentTensorDictView) and row["x"].shape == (1024,)
assert row["x"].sum() == 0
rows = ptd[torch.tensor([5, 999_999, 17])]
assert rows.batch_size == torch.Size([3]) and rows["x"].shape == (3, 1024)
ptd[999_999] = TensorDict({"x": torch.ones(1024), "y": torch.tensor(7)}, [])
ptd[10:12] = TensorDict({"x": torch.full((2, 1024), 2.0), "y": torch.tensor([1, 2])}, [2])
assert ptd.get_at("y", slice(9, 13)).tolist() == [0, 1, 2, 0]
assert ptd[torch.tensor([999_999, 10])]["x"].sum(1).tolist() == [1024.0, 2048.0]
view = ptd[torch.tensor([5, 999_998, 999_999])]  # a view: its writes reach only its rows
view.zero_()
view["y"] += 3
view.apply_(lambda t: t + 1)
ptd[500_000:500_010][2:4]["x"] = torch.full((2, 1024), 4.0)
assert ptd.get_at("y", torch.tensor([5, 999_998, 999_999, 6])).tolist() == [4, 4, 4, 0]
assert ptd.get_at("x", slice(500_001, 500_005)).sum(1).tolist() == [0, 4096, 4096, 0]
ptd.close()
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024
assert grown < 300, f"{grown} MiB read for a few rows"
print("ok")
"""


def test_opening_and_indexing_read_only_what_is_asked(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _LAZY, str(tmp_path / "big.h5")], capture_output=True, text=True
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


def test_indexing_gives_a_view_of_the_rows(saved: PersistentTensorDict) -> None:
    expected = sample()
    for index in (
        1,
        slice(1, 3),
        torch.tensor([3, 0]),
        torch.tensor([True, False, False, True]),
        [2, 1],
    ):
        rows = saved[index]
        assert type(rows) is PersistentTensorDictView and rows.source is saved
        assert same(rows.to_tensordict(), expected[index]), index
    assert saved.get_at("reward", 2) == expected["reward"][2]
    assert torch.equal(saved.get_at(("next", "x"), slice(0, 2)), expected["next", "x"][:2])


def test_an_ellipsis_covers_the_batch_dims_only(tmp_path: Path) -> None:
    # A dataset's trailing dims are its features: None after ``...`` is a new batch dim.
    expected = TensorDict({"x": torch.randn(4, 3, 5), "n": {"y": torch.randn(4, 3, 2)}}, [4, 3])
    saved = PersistentTensorDict.from_dict(expected, filename=tmp_path / "e.h5")
    for index in ((None, ..., None), ([1], ..., None), (..., None, 0), (1, ..., None), ...):
        rows = saved[index]
        assert rows["x"].shape == expected[index]["x"].shape, index
        assert same(rows, expected[index]), index
    saved.close()


def test_each_read_is_a_new_tensor(saved: PersistentTensorDict) -> None:
    first = saved["reward"]
    first += 100  # a copy: the file is unchanged
    assert saved["reward"] is not first and torch.equal(saved["reward"], sample()["reward"])


# --- writes reach the file ----------------------------------------------------------------


def test_writes_reach_the_file(tmp_path: Path, saved: PersistentTensorDict) -> None:
    saved["reward"] = torch.full((4,), 3.0)  # replace a dataset
    rows = TensorDict(
        {
            "obs": torch.zeros(2, 3, dtype=torch.uint8),
            "reward": torch.zeros(2),
            "next": {"done": torch.ones(2, dtype=torch.bool), "x": torch.zeros(2, 2, 2)},
        },
        batch_size=[2],
    )
    saved[1:3] = rows  # rows written into every dataset
    saved.set_("obs", torch.ones(4, 3, dtype=torch.uint8) * 9)
    saved["new", "deep"] = torch.arange(4)
    saved.close()
    reopened = PersistentTensorDict.from_h5(tmp_path / "data.h5")
    assert reopened["reward"].tolist() == [3.0, 0.0, 0.0, 3.0]
    assert reopened["obs"].unique().tolist() == [9]
    assert reopened["next", "done"].tolist() == [False, True, True, True]
    assert reopened["new", "deep"].tolist() == [0, 1, 2, 3]
    reopened.close()


def test_in_place_methods_reach_the_file(tmp_path: Path, saved: PersistentTensorDict) -> None:
    saved.zero_()
    assert saved["next", "x"].abs().sum() == 0
    saved.apply_(lambda t: t + 1)
    saved.update_({"reward": torch.full((4,), 5.0)})
    saved.close()
    reopened = PersistentTensorDict.from_h5(tmp_path / "data.h5")
    assert reopened["obs"].unique().tolist() == [1] and reopened["reward"].unique().tolist() == [
        5.0
    ]
    reopened.close()


def test_python_values_and_deletes(tmp_path: Path, saved: PersistentTensorDict) -> None:
    saved["tags"] = NonTensorStack.from_list(["a", "b", "c", "d"])
    saved["count"] = NonTensorData(3, batch_size=[4])
    del saved["env"]
    saved.close()
    reopened = PersistentTensorDict.from_h5(tmp_path / "data.h5")
    assert (
        python_value(reopened["tags"]) == ["a", "b", "c", "d"]
        and python_value(reopened["count"]) == 3
    )
    assert "env" not in reopened.keys()
    assert python_value(reopened[1:3]["tags"]) == ["b", "c"]
    reopened.close()


@pytest.mark.parametrize("value", [["a", "b"], [1], [1, "x"], {"k": [1.0]}], ids=repr)
def test_per_row_values_that_are_lists_read_back_whole(tmp_path: Path, value: Any) -> None:
    # Stacked records with a list field: each of the 2 x 2 elements holds the list.
    row = TensorDict({"v": NonTensorData(value, batch_size=[2])}, [2])
    torch.stack([row, row]).to_h5(tmp_path / "v.h5").close()
    opened = PersistentTensorDict.from_h5(tmp_path / "v.h5")
    assert python_value(opened.get("v")) == [[value, value], [value, value]]
    # A row is one member: its one value, as in memory and from a saved folder.
    assert python_value(opened[1].get("v")) == value
    assert opened[1].get("v").tolist() == [value, value]
    opened.close()


def test_a_read_only_file_refuses_writes(tmp_path: Path, saved: PersistentTensorDict) -> None:
    saved.close()
    before = (tmp_path / "data.h5").read_bytes()
    opened = PersistentTensorDict.from_h5(tmp_path / "data.h5")  # mode "r", the default
    with pytest.raises(tclass.TclassError, match="data.h5"):
        opened["reward"] = torch.zeros(4)
    with pytest.raises(tclass.TclassError):
        opened[0] = sample()[0]
    opened.close()
    assert (tmp_path / "data.h5").read_bytes() == before


def test_locking_and_closing(saved: PersistentTensorDict) -> None:
    saved.lock_()
    with pytest.raises(RuntimeError):
        saved["other"] = torch.zeros(4)
    saved.unlock_()
    saved.close()
    with pytest.raises(tclass.TclassError, match="closed"):
        saved["reward"]


# --- conversions --------------------------------------------------------------------------


def test_to_tensordict_memmap_and_to(tmp_path: Path, saved: PersistentTensorDict) -> None:
    loaded = saved.to_tensordict()
    assert type(loaded) is TensorDict and same(loaded, sample())
    saved_folder = saved.memmap(tmp_path / "folder")
    assert type(saved_folder) is TensorDict and saved_folder.is_memmap()
    assert same(TensorDict.load_memmap(tmp_path / "folder"), sample())
    meta = saved.to("meta")
    assert isinstance(meta, PersistentTensorDict) and meta["reward"].device.type == "meta"
    doubled = saved.to(torch.float64)
    assert type(doubled) is TensorDict and doubled["obs"].dtype == torch.float64
    assert type(saved.clone()) is TensorDict and same(saved.clone(), sample())


def test_to_in_place_is_refused_and_the_file_left_as_it_was(saved: PersistentTensorDict) -> None:
    # The peer refuses it too; tclass used to convert a copy and return it, silently.
    for args in ((torch.float64,), ("cpu",), ("cpu", torch.float64)):
        with pytest.raises(tclass.errors.ArgumentError, match="Cannot use inplace=True") as info:
            saved.to(*args, inplace=True)
        assert isinstance(info.value, TypeError)  # as the peer raises
    with pytest.raises(TypeError, match="PersistentTensorDict.to"):
        saved[1:3].to(torch.float64, inplace=True)  # a view of its rows
    assert saved["obs"].dtype == sample()["obs"].dtype and same(saved.to_tensordict(), sample())
    assert saved.to(torch.float64, inplace=False)["obs"].dtype == torch.float64


def test_pickling_reopens_the_file(saved: PersistentTensorDict) -> None:
    copy = pickle.loads(pickle.dumps(saved))
    assert isinstance(copy, PersistentTensorDict) and same(copy.to_tensordict(), sample())
    copy.close()


def test_records_over_h5(tmp_path: Path) -> None:
    class Step(TensorClass):
        obs: torch.Tensor
        reward: torch.Tensor
        env: str = "pong"

    step = Step(obs=torch.ones(3, 2), reward=torch.arange(3.0), batch_size=[3])
    written = step.to_h5(tmp_path / "s.h5")
    assert isinstance(written, Step)
    opened = Step.from_h5(tmp_path / "s.h5")
    assert isinstance(opened, Step) and opened.batch_size == torch.Size([3])
    assert torch.equal(opened.reward, step.reward) and opened.env == "pong"
    assert torch.equal(opened[1].obs, step.obs[1])


# --- files from other tools and from the peer ---------------------------------------------


def test_files_written_by_other_tools(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "o.h5", "w") as file:
        file["x"] = np.arange(6).reshape(3, 2)
        file["names"] = np.array(["a", "bb", "c"], dtype=h5py.string_dtype())
        file["group/y"] = np.ones(3, dtype="f2")
        file.attrs["note"] = "ignored"
    opened = PersistentTensorDict.from_h5(tmp_path / "o.h5")
    assert opened.batch_size == torch.Size([3])  # the largest batch the datasets share
    assert opened["x"].dtype == torch.int64 and opened["group", "y"].dtype == torch.float16
    assert python_value(opened["names"]) == ["a", "bb", "c"]
    opened.close()
    rows = PersistentTensorDict.from_h5(tmp_path / "o.h5", non_tensor_as_stack=True)
    assert isinstance(rows.get("names"), NonTensorStack) and python_value(rows[1:]["names"]) == [
        "bb",
        "c",
    ]
    rows.close()


@pytest.mark.peer
def test_files_the_peer_writes_load(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    theirs = tensordict.TensorDict(
        {
            "a": torch.arange(6).view(3, 2),
            "n": {"b": torch.rand(3, 4)},
            "s": "hello",
            "v": tensordict.NonTensorData(3, batch_size=[3]),
        },
        batch_size=[3],
    )
    theirs.to_h5(tmp_path / "p.h5").close()
    mine = PersistentTensorDict.from_h5(tmp_path / "p.h5", batch_size=[3])
    assert torch.equal(mine["a"], theirs["a"]) and torch.equal(mine["n", "b"], theirs["n", "b"])
    assert python_value(mine["s"]) == "hello" and python_value(mine["v"]) == 3
    mine.close()


@pytest.mark.peer
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_the_peer_loads_files_tclass_writes(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    sample().to_h5(tmp_path / "t.h5").close()
    theirs = tensordict.PersistentTensorDict.from_h5(tmp_path / "t.h5", batch_size=[4])
    expected = sample()
    assert torch.equal(theirs["obs"], expected["obs"]) and torch.equal(
        theirs["next", "x"], expected["next", "x"]
    )
    env = theirs["env"]
    assert (env.decode() if isinstance(env, bytes) else env) == "pong"
    theirs.close()


# --- records over a file: Cls.from_h5 gives a full record -----------------------------------


class Meta(TensorClass):
    score: Annotated[torch.Tensor, Spec("", torch.float32)]
    tag: str = "inner"


class Run(TensorClass):
    obs: Annotated[torch.Tensor, Spec("3 h w", torch.uint8)]
    reward: torch.Tensor
    meta: Meta
    env: str
    count: int = 3
    options: dict[str, Any] | None = None
    extra: torch.Tensor | None = None


def run(b: int = 4) -> Run:
    return Run(
        obs=torch.arange(b * 3 * 2 * 5, dtype=torch.uint8).reshape(b, 3, 2, 5),
        reward=torch.arange(b, dtype=torch.float64),
        meta=Meta(score=torch.ones(b), tag="m", batch_size=[b]),
        env="pong",
        options={"seed": [1, 2]},
        batch_size=[b],
    )


def test_from_h5_gives_nested_records_and_python_values(tmp_path: Path) -> None:
    run().to_h5(tmp_path / "r.h5").close()
    opened = Run.from_h5(tmp_path / "r.h5")
    assert type(opened) is Run and opened.batch_size == torch.Size([4])
    assert type(opened.meta) is Meta and opened.meta.tag == "m"  # its declared class
    assert torch.equal(opened.meta.score, torch.ones(4))
    assert (opened.env, opened.count, opened.options, opened.extra) == (
        "pong",
        3,
        {"seed": [1, 2]},
        None,
    )
    rows = opened[1:3]  # rows read from the file: still records, nested ones too
    assert type(rows) is Run and type(rows.meta) is Meta and rows.meta.tag == "m"
    assert type(opened[0].meta) is Meta
    assert same(opened.to_tensordict(), run().to_tensordict())
    opened.close()


def test_to_h5_returns_a_record_with_nested_records(tmp_path: Path) -> None:
    written = run().to_h5(tmp_path / "r.h5")
    assert type(written) is Run and type(written.meta) is Meta
    assert written.meta.tag == "m" and written.env == "pong"
    written.close()


def test_a_record_over_a_file_saves_to_a_folder(tmp_path: Path) -> None:
    run().to_h5(tmp_path / "r.h5").close()
    opened = Run.from_h5(tmp_path / "r.h5")
    for name, saved in (
        ("a", opened.memmap(tmp_path / "a")),
        ("b", opened.save(tmp_path / "b")),
        ("c", tclass.memmap(opened, tmp_path / "c")),
    ):
        assert type(saved) is Run and type(saved.meta) is Meta and saved.is_memmap(), name
        loaded = Run.load_memmap(tmp_path / name)
        assert type(loaded.meta) is Meta and loaded.meta.tag == "m" and loaded.env == "pong"
        assert same(loaded.to_tensordict(), run().to_tensordict())
    like = opened.memmap_like(tmp_path / "like")
    assert type(like) is Run and like.obs.shape == (4, 3, 2, 5) and like.obs.sum() == 0
    with pytest.raises(NotImplementedError, match="memmap"):
        opened.memmap_(tmp_path / "d")
    assert not (tmp_path / "d").exists()
    opened.close()


def test_fields_of_a_record_over_a_file_are_written_and_it_pickles(tmp_path: Path) -> None:
    written = run().to_h5(tmp_path / "r.h5")
    written.env = "breakout"  # a Python value, a nested record, a tensor: to the file
    written.meta = Meta(score=torch.full((4,), 2.0), batch_size=[4])
    written.reward = torch.ones(4, dtype=torch.float64)
    del written.options
    copy = pickle.loads(pickle.dumps(written))  # reopens the file: records stay records
    assert type(copy) is Run and type(copy.meta) is Meta and copy.meta.tag == "inner"
    copy.close()
    written.close()
    opened = Run.from_h5(tmp_path / "r.h5")
    assert (opened.env, opened.options, opened.meta.tag) == ("breakout", None, "inner")
    assert opened.meta.score.tolist() == [2.0] * 4 and opened.reward.tolist() == [1.0] * 4
    opened.close()


class FrozenRun(TensorClass, frozen=True):
    reward: torch.Tensor
    env: str


def test_a_frozen_or_locked_record_over_a_file_refuses_assignment(tmp_path: Path) -> None:
    FrozenRun(reward=torch.ones(2), env="e", batch_size=[2]).to_h5(tmp_path / "f.h5").close()
    frozen = FrozenRun.from_h5(tmp_path / "f.h5", mode="r+")
    with pytest.raises(tclass.errors.FrozenInstanceError, match="'env'.*FrozenRun is frozen"):
        frozen.env = "other"
    frozen.close()
    run().to_h5(tmp_path / "r.h5").close()
    locked = Run.from_h5(tmp_path / "r.h5", mode="r+").lock_()
    with pytest.raises(tclass.errors.LockedError, match="'env'.*Run is locked"):
        locked.env = "other"
    assert locked.env == "pong"
    locked.close()


def test_records_over_a_file_close(tmp_path: Path) -> None:
    written = run().to_h5(tmp_path / "r.h5")
    written.close()
    with pytest.raises(tclass.TclassError, match="closed"):
        written.reward  # noqa: B018
    written.close()  # again: nothing to do
    opened = Run.from_h5(tmp_path / "r.h5", mode="r+")  # the writer's lock was released
    opened.close()
    run().close()  # a record in memory holds no file: nothing to do

    class Bar(TensorClass):  # a field named like the method (as in the peer) still works
        close: torch.Tensor

    assert torch.equal(Bar(close=torch.ones(2), batch_size=[2]).close, torch.ones(2))


def _loose(name: str, fields: dict[str, Any], defaults: dict[str, Any] | None = None) -> Any:
    """A class of the same name as a test class, with plain annotations: what saved a
    folder or file that the test class then reads."""
    namespace = {"__module__": __name__, "__qualname__": name, "__annotations__": fields}
    return type(TensorClass)(name, (TensorClass,), {**namespace, **(defaults or {})})


def _folder_and_file(tmp_path: Path, data: dict[str, Any]) -> tuple[Path, Path]:
    """The same record (plain annotations, the test classes' names) saved in a folder
    and written to an HDF5 file."""
    loose_meta = _loose("Meta", {"score": torch.Tensor, "tag": str}, {"tag": "inner"})
    loose_run = _loose(
        "Run", {"obs": torch.Tensor, "reward": torch.Tensor, "meta": loose_meta, "env": str}
    )
    meta = loose_meta(score=data.pop("score"), batch_size=[4])
    record = loose_run(**data, meta=meta, env="pong", batch_size=[4])
    record.memmap(tmp_path / "folder")
    record.to_h5(tmp_path / "file.h5").close()
    return tmp_path / "folder", tmp_path / "file.h5"


def _differences(error: Any) -> list[tuple[str, str]]:
    return sorted((d.field, d.kind) for d in error.differences)


@pytest.mark.parametrize(
    "change",
    [
        {"obs": torch.zeros(4, 3, 2, 5, dtype=torch.float32)},  # wrong dtype
        {"obs": torch.zeros(4, 2, 2, 5, dtype=torch.uint8)},  # wrong shape
        {"score": torch.zeros(4, dtype=torch.int64)},  # wrong dtype, nested
        {"score": torch.zeros(4, 2)},  # wrong shape, nested
        {"obs": torch.zeros(4, 3, 2, 5), "score": torch.zeros(4, 1)},  # both
    ],
    ids=["dtype", "shape", "nested-dtype", "nested-shape", "both"],
)
def test_from_h5_checks_the_schema_as_load_memmap(tmp_path: Path, change: dict[str, Any]) -> None:
    good = {
        "obs": torch.zeros(4, 3, 2, 5, dtype=torch.uint8),
        "reward": torch.zeros(4),
        "score": torch.zeros(4),
    }
    folder, file = _folder_and_file(tmp_path, {**good, **change})
    with pytest.raises(SchemaMismatchError) as from_folder:
        Run.load_memmap(folder)
    with pytest.raises(SchemaMismatchError) as from_file:
        Run.from_h5(file)
    assert _differences(from_file.value) == _differences(from_folder.value)
    assert len(from_file.value.differences) == len(change)
    paths = {d.field: d.path for d in from_file.value.differences}  # the record's group
    assert paths.get("score", "meta") == "meta" and paths.get("obs", "") == ""
    assert str(file) in str(from_file.value)
    assert "load_memmap" not in str(from_file.value)  # no option from_h5 lacks is offered
    PersistentTensorDict.from_h5(file, mode="r+").close()  # the failed open closed the file


def test_from_h5_refuses_a_file_of_another_class(tmp_path: Path) -> None:
    class Other(TensorClass):
        obs: torch.Tensor
        reward: torch.Tensor

    Other(
        obs=torch.zeros(4, 3, 2, 5, dtype=torch.uint8), reward=torch.zeros(4), batch_size=[4]
    ).to_h5(tmp_path / "o.h5").close()
    with pytest.raises(SchemaMismatchError) as info:
        Run.from_h5(tmp_path / "o.h5")  # meta and env are required and were never fields
    assert _differences(info.value) == [("env", "missing"), ("meta", "missing")]
    assert "Run.meta" in str(info.value) and "o.h5" in str(info.value)


def test_from_h5_keeps_python_values_as_the_constructor_does(tmp_path: Path) -> None:
    run().to_h5(tmp_path / "r.h5").close()
    ptd = PersistentTensorDict.from_h5(tmp_path / "r.h5", mode="r+")
    ptd["env"] = NonTensorData(7, batch_size=[4])  # an int where Run.env is a str
    ptd.close()
    loaded = Run.from_h5(tmp_path / "r.h5")  # kept, as Run(env=7) keeps it (the peer too)
    assert loaded.env == 7 and loaded[2].env == 7
    loaded.close()


@pytest.mark.skipif(jaxtyping is None, reason="jaxtyping is not installed")
def test_from_h5_checks_jaxtyping_annotations(tmp_path: Path) -> None:
    assert jaxtyping is not None

    class Jax(TensorClass):
        x: jaxtyping.Float32[torch.Tensor, "*batch 3"]  # noqa: F722

    Jax(x=torch.zeros(4, 3), batch_size=[4]).to_h5(tmp_path / "j.h5").close()
    assert Jax.from_h5(tmp_path / "j.h5").x.shape == (4, 3)
    with h5py.File(tmp_path / "bad.h5", "w") as file:
        file["x"] = np.zeros((4, 3), dtype="f8")
    with pytest.raises(SchemaMismatchError, match="Jax.x"):
        Jax.from_h5(tmp_path / "bad.h5")


# --- hostile files: clear errors in bounded time ---------------------------------------------


def _nested_file(path: Path, levels: int) -> None:
    with h5py.File(path, "w") as file:
        group = file
        for level in range(levels):
            group = group.create_group(f"g{level}")
            group["x"] = np.zeros(3)


def test_opening_is_linear_in_the_nesting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lookups = 0
    get = h5py.Group.__getitem__

    def counted(self: Any, name: Any) -> Any:
        nonlocal lookups
        lookups += 1
        return get(self, name)

    monkeypatch.setattr(h5py.Group, "__getitem__", counted)
    counts = []
    for levels in (4, 8, 12):
        _nested_file(tmp_path / f"n{levels}.h5", levels)
        lookups = 0
        opened = PersistentTensorDict.from_h5(tmp_path / f"n{levels}.h5")
        counts.append(lookups)
        assert opened.batch_size == torch.Size([3])
        assert opened[tuple(f"g{level}" for level in range(levels))].batch_size == torch.Size([3])
        opened.close()
    # Each level costs the same few lookups: 8 more levels, 8 times the 4 levels' step.
    assert counts[2] - counts[1] == counts[1] - counts[0] <= 10 * 4, counts


def test_empty_datasets_read_as_none(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "e.h5", "w") as file:
        file["x"] = np.zeros((3, 2))
        file.create_dataset("nothing", data=h5py.Empty("f4"))
        file["g/y"] = np.ones(3)
        file.create_dataset("g/nothing", data=h5py.Empty("S5"))
    opened = PersistentTensorDict.from_h5(tmp_path / "e.h5")
    assert opened.batch_size == torch.Size([3]) and opened["g"].batch_size == torch.Size([3])
    assert python_value(opened["nothing"]) is None and python_value(opened["g", "nothing"]) is None
    assert python_value(opened[1]["nothing"]) is None
    assert opened.to_tensordict()["x"].shape == (3, 2)
    opened.close()

    class Holder(TensorClass):
        x: torch.Tensor
        g: TensorDict
        nothing: torch.Tensor | None = None

    record = Holder.from_h5(tmp_path / "e.h5", batch_size=[3])
    assert (
        record.nothing is None
        and record.x.shape == (3, 2)
        and python_value(record.g["nothing"]) is None
    )
    record.close()


def _cycle_file(path: Path, how: str) -> None:
    with h5py.File(path, "w") as file:
        file["a/x"] = np.zeros(3)
        file["a/b/x"] = np.zeros(3)
        if how == "soft":
            file["a/b/up"] = h5py.SoftLink("/a")
        elif how == "hard":
            file["a/b/up"] = file["a"]
        else:  # two groups, each holding the other, both under the root
            file["c/x"] = np.zeros(3)
            file["a/b/c"] = file["c"]
            file["c/a"] = file["a"]


@pytest.mark.parametrize("how", ["soft", "hard", "crossed"])
def test_link_cycles_are_refused(tmp_path: Path, how: str) -> None:
    _cycle_file(tmp_path / "c.h5", how)
    for open_it in (
        lambda: PersistentTensorDict.from_h5(tmp_path / "c.h5"),
        lambda: PersistentTensorDict(filename=tmp_path / "c.h5", batch_size=[3]),
    ):
        with pytest.raises(MetadataError, match="cycle") as info:
            open_it()
        assert isinstance(info.value, RuntimeError) and "c.h5" in str(info.value)


def test_a_group_linked_twice_without_a_cycle_opens(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "d.h5", "w") as file:
        group = file.create_group("g0")
        group["x"] = np.zeros(3)
        for level in range(1, 30):  # each group holds the previous one twice
            parent = file.create_group(f"g{level}")
            parent["left"] = group
            parent["right"] = group
            group = parent
    opened = PersistentTensorDict.from_h5(tmp_path / "d.h5")  # 2**29 paths: walked once each
    assert opened.batch_size == torch.Size([3])
    assert opened["g2", "left", "right", "x"].tolist() == [0.0, 0.0, 0.0]
    opened.close()


def test_groups_nested_too_deep_are_refused(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "deep.h5", "w") as file:
        file.create_group("/".join(["g"] * 2000))
    with pytest.raises(MetadataError, match="nested") as info:
        PersistentTensorDict.from_h5(tmp_path / "deep.h5")
    assert "deep.h5" in str(info.value)
    _nested_file(tmp_path / "ok.h5", 60)  # deep, within the limit
    opened = PersistentTensorDict.from_h5(tmp_path / "ok.h5")
    assert opened.to_tensordict().batch_size == torch.Size([3])
    opened.close()


def test_json_nested_too_deep_is_refused(tmp_path: Path) -> None:
    deep = "[" * 5000 + "]" * 5000
    with h5py.File(tmp_path / "attr.h5", "w") as file:
        file["g/x"] = np.zeros(3)
        file["g"].attrs["_tclass"] = deep
    with pytest.raises(MetadataError, match="256") as info:
        PersistentTensorDict.from_h5(tmp_path / "attr.h5")
    assert "/g" in str(info.value) and "attr.h5" in str(info.value)
    with h5py.File(tmp_path / "value.h5", "w") as file:
        file["x"] = np.zeros(3)
        file["v"] = deep
        file["v"].attrs["_tclass_json"] = True
    opened = PersistentTensorDict.from_h5(tmp_path / "value.h5")
    with pytest.raises(MetadataError, match="256") as info:
        opened["v"]
    assert "/v" in str(info.value)
    opened.close()


def test_absurd_declared_shapes_are_refused(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "stack.h5", "w") as file:
        file["x"] = np.zeros(2)
        file["v"] = np.array(["a", "b"], dtype=h5py.string_dtype())
        file["v"].attrs["__tensordict_stack__"] = [2**40, 2**40]
    with pytest.raises(MetadataError, match="__tensordict_stack__") as info:
        PersistentTensorDict.from_h5(tmp_path / "stack.h5")
    assert "/v" in str(info.value) and "[1099511627776, 1099511627776]" in str(info.value)
    with h5py.File(tmp_path / "batch.h5", "w") as file:
        file.create_group("g")
        file["g"].attrs["_tclass"] = json.dumps({"batch_size": [2**70]})
    with pytest.raises(MetadataError, match="batch size") as info:
        PersistentTensorDict.from_h5(tmp_path / "batch.h5")
    assert str(2**70) in str(info.value)
    with h5py.File(tmp_path / "huge.h5", "w") as file:
        file.create_dataset("x", shape=(2**40, 2**40), dtype="f4", chunks=(1, 1024))
    with pytest.raises(MetadataError, match="too large") as info:
        PersistentTensorDict.from_h5(tmp_path / "huge.h5")
    assert "/x" in str(info.value)


def _external_files(tmp_path: Path) -> dict[str, Path]:
    with h5py.File(tmp_path / "target.h5", "w") as file:
        file["y"] = np.arange(3.0)
    (tmp_path / "raw.bin").write_bytes(np.arange(3.0).tobytes())
    paths = {}
    for kind in ("link", "raw", "virtual"):
        paths[kind] = tmp_path / f"{kind}.h5"
        with h5py.File(paths[kind], "w") as file:
            file["x"] = np.zeros(3)
            if kind == "link":
                file["g/e"] = h5py.ExternalLink(str(tmp_path / "target.h5"), "/y")
            elif kind == "raw":
                file.create_dataset(
                    "g/e", shape=(3,), dtype="f8", external=[(str(tmp_path / "raw.bin"), 0, 24)]
                )
            else:
                layout = h5py.VirtualLayout(shape=(3,), dtype="f8")
                layout[:] = h5py.VirtualSource(str(tmp_path / "target.h5"), "y", shape=(3,))
                file.create_virtual_dataset("g/e", layout)
    return paths


@pytest.mark.parametrize("kind", ["link", "raw", "virtual"])
def test_external_data_is_refused_unless_allowed(tmp_path: Path, kind: str) -> None:
    path = _external_files(tmp_path)[kind]
    for open_it in (
        lambda **options: PersistentTensorDict.from_h5(path, **options),
        lambda **options: tclass.from_h5(path, **options),
        lambda **options: PersistentTensorDict(filename=path, batch_size=[3], **options),
    ):
        with pytest.raises(UnsafePathError) as info:
            open_it()
        assert "/g/e" in str(info.value) and "allow_external=True" in str(info.value)
        opened = open_it(allow_external=True)
        assert opened["g", "e"].tolist() == [0.0, 1.0, 2.0]
        opened.close()

    class Holder(TensorClass):
        x: torch.Tensor
        g: TensorDict

    with pytest.raises(UnsafePathError):
        Holder.from_h5(path)
    record = Holder.from_h5(path, allow_external=True)
    assert record.g["e"].tolist() == [0.0, 1.0, 2.0]
    record.close()


# --- the collection API on a file (issue 27) ------------------------------------------------


def test_lock_and_unlock_are_context_managers(saved: PersistentTensorDict) -> None:
    with saved.lock_() as inner:
        assert inner is saved and saved.is_locked and saved["next"].is_locked
        with pytest.raises(tclass.errors.LockedError):
            saved["other"] = torch.zeros(4)
    assert not saved.is_locked and not saved["next"].is_locked
    saved.lock_()
    with saved.unlock_():
        saved["other"] = torch.zeros(4)
        saved["more"] = TensorDict({"y": torch.zeros(4)}, [4])
        assert not saved.is_locked
    assert saved.is_locked and saved["next"].is_locked and saved["more"].is_locked
    assert "other" in saved.keys()


def test_a_locked_file_takes_writes_into_existing_entries(saved: PersistentTensorDict) -> None:
    """As the peer's: ``ptd[key] = value`` writes into the existing entry when locked,
    ``set`` and new keys stay refused."""
    saved.lock_()
    saved["reward"] = torch.ones(4)
    saved["next"] = {"done": torch.ones(4, dtype=torch.bool), "x": torch.zeros(4, 2, 2)}
    saved["next", "x"] = torch.ones(4, 2, 2)
    assert torch.equal(saved["reward"], torch.ones(4)) and saved["next", "done"].all()
    assert torch.equal(saved["next", "x"], torch.ones(4, 2, 2))
    with pytest.raises(tclass.errors.LockedError, match="'reward'"):
        saved.set("reward", torch.ones(4))
    with pytest.raises(tclass.errors.LockedError, match="'q'"):
        saved["next"] = {"q": torch.zeros(4)}
    # the peer's words first (its tests match them), as for a TensorDict
    for write in (
        lambda: saved.set("reward", torch.ones(4)),
        lambda: saved.set(("new", "x"), torch.ones(4)),
        lambda: saved.set_non_tensor(("this", "will"), "fail"),
        lambda: saved.del_("reward"),
        lambda: saved[1:3].set("new", torch.ones(2)),
    ):
        with pytest.raises(
            tclass.errors.LockedError, match=r"^Cannot modify locked TensorDict \(a Persistent"
        ):
            write()
    with pytest.raises(tclass.errors.InPlaceWriteError, match="'reward'.*dataset"):
        saved["reward"] = TensorDict({"q": torch.zeros(4)}, [4])
    with pytest.raises(tclass.errors.InPlaceWriteError, match="'next'.*group"):
        saved["next"] = torch.zeros(4)


def test_a_string_is_stored_as_a_python_value(saved: PersistentTensorDict) -> None:
    saved["label"] = "pong"
    assert python_value(saved["label"]) == "pong"
    assert saved.to_tensordict()["label"] == "pong"


def test_names_are_kept_in_memory(saved: PersistentTensorDict) -> None:
    assert saved.names == [None] and saved["next"].names == [None]
    saved.names = ["time"]
    assert saved.names == ["time"] and saved["next"].names == ["time"]
    assert saved.to_tensordict().names == ["time"] and saved[1:].names == ["time"]
    assert saved.to_tensordict()["next"].names == ["time"]
    saved.names = None
    assert saved.refine_names("t").names == ["t"]
    assert saved.rename("u").names == ["u"] and saved.names == ["t"]
    with pytest.raises(tclass.errors.DimNameError):
        saved.names = ["a", "b"]


def test_select_exclude_cpu_and_consolidate_read_the_file(saved: PersistentTensorDict) -> None:
    picked = saved.select("reward", ("next", "x"))
    assert type(picked) is TensorDict and type(picked["next"]) is TensorDict
    assert set(picked.keys(True, True)) == {("next", "x"), "reward"}
    assert torch.equal(picked["next", "x"], sample()["next", "x"])
    left = saved.exclude("obs", ("next", "done"))
    assert type(left) is TensorDict and type(left["next"]) is TensorDict
    assert set(left.keys(True, True)) == {("next", "x"), "reward"} and "env" in left.keys()
    assert saved.select("nope", strict=False).is_empty()
    with pytest.raises(KeyError, match="nope") as missing:
        saved.select("nope")
    assert "PersistentTensorDict with keys ['env', 'next', 'obs', 'reward']" in str(missing.value)
    with pytest.raises(NotImplementedError, match="in place"):
        saved.select("obs", inplace=True)
    moved = saved.cpu()
    assert isinstance(moved, PersistentTensorDict) and moved.device == torch.device("cpu")
    packed = saved.consolidate()
    assert type(packed) is TensorDict and packed.is_locked and same(packed, sample())


def test_exclude_and_split_keys_in_place_delete_from_the_file(
    saved: PersistentTensorDict,
) -> None:
    # As the peer's split_keys(inplace=True): the keys taken are deleted from the file.
    assert saved.exclude("obs", ("next", "done"), "nope", inplace=True) is saved
    assert "obs" not in saved.keys() and ("next", "done") not in saved.keys(True)
    assert "obs" not in saved.file and "done" not in saved.file["next"]
    taken, rest = saved.split_keys(["reward"], inplace=True)
    assert rest is saved and "reward" not in saved.keys()
    assert torch.equal(taken["reward"], sample()["reward"])
    saved.lock_()
    with pytest.raises(tclass.errors.LockedError, match="locked"):
        saved.exclude(("next", "x"), inplace=True)


def test_a_key_of_nested_tuples_sets_an_entry(saved: PersistentTensorDict) -> None:
    # A key, not a row index: as a TensorDict reads td[" a ", ("b", "c"), ("d",)].
    saved[" a ", ("little", "story"), "about", ("myself",)] = torch.zeros(4)
    assert torch.equal(saved[" a ", "little", "story", "about", "myself"], torch.zeros(4))
    assert torch.equal(saved[(" a ", ("little",)), "story", "about", "myself"], torch.zeros(4))


def test_a_with_block_on_a_rearranged_file_writes_back(saved: PersistentTensorDict) -> None:
    saved.lock_()
    with saved.unsqueeze(0) as wide:
        wide.set_("reward", wide["reward"] + 1)
    assert torch.equal(saved["reward"], sample()["reward"] + 1) and saved.is_locked


@pytest.mark.peer
def test_the_peer_agrees_on_locks_and_names(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    for lib in (tclass, tensordict):
        data = lib.TensorDict({"a": torch.zeros(3), "n": {"b": torch.zeros(3)}}, [3])
        ptd = lib.PersistentTensorDict.from_dict(data, filename=tmp_path / f"{lib.__name__}.h5")
        with ptd.lock_():
            ptd["a"] = torch.ones(3)
            assert ptd.is_locked and ptd["n"].is_locked
        assert not ptd.is_locked and torch.equal(ptd["a"], torch.ones(3))
        ptd.names = ["t"]
        assert ptd.names == ["t"] and ptd["n"].names == ["t"] and ptd[:2].names == ["t"]
        assert type(ptd.consolidate()) is lib.TensorDict
        ptd.close()


def test_devices_and_consolidation_of_a_file(saved: PersistentTensorDict) -> None:
    """As the peer's: ``auto_device_`` records the device entries are read onto (the
    CPU), ``clear_device_`` forgets it; a file is neither consolidated nor contiguous
    (its entries are not in memory: ``contiguous()`` reads them)."""
    assert saved.device is None and saved["next"].device is None
    assert saved.auto_device_() is saved
    assert saved.device == torch.device("cpu") and saved["next"].device == torch.device("cpu")
    assert saved.clear_device_() is saved
    assert saved.device is None and saved["next"].device is None
    assert saved.is_consolidated() is False and saved.is_contiguous() is False


def test_joining_and_separating_entries_delete_them_from_the_file(
    saved: PersistentTensorDict,
) -> None:
    with pytest.raises(KeyError, match="given twice"):  # the peer's second delete: KeyError
        saved.cat_tensors("obs", "obs", out_key="oo", dim=-1)
    assert saved.cat_tensors("obs", out_key="oo", dim=-1) is saved
    assert "obs" not in saved.keys() and saved["oo"].shape == (4, 3)
    saved.stack_tensors(("next", "done"), out_key="dd", dim=-1)
    assert saved["dd"].shape == (4, 1) and ("next", "done") not in saved.keys(True)
    out = saved.separates(("next", "x"))
    assert type(out) is TensorDict and torch.equal(out["next", "x"], sample()["next", "x"])
    assert "next" not in saved.keys()  # emptied, removed
    with h5py.File(saved.filename, "r") as file:
        assert "obs" not in file and "next" not in file and "dd" in file


def test_indexed_writes_reach_the_file(saved: PersistentTensorDict) -> None:
    saved.set_at_("reward", torch.tensor(9.0), 1)
    saved.set_at_(("next", "x"), torch.ones(2, 2), 0)
    rows = sample()[2].apply(lambda t: t + 1)
    assert saved.update_at_(rows, 3) is saved
    saved.copy_at_(sample().exclude("env")[0], 2)
    saved.close()
    again = PersistentTensorDict.from_h5(saved.filename)
    assert again["reward"].tolist() == [0.0, 9.0, 0.0, sample()["reward"][2].item() + 1]
    assert torch.equal(again["next", "x"][0], torch.ones(2, 2))
    assert torch.equal(again["obs"][3], sample()["obs"][2] + 1)
    assert torch.equal(again["obs"][2], sample()["obs"][0])
    again.close()


def test_new_collections_from_a_file_leave_it_unchanged(saved: PersistentTensorDict) -> None:
    """``replace`` and ``rename_keys`` return a TensorDict read from the file (the peer's
    replace writes into the file, its rename_keys refuses)."""
    replaced = saved.replace(reward=torch.zeros(4))
    assert type(replaced) is TensorDict and not replaced["reward"].any()
    assert torch.equal(saved["reward"], sample()["reward"])
    renamed = saved.rename_keys({"reward": "r"})
    assert type(renamed) is TensorDict and set(renamed.keys()) == {"obs", "r", "next", "env"}
    assert "reward" in saved.keys() and "r" not in saved.keys()


def test_loading_a_folder_into_a_file(tmp_path: Path, saved: PersistentTensorDict) -> None:
    other = sample().apply(lambda t: t * 0)
    del other["obs"]
    other.memmap(tmp_path / "folder")
    assert saved.load_memmap_(tmp_path / "folder") is saved
    assert set(saved.keys()) == {"reward", "next", "env"} and not saved["reward"].any()
    saved.close()
    with h5py.File(saved.filename, "r") as file:
        assert "obs" not in file and not file["next/x"][()].any()


def test_to_h5_keeps_the_dim_names(tmp_path: Path) -> None:
    data = sample()
    data.names = ["time"]
    written = data.to_h5(tmp_path / "named.h5")
    assert written.names == ["time"] and written["next"].names == ["time"]
    written.close()
