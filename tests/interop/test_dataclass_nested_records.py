"""``TensorDict.from_dataclass`` of a record (tclass/_interop/_bridges.py's
``dataclass_as_dict``): nested records are kept, as ``from_any`` keeps collections."""

from __future__ import annotations

import torch

from tclass import TensorClass, TensorDict


class _Inner(TensorClass):
    y: torch.Tensor


class _Outer(TensorClass):
    x: torch.Tensor
    inner: _Inner


def test_from_dataclass_of_a_record_keeps_its_nested_record() -> None:
    # The peer reads each field with from_any, which keeps a collection as it is
    # (programs 15,620,073 L8 / 15,610,275 L12 of features,index,shape,combine)
    inner = _Inner(y=torch.arange(3), batch_size=[3])
    rec = _Outer(x=torch.zeros(3, 2), inner=inner, batch_size=[3])
    td = TensorDict.from_dataclass(rec, batch_size=[3])
    assert type(td) is TensorDict
    assert type(td["inner"]) is _Inner
    assert td["inner"].batch_size == torch.Size([3])
    assert torch.equal(td["inner"].y, torch.arange(3))
    auto = TensorDict.from_dataclass(rec, auto_batch_size=True)
    assert type(auto["inner"]) is _Inner and auto.batch_size == torch.Size([3])
