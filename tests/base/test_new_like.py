"""``new_tensor`` and the ``new_*`` ops: the names and Python values of their results
(lead35b, against the peer)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch

from tclass import NonTensorData, NonTensorStack, TensorDict, lazy_stack, tensorclass


@tensorclass
class Pair:
    a: torch.Tensor


def _new_tensor(td: Any, data: object) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's copy-construct warning
        return td.new_tensor(data)


def test_new_tensor_leaves_its_batch_dims_unnamed_nested_ones_too() -> None:
    td = TensorDict(
        {"a": torch.zeros(2, 3), "n": TensorDict({"b": torch.ones(2, 3)}, [2, 3])},
        batch_size=[2, 3],
        names=["i", "j"],
    )
    out = _new_tensor(td, td.clone())
    assert out.batch_size == (2, 3)
    assert out.names == [None, None]
    assert out.get("n").names == [None, None]
    assert torch.equal(out["n", "b"], torch.ones(2, 3))
    assert _new_tensor(td, [[1, 2, 3], [4, 5, 6]]).names == [None, None]


def test_new_tensor_of_a_stack_of_values_over_another_batch_size() -> None:
    td = TensorDict({"a": torch.zeros(2)}, batch_size=[2])
    td["v"] = NonTensorStack("a", "b")
    out = _new_tensor(td, [1.0, 2.0, 3.0])  # a value per element cannot follow: new_empty's
    assert out.batch_size == (3,)
    assert out.get("v").batch_size == (3,)
    assert out.get("v").tolist() == td.new_empty(3).get("v").tolist() == ["a", "a", "a"]
    shared = TensorDict({"a": torch.zeros(2), "v": "x"}, batch_size=[2])
    kept = _new_tensor(shared, [1.0, 2.0, 3.0]).get("v")
    assert isinstance(kept, NonTensorData) and kept.data == "x" and kept.batch_size == (3,)


@pytest.mark.parametrize("size", [(), (4,), (1, 2)])
def test_new_empty_names_fit_the_batch(size: tuple[int, ...]) -> None:
    td = TensorDict({"a": torch.zeros(2, 1)}, batch_size=[2, 1], names=[None, "j"])
    out = td.new_empty(size)
    assert out.batch_size == size
    assert out.names == ([None] * (len(size) - 1) + ["j"] if size else [])


def _lazy_named(names: list[str | None]) -> TensorDict:
    member = TensorDict(
        {"a": torch.zeros(2, 3), "n": TensorDict({"b": torch.zeros(2, 3)}, [2, 3])}, [2]
    )
    stack = lazy_stack([member, member.clone()], 0)
    stack.names = names
    return stack


@pytest.mark.parametrize("names", [[None, "i"], ["s", "i"]])
def test_new_tensor_of_a_lazy_stack_keeps_its_names_over_as_many_dims(
    names: list[str | None],
) -> None:
    """As the peer's (whose lazy stack's ``new_tensor`` is its ``apply(batch_size=)``):
    data of as many dims as the stack's batch keeps the stack's names (and so do the
    nested collections' first dims, as ``apply(batch_size=)`` names them: the peer's are
    unnamed, a README difference), fewer or more dims are unnamed; a TensorDict's stay
    unnamed (above)."""
    stack = _lazy_named(names)
    out = _new_tensor(stack, torch.ones(4, 5))
    assert isinstance(out, TensorDict) and out.batch_size == (4, 5)
    assert out.names == names
    assert out.get("n").names == names
    assert torch.equal(out["a"], torch.ones(4, 5))
    assert _new_tensor(stack, torch.ones(4)).names == [None]
    more = _new_tensor(stack, torch.ones(4, 5, 6))
    assert more.names == [None, None, None]
    assert _new_tensor(stack, stack.clone()).names == names


def test_new_tensor_of_a_lazy_stack_without_entries_keeps_its_names() -> None:
    """Programs 5,300,839 and 5,301,073 (``--families entries,math,combine --length
    6``): a lazy stack of named members without entries, ``new_tensor(x.clone())``."""
    member = TensorDict({}, batch_size=[0], names=["i"])
    stack = lazy_stack([member, member.clone(), member.clone()], -2)
    out = _new_tensor(stack, stack.clone())
    assert out.batch_size == (3, 0)
    assert out.names == [None, "i"]


def test_new_tensor_of_a_nested_lazy_stack_keeps_its_names() -> None:
    """Each nested collection is given its own ``new_tensor`` (as the peer's): a nested
    lazy stack of a TensorDict keeps its names over data of as many dims."""
    td = TensorDict({"l": _lazy_named([None, "i"])}, [2])
    out = _new_tensor(td, torch.ones(7, 8))
    assert out.names == [None, None]
    assert out.get("l").names == [None, "i"]


def test_new_tensor_of_a_record_over_a_lazy_stack_keeps_its_names() -> None:
    """A record over a lazy stack (``lazy_stack`` of records) keeps the stack's names
    over data of as many dims, as the lazy stack itself and the peer's record (they
    were dropped as for a record over a TensorDict: og32b, program 17,010,401 L8 of
    methods,math,shape); a record over a TensorDict stays unnamed."""
    inner = Pair(a=torch.zeros(1, 2), batch_size=[1])
    inner.rename_("i")
    stack = lazy_stack([inner, inner.clone()], 1)
    assert stack.names == ["i", None]
    out = _new_tensor(stack, stack.clone())
    assert isinstance(out, Pair) and out.names == ["i", None]
    assert torch.equal(out.a, torch.zeros(1, 2, 2))
    assert _new_tensor(stack, torch.ones(3)).names == [None]
    assert _new_tensor(inner, inner.clone()).names == [None]
