"""The collection the persistent-store tests write and read back (tests/io/test_h5.py,
tests/io/test_zarr.py): four rows of a ``uint8`` and a ``float32`` tensor, a nested
group holding a ``bool`` and a 3-d tensor, and a Python value."""

from __future__ import annotations

import torch

from tclass import NonTensorData, TensorDict

__all__ = ["sample"]


def sample() -> TensorDict:
    return TensorDict(
        {
            "obs": torch.arange(4 * 3, dtype=torch.uint8).view(4, 3),
            "reward": torch.linspace(0, 1, 4),
            "next": {
                "done": torch.tensor([False, True, False, True]),
                "x": torch.arange(16.0).view(4, 2, 2) / 16,
            },
            "env": NonTensorData("pong", batch_size=[4]),
        },
        batch_size=[4],
    )
