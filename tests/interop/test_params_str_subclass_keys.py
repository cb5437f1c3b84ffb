"""``params[np.str_("a")]`` reads the entry ``"a"`` of a ``TensorDictParams`` (its
parameter), as ``params["a"]`` and as the peer; before it was an ``IndexTypeError``
(the string taken for a batch index) while ``params[np.str_("w")] = t`` worked (nu26a)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from tclass import TensorDict, TensorDictParams


def test_params_subscript_by_numpy_str_reads_the_parameter() -> None:
    p = TensorDictParams(TensorDict(a=torch.arange(2.0), batch_size=[2]))
    got = p[np.str_("a")]
    assert isinstance(got, nn.Parameter)
    assert got is p["a"]
    assert torch.equal(got.detach(), torch.arange(2.0))
    p[np.str_("w")] = torch.ones(2)
    assert list(p.keys()) == ["a", "w"]
    assert torch.equal(p[np.str_("w")].detach(), torch.ones(2))
