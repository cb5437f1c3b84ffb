"""``TensorDictParams`` inside ``nn.Module``s, the way RL loss modules hold their networks'
parameters: registered with the module (``parameters()``, ``state_dict``, optimizers,
``module.to``), a detached target copy updated in place, functional calls through
``to_module``.
"""

import torch
from torch import nn

from compat.lib import TensorDict, TensorDictParams, is_tensor_collection


class DQNLoss(nn.Module):
    def __init__(self, network: nn.Module) -> None:
        super().__init__()
        self.network = network
        self.params = TensorDictParams(TensorDict.from_module(network))
        self.target_params = TensorDictParams(
            TensorDict.from_module(network).detach().clone(), no_convert=True
        )

    def forward(
        self, obs: torch.Tensor, next_obs: torch.Tensor, reward: torch.Tensor
    ) -> torch.Tensor:
        with self.params.to_module(self.network):
            q = self.network(obs).max(-1).values
        with torch.no_grad(), self.target_params.to_module(self.network):
            q_next = self.network(next_obs).max(-1).values
        return (q - (reward + 0.9 * q_next)).pow(2).mean()


def main() -> None:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    loss_fn = DQNLoss(net)
    assert isinstance(loss_fn.params, nn.Module)
    assert is_tensor_collection(loss_fn.params)
    names = dict(loss_fn.params.named_parameters())
    assert len(names) == 4
    n_net = sum(p.numel() for p in net.parameters())
    assert sum(p.numel() for p in loss_fn.params.parameters()) == n_net
    assert loss_fn.params["0", "weight"].shape == (16, 4)

    # target params are buffers (no_convert keeps plain tensors), not trained
    trainable = {id(p) for p in loss_fn.parameters()}
    assert all(id(t) not in trainable for t in loss_fn.target_params.values(True, True))
    sd = loss_fn.state_dict()
    assert any(k.startswith("params") for k in sd) and any(
        k.startswith("target_params") for k in sd
    )

    opt = torch.optim.SGD(loss_fn.params.parameters(), lr=0.1)
    obs, next_obs, reward = torch.randn(8, 4), torch.randn(8, 4), torch.randn(8)
    before = loss_fn.params["2", "bias"].detach().clone()
    target_before = loss_fn.target_params["2", "bias"].clone()
    loss = loss_fn(obs, next_obs, reward)
    opt.zero_grad()
    loss.backward()
    opt.step()
    assert not torch.equal(loss_fn.params["2", "bias"], before)
    assert torch.equal(loss_fn.target_params["2", "bias"], target_before)

    # soft update of the target from the trained params
    with torch.no_grad():
        for key, target in loss_fn.target_params.items(True, True):
            target.lerp_(loss_fn.params.get(key), 0.5)
    assert torch.allclose(
        loss_fn.target_params["2", "bias"],
        (target_before + loss_fn.params["2", "bias"].detach()) / 2,
    )

    # the module moves its TensorDictParams with it
    moved = loss_fn.to(torch.float64)
    assert moved.params["0", "weight"].dtype == torch.float64
    assert moved.target_params["0", "bias"].dtype == torch.float64
