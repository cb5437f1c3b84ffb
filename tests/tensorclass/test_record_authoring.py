"""Records as a new user writes them (session 22, nu22c): constructor keywords, the
repr's ``field(repr=False)``, the base class itself. Each case is the peer's behaviour."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import tclass
from tclass import TensorClass, errors


class _Locked(TensorClass):
    x: torch.Tensor
    seen: bool = False

    def __post_init__(self) -> None:
        self.seen = True  # a __post_init__ still writes: the lock comes after it


def test_constructor_lock_keyword_locks_the_record() -> None:
    record = _Locked(x=torch.ones(2), batch_size=[2], lock=True)
    assert record.is_locked and record.seen
    with pytest.raises(RuntimeError):
        record.set("x", torch.zeros(2))
    assert not _Locked(x=torch.ones(2), batch_size=[2], lock=False).is_locked
    assert not _Locked(x=torch.ones(2), batch_size=[2]).is_locked


def test_a_field_named_lock_takes_the_keyword() -> None:
    class WithLock(TensorClass):
        lock: torch.Tensor

    record = WithLock(lock=torch.ones(1), batch_size=[1])
    assert torch.equal(record.lock, torch.ones(1)) and not record.is_locked


class _Inner(TensorClass):
    v: torch.Tensor
    w: torch.Tensor | None = dataclasses.field(default=None, repr=False)


class _Outer(TensorClass):
    x: torch.Tensor
    inner: _Inner | None = None
    note: str | None = dataclasses.field(default=None, repr=False)
    later: torch.Tensor | None = dataclasses.field(default=None, repr=False)


def test_repr_leaves_out_repr_false_fields() -> None:
    inner = _Inner(v=torch.ones(2), w=torch.ones(2), batch_size=[2])
    record = _Outer(x=torch.ones(2), inner=inner, note="n", batch_size=[2])
    assert repr(record) == "_Outer(batch_size=[2], fields={inner: _Inner{v: f32[]}, x: f32[]})"
    assert repr(inner) == "_Inner(batch_size=[2], fields={v: f32[]})"
    stacked = torch.stack([record, record])
    assert repr(stacked) == ("_Outer(batch_size=[2,2], fields={inner: _Inner{v: f32[]}, x: f32[]})")
    assert record.note == "n" and torch.equal(record.inner.w, torch.ones(2))  # still there


def test_instantiating_the_base_class_is_the_peers_not_implemented_error() -> None:
    with pytest.raises(NotImplementedError, match="derive a tensorclass"):
        TensorClass(batch_size=[])
    with pytest.raises(errors.TclassError):
        TensorClass()


def test_detailed_repr_leaves_out_repr_false_fields() -> None:
    record = _Outer(x=torch.ones(2), note="n", batch_size=[2])
    with tclass.set_printoptions(compact=False):
        text = repr(record)
    assert "x=Tensor(" in text and "inner=None" in text
    assert "note" not in text and "later" not in text
