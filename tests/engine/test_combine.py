"""Tests for tclass/_combine.py: ``merge_tensordicts``, ``expand_as_right``,
``expand_right``, ``isin`` and ``remove_duplicates``, checked by hand and against the peer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import (
    NonTensorData,
    TensorClass,
    TensorDict,
    errors,
    expand_as_right,
    expand_right,
    isin,
    merge_tensordicts,
    remove_duplicates,
)

from strategies import SETTINGS  # noqa: E402


class Row(TensorClass):
    x: torch.Tensor
    y: torch.Tensor


class Outer(TensorClass):
    row: Row
    label: str


def _a() -> TensorDict:
    return TensorDict(
        {"x": torch.zeros(3), "n": {"p": torch.zeros(3)}, "s": NonTensorData("a", [3])}, [3]
    )


def _b() -> TensorDict:
    return TensorDict({"y": torch.ones(3, 2), "x": torch.ones(3), "n": {"q": torch.ones(3)},
                       "s": NonTensorData("b", [3])}, [3])  # fmt: skip


# --- merge_tensordicts --------------------------------------------------------------------


class TestMerge:
    def test_union_first_wins(self) -> None:
        a, b = _a(), _b()
        merged = merge_tensordicts(a, b)
        assert (
            set(merged.keys(True, True)) == {"x", "y", ("n", "p"), ("n", "q")}
            and "s" in merged.keys()
        )
        assert merged["x"] is a["x"] and merged["y"] is b["y"] and merged.get("s").data == "a"
        assert merged.batch_size == torch.Size([3])

    def test_first_inputs_names_kept(self) -> None:
        """The result has the first input's names, as its batch size (a merged nested
        collection its first holder's); unnamed first, unnamed result (fz31b)."""
        named = TensorDict({"a": torch.zeros(3, 2), "n": {"b": torch.zeros(3, 2, 4)}}, [3, 2])
        named.names = ["i", "j"]
        named["n"].batch_size = [3, 2, 4]
        named["n"].names = ["i", "j", "k"]
        other = TensorDict({"c": torch.ones(3, 2), "n": {"d": torch.ones(3, 2, 4)}}, [3, 2])
        merged = merge_tensordicts(named, other)
        assert merged.names == ["i", "j"] and merged["n"].names == ["i", "j", "k"]
        assert sorted(merged["n"].keys()) == ["b", "d"]
        assert merge_tensordicts(other, named).names == [None, None]
        lazy = tclass.lazy_stack([part.clone() for part in named.unbind(0)], 0)
        lazy.names = ["s", "j"]
        assert merge_tensordicts(lazy, other).names == ["s", "j"]

    def test_inputs_unchanged(self) -> None:
        a, b = _a(), _b()
        merge_tensordicts(a, b)
        assert set(a["n"].keys()) == {"p"} and set(b["n"].keys()) == {"q"}

    def test_nested_node_of_one_input_copied(self) -> None:
        """A nested collection only one input holds is a new node in the result (its
        leaves shared, unlocked): a key written into it does not reach the input (the
        result's node was the input's own, locked where it was; fz32c)."""
        node = TensorDict({"p": torch.zeros(3), "m": TensorDict({}, [3])}, [3])
        a = TensorDict({"n": node}, [3])
        a.lock_()
        merged = merge_tensordicts(a, TensorDict({"x": torch.ones(3)}, [3]))
        assert merged["n"] is not node and merged["n", "m"] is not node["m"]
        assert merged["n", "p"] is node["p"]
        assert not merged.is_locked and not merged["n"].is_locked
        assert not merged["n", "m"].is_locked
        merged["n", "q"] = torch.ones(3)
        merged["n", "m", "r"] = torch.ones(3)
        assert set(node.keys(True)) == {"p", "m"} and node["m"].is_empty()
        row = Row(torch.zeros(3), torch.ones(3), batch_size=[3])
        kept = merge_tensordicts(TensorDict({"r": row}, [3]))["r"]
        assert type(kept) is Row and kept is not row and kept.x is row.x

    def test_callback(self) -> None:
        merged = merge_tensordicts(_a(), _b(), _a(), callback_exist=lambda *values: values[-2])
        assert torch.equal(merged["x"], torch.ones(3))

    def test_callback_per_key(self) -> None:
        merged = merge_tensordicts(_a(), _b(), callback_exist={"x": lambda *v: v[0] + v[1] + 1})
        assert torch.equal(merged["x"], torch.full((3,), 2.0)) and merged.get("s").data == "a"

    def test_callback_only_for_tensors_every_input_holds(self) -> None:
        first = TensorDict({"common": 0, "c": {"e": 0}, "s": "a"})
        second = TensorDict({"common": 1, "f": {"h": 1}, "s": "b"})
        third = TensorDict({"common": 2, "f": {"h": 2}, "s": "c"})
        merged = merge_tensordicts(first, second, third, callback_exist=lambda *v: torch.stack(v))
        assert merged["common"].tolist() == [0, 1, 2]
        assert merged["f", "h"].tolist() == 1  # two of the three hold it: the first, as the peer
        assert merged["s"] == "a"  # Python values keep the first

    def test_single_input_is_a_shallow_copy(self) -> None:
        a = _a()
        merged = merge_tensordicts(a)
        assert merged is not a and merged["x"] is a["x"]

    def test_records_merge_with_other_kinds_into_a_tensordict(self) -> None:
        """An input that is no record of the first input's class: a TensorDict, whose
        entries no class checks (the peer's record refuses a key no field names, an
        ``AttributeError``, and takes a field's value of another type unchecked)."""
        row = Row(torch.zeros(2), torch.ones(2), batch_size=[2])
        merged = merge_tensordicts(row, TensorDict({"z": torch.ones(2)}, [2]))
        assert type(merged) is TensorDict and set(merged.keys()) == {"x", "y", "z"}
        merged = merge_tensordicts(row.exclude("x"), TensorDict({"x": "s"}, [2]))
        assert type(merged) is TensorDict and merged["x"] == "s"

    def test_records_of_one_class_merge_into_a_record(self) -> None:
        """The first input's kind, as the peer's: a record of its class where every key
        is a field, nested records too; leaves shared (og32a, program 16,491,036 L4)."""
        row = Row(torch.zeros(2), torch.ones(2), batch_size=[2])
        merged = merge_tensordicts(row.select("x"), row.exclude("x"))
        assert type(merged) is Row and merged.x is row.x and merged.y is row.y
        outer = Outer(row=row, label="a", batch_size=[2])
        merged = merge_tensordicts(outer.exclude(("row", "y")), outer.exclude(("row", "x")))
        assert type(merged) is Outer and type(merged.row) is Row and merged.label == "a"
        assert merged.row.x is row.x and merged.row.y is row.y
        merged = merge_tensordicts(TensorDict({"z": torch.ones(2)}, [2]), row)
        assert type(merged) is TensorDict and merged.get("z") is not None

    def test_lazy_stack_first_merges_member_by_member(self) -> None:
        """A lazy stack first: a lazy stack along its stack dim of its members merged
        with the other inputs' rows, the leaves shared, as the peer's (whose merge fails
        inside where the stack holds tensors; og32a, program 16,491,009 L4)."""
        members = [TensorDict({"a": torch.full((3,), float(i))}, [3]) for i in range(2)]
        lazy = tclass.lazy_stack(members, 1)
        other = TensorDict({"b": torch.arange(6.0).view(3, 2), "s": "v"}, [3, 2])
        merged = merge_tensordicts(lazy, other)
        assert isinstance(merged, tclass.LazyStackedTensorDict) and merged.stack_dim == 1
        assert merged.batch_size == torch.Size([3, 2])
        assert merged.tensordicts[1]["a"] is members[1]["a"]
        assert torch.equal(merged["b"], other["b"]) and merged.get("s").tolist()[0] == ["v"] * 2
        empty = tclass.lazy_stack([TensorDict({}, [3]), TensorDict({}, [3])], 1)
        assert isinstance(merge_tensordicts(empty, empty.clone()), tclass.LazyStackedTensorDict)
        with pytest.raises(errors.BatchMismatchError):
            merge_tensordicts(lazy, TensorDict({"z": torch.ones(3, 4)}, [3, 4]))

    def test_batch_mismatch(self) -> None:
        with pytest.raises(errors.BatchMismatchError) as info:
            merge_tensordicts(_a(), TensorDict({"z": torch.ones(4)}, [4]))
        assert info.value.key == "z"

    def test_nothing_to_merge(self) -> None:
        with pytest.raises(ValueError, match="at least one"):
            merge_tensordicts()

    def test_like_the_peer(self) -> None:
        peer = pytest.importorskip("tensordict")
        src_a = {"x": torch.zeros(3), "n": {"p": torch.zeros(3)}}
        src_b = {"y": torch.ones(3, 2), "x": torch.ones(3), "n": {"q": torch.ones(3)}}
        ours = merge_tensordicts(TensorDict(src_a, [3]), TensorDict(src_b, [3]))
        theirs = peer.merge_tensordicts(peer.TensorDict(src_a, [3]), peer.TensorDict(src_b, [3]))
        assert set(ours.keys(True, True)) == set(theirs.keys(True, True))
        for key in ours.keys(True, True):
            assert torch.equal(ours[key], theirs[key]), key


