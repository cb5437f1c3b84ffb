"""Removing and updating the fields of tensorclass records (``test_tensorclass_ops.py``
has the other ops): ``select`` / ``exclude`` / ``pop`` / ``del`` of nested and Python
value fields, and ``update`` / ``update_`` merging nested records key by key."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from ops_records import Inner, Rec  # noqa: E402

import tclass
from tclass import TensorClass, TensorDict, errors

LockedError = errors.LockedError
UnknownFieldError = errors.UnknownFieldError


def test_select_of_a_nested_field_keeps_the_nested_record_class() -> None:
    """Found by the differential fuzzer: ``rec.select("obs", ("inner", "x"))`` selects
    within the nested record, which stays an ``Inner`` (as in the peer)."""
    rec = Rec(
        obs=torch.zeros(3), inner=Inner(x=torch.ones(3, 2), batch_size=[3]), env="a", batch_size=[3]
    )
    out = rec.select("obs", ("inner", "x"))
    assert type(out) is Rec and type(out.inner) is Inner
    assert torch.equal(out.inner.x, rec.inner.x) and out.env is None
    td = TensorDict({"r": rec}, [3])
    assert type(td.select(("r", "inner", "x"))["r"].inner) is Inner


def test_nested_record_fields_excluded_popped_and_deleted() -> None:
    """Found by the differential fuzzer: a nested key through a record reaches the
    nested record's field (it reads None after), as in the peer."""
    rec = Rec(
        obs=torch.zeros(3), inner=Inner(x=torch.ones(3, 2), batch_size=[3]), env="a", batch_size=[3]
    )
    assert rec.exclude(("inner", "x")).inner.x is None and rec.inner.x is not None
    td = TensorDict({"r": rec.clone()}, [3])
    td.exclude(("r", "inner", "x"), inplace=True)
    assert td["r"].inner.x is None
    copy_ = rec.clone()
    assert torch.equal(copy_.pop(("inner", "x")), rec.inner.x) and copy_.inner.x is None
    assert rec.clone().del_(("inner", "x")).inner.x is None
    assert rec.clone().pop(("inner", "x"), None) is not None


def test_del_item_deletes_the_field() -> None:
    """``del rec[key]`` is ``rec.del_(key)``, as ``del td[key]`` (the peer's records have
    no ``__delitem__``); a frozen record refuses it."""
    rec = Rec(
        obs=torch.zeros(3), inner=Inner(x=torch.ones(3, 2), batch_size=[3]), env="a", batch_size=[3]
    )
    del rec["obs"]
    del rec["inner", "x"]
    assert rec.obs is None and rec.inner.x is None and "obs" not in rec.keys()
    rec.lock_()
    with pytest.raises(RuntimeError, match="locked"):
        del rec["env"]


def test_deleting_a_field_that_is_none_leaves_it_none() -> None:
    """Found by the differential fuzzer: as the peer, ``del_`` of a field that is
    already ``None`` (here or in a nested record, of a lazy stack too) changes nothing;
    ``pop`` still raises."""
    rec = Rec(obs=torch.zeros(3), inner=Inner(x=None, batch_size=[3]), env=None, batch_size=[3])
    assert rec.del_("env") is rec and rec.env is None
    assert rec.del_(("inner", "x")).inner.x is None
    stack = tclass.lazy_stack([rec, rec.clone()])
    assert stack.del_(("inner", "x")) is stack and stack.del_("env").env is None
    with pytest.raises(KeyError):
        rec.pop("env")
    with pytest.raises(KeyError):
        rec.del_(("env", "a"))


def test_del_of_a_missing_key_on_a_locked_record_is_a_key_error() -> None:
    """Found by the differential fuzzer: a locked record looks ``key`` up before its lock,
    as the peer's records (a ``TensorDict`` refuses on the lock first, in both)."""
    rec = Rec(obs=torch.zeros(3), inner=Inner(x=None, batch_size=[3]), env="a", batch_size=[3])
    rec.lock_()
    with pytest.raises(KeyError, match="zz"):
        rec.del_("zz")
    with pytest.raises(LockedError):
        rec.del_("obs")
    assert torch.equal(rec.obs, torch.zeros(3)) and rec.env == "a"


