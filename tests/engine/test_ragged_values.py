"""Ragged stacks of Python values: a ``NonTensorStack`` of members whose batch sizes
differ (``-1`` in its batch size there), as the peer's lazy ``NonTensorStack``. Built by
stacking value nodes of different sizes and by reading the values of a ragged lazy stack
(``densify``, ``get``); indexed, written, listed, pickled, saved and loaded."""

from __future__ import annotations

import pickle
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass import NonTensorData, NonTensorStack, TensorDict, errors


def _members(lib: ModuleType) -> tuple[Any, Any]:
    a = lib.TensorDict({"x": torch.zeros(2, 3), "s": lib.NonTensorStack("a", "b")}, [2])
    b = lib.TensorDict({"x": torch.ones(3, 3), "s": lib.NonTensorStack("c", "d", "e")}, [3])
    return a, b


def _ragged() -> NonTensorStack:
    return NonTensorStack(NonTensorStack("a", "b"), NonTensorStack("c", "d", "e"))


def test_stacking_values_of_different_sizes_is_ragged_in_every_way() -> None:
    two, three = NonTensorStack("a", "b"), NonTensorStack("c", "d", "e")
    for stacked in (
        torch.stack([two, three]),
        tclass.lazy_stack([two, three]),
        NonTensorStack(two, three),
    ):
        assert isinstance(stacked, NonTensorStack) and tclass.is_non_tensor(stacked)
        assert stacked.batch_size == (2, -1)
        assert stacked.tolist() == [["a", "b"], ["c", "d", "e"]]
        assert stacked[0] is two and stacked[1] is three  # the members themselves
    shared = tclass.lazy_stack(
        [NonTensorData("a", batch_size=[2]), NonTensorData("b", batch_size=[3])]
    )
    assert shared.tolist() == [["a", "a"], ["b", "b", "b"]]
    assert "batch_size=torch.Size([2, -1])" in repr(shared)
    assert repr(shared).startswith("NonTensorStack(")


def test_an_empty_list_beside_lists_of_values_is_a_row_of_no_values() -> None:
    # As ["a", "b"] beside ["c"]: a ragged stack of values, not an empty tensor among
    # them (tclass stored tensor([]) there, and from_dict refused the batch size).
    td = TensorDict({"s": [["a", "b"], []], "e": [[], ["c"]]}, [2])
    for key, rows in (("s", [["a", "b"], []]), ("e", [[], ["c"]])):
        assert isinstance(td.get(key), NonTensorStack) and td.get(key).batch_size == (2, -1)
        assert td.get(key).tolist() == rows and td[1][key].tolist() == rows[1]
    nested = TensorDict.from_dict({"s": [[["a", "b"]], [[]]]}, batch_size=[2, 1])
    assert nested.batch_size == (2, 1) and nested.get("s").batch_size == (2, 1, -1)
    assert nested[1, 0]["s"].tolist() == [] and nested[0, 0]["s"].tolist() == ["a", "b"]
    assert torch.equal(TensorDict({"n": [[], []]}, [2])["n"], torch.zeros(2, 0))


@pytest.mark.parametrize(
    ("rows", "size"),
    [
        ([["a", "b"], ["c"]], (2, -1)),
        ([[["x"]], [["y", "z"]]], (2, 1, -1)),
        ([[[1, 2], [3]], [[4]]], (2, -1, -1)),
        ([[[1], [2, 3]], [[4], [5, 6]]], (2, 2, -1)),
        ([[[1, 2]], [[3, 4], [5, 6]]], (2, -1, 2)),
        ([[], ["a"]], (2, -1)),
        ([["a", "b"], ["c", "d"]], (2, 2)),
    ],
)
def test_from_list_and_from_any_of_ragged_lists_are_ragged_stacks(
    rows: list[Any], size: tuple[int, ...]
) -> None:
    # Each nested list is one more dim, -1 where the lengths differ, as the peer's
    # (tclass gave a 1-d stack of the rows, each a list value).
    for build in (NonTensorStack.from_list, NonTensorStack.from_any):
        stack = build(rows)
        assert isinstance(stack, NonTensorStack) and stack.batch_size == size
        assert stack.tolist() == rows
    ragged = NonTensorStack.from_list([["a", "b"], ["c"]], device="cpu")
    assert ragged[1, 0].data == "c" and ragged[0].tolist() == ["a", "b"]
    assert ragged.device == torch.device("cpu") and ragged[1].device == torch.device("cpu")


