"""Which check refuses first an in-place math op into tensors that require grad (a
``TensorDictParams``, ``TensorDict.from_module``): torch parses the arguments before
autograd looks at the tensors, so a ``None``, a number where it takes a tensor or a
``value="x"`` is a ``TypeError`` (as the peer's, from its fused kernel) under grad mode
too, not the "leaf that requires grad" refusal (an ``InPlaceWriteError``, a ``ValueError``
and a ``RuntimeError``). The in-place rule itself stays: valid arguments are refused under
grad mode before anything is written, and written in place under ``torch.no_grad()``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

from tclass import TensorDict, TensorDictParams
from tclass.errors import InPlaceWriteError


def _params() -> TensorDictParams:
    td = TensorDict(w=nn.Parameter(torch.ones(3, 2)), b=nn.Parameter(torch.ones(3)), batch_size=[3])
    return TensorDictParams(td)


def _other() -> TensorDict:
    return TensorDict(w=torch.full((3, 2), 2.0), b=torch.full((3,), 2.0), batch_size=[3])


BAD_ARGUMENTS: dict[str, Callable[[Any], Any]] = {
    "addcdiv_(2.0, 3.0)": lambda p: p.addcdiv_(2.0, 3.0),
    "addcdiv_(td, 2.0)": lambda p: p.addcdiv_(_other(), 2.0),
    "addcdiv_(None, None)": lambda p: p.addcdiv_(None, None),
    "addcmul_(1.0, td)": lambda p: p.addcmul_(1.0, _other()),
    "addcmul_(td, td, value='x')": lambda p: p.addcmul_(_other(), _other(), value="x"),
    "addcdiv_(td, td, value=None)": lambda p: p.addcdiv_(_other(), _other(), value=None),
    "lerp_(2.0, 0.5)": lambda p: p.lerp_(2.0, 0.5),
    "lerp_(None, None)": lambda p: p.lerp_(None, None),
    "add_(None)": lambda p: p.add_(None),
    "add_(1, alpha='x')": lambda p: p.add_(1, alpha="x"),
    "mul_(None)": lambda p: p.mul_(None),
    "clamp_min_(None)": lambda p: p.clamp_min_(None),
    "maximum_(None)": lambda p: p.maximum_(None),
    "round_(decimals='x')": lambda p: p.round_(decimals="x"),
}


@pytest.mark.parametrize("grad", [True, False], ids=["grad", "no_grad"])
@pytest.mark.parametrize("write", BAD_ARGUMENTS.values(), ids=list(BAD_ARGUMENTS))
def test_arguments_torch_refuses_are_a_type_error_before_the_grad_check(
    write: Callable[[Any], Any], grad: bool
) -> None:
    params = _params()
    with torch.set_grad_enabled(grad), pytest.raises(TypeError) as caught:
        write(params)
    assert not isinstance(caught.value, InPlaceWriteError)
    assert torch.equal(params["w"].detach(), torch.ones(3, 2))  # nothing written
    assert torch.equal(params["b"].detach(), torch.ones(3))


def test_the_same_arguments_from_a_module_s_parameters() -> None:
    params = TensorDict.from_module(nn.Linear(2, 3))
    with pytest.raises(TypeError, match="tensor1|Tensor"):
        params.addcmul_(2.0, 3.0)


VALID: dict[str, tuple[Callable[[Any], Any], float]] = {
    "addcdiv_(td, td)": (lambda p: p.addcdiv_(_other(), _other()), 2.0),
    "addcmul_(td, td, value=2)": (lambda p: p.addcmul_(_other(), _other(), value=2), 9.0),
    "lerp_(td, 0.5)": (lambda p: p.lerp_(_other(), 0.5), 1.5),
    "clamp_(0, 0.5)": (lambda p: p.clamp_(0, 0.5), 0.5),
    "floordiv": (lambda p: p.__ifloordiv__(2), 0.0),
    "add_(td) with a shape torch refuses": (
        lambda p: p.add_(TensorDict(w=torch.ones(3, 4), b=torch.ones(3), batch_size=[3])),
        1.0,
    ),
}


@pytest.mark.parametrize("write", [w for w, _ in VALID.values()], ids=list(VALID))
def test_valid_arguments_are_still_refused_under_grad_mode(write: Callable[[Any], Any]) -> None:
    params = _params()
    with pytest.raises(InPlaceWriteError):
        write(params)
    assert torch.equal(params["w"].detach(), torch.ones(3, 2))


@pytest.mark.parametrize("name", [n for n in VALID if "refuses" not in n])
def test_valid_arguments_are_written_in_place_under_no_grad(name: str) -> None:
    write, expected = VALID[name]
    params = _params()
    weight = params["w"]
    with torch.no_grad():
        assert write(params) is params
    assert params["w"] is weight and weight.requires_grad
    assert torch.equal(weight.detach(), torch.full((3, 2), expected))
