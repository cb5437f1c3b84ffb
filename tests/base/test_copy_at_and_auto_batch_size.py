"""``copy_at_`` at every kind of index, and ``auto_batch_size_`` of collections holding
lazy stacks and with ``keep_compliant_size``, as the peer (tensordict 0.15.3) answers
them. Found by the differential fuzzer (window ``--families index,entries --seed
3000000``)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass

peer: Any = pytest.importorskip("tensordict", reason="compares with the peer (tensordict)")


def _td(lib: Any) -> Any:
    b = torch.arange(24.0).reshape(4, 3, 2)
    c = torch.arange(12.0).reshape(4, 3) * 10
    return lib.TensorDict({"b": b, "n": {"c": c}}, batch_size=[4, 3])


def _leaves(td: Any) -> list[list[Any]]:
    return [td["b"].tolist(), td["n", "c"].tolist()]


@pytest.mark.parametrize(
    "index",
    [(Ellipsis, 1), (Ellipsis, slice(0, 1)), (Ellipsis, slice(None, -1, 3)), (1, Ellipsis)],
    ids=["last-dim", "slice", "empty-slice", "leading"],
)
def test_copy_at_takes_an_ellipsis_over_the_batch_dims(index: Any) -> None:
    """``...`` in ``copy_at_``'s index stands for batch dims, as in the peer's fast path
    and ``td[index] = source``; it wrote into the leaves' last dims (a ``ShapeError``)."""
    mine, theirs = _td(tclass), _td(peer)
    assert mine.copy_at_(mine[index].clone() + 100, index) is mine
    theirs.copy_at_(theirs[index].clone() + 100, index)
    assert _leaves(mine) == _leaves(theirs)
    written = _td(tclass)
    written[index] = written[index].clone() + 100
    assert _leaves(mine) == _leaves(written)


@pytest.mark.parametrize("kind", ["td", "params", "lazy"])
@pytest.mark.parametrize(
    "index",
    [
        torch.tensor([[True, False, True]] * 2 + [[False] * 3] * 2),
        torch.tensor([2, 0]),
        [1, 3],
        torch.tensor([], dtype=torch.long),
        (torch.tensor([0, 1]), torch.tensor([2, 2])),
    ],
    ids=["mask", "int", "list", "empty", "pairs"],
)
def test_copy_at_at_an_advanced_index_writes_what_update_at_writes(kind: str, index: Any) -> None:
    """Where the peer's fast path (``fast=True``) refuses (an advanced index, a
    collection that is not a ``TensorDict``), tclass writes: the same rows as the peer's
    ``update_at_`` (``fast=False``) and ``td[index] = source``."""

    def build(lib: Any) -> Any:
        td = _td(lib)
        if kind == "params":
            return lib.TensorDictParams(td)
        return lib.lazy_stack(list(td.unbind(0)), 0) if kind == "lazy" else td

    mine, theirs = build(tclass), build(peer)
    with torch.no_grad():
        mine.copy_at_(mine[index].clone() + 100, index)
        theirs.copy_at_(theirs[index].clone() + 100, index, fast=False)
    assert _leaves(mine) == _leaves(theirs)
    if kind == "td":
        with pytest.raises(RuntimeError, match="optimized tensor-only copy path"):
            _td(peer).copy_at_(_td(peer)[index].clone(), index)  # the documented difference


@pytest.mark.parametrize("batch_dims", [None, 1, 2, 3])
@pytest.mark.parametrize("outer", [[], [3]])
def test_keep_compliant_size_keeps_nested_batch_sizes_of_batch_dims_dims(
    batch_dims: int | None, outer: list[int]
) -> None:
    """``keep_compliant_size`` keeps a nested collection's batch size only with
    ``batch_dims``, when it has that many dims or more, as the peer's (tclass kept any
    that fit the outer batch size, also without ``batch_dims``)."""
    results = []
    for lib in (tclass, peer):
        nested = lib.TensorDict({"c": torch.zeros(3, 4, 6)}, [3])
        td = lib.TensorDict({"a": torch.zeros(3, 4, 5), "n": nested}, outer)
        td.auto_batch_size_(batch_dims, keep_compliant_size=True)
        results.append((td.batch_size, td["n"].batch_size))
    assert results[0] == results[1]


def _empty_first(lib: Any, first: bool) -> Any:
    a, e = torch.zeros(3, 4), lib.TensorDict({"f": lib.TensorDict({}, [])}, [3])
    entries = {"e": e, "a": a} if first else {"a": a, "e": e}
    return lib.TensorDict(entries, [])


@pytest.mark.parametrize("first", [False, True], ids=["empty-last", "empty-first"])
def test_an_empty_nested_collection_does_not_constrain_the_batch_size(first: bool) -> None:
    """A nested collection without a leaf (whatever its batch size) holds nothing that
    constrains its parent's batch size: it takes the parent's, as the peer's does when
    it is not the first entry (the peer's takes its batch size when it is: order
    dependent, a documented difference)."""
    td = _empty_first(tclass, first).auto_batch_size_()
    assert td.batch_size == torch.Size([3, 4])
    assert td["e"].batch_size == td["e", "f"].batch_size == torch.Size([3, 4])
    if not first:
        assert _empty_first(peer, first).auto_batch_size_().batch_size == td.batch_size
    assert _empty_first(tclass, first).auto_batch_size_(1).batch_size == torch.Size([3])
    nested = tclass.TensorDict.from_dict(
        {"c": torch.zeros(4), "m": {"m": {}, "b": torch.zeros(4, 2)}}, batch_dims=1
    )
    assert nested.batch_size == nested["m", "m"].batch_size == torch.Size([4])


def test_only_empty_nested_collections_keep_counting() -> None:
    td = tclass.TensorDict({"e": tclass.TensorDict({}, [3])}, []).auto_batch_size_()
    assert td.batch_size == td["e"].batch_size == torch.Size([3])  # as the peer
