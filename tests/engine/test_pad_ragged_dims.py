"""``pad`` and ``pad_sequence`` of a lazy stack whose batch has a ragged dim (``-1``:
members of different sizes there), with its error paths (fz30i)."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import TensorDict, errors, pad, pad_sequence


def _ragged() -> tclass.LazyStackedTensorDict:
    """Batch ``[2, -1]``: members ``[2]`` and ``[1]`` along dim 1 stacked at dim 0."""
    return tclass.lazy_stack(
        [
            TensorDict({"x": torch.arange(2.0)}, [2]),
            TensorDict({"x": torch.arange(10.0, 11.0)}, [1]),
        ],
        0,
    )


def test_pad_leaves_a_ragged_dim_it_does_not_pad() -> None:
    # A zero pair on the ragged dim: the other dims padded, the ragged one kept ragged.
    out = pad(_ragged(), [1, 0, 0, 0], value=-1.0)
    assert isinstance(out, tclass.LazyStackedTensorDict)
    assert out.batch_size == torch.Size([3, -1])
    assert [m.batch_size for m in out.tensordicts] == [
        torch.Size([2]),
        torch.Size([2]),
        torch.Size([1]),
    ]
    assert out.tensordicts[0]["x"].tolist() == [-1.0, -1.0]
    assert out.tensordicts[2]["x"].tolist() == [10.0]


def test_pad_pads_each_member_along_a_ragged_dim() -> None:
    out = pad(_ragged(), [0, 0, 1, 1], value=-1.0)
    assert out.batch_size == torch.Size([2, -1])
    assert out.tensordicts[0]["x"].tolist() == [-1.0, 0.0, 1.0, -1.0]
    assert out.tensordicts[1]["x"].tolist() == [-1.0, 10.0, -1.0]
    # a crop the shorter member cannot give is refused by that member's own check
    with pytest.raises(
        errors.ShapeError, match=r"crops batch dim 1 \(ragged: member 1 has 1 elements"
    ):
        pad(_ragged(), [0, 0, -1, -1])


def test_pad_of_a_ragged_stack_without_entries() -> None:
    # (program 16,123,108 of methods,index,shape,combine: refused on main afcadeb0)
    x = tclass.lazy_stack([TensorDict({}, [0, 2]), TensorDict({}, [0, 1])], 2)
    assert x.batch_size == torch.Size([0, -1, 2])
    out = pad(x, [2, 2, 0, 0, 1, 0])
    assert out.batch_size == torch.Size([4, -1, 3])


def test_pad_sequence_refuses_a_member_ragged_at_pad_dim() -> None:
    # A member with no one length at pad_dim (the peer answers a dense TensorDict whose
    # batch size holds -1, or refuses once it has an entry): decided, README.
    with pytest.raises(errors.StackError, match=r"ragged \(-1\) at pad_dim 1"):
        pad_sequence([_ragged()], pad_dim=1)
