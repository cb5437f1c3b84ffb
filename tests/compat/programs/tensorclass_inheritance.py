"""Tensorclass inheritance: a base record extended by subclasses with extra fields and
overridden methods, both forms (decorator and base class), ``isinstance`` after ops,
and a method on the base calling a subclass override.
"""

import torch

from compat.lib import TensorClass, tensorclass


class Shape(TensorClass):
    center: torch.Tensor

    def area(self) -> torch.Tensor:
        return torch.zeros(self.batch_size)

    def describe(self) -> str:
        area = self.area().sum().item()
        return f"{type(self).__name__} x{self.batch_size.numel()} total area {area:.1f}"


class Circle(Shape):
    radius: torch.Tensor

    def area(self) -> torch.Tensor:
        return 3.0 * self.radius**2


class Rect(Shape):
    wh: torch.Tensor

    def area(self) -> torch.Tensor:
        return self.wh.prod(-1)


@tensorclass
class Base:
    a: torch.Tensor


@tensorclass
class Child(Base):
    b: torch.Tensor


def main() -> None:
    c = Circle(center=torch.zeros(3, 2), radius=torch.tensor([1.0, 2.0, 3.0]), batch_size=[3])
    r = Rect(center=torch.zeros(2, 2), wh=torch.tensor([[1.0, 2.0], [3.0, 4.0]]), batch_size=[2])
    assert c.area().tolist() == [3.0, 12.0, 27.0]
    assert r.describe() == "Rect x2 total area 14.0"
    assert c.describe() == "Circle x3 total area 42.0"
    assert isinstance(c[1:], Circle) and isinstance(c[1:], Shape)
    assert c[1:].area().tolist() == [12.0, 27.0]
    assert isinstance(torch.stack([c, c]), Circle)
    assert list(c.to_dict()) == ["center", "radius"]

    ch = Child(a=torch.zeros(2), b=torch.ones(2), batch_size=[2])
    assert isinstance(ch, Base)
    assert ch.b.sum().item() == 2.0
    assert isinstance(ch.clone(), Child)
    assert set(ch.to_tensordict().keys()) == {"a", "b"}
