"""A new user's conversions, printing and structure edits over TensorDicts, records with
Python values and nested records, lazy stacks and memory-mapped collections: ``to_dict`` /
``from_dict`` round trips, ``tolist``, ``from_any``, struct arrays, ``from_dataclass``,
what ``print`` shows, ``keys`` with ``sort`` / ``is_leaf``, ``flatten_keys`` /
``unflatten_keys``, ``rename_key_``, ``select(strict=False)``, ``pop`` / ``popitem`` /
``setdefault`` / ``del``, ``empty(recurse=True)``, ``filter_empty_``,
``update(keys_to_update=)`` and ``apply`` / ``named_apply`` with their keywords.
"""

import dataclasses
import tempfile
from typing import Any, Optional

import numpy as np
import torch

from compat.lib import (
    LazyStackedTensorDict,
    MetaData,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    lazy_stack,
    tensorclass,
)


@tensorclass
class Inner:
    z: torch.Tensor
    tag: str


@tensorclass
class Step:
    x: torch.Tensor
    name: str
    inner: Inner
    meta: Any = None
    extra: Optional[torch.Tensor] = None


@dataclasses.dataclass
class Plain:
    x: torch.Tensor
    y: int


def _td() -> TensorDict:
    return TensorDict(
        {"a": torch.zeros(3, 4), "b": {"c": torch.ones(3, dtype=torch.int64)}, "s": "txt"}, [3]
    )


def _step(n: int = 2) -> Step:
    inner = Inner(z=torch.ones(n, 2), tag="t", batch_size=[n])
    return Step(x=torch.arange(float(n)), name="r", inner=inner, meta={"k": 1}, batch_size=[n])


def conversions() -> None:
    d = _td().to_dict()
    assert sorted(d) == ["a", "b", "s"] and d["s"] == "txt" and isinstance(d["b"], dict)
    back = TensorDict.from_dict(d, batch_size=[3])
    assert back["s"] == "txt" and (back.exclude("s") == _td().exclude("s")).all()
    assert TensorDict.from_dict(d, auto_batch_size=True).batch_size == (3,)
    assert TensorDict.from_dict({"a": torch.zeros(3, 4, 5)}, batch_dims=2).batch_size == (3, 4)
    assert TensorDict.from_dict({"a": np.arange(3), "n": 2.5})["n"] == 2.5
    assert _td().tolist(convert_tensors=True)[0]["a"] == [0.0] * 4
    assert _td().tolist()[1]["s"] == "txt"
    assert NonTensorData("x").to_dict() == "x"  # a value node gives its value
    assert NonTensorStack("a", "b").to_dict() == ["a", "b"]
    assert MetaData({"k": 1}).to_dict() == {"k": 1}
    # from_any: collections and tensors as they are, other objects too
    td = _td()
    assert TensorDict.from_any(td) is td and TensorDict.from_any(None) is None
    assert TensorDict.from_any("x") == "x"
    assert TensorDict.from_any({"a": torch.zeros(2, 3)}, auto_batch_size=True).batch_size == (2, 3)
    nested = TensorDict.from_any((torch.zeros(2), {"q": torch.ones(2)}))
    assert sorted(nested.keys(True, True), key=str) == [("1", "q"), "0"]
    # structured arrays: text fields hold at least 10 characters
    array = TensorDict({"n": torch.arange(2), "s": "x"}, [2]).to_struct_array()
    assert array.dtype["s"] == np.dtype("U10")
    array["s"][0] = "longer one"
    assert array["s"].tolist() == ["longer one", "x"]
    plain = TensorDict({"a": torch.arange(3), "b": torch.ones(3, 2)}, [3]).to_struct_array()
    assert TensorDict.from_struct_array(plain)["b"].shape == (3, 2)
    # namedtuples
    nt = _td().exclude("s").to_namedtuple()
    assert nt._fields == ("a", "b") and nt.b.c.tolist() == [1, 1, 1]
    assert TensorDict.from_namedtuple(nt).batch_size == ()


