"""Writes into memory-mapped collections reach their folders (issue 15, items 2 and 3).

A collection saved with ``memmap``/``memmap_``/``memmap_like`` or loaded write-through
keeps its folder in step: Python values written by row, assigned, updated or removed
rewrite their node's ``meta.json``; an entry the folder lacks (a field that was ``None``
when the buffer was allocated) is allocated there on its first write. Each check reloads
the folder to compare memory with disk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import (
    LazyStackedTensorDict,
    MemoryMappedTensor,
    NonTensorData,
    NonTensorStack,
    TensorDict,
)
from tclass._io.memmap._read import load_tree
from tclass.errors import (
    FolderWriteError,
    LockedError,
    NotSerializableError,
    NotSerializableWriteError,
    UnsupportedError,
)


@tclass.tensorclass
class Info:
    x: torch.Tensor
    tag: str | None = None


@tclass.tensorclass
class Row:
    r: torch.Tensor
    env_id: str
    info: Info | None = None
    extra: torch.Tensor | None = None


def _buffer(path: Path, rows: int = 10, how: str = "memmap_like") -> Row:
    """A buffer of ``rows`` rows allocated from one expanded row (info and extra absent)."""
    row = Row(r=torch.zeros(()), env_id="a", batch_size=[]).expand(rows)
    if how == "memmap_":
        row = row.clone()
        return row.memmap_(path)
    return getattr(row, how)(path)  # type: ignore[no-any-return]


def _rows(env_id: str, n: int = 2, info: Info | None = None) -> Row:
    return Row(r=torch.ones(n), env_id=env_id, info=info, batch_size=[n])


def _meta(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns


# --- item 2: Python values reach the folder --------------------------------------------------


@pytest.mark.parametrize("how", ["memmap_like", "memmap", "memmap_"])
def test_value_written_by_row_reaches_the_folder(tmp_path: Path, how: str) -> None:
    buf = _buffer(tmp_path / "buf", how=how)
    buf[0:2] = _rows("b")
    expected = ["b", "b"] + ["a"] * 8
    assert buf.env_id == expected
    loaded = Row.load_memmap(tmp_path / "buf")
    assert loaded.env_id == expected and loaded.r.tolist() == [1.0, 1.0] + [0.0] * 8
    # The node became a per-row stack in the folder, as the peer writes one.
    node = _meta(tmp_path / "buf" / "_tensordict" / "env_id" / "meta.json")
    assert node["_class"] == "tensordict:NonTensorStack" and node["data"] == expected
    assert _meta(tmp_path / "buf" / "_tensordict" / "meta.json")["env_id"] == {
        "type": "NonTensorStack"
    }
    buf.memmap_(tmp_path / "buf")  # saving again keeps what memory holds
    assert Row.load_memmap(tmp_path / "buf").env_id == expected


def test_writing_the_same_value_again_rewrites_nothing(tmp_path: Path) -> None:
    buf = _buffer(tmp_path / "buf")
    node = tmp_path / "buf" / "_tensordict" / "env_id" / "meta.json"
    before = _stamp(node)
    buf[0:2] = _rows("b")
    changed = _stamp(node)
    assert changed != before  # replaced by a new file (renamed over the old one)
    buf[0:2] = _rows("b")
    buf[1] = Row(r=torch.ones(()), env_id="b", batch_size=[])
    buf[5:9] = _rows("a", 4)
    assert _stamp(node) == changed
    loaded = Row.load_memmap(tmp_path / "buf")
    loaded.env_id = NonTensorStack.from_list(["b", "b"] + ["a"] * 8)  # type: ignore[assignment]
    assert _stamp(node) == changed  # assigned whole, the same values: still nothing
    loaded.env_id = "c"
    assert _stamp(node) != changed and Row.load_memmap(tmp_path / "buf").env_id == "c"
    assert [name for name in os.listdir(node.parent) if name.startswith(".")] == []


def test_tensordict_values_by_row_and_whole_replacement(tmp_path: Path) -> None:
    td = TensorDict({"s": NonTensorData("x", batch_size=[3]), "a": torch.zeros(3)}, [3])
    td.memmap_(tmp_path / "td")
    td[0:2] = TensorDict({"s": NonTensorData("y", batch_size=[2]), "a": torch.ones(2)}, [2])
    td[2] = {"s": "w"}
    assert TensorDict.load_memmap(tmp_path / "td").get("s").tolist() == ["y", "y", "w"]
    loaded = TensorDict.load_memmap(tmp_path / "td")
    loaded["s"] = NonTensorData("z", batch_size=[3])
    assert TensorDict.load_memmap(tmp_path / "td").get("s").data == "z"
    loaded.set("s", NonTensorStack.from_list(["p", "q", "r"]))
    assert TensorDict.load_memmap(tmp_path / "td").get("s").tolist() == ["p", "q", "r"]
    loaded.update({"s": NonTensorData("u", batch_size=[3])})
    assert TensorDict.load_memmap(tmp_path / "td").get("s").data == "u"
    assert not (tmp_path / "td" / "s" / "other.pickle").exists()


def test_set_and_update_on_a_loaded_record(tmp_path: Path) -> None:
    _buffer(tmp_path / "buf")
    loaded = Row.load_memmap(tmp_path / "buf")
    loaded.env_id = "q"
    assert Row.load_memmap(tmp_path / "buf").env_id == "q"
    loaded.set("env_id", "s")
    assert Row.load_memmap(tmp_path / "buf").env_id == "s"
    loaded.update({"env_id": "t"})
    assert Row.load_memmap(tmp_path / "buf").env_id == "t"
    with loaded.lock_(), pytest.raises(LockedError, match="saved in its folder too"):
        loaded.env_id = "u"


def test_nested_values_reach_their_folders(tmp_path: Path) -> None:
    row = Row(r=torch.zeros(()), env_id="a", info=Info(x=torch.zeros(2), tag="t0"), batch_size=[])
    buf = row.expand(6).memmap_like(tmp_path / "buf")
    buf[1:3] = _rows("b", info=Info(x=torch.ones(2, 2), tag="t1", batch_size=[2]))
    loaded = Row.load_memmap(tmp_path / "buf")
    assert loaded.info.tag == ["t0", "t1", "t1", "t0", "t0", "t0"]
    assert loaded.info.x[1:3].eq(1).all() and loaded.info.x[0].eq(0).all()
    loaded.info.tag = "t2"
    assert Row.load_memmap(tmp_path / "buf").info.tag == "t2"
    td = TensorDict({"next": {"s": NonTensorData("n", batch_size=[2])}}, [2]).memmap(
        tmp_path / "td"
    )
    td.unlock_().set(("next", "s"), NonTensorData("m", batch_size=[2]))
    assert TensorDict.load_memmap(tmp_path / "td")["next", "s"] == "m"


def test_a_tensordict_converted_to_a_record_field_keeps_its_folder(tmp_path: Path) -> None:
    # A folder whose field was saved as a plain TensorDict (as the peer saves one) loads
    # as the field's class: the converted record still writes into that folder.
    content = TensorDict({"r": torch.zeros(3), "env_id": NonTensorData("a", batch_size=[3])}, [3])
    content["info"] = TensorDict(
        {"x": torch.zeros(3), "tag": NonTensorData("t", batch_size=[3])}, [3]
    )
    content.memmap(tmp_path / "p" / "_tensordict")
    (tmp_path / "p" / "meta.json").write_text(json.dumps({"_type": f"<class '{__name__}.Row'>"}))
    loaded = Row.load_memmap(tmp_path / "p")
    assert type(loaded.info) is Info
    loaded.info.tag = "u"
    assert Row.load_memmap(tmp_path / "p").info.tag == "u"


def test_lazy_stack_members_keep_their_values(tmp_path: Path) -> None:
    members = [
        TensorDict({"x": torch.zeros(3, i + 1), "s": NonTensorData(f"m{i}", batch_size=[3])}, [3])
        for i in range(2)
    ]
    lazy = tclass.lazy_stack(members).memmap(tmp_path / "lz")
    lazy[1, 0:2] = {"s": NonTensorData("c", batch_size=[2])}
    loaded = tclass.load_memmap(tmp_path / "lz")
    assert isinstance(loaded, LazyStackedTensorDict)
    assert (
        loaded.tensordicts[1].get("s").tolist() == ["c", "c", "m1"]
        and loaded.tensordicts[0].get("s").data == "m0"
    )
    loaded.tensordicts[0]["s"] = NonTensorData("z", batch_size=[3])
    assert tclass.load_memmap(tmp_path / "lz").tensordicts[0].get("s").data == "z"
    records = tclass.lazy_stack(
        [Row(r=torch.zeros(2), env_id=name, batch_size=[2]) for name in "pq"]
    )
    records.memmap(tmp_path / "rs")
    stacked = Row.load_memmap(tmp_path / "rs")
    assert isinstance(stacked._tensordict, LazyStackedTensorDict)
    stacked.env_id = "w"
    stacked[1] = Row(r=torch.ones(2), env_id="v", batch_size=[2])
    again = Row.load_memmap(tmp_path / "rs")
    assert again.env_id == [["w", "w"], ["v", "v"]] and again.r[1].eq(1).all()


def test_value_set_to_none_is_removed_from_the_folder(tmp_path: Path) -> None:
    row = Row(r=torch.zeros(()), env_id="a", info=Info(x=torch.zeros(()), tag="t"), batch_size=[])
    row.expand(4).memmap(tmp_path / "buf")
    loaded = Row.load_memmap(tmp_path / "buf")
    loaded.info.tag = None
    again = Row.load_memmap(tmp_path / "buf")
    assert again.info.tag is None
    content = tmp_path / "buf" / "_tensordict" / "info" / "_tensordict"
    assert "tag" not in _meta(content / "meta.json") and not (content / "tag").exists()


def test_pickled_values_follow_with_allow_pickle(tmp_path: Path) -> None:
    td = TensorDict({"s": NonTensorData({1, 2}, batch_size=[2])}, [2])
    saved = td.memmap(tmp_path / "td", allow_pickle=True)
    saved[0] = {"s": NonTensorData({3})}
    loaded = TensorDict.load_memmap(tmp_path / "td", allow_pickle=True)
    assert loaded.get("s").tolist() == [{3}, {1, 2}]
    loaded.unlock_()["s"] = NonTensorData("json again", batch_size=[2])
    assert sorted(os.listdir(tmp_path / "td" / "s")) == ["meta.json"]  # the pickle is gone
    assert TensorDict.load_memmap(tmp_path / "td").get("s").data == "json again"


# --- errors: memory and disk never silently disagree ------------------------------------------


def test_value_that_is_not_json_is_refused_and_memory_unchanged(tmp_path: Path) -> None:
    td = TensorDict({"s": NonTensorData("x", batch_size=[3])}, [3]).memmap_(tmp_path / "td")
    with pytest.raises(NotSerializableError, match=r"writing 's' into .*allow_pickle=True"):
        td[0] = {"s": NonTensorData(object())}
    assert td.get("s").data == "x"
    assert TensorDict.load_memmap(tmp_path / "td").get("s").data == "x"


def test_rows_written_back_into_a_saved_number_are_refused_as_the_peer(tmp_path: Path) -> None:
    # x[i] = x[i].to_dict() of a saved NonTensorData number: the dict's number is written
    # as a tensor (as in memory, in both), which the folder cannot hold as JSON; refused
    # with a RuntimeError too, as the peer refuses the shared in-place write (program
    # 15,822,229 of features,index,shape,combine L12, fz29e), saying where the tensor is from
    td = TensorDict({"v": NonTensorData(4, batch_size=[3])}, [3]).memmap(tmp_path / "td")
    with pytest.raises(NotSerializableWriteError, match=r"'v'.*held there as a tensor") as info:
        td[-3,] = td[-3,].to_dict()
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, TypeError)
    assert td.get("v").tolist() == [4, 4, 4]
    assert TensorDict.load_memmap(tmp_path / "td").get("v").tolist() == [4, 4, 4]
    peer = pytest.importorskip("tensordict")
    theirs = peer.TensorDict({"v": peer.NonTensorData(4, batch_size=[3])}, [3])
    theirs = theirs.memmap(tmp_path / "peer")
    with pytest.raises(RuntimeError):
        theirs[-3,] = theirs[-3,].to_dict()


@pytest.mark.parametrize("how", ["set", "setattr", "update"])
def test_a_dict_of_tensors_into_a_loaded_value_field_is_refused(tmp_path: Path, how: str) -> None:
    # A str field keeps a dict as given, and a loaded record writes its Python values to
    # its folder, where a tensor cannot go as JSON: refused, memory and folder as they were
    # (the peer keeps it in memory only, and a reload gives back the old value).
    Row(r=torch.zeros(2), env_id="a", batch_size=[2]).memmap(tmp_path / "row")
    row = Row.load_memmap(tmp_path / "row")
    value = {"q": torch.ones(2)}
    with pytest.raises(NotSerializableError, match=r"'env_id'.*\['q'\].*allow_pickle=True"):
        if how == "set":
            row.set("env_id", value)
        elif how == "setattr":
            row.env_id = value  # type: ignore[assignment]
        else:
            row.update({"env_id": value})
    assert row.env_id == "a" and Row.load_memmap(tmp_path / "row").env_id == "a"
    row.env_id = "b"  # a value JSON holds is written through
    assert Row.load_memmap(tmp_path / "row").env_id == "b"


def test_folder_that_is_gone_is_a_clear_error_and_memory_unchanged(tmp_path: Path) -> None:
    buf = _buffer(tmp_path / "buf", rows=3)
    shutil.rmtree(tmp_path / "buf")
    with pytest.raises(FolderWriteError, match=r"cannot write 'env_id' into .*nothing was changed"):
        buf[0] = Row(r=torch.ones(()), env_id="b", batch_size=[])
    assert buf.env_id == ["a"] * 3  # expand stacked the value, as the peer's


def test_read_only_and_device_loads_write_no_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _buffer(tmp_path / "buf", rows=3)
    node = tmp_path / "buf" / "_tensordict" / "env_id" / "meta.json"
    before = _stamp(node)
    with monkeypatch.context() as patch:  # a folder this process may not write
        patch.setattr(os, "access", lambda *args, **kwargs: False)
        unwritable = Row.load_memmap(tmp_path / "buf")
    loads = [
        load_tree(tmp_path / "buf", Row, None, False, mode="r"),
        Row.load_memmap(tmp_path / "buf", device="meta"),
    ]
    for loaded in (*loads, unwritable):
        assert loaded._tensordict._saved_at is None
        loaded.env_id = "changed in memory"
        assert loaded.env_id == "changed in memory"
    assert _stamp(node) == before and Row.load_memmap(tmp_path / "buf").env_id == ["a"] * 3
    assert TensorDict({"a": torch.zeros(2)}, [2])._saved_at is None
    assert TensorDict({"a": torch.zeros(2)}, [2]).memmap(tmp_path / "td")[0:1]._saved_at is None


def test_legacy_record_fields_refuse_writes(tmp_path: Path) -> None:
    # Older writers kept a record's Python values in its own meta.json, which a write
    # into _tensordict/ would not replace: refused with the fix, rather than lost.
    Row(r=torch.zeros(2), env_id="a", batch_size=[2]).memmap(tmp_path / "old")
    shutil.rmtree(tmp_path / "old" / "_tensordict" / "env_id")
    content = _meta(tmp_path / "old" / "_tensordict" / "meta.json")
    del content["env_id"]
    (tmp_path / "old" / "_tensordict" / "meta.json").write_text(json.dumps(content))
    record = _meta(tmp_path / "old" / "meta.json")
    (tmp_path / "old" / "meta.json").write_text(json.dumps({**record, "env_id": "legacy"}))
    loaded = Row.load_memmap(tmp_path / "old")
    assert loaded.env_id == "legacy"
    with pytest.raises(UnsupportedError, match=r"record.memmap_\(path\)"):
        loaded.env_id = "new"
    assert loaded.env_id == "legacy"


# --- item 3: a field that was None when the buffer was allocated -------------------------------


def test_absent_field_is_allocated_by_an_indexed_write(tmp_path: Path) -> None:
    rows = 100_000
    buf = _buffer(tmp_path / "buf", rows=rows)
    assert buf.is_locked and buf.info is None
    buf[0:2] = _rows("b", info=Info(x=torch.full((2, 3), 5.0), tag="t", batch_size=[2]))
    assert buf.info.x.shape == (rows, 3) and isinstance(buf.info.x, MemoryMappedTensor)
    leaf = tmp_path / "buf" / "_tensordict" / "info" / "_tensordict" / "x.memmap"
    stat = leaf.stat()
    assert stat.st_size == rows * 3 * 4 and stat.st_blocks * 512 < 1 << 20  # sparse zeros
    assert _meta(tmp_path / "buf" / "_tensordict" / "meta.json")["info"] == {"type": "Info"}
    loaded = Row.load_memmap(tmp_path / "buf")
    assert loaded.info.x[:3].tolist() == [[5.0] * 3, [5.0] * 3, [0.0] * 3]
    assert loaded.info.tag == "t"  # the written value fills the other rows, as the peer
    buf[7] = Row(
        r=torch.ones(()), env_id="c", info=Info(x=torch.ones(3), batch_size=[]), batch_size=[]
    )
    assert Row.load_memmap(tmp_path / "buf").info.x[7].eq(1).all()  # now an ordinary write


def test_absent_field_is_filled_by_assignment_while_locked(tmp_path: Path) -> None:
    buf = _buffer(tmp_path / "buf", rows=4)
    buf.info = Info(x=torch.arange(4.0), batch_size=[4])
    buf.extra = torch.full((4, 2), 3.0)  # a tensor field: its own file
    assert buf.is_locked and isinstance(buf.info.x, MemoryMappedTensor) and buf.info.is_locked
    loaded = Row.load_memmap(tmp_path / "buf")
    assert loaded.info.x.tolist() == [0.0, 1.0, 2.0, 3.0] and loaded.extra.eq(3).all()
    with pytest.raises(LockedError, match="changes memory only"):
        buf.extra = torch.zeros(4, 2)  # present now: the lock protects it


_FILLS = {
    "attribute": lambda rec, key, value: setattr(rec, key, value),
    "set": lambda rec, key, value: rec.set(key, value),
    "set inplace": lambda rec, key, value: rec.set(key, value, inplace=True),
    "update": lambda rec, key, value: rec.update({key: value}),
    "update a TensorDict": lambda rec, key, value: rec.update(TensorDict({key: value}, [])),
}


@pytest.mark.parametrize("how", ["memmap", "memmap_", "memmap_like"])
@pytest.mark.parametrize("path", sorted(_FILLS))
def test_every_write_path_fills_an_absent_field_alike(tmp_path: Path, how: str, path: str) -> None:
    # One rule on every path (README, "An absent field of a saved record is filled while
    # locked"): a saved record's unset Optional field is written into the folder, whether
    # by attribute, set() or update(); a field already set is refused by each, and so is
    # any write into a locked record that is not saved, as the peer refuses them all.
    buf = _buffer(tmp_path / "buf", rows=4, how=how)
    fill = _FILLS[path]
    fill(buf, "extra", torch.full((4,), 2.0))
    fill(buf, "info", Info(x=torch.arange(4.0), tag="t", batch_size=[4]))
    assert buf.is_locked and isinstance(buf.extra, MemoryMappedTensor)
    loaded = Row.load_memmap(tmp_path / "buf")
    assert loaded.extra.tolist() == [2.0] * 4 and loaded.info.x.tolist() == [0, 1, 2, 3]
    assert loaded.info.tag == "t"
    present = [("extra", torch.zeros(4)), ("r", torch.zeros(4)), ("env_id", "b")]
    for key, value in present if path != "set inplace" else []:  # that one writes in place
        with pytest.raises(LockedError) as info:
            fill(buf, key, value)  # present: the lock protects it
        assert isinstance(info.value, RuntimeError)
    assert Row.load_memmap(tmp_path / "buf").extra.eq(2).all()
    with pytest.raises(ValueError, match=r"indexed along its batch dims"):
        buf["extra"] = torch.zeros(4)  # not a field write in either library
    unsaved = Row(r=torch.zeros(4), env_id="a", batch_size=[4]).lock_()
    with pytest.raises(LockedError):
        fill(unsaved, "extra", torch.ones(4))
    assert unsaved.extra is None


def test_new_field_after_unlock_persists(tmp_path: Path) -> None:
    buf = _buffer(tmp_path / "buf", rows=4)
    with buf.unlock_():
        buf.extra = torch.ones(4)
    assert Row.load_memmap(tmp_path / "buf").extra.tolist() == [1.0] * 4
    td = TensorDict({"a": torch.zeros(4)}, [4]).memmap(tmp_path / "td")
    td.unlock_()
    td["new"] = torch.arange(4)
    td["sub"] = {"deep": torch.ones(4, 2)}
    td["label"] = NonTensorData("L", batch_size=[4])
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert loaded.get("new").tolist() == [0, 1, 2, 3] and loaded["sub", "deep"].eq(1).all()
    assert loaded.get("label").data == "L"
    assert td.is_memmap() and td["sub"]._saved_at is not None  # the new entries are mapped


@pytest.mark.parametrize("how", ["memmap", "memmap_", "memmap_like"])
def test_a_locked_saved_tensordict_takes_no_new_key(tmp_path: Path, how: str) -> None:
    # Locked means no new keys, saved or not, as in the peer (a regression let a saved
    # TensorDict take any new key and write its file). Only a record's absent fields are
    # still filled (above).
    source = TensorDict({"a": torch.zeros(3), "n": {"c": torch.zeros(3)}}, [3])
    td = getattr(source.clone() if how == "memmap_" else source, how)(tmp_path / "td")
    assert td.is_locked
    writes = [
        lambda: td.__setitem__("new", torch.ones(3)),
        lambda: td.set("new", torch.ones(3)),
        lambda: td.update({"new": torch.ones(3)}),
        lambda: td.__setitem__(("n", "new"), torch.ones(3)),
        lambda: td["n"].set("new", torch.ones(3)),
        lambda: td.__setitem__(("q", "z"), torch.ones(3)),
        lambda: td.__setitem__("q", {"z": torch.ones(3)}),
        lambda: td.set_non_tensor("label", "x"),
        lambda: td.__setitem__(slice(0, 2), TensorDict(a=torch.ones(2), new=torch.ones(2))),
    ]
    for write in writes:
        with pytest.raises(LockedError, match="locked") as info:
            write()
        assert isinstance(info.value, RuntimeError)
    with pytest.raises(KeyError):
        td["a", "new"] = torch.ones(3)  # through a tensor: a wrong key, as the peer
    assert set(td.keys(include_nested=True)) == {"a", "n", ("n", "c")}
    assert sorted(os.listdir(tmp_path / "td")) == ["a.memmap", "meta.json", "n"]
    with td.unlock_():
        td["new"] = torch.ones(3)  # unlocked, a new key reaches the folder
    assert TensorDict.load_memmap(tmp_path / "td")["new"].eq(1).all()


def test_a_locked_record_takes_its_absent_fields_only(tmp_path: Path) -> None:
    # The fields that were None when saved stay fillable on a locked record (issue 15),
    # also once a loaded record is locked; the peer refuses those too. Nothing else is.
    buf = _buffer(tmp_path / "buf", rows=4)
    with pytest.raises(LockedError):
        buf._tensordict["not_a_field"] = torch.zeros(4)
    with pytest.raises(AttributeError):
        buf.not_a_field = torch.zeros(4)
    loaded = Row.load_memmap(tmp_path / "buf").lock_()
    loaded.extra = torch.full((4,), 2.0)
    assert Row.load_memmap(tmp_path / "buf").extra.eq(2).all()
    with pytest.raises(LockedError):
        loaded._tensordict["not_a_field"] = torch.zeros(4)


def test_replacing_a_saved_tensor_is_memory_only_and_the_error_says_so(tmp_path: Path) -> None:
    buf = _buffer(tmp_path / "buf", rows=3)
    with pytest.raises(
        LockedError, match=r"write in place \(record.r\[:\] = \.\.\.\).*memory only"
    ):
        buf.r = torch.ones(3)
    buf.r[:] = 2.0  # the supported way: reaches the file
    assert Row.load_memmap(tmp_path / "buf").r.tolist() == [2.0] * 3
    td = TensorDict({"a": torch.zeros(3)}, [3]).memmap(tmp_path / "td")
    with pytest.raises(
        LockedError, match=r"saved in .*set_\(\) or td\[index\] = value.*memory only"
    ):
        td["a"] = torch.ones(3)


def test_entries_added_by_two_writers_are_both_kept(tmp_path: Path) -> None:
    TensorDict({"a": torch.zeros(2)}, [2]).memmap(tmp_path / "td")
    first, second = TensorDict.load_memmap(tmp_path / "td"), TensorDict.load_memmap(tmp_path / "td")
    first["x"] = torch.ones(2)
    second["y"] = NonTensorData("y", batch_size=[2])  # second's memory never saw "x"
    assert sorted(TensorDict.load_memmap(tmp_path / "td").keys()) == ["a", "x", "y"]


def test_interrupted_writes_leave_the_folder_and_memory_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A new entry's files come first, the parent's meta.json last; a value's meta.json is
    # replaced by one rename. A writer stopped before a rename leaves a folder that loads
    # as before (new files unlisted), and the collection in memory unchanged.
    buf = _buffer(tmp_path / "buf", rows=4)
    buf[0:2] = _rows("b")
    content = tmp_path / "buf" / "_tensordict"
    blocked: list[str] = []
    real_replace = os.replace

    def replace(source: Any, target: Any) -> None:
        if os.fspath(target) in blocked:
            raise OSError(28, "No space left on device")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    blocked[:] = [str(content / "meta.json")]
    with pytest.raises(FolderWriteError, match="cannot write 'info'"):
        buf[0:2] = _rows("b", info=Info(x=torch.ones(2), batch_size=[2]))
    blocked[:] = [str(content / "env_id" / "meta.json")]
    with pytest.raises(FolderWriteError, match="cannot write 'env_id'"), buf.unlock_():
        buf.env_id = NonTensorStack.from_list(list("wxyz"))  # type: ignore[assignment]
    with pytest.raises(FolderWriteError):
        buf[3] = Row(r=torch.ones(()), env_id="c", batch_size=[])
    monkeypatch.undo()
    assert buf.info is None and buf.env_id == ["b", "b", "a", "a"]
    loaded = Row.load_memmap(tmp_path / "buf")
    assert loaded.info is None and loaded.env_id == ["b", "b", "a", "a"]
    assert [name for name in os.listdir(content) if name.startswith(".")] == []


def test_readers_never_see_a_torn_value_file(tmp_path: Path) -> None:
    buf = _buffer(tmp_path / "buf", rows=2000)
    values = {"a"} | {f"v{i}" for i in range(40)}
    failures: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(40):
                assert set(Row.load_memmap(tmp_path / "buf").env_id) <= values
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(40):
        buf[i * 50 : i * 50 + 50] = _rows(f"v{i}", 50)
    reader.join()
    assert not failures, failures[0]
    assert Row.load_memmap(tmp_path / "buf").env_id[::50] == [f"v{i}" for i in range(40)]


def test_resaving_accepts_a_write_a_killed_process_left(tmp_path: Path) -> None:
    buf = _buffer(tmp_path / "buf", rows=3)
    (tmp_path / "buf" / "_tensordict" / ".tclass-tmp-0123abcd-meta.json").write_text("{")
    buf[0] = Row(r=torch.ones(()), env_id="b", batch_size=[])
    buf.memmap_(tmp_path / "buf")
    assert Row.load_memmap(tmp_path / "buf").env_id == ["b", "a", "a"]


def test_the_peer_reads_a_folder_after_writes(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    td = TensorDict({"s": NonTensorData("x", batch_size=[3]), "a": torch.zeros(3)}, [3]).memmap(
        tmp_path / "td"
    )
    td[1] = {"s": NonTensorData("y"), "a": torch.tensor(1.0)}
    td.unlock_()["b"] = torch.arange(3)
    theirs = tensordict.TensorDict.load_memmap(tmp_path / "td")
    assert theirs["s"] == ["x", "y", "x"] and theirs.get("b").tolist() == [0, 1, 2]


# --- a fresh process reads what was written -----------------------------------------------------

_CLASSES = """
from typing import Optional
import torch
import tclass

