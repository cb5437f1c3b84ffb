"""A record whose field holds another kind (nu25c's programs): its ``to_tensordict``
gives plain tensors, as the peer's, also of a ``TensorDictParams`` in a field."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict

peer = pytest.importorskip("tensordict")


def _record(lib: Any) -> Any:
    @lib.tensorclass
    class Rec:
        a: torch.Tensor
        n: lib.TensorDictBase

    inner = lib.TensorDictParams(lib.TensorDict(c=torch.arange(8.0).reshape(2, 4), batch_size=[2]))
    return Rec(a=torch.arange(6.0).reshape(2, 3), n=inner, batch_size=[2])


def test_to_tensordict_of_a_record_holding_params_gives_plain_tensors() -> None:
    # its n.c stayed a Parameter (the record's storage was cloned as it was)
    out = _record(tclass).to_tensordict()
    expected = _record(peer).to_tensordict()
    assert type(out) is TensorDict and type(out["n"]) is TensorDict
    assert type(out["n", "c"]) is torch.Tensor and type(expected["n", "c"]) is torch.Tensor
    assert torch.equal(out["n", "c"], expected["n", "c"].detach())
    assert torch.equal(out["a"], expected["a"])


def test_to_tensordict_of_a_record_copies() -> None:
    @tclass.tensorclass
    class Rec:
        a: torch.Tensor
        s: str

    rec = Rec(a=torch.zeros(2), s="x", batch_size=[2])
    out = rec.to_tensordict()
    out["a"].fill_(1.0)
    assert torch.equal(rec.a, torch.zeros(2)) and out["s"] == "x"
