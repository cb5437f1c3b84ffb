"""Row writes into a record over a lazy stack, checked against its specs (session 22).

A record over a lazy stack (``lazy_stack`` of records, a record field read from a lazy
stack of TensorDicts) is written member by member; each member's part of the write is
checked as a write into a record of its own, on the member's data, before anything is
written: the dtypes, the feature dims (the members may differ in them, as ``Cls(...)``
of each takes them; a named dim binds within a member), the constraints. Before, only
the constraints were: a float64 row went into a float32 field (cast by ``copy_``), an
int64 one into a float field, and a 1 was broadcast into a feature dim ``h``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import pytest
import torch

import tclass
from tclass import Spec, TensorClass, TensorDict, errors

try:
    import jaxtyping as jt
except ImportError:  # an optional extra: its tests skip
    jt = None

try:
    from annotated_types import Ge
except ImportError:  # read without importing it, never required: its test skips
    Ge = None

FieldSpecError = errors.FieldSpecError
Tensor = torch.Tensor
I64 = torch.int64


class SpecRow(TensorClass):
    x: Annotated[Tensor, Spec("h", torch.float32)]
    y: Annotated[Tensor, Spec("h", torch.float32)] | None = None


class DtypeRow(TensorClass):
    x: Annotated[Tensor, Spec(dtype=torch.float32)]  # the dtype alone
    y: Annotated[Tensor, Spec(dtype=torch.float32)] | None = None


class BroadRow(TensorClass):
    x: Annotated[Tensor, Spec("#h", torch.float32)]  # a 1 may broadcast into h
    y: Annotated[Tensor, Spec("#h", torch.float32)] | None = None


ROW_CLASSES: list[Any] = [SpecRow, DtypeRow]
if jt is not None:

    class JaxRow(TensorClass):
        x: jt.Float32[Tensor, "b h"]  # noqa: F722
        y: jt.Float32[Tensor, "b h"] | None = None  # noqa: F722

    class JaxDtypeRow(TensorClass):
        x: jt.Float32[Tensor, "..."]  # noqa: UP037 (a dims string)
        y: jt.Float32[Tensor, "..."] | None = None  # noqa: UP037

    ROW_CLASSES += [JaxRow, JaxDtypeRow]


def member(cls: Any, h: int, fill: float = 0.0, n: int = 2) -> Any:
    return cls(x=torch.full((n, h), fill), batch_size=[n])


def snapshot(record: Any) -> list[Tensor]:
    return [part.x.clone() for part in record.unbind(0)]


def assert_untouched(record: Any, before: list[Tensor]) -> None:
    for number, (part, was) in enumerate(zip(record.unbind(0), before)):
        assert torch.equal(part.x, was), f"member {number} was written"


def _writes(value: Callable[[tuple[int, ...]], Tensor]) -> dict[str, Callable[[Any], None]]:
    """Every row write of a field ``x`` into a lazy stack of 4 members of ``h = 3``,
    ``value(shape)`` giving the tensor written (its feature dims last)."""
    return {
        "[int] = record": lambda s: s.__setitem__(
            1, member(type(s), 3).apply(lambda t: value(t.shape))
        ),
        "[int] = TensorDict": lambda s: s.__setitem__(
            1, TensorDict(x=value((2, 3)), batch_size=[2])
        ),
        "[int] = dict": lambda s: s.__setitem__(2, {"x": value((2, 3))}),
        "[slice] = dict": lambda s: s.__setitem__(slice(1, 3), {"x": value((2, 2, 3))}),
        "[:, int] = TensorDict": lambda s: s.__setitem__(
            (slice(None), 0), TensorDict(x=value((4, 3)), batch_size=[4])
        ),
        "[mask] = dict": lambda s: s.__setitem__(
            torch.tensor([False, True, False, True]), {"x": value((2, 2, 3))}
        ),
        "set_": lambda s: s.set_("x", value((4, 2, 3))),
        "set_at_": lambda s: s.set_at_("x", value((2, 3)), 3),
        "set(inplace=True)": lambda s: s.set("x", value((4, 2, 3)), inplace=True),
        "update_": lambda s: s.update_({"x": value((4, 2, 3))}),
        "update_(TensorDict)": lambda s: s.update_(
            TensorDict(x=value((4, 2, 3)), batch_size=[4, 2])
        ),
        "update_at_": lambda s: s.update_at_({"x": value((2, 3))}, 0),
        "update(inplace=True)": lambda s: s.update({"x": value((4, 2, 3))}, inplace=True),
    }


WRONG_DTYPE = _writes(lambda shape: torch.ones(shape, dtype=I64))
GOOD = _writes(lambda shape: torch.full(shape, 2.0))


@pytest.mark.parametrize("cls", ROW_CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("path", list(WRONG_DTYPE))
def test_a_row_write_of_a_dtype_the_spec_refuses_is_refused_as_in_a_dense_record(
    cls: Any, path: str
) -> None:
    stack = tclass.lazy_stack([member(cls, 3) for _ in range(4)])
    dense = torch.stack([member(cls, 3) for _ in range(4)])
    assert stack._tensordict._is_lazy and not dense._tensordict._is_lazy
    before = snapshot(stack)
    for record in (dense, stack):  # the same rule on both (was: copy_ cast it into float32)
        with pytest.raises(FieldSpecError, match="int64") as caught:
            WRONG_DTYPE[path](record)
        assert "Nothing was written" in str(caught.value)
        assert (caught.value.problems[0].field, caught.value.problems[0].got) == ("x", "int64")
    assert_untouched(stack, before)
    GOOD[path](stack)  # what fits is written
    assert bool((torch.stack([part.x for part in stack.unbind(0)]) == 2.0).any())


@pytest.mark.parametrize("cls", [SpecRow, *ROW_CLASSES[2:3]], ids=lambda c: c.__name__)
def test_a_row_write_cannot_change_a_members_feature_dim(cls: Any) -> None:
    stack = tclass.lazy_stack([member(cls, 3), member(cls, 4)])  # ragged: h differs
    before = snapshot(stack)
    for write in (
        lambda: stack.__setitem__(1, member(cls, 1, 9.0)),  # copy_ broadcast the 1 (before)
        lambda: stack.__setitem__(0, {"x": torch.ones(2, 1)}),
        lambda: stack.__setitem__((slice(None), 0), {"x": torch.ones(2, 1)}),
        lambda: stack.set_at_("x", torch.ones(2, 1), 1),
        lambda: stack[1].update_({"x": torch.ones(2, 1)}),
    ):
        with pytest.raises(FieldSpecError, match="dim 'h' is 1 there") as caught:
            write()
        problem = caught.value.problems[0]
        assert (problem.field, problem.dim, problem.got) == ("x", "h", 1)
        assert problem.expected in (3, 4)
        assert_untouched(stack, before)
    with pytest.raises(FieldSpecError, match=r"member 1 of its lazy stack.*'h' is 3 there, but 4"):
        stack[1] = member(cls, 3, 9.0)  # member 0's h is not member 1's
    assert_untouched(stack, before)
    # Each member takes the rows Cls(...) of it takes: its own h.
    stack[:] = tclass.lazy_stack([member(cls, 3, 5.0), member(cls, 4, 6.0)])
    stack[1] = member(cls, 4, 7.0)
    assert stack[0].x.tolist() == [[5.0] * 3] * 2 and stack[1].x.tolist() == [[7.0] * 4] * 2


def test_a_hash_dim_takes_a_broadcast_1_in_each_member_as_in_a_dense_record() -> None:
    loose = tclass.lazy_stack([member(BroadRow, 3), member(BroadRow, 4)])
    loose[1] = member(BroadRow, 1, 9.0)  # '#h': a 1 broadcasts, as in a dense record
    assert loose[1].x.tolist() == [[9.0] * 4] * 2
    dense = torch.stack([member(BroadRow, 4)] * 2)
    dense[1] = member(BroadRow, 1, 9.0)
    assert dense[1].x.tolist() == [[9.0] * 4] * 2


@pytest.mark.parametrize("cls", [SpecRow, *ROW_CLASSES[2:3]], ids=lambda c: c.__name__)
def test_a_named_dim_binds_within_a_member(cls: Any) -> None:
    stack = tclass.lazy_stack([member(cls, 3), member(cls, 4)])
    with pytest.raises(FieldSpecError, match=r"member 0 of its lazy stack.*'h' is 4 here, but 3"):
        stack[0] = {"y": torch.ones(2, 4)}  # a field the write allocates, in member 0 alone
    assert all("y" not in part for part in stack._tensordict._members)
    stack[0] = {"y": torch.ones(2, 3)}  # member 0's h, though member 1's is 4
    stack[1] = {"y": torch.ones(2, 4)}
    assert stack[0].y.shape == (2, 3) and stack[1].y.shape == (2, 4)


def test_all_or_nothing_across_the_members() -> None:
    stack = tclass.lazy_stack([member(SpecRow, 3), member(SpecRow, 3), member(SpecRow, 4)])
    before = snapshot(stack)
    ragged = tclass.lazy_stack([member(SpecRow, 3, 1.0), member(SpecRow, 3, 1.0)])
    ragged._tensordict._members[1]._tensors["x"] = torch.ones(2, 3, dtype=I64)  # past checks
    with pytest.raises(FieldSpecError, match="member 1 of its lazy stack"):
        stack[:2] = ragged  # member 0's part fits: not written either
    assert_untouched(stack, before)


def test_nested_lazy_stacks_are_checked_member_by_member() -> None:
    inner = [tclass.lazy_stack([member(SpecRow, h), member(SpecRow, h)]) for h in (3, 4)]
    stack = tclass.lazy_stack(inner)  # a lazy stack of lazy stacks of records
    assert stack.batch_size == (2, 2, 2) and stack._tensordict._members[0]._is_lazy
    with pytest.raises(FieldSpecError, match=r"member 0 of member 1 of its lazy stack.*int64"):
        stack[1, 0] = {"x": torch.ones(2, 4, dtype=I64)}
    with pytest.raises(
        FieldSpecError, match=r"member 0 of member 1: .*'h' is 1 .*member 1 of member 1: "
    ):
        stack[1] = {"x": torch.ones(2, 2, 1)}
    stack[1, 0] = {"x": torch.full((2, 4), 3.0)}
    assert stack[1, 0].x.tolist() == [[3.0] * 4] * 2 and not stack[1, 1].x.any()


class Inner(TensorClass):
    x: Annotated[Tensor, Spec("h", torch.float32)]


class Outer(TensorClass):
    inner: Inner
    z: Annotated[Tensor, Spec("w", torch.uint8)]


def outer(h: int, w: int) -> Outer:
    return Outer(
        inner=Inner(x=torch.zeros(2, h), batch_size=[2]),
        z=torch.zeros(2, w, dtype=torch.uint8),
        batch_size=[2],
    )


def test_nested_records_of_a_lazy_stack_and_a_record_read_from_a_lazy_stack_of_tensordicts() -> (
    None
):
    stack = tclass.lazy_stack([outer(3, 2), outer(4, 5)])
    for write, match in (
        (lambda: stack.__setitem__(1, {"z": torch.ones(2, 2, dtype=torch.uint8)}), "'w' is 2"),
        (lambda: stack.__setitem__(0, {"z": torch.ones(2, 2)}), "float32"),
        (lambda: stack.__setitem__(0, {"z": 300}), "cannot hold exactly"),
        (lambda: stack.__setitem__(1, {"inner": {"x": torch.ones(2, 3)}}), "'h' is 3"),
        (lambda: stack.set_(("inner", "x"), torch.ones(2, 2, 3, dtype=I64)), "int64"),
        (lambda: stack.inner.__setitem__(1, {"x": torch.ones(2, 1)}), "'h' is 1"),
    ):
        with pytest.raises(FieldSpecError, match=match):
            write()
    assert not stack[1].inner.x.any() and not stack[0].z.any()
    stack[1] = {"inner": {"x": torch.ones(2, 4)}, "z": torch.ones(2, 5, dtype=torch.uint8)}
    assert stack[1].inner.x.sum() == 8 and stack[1].z.sum() == 10
    # A record nested in a lazy stack of TensorDicts: its field read gives a record over
    # a lazy stack of the members' records.
    tds = tclass.lazy_stack([TensorDict(rec=member(SpecRow, h), batch_size=[2]) for h in (3, 4)])
    rec = tds.get("rec")
    assert isinstance(rec, SpecRow) and rec._tensordict._is_lazy
    with pytest.raises(FieldSpecError, match=r"member 1 of its lazy stack.*'h' is 3 there"):
        rec[1] = {"x": torch.ones(2, 3)}
    with pytest.raises(FieldSpecError, match="int64"):
        rec[0] = {"x": torch.ones(2, 3, dtype=I64)}
    rec[1] = {"x": torch.full((2, 4), 4.0)}
    assert tds[1]["rec"].x.sum() == 32


@pytest.mark.skipif(Ge is None, reason="annotated-types is not installed")
def test_constraints_and_specs_together_per_member() -> None:
    class Probs(TensorClass):
        p: Annotated[Tensor, Spec("k", torch.float32), Ge(0)]

    stack = tclass.lazy_stack([Probs(p=torch.zeros(2, k), batch_size=[2]) for k in (2, 5)])
    with pytest.raises(FieldSpecError, match="breaks ge=0"):
        stack[1] = {"p": torch.full((2, 5), -1.0)}
    with pytest.raises(FieldSpecError, match="'k' is 2 there, but 5"):
        stack[1] = {"p": torch.full((2, 2), 1.0)}
    stack[1] = {"p": torch.full((2, 5), 1.0)}
    assert stack[1].p.sum() == 10 and not stack[0].p.any()


def test_is_empty_of_a_ragged_record_reads_its_members() -> None:
    # (was: a HeterogeneousEntryError stacking x, which broke every write of such a record)
    ragged = tclass.lazy_stack([member(SpecRow, 3), member(SpecRow, 4)])
    assert not ragged.is_empty()
    unset = SpecRow(x=None, batch_size=[2])
    assert tclass.lazy_stack([unset, unset.clone()]).is_empty()


def test_an_entry_write_reaching_the_feature_dims_checks_its_dtype_alone() -> None:
    # set_at_(key, v, (..., 0)) writes a column (torch reads the index on every dim):
    # no rows to line up, so the dtype alone is checked, on a dense record too (it
    # compared the column's [2] with h = 3 and refused what the peer writes)
    dense = torch.stack([member(SpecRow, 3)] * 2)
    stack = tclass.lazy_stack([member(SpecRow, 3), member(SpecRow, 3)])
    for record in (dense, stack):
        record.set_at_("x", torch.ones(2, 2), (..., 0))
        assert record.x[..., 0].sum() == 4 and record.x.sum() == 4
        with pytest.raises(FieldSpecError, match="has dtype int64"):
            record.set_at_("x", torch.ones(2, 2, dtype=I64), (..., 1))
        assert record.x.sum() == 4


def test_a_write_several_members_refuse_names_each_of_them_in_one_error() -> None:
    # session 23 (lo23a): the first refusing member alone was named
    stack = tclass.lazy_stack([member(SpecRow, h) for h in (3, 4, 3, 4)])
    before = snapshot(stack)
    with pytest.raises(FieldSpecError) as caught:
        stack[:] = {"x": torch.ones(4, 2, 3)}  # h = 3: members 1 and 3 hold h = 4
    message = str(caught.value)
    assert message.startswith("SpecRow[:] = ...: 2 members of its lazy stack refuse it: member 1:")
    assert "; member 3: SpecRow.x:" in message and "member 0" not in message
    assert message.endswith("Nothing was written")
    problems = caught.value.problems
    assert [(p.field, p.dim, p.got, p.expected) for p in problems] == [("x", "h", 3, 4)] * 2
    assert_untouched(stack, before)
    with pytest.raises(FieldSpecError) as caught:  # every member: each named once
        stack[:, 0] = {"x": torch.ones(4, 5)}
    for number in range(4):
        assert str(caught.value).count(f"member {number}:") == 1
    assert [p.expected for p in caught.value.problems] == [3, 4, 3, 4]
    assert_untouched(stack, before)


def test_members_alike_name_each_refusing_member_too() -> None:
    def full(h: int) -> Any:  # every spec'd field set: the members check as one
        return SpecRow(x=torch.zeros(2, h), y=torch.zeros(2, h), batch_size=[2])

    stack = tclass.lazy_stack([full(3) for _ in range(4)])
    before = snapshot(stack)
    with pytest.raises(FieldSpecError, match=r"2 members .*member 1: .*int64.*member 2: .*int64"):
        stack[1:3] = {"x": torch.ones(2, 2, 3, dtype=I64)}
    with pytest.raises(FieldSpecError, match=r"^SpecRow\[0\] = \.\.\. \(member 0 of its lazy"):
        stack[0] = {"x": torch.ones(2, 3, dtype=I64)}  # one member: its own error as before
    assert_untouched(stack, before)


def test_nested_lazy_stacks_name_each_refusing_member() -> None:
    inner = [tclass.lazy_stack([member(SpecRow, h), member(SpecRow, h)]) for h in (3, 4)]
    stack = tclass.lazy_stack(inner)
    with pytest.raises(FieldSpecError) as caught:
        stack[:, :] = {"x": torch.ones(2, 2, 2, 5)}
    message = str(caught.value)
    assert "4 members of its lazy stack refuse it" in message
    for place in ("member 0 of member 0", "member 1 of member 0", "member 1 of member 1"):
        assert f"{place}: SpecRow.x" in message
