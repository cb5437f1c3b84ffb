"""``tensorclass(C)`` of a class that is already a ``@dataclass`` (session 23, nu23d):
what ``dataclasses`` generated for ``C`` is dropped, so the record prints, compares and
indexes as a record, as the peer's ``tensorclass(C)``."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import tclass


@dataclasses.dataclass
class Plain:
    x: torch.Tensor
    y: int


@dataclasses.dataclass
class OwnRepr:
    x: torch.Tensor

    def __repr__(self) -> str:
        return "mine"


def test_the_dataclass_repr_is_replaced_by_the_records() -> None:
    cls = tclass.tensorclass(Plain)
    rec = cls(x=torch.zeros(3), y=1, batch_size=[3])
    assert repr(rec) == "Plain(batch_size=[3], fields={x: f32[], y: int})"
    assert str(rec[0]) == "Plain(batch_size=[], fields={x: f32[], y: int})"
    assert repr(rec == rec) == "Plain(batch_size=[3], fields={x: bool[], y: bool[]})"


def test_a_repr_the_user_wrote_is_kept() -> None:
    cls = tclass.tensorclass(OwnRepr)
    assert repr(cls(x=torch.zeros(2), batch_size=[2])) == "mine"


def test_from_dataclass_types_print_as_records() -> None:
    cls = tclass.from_dataclass(Plain, inplace=True)
    assert repr(cls(x=torch.zeros(2), y=1, batch_size=[2])).startswith("Plain(batch_size=[2]")


def test_a_frozen_dataclass_makes_a_frozen_record() -> None:
    @dataclasses.dataclass(frozen=True)
    class Frozen:
        x: torch.Tensor

    rec = tclass.tensorclass(Frozen)(x=torch.ones(2), batch_size=[2])
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.x = torch.zeros(2)  # type: ignore[misc]
    assert rec.x.tolist() == [1.0, 1.0]  # (the peer's record holds None there)
