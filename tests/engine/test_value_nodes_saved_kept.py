"""A Python-value node saved in a folder (``td.memmap(prefix)``, or read back with
``load_memmap``) keeps what it is through a pickle (alone, in its collection, or as
multiprocessing pickles it), ``unsqueeze`` and an index: ``is_memmap()`` stays true and a
locked node stays locked, as the peer's do; so do its views (``view``, ``permute``...; a
stack's ``reshape`` too) and a stack's rows, whose writes name the stack to unlock. Copies
(``copy.copy``, ``clone()``) are new nodes: neither saved nor locked, in both; a cast is a
new node locked as its source, as the peer's. (They forgot both: a pickle or ``unsqueeze`` of
a saved node answered ``is_memmap()`` false and was unlocked; its rows were unlocked.)"""

from __future__ import annotations

import copy
import pickle
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    TensorClass,
    TensorDict,
)
from tclass.errors import LockedError


def _saved(tmp_path: Path, stack: bool, load: bool) -> tuple[TensorDict, Any]:
    value = (
        NonTensorStack(*[NonTensorData(v) for v in "xyz"])
        if stack
        else NonTensorData("hello", batch_size=[3])
    )
    td = TensorDict(a=torch.arange(3), s=value, batch_size=[3])
    saved = td.memmap(tmp_path / "saved")
    if load:
        saved = TensorDict.load_memmap(tmp_path / "saved")
    return saved, saved.get("s")


KEPT = {
    "pickle": lambda node: pickle.loads(pickle.dumps(node)),
    "multiprocessing's pickle": lambda node: pickle.loads(ForkingPickler.dumps(node)),
    "unsqueeze(0)": lambda node: node.unsqueeze(0),
    "unsqueeze(-1)": lambda node: node.unsqueeze(-1),
    "[0]": lambda node: node[0],
    "[:2]": lambda node: node[:2],
}


@pytest.mark.parametrize("stack", [False, True], ids=["value", "stack"])
@pytest.mark.parametrize("name", list(KEPT))
def test_a_saved_node_s_pickle_unsqueeze_and_rows_stay_saved_and_locked(
    tmp_path: Path, name: str, stack: bool
) -> None:
    saved, node = _saved(tmp_path, stack, load=False)
    assert saved.is_locked and node.is_locked and node.is_memmap()
    out = KEPT[name](node)
    assert out.is_memmap() and out.is_locked  # (a stack's rows too, as the peer's)
    assert out.saved_path is None  # (in no folder of its own, as the peer's rows)


@pytest.mark.parametrize("stack", [False, True], ids=["value", "stack"])
@pytest.mark.parametrize("make", KEPT.values(), ids=list(KEPT))
def test_a_loaded_node_s_pickle_unsqueeze_and_rows_stay_saved(
    tmp_path: Path, make: Any, stack: bool
) -> None:
    _, node = _saved(tmp_path, stack, load=True)
    assert node.is_memmap() and not node.is_locked
    out = make(node)
    assert out.is_memmap() and not out.is_locked


@pytest.mark.parametrize("load", [False, True], ids=["saved", "loaded"])
def test_a_pickle_of_the_collection_keeps_its_node_saved(tmp_path: Path, load: bool) -> None:
    saved, _ = _saved(tmp_path, stack=False, load=load)
    node = pickle.loads(pickle.dumps(saved)).get("s")
    assert node.is_memmap() and node.is_locked == (not load)
    assert node.data == "hello"


COPIES = {
    "copy.copy": copy.copy,
    "copy.deepcopy": copy.deepcopy,
    "clone()": lambda node: node.clone(),
    "clone(False)": lambda node: node.clone(False),
}


@pytest.mark.parametrize("stack", [False, True], ids=["value", "stack"])
@pytest.mark.parametrize("make", COPIES.values(), ids=list(COPIES))
def test_copies_are_new_nodes_neither_saved_nor_locked(
    tmp_path: Path, make: Any, stack: bool
) -> None:
    _, node = _saved(tmp_path, stack, load=False)
    out = make(node)
    assert not out.is_memmap() and not out.is_locked
    with pytest.raises(AttributeError):  # NotSavedError, as the peer's AttributeError
        out.saved_path  # noqa: B018


