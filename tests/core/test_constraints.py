"""Value constraints of tensor fields (issue 31, item 1): ``Spec(ge=, gt=, le=, lt=,
isin=, finite=, multiple_of=)`` and the annotated-types objects, read and checked by
``tclass._core._constraints`` (pure: no record here)."""

from __future__ import annotations

import math
from typing import Any

import annotated_types as at
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tclass import Spec, errors
from tclass._core._constraints import Constraints, annotated_types_keys
from tclass._core._spec import spec_of

from strategies import SETTINGS  # noqa: E402

SpecSyntaxError = errors.SpecSyntaxError


def build(**given: Any) -> Constraints:
    made = Constraints.build(given, "")
    assert made is not None
    return made


# --- declaring -----------------------------------------------------------------------------


def test_spec_keywords_are_kept_shown_and_compared() -> None:
    spec = Spec("3", torch.float32, ge=0, le=1.5, finite=True)
    assert spec.constraints == Constraints(ge=0, le=1.5, finite=True)
    assert repr(spec) == "Spec('3', torch.float32, ge=0, le=1.5, finite=True)"
    assert spec == Spec("3", torch.float32, ge=0, le=1.5, finite=True)
    assert spec != Spec("3", torch.float32, ge=0, le=1)
    assert hash(spec) == hash(Spec("3", torch.float32, ge=0, le=1.5, finite=True))
    assert Spec("3").constraints is None and repr(Spec("3")) == "Spec('3')"


def test_isin_takes_any_collection_and_drops_repeats() -> None:
    assert Spec(isin=[2, 1, 2]).constraints == Constraints(isin=(2, 1))
    assert Spec(isin=torch.tensor([3, 4])).constraints == Constraints(isin=(3, 4))
    assert Spec(isin=(True, 1)).constraints == Constraints(isin=(True, 1))  # kept apart


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"ge": True}, "ge must be a real number"),
        ({"le": "1"}, "le must be a real number"),
        ({"gt": math.nan}, "gt must be finite"),
        ({"lt": math.inf}, "lt must be finite"),
        ({"isin": []}, "at least one value"),
        ({"isin": "ab"}, "collection of numbers"),
        ({"isin": [1, math.nan]}, "finite real numbers"),
        ({"isin": [1, None]}, "finite real numbers"),
        ({"finite": 1.0}, "finite must be True or False"),
        ({"multiple_of": 0}, "must be positive"),
        ({"ge": 2, "le": 1}, "admits no value"),
        ({"gt": 1, "lt": 1}, "admits no value"),
        ({"ge": 1, "lt": 1}, "admits no value"),
        ({"isin": [5, 6], "le": 4}, "no value of isin meets the bounds"),
    ],
)
def test_malformed_constraints_are_refused_when_declared(given: dict[str, Any], words: str) -> None:
    with pytest.raises(SpecSyntaxError, match=words) as caught:
        Spec("3", **given)
    assert isinstance(caught.value, ValueError)


def test_one_value_interval_is_allowed() -> None:
    assert build(ge=1, le=1).first_violation(torch.ones(3)) is None


# --- annotated-types --------------------------------------------------------------------------


def test_annotated_types_objects_are_read_without_a_spec() -> None:
    spec = spec_of(torch.Tensor, (at.Ge(0), at.Lt(3)), "")
    assert spec is not None and spec.any_shape and spec.dtypes is None
    assert spec.constraints == Constraints(ge=0, lt=3)
    assert spec.text == "Annotated[Tensor, Ge(ge=0), Lt(lt=3)]"  # as written, no Spec


def test_annotated_types_merge_with_the_spec_and_the_later_one_wins() -> None:
    spec = spec_of(torch.Tensor, (Spec("3", torch.float32, ge=5), at.Interval(ge=0, le=1)), "")
    assert spec is not None and spec.constraints == Constraints(ge=0, le=1)
    assert spec.text == "Spec('3', torch.float32) with ge=0, le=1"
    spec = spec_of(torch.Tensor, (at.Gt(0), at.MultipleOf(2), Spec("")), "")
    assert spec is not None and spec.constraints == Constraints(gt=0, multiple_of=2)


def test_other_annotated_types_metadata_and_lookalikes_are_ignored() -> None:
    class Ge:  # a class of that name from another module is not annotated-types'
        ge = 3

    assert annotated_types_keys(Ge()) == ()
    assert annotated_types_keys(at.MinLen(2)) == ()
    assert spec_of(torch.Tensor, (at.MinLen(2), Ge()), "") is None
    assert annotated_types_keys(at.Interval(gt=1)) == ("ge", "gt", "le", "lt")


