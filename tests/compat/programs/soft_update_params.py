"""Target-network soft updates on parameter TensorDicts (DDPG/SAC/DQN style): parameters
extracted with ``from_module``, a target copy updated with ``mul_``/``add_``/``lerp_`` and
``_foreach``-like whole-collection math, then written back with ``to_module``.
"""

import torch
from torch import nn

from compat.lib import TensorDict


def main() -> None:
    torch.manual_seed(0)
    online = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    target = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

    online_params = TensorDict.from_module(online)
    target_params = TensorDict.from_module(target)
    assert set(online_params.keys(True, True)) == {
        ("0", "weight"),
        ("0", "bias"),
        ("2", "weight"),
        ("2", "bias"),
    }
    # the extracted tensors are the module's own parameters
    assert online_params["0", "weight"] is online[0].weight

    # hard copy: target <- online
    target_params.data.copy_(online_params.data)
    assert torch.equal(target[0].weight, online[0].weight)

    # the online network learns something
    with torch.no_grad():
        for p in online.parameters():
            p.add_(1.0)

    tau = 0.1
    before = target[2].bias.detach().clone()
    with torch.no_grad():
        target_params.mul_(1 - tau).add_(online_params, alpha=tau)
    assert torch.allclose(target[2].bias, before * (1 - tau) + online[2].bias * tau)

    # the same with lerp_ on detached data
    before = target[0].weight.detach().clone()
    target_params.data.lerp_(online_params.data, tau)
    assert torch.allclose(target[0].weight, before + tau * (online[0].weight - before))

    # functional call with an alternative set of parameters
    zeros = online_params.detach().clone().zero_()
    x = torch.randn(3, 4)
    with zeros.to_module(online):
        out = online(x)
    assert torch.equal(out, torch.zeros(3, 2))
    assert not torch.equal(online(x), torch.zeros(3, 2))  # restored on exit

    # parameter norms and a manual gradient step, all through the TensorDict
    loss = online(x).pow(2).sum()
    loss.backward()
    grads = online_params.apply(lambda p: p.grad)
    assert grads["2", "bias"].shape == (2,)
    sq_norm = sum(g.pow(2).sum() for g in grads.values(True, True))
    assert sq_norm > 0
    with torch.no_grad():
        online_params.data.sub_(grads * 0.01)
    assert online[0].weight.grad is not None
