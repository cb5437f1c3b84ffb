"""A collection assigned to a nested field of a record with dim names takes the record's
names for the dims they share, as a TensorDict's ``set`` gives them (and the peer): an
unnamed TensorDict cast to the field's class, a record of that class, a named one kept."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorClass, TensorDict, errors, lazy_stack


class Inner(TensorClass):
    y: torch.Tensor


class Outer(TensorClass):
    x: torch.Tensor
    inner: Inner | None = None


def _outer() -> Outer:
    return Outer(x=torch.zeros(2, 3), batch_size=[2], names=["i"])


def test_an_unnamed_tensordict_cast_to_the_field_takes_the_names() -> None:
    rec = _outer()
    rec.inner = TensorDict({}, batch_size=[2])
    assert type(rec.inner) is Inner
    assert rec.inner.names == ["i"]


def test_a_record_of_more_dims_takes_the_names_of_the_shared_dims() -> None:
    rec = _outer()
    given = Inner(y=torch.zeros(2, 3), batch_size=[2, 3])
    rec.inner = given
    assert rec.inner.names == ["i", None]
    assert given.names == [None, None]  # the given record is left as it was
    assert rec.inner.y is given.y  # a named copy shares the tensors


def test_other_names_for_a_shared_dim_are_refused() -> None:
    rec = _outer()
    with pytest.raises(errors.DimNameError, match="inner"):
        rec.inner = Inner(y=torch.zeros(2), batch_size=[2], names=["k"])


@pytest.mark.parametrize("write", ["attribute", "set", "update"])
def test_a_record_over_a_named_lazy_stack_names_a_new_nested_field(write: str) -> None:
    """The field unset in every member, written whole: each member's part takes the
    stack's names (was unnamed; the peer and a lazy stack of TensorDicts name it)."""
    stack = lazy_stack([_outer(), _outer()], 1)
    stack.names = ["i", "s"]
    given = Inner(y=torch.ones(2, 2, 3), batch_size=[2, 2, 3])
    if write == "attribute":
        stack.inner = given
    elif write == "set":
        stack.set("inner", given)
    else:
        stack.update({"inner": given.to_tensordict()})
    assert stack.inner.names == ["i", "s", None]
    assert [member.inner.names for member in stack.unbind(1)] == [["i", None], ["i", None]]
    assert given.names == [None, None, None]


def test_a_lazy_stack_field_named_otherwise_is_refused() -> None:
    stack = lazy_stack([_outer(), _outer()], 1)
    stack.names = ["i", "s"]
    given = Inner(y=torch.ones(2, 2), batch_size=[2, 2], names=["k", None])
    with pytest.raises(errors.DimNameError):
        stack.inner = given
    assert stack.inner is None
