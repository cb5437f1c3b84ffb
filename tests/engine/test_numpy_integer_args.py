"""Numpy integers as sizes and dims (``np.int64(2)``, what numpy code computes): torch
takes them as ints, and so do the peer and tclass, for a TensorDict, a lazy stack and a
record alike; a numpy bool stays refused, as in torch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import tclass
from tclass.errors import ArgumentError, OperandError

n = np.int64

CALLS = {
    "reshape": lambda t: t.reshape(n(2), -1),
    "reshape_tuple": lambda t: t.reshape((n(2), n(6))),
    "view": lambda t: t.view(n(-1)),
    "expand": lambda t: t.expand(n(2), *t.batch_size),
    "permute": lambda t: t.permute(n(1), n(0)),
    "all_dim": lambda t: (t == t).all(n(0)),
    "any_dims": lambda t: (t == t).any((n(0), 1)),
    "sum_dim": lambda t: t.sum(n(1)),
    "pad": lambda t: tclass.pad(t, [n(0), n(1)]),
}


def _make(kind: str) -> Any:
    dense = tclass.TensorDict({"obs": torch.arange(24.0).view(4, 3, 2)}, [4, 3])
    if kind == "td":
        return dense
    if kind == "lazy":
        return tclass.lazy_stack(list(dense.unbind(0)))
    namespace = {"__annotations__": {"obs": torch.Tensor}, "__module__": __name__}
    rec = tclass.tensorclass(type("Rec", (), namespace))
    return rec(obs=dense["obs"], batch_size=[4, 3])


@pytest.mark.parametrize("kind", ["td", "lazy", "record"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_numpy_integer_sizes_and_dims_act_as_ints(kind: str, name: str) -> None:
    """Each call with numpy integers gives what it gives with the same Python ints
    (tclass refused them: "sizes must be ints", "dim must be an int")."""
    call = CALLS[name]
    out = call(_make(kind))
    with_ints = call(_make("td"))
    assert out.batch_size == with_ints.batch_size
    assert all(type(size) is int for size in out.batch_size)
    assert torch.equal(out.get("obs"), with_ints.get("obs"))


def test_numpy_integer_sizes_match_the_peer() -> None:
    tensordict = pytest.importorskip("tensordict")
    peer = tensordict.TensorDict({"obs": torch.arange(24.0).view(4, 3, 2)}, [4, 3])
    mine = _make("td")
    for name in ("reshape", "expand", "permute", "all_dim", "sum_dim"):
        theirs, ours = CALLS[name](peer), CALLS[name](mine)
        assert list(ours.batch_size) == [int(size) for size in theirs.batch_size]
        assert torch.equal(ours["obs"], theirs["obs"])


def test_numpy_bools_and_floats_stay_refused() -> None:
    td = _make("td")
    with pytest.raises(ArgumentError, match="sizes must be ints"):
        td.reshape(np.float64(2.0), -1)
    with pytest.raises(ArgumentError, match="sizes must be ints"):
        td.expand(True, 4, 3)
    with pytest.raises(OperandError, match="dim must be an int"):
        td.all(np.bool_(True))
    with pytest.raises(OperandError, match="dim must be one int"):
        td.cumsum(np.float32(0))
