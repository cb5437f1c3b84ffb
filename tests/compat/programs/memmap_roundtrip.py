"""The memory-mapped family end to end: ``memmap``, ``memmap_``, ``memmap_like``,
``load_memmap`` (whole folder, a sub-folder, onto the meta device), writes through loaded
leaves reaching the files, and the folder layout the docs describe.
"""

import os
import tempfile

import torch

from compat import lib as tensordict
from compat.lib import MemoryMappedTensor, TensorDict


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        td = TensorDict(
            {
                "a": torch.arange(10.0),
                "b": {"c": torch.arange(20).reshape(10, 2), "d": torch.ones(10, dtype=torch.bool)},
            },
            batch_size=[10],
        )

        # memmap: a locked copy on disk, the source untouched
        path = os.path.join(root, "copy")
        mm = td.memmap(path, num_threads=2)
        assert mm.is_memmap() and mm.is_locked
        assert not td.is_memmap()
        assert isinstance(mm["a"], MemoryMappedTensor)
        assert isinstance(mm["b", "c"], MemoryMappedTensor)
        assert sorted(os.listdir(path)) == ["a.memmap", "b", "meta.json"]
        assert os.path.exists(os.path.join(path, "b", "c.memmap"))
        assert os.path.exists(os.path.join(path, "b", "meta.json"))

        loaded = TensorDict.load_memmap(path)
        assert (loaded == td).all()
        assert torch.equal(loaded["a"], td["a"])
        assert torch.equal(loaded["b", "c"], td["b", "c"])
        assert loaded["b", "d"].dtype == torch.bool
        assert loaded.batch_size == torch.Size([10])

        # the module-level functions
        loaded2 = tensordict.load_memmap(path)
        assert torch.equal(loaded2["b", "c"], td["b", "c"])
        sub = TensorDict.load_memmap(os.path.join(path, "b"))
        assert set(sub.keys()) == {"c", "d"} and sub.batch_size == torch.Size([10])

        # writes into a loaded leaf land in the file
        loaded["a"][0] = 100.0
        again = TensorDict.load_memmap(path)
        assert again["a"][0].item() == 100.0

        # memmap_ in place: the same object now holds memory-mapped leaves
        path2 = os.path.join(root, "inplace")
        td2 = td.clone()
        out = td2.memmap_(path2)
        assert out is td2 and td2.is_memmap()
        assert isinstance(td2["a"], MemoryMappedTensor)
        td2["a"][1] = -1.0
        assert TensorDict.load_memmap(path2)["a"][1].item() == -1.0

        # memmap_like: zero-filled files of the same structure (here from an expanded row)
        path3 = os.path.join(root, "like")
        datum = TensorDict(
            {"image": torch.zeros(3, 4, 4, dtype=torch.uint8), "label": torch.tensor(0)}, []
        )
        data = datum.expand(1000)
        disk = data.memmap_like(path3)
        assert disk.batch_size == torch.Size([1000])
        assert disk["image"].shape == (1000, 3, 4, 4)
        assert disk["image"].dtype == torch.uint8
        assert (disk["label"][:5] == 0).all()
        disk[10:20] = TensorDict(
            {"image": torch.full((10, 3, 4, 4), 7, dtype=torch.uint8), "label": torch.arange(10)},
            [10],
        )
        reread = TensorDict.load_memmap(path3)
        assert reread["label"][10:20].tolist() == list(range(10))
        assert (reread["image"][15] == 7).all() and (reread["image"][9] == 0).all()

        # without a prefix, memmap works in a temporary location
        anon = td.memmap()
        assert anon.is_memmap() and torch.equal(anon["a"], td["a"])

        # the meta device: structure without data
        meta = tensordict.load_memmap(path, device="meta")
        assert meta["b", "c"].device.type == "meta"
        assert meta["b", "c"].shape == (10, 2)

        # load_memmap into an existing TensorDict (out=)
        target = TensorDict.load_memmap(path).clone()
        target.zero_()
        result = TensorDict.load_memmap(path, out=target)
        assert torch.equal(result["b", "c"], td["b", "c"])

        # memmap to a prefix that already holds a saved tensordict overwrites it
        td3 = TensorDict({"a": torch.full((10,), 3.0)}, [10])
        td3.memmap(path2)
        assert TensorDict.load_memmap(path2)["a"][0].item() == 3.0

        # a Python value saved with the tensors comes back as the value
        path4 = os.path.join(root, "labelled")
        td.set_non_tensor("label", "dataset-v1")
        assert td.get_non_tensor("label") == "dataset-v1"
        td.memmap(path4)
        labelled = TensorDict.load_memmap(path4)
        assert labelled["label"] == "dataset-v1"
        assert labelled.get_non_tensor("label") == "dataset-v1"
        assert torch.equal(labelled["a"], td["a"])
