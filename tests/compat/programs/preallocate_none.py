"""The peer's preallocation pattern: tensorclass fields left ``None`` at construction and
filled later, by attribute or by indexed writes, and a buffer grown from an expanded
example.
"""

import torch

from compat.lib import tensorclass


@tensorclass
class Data:
    X: torch.Tensor
    y: torch.Tensor


def main() -> None:
    data = Data(X=None, y=None, batch_size=[10])
    assert data.X is None and data.y is None
    data.X = torch.zeros(10, 3)
    data.y = torch.zeros(10, dtype=torch.long)
    assert data.X.shape == (10, 3)

    # an empty buffer filled row by row from a source of batches
    buffer = Data(X=None, y=None, batch_size=[6])
    for i in range(3):
        chunk = Data(X=torch.full((2, 3), float(i)), y=torch.full((2,), i), batch_size=[2])
        buffer[2 * i : 2 * i + 2] = chunk
    assert buffer.X.shape == (6, 3)
    assert buffer.y.tolist() == [0, 0, 1, 1, 2, 2]

    # preallocated from one example, expanded and cloned
    example = Data(X=torch.zeros(3), y=torch.tensor(0), batch_size=[])
    storage = example.expand(8).clone()
    storage[3] = Data(X=torch.ones(3), y=torch.tensor(5), batch_size=[])
    assert storage.y.tolist() == [0, 0, 0, 5, 0, 0, 0, 0]
    assert storage.X[3].tolist() == [1.0, 1.0, 1.0]
