"""Two store round trips (fz29b): ``auto_device_`` of a file holding no tensor gives no
device, as a TensorDict without tensors (program 15,865,848 of
methods,index,shape,combine), and a lazy stack whose members differ in shape (a batch
size with ``-1``) is refused before a file or store is made, where the peer's writes a
batch size with ``-1`` that reads back as one no collection can have (program
15,830,852 of features,index,shape,combine)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from tclass import PersistentTensorDict, TensorDict, errors, lazy_stack

pytest.importorskip("h5py")


def _path(tmp_path: Path, backend: str, name: str) -> str:
    if backend == "zarr":
        pytest.importorskip("zarr")
        return str(tmp_path / f"{name}.zarr")
    return str(tmp_path / f"{name}.h5")


@pytest.mark.parametrize("backend", ["h5", "zarr"])
def test_auto_device_without_tensors_is_none(tmp_path: Path, backend: str) -> None:
    for n, entries in enumerate([{}, {"a": {"b": {}}}, {"s": "text", "n": {"t": "u"}}]):
        ptd = PersistentTensorDict.from_dict(
            TensorDict(entries, []), _path(tmp_path, backend, f"f{n}"), backend=backend
        )
        assert ptd.auto_device_().device is None
        if "a" in entries:
            assert ptd.get("a").device is None and ptd.get(("a", "b")).device is None
    given = PersistentTensorDict.from_dict(
        TensorDict({}, []), _path(tmp_path, backend, "g"), backend=backend, device="cpu"
    )
    assert given.device == torch.device("cpu") and given.auto_device_().device is None


@pytest.mark.parametrize("backend", ["h5", "zarr"])
def test_auto_device_with_a_nested_tensor_is_set_everywhere(tmp_path: Path, backend: str) -> None:
    td = TensorDict({"a": {"b": torch.zeros(2)}, "c": {"d": {}}}, [])
    ptd = PersistentTensorDict.from_dict(td, _path(tmp_path, backend, "f"), backend=backend)
    assert ptd.device is None
    ptd.auto_device_()
    cpu = torch.device("cpu")
    assert ptd.device == cpu and ptd.get("a").device == cpu and ptd.get(("c", "d")).device == cpu


def _ragged() -> object:
    stacked = torch.stack([TensorDict({}, [0, 4]) for _ in range(3)])
    return lazy_stack(list(stacked.chunk(2, 0)), 1)  # members [2, 0, 4] and [1, 0, 4]


@pytest.mark.parametrize("backend", ["h5", "zarr"])
def test_a_ragged_batch_size_is_refused_before_the_file(tmp_path: Path, backend: str) -> None:
    ragged = _ragged()
    assert list(ragged.batch_size) == [-1, 2, 0, 4]  # type: ignore[attr-defined]
    path = _path(tmp_path, backend, "r")
    write = ragged.to_zarr if backend == "zarr" else ragged.to_h5  # type: ignore[attr-defined]
    with pytest.raises(errors.HeterogeneousEntryError, match=r"\[-1, 2, 0, 4\]") as raised:
        write(path)
    assert isinstance(raised.value, RuntimeError)
    assert not os.path.exists(path)
    nested = TensorDict({"n": ragged}, [])
    with pytest.raises(errors.HeterogeneousEntryError, match="'n'"):
        PersistentTensorDict.from_dict(nested, _path(tmp_path, backend, "n"), backend=backend)
    ptd = PersistentTensorDict.from_dict(
        TensorDict({}, []), _path(tmp_path, backend, "o"), backend=backend
    )
    with pytest.raises(errors.HeterogeneousEntryError, match="'k'"):
        ptd.set("k", ragged)
    assert "k" not in ptd.keys()


def test_the_peer_writes_a_batch_size_it_cannot_hold(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    pytest.importorskip("zarr")
    stacked = torch.stack([peer.TensorDict({}, [0, 4]) for _ in range(3)])
    ragged = peer.lazy_stack(list(stacked.chunk(2, 0)), 1)
    ragged.to_zarr(str(tmp_path / "p.zarr"))
    back = peer.TensorDict.from_zarr(str(tmp_path / "p.zarr"))
    assert list(back.batch_size) == [-1, 2, 0, 4]
    empty = peer.PersistentTensorDict.from_dict(peer.TensorDict({}, []), str(tmp_path / "e.h5"))
    assert empty.auto_device_().device is None
