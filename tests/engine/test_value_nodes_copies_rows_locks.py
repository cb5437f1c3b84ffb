"""Which results of a locked Python-value node are locked, as the peer's.

* A ``NonTensorStack``'s ``expand`` to another batch size (``expand_as``, ``broadcast_to``
  too), ``flip`` (``fliplr``, ``flipud``), ``roll``, ``rot90`` and ``tile`` copy each element
  into a new stack: unlocked and not saved, a write into it reaches neither the stack nor
  its folder, as the peer's (whose result holds new members). ``repeat`` and an ``expand``
  to the same batch size stay locked, as the peer's (same members); a ``NonTensorData``'s
  ``flip`` / ``roll`` / ``tile`` too. (All were locked before.)
* A ``NonTensorData``'s rows (``node[0]``, ``node[0:1]``, ``td[0]``'s) are locked only when
  it is saved in a folder or in shared memory and the index keeps the data pointer, as the
  peer's collections' views: those of a node in a locked collection never saved are new,
  unlocked nodes. A node in a shared collection answers ``is_shared()`` as the peer's.
  (Rows were always locked before, and ``is_shared()`` false.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import NonTensorData, NonTensorStack, TensorClass, TensorDict
from tclass.errors import LockedError


def _stack_2d() -> NonTensorStack:
    rows = [NonTensorStack(*[NonTensorData(f"{i}{j}") for j in range(3)]) for i in range(2)]
    return NonTensorStack(*rows)


def _locked_stack(tmp_path: Path, kind: str) -> tuple[NonTensorStack, Path | None]:
    """A [2, 3] stack locked on its own, in a locked TensorDict, or saved in a folder."""
    if kind == "own":
        return _stack_2d().lock_(), None
    td = TensorDict(a=torch.zeros(2, 3), s=_stack_2d(), batch_size=[2, 3])
    if kind == "in a locked TensorDict":
        return td.lock_().get("s"), None
    return td.memmap(tmp_path / "saved").get("s"), tmp_path / "saved"


SOURCE = [["00", "01", "02"], ["10", "11", "12"]]
COPIES = {
    "expand": lambda s: s.expand(4, 2, 3),
    "expand_as": lambda s: s.expand_as(torch.zeros(4, 2, 3)),
    "broadcast_to": lambda s: s.broadcast_to((4, 2, 3)),
    "expand of a size-1 dim": lambda s: s[:1].expand(2, 3),
    "flip": lambda s: s.flip(0),
    "fliplr": lambda s: s.fliplr(),
    "flipud": lambda s: s.flipud(),
    "roll": lambda s: s.roll(1, 0),
    "roll flat": lambda s: s.roll(1),
    "roll by 0": lambda s: s.roll(0, 1),
    "rot90": lambda s: s.rot90(),
    "tile": lambda s: s.tile(2),
    "tile to more dims": lambda s: s.tile((2, 1, 1)),
    "tile by 1": lambda s: s.tile(1),
}
KINDS = ["own", "in a locked TensorDict", "saved"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(COPIES))
def test_a_stack_s_copies_are_new_unlocked_stacks(tmp_path: Path, name: str, kind: str) -> None:
    stack, folder = _locked_stack(tmp_path, kind)
    out = COPIES[name](stack)
    assert isinstance(out, NonTensorStack)
    assert not out.is_locked and not out.is_memmap()  # (locked before; the peer's are not)
    expected = COPIES[name](NonTensorStack.from_list(SOURCE)).tolist()
    assert out.tolist() == expected
    out[(0,) * out.batch_dims] = "W"  # a write into the copy: allowed, reaches nothing
    assert out.tolist() != expected
    assert stack.is_locked and stack.tolist() == SOURCE
    if folder is not None:
        assert TensorDict.load_memmap(folder).get("s").tolist() == SOURCE


KEPT_LOCKED = {
    "expand to its batch size": lambda s: s.expand(2, 3),
    "repeat": lambda s: s.repeat(2, 1),
    "view": lambda s: s.view(-1),
    "unsqueeze": lambda s: s.unsqueeze(0),
    "[0:1]": lambda s: s[0:1],
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("make", KEPT_LOCKED.values(), ids=list(KEPT_LOCKED))
def test_a_stack_s_views_and_repeat_stay_locked(tmp_path: Path, make: Any, kind: str) -> None:
    stack, _ = _locked_stack(tmp_path, kind)
    out = make(stack)
    assert out.is_locked  # as the peer's (its members)
    with pytest.raises(LockedError):
        out[(0,) * out.batch_dims] = "W"
    assert stack.tolist() == SOURCE


@pytest.mark.parametrize(
    "make",
    [lambda n: n.flip(0), lambda n: n.roll(1, 0), lambda n: n.tile(2)],
    ids=["flip", "roll", "tile"],
)
def test_a_value_s_flip_roll_tile_stay_locked(make: Any) -> None:
    node = TensorDict(s=NonTensorData("v", batch_size=[3]), batch_size=[3]).lock_().get("s")
    out = make(node)
    assert isinstance(out, NonTensorData) and out.is_locked and out.data == "v"  # as the peer


def test_a_locked_collection_s_flip_locks_its_new_stack() -> None:
    td = TensorDict(s=NonTensorStack("x", "y", "z"), batch_size=[3]).lock_()
    out = td.flip(0)
    assert out.is_locked and out.get("s").is_locked  # the collection's lock: its tree's
    assert out.get("s").tolist() == ["z", "y", "x"]


def test_cat_and_stack_of_locked_stacks_are_unlocked_copies(tmp_path: Path) -> None:
    # decided (README): tclass's are copies of the values, unlocked as a TensorDict's
    # cat / stack; the peer's hold the operands' members (locked, and a write through
    # one reaches the operand and its file)
    stack, folder = _locked_stack(tmp_path, "saved")
    for out in (torch.cat([stack, stack], 0), torch.stack([stack, stack], 0)):
        assert not out.is_locked and not out.is_memmap()
        out[(0,) * out.batch_dims] = "W"
    assert stack.tolist() == SOURCE
    assert TensorDict.load_memmap(folder).get("s").tolist() == SOURCE  # type: ignore[arg-type]


# --- rows of a NonTensorData ---------------------------------------------------------------


class _Tagged(TensorClass):
    a: torch.Tensor
    tag: Any


def _locked_value(where: str) -> tuple[Any, NonTensorData]:
    """A locked collection never saved holding ``NonTensorData('v')`` over [3]."""
    value = NonTensorData("v", batch_size=[3])
    if where == "record":
        rec = _Tagged(a=torch.arange(3), tag=value, batch_size=[3]).lock_()
        return rec, rec._tensordict.get("tag")
    td = TensorDict(a=torch.arange(3), tag=value, batch_size=[3]).lock_()
    return td, td.get("tag")


def _node_of(row: Any) -> Any:
    """The Python-value node a row of the collection holds (a record's, in its storage)."""
    return row.get("tag") if isinstance(row, TensorDict) else row._tensordict.get("tag")


ROWS = {
    "node[0]": lambda c, n: n[0],
    "node[0:1]": lambda c, n: n[0:1],
    "node[None]": lambda c, n: n[None],
    "collection[0]": lambda c, n: _node_of(c[0]),
    "collection[0:1]": lambda c, n: _node_of(c[0:1]),
}


@pytest.mark.parametrize("where", ["TensorDict", "record"])
@pytest.mark.parametrize("make", ROWS.values(), ids=list(ROWS))
def test_rows_of_a_value_in_a_locked_collection_never_saved_are_unlocked(
    make: Any, where: str
) -> None:
    collection, node = _locked_value(where)
    row = make(collection, node)
    assert isinstance(row, NonTensorData)
    assert not row.is_locked and not row.is_memmap()  # (locked before; the peer's are not)
    row.data = "W"  # a new node: the collection keeps its value, as the peer's
    assert node.data == "v" and node.is_locked


@pytest.mark.parametrize("index", [..., slice(None), (..., slice(None))], ids=str)
def test_all_of_a_locked_value_stays_locked(index: Any) -> None:
    _, node = _locked_value("TensorDict")
    assert node[index].is_locked  # as the peer's (its collection itself)


def test_a_value_in_a_shared_collection_is_shared_and_its_rows_locked() -> None:
    td = TensorDict(a=torch.arange(3), s=NonTensorData("v", batch_size=[3]), batch_size=[3])
    node = td.share_memory_().get("s")
    assert node.is_shared()  # (false before; the peer's is true)
    for row in (node[0], node[0:2], node.unsqueeze(0), node.view(-1)):
        assert row.is_locked and row.is_shared()
    stack = TensorDict(s=NonTensorStack("x", "y"), batch_size=[2]).share_memory_().get("s")
    assert stack.is_shared() and stack[0].is_shared() and stack[0].is_locked


def test_rows_of_a_saved_value_at_an_index_that_copies_are_new_nodes(tmp_path: Path) -> None:
    td = TensorDict(a=torch.arange(3), s=NonTensorData("v", batch_size=[3]), batch_size=[3])
    node = td.memmap(tmp_path / "saved").get("s")
    for row in (node[0], node[:2], node[None], node[...]):  # a view: saved and locked
        assert row.is_locked and row.is_memmap()
    for row in (
        node[1:],
        node[torch.tensor([0, 2])],
        node[[0, 1]],
        node[torch.tensor([1, 0, 1]).bool()],
    ):
        assert not row.is_locked and not row.is_memmap()  # (both before; as the peer's)
        assert row.data == "v"
