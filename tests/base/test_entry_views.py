"""The views ``items()`` / ``values()`` give without options (tclass._base.implemented.
_entry_views) and ``keys()``: on every kind, what both the peer's ``dict_items`` views
(TensorDicts, records) and its generators (lazy stacks, files, ``TensorDictParams``,
``TypedTensorDict``) accept, and ``in`` answered as the peer's."""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, NonTensorData, TensorClass, TensorDict

from collection_kinds import KINDS  # noqa: E402


class Inner(TensorClass):
    x: torch.Tensor


class Outer(TensorClass):
    a: torch.Tensor
    inner: Inner
    label: str


class Typed(tclass.TypedTensorDict):
    a: torch.Tensor
    b: torch.Tensor


def _td() -> TensorDict:
    td = TensorDict({"a": torch.zeros(3), "n": {"b": torch.ones(3)}}, batch_size=[3])
    td.set_non_tensor("s", "x")
    td["t"] = torch.arange(3.0)
    return td


def _collections() -> list[Any]:
    td = _td()
    rec = Outer(
        a=torch.zeros(3), inner=Inner(x=torch.ones(3), batch_size=[3]), label="x", batch_size=[3]
    )
    return [
        td,
        LazyStackedTensorDict(*_td().unbind(0)),
        rec,
        tclass.TensorDictParams(TensorDict({"a": torch.zeros(3), "t": torch.ones(3)}, [3])),
        Typed(a=torch.zeros(3), b=torch.ones(3), batch_size=[3]),
    ]


@pytest.mark.parametrize("collection", _collections(), ids=lambda c: type(c).__name__)
def test_next_takes_the_entries_and_iteration_goes_on_from_there(collection: Any) -> None:
    keys = list(collection.keys())
    items = collection.items()
    first = next(items)
    assert first[0] == keys[0]
    assert [key for key, _ in items] == keys[1:]  # on from where next() left it, as a generator
    with pytest.raises(StopIteration):
        next(items)
    values = collection.values()
    assert next(values) is not None and len(list(values)) == len(keys) - 1
    # A view next() never touched iterates again and again, as dict_items.
    fresh = collection.items()
    assert [key for key, _ in fresh] == [key for key, _ in fresh] == keys
    assert len(fresh) == len(collection.values()) == len(keys)


def test_in_items_answers_as_dict_items() -> None:
    td = _td()
    items = td.items()
    s, a = td.get("s"), td.get("a")
    assert ("a", a) in items and ("s", s) in items and ("n", td.get("n")) in items
    # A Python value's node is not the plain value, as in the peer (and nothing raises).
    assert ("s", "x") not in items and ("s", "y") not in items and ("s", None) not in items
    assert ("zz", 1) not in items and (("n", "b"), td.get(("n", "b"))) not in items
    assert "a" not in items and ["a", a] not in items and (1, 2, 3) not in items
    one = TensorDict(t=torch.zeros(1)).items()  # a tensor of one element compares
    assert ("t", torch.ones(1)) not in one and ("t", torch.zeros(1)) in one
    with pytest.raises(RuntimeError, match="ambiguous"):  # as the peer (torch's own error)
        ("a", torch.zeros(3)) in items  # noqa: B015


def test_in_values_answers_as_dict_values() -> None:
    td = _td()
    values = td.values()
    assert td.get("a") in values  # (a later entry meets `a == entry` first, as in the peer)
    assert "x" not in values and None not in values and "a" not in values
    rec = _collections()[2]
    assert "x" not in rec.values() and None not in rec.values()  # (was an AttributeError)


def test_a_record_compared_with_a_plain_object_is_not_equal() -> None:
    """(Was an AttributeError: a record wrapped the storage's NotImplemented.)"""
    inner = Inner(x=torch.ones(3), batch_size=[3])
    assert (inner == "x") is False and (inner != "x") is True and (inner == None) is False  # noqa: E711
    assert (inner == 1).x.all() and not (inner != 1).x.any()


