"""Record classes used as Python classes by a dataclass user (session 23, nu23f): abstract
base classes mixed in, abstract methods, and the class machinery a record class keeps
through indexing, stacking, pickling and saving."""

from __future__ import annotations

import abc
import pickle
from pathlib import Path

import pytest
import torch

from tclass import TensorClass, tensorclass


class Scorer(abc.ABC):
    @abc.abstractmethod
    def score(self) -> torch.Tensor: ...


class Scored(TensorClass, Scorer):
    x: torch.Tensor

    def score(self) -> torch.Tensor:
        return self.x.sum()


def test_abc_mixin_after_tensorclass(tmp_path: Path) -> None:
    # was "metaclass conflict" at the class statement; the peer's metaclass is an ABCMeta
    rec = Scored(x=torch.ones(3), batch_size=[3])
    assert isinstance(rec, Scorer)
    assert rec.score().item() == 3.0
    assert type(rec[0]) is Scored and rec[1:].score().item() == 2.0
    assert type(torch.stack([rec, rec])) is Scored
    assert pickle.loads(pickle.dumps(rec)).score().item() == 3.0
    rec.memmap(tmp_path)
    loaded = Scored.load_memmap(tmp_path)
    assert type(loaded) is Scored and loaded.score().item() == 3.0


def test_abc_mixin_first_and_decorated() -> None:
    class First(Scorer, TensorClass):
        x: torch.Tensor

        def score(self) -> torch.Tensor:
            return self.x.max()

    @tensorclass
    class Decorated(Scorer):
        x: torch.Tensor

        def score(self) -> torch.Tensor:
            return self.x.min()

    x = torch.tensor([1.0, 4.0])
    assert First(x=x, batch_size=[2]).score().item() == 4.0
    dec = Decorated(x=x, batch_size=[2])
    assert isinstance(dec, Scorer) and dec.score().item() == 1.0


def test_unimplemented_abstract_method_refuses_instantiation() -> None:
    class Missing(TensorClass, Scorer):
        x: torch.Tensor

    class Base(TensorClass):
        x: torch.Tensor

        @abc.abstractmethod
        def kind(self) -> str: ...

    class Leaf(Base):
        def kind(self) -> str:
            return "leaf"

    with pytest.raises(TypeError, match="abstract"):
        Missing(x=torch.ones(1), batch_size=[1])
    with pytest.raises(TypeError, match="abstract"):
        Base(x=torch.ones(1), batch_size=[1])
    leaf = Leaf(x=torch.ones(2), batch_size=[2])
    assert leaf.kind() == "leaf" and leaf[0].kind() == "leaf"


def test_register_virtual_subclass() -> None:
    class Rec(TensorClass):
        x: torch.Tensor

    class Other:
        pass

    Rec.register(Other)
    assert isinstance(Other(), Rec) and issubclass(Other, Rec)


def test_user_getattr_is_the_fallback() -> None:
    # README "Differences": the peer replaces a record class's __getattr__ with its own
    class Rec(TensorClass):
        x: torch.Tensor

        def __getattr__(self, name: str) -> torch.Tensor:
            if name.startswith("neg_"):
                return -getattr(self, name[4:])  # type: ignore[no-any-return]
            raise AttributeError(name)

    rec = Rec(x=torch.ones(2), batch_size=[2])
    assert rec.neg_x.tolist() == [-1.0, -1.0]
    assert rec[0].neg_x.item() == -1.0
    with pytest.raises(AttributeError):
        rec.other  # noqa: B018


def test_parent_record_written_into_subclass_rows() -> None:
    # README "Differences": fields all the target's are written (the peer asks for the
    # same members); a record with a field the target lacks is refused, naming it
    class Parent(TensorClass):
        x: torch.Tensor

    class Child(Parent):
        y: torch.Tensor

    child = Child(x=torch.zeros(2), y=torch.ones(2), batch_size=[2])
    child[0] = Parent(x=torch.tensor(5.0), batch_size=[])
    assert child.x.tolist() == [5.0, 0.0] and child.y.tolist() == [1.0, 1.0]
    parent = Parent(x=torch.zeros(2), batch_size=[2])
    with pytest.raises(ValueError, match="'y' is not a field of Parent"):
        parent[0] = Child(x=torch.tensor(1.0), y=torch.tensor(2.0), batch_size=[])
    assert parent.x.tolist() == [0.0, 0.0] and "y" not in parent.keys()


def test_subclass_record_field_round_trip_through_dicts() -> None:
    # README "Casting follows the annotation": to_dict() does not record the subclass,
    # so its extra field is a key that is no field of the annotated class: refused by
    # name (the peer's from_dict gives a TensorDict there, losing the class)
    class Part(TensorClass):
        x: torch.Tensor

    class Holder(TensorClass):
        part: Part

    class Special(Part):
        y: torch.Tensor

    held = Holder(part=Special(x=torch.zeros(2), y=torch.ones(2), batch_size=[2]), batch_size=[2])
    assert type(held[0].part) is Special and type(held.clone().part) is Special
    with pytest.raises(ValueError, match="'y' is not a field of Part"):
        Holder.from_dict(held.to_dict(), batch_size=[2])
    with pytest.raises(ValueError, match="'y' is not a field of Part"):
        Holder.from_tensordict(held.to_tensordict())
    back = Holder.from_dict({"part": {"x": torch.ones(2)}}, batch_size=[2])
    assert type(back.part) is Part and back.part.x.tolist() == [1.0, 1.0]
