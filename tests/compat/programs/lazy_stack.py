"""Lazy stacks of TensorDicts whose leaves differ in feature shape (variable-size
observations, as in multi-agent or text RL): reading padded or as a list, indexing back to
the members, writing through the stack, applying functions member-wise.
"""

import torch

from compat import lib as tensordict
from compat.lib import LazyStackedTensorDict, TensorDict


def main() -> None:
    tds = [
        TensorDict({"obs": torch.full((i + 1,), float(i)), "r": torch.tensor(float(i))}, [])
        for i in range(3)
    ]
    ls = tensordict.lazy_stack(tds)
    assert isinstance(ls, LazyStackedTensorDict)
    assert ls.batch_size == torch.Size([3])
    assert ls.stack_dim == 0
    assert ls["r"].tolist() == [0.0, 1.0, 2.0]  # same shape: stacked

    # different shapes cannot be stacked densely
    try:
        ls["obs"]
    except RuntimeError:
        pass
    else:
        raise AssertionError("reading a ragged entry must raise")
    padded = ls.get("obs", as_padded_tensor=True)
    assert padded.shape == (3, 3)
    assert padded[1].tolist() == [1.0, 1.0, 0.0]
    as_list = ls.get("obs", as_list=True)
    assert [t.shape[0] for t in as_list] == [1, 2, 3]

    # members come back by integer index, and writes through the stack reach them
    assert ls[1] is tds[1]
    assert isinstance(ls[:2], LazyStackedTensorDict)
    assert ls[:2].batch_size == torch.Size([2])
    assert ls[torch.tensor([2, 0])][0]["obs"].shape == (3,)
    ls.set("x", torch.ones(3, 2))
    assert torch.equal(tds[0]["x"], torch.ones(2))
    ls[2] = TensorDict({"obs": torch.zeros(3), "r": torch.tensor(-1.0), "x": torch.zeros(2)}, [])
    assert tds[2]["r"].item() == -1.0
    assert len(ls.tensordicts) == 3

    # member-wise functions keep each member's shape
    bumped = ls.apply(lambda x: x + 1)
    assert bumped[2]["obs"].tolist() == [1.0, 1.0, 1.0]
    assert bumped[0]["obs"].tolist() == [1.0]
    assert isinstance(bumped, LazyStackedTensorDict)

    # the class constructor and classmethod forms
    ls2 = LazyStackedTensorDict(*tds, stack_dim=0)
    assert ls2.batch_size == torch.Size([3])
    ls3 = LazyStackedTensorDict.lazy_stack(tds, dim=0)
    assert ls3[0]["obs"].shape == (1,)

    # stacking members that share shapes along a non-zero dim
    same = [TensorDict({"a": torch.randn(4, 2)}, [4]) for _ in range(3)]
    lazy1 = tensordict.lazy_stack(same, dim=1)
    assert lazy1.batch_size == torch.Size([4, 3])
    assert torch.equal(lazy1["a"], torch.stack([t["a"] for t in same], 1))
    assert torch.equal(lazy1[:, 1]["a"], same[1]["a"])
    dense = lazy1.contiguous()
    assert isinstance(dense, TensorDict) and dense.batch_size == torch.Size([4, 3])
    assert torch.equal(lazy1.to_tensordict()["a"], dense["a"])

    # maybe_dense_stack densifies when it can, and stays lazy when it cannot
    mds = tensordict.maybe_dense_stack(same)
    assert isinstance(mds, TensorDict)
    ragged = tensordict.maybe_dense_stack(
        [TensorDict({"a": torch.zeros(2)}, []), TensorDict({"a": torch.zeros(3)}, [])]
    )
    assert isinstance(ragged, LazyStackedTensorDict)

    # nested lazy stacks: a lazy stack of lazy stacks indexes down to members
    outer = tensordict.lazy_stack([tensordict.lazy_stack(tds[:2]), tensordict.lazy_stack(tds[1:])])
    assert outer.batch_size == torch.Size([2, 2])
    assert outer[1, 1] is tds[2]
