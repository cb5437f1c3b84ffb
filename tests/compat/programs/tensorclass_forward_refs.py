"""Self-referential and forward-referenced tensorclass fields: a tree whose children are
the class itself (``Optional["Node"]``), a class referring to one defined later in the
module, and the same under stacking, indexing and saving.
"""

import tempfile
from typing import Optional

import torch

from compat.lib import TensorDict, tensorclass


@tensorclass
class Node:
    value: torch.Tensor
    child: Optional["Node"] = None


@tensorclass
class Episode:
    steps: "Steps"
    total: torch.Tensor


@tensorclass
class Steps:
    reward: torch.Tensor


def main() -> None:
    leaf = Node(value=torch.zeros(3), batch_size=[3])
    mid = Node(value=torch.ones(3), child=leaf, batch_size=[3])
    root = Node(value=torch.full((3,), 2.0), child=mid, batch_size=[3])
    assert isinstance(root.child, Node) and isinstance(root.child.child, Node)
    assert root.child.child.child is None
    assert root[1].child.value.item() == 1.0
    depth = 0
    node = root
    while node is not None:
        depth += 1
        node = node.child
    assert depth == 3

    cloned = root.clone()
    assert isinstance(cloned.child.child, Node)
    assert torch.equal(cloned.child.child.value, torch.zeros(3))

    stacked = torch.stack([root, root])
    assert stacked.child.child.value.shape == (2, 3)

    # a field annotated with a class defined later in the module
    ep = Episode(
        steps=Steps(reward=torch.ones(5), batch_size=[5]), total=torch.ones(5), batch_size=[5]
    )
    assert isinstance(ep.steps, Steps)
    assert isinstance(ep[1:].steps, Steps) and ep[1:].steps.batch_size == torch.Size([4])
    as_td = ep.to_tensordict()
    assert isinstance(as_td, TensorDict) and as_td["steps", "reward"].shape == (5,)

    with tempfile.TemporaryDirectory() as path:
        root.memmap_(path)
        back = Node.load_memmap(path)
        assert isinstance(back.child.child, Node)
        assert torch.equal(back.child.value, torch.ones(3))
