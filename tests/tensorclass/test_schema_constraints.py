"""Value constraints on record fields, checked on every write path (issue 31, item 1).

``Spec(..., ge=, gt=, le=, lt=, isin=, finite=, multiple_of=)`` and the annotated-types
objects (``Annotated[Tensor, Spec("3"), Ge(0), Le(1)]``) bound the values of a field.
They are checked when a record is built (constructor, ``from_dict``,
``from_tensordict``, ``replace``), when a field is assigned, and on every write into
rows (``record[i] = ...``, ``record[mask] = other``, ``set_``, ``set_at_``,
``update``, ``update_``, ``update_at_``), before anything is written: a violation is a
``FieldSpecError`` (a ``ValueError``) naming the field, the constraint, the first
offending index and its value. Loads are in tests/io/test_schema_constraints_io.py.
"""

from __future__ import annotations

import pickle
import tempfile
from typing import Annotated, Any

import annotated_types as at
import pytest
import torch

import tclass
from tclass import Spec, TensorClass, errors
from tclass._core._constraints import Constraints

from forms import FORMS, Declare  # noqa: E402

try:
    import jaxtyping as jt
except ImportError:  # an optional extra: its tests skip
    jt = None

FieldSpecError = errors.FieldSpecError
Tensor = torch.Tensor


class _Probs:
    prob: Annotated[Tensor, Spec("k", torch.float32), at.Ge(0), at.Le(1)]
    label: Annotated[Tensor, Spec("", torch.int64, isin=(0, 1, 2))]
    score: Annotated[Tensor, Spec("", torch.float32, finite=True)] | None = None
    note: str = ""


@pytest.fixture(params=FORMS)
def Probs(request: pytest.FixtureRequest) -> Any:
    declare: Declare = request.param
    return declare(_Probs)


def probs(cls: Any, b: int = 4, k: int = 3, **changes: Any) -> Any:
    args: dict[str, Any] = {
        "prob": torch.full((b, k), 0.5),
        "label": torch.arange(b) % 3,
        "batch_size": [b],
    }
    args.update(changes)
    return cls(**args)


def only_problem(error: FieldSpecError) -> errors.SpecProblem:
    assert len(error.problems) == 1
    return error.problems[0]


# --- construction -----------------------------------------------------------------------------


def test_a_record_within_its_constraints_builds(Probs: Any) -> None:
    record = probs(Probs, score=torch.zeros(4))
    assert record.prob.shape == (4, 3) and record.label.tolist() == [0, 1, 2, 0]


def test_a_value_out_of_bounds_names_field_constraint_index_and_value(Probs: Any) -> None:
    prob = torch.full((4, 3), 0.5)
    prob[2, 1] = 1.25
    with pytest.raises(FieldSpecError) as caught:
        probs(Probs, prob=prob)
    message = str(caught.value)
    assert "Probs.prob holds 1.25 at index (2, 1), which breaks le=1" in message
    assert "Spec('k', torch.float32) with ge=0, le=1" in message
    problem = only_problem(caught.value)
    assert (problem.field, problem.dim, problem.got, problem.expected) == (
        "prob",
        "le",
        1.25,
        "le=1",
    )
    assert problem.element == (2, 1)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, TypeError)


def test_isin_and_finite(Probs: Any) -> None:
    with pytest.raises(
        FieldSpecError, match=r"Probs.label holds 5 at index \(3,\), which breaks isin"
    ):
        probs(Probs, label=torch.tensor([0, 1, 2, 5]))
    score = torch.tensor([0.0, float("nan"), 1.0, 2.0])
    with pytest.raises(
        FieldSpecError, match=r"holds nan at index \(1,\), which breaks finite=True"
    ):
        probs(Probs, score=score)


def test_every_field_that_breaks_a_constraint_is_listed(Probs: Any) -> None:
    with pytest.raises(FieldSpecError, match="2 problems") as caught:
        probs(Probs, prob=torch.full((4, 3), -1.0), label=torch.full((4,), 7))
    assert [p.field for p in caught.value.problems] == ["prob", "label"]


