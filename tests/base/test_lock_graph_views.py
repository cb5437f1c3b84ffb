"""``unlock_()`` of a view of a locked collection that is still alive (issue 27, fz25f):
the peer refuses it ("part of a locked graph") exactly where the view holds one of the
source's nested collection objects; tclass links nodes, not views, and agrees wherever the
peer's views build new nested nodes. The peer's ``unsqueeze`` / ``squeeze`` of a
non-tensor value reuse its node (a stack over it, or the node itself), which tclass does
not (README, "A lock is unlocked from its root")."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass

peer = pytest.importorskip("tensordict")

_VIEWS = {
    "unflatten": lambda t: t.unflatten(-1, [-1]),
    "view": lambda t: t.view(-1),
    "reshape": lambda t: t.reshape(-1),
    "permute": lambda t: t.permute(1, 0),
    "transpose": lambda t: t.transpose(0, 1),
    "flatten": lambda t: t.flatten(0, 1),
    "expand": lambda t: t.expand(3, 2, 3),
    "slice": lambda t: t[:, :2],
    "split": lambda t: t.split(1, 0)[0],
    "unsqueeze": lambda t: t.unsqueeze(0),
    "squeeze": lambda t: t.unsqueeze(0).squeeze(0),
}


def _nested(lib: Any) -> Any:
    inner = lib.TensorDict(c=torch.arange(12.0).reshape(2, 3, 2), batch_size=[2, 3])
    return lib.TensorDict(a=torch.zeros(2, 3), n=inner, batch_size=[2, 3])


def _with_string(lib: Any) -> Any:
    td = lib.TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    td.set_non_tensor("s", "x")
    return td


def _unlocks(lib: Any, make: Any, op: Any) -> bool:
    source = make(lib).lock_()  # alive (and locked) while its view is unlocked
    view = op(source)
    try:
        view.unlock_()
    except RuntimeError as err:
        assert "locked graph" in str(err) or "nested in a locked" in str(err)
        return False
    assert source.is_locked and not view.is_locked
    return True


@pytest.mark.parametrize("name", sorted(_VIEWS))
def test_a_view_of_nested_collections_unlocks_as_the_peer(name: str) -> None:
    # every view builds new nested nodes in both: nothing links them to the source
    op = _VIEWS[name]
    assert _unlocks(peer, _nested, op) and _unlocks(tclass, _nested, op)


@pytest.mark.parametrize("make", [_nested, _with_string])
def test_exclude_shares_the_nested_nodes_and_refuses_as_the_peer(make: Any) -> None:
    def exclude(t: Any) -> Any:
        return t.exclude("a")

    assert not _unlocks(peer, make, exclude) and not _unlocks(tclass, make, exclude)
    out = exclude(make(tclass).lock_())  # the source is gone: the shared node unlocks
    out.unlock_()
    assert not out.is_locked


@pytest.mark.parametrize("name", sorted(_VIEWS))
def test_a_view_of_a_string_unlocks_where_the_peer_reuses_its_node(name: str) -> None:
    op = _VIEWS[name]
    reused = name in ("unsqueeze", "squeeze")  # the peer's node (or a stack over it)
    assert _unlocks(peer, _with_string, op) is not reused
    source = _with_string(tclass).lock_()
    view = op(source)
    view.unlock_()  # a new node: the source's lock stays where it is
    assert source.is_locked and source["s"] == "x" and not view.is_locked
    with pytest.raises(tclass.errors.LockedError):
        source.set_non_tensor("s", "y")
    assert source["s"] == "x"


def test_the_fuzzer_chain_unlocks() -> None:
    # fz25f: td.unsqueeze(0).lock_().unflatten(-1, [-1]).unlock_() with td alive
    def chain(lib: Any) -> tuple[Any, Any]:
        td = lib.TensorDict(a=torch.zeros(()), batch_size=[])
        td.set_non_tensor("s", "a")
        td = td.unsqueeze(0).lock_()
        return td, td.unflatten(-1, [-1])

    td, view = chain(peer)
    with pytest.raises(RuntimeError, match="part of a locked graph"):
        view.unlock_()
    td, view = chain(tclass)
    view.unlock_()
    assert td.is_locked and not view.is_locked and view.get("s").tolist() == ["a"]
