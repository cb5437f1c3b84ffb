"""Wrong programs new users write (session 24, nu24c): each line must give exactly this
error (strict mode's warn_unused_ignores fails the run if one goes missing), as the
runtime refuses each. tests/pyright/cases_new_users.py checks the same with pyright."""

from __future__ import annotations

from pathlib import Path

import torch
from new_user_records import (
    Agent,
    DAgent,
    Derived,
    DObs,
    DRun,
    Gen,
    Obs,
    Run,
    Traj,
    agent,
    dagent,
    obs,
)

from tclass import TensorDict, TensorDictParams, lazy_stack


def wrong_construction() -> None:
    Obs(pixels=1)  # type: ignore[arg-type]
    Obs(torch.zeros(3), label=3)  # type: ignore[arg-type]
    Obs(torch.zeros(3), colour="red")  # type: ignore[call-arg]
    Obs(torch.zeros(3), batchsize=[3])  # type: ignore[call-arg]
    Obs(torch.zeros(3), device=3.5)  # type: ignore[arg-type]
    Agent(obs=torch.zeros(3), reward=torch.zeros(3))  # type: ignore[arg-type]
    Agent(obs=obs())  # type: ignore[call-arg]
    Agent(obs(), torch.zeros(3), hidden=agent())  # type: ignore[arg-type]
    Traj(torch.zeros(4, 3), KIND="x")  # type: ignore[call-arg]
    Traj(torch.zeros(4, 3), tags="a")  # type: ignore[arg-type]
    Derived(torch.zeros(3))  # type: ignore[call-arg]
    Derived(x=torch.zeros(3), y=torch.zeros(3), z=1)  # type: ignore[call-arg]
    Gen[int](torch.zeros(3), "s")  # type: ignore[arg-type]
    Run(torch.zeros(3), 3)  # type: ignore[arg-type]
    Run(torch.zeros(3), "a", seed="s")  # type: ignore[arg-type]


def wrong_construction_decorator() -> None:
    DObs(pixels=1)  # type: ignore[arg-type]
    DObs(torch.zeros(3), label=3)  # type: ignore[arg-type]
    DObs(torch.zeros(3), colour="red")  # type: ignore[call-arg]
    DObs(torch.zeros(3), batchsize=[3])  # type: ignore[call-arg]
    DAgent(obs=obs(), reward=torch.zeros(3))  # type: ignore[arg-type]
    DRun(torch.zeros(3), 3)  # type: ignore[arg-type]


def wrong_writes_and_reads() -> None:
    o, r = obs(), Run(torch.zeros(3), "a")
    o.pixels = "x"  # type: ignore[assignment]
    o.label = 1  # type: ignore[assignment]
    r.name = 3  # type: ignore[assignment]
    _ = o.nope  # type: ignore[attr-defined]
    _ = dagent().nope  # type: ignore[attr-defined]
    _ = agent().obs.nope  # type: ignore[attr-defined]
    x: Obs = agent()  # type: ignore[assignment]
    y: str = o.pixels  # type: ignore[assignment]
    z: int = r.name  # type: ignore[assignment]
    print(x, y, z)


def wrong_method_arguments(folder: Path) -> None:
    o = obs()
    o.to(3.5)  # type: ignore[arg-type]
    o.to([1])  # type: ignore[arg-type]
    dagent().to(2.0)  # type: ignore[arg-type]
    TensorDict().to(1.5)  # type: ignore[arg-type]
    o.clone(recurse="yes")  # type: ignore[arg-type]
    o.update(3)  # type: ignore[arg-type]
    o.apply(3)  # type: ignore[call-overload]
    o.reshape("x")  # type: ignore[arg-type]
    o.memmap_(prefix=3)  # type: ignore[arg-type]
    o.memmap(folder, num_thread=2)  # type: ignore[call-arg]
    Obs.from_tensordict({"pixels": torch.zeros(3)})  # type: ignore[arg-type]
    Obs.load_memmap(3)  # type: ignore[arg-type]
    DObs.from_tensordict({"pixels": torch.zeros(3)})  # type: ignore[arg-type]
    o.replace(pixels="x")  # type: ignore[arg-type]
    o.replace(colour="red")  # type: ignore[call-arg]
    TensorDict({"a": torch.zeros(3)}, batch_size="3")  # type: ignore[arg-type]
    TensorDictParams(3)  # type: ignore[arg-type]
    lazy_stack([o, 3])  # type: ignore[list-item]
    torch.stack([o, 3])  # type: ignore[list-item]