def test_the_shape_is_checked_before_the_values(Probs: Any) -> None:
    with pytest.raises(FieldSpecError, match="dtype float64") as caught:
        probs(Probs, prob=torch.full((4, 3), -1.0, dtype=torch.float64))
    assert only_problem(caught.value).element is None


def test_array_likes_are_checked_as_converted(Probs: Any) -> None:
    with pytest.raises(FieldSpecError, match="breaks ge=0"):
        probs(Probs, b=1, prob=[[0.5, -0.5, 0.5]], label=[0])
    assert probs(Probs, b=1, prob=[[0.5, 0.0, 1.0]], label=[2]).prob.dtype == torch.float32


def test_from_dict_from_tensordict_and_replace_check_values(Probs: Any) -> None:
    bad = {"prob": torch.full((2, 3), 2.0), "label": torch.zeros(2, dtype=torch.int64)}
    with pytest.raises(FieldSpecError, match="breaks le=1"):
        Probs.from_dict(bad, batch_size=[2])
    with pytest.raises(FieldSpecError, match="breaks le=1"):
        Probs.from_tensordict(tclass.TensorDict(bad, batch_size=[2]))
    record = probs(Probs)
    with pytest.raises(FieldSpecError, match="breaks isin"):
        record.replace(label=torch.full((4,), 3))
    assert record.label.tolist() == [0, 1, 2, 0]


def test_annotated_types_without_a_spec_bound_any_shape() -> None:
    class Free(TensorClass):
        x: Annotated[Tensor, at.Gt(0)]
        y: Annotated[Tensor, at.Interval(ge=-1, lt=1), at.MultipleOf(0.5)] | None = None

    Free(x=torch.ones(2, 5, 7), batch_size=[2])
    with pytest.raises(
        FieldSpecError, match=r"Free.x holds 0.0 at index \(1, 0, 0\), which breaks gt=0"
    ):
        Free(x=torch.stack([torch.ones(5, 7), torch.zeros(5, 7)]), batch_size=[2])
    Free(x=torch.ones(2), y=torch.tensor([-1.0, 0.5]), batch_size=[2])
    with pytest.raises(FieldSpecError, match="breaks multiple_of=0.5"):
        Free(x=torch.ones(2), y=torch.tensor([-1.0, 0.25]), batch_size=[2])
    with pytest.raises(FieldSpecError, match="breaks lt=1"):
        Free(x=torch.ones(2), y=torch.tensor([1.0, 0.5]), batch_size=[2])


def test_messages_name_the_annotation_and_the_call_as_written() -> None:
    """Without a Spec, the annotation is named as written (not an internal
    ``Spec('...')``); a refused ``out=`` write names the call (``where``, ``clamp``),
    not the ``copy_`` it does."""

    class Bounded(TensorClass):
        x: Annotated[Tensor, at.Ge(0)]

    with pytest.raises(FieldSpecError) as caught:
        Bounded(x=-torch.ones(3), batch_size=[3])
    assert "breaks ge=0 (its annotation Annotated[Tensor, Ge(ge=0)])" in str(caught.value)
    assert "Spec(" not in str(caught.value)
    record = Bounded(x=torch.ones(3), batch_size=[3])
    mask = torch.tensor([True, False, True])
    with pytest.raises(FieldSpecError, match=r"^Bounded\.where\(\.\.\., out=\.\.\.\): ") as c:
        record.where(mask, -1.0, out=record)
    assert "copy_" not in str(c.value) and record.x.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(FieldSpecError, match=r"^Bounded\.clamp\(\.\.\., out=\.\.\.\): "):
        record.clamp(-2.0, -1.0, out=record)
    with pytest.raises(FieldSpecError, match=r"^Bounded\.copy_\(\.\.\.\): "):
        record.copy_(Bounded(x=torch.ones(3), batch_size=[3]).apply(lambda t: -t))
    record.where(mask, 2.0, out=record)
    assert record.x.tolist() == [1.0, 2.0, 1.0]


