"""Value constraints on the writes into a record's tensors that are not row writes
(issue 31, item 1, "every write path"; row writes are in test_schema_constraints.py):
in-place math (``add_``, ``+=``, ``clamp_``, ``masked_fill_``, ``lerp_``, ``zero_``...),
``copy_`` and ``out=``, ``apply_`` (and ``apply`` / ``named_apply`` with
``inplace=True``), ``fill_`` and ``rename_key_``.

Each refuses a result that breaks a constraint with a ``FieldSpecError`` naming the
field, the constraint, the first offending index and value, and writes nothing: not
the bounded field, not the others (the bounded fields' results are computed into
copies and checked before any tensor is written). Writes into a field's tensor itself
(``record.prob.add_(1)``) do not pass through the record and are not checked.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from typing import Annotated, Any

import pytest
import torch

import tclass
from tclass import Spec, TensorClass, TensorDict, errors

from forms import FORMS, Declare  # noqa: E402

FieldSpecError = errors.FieldSpecError
Tensor = torch.Tensor


class _Probs:
    prob: Annotated[Tensor, Spec("k", torch.float32, ge=0, le=1)]
    free: Annotated[Tensor, Spec("k", torch.float32)]  # same shape, unbounded
    other: Tensor | None = None


@pytest.fixture(params=FORMS)
def Probs(request: pytest.FixtureRequest) -> Any:
    declare: Declare = request.param
    return declare(_Probs)


def probs(cls: Any, value: float = 0.5, b: int = 4, k: int = 3) -> Any:
    return cls(
        prob=torch.full((b, k), value),
        free=torch.full((b, k), 5.0),
        other=torch.zeros(b),
        batch_size=[b],
    )


def _forced(record: Any, **entries: Tensor) -> Any:
    """``record`` with entries written past the checks (data a check would refuse)."""
    for key, value in entries.items():
        record._tensordict._tensors[key] = value
    return record


def _bad(cls: Any) -> Any:
    return _forced(probs(cls), prob=torch.tensor([[0.5, 0.5, 0.5], [0.5, 1.5, 0.5]] * 2))


# Each write, and a value of its operand that keeps prob within [0, 1].
WRITES: dict[str, tuple[Callable[[Any, Any], Any], str]] = {
    "add_": (lambda r, x: r.add_(x), "0.75"),
    "+=": (lambda r, x: r.__iadd__(x), "0.75"),
    "mul_": (lambda r, x: r.mul_(x), "3.0"),
    "sub_": (lambda r, x: r.sub_(x), "-0.75"),
    "clamp_": (lambda r, x: r.clamp_(min=x), "1.25"),
    "lerp_": (lambda r, x: r.lerp_(r.clone().fill_("prob", 0.0).fill_("free", 0.0), x), "-2.0"),
    "masked_fill_": (
        lambda r, x: r.masked_fill_(torch.tensor([False, True, False, True]), x),
        "2.0",
    ),
    "neg_": (lambda r, x: r.neg_(), ""),
    "exp_": (lambda r, x: r.exp_(), ""),
    "mul_ tensor": (lambda r, x: r.mul_(torch.tensor([1.0, 1.0, 4.0, 1.0])), ""),
    "apply_": (lambda r, x: r.apply_(lambda t: t + x), "0.75"),
    "apply_ writing in place": (lambda r, x: r.apply_(lambda t: t.add_(x)), "0.75"),
    "apply inplace=True": (lambda r, x: r.apply(lambda t: t * x, inplace=True), "3.0"),
    "named_apply inplace=True": (
        lambda r, x: r.named_apply(lambda k, t: t * x, inplace=True),
        "3.0",
    ),
    "data.add_": (lambda r, x: r.data.add_(x), "0.75"),
    "r[1:].add_": (lambda r, x: r[1:].add_(x), "0.75"),
    "select().add_": (lambda r, x: r.select("prob").add_(x), "0.75"),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_in_place_math_checks_the_results_and_writes_nothing(Probs: Any, write: str) -> None:
    run, operand = WRITES[write]
    record = probs(Probs)
    before = record.clone()
    with pytest.raises(FieldSpecError) as caught:
        run(record, float(operand) if operand else None)
    message = str(caught.value)
    assert "Probs.prob: the " in message and "Nothing was written" in message, message
    problem = caught.value.problems[0]
    assert problem.field == "prob" and problem.dim in ("le", "ge")
    assert f"which breaks {problem.expected}" in message
    assert problem.got > 1 or problem.got < 0
    assert (record == before).all()  # neither prob nor the unbounded fields changed


def test_a_result_within_the_constraints_is_written_and_the_others_too(Probs: Any) -> None:
    record = probs(Probs)
    record.add_(0.25)
    assert (record.prob == 0.75).all() and (record.free == 5.25).all()
    assert (record.other == 0.25).all()
    record.clamp_(max=0.5)
    assert (record.prob == 0.5).all() and (record.free == 0.5).all()
    record.apply_(lambda t: t.mul_(2))  # in place, on a copy for prob: written after
    assert (record.prob == 1.0).all() and (record.free == 1.0).all()
    assert (record.other == 0.5).all()
    record.masked_fill_(torch.tensor([True, False, False, False]), 0.0)
    assert record.prob[0].sum() == 0 and record.prob[1].sum() == 3


def test_the_first_offending_index_is_the_fields(Probs: Any) -> None:
    record = probs(Probs)
    with pytest.raises(FieldSpecError) as caught:
        record.add_(torch.tensor([0.0, 0.0, 0.75, 0.0]))  # row 2 goes to 1.25
    assert caught.value.problems[0].element == (2, 0)
    assert "at index (2, 0)" in str(caught.value)


def test_zero_checks_a_lower_bound_that_excludes_zero() -> None:
    class Positive(TensorClass):
        scale: Annotated[Tensor, Spec("", gt=0)]

    record = Positive(scale=torch.ones(3), batch_size=[3])
    with pytest.raises(FieldSpecError, match=r"Positive.zero_\(\.\.\.\): .* breaks gt=0"):
        record.zero_()
    assert (record.scale == 1).all()


def test_copy_checks_the_values_written_as_the_field_holds_them(Probs: Any) -> None:
    record = probs(Probs)
    before = record.clone()
    with pytest.raises(FieldSpecError) as caught:
        record.copy_(_bad(Probs))
    written = r"Probs.copy_\(\.\.\.\): _?Probs.prob: the value written holds 1.5 at index \(1, 1\)"
    assert re.search(written, str(caught.value))
    assert (record == before).all()
    for write in (
        lambda: record.copy_({"prob": torch.full((4, 3), 2.0)}),
        lambda: record.copy_(_bad(Probs).to_tensordict()),
        lambda: record.where(torch.zeros(4, dtype=torch.bool), _bad(Probs), out=record),
        lambda: torch.where(torch.zeros(4, dtype=torch.bool), record, _bad(Probs), out=record),
        lambda: torch.clamp(record, min=2.0, out=record),
    ):
        with pytest.raises(FieldSpecError, match="breaks le=1"):
            write()
        assert (record == before).all()
    record.copy_(probs(Probs, value=0.25))
    assert (record.prob == 0.25).all()


def test_copy_casts_before_checking() -> None:
    class Labels(TensorClass):
        label: Annotated[Tensor, Spec("", torch.int64, isin=(0, 1, 2))]

    record = Labels(label=torch.zeros(3, dtype=torch.int64), batch_size=[3])
    record.copy_(TensorDict({"label": torch.tensor([0.5, 1.7, 2.9])}, [3]))  # 0, 1, 2: allowed
    assert record.label.tolist() == [0, 1, 2]
    source = TensorDict({"label": torch.tensor([0.5, 3.2, 1.0])}, [3])
    with pytest.raises(FieldSpecError, match=r"holds 3 at index \(1,\), which breaks isin"):
        record.copy_(source)


def test_fill_checks_the_value_as_the_fields_dtype_holds_it(Probs: Any) -> None:
    record = probs(Probs)
    with pytest.raises(FieldSpecError, match=r"Probs.fill_\('prob', \.\.\.\): .* is 2.0"):
        record.fill_("prob", 2.0)
    assert (record.prob == 0.5).all()
    record.fill_("free", 2.0)  # unbounded
    record.fill_("prob", torch.tensor(1.0))
    assert (record.prob == 1).all() and (record.free == 2).all()


def test_rename_key_checks_the_field_it_moves_into(Probs: Any) -> None:
    record = probs(Probs)
    record.del_("prob")
    with pytest.raises(FieldSpecError, match="Probs.prob holds 5.0"):
        record.rename_key_("free", "prob")
    assert record.prob is None and (record.free == 5).all()
    record.free.fill_(0.25)
    record.rename_key_("free", "prob")
    assert (record.prob == 0.25).all() and record.free is None


class _Inner:
    level: Annotated[Tensor, Spec("", torch.float32, ge=0, le=9)]


class _Outer:
    inner: Any
    z: Tensor


def test_nested_records_and_collections_holding_records_are_all_or_nothing() -> None:
    Inner = tclass.tensorclass(_Inner)
    Outer = tclass.tensorclass(
        type("Outer", (), {"__annotations__": {"inner": Inner, "z": Tensor}})
    )
    record = Outer(
        inner=Inner(level=torch.full((3,), 8.0), batch_size=[3]), z=torch.zeros(3), batch_size=[3]
    )
    for write in (
        lambda: record.add_(2.0),
        lambda: record.apply_(lambda t: t + 2),
        lambda: TensorDict({"z": torch.zeros(3), "r": record}, [3]).add_(2.0),
        lambda: record.fill_("inner", 10.0),
        lambda: record.fill_(("inner", "level"), 10.0),
    ):
        with pytest.raises(FieldSpecError, match="Inner.level: the .*10.0.*which breaks le=9"):
            write()
        assert (record.inner.level == 8).all() and (record.z == 0).all()
    record.add_(1.0)
    assert (record.inner.level == 9).all() and (record.z == 1).all()


def test_a_record_over_a_lazy_stack_checks_each_member(Probs: Any) -> None:
    stacked = tclass.lazy_stack([probs(Probs, b=2), probs(Probs, b=2, value=0.875)])
    with pytest.raises(FieldSpecError, match="breaks le=1"):
        stacked.add_(0.25)
    assert stacked[1].prob.max() == 0.875 and stacked[0].prob.max() == 0.5  # nothing written
    stacked.add_(0.125)
    assert stacked[1].prob.max() == 1.0 and stacked[0].prob.max() == 0.625


def test_a_saved_record_keeps_its_files_on_a_refused_in_place_write(Probs: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        record = probs(Probs).memmap(folder)
        with pytest.raises(FieldSpecError):
            record.add_(1.0)
        loaded = Probs.load_memmap(folder)
        assert (loaded.prob == 0.5).all() and (loaded.free == 5).all()


def test_a_class_without_constraints_gathers_nothing_to_guard() -> None:
    from tclass._base.implemented._leaf_walk import Gather

    class Plain(TensorClass):
        x: Annotated[Tensor, Spec("k")]

    into = Gather(guard=True)
    Plain(x=torch.zeros(2, 3), batch_size=[2])._collect(into, (), 1, ())
    assert into.guards == [] and len(into.leaves) == 1


HOLDER_WRITES: dict[str, Callable[[Any, Any], Any]] = {
    "set_": lambda td, bad: td.set_(("r", "prob"), bad),
    "set_at_": lambda td, bad: td.set_at_(("r", "prob"), bad[1], 1),
    "update_": lambda td, bad: td.update_({"r": {"prob": bad}}),
    "update_at_": lambda td, bad: td.update_at_({("r", "prob"): bad[:2]}, slice(0, 2)),
    "fill_": lambda td, bad: td.fill_(("r", "prob"), float(bad.max())),
    "lazy stack set_": lambda td, bad: tclass.lazy_stack([td, td]).set_(
        ("r", "prob"), torch.stack([bad, bad])
    ),
}


@pytest.mark.parametrize("write", list(HOLDER_WRITES))
def test_a_collection_holding_a_record_writes_its_fields_through_it(Probs: Any, write: str) -> None:
    """A nested key into a record's field is written by the record, which checks it."""
    record = probs(Probs)
    holder = TensorDict({"r": record, "z": torch.zeros(4)}, [4])
    before = record.clone()
    with pytest.raises(FieldSpecError, match=r"Probs\.prob: .*breaks le=1"):
        HOLDER_WRITES[write](holder, torch.full((4, 3), 2.0))
    assert (record == before).all()
    HOLDER_WRITES[write](holder, torch.full((4, 3), 1.0))
    assert (record.prob[1] == 1.0).all()


