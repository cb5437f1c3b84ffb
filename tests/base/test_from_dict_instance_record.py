"""``record.from_dict_instance(d)`` gives a record of the record's own class, as the
peer's (its tensorclass method wraps the TensorDict it builds), with the nested records
typed as in the record (fz27e: program 15,600,174 of features,index,shape,combine)."""

from __future__ import annotations

import torch

from tclass import TensorDict, tensorclass


@tensorclass
class _Inner:
    y: torch.Tensor


@tensorclass
class _Outer:
    x: torch.Tensor
    label: str
    inner: _Inner


def test_a_records_from_dict_instance_is_a_record_of_its_class() -> None:
    rec = _Outer(x=torch.ones(2, 2), label="pong", inner=_Inner(y=torch.ones(2), batch_size=[2]))
    out = rec.from_dict_instance(
        {"x": torch.zeros(3), "label": "a", "inner": {"y": torch.arange(3)}}, batch_size=[3]
    )
    assert type(out) is _Outer and type(out.inner) is _Inner
    assert out.label == "a" and out.batch_size == (3,)
    assert torch.equal(out.x, torch.zeros(3)) and torch.equal(out.inner.y, torch.arange(3))
    back = rec.from_dict_instance(rec.to_dict())
    assert type(back) is _Outer and back.label == "pong" and back.batch_size == ()


def test_a_tensordicts_from_dict_instance_stays_a_tensordict() -> None:
    td = TensorDict(r=_Inner(y=torch.ones(2), batch_size=[2]), batch_size=[2])
    out = td.from_dict_instance({"r": {"y": torch.zeros(2)}}, batch_size=[2])
    assert type(out) is TensorDict and type(out["r"]) is _Inner
