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

import pickle
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from strategies import python_value  # noqa: E402

import tclass
from tclass import NonTensorData, NonTensorStack, PersistentTensorDict, TensorClass, TensorDict


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


def sample() -> TensorDict:
    return TensorDict(
        {
            "obs": torch.arange(4 * 3, dtype=torch.uint8).view(4, 3),
            "reward": torch.linspace(0, 1, 4),
            "next": {
                "done": torch.tensor([False, True, False, True]),
                "x": torch.arange(16.0).view(4, 2, 2) / 16,
            },
            "env": NonTensorData("pong", batch_size=[4]),
        },
        batch_size=[4],
    )


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

path = sys.argv[1]
with h5py.File(path, "w") as file:  # 4 GB of float32 that no one ever wrote: no storage
    file.create_dataset("x", shape=(1_000_000, 1024), dtype="f4", chunks=(64, 1024))
    file.create_dataset("y", shape=(1_000_000,), dtype="i8", chunks=(4096,))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
ptd = PersistentTensorDict.from_h5(path, mode="r+")
assert ptd.batch_size == torch.Size([1_000_000])
row = ptd[123_456]
assert isinstance(row, TensorDict) and row["x"].shape == (1024,) and row["x"].sum() == 0
rows = ptd[torch.tensor([5, 999_999, 17])]
assert rows.batch_size == torch.Size([3]) and rows["x"].shape == (3, 1024)
ptd[999_999] = TensorDict({"x": torch.ones(1024), "y": torch.tensor(7)}, [])
ptd[10:12] = TensorDict({"x": torch.full((2, 1024), 2.0), "y": torch.tensor([1, 2])}, [2])
assert ptd.get_at("y", slice(9, 13)).tolist() == [0, 1, 2, 0]
assert ptd[torch.tensor([999_999, 10])]["x"].sum(1).tolist() == [1024.0, 2048.0]
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


def test_indexing_gives_rows_as_a_tensordict(saved: PersistentTensorDict) -> None:
    expected = sample()
    for index in (
        1,
        slice(1, 3),
        torch.tensor([3, 0]),
        torch.tensor([True, False, False, True]),
        [2, 1],
    ):
        rows = saved[index]
        assert type(rows) is TensorDict
        assert same(rows, expected[index]), index
    assert saved.get_at("reward", 2) == expected["reward"][2]
    assert torch.equal(saved.get_at(("next", "x"), slice(0, 2)), expected["next", "x"][:2])


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
