"""``entry_class`` of a key an HDF5 file lacks: the file's ``KeyNotFoundError`` (a
``KeyError``, as the peer's, which asks the file), for the file, a group of it and a view
of its rows; a TensorDict and a lazy stack of files answer ``type(None)``, as the peer's."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import tclass
from tclass import errors

pytest.importorskip("h5py")


def _file(folder: Path) -> tclass.PersistentTensorDict:
    td = tclass.TensorDict(
        {"a": torch.zeros(3, 2), "n": tclass.TensorDict(b=torch.zeros(3), batch_size=[3])},
        batch_size=[3],
    )
    return td.to_h5(str(folder / "w.h5"))


@pytest.mark.parametrize("key", ["zz", ("n", "zz"), ("zz", "a"), ("a", "zz")])
def test_missing_key_raises(tmp_path: Path, key: object) -> None:
    ptd = _file(tmp_path)
    for node in (ptd, ptd[1:]):
        with pytest.raises(errors.KeyNotFoundError) as raised:
            node.entry_class(key)
        assert isinstance(raised.value, KeyError)
        assert repr(key) in str(raised.value)


def test_present_keys_and_other_collections(tmp_path: Path) -> None:
    ptd = _file(tmp_path)
    assert ptd.entry_class(("n", "b")) is torch.Tensor
    assert ptd.entry_class("n") is tclass.PersistentTensorDict
    with pytest.raises(KeyError):
        ptd.get("n").entry_class("zz")
    # a lazy stack of files, and a TensorDict: no entry, type(None), as the peer's
    stack = tclass.lazy_stack([ptd, ptd])
    assert stack.entry_class("zz") is type(None)
    assert stack.entry_class(("n", "zz")) is type(None)
    assert ptd.to_tensordict().entry_class(("zz", "a")) is type(None)


def test_as_the_peer(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    td = tensordict.TensorDict({"a": torch.zeros(3)}, batch_size=[3])
    ptd = td.to_h5(str(tmp_path / "p.h5"))
    with pytest.raises(KeyError):
        ptd.entry_class(("zz", "a"))
    assert tensordict.lazy_stack([ptd, ptd]).entry_class("zz") is type(None)