def test_pop_of_a_python_value_field_gives_its_node_as_the_peer() -> None:
    """Found by the differential fuzzer: ``pop`` returns what the storage held, as the
    peer's and as ``TensorDict.pop``: a Python value comes back as its ``NonTensorData``
    (a per-member stack as its ``NonTensorStack``), not read."""
    rec = Rec(obs=torch.zeros(3), inner=Inner(x=None, batch_size=[3]), env="a", batch_size=[3])
    popped = rec.pop("env")
    assert isinstance(popped, tclass.NonTensorData) and popped.data == "a"
    assert popped.batch_size == torch.Size([3]) and rec.env is None
    pair = [
        Rec(obs=torch.zeros(3), inner=Inner(x=None, batch_size=[3]), env=env, batch_size=[3])
        for env in ("a", "b")
    ]
    assert isinstance(tclass.stack(pair).pop("env"), tclass.NonTensorStack)
    assert rec.pop("env", "default") == "default"


def test_update_in_place_with_a_key_that_is_no_field_names_the_fields() -> None:
    """Found by the differential fuzzer: the peer raises a ValueError for a key that is
    not a field; tclass's UnknownFieldError is one (and names the fields)."""
    rec = Rec(obs=torch.zeros(3), inner=Inner(x=None, batch_size=[3]), env="a", batch_size=[3])
    for source in ({"zz": torch.ones(3)}, {("zz", "a"): torch.ones(3)}):
        with pytest.raises(ValueError, match="has no field 'zz'") as info:
            rec.update_(source)
        assert isinstance(info.value, errors.UnknownFieldError)
    assert rec.update_({"obs": torch.ones(3)}).obs.sum() == 3


class Pair(TensorClass):
    y: torch.Tensor
    z: torch.Tensor | None = None


class Holder(TensorClass):
    a: torch.Tensor
    pair: Pair


@pytest.mark.parametrize(
    "given",
    [
        lambda: {"y": torch.zeros(3)},
        lambda: TensorDict({"y": torch.zeros(3)}, [3]),
        lambda: Pair(y=torch.zeros(3), batch_size=[3]),  # z None: not given
    ],
)
def test_update_merges_a_nested_record_key_by_key(given: Any) -> None:
    """Found by the differential fuzzer: ``update`` replaced a nested record with what it
    was given, so fields the source did not hold became None (data lost); the peer (and a
    TensorDict's update) merges nested collections key by key."""
    holder = Holder(a=torch.ones(3), pair=Pair(y=torch.ones(3), z=torch.ones(3)), batch_size=[3])
    pair = holder.pair
    assert holder.update({"pair": given()}) is holder
    assert holder.pair is pair and type(holder.pair) is Pair
    assert torch.equal(holder.pair.y, torch.zeros(3)) and torch.equal(holder.pair.z, torch.ones(3))
    clone = holder.clone()
    clone.update(holder.select(("pair", "y")))  # a selection lacks z: z is kept
    assert torch.equal(clone.pair.z, torch.ones(3))
    replaced = Holder(a=torch.ones(3), pair=None, batch_size=[3])
    replaced.update({"pair": given()})  # no record there yet: the value becomes one
    assert type(replaced.pair) is Pair and torch.equal(replaced.pair.y, torch.zeros(3))


def test_a_field_set_to_none_through_update_is_unset_at_every_level() -> None:
    """``rec.update(rec.to_dict())`` keeps every field's data, and a ``None`` field of a
    nested record stays unset (no key), as a top field set to ``None`` does (README,
    "A field set to `None` is not set, at every level"); a ``None`` given for a set field
    unsets it."""
    holder = Holder(a=torch.ones(3), pair=Pair(y=torch.arange(3.0)), batch_size=[3])
    holder.update(holder.to_dict())
    assert torch.equal(holder.pair.y, torch.arange(3.0)) and holder.pair.z is None
    assert list(holder.pair.keys()) == ["y"]
    assert ("pair", "z") not in holder.to_tensordict().keys(True)
    stacked = torch.stack([holder, holder.clone()])
    assert stacked.pair.z is None and stacked.pair.y.shape == (2, 3)
    full = Holder(a=torch.ones(3), pair=Pair(y=torch.ones(3), z=torch.ones(3)), batch_size=[3])
    full.update({"pair": {"z": None}})
    assert full.pair.z is None and list(full.pair.keys()) == ["y"]
    assert torch.equal(full.pair.y, torch.ones(3))


class Labelled(TensorClass):
    x: torch.Tensor
    label: str


