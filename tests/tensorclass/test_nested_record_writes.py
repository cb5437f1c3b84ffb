"""A collection's write that reaches a record is all or nothing (lo24d, session 24):
``td.update({"z": ..., "rec": {"p": bad}})`` (with and without ``inplace=True``),
``update_``, ``update_at_``, ``td[0] = {...}``, ``set`` of a nested key, the same on a
lazy stack of TensorDicts holding records and on a record holding a TensorDict that
holds one: the record's refusal leaves every entry as it was (before, ``z`` was
written and then the record refused)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import annotated_types as at
import pytest
import torch

from tclass import TensorClass, TensorDict, errors, lazy_stack

FieldSpecError = errors.FieldSpecError
Tensor = torch.Tensor


class A(TensorClass):
    p: Annotated[Tensor, at.Ge(0), at.Le(1)]


class Outer(TensorClass):
    y: Tensor
    td: TensorDict


class Pair(TensorClass):
    y: Tensor
    a: A


def holder() -> TensorDict:
    return TensorDict({"z": torch.zeros(3), "rec": A(p=torch.full((3,), 0.5), batch_size=[3])}, [3])


BAD = torch.full((3,), 5.0)

WRITES: dict[str, Callable[[Any], object]] = {
    "update": lambda td: td.update({"z": torch.ones(3), "rec": {"p": BAD}}),
    "update inplace": lambda td: td.update({"z": torch.ones(3), "rec": {"p": BAD}}, inplace=True),
    "update of a TensorDict": lambda td: td.update(
        TensorDict({"z": torch.ones(3), "rec": {"p": BAD}}, [3])
    ),
    "update nested key": lambda td: td.update({"z": torch.ones(3), ("rec", "p"): BAD}),
    "update_": lambda td: td.update_({"z": torch.ones(3), "rec": {"p": BAD}}),
    "update_at_": lambda td: td.update_at_({"z": torch.tensor(1.0), "rec": {"p": 5.0}}, 0),
    "setitem row": lambda td: td.__setitem__(0, {"z": torch.tensor(1.0), "rec": {"p": 5.0}}),
    "setitem row of a TensorDict": lambda td: td.__setitem__(
        0, TensorDict({"z": torch.tensor(1.0), "rec": {"p": torch.tensor(5.0)}}, [])
    ),
    "set nested key": lambda td: td.set(("rec", "p"), BAD),
}


def assert_untouched(td: Any) -> None:
    assert td["z"].tolist() == [0.0, 0.0, 0.0]
    assert td["rec"].p.tolist() == [0.5, 0.5, 0.5]
    assert set(td.keys()) == {"z", "rec"} and set(td["rec"].keys()) == {"p"}


@pytest.mark.parametrize("write", list(WRITES))
def test_a_tensordict_write_a_record_refuses_leaves_every_entry(write: str) -> None:
    td = holder()
    with pytest.raises(FieldSpecError, match=r"A\.p.*5\.0.*le=1"):
        WRITES[write](td)
    assert_untouched(td)


LAZY_WRITES: dict[str, Callable[[Any], object]] = {
    "update": lambda s: s.update({"z": torch.ones(2, 3), "rec": {"p": torch.full((2, 3), 5.0)}}),
    "update, one member's part bad": lambda s: s.update(
        {"z": torch.ones(2, 3), "rec": {"p": torch.tensor([[0.1] * 3, [5.0] * 3])}}
    ),
    "update inplace": lambda s: s.update(
        {"z": torch.ones(2, 3), "rec": {"p": torch.full((2, 3), 5.0)}}, inplace=True
    ),
    "update of a lazy stack, second member bad": lambda s: s.update(
        lazy_stack(
            [
                TensorDict({"z": torch.ones(3), "rec": {"p": torch.full((3,), v)}}, [3])
                for v in (0.2, 5.0)
            ]
        )
    ),
    "setitem row": lambda s: s.__setitem__(0, {"z": torch.ones(3), "rec": {"p": BAD}}),
    "update_": lambda s: s.update_({"z": torch.ones(2, 3), "rec": {"p": torch.full((2, 3), 5.0)}}),
}


@pytest.mark.parametrize("write", list(LAZY_WRITES))
def test_a_lazy_stack_write_a_member_record_refuses_leaves_every_member(write: str) -> None:
    stack = lazy_stack([holder(), holder()])
    with pytest.raises(FieldSpecError, match=r"A\.p.*5\.0.*le=1"):
        LAZY_WRITES[write](stack)
    for member in stack.tensordicts:
        assert_untouched(member)


OUTER_WRITES: dict[str, Callable[[Any], object]] = {
    "update": lambda o: o.update(
        {"y": torch.ones(3), "td": {"z": torch.ones(3), "rec": {"p": BAD}}}
    ),
    "update inplace": lambda o: o.update(
        {"y": torch.ones(3), "td": {"z": torch.ones(3), "rec": {"p": BAD}}}, inplace=True
    ),
    "update_": lambda o: o.update_(
        {"y": torch.ones(3), "td": {"z": torch.ones(3), "rec": {"p": BAD}}}
    ),
    "setitem row": lambda o: o.__setitem__(
        0, {"y": torch.tensor(1.0), "td": {"z": torch.tensor(1.0), "rec": {"p": torch.tensor(5.0)}}}
    ),
}


@pytest.mark.parametrize("write", list(OUTER_WRITES))
def test_a_record_holding_a_tensordict_holding_a_record_is_all_or_nothing(write: str) -> None:
    outer = Outer(y=torch.zeros(3), td=holder(), batch_size=[3])
    with pytest.raises(FieldSpecError, match=r"A\.p.*5\.0.*le=1"):
        OUTER_WRITES[write](outer)
    assert outer.y.tolist() == [0.0, 0.0, 0.0]
    assert_untouched(outer.td)


def test_a_tensordict_holding_such_a_record_is_all_or_nothing() -> None:
    outer = Outer(y=torch.zeros(3), td=holder(), batch_size=[3])
    td = TensorDict({"w": torch.zeros(3), "outer": outer}, [3])
    with pytest.raises(FieldSpecError, match=r"A\.p.*5\.0.*le=1"):
        td.update({"w": torch.ones(3), "outer": {"y": torch.ones(3), "td": {"rec": {"p": BAD}}}})
    assert td["w"].tolist() == [0.0, 0.0, 0.0] and outer.y.tolist() == [0.0, 0.0, 0.0]
    assert_untouched(outer.td)


@pytest.mark.parametrize("inplace", [False, True])
def test_a_record_update_checks_a_nested_record_set_one_field(inplace: bool) -> None:
    pair = Pair(y=torch.zeros(3), a=A(p=torch.full((3,), 0.5), batch_size=[3]), batch_size=[3])
    with pytest.raises(FieldSpecError, match=r"A\.p.*5\.0.*le=1"):
        pair.update({"y": torch.ones(3), "a": {"p": BAD}}, inplace=inplace)
    assert pair.y.tolist() == [0.0, 0.0, 0.0] and pair.a.p.tolist() == [0.5, 0.5, 0.5]


def test_values_that_fit_are_written_on_every_path() -> None:
    td = holder()
    td.update({"z": torch.ones(3), "rec": {"p": torch.full((3,), 0.25)}})
    assert td["z"].tolist() == [1.0] * 3 and td["rec"].p.tolist() == [0.25] * 3
    td[0] = {"z": torch.tensor(2.0), "rec": {"p": torch.tensor(0.75)}}
    assert td["z"].tolist() == [2.0, 1.0, 1.0] and td["rec"].p.tolist() == [0.75, 0.25, 0.25]
    td.update({("rec", "p"): torch.full((3,), 0.5)}, inplace=True)
    assert td["rec"].p.tolist() == [0.5] * 3
    stack = lazy_stack([holder(), holder()])
    stack.update({"z": torch.ones(2, 3), "rec": {"p": torch.full((2, 3), 0.125)}})
    assert [m["rec"].p.tolist() for m in stack.tensordicts] == [[0.125] * 3] * 2
    assert [m["z"].tolist() for m in stack.tensordicts] == [[1.0] * 3] * 2
    outer = Outer(y=torch.zeros(3), td=holder(), batch_size=[3])
    outer.update({"y": torch.ones(3), "td": {"rec": {"p": torch.full((3,), 1.0)}}})
    assert outer.y.tolist() == [1.0] * 3 and outer.td["rec"].p.tolist() == [1.0] * 3
