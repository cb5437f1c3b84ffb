"""A lazy stack's in-place removals (``separates``, ``exclude`` / ``select`` with
``inplace=True``) are all or nothing: every member is checked before any loses an entry
(the peer's ``separates`` removes the entries of the members before a locked one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass.errors import LockedError


def _stack(lib: Any) -> tuple[Any, Any, Any]:
    a = lib.TensorDict(a=torch.arange(2), b=torch.ones(2), batch_size=[2])
    b = a.clone().lock_()
    return a, b, lib.lazy_stack([a, b], 0)


@pytest.mark.parametrize(
    "remove",
    [
        lambda s: s.separates("a"),
        lambda s: s.exclude("a", inplace=True),
        lambda s: s.select("b", inplace=True),
    ],
)
def test_a_locked_member_leaves_every_member_as_it_was(remove: Callable[[Any], Any]) -> None:
    a, b, stack = _stack(tclass)
    with pytest.raises(LockedError, match="locked"):
        remove(stack)
    assert set(a.keys()) == {"a", "b"} and set(b.keys()) == {"a", "b"}


def test_the_peer_raises_the_same_builtin_after_changing_a_member() -> None:
    peer = pytest.importorskip("tensordict")
    a, _, stack = _stack(peer)
    with pytest.raises(RuntimeError, match="locked"):
        stack.separates("a")
    assert set(a.keys()) == {"b"}  # its partial write, which tclass does not make


def test_unlocked_members_lose_the_entries() -> None:
    a = tclass.TensorDict(a=torch.arange(2), b=torch.ones(2), batch_size=[2])
    b = a.clone()
    out = tclass.lazy_stack([a, b], 0).separates("a")
    assert out["a"].tolist() == [[0, 1], [0, 1]]
    assert set(a.keys()) == {"b"} and set(b.keys()) == {"b"}


def test_a_locked_stack_excluding_nothing_it_holds_runs_as_the_peers() -> None:
    for lib in (tclass, pytest.importorskip("tensordict")):
        a, b, stack = _stack(lib)
        stack.lock_()
        assert stack.exclude(inplace=True) is stack
        assert stack.exclude("zz", inplace=True) is stack
        assert set(a.keys()) == {"a", "b"} and set(b.keys()) == {"a", "b"}
