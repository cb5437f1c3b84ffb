"""Device transfers of many small leaves: ``consolidate`` into one buffer,
``is_consolidated``, ``to(device)`` of a consolidated TensorDict, ``pin_memory``,
``share_memory_``/``is_shared``, and ``from_consolidated``-free round trips.
"""

import torch

from compat.lib import TensorDict


def main() -> None:
    td = TensorDict(
        {f"k{i}": torch.full((4, i + 1), float(i)) for i in range(10)}
        | {"nested": {"x": torch.arange(4), "y": torch.ones(4, dtype=torch.bool)}},
        [4],
    )
    c = td.consolidate()
    assert c.is_consolidated()
    assert not td.is_consolidated()
    assert (c == td).all()
    assert c["nested", "x"].tolist() == [0, 1, 2, 3]
    assert c["k9"].shape == (4, 10)
    moved = c.to("cpu")
    assert (moved == td).all()

    # clone of a consolidated TensorDict is a regular one
    assert (c.clone() == td).all()

    shared = td.clone().share_memory_()
    assert shared.is_shared()
    assert not td.is_shared()

    if torch.cuda.is_available():
        pinned = td.pin_memory()
        assert pinned["k0"].is_pinned()
        g = c.to("cuda", non_blocking=True)
        torch.cuda.synchronize()
        assert g["nested", "y"].device.type == "cuda"
        assert (g.cpu() == td).all()
