"""A field annotated ``TensorDict`` keeps any collection as it is
(a lazy stack, a ``PersistentTensorDict``, ``TensorDictParams``, a record), as the peer's
does, and what it holds survives ``memmap`` / ``load_memmap`` and ``.tdz``. Checked
against the peer when installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import errors


@tclass.tensorclass
class Inner:
    y: torch.Tensor


def _holder(lib: Any) -> Any:
    @lib.tensorclass
    class Holder:
        x: torch.Tensor
        extra: lib.TensorDict

    return Holder


def _values(lib: Any, tmp_path: Path) -> dict[str, Any]:
    return {
        "lazy": lib.lazy_stack([lib.TensorDict({"k": torch.zeros(i + 1)}, []) for i in range(2)]),
        "h5": lib.TensorDict({"k": torch.zeros(2, 2)}, [2]).to_h5(tmp_path / f"{lib.__name__}.h5"),
        "params": lib.TensorDictParams(lib.TensorDict({"k": torch.zeros(2)}, [2])),
    }


KINDS = ["lazy", "h5", "params"]
TYPES = {
    "lazy": "LazyStackedTensorDict",
    "h5": "PersistentTensorDict",
    "params": "TensorDictParams",
}


@pytest.mark.parametrize("kind", KINDS)
def test_collection_kept_as_is(kind: str, tmp_path: Path) -> None:
    pytest.importorskip("h5py")
    value = _values(tclass, tmp_path)[kind]
    rec = _holder(tclass)(x=torch.ones(2), extra=value, batch_size=[2])
    assert rec.extra is value and type(rec.extra).__name__ == TYPES[kind]
    rec2 = _holder(tclass)(x=torch.ones(2), extra=None, batch_size=[2])
    rec2.extra = value  # assignment takes what construction takes
    assert rec2.extra is value


@pytest.mark.parametrize("kind", KINDS)
def test_matches_peer(kind: str, tmp_path: Path) -> None:
    pytest.importorskip("h5py")
    peer = pytest.importorskip("tensordict")
    value = _values(peer, tmp_path)[kind]
    rec = _holder(peer)(x=torch.ones(2), extra=value, batch_size=[2])
    assert type(rec.extra).__name__ == TYPES[kind]


@pytest.mark.parametrize("how", ["memmap", "tdz"])
def test_lazy_stack_field_round_trips(how: str, tmp_path: Path) -> None:
    holder = _holder(tclass)
    stack = tclass.lazy_stack(
        [tclass.TensorDict({"k": torch.arange(i + 1.0)}, []) for i in range(2)]
    )
    rec = holder(x=torch.ones(2), extra=stack, batch_size=[2])
    if how == "memmap":
        rec.memmap(tmp_path / "r")
        back = holder.load_memmap(tmp_path / "r")
    else:
        rec.save(tmp_path / "r.tdz")
        back = holder.load(tmp_path / "r.tdz")
    assert type(back.extra).__name__ == "LazyStackedTensorDict"
    assert [back.extra[i]["k"].tolist() for i in range(2)] == [[0.0], [0.0, 1.0]]


@pytest.mark.parametrize("how", ["memmap", "tdz"])
def test_record_kept_and_round_trips(how: str, tmp_path: Path) -> None:
    holder = _holder(tclass)
    rec = holder(x=torch.ones(2), extra=Inner(y=torch.arange(2.0), batch_size=[2]), batch_size=[2])
    assert type(rec.extra) is Inner and type(rec[0].extra) is Inner
    if how == "memmap":
        rec.memmap(tmp_path / "r")
        back = holder.load_memmap(tmp_path / "r")
    else:
        rec.save(tmp_path / "r.tdz")
        back = holder.load(tmp_path / "r.tdz")
    assert type(back.extra) is Inner and back.extra.y.tolist() == [0.0, 1.0]


def test_record_kept_in_peer() -> None:
    peer = pytest.importorskip("tensordict")

    @peer.tensorclass
    class PeerInner:
        y: torch.Tensor

    rec = _holder(peer)(
        x=torch.ones(2), extra=PeerInner(y=torch.zeros(2), batch_size=[2]), batch_size=[2]
    )
    assert type(rec.extra) is PeerInner


def test_tensor_still_refused() -> None:
    with pytest.raises(
        errors.FieldTypeError, match="Holder.extra is annotated TensorDict; got a Tensor"
    ):
        _holder(tclass)(x=torch.ones(2), extra=torch.zeros(2), batch_size=[2])
