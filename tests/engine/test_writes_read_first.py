"""Indexed writes read what they are given before writing anything.

An index that is one of the collection's own tensors (``td[td["done"]] = 0``, the reset
of finished environments; its view ``td["done"].squeeze(-1)`` too) selects the rows it
selected at the call in every entry: writing the mask's own entry first used to change
the rows the entries after it got (none, for a reset), so the result hung on the key
order (as the peer's). A tensor value over an entry's own memory (``td[1:4] =
td["x"][:3]``, ``set_at_``) is read before written, as rows of a collection already
were: torch's "refer to a single memory location" refusal used to come after the
entries before it were written (``set_at_``'s named a shape mismatch). The results
equal the same write with the index and value copied first, on plain tensors. A number or
tensor written into every entry is checked by the records among them (nested too)
before any entry is written: one refusing it left the entries before it written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
import torch

import tclass
from tclass import Spec, TensorDict, errors, tensorclass


@tensorclass
class _Step:
    done: torch.Tensor
    x: torch.Tensor


def _td(done_first: bool) -> TensorDict:
    done = torch.tensor([True, False, True])
    x = torch.arange(3.0)
    entries = {"done": done, "x": x} if done_first else {"x": x, "done": done}
    return TensorDict(entries, batch_size=[3])


@pytest.mark.parametrize("done_first", [True, False])
@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda td: td.__setitem__(td["done"], 0), id="number"),
        pytest.param(
            lambda td: td.__setitem__(
                td["done"], TensorDict(done=torch.zeros(2, dtype=torch.bool), x=torch.zeros(2))
            ),
            id="rows",
        ),
        pytest.param(lambda td: td.__setitem__((td["done"],), 0), id="tuple"),
        pytest.param(lambda td: td.masked_fill_(td["done"], 0), id="masked_fill_"),
    ],
)
def test_an_own_mask_selects_the_same_rows_in_every_entry(done_first: bool, write: Any) -> None:
    td = _td(done_first)
    write(td)
    assert td["x"].tolist() == [0.0, 1.0, 0.0]  # rows 0 and 2, whatever the key order
    assert td["done"].tolist() == [False, False, False]


def test_an_own_mask_view_and_a_records_field() -> None:
    td = TensorDict(
        done=torch.tensor([[True], [False], [True]]), x=torch.arange(3.0), batch_size=[3]
    )
    td[td["done"].squeeze(-1)] = 0
    assert td["x"].tolist() == [0.0, 1.0, 0.0]
    step = _Step(done=torch.tensor([True, False, True]), x=torch.arange(3.0), batch_size=[3])
    step[step.done] = 0
    assert step.x.tolist() == [0.0, 1.0, 0.0]


def _expected() -> list[float]:
    x = torch.arange(6.0)
    x[1:4] = x[0:3].clone()
    return x.tolist()


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda td, x: td.__setitem__(slice(1, 4), x[0:3]), id="slice"),
        pytest.param(lambda td, x: td.__setitem__([1, 2, 3], x[0:3]), id="list"),
        pytest.param(lambda td, x: td.set_at_("x", x[0:3], slice(1, 4)), id="set_at_"),
        pytest.param(lambda td, x: td.update_at_({"x": x[0:3]}, slice(1, 4)), id="update_at_"),
    ],
)
def test_a_value_over_the_entrys_own_memory_is_read_first(write: Any) -> None:
    x = torch.arange(6.0)
    td = TensorDict(y=torch.zeros(6), x=x, batch_size=[6])
    write(td, x)
    assert td["x"].tolist() == _expected()
    if "y" in td.keys() and td["y"].any():  # td[idx] = tensor writes every entry
        assert td["y"].tolist() == [0.0, 0.0, 1.0, 2.0, 0.0, 0.0]


def test_a_value_that_does_not_fit_is_still_refused() -> None:
    x = torch.arange(6.0)
    td = TensorDict(x=x, batch_size=[6])
    with pytest.raises(RuntimeError, match="shape"):
        td.set_at_("x", x[0:2], slice(1, 4))
    assert x.tolist() == list(range(6))


@tensorclass
class _NonNegative:
    p: Annotated[torch.Tensor, Spec("", torch.float32, ge=0)]


@pytest.mark.parametrize("nested", [False, True])
def test_a_number_a_record_refuses_leaves_the_entries_before_it(
    tmp_path: Path, nested: bool
) -> None:
    record = _NonNegative(p=torch.zeros(3), batch_size=[3])
    held: Any = TensorDict(r=record, batch_size=[3]) if nested else record
    saved = TensorDict(a=torch.zeros(3), batch_size=[3]).memmap_(tmp_path / "m")
    lazy = tclass.lazy_stack([TensorDict(a=torch.zeros(()), batch_size=[]) for _ in range(3)])
    td = TensorDict(x=torch.zeros(3), m=saved, lazy=lazy, rec=held, batch_size=[3])
    with pytest.raises(errors.FieldSpecError, match="Nothing was written"):
        td[0:2] = -1.0
    assert not td["x"].any() and not saved["a"].any() and not lazy["a"].any()
    td[0:2] = 2.0
    assert td["x"].tolist() == [2.0, 2.0, 0.0] and record.p.tolist() == [2.0, 2.0, 0.0]
