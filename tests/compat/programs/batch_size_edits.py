"""Changing batch sizes after construction: the ``batch_size`` setter (shrinking and
growing the batch part of the leaves' shapes), ``auto_batch_size_``, a TensorDict built
empty and filled key by key, and the errors for impossible batch sizes.
"""

import torch

from compat.lib import TensorDict


def main() -> None:
    td = TensorDict({"a": torch.zeros(3, 4, 5), "b": {"c": torch.zeros(3, 4)}}, [3, 4])
    td.batch_size = [3]
    assert td.batch_size == torch.Size([3]) and td["b"].batch_size[0] == 3
    assert td[1]["a"].shape == (4, 5)
    td.batch_size = torch.Size([3, 4])
    assert td["b"].batch_size == torch.Size([3, 4])
    assert td[1, 2]["a"].shape == (5,)
    td.batch_size = []
    assert td.batch_size == torch.Size([]) and td.batch_dims == 0

    try:
        td.batch_size = [4]
    except RuntimeError:
        pass
    else:
        raise AssertionError("a batch size the leaves do not have must raise")

    grown = TensorDict({}, batch_size=[])
    grown["x"] = torch.zeros(6, 2)
    grown["y"] = torch.zeros(6)
    grown.batch_size = [6]
    assert grown[2:].batch_size == torch.Size([4])

    auto = TensorDict({"a": torch.zeros(3, 4, 5), "b": {"c": torch.zeros(3, 4)}})
    assert auto.batch_size == torch.Size([])
    auto.auto_batch_size_()
    assert auto.batch_size == torch.Size([3, 4])
    auto2 = TensorDict({"a": torch.zeros(3, 4, 5), "b": torch.zeros(3, 4)})
    auto2.auto_batch_size_(batch_dims=1)
    assert auto2.batch_size == torch.Size([3])

    # a leaf that does not start with the batch size is refused
    td3 = TensorDict({"a": torch.zeros(3)}, [3])
    try:
        td3["b"] = torch.zeros(4)
    except RuntimeError:
        pass
    else:
        raise AssertionError("mismatched leaf must raise")
    try:
        TensorDict({"a": torch.zeros(3)}, [4])
    except RuntimeError:
        pass
    else:
        raise AssertionError("mismatched batch size must raise")

    # batch_size given as an int or keyword
    assert TensorDict({"a": torch.zeros(3)}, batch_size=3).batch_size == torch.Size([3])
    assert TensorDict(batch_size=[2, 2]).batch_size == torch.Size([2, 2])
    assert TensorDict().batch_size == torch.Size([])
    assert TensorDict({"a": torch.zeros(3)}).batch_size == torch.Size([])
    assert TensorDict({"a": torch.zeros(3)}, []).is_empty() is False
    assert TensorDict({}, []).is_empty()
