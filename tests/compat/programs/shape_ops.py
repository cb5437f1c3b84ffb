"""Batch-shape operations on TensorDicts: reshape/view/permute/transpose/squeeze/
unsqueeze/flatten/unflatten/expand, with leaf feature dims untouched, and views that write
through.
"""

import torch

from compat.lib import TensorDict


def main() -> None:
    td = TensorDict(
        {"x": torch.arange(24.0).reshape(2, 3, 4), "y": {"z": torch.zeros(2, 3, 4, 5)}},
        batch_size=[2, 3],
    )
    assert td.batch_dims == 2 and td.ndim == 2
    assert td.shape == torch.Size([2, 3])
    assert td.numel() == 6

    r = td.reshape(6)
    assert r.batch_size == torch.Size([6]) and r["x"].shape == (6, 4)
    assert td.reshape(-1).batch_size == torch.Size([6])
    assert td.reshape(3, 2)["y", "z"].shape == (3, 2, 4, 5)
    assert td.reshape((3, 2)).batch_size == torch.Size([3, 2])

    v = td.view(-1)
    assert v.batch_size == torch.Size([6])
    v["x"][0, 0] = -1.0  # a view shares memory with the source
    assert td["x"][0, 0, 0].item() == -1.0
    td["x"][0, 0, 0] = 0.0
    assert td.view(3, 2).batch_size == torch.Size([3, 2])

    p = td.permute(1, 0)
    assert p.batch_size == torch.Size([3, 2])
    assert p["x"].shape == (3, 2, 4)
    assert torch.equal(p["x"], td["x"].permute(1, 0, 2))
    assert td.permute(-1, -2).batch_size == torch.Size([3, 2])
    t = td.transpose(0, 1)
    assert torch.equal(t["y", "z"], td["y", "z"].transpose(0, 1))

    u = td.unsqueeze(0)
    assert u.batch_size == torch.Size([1, 2, 3]) and u["x"].shape == (1, 2, 3, 4)
    assert td.unsqueeze(-1).batch_size == torch.Size([2, 3, 1])
    assert td.unsqueeze(-1)["x"].shape == (2, 3, 1, 4)
    s = u.squeeze(0)
    assert s.batch_size == torch.Size([2, 3])
    assert u.squeeze().batch_size == torch.Size([2, 3])
    assert td.unsqueeze(1).squeeze(1).batch_size == torch.Size([2, 3])

    f = td.flatten(0, 1)
    assert f.batch_size == torch.Size([6]) and f["y", "z"].shape == (6, 4, 5)
    back = f.unflatten(0, (2, 3))
    assert back.batch_size == torch.Size([2, 3])
    assert torch.equal(back["x"], td["x"])

    e = td[0].expand(4, 3)
    assert e.batch_size == torch.Size([4, 3])
    assert e["x"].shape == (4, 3, 4)
    assert torch.equal(e["x"][2], td["x"][0])
    e2 = td.expand(5, 2, 3)
    assert e2.batch_size == torch.Size([5, 2, 3])
    assert td.expand(torch.Size([5, 2, 3])).batch_size == torch.Size([5, 2, 3])

    # a reshape that cannot be a view still gives the right values
    nc = td.permute(1, 0).reshape(6)
    assert torch.equal(nc["x"], td["x"].permute(1, 0, 2).reshape(6, 4))

    # squeeze with a dim that is not 1 is a no-op, as in torch
    assert td.squeeze(0).batch_size == torch.Size([2, 3])

    # transpose and permute of the same dims give the same result
    assert (td.transpose(1, 0) == td.permute(1, 0)).all()
