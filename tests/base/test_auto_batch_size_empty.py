"""``auto_batch_size_`` and a nested collection without a leaf: it keeps its own batch
size (cut to ``batch_dims``), as the peer's, where that starts with the batch size
inferred for its parent; where it does not, it takes its parent's (the peer grows it
when it starts the parent's, else leaves a nested batch size that does not fit). tclass
infers past an empty collection wherever it is (the peer's stops at one listed first):
that part is README's documented difference."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch

import tclass


def _sizes(td: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return tuple(td.batch_size), tuple(td["m"].batch_size)


CASES = [
    # m first, a scalar after it: the batch stays [] and m keeps [3] (fz37g's program)
    (lambda L: L.TensorDict(m=L.TensorDict({}, batch_size=[3]), b=torch.zeros(())), 1),
    (lambda L: L.TensorDict(m=L.TensorDict({}, batch_size=[3]), b=torch.zeros(())), None),
    (lambda L: L.TensorDict(b=torch.zeros(()), m=L.TensorDict({}, batch_size=[3])), 1),
    # m's own batch size goes beyond its parent's: kept (cut to batch_dims)
    (lambda L: L.TensorDict(m=L.TensorDict({}, batch_size=[3, 4]), b=torch.zeros(3)), None),
    (lambda L: L.TensorDict(m=L.TensorDict({}, batch_size=[3, 4]), b=torch.zeros(3)), 1),
    (lambda L: L.TensorDict(b=torch.zeros(3), m=L.TensorDict({}, batch_size=[3, 5])), None),
    # m's batch size starts the parent's: grown to it
    (lambda L: L.TensorDict(b=torch.zeros(3, 4), m=L.TensorDict({}, batch_size=[3])), None),
    # batch_dims=0 cuts nothing of an empty collection (as the peer's: 0 is no cut)
    (lambda L: L.TensorDict(b=torch.zeros(3), m=L.TensorDict({}, batch_size=[3, 1])), 0),
    (lambda L: L.TensorDict(b=torch.zeros(3), m=L.TensorDict({}, batch_size=[3, 1])), None),
    # m holds only an empty collection, cut to batch_dims below it too
    (
        lambda L: L.TensorDict(
            m=L.TensorDict(k=L.TensorDict({}, batch_size=[3, 5]), batch_size=[3]),
            b=torch.zeros(()),
        ),
        1,
    ),
]


@pytest.mark.parametrize(("build", "batch_dims"), CASES)
def test_an_empty_nested_collection_keeps_its_batch_size_as_the_peers(
    build: Any, batch_dims: int | None
) -> None:
    ours = build(tclass).auto_batch_size_(batch_dims)
    peer: ModuleType = pytest.importorskip("tensordict")
    theirs = build(peer).auto_batch_size_(batch_dims)
    assert _sizes(ours) == _sizes(theirs)


def test_one_that_does_not_start_with_the_parents_takes_the_parents() -> None:
    td = tclass.TensorDict(
        b=torch.zeros(4),
        m=tclass.TensorDict(k=tclass.TensorDict({}, batch_size=[3]), batch_size=[3]),
    )
    td.auto_batch_size_()
    assert _sizes(td) == ((4,), (4,)) and td["m", "k"].batch_size == (4,)  # the peer: m [3]


def test_an_empty_collection_first_does_not_stop_the_inference() -> None:
    td = tclass.TensorDict(m=tclass.TensorDict({}, batch_size=[3]), b=torch.zeros(3, 2))
    assert _sizes(td.auto_batch_size_()) == ((3, 2), (3, 2))  # the peer: [3] and [3]
