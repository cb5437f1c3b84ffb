"""What kind each shape op gives on a lazy stack built by the constructor over records
(``LazyStackedTensorDict(rec, rec2, stack_dim=d)``), checked against the peer: a record
of the members' class (indexing, ``unbind``, ``permute``, ``expand``), a lazy stack
(``transpose``, ``chunk``, ``split``, ``view``, ``clone``, ``apply``) or a TensorDict (the
dense stack: ``contiguous``, ``narrow``, ``flip``, ``roll``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass

peer = pytest.importorskip("tensordict")

OPS: dict[str, Callable[[Any], Any]] = {
    "transpose": lambda s: s.transpose(0, 1),
    "chunk(dim 0)": lambda s: s.chunk(2, 0),
    "chunk(dim 1)": lambda s: s.chunk(2, 1),
    "split(dim 0)": lambda s: s.split(1, 0),
    "split(dim 1)": lambda s: s.split(1, 1),
    "tensor_split(dim 0)": lambda s: s.tensor_split(2, 0),
    "tensor_split(dim 1)": lambda s: s.tensor_split(2, 1),
    "view": lambda s: s.view(-1),
    "reshape": lambda s: s.reshape(-1),
    "flatten": lambda s: s.flatten(0, 1),
    "unflatten": lambda s: s.unflatten(list(s.batch_size).index(4), (2, 2)),
    "expand": lambda s: s.expand(3, *s.batch_size),
    "narrow(dim 0)": lambda s: s.narrow(0, 0, 1),
    "narrow(dim 1)": lambda s: s.narrow(1, 0, 1),
    "flip": lambda s: s.flip(0),
    "roll": lambda s: s.roll(1, 0),
    "roll(no dims)": lambda s: s.roll(1),
    "gather": lambda s: s.gather(0, torch.zeros(s.batch_size, dtype=torch.long)),
    "clone": lambda s: s.clone(),
    "apply": lambda s: s.apply(lambda v: v + 1),
    "to(dtype)": lambda s: s.to(torch.float64),
    "to(device)": lambda s: s.to("cpu"),
    "contiguous": lambda s: s.contiguous(),
    "select": lambda s: s.select("obs"),
    "exclude": lambda s: s.exclude("obs"),
    "unsqueeze": lambda s: s.unsqueeze(0),
    "squeeze": lambda s: s.unsqueeze(0).squeeze(0),
    "permute": lambda s: s.permute(1, 0),
    "index": lambda s: s[0],
    "unbind(dim 1)": lambda s: s.unbind(1),
}


def _kinds(lib: Any, op: Callable[[Any], Any], stack_dim: int) -> list[tuple[str, torch.Size]]:
    @lib.tensorclass
    class Rec:
        obs: torch.Tensor

    first = Rec(obs=torch.zeros(4, 2), batch_size=[4])
    second = Rec(obs=torch.ones(4, 2), batch_size=[4])
    out = op(lib.LazyStackedTensorDict(first, second, stack_dim=stack_dim))
    pieces = out if isinstance(out, tuple) else (out,)
    return [("record" if isinstance(p, Rec) else type(p).__name__, p.batch_size) for p in pieces]


@pytest.mark.parametrize("stack_dim", [0, 1])
@pytest.mark.parametrize("name", sorted(OPS))
def test_a_shape_op_on_a_constructor_stack_of_records_gives_the_peers_kind(
    name: str, stack_dim: int
) -> None:
    mine = _kinds(tclass, OPS[name], stack_dim)
    theirs = _kinds(peer, OPS[name], stack_dim)
    assert mine == theirs
    assert {kind for kind, _ in mine} <= {"record", "LazyStackedTensorDict", "TensorDict"}


def test_the_kinds_differ_between_ops() -> None:
    # the comparison above is not vacuous: each of the three kinds comes back
    kinds = {_kinds(tclass, OPS[name], 0)[0][0] for name in ("transpose", "expand", "flip")}
    assert kinds == {"LazyStackedTensorDict", "record", "TensorDict"}
