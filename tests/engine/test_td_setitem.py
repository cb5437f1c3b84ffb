"""Indexed writes (``td[idx] = value``): what ``_engine/_td_setitem.py`` and the lazy
stack's ``write_lazy`` check before writing."""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, TensorDict
from tclass.errors import BatchSizeError

# Indices of a [2, 3] batch, and what torch selects with each from a tensor of that shape.
INDICES: list[Any] = [None, ..., 0, slice(None), (None, 0), (..., None), (None, ...), [1, 0]]


def _dense() -> TensorDict:
    return TensorDict({"a": torch.arange(6.0).reshape(2, 3)}, batch_size=[2, 3])


def _lazy() -> LazyStackedTensorDict:
    members = [TensorDict({"a": torch.arange(3.0) + 3 * i}, batch_size=[3]) for i in range(2)]
    return tclass.lazy_stack(members)


def _torch_accepts(index: Any, shape: list[int]) -> bool:
    try:
        torch.zeros(2, 3)[index] = torch.zeros(shape)  # the batch as a tensor's shape
    except RuntimeError:
        return False
    return True


@pytest.mark.parametrize("make", [_dense, _lazy])
@pytest.mark.parametrize("index", INDICES)
@pytest.mark.parametrize("shape", [[5], [2], [0], [4, 3], [3], [1], [], [1, 3]])
def test_a_collection_without_entries_is_checked_as_a_tensor_without_elements(
    make: Any, index: Any, shape: list[int]
) -> None:
    """An empty collection writes nothing, but its batch size must broadcast to the indexed
    batch as a tensor of that shape must (torch checks shapes, not elements; the peer
    checks it only at a ``None`` index and for lazy stacks); nothing changes either way."""
    td = make()
    before = td["a"].clone()
    if _torch_accepts(index, shape):
        td[index] = TensorDict({}, batch_size=shape)
    else:
        with pytest.raises(BatchSizeError, match="without entries writes nothing") as caught:
            td[index] = TensorDict({}, batch_size=shape)
        assert isinstance(caught.value, RuntimeError)  # as the peer raises at None
        assert f"the source's batch size {shape} does not broadcast" in str(caught.value)
    assert torch.equal(td["a"], before)


@pytest.mark.parametrize("make", [_dense, _lazy])
@pytest.mark.parametrize("index", INDICES)
@pytest.mark.parametrize("shape", [[5], [2], [0], [3], [1], [], [1, 3]])
def test_a_collection_of_empty_nested_ones_is_checked_as_one_without_entries(
    make: Any, index: Any, shape: list[int]
) -> None:
    """A source whose entries are only nested collections without entries writes nothing
    either, and its batch size is checked all the same (it passed unchecked into a
    TensorDict: ``td[None] = TensorDict({"m": {}}, [0, 2, 4])`` for batch ``[3, 3, 1, 4]``,
    program 11,400,270 of the six families ``--length 6``, where the peer raises)."""
    td = make()
    td["m"] = TensorDict({"k": {}}, batch_size=[2, 3])
    before = td["a"].clone()
    source = TensorDict({"m": {"k": {}}}, batch_size=shape)
    if _torch_accepts(index, shape):
        td[index] = source
    else:
        with pytest.raises(BatchSizeError, match="without entries writes nothing") as caught:
            td[index] = source
        assert isinstance(caught.value, RuntimeError)  # as the peer raises at None
        assert f"the source's batch size {shape} does not broadcast" in str(caught.value)
    assert torch.equal(td["a"], before)
    assert td["m"].batch_size == (2, 3) and td["m", "k"].batch_size == (2, 3)


def test_a_destination_without_entries_checks_the_source_too() -> None:
    td = TensorDict({}, batch_size=[4])
    with pytest.raises(BatchSizeError, match=r"destination TensorDict batch size is \[1, 4\]"):
        td[None] = td[::3].clone()  # batch [2] into [1, 4]
    td[None] = td[::4].clone()  # [1] broadcasts
    td[1:3] = TensorDict({}, batch_size=[2])


def test_empty_sources_that_broadcast_and_empty_mappings_write_nothing() -> None:
    td = _dense()
    td[0] = {}  # a mapping has no batch size of its own
    td[..., None] = TensorDict({}, batch_size=[2, 3, 1])
    td[torch.tensor([True, False])] = TensorDict({}, batch_size=[1, 3])
    assert torch.equal(td["a"], torch.arange(6.0).reshape(2, 3))


