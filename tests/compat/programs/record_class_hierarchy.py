"""Record classes declared the ways users declare them, then used: a base record
subclassed (a field's annotation and default overridden, fields added), a mixin with a
method and a property, an ``Optional`` nested record, a ``str`` field with a default,
a ``ClassVar``, ``__post_init__`` filling a derived field, the ``nocast`` class option;
then built, indexed, stacked, concatenated, cast, memory-mapped and reloaded, converted
to and from dicts, compared, and their ``dataclasses`` views read.
"""

import dataclasses
import tempfile
import typing
from typing import ClassVar, Optional

import torch

from compat.lib import TensorClass, tensorclass


class Describe:
    """A mixin: methods and properties reach the record's fields."""

    def describe(self) -> str:
        return f"{type(self).__name__}[{self.batch_size[0]}]"

    @property
    def n(self) -> int:
        return self.batch_size[0]


@tensorclass
class Pose:
    position: torch.Tensor


@tensorclass
class Observation(Describe):
    pixels: torch.Tensor
    reward: Optional[torch.Tensor] = None
    label: str = "obs"
    SCALE: ClassVar[float] = 2.0

    def scaled(self) -> torch.Tensor:
        return self.pixels * self.SCALE


@tensorclass
class RobotObservation(Observation):
    reward: Optional[torch.Tensor] = None  # redeclared: keeps its place
    pose: Optional[Pose] = None
    speed: Optional[torch.Tensor] = None

    def __post_init__(self) -> None:
        if self.speed is None and self.pose is not None:
            self.speed = self.pose.position.norm(dim=-1)


class Settings(TensorClass["nocast"]):
    gain: torch.Tensor
    steps: int = 10
    mode: str = "train"


def _robot(n: int) -> RobotObservation:
    pose = Pose(position=torch.arange(n * 2.0).reshape(n, 2), batch_size=[n])
    return RobotObservation(
        pixels=torch.ones(n, 3), reward=torch.zeros(n), pose=pose, label="robot", batch_size=[n]
    )


def main() -> None:
    names = [f.name for f in dataclasses.fields(RobotObservation)]
    assert names == ["pixels", "reward", "label", "pose", "speed"]
    hints = typing.get_type_hints(RobotObservation)
    assert hints["pose"] == Optional[Pose] and "SCALE" in hints

    rob = _robot(4)
    assert isinstance(rob, Observation) and isinstance(rob, Describe)
    assert rob.describe() == "RobotObservation[4]" and rob.n == 4 and rob[1:].n == 3
    assert torch.equal(rob.speed, torch.arange(8.0).reshape(4, 2).norm(dim=-1))
    assert torch.equal(rob.scaled(), torch.full((4, 3), 2.0))
    assert rob.SCALE == 2.0 and "SCALE" not in rob.to_dict()

    row = rob[2]
    assert type(row) is RobotObservation and row.batch_size == torch.Size([])
    assert row.label == "robot" and torch.equal(row.pose.position, torch.tensor([4.0, 5.0]))

    plain = RobotObservation(pixels=torch.zeros(4, 3), batch_size=[4])
    assert plain.pose is None and plain.speed is None and plain.label == "obs"

    stacked = torch.stack([rob, rob], 0)
    assert stacked.batch_size == torch.Size([2, 4]) and type(stacked.pose) is Pose
    joined = torch.cat([rob, rob], 0)
    assert joined.batch_size == torch.Size([8]) and joined.label == "robot"
    assert joined.describe() == "RobotObservation[8]"

    doubled = rob.to(torch.float64).apply(lambda t: t * 2)
    assert doubled.pixels.dtype == torch.float64 and doubled.label == "robot"
    assert torch.equal(doubled.pose.position, rob.pose.position.double() * 2)
    assert (rob + 1).pose.position[0].tolist() == [1.0, 2.0]

    rob[0] = rob[3]
    assert torch.equal(rob.pose.position[0], rob.pose.position[3])

    with tempfile.TemporaryDirectory() as folder:
        rob.memmap(folder)
        back = RobotObservation.load_memmap(folder)
        assert type(back.pose) is Pose and back.label == "robot"
        assert torch.equal(back.speed, rob.speed) and (back == rob).all()

    again = RobotObservation.from_dict(rob.to_dict(), batch_size=[4])
    assert (again == rob).all() and again.describe() == "RobotObservation[4]"
    assert [r.label for r in rob.unbind(0)] == ["robot"] * 4

    changed = dataclasses.replace(rob, label="changed")
    assert changed.label == "changed" and rob.label == "robot"

    settings = Settings(gain=torch.ones(3), steps=5, batch_size=[3])
    assert settings.steps == 5 and isinstance(settings.steps, int)
    assert settings[0].steps == 5 and settings[0].mode == "train"
    assert torch.stack([settings, settings]).batch_size == torch.Size([2, 3])
    with tempfile.TemporaryDirectory() as folder:
        settings.memmap(folder)
        loaded = Settings.load_memmap(folder)
        assert loaded.steps == 5 and torch.equal(loaded.gain, torch.ones(3))


if __name__ == "__main__":
    main()
