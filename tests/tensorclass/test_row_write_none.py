"""``None`` in a dict written into rows of a record, for a field that holds a Python
value or a tensor: no value given (as the peer reads the dict as a record of the class,
whose ``None`` field is not written), so the values it holds stay."""

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


@tensorclass
class Inner:
    y: torch.Tensor
    z: torch.Tensor


@tensorclass
class Outer:
    inner: Inner
    w: torch.Tensor


def _inner(n: int = 3) -> Inner:
    return Inner(y=torch.zeros(n), z=torch.arange(float(n)), batch_size=[n])


def _td_of_records() -> Any:
    td = tclass.TensorDict(inner=_inner(), batch_size=[3])
    td[0] = {"inner": {"y": torch.tensor(5.0), "z": None}}
    return td["inner"]


def _row(i: int) -> Inner:
    return Inner(y=torch.tensor(0.0), z=torch.tensor(float(i)), batch_size=[])


def _lazy_stack_of_tds() -> Any:
    stack = tclass.lazy_stack([tclass.TensorDict(inner=_row(i)) for i in range(3)])
    stack[0] = {"inner": {"y": torch.tensor(5.0), "z": None}}
    return stack.get("inner")


def _lazy_stack_of_records() -> Any:
    stack = tclass.lazy_stack(
        [Outer(inner=_row(i), w=torch.tensor(0.0), batch_size=[]) for i in range(3)]
    )
    stack[0] = {"inner": {"y": torch.tensor(5.0), "z": None}, "w": torch.tensor(1.0)}
    assert stack.w.tolist() == [1.0, 0.0, 0.0]
    return stack.inner


def _record_of_records() -> Any:
    rec = Outer(inner=_inner(), w=torch.zeros(3), batch_size=[3])
    rec[0] = {"inner": {"y": torch.tensor(5.0), "z": None}, "w": torch.tensor(1.0)}
    assert rec.w.tolist() == [1.0, 0.0, 0.0]
    return rec.inner


def _record_itself() -> Any:
    rec = _inner()
    rec[0] = {"y": torch.tensor(5.0), "z": None}
    return rec


def _update_at() -> Any:
    rec = _inner()
    rec.update_at_({"y": torch.tensor(5.0), "z": None}, 0)
    return rec


NESTED: dict[str, Callable[[], Any]] = {
    "td[0] = {'inner': {..., 'z': None}}": _td_of_records,
    "lazy_stack of TensorDicts": _lazy_stack_of_tds,
    "lazy_stack of records": _lazy_stack_of_records,
    "record of records": _record_of_records,
    "rec[0] = {..., 'z': None}": _record_itself,
    "rec.update_at_({..., 'z': None}, 0)": _update_at,
}


@pytest.mark.parametrize("write", NESTED.values(), ids=NESTED.keys())
def test_none_for_a_tensor_field_leaves_it_as_it_is(write: Callable[[], Any]) -> None:
    # lo24a: None is no value given for a tensor field too, as rec[0] = Inner(y=t,
    # z=None) leaves z in both libraries (tclass raised EntryTypeError; the peer fails
    # inside: "'Tensor' object has no attribute 'maybe_to_stack'")
    inner = write()
    assert inner.y.tolist() == [5.0, 0.0, 0.0]
    assert inner.z.tolist() == [0.0, 1.0, 2.0]


def test_the_peer_leaves_a_tensor_field_given_none_in_a_record() -> None:
    peer = pytest.importorskip("tensordict")

    @peer.tensorclass
    class PeerInner:
        y: torch.Tensor
        z: torch.Tensor

    rec = PeerInner(y=torch.zeros(3), z=torch.arange(3.0), batch_size=[3])
    rec[0] = PeerInner(y=torch.tensor(5.0), z=None, batch_size=[])
    assert rec.y.tolist() == [5.0, 0.0, 0.0] and rec.z.tolist() == [0.0, 1.0, 2.0]