def test_a_source_with_entries_keeps_its_checks() -> None:
    """With entries, the write is checked through them, as before (a leaf that fits the
    selection is written, as the peer writes it)."""
    td = _dense()
    td[...] = TensorDict({"a": torch.ones(2, 3)}, batch_size=[2])
    assert (td["a"] == 1).all()
    with pytest.raises(BatchSizeError, match="does not broadcast to it"):
        td[0] = TensorDict({"a": torch.ones(2, 3)}, batch_size=[2])


def test_only_the_value_written_is_checked_not_its_empty_parts() -> None:
    """A nested collection without entries inside the value writes nothing and is not
    checked: a dict's nested ``{}`` has no batch size of its own (it is read at the
    parent's, which need not be the nested node's), as in the peer."""
    td = TensorDict(
        {"c": torch.zeros(4, 2), "n": TensorDict({"e": TensorDict({}, [4, 2, 1])}, [4, 2, 1])},
        batch_size=[4, 2],
    )
    td[:2] = td[:2].to_dict()  # "e" comes back as {}: read at batch size [2, 2]
    td[0] = TensorDict({"n": TensorDict({}, batch_size=[2, 5])}, batch_size=[2])
    assert td["n", "e"].batch_size == (4, 2, 1) and (td["c"] == 0).all()


@pytest.mark.parametrize("index", INDICES)
@pytest.mark.parametrize("shape", [[0], [4], [2], [3], [1, 2, 3], []])
def test_python_values_are_checked_as_a_tensor_of_their_batch_size(
    index: Any, shape: list[int]
) -> None:
    """A collection holding one Python value is written where its batch size broadcasts to
    the selection as a tensor's shape would, and refused elsewhere at every index (the
    peer writes the value at an integer index, even one read from no element)."""
    td = TensorDict({"s": "old", "a": torch.zeros(2, 3)}, batch_size=[2, 3])
    source = TensorDict({"s": "new"}, batch_size=shape)
    if _torch_accepts(index, shape):
        td[index] = source
        assert "new" in str(td["s"])
    else:
        with pytest.raises(
            ValueError, match=re.escape(f"source's batch size {shape} does not")
        ) as caught:
            td[index] = source
        assert isinstance(caught.value, RuntimeError)  # as the peer raises at `...`
        assert td["s"] == "old"


@pytest.mark.parametrize("index", INDICES)
@pytest.mark.parametrize("shape", [[0], [4], [2], [3], [1, 2, 3], [2, 1], [3, 1], []])
def test_the_same_python_value_is_checked_too(index: Any, shape: list[int]) -> None:
    """A source holding the value the destination already holds changes nothing, but its
    batch size is checked as a tensor's shape is all the same (``td[None] = td[:, 1]``
    over ``[2, 3]`` is refused, as torch refuses it for a tensor and the peer for the
    value), with entries or without."""
    for entries in ({"s": "old"}, {"s": "old", "n": TensorDict({"t": "v"}, [2, 3])}):
        td = TensorDict(entries, batch_size=[2, 3])
        source = TensorDict(
            {"s": "old", **({"n": TensorDict({"t": "v"}, shape)} if "n" in entries else {})},
            batch_size=shape,
        )
        if _torch_accepts(index, shape):
            td[index] = source
        else:
            with pytest.raises(
                BatchSizeError, match=re.escape(f"batch size {shape} does not")
            ) as caught:
                td[index] = source
            assert isinstance(caught.value, RuntimeError)
        assert td[0, 0]["s"] == "old" and td[1, 2]["s"] == "old"


@pytest.mark.parametrize(
    "index",
    [(0, 0, 3), (torch.tensor([], dtype=torch.long), torch.tensor([0, 1, 2])), (5,), (0, 0, 0, 0)],
)
@pytest.mark.parametrize("entries", [{}, {"s": "a"}])
def test_an_index_is_checked_where_nothing_is_written(index: Any, entries: dict[str, Any]) -> None:
    """A write that changes nothing (no entries, or Python values only under a number)
    still refuses an index torch refuses for a tensor of the batch size, as the peer."""
    td = TensorDict(entries, batch_size=[1, 3, 3])
    with pytest.raises(IndexError):
        torch.zeros(1, 3, 3)[index] = 0  # torch's own refusal, for reference
    with pytest.raises(IndexError):
        td[index] = TensorDict({}, batch_size=[])
    with pytest.raises(IndexError):
        td[index] = 0
    td[0, 0, 2] = 0  # an index that fits writes (nothing)
    assert td.batch_size == (1, 3, 3)


