"""Single-file archives and growing saved datasets (tensordict 0.15): ``save(...,
archive=True)`` / a ``.tdz`` path, ``pack_memmap``/``unpack_memmap``/``is_memmap_archive``,
and ``append_memmap`` adding rows to a saved collection without rewriting it.
"""

import os
import tempfile

import torch

from compat import lib as tensordict
from compat.lib import TensorDict


def make(n: int, start: int) -> TensorDict:
    return TensorDict(
        {
            "obs": torch.arange(start, start + n).float().unsqueeze(-1).expand(n, 3).clone(),
            "next": {"r": torch.ones(n)},
        },
        batch_size=[n],
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        data = make(5, 0)

        archive = os.path.join(root, "data.tdz")
        data.save(archive)
        assert os.path.isfile(archive)
        assert tensordict.is_memmap_archive(archive)
        back = TensorDict.load(archive)
        assert (back == data).all()
        assert tensordict.load_memmap(archive)["next", "r"].sum().item() == 5.0

        folder = os.path.join(root, "folder")
        data.memmap(folder)
        packed = tensordict.pack_memmap(folder, os.path.join(root, "packed.tdz"))
        assert tensordict.is_memmap_archive(packed)
        assert not tensordict.is_memmap_archive(folder)
        unpacked = tensordict.unpack_memmap(packed, os.path.join(root, "unpacked"))
        assert (TensorDict.load_memmap(unpacked) == data).all()

        # a dataset written in runs: append rows to the saved folder
        grow = os.path.join(root, "grow")
        make(4, 0).memmap(grow)
        tensordict.append_memmap(grow, make(3, 4))
        tensordict.append_memmap(grow, make(2, 7))
        grown = TensorDict.load_memmap(grow)
        assert grown.batch_size == torch.Size([9])
        assert grown["obs"][:, 0].tolist() == [float(i) for i in range(9)]
        assert grown["next", "r"].shape == (9,)
