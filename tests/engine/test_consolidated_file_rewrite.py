"""``consolidate(filename=...)`` over an existing file (tclass/_engine/_consolidate.py,
``rewrite_file`` in tclass/_core/_memmap.py): rewritten in place, or, where a leaf maps a
file, written beside it and moved over it, so that leaves read from that very file are
not overwritten before they are copied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from tclass import TensorDict
from tclass.errors import FileConflictError, NotAFileError, TclassError


def _collection() -> TensorDict:
    return TensorDict(
        {"a": torch.arange(6.0).reshape(3, 2), "b": {"c": torch.ones(3, dtype=torch.int16)}},
        batch_size=[3],
    )


def _same(left: TensorDict, right: TensorDict) -> bool:
    return bool((left == right).all()) and left.keys(True) == right.keys(True)


def test_a_collection_read_from_the_file_is_consolidated_into_it(tmp_path: Path) -> None:
    # The leaves of from_consolidated map the file: rewriting it in place (or truncating
    # it, as before) zeroed them before they were copied
    path = str(tmp_path / "c.bin")
    _collection().consolidate(filename=path)
    loaded = TensorDict.from_consolidated(path)
    again = loaded.consolidate(filename=path)
    assert _same(again, _collection()) and _same(loaded, _collection())
    assert _same(TensorDict.from_consolidated(path), _collection())
    assert sorted(os.listdir(tmp_path)) == ["c.bin"]  # no staging file left


def test_a_selection_of_the_files_leaves_moves_them_within_it(tmp_path: Path) -> None:
    # Another layout over the same file: a leaf read from the file lands on another's bytes
    path = str(tmp_path / "c.bin")
    _collection().consolidate(filename=path)
    loaded = TensorDict.from_consolidated(path)
    only = loaded.select(("b", "c")).consolidate(filename=path)
    assert torch.equal(only["b", "c"], torch.ones(3, dtype=torch.int16))
    assert torch.equal(TensorDict.from_consolidated(path)["b", "c"], only["b", "c"])


def test_a_memory_mapped_collection_is_consolidated_over_one_of_its_files(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "saved"
    _collection().memmap(folder)
    loaded = TensorDict.load_memmap(folder)
    target = str(folder / "a.memmap")
    assert os.path.exists(target)
    result = loaded.consolidate(filename=target)
    assert _same(result, _collection()) and _same(loaded, _collection())
    assert _same(TensorDict.from_consolidated(target), _collection())


def test_a_longer_file_is_rewritten_to_the_exact_bytes_of_a_new_one(tmp_path: Path) -> None:
    # In place, the old bytes stay where nothing is written: the padding between leaves
    # is zeroed, so the file is the one a fresh write makes
    data = TensorDict({"a": torch.arange(3, dtype=torch.uint8), "b": torch.ones(5)}, [])
    fresh, reused = tmp_path / "fresh.bin", tmp_path / "reused.bin"
    reused.write_bytes(b"\xff" * 100_000)
    data.consolidate(filename=str(fresh))
    data.consolidate(filename=str(reused))
    assert reused.read_bytes() == fresh.read_bytes()
    assert _same(TensorDict.from_consolidated(str(reused)), data)


def test_rewriting_in_place_keeps_no_stale_bytes_of_a_different_collection(
    tmp_path: Path,
) -> None:
    path, fresh = tmp_path / "c.bin", tmp_path / "fresh.bin"
    TensorDict({"x": torch.full((64,), 7.0)}, []).consolidate(filename=str(path))
    small = TensorDict({"y": torch.arange(3, dtype=torch.int8)}, [])
    small.consolidate(filename=str(path))
    small.consolidate(filename=str(fresh))
    assert _same(TensorDict.from_consolidated(str(path)), small)
    assert path.read_bytes() == fresh.read_bytes()


@pytest.mark.parametrize("mapped", [False, True], ids=["in-place", "staged"])
def test_a_symlink_or_a_folder_is_refused(tmp_path: Path, mapped: bool) -> None:
    source = _collection()
    if mapped:  # leaves that map a file take the staged path
        source.memmap(tmp_path / "src")
        source = TensorDict.load_memmap(tmp_path / "src")
    real = tmp_path / "real.bin"
    real.write_bytes(b"x")
    link = tmp_path / "link.bin"
    link.symlink_to(real)
    with pytest.raises(FileConflictError, match="symlink") as caught:
        source.consolidate(filename=str(link))
    assert isinstance(caught.value, TclassError) and real.read_bytes() == b"x"
    (tmp_path / "dir").mkdir()
    with pytest.raises(NotAFileError, match="directory"):
        source.consolidate(filename=str(tmp_path / "dir"))
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["real.bin", "link.bin", "dir"] + ["src"] * mapped
    )
