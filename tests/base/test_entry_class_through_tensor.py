"""``entry_class`` of a key that runs through a tensor (``("zz", "a")`` where ``"zz"``
is a tensor): a ``KeyThroughTensorError`` (a ``KeyError`` and a ``ValueError``, the
peer's ``_KeyThroughLeafError``), as ``get`` refuses it; through a Python value or an
absent key it stays ``type(None)``, as the peer's (fz29b: program 15,910,111 of
methods,features,entries,records, a memory-mapped ``'zz'``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import tclass
from tclass import TensorDict, errors, lazy_stack, tensorclass


@tensorclass
class _In:
    y: torch.Tensor


@tensorclass
class _Rec:
    x: torch.Tensor
    label: str
    inner: _In


def _td() -> TensorDict:
    return TensorDict({"zz": torch.zeros(4, 1), "n": {"b": torch.zeros(4)}, "s": "x"}, [4])


@pytest.mark.parametrize(
    "key", [("zz", "a"), ("zz", "a", "b"), ("n", "b", "c")], ids=["one", "deep", "nested"]
)
def test_through_a_tensor_raises(key: tuple[str, ...], tmp_path: Path) -> None:
    td = _td()
    for node in (td, lazy_stack([td, td.clone()]), td.memmap(tmp_path / "m")):
        with pytest.raises(errors.KeyThroughTensorError) as raised:
            node.entry_class(key)
        assert isinstance(raised.value, KeyError) and isinstance(raised.value, ValueError)
        assert repr(key) in str(raised.value)


def test_records_and_what_stays_none() -> None:
    rec = _Rec(x=torch.zeros(4), label="s", inner=_In(y=torch.zeros(4), batch_size=[4]),
               batch_size=[4])  # fmt: skip
    with pytest.raises(errors.KeyThroughTensorError):
        rec.entry_class(("x", "a"))
    with pytest.raises(errors.KeyThroughTensorError):
        rec.entry_class(("inner", "y", "a"))
    assert rec.entry_class(("label", "a")) is type(None)  # through a Python value
    td = _td()
    assert td.entry_class(("s", "a")) is type(None)
    assert td.entry_class(("missing", "a")) is type(None)
    assert td.entry_class(("n", "missing", "a")) is type(None)
    assert tclass.TensorDict({}, []).entry_class(("a", "b")) is type(None)


def test_as_the_peer(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    theirs = peer.TensorDict({"zz": torch.zeros(4, 1), "s": "x"}, [4]).memmap(tmp_path / "p")
    with pytest.raises(ValueError, match="not a tensordict"):
        theirs.entry_class(("zz", "a"))
    assert theirs.entry_class(("s", "a")) is type(None)
    assert theirs.entry_class(("missing", "a")) is type(None)
