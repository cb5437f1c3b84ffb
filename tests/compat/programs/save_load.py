"""``save``/``load`` and the tensorclass equivalents: a checkpoint written with
``td.save(path)`` or ``tensordict.save(td, path)`` and read back with ``TensorDict.load``,
``tensordict.load`` and ``Cls.load``; ``load_memmap`` of the same folder.
"""

import os
import tempfile

import torch

from compat import lib as tensordict
from compat.lib import TensorDict, tensorclass


@tensorclass
class Checkpoint:
    weights: torch.Tensor
    step: torch.Tensor
    name: str


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        td = TensorDict(
            {"a": torch.rand(3), "b": {"c": torch.rand(3, 2)}},
            batch_size=[3],
        )
        p1 = os.path.join(root, "td")
        td.save(p1)
        assert not td.is_memmap()  # save leaves the source as it was
        back = TensorDict.load(p1)
        assert torch.equal(back["a"], td["a"])
        assert torch.equal(back["b", "c"], td["b", "c"])
        assert back.batch_size == td.batch_size

        p2 = os.path.join(root, "fn")
        tensordict.save(td, p2)
        back2 = tensordict.load(p2)
        assert torch.equal(back2["b", "c"], td["b", "c"])
        back3 = tensordict.load_memmap(p2)
        assert torch.equal(back3["a"], td["a"])

        # saving again into the same folder replaces its content
        td["a"] = torch.zeros(3)
        td.save(p1)
        assert TensorDict.load(p1)["a"].sum().item() == 0.0

        # tensorclass checkpoints
        ck = Checkpoint(
            weights=torch.randn(4, 5), step=torch.tensor([10, 11, 12, 13]), name="m", batch_size=[4]
        )
        p3 = os.path.join(root, "ck")
        ck.save(p3)
        loaded = Checkpoint.load(p3)
        assert isinstance(loaded, Checkpoint)
        assert torch.equal(loaded.weights, ck.weights)
        assert loaded.name == "m"
        assert loaded.step.tolist() == [10, 11, 12, 13]
        generic = tensordict.load(p3)
        assert isinstance(generic, Checkpoint)
        assert isinstance(TensorDict.load_memmap(p3), Checkpoint)
        mm = Checkpoint.load_memmap(p3)
        assert mm.batch_size == torch.Size([4])

        # a 0-dim tensordict of model-like entries
        state = TensorDict(
            {
                "layer1": {"weight": torch.randn(3, 3), "bias": torch.zeros(3)},
                "epoch": torch.tensor(5),
            },
            [],
        )
        p4 = os.path.join(root, "state")
        state.save(p4)
        st = TensorDict.load(p4)
        assert st["epoch"].item() == 5
        assert (st == state).all()

        # a string entry saved with the data (JSON, no pickle needed)
        p5 = os.path.join(root, "tagged")
        tagged = TensorDict({"a": torch.rand(3), "tag": "run-7"}, batch_size=[3])
        tagged.save(p5)
        assert TensorDict.load(p5)["tag"] == "run-7"