JOINS: dict[str, Callable[[list[Any], Any], Any]] = {
    "stack": lambda rows, out: torch.stack(rows, out=out),
    "cat": lambda rows, out: torch.cat([torch.stack(rows[:2]), torch.stack(rows[2:])], out=out),
}


@pytest.mark.parametrize("join", list(JOINS))
def test_stack_and_cat_into_a_record_check_its_fields_and_write_all_or_nothing(
    Probs: Any, join: str
) -> None:
    rows = list(_bad(Probs).unbind(0))
    for out in (probs(Probs), TensorDict({"z": torch.zeros(4), "r": probs(Probs)}, [4])):
        before = out.clone()
        with pytest.raises(FieldSpecError, match=r"copy_\(\.\.\.\): .*Probs\.prob.*1\.5"):
            if isinstance(out, TensorDict):
                JOINS[join]([TensorDict({"z": torch.ones(()), "r": row}, []) for row in rows], out)
            else:
                JOINS[join](rows, out)
        assert (out == before).all()  # the unbounded fields and z were not written either
    out = probs(Probs)
    assert JOINS[join](list(probs(Probs, value=0.25).unbind(0)), out) is out
    assert (out.prob == 0.25).all()


@tclass.tensorclass
class Inner:
    y: torch.Tensor


