"""The spec grammar and the record checker (tclass._core._spec, tclass._core._record_spec).

The checker has two paths: a function generated per class (the one every construction
runs) and the general matcher (which writes the messages). Hypothesis checks that they
accept exactly the same records, for every form the generated path handles.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tclass import Spec
from tclass._core._record_spec import RecordSpecs
from tclass._core._row_spec import RIGHT, RowSpecs
from tclass._core._spec import (
    ANON,
    FIXED,
    NAMED,
    SYMBOLIC,
    VARIADIC,
    TensorSpec,
    allocation_dtype,
    allocation_shape,
    exact_tensor,
    inexact_value,
    parse_dims,
    spec_of,
)
from tclass._io._schema import widened
from tclass.errors import FieldSpecError, SpecSyntaxError

try:
    import jaxtyping
except ImportError:
    jaxtyping = None


def ours(dims: str, dtype: Any = None) -> TensorSpec:
    spec = spec_of(torch.Tensor, [Spec(dims, dtype)], "")
    assert spec is not None
    return spec


def whole(dims: str, dtype: Any = None) -> TensorSpec:
    """A jaxtyping-style spec without jaxtyping (the same object spec_of builds)."""
    dtypes = None if dtype is None else frozenset([dtype])
    return TensorSpec(parse_dims(dims), dtypes, True, f"Shaped[Tensor, {dims!r}]", dims)


# --- the grammar -----------------------------------------------------------------------


def test_tokens() -> None:
    kinds = [(d.kind, d.name, d.size, d.broadcast) for d in parse_dims("3 h _ _w #h #4 *rest")]
    assert kinds == [
        (FIXED, None, 3, False),
        (NAMED, "h", -1, False),
        (ANON, None, -1, False),
        (ANON, None, -1, False),
        (NAMED, "h", -1, True),
        (FIXED, None, 4, True),
        (VARIADIC, "rest", -1, False),
    ]
    (expr,) = parse_dims("size=2*h+1")
    assert expr.kind == SYMBOLIC and expr.names == ("h",)
    assert parse_dims("...")[0].kind == VARIADIC and parse_dims("")[:1] == ()
    assert parse_dims("*_")[0] == parse_dims("...")[0]


@pytest.mark.parametrize(
    "bad", ["*a *b", "... *b", "1.5", "h-", "f(x)", "x.y", "*3", "_4", "#", "lambda"]
)
def test_bad_tokens(bad: str) -> None:
    with pytest.raises(SpecSyntaxError):
        parse_dims(bad)


# --- placement -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "ndim", "batch", "where"),
    [
        (ours("3 h w"), 4, 1, [(1, 2), (2, 3), (3, 4)]),
        (ours("3 h w"), 3, 1, None),
        (ours("*r 2"), 4, 1, [(1, 3), (3, 4)]),
        (whole("*b 3"), 3, 2, [(0, 2), (2, 3)]),
        (whole("*b 3"), 2, 2, None),  # the 3 would sit on a batch dim
        (whole("b 3"), 2, 1, [(0, 1), (1, 2)]),
        (whole("b 3"), 3, 2, [(1, 2), (2, 3)]),  # stacked: one more batch dim
        (whole("b 3"), 1, 0, None),  # a function's tensor: its whole shape
        (whole("b *r"), 4, 1, [(0, 1), (1, 4)]),
    ],
)
def test_placement(spec: TensorSpec, ndim: int, batch: int, where: Any) -> None:
    places = spec.placement(ndim, batch)
    assert (None if places is None else [(start, stop) for _, start, stop in places]) == where


@pytest.mark.parametrize(
    ("spec", "ndim", "batch", "where"),
    [
        (whole("b 3"), 1, 0, [(0, 1)]),  # a row: 'b', a batch dim, dropped
        (whole("b 3"), 0, 0, []),  # r[0, 0] of a [4, 3] record of a [4, 3] tensor
        (whole("n b 3"), 1, 0, [(0, 1)]),
        (whole("n b 3"), 2, 1, None),  # batch dims left: the spec wants them all
        (whole("b 3"), 1, 1, None),  # [4] of batch [4]: the 3 is missing
        (whole("b 3"), 2, 0, [(0, 1), (1, 2)]),  # 'b' a feature dim, as before
        (whole("b 3"), 3, 0, None),
        (whole("*b 3"), 1, 0, [(0, 0), (0, 1)]),  # a variadic: unchanged
    ],
)
def test_placement_in_a_records_field(spec: TensorSpec, ndim: int, batch: int, where: Any) -> None:
    places = spec.placement(ndim, batch, field=True)
    assert (None if places is None else [(start, stop) for _, start, stop in places]) == where


# --- the two paths agree ---------------------------------------------------------------

FAST_SPECS = {
    "exact": lambda: [("a", ours("3 h", torch.float32), True), ("b", ours("h w"), True)],
    "tail": lambda: [("a", whole("*b 3 h", torch.float32), True), ("b", whole("*b h w"), False)],
    "right": lambda: [("a", whole("n 3 h"), True), ("b", ours("h"), True)],
    "any": lambda: [("a", ours("...", torch.float32), True), ("b", ours("h"), True)],
}


@given(
    form=st.sampled_from(sorted(FAST_SPECS)),
    batch=st.lists(st.integers(1, 2), max_size=2),
    shape_a=st.lists(st.integers(1, 4), max_size=4),
    shape_b=st.lists(st.integers(1, 4), max_size=4),
    float_a=st.booleans(),
    b_present=st.booleans(),
)
def test_the_generated_check_agrees_with_the_matcher(
    form: str,
    batch: list[int],
    shape_a: list[int],
    shape_b: list[int],
    float_a: bool,
    b_present: bool,
) -> None:
    fields = FAST_SPECS[form]()
    specs = RecordSpecs("R", fields)
    a = torch.zeros((*batch, *shape_a), dtype=torch.float32 if float_a else torch.int64)
    entries: dict[str, Any] = {"a": a}
    if b_present:
        entries["b"] = torch.zeros((*batch, *shape_b))
    observed = {k: (v.dtype, tuple(v.shape)) for k, v in entries.items()}
    fast = specs._fast(entries, len(batch))
    assert fast == (not specs.problems(observed, len(batch))), (form, batch, shape_a, shape_b)


# Features of a valid record for each form, given h and w (and the batch dims).
VALID = {
    "exact": lambda h, w, m: ((3, h), (h, w)),
    "tail": lambda h, w, m: ((3, h), (h, w)),
    "right": lambda h, w, m: ((3, h) if m else (2, 3, h), (h,)),
    "any": lambda h, w, m: ((w, w), (h,)),
}


@given(
    form=st.sampled_from(sorted(FAST_SPECS)),
    batch=st.lists(st.integers(1, 2), max_size=2),
    h=st.integers(1, 3),
    w=st.integers(1, 3),
    field=st.sampled_from(["a", "b"]),
    lead=st.integers(1, 2),
    other=st.none() | st.lists(st.integers(1, 3), max_size=4),
    h2=st.integers(1, 3),
)
def test_the_generated_assign_check_agrees_with_the_matcher(
    form: str, batch: list[int], h: int, w: int, field: str, lead: int, other: Any, h2: int
) -> None:
    specs = RecordSpecs("R", FAST_SPECS[form]())
    assert specs.inline is not None
    a, b = VALID[form](h, w, len(batch))
    entries: dict[str, Any] = {"a": torch.zeros((*batch, *a)), "b": torch.zeros((*batch, *b))}
    before = {k: (v.dtype, tuple(v.shape)) for k, v in entries.items()}
    assert not specs.problems(before, len(batch))
    # The value: the field's valid features with another h, or any features; its batch
    # dims the record's, or not.
    features = VALID[form](h2, w, len(batch))[field == "b"] if other is None else other
    lead_dims = batch if lead == 1 else [*batch[:-1], 5] if batch else []
    value = torch.zeros((*lead_dims, *features))
    merged = {**entries, field: value}
    observed = {k: (v.dtype, tuple(v.shape)) for k, v in merged.items()}
    batch_ok = value.shape[: len(batch)] == torch.Size(batch)
    fits = batch_ok and not specs.problems(observed, len(batch))
    assert specs.inline.assign[field](entries, value, torch.Size(batch)) == fits


@given(
    form=st.sampled_from(sorted(FAST_SPECS)),
    batch=st.lists(st.integers(1, 2), max_size=2),
    h=st.integers(1, 3),
    w=st.integers(1, 3),
    right=st.booleans(),
    rows=st.lists(st.integers(0, 3), max_size=2),
    features=st.none() | st.lists(st.integers(1, 3), max_size=4),
    h2=st.integers(1, 3),
    float_a=st.booleans(),
)
def test_the_row_fast_path_agrees_with_the_row_check(
    form: str,
    batch: list[int],
    h: int,
    w: int,
    right: bool,
    rows: list[int],
    features: Any,
    h2: int,
    float_a: bool,
) -> None:
    """Rows written into a valid record fit when they have an allowed dtype and the
    record's feature dims (a dict's entries: aligned on the right, a 0-dim one fills);
    the generated fast path and the slow check say the same (the fast path may defer)."""
    specs = RecordSpecs("R", FAST_SPECS[form]())
    check = RowSpecs(specs)
    a, b = VALID[form](h, w, len(batch))
    targets = {"a": torch.zeros((*batch, *a)), "b": torch.zeros((*batch, *b))}
    shape = VALID[form](h2, w, len(batch))[0] if features is None else tuple(features)
    value = torch.zeros((*rows, *shape), dtype=torch.float32 if float_a else torch.int64)
    n, f = len(batch), len(a)
    if right:
        m, carried = RIGHT, tuple(value.shape[value.ndim - f :]) if value.ndim >= f else None
        fits = value.ndim == 0 or carried == tuple(a) or f == 0
    else:
        m, fits = len(rows), value.ndim == 0 or tuple(value.shape[len(rows) :]) == tuple(a)
    fits = fits and (float_a or form in ("right",))  # "a" wants float32 but in "right"
    fast = check.fit(targets, {"a": value}, n, m)
    assert not fast or fits
    if fits:
        check.check(targets, {"a": value}, torch.Size(batch), m, len(rows), "write")
    else:
        with pytest.raises(FieldSpecError) as caught:
            check.check(targets, {"a": value}, torch.Size(batch), m, len(rows), "write")
        assert caught.value.problems[0].field == "a" and "write: " in str(caught.value)


def test_inexact_values() -> None:
    assert inexact_value(torch.tensor([1, 2, 255]), torch.uint8) is None
    assert inexact_value(torch.tensor([1, 300]), torch.uint8) == 300
    assert inexact_value(torch.tensor([-1]), torch.uint8) == -1
    assert inexact_value(exact_tensor([2.0, 2.5]), torch.int64) == 2.5
    assert inexact_value(exact_tensor(300.7), torch.uint8) == 300.7  # a double, unrounded
    assert inexact_value(exact_tensor(float("nan")), torch.int32) is not None
    assert inexact_value(exact_tensor([0, 1]), torch.bool) is None
    assert inexact_value(exact_tensor(2), torch.bool) == 2
    assert inexact_value(exact_tensor(0.1), torch.float16) is None  # floats round
    assert inexact_value(exact_tensor(1 + 2j), torch.float32) == 1 + 2j
    assert inexact_value(exact_tensor(True), torch.uint8) is None
    assert exact_tensor([1.5]).dtype == torch.float64
    assert exact_tensor(np.zeros(2, dtype=np.float32)).dtype == torch.float32


def test_a_value_in_a_union_field_is_skipped_by_both_paths() -> None:
    specs = RecordSpecs("R", [("a", ours("3"), False)])
    specs.check({"a": "not a tensor"}, 1)
    with pytest.raises(Exception, match="R.a"):
        specs.check({"a": torch.zeros(2, 4)}, 1)


def test_bind_reports_the_first_sizes() -> None:
    specs = RecordSpecs("R", [("a", ours("h *r"), True), ("b", ours("h w"), True)])
    observed = {"a": (None, (2, 5, 6, 7)), "b": (None, (2, 5, 9))}
    assert specs.bind(observed, 1) == {"h": 5, "r": (6, 7), "w": 9}


# --- allocation ------------------------------------------------------------------------


def test_allocation_shapes() -> None:
    assert allocation_shape(ours("3 h"), [4], {"h": 2}) == ([4, 3, 2], [], None)
    assert allocation_shape(whole("*b 3 h"), [4, 5], {"h": 2}) == ([4, 5, 3, 2], [], None)
    assert allocation_shape(whole("b 3"), [4], {}) == ([4, 3], [], None)
    assert allocation_shape(whole("b *r"), [4], {"r": [1, 2]}) == ([4, 1, 2], [], None)
    assert allocation_shape(ours("n+1 2*n"), [], {"n": 3}) == ([4, 6], [], None)
    shape, missing, why = allocation_shape(ours("h _"), [4], {"h": 2})
    assert shape is None and not missing and why is not None and "'_'" in why
    assert allocation_shape(ours("h w h+w"), [4], {}) == (None, ["h", "w", "h", "w"], None)


def test_allocation_dtypes() -> None:
    assert allocation_dtype(ours("2", torch.uint8)) == torch.uint8
    assert allocation_dtype(ours("2")) == torch.get_default_dtype()
    assert allocation_dtype(ours("2", (torch.int8, torch.int64))) == torch.int64
    assert allocation_dtype(ours("2", (torch.int8, torch.int16))) == torch.int16


# --- lossless widening -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "allowed", "expected"),
    [
        (torch.uint8, {torch.float32}, torch.float32),
        (torch.uint8, {torch.int8}, None),
        (torch.uint8, {torch.int16, torch.int64}, torch.int16),
        (torch.int32, {torch.float32}, None),
        (torch.int32, {torch.float64}, torch.float64),
        (torch.float16, {torch.bfloat16}, None),
        (torch.bfloat16, {torch.float32}, torch.float32),
        (torch.float32, {torch.float16}, None),
        (torch.float32, {torch.complex64, torch.float64}, torch.float64),
        (torch.bool, {torch.uint8}, torch.uint8),
        (torch.int64, {torch.float64}, None),
    ],
)
def test_widening(
    src: torch.dtype, allowed: set[torch.dtype], expected: torch.dtype | None
) -> None:
    assert widened(src, frozenset(allowed)) == expected


@given(
    src=st.sampled_from(
        [
            torch.bool,
            torch.uint8,
            torch.int8,
            torch.int16,
            torch.int32,
            torch.float16,
            torch.bfloat16,
            torch.float32,
        ]
    ),
    dst=st.sampled_from(
        [
            torch.uint8,
            torch.int16,
            torch.int32,
            torch.int64,
            torch.float16,
            torch.float32,
            torch.float64,
        ]
    ),
)
def test_a_widening_round_trips_every_value(src: torch.dtype, dst: torch.dtype) -> None:
    if widened(src, frozenset([dst])) is None:
        return
    if src.is_floating_point:
        values = torch.randn(1000).to(src)
        values = torch.cat([values, torch.tensor([float("inf"), -0.0, 65504.0]).to(src)])
    elif src == torch.bool:
        values = torch.tensor([True, False])
    else:
        info = torch.iinfo(src)
        values = torch.tensor([info.min, info.max, 0, 1, -1 if info.min < 0 else 2]).to(src)
    assert torch.equal(values.to(dst).to(src), values)


@pytest.mark.skipif(jaxtyping is None, reason="jaxtyping is not installed")
def test_jaxtyping_specs_read() -> None:
    spec = spec_of(jaxtyping.UInt8[torch.Tensor, "*batch 3 h w"], [], "")
    assert spec is not None and spec.whole and spec.dtypes == frozenset([torch.uint8])
    assert spec.text == "UInt8[Tensor, '*batch 3 h w']"
    shaped = spec_of(jaxtyping.Shaped[torch.Tensor, "..."], [], "")
    assert shaped is not None and shaped.dtypes is None and shaped.any_shape
    assert spec_of(jaxtyping.Float[torch.Tensor, "b"], [], "").dtypes >= {
        torch.float32,
        torch.bfloat16,
    }  # type: ignore[union-attr]
    import numpy as np

    assert spec_of(jaxtyping.Float[np.ndarray, "b"], [], "") is None  # not a tensor
