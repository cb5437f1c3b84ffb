"""A small rollout collector and replay buffer, written for tensordict.

The program uses tensordict's Python-value and declaration features the way an RL user
writes them: a config dataclass converted with ``from_dataclass``, records with class
options (``autocast``, ``frozen``, ``tensor_only``), a self-referential field, a buffer
preallocated with ``None`` fields and filled by index, strings and per-step tags inside
TensorDicts, ``NonTensorStack``/``MetaData`` values and the ``set_list_to_stack`` switch.
It runs unchanged with tclass after replacing ``from tensordict import`` by
``from tclass import`` (``tests/project/test_programs.py`` runs it with both).
"""

import dataclasses
from typing import Optional

import torch
from tensordict import (
    MetaData,
    NonTensorData,
    NonTensorStack,
    TensorClass,
    TensorDict,
    from_dataclass,
    lazy_stack,
    set_list_to_stack,
    tensorclass,
)


@dataclasses.dataclass
class EnvConfig:
    name: str
    obs_dim: int
    horizon: int
    gamma: float = 0.99


class Step(TensorClass, autocast=True):
    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    env: str
    next: Optional["Step"] = None


@tensorclass(frozen=True)
class Stats:
    returns: torch.Tensor
    lengths: torch.Tensor
    label: str = "eval"


class Normalizer(TensorClass["tensor_only", "shadow"]):
    mean: torch.Tensor
    std: torch.Tensor


class ToyEnv:
    """A deterministic environment: the observation drifts with the action."""

    def __init__(self, config: EnvConfig) -> None:
        self.config = config
        self.state = torch.zeros(config.obs_dim)
        self.t = 0
        self.resets = 0

    def reset(self) -> torch.Tensor:
        self.state = torch.linspace(-1.0, 1.0, self.config.obs_dim) + 0.25 * self.resets
        self.t = 0
        self.resets += 1
        return self.state.clone()

    def step(self, action: torch.Tensor) -> tuple[torch.Tensor, float, bool]:
        self.state = self.state * 0.9 + action.float() * 0.1
        self.t += 1
        reward = float(-self.state.abs().sum())
        return self.state.clone(), reward, self.t >= self.config.horizon


def collect(env: ToyEnv, episodes: int) -> list[Step]:
    """One record of batch [horizon] per episode, with the next observation nested."""
    out = []
    for episode in range(episodes):
        obs = env.reset()
        rows = []
        done = False
        while not done:
            action = torch.tensor((env.t + episode) % 3 - 1)
            next_obs, reward, done = env.step(action)
            rows.append(
                Step(
                    obs=obs,
                    action=action,
                    reward=reward,
                    done=done,
                    env=env.config.name,
                    next=Step(
                        obs=next_obs, action=None, reward=None, done=None, env=env.config.name
                    ),
                )
            )
            obs = next_obs
        out.append(torch.stack(rows))
    return out


def discounted(rewards: torch.Tensor, gamma: float) -> torch.Tensor:
    running = torch.zeros(())
    values = torch.zeros_like(rewards)
    for t in range(rewards.shape[0] - 1, -1, -1):
        running = rewards[t] + gamma * running
        values[t] = running
    return values


def main() -> dict:
    config = from_dataclass(EnvConfig("toy", 4, 5), nocast=True)
    env = ToyEnv(EnvConfig(config.name, config.obs_dim, config.horizon))
    episodes = collect(env, 3)

    # A buffer preallocated with None fields: the first write creates the storage.
    capacity = 3 * config.horizon
    buffer = Step(obs=None, action=None, reward=None, done=None, env=None, batch_size=[capacity])
    for i, episode in enumerate(episodes):
        buffer[i * config.horizon : (i + 1) * config.horizon] = episode
    returns = torch.stack([discounted(ep.reward, config.gamma)[0] for ep in episodes])

    stats = Stats(
        returns=returns, lengths=torch.tensor([len(ep) for ep in episodes]), batch_size=[3]
    )
    try:
        stats.label = "train"
        frozen_ok = False
    except dataclasses.FrozenInstanceError:
        frozen_ok = True

    norm = Normalizer(mean=buffer.obs.mean(0), std=buffer.obs.std(0) + 1e-6)
    normalized = (buffer.obs - norm.mean) / norm.std

    # Python values inside a TensorDict: a string, per-episode tags, metadata.
    log = TensorDict({"return": returns, "env": config.name}, batch_size=[3])
    log["tag"] = ["first", "second", "third"]
    log["run"] = MetaData("run-7")
    log["seed"] = NonTensorData(1234)
    with set_list_to_stack(True):
        log["phase"] = ["warmup", "train", "train"]
    best = int(returns.argmax())
    picked = log[best]
    tags = NonTensorStack(*[f"ep{i}" for i in range(3)])
    by_env = lazy_stack([log[0], log[2]])

    return {
        "env": buffer[0].env,
        "buffer_obs_sum": round(float(buffer.obs.sum()), 4),
        "buffer_actions": buffer.action.tolist(),
        "done_count": int(buffer.done.sum()),
        "next_obs": [round(v, 4) for v in episodes[0][1].next.obs.tolist()],
        "stats_label": stats.label,
        "frozen": frozen_ok,
        "normalized_mean": round(float(normalized.mean()), 4),
        "log_env": log["env"],
        "log_tags": list(log["tag"]),
        "picked": (picked["tag"], picked["phase"], picked["env"], picked["run"]),
        "seed": log[1]["seed"],
        "tags": tags.tolist(),
        "lazy_tags": list(by_env["tag"]),
        "round_trip": sorted(TensorDict(log.exclude("seed").to_dict(), batch_size=[3]).keys()),
        "returns": [round(v, 4) for v in returns.tolist()],
    }


if __name__ == "__main__":
    for key, value in main().items():
        print(f"{key}: {value}")
