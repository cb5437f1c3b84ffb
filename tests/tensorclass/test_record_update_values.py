"""A record's ``update`` with tensor values (the usual call: set without the merge checks
a mapping needs, then all checked together on a copy of the storage before the record
takes them): what it writes, and that a refused field leaves every field as it was."""

from __future__ import annotations

from typing import Annotated

import pytest
import torch

from tclass import NonTensorData, Spec, TensorClass, errors


class Step(TensorClass):
    obs: torch.Tensor
    reward: torch.Tensor
    note: str | None = None


class Frames(TensorClass):
    obs: Annotated[torch.Tensor, Spec("h", torch.float32)]
    mask: Annotated[torch.Tensor, Spec("h", torch.bool)]


def _step() -> Step:
    return Step(torch.zeros(3, 2), torch.zeros(3), "a", batch_size=[3])


def test_tensors_set_as_given_or_cloned() -> None:
    step, obs = _step(), torch.ones(3, 2)
    step.update({"obs": obs, "reward": torch.ones(3)})
    assert step.obs is obs and torch.equal(step.reward, torch.ones(3)) and step.note == "a"
    step.update({"obs": obs, "reward": torch.ones(3)}, clone=True)
    assert step.obs is not obs and torch.equal(step.obs, obs)


def test_a_value_node_and_none() -> None:
    step = _step()
    step.update({"obs": torch.ones(3, 2), "note": NonTensorData("b", batch_size=[3])})
    assert step.note == "b" and torch.equal(step.obs, torch.ones(3, 2))
    step.update({"obs": torch.zeros(3, 2), "note": None})
    assert step.note is None


def test_a_refused_field_leaves_the_others() -> None:
    step = _step()
    obs, reward = step.obs, step.reward
    with pytest.raises(errors.BatchSizeError, match="reward"):
        step.update({"obs": torch.ones(3, 2), "reward": torch.ones(4)})
    assert step.obs is obs and step.reward is reward
    with pytest.raises(errors.UnknownFieldError, match="nope"):
        step.update({"obs": torch.ones(3, 2), "nope": torch.ones(3)})
    assert step.obs is obs


def test_specs_checked_together() -> None:
    frames = Frames(torch.zeros(2, 4), torch.zeros(2, 4, dtype=torch.bool), batch_size=[2])
    frames.update({"obs": torch.ones(2, 5), "mask": torch.ones(2, 5, dtype=torch.bool)})
    assert frames.obs.shape == (2, 5)  # the dim h changed size in both fields at once
    with pytest.raises(errors.FieldSpecError):
        frames.update({"obs": torch.ones(2, 6), "mask": torch.ones(2, 7, dtype=torch.bool)})
    assert frames.obs.shape == (2, 5) and frames.mask.shape == (2, 5)
