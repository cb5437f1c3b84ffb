"""Random records from their class's schema (issue 31, item 3): ``Cls.rand(...)`` and the
hypothesis strategy ``tclass.testing.records(Cls)``.

Every record built satisfies what its class declares (the constructor checks it again):
dtypes, shapes with each named dim one size, value constraints, nested records,
Python values of their annotations. The round trips through the stores are in
tests/io/test_records_property.py.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, Literal

import pytest
import torch
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

import tclass
from tclass import Spec, TensorClass, errors, tensorclass
from tclass._core._constraints import Constraints
from tclass.testing import records

Tensor = torch.Tensor
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


class Level(TensorClass):
    value: Annotated[Tensor, Spec("", torch.int64, isin=(1, 2, 3))]


class Frame(TensorClass):
    obs: Annotated[Tensor, Spec("3 h w", torch.uint8, ge=1, le=200)]
    mask: Annotated[Tensor, Spec("h w", torch.bool)]
    prob: Annotated[Tensor, Spec("k", (torch.float16, torch.float32), gt=0, lt=1)]
    steps: Annotated[Tensor, Spec("*rest", torch.int32, ge=-7, multiple_of=3)]
    more: Annotated[Tensor, Spec("*rest k+1", torch.float64, finite=True)]
    any_size: Annotated[Tensor, Spec("_", torch.int8)]
    free: Tensor
    level: Level
    name: str
    count: int = 0
    scale: float = 1.0
    flag: bool = False
    tags: list[str] | None = None
    weights: dict[str, int] | None = None
    mode: Literal["train", "eval"] = "train"
    pair: tuple[int, str] | None = None
    extra: tclass.TensorDict | None = None
    child: Frame | None = None


CONSTRAINED = {
    "obs": Constraints(ge=1, le=200),
    "prob": Constraints(gt=0, lt=1),
    "steps": Constraints(ge=-7, multiple_of=3),
    "more": Constraints(finite=True),
}


def check_frame(frame: Frame, batch: tuple[int, ...]) -> None:
    """What Frame declares, checked field by field (not only by the constructor)."""
    assert frame.batch_size == batch
    n = len(batch)
    h, w = frame.mask.shape[n:]
    assert frame.obs.shape[n:] == (3, h, w) and frame.obs.dtype == torch.uint8
    k = frame.prob.shape[-1]
    assert frame.more.shape[-1] == k + 1
    assert frame.steps.shape[n:] == frame.more.shape[n:-1]  # *rest, bound once
    assert frame.prob.dtype in (torch.float16, torch.float32)
    for name, constraints in CONSTRAINED.items():
        assert constraints.first_violation(getattr(frame, name)) is None, name
    assert set(frame.level.value.reshape(-1).tolist()) <= {1, 2, 3}
    assert isinstance(frame.name, str) and isinstance(frame.count, int)
    assert isinstance(frame.scale, float) and isinstance(frame.flag, bool)
    assert frame.mode in ("train", "eval")
    assert frame.tags is None or all(isinstance(tag, str) for tag in frame.tags)
    assert frame.weights is None or all(isinstance(v, int) for v in frame.weights.values())
    assert frame.pair is None or (isinstance(frame.pair[0], int) and isinstance(frame.pair[1], str))
    assert frame.child is None  # a Frame in a Frame: not without end
    Frame.from_tensordict(frame.to_tensordict())  # the checks, once more


@pytest.mark.parametrize("batch", [(), (4,), (2, 3), (0,)])
def test_rand_builds_a_record_that_fits_its_class(batch: tuple[int, ...]) -> None:
    for seed in range(10):
        check_frame(Frame.rand(batch, generator=torch.Generator().manual_seed(seed)), batch)


def test_rand_sets_optional_fields_but_a_record_of_its_own_class() -> None:
    frame = Frame.rand([2], generator=torch.Generator().manual_seed(0))
    assert frame.tags is not None and frame.pair is not None and frame.extra is not None
    assert frame.child is None


def test_rand_takes_the_dims_it_is_given() -> None:
    frame = Frame.rand([2], dims={"h": 5, "w": 7, "k": 2, "rest": (3, 1)})
    assert frame.obs.shape == (2, 3, 5, 7) and frame.prob.shape == (2, 2)
    assert frame.steps.shape == (2, 3, 1) and frame.more.shape == (2, 3, 1, 3)


def test_rand_refuses_a_dim_no_spec_uses() -> None:
    with pytest.raises(
        errors.FieldSpecError, match=r"dims=\{'depth': \.\.\.\} names no dim of Frame"
    ):
        Frame.rand([2], dims={"depth": 3})


def test_the_same_generator_gives_the_same_record() -> None:
    one = Frame.rand([3], generator=torch.Generator().manual_seed(7))
    two = Frame.rand([3], generator=torch.Generator().manual_seed(7))
    other = Frame.rand([3], generator=torch.Generator().manual_seed(8))
    assert one.to_dict(convert_tensors=True) == two.to_dict(convert_tensors=True)
    assert one.to_dict(convert_tensors=True) != other.to_dict(convert_tensors=True)


def test_rand_puts_the_tensors_on_the_device() -> None:
    frame = Frame.rand([2], device="cpu")
    assert frame.device == torch.device("cpu") and frame.obs.device.type == "cpu"


def test_a_dtype_without_an_allowed_value_is_refused() -> None:
    class Never(TensorClass):
        x: Annotated[Tensor, Spec("", torch.uint8, le=-1)]

    with pytest.raises(errors.FieldSpecError, match=r"Never.x: no uint8 value meets le=-1"):
        Never.rand([2])


def test_a_required_field_of_an_unknown_type_is_refused_unless_it_has_a_default() -> None:
    class Opaque:
        pass

    class Holder(TensorClass):
        thing: Opaque
        other: Opaque = Opaque()

    with pytest.raises(errors.FieldTypeError, match="Holder.thing: tclass cannot build a random"):
        Holder.rand([])

    class Kept(TensorClass):
        other: Opaque | None = None
        fallback: Opaque = Opaque()

    kept = Kept.rand([])
    assert isinstance(kept.fallback, Opaque)


def test_a_record_that_must_hold_its_own_class_is_refused() -> None:
    @tensorclass
    class Loop:
        x: Tensor
        again: Loop

    with pytest.raises(errors.FieldTypeError, match="without end; make the field optional"):
        Loop.rand([1])


def test_a_class_with_its_own_init_is_built_from_its_fields() -> None:
    class Own(TensorClass):
        x: Annotated[Tensor, Spec("", torch.int64, isin=(4, 5))]

        def __init__(self, **kwargs: Any) -> None:
            raise AssertionError("rand builds records from their fields")

    own = Own.rand([3])
    assert set(own.x.tolist()) <= {4, 5}


def test_jaxtyping_dims_on_batch_dims_take_the_batch_sizes() -> None:
    jt = pytest.importorskip("jaxtyping")

    class Jax(TensorClass):
        x: jt.Float[Tensor, "b n"]  # noqa: F722
        y: Annotated[Tensor, Spec("b", torch.int64)]

    jax = Jax.rand([4])
    assert jax.x.shape[0] == 4 and jax.y.shape == (4, 4)


# --- the hypothesis strategy ---------------------------------------------------------------


@SETTINGS
@given(records(Frame))
def test_drawn_records_fit_their_class(frame: Frame) -> None:
    assert len(frame.batch_size) <= 2 and all(size <= 3 for size in frame.batch_size)
    check_frame(frame, tuple(frame.batch_size))


@SETTINGS
@given(records(Frame, batch_size=st.sampled_from([(5,), (1, 2)]), dims={"k": 2}, optional=False))
def test_the_strategy_takes_batch_sizes_dims_and_keeps_optional_fields_set(frame: Frame) -> None:
    assert tuple(frame.batch_size) in ((5,), (1, 2)) and frame.prob.shape[-1] == 2
    assert frame.tags is not None and frame.extra is not None


def test_the_strategy_draws_unset_fields_and_special_floats() -> None:
    settings_ = settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
    unset = find(records(Frame, batch_size=(2,)), lambda f: f.tags is None, settings=settings_)
    assert unset.tags is None
    nan = find(
        records(Frame, batch_size=(3,)),
        lambda f: bool(torch.isnan(f.free).any()),
        settings=settings_,
    )
    assert bool(torch.isnan(nan.free).any())
    # A constrained field never gets one: finite=True keeps NaN and infinities out.
    with pytest.raises(NoSuchExample):
        find(
            records(Frame, batch_size=(3,)),
            lambda f: not bool(torch.isfinite(f.more).all()),
            settings=settings(max_examples=200, deadline=None),
        )


def test_records_without_hypothesis_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    monkeypatch.setitem(sys.modules, "hypothesis.strategies", None)
    with pytest.raises(errors.MissingDependencyError, match=r"tclass\[testing\]"):
        records(Frame)
