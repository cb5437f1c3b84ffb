"""In-place writes autograd refuses into parameters: ``fill_`` of a leaf that requires
grad, and ``apply(inplace=True)`` into a view with no element of one (fz30i, issue 27)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tclass import TensorDict, TensorDictParams, errors


def _linear(seed: int) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(2, 3)


def test_fill_of_a_parameter_is_an_in_place_write_error() -> None:
    # a RuntimeError as torch's and a ValueError as the peer's lazy stacks raise
    # (program 16,103,962 of features,math,index: torch's bare RuntimeError before)
    stack = TensorDict.from_modules(_linear(1), _linear(2), lazy_stack=True)
    nested = TensorDict({"n": {"w": nn.Parameter(torch.ones(3))}}, [])
    for collection, key in ((stack, "weight"), (nested, "n"), (nested, ("n", "w"))):
        with pytest.raises(errors.InPlaceWriteError, match="fill_.*requires grad") as caught:
            collection.fill_(key, 0)
        assert isinstance(caught.value, RuntimeError) and isinstance(caught.value, ValueError)
    assert (nested["n", "w"] == 1).all()  # nothing filled
    with torch.no_grad():
        nested.fill_(("n", "w"), 0)
    assert (nested["n", "w"] == 0).all()
    plain = TensorDict({"w": torch.ones(3, requires_grad=False)}, [])
    assert (plain.fill_("w", 2)["w"] == 2).all()


def test_apply_in_place_into_an_empty_view_of_parameters_is_refused() -> None:
    # torch refuses an in-place write into a view of a leaf that requires grad even of
    # no element, as the peer (program 16,054,417 of methods,features,entries,records)
    for params in (
        TensorDict.from_modules(_linear(1), _linear(2), as_module=True),
        TensorDictParams(TensorDict({"w": nn.Parameter(torch.ones(2, 3))}, [2])),
    ):
        view = params[3:-1]
        assert view.batch_size == torch.Size([0])
        with pytest.raises(errors.InPlaceWriteError, match="Failed to update"):
            view.apply(lambda v: v * 0, inplace=True)
    # a parameter that itself holds no element still takes it (as the peer)
    empty = TensorDictParams(TensorDict({"a": torch.zeros(2, 0)}, [2, 0]))
    assert empty.apply(lambda t: t + 1, inplace=True) is empty


def test_stacked_params_view_without_grad_mode_takes_the_write() -> None:
    params = TensorDict.from_modules(_linear(1), _linear(2), as_module=True)
    with torch.no_grad():
        view = params[3:-1]
        assert view.apply(lambda v: v * 0, inplace=True) is view
