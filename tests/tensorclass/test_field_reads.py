"""Reading a record's fields (``_engine/_record_fields.field_getter``): each getter looks
for the class its field is declared to hold first (a plain tensor, or the one record
class of a nested field) and reads anything else, or a storage that is no TensorDict, as
the storage's mapping gives it. A nested record is kept in its parent's storage, not
rebuilt on read: the object read is the one stored, and every write through the parent
(assignment, ``set``, ``update``, in-place math, ``del``) shows in the next read, as in
the peer. Issue 29 ("tc nested read")."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass import MemoryMappedTensor, TensorDict, tensorclass
from tclass.errors import LockedError

tensordict = pytest.importorskip("tensordict")


def _classes(lib: ModuleType) -> tuple[Any, Any, Any]:
    @lib.tensorclass
    class Inner:
        x: torch.Tensor

    @lib.tensorclass
    class Mid:
        inner: Inner
        y: torch.Tensor

    @lib.tensorclass
    class Outer:
        mid: Mid
        z: torch.Tensor
        label: str

    return Inner, Mid, Outer


def _record(lib: ModuleType, classes: tuple[Any, Any, Any] | None = None) -> Any:
    inner, mid, outer = classes or _classes(lib)
    x = torch.arange(6.0).reshape(3, 2)
    m = mid(inner(x, batch_size=[3]), torch.zeros(3), batch_size=[3])
    return outer(m, torch.ones(3), "a", batch_size=[3])


@pytest.fixture(params=["tclass", "peer"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    return tclass if request.param == "tclass" else tensordict


def test_a_nested_read_is_the_stored_record(lib: ModuleType) -> None:
    rec = _record(lib)
    assert rec.mid.inner.x.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert rec.label == "a" and rec.z.tolist() == [1.0, 1.0, 1.0]
    if lib is tclass:  # kept, not rebuilt per read (the peer builds one per read)
        assert rec.mid is rec.mid and rec.mid.inner is rec.mid.inner


def test_reads_follow_every_write_through_the_parent(lib: ModuleType) -> None:
    classes = _classes(lib)
    rec = _record(lib, classes)
    inner_cls, mid_cls, _ = classes
    kept = rec.mid
    other = mid_cls(
        inner_cls(torch.full((3, 2), 7.0), batch_size=[3]), torch.ones(3), batch_size=[3]
    )
    rec.mid = other
    assert rec.mid.inner.x[0].tolist() == [7.0, 7.0]
    assert kept.inner.x[0].tolist() == [0.0, 1.0]  # the record read before is unchanged
    rec.set("mid", kept)
    assert rec.mid.inner.x[0].tolist() == [0.0, 1.0]
    rec.update({"mid": {"inner": {"x": torch.full((3, 2), 3.0)}}})
    assert rec.mid.inner.x[0].tolist() == [3.0, 3.0]
    rec.mid.inner.x.add_(1)
    assert rec.mid.inner.x[0].tolist() == [4.0, 4.0]
    rec.mul_(2)
    assert rec.mid.inner.x[0].tolist() == [8.0, 8.0] and rec.z.tolist() == [2.0, 2.0, 2.0]
    rec.mid.inner = None
    assert rec.mid.inner is None
    rec.mid = None
    assert rec.mid is None


def test_reads_of_derived_records(lib: ModuleType) -> None:
    rec = _record(lib)
    assert rec[1].mid.inner.x.tolist() == [2.0, 3.0]
    assert rec[1:].mid.inner.x.shape == (2, 2)
    assert rec.to("cpu").mid.inner.x.data_ptr() == rec.mid.inner.x.data_ptr()
    assert rec.clone().mid.inner.x.data_ptr() != rec.mid.inner.x.data_ptr()
    rec.lock_()
    assert rec.mid.inner.x[2].tolist() == [4.0, 5.0]
    with pytest.raises(RuntimeError):
        rec.mid = rec.mid.clone()
    rec.unlock_()
    rec.mid = rec.mid.clone().zero_()
    assert rec.mid.inner.x.sum().item() == 0.0


def test_a_nested_field_holding_another_kind_of_collection() -> None:
    """A TensorDict or a subclass's record in the field reads as stored (the class the
    field declares is only looked for first)."""
    inner_cls, mid_cls, outer_cls = _classes(tclass)

    class SubMid(mid_cls):  # type: ignore[misc,valid-type]
        pass

    sub = SubMid(inner_cls(torch.ones(3, 2), batch_size=[3]), torch.zeros(3), batch_size=[3])
    rec = outer_cls(sub, torch.ones(3), "a", batch_size=[3])
    assert type(rec.mid) is SubMid and rec.mid is sub
    rec._tensordict._tensors["mid"] = TensorDict({"y": torch.zeros(3)}, batch_size=[3])
    assert type(rec.mid) is TensorDict


def test_tensor_subclasses_and_unset_fields() -> None:
    @tensorclass
    class Row:
        x: torch.Tensor
        y: torch.Tensor | None = None

    row = Row(MemoryMappedTensor.from_tensor(torch.ones(2)), batch_size=[2])
    assert type(row.x) is MemoryMappedTensor and row.x.tolist() == [1.0, 1.0]
    assert row.y is None
    row.y = torch.nn.Parameter(torch.zeros(2))
    assert isinstance(row.y, torch.nn.Parameter)
    del row.y
    assert row.y is None


def test_a_python_value_under_a_tensor_field_reads_as_its_value() -> None:
    """A Python value's node stored under a tensor field (the storage renamed under the
    record) reads as its value; a ``tensor_only`` class gives the node as stored."""

    @tensorclass
    class Pair:
        x: torch.Tensor
        label: str

    pair = Pair(torch.ones(2), "a", batch_size=[2])
    del pair.x
    pair._tensordict.rename_key_("label", "x")
    assert pair.x == "a"

    @tensorclass(tensor_only=True)
    class Raw:
        x: torch.Tensor

    raw = Raw(torch.ones(2), batch_size=[2])
    raw._tensordict._tensors["x"] = tclass.NonTensorData("b", batch_size=[2])
    assert isinstance(raw.x, tclass.NonTensorData) and raw.x.data == "b"


def test_reads_through_a_lazy_stack(lib: ModuleType) -> None:
    """A record over a lazy stack reads through the stack's own mapping: stacked where
    its members all hold the field, member by member where only some do (as the peer)."""

    @lib.tensorclass
    class Opt:
        x: torch.Tensor | None = None
        label: str | None = None

    a = Opt(torch.ones(2), "a", batch_size=[2])
    b = Opt(torch.zeros(2), "a", batch_size=[2])
    stack = lib.lazy_stack([a, b])
    assert stack.x.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    assert list(map(list, stack.label)) == [["a", "a"], ["a", "a"]]
    partly = lib.lazy_stack([a, Opt(None, batch_size=[2])])
    assert partly.label == ["a", None]
    assert partly.x[0].tolist() == [1.0, 1.0] and partly.x[1] is None
    classes = _classes(lib)
    nested = lib.lazy_stack([_record(lib, classes), _record(lib, classes)])
    assert nested.mid.inner.x.shape == (2, 3, 2)


def test_a_locked_record_still_reads() -> None:
    rec = _record(tclass).lock_()
    assert rec.mid.inner.x.shape == (3, 2) and rec.label == "a"
    with pytest.raises(LockedError):
        rec.mid = None
