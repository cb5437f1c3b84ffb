"""``MemoryMappedTensor`` on its own and inside TensorDicts: the constructors (``empty``,
``zeros``, ``ones``, ``full``, ``from_tensor``, ``from_filename``, ``empty_like``),
``filename``, indexing and math returning plain tensors, and a dataset built from them.
"""

import os
import tempfile

import torch

from compat.lib import MemoryMappedTensor, TensorDict


def main() -> None:
    m = MemoryMappedTensor.empty((3, 4), dtype=torch.float32)
    assert isinstance(m, MemoryMappedTensor) and isinstance(m, torch.Tensor)
    assert m.shape == (3, 4)
    z = MemoryMappedTensor.zeros(2, 2)
    assert (z == 0).all()
    o = MemoryMappedTensor.ones((2,), dtype=torch.int64)
    assert o.tolist() == [1, 1] and o.dtype == torch.int64
    f = MemoryMappedTensor.full((2,), fill_value=3.0)
    assert f.tolist() == [3.0, 3.0]
    t = MemoryMappedTensor.from_tensor(torch.arange(5))
    assert t[1:3].tolist() == [1, 2]
    assert (t + 1).tolist() == [1, 2, 3, 4, 5]
    assert t.sum().item() == 10

    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "x.memmap")
        x = MemoryMappedTensor.from_tensor(torch.arange(6.0).reshape(2, 3), filename=path)
        assert os.path.exists(path)
        assert str(x.filename) == path
        x[1, 1] = 40.0
        y = MemoryMappedTensor.from_filename(path, dtype=torch.float32, shape=(2, 3))
        assert y[1, 1].item() == 40.0
        assert MemoryMappedTensor.empty_like(x).shape == (2, 3)
        zl = MemoryMappedTensor.zeros_like(x)
        assert (zl == 0).all()

        # the dataset pattern from the distributed tutorial
        n = 100
        dataset = TensorDict(
            {
                "images": MemoryMappedTensor.empty(
                    (n, 8, 8, 3), dtype=torch.uint8, filename=os.path.join(root, "images.memmap")
                ),
                "masks": MemoryMappedTensor.zeros((n, 8, 8, 3), dtype=torch.bool),
                "labels": MemoryMappedTensor.zeros((n, 1), dtype=torch.uint8),
            },
            batch_size=[n],
        )
        idx = [1, 50, 99]
        dataset["labels"][idx] = torch.tensor([[1], [2], [3]], dtype=torch.uint8)
        batch = dataset[idx].clone()
        assert batch["labels"].flatten().tolist() == [1, 2, 3]
        assert batch["images"].shape == (3, 8, 8, 3)
        assert not isinstance(batch["labels"], MemoryMappedTensor)

        # writes into an indexed row of the TensorDict reach the memory map
        dataset[5] = TensorDict(
            {
                "images": torch.full((8, 8, 3), 9, dtype=torch.uint8),
                "masks": torch.ones(8, 8, 3, dtype=torch.bool),
                "labels": torch.tensor([7], dtype=torch.uint8),
            },
            [],
        )
        assert dataset["labels"][5].item() == 7
        saved = dataset.memmap(os.path.join(root, "ds"), copy_existing=True)
        reread = TensorDict.load_memmap(os.path.join(root, "ds"))
        assert reread["images"][5].eq(9).all() and reread["labels"][5].item() == 7
        assert saved.batch_size == torch.Size([n])