def records() -> None:
    step = _step()
    d = step.to_dict()
    assert d["name"] == "r" and d["meta"] == {"k": 1} and d["inner"]["tag"] == "t"
    assert d["extra"] is None and "extra" not in step.to_dict(retain_none=False)
    again = Step.from_dict(d)
    assert isinstance(again.inner, Inner) and again.inner.tag == "t"  # (meta: a TensorDict
    # in the peer, the dict in tclass: README, "Casting follows the annotation")
    assert Step.from_dict(d, batch_size=[2]).batch_size == (2,)
    assert [k for k, _ in step.items(True, True, sort=True)] == [("inner", "z"), "x"]
    flat = step.to_tensordict().flatten_keys(".")
    assert "inner.z" in flat.keys()
    # tensorclass() of a dataclass prints as a record
    cls = tensorclass(Plain)
    rec = cls(x=torch.zeros(3), y=1, batch_size=[3])
    assert repr(rec) == "Plain(batch_size=[3], fields={x: f32[], y: int})"
    stacked = lazy_stack([_step(), _step()])
    assert stacked.name.tolist() == [["r"] * 2] * 2 and str(
        stacked.to_dict()["inner"]["tag"]
    ) == str([["t"] * 2] * 2)
    with tempfile.TemporaryDirectory() as folder:
        step.memmap(folder)
        loaded = Step.load_memmap(folder)
        assert loaded.to_dict()["meta"] == {"k": 1} and loaded.inner.tag == "t"
        assert str(loaded.apply(lambda t: t + 1).x.tolist()) == "[1.0, 2.0]"


def printing() -> None:
    td = TensorDict({"a": torch.zeros(3, 4), "n": {"c": torch.ones(3, dtype=torch.int64)}}, [3])
    assert str(td) == repr(td) == "TensorDict(batch_size=[3], fields={a: f32[4], n: {c: i64[]}})"
    lazy = repr(lazy_stack([td, td]))
    assert lazy.startswith("LazyStackedTensorDict(batch_size=[2,3], stack_dim=0, fields={")
    assert str(TensorDict({"s": "x", "m": MetaData(1)}, [])) == (
        "TensorDict(batch_size=[], fields={m: MetaData, s: str})"
    )


def keys_and_edits() -> None:
    td = TensorDict({"z": 1, "a": {"y": 1, "b": 2}, "m": 3}, [])
    assert list(td.keys(True, sort=True)) == ["a", ("a", "b"), ("a", "y"), "m", "z"]
    assert list(td.keys(True, True, is_leaf=lambda c: c is TensorDict)) == ["a"]
    assert [type(v).__name__ for v in td.values(True, True, sort=True)] == ["Tensor"] * 4
    assert sorted(td.flatten_keys("/").keys()) == ["a/b", "a/y", "m", "z"]
    assert td.flatten_keys("/").unflatten_keys("/")["a", "b"] == 2
    td.rename_key_(("a", "b"), "top")
    assert sorted(td.keys(True, True), key=str) == [("a", "y"), "m", "top", "z"]
    assert list(td.select("m", "missing", strict=False).keys()) == ["m"]
    assert sorted(td.exclude("a", "missing").keys()) == ["m", "top", "z"]
    assert td.pop("missing", 7) == 7 and td.pop("m") == 3
    key, _ = td.popitem()
    assert key not in td.keys()
    assert td.setdefault("q", torch.tensor(5)) == 5 and td.setdefault("q", 0) == 5
    del td["a", "y"]
    assert td["a"].is_empty()
    assert "a" not in td.filter_empty_().keys()
    shell = _td().empty(recurse=True)
    assert list(shell.keys(True)) == ["b", "s"] and shell.batch_size == (3,)  # values kept
    full = _td()
    full.update({"a": torch.ones(3, 4), "new": torch.ones(3)}, keys_to_update=["a"])
    assert full["a"].sum() == 12 and "new" not in full.keys()
    lazy = lazy_stack([_td(), _td()])
    assert isinstance(lazy, LazyStackedTensorDict)
    del lazy["b", "c"]
    assert "c" not in lazy[0]["b"].keys()
    lazy.rename_key_("a", "w")
    assert sorted(lazy[1].keys()) == ["b", "s", "w"]


def applying() -> None:
    td = _td()
    seen: list[Any] = []
    td.apply(lambda k, x: seen.append(k), named=True, nested_keys=True)
    assert seen == ["a", ("b", "c")]
    seen.clear()
    td.named_apply(lambda k, x: seen.append(k), nested_keys=True, prefix=("p",))
    assert seen == [("p", "a"), ("p", "b", "c")]
    assert list(td.apply(lambda x: None, filter_empty=False).keys()) == ["b", "s"]
    partial = TensorDict({"a": torch.ones(3, 4)}, [3])
    summed = td.apply(lambda x, y: x + y, partial, default=0)
    assert summed["a"].sum() == 12 and summed["b", "c"].sum() == 3
    kept = td.named_apply(lambda k, x: x if k == "a" else None, filter_empty=True)
    assert sorted(kept.keys()) == ["a", "s"]
    with tempfile.TemporaryDirectory() as folder:
        _td().memmap(folder)
        loaded = TensorDict.load_memmap(folder)
        assert loaded.apply(lambda x: x + 1)["a"].sum() == 12


def main() -> None:
    conversions()
    records()
    printing()
    keys_and_edits()
    applying()


if __name__ == "__main__":
    main()
