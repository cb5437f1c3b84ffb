"""Shape ops of a record over a lazy stack (``lazy_stack`` of records), checked on tclass
and on the peer: the record's op is the lazy stack's (``tile`` densifies, as the lazy
stack's own ``tile`` does), so ``memmap_`` afterwards leaves memory-mapped leaves."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass


@pytest.fixture(params=["tclass", "tensordict"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    if request.param == "tensordict":
        return pytest.importorskip("tensordict")
    return tclass


def _stack(lib: ModuleType) -> Any:
    @lib.tensorclass
    class Inner:
        y: torch.Tensor

    @lib.tensorclass
    class Rec:
        x: torch.Tensor
        label: str
        inner: Inner

    def rec(value: float, label: str) -> Any:
        inner = Inner(y=torch.full((3, 1), value), batch_size=[3])
        return Rec(x=torch.full((3, 1), value), label=label, inner=inner, batch_size=[3])

    return lib.lazy_stack([rec(0.0, "a"), rec(1.0, "b")], 0)


def test_tile_of_a_lazy_stack_of_records_is_dense(lib: ModuleType) -> None:
    tiled = _stack(lib).tile([2, 1])
    assert tiled.batch_size == torch.Size([4, 3])
    assert not isinstance(tiled._tensordict, lib.LazyStackedTensorDict)
    assert tiled.x[:, 0, 0].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert tiled.inner.y[:, 0, 0].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert [row[0] for row in tiled.label] == ["a", "b", "a", "b"]


def test_memmap_of_a_tiled_lazy_stack_of_records_maps_its_leaves(
    lib: ModuleType, tmp_path: Path
) -> None:
    saved = _stack(lib).tile([2, 1, 1]).clone().memmap_(tmp_path / "tiled")
    assert saved.batch_size == torch.Size([2, 2, 3])
    assert isinstance(saved.x, lib.MemoryMappedTensor)
    assert isinstance(saved.inner.y, lib.MemoryMappedTensor)
    assert saved.x[:, :, 0, 0].tolist() == [[0.0, 1.0], [0.0, 1.0]]


@pytest.mark.parametrize("mask", [[[True, False, True], [False, True, False]], [False, True]])
def test_masked_select_of_a_lazy_stack_of_records_copies(lib: ModuleType, mask: Any) -> None:
    """``masked_select`` copies the selected rows into one TensorDict (a full mask or
    one over the leading dims), unlocked, as torch's: writes to it leave the stack alone
    (``stack[mask]`` shares the members instead; 10,902,556 of index,combine --length 6)."""
    stack = _stack(lib).lock_()
    picked = stack.masked_select(torch.tensor(mask))
    assert not isinstance(picked._tensordict, lib.LazyStackedTensorDict)
    assert not picked.is_locked
    picked.x.zero_()
    picked.inner.y.zero_()
    assert stack.x[:, :, 0].tolist() == [[0.0] * 3, [1.0] * 3]
    assert stack.inner.y[:, :, 0].tolist() == [[0.0] * 3, [1.0] * 3]
    shared = stack[torch.tensor(mask)]
    assert isinstance(shared._tensordict, lib.LazyStackedTensorDict)


def test_a_lazy_stacks_attribute_read_on_its_record_says_where_it_is() -> None:
    """``records.tensordicts`` on a record over a lazy stack: the peer falls through to
    its storage (deprecated), tclass refuses (README) and names
    ``record._tensordict.tensordicts`` (``append``/``insert`` are the record's own:
    test_record_lazy_stack_grow.py)."""
    stack = _stack(tclass)
    member = stack[0]
    with pytest.raises(AttributeError, match=r"record\._tensordict\.tensordicts"):
        stack.tensordicts  # noqa: B018
    with pytest.raises(AttributeError, match=r"\(fields: x, label, inner\)$"):
        member.tensordicts  # noqa: B018 -- a record over a TensorDict: no such hint
    assert len(stack._tensordict.tensordicts) == 2  # its storage, as in the peer
