"""``apply_`` of a TensorDict is all or nothing also where it holds nodes with their own
in-place rules: an HDF5 file or zarr store (or a view of its rows), a record over one,
a ``TensorDictParams``, a record whose fields bound their values. Each stages its
results by its rules and they are written with the other entries' once every result is
computed: a later sibling whose function raises leaves all of them as they were (the
peer keeps the nodes walked before it written)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
import torch
from torch import nn

import tclass
from tclass import Spec, TensorDict, TensorDictParams, errors, tensorclass
from tclass._io.store import _staged

pytest.importorskip("h5py")


@tensorclass
class _Bounded:
    p: Annotated[torch.Tensor, Spec("", torch.float32, ge=0)]
    q: torch.Tensor


@tensorclass
class _BoundedWithCount:
    p: Annotated[torch.Tensor, Spec("", torch.float32, ge=0)]
    count: torch.Tensor


def _file(path: Path, backend: str = "h5") -> tclass.PersistentTensorDict:
    source = TensorDict(a=torch.zeros(3), n={"b": torch.zeros(3, 2)}, batch_size=[3])
    if backend == "zarr":
        pytest.importorskip("zarr")
        return tclass.PersistentTensorDict.from_dict(source, filename=path, backend="zarr")
    return tclass.PersistentTensorDict.from_dict(source, filename=path)


def _node(kind: str, tmp_path: Path) -> Any:
    if kind == "h5":
        return _file(tmp_path / "f.h5")
    if kind == "zarr":
        return _file(tmp_path / "f.zarr", "zarr")
    if kind == "h5-view":
        return _file(tmp_path / "f.h5")[0:3]
    if kind == "h5-record":
        _Bounded(p=torch.zeros(3), q=torch.zeros(3), batch_size=[3]).to_h5(tmp_path / "r.h5")
        return _Bounded.from_h5(tmp_path / "r.h5", mode="r+")
    if kind == "params":
        return TensorDictParams(TensorDict(w=nn.Parameter(torch.zeros(3)), batch_size=[3]))
    assert kind == "bounded"
    return _Bounded(p=torch.zeros(3), q=torch.zeros(3), batch_size=[3])


KINDS = ["h5", "zarr", "h5-view", "h5-record", "params", "bounded"]


def _floats(node: Any) -> list[Any]:
    return [
        node.get(key).tolist()
        for key in node.keys(True, True)
        if node.get(key).dtype == torch.float32
    ]


def _seven_but_longs_raise(x: torch.Tensor) -> torch.Tensor:
    if x.dtype == torch.long:
        raise ZeroDivisionError("boom")
    return torch.full_like(x, 7.0)


@pytest.mark.parametrize("kind", KINDS)
def test_a_later_sibling_that_raises_leaves_the_node_as_it_was(kind: str, tmp_path: Path) -> None:
    node = _node(kind, tmp_path)
    td = TensorDict(node=node, z=torch.zeros(3, dtype=torch.long), batch_size=[3])
    before = _floats(node)
    with pytest.raises(ZeroDivisionError):
        td.apply_(_seven_but_longs_raise)
    assert _floats(node) == before
    td.apply_(lambda x: x + 2)  # and a function that runs writes everything
    assert all(value == 2.0 for values in _floats(node) for value in torch.tensor(values).flatten())
    assert td["z"].tolist() == [2, 2, 2]


def test_a_refused_bound_leaves_the_earlier_file_as_it_was(tmp_path: Path) -> None:
    ptd = _file(tmp_path / "f.h5")
    bounded = _Bounded(p=torch.zeros(3), q=torch.zeros(3), batch_size=[3])
    td = TensorDict(f=ptd, rec=bounded, batch_size=[3])
    with pytest.raises(errors.FieldSpecError, match="Nothing was written"):
        td.apply_(lambda x: x - 1)  # p: -1 breaks ge=0
    assert ptd["a"].tolist() == [0.0] * 3 and bounded.q.tolist() == [0.0] * 3


def test_a_bounded_record_writes_nothing_when_another_field_raises() -> None:
    record = _BoundedWithCount(
        p=torch.zeros(3), count=torch.zeros(3, dtype=torch.long), batch_size=[3]
    )
    with pytest.raises(ZeroDivisionError):
        record.apply_(_seven_but_longs_raise)  # p, checked first, is not written before
    assert record.p.tolist() == [0.0] * 3
    record.apply_(lambda x: x + 1)
    assert record.p.tolist() == [1.0] * 3 and record.count.tolist() == [1, 1, 1]


@pytest.mark.parametrize("raises", [True, False])
def test_a_spilled_files_scratch_folder_is_removed_after_the_outer_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raises: bool
) -> None:
    monkeypatch.setattr(_staged, "_BUDGET", 0)  # every result staged in a scratch file
    ptd = _file(tmp_path / "f.h5")
    td = TensorDict(f=ptd, z=torch.zeros(3, dtype=torch.long), batch_size=[3])
    if raises:
        with pytest.raises(ZeroDivisionError):
            td.apply_(_seven_but_longs_raise)
        assert ptd["a"].tolist() == [0.0] * 3
    else:
        td.apply_(lambda x: x + 3)
        assert ptd["n", "b"].tolist() == [[3.0, 3.0]] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.h5"]


def test_the_params_are_written_outside_autograd_and_stay_parameters() -> None:
    params = _node("params", Path())
    td = TensorDict(p=params, batch_size=[3])
    td.apply_(lambda x: x + 1)
    assert isinstance(params["w"], nn.Parameter) and params["w"].tolist() == [1.0] * 3
    assert params["w"].grad_fn is None
