"""``Cls.from_tensordict(td)`` keeps the TensorDict ``td`` itself as the record's storage,
as the peer's: a key set, deleted or replaced through either is seen by the other,
``td.lock_()`` locks the record, ``td.batch_size = ...`` resizes it. Where the class's
schema or the arguments make the record differ from ``td`` (a nested TensorDict becomes a
record, a default is filled in, ``non_tensordict`` values, a checked schema, a frozen
class over an unlocked ``td``), the record keeps its own storage (README, "from_tensordict
shares the TensorDict")."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pytest
import torch

from tclass import (
    PersistentTensorDict,
    Spec,
    TensorClass,
    TensorDict,
    TensorDictParams,
    errors,
    lazy_stack,
)


class Rec(TensorClass):
    a: torch.Tensor
    b: torch.Tensor | None = None


class Named(TensorClass):
    a: torch.Tensor
    s: str | None = None


class Inner(TensorClass):
    x: torch.Tensor


class Outer(TensorClass):
    inner: Inner
    y: torch.Tensor


class Holder(TensorClass):
    a: torch.Tensor
    t: TensorDict | None = None


class Bounded(TensorClass):
    a: Annotated[torch.Tensor, Spec(ge=0)]


class Frozen(TensorClass, frozen=True):
    a: torch.Tensor


class Filled(TensorClass):
    a: torch.Tensor
    s: str = "x"


def flat(**extra: torch.Tensor) -> TensorDict:
    return TensorDict(a=torch.zeros(3), **extra, batch_size=[3])


def test_the_record_keeps_td_and_sees_its_keys_lock_and_batch_size() -> None:
    td = flat()
    record = Rec.from_tensordict(td)
    assert record._tensordict is td
    td["b"] = torch.ones(3)
    assert torch.equal(record.b, torch.ones(3))
    record.a = torch.full((3,), 5.0)
    assert torch.equal(td["a"], torch.full((3,), 5.0))
    del td["b"]
    assert record.b is None
    td.lock_()
    assert record.is_locked
    td.unlock_()
    td.batch_size = torch.Size([])
    assert record.batch_size == torch.Size([])


def test_to_tensordict_stays_a_copy() -> None:
    td = flat(b=torch.ones(3))
    out = Rec.from_tensordict(td).to_tensordict()
    assert out is not td
    out["a"] = torch.ones(3)
    assert torch.equal(td["a"], torch.zeros(3))


def test_python_values_tensordict_fields_and_records_of_the_storage_share() -> None:
    td = TensorDict(a=torch.zeros(3), s="hi", batch_size=[3])
    record = Named.from_tensordict(td)
    assert record._tensordict is td
    record.s = "yo"
    assert td["s"] == "yo"
    held = TensorDict(a=torch.zeros(3), t=flat(), batch_size=[3])
    assert Holder.from_tensordict(held)._tensordict is held
    first = Rec.from_tensordict(flat(b=torch.ones(3)))
    assert Rec.from_tensordict(first)._tensordict is first._tensordict


def test_a_lazy_stack_is_shared_and_grows_under_the_record() -> None:
    stack = lazy_stack([flat()[0], flat()[1]])
    record = Rec.from_tensordict(stack)
    assert record._tensordict is stack
    stack.append(flat()[2])
    assert record.batch_size == torch.Size([3])


def test_a_locked_td_gives_a_locked_record_shared_or_copied() -> None:
    assert Rec.from_tensordict(flat().lock_()).is_locked
    nested = TensorDict(inner=flat(x=torch.ones(3)).exclude("a"), y=torch.zeros(3), batch_size=[3])
    record = Outer.from_tensordict(nested.lock_())
    assert record._tensordict is not nested  # a record over inner, as the peer's copy
    assert record.is_locked and isinstance(record.inner, Inner)


def test_what_the_schema_changes_keeps_a_copy() -> None:
    filled = flat()
    record = Filled.from_tensordict(filled)  # the default is filled in, not into td
    assert record._tensordict is not filled and "s" not in filled.keys()
    given = flat()
    assert Named.from_tensordict(given, non_tensordict={"s": "v"})._tensordict is not given
    assert "s" not in given.keys()
    unlocked = flat()
    frozen = Frozen.from_tensordict(unlocked)
    assert frozen.is_locked and not unlocked.is_locked
    locked = flat().lock_()
    assert Frozen.from_tensordict(locked)._tensordict is locked


def test_a_checked_schema_keeps_a_copy_writes_through_td_cannot_skip_its_checks() -> None:
    td = flat()
    record = Bounded.from_tensordict(td)
    assert record._tensordict is not td
    td["a"] = -torch.ones(3)
    assert torch.equal(record.a, torch.zeros(3))


def test_entries_are_still_checked_before_sharing() -> None:
    with pytest.raises(errors.FieldTypeError):
        Rec.from_tensordict(TensorDict(a="text", batch_size=[]))
    with pytest.raises(errors.UnknownFieldError):
        Rec.from_tensordict(flat(c=torch.ones(3)))


def test_params_the_record_keeps_them_and_sees_keys_and_lock() -> None:
    params = TensorDictParams(flat())
    record = Rec.from_tensordict(params)
    assert record._tensordict is params  # as the peer's
    assert record.a is params["a"] and isinstance(record.a, torch.nn.Parameter)
    params["b"] = torch.ones(3)  # as the peer's record over params: seen
    assert record.b is params["b"] and isinstance(record.b, torch.nn.Parameter)
    params.lock_()
    assert record.is_locked
    params.unlock_()
    assert not record.is_locked
    record.a = torch.full((3,), 2.0)  # converted by params, as the peer's
    assert torch.equal(params["a"], torch.full((3,), 2.0))
    assert isinstance(params["a"], torch.nn.Parameter) and record.a is params["a"]
    del record.b
    assert "b" not in params.keys()


def test_params_an_in_place_set_through_the_record_is_refused_as_params_own() -> None:
    # params.set(k, v, inplace=True) raises autograd's in-place error (as the peer's);
    # the record over them wrote the data through set_ (lo26a)
    params = TensorDictParams(flat())
    record = Rec.from_tensordict(params)
    writes = (
        lambda: params.set("a", torch.ones(3), inplace=True),
        lambda: record.set("a", torch.ones(3), inplace=True),
        lambda: record.update({"a": torch.ones(3)}, inplace=True),
    )
    for write in writes:
        with pytest.raises(errors.InPlaceWriteError, match="autograd"):
            write()
        assert torch.equal(params["a"], torch.zeros(3)) and record.a is params["a"]
    with torch.no_grad():  # outside autograd the record writes in place
        record.set("a", torch.ones(3), inplace=True)
    assert torch.equal(params["a"], torch.ones(3)) and isinstance(params["a"], torch.nn.Parameter)


def test_params_locked_alone_by_lock_true_give_a_record_over_them_unlocked() -> None:
    params = TensorDictParams(flat(), lock=True)
    record = Rec.from_tensordict(params)
    assert record._tensordict is params  # as the peer's: params' own lock is not set
    assert not record.is_locked and record.a is params["a"]


def test_h5_the_record_keeps_the_file_collection_and_sees_its_lock(tmp_path: Path) -> None:
    pytest.importorskip("h5py")
    ptd = PersistentTensorDict.from_dict(flat(), filename=tmp_path / "f.h5")
    record = Rec.from_tensordict(ptd)
    assert record._tensordict is ptd
    ptd["b"] = torch.ones(3)
    assert torch.equal(record.b, torch.ones(3))
    ptd.lock_()
    assert record.is_locked
    ptd.unlock_()
    record.lock_()
    assert ptd.is_locked
    ptd.close()


def test_h5_with_a_group_under_a_record_field_the_record_reads_a_new_collection(
    tmp_path: Path,
) -> None:
    pytest.importorskip("h5py")
    nested = TensorDict(inner=TensorDict(x=torch.ones(3), batch_size=[3]), y=torch.zeros(3))
    ptd = PersistentTensorDict.from_dict(nested.auto_batch_size_(), filename=tmp_path / "g.h5")
    record = Outer.from_tensordict(ptd)
    assert record._tensordict is not ptd  # ptd["inner"] stays a PersistentTensorDict
    assert isinstance(record.inner, Inner)
    assert isinstance(ptd["inner"], PersistentTensorDict)
    ptd.close()
