"""``td[index] = rows`` with an index out of range for the batch (or a mask of another
shape): refused before any entry is written, nested ones and records included (the
peer writes the entries before the first torch refuses; README, Schemas: writes are
all or nothing)."""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch

from tclass import TensorDict, lazy_stack, tensorclass
from tclass.errors import DimError


@tensorclass
class _Rows:
    obs: torch.Tensor
    r: torch.Tensor
    s: str


_BAD = [
    pytest.param(torch.tensor([0, 9]), id="tensor"),
    pytest.param(torch.tensor([0, -9]), id="negative"),
    pytest.param([0, 9], id="list"),
    pytest.param(torch.tensor([True, False, False, False, False, True]), id="mask"),
]


def _td() -> TensorDict:
    nested = TensorDict(b=torch.zeros(5), batch_size=[5])
    return TensorDict(a=torch.zeros(5, 3), n=nested, c=torch.zeros(5, 2), batch_size=[5])


def _rows() -> TensorDict:
    nested = TensorDict(b=torch.ones(2), batch_size=[2])
    return TensorDict(a=torch.ones(2, 3), n=nested, c=torch.ones(2, 2), batch_size=[2])


def _sums(td: Any) -> list[float]:
    return [td[key].sum().item() for key in ("a", ("n", "b"), "c")]


@pytest.mark.parametrize("index", _BAD)
def test_record_rows_out_of_range_write_nothing(index: Any) -> None:
    record = _Rows(torch.zeros(5, 3), torch.zeros(5), "a", batch_size=[5])
    rows = _Rows(torch.ones(2, 3), torch.ones(2), "a", batch_size=[2])
    with pytest.raises(DimError):
        record[index] = rows
    assert record.obs.sum().item() == 0.0
    assert record.r.sum().item() == 0.0
    assert record.s == "a"


@pytest.mark.parametrize("index", _BAD)
@pytest.mark.parametrize("as_dict", [False, True], ids=["td", "dict"])
def test_td_rows_out_of_range_write_nothing(index: Any, as_dict: bool) -> None:
    td = _td()
    rows: Any = _rows().to_dict() if as_dict else _rows()
    with pytest.raises(IndexError):
        td[index] = rows
    assert _sums(td) == [0.0, 0.0, 0.0]


def test_nested_first_rows_out_of_range_write_nothing() -> None:
    td = TensorDict(n=TensorDict(b=torch.zeros(5), batch_size=[5]), a=torch.zeros(5, 3))
    td.batch_size = torch.Size([5])
    rows = TensorDict(n=TensorDict(b=torch.ones(2), batch_size=[2]), a=torch.ones(2, 3))
    rows.batch_size = torch.Size([2])
    with pytest.raises(DimError, match="out of range"):
        td[torch.tensor([0, 9])] = rows
    assert td["n", "b"].sum().item() == 0.0
    assert td["a"].sum().item() == 0.0


def test_lazy_stack_rows_out_of_range_write_nothing() -> None:
    stack = lazy_stack([TensorDict(a=torch.zeros(3), b=torch.zeros(())) for _ in range(5)])
    with pytest.raises(DimError):
        stack[torch.tensor([0, 9])] = TensorDict(
            a=torch.ones(2, 3), b=torch.ones(2), batch_size=[2]
        )
    assert stack[0]["a"].sum().item() == 0.0
    assert stack[0]["b"].item() == 0.0


def test_memmap_rows_out_of_range_write_nothing(tmp_path: Any) -> None:
    td = _td().memmap(os.fspath(tmp_path / "m"))
    with pytest.raises(DimError):
        td[torch.tensor([0, 9])] = _rows()
    assert _sums(td) == [0.0, 0.0, 0.0]
    with pytest.raises(DimError):
        td[[0, 9]] = 1.0
    assert _sums(TensorDict.load_memmap(os.fspath(tmp_path / "m"))) == [0.0, 0.0, 0.0]


def test_in_range_rows_still_written() -> None:
    td = _td()
    td[torch.tensor([0, 4])] = _rows()
    assert _sums(td) == [6.0, 2.0, 4.0]
    assert td["a"][1:4].sum().item() == 0.0


@pytest.mark.parametrize("index", _BAD)
def test_number_out_of_range_writes_nothing_nested_first(index: Any) -> None:
    # the nested TensorDict comes first: it wrote its rows before `a` refused the index
    td = TensorDict(n=TensorDict(b=torch.zeros(5), batch_size=[5]), a=torch.zeros(5, 3))
    td.batch_size = torch.Size([5])
    with pytest.raises(DimError):
        td[index] = 1.0
    assert td["n", "b"].sum().item() == 0.0
    assert td["a"].sum().item() == 0.0
    td[torch.tensor([1, 3])] = 2.0
    assert td["n", "b"].tolist() == [0.0, 2.0, 0.0, 2.0, 0.0]


@pytest.mark.parametrize("index", _BAD)
@pytest.mark.parametrize("value", [1.0, torch.tensor(1.0)], ids=["number", "0-dim"])
def test_number_out_of_range_writes_no_row(index: Any, value: Any) -> None:
    # torch's index_put_ writes row 0 before it refuses row 9
    td = TensorDict(a=torch.zeros(5), b=torch.zeros(5, 2), batch_size=[5])
    with pytest.raises(DimError):
        td[index] = value
    assert td["a"].sum().item() == 0.0
    assert td["b"].sum().item() == 0.0