# --- expand_right / expand_as_right -------------------------------------------------------


class TestExpandRight:
    def test_tensor(self) -> None:
        out = expand_as_right(torch.arange(3), torch.zeros(3, 2))
        assert out.tolist() == [[0, 0], [1, 1], [2, 2]]
        assert expand_right(torch.zeros(3, 4), (3, 4, 5)).shape == (3, 4, 5)

    def test_is_a_view(self) -> None:
        x = torch.arange(3)
        assert expand_right(x, (3, 2)).data_ptr() == x.data_ptr()

    def test_size_one_dims_expand(self) -> None:
        assert expand_right(torch.zeros(1, 4), [3, 4, 2]).shape == (3, 4, 2)

    def test_collection_destination_uses_its_batch(self) -> None:
        dest = TensorDict({"a": torch.zeros(3, 2, 7)}, [3, 2])
        assert expand_as_right(torch.ones(3), dest).shape == (3, 2)

    def test_collection_is_expanded(self) -> None:
        td = TensorDict({"a": torch.arange(3)}, [3])
        out = expand_right(td, (3, 4))
        assert out.batch_size == torch.Size([3, 4]) and out["a"][:, 2].tolist() == [0, 1, 2]

    @pytest.mark.parametrize("shape", [(3,), (4, 2), (2, 3)])
    def test_errors(self, shape: tuple[int, ...]) -> None:
        with pytest.raises(errors.ShapeError, match="on the right"):
            expand_right(torch.zeros(3, 2), shape)

    def test_like_the_peer(self) -> None:
        utils = pytest.importorskip("tensordict.utils")
        x = torch.arange(6).reshape(3, 2)
        assert torch.equal(expand_right(x, (3, 2, 4, 5)), utils.expand_right(x, (3, 2, 4, 5)))


