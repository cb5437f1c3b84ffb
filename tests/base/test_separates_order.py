"""``separates``' key order, the peer's: its result starts as the collection's
``empty(recurse=True)`` (the nested collections and Python values in their order, at
every level), then takes the keys in the order they are given (a missing one, with
``strict=False``, in its place among them); for a lazy stack and its members alike."""

from __future__ import annotations

import torch

from tclass import TensorDict, lazy_stack


def _td() -> TensorDict:
    nested = {"b": torch.zeros(1), "c": torch.ones(1), "m": {"q": torch.zeros(1)}}
    return TensorDict({"s": "v", "n": nested, "a": torch.zeros(1)}, [1])


def test_nested_collections_come_first_then_the_keys_as_given() -> None:
    td = TensorDict({"n": {"b": torch.zeros(1)}, "a": torch.zeros(1)}, [1])
    assert list(td.clone().separates("a", "n").keys()) == ["n", "a"]
    out = td.clone().separates("zz", "n", "a", strict=False)
    assert list(out.keys()) == ["n", "zz", "a"]
    assert out["zz"] is None


def test_the_order_at_every_level() -> None:
    td = _td()
    out = td.separates(("n", "c"), "a", ("n", "m", "q"), "zz", ("n", "b"), strict=False)
    assert list(out.keys()) == ["s", "n", "a", "zz"]
    assert list(out["n"].keys()) == ["m", "c", "b"]
    assert out["s"] == "v" and list(td.keys()) == ["s"]  # the value goes with both parts


def test_a_lazy_stack_and_its_members() -> None:
    stack = lazy_stack([_td(), _td()])
    first = stack.tensordicts[0]["a"]
    out = stack.separates(("n", "c"), "a", ("n", "b"))
    assert list(out.keys()) == ["s", "n", "a"]
    assert all(list(member.keys()) == ["s", "n", "a"] for member in out.tensordicts)
    assert list(out.tensordicts[0]["n"].keys()) == ["c", "b"]  # the emptied m left out
    assert out.tensordicts[0]["a"] is first  # shared, not copied


def test_a_whole_nested_collection_keeps_its_own_order() -> None:
    # separates("n") merged n into the empty tree's n, whose nested nodes and Python
    # values came first (fuzz fz41b: ['m', 'a'] for the peer's ['a', 'm'])
    td = _td()
    b = td["n", "b"]
    out = td.separates("n")
    assert list(out.keys()) == ["s", "n"] and list(td.keys()) == ["s", "a"]
    assert list(out["n"].keys()) == ["b", "c", "m"] and out["n", "b"] is b
    stack = lazy_stack([_td(), _td()])
    out = stack.separates("n", "a")
    assert list(out.keys()) == ["s", "n", "a"] and list(stack.keys()) == ["s"]
    assert all(list(member["n"].keys()) == ["b", "c", "m"] for member in out.tensordicts)