def test_an_annotated_types_bound_is_checked_like_a_keyword() -> None:
    with pytest.raises(SpecSyntaxError, match="ge must be finite"):
        spec_of(torch.Tensor, (at.Ge(math.inf),), "F.x: ")


# --- checking ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "values", "broken", "index"),
    [
        ({"ge": 0}, [[0.0, 1.0], [-0.5, 2.0]], "ge=0", (1, 0)),
        ({"gt": 0}, [[1.0, 0.0], [-1.0, 2.0]], "gt=0", (0, 1)),
        ({"le": 1}, [[0.0, 1.0], [1.5, 2.0]], "le=1", (1, 0)),
        ({"lt": 1}, [[0.0, 1.0], [1.5, 2.0]], "lt=1", (0, 1)),
        ({"finite": True}, [[0.0, 1.0], [math.inf, 2.0]], "finite=True", (1, 0)),
        ({"isin": (0, 1)}, [[0.0, 1.0], [1.0, 2.0]], "isin=(0, 1)", (1, 1)),
        ({"multiple_of": 2}, [[0.0, 2.0], [4.0, 3.0]], "multiple_of=2", (1, 1)),
    ],
)
def test_the_first_violation_names_the_constraint_index_and_value(
    given: dict[str, Any], values: list[list[float]], broken: str, index: tuple[int, ...]
) -> None:
    tensor = torch.tensor(values)
    found = build(**given).first_violation(tensor)
    assert found is not None
    assert (found.constraint, found.element) == (broken, index)
    assert found.value == tensor[index].item()


def test_the_first_violation_is_the_first_element_whatever_it_breaks() -> None:
    found = build(ge=0, le=1).first_violation(torch.tensor([0.5, 3.0, -1.0]))
    assert found is not None and (found.constraint, found.element) == ("le=1", (1,))


def test_a_nan_breaks_every_bound_but_not_isin_alone_when_it_is_not_listed() -> None:
    values = torch.tensor([0.5, math.nan])
    for kept in ({"ge": 0}, {"le": 1}, {"gt": -1, "lt": 2}, {"finite": True}, {"isin": (0.5,)}):
        found = build(**kept).first_violation(values)
        assert found is not None and found.element == (1,) and math.isnan(found.value)  # type: ignore[arg-type]
    assert build(ge=0).first_violation(torch.tensor([0.0, math.inf])) is None


def test_bounds_outside_an_integer_dtype_do_not_wrap_around() -> None:
    small = torch.tensor([0, 5, 255], dtype=torch.uint8)
    assert build(ge=-1).first_violation(small) is None
    assert build(le=300).first_violation(small) is None
    found = build(le=-1).first_violation(small)
    assert found is not None and found.element == (0,)
    found = build(gt=254.5).first_violation(small)
    assert found is not None and found.element == (0,)


@pytest.mark.parametrize(
    "dtype",
    [torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.int32, torch.uint16,
     torch.uint32, torch.int64],
)  # fmt: skip
def test_every_real_dtype_is_checked(dtype: torch.dtype) -> None:
    values = torch.tensor([1, 2, 3, 4]).to(dtype)
    assert build(ge=1, le=4).first_violation(values) is None
    found = build(ge=1, lt=4).first_violation(values)
    assert found is not None and found.element == (3,) and found.value == 4


def test_bools_and_complex_values() -> None:
    flags = torch.tensor([True, False, True])
    assert build(isin=(True,)).first_violation(flags) == ("isin=(True,)", (1,), False, "False")
    assert build(ge=0, le=1).first_violation(flags) is None
    numbers = torch.tensor([1 + 0j, 2 + 1j])
    assert build(isin=(1, 2)).first_violation(numbers) == ("isin=(1, 2)", (1,), 2 + 1j, "")
    assert build(isin=(1, 2)).first_violation(numbers[:1]) is None
    found = build(ge=0).first_violation(numbers)
    assert found is not None and "complex values have no order" in found.constraint


def test_nothing_to_read_passes() -> None:
    constraints = build(ge=0)
    assert constraints.first_violation(torch.empty(0, 3)) is None
    assert constraints.first_violation(torch.empty(4, device="meta")) is None
    assert constraints.first_violation(torch.tensor(-1.0)) == ("ge=0", (), -1.0, "-1.0")


