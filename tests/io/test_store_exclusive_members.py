"""A lazy stack whose members hold different entries (a key in some members only, a
record's optional field set in one member) is refused before an HDF5 file or zarr store
is made: a group holds the entries common to every member, so the others were left out
silently (the peer's store drops them too: ``from_h5(...)[1].y`` read ``None``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from tclass import PersistentTensorDict, TensorDict, errors, lazy_stack, tensorclass

pytest.importorskip("h5py")


@tensorclass
class Inner:
    z: torch.Tensor


@tensorclass
class Step:
    x: torch.Tensor
    inner: Inner | None = None
    extra: torch.Tensor | None = None


def _path(tmp_path: Path, backend: str, name: str) -> str:
    if backend == "zarr":
        pytest.importorskip("zarr")
    return str(tmp_path / f"{name}.{backend}")


def _write(value: object, backend: str, path: str) -> object:
    return value.to_zarr(path) if backend == "zarr" else value.to_h5(path)  # type: ignore[attr-defined]


@pytest.mark.parametrize("backend", ["h5", "zarr"])
def test_members_with_other_keys_are_refused_before_the_file(tmp_path: Path, backend: str) -> None:
    a = TensorDict(x=torch.zeros(2), n={"p": torch.zeros(2)}, batch_size=[2])
    b = TensorDict(x=torch.ones(2), y=torch.ones(2), n={"p": torch.ones(2)}, batch_size=[2])
    path = _path(tmp_path, backend, "s")
    with pytest.raises(errors.HeterogeneousEntryError, match=r"member 1: \['y'\]") as raised:
        _write(lazy_stack([a, b]), backend, path)
    assert isinstance(raised.value, RuntimeError) and not os.path.exists(path)
    b2 = TensorDict(x=torch.ones(2), n={"p": torch.ones(2), "q": torch.ones(2)}, batch_size=[2])
    with pytest.raises(errors.HeterogeneousEntryError, match=r"member 1: \['n\.q'\]"):
        _write(lazy_stack([a, b2]), backend, _path(tmp_path, backend, "n"))
    ptd = PersistentTensorDict.from_dict(
        TensorDict({}, [2, 2]), _path(tmp_path, backend, "o"), backend=backend
    )
    with pytest.raises(errors.HeterogeneousEntryError, match="'k'"):
        ptd.set("k", lazy_stack([a, b]))
    assert "k" not in ptd.keys()


@pytest.mark.parametrize("backend", ["h5", "zarr"])
def test_records_with_an_optional_field_set_in_one_member(tmp_path: Path, backend: str) -> None:
    empty = Step(x=torch.zeros(2), batch_size=[2])
    full = Step(
        x=torch.ones(2),
        inner=Inner(z=torch.ones(2), batch_size=[2]),
        extra=torch.ones(2),
        batch_size=[2],
    )
    with pytest.raises(errors.HeterogeneousEntryError, match=r"\['extra', 'inner'\]"):
        _write(lazy_stack([empty, full]), backend, _path(tmp_path, backend, "r"))
    same = lazy_stack([full, full.clone()])  # members that agree are written as before
    _write(same, backend, _path(tmp_path, backend, "ok"))
    load = Step.from_zarr if backend == "zarr" else Step.from_h5
    back = load(_path(tmp_path, backend, "ok"))
    assert back[1].inner.z.tolist() == [1.0, 1.0] and back[1].extra.tolist() == [1.0, 1.0]
