"""Where a record's schema and class options met less common write and load paths.

Each test fails on the code before its fix: a Python-value field that holds ``None``
written into rows through a dict (``rec[i] = {"o": 5.0}``) is the field's Python value,
as the same row written as a record of the class makes it (it was a zero-filled tensor
at one row, and a batch-size error at a slice).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import pytest
import torch
from annotated_types import Ge

import tclass
from tclass import errors, tensorclass


@tensorclass
class Unset:
    x: torch.Tensor
    o: float | None = None
    n: Annotated[int, Ge(0)] | None = None
    label: str | None = None


def unset() -> Unset:
    return Unset(x=torch.zeros(3), batch_size=[3])


def _as_record(index: Any, **fields: Any) -> Unset:
    rows = unset()[index]
    return Unset(x=rows.x.clone(), **fields, batch_size=rows.batch_size)


ROW_WRITES: dict[str, Callable[[Unset, Any], object]] = {
    "rec[0] = dict": lambda r, v: r.__setitem__(0, {"o": v}),
    "rec[:] = dict": lambda r, v: r.__setitem__(slice(None), {"o": v}),
    "rec[mask] = dict": lambda r, v: r.__setitem__(torch.tensor([True, False, True]), {"o": v}),
    "td[0] = nested dict": lambda r, v: tclass.TensorDict({"r": r}, [3]).__setitem__(
        0, {"r": {"o": v}}
    ),
    "td[:] = nested dict": lambda r, v: tclass.TensorDict({"r": r}, [3]).__setitem__(
        slice(None), {"r": {"o": v}}
    ),
}


@pytest.mark.parametrize("path", list(ROW_WRITES))
def test_a_number_written_into_rows_of_an_unset_value_field_is_its_value(path: str) -> None:
    record = unset()
    ROW_WRITES[path](record, 5.0)
    assert type(record.o) is float and record.o == 5.0  # not tensor([5., 0., 0.])
    by_record = unset()
    by_record[0] = _as_record(0, o=5.0)
    assert by_record.o == record.o  # the record of the class writes the same


def test_an_int_written_into_rows_of_an_unset_value_field_keeps_its_constraint() -> None:
    record = unset()
    record[:] = {"n": 4}
    assert type(record.n) is int and record.n == 4
    fresh = unset()
    with pytest.raises(errors.FieldSpecError, match="ge=0"):
        fresh[0] = {"n": -1}
    assert fresh.n is None


def test_a_tensor_written_into_rows_of_an_unset_value_field_is_still_a_tensor() -> None:
    # a number in tensor form follows the tensor rules, as before (and as the peer)
    record = unset()
    record[0] = {"o": torch.tensor(5.0)}
    assert isinstance(record.o, torch.Tensor) and record.o.tolist() == [5.0, 0.0, 0.0]
