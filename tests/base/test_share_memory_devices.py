"""``share_memory_()`` and ``is_shared()`` on collections holding tensors off the CPU or
no tensor at all: as the peer, only CPU tensors are moved (a ``meta`` tensor has no data:
tclass raised torch's "_share_fd_: only available on CPU"), and a collection with nothing
to ask answers whether ``share_memory_()`` ran on it, for a record and a lazy stack too
(they answered ``False``, where a TensorDict and the peer answer ``True``)."""

from __future__ import annotations

import torch

import tclass
from tclass import TensorDict, lazy_stack


@tclass.tensorclass
class Meta:
    x: torch.Tensor


@tclass.tensorclass
class Named:
    name: str


def test_meta_collection_is_shared_after_share_memory() -> None:
    td = TensorDict({"x": torch.zeros(3)}, [3], device="meta")
    assert not td.is_shared()
    assert td.share_memory_() is td
    assert td.is_shared()
    assert td.is_locked
    assert td["x"].is_meta


def test_cpu_and_meta_tensors_together() -> None:
    td = TensorDict({"x": torch.zeros(3), "m": torch.zeros(3, device="meta")}, [3])
    td.share_memory_()
    assert td["x"].is_shared()  # the CPU tensor moved to shared memory
    assert td["m"].is_meta
    assert td.is_shared()


def test_meta_record_and_lazy_stack() -> None:
    rec = Meta(x=torch.zeros(2), batch_size=[2], device="meta")
    rec.share_memory_()
    assert rec.is_shared()
    stack = lazy_stack([TensorDict({"x": torch.zeros(3)}, [3], device="meta") for _ in range(2)])
    stack.share_memory_()
    assert stack.is_shared()


def test_record_and_lazy_stack_without_tensors() -> None:
    rec = Named(name="a", batch_size=[2])
    assert not rec.is_shared()
    rec.share_memory_()
    assert rec.is_shared()
    stack = lazy_stack([TensorDict({}, [3]) for _ in range(2)])
    assert not stack.is_shared()
    stack.share_memory_()
    assert stack.is_shared()
    assert all(member.is_shared() for member in stack.tensordicts)
