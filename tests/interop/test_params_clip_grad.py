"""``torch.nn.utils.clip_grad_norm_`` over a collection's parameters (nu25e / lo26c):
``params.parameters()`` and ``td.values(True, True)`` clip each leaf's gradient; the
collection itself is iterated by rows (torch's ``list(parameters)``), so it clips
nothing and returns 0, as the peer's (README, "Module parameters")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

import tclass

peer = pytest.importorskip("tensordict")


def _grads(lib: Any, batch: list[int]) -> Any:
    td = lib.TensorDict(
        a=nn.Parameter(torch.ones(3)),
        n=lib.TensorDict(b=nn.Parameter(torch.ones(3, 2)), batch_size=batch),
        batch_size=batch,
    )
    for leaf in td.values(True, True):
        leaf.grad = torch.full_like(leaf, 10.0)
    return td


def _norms(td: Any) -> list[float]:
    return [leaf.grad.norm().item() for leaf in td.values(True, True)]


_OF: dict[str, Callable[[Any], Any]] = {
    "values": lambda td: td.values(True, True),
    "list": lambda td: list(td.values(True, True)),
    "parameters": lambda td: td.parameters(),
}


@pytest.mark.parametrize("batch", [[], [3]])
@pytest.mark.parametrize("form", list(_OF))
def test_clip_grad_norm_of_the_leaves_clips(batch: list[int], form: str) -> None:
    results = []
    for lib in (tclass, peer):
        td = _grads(lib, batch)
        if form == "parameters":
            td = lib.TensorDictParams(td)
            for leaf in td.values(True, True):
                leaf.grad = torch.full_like(leaf, 10.0)
        total = torch.nn.utils.clip_grad_norm_(_OF[form](td), 1.0)
        results.append([total.item(), *_norms(td)])
    mine, theirs = results
    assert mine[0] == pytest.approx(30.0) and mine == pytest.approx(theirs)
    assert mine[1:] == pytest.approx([(1 / 3) ** 0.5, 6**0.5 / 3], rel=1e-4)  # norm 1
    assert sum(n * n for n in mine[1:]) == pytest.approx(1.0, rel=1e-4)


@pytest.mark.parametrize("params", [False, True])
def test_clip_grad_norm_of_the_collection_clips_nothing_as_the_peer(params: bool) -> None:
    for lib in (tclass, peer):
        td = _grads(lib, [3])
        if params:
            td = lib.TensorDictParams(td)
            for leaf in td.values(True, True):
                leaf.grad = torch.full_like(leaf, 10.0)
        total = torch.nn.utils.clip_grad_norm_(td, 1.0)  # iterates the rows
        assert total.item() == 0.0
        assert _norms(td) == pytest.approx([300**0.5, 600**0.5])  # unchanged
    for lib in (tclass, peer):  # without batch dims, iterating is a TypeError in both
        with pytest.raises(TypeError, match="iteration over a 0-d tensordict"):
            torch.nn.utils.clip_grad_norm_(_grads(lib, []), 1.0)
