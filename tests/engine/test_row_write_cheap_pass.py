"""``td[index] = rows`` passes its usual value in one cheap pass (``check_entries``'s
``_fit_plainly``): tensors of the selected shape, and Python values (a record's ``str``
field) beside them, without the full part-by-part check (``check_parts``), which reads
no leaf of a Python value either. What the full check refuses is still refused, nothing
written."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass
from tclass._engine import _part_checks
from tclass.errors import BatchSizeError


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    full = _part_checks.check_parts

    def counted(writes: Any) -> None:
        calls.append(1)
        full(writes)

    monkeypatch.setattr(_part_checks, "check_parts", counted)
    return calls


def test_rows_with_a_python_value_pass_the_cheap_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counted(monkeypatch)
    td = tclass.TensorDict({"a": torch.zeros(5, 3), "s": "x"}, batch_size=[5])
    td[torch.tensor([0, 2])] = tclass.TensorDict({"a": torch.ones(2, 3), "s": "y"}, [2])
    assert calls == []
    assert td["a"].sum(1).tolist() == [3.0, 0.0, 3.0, 0.0, 0.0]
    assert td["s"] == ["y", "x", "y", "x", "x"]


def test_a_record_with_a_str_field_takes_the_cheap_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    @tclass.tensorclass
    class Row:
        obs: torch.Tensor
        env: str

    calls = _counted(monkeypatch)
    r = Row(torch.zeros(4, 2), "a", batch_size=[4])
    r[1:3] = Row(torch.ones(2, 2), "a", batch_size=[2])
    assert calls == []
    assert r.obs.sum(1).tolist() == [0.0, 2.0, 2.0, 0.0]
    assert r.env == "a"


def test_a_tensor_that_does_not_fit_beside_a_python_value_writes_nothing() -> None:
    td = tclass.TensorDict({"a": torch.zeros(5, 3), "b": torch.zeros(5), "s": "x"}, [5])
    rows = {"a": torch.ones(2, 3), "b": torch.ones(2, 1), "s": "y"}
    with pytest.raises(BatchSizeError, match="'b'"):
        td[torch.tensor([0, 2])] = rows
    assert td["a"].sum().item() == 0.0
    assert td["s"] == "x"
