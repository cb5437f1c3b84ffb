"""Episodes of different lengths kept as one lazy stack (a ragged time dim, as the peer
allows: batch size ``[n, -1]``): members by index, member-wise ``apply``, per-episode
returns, padded reads, and a padded dense batch for training.
"""

import torch

from compat import lib as tensordict
from compat.lib import LazyStackedTensorDict, TensorDict


def episode(length: int, offset: float) -> TensorDict:
    return TensorDict(
        {
            "obs": torch.arange(length, dtype=torch.float32).unsqueeze(-1) + offset,
            "reward": torch.ones(length),
        },
        batch_size=[length],
    )


def main() -> None:
    lengths = [3, 5, 2]
    episodes = [episode(n, 10.0 * i) for i, n in enumerate(lengths)]
    ls = tensordict.lazy_stack(episodes)
    assert isinstance(ls, LazyStackedTensorDict)
    assert ls.batch_size == torch.Size([3, -1])
    assert ls[1].batch_size == torch.Size([5])
    assert ls[2]["obs"][:, 0].tolist() == [20.0, 21.0]
    assert [ep.batch_size[0] for ep in ls.unbind(0)] == lengths

    returns = [ep["reward"].sum().item() for ep in ls.tensordicts]
    assert returns == [3.0, 5.0, 2.0]

    scaled = ls.apply(lambda x: x * 2)
    assert scaled[1]["obs"][-1, 0].item() == 28.0
    assert scaled[0].batch_size == torch.Size([3])

    padded = ls.get("reward", as_padded_tensor=True)
    assert padded.shape == (3, 5)
    assert padded.sum(1).tolist() == [3.0, 5.0, 2.0]

    dense = tensordict.pad_sequence(list(ls.unbind(0)), return_mask=True)
    assert dense.batch_size == torch.Size([3, 5])
    assert dense["masks", "reward"].sum().item() == sum(lengths)
