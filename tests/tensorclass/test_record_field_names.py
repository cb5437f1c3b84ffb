"""A collection stored in a field of a record with named batch dims takes the record's
dim names for the dims they share, as a TensorDict's ``set`` names it (and the peer's
records, which set through their TensorDict), by every write path."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tclass import TensorClass, TensorDict, errors


class Inner(TensorClass):
    y: torch.Tensor


class Outer(TensorClass):
    x: Any
    inner: Inner | None = None


def _named() -> Outer:
    return Outer(torch.zeros(2, 3), batch_size=[2, 3]).refine_names("i", "j")


@pytest.mark.parametrize("how", ["attr", "set", "update"])
def test_tensordict_in_a_field_takes_the_names(how: str) -> None:
    rec, value = _named(), TensorDict({}, batch_size=[2, 3, 4])
    if how == "attr":
        rec.x = value
    elif how == "set":
        rec.set("x", value)
    else:
        rec.update({"x": value})
    assert rec.x.names == ["i", "j", None]
    assert value.names == [None, None, None]  # a named copy, the value given unchanged


def test_record_and_cast_dict_take_the_names() -> None:
    rec = _named()
    rec.inner = Inner(torch.ones(2, 3), batch_size=[2, 3])
    assert rec.inner.names == ["i", "j"]
    rec.inner = TensorDict({"y": torch.ones(2, 3)}, batch_size=[2, 3])  # cast to Inner
    assert type(rec.inner) is Inner and rec.inner.names == ["i", "j"]


def test_names_that_do_not_fit_are_refused() -> None:
    rec = _named()
    with pytest.raises(errors.DimNameError, match="cannot store 'x'"):
        rec.x = TensorDict({}, batch_size=[2, 3], names=["q", None])
    assert torch.equal(rec.x, torch.zeros(2, 3))  # left as it was


def test_unnamed_record_leaves_names_alone() -> None:
    rec = Outer(torch.zeros(2), batch_size=[2])
    rec.x = TensorDict({}, batch_size=[2], names=["k"])
    assert rec.x.names == ["k"]
