"""``record.from_dict_instance(d)`` gives a record of the record's own class, as the
peer's (its tensorclass method wraps the TensorDict it builds), with the nested records
typed as in the record (fz27e: program 15,600,174 of features,index,shape,combine)."""

from __future__ import annotations

from typing import Any

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


@tensorclass
class _Values:
    x: torch.Tensor
    n: int
    dims: Any
    pair: tuple  # type: ignore[type-arg]  # (bare, as records declare it)
    label: str
    opt: Any = None


def test_a_records_python_values_come_back_as_given() -> None:
    """Fields holding Python values take the dict's values as the class's ``from_dict``
    casts them: a ``torch.Size`` and a tuple stay one (the peer casts them back to the
    record's types), an ``int`` holds at any batch size (fz28b: program 15,620,550 of
    features,index,shape,combine, ``attrs().from_dict_instance(...)``)."""
    for batch in ([], [2], [2, 0]):
        rec = _Values(
            x=torch.zeros(batch), n=3, dims=torch.Size([2, 3]), pair=(1, 2), label="a",
            batch_size=batch,
        )  # fmt: skip
        back = rec.from_dict_instance(rec.to_dict(), batch_size=batch)
        assert type(back) is _Values and back.batch_size == tuple(batch)
        assert back.n == 3 and back.dims == torch.Size([2, 3]) and back.pair == (1, 2)
        assert back.label == "a" and back.opt is None
    attrs = TensorDict(a=torch.zeros(2, 3), batch_size=[2]).attrs()
    assert attrs.from_dict_instance(attrs.to_dict())["a"].tgt_shape == torch.Size([2, 3])


def test_a_per_element_value_reads_back_per_element() -> None:
    """An unsqueezed (or stacked) record's Python value is one per element: its
    ``from_dict_instance(to_dict())`` reads that list back, as ``_Outer.from_dict`` does
    (the peer's record method makes it the one value: decided, fz28b)."""
    rec = _Outer(x=torch.ones(2), label="pong", inner=_Inner(y=torch.ones(())))
    wide = rec.unsqueeze(0)
    for given in (wide.to_dict(), wide[:0].to_dict()):
        size = [1] if given["label"] else [0]
        back = wide.from_dict_instance(given, batch_size=size)
        assert back.label == _Outer.from_dict(given, batch_size=size).label == given["label"]
    stacked = torch.stack([rec, rec.clone()])
    stacked.label = ["a", "b"]
    back = stacked.from_dict_instance(stacked.to_dict(), auto_batch_size=True)
    assert back.label == ["a", "b"] and back.batch_size == (2,) and type(back.inner) is _Inner
