"""A Python value set through a ``TensorDictParams`` of a record takes the record's
class rules, as the peer's (which sets it through the record it holds): ``autocast``
converts it, a field's constraints refuse it. Before, ``params.set("n", "3")``
stored the string (the peer: the int 3)."""

from __future__ import annotations

from typing import Annotated

import annotated_types as at
import pytest
import torch

from tclass import TensorDictParams, errors, tensorclass


@tensorclass(autocast=True)
class Cast:
    x: torch.Tensor
    n: int = 0


@tensorclass
class Bounded:
    x: torch.Tensor
    k: Annotated[int, at.Ge(0)] = 0


def test_autocast_converts_a_python_value_set_through_params() -> None:
    params = TensorDictParams(Cast(x=torch.zeros(3), n="5", batch_size=[3]))
    params.set("n", "3")
    assert params.get("n") == 3 and type(params.get("n")) is int
    assert isinstance(params["x"], torch.nn.Parameter)  # the tensors stay parameters
    params.set("x", torch.ones(3))
    assert isinstance(params["x"], torch.nn.Parameter) and (params["x"] == 1).all()


def test_a_python_value_set_through_params_meets_the_field() -> None:
    params = TensorDictParams(Bounded(x=torch.zeros(3), batch_size=[3]))
    with pytest.raises(errors.FieldSpecError, match="Ge|ge=0"):
        params.set("k", -1)
    assert params.get("k") == 0
    params.set("k", 4)
    assert params.get("k") == 4
