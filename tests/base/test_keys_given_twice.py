"""A key given twice to ``separates`` / ``split_keys`` (or inside a key given before
it): the first takes it, the second finds nothing, the peer's KeyError; the message
says so, where it said the key "was not found" among keys listing it (fz42b)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict, errors, lazy_stack


def _td() -> TensorDict:
    return TensorDict({"b": torch.zeros(2), "c": torch.ones(2), "n": {"a": torch.ones(2)}}, [2])


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.split_keys(["c", "b"], ["c"]),
        lambda x: x.split_keys(["c"], ["c"], inplace=True),
        lambda x: x.separates("c", "c"),
        lambda x: x.separates("n", ("n", "a")),
    ],
)
def test_a_key_given_twice_says_so(lazy: bool, call: Any) -> None:
    x = lazy_stack([_td(), _td()]) if lazy else _td()
    with pytest.raises(KeyError, match="is given twice") as raised:
        call(x)
    assert isinstance(raised.value, errors.KeyNotFoundError)
    assert "pass strict=False" in str(raised.value)


def test_a_missing_key_is_still_not_found() -> None:
    with pytest.raises(KeyError, match="'z' was not found"):
        _td().split_keys(["c"], ["z"])
    with pytest.raises(KeyError, match="'z' was not found"):
        _td().separates("c", "z", "c")  # the missing key is named first


def test_without_strict_the_second_takes_nothing() -> None:
    first, second, rest = _td().split_keys(["c"], ["c"], strict=False)
    assert list(first.keys()) == ["c"] and list(second.keys()) == []
    assert sorted(rest.keys()) == ["b", "n"]


@pytest.mark.parametrize("lazy", [False, True])
def test_a_locked_lazy_stack_split_in_place_says_it_is_locked(lazy: bool) -> None:
    # the peer's lazy stack splits its locked members in place (its lock error), its
    # TensorDict raises the KeyError first; neither removes anything (left43)
    tensordict = pytest.importorskip("tensordict")
    for lib in (tensordict, tclass):
        td = lib.TensorDict(a=torch.zeros(2), b=torch.zeros(2), c=torch.zeros(2), batch_size=[2])
        td.lock_()
        x = lib.lazy_stack([td]) if lazy else td
        with pytest.raises(RuntimeError if lazy else KeyError) as raised:
            x.split_keys(["c", "b"], ["c"], inplace=True)
        assert lazy == ("locked" in str(raised.value))
        assert list(x.keys()) == ["a", "b", "c"]
    assert isinstance(raised.value, errors.LockedError if lazy else errors.KeyNotFoundError)
    with pytest.raises(KeyError, match="'z' was not found"):  # a missing key: the KeyError
        lazy_stack([td]).split_keys(["z"], inplace=True)


@pytest.mark.parametrize("lazy", [False, True])
def test_a_key_repeated_in_one_set_is_taken_once(lazy: bool) -> None:
    # the peer takes a set's keys as a dict of them: ["c", "c"] is ["c"] (program
    # 10,541,856 of ``--families entries``, fz20a; tclass raised "is given twice")
    x = lazy_stack([_td(), _td()]) if lazy else _td()
    first, rest = x.split_keys(["c", "c"])
    assert list(first.keys()) == ["c"] and sorted(rest.keys()) == ["b", "n"]
    assert torch.equal(first["c"], x["c"])
    first, rest = x.split_keys([("n", "a"), "n", ("n", "a")])  # a key, its parent, the key
    assert first["n", "a"].tolist() == x["n", "a"].tolist()  # the leaf kept, as README says
    assert sorted(rest.keys()) == ["b", "c"]
    with pytest.raises(KeyError, match="is given twice"):  # "c" and ("c",): two keys, as the peer
        x.split_keys(["c", ("c",)])


@tclass.tensorclass
class _Inner:
    y: torch.Tensor


@tclass.tensorclass
class _Outer:
    x: torch.Tensor
    inner: _Inner


def _outer() -> _Outer:
    return _Outer(
        x=torch.zeros(2), inner=_Inner(y=torch.zeros(2, 3), batch_size=[2]), batch_size=[2]
    )


def test_a_nested_records_field_stacked_twice() -> None:
    """``stack_tensors(k, k, out_key=k)`` of a record's nested field: a record (and a dense
    stack of records) writes it (removed twice: set to None, then written), as the peer's;
    a lazy stack of records refuses without ``keep_entries``, as its lazy stack of
    TensorDicts does and as the peer's (its KeyError: program 15,815,097 of
    methods,index,shape,combine, fz28b)."""
    key = ("inner", "y")
    for x in (_outer(), torch.stack([_outer(), _outer()])):
        out = x.stack_tensors(key, key, out_key=key, dim=-1)
        assert out.get(key).shape == (*x.batch_size, 3, 2)
    stacked = lazy_stack([_outer(), _outer()])
    with pytest.raises(KeyError, match="is given twice") as raised:
        stacked.stack_tensors(key, key, out_key=key, dim=-1)
    assert isinstance(raised.value, errors.KeyConflictError)
    assert stacked.get(key).shape == (2, 2, 3)  # nothing changed
    out = stacked.stack_tensors(key, key, out_key=key, dim=-1, keep_entries=True)
    assert out.get(key).shape == (2, 2, 3, 2)