@tclass.tensorclass
class Info:
    x: torch.Tensor
    tag: Optional[str] = None

@tclass.tensorclass
class Row:
    r: torch.Tensor
    env_id: str
    info: Optional[Info] = None
"""

_WRITE = """
import sys, torch
from rowpkg import Info, Row
buf = Row(r=torch.zeros(()), env_id="a", batch_size=[]).expand(5).memmap_like(sys.argv[1])
info = Info(x=torch.ones(2), tag="t", batch_size=[2])
buf[0:2] = Row(r=torch.ones(2), env_id="b", info=info, batch_size=[2])
loaded = Row.load_memmap(sys.argv[1])
loaded.info.tag = "u"
"""

_READ = """
import json, sys
from rowpkg import Row
row = Row.load_memmap(sys.argv[1])
out = {"env_id": row.env_id, "r": row.r.tolist(), "x": row.info.x.tolist(), "tag": row.info.tag}
print(json.dumps(out))
"""


def test_a_fresh_process_reads_the_writes(tmp_path: Path) -> None:
    package = tmp_path / "src" / "rowpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(_CLASSES))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    folder = str(tmp_path / "buf")
    for script in (_WRITE, _READ):
        done = subprocess.run(
            [sys.executable, "-c", script, folder],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "env_id": ["b", "b", "a", "a", "a"],
        "r": [1.0, 1.0, 0.0, 0.0, 0.0],
        "x": [1.0, 1.0, 0.0, 0.0, 0.0],
        "tag": "u",
    }


def test_keys_named_like_node_fields_follow_the_folder_s_naming(tmp_path: Path) -> None:
    # A node whose keys are stored as they are becomes escaped when a key named like a
    # node field is added; later writes find the escaped name.
    path = tmp_path / "td"
    TensorDict({"a": torch.zeros(3)}, [3]).memmap_(path)
    loaded = TensorDict.load_memmap(path)
    loaded["shape"] = NonTensorData("v", [3])
    assert "%shape" in _meta(path / "meta.json")
    again = TensorDict.load_memmap(path)
    assert again.get("shape").data == "v"
    again["shape"] = NonTensorData("w", [3])
    again["s"] = NonTensorData("x", [3])
    final = TensorDict.load_memmap(path)
    assert (final.get("shape").data, final.get("s").data) == ("w", "x")
    del final["shape"]
    assert sorted(TensorDict.load_memmap(path).keys()) == ["a", "s"]


def test_a_user_key_named_like_the_marker_is_never_taken_for_it(tmp_path: Path) -> None:
    path = tmp_path / "td"
    TensorDict({"_tclass": torch.ones(3)}, [3]).memmap_(path)
    loaded = TensorDict.load_memmap(path)
    loaded["s"] = NonTensorData("x", [3])  # merges no marker into the user's entry
    assert _meta(path / "meta.json")["_tclass"]["dtype"] == "torch.float32"
    with pytest.raises(UnsupportedError, match="Save the collection again"):
        loaded["shape"] = NonTensorData("v", [3])  # would rename '_tclass' on disk
    assert sorted(os.listdir(path)) == ["_tclass.memmap", "meta.json", "s"]  # nothing written
    reloaded = TensorDict.load_memmap(path)
    assert sorted(reloaded.keys()) == ["_tclass", "s"] and reloaded["_tclass"].sum() == 3


def _files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def test_rename_within_a_node_moves_the_files_and_the_listing(tmp_path: Path) -> None:
    """A folder renamed into loads back to what memory holds, without the old names'
    files; the renamed entries keep their identity (and mapping)."""
    folder = tmp_path / "w"
    TensorDict(
        {
            "a": torch.arange(3.0),
            "s": "hello",
            "n": {"b": torch.ones(3), "m": {"q": torch.zeros(3)}},
            "st": tclass.lazy_stack([TensorDict({"u": torch.ones(2)}, [2])] * 3),
        },
        batch_size=[3],
    ).memmap(folder)
    loaded = TensorDict.load_memmap(folder)
    leaf, nested = loaded["a"], loaded["n", "m"]
    loaded.rename_key_("a", "z").rename_key_("s", "t").rename_key_("n", "nn")
    loaded.rename_key_(("nn", "b"), ("nn", "c")).rename_key_("st", "stack")
    assert loaded["z"] is leaf and loaded["nn", "m"] is nested
    leaf[0] = 42.0  # the mapping follows the file
    nested["q"][1] = 7.0
    loaded["nn", "m", "new"] = torch.full((3,), 2.0)  # a write below a renamed folder
    assert _files(folder) == [
        "meta.json",
        "nn/c.memmap",
        "nn/m/meta.json",
        "nn/m/new.memmap",
        "nn/m/q.memmap",
        "nn/meta.json",
        "stack/0/meta.json",
        "stack/0/u.memmap",
        "stack/1/meta.json",
        "stack/1/u.memmap",
        "stack/2/meta.json",
        "stack/2/u.memmap",
        "stack/meta.json",
        "t/meta.json",
        "z.memmap",
    ]
    again = TensorDict.load_memmap(folder)
    assert sorted(again.keys(True, True), key=str) == sorted(loaded.keys(True, True), key=str)
    assert again["z"].tolist() == [42.0, 1.0, 2.0] and again["t"] == "hello"
    assert again["nn", "m", "q"].tolist() == [0.0, 7.0, 0.0]
    assert (again["nn", "m", "new"] == 2).all() and again["stack"].batch_size == (3, 2)


def test_rename_over_an_entry_replaces_its_files(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    TensorDict({"a": torch.ones(2), "v": "x", "b": torch.zeros(2)}, [2]).memmap(folder)
    loaded = TensorDict.load_memmap(folder)
    loaded.rename_key_("a", "v").rename_key_("b", "a")
    assert _files(folder) == ["a.memmap", "meta.json", "v.memmap"]
    again = TensorDict.load_memmap(folder)
    assert again["v"].tolist() == [1.0, 1.0] and again["a"].tolist() == [0.0, 0.0]
    with pytest.raises(KeyError):
        loaded.rename_key_("a", "v", safe=True)
    loaded.rename_key_("v", "shape")  # named like node metadata: stored escaped
    assert TensorDict.load_memmap(folder)["shape"].tolist() == [1.0, 1.0]


def test_a_number_written_into_a_saved_python_value_stays_a_value(tmp_path: Path) -> None:
    """``update_`` / ``set_`` of a number into a Python value of a saved collection
    writes the value into the folder; the entry stays a Python value (not a tensor)."""
    folder = tmp_path / "w"
    saved = TensorDict({"c": torch.zeros(2), "s": NonTensorData(2, batch_size=[2])}, [2])
    saved = saved.memmap(folder)
    saved.update_(saved.to_dict()).update_({"s": 3})
    assert saved["s"] == 3 and not isinstance(saved.get("s"), torch.Tensor)
    again = TensorDict.load_memmap(folder)
    assert again["s"] == 3 and not isinstance(again.get("s"), torch.Tensor)
    saved.set_("s", "a")  # and a later string too
    assert TensorDict.load_memmap(folder)["s"] == "a"


def test_a_rename_over_an_entry_keeps_its_place_as_in_memory(tmp_path: Path) -> None:
    """The renamed entry takes the place of the one it replaces, in memory, in the
    listing and so after a reload, as a rename over an entry of an unsaved TensorDict."""
    td = TensorDict({"b": torch.ones(2), "n": {}, "c": torch.zeros(2)}, [2])
    in_memory = td.clone().rename_key_("c", "b")
    folder = tmp_path / "w"
    td.memmap(folder)
    loaded = TensorDict.load_memmap(folder)
    assert list(loaded.keys()) == ["b", "c", "n"]  # (the folder lists them sorted)
    loaded.rename_key_(("c",), "b")
    assert list(loaded.keys()) == ["b", "n"] == list(in_memory.keys())
    again = TensorDict.load_memmap(folder)
    assert list(again.keys()) == ["b", "n"] and again["b"].tolist() == [0.0, 0.0]
    loaded.rename_key_("n", "m")  # a new name goes last, as in memory
    assert list(loaded.keys()) == ["b", "m"] == list(TensorDict.load_memmap(folder).keys())


def test_a_rename_interrupted_before_the_listing_leaves_a_loadable_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node's folder is renamed as a tree of links: until ``meta.json`` lists the new
    name, the old folder is whole, so a failure (or a crash) there loses nothing."""
    from tclass._io.memmap import _saved_folder

    folder = tmp_path / "w"
    TensorDict({"n": {"b": torch.arange(3.0)}, "a": torch.ones(3)}, [3]).memmap(folder)
    loaded = TensorDict.load_memmap(folder)

    def fail(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(_saved_folder, "replace_file", fail)
    with pytest.raises(tclass.errors.FolderWriteError, match="cannot rename 'n'"):
        loaded.rename_key_("n", "m")
    monkeypatch.undo()
    again = TensorDict.load_memmap(folder)
    assert sorted(again.keys()) == ["a", "n"] and again["n", "b"].tolist() == [0.0, 1.0, 2.0]
    again.rename_key_("n", "m")  # over the leftover tree of the failed rename
    assert _files(folder) == ["a.memmap", "m/b.memmap", "m/meta.json", "meta.json"]
    assert TensorDict.load_memmap(folder)["m", "b"].tolist() == [0.0, 1.0, 2.0]


def test_make_memmap_from_storage_of_a_nested_shape_is_a_clear_refusal(tmp_path: Path) -> None:
    """A 2-d tensor of element shapes (the peer's nested shape) cannot read one dense
    storage: an UnsupportedError naming the key, nothing added; a 1-d tensor of sizes
    is a shape as any other (``make_memmap`` takes a nested shape: tests/io/test_io_nested.py)."""
    td = TensorDict().memmap_(tmp_path)
    nested = torch.tensor([[1, 2], [1, 3]])
    storage = torch.zeros(6).untyped_storage()
    with pytest.raises(UnsupportedError, match=r"make_memmap_from_storage: \('e', 'f'\).*nested"):
        td.make_memmap_from_storage(("e", "f"), storage, shape=nested, dtype=torch.float32)
    assert list(td.keys()) == [] and sorted(os.listdir(tmp_path)) == ["meta.json"]
    made = td.make_memmap("a", shape=torch.tensor([2, 3]))
    assert made.shape == (2, 3) and td["a"].shape == (2, 3)


def test_collections_memmap_tensors_that_require_grad_detached(tmp_path: Path) -> None:
    param = torch.nn.Parameter(torch.ones(3))
    td = TensorDict({"p": param, "n": {"q": param * 2}}, [3])
    for saved in (td.memmap(), td.memmap(tmp_path / "td"), td.memmap_like()):
        assert not saved["p"].requires_grad and not saved["n", "q"].requires_grad
    assert torch.equal(td.memmap()["n", "q"], torch.full((3,), 2.0))
    folder = TensorDict({}, [3]).memmap(tmp_path / "more")
    assert not folder.make_memmap_from_tensor("k", param).requires_grad
    assert not MemoryMappedTensor(param * 2, filename=tmp_path / "x.bin").requires_grad


def test_memmap_in_place_of_a_python_value_node_on_its_own(tmp_path: Path) -> None:
    # memmap_ of a NonTensorStack / NonTensorData itself (not an entry) refused to walk it
    for n, node in enumerate(
        (
            NonTensorStack("a", "b"),
            NonTensorStack.from_list([["a", "b"], ["c"]]),
            NonTensorData("v", batch_size=[2]),
        )
    ):
        before = node.tolist()
        assert node.memmap_(tmp_path / str(n)) is node and node.is_locked
        assert node.tolist() == before
        assert (
            TensorDict.load_memmap(tmp_path / str(n)).tolist()
            == before[0 if n == 2 else slice(None)]
        )
    with pytest.raises(LockedError, match="td.set_"):  # its folder cannot follow
        node.update_(NonTensorData("w"))


def test_a_saved_value_node_is_written_through_its_collection(tmp_path: Path) -> None:
    td = TensorDict({"val": NonTensorData("a"), "x": torch.zeros(2)}, [])
    td.memmap_(tmp_path)
    with pytest.raises(LockedError, match=r"update_\(\) writes into it"):
        td.get("val").update_(NonTensorData("b"))
    assert TensorDict.load_memmap(tmp_path)["val"] == "a" == td["val"]
    td.set_("val", "b")
    assert TensorDict.load_memmap(tmp_path)["val"] == "b" == td["val"]


@pytest.mark.parametrize("how", ["memmap", "memmap_", "memmap_like", "save"])
def test_saving_into_a_file_is_a_not_a_directory_error(tmp_path: Path, how: str) -> None:
    """A prefix that is a file: the peer raises NotADirectoryError (an OSError), and so
    does tclass, before writing anything; the file is left as it was."""
    target = tmp_path / "f"
    target.write_text("x")
    td = TensorDict({"a": torch.arange(3.0)}, [3])
    with pytest.raises(NotADirectoryError, match="it is a file, not a folder"):
        getattr(td, how)(target)
    assert target.read_text() == "x" and sorted(os.listdir(tmp_path)) == ["f"]
