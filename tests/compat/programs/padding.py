"""Variable-length episodes batched with ``pad_sequence`` (with masks) and ``pad``:
the collate step of sequence models and recurrent policies.
"""

import torch

from compat import lib as tensordict
from compat.lib import TensorDict, pad, pad_sequence


def episode(length: int) -> TensorDict:
    return TensorDict(
        {"obs": torch.arange(length * 2.0).reshape(length, 2), "reward": torch.ones(length)},
        batch_size=[length],
    )


def main() -> None:
    episodes = [episode(n) for n in (3, 1, 4)]
    batch = pad_sequence(episodes, return_mask=True)
    assert batch.batch_size == torch.Size([3, 4])
    assert batch["obs"].shape == (3, 4, 2)
    assert batch["reward"].sum().item() == 8.0
    assert batch["masks", "reward"].sum(1).tolist() == [3, 1, 4]
    assert batch["masks", "obs"].shape == (3, 4)
    assert torch.equal(batch["obs"][2], episodes[2]["obs"])

    # padding value and the module-level spelling
    neg = tensordict.pad_sequence(episodes, padding_value=-1.0)
    assert neg["reward"][1].tolist() == [1.0, -1.0, -1.0, -1.0]

    # pad: extend a TensorDict along its batch dims, [before, after] per dim
    td = episode(2)
    padded = pad(td, [1, 2], value=0.0)
    assert padded.batch_size == torch.Size([5])
    assert padded["reward"].tolist() == [0.0, 1.0, 1.0, 0.0, 0.0]
    assert torch.equal(padded["obs"][1:3], td["obs"])

    # a 2-d batch: pad the time dim only
    grid = TensorDict({"v": torch.ones(2, 3)}, [2, 3])
    g = pad(grid, [0, 0, 0, 2], value=-1)
    assert g.batch_size == torch.Size([2, 5])
    assert g["v"][:, 3:].eq(-1).all()

    # unpadding with the mask recovers each episode
    recovered = [batch[i][batch["masks", "reward"][i]] for i in range(3)]
    for r, e in zip(recovered, episodes):
        assert torch.equal(r["obs"], e["obs"])
