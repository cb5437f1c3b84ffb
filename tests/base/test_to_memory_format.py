"""``to(memory_format=...)`` on every kind of collection: torch's keyword, which the peer
takes (applied to 4-d and 5-d tensors, as ``nn.Module.to``), with or without a device or
a dtype; tclass refused it as an unknown keyword."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import TensorDict, lazy_stack
from tclass.errors import ArgumentError

CHANNELS_LAST = (60, 1, 15, 3)  # the strides of a [2, 3, 4, 5] tensor in channels_last


@tclass.tensorclass
class Frames:
    pixels: torch.Tensor
    camera: str


def _td() -> TensorDict:
    return TensorDict(
        {"a": torch.arange(120.0).view(2, 3, 4, 5), "n": {"b": torch.ones(2, 3)}}, [2]
    )


def test_td_to_memory_format_lays_out_4d_tensors_only() -> None:
    td = _td()
    out = td.to(memory_format=torch.channels_last)
    assert out is not td
    assert out["a"].stride() == CHANNELS_LAST
    assert out["n", "b"].stride() == (3, 1)  # not 4-d: as it was (the peer, nn.Module.to)
    assert torch.equal(out["a"], td["a"])
    assert td["a"].is_contiguous()  # the source keeps its layout


def test_to_memory_format_with_a_dtype_and_a_device() -> None:
    out = _td().to("cpu", torch.float64, memory_format=torch.channels_last)
    assert out["a"].dtype == torch.float64
    assert out["n", "b"].dtype == torch.float64
    assert out["a"].stride() == CHANNELS_LAST
    assert out["a"].sum().item() == sum(range(120))


def test_to_preserve_format_changes_nothing() -> None:
    td = _td()
    assert td.to(memory_format=torch.preserve_format)["a"].stride() == (60, 20, 5, 1)


def test_to_memory_format_keeps_the_lock() -> None:
    td = _td().lock_()
    assert td.to(memory_format=torch.channels_last).is_locked


def test_record_and_lazy_stack_to_memory_format() -> None:
    rec = Frames(pixels=torch.zeros(2, 3, 4, 5), camera="left", batch_size=[2])
    out = rec.to(memory_format=torch.channels_last)
    assert isinstance(out, Frames)
    assert out.pixels.stride() == CHANNELS_LAST
    assert out.camera == "left"
    stack = lazy_stack([_td(), _td()]).to(memory_format=torch.channels_last)
    assert stack["a"].shape == (2, 2, 3, 4, 5)
    assert stack.tensordicts[0]["a"].stride() == CHANNELS_LAST


def test_to_memory_format_refuses_what_is_not_one() -> None:
    with pytest.raises(ArgumentError, match="memory_format must be a torch.memory_format"):
        _td().to(memory_format="channels_last")
