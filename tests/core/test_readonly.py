"""``ReadOnlyTensor`` (tclass/_core/_readonly.py): a view of shared memory that refuses
in-place writes, keeps its views read-only and gives plain tensors otherwise."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tclass._core._readonly import ReadOnlyTensor, read_only
from tclass.errors import InPlaceWriteError, ReadOnlyError


def _shared() -> tuple[torch.Tensor, ReadOnlyTensor]:
    memory = torch.arange(12.0).reshape(3, 4)
    return memory, read_only(memory)


WRITES: dict[str, Callable[[torch.Tensor, torch.Tensor], Any]] = {
    "method": lambda ro, other: ro.add_(1),
    "setitem": lambda ro, other: ro.__setitem__((0, 0), 5.0),
    "augmented": lambda ro, other: ro.__imul__(2),
    "copy_ into": lambda ro, other: ro.copy_(other),
    "out=": lambda ro, other: torch.mul(other, 2, out=ro),
    "foreach": lambda ro, other: torch._foreach_add_([other.clone(), ro], 1.0),
    "inplace=True": lambda ro, other: F.relu(ro, inplace=True),
    "positional inplace": lambda ro, other: F.dropout(ro, 0.5, True, True),
    "functional _": lambda ro, other: torch.relu_(ro),
    "view": lambda ro, other: ro.t()[0].fill_(0),
    "detached alias": lambda ro, other: ro.detach().zero_(),
    "unbound": lambda ro, other: ro.unbind(0)[1].neg_(),
    "init": lambda ro, other: torch.nn.init.normal_(ro),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_in_place_writes_are_refused_before_anything_is_written(write: str) -> None:
    memory, ro = _shared()
    with pytest.raises(
        ReadOnlyError,
        match=r"read-only tensor \(\w+, on a torch.float32 tensor of shape \[[34, ]+\]\)",
    ):
        WRITES[write](ro, torch.ones(3, 4))
    assert torch.equal(memory, torch.arange(12.0).reshape(3, 4))
    assert issubclass(ReadOnlyError, InPlaceWriteError)


def test_the_refusal_names_where_read_only_records_come_from_and_the_fix() -> None:
    # an actor constructed with a record holds it read-only too: the message says so
    _, ro = _shared()
    with pytest.raises(ReadOnlyError) as caught:
        ro.add_(1)
    message = str(caught.value)
    assert "as ray.get, a task's or an actor's argument" in message
    assert message.endswith("t.clone() for the tensor, or .clone() of the collection it came from")


def test_writes_from_it_into_plain_tensors_are_fine() -> None:
    _, ro = _shared()
    target = torch.zeros(3, 4)
    target.copy_(ro)
    target[0] = ro[2]
    torch.add(ro, 1, out=target)
    assert torch.equal(target, ro + 1) and type(target) is torch.Tensor


def test_results_are_plain_except_views_of_its_memory() -> None:
    _, ro = _shared()
    for result in (ro + 1, ro.sum(0), ro.clone(), ro.contiguous().float() * 1, ro.to(torch.int64)):
        assert type(result) is torch.Tensor
    for view in (ro[1], ro.view(12), ro.t(), ro.detach(), ro.expand(2, 3, 4), *ro.split(1)):
        assert type(view) is ReadOnlyTensor
    assert ro.requires_grad_(False) is ro  # metadata only: allowed


def test_numpy_views_are_read_only_too() -> None:
    _, ro = _shared()
    for array in (ro.numpy(), np.asarray(ro)):
        with pytest.raises(ValueError, match="read-only"):
            array[0, 0] = 1.0


def test_copies_and_pickles_are_plain_tensors() -> None:
    _, ro = _shared()
    for copied in (copy.deepcopy(ro), pickle.loads(pickle.dumps(ro)), ro.clone()):
        assert type(copied) is torch.Tensor and torch.equal(copied, ro)
        copied.add_(1)
    assert torch.equal(ro, torch.arange(12.0).reshape(3, 4))


def test_it_feeds_autograd_as_an_input() -> None:
    _, ro = _shared()
    weights = torch.ones(4, 2, requires_grad=True)
    (ro @ weights).sum().backward()
    assert weights.grad is not None and torch.equal(weights.grad, ro.sum(0)[:, None].expand(4, 2))


def test_share_memory_moves_it_into_a_new_segment_and_leaves_the_memory_alone() -> None:
    # As the peer's received tensors (private copies) do, a received collection may be
    # shared with worker processes: torch copies the memory into a new shared segment
    # and moves the tensor there; the memory other readers share is never written.
    raw = bytearray(np.arange(12, dtype=np.float32).tobytes())
    ro = read_only(torch.frombuffer(raw, dtype=torch.float32).view(3, 4))
    assert ro.share_memory_() is ro and ro.is_shared()
    raw[:4] = np.float32(-1).tobytes()  # the old memory: no longer the tensor's
    assert torch.equal(ro, torch.arange(12.0).reshape(3, 4))
    assert type(ro) is ReadOnlyTensor  # still refuses writes
    with pytest.raises(ReadOnlyError):
        ro.add_(1)
    assert np.frombuffer(raw, dtype=np.float32)[1:].tolist() == list(range(1, 12))
