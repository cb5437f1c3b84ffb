"""``row.data = v`` on a node read by index from a ``NonTensorStack``, as tensordict 0.15.3.

The peer's row is the stack's member: setting its ``data`` changes what the stack reads
at that index (a ``lazy_stack`` or a ``NonTensorStack`` built directly, alone or nested in
a collection, of ``MetaData`` too); a locked or saved stack refuses the write. A row past
a member (``s[1, 0]`` of a stack of values over ``[3]``) is a new node there: its write
leaves the stack as it is. tclass's ``data`` setter did not write back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tclass import MetaData, NonTensorData, NonTensorStack, TensorDict, lazy_stack


@pytest.mark.parametrize("build", ["lazy_stack", "NonTensorStack", "MetaData", "nested"])
def test_a_data_write_into_a_row_reaches_its_stack(build: str) -> None:
    if build == "lazy_stack":
        stack: Any = lazy_stack([NonTensorData(v) for v in "abc"])
    elif build == "MetaData":
        stack = lazy_stack([MetaData(v) for v in "abc"])
    elif build == "NonTensorStack":
        stack = NonTensorStack(*map(NonTensorData, "abc"))
    else:
        td = TensorDict(s=NonTensorStack(*map(NonTensorData, "abc")), batch_size=[3])
        stack = td.get("s")
    stack[1].data = "Q"
    assert stack.tolist() == ["a", "Q", "c"]
    if build == "nested":
        assert td.get("s").tolist() == ["a", "Q", "c"] and td[1]["s"] == "Q"


def test_a_data_write_reaches_each_stack_of_a_nested_stack() -> None:
    stack = NonTensorStack(*(NonTensorStack(*(f"{i}{j}" for j in "01")) for i in "012"))
    stack[1, 0].data = "Q"
    stack[2][1].data = "R"
    assert stack.tolist() == [["00", "01"], ["Q", "11"], ["20", "R"]]


@pytest.mark.parametrize("how", ["lock_", "memmap_"])
def test_a_data_write_into_a_row_of_a_locked_stack_is_refused(how: str, tmp_path: Path) -> None:
    td = TensorDict(s=NonTensorStack(*map(NonTensorData, "abc")), batch_size=[3])
    td = td.lock_() if how == "lock_" else td.memmap_(tmp_path)
    row = td.get("s")[1]
    with pytest.raises(RuntimeError, match="locked TensorDict \\(a NonTensorStack"):
        row.data = "Q"
    assert td.get("s").tolist() == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("index", "reaches"),
    [((1, 0), False), ((1, [1]), False), ((None, 1), False), ((1, None), False), (1, True)],
)
def test_a_row_past_a_member_is_a_new_node(index: Any, reaches: bool) -> None:
    stack = lazy_stack([NonTensorData(v, batch_size=[3]) for v in "abc"])
    stack[index].data = "q"
    middle = ["q"] * 3 if reaches else ["b"] * 3
    assert stack.tolist() == [["a"] * 3, middle, ["c"] * 3]
