"""Schemas: spec'd fields (tclass's Spec and jaxtyping) type as Tensor, constrained ones
too; allocate, rand, records, json_schema and load_memmap's schema options, in both
forms; ``@checked`` keeps a function's signature (its parameters, keywords and result)
and ``set_checks`` takes a bool."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Annotated, Any

import torch
from annotated_types import Ge, Interval
from hypothesis.strategies import SearchStrategy
from jaxtyping import Float, UInt8
from typing_extensions import assert_type

from tclass import Spec, TensorClass, checked, checks_enabled, set_checks, tensorclass
from tclass.testing import records


class Cam(TensorClass):
    pixels: Annotated[torch.Tensor, Spec("3 h w", torch.uint8)]
    distance: Float[torch.Tensor, "*batch h w"]  # noqa: F722
    label: UInt8[torch.Tensor, "*batch"] | None = None  # noqa: F722


@tensorclass
class DCam:
    pixels: Annotated[torch.Tensor, Spec("3 h w", torch.uint8)]
    distance: Float[torch.Tensor, "*batch h w"]  # noqa: F722
    label: UInt8[torch.Tensor, "*batch"] | None = None  # noqa: F722


def spec_fields() -> None:
    cam = Cam(torch.zeros(1, 3, 2, 2, dtype=torch.uint8), torch.zeros(1, 2, 2), batch_size=[1])
    assert_type(cam.pixels, torch.Tensor)
    assert_type(cam.distance, torch.Tensor)
    assert_type(cam.label, "torch.Tensor | None")
    dcam = DCam(torch.zeros(1, 3, 2, 2), distance=torch.zeros(1, 2, 2), batch_size=[1])
    assert_type(dcam.pixels, torch.Tensor)
    assert_type(dcam.distance, torch.Tensor)
    cam.distance = torch.ones(1, 2, 2)
    dcam.pixels = torch.ones(1, 3, 2, 2)


def spec_errors() -> None:
    Cam(pixels="x", distance=torch.zeros(1))  # type: ignore[arg-type]
    cam = DCam(torch.zeros(1), torch.zeros(1))
    cam.distance = "x"  # type: ignore[assignment]
    Spec("h", dtype="float32")  # type: ignore[arg-type]


def allocate() -> None:
    assert_type(Cam.allocate([4], dims={"h": 2, "w": 2}), Cam)
    assert_type(DCam.allocate(batch_size=4, dims={"h": 2, "w": 2}, prefix="/tmp/c"), DCam)
    assert_type(Cam.allocate([4], dims={"rest": (2, 3)}, device="cpu"), Cam)
    Cam.allocate([4], dims={"h": "2"})  # type: ignore[dict-item]


def load_with_options() -> None:
    assert_type(Cam.load_memmap("/tmp/c", strict=False, widen=True), Cam)
    assert_type(DCam.load_memmap("/tmp/c", strict=False), DCam)


class Bounded(TensorClass):
    prob: Annotated[torch.Tensor, Spec("k", torch.float32, ge=0, le=1)]
    label: Annotated[torch.Tensor, Spec("", isin=(0, 1)), Ge(0)]
    share: Annotated[torch.Tensor, Interval(gt=0, lt=1)] | None = None


@tensorclass
class DBounded:
    prob: Annotated[torch.Tensor, Spec("k", torch.float32, finite=True)]


def constrained_fields() -> None:
    bounded = Bounded(torch.zeros(1, 2), torch.zeros(1), batch_size=[1])
    assert_type(bounded.prob, torch.Tensor)
    assert_type(bounded.label, torch.Tensor)
    assert_type(bounded.share, "torch.Tensor | None")
    assert_type(DBounded(torch.zeros(1, 2), batch_size=[1]).prob, torch.Tensor)
    bounded.share = torch.full((1,), 0.5)
    Spec("", ge="0")  # type: ignore[arg-type]
    Spec("", isin=[None])  # type: ignore[list-item]
    Bounded(prob="x", label=torch.zeros(1))  # type: ignore[arg-type]


def json_schemas() -> None:
    assert_type(Cam.json_schema(), dict[str, Any])
    assert_type(DCam.json_schema(), dict[str, Any])
    assert_type(Bounded.json_schema()["properties"], Any)
    Cam.json_schema(indent=2)  # type: ignore[call-arg]


def random_records() -> None:
    assert_type(Cam.rand([4]), Cam)
    assert_type(DCam.rand(4, dims={"h": 2, "w": 2}), DCam)
    assert_type(Bounded.rand([2, 3], generator=torch.Generator(), device="cpu"), Bounded)
    assert_type(Bounded.rand([2]).prob, torch.Tensor)
    assert_type(records(Cam), SearchStrategy[Cam])
    assert_type(records(DCam, batch_size=(2,), dims={"h": 3}), SearchStrategy[DCam])
    Cam.rand([4], generator=0)  # type: ignore[arg-type]
    Cam.rand([4], dims={"h": "2"})  # type: ignore[dict-item]
    records(Cam, optional="yes")  # type: ignore[arg-type]


@checked
def step(cam: Cam, bounded: Annotated[Bounded, Spec("b")], *, scale: float = 1.0) -> Cam:
    return cam


@checked
def project(
    cam: DCam,
    weights: Float[torch.Tensor, "h k"],  # noqa: F722
    bias: Annotated[torch.Tensor, Spec("k")],
) -> Float[torch.Tensor, "h k"]:  # noqa: F722
    return weights + bias


@checked
async def later(cam: Cam) -> Cam:
    return cam


class Model:
    @checked
    def forward(self, cam: Cam) -> Bounded:
        return Bounded(torch.zeros(1, 2), torch.zeros(1), batch_size=[1])


def checked_functions(cam: Cam, dcam: DCam, bounded: Bounded) -> None:
    assert_type(step(cam, bounded), Cam)
    assert_type(step(cam, bounded, scale=2.0), Cam)
    assert_type(project(dcam, torch.zeros(2, 3), torch.zeros(3)), torch.Tensor)
    assert_type(later(cam), Coroutine[Any, Any, Cam]).close()
    assert_type(Model().forward(cam), Bounded)
    step(cam)  # type: ignore[call-arg]
    step(cam, dcam)  # type: ignore[arg-type]
    step(cam, bounded, scale="x")  # type: ignore[arg-type]
    step(cam, bounded, 2.0)  # type: ignore[call-arg]
    project(cam, torch.zeros(2, 3), torch.zeros(3))  # type: ignore[arg-type]
    Model().forward(bounded)  # type: ignore[arg-type]


def switching_checks() -> None:
    assert_type(checks_enabled(), bool)
    set_checks(False)
    with set_checks(True):
        pass
    set_checks("no")  # type: ignore[arg-type]
