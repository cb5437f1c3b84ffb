"""An ensemble of modules of different architectures kept as a lazy stack of their own
parameters (``from_modules(..., lazy_stack=True)``), each member swapped into a module of
its own shape, trained through the modules' optimizer; and parameters read into a record
class with ``as_module=True``, saved and loaded back as that record.
"""

import tempfile

import torch
from torch import nn

from compat import lib as tensordict
from compat.lib import tensorclass


@tensorclass
class LinearParams:
    weight: torch.Tensor
    bias: torch.Tensor


def main() -> None:
    torch.manual_seed(0)
    members = [nn.Linear(3, 1), nn.Linear(3, 1, bias=False), nn.Sequential(nn.Linear(3, 1))]
    params = tensordict.from_modules(*members, lazy_stack=True)
    assert params.batch_size == torch.Size([3]) and params.is_locked
    assert sorted(params[0].keys()) == ["bias", "weight"]
    assert sorted(params[1].keys()) == ["weight"]
    assert params[2]["0", "weight"] is members[2][0].weight

    x = torch.ones(4, 3)
    shells = [nn.Linear(3, 1), nn.Linear(3, 1, bias=False), nn.Sequential(nn.Linear(3, 1))]
    optimizer = torch.optim.SGD([p for m in members for p in m.parameters()], lr=0.1)
    loss = torch.zeros(())
    for member, shell in zip(params.tensordicts, shells):
        with member.to_module(shell):
            loss = loss + shell(x).pow(2).mean()
    loss.backward()  # the gradients reach the members' own parameters
    assert all(p.grad is not None for m in members for p in m.parameters())
    before = members[1].weight.detach().clone()
    optimizer.step()
    assert not torch.equal(members[1].weight, before)

    linear = nn.Linear(3, 2)
    record_params = LinearParams.from_module(linear, as_module=True)
    assert record_params.weight is linear.weight
    with tempfile.TemporaryDirectory() as folder:
        saved = record_params.memmap_like(folder)
        assert isinstance(saved, LinearParams)
        assert torch.equal(saved.bias, torch.zeros(2))
