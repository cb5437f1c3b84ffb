"""Writes of Python values (``_engine/_td.py`` ``set_``, ``_engine/_nontensor.py``):
what a write changes, and what else sees it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import tclass
from tclass import NonTensorData, NonTensorStack, TensorClass, TensorDict
from tclass.errors import InPlaceWriteError


class Labelled(TensorClass):
    v: str
    x: torch.Tensor


def _source() -> TensorDict:
    return TensorDict({"d": torch.zeros(2), "v": "x y", "n": {"w": "p"}}, batch_size=[2])


@pytest.mark.parametrize("op", ["exclude('d')", "select('v', 'n')", "exclude('zz')", "view(-1)"])
def test_set_of_a_value_reaches_what_shares_its_node(op: str) -> None:
    """``set_`` writes a Python value into its node, as it writes a tensor into its
    storage: the source of an ``exclude`` / ``select`` result sees it at every level."""
    source = _source()
    shared = eval(f"source.{op}")
    shared.set_("v", "a").set_(("n", "w"), "b")
    assert (source["v"], source["n", "w"]) == ("a", "b") == (shared["v"], shared["n", "w"])
    source.set_("d", torch.ones(2))
    assert "d" not in shared.keys() or shared["d"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("op", ["clone()", "clone(False)", "copy()", "apply(lambda t: t)"])
def test_set_of_a_value_leaves_a_copy_alone(op: str) -> None:
    source = _source()
    copied = eval(f"source.{op}")
    copied.set_("v", "a").set_(("n", "w"), "b")
    assert (source["v"], source["n", "w"]) == ("x y", "p")
    assert (copied["v"], copied["n", "w"]) == ("a", "b")


@pytest.mark.parametrize("op", ["set_", "update_", "nested", "locked", "record"])
def test_set_of_a_value_over_several_values_writes_each_in_place(op: str) -> None:
    """As the peer: ``set_`` / ``update_`` of one value into a stack of per-element
    values writes it into every element of that node, which stays a stack: another
    reference to it sees the write."""
    td = TensorDict({"v": NonTensorStack("a", "b"), "n": {"v": ["p", "q"]}}, batch_size=[2])
    key: str | tuple[str, ...] = ("n", "v") if op == "nested" else "v"
    target: Any = td
    if op == "record":
        target = Labelled(v=NonTensorStack("a", "b"), x=torch.zeros(2), batch_size=[2])
        td = target._tensordict
    before = td.get(key)
    if op == "locked":
        td.lock_()
    if op == "update_":
        target.update_({"v": "c"})
    else:
        target.set_(key, "c")
    assert td.get(key) is before and isinstance(before, NonTensorStack)
    assert before.tolist() == ["c", "c"]


def test_set_of_a_stack_of_values_over_a_stack_copies_its_values() -> None:
    td = TensorDict({"v": NonTensorStack("a", "b")}, batch_size=[2])
    before, source = td.get("v"), NonTensorStack("u", "w")
    td.set_("v", source)
    source[0] = "z"  # the written node holds its own values
    assert td.get("v") is before and before.tolist() == ["u", "w"]


def test_set_of_a_value_over_a_saved_value_stack_writes_the_node_and_the_folder(
    tmp_path: Path,
) -> None:
    td = TensorDict({"v": ["a", "b"], "x": torch.zeros(2)}, batch_size=[2]).memmap(tmp_path)
    before = td.get("v")
    td.set_("v", "c")
    assert td.get("v") is before and before.tolist() == ["c", "c"]
    loaded = TensorDict.load_memmap(tmp_path)
    assert isinstance(loaded.get("v"), NonTensorStack) and loaded.get("v").tolist() == ["c", "c"]


@pytest.mark.parametrize("index", [Ellipsis, ()])
def test_a_whole_write_without_batch_dims_keeps_one_value(index: object) -> None:
    """``td[...] = {"v": 3}`` for batch size ``[]`` gives the entry the new value, one
    value (``NonTensorData``), as the peer: not a stack without dims."""
    td = TensorDict({"v": NonTensorData(1, batch_size=[]), "m": {"v": "s"}}, batch_size=[])
    td[index] = {"v": torch.tensor(3), "m": {"v": "t"}}
    assert type(td.get("v")) is NonTensorData and td.get("v").batch_size == ()
    assert torch.equal(td["v"], torch.tensor(3))
    assert type(td.get(("m", "v"))) is NonTensorData and td["m", "v"] == "t"
    td[None] = TensorDict({"v": "u"}, batch_size=[])  # a new dim aside: the one element
    assert type(td.get("v")) is NonTensorData and td["v"] == "u"


def test_a_row_write_still_makes_values_per_element() -> None:
    td = TensorDict({"v": "s"}, batch_size=[2])
    td[0] = TensorDict({"v": "t"}, batch_size=[])
    assert type(td.get("v")) is NonTensorStack and td["v"] == ["t", "s"]


@pytest.mark.parametrize("value", [[3, 4], [[3], [4]], (3, 4)], ids=["list", "nested", "tuple"])
@pytest.mark.parametrize("per_element", [False, True], ids=["one-value", "value-stack"])
def test_an_in_place_write_of_a_list_into_a_python_value_is_refused(
    value: object, per_element: bool
) -> None:
    # was stored as a tensor: an in-place write changed the entry's kind (an int field of
    # a memory-mapped record became a MemoryMappedTensor); the peer refuses it too
    source = TensorDict({"d": torch.zeros(2)}, batch_size=[2])
    if per_element:
        source["n"] = NonTensorStack(NonTensorData(1), NonTensorData(2))
    else:
        source.set_non_tensor("n", 3)
    before = source["n"]
    for write in (lambda: source.set_("n", value), lambda: source.update_({"n": value})):
        with pytest.raises(InPlaceWriteError, match="'n' holds a Python value") as caught:
            write()
        assert isinstance(caught.value, RuntimeError)  # as the peer raises
        assert "set_non_tensor()" in str(caught.value)
        assert not isinstance(source.get("n"), torch.Tensor) and source["n"] == before
    source.set_non_tensor("n", [3, 4])  # the way to write a list as the value
    assert source["n"] == [3, 4]
    source.set_("n", 5)  # a number stays a Python value, as before
    assert source["n"] == 5


@pytest.mark.parametrize("value", ["a", "b"])
@pytest.mark.parametrize("index", [..., ()])
@pytest.mark.parametrize("lead", [[1], [1, 1]])
def test_a_value_written_over_a_batch_without_dims_stays_one_value(
    value: str, index: Any, lead: list[int]
) -> None:
    # td[...] = td[None].clone() of a TensorDict of batch [] made its value a
    # NonTensorStack without dims (fuzz fz41b); the peer keeps a NonTensorData
    td = TensorDict({"v": "a"}, batch_size=[])
    td[index] = TensorDict({"v": value}, batch_size=lead)
    node = td.get("v")
    assert type(node) is NonTensorData and node.batch_size == torch.Size([])
    assert td["v"] == value
    # a destination with dims still holds the wider value per element
    rows = TensorDict({"v": "a"}, batch_size=[2])
    rows[0] = TensorDict({"v": "a"}, batch_size=[1])
    assert type(rows.get("v")) is NonTensorStack and rows["v"] == ["a", "a"]


def test_rows_written_at_an_index_fill_a_value_with_more_dims() -> None:
    """``td[i] = rows`` where a value entry has dims past the batch size (the batch size
    was shortened): the rows' one value (batch size ``[2]``) fills the selection
    (``[2, 1]``) element by element, a stack though the value is the same, as the peer's
    (it refused the write, fz17b); over an empty selection nothing is written, and a
    stack of several values still has to broadcast."""
    td = TensorDict({"a": torch.zeros(4, 2, 1), "s": "pong"}, batch_size=[4, 2, 1])
    td.batch_size = [4, 2]
    td[-1] = td[-1].to_dict()
    assert isinstance(td.get("s"), NonTensorStack)
    assert td.get("s").tolist() == [[["pong"], ["pong"]]] * 4
    td[-1] = {"s": "z"}
    assert td.get("s").tolist() == [[["pong"], ["pong"]]] * 3 + [[["z"], ["z"]]]
    empty = TensorDict({"a": torch.zeros(4, 0, 1), "s": "pong"}, batch_size=[4, 0, 1])
    empty.batch_size = [4, 0]
    empty[-1] = {"s": "z"}
    assert isinstance(empty.get("s"), NonTensorData) and empty.get("s").data == "pong"
    two = TensorDict({"s": NonTensorStack("p", "q")}, batch_size=[2])
    with pytest.raises(RuntimeError, match=r"batch size \[2\]"):
        td[-1] = two
    assert td.get("s").tolist()[-1] == [["z"], ["z"]]  # nothing written


def test_rows_of_the_same_value_into_a_saved_value_with_more_dims(tmp_path: Path) -> None:
    """The same write into a memory-mapped TensorDict (locked): the same value keeps the
    node, as the peer's shared write; another value is written into each element, in
    memory and in the folder."""
    td = TensorDict({"a": torch.zeros(4, 2, 1), "s": "pong"}, batch_size=[4, 2, 1])
    td.batch_size = [4, 2]
    saved = td.memmap(tmp_path / "td")
    saved[-1] = saved[-1].to_dict()
    assert isinstance(saved.get("s"), NonTensorData)
    saved[-1] = {"s": "z"}
    expected = [[["pong"], ["pong"]]] * 3 + [[["z"], ["z"]]]
    assert saved.get("s").tolist() == expected
    assert TensorDict.load_memmap(tmp_path / "td").get("s").tolist() == expected


def test_set_of_a_value_keeps_a_node_past_the_batch_size() -> None:
    """left46a (fuzz program 18,554): ``flatten_keys`` leaves the node ``"m.v"`` at the
    nested batch size [1, 1], past the collection's [1]; ``set_`` / ``update_`` of a
    Python value write into the node, keeping its batch size, as the peer (it was
    replaced by a node of batch size [1])."""
    source = TensorDict(
        {"b": torch.zeros(1, 1), "m": TensorDict({"v": "a"}, batch_size=[1, 1])}, batch_size=[1]
    )
    flat = source.flatten_keys(".")
    node = flat.get("m.v")
    flat.update_(flat.to_dict())
    flat.set_("m.v", "c")
    assert flat.get("m.v") is node and node.batch_size == torch.Size([1, 1])
    assert flat["m.v"] == "c"
    flat.update_({"m.v": 3})
    assert flat.get("m.v").batch_size == torch.Size([1, 1]) and flat["m.v"] == 3


class _Holder(TensorClass):
    label: Any
    x: torch.Tensor


@pytest.mark.parametrize("size, picks", [(0, []), (1, [False]), (2, [False, False])])
@pytest.mark.parametrize("how", ["copy_at_", "update_at_", "setitem"])
def test_a_write_at_no_element_keeps_one_python_value(
    size: int, picks: list[bool], how: str
) -> None:
    """A write at an index that selects no element leaves a Python value one value, as
    the peer keeps it, also one that ``==`` cannot compare (a dict holding a tensor; it
    became an empty per-element list before: program 34,404 of the five families)."""
    label = {"q": torch.zeros(0)}
    record = _Holder(label=label, x=torch.ones(size, 2), batch_size=[size])
    mask = torch.tensor(picks, dtype=torch.bool)
    source = record[mask].clone().zero_()
    if how == "copy_at_":
        record.copy_at_(source, mask, fast=False)
    elif how == "update_at_":
        record.update_at_(source.to_tensordict(), mask)
    else:
        record[mask] = source
    assert record.label is label
    assert record.x.eq(1).all()
    picked = TensorDict({"v": "a", "d": torch.ones(size)}, batch_size=[size])
    picked[mask] = TensorDict({"v": "b", "d": torch.zeros(0)}, batch_size=[0])
    assert picked["v"] == "a"
    assert isinstance(picked.get("v"), NonTensorData)


def _one_value_written(lib: Any, shape: list[int]) -> Any:
    td = lib.TensorDict({"s": "a"}, batch_size=shape)
    td[0] = lib.TensorDict({"s": "b"}, batch_size=shape[1:])
    return td


@pytest.mark.parametrize("shape", [[2], [2, 3]])
@pytest.mark.parametrize("index", [(1, None), (0, None), (None, 1), 1, (slice(None), None)])
def test_a_value_written_at_an_element_keeps_each_element_a_member(
    shape: list[int], index: Any
) -> None:
    """A write into one Python value makes a stack nested along each dim (each element
    its own member, as the peer's ``maybe_to_stack``), and stays so: an element indexed
    out of it and given a new dim is one value again (program 5,242 of ``--families
    index``: ``td[:] = td[None].clone(); td[-1, None]``), as in the peer."""
    peer = pytest.importorskip("tensordict")
    mine, theirs = _one_value_written(tclass, shape)[index], _one_value_written(peer, shape)[index]
    node, expected = mine._tensors["s"], theirs._get_str("s", None)
    assert type(node).__name__ == type(expected).__name__
    assert node.batch_size == expected.batch_size
    assert node.tolist() == expected.tolist()
    same = tclass.TensorDict({"s": ""}, batch_size=[1])
    same[:] = same[None].clone()  # the value it holds, written back over a new dim
    assert isinstance(same[-1, None]._tensors["s"], NonTensorData)


def _value_rows() -> TensorDict:
    rows = NonTensorStack(NonTensorStack("p", "q"), NonTensorStack("r", "t"))
    return TensorDict({"a": torch.zeros(2, 2), "s": rows}, batch_size=[2, 2])


_VIEWS = [
    "permute(1, 0)",
    "transpose(0, 1)",
    "unsqueeze(0)",
    "view(-1)",
    "reshape(4)",
    "flatten()",
    "unflatten(1, (2, 1))",
    "expand(2, 2)",
    "broadcast_to((2, 2))",
    "unsqueeze(0).squeeze(0)",
    "chunk(1, 0)[0]",
]


@pytest.mark.parametrize("op", _VIEWS)
def test_a_value_written_into_a_view_reaches_the_source(op: str) -> None:
    """A shape op that views each element once (as torch's view of a tensor) gives a
    node whose writes reach the source's values, as the peer's view holds its members
    (fz22h: ``expand(2)`` of a stack, then ``update_``, left the stack as it was)."""
    source = _value_rows()
    eval(f"source.{op}").update_({"s": "Z"})
    assert source["s"].tolist() == [["Z", "Z"], ["Z", "Z"]]


@pytest.mark.parametrize(
    ("op", "rows"),
    [
        ("narrow(0, 0, 1)", [["Z", "Z"], ["r", "t"]]),
        ("split(1, 0)[0]", [["Z", "Z"], ["r", "t"]]),
        ("unbind(1)[0]", [["Z", "q"], ["Z", "t"]]),
    ],
)
def test_a_value_written_into_a_part_reaches_its_rows(op: str, rows: list[list[str]]) -> None:
    source = _value_rows()
    eval(f"source.{op}").update_({"s": "Z"})
    assert source["s"].tolist() == rows


@pytest.mark.parametrize(
    "op", ["expand(1, 2, 2)", "broadcast_to((1, 2, 2))", "flip(0)", "roll(1, 0)", "repeat(1, 1)"]
)
def test_a_value_written_into_a_copy_of_the_elements_leaves_the_source(op: str) -> None:
    """Ops that repeat or pick elements anew, and an ``expand`` to new dims (the peer
    builds new members there), give values of their own."""
    source = _value_rows()
    eval(f"source.{op}").update_({"s": "Z"})
    assert source["s"].tolist() == [["p", "q"], ["r", "t"]]


def _strings_and_zeros() -> TensorDict:
    return TensorDict(a=torch.zeros(2), s=NonTensorStack("p", "q"), batch_size=[2])


@pytest.mark.parametrize(
    ("write", "strings", "numbers"),
    [
        (
            lambda td: td[0:2].__setitem__(0, TensorDict(a=torch.ones(()), s="w")),
            ["w", "q"],
            [1, 0],
        ),
        (lambda td: td[0:2].__setitem__(1, {"a": torch.ones(()), "s": "w"}), ["p", "w"], [0, 1]),
        (
            lambda td: td.unsqueeze(0)[0].__setitem__(0, TensorDict(a=torch.ones(()), s="w")),
            ["w", "q"],
            [1, 0],
        ),
        (
            lambda td: td.unsqueeze(0).__setitem__((0, 1), TensorDict(a=torch.ones(()), s="w")),
            ["p", "w"],
            [0, 1],
        ),
        (
            lambda td: td.expand(2).__setitem__(0, TensorDict(a=torch.ones(()), s="w")),
            ["w", "q"],
            [1, 0],
        ),
    ],
    ids=["slice-row", "slice-row-dict", "unsqueeze-row", "unsqueeze-tuple", "expand-row"],
)
def test_a_row_written_into_a_view_reaches_the_source_values(
    write: Any, strings: list[str], numbers: list[int]
) -> None:
    # As the peer's shared value nodes: the Python value written into a view's row
    # reaches the source along with the tensor (it was left behind: fz22h's report).
    td = _strings_and_zeros()
    write(td)
    assert td["a"].tolist() == numbers
    assert list(td["s"]) == strings


@pytest.mark.parametrize(
    "held", [np.array(["", "a"], dtype=object), np.array([1.0, 2.0]), float("nan")]
)
def test_the_value_held_written_back_over_a_selection_with_dims_is_kept(held: Any) -> None:
    """The peer's write compares the lists of the selection's values, whose items compare
    by identity first: the very object held written back over a selection with dims
    (``x[::3, 6] = x[::3, 6]``) leaves one value, even an array or ``nan``; at one element
    (no dims) the value itself is compared, which an array or ``nan`` counts a change."""
    td = TensorDict({"a": torch.zeros(1, 7)}, batch_size=[1, 7])
    td.set_non_tensor("s", held)
    for index in [(slice(None, None, 3), 6), (0, slice(1, 3)), (slice(None), 2)]:
        td[index] = td[index]
        assert type(td.get("s")) is NonTensorData and td.get("s").data is held
    td[0, 2] = td[0, 2]
    assert type(td.get("s")) is NonTensorStack
    assert td.get("s").tolist()[0][2] is held
    other = TensorDict({"a": torch.zeros(1, 7)}, batch_size=[1, 7])
    other.set_non_tensor("s", held)
    other[0, 1:3] = {"s": NonTensorData(copy_of(held), batch_size=[2])}
    assert type(other.get("s")) is NonTensorStack  # another array: a change


def copy_of(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else float("nan")
