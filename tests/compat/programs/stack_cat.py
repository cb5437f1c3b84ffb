"""Stacking and concatenating TensorDicts: ``torch.stack``/``torch.cat`` and the library
functions, along several dims, nested entries included, with ``out=``; and ``unbind``/
``split``/``chunk`` as their inverses.
"""

import torch

from compat import lib as tensordict
from compat.lib import TensorDict


def make(i: int) -> TensorDict:
    return TensorDict(
        {"obs": torch.full((3, 2), float(i)), "meta": {"step": torch.full((3,), i)}},
        batch_size=[3],
    )


def main() -> None:
    tds = [make(i) for i in range(4)]
    st = torch.stack(tds)
    assert st.batch_size == torch.Size([4, 3])
    assert st["obs"].shape == (4, 3, 2)
    assert st["meta", "step"][:, 0].tolist() == [0, 1, 2, 3]
    st1 = torch.stack(tds, dim=1)
    assert st1.batch_size == torch.Size([3, 4])
    assert st1["meta", "step"][0].tolist() == [0, 1, 2, 3]
    st_last = torch.stack(tds, -1)
    assert st_last.batch_size == torch.Size([3, 4])
    assert torch.equal(tensordict.stack(tds, 0)["obs"], st["obs"])

    ct = torch.cat(tds)
    assert ct.batch_size == torch.Size([12])
    assert ct["meta", "step"].tolist() == [i for i in range(4) for _ in range(3)]
    assert torch.equal(tensordict.cat(tds, 0)["obs"], ct["obs"])
    ct2 = torch.cat([st, st], dim=1)
    assert ct2.batch_size == torch.Size([4, 6])

    # out= writes into an existing TensorDict
    out = TensorDict(
        {"obs": torch.zeros(4, 3, 2), "meta": {"step": torch.zeros(4, 3, dtype=torch.long)}},
        batch_size=[4, 3],
    )
    torch.stack(tds, 0, out=out)
    assert torch.equal(out["obs"], st["obs"])

    # inverses
    parts = st.unbind(0)
    assert len(parts) == 4 and all(p.batch_size == torch.Size([3]) for p in parts)
    assert parts[2]["meta", "step"].tolist() == [2, 2, 2]
    cols = st.unbind(1)
    assert len(cols) == 3 and cols[0].batch_size == torch.Size([4])
    assert torch.unbind(st, 1)[1]["obs"].shape == (4, 2)

    halves = ct.split(6)
    assert [h.batch_size[0] for h in halves] == [6, 6]
    uneven = ct.split([2, 10])
    assert [h.batch_size[0] for h in uneven] == [2, 10]
    assert uneven[1]["meta", "step"][0].item() == 0
    assert [h.batch_size[0] for h in torch.split(ct, 5)] == [5, 5, 2]
    chunks = ct.chunk(3)
    assert [c.batch_size[0] for c in chunks] == [4, 4, 4]
    assert [c.batch_size[1] for c in st.chunk(3, dim=1)] == [1, 1, 1]
    assert len(torch.chunk(ct, 4)) == 4

    rebuilt = torch.cat(ct.split(5), 0)
    assert (rebuilt == ct).all()
    assert (torch.stack(st.unbind(1), 1) == st).all()

    # stacking sub-TensorDicts that were indexed out of a bigger one
    rows = [st[i, :2] for i in range(4)]
    assert torch.stack(rows).batch_size == torch.Size([4, 2])

    # stacking zero-dim TensorDicts (one per step) into a trajectory
    steps = [TensorDict({"r": torch.tensor(float(t))}, []) for t in range(5)]
    traj = torch.stack(steps)
    assert traj.batch_size == torch.Size([5])
    assert traj["r"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