@pytest.mark.skipif(jt is None, reason="jaxtyping is an optional extra")
def test_jaxtyping_annotations_take_constraints_too() -> None:
    assert jt is not None

    class Jax(TensorClass):
        x: Annotated[jt.Float[Tensor, "*batch 3"], at.Ge(0)]  # noqa: F722

    Jax(x=torch.ones(2, 3), batch_size=[2])
    with pytest.raises(FieldSpecError, match=r"Jax.x holds -1.0 at index \(1, 2\)"):
        Jax(x=torch.tensor([[1.0, 1, 1], [1, 1, -1]]), batch_size=[2])


def test_a_malformed_constraint_is_refused_when_the_class_is_used() -> None:
    with pytest.raises(errors.SpecSyntaxError, match="admits no value"):

        class Empty(TensorClass):
            x: Annotated[Tensor, Spec("", ge=1), at.Lt(1)]

        Empty(x=torch.ones(2), batch_size=[2])


def test_a_class_without_constraints_has_none_to_check() -> None:
    class Plain(TensorClass):
        x: Annotated[Tensor, Spec("3", torch.float32)]

    specs = Plain.__tclass_info__.specs
    assert specs is not None and specs.constrained == {}
    Plain(x=torch.full((2, 3), -1e30), batch_size=[2])


def test_the_error_pickles_with_its_index(Probs: Any) -> None:
    with pytest.raises(FieldSpecError) as caught:
        probs(Probs, label=torch.tensor([0, 1, 2, 9]))
    again = pickle.loads(pickle.dumps(caught.value))
    assert str(again) == str(caught.value) and again.problems[0].element == (3,)


# --- assignment --------------------------------------------------------------------------------


def test_assigning_a_field_checks_its_values_and_keeps_the_record(Probs: Any) -> None:
    record = probs(Probs)
    before = record.prob
    with pytest.raises(FieldSpecError, match=r"Probs.prob holds -0.5 at index \(0, 0\)"):
        record.prob = torch.full((4, 3), -0.5)
    assert record.prob is before
    with pytest.raises(FieldSpecError, match="breaks isin"):
        record.set("label", torch.full((4,), 4))
    with pytest.raises(FieldSpecError, match="breaks isin"):
        record.update({"label": torch.full((4,), 4)})
    assert record.label.tolist() == [0, 1, 2, 0]
    record.prob = torch.ones(4, 3)
    record.score = None  # unsetting stays allowed
    assert record.prob.sum() == 12


def test_assigning_into_a_record_over_a_lazy_stack_checks_the_values(Probs: Any) -> None:
    stacked = tclass.lazy_stack([probs(Probs, b=2), probs(Probs, b=2, k=5)])
    with pytest.raises(FieldSpecError, match="breaks le=1"):
        stacked.prob = torch.full((2, 2, 3), 3.0)


# --- writes into rows -------------------------------------------------------------------------


def _rows(cls: Any, prob: float = 0.25, label: int = 1, b: int = 2) -> Any:
    return probs(cls, b=b, prob=torch.full((b, 3), prob), label=torch.full((b,), label))


def _forced(record: Any, **entries: Tensor) -> Any:
    """``record`` with entries written past the checks (data a check would refuse)."""
    for key, value in entries.items():
        record._tensordict._tensors[key] = value
    return record