def test_rows_over_the_own_mask_are_read_first_and_a_mismatch_is_named() -> None:
    """``td[td["done"]] = rows`` whose rows share memory with the mask: the mask and the
    rows are read before anything is written (the peer raises torch's overlap error),
    so every entry gets the rows the mask selected at the call; a real shape mismatch is
    still called one."""
    td = TensorDict(
        {"r": torch.arange(5.0), "done": torch.tensor([0, 0, 1, 0, 1], dtype=torch.bool)}, [5]
    )
    rows = TensorDict({"r": torch.zeros(2), "done": td["done"][:2]}, [2])
    td[td["done"]] = rows
    assert td["r"].tolist() == [0.0, 1.0, 0.0, 3.0, 0.0] and not td["done"].any()
    td["done"] = torch.tensor([0, 0, 1, 0, 1], dtype=torch.bool)
    with pytest.raises(BatchSizeError, match="mismatch"):
        td[td["done"].clone()] = TensorDict({"r": torch.zeros(3)}, [3])  # a real mismatch
    with pytest.raises(BatchSizeError, match=r"shape mismatch: .* shape \[3\] .* 'r'"):
        td[td["done"].clone()] = torch.zeros(3)


def test_rows_that_share_memory_with_the_destination_are_read_before_written() -> None:
    """``td[mask] = rows`` where an entry of ``rows`` is a view of the entry it goes into
    (``td[:2]``): torch refuses that overlap at the entry it meets it, after the entries
    before it were written (the peer leaves them so); tclass copies such rows first, so
    every entry is written, with the values the rows held before the write."""
    td = TensorDict(a=torch.arange(4.0), b=torch.arange(4.0) * 10, c=torch.zeros(4), batch_size=[4])
    rows = TensorDict(a=torch.full((2,), -1.0), b=td["b"][:2], c=torch.ones(2), batch_size=[2])
    td[td["a"] > 1] = rows
    assert td["a"].tolist() == [0.0, 1.0, -1.0, -1.0]
    assert td["b"].tolist() == [0.0, 10.0, 0.0, 10.0]
    assert td["c"].tolist() == [0.0, 0.0, 1.0, 1.0]
    whole = TensorDict(a=torch.arange(4.0), batch_size=[4])
    whole[torch.tensor([1, 2, 3])] = whole[:3]  # overlapping slices: shifted as a copy would be
    assert whole["a"].tolist() == [0.0, 0.0, 1.0, 2.0]


def test_an_expanded_entry_takes_its_own_selection_back() -> None:
    """``td[index] = td[index]`` (or its ``to_dict()``) of an expanded collection: each
    entry is the very memory it goes into, which torch's copy leaves as it is (the peer
    writes it so), where a copy of it, taken as for overlapping rows, is refused by torch
    (its elements share memory); a different row there is still refused, as by torch."""
    td = TensorDict({"a": torch.arange(3.0)[:, None], "n": {"w": torch.ones(3, 1)}}, [3, 1])
    td = td.expand(2, 3, 4).permute(1, 0, 2)
    td[...] = td[...].to_dict()
    td[...] = td[...]
    td[0] = td[0]
    td[:, 0] = td[:, 0].to_dict()
    assert td["a"][:, 0, 0].tolist() == [0.0, 1.0, 2.0] and bool((td["n", "w"] == 1).all())
    with pytest.raises(tclass.errors.InPlaceWriteError, match="single memory location"):
        td[0] = td[1]


# A bare list index is one advanced index, as the peer reads it (`td[lst]` is
# `td[(lst,)]`): a nested list selects rows in its own shape, never torch's deprecated
# reading of a bare nested list as one index per dim.
LIST_INDICES: list[tuple[Any, list[int]]] = [
    ([[0, 1]], [1, 2, 2]),
    ([[0, 1], [1, 0]], [2, 2, 2]),
    ([[0, 1], [1, 0], [0, 0]], [3, 2, 2]),
    ([[[0, 1]]], [1, 1, 2, 2]),
    ([0, 1], [2, 2]),
    ([True, False, True], [2, 2]),
]


