"""Building a ``TensorDictParams`` from Python structures (fz28f), checked on tclass and
on the peer: ``TensorDictParams.from_dict`` wraps the TensorDict built (its float tensors
made parameters); ``params.from_dict_instance`` gives a TensorDictParams whose leaves are
the tensors given (converted only when written later, as the instance converts)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

import tclass


@pytest.fixture(params=["tclass", "tensordict"])
def lib(request: pytest.FixtureRequest) -> Any:
    if request.param == "tensordict":
        return pytest.importorskip("tensordict")
    return tclass


def test_from_dict_wraps_and_converts(lib: Any) -> None:
    params = lib.TensorDictParams.from_dict({"w": torch.ones(2), "n": {"i": torch.ones(2).long()}})
    assert type(params) is lib.TensorDictParams and params.batch_size == torch.Size([])
    assert type(params["w"]) is nn.Parameter and type(params["n", "i"]) is torch.Tensor
    assert [name for name, _ in params.named_parameters()] == ["w"]


def test_from_dict_instance_keeps_its_class_and_the_leaves_given(lib: Any) -> None:
    template = lib.TensorDictParams(lib.TensorDict({"w": torch.zeros(2)}, []))
    out = template.from_dict_instance({"w": torch.ones(2), "b": torch.ones(2)}, batch_size=[])
    assert type(out) is lib.TensorDictParams and out is not template
    assert type(out["w"]) is torch.Tensor and torch.equal(out["w"], torch.ones(2))
    assert list(out.named_parameters()) == [] and not out.is_locked
    out.set("c", torch.zeros(2))  # a later write converts, as the template would
    assert type(out["c"]) is nn.Parameter
    auto = template.from_dict_instance({"w": torch.ones(3)}, auto_batch_size=True)
    assert type(auto) is lib.TensorDictParams and auto.batch_size == torch.Size([3])


def test_from_dict_instance_of_its_own_dict(lib: Any) -> None:
    """``params.from_dict_instance(params.to_dict())``: the parameters come back as
    they were (the dict holds them), in a TensorDictParams."""
    template = lib.TensorDictParams(
        lib.TensorDict({"w": torch.zeros(2), "n": {"b": torch.ones(1)}}, [])
    )
    out = template.from_dict_instance(template.to_dict(), batch_size=[])
    assert type(out) is lib.TensorDictParams
    assert out["w"] is template["w"] and out["n", "b"] is template["n", "b"]
