"""Tests for what a lazy stack's shape ops give or refuse (tclass/_engine/_lazy/_ops.py
and _reshape.py)."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import DimError, UnsupportedError


def test_masked_select_in_place_of_a_lazy_stack_is_refused_before_the_mask() -> None:
    """``masked_select(mask, inplace=True)`` of a lazy stack: the ``UnsupportedError`` (a
    ``NotImplementedError``, as the peer's) of a batch size changed in place, also for a
    mask that does not fit (a ragged stack: program 15,993,960 of
    methods,index,shape,combine L12), not the mask's ``DimError``."""
    a = TensorDict({"b": torch.arange(3.0)}, [3])
    ragged = tclass.lazy_stack([a, TensorDict({"b": torch.arange(2.0)}, [2])], 0)
    regular = tclass.lazy_stack([a, a.clone()], 0)
    for stack, mask in ((ragged, torch.ones(2, 2, dtype=torch.bool)), (regular, a["b"] > 0)):
        with pytest.raises(UnsupportedError, match="cannot change its batch size") as info:
            stack.masked_select(mask, inplace=True)
        assert isinstance(info.value, NotImplementedError)
    with pytest.raises(DimError):  # without inplace, the mask is checked
        regular.masked_select(torch.ones(2, 2, dtype=torch.bool))
