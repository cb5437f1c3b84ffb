"""``record.split_keys(["a", "zz"], default=None, strict=False)``: a ``None`` default
fills nothing (a TensorDict's part leaves the key out, in both libraries), so a key that
is not a field is left out as well, and the parts are records of the class, as the
peer's (``R(a=..., b=None)``, ``R(b=..., a=None)``). Before: an ``UnknownFieldError`` for
``zz`` (nu26a rec:split_keys_default). A default that would fill it is still refused."""

from __future__ import annotations

import pytest
import torch

from tclass import errors, tensorclass


@tensorclass
class _Rec:
    a: torch.Tensor
    b: torch.Tensor


def _rec() -> _Rec:
    return _Rec(a=torch.zeros(2), b=torch.ones(2), batch_size=[2])


def test_none_default_leaves_a_non_field_key_out() -> None:
    first, rest = _rec().split_keys(["a", "zz"], default=None, strict=False)
    assert type(first) is _Rec and type(rest) is _Rec
    assert torch.equal(first.a, torch.zeros(2))
    assert first.b is None
    assert torch.equal(rest.b, torch.ones(2))
    assert rest.a is None
    assert list(first.keys()) == ["a"]


def test_a_filling_default_for_a_non_field_is_still_refused() -> None:
    with pytest.raises(errors.UnknownFieldError) as info:
        _rec().split_keys(["a", "zz"], default=torch.ones(2), strict=False)
    assert isinstance(info.value, ValueError)  # the peer's ValueError
