"""``td[index] = dict_or_collection`` is all or nothing: every entry's part is checked
(``_engine/_part_checks.py``, shared with the lazy stack's writes) before any entry is
written, so that a part one entry refuses leaves the TensorDict as it was (the peer
writes the entries before the refused one)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import TensorDict, lazy_stack, tensorclass
from tclass.errors import BatchSizeError, InPlaceWriteError, LockedError, TclassError


@tensorclass
class _Pair:
    a: torch.Tensor
    b: torch.Tensor


def _td() -> TensorDict:
    nested = TensorDict(x=torch.zeros(3, 4), batch_size=[3])
    return TensorDict(
        a=torch.zeros(3, 2),
        b=torch.zeros(3, 5),
        i=torch.zeros(3, dtype=torch.long),
        n=nested,
        batch_size=[3],
    )


def _snapshot(td: TensorDict) -> dict[Any, torch.Tensor]:
    return {key: td.get(key).clone() for key in td.keys(True, True)}


def _assert_unchanged(td: TensorDict, before: dict[Any, torch.Tensor]) -> None:
    assert set(td.keys(True, True)) == set(before)
    for key, value in before.items():
        assert torch.equal(td.get(key), value), key


_SRC = TensorDict(a=torch.ones(3, 2), b=torch.ones(3, 2), batch_size=[3])

# (id, value, index, the message's "shape [value] into <key> ... (shape [entry])")
REFUSED: list[tuple[str, Callable[[], Any], Any, str]] = [
    ("dict", lambda: {"a": torch.ones(2), "b": torch.ones(2)}, 1, "[2] into 'b'.*[3, 5]"),
    ("td", lambda: _SRC[1], 1, "[2] into 'b'.*[3, 5]"),
    (
        "record",
        lambda: _Pair(a=torch.ones(2), b=torch.ones(2), batch_size=[]),
        1,
        "[2] into 'b'.*[3, 5]",
    ),
    (
        "slice",
        lambda: {"a": torch.ones(2, 2), "b": torch.ones(2, 2)},
        slice(0, 2),
        "[2, 2] into 'b'.*[3, 5]",
    ),
    (
        "nested key",
        lambda: {"a": torch.ones(2), ("n", "x"): torch.ones(3)},
        1,
        "[3] into ('n', 'x').*[3, 4]",
    ),
    (
        "nested dict",
        lambda: {"a": torch.ones(2), "n": {"x": torch.ones(3)}},
        1,
        "[3] into ('n', 'x').*[3, 4]",
    ),
    (
        "nested td",
        lambda: {"a": torch.ones(2), "n": TensorDict(x=torch.ones(3))},
        1,
        "[3] into ('n', 'x').*[3, 4]",
    ),
]


@pytest.mark.parametrize(
    ("value", "index", "shapes"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED]
)
def test_a_part_of_a_shape_its_entry_refuses_writes_nothing(
    value: Callable[[], Any], index: Any, shapes: str
) -> None:
    td = _td()
    before = _snapshot(td)
    pattern = "shape " + re.escape(shapes).replace(r"\.\*", ".*")
    with pytest.raises(BatchSizeError, match="nothing was written") as info:
        td[index] = value()
    assert isinstance(info.value, RuntimeError)  # as torch's and the peer's
    assert re.search(pattern, str(info.value)), str(info.value)
    _assert_unchanged(td, before)


def test_a_dtype_an_advanced_index_refuses_writes_nothing() -> None:
    td = _td()
    before = _snapshot(td)
    value = {"a": torch.ones(2, 2), "i": torch.ones(2, dtype=torch.float64)}
    with pytest.raises(InPlaceWriteError, match=r"'i' \(torch.int64, shape \[3\]\)"):
        td[[0, 1]] = value
    _assert_unchanged(td, before)
    td[0:2] = value  # a basic index casts, as torch's
    assert td["i"].tolist() == [1, 1, 0] and td["a"][:2].eq(1).all()


def test_a_new_key_in_a_locked_node_writes_nothing() -> None:
    td = _td().lock_()
    before = _snapshot(td)
    with pytest.raises(LockedError, match="cannot add 'new'.*nothing was written"):
        td[1] = {"a": torch.ones(2), "new": torch.ones(())}
    _assert_unchanged(td, before)
    td = _td()
    td.get("n").lock_()
    before = _snapshot(td)
    with pytest.raises(LockedError, match=r"cannot add \('n', 'y'\) to 'n' of the TensorDict"):
        td[1] = {"a": torch.ones(2), ("n", "y"): torch.ones(())}
    _assert_unchanged(td, before)
    td[1] = {"a": torch.ones(2), ("n", "x"): torch.ones(4)}  # the keys it holds: written
    assert td["a"][1].eq(1).all() and td["n", "x"][1].eq(1).all()


def test_a_memory_mapped_td_and_its_files_are_left_as_they_were(tmp_path: Path) -> None:
    td = _td().memmap_(tmp_path)
    before = _snapshot(td)
    with pytest.raises(BatchSizeError, match="'b'"):
        td[1] = {"a": torch.ones(2), "b": torch.ones(2)}
    _assert_unchanged(td, before)
    _assert_unchanged(TensorDict.load_memmap(tmp_path), before)


def test_parts_that_broadcast_are_written() -> None:
    td = _td()
    nested = TensorDict(x=torch.ones(1, 4), batch_size=[1])
    one = TensorDict(a=torch.ones(1, 2), b=torch.full((1, 5), 2.0), n=nested, batch_size=[1])
    td[0:2] = one  # batch [1] broadcast to the two rows, as torch's
    assert td["a"].sum() == 4 and td["b"].sum() == 20 and td["n", "x"].sum() == 8
    td[2] = {"a": torch.full((1, 2), 3.0), ("n", "x"): torch.ones(4)}  # leading 1 dropped
    assert td["a"][2].tolist() == [3.0, 3.0] and td["n", "x"][2].eq(1).all()
    td[torch.tensor([2])] = _td()[0:1]  # an advanced index, dtypes alike
    assert td["a"][2].eq(0).all() and td["i"][2] == 0
    with pytest.raises(TclassError):
        td[5] = {"a": torch.ones(2)}  # out of range: reported by the write


@pytest.mark.parametrize("index", [0, slice(0, 2), torch.tensor([2, 0])])
def test_a_number_an_entrys_dtype_refuses_writes_no_entry(index: Any) -> None:
    # torch refuses 300 in int8; it was refused after "a" was written (inv21a). The peer
    # writes it wrapped (44): tclass follows torch's rule, all or nothing
    td = TensorDict(
        a=torch.zeros(3),
        b=torch.zeros(3, dtype=torch.int8),
        n={"c": torch.zeros(3)},
        batch_size=[3],
    )
    td["n", "i"] = torch.zeros(3, dtype=torch.uint8)
    for part in ({"a": 1.0, "b": 300}, {"a": 1.0, "n": {"c": 2.0, "i": -1.0e9}}):
        with pytest.raises(InPlaceWriteError, match="nothing was written") as info:
            td[index] = part
        assert isinstance(info.value, RuntimeError)
        assert not td["a"].any() and not td["n", "c"].any()
    td[index] = {"a": 1.0, "b": 100, "n": {"i": -1}}  # what torch takes (uint8 wraps -1)
    assert td["b"][0].item() == 100 and td["n", "i"][0].item() == 255


_UPDATES: dict[str, Callable[[TensorDict], object]] = {
    "update_at_": lambda td: td.update_at_({"a": torch.ones(2), "b": torch.ones(4)}, 1),
    "update_at_ nested": lambda td: td.update_at_(
        {"a": torch.ones(2), "n": {"x": torch.ones(5)}}, 1
    ),
    "update_ ": lambda td: td.update_({"a": torch.ones(3, 2), "b": torch.ones(4)}),
    "update inplace": lambda td: td.update(
        {"a": torch.ones(3, 2), "b": torch.ones(4)}, inplace=True
    ),
    "update inplace locked": lambda td: td.lock_().update(
        {"a": torch.ones(3, 2), "b": torch.ones(4)}, inplace=True
    ),
}


@pytest.mark.parametrize("write", list(_UPDATES.values()), ids=list(_UPDATES))
def test_update_of_several_entries_refused_writes_nothing(
    write: Callable[[TensorDict], object],
) -> None:
    # the peer writes "a" before it refuses "b" (a RuntimeError); tclass refuses it whole
    td = _td()
    before = _snapshot(td)
    with pytest.raises(BatchSizeError, match="'b'|'x'") as info:
        write(td)
    assert isinstance(info.value, RuntimeError)
    assert all(torch.equal(td.get(k), v) for k, v in before.items())


def test_update_of_several_entries_that_fit_is_written() -> None:
    td = _td()
    td.update_at_({"a": torch.ones(2), "b": torch.full((5,), 2.0), "n": {"x": 3.0}}, 1)
    td.update_({"i": torch.arange(3), "a": torch.ones(2)})  # broadcast, as set_
    assert td["a"].sum().item() == 6.0 and td["b"][1].tolist() == [2.0] * 5
    assert td["n", "x"][1].tolist() == [3.0] * 4 and td["i"].tolist() == [0, 1, 2]
    td.update({"a": torch.zeros(3, 2), "i": torch.ones(3, dtype=torch.long)}, inplace=True)
    assert td["a"].sum().item() == 0.0 and td["i"].tolist() == [1, 1, 1]


@pytest.mark.parametrize("kind", ["record", "memmap"])
def test_update_at_of_a_record_or_a_memmap_refused_writes_nothing(
    kind: str, tmp_path: Path
) -> None:
    # through the TensorDict they store (the peer writes "a" first)
    plain = TensorDict(a=torch.zeros(3, 2), b=torch.zeros(3, 5), batch_size=[3])
    held: Any = _Pair.from_tensordict(plain) if kind == "record" else plain.memmap_(tmp_path)
    for write in (
        lambda: held.update_at_({"a": torch.ones(2), "b": torch.ones(4)}, 1),
        lambda: held.update_({"a": torch.ones(3, 2), "b": torch.ones(4)}),
    ):
        with pytest.raises(BatchSizeError, match="'b'"):
            write()
        assert held.get("a").sum().item() == 0.0


def test_set_at_of_a_nested_collection_names_the_entry_that_refuses() -> None:
    # the message said "a value of shape [] into ... the entry of shape [4]" (the dict's
    # and "n"'s shapes); the peer refuses the dict with a batch-size error
    td = TensorDict({"n": {"x": torch.zeros(4), "z": torch.zeros(4, 3)}}, [4])
    bad = {"x": torch.ones(()), "z": torch.ones(5)}
    for value in (bad, TensorDict(bad)):
        with pytest.raises(BatchSizeError, match=re.escape("('n', 'z')")) as info:
            td.set_at_("n", value, 1)
        assert "shape [5]" in str(info.value) and "[4, 3]" in str(info.value)
        assert isinstance(info.value, RuntimeError)
    assert td["n", "x"].sum().item() == 0.0 and td["n", "z"].sum().item() == 0.0
    td.set_at_("n", {"x": torch.ones(()), "z": torch.ones(3)}, 1)
    td.set_at_("n", {"z": torch.full((2, 3), 2.0)}, (..., slice(2, 4)))
    assert td["n", "x"].tolist() == [0.0, 1.0, 0.0, 0.0]
    assert td["n", "z"].sum(-1).tolist() == [0.0, 3.0, 6.0, 6.0]


@tensorclass
class _Nested:
    n: TensorDict


_AT = {"ellipsis": (..., [4]), "last": ((..., 1), []), "first": ((1, ...), [])}


@pytest.mark.parametrize("kind", ["td", "lazy", "record"])
@pytest.mark.parametrize("at", sorted(_AT))
def test_set_at_of_a_nested_collection_at_an_ellipsis_names_the_entry_that_refuses(
    kind: str, at: str
) -> None:
    # under ... the leaves were not checked: the message was the dict's and "n"'s shapes
    # ("a value of shape [] into elements Ellipsis of the entry of shape [4]")
    def make() -> TensorDict:
        return TensorDict({"n": {"x": torch.zeros(4), "z": torch.zeros(4, 3)}}, [4])

    held: Any = {
        "td": make(),
        "lazy": lazy_stack(list(make().unbind(0))),
        "record": _Nested.from_tensordict(make()),
    }[kind]
    index, rows = _AT[at]
    bad = {"x": torch.ones(rows), "z": torch.ones(*rows, 5)}
    for value in (bad, TensorDict(bad, rows)):
        with pytest.raises(BatchSizeError, match=re.escape("('n', 'z')")) as info:
            held.set_at_("n", value, index)
        assert "5]" in str(info.value) and "3]" in str(info.value)
        assert isinstance(info.value, RuntimeError)
        assert "value of shape []" not in str(info.value)
    assert held.get(("n", "x")).sum().item() == 0.0
    assert held.get(("n", "z")).sum().item() == 0.0
    held.set_at_("n", {"x": torch.ones(rows), "z": torch.full((*rows, 3), 2.0)}, index)
    assert held.get(("n", "x")).sum().item() == (4.0 if rows else 1.0)
    assert held.get(("n", "z")).sum().item() == (24.0 if rows else 6.0)


def test_a_nested_dict_refused_as_its_td_reads_it_writes_nothing() -> None:
    # The nested dict is read at the nested TensorDict's batch size (its list becomes a
    # tensor there) and checked while the row write is planned, before "a" is written;
    # the message names the nested entry as its own write does (issue 27, lo26b).
    td = _td()
    before = _snapshot(td)
    with pytest.raises(BatchSizeError, match="into 'n' .*shape \\[2\\] into 'x'") as info:
        td[1] = {"a": torch.ones(2), "n": {"x": [1.0, 2.0]}}
    assert "nothing was written" in str(info.value)
    _assert_unchanged(td, before)
    td[1] = {"a": torch.ones(2), "n": {"x": [1.0, 2.0, 3.0, 4.0]}}
    assert td["a"][1].tolist() == [1.0, 1.0] and td["n", "x"][1].tolist() == [1, 2, 3, 4]


def test_a_lazy_stack_update_one_member_refuses_in_place_writes_no_member() -> None:
    # Each TensorDict member's in-place check runs while the stack's update is planned,
    # before member 0 is written (issue 27, lo26b).
    members = [TensorDict(a=torch.zeros(()), b=torch.zeros(n)) for n in (2, 3)]
    stack = lazy_stack(members)
    source = lazy_stack([TensorDict(a=torch.ones(()), b=torch.ones(2)) for _ in range(2)])
    with pytest.raises(BatchSizeError, match="shape \\[2\\] into 'b'.*nothing was written"):
        stack.update(source, inplace=True)
    assert [m["a"].item() for m in members] == [0.0, 0.0]
    assert [m["b"].tolist() for m in members] == [[0.0, 0.0], [0.0, 0.0, 0.0]]
    source = lazy_stack([TensorDict(a=torch.ones(()), b=torch.ones(n)) for n in (2, 3)])
    stack.update(source, inplace=True)
    assert [m["b"].tolist() for m in members] == [[1.0, 1.0], [1.0, 1.0, 1.0]]
