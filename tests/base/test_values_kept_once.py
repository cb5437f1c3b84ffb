"""A Python value a collection holds once (a ``NonTensorData``) stays one value through
``masked_select`` of a collection without batch dims and ``quantile`` with a 1-D ``q``
over batch dims, as in the peer (lead35b)."""

from __future__ import annotations

import pytest
import torch

from tclass import NonTensorData, TensorDict


@pytest.mark.parametrize("flag", [True, False])
def test_masked_select_without_batch_dims_keeps_one_value(flag: bool) -> None:
    td = TensorDict({"a": torch.arange(3.0), "s": "pong"}, batch_size=[])
    out = td.masked_select(torch.tensor(flag))
    assert out.batch_size == (int(flag),)
    node = out.get("s")
    assert isinstance(node, NonTensorData) and node.data == "pong"
    assert node.batch_size == (int(flag),)
    assert torch.equal(out["a"], torch.arange(3.0).reshape(1, 3)[: int(flag)])


def test_quantile_of_a_1d_q_keeps_one_value_nested_too() -> None:
    x = TensorDict(
        {"a": torch.arange(6.0).reshape(3, 2), "n": {"s": "in", "b": torch.zeros(3, 2)}},
        batch_size=[3, 2],
    )
    x["s"] = "pong"
    out = x.quantile(torch.tensor([0.2, 0.8]), dim=0)
    assert out.batch_size == (2, 2)
    for key, text in (("s", "pong"), (("n", "s"), "in")):
        node = out.get(key)
        assert isinstance(node, NonTensorData) and node.data == text
    assert out.get(("n", "s")).batch_size == (2, 2)
    expected = torch.quantile(x["a"], torch.tensor([0.2, 0.8]), dim=0)
    assert torch.allclose(out["a"], expected)
