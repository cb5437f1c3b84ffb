"""``LazyStackedTensorDict.empty(batch_size=..., names=...)``, as the peer: a batch size
that keeps the dims up to the stack dim gives a lazy stack of the members emptied (each
with that batch size without the stack dim); another one gives a TensorDict. And the
nested collections of ``empty(recurse=True, batch_size=...)``: one whose batch size is
the start of the new one gets it, one that starts with it keeps its own, another raises.
A new batch size keeps the names of the dims it keeps (the peer's batch-size setter)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tclass import LazyStackedTensorDict, TensorDict, errors, lazy_stack


def _stack(dim: int = 0) -> LazyStackedTensorDict:
    members = [
        TensorDict({"a": torch.full((3,), float(i)), "m": {"b": torch.zeros(3)}}, [3])
        for i in range(2)
    ]
    return lazy_stack(members, dim)


def test_a_batch_size_that_keeps_the_stack_dim_stays_lazy() -> None:
    out = _stack().empty(batch_size=[2])
    assert isinstance(out, LazyStackedTensorDict)
    assert out.batch_size == torch.Size([2]) and out.stack_dim == 0
    assert [m.batch_size for m in out.tensordicts] == [torch.Size([])] * 2
    assert list(out.keys()) == []


def test_recurse_keeps_the_nested_collections_of_each_member() -> None:
    out = _stack(1).empty(True, batch_size=[3, 2, 4])
    assert isinstance(out, LazyStackedTensorDict) and out.stack_dim == 1
    assert out.batch_size == torch.Size([3, 2, 4])
    assert [list(m.keys()) for m in out.tensordicts] == [["m"], ["m"]]
    assert out.tensordicts[0]["m"].batch_size == torch.Size([3, 4])  # [3] starts [3, 4]


def test_names_go_to_the_stack_dim_and_the_members() -> None:
    out = _stack(1).empty(batch_size=[3, 2], names=["p", "q"])
    assert isinstance(out, LazyStackedTensorDict)
    assert out.names == ["p", "q"]
    assert [m.names for m in out.tensordicts] == [["p"], ["p"]]


def test_another_batch_size_gives_a_tensordict() -> None:
    for size in ([6], [], [3]):
        out = _stack().empty(batch_size=size)
        assert type(out) is TensorDict and out.batch_size == torch.Size(size)


def test_nested_batch_sizes_under_a_new_batch_size() -> None:
    td = TensorDict({"a": torch.zeros(3), "m": {"b": torch.zeros(3, 2)}}, [3])
    assert td.empty(True, batch_size=[3, 2])["m"].batch_size == torch.Size([3, 2])
    assert td.empty(True, batch_size=[])["m"].batch_size == torch.Size([3])
    with pytest.raises(errors.BatchSizeError, match="entry 'm', whose batch size") as caught:
        td.empty(True, batch_size=[5])
    assert isinstance(caught.value, RuntimeError)  # as the peer's


@pytest.mark.parametrize(
    ("batch_size", "names"),
    [([2], ["j"]), ([3], ["j"]), ([2, 0], ["j", "i"]), ([2, 0, 4], ["j", "i", None]), ([], [])],
)
def test_a_new_batch_size_keeps_the_names_of_the_first_dims(
    batch_size: list[int], names: list[str | None]
) -> None:
    td = TensorDict({"a": torch.zeros(2, 0, 3), "n": {}}, [2, 0], names=["j", "i"])
    assert td.empty(batch_size=batch_size).names == names  # as the peer's setter keeps them
    assert td.empty(recurse=True, batch_size=[2]).names == ["j"]
    stack = lazy_stack([TensorDict({"a": torch.zeros(2, 3)}, [2, 3], names=["j", "i"])], 1)
    assert stack.empty(batch_size=[2]).names == ["j"]
    assert stack.empty(batch_size=[2, 1, 3, 4]).names == ["j", None, "i", None]


def _named_kinds() -> list[Any]:
    flat = TensorDict({"a": torch.zeros(3, 2)}, [3, 2], names=["i", None])
    nested = TensorDict(
        {"a": torch.zeros(3, 2), "n": TensorDict({"b": torch.zeros(3, 2)}, [3, 2])},
        [3, 2],
        names=["i", None],
    )
    return [flat, nested, lazy_stack(list(flat.unbind(1)), 1)]


@pytest.mark.parametrize("which", [0, 1, 2], ids=["flat", "nested", "lazy"])
@pytest.mark.parametrize("recurse", [False, True])
def test_names_none_gives_unnamed_dims_left_out_keeps_them(which: int, recurse: bool) -> None:
    """``empty(names=None)`` is unnamed, as the peer's ``TensorDict.empty`` (its lazy
    stacks' and ``recurse=True`` keep the names: README, "``names=None`` means unnamed
    dims"); ``apply(fn, names=None)`` too, nested collections' dims included (the peer's
    keeps them where a nested TensorDict is held)."""
    td = _named_kinds()[which]
    assert td.empty(recurse).names == ["i", None]
    out = td.empty(recurse, names=None)
    assert out.names == [None, None]
    assert all(v.names == [None, None] for v in out.values() if hasattr(v, "names"))
    applied = td.apply(lambda x: x + 1, names=None)
    assert applied.names == [None, None]
    assert all(v.names == [None, None] for v in applied.values() if hasattr(v, "names"))
    assert td.apply(lambda x: x + 1).names == ["i", None]
