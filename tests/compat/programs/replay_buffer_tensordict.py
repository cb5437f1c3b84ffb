"""A prioritized replay buffer over a TensorDict storage, as RL libraries write it.

The storage is a TensorDict allocated with ``torch.zeros`` leaves and nested keys; writes
use index tensors with wrap-around, sampling uses ``torch.multinomial`` on priorities kept
in the same TensorDict, and priorities are updated in place through indexing.
"""

import torch

from compat.lib import TensorDict


def make_storage(capacity: int) -> TensorDict:
    return TensorDict(
        {
            "observation": torch.zeros(capacity, 4),
            "action": torch.zeros(capacity, dtype=torch.long),
            "next": {
                "observation": torch.zeros(capacity, 4),
                "reward": torch.zeros(capacity, 1),
                "done": torch.zeros(capacity, 1, dtype=torch.bool),
            },
            "priority": torch.ones(capacity),
        },
        batch_size=[capacity],
    )


def make_data(n: int, offset: int) -> TensorDict:
    obs = torch.arange(offset, offset + n).float().unsqueeze(-1).expand(n, 4)
    return TensorDict(
        {
            "observation": obs,
            "action": torch.arange(offset, offset + n) % 3,
            "next": TensorDict(
                {
                    "observation": obs + 1,
                    "reward": torch.full((n, 1), 0.5),
                    "done": torch.zeros(n, 1, dtype=torch.bool),
                },
                batch_size=[n],
            ),
        },
        batch_size=[n],
    )


def main() -> None:
    capacity = 16
    storage = make_storage(capacity)
    cursor = 0
    for offset in (0, 10, 20):
        data = make_data(10, offset)
        idx = (torch.arange(10) + cursor) % capacity
        data["priority"] = storage["priority"].max().expand(10).clone()
        storage[idx] = data
        cursor = (cursor + 10) % capacity
    assert cursor == 14
    # slots 0..13 were last written by offsets 16..29 (wrapped), 14..15 by 14..15
    assert storage["observation"][:, 0].tolist() == [
        float(x) for x in list(range(16, 30)) + [14, 15]
    ]
    assert (storage["next", "observation"] == storage["observation"] + 1).all()

    gen = torch.Generator().manual_seed(1)
    storage["priority"][3] = 100.0  # in-place write through the getter
    idx = torch.multinomial(storage["priority"], 32, replacement=True, generator=gen)
    batch = storage[idx]
    assert batch.batch_size == torch.Size([32])
    assert (idx == 3).sum() > 16
    assert torch.equal(batch["next", "observation"], batch["observation"] + 1)

    # TD error -> new priorities, written back through the sampled indices
    td_error = (batch["next", "reward"].squeeze(-1) - 0.25).abs()
    storage["priority"][idx] = td_error + 1e-3
    assert torch.allclose(storage["priority"][idx], torch.full((32,), 0.25 + 1e-3))
    storage.set_at_("priority", torch.full((2,), 9.0), torch.tensor([0, 1]))
    assert storage.get_at("priority", 1).item() == 9.0

    # a sub-TensorDict written with nested-key setitem
    storage[idx[:4]] = batch[:4].update({"action": torch.full((4,), 7)})
    assert (storage["action"][idx[:4]] == 7).all()

    # sample without replacement and split into minibatches
    perm = torch.randperm(capacity, generator=gen)
    minibatches = storage[perm].split(4)
    assert len(minibatches) == 4
    assert all(mb.batch_size == torch.Size([4]) for mb in minibatches)
    assert sorted(torch.cat([mb["observation"][:, 0] for mb in minibatches]).tolist()) == sorted(
        storage["observation"][:, 0].tolist()
    )

    # the whole batch on another dtype for a model
    half = batch.select("observation", ("next", "observation")).to(torch.float64)
    assert half["observation"].dtype == torch.float64
    assert half["next", "observation"].dtype == torch.float64
    assert set(half.keys(True, True)) == {"observation", ("next", "observation")}