def test_keys_is_a_set_as_dict_keys() -> None:
    td = _td()
    assert td.keys() == {"a", "n", "s", "t"} == dict.fromkeys(td.keys()).keys()
    assert td.keys() != ["a", "n", "s", "t"]  # as dict.keys() and the peer's: no list
    assert td.keys(True, True) == {"a", ("n", "b"), "t"}
    assert td.keys() & {"a"} == {"a"} and list(reversed(td.keys())) == ["t", "s", "n", "a"]
    lazy = _collections()[1]
    assert lazy.keys() == td.keys() and sorted(lazy.keys()) == ["a", "n", "s", "t"]


# --- the peer -------------------------------------------------------------------------

_PROBES: dict[str, Callable[[Any], Any]] = {
    "items first pair": lambda c: next(iter(c.items())) in c.items(),
    "items key alone": lambda c: next(iter(c.keys())) in c.items(),
    "items unknown key": lambda c: ("zz", 1) in c.items(),
    "items a list": lambda c: ["a", 1] in c.items(),
    "items a str value": lambda c: ("s", "hi") in c.items(),
    "values a str": lambda c: "hi" in c.values(),
    "values None": lambda c: None in c.values(),
    "values first": lambda c: next(iter(c.values())) in c.values(),
    "len items": lambda c: len(list(c.items())),
    "keys a": lambda c: "a" in c.keys(),
    "keys nested key": lambda c: ("n", "c") in c.keys(True),
    "keys nested key 1": lambda c: ("a",) in c.keys(True),
    "keys unknown nested": lambda c: ("n", "zz") in c.keys(True, True),
    "keys leaf in leaves": lambda c: ("n", "c") in c.keys(True, True),
    "len keys": lambda c: len(c.keys()),
    "len nested keys": lambda c: len(c.keys(True)),
    "len leaves": lambda c: len(c.keys(True, True)),
    "sorted keys": lambda c: sorted(c.keys(True), key=str),
    "keys == set": lambda c: c.keys() == set(c.keys()),
    "keys == list": lambda c: c.keys() == list(c.keys()),
    "keys == dict keys": lambda c: c.keys() == dict.fromkeys(c.keys()).keys(),
}
# Where the peer answers, tclass gives the same answer; where it raises, tclass raises the
# same builtin or answers (the peer's generators give no `len`, its `in` on a lazy stack
# reads every entry, a ragged one too). Its keys views other than a TensorDict's plain
# keys() are compared by identity ("keys == set"): tclass compares their members.
_SKIPPED = {
    (probe, kind)
    for probe in ("keys == set", "keys == dict keys")
    for kind in ("lazy", "ragged", "h5")
}


def _answer(lib: ModuleType, kind: str, tmp: Path, probe: Callable[[Any], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        collection = KINDS[kind](lib, tmp)
        try:
            return probe(collection)
        except Exception as error:  # noqa: BLE001 - the error is the answer
            return error


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("probe", sorted(_PROBES))
def test_views_answer_as_the_peers(kind: str, probe: str, tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    if kind == "h5" and importlib.util.find_spec("h5py") is None:
        pytest.skip("needs h5py")
    if any(probe == name and kind.startswith(prefix) for name, prefix in _SKIPPED):
        pytest.skip("the peer compares this view by identity")
    theirs = _answer(peer, kind, tmp_path, _PROBES[probe])
    ours = _answer(tclass, kind, tmp_path, _PROBES[probe])
    if isinstance(theirs, Exception):
        builtin = next(c for c in type(theirs).__mro__ if c.__module__ == "builtins")
        assert not isinstance(ours, Exception) or isinstance(ours, builtin), (ours, theirs)
    else:
        assert ours == theirs, (ours, theirs)


def test_items_of_a_python_value_node_as_the_peer() -> None:
    value = TensorDict({"s": NonTensorData("x", batch_size=[2])}, [2])
    assert [type(v) for v in value.values()] == [NonTensorData]
    assert ("s", value.get("s")) in value.items() and ("s", "x") not in value.items()
