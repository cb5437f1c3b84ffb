"""Growable saved collections: ``tclass.append_memmap(prefix, rows)`` (the peer's 0.15
name and signature) and the method form ``saved.append_memmap_(rows)``, which also
extends the collection in place.

An append writes the new rows after the saved ones in each leaf file (the old bytes are
neither read nor rewritten), then publishes the new row count for the whole tree at
once; a writer killed at any moment leaves the old rows loadable, and a reader sees the
old or the new row count, never a mix of the two across nodes.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import NonTensorData, NonTensorStack, TensorClass, TensorDict, tensorclass
from tclass.errors import TclassError

from strategies import python_value  # noqa: E402

# --- the data -----------------------------------------------------------------------------


def rows_td(start: int, count: int, label: str = "run") -> TensorDict:
    """Rows ``start .. start + count``: every element of row i holds i (so a row that
    lands in the wrong place, or a torn one, shows)."""
    index = torch.arange(start, start + count)
    return TensorDict(
        {
            "obs": index.view(-1, 1, 1).expand(count, 3, 4).to(torch.uint8).clone(),
            "reward": index.to(torch.float32),
            "next": {"done": (index % 2).bool(), "step": index.view(-1, 1).expand(count, 2)},
            "label": NonTensorData(label, batch_size=[count]),
        },
        batch_size=[count],
    )


def check_rows(td: Any, count: int) -> None:
    """``td`` holds rows 0 .. count, each written once, in order."""
    expected = rows_td(0, count)
    assert td.batch_size == torch.Size([count])
    assert td["next"].batch_size == torch.Size([count])
    assert torch.equal(td["obs"], expected["obs"])
    assert torch.equal(td["reward"], expected["reward"])
    assert torch.equal(td["next", "done"], expected["next", "done"])
    assert torch.equal(td["next", "step"], expected["next", "step"])


class Step(TensorClass):
    done: torch.Tensor


@tensorclass
class Transition:
    obs: torch.Tensor
    reward: torch.Tensor
    next: Step
    env: str = "pong"


def transitions(start: int, count: int, env: str = "pong") -> Transition:
    index = torch.arange(start, start + count)
    return Transition(
        obs=index.view(-1, 1).expand(count, 5).to(torch.int16).clone(),
        reward=index.double(),
        next=Step(done=index > 3, batch_size=[count]),
        env=env,
        batch_size=[count],
    )


def folder_bytes(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


# --- the module function ------------------------------------------------------------------


def test_appended_rows_follow_the_saved_ones(tmp_path: Path) -> None:
    rows_td(0, 5).memmap(tmp_path / "d")
    assert tclass.append_memmap(tmp_path / "d", rows_td(5, 3)) is None
    tclass.append_memmap(str(tmp_path / "d"), rows_td(8, 1))  # a str prefix too
    loaded = TensorDict.load_memmap(tmp_path / "d")
    check_rows(loaded, 9)
    assert python_value(loaded["label"]) == "run"
    assert isinstance(loaded["obs"], tclass.MemoryMappedTensor)
    meta = json.loads((tmp_path / "d" / "next" / "meta.json").read_text())
    assert meta["shape"] == [9] and meta["step"]["shape"] == [9, 2]


def test_an_append_neither_reads_nor_rewrites_the_saved_rows(tmp_path: Path) -> None:
    rows_td(0, 6).memmap(tmp_path / "d")
    leaf = tmp_path / "d" / "obs.memmap"
    inode, old = leaf.stat().st_ino, leaf.read_bytes()
    before = TensorDict.load_memmap(tmp_path / "d")  # a reader that mapped the old rows
    tclass.append_memmap(tmp_path / "d", rows_td(6, 4))
    assert leaf.stat().st_ino == inode  # grown in place, not replaced by a copy
    assert leaf.read_bytes()[: len(old)] == old
    assert leaf.stat().st_size == 10 * 3 * 4
    check_rows(before, 6)  # earlier mappings keep their rows
    check_rows(TensorDict.load_memmap(tmp_path / "d"), 10)


def test_appending_twice_and_to_an_empty_save(tmp_path: Path) -> None:
    rows_td(0, 0).memmap(tmp_path / "d")  # no rows: the format writes no leaf file
    for start, count in ((0, 2), (2, 5), (7, 2)):
        tclass.append_memmap(tmp_path / "d", rows_td(start, count))
    check_rows(TensorDict.load_memmap(tmp_path / "d"), 9)


def test_zero_rows_change_nothing(tmp_path: Path) -> None:
    rows_td(0, 3).memmap(tmp_path / "d")
    before = folder_bytes(tmp_path / "d")
    tclass.append_memmap(tmp_path / "d", rows_td(3, 0))
    assert folder_bytes(tmp_path / "d") == before


def test_more_batch_dims_grow_along_the_first(tmp_path: Path) -> None:
    TensorDict({"x": torch.zeros(3, 2, 4)}, batch_size=[3, 2]).memmap(tmp_path / "d")
    tclass.append_memmap(tmp_path / "d", TensorDict({"x": torch.ones(1, 2, 4)}, batch_size=[1, 2]))
    loaded = TensorDict.load_memmap(tmp_path / "d")
    assert loaded.batch_size == torch.Size([4, 2])
    assert loaded["x"].sum() == 8 and loaded["x"][3].sum() == 8


def test_records_grow_and_come_back_as_their_class(tmp_path: Path) -> None:
    transitions(0, 4).memmap(tmp_path / "t")
    tclass.append_memmap(tmp_path / "t", transitions(4, 3))
    loaded = Transition.load_memmap(tmp_path / "t")
    assert isinstance(loaded, Transition) and isinstance(loaded.next, Step)
    assert loaded.batch_size == torch.Size([7]) and loaded.next.batch_size == torch.Size([7])
    assert torch.equal(loaded.reward, torch.arange(7).double())
    assert torch.equal(loaded.next.done, torch.arange(7) > 3)
    assert loaded.env == "pong"


def test_python_values_that_differ_become_per_row_values(tmp_path: Path) -> None:
    transitions(0, 2, env="pong").memmap(tmp_path / "t")
    tclass.append_memmap(tmp_path / "t", transitions(2, 2, env="pong"))
    assert Transition.load_memmap(tmp_path / "t").env == "pong"  # equal: one value still
    tclass.append_memmap(tmp_path / "t", transitions(4, 1, env="breakout"))
    loaded = Transition.load_memmap(tmp_path / "t")
    assert loaded.env == ["pong"] * 4 + ["breakout"]
    tclass.append_memmap(tmp_path / "t", transitions(5, 2, env="pong"))  # a stack grows
    assert Transition.load_memmap(tmp_path / "t").env == ["pong"] * 4 + ["breakout"] + ["pong"] * 2


def test_a_metadata_value_stays_metadata(tmp_path: Path) -> None:
    TensorDict({"x": torch.zeros(2), "m": tclass.MetaData("run")}, [2]).memmap(tmp_path / "d")
    more = TensorDict({"x": torch.ones(1), "m": tclass.MetaData("run")}, [1])
    grown = TensorDict.load_memmap(tmp_path / "d").append_memmap_(more)
    for got in (grown, TensorDict.load_memmap(tmp_path / "d")):
        assert type(got.get("m")) is tclass.MetaData and got.get("m").batch_size == (3,)


def test_a_per_row_stack_in_a_tensordict_grows(tmp_path: Path) -> None:
    td = TensorDict(
        {"x": torch.zeros(2), "tag": NonTensorStack.from_list(["a", "b"])}, batch_size=[2]
    )
    td.memmap(tmp_path / "d")
    more = TensorDict({"x": torch.ones(1), "tag": NonTensorStack.from_list(["c"])}, batch_size=[1])
    tclass.append_memmap(tmp_path / "d", more)
    loaded = TensorDict.load_memmap(tmp_path / "d")
    assert python_value(loaded["tag"]) == ["a", "b", "c"] and loaded["x"].tolist() == [0, 0, 1]


# --- what is refused, before anything is written ------------------------------------------


def refused(
    tmp_path: Path, rows: Any, error: type[BaseException], match: str, saved: Any = None
) -> None:
    prefix = tmp_path / "d"
    (rows_td(0, 4) if saved is None else saved).memmap(prefix)
    before = folder_bytes(prefix)
    with pytest.raises(error, match=match):
        tclass.append_memmap(prefix, rows)
    assert folder_bytes(prefix) == before  # nothing written, nothing grown
    assert [p.name for p in tmp_path.iterdir()] == ["d"]  # and no staging left behind


def test_rows_with_other_keys_are_refused(tmp_path: Path) -> None:
    refused(tmp_path, rows_td(4, 2).exclude("reward"), ValueError, "reward")


def test_rows_with_another_dtype_are_refused(tmp_path: Path) -> None:
    rows = rows_td(4, 2)
    rows["reward"] = rows["reward"].double()
    refused(tmp_path, rows, ValueError, r"reward.*float64|float64.*reward")


def test_rows_with_other_feature_dims_are_refused(tmp_path: Path) -> None:
    rows = rows_td(4, 2)
    rows["obs"] = torch.zeros(2, 3, 5, dtype=torch.uint8)
    refused(tmp_path, rows, ValueError, "obs")


def test_rows_that_differ_beyond_the_first_batch_dim_are_refused(tmp_path: Path) -> None:
    saved = TensorDict({"x": torch.zeros(3, 2)}, batch_size=[3, 2])
    rows = TensorDict({"x": torch.zeros(1, 3)}, batch_size=[1, 3])
    refused(tmp_path, rows, ValueError, r"\[1, 3\]|1, 3", saved=saved)


def test_rows_without_batch_dims_are_refused(tmp_path: Path) -> None:
    refused(tmp_path, rows_td(4, 1)[0], ValueError, "first batch dim")


def test_a_save_without_batch_dims_cannot_grow(tmp_path: Path) -> None:
    saved = TensorDict({"x": torch.zeros(2)}, batch_size=[])
    rows = TensorDict({"x": torch.zeros(1, 2)}, batch_size=[1])
    refused(tmp_path, rows, ValueError, "first batch dim", saved=saved)


def test_rows_of_another_class_are_refused(tmp_path: Path) -> None:
    saved = transitions(0, 2)
    rows = transitions(2, 1).to_tensordict()
    refused(tmp_path, rows, ValueError, "Transition", saved=saved)


@tensorclass
class Other:
    obs: torch.Tensor


def _appended(tmp_path: Path, saved: Any, rows: Any, method: bool) -> str:
    """The message of the AppendError appending ``rows`` to ``saved`` raises (by the
    function or the method); the folder is left as it was."""
    saved.memmap(tmp_path / "d")
    before = folder_bytes(tmp_path / "d")
    loaded = tclass.load_memmap(tmp_path / "d")
    with pytest.raises(tclass.errors.AppendError) as info:
        if method:
            loaded.append_memmap_(rows)
        else:
            tclass.append_memmap(tmp_path / "d", rows)
    assert folder_bytes(tmp_path / "d") == before
    return str(info.value)


@pytest.mark.parametrize("method", [False, True], ids=["append_memmap", "append_memmap_"])
def test_rows_of_another_class_say_what_differs_and_what_to_do(
    tmp_path: Path, method: bool
) -> None:
    # The classes by name (a, not "a Other"), the fields that differ, and the fix.
    saved = transitions(0, 2)
    fields = "['env', 'next', 'obs', 'reward']"
    assert _appended(
        tmp_path / "1", saved, Other(obs=torch.zeros(1, 5), batch_size=[1]), method
    ) == (
        f"cannot append records of class Other ({__name__}.Other) to the saved collection, "
        f"which holds records of class Transition ({__name__}.Transition); their fields differ "
        "too: the rows lack ['env', 'next', 'reward']. Append Transition records (fields "
        f"{fields})"
    )
    assert _appended(tmp_path / "2", saved, transitions(2, 1).to_tensordict(), method) == (
        "cannot append a TensorDict to the saved collection, which holds records of class "
        f"Transition ({__name__}.Transition). Append Transition records: "
        "Transition.from_tensordict(rows.to_tensordict()) builds them"
    )
    assert _appended(tmp_path / "3", rows_td(0, 2), transitions(2, 1), method).startswith(
        f"cannot append records of class Transition ({__name__}.Transition) to the saved "
        "collection, which holds a TensorDict; their fields differ too: the rows lack"
    )
    message = _appended(
        tmp_path / "4",
        rows_td(0, 2),
        rows_td(2, 1).exclude("reward").set("x", torch.ones(1)),
        method,
    )
    assert message == (
        "cannot append rows with other keys than the saved collection: the rows lack "
        "['reward'] and the rows have ['x'], which the saved ones do not. Give the rows "
        "exactly the saved keys ['label', 'next', 'obs', 'reward'] (rows.select(...) drops "
        "the others)"
    )
    nested = rows_td(2, 1)
    del nested["next", "step"]
    assert _appended(tmp_path / "5", rows_td(0, 2), nested, method).startswith(
        "cannot append rows with other keys than the entry 'next': the rows lack ['step']."
    )


def test_the_fix_an_append_error_names_works(tmp_path: Path) -> None:
    transitions(0, 2).memmap(tmp_path / "d")
    rows = transitions(2, 1).to_tensordict()
    tclass.append_memmap(tmp_path / "d", Transition.from_tensordict(rows.to_tensordict()))
    assert tclass.load_memmap(tmp_path / "d").reward.tolist() == [0.0, 1.0, 2.0]


def test_a_lazy_stack_cannot_grow(tmp_path: Path) -> None:
    member = TensorDict({"x": torch.zeros(2)}, batch_size=[2])
    saved = tclass.lazy_stack([member, member.clone()])
    refused(tmp_path, saved, ValueError, "lazy stack", saved=saved)


def test_rows_must_be_a_collection(tmp_path: Path) -> None:
    rows_td(0, 2).memmap(tmp_path / "d")
    with pytest.raises(TypeError, match="dict"):
        tclass.append_memmap(tmp_path / "d", {"reward": torch.zeros(2)})  # type: ignore[arg-type]


def test_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TclassError) as info:
        tclass.append_memmap(tmp_path / "nothing", rows_td(0, 1))
    assert isinstance(info.value, ValueError)  # what the peer raises
    assert "nothing" in str(info.value)
    assert not (tmp_path / "nothing").exists()


def test_a_nested_folder_cannot_grow_apart_from_its_parent(tmp_path: Path) -> None:
    rows_td(0, 3).memmap(tmp_path / "d")
    before = folder_bytes(tmp_path / "d")
    with pytest.raises(ValueError, match="parent"):
        tclass.append_memmap(tmp_path / "d" / "next", rows_td(3, 1)["next"])
    loaded = TensorDict.load_memmap(tmp_path / "d")
    with pytest.raises(ValueError, match="parent"):
        loaded["next"].append_memmap_(rows_td(3, 1)["next"])
    assert folder_bytes(tmp_path / "d") == before
    # A nested collection under a parent without batch dims has its own rows: it grows.
    TensorDict({"inner": rows_td(0, 2)}, batch_size=[]).memmap(tmp_path / "e")
    tclass.append_memmap(tmp_path / "e" / "inner", rows_td(2, 2))
    check_rows(TensorDict.load_memmap(tmp_path / "e")["inner"], 4)


def test_an_archive_cannot_grow(tmp_path: Path) -> None:
    rows_td(0, 2).save(tmp_path / "d.tdz")
    before = (tmp_path / "d.tdz").read_bytes()
    with pytest.raises(ValueError, match="unpack_memmap"):
        tclass.append_memmap(tmp_path / "d.tdz", rows_td(2, 1))
    assert (tmp_path / "d.tdz").read_bytes() == before


def test_a_damaged_folder_is_refused_as_load_memmap_refuses_it(tmp_path: Path) -> None:
    rows_td(0, 4).memmap(tmp_path / "d")
    os.truncate(tmp_path / "d" / "reward.memmap", 8)  # shorter than its 4 rows
    with pytest.raises(tclass.errors.FileFormatError, match="reward.memmap"):
        tclass.append_memmap(tmp_path / "d", rows_td(4, 1))
    assert (tmp_path / "d" / "reward.memmap").stat().st_size == 8


def test_pickled_values_need_allow_pickle(tmp_path: Path) -> None:
    td = TensorDict({"x": torch.zeros(2), "v": NonTensorData({1, 2}, batch_size=[2])}, [2])
    td.memmap(tmp_path / "d", allow_pickle=True)
    rows = TensorDict({"x": torch.ones(1), "v": NonTensorData({1, 2}, batch_size=[1])}, [1])
    with pytest.raises(tclass.errors.PickleRefusedError):
        tclass.append_memmap(tmp_path / "d", rows)
    tclass.append_memmap(tmp_path / "d", rows, allow_pickle=True)
    loaded = TensorDict.load_memmap(tmp_path / "d", allow_pickle=True)
    assert loaded["x"].tolist() == [0, 0, 1] and python_value(loaded["v"]) == {1, 2}


def test_the_method_takes_allow_pickle_as_its_error_says(tmp_path: Path) -> None:
    """Rows holding a value JSON cannot hold, appended to a folder saved without one: the
    error names allow_pickle=True, which append_memmap_ takes, as append_memmap does."""
    td = TensorDict({"x": torch.zeros(2), "v": NonTensorData(1, batch_size=[2])}, [2])
    td.memmap(tmp_path / "d")
    loaded = TensorDict.load_memmap(tmp_path / "d")
    rows = TensorDict({"x": torch.ones(1), "v": NonTensorData({1, 2}, batch_size=[1])}, [1])
    with pytest.raises(tclass.errors.NotSerializableError, match="allow_pickle=True"):
        loaded.append_memmap_(rows)
    assert loaded.append_memmap_(rows, allow_pickle=True) is loaded
    assert loaded["x"].tolist() == [0, 0, 1] and loaded[2]["v"] == {1, 2}
    again = TensorDict.load_memmap(tmp_path / "d", allow_pickle=True)
    assert again[2]["v"] == {1, 2} and again[0]["v"] == 1


# --- the method: a saved collection extended in place -------------------------------------


def test_a_loaded_collection_is_extended_in_place(tmp_path: Path) -> None:
    rows_td(0, 3).memmap(tmp_path / "d")
    loaded = TensorDict.load_memmap(tmp_path / "d")
    assert loaded.append_memmap_(rows_td(3, 2)) is loaded
    check_rows(loaded, 5)
    loaded["reward"][4] = -1.0  # still write-through: the leaves map the grown files
    assert TensorDict.load_memmap(tmp_path / "d")["reward"][4] == -1.0
    check_rows(TensorDict.load_memmap(tmp_path / "d")[:4], 4)


def test_a_loaded_record_is_extended_in_place(tmp_path: Path) -> None:
    transitions(0, 2).memmap(tmp_path / "t")
    buffer = Transition.load_memmap(tmp_path / "t")
    assert buffer.append_memmap_(transitions(2, 3)) is buffer
    assert buffer.batch_size == torch.Size([5]) and buffer.next.batch_size == torch.Size([5])
    assert torch.equal(buffer.reward, torch.arange(5).double())
    assert not buffer.is_locked  # as loaded: the lock state is kept
    assert Transition.load_memmap(tmp_path / "t").batch_size == torch.Size([5])


def test_a_collection_saved_with_memmap__grows_too(tmp_path: Path) -> None:
    td = rows_td(0, 2)
    td.memmap_(tmp_path / "d")
    td.append_memmap_(rows_td(2, 2))
    check_rows(td, 4)
    check_rows(TensorDict.load_memmap(tmp_path / "d"), 4)


def test_rows_appended_elsewhere_are_picked_up(tmp_path: Path) -> None:
    rows_td(0, 2).memmap(tmp_path / "d")
    mine = TensorDict.load_memmap(tmp_path / "d")
    tclass.append_memmap(tmp_path / "d", rows_td(2, 3))  # another writer, meanwhile
    mine.append_memmap_(rows_td(5, 1))
    check_rows(mine, 6)  # the folder's rows, in its order


def test_only_a_saved_collection_has_a_folder_to_grow(tmp_path: Path) -> None:
    # an AttributeError too, as the peer raises (it has no append_memmap_)
    for catch in (ValueError, AttributeError, tclass.errors.AppendTargetError):
        with pytest.raises(catch, match="not linked to a folder .* memmap"):
            rows_td(0, 2).append_memmap_(rows_td(2, 1))


def test_a_read_only_load_never_changes_its_files(tmp_path: Path) -> None:
    rows_td(0, 2).memmap(tmp_path / "d")
    before = folder_bytes(tmp_path / "d")
    loaded = TensorDict.load_memmap(tmp_path / "d", mode="r")
    with pytest.raises(AttributeError, match="mode='r'"):
        loaded.append_memmap_(rows_td(2, 1))
    assert folder_bytes(tmp_path / "d") == before
    check_rows(loaded, 2)


def test_a_failed_method_append_leaves_the_collection_as_it_was(tmp_path: Path) -> None:
    rows_td(0, 3).memmap(tmp_path / "d")
    loaded = TensorDict.load_memmap(tmp_path / "d")
    with pytest.raises(ValueError):
        loaded.append_memmap_(rows_td(3, 1).exclude("obs"))
    check_rows(loaded, 3)


# --- crash safety and concurrent readers --------------------------------------------------


_APPENDER = """
import os, signal, torch
import tclass
from tclass import NonTensorData, TensorDict

