"""``auto_batch_size_`` of a lazy stack, as the peer (tensordict 0.15.3) infers it from
the stack's own entries: its nested collections keep their batch sizes. Found by the
differential fuzzer (window ``--families index,entries --seed 3000000``); a collection
holding lazy stacks: ``tests/base/test_copy_at_and_auto_batch_size.py``."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict, errors

peer: Any = pytest.importorskip("tensordict", reason="compares with the peer (tensordict)")


def _ragged_lazy(lib: Any) -> Any:
    sizes = (1, 1, 3)
    members = [
        lib.TensorDict({"b": torch.zeros(2, 2), "n": lib.TensorDict({"c": torch.zeros(k)}, [])}, [])
        for k in sizes
    ]
    return lib.lazy_stack(members, 0)


def test_auto_batch_size_leaves_a_nested_lazy_stack_alone() -> None:
    """A lazy stack nested in a TensorDict keeps its batch size and its members theirs
    (the peer skips lazy stacks); it counts with its batch size."""
    for lib in (tclass, peer):
        members = [lib.TensorDict({"c": torch.zeros(4, k)}, []) for k in (1, 3)]
        td = lib.TensorDict({"a": torch.zeros(2, 4, 5), "l": lib.lazy_stack(members, 0)}, [])
        td.auto_batch_size_()
        assert td.batch_size == (2,) and td["l"].batch_size == (2,)
        assert [m.batch_size for m in td["l"].tensordicts] == [(), ()]


def test_auto_batch_size_of_a_lazy_stack_keeps_its_nested_collections() -> None:
    """A lazy stack infers its batch size from its own entries: a nested collection (the
    lazy stack of the members' ones, ragged here) keeps its batch size, as the peer's;
    tclass gave it ``[3, -1]`` and its members ``[1]`` and ``[3]``."""
    for lib in (tclass, peer):
        for options in ({}, {"keep_compliant_size": True}, {"batch_dims": 1}):
            lazy = _ragged_lazy(lib).auto_batch_size_(**options)
            assert lazy.batch_size == (3,) and lazy["n"].batch_size == (3,)
            assert [m["n"].batch_size for m in lazy.tensordicts] == [()] * 3


def test_auto_batch_size_of_a_lazy_stack_sets_a_batch_size_that_keeps_its_dim() -> None:
    """A new batch size that keeps the stack dim is set as ``lazy.batch_size = ...``
    (the peer refuses any change: a documented difference); a ragged dim ends it."""
    members = [TensorDict({"b": torch.zeros(2, k)}, []) for k in (3, 3)]
    assert tclass.lazy_stack(members, 0).auto_batch_size_().batch_size == (2, 2, 3)
    assert tclass.lazy_stack(members, 0).auto_batch_size_(2).batch_size == (2, 2)
    ragged = [TensorDict({"b": torch.zeros(k, 2)}, []) for k in (2, 3)]
    assert tclass.lazy_stack(ragged, 0).auto_batch_size_().batch_size == (2,)
    stacked = tclass.lazy_stack([TensorDict({"b": torch.zeros(2)}, [2])] * 2, 0)
    with pytest.raises(errors.BatchSizeError, match="does not keep the stack dim"):
        stacked.auto_batch_size_(batch_dims=0)
    empty = tclass.lazy_stack([TensorDict({}, [1, 4])] * 3, 2)
    assert empty.auto_batch_size_(batch_dims=0).batch_size == (1, 4, 3)  # no entry: kept