@tclass.tensorclass
class Rec:
    x: torch.Tensor
    label: str
    inner: Inner


def test_a_value_renamed_onto_a_field_of_tensors_or_records_is_refused_as_assigned() -> None:
    """``rename_key_("label", "x")`` would put a Python value (its ``NonTensorData``
    node) in a field declared for tensors, or for records (``"inner"``), which assigning
    it refuses, and a save of it would not load back (``Rec.load`` refused the folder:
    program 12,310,142 of entries,shape,records ``--length 12``): the same
    ``FieldTypeError``, nothing moved (a value stack too)."""
    rec = Rec(
        x=torch.zeros(3),
        label="pong",
        inner=Inner(y=torch.zeros(3), batch_size=[3]),
        batch_size=[3],
    )
    with pytest.raises(errors.FieldTypeError, match=r"Rec.x is annotated Tensor; got a NonTen"):
        rec.rename_key_("label", "x")
    with pytest.raises(errors.FieldTypeError, match=r"Rec.inner is annotated Inner; got a Non"):
        rec.rename_key_(("label",), "inner")
    assert rec.label == "pong" and (rec.x == 0).all() and (rec.inner.y == 0).all()
    stack = torch.stack([rec, rec.replace(label="pang")])
    with pytest.raises(errors.FieldTypeError, match=r"got a NonTensorStack"):
        stack.rename_key_("label", "x")
    assert stack[1, 0].label == "pang" and stack.x.shape == (2, 3)
    with pytest.raises(errors.FieldTypeError):
        rec.x = "pong"  # (as assignment refuses it)
    with pytest.raises(errors.FieldTypeError, match=r"Rec.x is annotated Tensor; got a NonTen"):
        rec.update_at_(tclass.TensorDict({"x": "b"}, []), 0)  # (was torch's dispatch error)
    assert (rec.x == 0).all()


