"""``set_at_`` of a lazy stack with an index whose Ellipsis reaches a tensor's feature
dims: written as torch writes the stacked tensor, as a TensorDict's (and the peer's)
(lead35b)."""

from __future__ import annotations

import torch

import tclass
from tclass import TensorDict


def _members() -> list[TensorDict]:
    return [
        TensorDict({"d": (torch.arange(2.0) + 10 * i).reshape(1, 2)}, batch_size=[1])
        for i in range(3)
    ]


def test_an_ellipsis_before_an_index_reaches_the_feature_dims() -> None:
    lazy = tclass.lazy_stack(_members(), 0)
    dense = torch.stack(_members(), 0)
    index = (Ellipsis, torch.tensor([1, 1, -1]))
    value = torch.arange(9.0).reshape(3, 1, 3) + 100
    dense.set_at_("d", value, index)
    members = lazy.tensordicts
    assert lazy.set_at_("d", value, index) is lazy
    assert lazy.tensordicts[0] is members[0]  # written in place, member by member
    assert torch.equal(lazy.get("d"), dense.get("d"))
    expected = torch.stack([m["d"] for m in _members()])
    expected[..., torch.tensor([1, 1, -1])] = value
    assert torch.equal(lazy.get("d"), expected)


def test_an_index_of_batch_dims_only_still_writes_the_elements() -> None:
    lazy = tclass.lazy_stack(_members(), 0)
    lazy.set_at_("d", torch.zeros(1, 2), (1,))
    assert torch.equal(lazy.tensordicts[1]["d"], torch.zeros(1, 2))
    assert torch.equal(lazy.tensordicts[0]["d"], torch.tensor([[0.0, 1.0]]))
