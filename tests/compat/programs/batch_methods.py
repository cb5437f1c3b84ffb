"""Batch-dim methods used in data pipelines: frame stacking with ``roll``/``repeat``/
``repeat_interleave``, ``gather`` along time, ``flip`` for reversed returns, ``narrow``,
``movedim``/``swapdims``, ``expand_as``, ``masked_select``, ``split_keys``.
"""

import torch

from compat.lib import TensorDict


def main() -> None:
    t = torch.arange(12.0).reshape(3, 4)
    td = TensorDict({"x": t.clone(), "n": {"y": t.clone().unsqueeze(-1)}}, [3, 4])

    assert torch.equal(td.roll(1, 1)["x"], t.roll(1, 1))
    assert torch.equal(td.flip(1)["n", "y"], t.flip(1).unsqueeze(-1))
    assert torch.equal(td.repeat(2, 1)["x"], t.repeat(2, 1))
    assert td.repeat(2, 1).batch_size == torch.Size([6, 4])
    assert torch.equal(td.repeat_interleave(2, dim=0)["x"], t.repeat_interleave(2, dim=0))
    assert torch.equal(td.narrow(1, 1, 2)["x"], t.narrow(1, 1, 2))
    assert torch.equal(td.movedim(0, 1)["x"], t.movedim(0, 1))
    assert torch.equal(td.swapdims(0, 1)["n", "y"], t.swapdims(0, 1).unsqueeze(-1))

    idx = torch.tensor([[0, 0], [3, 1], [2, 2]])
    g = td.gather(1, idx)
    assert g.batch_size == torch.Size([3, 2])
    assert torch.equal(g["x"], t.gather(1, idx))

    assert td.expand_as(torch.zeros(2, 3, 4)).batch_size == torch.Size([2, 3, 4])

    mask = t > 5
    sel = td.masked_select(mask)
    assert sel.batch_size == torch.Size([int(mask.sum())])
    assert torch.equal(sel["x"], t[mask])

    # frame stacking: the last 3 observations for every step
    obs = TensorDict({"pixels": torch.arange(5.0)}, [5])
    frames = torch.stack([obs.roll(k, 0) for k in range(3)], -1)
    assert frames.batch_size == torch.Size([5, 3])
    assert frames["pixels"][4].tolist() == [4.0, 3.0, 2.0]

    # split keys into groups
    a, b = td.split_keys(["x"])
    assert list(a.keys()) == ["x"] and list(b.keys()) == ["n"]
