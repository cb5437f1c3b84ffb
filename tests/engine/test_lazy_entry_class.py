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
    # a lazy stack of those: its first member's stacked value, a torch.Tensor, as the peer's
    assert lazy_stack([stack, stack]).entry_class("a") is torch.Tensor


def test_lazy_stack_of_lazy_stacks_of_memmapped_rows(tmp_path: Path) -> None:
    """A first member that is a lazy stack answers the class of its stacked value
    (``torch.stack`` of memory-mapped tensors is a ``torch.Tensor``), as the peer reads
    that member's ``get`` (fz29b: program 15,824,843 of methods,index,shape,combine,
    ``view((1, 1, 3))`` of a loaded lazy stack)."""
    saved = _base().memmap(tmp_path / "b")
    inner = lazy_stack([saved[0], saved[1]])
    assert inner.entry_class("a") is MemoryMappedTensor
    assert lazy_stack([inner, inner]).entry_class("a") is torch.Tensor
    assert lazy_stack([lazy_stack([inner])]).entry_class(("n", "c")) is torch.Tensor
    theirs = peer.TensorDict(a=torch.zeros(2, 3), batch_size=[2]).memmap(tmp_path / "p")
    rows = peer.lazy_stack([theirs[0], theirs[1]])
    assert peer.lazy_stack([rows, rows]).entry_class("a") is torch.Tensor
    params = lazy_stack([TensorDict(w=torch.nn.Parameter(torch.zeros(2)))])
    assert params.entry_class("w") is torch.nn.Parameter
    assert lazy_stack([params]).entry_class("w") is torch.Tensor


def test_lazy_stack_of_plain_and_ragged_members() -> None:
    stack = lazy_stack([TensorDict(x=torch.zeros(2)), TensorDict(x=torch.zeros(3))])
    assert stack.entry_class("x") is torch.Tensor  # ragged: nothing stacked
    assert lazy_stack([stack, stack]).entry_class("x") is torch.Tensor
    assert stack.entry_class("missing") is type(None)
