"""The records the new-user programs (cases_new_users*.py) declare, as a new user writes
them: Optional/str/Any fields, nested and self-referencing records, defaults and
factories, a ClassVar, a property and methods returning Self, inheritance, generics and
MetaData fields, in both forms."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Generic, Optional, TypeVar, Union

import torch
from typing_extensions import Self

from tclass import MetaData, NonTensorData, TensorClass, tensorclass

T = TypeVar("T")


class Obs(TensorClass):
    pixels: torch.Tensor
    label: Optional[str] = None
    meta: Any = None


class Agent(TensorClass):
    obs: Obs
    reward: torch.Tensor
    done: Optional[torch.Tensor] = None
    hidden: Optional[Obs] = None


class Traj(TensorClass):
    obs: torch.Tensor
    action: torch.Tensor = dataclasses.field(default_factory=lambda: torch.zeros(1))
    tags: list[str] = dataclasses.field(default_factory=list)
    scale: Union[int, float] = 1.0
    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    note: NonTensorData | None = None
    nxt: Optional[Traj] = None
    KIND: ClassVar[str] = "traj"

    @property
    def length(self) -> int:
        return self.batch_size[0]

    def normalized(self) -> Self:
        return self.apply(lambda t: t / t.abs().max().clamp_min(1e-6))

    @classmethod
    def zeros(cls, n: int) -> Self:
        return cls(obs=torch.zeros(n, 3), batch_size=[n])


class Base(TensorClass):
    x: torch.Tensor


class Derived(Base):
    y: torch.Tensor
    level: int = 0


class Gen(TensorClass, Generic[T]):
    x: torch.Tensor
    tag: T


class Run(TensorClass):
    x: torch.Tensor
    name: MetaData[str]
    seed: MetaData[int] | None = None


@tensorclass
class DObs:
    pixels: torch.Tensor
    label: Optional[str] = None
    meta: Any = None


@tensorclass
class DAgent:
    obs: DObs
    reward: torch.Tensor
    done: Optional[torch.Tensor] = None


@tensorclass
class DRun:
    x: torch.Tensor
    name: MetaData[str]


def obs(n: int = 3) -> Obs:
    return Obs(torch.zeros(n, 2), batch_size=[n])


def agent(n: int = 3) -> Agent:
    return Agent(obs(n), torch.zeros(n), batch_size=[n])


def dagent(n: int = 3) -> DAgent:
    return DAgent(DObs(torch.zeros(n, 2), batch_size=[n]), torch.zeros(n), batch_size=[n])
