"""Multi-agent data: a root batch [envs] with an ``agents`` sub-TensorDict of batch
[envs, n_agents], as MARL libraries lay it out; shape ops on the root carry the nested
batch, per-agent reductions, and stacking along time.
"""

import torch

from compat.lib import TensorDict


def main() -> None:
    n_envs, n_agents = 3, 2
    td = TensorDict(
        {
            "agents": TensorDict(
                {
                    "obs": torch.randn(n_envs, n_agents, 5),
                    "reward": torch.ones(n_envs, n_agents, 1),
                },
                batch_size=[n_envs, n_agents],
            ),
            "state": torch.randn(n_envs, 7),
            "done": torch.zeros(n_envs, 1, dtype=torch.bool),
        },
        batch_size=[n_envs],
    )
    assert td["agents"].batch_size == torch.Size([n_envs, n_agents])
    assert td[0]["agents"].batch_size == torch.Size([n_agents])
    assert td[1:]["agents", "obs"].shape == (2, n_agents, 5)

    # team reward: sum over the agent dim of the nested TensorDict
    team = td["agents", "reward"].sum(-2)
    assert team.shape == (n_envs, 1) and (team == n_agents).all()
    mean_obs = td["agents"].apply(lambda x: x.mean(1), batch_size=[n_envs])
    assert mean_obs["obs"].shape == (n_envs, 5)

    # a time dimension in front
    traj = torch.stack([td, td.clone()], dim=1)
    assert traj.batch_size == torch.Size([n_envs, 2])
    assert traj["agents"].batch_size == torch.Size([n_envs, 2, n_agents])
    flat = traj.reshape(-1)
    assert flat["agents"].batch_size == torch.Size([n_envs * 2, n_agents])
    assert traj.unsqueeze(0)["agents"].batch_size == torch.Size([1, n_envs, 2, n_agents])

    # writing one agent's actions across all envs
    td["agents", "action"] = torch.zeros(n_envs, n_agents, dtype=torch.long)
    td["agents"][:, 1]["action"].fill_(3)
    assert td["agents", "action"][:, 1].tolist() == [3, 3, 3]
    td["agents"][:, 0] = td["agents"][:, 1]
    assert (td["agents", "action"] == 3).all()

    # expanding the shared state to every agent
    td["agents", "state"] = td["state"].unsqueeze(1).expand(n_envs, n_agents, 7)
    assert td["agents", "state"].shape == (n_envs, n_agents, 7)
    assert torch.equal(td["agents", "state"][:, 0], td["state"])

    # the per-agent view, agents first
    per_agent = td["agents"].transpose(0, 1)
    assert per_agent.batch_size == torch.Size([n_agents, n_envs])
    assert [a.batch_size for a in per_agent.unbind(0)] == [torch.Size([n_envs])] * n_agents
