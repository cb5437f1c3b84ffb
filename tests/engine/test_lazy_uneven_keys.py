"""The dense form (``contiguous()``, ``to_tensordict()``) of a lazy stack whose members
hold different keys: the peer keeps the keys all members share and drops the others
without a word, for members of one kind and of mixed kinds alike; tclass refuses for
both (README, "Stacking keeps what can be kept"), with an error that names each key held
by only some members, which members hold it, and the call that keeps the shared ones,
after which the result is the peer's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import errors

tensordict = pytest.importorskip("tensordict")


def _members(lib: Any, case: str) -> list[Any]:
    @lib.tensorclass
    class Rec:
        x: torch.Tensor
        y: torch.Tensor
        note: str = "n"

    td = lib.TensorDict(x=torch.ones(3), z=torch.full((3,), 2.0), batch_size=[3])
    if case == "one kind":
        return [td, lib.TensorDict(x=torch.zeros(3), batch_size=[3])]
    if case == "nested":
        sub = lib.TensorDict(p=torch.ones(3), q=torch.ones(3), batch_size=[3])
        return [
            lib.TensorDict(x=torch.ones(3), sub=sub, batch_size=[3]),
            lib.TensorDict(x=torch.zeros(3), sub={"p": torch.zeros(3)}, batch_size=[3]),
        ]
    return [Rec(x=torch.zeros(3), y=torch.ones(3), batch_size=[3]), td]  # mixed kinds


CASES: list[Any] = [
    pytest.param("one kind", r"'z' in members \[0\]\)", ("z",), id="one-kind"),
    pytest.param(
        "mixed", r"'note' in members \[0\]; 'y' in members \[0\]; 'z' in members \[1\]",
        ("note", "y", "z"), id="mixed-kinds",
    ),
    pytest.param("nested", r"\('sub', 'q'\) in members \[0\]", (("sub", "q"),), id="nested"),
]  # fmt: skip
DENSE: list[Any] = [
    pytest.param(lambda s: s.contiguous(), "contiguous()", id="contiguous"),
    pytest.param(lambda s: s.to_tensordict(), "to_tensordict()", id="to_tensordict"),
]


@pytest.mark.parametrize(("dense", "action"), DENSE)
@pytest.mark.parametrize(("case", "named", "uneven"), CASES)
def test_the_error_names_the_keys_and_the_fix_gives_the_peers_result(
    case: str,
    named: str,
    uneven: tuple[Any, ...],
    dense: Callable[[Any], Any],
    action: str,
) -> None:
    peer = dense(tensordict.lazy_stack(_members(tensordict, case), 0))
    stack = tclass.lazy_stack(_members(tclass, case), 0)
    with pytest.raises(errors.HeterogeneousEntryError, match=named) as caught:
        dense(stack)
    message = str(caught.value)
    assert f"{action} needs the dense stack" in message
    assert f"lazy.exclude({', '.join(map(repr, uneven))})" in message
    assert "lazy.select(*lazy.keys(True, True))" in message
    assert isinstance(caught.value, ValueError)
    kept = dense(stack.exclude(*uneven))  # the fix the message gives
    assert type(kept).__name__ == type(peer).__name__ == "TensorDict"
    assert sorted(kept.keys(True, True), key=str) == sorted(peer.keys(True, True), key=str)
    for key in peer.keys(True, True):
        assert kept.get(key).tolist() == peer.get(key).tolist()
    shared = dense(stack.select(*stack.keys(True, True)))  # or the keys all members share
    assert sorted(shared.keys(True, True), key=str) == sorted(peer.keys(True, True), key=str)


def test_members_of_the_same_keys_and_other_stack_errors_are_unchanged() -> None:
    shapes = [(3,), (3, 2)]
    stack = tclass.lazy_stack([tclass.TensorDict(x=torch.ones(s), batch_size=[3]) for s in shapes])
    with pytest.raises(errors.HeterogeneousEntryError) as caught:
        stack.contiguous()
    assert "held by only some" not in str(caught.value)
    same = tclass.lazy_stack([tclass.TensorDict(x=torch.ones(3), batch_size=[3])] * 2, 0)
    assert same.contiguous()["x"].shape == (2, 3)


@pytest.mark.parametrize(("case", "named", "uneven"), CASES)
def test_densify_refuses_keys_held_by_only_some_members(
    case: str, named: str, uneven: tuple[Any, ...]
) -> None:
    # These keys have no dims past the batch: the peer's densify gives the members that
    # lack one an empty part that breaks the batch size (tests/engine/test_lazy_densify_fill.py
    # has the keys that an empty part fills).
    stack = tclass.lazy_stack(_members(tclass, case), 0)
    with pytest.raises(errors.HeterogeneousEntryError, match=named) as caught:
        stack.densify()
    assert "densify() needs the dense stack" in str(caught.value)
    assert f"lazy.exclude({', '.join(map(repr, uneven))})" in str(caught.value)
    kept = stack.exclude(*uneven).densify()  # the fix the message gives
    peer = tensordict.lazy_stack(_members(tensordict, case), 0).exclude(*uneven).densify()
    assert sorted(kept.keys(True, True), key=str) == sorted(peer.keys(True, True), key=str)
    for key in peer.keys(True, True):
        assert kept.get(key).tolist() == peer.get(key).tolist()


def test_densify_of_ragged_members_with_the_same_keys_still_nests() -> None:
    shapes = [(3, 2), (3, 4)]
    members = [tclass.TensorDict(x=torch.ones(s), y=torch.zeros(3), batch_size=[3]) for s in shapes]
    dense = tclass.lazy_stack(members).densify(layout=torch.jagged)
    assert dense["x"].is_nested and dense["y"].shape == (2, 3)
