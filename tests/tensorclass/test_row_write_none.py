"""``None`` in a dict written into rows of a record, for a field that holds a Python
value: no value given (as the peer reads the dict as a record of the class, whose
``None`` field is not written), so the values it holds stay."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import tensorclass


@tensorclass
class Rec:
    x: torch.Tensor
    label: str


def _rec() -> Rec:
    return Rec(x=torch.zeros(2), label="a", batch_size=[2])


def test_a_dict_in_a_tensordict_row_write_leaves_the_label() -> None:
    """The peer's result (fz23d): ``td[0] = {"r": {..., "label": None}}`` leaves ``'a'``."""
    td = tclass.TensorDict(r=_rec(), batch_size=[2])
    td[0] = {"r": {"x": torch.tensor(5.0), "label": None}}
    assert td["r"].label == "a"
    assert td["r"].x.tolist() == [5.0, 0.0]


def test_the_peer_leaves_the_label_too() -> None:
    peer = pytest.importorskip("tensordict")

    @peer.tensorclass
    class PeerRec:
        x: torch.Tensor
        label: str

    td = peer.TensorDict(r=PeerRec(x=torch.zeros(2), label="a", batch_size=[2]), batch_size=[2])
    td[0] = {"r": {"x": torch.tensor(5.0), "label": None}}
    assert td["r"].label == "a" and td["r"].x.tolist() == [5.0, 0.0]


def _td_label(rec: Rec) -> None:
    td = tclass.TensorDict(r=rec, batch_size=[2])
    td[0] = {"r": {"label": None}}


WRITES: dict[str, Callable[[Rec], Any]] = {
    "td[0] = {'r': {'label': None}}": _td_label,
    "rec[0] = {'label': None}": lambda rec: rec.__setitem__(0, {"label": None}),
    "rec[:] = {'label': None}": lambda rec: rec.__setitem__(slice(None), {"label": None}),
    "rec[0] = Rec(label=None)": lambda rec: rec.__setitem__(
        0, Rec(x=torch.tensor(0.0), label=None, batch_size=[])
    ),
    "rec.update_at_({'label': None}, 0)": lambda rec: rec.update_at_({"label": None}, 0),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_none_for_a_python_value_field_is_no_value_given(write: Callable[[Rec], Any]) -> None:
    rec = _rec()
    write(rec)
    assert rec.label == "a"
    assert rec.x.tolist() == [0.0, 0.0]


def test_a_value_beside_it_is_written_per_element() -> None:
    rec = _rec()
    rec[0] = {"x": torch.tensor(5.0), "label": "b"}
    assert rec.label == ["b", "a"] and rec.x.tolist() == [5.0, 0.0]
    rec[1] = {"label": None}
    assert rec.label == ["b", "a"]
