"""Constraints on Python-value fields (``Annotated[int, Ge(0)]``, ``Literal["a", "b"]``,
``Annotated[str, MinLen(2)]``), checked on every write path as the tensor fields' are,
by the field's rule, with the same ``FieldSpecError``; and their JSON Schema keywords.
The peer ignores the metadata (README, "Differences from tensordict"). Loads of edited
files are in tests/io/test_schema_constraints_io.py."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import annotated_types as at
import pytest
import torch

from tclass import TensorClass, errors
from tclass._core._constraints import ValueConstraints

FieldSpecError = errors.FieldSpecError


class Job(TensorClass):
    x: torch.Tensor
    count: Annotated[int, at.Ge(0)] = 0
    tag: Literal["a", "b"] = "a"
    name: Annotated[str, at.MinLen(2), at.MaxLen(4)] = "ok"
    step: Annotated[float, at.Interval(gt=0, lt=1), at.MultipleOf(0.25)] | None = None


def job(**changes: Any) -> Job:
    return Job(**{"x": torch.zeros(3), "batch_size": [3], **changes})


BAD = [
    ("count", -1, "ge=0"),
    ("tag", "c", "in ('a', 'b')"),
    ("tag", 1, "in ('a', 'b')"),
    ("name", "z", "min_length=2"),
    ("name", "toolong", "max_length=4"),
    ("step", 1.0, "lt=1"),
    ("step", 0.3, "multiple_of=0.25"),
]


@pytest.mark.parametrize("name, value, broken", BAD, ids=[f"{n}={v!r}" for n, v, _ in BAD])
class TestRefused:
    def test_constructor_from_dict_replace(self, name: str, value: Any, broken: str) -> None:
        want = rf"Job\.{name} is given {type(value).__name__} {value!r}, which breaks {broken}"
        for build in (
            lambda: job(**{name: value}),
            lambda: Job.from_dict({"x": torch.zeros(3), name: value}, batch_size=[3]),
            lambda: job().replace(**{name: value}),
        ):
            with pytest.raises(
                FieldSpecError, match=want.replace("(", r"\(").replace(")", r"\)")
            ) as info:
                build()
            assert isinstance(info.value, ValueError)
            (problem,) = info.value.problems
            assert (problem.field, problem.got, problem.expected) == (name, value, broken)

    def test_writes_leave_the_record_unchanged(self, name: str, value: Any, broken: str) -> None:
        record = job(step=0.5)
        before = getattr(record, name)

        def assign() -> None:
            setattr(record, name, value)

        for write in (
            assign,
            lambda: record.set(name, value),
            lambda: record.update({"x": torch.ones(3), name: value}),
        ):
            with pytest.raises(
                FieldSpecError, match=broken.replace("(", r"\(").replace(")", r"\)")
            ):
                write()
            assert getattr(record, name) == before and torch.equal(record.x, torch.zeros(3))

    def test_from_tensordict(self, name: str, value: Any, broken: str) -> None:
        td = job().to_tensordict()
        td.set_non_tensor(name, value)
        with pytest.raises(FieldSpecError, match=rf"Job\.{name} is given"):
            Job.from_tensordict(td)

    def test_rows_of_a_value_stack(self, name: str, value: Any, broken: str) -> None:
        stack = torch.stack([job(step=0.5), job(step=0.5)])
        before = stack.to_dict()

        def write() -> None:
            stack[0] = {"x": torch.ones(3), name: value}

        with pytest.raises(FieldSpecError, match=rf"Job\.{name} is given"):
            write()
        assert stack.to_dict().keys() == before.keys()
        assert getattr(stack, name) == before[name] and torch.equal(stack.x, before["x"])


def test_values_meeting_the_constraints_are_kept() -> None:
    record = job(count=3, tag="b", name="abcd", step=0.75)
    assert (record.count, record.tag, record.name, record.step) == (3, "b", "abcd", 0.75)
    record.count = 0
    record.set("name", "ab")
    stack = torch.stack([record, job(step=0.25)])
    assert (
        stack.count == [[0] * 3] * 2 and torch.cat([stack, stack]).tag == [["b"] * 3, ["a"] * 3] * 2
    )
    stack[1] = {"count": 5, "tag": "b"}
    assert stack.count == [[0] * 3, [5] * 3] and stack.tag == [["b"] * 3] * 2


def test_a_list_of_values_names_the_first_bad_row() -> None:
    with pytest.raises(
        FieldSpecError, match=r"given int -2 at index \(1,\), which breaks ge=0"
    ) as info:
        job(count=[1, -2, 3])
    assert info.value.problems[0].element == (1,)


def test_a_number_in_tensor_form_is_checked_as_its_elements() -> None:
    class Counted(TensorClass):
        count: Annotated[int, at.Ge(0)]

    assert Counted(count=torch.tensor([1, 2]), batch_size=[2]).count.tolist() == [1, 2]
    with pytest.raises(FieldSpecError, match=r"given int -1 at index \(1,\), which breaks ge=0"):
        Counted(count=torch.tensor([1, -1]), batch_size=[2])


def test_values_of_other_types_are_left_to_the_annotation() -> None:
    # a str in a bounded int field is kept as given (the peer's rule for other types)
    assert job(count="many").count == "many"


def test_unconstrained_value_fields_have_no_constraints() -> None:
    class Plain(TensorClass):
        count: int = 0
        doc: Annotated[str, "just a note"] = ""
        alias: Literal["a", "b"] | int = 0

    rules = Plain.__tclass_info__.rules  # type: ignore[attr-defined]
    assert rules["count"].values is None and rules["doc"].values is None
    assert rules["alias"].values is None  # an int is allowed too: no enum to hold
    assert Plain(alias=7).alias == 7
    assert Job.__tclass_info__.rules["count"].values == ValueConstraints(  # type: ignore[attr-defined]
        ValueConstraints.build([at.Ge(0)], None, "").numbers  # type: ignore[union-attr]
    )


def test_malformed_lengths_are_refused_at_class_definition() -> None:
    with pytest.raises(errors.SpecSyntaxError, match="min_length=3 > max_length=2"):

        class Bad(TensorClass):
            name: Annotated[str, at.Len(3, 2)] = "abc"

        Bad()


def test_json_schema_carries_the_constraints() -> None:
    properties = Job.json_schema()["properties"]
    assert properties["count"] == {"type": "integer", "minimum": 0, "x-tclass-annotation": "int"}
    assert properties["tag"]["enum"] == ["a", "b"]
    assert properties["name"]["minLength"] == 2 and properties["name"]["maxLength"] == 4
    step = properties["step"]["anyOf"][0]
    assert step == {
        "type": "number",
        "exclusiveMinimum": 0,
        "exclusiveMaximum": 1,
        "multipleOf": 0.25,
    }


def test_rand_draws_values_meeting_the_constraints() -> None:
    for seed in range(10):
        record = Job.rand([3], generator=torch.Generator().manual_seed(seed))
        assert record.count >= 0 and record.tag in ("a", "b") and 2 <= len(record.name) <= 4
        assert record.step is None or (0 < record.step < 1 and record.step % 0.25 == 0)
