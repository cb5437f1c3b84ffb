"""``key_transform`` of a record's reduction: the renamed keys must be fields of the
class, as the peer checks building the record (fz27b)."""

from __future__ import annotations

from typing import Optional

import pytest
import torch

from tclass import tensorclass
from tclass.errors import UnknownFieldError


@tensorclass
class _Inner:
    y: torch.Tensor
    z: Optional[torch.Tensor] = None  # noqa: UP045 (the peer's spelling)


@tensorclass
class _Outer:
    x: torch.Tensor
    inner: _Inner


def _outer() -> _Outer:
    inner = _Inner(y=torch.arange(3.0), z=torch.full((3,), 2.0), batch_size=[3])
    return _Outer(x=torch.arange(3.0), inner=inner, batch_size=[3])


@pytest.mark.parametrize("method", ["sum", "mean"])
def test_renamed_keys_that_are_not_fields_are_refused(method: str) -> None:
    """``mean(dim, key_transform=lambda k: k + "_s")`` of a record is an
    ``UnknownFieldError`` (a ``ValueError``, as the peer's), the nested record's first
    (programs 15,030,043 and 15,030,069 of methods,index,shape,combine)."""
    with pytest.raises(UnknownFieldError, match=r"\['y_s', 'z_s'\].*not fields of _Inner") as info:
        getattr(_outer(), method)(dim=-1, key_transform=lambda k: k + "_s")
    assert isinstance(info.value, ValueError)
    with pytest.raises(UnknownFieldError, match="not fields of _Inner"):
        getattr(_outer().inner, method)(dim=0, key_transform=lambda k: "r")


def test_renaming_to_the_fields_keeps_the_class() -> None:
    out = _outer().sum(dim=0, key_transform=lambda k: k)
    assert isinstance(out, _Outer) and isinstance(out.inner, _Inner)
    assert out.x.item() == 3.0 and out.inner.y.item() == 3.0
    swapped = _outer().inner.sum(dim=0, key_transform={"y": "z", "z": "y"}.__getitem__)
    assert swapped.y.item() == 6.0 and swapped.z.item() == 3.0