@pytest.mark.parametrize(("index", "batch"), LIST_INDICES)
def test_a_nested_list_index_is_one_advanced_index_as_in_the_peer(
    index: Any, batch: list[int]
) -> None:
    base = torch.arange(6.0).reshape(3, 2)
    td = TensorDict({"a": base.clone(), "n": {"b": base.clone()}}, batch_size=[3, 2])
    rows = torch.tensor(index)
    assert td[index].batch_size == torch.Size(batch)
    assert torch.equal(td[index]["a"], base[(rows,)])
    assert torch.equal(td[index]["n", "b"], base[(rows,)])
    assert TensorDict({}, batch_size=[3, 2])[index].batch_size == torch.Size(batch)
    td[index] = TensorDict({"a": torch.full(batch, -1.0)}, batch_size=batch)
    expected = base.clone()
    expected[(rows,)] = -1.0
    assert torch.equal(td["a"], expected)


def test_a_nested_bool_list_index_is_refused_as_by_the_peer() -> None:
    td = TensorDict({"a": torch.zeros(3, 2)}, batch_size=[3, 2])
    with pytest.raises(IndexError):
        td[[[True, False, True]]]


# (fz29d: program 15,822,212 of features,index,shape,combine, --length 12: an object
# column of from_pandas, one numpy array for all rows, written back into its first row)
WRITTEN_BACK = {
    "an array": lambda: np.array(["s", "s", "s"], dtype=object),
    "nan": lambda: float("nan"),
    "a str": lambda: "s",
    "an array of one": lambda: np.array([5]),
    "an object": lambda: _Tag(),
}
# the peer asks whether `new != old`: an array's element-wise answer, or nan, is a change
STACKED = {"an array", "nan"}


class _Tag:
    """An object compared by identity."""


def _written_back(lib: Any, value: Any) -> Any:
    x = lib.TensorDict({"a": torch.zeros(3), "b": lib.NonTensorData(value, batch_size=[3])}, [3])
    x[0] = x[0].apply(torch.ones_like)
    return x


@pytest.mark.parametrize("name", list(WRITTEN_BACK))
def test_a_value_written_over_itself_stacks_where_it_is_not_equal(name: str) -> None:
    value = WRITTEN_BACK[name]()
    out = _written_back(tclass, value).get("b")
    assert type(out).__name__ == ("NonTensorStack" if name in STACKED else "NonTensorData")
    assert all(item is value for item in out.tolist()) if name in STACKED else out.data is value


@pytest.mark.peer
@pytest.mark.parametrize("name", list(WRITTEN_BACK))
def test_a_value_written_over_itself_as_the_peer(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peer = pytest.importorskip("tensordict")
        expected = type(_written_back(peer, WRITTEN_BACK[name]()).get("b")).__name__
    assert type(_written_back(tclass, WRITTEN_BACK[name]()).get("b")).__name__ == expected


@pytest.mark.parametrize("saved", [False, True])
def test_a_new_value_stack_written_at_rows_leaves_none_in_the_others(
    saved: bool, tmp_path: Any
) -> None:
    # values that differ per element are not repeated into rows nobody wrote (as
    # tensordict: None there); one value for all elements fills every row
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    if saved:
        td = td.memmap_(tmp_path).unlock_()
    td[0:2] = TensorDict(a=torch.ones(2), s=tclass.NonTensorStack("p", "q"), batch_size=[2])
    assert td.get("s").tolist() == ["p", "q", None]
    if saved:
        assert TensorDict.load_memmap(tmp_path).get("s").tolist() == ["p", "q", None]
    td[0:2] = TensorDict(
        a=torch.ones(2), one=tclass.NonTensorData("v", batch_size=[2]), batch_size=[2]
    )
    assert td.get("one").tolist() == ["v", "v", "v"]


def test_a_new_value_stack_written_at_a_column_leaves_none_in_the_other_elements() -> None:
    td = TensorDict(a=torch.zeros(3, 2), batch_size=[3, 2])
    td[0:2, 0] = TensorDict(a=torch.ones(2), s=tclass.NonTensorStack("p", "p"), batch_size=[2])
    assert td.get("s").tolist() == [["p", None], ["p", None], [None, None]]


def test_a_record_field_set_at_rows_first_holds_none_in_the_others() -> None:
    @tclass.tensorclass
    class Rec:
        x: torch.Tensor
        n: int | None = None

    rec = Rec(x=torch.zeros(3), batch_size=[3])
    rec[0:2] = Rec(x=torch.ones(2), n=[1, 2], batch_size=[2])
    assert list(rec.n) == [1, 2, None]
