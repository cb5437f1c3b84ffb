"""Bringing existing dataclasses over: ``from_dataclass`` on a class and on an instance,
and tensorclasses used where dataclass tools are used (``dataclasses.fields``,
``dataclasses.replace``, ``is_dataclass``).
"""

import dataclasses

import torch

from compat import lib as tensordict
from compat.lib import is_tensorclass, tensorclass


@dataclasses.dataclass
class Config:
    weights: torch.Tensor
    steps: int = 0


@tensorclass
class Point:
    xy: torch.Tensor
    mass: torch.Tensor


def main() -> None:
    TC = tensordict.from_dataclass(Config)
    assert is_tensorclass(TC)
    inst = TC(weights=torch.zeros(3), steps=2, batch_size=[3])
    assert inst.batch_size == torch.Size([3]) and inst.steps == 2
    assert inst[1:].weights.shape == (2,)

    obj = tensordict.from_dataclass(Config(weights=torch.ones(3), steps=1))
    assert is_tensorclass(obj)
    assert torch.equal(obj.weights, torch.ones(3))

    p = Point(xy=torch.zeros(4, 2), mass=torch.ones(4), batch_size=[4])
    assert dataclasses.is_dataclass(p)
    names = [f.name for f in dataclasses.fields(p)]
    assert names == ["xy", "mass"]
    q = dataclasses.replace(p, mass=torch.full((4,), 2.0))
    assert isinstance(q, Point) and q.mass[0].item() == 2.0 and p.mass[0].item() == 1.0
    r = p.replace(mass=torch.zeros(4))
    assert isinstance(r, Point) and r.mass.sum().item() == 0.0
