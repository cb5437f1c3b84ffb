"""``record.rename_key_("a", 1)``: a new key that is no key at all is an
``InvalidKeyError`` (a ``TypeError`` and ``KeyError``, as for a TensorDict), with the
record unchanged; before it was a plain ``TypeError: 'int' object is not subscriptable``
(not a ``TclassError``) from looking up the field name (nu26a)."""

from __future__ import annotations

import pytest
import torch

from tclass import errors, tensorclass


@tensorclass
class _Rec:
    a: torch.Tensor
    b: torch.Tensor | None = None


@pytest.mark.parametrize("new", [1, None, ["b"], ()], ids=repr)
def test_rename_to_no_key_is_an_invalid_key_error(new: object) -> None:
    r = _Rec(a=torch.arange(2.0), batch_size=[2])
    with pytest.raises(errors.InvalidKeyError) as info:
        r.rename_key_("a", new)
    assert isinstance(info.value, TypeError)
    assert torch.equal(r.a, torch.arange(2.0))
    assert r.b is None


def test_rename_to_a_field_still_moves_the_value() -> None:
    r = _Rec(a=torch.arange(2.0), batch_size=[2])
    r.rename_key_("a", ("b",))
    assert r.a is None
    assert torch.equal(r.b, torch.arange(2.0))
