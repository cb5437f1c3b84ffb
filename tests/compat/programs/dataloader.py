"""Feeding a DataLoader from tensorclass and TensorDict datasets: batched fetching through
``__getitems__`` with an identity collate, the default collate, ``torch.stack`` as a collate,
a map-style Dataset wrapping a memory-mapped TensorDict, shuffling and a training loop.
"""

import tempfile

import torch
from torch.utils.data import DataLoader, Dataset

from compat.lib import TensorDict, tensorclass


@tensorclass
class Example:
    x: torch.Tensor
    y: torch.Tensor


class Wrapped(Dataset):
    """A user Dataset whose items are rows of a memory-mapped TensorDict."""

    def __init__(self, storage: TensorDict) -> None:
        self.storage = storage

    def __len__(self) -> int:
        return self.storage.batch_size[0]

    def __getitem__(self, index: int) -> TensorDict:
        return self.storage[index]


def main() -> None:
    data = Example(x=torch.arange(40.0).reshape(20, 2), y=torch.arange(20), batch_size=[20])

    loader = DataLoader(data, batch_size=8, collate_fn=lambda batch: batch)
    batches = list(loader)
    assert [b.batch_size[0] for b in batches] == [8, 8, 4]
    assert all(isinstance(b, Example) for b in batches)
    assert torch.equal(batches[1].y, torch.arange(8, 16))

    default = list(DataLoader(data, batch_size=8))
    assert isinstance(default[0], Example) and default[0].batch_size == torch.Size([8])
    assert torch.equal(default[2].x, data.x[16:])

    shuffled = DataLoader(
        data, batch_size=5, shuffle=True, generator=torch.Generator().manual_seed(0)
    )
    seen = torch.cat([b.y for b in shuffled])
    assert sorted(seen.tolist()) == list(range(20)) and seen.tolist() != list(range(20))

    td = TensorDict({"a": torch.randn(12, 3), "b": {"c": torch.arange(12)}}, [12])
    stacked = list(DataLoader(td, batch_size=4, collate_fn=torch.stack))
    assert len(stacked) == 3 and stacked[0].batch_size == torch.Size([4])
    assert torch.equal(stacked[2]["b", "c"], torch.arange(8, 12))
    plain = list(DataLoader(td, batch_size=6))
    assert isinstance(plain[0], TensorDict) and plain[0].batch_size == torch.Size([6])

    with tempfile.TemporaryDirectory() as path:
        storage = td.memmap(path)
        ds = Wrapped(storage)
        rows = list(DataLoader(ds, batch_size=5, collate_fn=torch.stack))
        assert [r.batch_size[0] for r in rows] == [5, 5, 2]
        assert torch.equal(rows[1]["a"], td["a"][5:10])
        default_rows = next(iter(DataLoader(ds, batch_size=3)))
        assert isinstance(default_rows, TensorDict) and default_rows.batch_size == torch.Size([3])

    # a minimal training loop over tensorclass batches
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for batch in DataLoader(data, batch_size=10, collate_fn=lambda b: b):
        loss = (model(batch.x).squeeze(-1) - batch.y.float()).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
