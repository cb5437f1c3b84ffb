"""Programs as typed users write them (issue typing34): what the plugin and the
annotations check beyond the constructor, in both forms, each as the runtime answers."""

from __future__ import annotations

import tempfile
from typing import Any, Generic, TypeVar

import numpy as np
import torch
from records import DInner, DStep, Inner, Step, dstep, step
from typing_extensions import assert_type

from tclass import TensorClass, TensorDict

T = TypeVar("T")
R = TypeVar("R", bound=TensorClass)


class Box(TensorClass, Generic[T]):
    x: torch.Tensor
    meta: T


class Child(Step):
    level: int = 0


def replace_is_field_wise() -> None:
    s, d = step(), dstep()
    assert_type(s.replace(obs=torch.ones(3, 2), extra=None, name="b"), Step)
    assert_type(s.replace({"obs": torch.ones(3, 2)}, count=2), Step)
    assert_type(d.replace(name="q", inner=d.inner), DStep)
    assert_type(Child.replace(Child(s.obs, "a", s.inner), level=1), Child)
    box = Box[int](torch.zeros(3), 1, batch_size=[3])
    assert_type(box.replace(meta=2), Box[int])
    assert_type(s.replace(), Step)
    # The runtime refuses each (FieldTypeError, UnknownFieldError), or the constructor
    # would be refused for the same value.
    s.replace(obs="bad")  # type: ignore[arg-type]
    s.replace(nope=1)  # type: ignore[call-arg]
    d.replace(name=3)  # type: ignore[arg-type]
    d.replace(nope=1)  # type: ignore[call-arg]
    box.replace(meta="s")  # type: ignore[arg-type]
    s.replace(batch_size=[3])  # type: ignore[call-arg]


def torch_functions_on_records() -> None:
    s, d = step(), dstep()
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    assert_type(torch.stack([s, s]), Step)
    assert_type(torch.stack((s, s), 1), Step)
    assert_type(torch.cat([d, d], dim=0), DStep)
    assert_type(torch.concat([td, td]), TensorDict)
    assert_type(torch.stack([td, td]), TensorDict)
    records: list[Step] = [s, s]
    assert_type(torch.cat(records), Step)
    assert_type(torch.stack([torch.zeros(1), torch.zeros(1)]), torch.Tensor)
    torch.stack([s, 3])  # type: ignore[list-item]


def any_record(record: TensorClass) -> None:
    # The base class declares no field: any record's may be named.
    assert_type(record.replace(obs=torch.zeros(3, 2)), TensorClass)
    assert_type(record.get("obs"), Any)


def stack_any_record(records: list[R]) -> R:
    # Generic code over records: the type variable is kept (replace without fields too).
    assert_type(torch.stack(records), R)
    return torch.cat(records).replace()


def indices_are_batch_indices() -> None:
    s, d = step(), dstep()
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    assert_type(s[np.array([0, 1])], Step)
    assert_type(td[np.array([0, 1])], TensorDict)
    assert_type(d[np.int64(1)], DStep)
    assert_type(s[[True, False, True]], Step)
    assert_type(s[..., None, 0:2], Step)
    s[0] = s[1]
    # A record is indexed along its batch dims only: the runtime raises FieldIndexError.
    s["obs"]  # type: ignore[index]
    d["obs"]  # type: ignore[index]
    s["inner", "z"]  # type: ignore[index]
    s["obs"] = torch.zeros(3, 2)  # type: ignore[index]


def load_through_the_class() -> None:
    folder = tempfile.mkdtemp()
    assert_type(Step.load(folder), Step)
    assert_type(DStep.load(folder, mode="r"), DStep)
    assert_type(Inner.load_memmap(folder), Inner)


def dim_names_are_any_hashable() -> None:
    # Records take and give any hashable dim names, as TensorDict and the peer do.
    s = Step(torch.zeros(3, 2), "a", Inner(torch.zeros(3)), batch_size=[3], names=[0])
    assert_type(s.names, list[Any])
    s.names = [("t", 1)]
    d = DStep(torch.zeros(3, 2), "a", DInner(torch.zeros(3)), batch_size=[3], names=["t"])
    assert_type(d.names, list[Any])


def get_reads_a_field() -> None:
    # record.get("field") is the field (an unset optional field gives the default).
    s, d = step(), dstep()
    assert_type(s.get("obs"), torch.Tensor)
    assert_type(d.get("name"), str)
    assert_type(s.get("inner"), Inner)
    assert_type(s.get("extra"), torch.Tensor | None)
    assert_type(s.get("extra", 0), torch.Tensor | int | None)
    assert_type(Box[int](torch.zeros(3), 1).get("meta"), int)
    assert_type(s.get(("inner", "z")), Any)  # a nested key: as declared
    assert_type(s.get("batch_size"), Any)  # not a field
