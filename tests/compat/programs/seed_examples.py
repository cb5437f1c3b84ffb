"""The peer documentation's own examples (seeds 01, 02, 05): memmap_/memmap_like of a
nested TensorDict, the nested structure with a stacked list of TensorDicts and a
tensorclass reloaded through ``TensorDictBase.load_memmap``, ``copy_existing``, the
``fromkeys`` + ``load_memmap`` example, sub-folder loads and the meta device.
"""

import os
import tempfile

import torch

from compat import lib as tensordict
from compat.lib import MemoryMappedTensor, TensorDict, TensorDictBase, tensorclass


@tensorclass
class MyClass:
    data: torch.Tensor
    metadata: str


def main() -> None:
    # seed 01
    td = TensorDict({"a": torch.rand(10), "b": {"c": torch.rand(10)}}, [10])
    td.memmap_()
    assert isinstance(td["a"], MemoryMappedTensor) and isinstance(td["b", "c"], MemoryMappedTensor)
    td = TensorDict({"a": torch.rand(10), "b": {"c": torch.rand(10)}}, [10])
    mm_td = td.memmap_like()
    assert (mm_td["a"].contiguous() == 0).all()
    assert isinstance(mm_td["a"], MemoryMappedTensor)

    # seed 02: subtypes rebuilt by the base class's load_memmap
    td_list = [TensorDict({"item": i}, batch_size=[]) for i in range(4)]
    tc = MyClass(torch.randn(3), metadata="some text", batch_size=[])
    data = TensorDict({"td_list": torch.stack(td_list), "tensorclass": tc}, [])
    with tempfile.TemporaryDirectory() as tempdir:
        data.memmap_(tempdir)
        loaded_data = TensorDictBase.load_memmap(tempdir)
        assert (loaded_data == data).all()
        assert isinstance(loaded_data["tensorclass"], MyClass)
        assert loaded_data["tensorclass"].metadata == "some text"
        assert loaded_data["td_list", "item"].tolist() == [0, 1, 2, 3]
        assert os.path.isdir(os.path.join(tempdir, "tensorclass"))

    # seed 02: memmap twice without a prefix gives the same tensors; copy_existing
    td = TensorDict({"a": 1}, [])
    td0 = td.memmap()
    td1 = td0.memmap()
    assert td0["a"] is td1["a"]
    with tempfile.TemporaryDirectory() as tmpdir_0:
        td0 = td.memmap(tmpdir_0)
        td0 = td.memmap(tmpdir_0)  # results are overwritten
        with tempfile.TemporaryDirectory() as tmpdir_1:
            td1 = td0.memmap(tmpdir_1, copy_existing=True)
            td_load = TensorDict.load_memmap(tmpdir_1)
            assert (td_load == td).all()

    # seed 05
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "saved_td")
        td = TensorDict.fromkeys(["a", "b", "c", ("nested", "e")], 0)
        td.memmap(path)
        td_load = TensorDict.load_memmap(path)
        assert (td == td_load).all()
        nested = TensorDict.load_memmap(os.path.join(path, "nested"))
        assert nested["e"] == 0
        td = TensorDict({"a": torch.zeros(()), "b": {"c": torch.zeros(())}})
        path2 = os.path.join(root, "meta")
        td.save(path2)
        td_meta = tensordict.load_memmap(path2, device="meta")
        assert td_meta["b", "c"].device.type == "meta"
        assert td_meta.device == torch.device("meta")