WRITES = {
    "index": lambda r, v: r.__setitem__(1, v[1]),
    "slice": lambda r, v: r.__setitem__(slice(0, 2), v),
    "mask": lambda r, v: r.__setitem__(torch.tensor([True, False, True, False]), v),
    "tensor index": lambda r, v: r.__setitem__(torch.tensor([3, 0]), v),
    "dict": lambda r, v: r.__setitem__(slice(2, 4), {"prob": v.prob, "label": v.label}),
    "update_": lambda r, v: r[:2].update_(v),
    "update_ kwargs": lambda r, v: r[:2].update_(prob=v.prob),
    "update_at_": lambda r, v: r.update_at_(v, slice(1, 3)),
    "update inplace": lambda r, v: r[:2].update(v, inplace=True),
    "set_": lambda r, v: r[:2].set_("prob", v.prob),
    "set inplace": lambda r, v: r[:2].set("prob", v.prob, inplace=True),
    "set_at_": lambda r, v: r.set_at_("prob", v.prob[1], 3),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_every_row_write_checks_the_values_and_writes_nothing(Probs: Any, write: str) -> None:
    record = probs(Probs)
    before = record.clone()
    bad = _forced(_rows(Probs), prob=torch.tensor([[0.25, 0.25, 0.25], [0.5, 1.5, 0.5]]))
    with pytest.raises(FieldSpecError, match="Probs.prob: the value written holds 1.5") as caught:
        WRITES[write](record, bad)
    assert "which breaks le=1" in str(caught.value) and "Nothing was written" in str(caught.value)
    index = only_problem(caught.value).element
    assert index in ((1, 1), (1,)), index  # into the value written (one row: its dims)
    assert (record == before).all()
    WRITES[write](record, _rows(Probs, prob=0.75))  # values that fit are written
    assert (record.prob == 0.75).any()


def test_a_number_or_an_array_written_everywhere_is_checked(Probs: Any) -> None:
    record = probs(Probs)
    with pytest.raises(FieldSpecError, match="2 problems"):
        record[0] = 7  # 7 breaks prob's le=1 and label's isin
    with pytest.raises(FieldSpecError, match="breaks le=1"):
        record[:2] = {"prob": [[0.0, 0.0, 2.0]]}
    with pytest.raises(FieldSpecError, match="breaks isin"):
        record.set_at_("label", 3, 0)
    record[0] = 1
    assert record.prob[0].tolist() == [1, 1, 1] and record.label[0] == 1


def test_only_the_values_written_are_read(Probs: Any) -> None:
    # Rows a check would refuse elsewhere in the record do not stop a write that fits.
    record = _forced(probs(Probs), prob=torch.tensor([[9.0] * 3, [0.5] * 3, [0.5] * 3, [0.5] * 3]))
    record[2:] = _rows(Probs, prob=0.75)
    record.set_at_("prob", torch.zeros(3), 3)
    assert record.prob[2].tolist() == [0.75] * 3 and record.prob[0, 0] == 9


def test_keys_to_update_limit_the_values_checked(Probs: Any) -> None:
    record = probs(Probs)
    bad = _forced(_rows(Probs, b=4), label=torch.full((4,), 8))
    record.update_(bad, keys_to_update=["prob"])
    with pytest.raises(FieldSpecError, match="breaks isin"):
        record.update_(bad, keys_to_update=["label"])


def test_a_record_saved_in_a_folder_keeps_its_files_on_a_refused_write(Probs: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        record = probs(Probs).memmap(folder)
        bad = _forced(_rows(Probs), label=torch.tensor([2, -1]))
        with pytest.raises(
            FieldSpecError, match=r"label: the value written holds -1 at index \(1,\)"
        ):
            record[1:3] = bad
        assert Probs.load_memmap(folder).label.tolist() == [0, 1, 2, 0]


class _Inner:
    level: Annotated[Tensor, Spec("", torch.int64, ge=0, le=9)]


class _Outer:
    inner: Any
    weight: Annotated[Tensor, Spec("", torch.float32, gt=0)]


def _nested() -> tuple[Any, Any]:
    inner_cls = tclass.tensorclass(_Inner)
    outer_ns = {"__annotations__": {"inner": inner_cls, "weight": _Outer.__annotations__["weight"]}}
    outer_cls = type("Outer", (TensorClass,), outer_ns)
    return inner_cls, outer_cls


def test_writes_into_nested_records_check_their_constraints() -> None:
    Inner, Outer = _nested()
    record = Outer(
        inner=Inner(level=torch.arange(4), batch_size=[4]), weight=torch.ones(4), batch_size=[4]
    )
    bad_inner = _forced(
        Inner(level=torch.zeros(2, dtype=torch.int64), batch_size=[2]), level=torch.tensor([3, 12])
    )
    bad = Outer(
        inner=Inner(level=torch.zeros(2, dtype=torch.int64), batch_size=[2]),
        weight=torch.ones(2),
        batch_size=[2],
    )
    bad._tensordict._tensors["inner"] = bad_inner
    with pytest.raises(
        FieldSpecError,
        match=r"into its field 'inner': _Inner.level: the value written holds 12 at index \(1,\)",
    ):
        record[:2] = bad
    with pytest.raises(FieldSpecError, match="Inner.level holds -3"):
        Outer(inner={"level": torch.full((4,), -3)}, weight=torch.ones(4), batch_size=[4])
    with pytest.raises(FieldSpecError, match="breaks le=9"):
        record[1:3] = {"inner": {"level": torch.tensor([1, 10])}}
    assert record.inner.level.tolist() == [0, 1, 2, 3]


# --- preallocation ------------------------------------------------------------------------------


def test_allocate_fills_fields_whose_constraints_refuse_zero() -> None:
    class Alloc(TensorClass):
        count: Annotated[Tensor, Spec("3", torch.int64, ge=1)]
        share: Annotated[Tensor, Spec("", torch.float32, gt=0.5, lt=1)]
        kind: Annotated[Tensor, Spec("", torch.uint8, isin=(4, 9))]
        plain: Annotated[Tensor, Spec("", torch.float32, ge=-1)]

    record = Alloc.allocate([2])
    assert record.count.tolist() == [[1] * 3] * 2 and record.share.tolist() == [0.75] * 2
    assert record.kind.tolist() == [4, 4] and record.plain.tolist() == [0, 0]
    with tempfile.TemporaryDirectory() as folder:
        saved = Alloc.allocate([2], prefix=folder)
        assert saved.kind.tolist() == [4, 4]
        assert Alloc.load_memmap(folder).count.sum() == 6


def test_new_zeros_and_its_kin_build_the_class_unchecked_and_saving_refuses() -> None:
    # Out-of-place results, as math's (README "Value constraints"): the peer's record
    # (it has no constraints), not a refusal nor a TensorDict; what breaks a constraint
    # is refused when saved, where a load would refuse it.
    class Count(TensorClass):
        n: Annotated[Tensor, at.Ge(1)]

    record = Count(n=torch.ones(4), batch_size=[4])
    built = [record.new_zeros(2), record.new_full((2,), 0.5), torch.zeros_like(record)]
    for new in built:
        assert type(new) is Count and set(new.n.tolist()) <= {0.0, 0.5}
        with tempfile.TemporaryDirectory() as folder:
            with pytest.raises(FieldSpecError, match=r"cannot save Count .*breaks ge=1"):
                new.memmap(folder)
    assert type(record.new_empty(2)) is Count and record.new_ones(2).n.tolist() == [1.0, 1.0]


def test_allocate_refuses_a_dtype_without_an_allowed_value() -> None:
    class Never(TensorClass):
        x: Annotated[Tensor, Spec("", torch.uint8, le=-1)]

    with pytest.raises(FieldSpecError, match=r"Never.x: no uint8 value meets le=-1"):
        Never.allocate([2])


def test_constraints_are_part_of_the_spec_a_union_agrees_on() -> None:
    class Union(TensorClass):
        x: Annotated[Tensor, Spec("", ge=0)] | Annotated[Tensor, Spec("", ge=1)]

    assert Union.__tclass_info__.specs is None  # members disagree: unchecked, as before
    spec = Union.__tclass_info__.rules["x"].spec
    assert spec is None
    assert Constraints(ge=0) != Constraints(ge=1)


def test_the_message_shows_a_float32_value_as_written(Probs: Any) -> None:
    # 1.3 in float32 is 1.2999999523162842 as a Python float: the message shows 1.3, the
    # problem keeps the exact number
    with pytest.raises(FieldSpecError) as caught:
        probs(Probs, prob=torch.tensor([[0.5, 1.3, 0.5]] * 4))
    assert "holds 1.3 at index (0, 1), which breaks le=1" in str(caught.value)
    assert caught.value.problems[0].got == torch.tensor(1.3).item()
    record = probs(Probs)
    with pytest.raises(FieldSpecError, match=r"the value written holds -0\.7 at index"):
        record[1:2] = {"prob": torch.full((1, 3), -0.7)}