def test_a_tensor_renamed_onto_a_field_of_records_is_refused_as_assigned() -> None:
    """``rename_key_(("inner", "y"), "inner")`` would put a tensor in a field declared for
    a record, which assigning it refuses (and a save of it would not load back:
    program 1,500,077): the same ``FieldTypeError``, nothing moved."""
    rec = Rec(
        x=torch.zeros(3), label="a", inner=Inner(y=torch.ones(3), batch_size=[3]), batch_size=[3]
    )
    with pytest.raises(errors.FieldTypeError, match=r"Rec.inner is annotated Inner; got a Tensor"):
        rec.rename_key_(("inner", "y"), "inner")
    assert (rec.inner.y == 1).all()
    with pytest.raises(errors.FieldTypeError, match=r"Rec.label is annotated str; got a Tensor"):
        rec.rename_key_("x", "label")
    assert rec.label == "a" and (rec.x == 0).all()
    with pytest.raises(errors.FieldTypeError):
        rec.inner = torch.ones(3)  # (as assignment refuses it)


def test_rename_key_onto_a_field_of_a_ragged_lazy_stack_of_records() -> None:
    """The kind check reads a member's value, not the stack's: a ragged field renames
    (no dense value to read), and a tensor onto a field of records is still refused."""

    @tclass.tensorclass
    class Inner:
        y: torch.Tensor

    @tclass.tensorclass
    class Row:
        x: torch.Tensor
        opt: Tensor | None = None
        inner: Inner | None = None

    rows = [
        Row(x=torch.ones(2, n), inner=Inner(y=torch.ones(2), batch_size=[2]), batch_size=[2])
        for n in (3, 4)
    ]
    stack = tclass.lazy_stack(rows, 0)
    stack.rename_key_("x", "opt")
    assert [row.opt.shape for row in stack.unbind(0)] == [(2, 3), (2, 4)]
    with pytest.raises(errors.FieldTypeError, match=r"Row.inner is annotated"):
        stack.rename_key_(("inner", "y"), "inner")
