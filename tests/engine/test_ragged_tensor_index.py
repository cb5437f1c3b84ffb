"""Tensor indices of a ragged lazy stack (a ``-1`` in its batch size), as the peer's:
worked out member by member (an int at the stack dim takes the member, a slice indexes
each member alike, a tensor there gathers elements of members), so several tensors,
tensors beside ``None``, 0-d and 2-d tensors, and tensors along the ragged dim itself
index it as they index each member. A mask has no one shape to match along the ragged
dim: a ``DimError`` (an ``IndexError``, as the peer raises)."""

from __future__ import annotations

import math
import warnings
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass import errors

peer = pytest.importorskip("tensordict")


def _ragged(lib: ModuleType, dim: int = 1) -> Any:
    """Batch size [2, 3, -1] (dim 1) or [3, 2, -1] (dim 0): members [2, 2], [2, 3], [2, 4]."""
    members = []
    for j in range(3):
        shape = [2, 2 + j]
        a = torch.arange(math.prod(shape)).reshape(shape) + 100 * j
        members.append(lib.TensorDict({"a": a, "s": f"v{j}"}, shape))
    return lib.lazy_stack(members, dim)


def _tree(node: Any) -> Any:
    """The lazy nesting of ``node`` with each dense part's tensor and value."""
    if hasattr(node, "tensordicts") and hasattr(node, "stack_dim"):
        return (
            "stack",
            node.stack_dim,
            list(node.batch_size),
            [_tree(m) for m in node.tensordicts],
        )
    value = node.get("s")
    return (list(node.batch_size), node.get("a").tolist(), getattr(value, "data", value))


INDICES = [
    (1, (torch.tensor(1), ...)),  # a 0-d tensor at the stack dim: the member
    (1, (slice(None), slice(None), torch.tensor([[0], [1]]))),  # along the ragged dim
    (1, (..., [0, 0, 1])),
    (1, (torch.tensor([0, 1]), slice(None), torch.tensor([1, 0]))),  # two tensors, apart
    (1, (None, torch.tensor([1, 0]), 1)),  # beside None
    (1, (torch.tensor([1, 0]), torch.tensor([2, 0]))),  # the stack dim's tensor and another
    (1, (slice(None), torch.tensor([[2, 0], [1, 1]]))),  # 2-d, picking members
    (1, (torch.tensor([True, False]), torch.tensor([0, 2]), 0)),
    (0, (torch.tensor([2, 0]), slice(None), torch.tensor([1, 0]))),
    (0, (slice(0, 2), torch.tensor([1, 0]), torch.tensor([0, 1]))),  # a slice between
]


@pytest.mark.parametrize(("dim", "index"), INDICES)
def test_tensor_indices_of_a_ragged_stack_as_the_peer(dim: int, index: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _tree(_ragged(peer, dim)[index])
    got = _ragged(tclass, dim)[index]
    assert _tree(got) == expected
    assert -1 in _ragged(tclass, dim).batch_size


def test_values_follow_the_members() -> None:
    stack = _ragged(tclass)  # [2, 3, -1]
    out = stack[torch.tensor([1, 0]), torch.tensor([2, 0])]  # (1, member 2), (0, member 0)
    assert out.batch_size == torch.Size([2, -1])
    assert out.get("s").tolist() == [["v2"] * 4, ["v0"] * 2]
    assert out[0]["a"].tolist() == [204, 205, 206, 207]
    assert out[1]["a"].tolist() == [0, 1]


def test_a_mask_along_the_ragged_dim_is_an_index_error() -> None:
    stack = _ragged(tclass)
    with pytest.raises(errors.DimError, match=r"ragged dim") as info:
        stack[:, :, torch.tensor([True, False])]
    assert isinstance(info.value, IndexError)
    with pytest.raises(IndexError):
        _ragged(peer)[:, :, torch.tensor([True, False])]
