"""The ``NonTensorData``/``NonTensorStack`` classes used directly: construction, batch
sizes, ``data``/``tolist``, stacking and indexing, and the equal-value question (a stack
of equal values still reads as one entry per element).
"""

import torch

from compat.lib import NonTensorData, NonTensorStack, TensorDict, is_tensor_collection


def main() -> None:
    n = NonTensorData("v", batch_size=[3])
    assert n.data == "v"
    assert n.batch_size == torch.Size([3])
    assert n.tolist() == ["v", "v", "v"]
    assert is_tensor_collection(n)
    assert n[0].data == "v"

    s = NonTensorStack("a", "b", "c")
    assert s.batch_size == torch.Size([3])
    assert s.tolist() == ["a", "b", "c"]
    assert s[1].data == "b"
    assert s[1:].tolist() == ["b", "c"]
    s2 = NonTensorStack.from_list(["x", "y"])
    assert s2.tolist() == ["x", "y"]

    st = torch.stack([NonTensorData("p"), NonTensorData("q")])
    assert isinstance(st, NonTensorStack)
    assert st.tolist() == ["p", "q"]

    # a stack of data read back through a TensorDict
    td = TensorDict({"x": torch.zeros(3), "label": s}, [3])
    assert td["label"] == ["a", "b", "c"]
    assert td[0]["label"] == "a"
    assert td[torch.tensor([2, 0])]["label"] == ["c", "a"]
    assert td[td["x"] == 0]["label"] == ["a", "b", "c"]

    # a stack of equal values keeps one entry per element
    eq = torch.stack([TensorDict({"s": "p"}, []), TensorDict({"s": "p"}, [])])
    assert eq["s"] == ["p", "p"], eq["s"]
    assert eq.get("s").tolist() == ["p", "p"]