def test_the_index_is_into_the_tensor_as_it_is_viewed() -> None:
    base = torch.zeros(3, 2)
    base[2, 0] = -1
    found = build(ge=0).first_violation(base.t())  # not contiguous
    assert found is not None and found.element == (0, 2)


def test_json_round_trip() -> None:
    made = build(gt=0, le=2.5, isin=(1, 2), finite=True, multiple_of=1)
    assert made.to_json() == {
        "gt": 0, "le": 2.5, "isin": [1, 2], "finite": True, "multiple_of": 1,
    }  # fmt: skip
    assert Constraints.from_json(made.to_json(), "") == made
    with pytest.raises(SpecSyntaxError, match="malformed constraints"):
        Constraints.from_json({"maximum": 1}, "")


@pytest.mark.parametrize(
    ("given", "dtype", "expected"),
    [
        ({"ge": -3}, torch.float32, 0),
        ({"ge": 2}, torch.int64, 2),
        ({"gt": 2}, torch.int64, 3),
        ({"gt": 0.5, "lt": 1}, torch.float32, 0.75),
        ({"isin": (9, 4)}, torch.uint8, 4),
        ({"ge": 1, "multiple_of": 4}, torch.int32, 4),
        ({"le": -1}, torch.uint8, None),
        ({"isin": (0.5,)}, torch.int64, None),
    ],
)
def test_example_is_a_value_of_the_dtype_that_meets_them(
    given: dict[str, Any], dtype: torch.dtype, expected: object
) -> None:
    assert build(**given).example(dtype) == expected


# --- the fused check agrees with the element-wise one ---------------------------------------

_bounds = st.one_of(st.none(), st.integers(-3, 3).map(lambda v: v / 2))


@SETTINGS
@given(
    ge=_bounds,
    le=_bounds,
    gt=_bounds,
    finite=st.booleans(),
    isin=st.one_of(st.none(), st.lists(st.integers(-2, 2), min_size=1, max_size=3)),
    values=st.lists(
        st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, math.nan, math.inf]),
        min_size=1,
        max_size=8,
    ),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.int64, torch.uint8]),
)
def test_first_violation_agrees_with_checking_each_value(
    ge: float | None,
    le: float | None,
    gt: float | None,
    finite: bool,
    isin: list[int] | None,
    values: list[float],
    dtype: torch.dtype,
) -> None:
    try:
        constraints = Constraints.build(
            {"ge": ge, "le": le, "gt": gt, "finite": finite, "isin": isin}, ""
        )
    except SpecSyntaxError:
        return  # constraints no value meets
    if constraints is None:
        return
    if not dtype.is_floating_point:
        values = [abs(v) if math.isfinite(v) else 0 for v in values]
    tensor = torch.tensor(values).to(dtype)
    expected = next(
        (i for i, v in enumerate(tensor.tolist()) if constraints.broken_by(v) is not None), None
    )
    found = constraints.first_violation(tensor)
    assert (found.element[0] if found is not None else None) == expected
    assert bool(constraints.holds(tensor).all()) == (expected is None)


@pytest.mark.parametrize(
    ("written", "dtype", "shown"),
    [
        (1.3, torch.float32, "1.3"),  # 1.2999999523162842 as a double
        (0.1, torch.float16, "0.1"),
        (3.14159, torch.bfloat16, "3.14"),  # 3.140625: "3.14" gives it back in bfloat16
        (1e-40, torch.float32, "1e-40"),  # a subnormal
        (0.1, torch.float64, "0.1"),
        (math.nan, torch.float32, "nan"),
        (-math.inf, torch.float16, "-inf"),
    ],
)
def test_a_violation_shows_the_value_as_its_dtype_gives_it_back(
    written: float, dtype: torch.dtype, shown: str
) -> None:
    found = build(ge=5, finite=True).first_violation(torch.tensor([9.0, written], dtype=dtype))
    assert found is not None
    exact = torch.tensor(written, dtype=dtype).item()
    assert found.shown == shown
    if not math.isnan(written):
        assert found.value == exact  # the number itself, exactly
        assert torch.tensor(float(shown), dtype=dtype).item() == exact


def test_integer_and_bool_violations_show_their_repr() -> None:
    found = build(le=3).first_violation(torch.tensor([1, 300], dtype=torch.int16))
    assert found is not None and (found.value, found.shown) == (300, "300")
