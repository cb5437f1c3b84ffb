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


@tclass.tensorclass
class _Rows:
    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor | None = None


_JOINS = ("cat_tensors", "stack_tensors")


def _over_rows(kind: str, file: Any) -> Any:
    """A view of rows 1: of ``file`` as ``kind``: itself, a record over it, a record's rows
    of a record over the file, a lazy stack of it."""
    if kind == "record over a view":
        return _Rows.from_tensordict(file[1:])
    if kind == "rows of a record over the file":
        return _Rows.from_tensordict(file)[1:]
    if kind == "lazy stack of views":
        return tclass.lazy_stack([file[1:], file[:1]], 0)
    return file[1:]


@pytest.mark.parametrize("op", _JOINS)
@pytest.mark.parametrize(
    "kind", ["view", "record over a view", "rows of a record over the file", "lazy stack of views"]
)
def test_joining_entries_over_a_view_is_refused_before_anything_is_written(
    tmp_path: Path, kind: str, op: str
) -> None:
    source = TensorDict(a=torch.arange(6.0).reshape(2, 3), b=-torch.ones(2, 3), batch_size=[2])
    file = PersistentTensorDict.from_dict(source, filename=tmp_path / "f.h5")
    rows = _over_rows(kind, file)
    with pytest.raises(UnsupportedError, match=f"Cannot call {op} on a PersistentTensorDictView"):
        getattr(rows, op)("a", "b", out_key="c", dim=-1)
    assert set(file.keys()) == {"a", "b"}  # no entry "c" written into the file (it was)
    assert file["a"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    kept = getattr(rows, op)("a", "b", out_key="c", dim=-1, keep_entries=True)
    assert set(file.keys()) == {"a", "b", "c"} and set(kept.keys()) >= {"a", "b", "c"}


def test_a_missing_key_of_a_view_s_cat_tensors_is_a_key_error_first(tmp_path: Path) -> None:
    source = TensorDict(a=torch.arange(6.0).reshape(2, 3), batch_size=[2])
    file = PersistentTensorDict.from_dict(source, filename=tmp_path / "f.h5")
    with pytest.raises(KeyError, match="zz"):  # as the peer's (it was UnsupportedError)
        file[1:].cat_tensors("a", "zz", out_key="c")
    assert set(file.keys()) == {"a"}


def test_the_peers_cat_tensors_of_a_view_loses_the_other_rows(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    source = peer.TensorDict(a=torch.arange(6.0).reshape(2, 3), b=-torch.ones(2, 3), batch_size=[2])
    file = peer.PersistentTensorDict.from_dict(source, filename=tmp_path / "f.h5")
    file[1:].cat_tensors("a", "b", out_key="c", dim=-1)
    assert set(file.keys()) == {"c"}  # "a" and "b" deleted, every row of them
    assert file["c"][0].tolist() == [0.0] * 6  # row 0 never held them