def test_an_unsaved_unlocked_node_pickles_as_before() -> None:
    node = NonTensorData("v", batch_size=[2])
    out = pickle.loads(pickle.dumps(node))
    assert not out.is_memmap() and not out.is_locked and out.data == "v"
    stack = NonTensorStack(NonTensorData(1), NonTensorData(2))
    assert pickle.dumps(stack) == pickle.dumps(NonTensorStack(NonTensorData(1), NonTensorData(2)))
    again = pickle.loads(pickle.dumps(stack))
    assert again.tolist() == [1, 2] and not again.is_memmap() and not again.is_locked


# --- shape views, casts and rows (vn22) ----------------------------------------------------


def _saved_2d(tmp_path: Path, stack: bool, load: bool) -> Any:
    """A saved (or loaded) node of batch size [2, 3]: a stack of six values, or one value."""
    rows = [NonTensorStack(*[NonTensorData(f"{i}{j}") for j in range(3)]) for i in range(2)]
    value = NonTensorStack(*rows) if stack else NonTensorData("v", batch_size=[2, 3])
    td = TensorDict(a=torch.zeros(2, 3), s=value, batch_size=[2, 3])
    saved = td.memmap(tmp_path / "saved")
    if load:
        saved = TensorDict.load_memmap(tmp_path / "saved")
    return saved.get("s")


VIEWS = {
    "squeeze": lambda node: node.unsqueeze(0).squeeze(0),
    "view": lambda node: node.view(-1),
    "permute": lambda node: node.permute(1, 0),
    "transpose": lambda node: node.transpose(0, 1),
    "unbind": lambda node: node.unbind(1)[0],
    "split": lambda node: node.split(1, 0)[0],
}
RESHAPES = {
    "reshape": lambda node: node.reshape(-1),
    "flatten": lambda node: node.flatten(),
    "unflatten": lambda node: node.unflatten(1, (3, 1)),
    "narrow": lambda node: node.narrow(1, 0, 2),
}


@pytest.mark.parametrize("make", [*VIEWS.values(), *RESHAPES.values()], ids=[*VIEWS, *RESHAPES])
def test_a_saved_stack_s_shape_views_stay_saved_and_locked(tmp_path: Path, make: Any) -> None:
    # (false and, for squeeze, unlocked before: the peer's lazy stack of the same members)
    node = _saved_2d(tmp_path, stack=True, load=False)
    out = make(node)
    assert out.is_memmap() and out.is_locked
    assert out.tolist() == make(NonTensorStack.from_list(node.tolist())).tolist()


@pytest.mark.parametrize("make", list(VIEWS.values()), ids=list(VIEWS))
def test_a_saved_value_s_views_stay_saved_and_locked(tmp_path: Path, make: Any) -> None:
    node = _saved_2d(tmp_path, stack=False, load=False)
    out = make(node)
    assert out.is_memmap() and out.is_locked and out.data == "v"


@pytest.mark.parametrize("make", list(RESHAPES.values())[:3], ids=list(RESHAPES)[:3])
def test_a_saved_value_s_reshapes_are_locked_but_not_saved(tmp_path: Path, make: Any) -> None:
    out = make(_saved_2d(tmp_path, stack=False, load=False))  # as the peer's collections
    assert not out.is_memmap() and out.is_locked and out.data == "v"


@pytest.mark.parametrize("stack", [False, True], ids=["value", "stack"])
@pytest.mark.parametrize("make", list(VIEWS.values()), ids=list(VIEWS))
def test_a_loaded_node_s_views_stay_saved(tmp_path: Path, make: Any, stack: bool) -> None:
    out = make(_saved_2d(tmp_path, stack, load=True))  # (tclass's rule for what it loaded)
    assert out.is_memmap() and not out.is_locked


