"""``load_state_dict`` takes the batch sizes a state dict records, and takes a collection
as the state dict, as tensordict 0.15.3 does (nu26b: new users' checkpoint programs)."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import TensorClass, TensorDict, errors


class Inner(TensorClass):
    z: torch.Tensor


class Rec(TensorClass):
    x: torch.Tensor
    y: Inner


class WithTd(TensorClass):
    x: torch.Tensor
    n: TensorDict | None = None


# --- the batch sizes the state dict records -----------------------------------------------


def test_a_fresh_destination_takes_the_saved_batch_size() -> None:
    """A checkpoint of a [3]-batch loaded into TensorDict(a=zeros) (batch []) restores
    batch [3], so rows index as before saving (the peer's load_state_dict sets it)."""
    saved = TensorDict(a=torch.arange(6.0).reshape(3, 2), batch_size=[3])
    fresh = TensorDict(a=torch.zeros(3, 2))
    assert fresh.load_state_dict(saved.state_dict()) is fresh
    assert fresh.batch_size == (3,) and torch.equal(fresh[1]["a"], torch.tensor([2.0, 3.0]))


def test_nested_nodes_locked_and_not_strict() -> None:
    saved = TensorDict(
        a=torch.ones(3, 2), n=TensorDict(b=torch.ones(3, 2), batch_size=[3, 2]), batch_size=[]
    )
    dest = TensorDict(a=torch.zeros(3, 2), n=TensorDict(b=torch.zeros(3, 2), batch_size=[3]))
    dest.batch_size = [3]
    dest.lock_()
    dest.load_state_dict(saved.state_dict())
    assert dest.batch_size == () and dest["n"].batch_size == (3, 2)
    assert dest.is_locked and torch.equal(dest["n", "b"], torch.ones(3, 2))
    loose = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
    loose.load_state_dict(TensorDict(a=torch.ones(3, 2)).state_dict(), strict=False)
    assert loose.batch_size == ()
    flat_false = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
    flat_false.load_state_dict(
        TensorDict(a=torch.ones(3, 2), batch_size=[3, 2]).state_dict(flatten=False)
    )
    assert flat_false.batch_size == (3, 2)


def test_records_and_names() -> None:
    saved = WithTd(
        x=torch.ones(3, 2), n=TensorDict(b=torch.ones(3, 2), batch_size=[3, 2]), batch_size=[3]
    )
    dest = WithTd(x=torch.zeros(3, 2), n=TensorDict(b=torch.zeros(3, 2), batch_size=[3]))
    dest.load_state_dict(saved.state_dict())
    assert dest.batch_size == (3,) and dest.n.batch_size == (3, 2)
    named = TensorDict(a=torch.zeros(3, 2), batch_size=[3], names=["t"])
    named.load_state_dict(TensorDict(a=torch.ones(3, 2), batch_size=[3, 2]).state_dict())
    assert named.batch_size == (3, 2) and named.names == ["t", None]  # as the peer


def test_a_batch_size_that_does_not_fit_changes_nothing() -> None:
    sd = TensorDict(a=torch.ones(3, 2), batch_size=[3]).state_dict()
    sd._metadata[""]["batch_size"] = torch.Size([4])
    dest = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
    with pytest.raises(errors.BatchSizeError, match=r"batch size \[4\] for the root"):
        dest.load_state_dict(sd)
    assert dest.batch_size == (3,) and not dest["a"].any()


def test_a_lazy_stack_keeps_its_own() -> None:
    stack = tclass.lazy_stack([TensorDict(a=torch.zeros(2)) for _ in range(3)])
    stack.load_state_dict(TensorDict(a=torch.ones(3, 2), batch_size=[3]).state_dict())
    assert stack.batch_size == (3,) and torch.equal(stack["a"], torch.ones(3, 2))


# --- a collection given as the state dict -------------------------------------------------


def test_a_tensordict_with_python_values() -> None:
    dest = TensorDict(a=torch.arange(6.0).reshape(3, 2), s="hello", batch_size=[3])
    dest.load_state_dict(dest.clone().apply(lambda t: t * 2))
    assert torch.equal(dest["a"], torch.arange(6.0).reshape(3, 2) * 2)
    assert dest["s"] == "hello"
    other = TensorDict(a=torch.zeros(3, 2), s="bye", batch_size=[3])
    dest.load_state_dict(other)
    assert dest["s"] == "bye" and not dest["a"].any()


def test_a_record_with_a_nested_record() -> None:
    rec = Rec(
        x=torch.arange(6.0).reshape(3, 2),
        y=Inner(z=torch.arange(3), batch_size=[3]),
        batch_size=[3],
    )
    dest = rec.clone()
    dest.load_state_dict(rec.clone().apply(lambda t: t * 2))
    assert torch.equal(dest.x, rec.x * 2) and torch.equal(dest.y.z, rec.y.z * 2)
    with pytest.raises(errors.StateDictKeyError, match="zzz"):
        dest.load_state_dict(TensorDict(x=rec.x, y=TensorDict(z=rec.y.z), zzz=torch.ones(3)))


def test_the_sources_batch_size_is_not_taken() -> None:
    """The peer reads a collection as a plain mapping (no _metadata): the destination
    keeps its batch size."""
    dest = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
    dest.load_state_dict(TensorDict(a=torch.ones(3, 2), batch_size=[3, 2]))
    assert dest.batch_size == (3,) and dest["a"].all()


# --- a stack of MetaData copies (fz30i) ---------------------------------------------------


def test_a_stack_of_metadata_copies_is_recorded_as_that_metadata() -> None:
    # apply's members keep copies of the MetaData, which stack to one value per member:
    # the state dict records the MetaData, so that a load keeps it, over no elements too
    # (program 16,025,371 of methods,features,entries,records: the list was lost).
    for rows in (0, 2):
        x = tclass.lazy_stack([TensorDict({}, [rows]), TensorDict({}, [rows])], 1)
        x = x.set("s", tclass.MetaData([1, 2], batch_size=[rows, 2]))
        source = x.clone().apply(torch.zeros_like)
        state = source.state_dict()
        assert state._metadata["s"]["_type"] == "MetaData"
        assert state._metadata["s"]["_non_tensor"]["data"] == [1, 2]
        x = x.load_state_dict(state)
        for member in x.tensordicts:
            assert type(member._entries()["s"]) is tclass.MetaData
            assert member._entries()["s"].data == [1, 2]
        fresh = tclass.lazy_stack([TensorDict({}, [rows]), TensorDict({}, [rows])], 1)
        fresh.load_state_dict(state)
        assert fresh.tensordicts[1]._entries()["s"].data == [1, 2]


def test_a_stack_of_different_values_stays_per_element() -> None:
    x = tclass.lazy_stack(
        [
            TensorDict({"s": tclass.MetaData("a", batch_size=[2])}, [2]),
            TensorDict({"s": tclass.MetaData("b", batch_size=[2])}, [2]),
        ],
        0,
    )
    entry = x.state_dict()._metadata["s"]
    assert "_type" not in entry
    assert entry["_non_tensor"] == {"_tclass_per_element": [["a", "a"], ["b", "b"]]}
