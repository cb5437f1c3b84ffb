"""A subscript by an instance of a ``str`` subclass (``numpy.str_``, a ``str`` enum) names
the entry, as a plain string does and as in the peer: ``td[np.str_("a")]`` reads ``"a"``,
``td[np.str_("w")] = t`` sets ``"w"`` (the peer keeps the subclass instance as the key;
tclass's keys stay plain strings, as ``set`` already made them). Before: an
``IndexTypeError`` taking the string for a batch index (nu26a)."""

from __future__ import annotations

import enum

import numpy as np
import pytest
import torch

from tclass import TensorDict, lazy_stack


class _Key(str, enum.Enum):
    A = "a"
    W = "w"


def _td() -> TensorDict:
    return TensorDict(
        a=torch.arange(2.0), n=TensorDict(c=torch.ones(2), batch_size=[2]), batch_size=[2]
    )


_KINDS = {
    "td": _td,
    "view": lambda: torch.cat([_td(), _td() + 10])[1:3],
    "lazy": lambda: lazy_stack([_td()[0], _td()[1]]),
}


@pytest.mark.parametrize("kind", sorted(_KINDS))
@pytest.mark.parametrize("make_key", [np.str_, _Key], ids=["numpy", "enum"])
def test_subscript_by_str_subclass_reads_and_writes_the_entry(kind: str, make_key: object) -> None:
    d = _KINDS[kind]()
    a = make_key("a")  # type: ignore[operator]
    w = make_key("w")  # type: ignore[operator]
    assert torch.equal(d[a], d["a"])
    d[w] = torch.full((2,), 7.0)
    assert list(d.keys()) == ["a", "n", "w"]
    assert all(type(k) is str for k in d.keys())
    assert torch.equal(d["w"], torch.full((2,), 7.0))
    d[a] = torch.zeros(2)
    assert torch.equal(d["a"], torch.zeros(2))
    del d[w]
    assert list(d.keys()) == ["a", "n"]


def test_view_write_through_str_subclass_key_reaches_the_source() -> None:
    big = _td()
    v = big[0:2]
    v[np.str_("a")] = torch.full((2,), 3.0)
    assert torch.equal(v["a"], torch.full((2,), 3.0))


def test_nested_key_with_str_subclass_parts_still_works() -> None:
    d = _td()
    assert torch.equal(d[np.str_("n"), np.str_("c")], torch.ones(2))
    d[np.str_("n"), "z"] = torch.zeros(2)
    assert ("n", "z") in d.keys(True)
