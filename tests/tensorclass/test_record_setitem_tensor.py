"""``record[idx] = tensor``: each field takes the tensor as torch writes
``field[idx] = tensor`` (lined up with the last dims of its selection), as the peer's
tensorclass writes it (issue 27); a tensor one field refuses writes none (the peer
writes the fields before it)."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass.errors import BatchSizeError, InPlaceWriteError

V3 = torch.tensor([10.0, 20.0, 30.0])


def test_a_record_writes_each_field_as_torch() -> None:
    @tclass.tensorclass
    class Rec:
        a: torch.Tensor
        b: torch.Tensor

    rec = Rec(a=torch.zeros(4, 3, 3), b=torch.zeros(4, 3, 2), batch_size=[4, 3])
    with pytest.raises(BatchSizeError, match=r"'b' \(shape \[4, 3, 2\]\)"):
        rec[0] = V3
    assert rec.a.eq(0).all() and rec.b.eq(0).all()
    rec[0] = V3[..., None]
    assert rec.a[0].tolist() == [[10.0] * 3, [20.0] * 3, [30.0] * 3]
    assert rec.b[0].tolist() == [[10.0] * 2, [20.0] * 2, [30.0] * 2]
    rec = Rec(a=torch.zeros(4, 3, 3), b=torch.zeros(4, 3, 3), batch_size=[4, 3])
    rec[1:3] = V3
    assert rec.a[1:3].eq(V3).all() and rec.b[1:3].eq(V3).all() and rec.a[0].eq(0).all()


def test_a_number_one_field_refuses_writes_none() -> None:
    """``rec[0] = 300`` with an ``int8`` field: torch (and the peer) refuse it there; the
    float field before it is left as it was too (the peer writes it first), in a record
    and in a record nested in a TensorDict."""

    @tclass.tensorclass
    class Rec:
        x: torch.Tensor
        y: torch.Tensor

    def rec() -> Rec:
        return Rec(x=torch.zeros(4), y=torch.zeros(4, dtype=torch.int8), batch_size=[4])

    alone = rec()
    with pytest.raises(InPlaceWriteError, match=r"300 into 'y' \(torch.int8") as info:
        alone[0] = 300
    assert isinstance(info.value, RuntimeError)
    assert alone.x.eq(0).all() and alone.y.eq(0).all()
    td = tclass.TensorDict(a=torch.zeros(4), r=rec(), batch_size=[4])
    with pytest.raises(InPlaceWriteError, match=r"\('r', 'y'\)"):
        td[0] = 300
    assert td["a"].eq(0).all() and td["r"].x.eq(0).all()
    td[0] = 100
    assert td["a"][0] == 100 and td["r"].y[0] == 100
