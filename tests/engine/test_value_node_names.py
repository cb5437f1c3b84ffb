"""A Python-value node's dims carry no names (the README, "Every collection is a
``TensorDictBase``"): tensordict 0.15.3's node reads its parent's names in most places
(``['t']``) but not after an index of a ``NonTensorStack`` (``[None]``); tclass's are
``None`` throughout, the parent's names left as they are."""

from __future__ import annotations

import torch

from tclass import NonTensorData, NonTensorStack, TensorDict


def test_value_nodes_carry_no_names_under_a_named_parent() -> None:
    td = TensorDict(
        s=NonTensorData("x", batch_size=[3]),
        st=NonTensorStack(*map(NonTensorData, "abc")),
        a=torch.zeros(3, 2),
        batch_size=[3],
        names=["t"],
    )
    for key in ("s", "st"):
        assert td.get(key).names == [None]
        assert td[1:].get(key).names == [None]
        assert td.unsqueeze(0).get(key).names == [None, None]
        assert torch.stack([td, td]).get(key).names == [None, None]
        assert td.rename("u").get(key).names == [None]
    assert td.names == ["t"] and td.rename("u").names == ["u"]
    assert td.get("s").data == "x" and td.get("st").tolist() == ["a", "b", "c"]
