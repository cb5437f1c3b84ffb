"""``apply_`` is all or nothing: a function whose result cannot be written into an entry
(a shape it does not broadcast to, a str) raises before any entry is written, on plain,
nested, lazily stacked, record and memory-mapped collections."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict, errors, tensorclass


@tensorclass
class _Pair:
    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor


def _td() -> TensorDict:
    return TensorDict(
        a=torch.zeros(3),
        n={"b": torch.zeros(3, 2)},
        c=torch.zeros(3, dtype=torch.long),
        batch_size=[3],
    )


def _wrong_shape(x: torch.Tensor) -> torch.Tensor:
    return torch.ones(5) if x.shape[-1:] == (2,) else x + 1


def _str_for_long(x: torch.Tensor) -> Any:
    return "hi" if x.dtype == torch.long else x + 1


def _raises(x: torch.Tensor) -> torch.Tensor:
    if x.dtype == torch.long:
        raise ZeroDivisionError("boom")
    return x + 1


def _values(collection: Any) -> dict[Any, list[Any]]:
    return {k: v.tolist() for k, v in collection.items(True, True)}


def _collections(tmp_path: Path) -> dict[str, Any]:
    record = _Pair(
        a=torch.zeros(3), b=torch.zeros(3, 2), c=torch.zeros(3, dtype=torch.long), batch_size=[3]
    )
    return {
        "plain": _td(),
        "nested": TensorDict(outer=_td(), batch_size=[3]),
        "lazy": tclass.lazy_stack([_td()[0], _td()[1]]),
        "record": record,
        "memmap": _td().memmap_(tmp_path / "m"),
    }


@pytest.mark.parametrize("kind", ["plain", "nested", "lazy", "record", "memmap"])
@pytest.mark.parametrize("fn", [_wrong_shape, _str_for_long, _raises])
def test_a_refused_apply_writes_nothing(tmp_path: Path, kind: str, fn: Any) -> None:
    collection = _collections(tmp_path)[kind]
    before = _values(collection)
    with pytest.raises((errors.TclassError, ZeroDivisionError)):
        collection.apply_(fn)
    assert _values(collection) == before


def test_results_that_fit_are_all_written() -> None:
    td = _td()
    td.apply_(lambda x: x + 1.5)
    assert _values(td) == {"a": [1.5] * 3, ("n", "b"): [[1.5, 1.5]] * 3, "c": [1, 1, 1]}
    td.apply_(lambda x: torch.ones(1))  # broadcast into every entry
    assert td["n", "b"].tolist() == [[1.0, 1.0]] * 3 and td["c"].tolist() == [1, 1, 1]


def test_entries_sharing_a_tensor_see_the_earlier_write() -> None:
    shared = torch.zeros(2)
    td = TensorDict(a=shared, b=shared, batch_size=[2])
    td.apply_(lambda x: x + 1)  # b is read after a is written, as the peer's walk does
    assert shared.tolist() == [2.0, 2.0]
