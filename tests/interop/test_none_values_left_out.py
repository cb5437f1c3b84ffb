"""``None`` Python values in the conversions that leave them out, as the peer does:
``to_dict(retain_none=False)``, ``numpy()`` and ``to_namedtuple()`` (which the peer builds
from ``to_dict(retain_none=False)``), at the top and nested, and for a per-element stack
whose values are all ``None``; a stack that holds other values too is kept."""

from __future__ import annotations

import torch

from tclass import TensorDict, stack


def _with_nones() -> TensorDict:
    return TensorDict({"a": torch.zeros(2), "n": None, "m": {"z": None, "s": "x"}}, [2])


def test_to_dict_retain_none_false_leaves_none_values_out() -> None:
    td = _with_nones()
    assert td.to_dict() == {"a": td["a"], "n": None, "m": {"z": None, "s": "x"}}
    out = td.to_dict(retain_none=False)
    assert list(out) == ["a", "m"] and out["m"] == {"s": "x"}


def test_numpy_leaves_none_values_out() -> None:
    out = _with_nones().numpy()
    assert list(out) == ["a", "m"]
    assert out["m"] == {"s": "x"}


def test_to_namedtuple_leaves_none_values_out() -> None:
    out = _with_nones().to_namedtuple()
    assert out._fields == ("a", "m")
    assert out.m._fields == ("s",) and out.m.s == "x"


def test_a_stack_of_nones_is_left_out_a_mixed_one_kept() -> None:
    first = TensorDict({"a": torch.zeros(2), "n": None, "s": None}, [2])
    second = TensorDict({"a": torch.ones(2), "n": None, "s": "x"}, [2])
    out = stack([first, second]).numpy()
    assert list(out) == ["a", "s"]
    assert out["s"] == [[None, None], ["x", "x"]]


def test_a_none_value_unsqueezed_over_no_elements_is_left_out_as_the_peer() -> None:
    # its stack over no elements holds the None of its members (the peer's reads data None)
    td = TensorDict({"a": torch.zeros(0, 2), "n": None, "s": "x"}, [0]).unsqueeze(0)
    assert td.get("n").data is None and td.get("s").data == "x"
    assert td.to_dict(retain_none=False) == {"a": td["a"], "s": [[]]}
    assert td.to_namedtuple()._fields == ("a", "s")
    assert td.to_dict()["n"] == [[]]  # kept when None values are retained


def test_numpy_leaves_a_none_value_over_no_elements_out_and_gives_plain_lists() -> None:
    # as its to_dict(retain_none=False), which the peer's numpy() is built from: the
    # None value unsqueezed over no elements is left out, nested too (program 10,004,597
    # of entries,records), and a stack's values are plain lists, not linked to the stack
    td = TensorDict({"m": {"b": torch.zeros(0, 3), "v": None}, "s": "x"}, [0, 3]).unsqueeze(1)
    out = td.numpy()
    assert list(out) == ["m", "s"] and list(out["m"]) == ["b"]
    assert out["m"]["b"].shape == (0, 1, 3)
    assert out["s"] == [] and type(out["s"]) is list
    values = TensorDict({"s": "x"}, [2]).unsqueeze(1).numpy()["s"]
    assert values == [["x"], ["x"]] and type(values) is list and type(values[0]) is list
