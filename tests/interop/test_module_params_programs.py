"""New-user programs around modules and parameters (session 23, nu23c) that tclass ran
differently from tensordict 0.15.3: from_modules / to_module / TensorDictParams / torch.func."""

from __future__ import annotations

from pathlib import Path

import pytest
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


class _LinearParams(tclass.TensorClass):
    weight: torch.Tensor
    bias: torch.Tensor


class _WeightOnly(tclass.TensorClass):
    weight: torch.Tensor


def test_a_record_class_from_module_as_module_keeps_its_class_inside_the_params() -> None:
    linear = nn.Linear(2, 1)
    params = _LinearParams.from_module(linear, as_module=True)
    assert isinstance(params, tclass.TensorDictParams)  # a module: a holder registers it
    assert params.weight is linear.weight
    holder = nn.Module()
    holder.p = params
    assert sorted(name for name, _ in holder.named_parameters()) == ["p.bias", "p.weight"]
    detached = params.detach()  # reads give records of the class, as the peer's
    assert type(detached) is _LinearParams and not detached.weight.requires_grad
    assert torch.equal(detached.bias, linear.bias)
    assert type(params.data) is _LinearParams and type(params * 2) is _LinearParams
    ensemble = _LinearParams.from_modules(linear, nn.Linear(2, 1), as_module=True)
    assert ensemble.is_locked and type(ensemble[0]) is _LinearParams
    assert ensemble.weight.shape == (2, 1, 2)


def test_a_record_class_from_module_as_module_checks_its_fields() -> None:
    with pytest.raises(ValueError, match="bias"):  # the peer's ValueError
        _WeightOnly.from_module(nn.Linear(2, 1), as_module=True)


def test_the_parameters_of_a_record_save_as_a_record_of_its_class(tmp_path: Path) -> None:
    linear = nn.Linear(2, 1)
    params = _LinearParams.from_module(linear, as_module=True)
    saved = params.memmap(tmp_path / "p")
    assert type(saved) is _LinearParams and saved.is_memmap()
    assert torch.equal(saved.weight, linear.weight)
    loaded = _LinearParams.load_memmap(tmp_path / "p")
    assert torch.equal(loaded.bias, linear.bias)
    like = tclass.TensorDictParams(_LinearParams.from_module(linear)).memmap_like(tmp_path / "q")
    assert type(like) is _LinearParams and torch.equal(like.bias, torch.zeros(1))
