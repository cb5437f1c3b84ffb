"""A collector that builds a lazy stack of ragged steps and saves it, then a replay buffer
of a preallocated memory-mapped lazy stack written row by row (int, slice, boolean mask
and index tensor), reloaded from its folder; the dense copy of the saved rollout after
padding.
"""

import tempfile

import torch

from compat import lib as tensordict
from compat.lib import LazyStackedTensorDict, TensorDict


def _step(t: int) -> TensorDict:
    return TensorDict(
        {"obs": torch.full((2, t + 1), float(t)), "reward": torch.full((2, 1), float(t))}, [2]
    )


def main() -> None:
    rollout = tensordict.lazy_stack([_step(t) for t in range(3)])
    assert rollout.batch_size == torch.Size([3, 2])
    with tempfile.TemporaryDirectory() as folder:
        rollout.memmap(folder)
        back = TensorDict.load_memmap(folder)
        assert isinstance(back, LazyStackedTensorDict)
        assert [m["obs"].shape[-1] for m in back.tensordicts] == [1, 2, 3]
        assert back["reward"].squeeze(-1).tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
        padded = tensordict.pad_sequence([m[0] for m in back.tensordicts], padding_value=-1.0)
        assert padded["obs"].shape == torch.Size([3, 3])
        assert padded["obs"][0].tolist() == [0.0, -1.0, -1.0]

    proto = TensorDict({"obs": torch.zeros(4, 3), "done": torch.zeros(4, dtype=torch.bool)}, [4])
    with tempfile.TemporaryDirectory() as folder:
        buffer = tensordict.lazy_stack([proto, proto.clone()]).memmap_like(folder)
        row = TensorDict({"obs": torch.ones(2, 3), "done": torch.ones(2, dtype=torch.bool)}, [2])
        buffer[:, 0] = row
        buffer[1, 1:3] = TensorDict({"obs": torch.full((2, 3), 5.0)}, [2]).update(
            {"done": torch.tensor([False, True])}
        )
        buffer[torch.tensor([True, False]), 3] = row[:1] * 0 + 7
        buffer[torch.tensor([1]), 3] = row[:1] * 0 + 9
        reloaded = TensorDict.load_memmap(folder)
        assert reloaded["obs"][..., 0].tolist() == [[1.0, 0.0, 0.0, 7.0], [1.0, 5.0, 5.0, 9.0]]
        assert reloaded["done"].tolist() == [[True, False, False, True], [True, False, True, True]]
        assert reloaded.tensordicts[1]["obs"].sum().item() == 3.0 + 30.0 + 27.0


if __name__ == "__main__":
    main()
