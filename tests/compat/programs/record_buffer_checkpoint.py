"""A replay buffer of tensorclass transitions preallocated as zeros (``Cls(...,
batch_size=[N])``), filled row by row with a label each, sampled by index and by mask,
priorities written back through a mask, moved to disk with ``memmap_()`` and reopened and
written again; its tensors' state dict checkpointed with ``torch.save`` /
``torch.load(weights_only=True)``; and a consolidated copy split into minibatches.
"""

import tempfile

import torch

from compat.lib import TensorDict, tensorclass


@tensorclass
class Transition:
    obs: torch.Tensor
    action: torch.Tensor
    priority: torch.Tensor
    env: str = "none"


def _step(t: int) -> Transition:
    return Transition(
        obs=torch.full((3,), float(t)),
        action=torch.tensor(t % 4),
        priority=torch.tensor(1.0),
        env=f"env{t % 2}",
        batch_size=[],
    )


def _empty(n: int) -> Transition:
    return Transition(
        obs=torch.zeros(n, 3),
        action=torch.zeros(n, dtype=torch.long),
        priority=torch.zeros(n),
        env="none",
        batch_size=[n],
    )


def main() -> None:
    size = 6
    buffer = _empty(size)
    for t in range(8):
        buffer[t % size] = _step(t)
    assert buffer.obs[:, 0].tolist() == [6.0, 7.0, 2.0, 3.0, 4.0, 5.0]
    assert buffer.env == ["env0", "env1", "env0", "env1", "env0", "env1"]
    sample = buffer[torch.tensor([5, 0, 0])]
    assert sample.action.tolist() == [1, 2, 2] and sample.env == ["env1", "env0", "env0"]
    high = buffer.obs[:, 0] > 4
    chosen = buffer[high]
    chosen.priority = chosen.obs[:, 0] / 10
    buffer[high] = chosen
    assert torch.allclose(buffer.priority, torch.tensor([0.6, 0.7, 1.0, 1.0, 1.0, 0.5]))
    assert buffer.env[0] == "env0" and buffer.action[1].item() == 3

    with tempfile.TemporaryDirectory() as folder:
        buffer.memmap_(folder)
        buffer[2] = _step(20)
        buffer.priority[3] = 9.0
        reopened = Transition.load_memmap(folder)
        assert reopened.obs[:, 0].tolist() == [6.0, 7.0, 20.0, 3.0, 4.0, 5.0]
        assert reopened.priority[3].item() == 9.0 and reopened.env[2] == "env0"
        reopened[4] = _step(41)
        assert reopened.env[4] == "env1"
        assert Transition.load_memmap(folder).action[4].item() == 1

        tensors = TensorDict(
            {"obs": reopened.obs, "stats": {"priority": reopened.priority}}, [size]
        )
        torch.save(tensors.state_dict(), folder + "/ckpt.pt")
        state = torch.load(folder + "/ckpt.pt", weights_only=True)
        fresh = TensorDict(
            {"obs": torch.zeros(size, 3), "stats": {"priority": torch.zeros(size)}}, [size]
        )
        fresh.load_state_dict(state)
        assert fresh["obs"][:, 0].tolist() == [6.0, 7.0, 20.0, 3.0, 41.0, 5.0]
        assert fresh["stats", "priority"][3].item() == 9.0

    packed = TensorDict(
        {"batch": buffer.to_tensordict(), "step": torch.tensor(8)}, []
    ).consolidate()
    assert packed.is_consolidated()
    rows = packed["batch"]
    minibatches = rows.split(4)
    assert [m.batch_size for m in minibatches] == [torch.Size([4]), torch.Size([2])]
    assert minibatches[1]["obs"][:, 0].tolist() == [41.0, 5.0]
    assert minibatches[0]["env"] == ["env0", "env1", "env0", "env1"]


if __name__ == "__main__":
    main()
