"""A new collection written into a collection saved in a folder (``create_nested``,
``td["k"] = {}``) keeps no device where it had none, as an entry set into a collection
that is not saved: the folder's copy is on the CPU (fz29b: program 15,911,242 of
methods,features,entries,records, ``create_nested`` after ``load`` and
``clear_device_()``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tclass import TensorDict, load


def _saved(tmp_path: Path) -> TensorDict:
    td = TensorDict({"d": torch.zeros(2), "m": {"c": torch.zeros(2)}}, [2])
    return load((td.save(tmp_path / "s"), tmp_path / "s")[1])  # type: ignore[no-any-return]


def test_create_nested_after_clear_device(tmp_path: Path) -> None:
    loaded = _saved(tmp_path)
    assert loaded.device == torch.device("cpu")
    loaded.clear_device_().create_nested(("q", "r"))
    assert loaded.get("q").device is None and loaded.get(("q", "r")).device is None
    loaded.set("p", TensorDict({"n": {}}, [2]))
    assert loaded.get("p").device is None and loaded.get(("p", "n")).device is None
    assert load(tmp_path / "s").get(("q", "r")).batch_size == torch.Size([2])  # in the folder


def test_a_device_given_is_kept(tmp_path: Path) -> None:
    loaded = _saved(tmp_path)
    loaded.create_nested("q")
    assert loaded.get("q").device == torch.device("cpu")


def test_as_the_peer(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    td = peer.TensorDict({"d": torch.zeros(2)}, [2])
    theirs = peer.load((td.save(tmp_path / "p"), tmp_path / "p")[1])
    theirs.clear_device_().create_nested(("q", "r"))
    assert theirs.get("q").device is None and theirs.get(("q", "r")).device is None