def rows(start, count):
    index = torch.arange(start, start + count)
    return TensorDict(
        {
            "obs": index.view(-1, 1, 1).expand(count, 3, 4).to(torch.uint8).clone(),
            "reward": index.to(torch.float32),
            "next": {"done": (index % 2).bool(), "step": index.view(-1, 1).expand(count, 2)},
            "label": NonTensorData("run", batch_size=[count]),
        },
        batch_size=[count],
    )

n = tclass.load_memmap(PREFIX).batch_size[0]
READY.set()
while True:
    tclass.append_memmap(PREFIX, rows(n, CHUNK))
    n += CHUNK
"""


def _start_appender(ctx: Any, prefix: Path, chunk: int) -> Any:
    ready = ctx.Event()
    scope = {"PREFIX": str(prefix), "CHUNK": chunk, "READY": ready}
    child = ctx.Process(target=exec, args=(_APPENDER, scope), daemon=True)
    child.start()
    while not ready.wait(0.05):
        assert child.is_alive(), f"appender did not start (exit code {child.exitcode})"
    return child


def test_a_killed_append_leaves_the_old_rows_loadable(tmp_path: Path) -> None:
    import multiprocessing
    import random
    import signal

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tclass"])
    prefix, chunk = tmp_path / "d", 7
    rows_td(0, 3).memmap(prefix)
    rng, seen = random.Random(20), [3]
    for _ in range(12):
        child = _start_appender(ctx, prefix, chunk)
        time.sleep(rng.uniform(0.0, 0.15))
        child.kill()
        child.join(10)
        assert child.exitcode == -signal.SIGKILL
        loaded = TensorDict.load_memmap(prefix)  # never an error, never a torn count
        count = loaded.batch_size[0]
        assert (count - 3) % chunk == 0 and count >= seen[-1], (count, seen)
        check_rows(loaded, count)
        seen.append(count)
    assert seen[-1] > 3  # some appends completed
    tclass.append_memmap(prefix, rows_td(seen[-1], 2))  # and the folder still grows
    check_rows(TensorDict.load_memmap(prefix), seen[-1] + 2)
    assert not [p for p in tmp_path.iterdir() if p.name != "d"]  # killed appends cleaned up


def test_readers_see_the_old_or_the_new_row_count(tmp_path: Path) -> None:
    prefix, chunk = tmp_path / "d", 5
    rows_td(0, 5).memmap(prefix)
    stop, failures, counts = threading.Event(), list[BaseException](), []

    def read() -> None:
        try:
            while not stop.is_set():
                loaded = TensorDict.load_memmap(prefix)
                count = loaded.batch_size[0]
                assert (count - 5) % chunk == 0
                assert not counts or count >= counts[-1]
                check_rows(loaded, count)  # every node agrees, every row is complete
                counts.append(count)
        except BaseException as error:
            failures.append(error)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    for start in range(5, 5 + 40 * chunk, chunk):
        tclass.append_memmap(prefix, rows_td(start, chunk))
    stop.set()
    reader.join(30)
    if failures:
        raise failures[0]
    assert len(counts) >= 5 and len(set(counts)) >= 2  # the reader raced the appends
    check_rows(TensorDict.load_memmap(prefix), 5 + 40 * chunk)


# --- the folder stays the peer's format ---------------------------------------------------


@pytest.mark.peer
def test_the_peer_reads_a_folder_tclass_grew(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    rows_td(0, 4).memmap(tmp_path / "d")
    tclass.append_memmap(tmp_path / "d", rows_td(4, 3))
    theirs = tensordict.TensorDict.load_memmap(tmp_path / "d")
    assert theirs.batch_size == torch.Size([7]) and theirs["next"].batch_size == torch.Size([7])
    assert torch.equal(theirs["reward"], torch.arange(7, dtype=torch.float32))
    assert theirs["label"] == "run"


@pytest.mark.peer
def test_tclass_grows_a_folder_the_peer_wrote_and_the_peer_grows_one_of_tclass(
    tmp_path: Path,
) -> None:
    tensordict = pytest.importorskip("tensordict")
    peer_td = tensordict.TensorDict(
        {"reward": torch.arange(3, dtype=torch.float32), "n": {"x": torch.zeros(3, 2)}}, [3]
    )
    peer_td.memmap(tmp_path / "p")
    more = TensorDict({"reward": torch.tensor([3.0]), "n": {"x": torch.ones(1, 2)}}, [1])
    tclass.append_memmap(tmp_path / "p", more)
    assert TensorDict.load_memmap(tmp_path / "p")["reward"].tolist() == [0, 1, 2, 3]
    assert tensordict.TensorDict.load_memmap(tmp_path / "p")["n", "x"].sum() == 2

    TensorDict({"reward": torch.zeros(2)}, [2]).memmap(tmp_path / "t")
    tensordict.append_memmap(
        tmp_path / "t", tensordict.TensorDict(reward=torch.ones(2), batch_size=[2])
    )
    assert TensorDict.load_memmap(tmp_path / "t")["reward"].tolist() == [0, 0, 1, 1]


def test_an_append_keeps_the_saved_dim_names(tmp_path: Path) -> None:
    """The grown folder names its dims as the saved one did (the peer's keeps them too), at
    every level, and through a record's ``append_memmap_``."""
    td = TensorDict(
        x=torch.zeros(3, 2), n={"y": torch.zeros(3, 2)}, batch_size=[3, 2], names=["t", "e"]
    )
    td.memmap(tmp_path / "d")
    more = TensorDict(x=torch.ones(1, 2), n={"y": torch.ones(1, 2)}, batch_size=[1, 2])
    tclass.append_memmap(tmp_path / "d", more)
    grown = TensorDict.load_memmap(tmp_path / "d")
    assert grown.batch_size == torch.Size([4, 2])
    assert grown.names == ["t", "e"] and grown["n"].names == ["t", "e"]

    @tensorclass
    class Named:
        x: torch.Tensor
        label: str = "a"

    Named(x=torch.arange(4.0), batch_size=[4], names=["time"]).memmap(tmp_path / "r")
    saved = Named.load_memmap(tmp_path / "r")
    saved.append_memmap_(Named(x=torch.arange(2.0), batch_size=[2], names=["time"]))
    assert saved.names == ["time"]
    again = Named.load_memmap(tmp_path / "r")
    assert again.batch_size == torch.Size([6]) and again.names == ["time"]


@tensorclass(autocast=True)
class _Counted:
    x: torch.Tensor
    n: int


def test_a_loaded_lazy_stack_says_it_cannot_grow(tmp_path: Path) -> None:
    """``append_memmap_`` of a lazy stack loaded from its folder names the lazy stack (not
    a folder it is not linked to) and what grows instead; the folder is left as it was."""
    member = _Counted(x=torch.zeros(2), n=torch.tensor(1), batch_size=[2])
    tclass.lazy_stack([member, member.clone()]).memmap(tmp_path / "s")
    before = sorted(p.read_bytes() for p in (tmp_path / "s").rglob("*") if p.is_file())
    loaded = _Counted.load_memmap(tmp_path / "s")
    with pytest.raises(tclass.errors.AppendTargetError, match="lazy stack, which cannot grow"):
        loaded.append_memmap_(torch.stack([member, member]))
    with pytest.raises(AttributeError, match="torch.stack"):  # as the peer's (no method)
        tclass.load_memmap(tmp_path / "s").append_memmap_(torch.stack([member, member]))
    assert sorted(p.read_bytes() for p in (tmp_path / "s").rglob("*") if p.is_file()) == before
    dense = torch.stack([member, member.clone()])  # the dense stack grows
    dense.memmap(tmp_path / "d")
    grown = _Counted.load_memmap(tmp_path / "d").append_memmap_(torch.stack([member, member]))
    assert grown.batch_size == (4, 2) and grown[3].n == 1
