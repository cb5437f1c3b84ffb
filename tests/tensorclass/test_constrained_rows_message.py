"""A row write into constrained fields spells the write (``Cls[<int64 tensor [2]>] =
...``) only for the message of a refused one: a write whose values fit reads each value
once and formats nothing (issue 29: the description cost about a microsecond a write)."""

from __future__ import annotations

from typing import Annotated

import pytest
import torch

from tclass import Spec, TensorClass, errors
from tclass._tensorclass import _writes


class Bounded(TensorClass):
    x: Annotated[torch.Tensor, Spec("2", torch.float32, ge=0, le=1)]
    env: str = ""


def test_a_write_that_fits_spells_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object) -> str:
        raise AssertionError("the write was described though nothing was refused")

    monkeypatch.setattr(_writes, "_describe", refused)
    record = Bounded(torch.zeros(4, 2), "a", batch_size=[4])
    record[torch.tensor([1, 3])] = Bounded(torch.full((2, 2), 0.5), "a", batch_size=[2])
    record[:2] = {"x": torch.ones(2, 2)}
    assert record.x.sum(1).tolist() == [2.0, 2.0, 0.0, 1.0]


@pytest.mark.parametrize(
    ("index", "shown"),
    [(torch.tensor([1, 3]), r"Bounded\[<int64 tensor \[2\]>\]"), (slice(1, 3), r"Bounded\[1:3\]")],
)
def test_a_refused_write_is_named_in_the_message(index: object, shown: str) -> None:
    record = Bounded(torch.zeros(4, 2), "a", batch_size=[4])
    rows = Bounded(torch.zeros(2, 2), "a", batch_size=[2])
    rows.x[1, 0] = 3.0  # (written into the tensor: the record does not see it)
    with pytest.raises(
        errors.FieldSpecError,
        match=rf"^{shown} = \.\.\.: Bounded\.x: the value written holds 3\.0 at index \(1, 0\)",
    ):
        record[index] = rows
    with pytest.raises(
        errors.FieldSpecError, match=rf"^{shown} = \.\.\.: Bounded\.x: .* holds 3\.0"
    ):
        record[index] = {"x": rows.x}
    assert record.x.sum().item() == 0.0
