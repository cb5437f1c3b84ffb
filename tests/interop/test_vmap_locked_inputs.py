"""``torch.vmap`` over locked collections and one-entry ``out_dims``: a locked lazy stack
stays locked inside the mapped function (mapped along its stack dim or another dim), as a
locked TensorDict does and as in the peer; the memory-placement questions a locked view
asks of its tensors (``is_memmap()``, ``is_shared()``) are answered for the batched
tensors vmap passes; and ``out_dims=(d,)`` for one collection returned alone is read as
``d``, as torch reads it for one tensor."""

from __future__ import annotations

import pytest
import torch

from tclass import LazyStackedTensorDict, TensorDict
from tclass.errors import LockedError


def _stack(value: float, stack_dim: int, key: str | tuple[str, ...] = "a") -> LazyStackedTensorDict:
    member = TensorDict({key: torch.full((1,), value)}, [1])
    return LazyStackedTensorDict.lazy_stack([member, member.clone()], stack_dim)


@pytest.mark.parametrize("stack_dim", [0, 1])
@pytest.mark.parametrize("in_dim", [0, 1])
def test_a_locked_lazy_stack_stays_locked_inside_vmap(stack_dim: int, in_dim: int) -> None:
    seen: list[bool] = []

    def write(x: LazyStackedTensorDict) -> LazyStackedTensorDict:
        seen.append(x.is_locked)
        return x.set("a", x.get("a") + 1)

    stack = _stack(1.0, stack_dim).lock_()
    with pytest.raises(LockedError, match="Cannot modify locked"):
        torch.vmap(write, in_dim)(stack)
    assert seen == [True]
    assert isinstance(LockedError("x"), RuntimeError)  # the peer's RuntimeError
    assert (stack.get("a") == 1).all()  # nothing written


@pytest.mark.parametrize("stack_dim", [0, 1])
@pytest.mark.parametrize("in_dim", [0, 1])
def test_reading_a_locked_lazy_stack_inside_vmap_works(stack_dim: int, in_dim: int) -> None:
    # a view of a locked member asks whether its (batched) tensors are memory-mapped
    key = ("a", "b")
    x, y = _stack(1.0, stack_dim, key), _stack(2.0, stack_dim, key).lock_()
    out = torch.vmap(lambda x, y: x.set(key, y.get(key) + x.get(key)), (in_dim, in_dim))(x, y)
    assert (out.get(key) == 3).all() and out.batch_size[0] == x.batch_size[in_dim]
    assert y.is_locked


@pytest.mark.parametrize("out_dim", [0, 1])
def test_a_one_entry_tuple_of_out_dims_places_one_collection(out_dim: int) -> None:
    td = TensorDict({"a": torch.arange(6.0).reshape(2, 3)}, [2, 3])
    out = torch.vmap(lambda t: t * 2, 0, (out_dim,))(td)
    expected = torch.vmap(lambda t: t * 2, 0, out_dim)(td)
    assert (
        out.batch_size == expected.batch_size == (torch.Size([3, 2]) if out_dim else td.batch_size)
    )
    assert torch.equal(out["a"], expected["a"])
    stack = _stack(1.0, 0)  # a lazy stack returned alone too, mapped along another dim
    lazy = torch.vmap(lambda s: s.set("a", s.get("a") * 3), 1, (out_dim,))(stack)
    assert isinstance(lazy, LazyStackedTensorDict) and (lazy.get("a") == 3).all()
    assert lazy.batch_size == (torch.Size([2, 1]) if out_dim else torch.Size([1, 2]))


def test_a_one_entry_tuple_for_several_outputs_is_still_torchs_error() -> None:
    td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3])
    with pytest.raises(ValueError, match="out_dims is not compatible"):
        torch.vmap(lambda t: (t, t), 0, (0,))(td)


def test_is_memmap_and_is_shared_read_through_function_transforms(tmp_path) -> None:
    saved = TensorDict({"a": torch.zeros(3, 2)}, [3]).memmap(tmp_path / "td")
    shared = TensorDict({"a": torch.zeros(3, 2)}, [3]).share_memory_()
    plain = TensorDict({"a": torch.zeros(3, 2)}, [3])
    answers = []

    def ask(td: TensorDict) -> TensorDict:
        answers.append((td.is_memmap(), td.is_shared()))
        return td

    for td in (saved, shared, plain):
        torch.vmap(ask)(td)
    assert answers == [(True, False), (False, True), (False, False)]
    grads = []
    torch.func.grad(lambda t: (grads.append(TensorDict({"t": t}).is_shared()), t.sum())[1])(
        torch.zeros(2).share_memory_()
    )
    assert grads == [True]
