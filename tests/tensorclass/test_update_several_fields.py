"""``record.update`` of several fields: each value stored as the field keeps it and
checked (its type and batch dims, the specs and constraints together with the fields
the record keeps) before the first is written, without a copy of the record's storage
(issue 29: the copy and its second set of writes were a fifth of the update's time)."""

from __future__ import annotations

from typing import Annotated

import pytest
import torch

from tclass import Spec, TensorClass, TensorDict, errors


class Step(TensorClass):
    obs: torch.Tensor
    reward: Annotated[torch.Tensor, Spec("", torch.float32, ge=-1, le=1)]
    extra: torch.Tensor | None = None
    env: str = ""


def step(batch: list[int]) -> Step:
    return Step(
        torch.zeros(*batch, 3), torch.zeros(batch), torch.zeros(batch), "a", batch_size=batch
    )


def test_the_values_given_are_stored_without_a_copy_of_the_storage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(self: TensorDict) -> TensorDict:
        raise AssertionError("update copied the storage")

    monkeypatch.setattr(TensorDict, "_copy_top", refused)
    record = step([4])
    obs, reward = torch.ones(4, 3), torch.full((4,), 0.5)
    record.update({"obs": obs, "reward": reward, "extra": None, "env": "b"})
    assert record.obs is obs and record.reward is reward
    assert record.extra is None and "extra" not in record._tensordict.keys()
    assert record.env == "b"


@pytest.mark.parametrize("batch", [[4], [2, 2]])
def test_a_value_of_other_batch_dims_leaves_the_record_as_it_was(batch: list[int]) -> None:
    record = step(batch)
    wrong = torch.ones(3) if len(batch) == 1 else torch.ones(2, 3)
    for bad in (wrong, torch.tensor(1.0)):
        with pytest.raises(errors.BatchMismatchError):
            record.update({"obs": torch.ones(*batch, 3), "extra": bad})
        assert (record.obs == 0).all() and (record.extra == 0).all()


def test_a_constraint_broken_by_one_field_leaves_the_other_unwritten() -> None:
    record = step([4])
    with pytest.raises(errors.FieldSpecError, match="reward"):
        record.update({"obs": torch.ones(4, 3), "reward": torch.full((4,), 2.0)})
    assert (record.obs == 0).all() and (record.reward == 0).all()
    record.update({"obs": torch.ones(4, 3), "reward": torch.full((4,), 1.0)})
    assert (record.obs == 1).all() and (record.reward == 1).all()
