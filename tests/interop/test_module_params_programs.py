"""New-user programs around modules and parameters (session 23, nu23c) that tclass ran
differently from tensordict 0.15.3: from_modules / to_module / TensorDictParams / torch.func."""

from __future__ import annotations

import torch
from torch import nn

import tclass
from tclass import LazyStackedTensorDict


def test_from_modules_lazy_stack_of_different_architectures_keeps_each_modules_tensors() -> None:
    # the peer's lazy stack takes modules whose parameters differ (keys, nesting, shapes)
    modules = [nn.Linear(2, 2), nn.Linear(2, 2, bias=False), nn.Sequential(nn.Linear(3, 1))]
    params = tclass.from_modules(*modules, lazy_stack=True)
    assert isinstance(params, LazyStackedTensorDict) and params.is_locked
    assert params.batch_size == (3,)
    assert sorted(params[0].keys()) == ["bias", "weight"]
    assert sorted(params[1].keys()) == ["weight"]
    assert params[1]["weight"] is modules[1].weight
    assert params[2]["0", "weight"] is modules[2][0].weight
    assert list(params.keys(True, True)) == []  # no key every member holds
    fresh = nn.Linear(2, 2, bias=False)
    with params[1].to_module(fresh):
        assert fresh.weight is modules[1].weight
    out = fresh(torch.ones(1, 2))  # its own parameters back after the block
    assert out.shape == (1, 2) and fresh.weight is not modules[1].weight
