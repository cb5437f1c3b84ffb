"""Schemas: spec'd fields (tclass's Spec and jaxtyping) type as Tensor; allocate and
load_memmap's schema options, in both forms."""

from __future__ import annotations

from typing import Annotated

import torch
from jaxtyping import Float, UInt8
from typing_extensions import assert_type

from tclass import Spec, TensorClass, tensorclass


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
