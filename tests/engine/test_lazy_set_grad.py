"""A lazy stack's ``set_`` asks autograd about every member's target before it writes
any member (``refuse_grad_member_sets`` in ``tclass/_base/implemented/_grad_writes.py``):
under grad mode, a copy into a leaf that requires grad (a parameter) is refused, and
nothing is written, the earlier members included. The peer writes member 0 and then
refuses member 1 (a partial in-place write); tclass is all or nothing. ``set_``'s rule
holds: a part that is the member's own tensor writes nothing and passes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import errors

tensordict = pytest.importorskip("tensordict")


def _members(lib: Any, nested: bool) -> list[Any]:
    def leaf(grad: bool) -> Any:
        x = torch.zeros(3, requires_grad=grad)
        return lib.TensorDict(n=lib.TensorDict(x=x)) if nested else lib.TensorDict(x=x)

    return [leaf(False), leaf(True)]


def _read(member: Any, nested: bool) -> list[float]:
    x = member["n", "x"] if nested else member["x"]
    return [float(v) for v in x.detach()]


SETS: list[Any] = [
    pytest.param(lambda lib, s: s.set_("x", torch.ones(2, 3)), False, id="tensor"),
    pytest.param(lambda lib, s: s.set_(("n", "x"), torch.ones(2, 3)), True, id="nested-key"),
    pytest.param(
        lambda lib, s: s.set_("n", lib.TensorDict(x=torch.ones(2, 3), batch_size=[2])),
        True,
        id="collection",
    ),
    pytest.param(lambda lib, s: s.set_("n", {"x": torch.ones(2, 3)}), True, id="dict"),
]


@pytest.mark.parametrize(("write", "nested"), SETS)
def test_a_member_refusing_leaves_the_earlier_members_unwritten(
    write: Callable[[Any, Any], Any], nested: bool
) -> None:
    peer_members = _members(tensordict, nested)
    with pytest.raises(RuntimeError):
        write(tensordict, tensordict.lazy_stack(peer_members))
    assert _read(peer_members[0], nested) == [1.0] * 3  # the peer's partial write
    members = _members(tclass, nested)
    with pytest.raises(errors.InPlaceWriteError, match=r"'x'.*member \[1\].*nothing was written"):
        write(tclass, tclass.lazy_stack(members))
    assert [_read(m, nested) for m in members] == [[0.0] * 3] * 2


def test_a_set_of_a_tensordict_holding_a_lazy_stack_writes_nothing() -> None:
    def build(lib: Any) -> tuple[Any, list[Any]]:
        members = _members(lib, False)
        return lib.TensorDict(n=lib.lazy_stack(members), batch_size=[2]), members

    value = {"x": torch.ones(2, 3)}
    peer, peer_members = build(tensordict)
    with pytest.raises(RuntimeError):
        peer.set_("n", tensordict.TensorDict(value, batch_size=[2]))
    mine, members = build(tclass)
    with pytest.raises(errors.InPlaceWriteError, match=r"member \[1\]"):
        mine.set_("n", tclass.TensorDict(value, batch_size=[2]))
    assert [_read(m, False) for m in members] == [_read(m, False) for m in peer_members]
    assert [_read(m, False) for m in members] == [[0.0] * 3] * 2


def test_own_values_and_writes_outside_grad_mode_go_through() -> None:
    for lib in (tensordict, tclass):  # views of one parameter, set_ to its own data
        param = torch.zeros(2, 3, requires_grad=True)
        stack = lib.lazy_stack([lib.TensorDict(x=param[0]), lib.TensorDict(x=param[1])])
        stack.set_("x", param.detach())  # nothing to write: no refusal, as the peer
        assert param.sum().item() == 0.0
    members = _members(tclass, False)
    with torch.no_grad():
        tclass.lazy_stack(members).set_("x", torch.ones(2, 3))
    assert [_read(m, False) for m in members] == [[1.0] * 3] * 2
    plain = [tclass.TensorDict(x=torch.zeros(3)) for _ in range(2)]
    tclass.lazy_stack(plain).set_("x", torch.ones(2, 3))  # nothing requires grad
    assert [_read(m, False) for m in plain] == [[1.0] * 3] * 2
