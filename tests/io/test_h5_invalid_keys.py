"""A ``PersistentTensorDict`` given something that is no key: ``select`` / ``exclude``
raise the ``UnravelKeyError`` (a ``RuntimeError``, as the peer's TensorDict, for a list
of keys too), and ``rename_key_`` an ``InvalidKeyError`` (a ``KeyError``, as the
peer's file raises, and a ``TypeError``) before the file is touched. Before: a plain
``TypeError: 'int' object is not iterable`` from ``rename_key_(1, "b")`` (nu26a)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tclass import PersistentTensorDict, TensorDict, errors


def _file(tmp_path: Path) -> PersistentTensorDict:
    td = TensorDict(a=torch.zeros(2), n=TensorDict(c=torch.ones(2), batch_size=[2]), batch_size=[2])
    return PersistentTensorDict.from_dict(td, filename=tmp_path / "f.h5")


@pytest.mark.parametrize("method", ["select", "exclude"])
def test_select_exclude_of_no_key(tmp_path: Path, method: str) -> None:
    h = _file(tmp_path)
    with pytest.raises(errors.UnravelKeyError) as info:
        getattr(h, method)("a", 1)
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(RuntimeError):
        h.exclude(None, inplace=True)
    assert sorted(map(str, h.keys(True))) == ["('n', 'c')", "a", "n"]
    with pytest.raises(RuntimeError):
        h.select(["a"])
    assert list(h.select("a").keys()) == ["a"]


@pytest.mark.parametrize(("old", "new"), [(1, "b"), ("a", 1), (None, "b"), ("a", ["n", "x"])])
def test_rename_key_of_no_key(tmp_path: Path, old: object, new: object) -> None:
    h = _file(tmp_path)
    with pytest.raises(errors.InvalidKeyError) as info:
        h.rename_key_(old, new)
    assert isinstance(info.value, KeyError)
    assert isinstance(info.value, TypeError)
    assert sorted(map(str, h.keys(True))) == ["('n', 'c')", "a", "n"]
