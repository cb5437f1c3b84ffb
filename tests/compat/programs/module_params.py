"""Functional use of modules through TensorDicts of parameters: ``from_module``,
``to_module`` as a context manager (restored on exit, also on error), parameter
surgery by key, and copying weights between two networks of the same shape.
"""

import torch
from torch import nn

from compat.lib import TensorDict, from_module


def main() -> None:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    params = TensorDict.from_module(net)
    assert params["0", "weight"].shape == (4, 3)
    assert isinstance(params["0", "weight"], nn.Parameter)
    assert from_module(net)["2", "bias"].shape == (1,)

    # a module with buffers
    bn = nn.BatchNorm1d(4)
    bn_state = TensorDict.from_module(bn)
    assert "running_mean" in bn_state.keys() and "weight" in bn_state.keys()
    as_data = TensorDict.from_module(bn, as_module=False)
    assert set(as_data.keys()) == set(bn_state.keys())

    x = torch.randn(5, 3)
    base = net(x)

    # run with other parameters, then get the originals back
    perturbed = params.detach().clone()
    perturbed["2", "bias"] += 10.0
    with perturbed.to_module(net):
        moved = net(x)
    assert torch.allclose(moved, base + 10.0, atol=1e-5)
    assert torch.allclose(net(x), base)

    # restored even when the body raises
    try:
        with perturbed.to_module(net):
            raise ValueError("boom")
    except ValueError:
        pass
    assert torch.allclose(net(x), base)

    # to_module without a context manager swaps for good
    other = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    params.detach().clone().to_module(other)
    assert torch.allclose(other(x), base)

    # grads flow to the params held in the TensorDict
    trainable = params.detach().clone().apply(lambda p: p.requires_grad_())
    with trainable.to_module(net):
        loss = net(x).sum()
    loss.backward()
    assert trainable["0", "weight"].grad is not None
    assert trainable["0", "weight"].grad.shape == (4, 3)

    # count parameters
    total = sum(p.numel() for p in params.values(True, True))
    assert total == sum(p.numel() for p in net.parameters())
