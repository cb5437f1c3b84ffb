"""``TensorDictParams.update_`` / ``update_at_`` are all or nothing, as a TensorDict's: a
value of the wrong shape at the third key leaves every parameter as it was (the peer
writes the ones before it)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from tclass import TensorDict, TensorDictParams


def _params() -> TensorDictParams:
    return TensorDictParams(TensorDict({k: nn.Parameter(torch.zeros(3)) for k in "abcd"}, [3]))


@pytest.mark.parametrize(
    "write",
    [
        lambda p: p.update_({"a": torch.ones(3), "b": torch.ones(3), "c": torch.ones(4)}),
        lambda p: p.update_at_(
            {"a": torch.ones(2), "b": torch.ones(2), "c": torch.ones(3)}, slice(0, 2)
        ),
    ],
    ids=["update_", "update_at_"],
)
def test_wrong_shape_at_third_key_writes_nothing(write: Any) -> None:
    params = _params()
    with pytest.raises(RuntimeError, match="'c'.*nothing was written"):
        write(params)
    for key in "abcd":
        assert not params[key].any(), key
    assert isinstance(params["a"], nn.Parameter)
