"""``copy.copy`` / ``copy.deepcopy`` of a TensorDictParams, checked on tclass and on the
peer: ``clone(recurse=False)`` (the same parameters in new nested collections) and
``clone()`` (new parameters; tensors set into the copy later stay plain tensors), and the
``*_like`` results of a locked one."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from torch import nn

import tclass


@pytest.fixture(params=["tclass", "tensordict"])
def make(request: pytest.FixtureRequest) -> Any:
    if request.param == "tensordict":
        peer = pytest.importorskip("tensordict")
        from tensordict.nn import TensorDictParams as PeerParams

        return lambda data: PeerParams(peer.TensorDict(data, []))
    return lambda data: tclass.TensorDictParams(tclass.TensorDict(data, []))


def test_copy_shares_the_parameters_in_new_collections(make: Any) -> None:
    params = make({"sub": {"w": nn.Parameter(torch.zeros(2))}, "b": torch.ones(2)})
    out = copy.copy(params)
    assert type(out) is type(params) and out["sub"] is not params["sub"]
    assert out["sub", "w"] is params["sub", "w"] and isinstance(out["b"], nn.Parameter)
    out.set("z", torch.zeros(1))
    assert "z" not in params.keys() and type(out.get("z")) is torch.Tensor


def test_deepcopy_makes_new_parameters(make: Any) -> None:
    params = make({"sub": {"w": nn.Parameter(torch.zeros(2))}, "b": torch.ones(2)})
    out = copy.deepcopy(params)
    assert out["sub", "w"] is not params["sub", "w"] and isinstance(out["sub", "w"], nn.Parameter)
    assert torch.equal(out["sub", "w"], params["sub", "w"]) and not out.is_locked
    out.set("z", torch.zeros(1))  # the copy converts nothing set later, as the peer's
    assert type(out.get("z")) is torch.Tensor


def test_like_results_of_a_locked_one_are_locked(make: Any) -> None:
    params = make({"sub": {"w": nn.Parameter(torch.zeros(2))}, "b": torch.ones(2)})
    params.lock_()
    like = [torch.zeros_like, torch.ones_like, lambda p: torch.full_like(p, 2.0)]
    for fn in like:  # as a locked TensorDict's, in both
        out = fn(params)
        assert type(out).__name__ == "TensorDict" and out.is_locked
    empty = torch.empty_like(params)
    assert type(empty).__name__ == "TensorDict"
    # the peer's empty_like alone is unlocked (README "Differences": TensorDictParams)
    assert empty.is_locked is isinstance(params, tclass.TensorDictParams)


def test_clone_holds_new_python_value_nodes_over_the_same_values(make: Any) -> None:
    """A clone of a locked TensorDictParams holding a Python value: a new node over the
    same value, so the unlocked clone changes in place without unlocking the locked
    source's node (fz42b: it shared the node, and ``split_keys(inplace=True)`` /
    ``exclude(inplace=True)`` of the clone raised the source's LockedError)."""
    params = make({"sub": {"w": nn.Parameter(torch.zeros(2))}, "b": torch.ones(2)})
    params.set_non_tensor(("sub", "v"), [1, 2])
    params.lock_()
    out = params.clone()
    assert not out.is_locked
    assert out.get(("sub", "v")) is not params.get(("sub", "v"))
    assert out.get(("sub", "v")).data is params.get(("sub", "v")).data  # (as the peer's)
    out.exclude("b", inplace=True)
    out.split_keys(["sub"], inplace=True)
    assert list(out.keys()) == [] and params.is_locked
    assert "b" in params.keys() and params.get(("sub", "v")).tolist() == [1, 2]
