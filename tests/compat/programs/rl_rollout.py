"""An RL rollout loop written the torchrl way: TensorDicts with a nested "next" entry.

Each step reads ``td["observation"]``, writes ``td["action"]`` and a ``("next", ...)``
sub-TensorDict, and the trajectory is stacked along time. Then the usual post-processing:
returns from ``("next", "reward")``, a step_mdp-like shift, nested key listing.
"""

import torch

from compat.lib import TensorDict


class CountingEnv:
    """A toy environment: the observation counts up, reward 1 per step, done after 5."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self.count = torch.zeros(batch, 1)

    def reset(self) -> TensorDict:
        self.count.zero_()
        return TensorDict(
            {
                "observation": self.count.clone(),
                "done": torch.zeros(self.batch, 1, dtype=torch.bool),
            },
            batch_size=[self.batch],
        )

    def step(self, td: TensorDict) -> TensorDict:
        self.count += td["action"].float()
        next_td = TensorDict(
            {
                "observation": self.count.clone(),
                "reward": torch.ones(self.batch, 1),
                "done": self.count >= 5,
            },
            batch_size=[self.batch],
        )
        td["next"] = next_td
        return td


def step_mdp(td: TensorDict) -> TensorDict:
    """The next root: ``td["next"]`` without the reward, as torchrl's step_mdp does."""
    return td["next"].exclude("reward").clone()


def main() -> None:
    env = CountingEnv(batch=4)
    td = env.reset()
    steps = []
    for t in range(6):
        td["action"] = torch.ones(4, 1, dtype=torch.long)
        td = env.step(td)
        steps.append(td)
        td = step_mdp(td)
        assert set(td.keys()) == {"observation", "done"}
        assert td["observation"][0, 0].item() == t + 1

    traj = torch.stack(steps, dim=1)  # [batch, time]
    assert traj.batch_size == torch.Size([4, 6])
    assert traj["next", "reward"].shape == (4, 6, 1)
    assert traj.get(("next", "observation")).shape == (4, 6, 1)
    assert traj["next"]["observation"][0, -1, 0].item() == 6

    leaves = set(traj.keys(include_nested=True, leaves_only=True))
    assert leaves == {
        "observation",
        "done",
        "action",
        ("next", "observation"),
        ("next", "reward"),
        ("next", "done"),
    }, leaves
    all_keys = set(traj.keys(include_nested=True))
    assert "next" in all_keys and ("next", "reward") in all_keys
    assert ("next", "reward") in traj.keys(True)

    # discounted returns along time
    gamma = 0.9
    rewards = traj["next", "reward"]
    returns = torch.zeros_like(rewards)
    running = torch.zeros(4, 1)
    for t in reversed(range(traj.shape[1])):
        running = rewards[:, t] + gamma * running
        returns[:, t] = running
    traj["return"] = returns
    expected = sum(gamma**k for k in range(6))
    assert torch.allclose(traj["return"][:, 0, 0], torch.full((4,), expected))

    # the first done in each trajectory
    done = traj["next", "done"].squeeze(-1)
    first_done = done.float().argmax(dim=1)
    assert first_done.tolist() == [4, 4, 4, 4]

    # flatten batch and time to train on single transitions
    flat = traj.reshape(-1)
    assert flat.batch_size == torch.Size([24])
    assert flat["next", "reward"].shape == (24, 1)
    assert torch.equal(flat[7]["observation"], traj[1, 1]["observation"])

    # the items/values views walk the same nested structure
    for key, value in traj.items(include_nested=True, leaves_only=True):
        assert value.shape[:2] == (4, 6), key
    assert len(list(traj.values(True, True))) == 7