@SETTINGS
@given(st.lists(st.integers(1, 3), max_size=3), st.lists(st.integers(1, 3), max_size=2), st.data())
def test_expand_right_matches_unsqueeze_expand(
    lead: list[int], extra: list[int], data: st.DataObject
) -> None:
    mask = [data.draw(st.booleans()) for _ in lead]
    shape = [1 if keep_one else size for size, keep_one in zip(lead, mask)]
    x = (
        torch.arange(max(1, int(torch.tensor(shape).prod()))).reshape(shape)
        if shape
        else torch.tensor(5)
    )
    out = expand_right(x, lead + extra)
    assert out.shape == tuple(lead + extra)
    by_hand = x.reshape(tuple(shape) + (1,) * len(extra)).expand(tuple(lead + extra))
    assert torch.equal(out, by_hand)


# --- isin / remove_duplicates -------------------------------------------------------------


def _rows() -> TensorDict:
    x = torch.tensor([[1, 2], [3, 4], [1, 2], [5, 6]])
    return TensorDict({"x": x, "y": torch.arange(4), "n": {"z": torch.arange(4) * 10}}, [4])


class TestIsin:
    def test_rows(self) -> None:
        reference = TensorDict({"x": torch.tensor([[1, 2], [5, 6]])}, [2])
        assert isin(_rows(), reference, "x").tolist() == [True, False, True, True]

    def test_nested_key_and_dim(self) -> None:
        td = TensorDict({"n": {"v": torch.tensor([[1, 2, 1], [3, 4, 3]])}}, [2, 3])
        ref = TensorDict({"n": {"v": torch.tensor([[1], [3]])}}, [2, 1])
        assert isin(td, ref, ("n", "v"), dim=1).tolist() == [True, False, True]
        assert isin(td, ref, ("n", "v"), dim=-1).tolist() == [True, False, True]

    def test_record(self) -> None:
        row = Row(torch.tensor([1, 2, 3]), torch.zeros(3), batch_size=[3])
        ref = Row(torch.tensor([3]), torch.zeros(1), batch_size=[1])
        assert isin(row, ref, "x").tolist() == [False, False, True]

    def test_errors(self) -> None:
        ref = TensorDict({"x": torch.tensor([[1, 2]])}, [1])
        with pytest.raises(errors.KeyNotFoundError, match="'zz' not found in input.*missing"):
            isin(_rows(), ref, "zz")
        with pytest.raises(
            errors.KeyNotFoundError,
            match="'n' not found in input or not a tensor.*holds a TensorDict",
        ):
            isin(_rows(), TensorDict({"n": {}}, [1]), "n")
        with pytest.raises(errors.DimError, match=r"dimension '1' is invalid.*\[-1, 0\]"):
            isin(_rows(), ref, "x", dim=1)
        with pytest.raises(errors.DimError, match=r"must be the same: input.*\[4\].*\[1, 2\]"):
            isin(_rows(), TensorDict({"x": torch.zeros(1, 2)}, [1, 2]), "x")
        with pytest.raises(errors.ShapeError, match="only along dim 0"):
            isin(_rows(), TensorDict({"x": torch.zeros(1, 3)}, [1]), "x")

    def test_like_the_peer(self) -> None:
        utils = pytest.importorskip("tensordict.utils")
        peer = pytest.importorskip("tensordict")
        x = torch.randint(0, 3, (20, 2))
        ref = torch.randint(0, 3, (5, 2))
        ours = isin(TensorDict({"x": x}, [20]), TensorDict({"x": ref}, [5]), "x")
        theirs = utils.isin(peer.TensorDict({"x": x}, [20]), peer.TensorDict({"x": ref}, [5]), "x")
        assert torch.equal(ours, theirs)


