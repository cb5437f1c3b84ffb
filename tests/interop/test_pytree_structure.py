"""The pytree structure of a collection (``_interop/_pytree.py``): its keys and its
number of batch dims, not the sizes of those dims, as the peer's, so that tree
utilities over several collections of one key set but other batch sizes work (merging
batches with ``tree_map(lambda *x: torch.cat(x), *batches)``); tclass refused them with
torch's "Node context mismatch"."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree


@pytest.mark.parametrize("lib_name", ["tclass", "tensordict"])
def test_batches_of_other_sizes_share_a_structure(lib_name: str) -> None:
    lib = pytest.importorskip(lib_name)

    def batch(n: int) -> object:
        return lib.TensorDict(
            {"x": torch.full((n, 3), float(n)), "n": {"r": torch.arange(n)}, "env": "e"}, [n]
        )

    assert pytree.tree_structure(batch(2)) == pytree.tree_structure(batch(1))
    merged = pytree.tree_map(lambda *x: torch.cat(x), batch(2), batch(1))
    assert merged["x"][:, 0].tolist() == [2.0, 2.0, 1.0] and merged["n", "r"].tolist() == [0, 1, 0]
    summed = pytree.tree_map(lambda x, y: x + y, batch(1), batch(2))
    assert summed["x"].shape == (2, 3) and summed["x"][0, 0].item() == 3.0
    if lib_name == "tclass":  # the peer rebuilds these with a batch size of []
        assert merged.batch_size == (3,) and merged.get("env").batch_size == (3,)
        assert merged.get("env").data == "e"


@pytest.mark.parametrize("lib_name", ["tclass", "tensordict"])
def test_other_dims_keys_or_values_are_other_structures(lib_name: str) -> None:
    lib = pytest.importorskip(lib_name)
    base = lib.TensorDict({"x": torch.ones(2, 3), "env": "a"}, [2])
    others = [
        lib.TensorDict({"x": torch.ones(2, 3), "env": "a"}, [2, 3]),
        lib.TensorDict({"y": torch.ones(2, 3), "env": "a"}, [2]),
        lib.TensorDict({"x": torch.ones(2, 3), "env": "b"}, [2]),
    ]
    for other in others:
        assert pytree.tree_structure(base) != pytree.tree_structure(other)
        with pytest.raises(ValueError, match="mismatch"):
            pytree.tree_map(lambda x, y: x, base, other)
