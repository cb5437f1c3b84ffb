"""``to(device, non_blocking=True)``, ``to(device=...)`` and ``to(None)`` of a
``PersistentTensorDict`` ask for a device alone: the same file, read onto that device
(``to(None)`` the collection itself), as the peer; tclass read every dataset into a
``TensorDict`` for them."""

from __future__ import annotations

from pathlib import Path

import torch

from tclass import PersistentTensorDict, TensorDict


def _file(tmp_path: Path) -> PersistentTensorDict:
    td = TensorDict({"x": torch.arange(3.0), "n": {"y": torch.arange(3)}}, [3])
    return td.to_h5(tmp_path / "f.h5")


def test_non_blocking_move_stays_over_the_file(tmp_path: Path) -> None:
    h = _file(tmp_path)
    for moved in (h.to("meta", non_blocking=True), h.to(device="meta", non_blocking=True)):
        assert isinstance(moved, PersistentTensorDict)
        assert moved.device == torch.device("meta")
        assert moved["n", "y"].is_meta
    on_cpu = h.to(device="cpu", non_blocking=True)
    assert isinstance(on_cpu, PersistentTensorDict)
    assert on_cpu["x"].tolist() == [0.0, 1.0, 2.0]


def test_no_device_asked_for_is_the_file_itself(tmp_path: Path) -> None:
    h = _file(tmp_path)
    assert h.to(None) is h
    assert h.to(device=None) is h
    assert h.to(None, non_blocking=True) is h


def test_a_dtype_still_reads_into_a_tensordict(tmp_path: Path) -> None:
    cast = _file(tmp_path).to("cpu", torch.float64, non_blocking=True)
    assert type(cast) is TensorDict
    assert cast["n", "y"].dtype == torch.float64
