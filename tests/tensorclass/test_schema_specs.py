"""Shapes and dtypes in field annotations, checked (issue 21, item 1).

Two spellings: ``Annotated[Tensor, Spec("3 h w", torch.uint8)]`` (no dependency; the
dims are the feature dims) and jaxtyping's ``UInt8[Tensor, "*batch 3 h w"]`` (the whole
tensor; jaxtyping tests skip without it). Checked when a record is built and when a
field is assigned (also through ``set``, ``update``, ``replace``, ``from_dict``,
``from_tensordict``): the dtype, the feature dims, and each named dim bound to one size
across the fields of the record. Batch dims are ``batch_size``'s business. Every error
names the field, the dim and both values, and leaves the record as it was.

This file uses ``from __future__ import annotations``: every annotation is a string,
resolved when the class is first used.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import Spec, TensorClass, TensorDict, errors

from forms import FORMS_AND_BRACKETS, Declare, decorated  # noqa: E402
from strategies import SETTINGS  # noqa: E402

try:
    import jaxtyping as jt
except ImportError:  # an optional extra: its tests skip
    jt = None

FieldSpecError = errors.FieldSpecError
SpecSyntaxError = errors.SpecSyntaxError
Tensor = torch.Tensor

U8 = torch.uint8


@pytest.fixture(params=FORMS_AND_BRACKETS)
def declare(request: pytest.FixtureRequest) -> Declare:
    return request.param  # type: ignore[no-any-return]


class _Frame:
    obs: Annotated[Tensor, Spec("3 h w", torch.uint8)]
    mask: Annotated[Tensor, Spec("h w", torch.bool)]
    reward: Annotated[Tensor, Spec("", torch.float32)]
    note: str | None = None


def frame_args(b: int = 4, h: int = 5, w: int = 6, **changes: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "obs": torch.zeros(b, 3, h, w, dtype=U8),
        "mask": torch.zeros(b, h, w, dtype=torch.bool),
        "reward": torch.zeros(b),
        "batch_size": [b],
    }
    args.update(changes)
    return args


@pytest.fixture
def Frame(declare: Declare) -> Any:
    return declare(_Frame)


# --- construction ----------------------------------------------------------------------


def test_a_record_that_fits_its_specs_builds(Frame: Any) -> None:
    frame = Frame(**frame_args())
    assert frame.obs.shape == (4, 3, 5, 6) and frame.obs.dtype == U8
    assert Frame(**frame_args(b=7, h=2, w=9)).mask.shape == (7, 2, 9)


def test_a_wrong_dtype_names_the_field_and_both_dtypes(Frame: Any) -> None:
    with pytest.raises(FieldSpecError) as caught:
        Frame(**frame_args(obs=torch.zeros(4, 3, 5, 6)))
    message = str(caught.value)
    assert "obs" in message and "float32" in message and "uint8" in message
    (problem,) = caught.value.problems
    assert (problem.field, problem.dim, problem.got, problem.expected) == (
        "obs",
        "dtype",
        "float32",
        "uint8",
    )
    # The peer's callers catch TypeError / ValueError; tclass's callers TclassError.
    assert isinstance(caught.value, (TypeError, ValueError, tclass.TclassError))
    assert isinstance(caught.value, errors.FieldTypeError)


def test_a_wrong_fixed_dim_names_the_field_dim_and_values(Frame: Any) -> None:
    with pytest.raises(FieldSpecError) as caught:
        Frame(**frame_args(obs=torch.zeros(4, 4, 5, 6, dtype=U8)))
    (problem,) = caught.value.problems
    assert (problem.field, problem.dim, problem.got, problem.expected) == ("obs", "3", 4, 3)
    assert "obs" in str(caught.value) and "[4, 4, 5, 6]" in str(caught.value)


def test_a_named_dim_is_one_size_across_fields(Frame: Any) -> None:
    with pytest.raises(FieldSpecError) as caught:
        Frame(**frame_args(mask=torch.zeros(4, 5, 7, dtype=torch.bool)))
    (problem,) = caught.value.problems
    assert problem.field == "mask" and problem.dim == "w" and problem.other == "obs"
    assert (problem.got, problem.expected) == (7, 6)
    message = str(caught.value)
    assert "'w'" in message and "7" in message and "6" in message and "obs" in message


def test_every_problem_is_listed(Frame: Any) -> None:
    with pytest.raises(FieldSpecError) as caught:
        Frame(
            **frame_args(
                obs=torch.zeros(4, 3, 5, 6),
                mask=torch.zeros(4, 5, 8, dtype=torch.bool),
                reward=torch.zeros(4, 2),
            )
        )
    fields = sorted(problem.field for problem in caught.value.problems)
    assert fields == ["mask", "obs", "reward"]


def test_the_number_of_feature_dims_is_checked(Frame: Any) -> None:
    with pytest.raises(FieldSpecError, match="reward") as caught:
        Frame(**frame_args(reward=torch.zeros(4, 1)))
    assert caught.value.problems[0].dim == "ndim"
    with pytest.raises(FieldSpecError, match="obs"):
        Frame(**frame_args(obs=torch.zeros(4, 5, 6, dtype=U8)))  # the channel dim missing


def test_batch_dims_stay_batch_sizes_business(Frame: Any) -> None:
    two = Frame(
        obs=torch.zeros(2, 3, 3, 5, 6, dtype=U8),
        mask=torch.zeros(2, 3, 5, 6, dtype=torch.bool),
        reward=torch.zeros(2, 3),
        batch_size=[2, 3],
    )
    assert two.batch_size == (2, 3)
    none = Frame(
        obs=torch.zeros(3, 5, 6, dtype=U8),
        mask=torch.zeros(5, 6, dtype=torch.bool),
        reward=torch.zeros(()),
        batch_size=[],
    )
    assert none.obs.shape == (3, 5, 6)
    with pytest.raises(errors.BatchMismatchError):
        Frame(**frame_args(reward=torch.zeros(5)))


def test_operations_keep_working_and_later_writes_are_checked(Frame: Any) -> None:
    frame = Frame(**frame_args())
    stacked = torch.stack([frame, frame])
    assert stacked.batch_size == (2, 4)
    stacked.reward = torch.ones(2, 4)  # checked with two batch dims
    one = frame[0]
    one.obs = torch.ones(3, 5, 6, dtype=U8)  # checked with no batch dim
    with pytest.raises(FieldSpecError):
        one.obs = torch.ones(3, 5, 7, dtype=U8)
    assert frame.reshape(2, 2).obs.shape == (2, 2, 3, 5, 6)
    assert frame[1:3].mask.shape == (2, 5, 6)


# --- assignment ------------------------------------------------------------------------


def test_assignment_is_checked_and_leaves_the_record_as_it_was(Frame: Any) -> None:
    frame = Frame(**frame_args())
    before = frame.obs
    with pytest.raises(FieldSpecError) as caught:
        frame.obs = torch.zeros(4, 3, 5, 7, dtype=U8)
    (problem,) = caught.value.problems
    # The assigned field is the one blamed, the others' size quoted.
    assert problem.field == "obs" and problem.dim == "w" and problem.other == "mask"
    assert frame.obs is before
    with pytest.raises(FieldSpecError, match="float64"):
        frame.reward = torch.zeros(4, dtype=torch.float64)
    frame.obs = torch.ones(4, 3, 5, 6, dtype=U8)
    assert frame.obs.sum() == 4 * 90


def test_set_update_and_replace_are_checked(Frame: Any) -> None:
    frame = Frame(**frame_args())
    with pytest.raises(FieldSpecError):
        frame.set("mask", torch.zeros(4, 9, 6, dtype=torch.bool))
    with pytest.raises(FieldSpecError):
        frame.update({"reward": torch.zeros(4, dtype=torch.int64)})
    with pytest.raises(FieldSpecError):
        frame.replace(mask=torch.zeros(4, 9, 6, dtype=torch.bool))
    # replace checks the record it builds, so every field may change size together.
    bigger = frame.replace(
        obs=torch.zeros(4, 3, 9, 9, dtype=U8), mask=torch.zeros(4, 9, 9, dtype=torch.bool)
    )
    assert bigger.obs.shape == (4, 3, 9, 9) and frame.obs.shape == (4, 3, 5, 6)


def test_from_dict_and_from_tensordict_are_checked(Frame: Any) -> None:
    good = frame_args()
    del good["batch_size"]
    assert Frame.from_dict(good, batch_size=[4]).obs.shape == (4, 3, 5, 6)
    bad = {**good, "mask": torch.zeros(4, 5, 5, dtype=torch.bool)}
    with pytest.raises(FieldSpecError):
        Frame.from_dict(bad, batch_size=[4])
    with pytest.raises(FieldSpecError):
        Frame.from_tensordict(TensorDict(bad, batch_size=[4]))


def test_unset_optional_fields_bind_nothing(declare: Declare) -> None:
    class _Pair:
        a: Annotated[Tensor, Spec("n")]
        b: Annotated[Tensor, Spec("n")] | None = None

    Pair = declare(_Pair)
    pair = Pair(a=torch.zeros(2, 3), batch_size=[2])
    assert pair.b is None
    with pytest.raises(FieldSpecError, match="'n'"):
        pair.b = torch.zeros(2, 4)
    pair.b = torch.zeros(2, 3)
    pair.b = None
    pair.a = torch.zeros(2, 8)  # b unset again: n is free


def test_array_likes_take_the_specs_dtype(declare: Declare) -> None:
    class _Point:
        xy: Annotated[Tensor, Spec("2", torch.float32)]
        n: Annotated[Tensor, Spec("", torch.int32)]

    point = declare(_Point)(xy=[[1, 2], [3, 4]], n=[5, 6], batch_size=[2])
    assert point.xy.dtype == torch.float32 and point.n.dtype == torch.int32
    assert point.xy.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_a_spec_in_a_union_checks_only_tensors(declare: Declare) -> None:
    class _Either:
        x: Annotated[Tensor, Spec("3", torch.float32)] | str

    Either = declare(_Either)
    assert Either(x="label", batch_size=[2]).x == "label"
    assert Either(x=torch.zeros(2, 3), batch_size=[2]).x.shape == (2, 3)
    with pytest.raises(FieldSpecError):
        Either(x=torch.zeros(2, 4), batch_size=[2])


def test_fields_without_a_spec_are_not_checked(declare: Declare) -> None:
    class _Loose:
        spec: Annotated[Tensor, Spec("k")]
        free: Tensor
        meta: Annotated[Tensor, "a note, not a spec"]

    Loose = declare(_Loose)
    record = Loose(
        spec=torch.zeros(2, 3), free=torch.zeros(2, 9, 9), meta=torch.zeros(2, 1), batch_size=[2]
    )
    record.free = torch.zeros(2, dtype=torch.int8)
    record.meta = torch.zeros(2, 7, 7)


def test_frozen_records_check_at_construction(declare: Declare) -> None:
    Frame = declare(_Frame, frozen=True)
    assert Frame(**frame_args()).obs.shape == (4, 3, 5, 6)
    with pytest.raises(FieldSpecError):
        Frame(**frame_args(obs=torch.zeros(4, 2, 5, 6, dtype=U8)))


# --- row writes (issue 26, item 2) ------------------------------------------------------


class Buffer(TensorClass):
    obs: Annotated[Tensor, Spec("3 h w", torch.uint8)]
    mask: Annotated[Tensor, Spec("h w", torch.bool)]
    reward: Annotated[Tensor, Spec("", torch.float32)]
    note: str | None = None


class LooseBuffer(TensorClass):  # Buffer without specs: the peer's behaviour, unchecked
    obs: Tensor
    mask: Tensor
    reward: Tensor


def buffer(b: int = 6, h: int = 5, w: int = 4, cls: Any = Buffer) -> Any:
    g = torch.Generator().manual_seed(b * 100 + h * 10 + w)
    return cls(
        obs=torch.randint(0, 256, (b, 3, h, w), dtype=U8, generator=g),
        mask=torch.rand(b, h, w, generator=g) > 0.5,
        reward=torch.randn(b, generator=g),
        batch_size=[b],
    )


def rows(b: int = 2, h: int = 5, w: int = 4, **changes: Any) -> dict[str, Any]:
    entries: dict[str, Any] = {
        "obs": torch.full((b, 3, h, w), 7, dtype=U8),
        "mask": torch.ones(b, h, w, dtype=torch.bool),
        "reward": torch.full((b,), 0.5),
    }
    entries.update(changes)
    return entries


def snapshot(record: Any) -> dict[str, Tensor]:
    return {key: value.clone() for key, value in record.items() if isinstance(value, Tensor)}


def assert_untouched(record: Any, before: dict[str, Tensor]) -> None:
    for key, value in before.items():
        assert torch.equal(record.get(key), value), f"{key} was written"


ROW_INDICES = [
    pytest.param(slice(0, 2), id="slice"),
    pytest.param(torch.tensor([4, 1]), id="tensor"),
    pytest.param(torch.tensor([True, False, False, True, False, False]), id="mask"),
]


@pytest.mark.parametrize("index", ROW_INDICES)
def test_a_row_write_of_a_wrong_dtype_writes_nothing(index: Any) -> None:
    buf = buffer()
    before = snapshot(buf)
    bad_obs = torch.full((2, 3, 5, 4), 300.7)  # float32: 300.7 would land as 44
    writes = [
        lambda: buf.__setitem__(index, TensorDict(rows(obs=bad_obs), batch_size=[2])),
        lambda: buf.__setitem__(index, rows(obs=bad_obs)),
        lambda: buf.__setitem__(index, Buffer(**rows(), batch_size=[2]).apply(torch.Tensor.float)),
    ]
    for write in writes:
        with pytest.raises(FieldSpecError) as caught:
            write()
        assert_untouched(buf, before)
        assert "obs" in str(caught.value) and "uint8" in str(caught.value)
        assert "Nothing was written" in str(caught.value)
    problem = caught.value.problems[0]
    assert (problem.field, problem.dim, problem.got, problem.expected) == (
        "obs",
        "dtype",
        "float32",
        "uint8",
    )
    # Every field is checked before the first is written: the last one is bad here.
    with pytest.raises(FieldSpecError, match="reward"):
        buf[index] = rows(reward=torch.zeros(2, dtype=torch.float64))
    assert_untouched(buf, before)
    buf[index] = Buffer(**rows(), batch_size=[2])  # rows that fit are written
    assert bool((buf.obs[index] == 7).all()) and bool((buf.reward[index] == 0.5).all())


def test_a_row_write_cannot_change_a_feature_dim() -> None:
    buf = buffer(h=5, w=4)
    before = snapshot(buf)
    cases = [
        (rows(w=1), "w", 1, 4),  # torch would broadcast a 1 silently
        (rows(obs=torch.zeros(2, 2, 5, 4, dtype=U8)), "3", 2, 3),
        (rows(obs=torch.zeros(2, 4, dtype=U8)), "ndim", 1, 3),  # a dict's: 0 of 3 dims
        (rows(mask=torch.zeros(2, 1, 4, dtype=torch.bool)), "h", 1, 5),
    ]
    for entries, dim, got, expected in cases:
        for value in (TensorDict(entries, batch_size=[2]), entries):
            with pytest.raises(FieldSpecError) as caught:
                buf[:2] = value
            problem = caught.value.problems[0]
            got = got if isinstance(value, TensorDict) or dim != "ndim" else 0
            assert (problem.dim, problem.got, problem.expected) == (dim, got, expected)
            assert_untouched(buf, before)


def test_row_writes_accept_what_fits() -> None:
    buf = buffer()
    buf[:2] = 0  # numbers the dtypes hold exactly fill every field
    assert not buf.obs[:2].any() and not buf.mask[:2].any()
    buf[:2] = 1
    assert bool((buf.obs[:2] == 1).all()) and bool(buf.mask[:2].all())
    buf[:2] = {"obs": 2.0, "reward": 2.5}  # an integral float in uint8, any float in float32
    assert bool((buf.obs[:2] == 2).all()) and bool((buf.reward[:2] == 2.5).all())
    buf[2] = {"obs": torch.full((3, 5, 4), 9, dtype=U8), "mask": torch.tensor(True)}
    assert bool((buf.obs[2] == 9).all())
    one = TensorDict(rows(b=1), batch_size=[1])[0]  # no batch dims: broadcast over the rows
    buf[3:5] = one
    assert bool((buf.obs[3:5] == 7).all())
    buf[5] = Buffer(**rows(b=1), batch_size=[1])[0]
    assert bool((buf.obs[5] == 7).all())
    buf[:, None] = buf[:, None].clone()  # an index that adds a dim
    buf[torch.zeros(6, dtype=torch.bool)] = Buffer(**rows(b=0), batch_size=[0])


@pytest.mark.parametrize("value", [300, -1, 2.5, float("nan"), 300.7])
def test_a_number_the_dtype_cannot_hold_is_refused(value: float) -> None:
    buf = buffer()
    before = snapshot(buf)
    with pytest.raises(FieldSpecError, match="cannot hold exactly") as caught:
        buf[:2] = value
    assert caught.value.problems[0].field == "obs"
    with pytest.raises(FieldSpecError, match="cannot hold exactly"):
        buf[:2] = {"obs": torch.full((3, 5, 4), value).tolist()}
    assert_untouched(buf, before)
    with pytest.raises(FieldSpecError, match="mask"):
        buf[:2] = {"mask": 2}  # a bool holds 0 and 1
    assert_untouched(buf, before)


def test_set_and_update_in_place_are_checked_before_writing() -> None:
    buf = buffer()
    before = snapshot(buf)
    bad_obs = torch.zeros(2, 3, 5, 4)
    good = rows()
    for write in (
        lambda: buf.set_at_("obs", bad_obs, slice(0, 2)),
        lambda: buf.set_at_("mask", torch.zeros(2, 5, 1, dtype=torch.bool), slice(0, 2)),
        lambda: buf.set_("reward", torch.zeros(6, dtype=torch.float64)),
        lambda: buf.set_("obs", torch.zeros(6, 3, 5, 1, dtype=U8)),
        lambda: buf.set("obs", torch.zeros(6, 3, 5, 4), inplace=True),
        lambda: buf.update_at_({**good, "obs": bad_obs}, slice(0, 2)),
        lambda: buf.update_at_(TensorDict({**good, "obs": bad_obs}, batch_size=[2]), [0, 1]),
        lambda: buf.update_({"reward": torch.zeros(6), "mask": torch.zeros(6, 5, 1).bool()}),
        lambda: buf.update_(buffer(w=3)),
        lambda: buf.update({"reward": torch.zeros(6), "obs": torch.ones(6, 3, 5, 4)}, inplace=True),
    ):
        with pytest.raises(FieldSpecError):
            write()
        assert_untouched(buf, before)
    # keys_to_update leaves the others alone, checks included.
    buf.update_at_({**good, "obs": bad_obs}, slice(0, 2), keys_to_update=["reward"])
    assert bool((buf.reward[:2] == 0.5).all())
    buf.update_(buffer(), keys_to_update=["mask"])
    buf.set_at_("obs", torch.ones(3, 5, 4, dtype=U8), 0)
    buf.update({"reward": torch.ones(6)}, inplace=True)
    assert bool((buf.obs[0] == 1).all()) and bool((buf.reward == 1).all())


def test_row_writes_into_nested_records_are_checked_before_the_outer_fields() -> None:
    class Info(TensorClass):
        td_error: Annotated[Tensor, Spec("", torch.float32)]

    class Step(TensorClass):
        obs: Annotated[Tensor, Spec("4", torch.uint8)]
        info: Info

    step = Step(
        obs=torch.zeros(3, 4, dtype=U8), info=Info(td_error=torch.zeros(3), batch_size=[3]),
        batch_size=[3],
    )  # fmt: skip
    bad = {"obs": torch.ones(2, 4, dtype=U8), "info": {"td_error": torch.ones(2).double()}}
    for value in (bad, TensorDict(bad, batch_size=[2])):
        with pytest.raises(FieldSpecError, match="td_error") as caught:
            step[:2] = value
        assert "into its field 'info'" in str(caught.value)
        assert not step.obs.any() and not step.info.td_error.any()
    with pytest.raises(FieldSpecError, match="td_error"):
        step.update_at_({("info", "td_error"): torch.ones(2).double()}, slice(0, 2))
    with pytest.raises(FieldSpecError, match="td_error"):
        step.set_at_(("info", "td_error"), torch.ones(2).double(), slice(0, 2))
    with pytest.raises(FieldSpecError, match="td_error"):
        step.info[:2] = {"td_error": torch.ones(2).double()}
    assert not step.info.td_error.any()
    step[:2] = {"obs": torch.ones(2, 4, dtype=U8), "info": {"td_error": torch.ones(2)}}
    assert step.info.td_error.tolist() == [1.0, 1.0, 0.0]


class Node(TensorClass):  # a class naming itself: its checks are worked out once
    x: Annotated[Tensor, Spec("", torch.float32)]
    child: Node | None = None


def test_a_record_class_naming_itself_checks_its_row_writes() -> None:
    node = Node(x=torch.zeros(2), child=Node(x=torch.zeros(2), batch_size=[2]), batch_size=[2])
    with pytest.raises(FieldSpecError, match="float64"):
        node[:1] = {"x": torch.ones(1, dtype=torch.float64)}
    with pytest.raises(FieldSpecError, match="float64"):
        node.child[:1] = {"x": torch.ones(1, dtype=torch.float64)}
    node[:1] = {"x": torch.ones(1), "child": {"x": torch.ones(1)}}
    assert node.x.tolist() == [1.0, 0.0] and node.child is not None
    assert node.child.x.tolist() == [1.0, 0.0]


def test_a_field_a_row_write_allocates_fits_the_named_dims() -> None:
    class Pair(TensorClass):
        a: Annotated[Tensor, Spec("n", torch.float32)]
        b: Annotated[Tensor, Spec("n", torch.float32)] | None = None

    pair = Pair(a=torch.zeros(4, 3), batch_size=[4])
    with pytest.raises(FieldSpecError, match="'n'"):
        pair[:2] = {"b": torch.ones(2, 5)}
    with pytest.raises(FieldSpecError, match="float64"):
        pair[:2] = {"b": torch.ones(2, 3, dtype=torch.float64)}
    assert pair.b is None
    pair[:2] = {"b": torch.ones(2, 3)}
    assert pair.b is not None and pair.b.shape == (4, 3)


def test_broadcastable_and_anonymous_dims_in_row_writes() -> None:
    class Grid(TensorClass):
        scale: Annotated[Tensor, Spec("#n")]
        free: Annotated[Tensor, Spec("_ *rest")]

    grid = Grid(scale=torch.zeros(3, 4), free=torch.zeros(3, 5, 2, 2), batch_size=[3])
    grid[:2] = {"scale": torch.ones(2, 1), "free": torch.ones(2, 5, 2, 2)}  # '#n': 1 fits
    assert grid.scale[:2].sum() == 8
    with pytest.raises(FieldSpecError, match="'_'"):
        grid[:2] = {"free": torch.ones(2, 1, 2, 2)}  # a row write cannot change it
    with pytest.raises(FieldSpecError, match=r"\*rest"):
        grid[:2] = {"free": torch.ones(2, 5, 2, 1)}


def test_records_without_specs_are_written_as_before() -> None:
    loose = buffer(cls=LooseBuffer)
    loose[:2] = TensorDict(rows(obs=torch.full((2, 3, 5, 4), 300.7)), batch_size=[2])
    assert loose.obs[0, 0, 0, 0] == 44  # torch's cast, unchecked (as the peer writes it)
    assert LooseBuffer.__tclass_info__.row_check is None  # nothing to check, nothing paid


def test_array_likes_the_specs_dtype_cannot_hold_are_refused() -> None:
    frame = Buffer(**rows(b=4), batch_size=[4])
    with pytest.raises(FieldSpecError, match="300.7") as caught:
        frame.obs = np.full((4, 3, 5, 4), 300.7)  # cast to uint8, it would read 44
    assert caught.value.problems[0].dim == "dtype"
    with pytest.raises(FieldSpecError, match="256"):
        Buffer(**rows(b=1, obs=[[[[256] * 4] * 5] * 3]), batch_size=[1])
    assert bool((frame.obs == 7).all())
    frame.obs = np.zeros((4, 3, 5, 4))  # float64 zeros: uint8 holds them
    frame.reward = np.full(4, 0.1)  # a floating dtype holds any real number, rounded
    assert frame.obs.dtype == U8 and frame.reward.dtype == torch.float32


@SETTINGS
@given(
    index_kind=st.sampled_from(["int", "slice", "tensor", "mask"]),
    fault=st.sampled_from(["none", "dtype", "fixed", "named", "number", "extra"]),
    spelling=st.sampled_from(["record", "tensordict", "dict"]),
    data=st.data(),
)
def test_an_invalid_row_write_never_changes_a_byte(
    index_kind: str, fault: str, spelling: str, data: st.DataObject
) -> None:
    buf = buffer()
    before = snapshot(buf)
    b = 6
    if index_kind == "int":
        index: Any = data.draw(st.integers(-b, b - 1))
        count = None
    elif index_kind == "slice":
        start = data.draw(st.integers(0, b - 1))
        index, count = slice(start, b), b - start
    elif index_kind == "tensor":
        index = torch.tensor(data.draw(st.lists(st.integers(0, b - 1), min_size=1, max_size=4)))
        count = len(index)
    else:
        index = torch.tensor(data.draw(st.lists(st.booleans(), min_size=b, max_size=b)))
        count = int(index.sum())
    lead = () if count is None else (count,)
    entries: dict[str, Any] = {
        "obs": torch.full((*lead, 3, 5, 4), 7, dtype=U8),
        "mask": torch.ones(*lead, 5, 4, dtype=torch.bool),
        "reward": torch.full(lead, 0.5),
    }
    if fault == "dtype":
        entries["reward"] = entries["reward"].double()
    elif fault == "fixed":
        entries["obs"] = torch.zeros(*lead, 2, 5, 4, dtype=U8)
    elif fault == "named":
        entries["mask"] = torch.zeros(*lead, 5, 1, dtype=torch.bool)
    elif fault == "number":
        entries["obs"] = 300
    elif fault == "extra":  # an extra feature dim (a dict's would align with batch dims)
        entries["reward"] = torch.zeros(*lead, 1)
        spelling = "tensordict"
    value: Any = entries
    if spelling == "tensordict" and fault != "number":
        value = TensorDict(entries, batch_size=list(lead))
    elif spelling == "record" and fault in ("none", "dtype"):  # records that can be built
        value = Buffer(**{**entries, "reward": torch.full(lead, 0.5)}, batch_size=list(lead))
        if fault == "dtype":  # derived records are not checked again: this one is float64
            value = value.apply(lambda t: t.double() if t.is_floating_point() else t)
    if fault == "none":
        buf[index] = value
        expected = LooseBuffer(**before, batch_size=[b])
        expected[index] = entries
        assert_untouched(buf, snapshot(expected))
    else:
        with pytest.raises(FieldSpecError):
            buf[index] = value
        assert_untouched(buf, before)


# --- the grammar -----------------------------------------------------------------------


def test_variadic_named_dims_bind_a_tuple(declare: Declare) -> None:
    class _Var:
        a: Annotated[Tensor, Spec("*rest")]
        b: Annotated[Tensor, Spec("2 *rest")]

    Var = declare(_Var)
    Var(a=torch.zeros(4, 5, 6), b=torch.zeros(4, 2, 5, 6), batch_size=[4])
    Var(a=torch.zeros(4), b=torch.zeros(4, 2), batch_size=[4])
    with pytest.raises(FieldSpecError, match="rest"):
        Var(a=torch.zeros(4, 5, 6), b=torch.zeros(4, 2, 5), batch_size=[4])


def test_expressions_broadcast_and_anonymous_dims(declare: Declare) -> None:
    class _Grid:
        cells: Annotated[Tensor, Spec("n n")]
        edges: Annotated[Tensor, Spec("n+1 _")]
        scale: Annotated[Tensor, Spec("#n")]
        any_: Annotated[Tensor, Spec("...", torch.float32)]

    Grid = declare(_Grid)
    ok = {
        "cells": torch.zeros(2, 3, 3),
        "edges": torch.zeros(2, 4, 9),
        "scale": torch.zeros(2, 1),
        "any_": torch.zeros(2, 5, 6, 7),
        "batch_size": [2],
    }
    Grid(**ok)
    Grid(**{**ok, "scale": torch.zeros(2, 3)})
    with pytest.raises(FieldSpecError, match="edges"):
        Grid(**{**ok, "edges": torch.zeros(2, 3, 9)})
    with pytest.raises(FieldSpecError, match="cells"):
        Grid(**{**ok, "cells": torch.zeros(2, 3, 4)})
    with pytest.raises(FieldSpecError, match="scale"):
        Grid(**{**ok, "scale": torch.zeros(2, 2)})
    with pytest.raises(FieldSpecError, match="any_"):
        Grid(**{**ok, "any_": torch.zeros(2, 5, dtype=torch.int64)})


def test_several_dtypes_and_any_dtype() -> None:
    class Mixed(TensorClass):
        x: Annotated[Tensor, Spec("", (torch.float16, torch.float32))]
        y: Annotated[Tensor, Spec("2")]

    Mixed(
        x=torch.zeros(2, dtype=torch.float16), y=torch.zeros(2, 2, dtype=torch.int8), batch_size=[2]
    )
    with pytest.raises(FieldSpecError, match="float16 or float32"):
        Mixed(x=torch.zeros(2, dtype=torch.float64), y=torch.zeros(2, 2), batch_size=[2])


@pytest.mark.parametrize("dims", ["h h2 *a *b", "3.5", "*3", "h+", "_4", "__import__('os')", "a.b"])
def test_a_spec_that_cannot_be_read_is_refused_when_written(dims: str) -> None:
    with pytest.raises(SpecSyntaxError) as caught:
        Spec(dims)
    assert repr(dims) in str(caught.value) or dims.split()[0] in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_spec_repr_and_equality() -> None:
    assert repr(Spec("3 h w", torch.uint8)) == "Spec('3 h w', torch.uint8)"
    assert Spec("h", torch.bool) == Spec("h", torch.bool) != Spec("h")
    assert len({Spec("h"), Spec("h")}) == 1
    with pytest.raises(SpecSyntaxError):
        Spec("h", dtype="float32")  # type: ignore[arg-type]


def test_named_dims_bind_per_record_not_across_nested_records(declare: Declare) -> None:
    class _Inner:
        x: Annotated[Tensor, Spec("h")]

    Inner = declare(_Inner)

    class _Outer:
        y: Annotated[Tensor, Spec("h")]
        inner: Inner

    _Outer.__annotations__["inner"] = Inner
    Outer = declare(_Outer)
    outer = Outer(
        y=torch.zeros(2, 3), inner=Inner(x=torch.zeros(2, 5), batch_size=[2]), batch_size=[2]
    )
    assert outer.inner.x.shape == (2, 5)
    with pytest.raises(FieldSpecError):
        Outer(y=torch.zeros(2, 3), inner={"x": torch.zeros(2, 5, 1)}, batch_size=[2])


def test_a_subclass_inherits_and_may_override_specs() -> None:
    class Base(TensorClass):
        x: Annotated[Tensor, Spec("3", torch.float32)]

    class Child(Base):
        x: Annotated[Tensor, Spec("4", torch.float32)]  # type: ignore[misc]
        y: Annotated[Tensor, Spec("", torch.int64)] | None = None

    Child(x=torch.zeros(1, 4), batch_size=[1])
    with pytest.raises(FieldSpecError):
        Child(x=torch.zeros(1, 3), batch_size=[1])
    with pytest.raises(FieldSpecError):
        Base(x=torch.zeros(1, 4), batch_size=[1])


# --- hypothesis: the check accepts exactly the consistent records ----------------------------


@SETTINGS
@given(
    batch=st.lists(st.integers(1, 3), max_size=2),
    h=st.integers(1, 4),
    w=st.integers(1, 4),
    h2=st.integers(1, 4),
    c=st.integers(2, 4),
)
def test_acceptance_matches_the_rule(batch: list[int], h: int, w: int, h2: int, c: int) -> None:
    Frame = decorated(_Frame)
    args = {
        "obs": torch.zeros(*batch, c, h, w, dtype=U8),
        "mask": torch.zeros(*batch, h2, w, dtype=torch.bool),
        "reward": torch.zeros(batch),
        "batch_size": batch,
    }
    consistent = c == 3 and h == h2
    if consistent:
        Frame(**args)
    else:
        with pytest.raises(FieldSpecError):
            Frame(**args)


# --- jaxtyping (an optional extra) -------------------------------------------------------


needs_jaxtyping = pytest.mark.skipif(jt is None, reason="jaxtyping is not installed")


@needs_jaxtyping
def test_jaxtyping_annotations_are_checked(declare: Declare) -> None:
    namespace = {"UInt8": jt.UInt8, "Float": jt.Float, "Bool": jt.Bool, "Tensor": Tensor}
    template = type(
        "_Cam",
        (),
        {
            "__annotations__": {
                "pixels": eval('UInt8[Tensor, "*batch 3 h w"]', namespace),
                "distance": eval('Float[Tensor, "*batch h w"]', namespace),
                "valid": eval('Bool[Tensor, "*batch"]', namespace),
            }
        },
    )
    Cam = declare(template)
    ok = {
        "pixels": torch.zeros(4, 3, 8, 9, dtype=U8),
        "distance": torch.zeros(4, 8, 9),
        "valid": torch.zeros(4, dtype=torch.bool),
        "batch_size": [4],
    }
    cam = Cam(**ok)
    assert cam.distance.shape == (4, 8, 9)
    assert (
        Cam(**{**ok, "distance": torch.zeros(4, 8, 9, dtype=torch.float16)}).distance.dtype
        == torch.float16
    )
    with pytest.raises(FieldSpecError, match="pixels"):
        Cam(**{**ok, "pixels": torch.zeros(4, 3, 8, 9)})  # float, not uint8
    with pytest.raises(FieldSpecError) as caught:
        Cam(**{**ok, "distance": torch.zeros(4, 8, 7)})
    assert caught.value.problems[0].dim == "w"
    with pytest.raises(FieldSpecError):
        cam.pixels = torch.zeros(4, 2, 8, 9, dtype=U8)
    # Batch dims: any number (the leading variadic stands for them).
    assert torch.stack([cam, cam]).batch_size == (2, 4)
    cam[0].valid = torch.tensor(True)


@needs_jaxtyping
def test_jaxtyping_without_a_variadic_describes_the_whole_tensor() -> None:
    class Point(TensorClass):
        xy: jt.Float[Tensor, "b 3"]  # noqa: F722

    Point(xy=torch.zeros(4, 3), batch_size=[4])
    with pytest.raises(FieldSpecError):
        Point(xy=torch.zeros(4, 2), batch_size=[4])
    with pytest.raises(FieldSpecError):
        Point(xy=torch.zeros(4), batch_size=[4])  # the 3 is missing
    stacked = torch.stack([Point(xy=torch.zeros(4, 3), batch_size=[4])] * 2)
    stacked.xy = torch.ones(2, 4, 3)  # a further batch dim is batch_size's business


@needs_jaxtyping
def test_a_row_of_a_jaxtyping_field_without_a_variadic_lacks_its_batch_dim() -> None:
    # "b 3": b is the batch dim; a row (r[0]) drops it, as indexing does, and is a
    # record of its own that can be built, assigned and written back (it was refused:
    # "wants 2 dims in all"); its feature dim is still checked.
    class Point(TensorClass):
        xy: jt.Float[Tensor, "b 3"]  # noqa: F722

    points = Point(xy=torch.zeros(4, 3), batch_size=[4])
    row = Point(xy=torch.ones(3), batch_size=[])
    points[0] = row
    second = points[2]
    second.xy = torch.full((3,), 2.0)  # the row's own entry (refused before)
    points[2] = second
    mask = torch.tensor([False, True, False, True])
    points[mask] = Point(xy=torch.full((2, 3), 3.0), batch_size=[2])
    assert points.xy.tolist() == [[1.0] * 3, [3.0] * 3, [2.0] * 3, [3.0] * 3]
    assert torch.equal(points[0].xy, row.xy)
    with pytest.raises(FieldSpecError, match=r"dim 0 is 2, but its annotation .* fixes it to 3"):
        Point(xy=torch.ones(2), batch_size=[])
    with pytest.raises(FieldSpecError, match="fixes it"):
        points[1] = {"xy": torch.ones(2)}
    with pytest.raises(FieldSpecError):
        Point(xy=torch.ones(4), batch_size=[4])  # the 3 missing: only a row lacks dims


@needs_jaxtyping
def test_jaxtyping_and_spec_share_named_dims() -> None:
    class Mixed(TensorClass):
        a: jt.Float[Tensor, "*batch n"]  # noqa: F722
        b: Annotated[Tensor, Spec("n 2")]

    Mixed(a=torch.zeros(3, 5), b=torch.zeros(3, 5, 2), batch_size=[3])
    with pytest.raises(FieldSpecError, match="'n'"):
        Mixed(a=torch.zeros(3, 5), b=torch.zeros(3, 4, 2), batch_size=[3])


def test_a_lazy_stack_of_records_checks_each_tensor_against_its_spec() -> None:
    class Ragged(TensorClass):
        x: Annotated[Tensor, Spec("n", torch.float32)]
        y: Annotated[Tensor, Spec("n")]

    short = Ragged(x=torch.zeros(3), y=torch.zeros(3), batch_size=[])
    long = Ragged(x=torch.zeros(5), y=torch.zeros(5), batch_size=[])
    stack = tclass.lazy_stack([short, long])  # members bind n differently: each its own
    with pytest.raises(FieldSpecError, match="int64"):
        stack.x = torch.zeros(2, 4, dtype=torch.int64)
    stack.x = torch.ones(2, 4)  # the members differ: the spec alone is checked
    assert stack[1].x.tolist() == [1.0] * 4


class NestedSpecced(TensorClass):
    x: Annotated[Tensor, Spec("k", torch.float32)]


class NestedFixed(TensorClass):
    x: Annotated[Tensor, Spec("3", torch.float32)]


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_a_strided_nested_tensor_in_a_specced_field_is_checked_on_its_parts_sizes() -> None:
    # a strided nested tensor has no .shape: the checks read its parts' sizes (-1 where
    # they differ), as its batch check does (before: torch's internal RuntimeError)
    same = torch.nested.nested_tensor([torch.zeros(3), torch.ones(3)])
    ragged = torch.nested.nested_tensor([torch.zeros(3), torch.zeros(4)])
    for build in (lambda v: NestedSpecced(v, batch_size=[2]), _assigned):
        assert build(same).x.is_nested and build(ragged).x.is_nested  # k binds each
    fixed = NestedFixed(same, batch_size=[2])
    assert torch.equal(fixed.x.unbind()[1], torch.ones(3))
    with pytest.raises(FieldSpecError, match=r"shape \[2, -1\]: dim 1 is -1.*fixes it to 3"):
        NestedFixed(ragged, batch_size=[2])
    ints = torch.nested.nested_tensor([torch.zeros(3, dtype=torch.int64)] * 2)
    with pytest.raises(FieldSpecError, match="has dtype int64.*wants float32"):
        NestedSpecced(ints, batch_size=[2])
    record = NestedSpecced(torch.zeros(2, 3), batch_size=[2])
    with pytest.raises(FieldSpecError, match="has dtype int64"):
        record.x = ints
    assert torch.equal(record.x, torch.zeros(2, 3))  # left as it was


def _assigned(value: Tensor) -> NestedSpecced:
    record = NestedSpecced(torch.zeros(2, 3), batch_size=[2])
    record.x = value
    return record


@needs_jaxtyping
def test_a_row_write_into_a_jaxtyping_leading_variadic_field_takes_its_feature_dims() -> None:
    # "..." (or "*batch 3") stands for the batch dims and may take feature dims too, as
    # the record's own check takes them; a row write compared the value with the spec's
    # count alone ("0 feature dim(s)") and refused every row of a record it had built
    class AnyShape(TensorClass):
        x: jt.Float32[Tensor, "..."]  # noqa: UP037 (a dims string)
        y: jt.Float32[Tensor, "*batch 2"]  # noqa: F722

    buf = AnyShape(x=torch.zeros(4, 3), y=torch.zeros(4, 5, 2), batch_size=[4])
    buf[1] = AnyShape(x=torch.ones(3), y=torch.ones(5, 2), batch_size=[])
    buf[2:] = {"x": torch.full((2, 3), 2.0), "y": torch.full((2, 5, 2), 2.0)}
    buf.update_(TensorDict(x=torch.ones(4, 3), y=torch.ones(4, 5, 2), batch_size=[4]))
    assert buf.x.sum() == 12 and buf.y.sum() == 40
    with pytest.raises(FieldSpecError, match=r"dim '\.\.\.' is 4 there, but 3"):
        buf[0] = {"x": torch.ones(4)}
    with pytest.raises(FieldSpecError, match="has dtype int64"):
        buf[0] = {"y": torch.ones(5, 2, dtype=torch.int64)}