def test_a_dict_given_to_a_python_value_field_through_update_is_kept() -> None:
    """``update`` gives a ``str`` field a dict as the assignment does: kept as given (the
    peer's update makes a TensorDict of it, its assignment keeps the dict)."""
    given = {"q": torch.ones(2)}
    for write in ("update", "setattr", "set"):
        rec = Labelled(x=torch.zeros(2), label="s", batch_size=[2])
        if write == "update":
            rec.update({"label": given})
        elif write == "setattr":
            rec.label = given  # type: ignore[assignment]
        else:
            rec.set("label", given)
        assert type(rec.label) is dict and rec.label["q"] is given["q"]


def test_setdefault_of_a_python_value_field_gives_its_node() -> None:
    """Found by the differential fuzzer: as the peer's records (which answer their
    storage's ``setdefault``), ``setdefault`` of a field holding a Python value gives the
    ``NonTensorData`` holding it (``get`` gives the value); tensors and nested records
    come back as ``get`` gives them, and an unset field is set first."""
    rec = Rec(obs=torch.zeros(3), inner=Inner(x=None, batch_size=[3]), env="a", batch_size=[3])
    node = rec.setdefault("env", "b")
    assert isinstance(node, tclass.NonTensorData) and node.data == "a"
    assert node.batch_size == (3,) and rec.get("env") == "a"
    assert rec.setdefault("obs", torch.ones(3)) is rec.obs
    assert type(rec.setdefault("inner", None)) is Inner
    assert torch.equal(rec.setdefault(("inner", "x"), torch.ones(3, 2)), torch.ones(3, 2))
    unset = Rec(obs=torch.zeros(3), inner=None, env=None, batch_size=[3])
    assert unset.setdefault("env", "c").data == "c" and unset.env == "c"
    stack = tclass.lazy_stack([rec.clone(), rec.clone().set("env", "z")])
    values = stack.setdefault("env", "q")  # (the peer's wraps it in the record class)
    assert isinstance(values, tclass.NonTensorStack)
    assert values.tolist() == [["a"] * 3, ["z"] * 3]


def test_rename_onto_no_field_of_a_ragged_stack_names_the_field() -> None:
    """inv20e (program 10,803,349 of entries,combine --length 6): a record over a lazy
    stack of chunks of uneven size, whose nested entry has no dense value, renamed onto
    a name that is no field: the ``UnknownFieldError`` (the peer's key check first reads
    no stacked value), where tclass stacked the entry to see it exists and raised a
    ``HeterogeneousEntryError``."""
    recs = [
        Rec(obs=torch.zeros(()), inner=Inner(x=torch.full((2,), float(i))), env="a")
        for i in range(3)
    ]
    stack = tclass.lazy_stack(list(tclass.lazy_stack(recs, 0).chunk(2, 0)), 0)
    assert stack.batch_size == torch.Size([2, -1])
    with pytest.raises(UnknownFieldError, match="no field 'renamed'"):
        stack.rename_key_(("inner", "x"), "renamed")
    assert stack.inner.get("x", as_list=True)[1][0].tolist() == [2.0, 2.0]


def test_update_in_place_of_a_locked_record_writes_its_python_values() -> None:
    """inv20e (program 10,802,652 of index,combine,shape,entries --length 6, a lazy
    stack of one locked record written at an index): ``update(other, inplace=True)``
    of a locked record writes its Python value fields in place, as the peer's (and as
    ``rec[...] = other``), where tclass assigned them and raised a ``LockedError``; a
    write that is not in place is still refused."""
    rec = Rec(
        obs=torch.zeros(3), inner=Inner(x=torch.ones(3, 2), batch_size=[3]), env="a", batch_size=[3]
    )
    rec.lock_()
    other = Rec(
        obs=torch.ones(3), inner=Inner(x=torch.zeros(3, 2), batch_size=[3]), env="b", batch_size=[3]
    )
    rec.update(other, inplace=True)
    assert rec.env == "b" and rec.obs.tolist() == [1.0] * 3 and rec.inner.x.sum() == 0
    stack = tclass.LazyStackedTensorDict(rec, stack_dim=0)
    stack[0] = other.apply(torch.ones_like)
    assert rec.obs.tolist() == [1.0] * 3 and rec.inner.x.sum() == 6 and rec.is_locked
    with pytest.raises(LockedError):
        rec.update(other)