def test_from_list_keeps_value_nodes_as_members() -> None:
    # A NonTensorData / NonTensorStack item is a member (its dims follow), not a value
    # holding a node (tclass listed the node objects themselves).
    items = NonTensorStack.from_list([NonTensorData("x"), "y"])
    assert items.batch_size == (2,) and items.tolist() == ["x", "y"]
    rows = NonTensorStack.from_list([NonTensorStack("a", "b"), NonTensorStack("c")])
    assert rows.batch_size == (2, -1) and rows.tolist() == [["a", "b"], ["c"]]
    dense = NonTensorStack.from_list([NonTensorData("x", batch_size=[2]), NonTensorStack("a", "b")])
    assert dense.batch_size == (2, 2) and dense.tolist() == [["x", "x"], ["a", "b"]]
    inner = NonTensorStack.from_list([["a", NonTensorData("b")], ["c", NonTensorData("d")]])
    assert inner.tolist() == [["a", "b"], ["c", "d"]]
    with pytest.warns(DeprecationWarning, match="set_capture_non_tensor_stack"):
        switch = tclass.set_capture_non_tensor_stack(True)
    with switch:  # still a stack of one value per element, as the peer's
        same = NonTensorStack.from_list(["a", "a"])
    assert type(same) is NonTensorStack and same.tolist() == ["a", "a"]


def test_from_list_agrees_with_the_peer() -> None:
    tensordict = pytest.importorskip("tensordict")
    for rows in ([["a", "b"], ["c"]], [[["a"]], [["b", "c"]]], [[1], [2, 3]]):
        ours, theirs = NonTensorStack.from_list(rows), tensordict.NonTensorStack.from_list(rows)
        assert ours.batch_size == theirs.batch_size and ours.tolist() == theirs.tolist()


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")
def test_densify_of_a_ragged_lazy_stack_keeps_its_python_values() -> None:
    lazy = tclass.lazy_stack(list(_members(tclass)))
    dense = lazy.densify()
    assert type(dense) is TensorDict and dense.batch_size == (2, -1)
    assert dense["s"] == [["a", "b"], ["c", "d", "e"]] == lazy["s"]
    assert dense.get("s").batch_size == (2, -1) and dense["x"].is_nested
    assert dense[1]["s"] == ["c", "d", "e"] and dense[1]["x"].shape == (3, 3)
    rows = dense.tolist()  # the ragged dim sized by the entries of each row
    assert [[row["s"] for row in member] for member in rows] == [["a", "b"], ["c", "d", "e"]]
    assert torch.equal(rows[1][2]["x"], torch.ones(3))
    assert lazy.densify(layout=torch.jagged)["s"] == dense["s"]


def test_indexing_works_as_on_a_lazy_stack_of_the_same_shapes() -> None:
    ragged = _ragged()
    assert ragged[1, 2].data == "e" and ragged[-1, 0].data == "c"
    assert ragged[:, 0].tolist() == ["a", "c"] and ragged[:, 0].batch_size == (2,)
    assert ragged[1:].tolist() == [["c", "d", "e"]] and ragged[1:].batch_size == (1, 3)
    assert ragged[torch.tensor([1, 0])].tolist() == [["c", "d", "e"], ["a", "b"]]
    assert ragged[None].batch_size == (1, 2, -1) and ragged.unsqueeze(2).batch_size == (2, -1, 1)
    assert [m.tolist() for m in ragged.unbind(0)] == [["a", "b"], ["c", "d", "e"]]
    with pytest.raises(errors.HeterogeneousEntryError, match="ragged") as info:
        ragged.unbind(1)
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, ValueError)
    with pytest.raises(errors.HeterogeneousEntryError, match="ragged"):
        ragged.reshape(-1)
    with pytest.raises(IndexError):
        ragged[:, 2]  # beyond the shortest member, as the peer


def test_writes_reach_the_members() -> None:
    ragged = NonTensorStack(NonTensorData("x", batch_size=[2]), NonTensorStack("c", "d", "e"))
    values = TensorDict({"s": ragged}, [2])["s"]
    values[0][1] = "Z"
    values[1][0] = "Y"
    assert ragged.tolist() == [["x", "Z"], ["Y", "d", "e"]]
    ragged[1] = "all"
    ragged[:, 0] = NonTensorStack("p", "q")
    assert ragged.tolist() == [["p", "Z"], ["q", "all", "all"]]
    ragged[0][0] = "m"  # a member read by index is the member
    assert ragged.tolist()[0] == ["m", "Z"]
    with pytest.raises(errors.StackError, match="3 elements"):
        ragged[1] = NonTensorStack("u", "v")
    ragged.lock_()
    with pytest.raises(errors.LockedError):
        ragged[0, 0] = "no"
    assert ragged[0, 0].data == "m"


