"""Fields, constructors, optional fields and narrowing, in both forms."""

from __future__ import annotations

import torch
from records import DFrame, DInner, DPoint, DStep, Frame, Inner, Point, Step, dstep, step
from typing_extensions import assert_type


def fields_base() -> None:
    s = step()
    assert_type(s.obs, torch.Tensor)
    assert_type(s.name, str)
    assert_type(s.inner, Inner)
    assert_type(s.inner.z, torch.Tensor)
    assert_type(s.extra, "torch.Tensor | None")
    assert_type(s.count, int)
    if s.extra is not None:
        assert_type(s.extra, torch.Tensor)
    assert_type(s.batch_size, torch.Size)
    assert_type(s.device, "torch.device | None")


def fields_decorator() -> None:
    s = dstep()
    assert_type(s.obs, torch.Tensor)
    assert_type(s.name, str)
    assert_type(s.inner, DInner)
    assert_type(s.extra, "torch.Tensor | None")
    if s.extra is not None:
        assert_type(s.extra, torch.Tensor)
    assert_type(s.count, int)
    assert_type(s.batch_size, torch.Size)
    assert_type(s.device, "torch.device | None")


def constructors() -> None:
    assert_type(Step(torch.zeros(1), "a", Inner(torch.zeros(1)), device="cpu"), Step)
    assert_type(DStep(torch.zeros(1), "a", DInner(torch.zeros(1)), names=None), DStep)
    assert_type(Frame(torch.zeros(1), batch_size=torch.Size([1])), Frame)
    assert_type(DFrame(pixels=torch.zeros(1), batch_size=1), DFrame)
    assert_type(Point(x=torch.zeros(1)), Point)
    assert_type(DPoint(x=torch.zeros(1)), DPoint)


def field_writes() -> None:
    s, d = step(), dstep()
    s.obs = torch.ones(3, 2)
    d.name = "run"
    s.batch_size = [3]
    d.batch_size = torch.Size([3])


def expected_errors() -> None:
    # Each line must raise exactly this error: strict mode's warn_unused_ignores fails
    # the run if one does not.
    Step(torch.zeros(1), "a", Inner(torch.zeros(1)), unknown=1)  # type: ignore[call-arg]
    DStep(torch.zeros(1), "a", DInner(torch.zeros(1)), unknown=1)  # type: ignore[call-arg]
    Step("not a tensor", "a", Inner(torch.zeros(1)))  # type: ignore[arg-type]
    DStep("not a tensor", "a", DInner(torch.zeros(1)))  # type: ignore[arg-type]
    Step(obs=torch.zeros(1), name="a")  # type: ignore[call-arg]
    DStep(obs=torch.zeros(1), name="a")  # type: ignore[call-arg]
    Frame(torch.zeros(1)).pixels = torch.ones(1)  # type: ignore[misc]
    DFrame(torch.zeros(1)).pixels = torch.ones(1)  # type: ignore[misc]
    Step(torch.zeros(1), "a", Inner(torch.zeros(1)), batch_size="3")  # type: ignore[arg-type]
    DStep(torch.zeros(1), "a", DInner(torch.zeros(1)), batch_size="3")  # type: ignore[arg-type]
    Point(torch.zeros(1))  # type: ignore[call-arg, arg-type]
    DPoint(torch.zeros(1))  # type: ignore[call-arg, arg-type]
    step().name = 3  # type: ignore[assignment]
    dstep().name = 3  # type: ignore[assignment]
    step().nonexistent = 1  # type: ignore[attr-defined]
    dstep().nonexistent = 1  # type: ignore[attr-defined]
    Step(torch.zeros(1), "a", DInner(torch.zeros(1)))  # type: ignore[arg-type]
    step(), Step(torch.zeros(1), "a", Inner(torch.zeros(1)), device=1.5)  # type: ignore[arg-type]
