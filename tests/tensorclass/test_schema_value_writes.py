"""Where a record's schema and class options met less common write and load paths.

Each test fails on the code before its fix: a Python-value field that holds ``None``
written into rows through a dict (``rec[i] = {"o": 5.0}``) is the field's Python value,
as the same row written as a record of the class makes it (it was a zero-filled tensor
at one row, and a batch-size error at a slice); ``None`` among the values of a list
given one per element to an ``autocast`` field is not set there, as ``None`` given for
the whole field is (``str`` made it ``'None'``, ``bool`` ``False``; ``int`` refused it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
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


# --- autocast: None among the values given one per element ------------------------------


@tensorclass(autocast=True)
class Cast:
    x: torch.Tensor
    s: str = ""
    n: int = 0
    f: float = 0.0
    b: bool = False


GIVEN = {"s": ["a", None, "b"], "n": ["1", None, 2.0], "f": [1, None, 3], "b": [1, None, 0]}
CAST = {"s": ["a", None, "b"], "n": [1, None, 2], "f": [1.0, None, 3.0], "b": [True, None, False]}


def _by_assignment(field: str) -> Cast:
    record = Cast(x=torch.zeros(3), batch_size=[3])
    setattr(record, field, GIVEN[field])
    return record


def _by_rows(field: str) -> Cast:
    record = Cast(x=torch.zeros(3), batch_size=[3])
    record[:] = {field: GIVEN[field]}
    return record


BUILDS: dict[str, Callable[[str], Cast]] = {
    "constructor": lambda f: Cast(x=torch.zeros(3), **{f: GIVEN[f]}, batch_size=[3]),
    "from_dict": lambda f: Cast.from_dict({"x": torch.zeros(3), f: GIVEN[f]}, batch_size=[3]),
    "assignment": _by_assignment,
    "rows": _by_rows,
}


@pytest.mark.parametrize("how", list(BUILDS))
@pytest.mark.parametrize("field", list(GIVEN))
def test_none_in_a_list_for_an_autocast_field_stays_none(
    field: str, how: str, tmp_path: Path
) -> None:
    record = BUILDS[how](field)
    values = getattr(record, field).tolist()
    assert values == CAST[field] and [type(v) for v in values] == [type(v) for v in CAST[field]]
    record.memmap(tmp_path / "folder")
    record.to_h5(str(tmp_path / "r.h5"))
    for back in (Cast.load_memmap(tmp_path / "folder"), Cast.from_h5(str(tmp_path / "r.h5"))):
        assert getattr(back, field).tolist() == CAST[field]


# --- load_state_dict: what was saved, to the sign of a zero -------------------------------


@tensorclass
class Signed:
    x: torch.Tensor
    f: float = 0.0


@pytest.mark.parametrize(("saved", "held"), [(-0.0, 0.0), (0.0, -0.0)])
def test_load_state_dict_sets_a_zero_of_the_other_sign(saved: float, held: float) -> None:
    # equal values are kept (a locked record keeps them), but -0.0 is not 0.0 (the peer
    # sets the value saved)
    source = Signed(x=torch.zeros(2), f=saved, batch_size=[2])
    record = Signed(x=torch.zeros(2), f=held, batch_size=[2])
    record.load_state_dict(source.state_dict())
    assert str(record.f) == str(saved)


# --- rows of a record of the class holding a Python value its class refuses -------------


class Counted(tclass.TensorClass):
    x: torch.Tensor
    n: Annotated[int, Ge(0)] = 0


def counted() -> Counted:
    return Counted(x=torch.zeros(3), batch_size=[3])


def forced_count() -> Counted:
    """A record holding a value its class refuses (built past the checks, as data a
    check would refuse arrives from outside, as ``test_schema_write_paths.forced``)."""
    record = counted()
    record._tensordict._tensors["n"] = tclass.NonTensorData(-1, batch_size=[3])
    return record


SAME_CLASS_ROWS: dict[str, Callable[[Counted], object]] = {
    "rec[:] = rec": lambda r: r.__setitem__(slice(None), forced_count()),
    "rec[0] = rec[0]": lambda r: r.__setitem__(0, forced_count()[0]),
    "rec[mask] = rec": lambda r: r.__setitem__(
        torch.tensor([True, False, True]), forced_count()[:2]
    ),
    "update_at_": lambda r: r.update_at_(forced_count()[:2], slice(0, 2)),
}


@pytest.mark.parametrize("path", list(SAME_CLASS_ROWS))
def test_rows_of_a_record_of_the_class_have_their_python_values_checked(path: str) -> None:
    # as its tensors are (test_schema_write_paths: rec[slice] = forced(2)), and as a
    # record of another class, a TensorDict or a dict written there is
    record = counted()
    with pytest.raises(errors.FieldSpecError, match="ge=0"):
        SAME_CLASS_ROWS[path](record)
    assert record.n == 0
