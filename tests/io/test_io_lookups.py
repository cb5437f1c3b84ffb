"""The file-system lookups a load and a save make, beyond the files they read or write.

* Loading a nested tree opens each sub-folder straight away: no ``stat`` of its name
  first (two per sub-folder before); the legacy raw folder name (a key the peer's old
  writers did not encode) and a path-like key in a crafted meta.json are only looked at
  when the encoded name is missing, with the same outcomes as before.
* Saving over a saved folder lists it once (``os.walk``'s first step), not twice, and
  still refuses a folder holding anything but a saved tree.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
import tclass._io.memmap._folder as folder_io
from tclass.errors import FileConflictError, MissingFileError, UnsafePathError


def _nested() -> tclass.TensorDict:
    return tclass.TensorDict(
        {"a": torch.arange(3.0), "b": {"c": torch.ones(3), "d": {"e": torch.zeros(3, 2)}}}, [3]
    )


def _count_exists(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    looked: list[str] = []
    exists = folder_io.DirFolder.exists

    def counted(self: folder_io.DirFolder, name: str) -> bool:
        looked.append(name)
        return exists(self, name)

    monkeypatch.setattr(folder_io.DirFolder, "exists", counted)
    return looked


def test_nested_load_looks_up_no_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _nested().memmap(tmp_path / "td")
    looked = _count_exists(monkeypatch)
    loaded = tclass.TensorDict.load_memmap(tmp_path / "td")
    assert looked == []
    assert torch.equal(loaded["b", "d", "e"], torch.zeros(3, 2))
    assert torch.equal(loaded["b", "c"], torch.ones(3))


def test_legacy_raw_folder_name_still_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tclass.TensorDict({"a b": {"c": torch.arange(3.0)}}, [3]).memmap(tmp_path / "td")
    os.rename(tmp_path / "td" / "a%20b", tmp_path / "td" / "a b")  # as old writers named it
    looked = _count_exists(monkeypatch)
    loaded = tclass.TensorDict.load_memmap(tmp_path / "td")
    assert torch.equal(loaded["a b", "c"], torch.arange(3.0))
    assert looked == ["a b"]  # looked for only once the encoded name was missing


def test_missing_sub_folder_is_named(tmp_path: Path) -> None:
    _nested().memmap(tmp_path / "td")
    os.rename(tmp_path / "td" / "b", tmp_path / "td" / "gone")
    with pytest.raises(MissingFileError, match=r"td/b' is missing \(the entry 'b'\)"):
        tclass.TensorDict.load_memmap(tmp_path / "td")


def test_path_like_key_of_a_missing_folder_is_unsafe(tmp_path: Path) -> None:
    _nested().memmap(tmp_path / "td")
    meta_path = tmp_path / "td" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["../b"] = meta.pop("b")  # a crafted meta.json: a key that reads as a path
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(UnsafePathError, match=r"the key '\.\./b' is a path"):
        tclass.TensorDict.load_memmap(tmp_path / "td")


def test_saving_over_a_folder_lists_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "td"
    _nested().memmap(target)
    listed: list[str] = []
    scandir, listdir = os.scandir, os.listdir

    def counted_scandir(path: Any) -> Any:  # os.walk's listing (rmtree's: by descriptor)
        listed.append(path if isinstance(path, int) else os.fspath(path))
        return scandir(path)

    def counted_listdir(path: Any) -> list[Any]:
        listed.append(path if isinstance(path, int) else os.fspath(path))
        return listdir(path)

    monkeypatch.setattr(os, "scandir", counted_scandir)
    monkeypatch.setattr(os, "listdir", counted_listdir)
    _nested().memmap(target, existsok=True)
    assert listed.count(str(target)) == 1
    monkeypatch.undo()
    assert torch.equal(tclass.TensorDict.load_memmap(target)["b", "c"], torch.ones(3))


def test_saving_over_user_files_is_still_refused(tmp_path: Path) -> None:
    target = tmp_path / "notes"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(FileConflictError, match="not empty and holds no saved tree"):
        _nested().memmap(target, existsok=True)
    _nested().memmap(tmp_path / "td")
    (tmp_path / "td" / "b" / "stray.txt").write_text("mine")
    with pytest.raises(FileConflictError, match="stray.txt' is not part of a saved tree"):
        _nested().memmap(tmp_path / "td", existsok=True)
    assert (tmp_path / "td" / "b" / "stray.txt").read_text() == "mine"


def test_saving_over_an_unreadable_folder_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "td"
    _nested().memmap(target)
    scandir = os.scandir

    def refused(path: Any) -> Any:
        if not isinstance(path, int) and os.fspath(path) == str(target):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refused)
    with pytest.raises(PermissionError):
        _nested().memmap(target, existsok=True)
    monkeypatch.undo()
    assert torch.equal(tclass.TensorDict.load_memmap(target)["a"], torch.arange(3.0))
