"""Regressions from the differential fuzzer's family ``methods`` (the methods no other
generator called, fz26d): each test is the shortest program of one signature, checked
against the peer's answer."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorDict, lazy_stack, tensorclass
from tclass.errors import StackError


def test_auto_device_reaches_python_values_and_empty_nodes() -> None:
    """The device every tensor is on is recorded in every nested collection and Python
    value too (the peer's ``_set_device``), so ``apply`` / ``as_tensor`` keep it."""
    td = TensorDict(
        {"b": torch.zeros(3), "s": "x y", "e": {}, "n": {"q": "a", "r": torch.ones(3, 2)}}, [3]
    )
    td.auto_device_()
    cpu = torch.device("cpu")
    assert td.get("s").device == cpu and td["e"].device == cpu
    assert td["n"].get("q").device == cpu and td["n"].device == cpu
    assert td.apply(lambda v: v).device == cpu
    assert td.as_tensor().device == cpu and td.as_tensor()["n"].device == cpu


def test_auto_device_without_tensors_clears_every_level() -> None:
    td = TensorDict({"s": "x y", "e": {}}, [3], device="cpu")
    td.auto_device_()
    assert td.device is None and td["e"].device is None and td.get("s").device is None


def test_auto_device_of_a_record_over_a_lazy_stack_sets_its_members() -> None:
    """A record over a lazy stack sets its members' devices (and their nested records'),
    as the peer's; a nested record without tensors takes the parent's (fz27d: program
    15,520,329 of methods,index,shape,combine)."""

    @tensorclass
    class In:
        y: torch.Tensor | None = None

    @tensorclass
    class Out:
        x: torch.Tensor
        inner: In

    one = Out(x=torch.zeros(4), inner=In(y=torch.ones(4), batch_size=[4]), batch_size=[4])
    stack = lazy_stack([one, one.clone()]).auto_device_()
    cpu = torch.device("cpu")
    assert stack.device == cpu and stack[0].device == cpu and stack[1].inner.device == cpu
    assert stack.inner.device == cpu
    bare = Out(x=torch.zeros(4), inner=In(batch_size=[4]), batch_size=[4]).auto_device_()
    assert bare.device == cpu and bare.inner.device == cpu


def test_is_floating_point_of_mixed_floats_and_of_no_tensors() -> None:
    """Every tensor floating-point, whatever their dtypes; True without tensors (the
    peer's ``all`` over no leaves); Python values are not checked."""
    mixed = TensorDict({"a": torch.zeros(()), "b": torch.zeros((), dtype=torch.float64)}, [])
    assert mixed.is_floating_point()
    assert TensorDict({}, [2]).is_floating_point()
    assert TensorDict({"a": torch.zeros(()), "s": "x"}, []).is_floating_point()
    assert not TensorDict(
        {"a": torch.zeros(()), "n": {"i": torch.ones((), dtype=torch.long)}}, []
    ).is_floating_point()


@pytest.mark.parametrize("name", ["cat_tensors", "stack_tensors"])
def test_a_key_joined_twice_without_keep_entries_is_a_key_error(name: str) -> None:
    """The peer removes each key joined: its second ``del_`` raises ``KeyError`` (and
    puts the first back); with ``keep_entries`` it joins the key with itself."""
    td = TensorDict({"d": torch.zeros(2, 1), "e": torch.ones(2, 2)}, [2])
    with pytest.raises(KeyError, match="given twice"):
        getattr(td, name)("d", "d", out_key="o")
    assert list(td.keys()) == ["d", "e"] and td["d"].shape == (2, 1)
    out = getattr(td, name)("d", "d", out_key="o", dim=1, keep_entries=True)
    assert out["o"].shape == ((2, 2) if name == "cat_tensors" else (2, 2, 1))


def test_a_nested_record_field_joined_twice_is_removed_twice() -> None:
    """The peer's ``del_`` of a nested record's field sets it to None: given twice, the
    key joins with itself and is removed (program 15,000,225 of methods,index,shape,combine,
    --length 8, fz26d)."""

    @tensorclass
    class Point:
        x: torch.Tensor

    td = TensorDict({"r": Point(x=torch.ones(2, 2), batch_size=[2])}, [2])
    td.cat_tensors(("r", "x"), ("r", "x"), out_key="o", dim=-1)
    assert torch.equal(td["o"], torch.ones(2, 4)) and td["r"].x is None


def test_a_key_joined_twice_in_a_locked_collection_is_refused_as_locked() -> None:
    """The peer's first ``del_`` meets the lock: its ``RuntimeError`` (program 15,010,460
    of methods,index,shape,combine, --length 12)."""
    td = TensorDict({"d": torch.zeros(2, 1)}, [2]).lock_()
    with pytest.raises(RuntimeError, match="locked"):
        td.cat_tensors("d", "d", out_key="o")


@pytest.mark.parametrize("name", ["cat_tensors", "stack_tensors"])
def test_a_key_joined_twice_in_a_lazy_stack_with_a_locked_member_is_refused_as_locked(
    name: str,
) -> None:
    """A lazy stack that is not locked, one of whose members is (a memory-mapped one):
    the new entry is refused by that member, the peer's ``RuntimeError`` (program
    15,851,042 of methods,index,shape,combine, --length 12, fz28e)."""
    locked = TensorDict({"d": torch.zeros(2, 1)}, [2]).lock_()
    stack = lazy_stack([locked, TensorDict({"d": torch.ones(2, 1)}, [2])], 0)
    assert not stack.is_locked
    with pytest.raises(RuntimeError, match="locked"):
        getattr(stack, name)("d", "d", out_key="d", dim=-1)
    assert list(stack.keys()) == ["d"] and stack["d"].shape == (2, 2, 1)
    with pytest.raises(KeyError, match="given twice"):  # no member locked: the key error
        getattr(stack.clone(), name)("d", "d", out_key="o")


@pytest.mark.parametrize("name", ["cat_tensors", "stack_tensors"])
def test_a_join_meeting_a_locked_nested_parent_of_a_member_is_refused_unchanged(
    name: str,
) -> None:
    """``exclude`` of a locked member gives an unlocked copy whose nested collection is
    still the locked one: the peer removes the keys in order and meets that lock before a
    key's second removal (its ``RuntimeError``, then every entry put back), or the key
    given twice first (its ``KeyError``) (program 15,912,850 of
    methods,features,entries,records, --length 8, rg28c)."""
    rec = TensorDict(
        {"a": torch.zeros(2, 1), "x": torch.zeros(2), "n": {"y": torch.ones(2, 1)}}, [2]
    )
    stack = lazy_stack([rec.lock_(), rec.clone()], 0).exclude("x")
    assert not stack.is_locked and stack.tensordicts[0]["n"].is_locked
    for keys in [(("n", "y"), ("n", "y")), ("a", ("n", "y"), "a"), ("a", ("n", "y"))]:
        with pytest.raises(RuntimeError, match="locked"):
            getattr(stack, name)(*keys, out_key="o", dim=-1)
        assert set(stack.keys(True, True)) == {"a", ("n", "y")}
        assert stack["n", "y"].shape == (2, 2, 1)
    with pytest.raises(KeyError, match="given twice"):  # the key's second removal first
        getattr(stack, name)("a", "a", ("n", "y"), out_key="o", dim=-1)
    assert set(stack.keys(True, True)) == {"a", ("n", "y")}


@pytest.mark.parametrize("name", ["cat_tensors", "stack_tensors"])
def test_a_records_join_into_a_field_returns_the_record(name: str) -> None:
    """Written in place, as a TensorDict's join returns the TensorDict (the peer's record
    returns its TensorDict: program 15,826,009 of methods,index,shape,combine L12)."""

    @tensorclass
    class Inner:
        y: torch.Tensor

    @tensorclass
    class Rec:
        x: torch.Tensor
        label: str
        inner: Inner

    rec = Rec(
        x=torch.zeros(2, 2), label="a", inner=Inner(y=torch.ones(2, 2), batch_size=[2]),
        batch_size=[2],
    )  # fmt: skip
    out = getattr(rec, name)(("inner", "y"), ("inner", "y"), out_key=("inner", "y"), dim=1)
    assert out is rec and out.label == "a"
    assert out.inner.y.shape == ((2, 4) if name == "cat_tensors" else (2, 2, 2))


@pytest.mark.parametrize("name", ["cat_tensors", "stack_tensors"])
@pytest.mark.parametrize("lazy", [False, True])
def test_joining_a_python_value_with_a_tensor_names_both_keys(name: str, lazy: bool) -> None:
    """A Python value and a tensor do not join: a ``StackError`` naming both keys, and
    nothing changes (the peer fails inside, an ``AttributeError``; fz29a: program
    15,954,320 of methods,features,entries,records, where tclass named the key ``()``)."""
    td = TensorDict({"a": torch.zeros(2)}, [2])
    td.set_non_tensor(("zz", "a"), "x y")
    x = lazy_stack([td, td.clone()]) if lazy else td
    with pytest.raises(StackError, match=r"\('zz', 'a'\) holds a Python value and 'a' a Tensor"):
        getattr(x, name)(("zz", "a"), "a", out_key="o", dim=-1)
    assert "o" not in x.keys() and "a" in x.keys()
