"""Math with a tensor operand that broadcasts the batch size to a larger one
(``tclass/_base/implemented/_leaf_walk.py``): a tensor with more dims than the batch
(``td == torch.ones(2, 1)`` of a batch size ``[2]``) or size-1 batch dims against larger
ones. As the peer, the collection is expanded to the broadcast batch size first: the old
dims keep their names, Python values become one per element, and a lazy stack, at the
top or nested, becomes its dense expansion (it used to refuse the tensor: "would add
batch dims to a lazy stack"). In place, such an operand is refused before anything is
read (it used to fail with an internal ``IndexError`` on a nested lazy stack), and a
mask (``where``) with more dims than an entry is a ``ShapeError``, as the peer's
``expand_as_right`` refuses it (it used to change the entry's shape).
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorClass, TensorDict, errors


def _nested_stack(lib: Any = tclass) -> Any:
    """A TensorDict of batch size [2] holding a lazy stack of batch size [2, 3] (names
    [None, "i"]) and a tensor."""
    members = [lib.TensorDict({"x": torch.arange(3.0) + k}, [3], names=["i"]) for k in range(2)]
    return lib.TensorDict({"s": lib.lazy_stack(members), "a": torch.arange(2.0)}, [2])


def test_a_nested_lazy_stack_takes_a_tensor_with_more_dims() -> None:
    d = _nested_stack()
    t = torch.tensor([[1.0], [2.0]])
    out = d == t
    assert out.batch_size == torch.Size([2, 2])
    assert type(out["s"]) is TensorDict  # the stack expanded to its dense form, as the peer
    assert out["s"].batch_size == torch.Size([2, 2, 3])
    assert out["s"].names == [None, None, "i"]
    x = torch.stack([torch.arange(3.0), torch.arange(3.0) + 1])  # the stack's x, [2, 3]
    assert torch.equal(out["s", "x"], x[None] == t[:, :, None])
    assert torch.equal(out["a"], torch.arange(2.0)[None] == t)
    summed = d + torch.ones(4, 1, 1)
    assert summed.batch_size == torch.Size([4, 1, 2])
    assert torch.equal(summed["s", "x"], (x + 1).expand(4, 1, 2, 3))


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("op", [operator.eq, operator.lt, operator.add, operator.mul])
def test_a_lazy_stack_broadcast_past_its_batch_is_its_dense_form(
    dim: int, op: Callable[[Any, Any], Any]
) -> None:
    members = [TensorDict({"a": torch.randn(2, 4), "b": torch.randn(2)}, [2]) for _ in range(3)]
    stack = tclass.lazy_stack(members, dim)
    for shape in [(5, 1, 1), (4, *stack.batch_size), (1, 1)]:
        t = torch.randn(shape)
        out, dense = op(stack, t), op(stack.to_tensordict(), t)
        assert out.batch_size == dense.batch_size == torch.broadcast_shapes(stack.shape, shape)
        for key in ("a", "b"):
            assert torch.equal(out[key], dense[key])


def test_the_batch_names_survive_the_broadcast() -> None:
    td = TensorDict({"a": torch.arange(2.0), "b": torch.ones(2, 3)}, [2], names=["i"])
    out = td * torch.ones(3, 1)
    assert out.names == [None, "i"]
    assert torch.equal(out["a"], torch.arange(2.0).expand(3, 2))
    assert (td < torch.ones(1, 1)).names == [None, "i"]


class _Labelled(TensorClass):
    x: torch.Tensor
    label: str


def test_a_records_value_is_one_per_element_after_the_broadcast() -> None:
    rec = _Labelled(x=torch.arange(2.0), label="pong", batch_size=[2])
    out = rec + torch.ones(3, 1)
    assert type(out) is _Labelled and out.batch_size == torch.Size([3, 2])
    assert torch.equal(out.x, torch.arange(2.0).expand(3, 2) + 1)
    assert out.label == rec.expand(3, 2).label == [["pong", "pong"]] * 3


def test_in_place_math_refuses_a_growing_tensor_over_a_nested_lazy_stack() -> None:
    d = TensorDict({"s": tclass.lazy_stack([TensorDict({"x": torch.zeros(2)}, [2])] * 3)}, [])
    for call in (lambda: d.add_(torch.ones(1)), lambda: d.mul_(torch.ones(2, 1))):
        with pytest.raises(errors.InPlaceWriteError, match=r"batch size \[\] to"):
            call()
    assert torch.equal(d["s", "x"], torch.zeros(3, 2))


def test_a_mask_with_more_dims_than_an_entry_is_refused() -> None:
    td = TensorDict({"a": torch.ones(2, 2), "b": torch.ones(2)}, [2])
    stack = tclass.lazy_stack([TensorDict({"a": torch.ones(2), "b": torch.ones(())}, [])] * 2)
    mask = torch.tensor([[True], [False]])
    for collection in (td, stack):
        with pytest.raises(errors.ShapeError, match="more dims than the entry 'b'") as info:
            collection.where(mask, 0.0)
        assert isinstance(info.value, RuntimeError)  # the peer's expand_as_right error
        with pytest.raises(errors.ShapeError):
            torch.where(mask, collection, 0.0)
    # a mask with the batch's dims, or feature dims every entry has, still works
    assert torch.equal(td.where(mask[:, 0], 0.0)["b"], torch.tensor([1.0, 0.0]))


CASES: dict[str, Callable[[Any], Any]] = {
    "nested lazy ==": lambda L: _nested_stack(L) == torch.tensor([[1.0], [2.0]]),
    "nested lazy +": lambda L: _nested_stack(L) + torch.ones(4, 1, 1),
    "nested lazy <": lambda L: _nested_stack(L) < torch.ones(1, 1),
    "lazy *": lambda L: (
        L.lazy_stack([L.TensorDict({"a": torch.ones(3)}, [3])] * 2) * torch.ones(4, 1, 1)
    ),
    "named clamp": lambda L: L.TensorDict({"a": torch.arange(2.0)}, [2], names=["i"]).clamp(
        torch.ones(3, 1)
    ),
}


@pytest.mark.peer
@pytest.mark.parametrize("name", sorted(CASES))
def test_as_the_peer(name: str) -> None:
    peer = pytest.importorskip("tensordict")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = CASES[name](peer)
    out = CASES[name](tclass)
    assert out.batch_size == expected.batch_size
    assert out.names == expected.names
    assert type(out).__name__ == type(expected).__name__
    for key, value in expected.items(include_nested=True, leaves_only=True):
        assert torch.equal(out[key], value), key


@pytest.mark.parametrize("lib_name", ["tclass", pytest.param("tensordict", marks=pytest.mark.peer)])
def test_a_locked_stack_of_0d_members_broadcast_past_its_batch_is_unlocked(lib_name: str) -> None:
    """As the peer: the dense expansion takes the tensor whole, so the result is a new
    unlocked collection (the members' 0-d slices of a tensor over the batch keep it)."""
    lib = tclass if lib_name == "tclass" else pytest.importorskip("tensordict")
    members = [lib.TensorDict({"a": torch.full((3,), float(k))}, []) for k in range(2)]
    stack = lib.lazy_stack(members).lock_()
    out = stack + torch.ones(4, 1)
    assert out.batch_size == torch.Size([4, 2]) and not out.is_locked
    assert torch.equal(out["a"], torch.tensor([[[1.0] * 3, [2.0] * 3]] * 4))
    assert (stack + torch.ones(2)).is_locked
