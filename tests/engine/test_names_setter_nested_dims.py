"""Assigning a lazy stack's names (``None`` included) names the dims its members share
with it, and leaves a nested collection's own further dims named as they were: as a
TensorDict's setter, and the peer's (``lazy.names = None`` cleared them)."""

from __future__ import annotations

import torch

import tclass
from tclass import TensorDict


def _member() -> TensorDict:
    inner = TensorDict({"x": torch.zeros(3, 4, 5)}, [3, 4, 5])
    inner.names = ["a", "b", "c"]
    return TensorDict({"n": inner}, [3, 4])


def test_a_lazy_stack_keeps_the_names_of_its_nodes_own_dims() -> None:
    lazy = tclass.lazy_stack([_member(), _member()], 0)
    lazy.names = ["s", "a", "b"]
    assert lazy.get("n").names == ["s", "a", "b", "c"]
    lazy.names = None
    assert lazy.names == [None, None, None]
    assert lazy[0]["n"].names == [None, None, "c"]  # its own dim keeps its name
    assert lazy.get("n").names == [None, None, None, "c"]
    plain = _member()
    plain.names = None
    assert plain["n"].names == [None, None, "c"]  # (the same as a TensorDict's)