@SETTINGS
@given(
    st.lists(st.integers(0, 4), min_size=1, max_size=12), st.lists(st.integers(0, 4), max_size=6)
)
def test_isin_matches_python(values: list[int], reference: list[int]) -> None:
    out = isin(
        TensorDict({"v": torch.tensor(values)}, [len(values)]),
        TensorDict({"v": torch.tensor(reference, dtype=torch.long)}, [len(reference)]),
        "v",
    )
    assert out.tolist() == [v in reference for v in values]


class TestRemoveDuplicates:
    def test_first_of_each_value_sorted_by_value(self) -> None:
        td = TensorDict({"x": torch.tensor([7, 1, 7, 3]), "y": torch.arange(4)}, [4])
        out, indices = remove_duplicates(td, "x", return_indices=True)
        assert out.get("x").tolist() == [1, 3, 7] and out.get("y").tolist() == [1, 3, 0]
        assert indices.tolist() == [2, 0, 2, 1]
        assert torch.equal(out["x"][indices], td["x"])

    def test_rows_and_nested_entries(self) -> None:
        out = remove_duplicates(_rows(), "x")
        assert out.get("x").tolist() == [[1, 2], [3, 4], [5, 6]] and out["n", "z"].tolist() == [
            0,
            10,
            30,
        ]
        assert out.batch_size == torch.Size([3])

    def test_inner_dim(self) -> None:
        td = TensorDict({"v": torch.tensor([[1, 1, 2], [1, 1, 2]])}, [2, 3])
        out = remove_duplicates(td, "v", dim=1)
        assert out.batch_size == torch.Size([2, 2]) and out.get("v").tolist() == [[1, 2], [1, 2]]

    def test_record(self) -> None:
        row = Row(torch.tensor([2, 2, 1]), torch.arange(3.0), batch_size=[3])
        out = remove_duplicates(row, "x")
        assert type(out) is Row and out.y.tolist() == [2.0, 0.0]

    def test_errors(self) -> None:
        with pytest.raises(errors.KeyNotFoundError, match="'n' does not point to a tensor"):
            remove_duplicates(_rows(), "n")
        with pytest.raises(errors.KeyNotFoundError, match="'zz' does not exist"):
            remove_duplicates(_rows(), "zz")
        with pytest.raises(errors.DimError, match="dimension '2' is invalid"):
            remove_duplicates(_rows(), "x", dim=2)

    def test_like_the_peer(self) -> None:
        utils = pytest.importorskip("tensordict.utils")
        peer = pytest.importorskip("tensordict")
        x = torch.randint(0, 4, (15, 2))
        source: dict[str, Any] = {"x": x, "y": torch.arange(15)}
        ours, ours_idx = remove_duplicates(TensorDict(source, [15]), "x", return_indices=True)
        theirs, theirs_idx = utils.remove_duplicates(
            peer.TensorDict(source, [15]), "x", return_indices=True
        )
        assert torch.equal(ours["y"], theirs["y"]) and torch.equal(ours_idx, theirs_idx)