@pytest.mark.parametrize("stack", [False, True], ids=["value", "stack"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_cast_of_a_locked_node_is_a_new_locked_node(
    tmp_path: Path, stack: bool, dtype: torch.dtype
) -> None:
    # (unlocked before; the peer's cast is locked, as a collection's in both)
    node = _saved_2d(tmp_path, stack, load=False)
    out = node.to(dtype)
    assert out is not node and out.is_locked and not out.is_memmap()
    assert out.tolist() == node.tolist()
    out.unlock_()  # shares nothing with its source: unlocks on its own
    assert not out.is_locked and node.is_locked


def test_a_move_of_a_locked_node_is_locked() -> None:
    node = NonTensorData("x", batch_size=[2]).lock_()
    moved = node.to("cpu")  # a real move (no device recorded before): a new node
    assert moved is not node and moved.is_locked and moved.device == torch.device("cpu")


def test_a_saved_node_is_on_its_collection_s_device(tmp_path: Path) -> None:
    # so to("cpu") gives the node itself, saved; the peer's node keeps no device
    # (its collection's is cpu), so its to("cpu") is a move: a new node, not saved
    saved, node = _saved(tmp_path, stack=True, load=False)
    assert saved.device == node.device == torch.device("cpu")
    assert node.to("cpu") is node and node.cpu() is node


ROWS = {
    "[0]": lambda node: node[0],
    "[0:1]": lambda node: node[0:1],
    "[0, 1]": lambda node: node[0, 1],
    "[:, 0]": lambda node: node[:, 0],
}


@pytest.mark.parametrize("make", list(ROWS.values()), ids=list(ROWS))
def test_rows_of_a_saved_stack_are_locked_and_a_write_names_the_stack(
    tmp_path: Path, make: Any
) -> None:
    node = _saved_2d(tmp_path, stack=True, load=False)
    row = make(node)
    assert row.is_memmap() and row.is_locked  # (unlocked before; the peer's are locked)
    value = NonTensorData("w", batch_size=row.batch_size)
    writes = [
        lambda: row.update_(value),
        lambda: row.update(value, inplace=True),
        lambda: row.copy_(value),
    ]
    if isinstance(row, NonTensorStack):
        writes.append(lambda: row.__setitem__(0, "w"))
    else:
        writes += [lambda: row.__setitem__(True, "w"), lambda: setattr(row, "data", "w")]
    for write in writes:
        with pytest.raises(
            LockedError, match=r"read by index from a locked NonTensorStack of batch size \[2, 3\]"
        ):
            write()
    assert node.tolist() == [["00", "01", "02"], ["10", "11", "12"]]


def test_rows_of_an_unlocked_stack_take_writes_into_it(tmp_path: Path) -> None:
    saved, _ = _saved(tmp_path, stack=True, load=True)  # loaded: unlocked
    node = saved.get("s")
    row = node[0:2]
    assert not row.is_locked
    row[1] = "w"
    assert node.tolist() == ["x", "w", "z"]
    locked = node.lock_()[0:1]
    with pytest.raises(LockedError, match="unlock that stack first"):
        locked[0] = "q"
    node.unlock_()
    node[0:1][0] = "q"  # the row read again
    assert node.tolist() == ["q", "w", "z"]


ADVANCED = {
    "[[2, 0]]": [2, 0],
    "[mask]": torch.tensor([True, False, True]),
    "[mask, 0]": (torch.tensor([True, False, True]), 0),
}


@pytest.mark.parametrize("index", list(ADVANCED.values()), ids=list(ADVANCED))
def test_an_advanced_index_of_a_locked_stack_is_an_unlocked_copy(index: Any) -> None:
    # the peer's NonTensorStack clones what a tensor, mask or list index picks: the
    # copy is unlocked and a write into it reaches no member (tclass kept it locked)
    stack = NonTensorStack(
        *[NonTensorStack(NonTensorData(v), NonTensorData(v + "!")) for v in "xyz"]
    )
    stack.lock_()
    rows = stack[index]
    assert isinstance(rows, NonTensorStack) and not rows.is_locked
    rows[0] = NonTensorData("w", batch_size=rows[0].batch_size)
    assert stack.is_locked and stack.tolist() == [["x", "x!"], ["y", "y!"], ["z", "z!"]]
    assert stack[0].is_locked and stack[0:2].is_locked  # ints and slices: locked views


def test_a_masked_locked_collection_takes_an_empty_write() -> None:
    # fuzzer program 12810148 (index, length 12): the expanded label stack, masked,
    # stayed locked, so writing no rows into the (unlocked) masked copy raised
    td = TensorDict(
        label=NonTensorData("", batch_size=[2, 2]), x=torch.ones(2, 2), batch_size=[2, 2]
    )
    td.lock_()
    rows = td.unsqueeze(1).expand(2, 2, 2)[torch.tensor([[True, False], [True, True]]), 1]
    rows[[]] = rows[[]].clone().zero_()
    assert not rows.is_locked and rows.batch_size == torch.Size([3])
    assert rows.get("label").tolist() == ["", "", ""] and rows.get("x").tolist() == [1.0, 1.0, 1.0]


class _Tagged(TensorClass):
    a: torch.Tensor
    tag: str


@pytest.mark.parametrize("load", [False, True], ids=["saved", "loaded"])
def test_a_saved_record_s_reshapes_keep_its_python_value_fields_saved(
    tmp_path: Path, load: bool
) -> None:
    rec = torch.stack([_Tagged(a=torch.zeros(()), tag=t, batch_size=[]) for t in "xyz"])
    saved = rec.memmap(tmp_path / "rec")
    if load:
        saved = _Tagged.load_memmap(tmp_path / "rec")
    for out in (saved.reshape(3, 1), saved.view(3, 1), saved.unflatten(0, (3, 1)), saved[0:2]):
        node = out._tensordict.get("tag")  # (false before for reshape, view, unflatten)
        assert node.is_memmap() and node.is_locked == (not load)
        assert out.reshape(-1)[0].tag == "x" and out.is_locked == (not load)


def test_a_lazy_stack_s_python_values_read_whole_are_a_new_stack(tmp_path: Path) -> None:
    # each member's node is saved and locked (as the peer's); get(key) stacks their values
    # into a new node, as torch.stack copies them (a write into it would reach no member):
    # not saved, and locked as the members' are (a write refused rather than lost), where
    # the peer's is a lazy stack of the members themselves
    members = [TensorDict(s=NonTensorData(c, batch_size=[2]), batch_size=[2]) for c in "xy"]
    saved = LazyStackedTensorDict(*members).memmap(tmp_path / "lazy")
    assert saved[0].get("s").is_memmap() and saved[0].get("s").is_locked
    whole = saved.get("s")
    assert not whole.is_memmap() and whole.is_locked
    with pytest.raises(LockedError):
        whole[0] = "q"
    assert saved[0].get("s").data == "x"


def test_copy_from_a_node_writes_its_values_as_the_peer() -> None:
    # (wrote nothing before, without a word: the base copies tensors only)
    node = NonTensorData("x", batch_size=[2])
    assert node.copy_(NonTensorData("w", batch_size=[2])) is node and node.data == "w"
    stack = NonTensorStack("x", "y")
    assert stack.copy_(NonTensorStack("w", "q")) is stack and stack.tolist() == ["w", "q"]
    stack.copy_(NonTensorData("v", batch_size=[2]))
    assert stack.tolist() == ["v", "v"]
    row = stack[1:]
    row.copy_(NonTensorStack("r"))  # into the stack it was read from, as other writes
    assert stack.tolist() == ["v", "r"]
    with pytest.raises(LockedError, match=r"copy_\(\) writes into it"):
        stack.lock_().copy_(NonTensorStack("a", "b"))
    assert stack.tolist() == ["v", "r"]
