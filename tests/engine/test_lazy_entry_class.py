"""``entry_class`` of a lazy stack: a tensor's class is its first member's, found without
stacking (memory-mapped members give ``MemoryMappedTensor``, as the peer's; it gave
``torch.Tensor``), also in a lazy stack of records and of lazy stacks."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tclass import MemoryMappedTensor, TensorDict, lazy_stack, tensorclass

peer = pytest.importorskip("tensordict")


def _base() -> TensorDict:
    nested = TensorDict(c=torch.ones(2, 4), batch_size=[2])
    return TensorDict(a=torch.arange(6.0).reshape(2, 3), n=nested, batch_size=[2])


def test_lazy_stack_of_memmapped_rows(tmp_path: Path) -> None:
    saved = _base().memmap(tmp_path / "b")
    stack = lazy_stack([saved[0], saved[1]])
    assert stack.entry_class("a") is MemoryMappedTensor
    assert stack.entry_class(("n", "c")) is MemoryMappedTensor
    theirs = peer.TensorDict(a=torch.zeros(2, 3), batch_size=[2]).memmap(tmp_path / "p")
    assert peer.lazy_stack([theirs[0], theirs[1]]).entry_class("a") is peer.MemoryMappedTensor


def test_lazy_stack_of_memmapped_records(tmp_path: Path) -> None:
    @tensorclass
    class Rec:
        a: torch.Tensor

    saved = Rec(a=torch.zeros(2, 3), batch_size=[2]).memmap(tmp_path / "r")
    stack = lazy_stack([saved[0], saved[1]])
    assert stack.entry_class("a") is MemoryMappedTensor
    assert lazy_stack([stack, stack]).entry_class("a") is MemoryMappedTensor


def test_lazy_stack_of_plain_and_ragged_members() -> None:
    stack = lazy_stack([TensorDict(x=torch.zeros(2)), TensorDict(x=torch.zeros(3))])
    assert stack.entry_class("x") is torch.Tensor  # ragged: nothing stacked
    assert lazy_stack([stack, stack]).entry_class("x") is torch.Tensor
    assert stack.entry_class("missing") is type(None)
