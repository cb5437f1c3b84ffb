"""README (keys): ``flatten_keys(is_leaf=f)`` keeps every tensor and Python value, ``f``
deciding only which nested collections stay whole. The peer's drops, silently, each value
whose class ``f`` does not call a leaf (nu26a td_flatten_is_leaf: its result has only
``n``)."""

from __future__ import annotations

import torch

from tclass import TensorDict, TensorDictBase


def test_is_leaf_keeps_nested_collections_whole_and_drops_no_tensor() -> None:
    d = TensorDict(
        a=torch.zeros(2),
        s="x",
        n=TensorDict(
            c=torch.ones(2), m=TensorDict(e=torch.ones(2), batch_size=[2]), batch_size=[2]
        ),
        batch_size=[2],
    )
    flat = d.flatten_keys(is_leaf=lambda cls: issubclass(cls, TensorDictBase))
    assert sorted(flat.keys()) == ["a", "n", "s"]
    assert flat["n"] is not None and sorted(map(str, flat["n"].keys(True, True))) == [
        "('m', 'e')",
        "c",
    ]
    assert torch.equal(flat["a"], torch.zeros(2))
    assert flat["s"] == "x"
