"""``set`` of a plain mapping at a nested key of a record whose field, declared down the
nested records' annotations, holds tensors only: a ``FieldTypeError``, for a record over a
lazy stack as for a dense one (the stack made the dict a collection before the field saw
it); a TensorDict is taken by both, as by the peer."""

from typing import Optional

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import FieldTypeError


@tclass.tensorclass
class _Inner:
    y: torch.Tensor
    z: Optional[torch.Tensor] = None  # noqa: UP045 (the peer's spelling)


@tclass.tensorclass
class _Rec:
    x: torch.Tensor
    inner: _Inner


def _rec() -> _Rec:
    return _Rec(x=torch.zeros(4), inner=_Inner(y=torch.ones(4), batch_size=[4]), batch_size=[4])


def _lazy() -> _Rec:
    rec = _rec()
    return tclass.LazyStackedTensorDict.lazy_stack([rec, rec.clone()], dim=0)


@pytest.mark.parametrize("make", [_rec, _lazy], ids=["dense", "lazy"])
def test_a_dict_set_into_a_tensor_field_of_a_nested_record_is_refused(make) -> None:
    rec = make()
    batch = list(rec.batch_size)
    with pytest.raises(FieldTypeError, match=r"_Inner\.z is annotated"):
        rec.set(("inner", "z"), {"q": torch.zeros(batch)})
    assert rec.inner.z is None  # nothing written
    rec.set(("inner", "z"), TensorDict({"q": torch.zeros(batch)}, batch))  # taken, as the peer
    assert isinstance(rec.inner.z, tclass.TensorDictBase)


def test_a_dict_set_into_a_nested_record_field_is_still_converted() -> None:
    rec = _rec()
    rec.set(("inner",), {"y": torch.full((4,), 2.0)})
    assert type(rec.inner) is _Inner and rec.inner.y.eq(2).all()
