"""Merging collections: ``update`` with dicts and TensorDicts (nested merging, not
replacing), ``keys_to_update``, ``inplace=True``, ``update_`` into existing memory,
``merge_tensordicts``, and ``setdefault``.
"""

import torch

from compat.lib import TensorDict, merge_tensordicts


def main() -> None:
    td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2), "d": torch.zeros(2)}}, [2])
    out = td.update({"b": {"c": torch.ones(2)}})
    assert out is td
    assert td["b", "c"].tolist() == [1.0, 1.0]
    assert td["b", "d"].tolist() == [0.0, 0.0]  # nested levels merge

    td.update(TensorDict({"e": torch.ones(2), "f": torch.ones(2)}, [2]), keys_to_update=["e"])
    assert "e" in td.keys() and "f" not in td.keys()

    a_before = td["a"]
    td.update({"a": torch.full((2,), 3.0)}, inplace=True)
    assert td["a"] is a_before and a_before.tolist() == [3.0, 3.0]

    c_before = td["b", "c"]
    td.update_({"b": {"c": torch.full((2,), 5.0)}})
    assert td["b", "c"] is c_before and c_before.tolist() == [5.0, 5.0]

    # update with nested tuple keys
    td.update({("b", "g"): torch.full((2,), 7.0)})
    assert td["b", "g"].tolist() == [7.0, 7.0]

    merged = merge_tensordicts(
        TensorDict({"x": torch.zeros(2)}, [2]), TensorDict({"y": {"z": torch.ones(2)}}, [2])
    )
    assert set(merged.keys(True, True)) == {"x", ("y", "z")}

    value = td.setdefault("new", torch.ones(2))
    assert td["new"] is value
    again = td.setdefault("new", torch.zeros(2))
    assert again is value

    # update from a sub-batch at indices
    big = TensorDict({"a": torch.zeros(5), "b": {"c": torch.zeros(5)}}, [5])
    small = TensorDict({"a": torch.ones(2), "b": {"c": torch.ones(2)}}, [2])
    big.update_at_(small, torch.tensor([1, 3]))
    assert big["a"].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]
    assert big["b", "c"].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]
