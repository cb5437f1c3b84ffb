"""Tensorclasses that hold other collections: a ``TensorDict`` field with extra batch
dims, an ``Any`` field, nested tensorclasses inside TensorDicts, and a TensorDict of
tensorclasses stacked and indexed together.
"""

from typing import Any

import torch

from compat.lib import TensorDict, tensorclass


@tensorclass
class Observation:
    image: torch.Tensor
    extras: TensorDict


@tensorclass
class Loose:
    payload: Any
    x: torch.Tensor


def main() -> None:
    obs = Observation(
        image=torch.zeros(4, 3, 8, 8),
        extras=TensorDict({"depth": torch.zeros(4, 8, 8), "ids": torch.arange(4)}, [4]),
        batch_size=[4],
    )
    assert isinstance(obs.extras, TensorDict)
    assert obs[1:].extras["ids"].tolist() == [1, 2, 3]
    assert obs.get(("extras", "depth")).shape == (4, 8, 8)
    obs.extras["mask"] = torch.ones(4, dtype=torch.bool)
    assert "mask" in obs.extras.keys()

    loose = Loose(payload={"k": [1, 2]}, x=torch.zeros(2), batch_size=[2])
    assert loose.payload == {"k": [1, 2]}
    loose2 = Loose(payload=torch.ones(2, 3), x=torch.zeros(2), batch_size=[2])
    assert loose2[0].payload.shape == (3,)

    # a TensorDict holding tensorclasses
    td = TensorDict({"obs": obs, "reward": torch.ones(4)}, [4])
    assert isinstance(td["obs"], Observation)
    assert isinstance(td[0]["obs"], Observation)
    assert td["obs"].image.shape == (4, 3, 8, 8)
    assert td["obs", "image"].shape == (4, 3, 8, 8)
    stacked = torch.stack([td, td])
    assert isinstance(stacked["obs"], Observation)
    assert stacked["obs"].extras["ids"].shape == (2, 4)
    assert ("obs", "extras", "depth") in stacked.keys(True, True)
    cloned = td.clone()
    assert isinstance(cloned["obs"], Observation)
    cloned["obs"].image += 1
    assert td["obs"].image.sum().item() == 0.0
