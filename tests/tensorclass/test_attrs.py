"""``attrs()`` (tclass/_tensorclass/_attrs.py): the layout of its result."""

from __future__ import annotations

import torch

from tclass import NonTensorData, TensorAttrs, TensorDict


def test_attrs_keeps_key_order_and_empty_nested_collections() -> None:
    # The peer's attrs is an apply over the tree: Python values stay where they were and
    # nested collections without tensors are kept (programs 15,630,402 and 15,610,171 of
    # features,index,shape,combine L12)
    td = TensorDict(
        {
            "v": "a",
            "n": TensorDict({"e": TensorDict()}, []),
            "b": torch.zeros(1, 3),
            "a": torch.ones(1),
        },
        batch_size=[1],
    )
    attrs = td.attrs()
    assert list(attrs.keys()) == ["v", "n", "b", "a"]
    assert list(attrs["n"].keys()) == ["e"] and list(attrs["n", "e"].keys()) == []
    assert isinstance(attrs.get("v"), NonTensorData) and attrs.get("v").data == "a"
    assert isinstance(attrs["b"], TensorAttrs) and attrs["b"].tgt_shape == torch.Size([1, 3])
    assert attrs["a"].tgt_dtype == torch.float32
