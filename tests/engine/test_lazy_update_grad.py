"""A lazy stack's ``update_`` asks autograd about every member's target before it writes
anything (``tclass/_base/implemented/_grad_writes.py``): under grad mode, a copy into a
leaf that requires grad (a parameter) or into a view of one is refused, as torch's
``copy_`` and the peer's ``update_`` refuse it, from a dict or from a collection, with
members of different shapes, nested in a TensorDict; and nothing is written, the other
keys and the earlier members included (the peer's ``update_`` is all or nothing here too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import errors

tensordict = pytest.importorskip("tensordict")


def _stack(lib: Any, grad_in: tuple[int, ...], *, ragged: bool = False) -> tuple[Any, list[Any]]:
    members = [
        lib.TensorDict(
            x=torch.zeros(3, 2 + 2 * i * ragged, requires_grad=i in grad_in),
            y=torch.zeros(3),
            batch_size=[3],
        )
        for i in range(2)
    ]
    return lib.lazy_stack(members, 0), members


def _source(lib: Any, *, ragged: bool = False) -> Any:
    members = [
        lib.TensorDict(x=torch.ones(3, 2 + 2 * i * ragged), y=torch.ones(3), batch_size=[3])
        for i in range(2)
    ]
    return lib.lazy_stack(members, 0)


def _written(members: list[Any]) -> list[float]:
    return [float(m["x"].detach().sum() + m["y"].sum()) for m in members]


UPDATES: list[Any] = [
    pytest.param(
        lambda lib, s: s.update_({"y": torch.ones(2, 3), "x": torch.ones(2, 3, 2)}),
        False,
        id="dict",
    ),  # fmt: skip
    pytest.param(lambda lib, s: s.update_(_source(lib)), False, id="collection"),
    pytest.param(lambda lib, s: s.update_(_source(lib, ragged=True)), True, id="ragged"),
    pytest.param(
        lambda lib, s: s.update_({"y": torch.ones(2, 3)}, x=torch.ones(2, 3, 2)), False, id="kwargs"
    ),  # fmt: skip
]


@pytest.mark.parametrize("grad_in", [(0, 1), (1,)], ids=["both", "last"])
@pytest.mark.parametrize(("update", "ragged"), UPDATES)
def test_a_member_refusing_leaves_every_member_unwritten(
    update: Callable[[Any, Any], Any], ragged: bool, grad_in: tuple[int, ...]
) -> None:
    peer, peer_members = _stack(tensordict, grad_in, ragged=ragged)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        update(tensordict, peer)
    mine, members = _stack(tclass, grad_in, ragged=ragged)
    with pytest.raises(
        errors.InPlaceWriteError, match=rf"'x'.*member \[{grad_in[0]}\].*no_grad"
    ) as caught:
        update(tclass, mine)
    assert isinstance(caught.value, RuntimeError)  # what the peer's raise is caught as
    assert _written(members) == _written(peer_members) == [0.0, 0.0]


def test_a_view_of_a_parameter_in_a_member_is_refused() -> None:
    param = torch.zeros(2, 3, requires_grad=True)
    plain = tclass.TensorDict(x=torch.zeros(3), batch_size=[3])
    stack = tclass.lazy_stack([plain, tclass.TensorDict(x=param[0], batch_size=[3])], 0)
    with pytest.raises(errors.InPlaceWriteError, match="a view of a leaf tensor"):
        stack.update_({"x": torch.ones(2, 3)})
    assert plain["x"].tolist() == [0.0] * 3  # member 0 (first) is not written either


def test_a_lazy_stack_nested_in_a_tensordict_is_checked_through() -> None:
    def build(lib: Any) -> Any:
        inner = [
            lib.TensorDict(x=torch.zeros(3, requires_grad=i == 1), batch_size=[3]) for i in (0, 1)
        ]
        return lib.TensorDict(z=torch.zeros(2, 3), sub=lib.lazy_stack(inner, 0), batch_size=[2, 3])

    peer, mine = build(tensordict), build(tclass)
    values = {"z": torch.ones(2, 3), "sub": {"x": torch.ones(2, 3)}}
    with pytest.raises(RuntimeError):
        peer.update_(values)
    with pytest.raises(errors.InPlaceWriteError, match=r"\('sub', 'x'\).*member \[1\]"):
        mine.update_(values)
    assert mine["z"].sum() == peer["z"].sum() == 0  # written before "sub": not written


def test_writes_outside_grad_mode_and_keys_not_asked_for_go_through() -> None:
    stack, members = _stack(tclass, (0, 1))
    stack.update_(_source(tclass), keys_to_update=["y"])  # "x" is not written: no refusal
    assert [m["y"].tolist() for m in members] == [[1.0] * 3] * 2
    with torch.no_grad():
        stack.update_({"x": torch.full((2, 3, 2), 2.0)})
    assert [float(m["x"].detach().sum()) for m in members] == [12.0, 12.0]
    plain, plain_members = _stack(tclass, ())
    plain.update_({"x": torch.ones(2, 3, 2)})  # nothing requires grad
    assert _written(plain_members) == [6.0, 6.0]


@pytest.mark.parametrize("sizes", [[2, 1], [2, 1, 1, 1]])
def test_update_of_a_stack_of_a_ragged_stack_reads_no_dense_part(sizes: list[int]) -> None:
    """Program 11,320,539 of shape,records (--length 6): ``unflatten`` over a ragged lazy
    stack's other dim nests it in a stack of one; ``update_`` from its clone wrote
    nothing and raised HeterogeneousEntryError reading the part's ragged entry for the
    grad check, where the peer writes it (the check reads a part only where a target
    requires grad)."""
    dim = 0 if len(sizes) == 2 else -1
    results = []
    for lib in (tensordict, tclass):
        members = [lib.TensorDict(a=torch.ones(2, 1, 3 - i), batch_size=[2]) for i in range(2)]
        stack = lib.lazy_stack(members, 1).unflatten(dim, sizes)
        stack.update_(stack.clone().apply(lambda t: torch.full_like(t, 7.0)))
        results.append([m["a"] for m in members])
    for ours, theirs in zip(results[1], results[0], strict=True):
        assert torch.equal(ours, theirs)
        assert torch.equal(ours, torch.full_like(ours, 7.0))
