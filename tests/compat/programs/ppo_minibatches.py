"""A PPO-style update loop over a [envs, time] rollout TensorDict: GAE computed from
``("next", ...)`` entries along time, advantages normalised, the rollout flattened,
shuffled and split into minibatches, a clipped loss computed per minibatch.
"""

import torch
from torch import nn

from compat.lib import TensorDict


def gae(td: TensorDict, gamma: float = 0.99, lmbda: float = 0.95) -> TensorDict:
    reward = td["next", "reward"]
    done = td["next", "done"].float()
    value = td["state_value"]
    next_value = td["next", "state_value"]
    delta = reward + gamma * next_value * (1 - done) - value
    adv = torch.zeros_like(delta)
    running = torch.zeros_like(delta[:, 0])
    for t in reversed(range(td.shape[1])):
        running = delta[:, t] + gamma * lmbda * (1 - done[:, t]) * running
        adv[:, t] = running
    td.set("advantage", adv)
    td.set("value_target", adv + value)
    return td


def main() -> None:
    torch.manual_seed(0)
    n_envs, horizon, obs_dim = 4, 16, 3
    policy = nn.Linear(obs_dim, 2)
    critic = nn.Linear(obs_dim, 1)
    obs = torch.randn(n_envs, horizon + 1, obs_dim)
    with torch.no_grad():
        rollout = TensorDict(
            {
                "observation": obs[:, :-1],
                "action": torch.randint(2, (n_envs, horizon)),
                "sample_log_prob": torch.full((n_envs, horizon), -0.7),
                "state_value": critic(obs[:, :-1]),
                "next": {
                    "observation": obs[:, 1:],
                    "reward": torch.randn(n_envs, horizon, 1),
                    "done": torch.zeros(n_envs, horizon, 1, dtype=torch.bool),
                    "state_value": critic(obs[:, 1:]),
                },
            },
            batch_size=[n_envs, horizon],
        )
    rollout["next", "done"][:, -1] = True
    gae(rollout)
    assert rollout["advantage"].shape == (n_envs, horizon, 1)
    adv = rollout["advantage"]
    rollout["advantage"] = (adv - adv.mean()) / (adv.std() + 1e-8)

    flat = rollout.reshape(-1)
    assert flat.batch_size == torch.Size([n_envs * horizon])
    opt = torch.optim.Adam(list(policy.parameters()) + list(critic.parameters()), lr=1e-3)
    n_updates = 0
    for _epoch in range(2):
        perm = torch.randperm(flat.shape[0])
        for mb in flat[perm].split(16):
            assert mb.batch_size == torch.Size([16])
            logits = policy(mb["observation"])
            log_prob = (
                torch.log_softmax(logits, -1).gather(-1, mb["action"].unsqueeze(-1)).squeeze(-1)
            )
            ratio = (log_prob - mb["sample_log_prob"]).exp()
            advantage = mb["advantage"].squeeze(-1)
            loss_pi = -torch.min(ratio * advantage, ratio.clamp(0.8, 1.2) * advantage).mean()
            loss_v = (critic(mb["observation"]) - mb["value_target"]).pow(2).mean()
            loss = loss_pi + 0.5 * loss_v
            opt.zero_grad()
            loss.backward()
            opt.step()
            n_updates += 1
    assert n_updates == 8

    # logging the rollout: means of selected keys
    logs = rollout.select("advantage", ("next", "reward")).apply(lambda x: x.mean(), batch_size=[])
    assert logs["next", "reward"].shape == ()
    assert abs(logs["advantage"].item()) < 1e-5