def test_stacks_of_ragged_stacks_and_members_appended() -> None:
    ragged = _ragged()
    ragged.append(NonTensorStack("u"))
    assert ragged.batch_size == (3, -1) and ragged.tolist()[2] == ["u"]
    twice = torch.stack([ragged, ragged])
    assert twice.batch_size == (2, 3, -1) and twice.tolist() == [ragged.tolist()] * 2
    assert torch.stack([ragged, ragged], 1).batch_size == (3, 2, -1)
    joined = torch.cat([ragged, NonTensorStack(NonTensorStack("z", "y"))])  # members added
    assert joined.batch_size == (4, -1) and joined.tolist()[2:] == [["u"], ["z", "y"]]
    rows = torch.cat([TensorDict({"s": ragged}, [3])] * 2)
    assert rows.batch_size == (6,) and rows["s"] == ragged.tolist() * 2
    with pytest.raises(errors.HeterogeneousEntryError, match="along another dim than 2"):
        torch.cat([ragged.unsqueeze(0)] * 2, 2)
    with pytest.raises(errors.StackError, match="batch dims"):
        ragged.append(NonTensorStack(NonTensorStack("a"), NonTensorStack("b")))


def test_tolist_of_a_stack_whose_members_are_ragged_before_its_stack_dim() -> None:
    """Found by the differential fuzzer: a stack (dim 1) of ragged stacks (dim 0 of
    sizes [1] and [2]) lists as the peer does: the ragged dim before the stack dim has
    one size in every member at each index of the dim before it. Where the members
    differ there, no nested lists exist in that order."""
    ragged = NonTensorStack(NonTensorStack("a"), NonTensorStack("b", "c"))
    stacked = torch.stack([ragged, ragged], 2)
    assert stacked.batch_size == (2, -1, 2)
    assert stacked.tolist() == [[["a", "a"]], [["b", "b"], ["c", "c"]]]
    across = torch.stack([NonTensorStack("a"), NonTensorStack("b", "c")], 1)
    assert across.batch_size == (-1, 2)
    with pytest.raises(errors.HeterogeneousEntryError, match="ragged across its members"):
        across.tolist()


def test_comparisons_are_refused_clearly() -> None:
    ragged = _ragged()
    with pytest.raises(errors.HeterogeneousEntryError, match="members"):
        _ = ragged == ragged


def test_element_wise_copies_and_pickles_keep_the_members() -> None:
    ragged = _ragged()
    for copy in (ragged.clone(), ragged.to("cpu"), pickle.loads(pickle.dumps(ragged))):
        assert copy is not ragged and copy.batch_size == (2, -1)
        assert copy.tolist() == ragged.tolist()
    assert ragged.to("cpu").device == torch.device("cpu")
    assert TensorDict({"s": ragged}, [2]).clone()["s"] == ragged.tolist()


def test_saved_and_loaded_ragged_values_round_trip(tmp_path: Path) -> None:
    td = TensorDict({"s": _ragged(), "n": torch.arange(2)}, [2])
    td.memmap(tmp_path / "td")
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert loaded.get("s").batch_size == (2, -1)
    assert loaded["s"] == [["a", "b"], ["c", "d", "e"]]
    lazy = tclass.lazy_stack(list(_members(tclass)))
    lazy.memmap(tmp_path / "lazy")
    back = tclass.LazyStackedTensorDict.load_memmap(tmp_path / "lazy")
    assert back.batch_size == (2, -1) and back["s"] == lazy["s"]
    assert torch.equal(back[1]["x"], torch.ones(3, 3))


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")
def test_the_peer_reads_the_same_values() -> None:
    tensordict = pytest.importorskip("tensordict")
    for lib in (tclass, tensordict):
        lazy = lib.lazy_stack(list(_members(lib)))
        dense = lazy.densify()
        two, three = lib.NonTensorStack("a", "b"), lib.NonTensorStack("c", "d", "e")
        stacked = lib.lazy_stack([two, three])
        assert tuple(dense.batch_size) == (2, -1) and tuple(stacked.batch_size) == (2, -1)
        assert dense["s"] == lazy["s"] == stacked.tolist() == [["a", "b"], ["c", "d", "e"]]
        assert stacked[1].tolist() == ["c", "d", "e"] and stacked[:, 0].tolist() == ["a", "c"]
        assert lib.is_non_tensor(stacked) and dense[0]["s"] == ["a", "b"]
