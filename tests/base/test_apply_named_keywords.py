"""``apply`` given the peer's ``named`` / ``nested_keys`` / ``prefix`` (session 23, nu23d):
the peer passes them to its walker, so ``apply(fn, named=True)`` is ``named_apply``; they
were ignored with a FutureWarning and ``fn`` got the tensor alone (a TypeError)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tclass import TensorDict, lazy_stack, tensorclass


@tensorclass
class _Rec:
    x: torch.Tensor
    name: str


def _td() -> TensorDict:
    return TensorDict({"a": torch.zeros(3), "b": {"c": torch.ones(3)}, "s": "x"}, [3])


@pytest.mark.parametrize(
    ("keywords", "keys"),
    [
        ({"named": True}, ["a", "c"]),
        ({"named": True, "nested_keys": True}, ["a", ("b", "c")]),
        ({"named": True, "nested_keys": True, "prefix": ("p",)}, [("p", "a"), ("p", "b", "c")]),
        ({"named": True, "prefix": ("p",)}, ["a", "c"]),
    ],
)
def test_named_gives_the_keys(keywords: dict[str, Any], keys: list[Any]) -> None:
    seen: list[Any] = []
    out = _td().apply(lambda k, x: seen.append(k) or x + 1, **keywords)
    assert seen == keys
    assert out["b", "c"].tolist() == [2.0] * 3 and out["s"] == "x"


def test_without_named_the_others_are_ignored() -> None:
    out = _td().apply(lambda x: x + 1, nested_keys=True, prefix=("p",))
    assert out["a"].tolist() == [1.0] * 3


def test_named_with_others_and_options() -> None:
    td = _td()
    out = td.apply(lambda k, x, y: x + y if k == "a" else x, td, named=True, batch_size=[3])
    assert out["a"].tolist() == [0.0] * 3 and out["b", "c"].tolist() == [1.0] * 3
    kept = td.apply(lambda k, x: x if k == "a" else None, named=True, filter_empty=True)
    assert sorted(kept.keys()) == ["a", "s"]


def test_records_and_lazy_stacks() -> None:
    rec = _Rec(x=torch.arange(2.0), name="r", batch_size=[2])
    seen: list[Any] = []
    out = rec.apply(lambda k, x: seen.append(k) or x * 2, named=True)
    assert seen == ["x"] and out.x.tolist() == [0.0, 2.0] and out.name == "r"
    seen.clear()
    lazy_stack([_td(), _td()]).apply(lambda k, x: seen.append(k), named=True, nested_keys=True)
    assert sorted(map(str, seen)) == sorted(map(str, ["a", ("b", "c")] * 2))
