"""A record's constructor names its nested collections as ``TensorDict(..., names=)``
names its entries (and as the peer's record constructor does): a nested collection that
already names a dim they share otherwise is refused (before, the record renamed it, and
the collection given with it), one that fits gets the names on a copy, and a record built
without names takes those of a nested collection that names a shared dim."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tclass import TensorClass, TensorDict, errors


class Inner(TensorClass):
    b: torch.Tensor


class Outer(TensorClass):
    a: torch.Tensor
    inner: Inner


class Loose(TensorClass):
    a: torch.Tensor
    inner: Any = None


def _inner(names: list[str | None]) -> Inner:
    return Inner(b=torch.arange(6.0).reshape(2, 3), batch_size=[2, 3], names=names)


@pytest.mark.parametrize("cls", [Outer, Loose])
@pytest.mark.parametrize("names", [["x", "y"], [None, "q"]])
def test_a_nested_record_named_otherwise_is_refused(cls: Any, names: list[str | None]) -> None:
    inner = _inner(["p", None])
    with pytest.raises(errors.DimNameError, match="cannot store 'inner'") as caught:
        cls(a=torch.zeros(2, 3), inner=inner, batch_size=[2, 3], names=names)
    assert isinstance(caught.value, RuntimeError)  # what the peer raises
    assert inner.names == ["p", None]  # left as it was


@pytest.mark.parametrize("cls", [Outer, Loose])
def test_a_nested_record_that_fits_takes_the_names_on_a_copy(cls: Any) -> None:
    inner = _inner(["p", None])
    rec = cls(a=torch.zeros(2, 3), inner=inner, batch_size=[2, 3], names=["p", "q"])
    assert rec.names == ["p", "q"]
    assert rec.inner.names == ["p", "q"]
    assert inner.names == ["p", None]
    assert rec.inner.b.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


@pytest.mark.parametrize("names", [None, [None, None]])
def test_a_record_without_names_takes_the_nested_ones(names: Any) -> None:
    rec = Outer(a=torch.zeros(2, 3), inner=_inner(["p", None]), batch_size=[2, 3], names=names)
    assert rec.names == ["p", None]
    assert rec.inner.names == ["p", None]
    assert rec.permute(1, 0).names == [None, "p"]


def test_a_nested_tensordict_named_otherwise_is_refused_as_by_a_tensordict() -> None:
    nested = TensorDict({"b": torch.zeros(2, 3)}, [2, 3], names=["p", "q"])
    with pytest.raises(errors.DimNameError):
        TensorDict({"inner": nested}, [2, 3], names=["x", "y"])
    with pytest.raises(errors.DimNameError):
        Loose(a=torch.zeros(2, 3), inner=nested, batch_size=[2, 3], names=["x", "y"])
    assert nested.names == ["p", "q"]


def test_unnamed_records_and_tensors_only_are_unchanged() -> None:
    rec = Outer(a=torch.zeros(2, 3), inner=_inner([None, None]), batch_size=[2, 3])
    assert rec.names == [None, None] and rec.inner.names == [None, None]
    inner = _inner([None, None])
    named = Outer(a=torch.zeros(2, 3), inner=inner, batch_size=[2, 3], names=["x", "y"])
    assert named.inner.names == ["x", "y"]
    assert inner.names == [None, None]  # the record given is left unnamed, as in the peer
    named.inner.b[0, 0] = 7.0  # a copy of the node, sharing the tensors
    assert inner.b[0, 0] == 7.0
