"""Reductions over collections: full reductions per leaf, reductions along batch dims
with ``dim``/``keepdim``, ``reduce=True`` to a single tensor, and statistics used for
normalisation and logging.
"""

import torch

from compat.lib import TensorDict


def main() -> None:
    a = torch.arange(12.0).reshape(3, 4)
    b = torch.arange(3.0) * 2
    td = TensorDict({"a": a, "n": {"b": b}}, batch_size=[3])

    total = td.sum()
    assert isinstance(total, TensorDict)
    assert total["a"].item() == a.sum().item()
    assert total["n", "b"].item() == b.sum().item()
    assert td.sum(reduce=True).item() == a.sum().item() + b.sum().item()

    m0 = td.mean(dim=0)
    assert m0.batch_size == torch.Size([])
    assert torch.equal(m0["a"], a.mean(0))
    assert m0["n", "b"].item() == b.mean().item()
    mk = td.mean(dim=0, keepdim=True)
    assert mk.batch_size == torch.Size([1]) and mk["a"].shape == (1, 4)

    assert torch.allclose(td.std(dim=0)["a"], a.std(0))
    assert torch.allclose(td.var(dim=0)["n", "b"], b.var(0))
    assert torch.equal(td.prod(dim=0)["n", "b"], b.prod(0))
    mx = td.max(dim=0)
    assert mx.values["a"].tolist() == a.max(0).values.tolist()
    assert mx.indices["a"].tolist() == [2, 2, 2, 2]
    values, indices = td.min(dim=0)
    assert values["n", "b"].item() == 0.0 and indices["n", "b"].item() == 0
    assert td.max()["a"].item() == 11.0
    assert torch.equal(td.amax(dim=0)["a"], a.amax(0))
    assert torch.equal(td.amin(dim=0)["a"], a.amin(0))
    assert torch.allclose(td.logsumexp(dim=0)["a"], a.logsumexp(0))
    assert torch.allclose(td.norm()["a"], a.norm())

    # nan-aware reductions
    nan = TensorDict({"v": torch.tensor([1.0, float("nan"), 3.0])}, [3])
    assert nan.nansum()["v"].item() == 4.0
    assert nan.nanmean()["v"].item() == 2.0

    # a 2-d batch reduced along each dim
    td2 = TensorDict({"x": torch.arange(6.0).reshape(2, 3)}, [2, 3])
    assert td2.sum(dim=1).batch_size == torch.Size([2])
    assert td2.sum(dim=1)["x"].tolist() == [3.0, 12.0]
    assert td2.sum(dim=(0, 1))["x"].item() == 15.0
    assert td2.mean(dim=-1)["x"].tolist() == [1.0, 4.0]

    # boolean reductions
    flags = TensorDict({"done": torch.tensor([False, True, False])}, [3])
    assert flags.any() and not flags.all()
    assert flags.any(dim=0)["done"].item() is True

    # logging: every leaf's mean as a Python float
    stats = {key: value.float().mean().item() for key, value in td.items(True, True)}
    assert stats == {"a": 5.5, ("n", "b"): 2.0}

    # torch functions reduce too
    assert torch.sum(td)["a"].item() == a.sum().item()
    assert torch.mean(td, dim=0)["n", "b"].item() == b.mean().item()
