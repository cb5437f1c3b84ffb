"""Writes into a ragged lazy stack (a ``-1`` in its batch size) at tensor indices, as the
peer's: the index read member by member as for reading (``_ragged_split.py``), each
member written at its part; a collection value parted among the members the way the
selection runs over them, a tensor or a number whole into each part (lo23b)."""

from __future__ import annotations

import math
import warnings
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass

peer = pytest.importorskip("tensordict")


def _ragged(lib: ModuleType) -> Any:
    """Batch size [2, 3, -1]: members [2, 2], [2, 3], [2, 4] along dim 1."""
    members = []
    for j in range(3):
        shape = [2, 2 + j]
        a = torch.arange(float(math.prod(shape))).reshape(shape) + 100 * j
        members.append(lib.TensorDict({"a": a, "s": f"v{j}"}, shape))
    return lib.lazy_stack(members, 1)


def _members(stack: Any) -> list[Any]:
    return [(m["a"].tolist(), m.get("s").tolist()) for m in stack.tensordicts]


INDICES = [
    (torch.tensor([0, 1]), torch.tensor([2, 0])),  # the stack dim's tensor and another
    (slice(None), torch.tensor([0, 2])),
    (slice(None), slice(None), torch.tensor([0, 1])),  # along the ragged dim
    (torch.tensor(1), slice(None), torch.tensor([1, 0])),  # along the ragged dim
    (None, 0, torch.tensor([[1], [2]])),
    ([1, 1], [0, 2]),
]


@pytest.mark.parametrize("index", INDICES)
def test_a_collection_written_at_tensor_indices_as_the_peer(index: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _ragged(peer)
        expected[index] = expected[index].apply(lambda t: -t - 1)
    stack = _ragged(tclass)
    stack[index] = stack[index].apply(lambda t: -t - 1)
    assert _members(stack) == _members(expected)


def test_set_at_past_the_stack_dim_writes_each_member_part() -> None:
    # the peer: "index 2 is out of bounds for dimension 2 with size -1" (its batch size)
    stack = _ragged(tclass)
    stack.set_at_("a", torch.tensor(7.0), (1, torch.tensor(2), 3))  # member 2, row 1, col 3
    stack.set_at_("s", "z", (0, torch.tensor([0, 2]), 1))
    assert stack.tensordicts[2]["a"][1].tolist() == [204.0, 205.0, 206.0, 7.0]
    assert stack.tensordicts[0].get("s").tolist() == [["v0", "z"], ["v0", "v0"]]
    assert stack.tensordicts[2].get("s").tolist()[0] == ["v2", "z", "v2", "v2"]
    assert stack.tensordicts[1].get("s").tolist() == [["v1"] * 3] * 2


def test_a_write_of_no_element_by_a_2d_tensor_at_the_stack_dim_writes_nothing() -> None:
    # int() of a row of the tensor raised TypeError (the peer writes nothing)
    stack = tclass.lazy_stack([tclass.TensorDict({"a": torch.zeros(2)}, [2]) for _ in range(2)])
    stack[torch.tensor([[1]]), 2:] = tclass.TensorDict({"a": torch.ones(1, 1, 0)}, [1, 1, 0])
    assert not any(m["a"].any() for m in stack.tensordicts)


def _chunks(lib: ModuleType) -> Any:
    """Batch size [3, -1, 2]: chunks [3, 2] and [3, 1] of a [3, 3] stacked along dim 2."""
    td = lib.TensorDict({"c": torch.arange(9).reshape(3, 3)}, [3, 3])
    return lib.lazy_stack(list(td.chunk(2, -1)), -1)


@pytest.mark.parametrize("index", [(None, slice(0, 4)), (slice(None),), (slice(1, None),)])
def test_a_stack_of_fewer_dims_broadcasts_member_by_member(index: Any) -> None:
    # x[None, :4] = x[None, 2].clone(): the source's stack dim lines up with the
    # selection's from the end, each member's part broadcast over the leading dims
    # (fz29e: tclass read the source's dense value, which its members' widths lack)
    expected, stack = _chunks(peer), _chunks(tclass)
    expected[index] = expected[None, 2].clone()
    stack[index] = stack[None, 2].clone()
    assert [m["c"].tolist() for m in stack.tensordicts] == [
        m["c"].tolist() for m in expected.tensordicts
    ]
