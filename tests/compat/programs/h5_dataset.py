"""An HDF5-backed dataset (``PersistentTensorDict``): a file written with h5py by another
tool, opened lazily with ``from_h5``, read by index, written through, converted with
``to_tensordict``, and a TensorDict exported with ``to_h5``. Skipped without h5py.
"""

import os
import tempfile

import torch

from compat import lib as tensordict
from compat.lib import PersistentTensorDict, TensorDict, require


def main() -> None:
    h5py = require("h5py")
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "data.h5")
        with h5py.File(path, "w") as f:
            f["images"] = torch.arange(10 * 2 * 2, dtype=torch.uint8).reshape(10, 2, 2).numpy()
            f["labels"] = torch.arange(10).numpy()
            f.create_group("extra")["weights"] = torch.ones(10, 3).numpy()

        data = PersistentTensorDict.from_h5(path, mode="r+", auto_batch_size=True, batch_dims=1)
        assert data.batch_size == torch.Size([10])
        assert data["labels"][3].item() == 3
        assert data["extra", "weights"].shape == (10, 3)
        batch = data[torch.tensor([1, 7])]
        assert batch["labels"].tolist() == [1, 7]
        assert batch["images"].dtype == torch.uint8

        labels = data["labels"]  # a tensor read from the file
        labels[0] = 100
        data.set_("labels", labels)  # written back to the file
        local = data.to_tensordict()
        assert isinstance(local, TensorDict)
        assert local["labels"][0].item() == 100
        data.close()

        out = os.path.join(root, "export.h5")
        td = TensorDict({"x": torch.randn(4, 2), "n": {"y": torch.arange(4)}}, [4])
        h5 = td.to_h5(out)
        assert isinstance(h5, PersistentTensorDict)
        assert torch.equal(h5["n", "y"], td["n", "y"])
        h5.close()
        again = tensordict.from_h5(out)
        assert torch.equal(again["x"], td["x"])
        again.close()
