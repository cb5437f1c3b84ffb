"""In-place writes into a lazy stack of a value that broadcasts (a tensor missing leading
dims, a 0-d tensor, a collection of a smaller batch size): written as into the stacked
TensorDict, member by member, each member's part checked before any is written."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import BatchSizeError


def _stack(dim: int) -> Any:
    members = [TensorDict({"n": {"c": torch.zeros(4, 3)}, "x": torch.zeros(4)}, [4]) for _ in "ab"]
    return tclass.lazy_stack(members, dim)


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize(
    "shape", [(3,), (1, 3), (), (1, 1, 1), "stack", "stack1"], ids=lambda s: str(s)
)
def test_update__broadcasts_as_into_the_stacked_tensordict(dim: int, shape: Any) -> None:
    """Issue 27: ``lazy.update_({"n": {"c": torch.ones(3)}})`` was refused (the peer and
    a TensorDict broadcast it); a value with the stack dim (size 2 or 1) is cut there."""
    if shape == "stack":
        shape = (2, 1, 3) if dim == 0 else (2, 3)
    elif shape == "stack1":
        shape = (1, 4, 3) if dim == 0 else (4, 1, 3)
    value = torch.randn(shape)
    stack = _stack(dim)
    dense = stack.to_tensordict()
    stack.update_({"n": {"c": value}})
    dense.update_({"n": {"c": value}})
    assert torch.equal(stack["n", "c"], dense["n", "c"])
    stack = _stack(dim)
    stack.set_(("n", "c"), value)
    assert torch.equal(stack["n", "c"], dense["n", "c"])


@pytest.mark.parametrize("dim", [0, 1])
def test_update__of_a_smaller_collection_and_a_0d_tensor(dim: int) -> None:
    stack = _stack(dim)
    stack.update_(TensorDict({"n": {"c": torch.ones(3)}, "x": torch.tensor(2.0)}, []))
    assert (stack["n", "c"] == 1).all() and (stack["x"] == 2).all()
    stack.update_({"x": torch.tensor(5.0)})
    assert (stack["x"] == 5).all()
    for member in stack.tensordicts:
        assert (member["x"] == 5).all()


def test_a_value_that_does_not_broadcast_writes_nothing() -> None:
    """Refused before any member is written (a ragged stack's too)."""
    stack = _stack(0)
    for value in (torch.ones(3, 3), torch.ones(5, 4, 3), torch.ones(2, 4)):
        with pytest.raises(BatchSizeError):
            stack.update_({"n": {"c": value}})
        with pytest.raises(BatchSizeError):
            stack.set_(("n", "c"), value)
    assert not stack["n", "c"].any()
    first, second = TensorDict(c=torch.zeros(3, 2)), TensorDict(c=torch.zeros(5, 2))
    ragged = tclass.lazy_stack([first, second])
    for write in (
        lambda: ragged.set_("c", torch.ones(3, 2)),
        lambda: ragged.update_({"c": torch.ones(3, 2)}),
    ):
        with pytest.raises(BatchSizeError):
            write()
    assert not first["c"].any() and not second["c"].any()
    ragged.update_({"c": torch.tensor([[1.0, 2.0]])})  # (a feature row, into every row)
    assert (first["c"] == torch.tensor([1.0, 2.0])).all()
    assert (second["c"] == torch.tensor([1.0, 2.0])).all()


@pytest.mark.parametrize("ragged", [False, True])
def test_copy__of_a_smaller_collection_broadcasts_each_tensor(ragged: bool) -> None:
    """``lazy.copy_(TensorDict(c=torch.tensor(1.)))`` was refused ("does not broadcast"):
    the source was expanded to the stack's batch size first, where a TensorDict (and
    the peer) broadcasts each tensor into its entry."""
    sizes = (2, 3) if ragged else (3, 3)
    members = [TensorDict(c=torch.zeros(2, n), x=torch.zeros(2), batch_size=[2]) for n in sizes]
    stack = tclass.lazy_stack(members)
    stack.copy_(TensorDict(c=torch.tensor(1.0), x=torch.ones(1), batch_size=[]))
    for member in members:
        assert (member["c"] == 1).all() and (member["x"] == 1).all()
    with pytest.raises(BatchSizeError):
        stack.copy_(TensorDict(c=torch.ones(4), batch_size=[]))
    assert all((member["c"] == 1).all() for member in members)
