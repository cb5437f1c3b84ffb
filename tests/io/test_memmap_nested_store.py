"""``memmap`` of a collection holding a ``PersistentTensorDict`` (nu25c's programs): the
file's entries are saved as a TensorDict, as the peer saves them (it was refused: "not a
collection tclass writes"); ``memmap_`` in place refuses it, as the peer, before any
file is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import PersistentTensorDict, TensorDict, tensorclass
from tclass.errors import UnsupportedError

pytest.importorskip("h5py")
peer = pytest.importorskip("tensordict")


def _holding_file(lib: Any, folder: Path) -> Any:
    folder.mkdir(exist_ok=True)
    inner = lib.TensorDict(c=torch.arange(6.0).reshape(2, 3), batch_size=[2])
    ptd = lib.PersistentTensorDict.from_dict(inner, filename=folder / "f.h5")
    return lib.TensorDict(x=ptd, y=torch.zeros(2), batch_size=[2])


def test_memmap_of_a_tensordict_holding_a_file(tmp_path: Path) -> None:
    saved = _holding_file(tclass, tmp_path).memmap(tmp_path / "m")
    expected = _holding_file(peer, tmp_path / "p")
    theirs = expected.memmap(tmp_path / "pm")
    assert saved.is_memmap() and type(saved["x"]) is TensorDict
    assert torch.equal(saved["x", "c"], theirs["x", "c"])
    loaded = tclass.load_memmap(tmp_path / "m")
    assert type(loaded["x"]) is TensorDict
    assert torch.equal(loaded["x", "c"], torch.arange(6.0).reshape(2, 3))
    like = _holding_file(tclass, tmp_path / "q").memmap_like(tmp_path / "l")
    assert torch.equal(like["x", "c"], torch.zeros(2, 3))


def test_memmap_of_a_record_holding_a_file(tmp_path: Path) -> None:
    @tensorclass
    class Rec:
        a: torch.Tensor
        n: tclass.TensorDictBase

    inner = TensorDict(c=torch.arange(8.0).reshape(2, 4), batch_size=[2])
    ptd = PersistentTensorDict.from_dict(inner, filename=tmp_path / "n.h5")
    rec = Rec(a=torch.ones(2, 3), n=ptd, batch_size=[2])
    rec.memmap(tmp_path / "r")
    loaded = Rec.load_memmap(tmp_path / "r")
    assert torch.equal(loaded.n["c"], torch.arange(8.0).reshape(2, 4))
    assert torch.equal(loaded.a, torch.ones(2, 3))


def test_memmap_in_place_refuses_a_held_file_before_writing(tmp_path: Path) -> None:
    td = _holding_file(tclass, tmp_path)
    with pytest.raises(UnsupportedError, match=r"at key 'x': a PersistentTensorDict"):
        td.memmap_(tmp_path / "ip")
    assert not (tmp_path / "ip").exists()  # nothing written
    assert type(td["x"]) is PersistentTensorDict and not td.is_memmap()
    with pytest.raises(RuntimeError):  # the peer refuses it too
        _holding_file(peer, tmp_path / "p").memmap_(tmp_path / "pip")


def test_memmap_in_place_of_a_lazy_stack_of_file_rows_refuses_before_writing(
    tmp_path: Path,
) -> None:
    td = _holding_file(tclass, tmp_path)
    stack = tclass.lazy_stack([td["x"][0], td["x"][1]])
    with pytest.raises(UnsupportedError, match=r"at key / member index 0: a Persistent"):
        stack.memmap_(tmp_path / "ip")
    assert not (tmp_path / "ip").exists()
    saved = stack.memmap(tmp_path / "m")  # a copy is saved, as a lazy stack of TensorDicts
    assert saved.is_memmap() and torch.equal(saved["c"], torch.arange(6.0).reshape(2, 3))


def test_memmap_in_place_over_a_file_is_a_runtime_error_as_the_peer(tmp_path: Path) -> None:
    # nu25c: the peer raises RuntimeError for the file itself and for a tree holding it;
    # UnsupportedError is a NotImplementedError, which is a RuntimeError (both caught)
    held = _holding_file(tclass, tmp_path)
    for node in (held, held["x"]):
        with pytest.raises(RuntimeError, match="Cannot build a memmap TensorDict in-place"):
            node.memmap_(tmp_path / "ip")
        assert not (tmp_path / "ip").exists()
    theirs = _holding_file(peer, tmp_path / "p")
    for node in (theirs, theirs["x"]):
        with pytest.raises(RuntimeError, match="Cannot build a memmap TensorDict in-place"):
            node.memmap_(tmp_path / "pip")