def test_module_level_names() -> None:
    for name in (
        "expand_as_right",
        "expand_right",
        "isin",
        "remove_duplicates",
        "merge_tensordicts",
    ):
        assert name in tclass.__all__ and callable(getattr(tclass, name))


def test_pad_sequence_gives_unnamed_dims_with_or_without_python_values() -> None:
    for entries in ({"a": torch.zeros(4, 2)}, {"a": torch.zeros(4, 2), "s": "pong"}):
        td = TensorDict(entries, batch_size=[4, 2], names=["i", "j"])
        out = tclass.pad_sequence([td, td[:1]])
        assert out.batch_size == torch.Size([2, 4, 2]) and out.names == [None, None, None]


def test_cat_keeps_one_array_value_that_every_part_holds_equal() -> None:
    """``torch.cat`` of collections each holding an equal numpy array as one Python value
    (a clone's copy too): one ``NonTensorData`` of it, as for equal strings and lists and
    as the peer's, not a value per element; arrays that differ (or hold NaN) give a
    ``NonTensorStack`` (program 15,981,503 of features,index,shape,combine L12)."""

    def holding(value: Any) -> TensorDict:
        return TensorDict({"s": tclass.NonTensorData(value, batch_size=[1, 3])}, [1, 3])

    x = holding(np.array(["", "", ""], dtype=object))
    out = torch.cat([x, x[:, :1], x.clone()], 1)
    assert type(out.get("s")) is tclass.NonTensorData and out.batch_size == torch.Size([1, 7])
    for other in (np.array(["", "", "a"], dtype=object), np.array(["", ""], dtype=object)):
        assert type(torch.cat([x, holding(other)], 1).get("s")) is tclass.NonTensorStack
    nan = holding(np.array([1.0, np.nan]))
    assert type(torch.cat([nan, nan.clone()], 1).get("s")) is tclass.NonTensorStack
