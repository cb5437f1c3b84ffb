"""A reduction's ``dim`` tuple holding something other than an int (a dim name, a bool, a
float) is a ``TypeError`` (``OperandError``), as the peer's and torch's ``sum(dim=...)``
raise; a single such value already was. An int out of range stays a ``DimError``."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tclass import TensorDict, errors


def _named() -> TensorDict:
    return TensorDict({"a": torch.ones(2, 3)}, [2, 3], names=["x", "y"])


@pytest.mark.parametrize("dim", [("x", "y"), ("x",), ["y"], (0, "y"), (True,), (0.5,)])
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "std", "nansum"])
def test_a_dim_tuple_of_non_ints_is_a_type_error(dim: Any, op: str) -> None:
    with pytest.raises(errors.OperandError, match="dim must be a tuple of ints") as caught:
        getattr(_named(), op)(dim=dim)
    assert isinstance(caught.value, TypeError)


def test_an_int_out_of_range_stays_a_dim_error() -> None:
    with pytest.raises(errors.DimError, match="dim 5 is out of range"):
        _named().sum(dim=(0, 5))


def test_int_dims_still_reduce() -> None:
    out = _named().sum(dim=(0, 1))
    assert out.batch_size == torch.Size([]) and out["a"].item() == 6.0
    assert _named().sum(dim=(1,)).names == ["x"]
