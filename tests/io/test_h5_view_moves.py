"""``separates`` of a view of a file's rows, alone or in a lazy stack: refused, with the
files and every member left as they were. The peer's deletes every row of the entries
from the files while its result holds only the view's rows (checked below), so the
other rows would be lost; tclass's message says to call it on the file or on
``to_tensordict()``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import PersistentTensorDict, TensorDict
from tclass.errors import UnsupportedError

h5py = pytest.importorskip("h5py")


def _files(lib: Any, tmp_path: Path) -> tuple[Any, Any]:
    source = lib.TensorDict(
        a=torch.arange(6).reshape(2, 3), b=torch.ones(2), n={"x": torch.arange(2)}, batch_size=[2]
    )
    return (
        lib.PersistentTensorDict.from_dict(source, filename=tmp_path / "a.h5"),
        lib.PersistentTensorDict.from_dict(source, filename=tmp_path / "b.h5"),
    )


def test_separates_of_a_lazy_stack_of_views_is_refused_and_changes_no_file(tmp_path: Path) -> None:
    fa, fb = _files(tclass, tmp_path)
    stack = tclass.lazy_stack([fa, fb], 1)[1:]
    with pytest.raises(UnsupportedError, match="every row of them") as info:
        stack.separates("a", ("n", "x"))
    assert "on to_tensordict()" in str(info.value) and "keep_entries" not in str(info.value)
    for file in (fa, fb):
        assert set(file.keys(True, True)) == {"a", "b", ("n", "x")}
        assert file["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    # what to call instead: a TensorDict read from the rows
    out = stack.to_tensordict().separates("a")
    assert out["a"].shape == (1, 2, 3)


def test_the_peers_separates_of_views_loses_the_other_rows(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    fa, fb = _files(peer, tmp_path)
    out = peer.lazy_stack([fa, fb], 1)[1:].separates("a")
    assert out["a"].shape == (1, 2, 3)  # row 1 of each file only ...
    assert "a" not in fa.keys() and "a" not in fb.keys()  # ... and row 0 is gone


def test_a_lazy_stack_of_a_tensordict_and_a_view_changes_no_member(tmp_path: Path) -> None:
    fa, _ = _files(tclass, tmp_path)
    td = TensorDict(a=torch.zeros(1, 3), b=torch.ones(1), batch_size=[1])
    stack = tclass.lazy_stack([td, fa[1:]], 0)
    with pytest.raises(UnsupportedError, match="every row of them"):
        stack.separates("a")
    with pytest.raises(UnsupportedError, match="in place on a view of rows"):
        stack.exclude("b", inplace=True)
    assert set(td.keys()) == {"a", "b"} and set(fa.keys()) == {"a", "b", "n"}


def test_separates_of_the_file_itself_moves_the_entries(tmp_path: Path) -> None:
    fa, _ = _files(tclass, tmp_path)
    out = fa.separates("a")
    assert out["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert "a" not in fa.keys()
    assert isinstance(fa, PersistentTensorDict)


def test_split_keys_in_place_of_a_view_is_refused_and_changes_no_file(tmp_path: Path) -> None:
    fa, _ = _files(tclass, tmp_path)
    with pytest.raises(UnsupportedError) as info:
        fa[:1].split_keys(["a", ("n", "x")], inplace=True)
    assert isinstance(info.value, NotImplementedError)
    assert set(fa.keys(True, True)) == {"a", "b", ("n", "x")}
    peer = pytest.importorskip("tensordict")
    (tmp_path / "peer").mkdir()
    pa, _ = _files(peer, tmp_path / "peer")
    with pytest.raises(KeyError):  # the peer's deletes them from the file, then looks again
        pa[:1].split_keys(["a", ("n", "x")], inplace=True)
    assert "a" not in pa.keys()  # lost
