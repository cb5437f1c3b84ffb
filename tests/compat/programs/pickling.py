"""Pickling in-memory collections (multiprocessing queues, ``copy.deepcopy``, caching):
``pickle``/``copy`` round trips of TensorDicts, lazy stacks and tensorclasses, and
``torch.save``/``torch.load`` of a TensorDict object in memory.
"""

import copy
import io
import pickle

import torch

from compat import lib as tensordict
from compat.lib import TensorDict, tensorclass


@tensorclass
class Item:
    x: torch.Tensor
    label: str


def main() -> None:
    td = TensorDict({"a": torch.arange(4.0), "b": {"c": torch.ones(4, 2)}}, [4])
    back = pickle.loads(pickle.dumps(td))
    assert isinstance(back, TensorDict) and back.batch_size == td.batch_size
    assert (back == td).all()

    deep = copy.deepcopy(td)
    deep["a"][0] = 100.0
    assert td["a"][0].item() == 0.0
    shallow = copy.copy(td)
    assert shallow["a"] is td["a"]

    item = Item(x=torch.zeros(3), label="cat", batch_size=[3])
    item2 = pickle.loads(pickle.dumps(item))
    assert isinstance(item2, Item) and item2.label == "cat"
    assert torch.equal(item2.x, item.x)
    item3 = copy.deepcopy(item)
    assert item3.label == "cat" and item3.x.data_ptr() != item.x.data_ptr()

    ls = tensordict.lazy_stack([TensorDict({"v": torch.zeros(i + 1)}, []) for i in range(3)])
    ls2 = pickle.loads(pickle.dumps(ls))
    assert ls2.batch_size == torch.Size([3])
    assert ls2[2]["v"].shape == (3,)

    buffer = io.BytesIO()
    torch.save(td, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert (loaded == td).all()
