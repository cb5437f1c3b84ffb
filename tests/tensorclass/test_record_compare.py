"""``==`` and ``!=`` between records, then ``all()`` (issue 29, "(a == b).all()"): a
Python value compared with the other side's is one bool per element (on the record's
device, when it has one), a field unset on both sides is left out, and ``all()`` reads
every bool leaf; the same results as the peer's."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch

import tclass

tensordict = pytest.importorskip("tensordict")


@pytest.fixture(params=["tclass", "peer"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    return tclass if request.param == "tclass" else tensordict


def _cls(lib: ModuleType) -> Any:
    @lib.tensorclass
    class Step:
        obs: torch.Tensor
        env: str
        extra: torch.Tensor | None = None

    return Step


@pytest.mark.parametrize("device", [None, "cpu"])
def test_equal_records(lib: ModuleType, device: str | None) -> None:
    step = _cls(lib)
    a = step(torch.arange(6.0).reshape(3, 2), "pong", batch_size=[3], device=device)
    b = step(torch.arange(6.0).reshape(3, 2), "pong", batch_size=[3], device=device)
    same = a == b
    assert type(same) is step and same.extra is None
    assert same.env.dtype is torch.bool and same.env.tolist() == [True, True, True]
    assert same.env.device == torch.device("cpu") and same.env.is_contiguous()
    assert (a == b).all() and not (a != b).any()
    same.env[0] = False  # a tensor of its own: the next result is unchanged
    assert (a == b).env.tolist() == [True, True, True]


def test_records_that_differ(lib: ModuleType) -> None:
    step = _cls(lib)
    a = step(torch.zeros(3, 2), "pong", batch_size=[3])
    other_env = step(torch.zeros(3, 2), "breakout", batch_size=[3])
    assert (a == other_env).env.tolist() == [False, False, False]
    assert not (a == other_env).all() and (a != other_env).env.all()
    obs = torch.zeros(3, 2)
    obs[2, 1] = 1.0  # the last element of the last leaf
    other_obs = step(obs, "pong", batch_size=[3])
    assert not (a == other_obs).all()
    assert (a == other_obs).obs.tolist() == [[True, True], [True, True], [True, False]]
