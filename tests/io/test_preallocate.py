"""``from_schema`` (tclass/_io/_preallocate.py): the layout of the collection it builds."""

from __future__ import annotations

import torch

from tclass import TensorDict


def test_from_schema_lists_top_level_entries_before_nested_ones() -> None:
    # As the constructor lays out a dict with nested keys (the peer's from_schema builds
    # one): program 15,600,337 of features,index,shape,combine L8
    schema = {
        ("n", "b"): ([1, 1], torch.float64),
        "c": ([], torch.float32),
        ("m", "x"): ([2], torch.int64),
        "a": ([3], torch.bool),
    }
    td = TensorDict.from_schema(schema, batch_size=[0, 3])
    assert list(td.keys()) == ["c", "a", "n", "m"]
    assert td["n", "b"].shape == (0, 3, 1, 1) and td["n", "b"].dtype == torch.float64
    assert td["a"].shape == (0, 3, 3) and td["m", "x"].dtype == torch.int64
