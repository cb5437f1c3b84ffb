"""``get_at`` / ``set_at_`` with an index out of range (nu26c): a ``DimError`` (the
peer's ``IndexError``, and a ``TclassError``) naming the call, the key and the entry's
shape; it was torch's bare ``IndexError``."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import DimError


@tclass.tensorclass
class _R:
    x: torch.Tensor


def _td() -> TensorDict:
    return TensorDict({"a": torch.zeros(4, 3), "n": {"c": torch.ones(4, 2)}}, [4])


def test_get_at_out_of_range_names_the_key_and_the_entry_shape() -> None:
    with pytest.raises(DimError) as info:
        _td().get_at("a", 9)
    assert isinstance(info.value, IndexError)
    assert str(info.value).startswith("get_at('a', 9): index 9 is out of bounds")
    assert "(the entry 'a' has shape [4, 3])" in str(info.value)
    with pytest.raises(DimError, match=r"get_at\(\('n', 'c'\), \(0, 5\)\): index 5 .* \[4, 2\]"):
        _td().get_at(("n", "c"), (0, 5))  # a feature dim: the entry's own index
    assert _td().get_at("a", 3).tolist() == [0.0, 0.0, 0.0]


def test_set_at_out_of_range_names_the_key_and_writes_nothing() -> None:
    td = _td()
    with pytest.raises(DimError, match=r"^set_at_\('a', value, 9\): index 9 is out of bounds"):
        td.set_at_("a", torch.ones(3), 9)
    assert td["a"].sum().item() == 0.0
    record = _R(x=torch.zeros(3), batch_size=[3])
    with pytest.raises(
        DimError, match=r"set_at_\('x', value, 5\).*\(the entry 'x' has shape \[3\]\)"
    ):
        record.set_at_("x", 1.0, 5)
    with pytest.raises(DimError, match=r"get_at\('x', 5\)"):
        record.get_at("x", 5)
    stack = tclass.lazy_stack([_td(), _td()])
    with pytest.raises(DimError, match=r"get_at\('a', 5\).*\[2, 4, 3\]"):
        stack.get_at("a", 5)
