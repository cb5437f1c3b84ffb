"""``set_`` of a nested key under a node missing from a lazy stack of HDF5 files: the
files add no node in ``set_``, so it is their ``KeyNotFoundError`` (a ``KeyError``),
locked or not, as the peer's; a lazy stack of TensorDicts adds it, or refuses it when
locked (a ``LockedError``, the peer's ``RuntimeError``). A value that does not fit the
batch size is that error first, files or not, as the peer checks it first."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass import errors

pytest.importorskip("h5py")


def _stack(lib: ModuleType, folder: Path, files: bool) -> Any:
    folder.mkdir(exist_ok=True)

    def member(i: int) -> Any:
        td = lib.TensorDict({"a": torch.zeros(3, 2)}, batch_size=[3, 2])
        if files:
            return lib.PersistentTensorDict.from_dict(td, str(folder / f"w{i}.h5"))
        return td

    return lib.lazy_stack([member(0), member(1)], 2)


@pytest.mark.parametrize("locked", [False, True])
def test_files_raise_their_key_error(tmp_path: Path, locked: bool) -> None:
    stack = _stack(tclass, tmp_path / "tclass", files=True)
    if locked:
        stack.lock_()
    with pytest.raises(errors.KeyNotFoundError) as raised:
        stack.set_(("n", "zz"), torch.zeros(3, 2, 2, 1))
    assert isinstance(raised.value, KeyError) and "'n'" in str(raised.value)
    assert ("n", "zz") not in stack.keys(True)
    peer = pytest.importorskip("tensordict")
    theirs = _stack(peer, tmp_path / "peer", files=True)
    if locked:
        theirs.lock_()
    with pytest.raises(KeyError):
        theirs.set_(("n", "zz"), torch.zeros(3, 2, 2, 1))


def test_tensordicts_refuse_it_locked(tmp_path: Path) -> None:
    stack = _stack(tclass, tmp_path, files=False).lock_()
    with pytest.raises(errors.LockedError):
        stack.set_(("n", "zz"), torch.zeros(3, 2, 2, 1))
    stack.unlock_()
    stack.set_(("n", "zz"), torch.zeros(3, 2, 2, 1))
    assert stack["n", "zz"].shape == (3, 2, 2, 1)


@pytest.mark.parametrize("locked", [False, True])
def test_a_value_off_the_batch_is_that_error_first(tmp_path: Path, locked: bool) -> None:
    """The value's batch size is checked before the missing node, as the peer orders
    them (program 11,041,227 of combine,entries --length 6: was the files' KeyError)."""
    stack = _stack(tclass, tmp_path / "tclass", files=True)
    if locked:
        stack.lock_()
    with pytest.raises(errors.BatchMismatchError, match=r"\('n', 'zz'\)") as raised:
        stack.set_(("n", "zz"), torch.zeros(3))
    assert isinstance(raised.value, RuntimeError)
    assert ("n", "zz") not in stack.keys(True)
    peer = pytest.importorskip("tensordict")
    theirs = _stack(peer, tmp_path / "peer", files=True)
    if locked:
        theirs.lock_()
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        theirs.set_(("n", "zz"), torch.zeros(3))
