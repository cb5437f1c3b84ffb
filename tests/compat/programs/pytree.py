"""TensorDicts and tensorclasses as pytrees: ``tree_map``/``tree_flatten``/
``tree_unflatten`` from ``torch.utils._pytree``, nested inside plain containers, and the
library's ``from_pytree``/``to_pytree``.
"""

import torch
import torch.utils._pytree as pytree

from compat.lib import TensorDict, tensorclass


@tensorclass
class Pair:
    left: torch.Tensor
    right: torch.Tensor


def main() -> None:
    td = TensorDict({"a": torch.zeros(4, 2), "b": {"c": torch.ones(4)}}, [4])
    leaves, spec = pytree.tree_flatten(td)
    assert len(leaves) == 2
    rebuilt = pytree.tree_unflatten([leaf + 1 for leaf in leaves], spec)
    assert isinstance(rebuilt, TensorDict) and rebuilt.batch_size == torch.Size([4])
    assert rebuilt["b", "c"].tolist() == [2.0] * 4

    mapped = pytree.tree_map(lambda x: x * 3, td)
    assert isinstance(mapped, TensorDict)
    assert mapped["b", "c"][0].item() == 3.0

    p = Pair(left=torch.ones(2), right=torch.zeros(2), batch_size=[2])
    pm = pytree.tree_map(lambda x: x + 1, p)
    assert isinstance(pm, Pair) and pm.right.tolist() == [1.0, 1.0]
    assert len(pytree.tree_leaves(p)) == 2

    # containers of collections
    tree = {"td": td, "pair": p, "t": torch.zeros(3)}
    shapes = pytree.tree_map(lambda x: x.shape, tree)
    assert shapes["t"] == (3,)
    assert len(pytree.tree_leaves(tree)) == 5

    # the library's bridges
    nested = {"x": torch.zeros(3), "y": {"z": torch.ones(3)}, "w": (torch.ones(3), torch.zeros(3))}
    as_td = TensorDict.from_pytree(nested)
    assert as_td["y", "z"].shape == (3,)
    back = as_td.to_pytree()
    assert isinstance(back, dict)
    assert torch.equal(back["y"]["z"], nested["y"]["z"])
    assert isinstance(back["w"], tuple) and torch.equal(back["w"][0], nested["w"][0])
