"""A hand-written in_keys/out_keys module wrapper over TensorDicts (what users write
before reaching for tensordict.nn): reads nested input keys, writes nested outputs into
the same TensorDict, chains modules, and runs under ``torch.no_grad`` and ``vmap``-free
batching of any batch shape.
"""

import torch
from torch import nn

from compat.lib import TensorDict


class KeyModule(nn.Module):
    def __init__(self, module: nn.Module, in_keys: list, out_keys: list) -> None:
        super().__init__()
        self.module = module
        self.in_keys = in_keys
        self.out_keys = out_keys

    def forward(self, td: TensorDict) -> TensorDict:
        outputs = self.module(*(td.get(key) for key in self.in_keys))
        if not isinstance(outputs, tuple):
            outputs = (outputs,)
        for key, value in zip(self.out_keys, outputs):
            td.set(key, value)
        return td


class Split(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        loc, scale = x.chunk(2, -1)
        return loc, nn.functional.softplus(scale)


def main() -> None:
    torch.manual_seed(0)
    encoder = KeyModule(nn.Linear(4, 8), [("obs", "state")], [("hidden", "h")])
    head = KeyModule(nn.Linear(8, 4), [("hidden", "h")], ["params"])
    split = KeyModule(Split(), ["params"], [("dist", "loc"), ("dist", "scale")])
    policy = nn.Sequential(encoder, head, split)

    td = TensorDict({"obs": {"state": torch.randn(5, 3, 4)}}, batch_size=[5, 3])
    out = policy(td)
    assert out is td
    assert set(td.keys(True, True)) == {
        ("obs", "state"),
        ("hidden", "h"),
        "params",
        ("dist", "loc"),
        ("dist", "scale"),
    }
    assert td["dist"].batch_size == torch.Size([5, 3])
    assert (td["dist", "scale"] > 0).all()

    # the same policy on a single step and on a flat batch
    single = policy(td[0, 0].select(("obs", "state")))
    assert single["dist", "loc"].shape == (2,)
    assert torch.allclose(single["dist", "loc"], td["dist", "loc"][0, 0], atol=1e-6)
    with torch.no_grad():
        flat = policy(td.select(("obs", "state")).reshape(-1))
    assert not flat["params"].requires_grad
    assert flat.batch_size == torch.Size([15])

    # gradients through the chain from the TensorDict outputs
    loss = td["dist", "loc"].pow(2).mean()
    loss.backward()
    assert encoder.module.weight.grad is not None
