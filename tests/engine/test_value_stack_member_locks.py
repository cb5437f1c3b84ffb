"""Which index of a locked ``NonTensorStack`` gives a locked node, as tensordict 0.15.3's.

The peer's stack is a lazy stack: an int at each stack dim picks a member, and what the
index holds past it indexes that member; a member that is a ``NonTensorData`` (a
``lazy_stack`` of values over ``[3]``, an expanded value) follows the ``NonTensorData``
rule, so the rows are new, unlocked nodes unless the rest is whole, or keeps the data
pointer (ints, ``None``, slices from 0) of a saved or shared stack. tclass gave them
locked (and linked, so a write into them raised). An advanced index copies the members:
unlocked, but locked for a stack in shared memory where it picks at a stack dim.

The expectations are the peer's, measured (``L``: locked, ``u``: unlocked).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import NonTensorData, NonTensorStack, TensorDict, errors, lazy_stack

_MASK = torch.tensor([True, False, True])

INDEX: dict[str, Any] = {
    "1": 1,
    "(1, 0)": (1, 0),
    "(0, [1])": (0, [1]),
    "([0, 1], 0)": ([0, 1], 0),
    "(0, mask)": (0, _MASK),
    "(0, 1:)": (0, slice(1, None)),
    "(1:, 0)": (slice(1, None), 0),
    "(:, [1])": (slice(None), [1]),
    "(0, None)": (0, None),
    "(None, 0)": (None, 0),
    "(:, 1)": (slice(None), 1),
    "(None, 0, 1)": (None, 0, 1),
}


def _nested() -> Any:
    return NonTensorStack(*[NonTensorStack(*[NonTensorData(v + w) for w in "xyz"]) for v in "abc"])


def _over_3() -> Any:
    return lazy_stack([NonTensorData(v, batch_size=[3]) for v in "abc"])


def _over_3_dim_1() -> Any:
    return lazy_stack([NonTensorData(v, batch_size=[3]) for v in "abc"], dim=1)


BUILDS: dict[str, Callable[[], Any]] = {
    "nested": _nested,
    "lazy_stack over [3]": _over_3,
    "lazy_stack over [3], dim 1": _over_3_dim_1,
}

# (build, where) -> the lock of each INDEX's result, in INDEX's order
PEER = {
    ("nested", "locked"): "L L u u u L L u L L L u",
    ("nested", "saved"): "L L u u u L L u L L L L",
    ("nested", "shared"): "L L L L L L L L L L L L",
    ("lazy_stack over [3]", "locked"): "L u u u u u L u u u L u",
    ("lazy_stack over [3]", "saved"): "L L u u u u L u L L L L",
    ("lazy_stack over [3]", "shared"): "L L u L u u L u L L L L",
    ("lazy_stack over [3], dim 1", "locked"): "L u u u u L u u L L L u",
    ("lazy_stack over [3], dim 1", "saved"): "L L u u u L u u L L L L",
    ("lazy_stack over [3], dim 1", "shared"): "L L L u L L u L L L L L",
}


def _stack(build: str, where: str, tmp_path: Path) -> Any:
    stack = BUILDS[build]()
    td = TensorDict(label=stack, batch_size=stack.batch_size)
    if where == "locked":
        td.lock_()
    elif where == "saved":
        td = td.memmap(tmp_path / "saved")
    else:
        td = td.share_memory_()
    return td.get("label")


@pytest.mark.parametrize("build, where", list(PEER), ids=[f"{b}-{w}" for b, w in PEER])
def test_the_lock_of_each_index_is_the_peers(build: str, where: str, tmp_path: Path) -> None:
    stack = _stack(build, where, tmp_path)
    dense = BUILDS[build]()
    got = []
    for index in INDEX.values():
        rows = stack[index]
        assert rows.tolist() == dense[index].tolist()  # the values are the same either way
        got.append("L" if rows.is_locked else "u")
    assert dict(zip(INDEX, got)) == dict(zip(INDEX, PEER[build, where].split()))


@pytest.mark.parametrize("index", [(1, 0), (1, [1]), (None, 1), (1, None)])
def test_a_row_past_a_member_of_a_locked_stack_is_a_new_node(index: Any) -> None:
    # the peer's member NonTensorData indexed further: unlocked, a write into it leaves
    # the stack as it is (tclass gave a locked row whose write named the stack)
    stack = lazy_stack([NonTensorData(v, batch_size=[3]) for v in "abc"])
    stack.lock_()
    row = stack[index]
    assert isinstance(row, NonTensorData) and not row.is_locked and row.data == "b"
    assert not row.is_memmap()
    row.data = "q"
    assert stack.is_locked and stack.tolist() == [["a"] * 3, ["b"] * 3, ["c"] * 3]


def test_a_one_dim_stack_with_a_new_dim_is_unlocked_unless_saved(tmp_path: Path) -> None:
    # s[None, 1], s[1, None] of a locked stack of single values: the member indexed with
    # None, unlocked; of a saved one, None keeps the data pointer: locked, saved
    td = TensorDict(label=NonTensorStack(*map(NonTensorData, "abc")), batch_size=[3])
    saved = td.memmap(tmp_path / "saved").get("label")
    locked = td.lock_().get("label")
    for index in [(None, 1), (1, None)]:
        assert not locked[index].is_locked and locked[index].tolist() == ["b"]
        assert saved[index].is_locked and saved[index].is_memmap()
    assert locked[..., 1].is_locked and locked[1].is_locked  # the member itself


def _locked_rows_and_view() -> tuple[TensorDict, TensorDict]:
    td = TensorDict(a=torch.zeros(()), batch_size=[])
    td.set_non_tensor("s", "a")
    td = td.unsqueeze(0).lock_()
    return td, td.unflatten(-1, [-1])  # a view: its stack of values is read from td's


def test_a_write_into_a_view_of_a_locked_collection_reaches_its_stack() -> None:
    # fuzzer program 14,510,108 (index,shape,combine --length 12): the peer writes rows
    # into a locked collection in place, into a view of it too, and so into the stack
    # the view's values were read from; tclass refused ("cannot write into an element")
    td, view = _locked_rows_and_view()
    rows = view[torch.tensor([-1])].clone()
    rows.set_non_tensor("s", "b")
    view[torch.tensor([-1])] = rows
    assert view.get("s").tolist() == ["b"] and td.get("s").tolist() == ["b"]
    assert td.is_locked and view.is_locked and td["a"].tolist() == [0.0]


def test_a_write_into_a_nested_view_of_a_locked_collection_reaches_its_stack() -> None:
    td, view = _locked_rows_and_view()
    outer = TensorDict(n=view, batch_size=[1])
    rows = outer[0].clone()
    rows.set_non_tensor(("n", "s"), "b")
    outer[0] = rows
    assert td.get("s").tolist() == ["b"] and outer.get(("n", "s")).tolist() == ["b"]


def test_a_write_into_an_element_of_a_locked_view_is_refused_still() -> None:
    # the node itself (not through its collection): locked as the peer's
    td, view = _locked_rows_and_view()
    with pytest.raises(errors.LockedError, match="cannot write into an element"):
        view.get("s")[0] = "b"
    assert td.get("s").tolist() == ["a"]


def test_a_write_into_a_view_of_a_saved_collection_is_refused(tmp_path: Path) -> None:
    # the peer raises too ("Cannot update a leaf ... from a memmaped parent"): the write
    # would not reach the folder
    td = TensorDict(a=torch.zeros(()), batch_size=[])
    td.set_non_tensor("s", "a")
    td = td.unsqueeze(0).memmap(tmp_path / "saved")  # (a stack of values)
    view = td.unflatten(-1, [-1])
    rows = view[0].clone()
    rows.set_non_tensor("s", "b")
    with pytest.raises(errors.LockedError, match="cannot write into an element"):
        view[0] = rows
    assert td.get("s").tolist() == ["a"]


def test_a_write_into_a_view_of_no_element_of_a_saved_collection_writes_nothing(
    tmp_path: Path,
) -> None:
    # fuzzer program 15,851,395 (methods,index,shape,combine --length 12): x[:0] of a
    # saved collection holding a stack of values, reshaped and squeezed, then
    # x[...] = x[...].clone(): nothing to write, which the peer runs; tclass refused
    td = TensorDict(a=torch.zeros(()), batch_size=[])
    td.set_non_tensor("s", "a")
    td = td.unsqueeze(0).memmap(tmp_path / "saved")  # (a stack of values)
    view = td[:0].reshape([-1]).squeeze()  # (its values read from td's by index)
    assert view.batch_size == torch.Size([0]) and view.is_locked
    view[...] = view[...].clone().zero_()
    assert view.get("s").tolist() == [] and td.get("s").tolist() == ["a"]
    rows = td[:1]  # a view of an element: refused still, as above (and by the peer)
    with pytest.raises(errors.LockedError, match="cannot write into an element"):
        rows[...] = rows[...].clone().zero_()
