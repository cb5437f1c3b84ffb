"""Tests for tclass/_constructors.py and the classmethods over it: ``from_dict``,
``fromkeys``, ``from_namedtuple`` / ``to_namedtuple``, ``make_tensordict``, ``to_dict``,
``is_tensor_collection``, on TensorDicts and tensorclasses, compared with the peer where
it has the same behaviour."""

from __future__ import annotations

import warnings
from collections import namedtuple
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import (
    MetaData,
    NonTensorData,
    NonTensorStack,
    TensorClass,
    TensorDict,
    errors,
    tensorclass,
)
from tclass._interop._constructors import common_leading_shape

from strategies import SETTINGS, batch_shapes, feature_shapes, leaf_items  # noqa: E402

Point = namedtuple("Point", ["x", "y"])
Outer = namedtuple("Outer", ["p", "label"])


class Inner(TensorClass):
    x: torch.Tensor


class Rec(TensorClass):
    obs: torch.Tensor
    inner: Inner
    env: str = "pong"
    extra: torch.Tensor | None = None


@tensorclass
class Pair:
    a: torch.Tensor
    b: torch.Tensor


def _nested() -> dict[str, Any]:
    return {"a": torch.zeros(3, 4, 5), "b": {"c": torch.ones(3, 4)}, "n": "label"}


# --- from_dict ----------------------------------------------------------------------------


class TestFromDict:
    @pytest.mark.parametrize("options", [{}, {"auto_batch_size": False}])
    def test_default_batch_is_empty(self, options: dict[str, Any]) -> None:
        # The peer's (0.15) default: no batch dims unless asked, so code written for it
        # can write entries of any leading shape afterwards.
        td = TensorDict.from_dict(_nested(), **options)
        assert td.batch_size == torch.Size([]) and td.get("b").batch_size == torch.Size([])
        assert td.get("n").data == "label" and isinstance(td.get("n"), NonTensorData)
        td["other"] = torch.zeros(5)
        assert td["other"].shape == (5,)

    def test_records_and_stores_default_as_the_peer(self, tmp_path: Path) -> None:
        @tclass.tensorclass
        class Rec:
            x: torch.Tensor

        assert Rec.from_dict({"x": torch.zeros(3, 2)}).batch_size == torch.Size([])
        assert Rec.from_dict({"x": torch.zeros(3, 2)}, batch_dims=1).batch_size == (3,)
        assert TensorDict.fromkeys(["a", "b"], torch.zeros(3)).batch_size == torch.Size([])
        pytest.importorskip("h5py", reason="needs h5py (the test extra)")
        # PersistentTensorDict.from_dict infers, as the peer's
        ptd = tclass.PersistentTensorDict.from_dict(
            {"a": torch.zeros(3, 4), "b": {"c": torch.ones(3)}}, tmp_path / "d.h5"
        )
        assert ptd.batch_size == torch.Size([3])
        ptd.close()

    @pytest.mark.parametrize(
        "options, root, nested",
        [
            ({"auto_batch_size": True}, [3, 4], [3, 4]),
            ({"batch_dims": 0}, [], []),
            ({"batch_dims": 1}, [3], [3]),
            ({"batch_dims": 2}, [3, 4], [3, 4]),
            ({"batch_dims": 5}, [3, 4], [3, 4]),
            ({"batch_size": [3]}, [3], [3]),
            ({"batch_size": [3, 4]}, [3, 4], [3, 4]),
        ],
    )
    def test_batch_options(
        self, options: dict[str, Any], root: list[int], nested: list[int]
    ) -> None:
        td = TensorDict.from_dict(_nested(), **options)
        assert td.batch_size == torch.Size(root)
        assert td.get("b").batch_size == torch.Size(nested)
        assert td.get("n").batch_size == torch.Size(root)

    def test_nested_keeps_more_batch_dims_when_inferred(self) -> None:
        td = TensorDict.from_dict(
            {"a": torch.zeros(3), "b": {"c": torch.zeros(3, 4)}}, auto_batch_size=True
        )
        assert td.batch_size == torch.Size([3]) and td.get("b").batch_size == torch.Size([3, 4])

    def test_disagreeing_leaves_give_no_batch(self) -> None:
        td = TensorDict.from_dict(
            {"a": torch.zeros(3), "b": {"c": torch.zeros(4, 4)}}, auto_batch_size=True
        )
        assert td.batch_size == torch.Size([]) and td.get("b").batch_size == torch.Size([4, 4])

    def test_empty_nested_takes_the_parent_batch(self) -> None:
        td = TensorDict.from_dict({"a": torch.zeros(3, 2), "b": {}}, auto_batch_size=True)
        assert td.get("b").batch_size == torch.Size([3, 2])
        assert TensorDict.from_dict({}, auto_batch_size=True).batch_size == torch.Size([])

    def test_scalars_and_python_values(self) -> None:
        td = TensorDict.from_dict(
            {
                "x": 1.5,
                "l": [1, 2, 3],
                "arr": np.arange(3),
                "s": "txt",
                "none": None,
                "mixed": ["a", 1],
            },
            auto_batch_size=True,
        )
        assert td.batch_size == torch.Size([])  # the 0-dim 'x' shares no dim
        assert td["x"].dtype == torch.float32 and td["x"].item() == 1.5
        assert torch.equal(td["l"], torch.tensor([1, 2, 3])) and torch.equal(
            td["arr"], torch.arange(3)
        )
        assert (
            td.get("s").data == "txt"
            and td.get("none").data is None
            and td.get("mixed").data == ["a", 1]
        )

    def test_a_list_of_values_is_one_per_element_as_the_constructor(self) -> None:
        # As TensorDict(...) and the peer: a lazy stack's to_dict() gives each member's
        # Python value back through from_dict.
        members = [TensorDict(a=torch.full((2,), float(i)), s=s, batch_size=[2]) for i, s in
                   enumerate("xy")]  # fmt: skip
        source = tclass.lazy_stack(members).to_dict()
        for batch_size in ([2], [2, 2]):
            td = TensorDict.from_dict(source, batch_size=batch_size)
            assert isinstance(td.get("s"), NonTensorStack)
            assert td[0]["s"] == ["x", "x"] and td[1]["s"] == ["y", "y"]
            assert td.get("s").batch_size == torch.Size([2, 2])
        one = TensorDict.from_dict({"s": ["p", "q"], "d": [{"k": 1}, {"k": 2}]}, batch_size=[2])
        assert one[1]["s"] == "q" and one[0]["d"] == {"k": 1}
        with pytest.raises(errors.BatchMismatchError, match="'s'"):
            TensorDict.from_dict({"s": ["p", "q"]}, batch_size=[3])
        with pytest.warns(DeprecationWarning), tclass.set_list_to_stack(False):
            kept = TensorDict.from_dict({"s": ["p", "q"]}, batch_size=[3])
        assert isinstance(kept.get("s"), NonTensorData) and kept[2]["s"] == ["p", "q"]

    def test_a_number_under_a_batch_size_is_one_value_as_the_peer(self) -> None:
        # to_dict() writes a value spanning the batch as the number itself; from_dict
        # with that batch size reads it back as that value (a 0-dim tensor cannot start
        # with the batch size), as the peer does. Without batch dims it is a tensor.
        source = TensorDict(a=torch.zeros(3), v=NonTensorData(7), f=NonTensorData(1.5),
                            b=NonTensorData(np.bool_(True)), batch_size=[3])  # fmt: skip
        back = TensorDict.from_dict(source.to_dict(), batch_size=[3])
        assert isinstance(back.get("v"), NonTensorData) and back[2]["v"] == 7
        assert back["f"] == 1.5 and back["b"] == True  # noqa: E712 (a numpy bool)
        assert torch.equal(TensorDict.from_dict({"v": 7}, batch_size=[])["v"], torch.tensor(7))
        assert torch.equal(
            TensorDict.from_dict({"v": 7, "a": torch.zeros(3)})["v"], torch.tensor(7)
        )
        with pytest.raises(errors.BatchMismatchError, match="'a'"):
            TensorDict.from_dict({"v": 7, "a": torch.zeros(2)}, batch_size=[3])

    def test_a_tuple_nests_under_its_positions_as_from_tuple(self) -> None:
        # As the peer's from_dict (its from_any of each value) and tclass's from_any: a
        # tuple, a torch.Size too, is a nested TensorDict under "0", "1"... of its items
        # converted as from_dict converts values (attrs().to_dict()'s tgt_shape, fz30f).
        td = TensorDict.from_dict(
            {"shape": torch.Size([4, 3]), "pair": (1, 2.5), "s": ("p", "q"), "e": ()}
        )
        assert list(td["shape"].keys()) == ["0", "1"] and type(td["shape"]) is TensorDict
        assert torch.equal(td["shape", "1"], torch.tensor(3))
        assert td["pair", "1"].dtype == torch.float32 and td["s", "1"] == "q"
        assert type(td["e"]) is TensorDict and not list(td["e"].keys())
        assert td.to_dict()["shape"] == {"0": torch.tensor(4), "1": torch.tensor(3)}
        attrs = TensorDict(a=torch.zeros(2, 3)).attrs()
        back = TensorDict.from_dict(attrs.to_dict())
        assert [int(v) for v in back["a", "tgt_shape"].values()] == [2, 3]
        # the constructor and update keep a tuple of numbers one tensor, as the peer's
        assert torch.equal(TensorDict({"s": (1, 2)})["s"], torch.tensor([1, 2]))
        assert torch.equal(TensorDict().update({"s": (1, 2)})["s"], torch.tensor([1, 2]))

    def test_nested_python_values_take_the_parent_batch(self) -> None:
        td = TensorDict.from_dict(
            {"a": torch.zeros(4, 2), "meta": {"name": "x", "deep": {"k": None}}},
            auto_batch_size=True,
        )
        assert td.batch_size == torch.Size([4, 2])
        assert td.get("meta").batch_size == torch.Size([4, 2]) and td["meta", "name"] == "x"
        assert (
            td["meta", "deep"].batch_size == torch.Size([4, 2]) and td["meta", "deep", "k"] is None
        )

    def test_numpy_text_array_is_a_python_value(self) -> None:
        td = TensorDict.from_dict({"names": np.array(["a", "b"])})
        assert isinstance(td.get("names"), NonTensorData) and td.get("names").data.tolist() == [
            "a",
            "b",
        ]

    def test_python_values_span_the_batch(self) -> None:
        td = TensorDict.from_dict({"a": torch.zeros(4), "s": "v"}, auto_batch_size=True)
        assert td.get("s").batch_size == torch.Size([4])
        assert td[1:3].get("s").data == "v"

    def test_tensors_are_kept_not_copied(self) -> None:
        a = torch.zeros(3)
        assert TensorDict.from_dict({"a": a})["a"] is a

    def test_tuple_keys_nest(self) -> None:
        td = TensorDict.from_dict(
            {("a", "b"): torch.zeros(3), ("a", "c"): torch.ones(3), "d": {"e": torch.ones(3)}},
            batch_size=[3],
        )
        assert set(td.keys(include_nested=True, leaves_only=True)) == {
            ("a", "b"),
            ("a", "c"),
            ("d", "e"),
        }

    def test_collection_values_and_input(self) -> None:
        inner = TensorDict({"x": torch.zeros(3, 2)}, [3, 2])
        td = TensorDict.from_dict({"inner": inner, "y": torch.zeros(3)}, auto_batch_size=True)
        assert td["inner"] is inner and td.batch_size == torch.Size([3])
        again = TensorDict.from_dict(td, auto_batch_size=True)
        assert again["inner"] is inner and again.batch_size == torch.Size([3])

    def test_collection_input_is_returned_as_it_is(self) -> None:
        # as the peer's from_dict: a collection keeps its batch size and class (nu26e)
        @tclass.tensorclass
        class R:
            x: torch.Tensor

        td = TensorDict({"a": torch.arange(3.0), "n": {"b": torch.arange(3)}}, [3])
        rec = R(x=torch.ones(3), batch_size=[3])
        lazy = tclass.lazy_stack([TensorDict(a=torch.ones(i + 1)) for i in range(3)])
        assert TensorDict.from_dict(td) is td and td.batch_size == (3,)
        assert tclass.from_dict(td, batch_size=[]) is td
        assert TensorDict.from_dict(rec) is rec and tclass.from_dict(lazy) is lazy
        assert td["a"].tolist() == [0.0, 1.0, 2.0]

    def test_to_dict_tolist_first_lists_python_values_per_element(self) -> None:
        # as the peer's: a Python value with batch dims is its tolist() (nu26e)
        td = TensorDict(a=torch.arange(3.0), s="hi", m=tclass.MetaData({"k": 1}), batch_size=[3])
        td["n"] = TensorDict(b=torch.zeros(3, 2), t="q", batch_size=[3, 2])
        out = td.to_dict(tolist_first=True, convert_tensors=True)
        assert out["s"] == ["hi"] * 3 and out["m"] == [{"k": 1}] * 3
        assert out["a"] == [0.0, 1.0, 2.0] and out["n"] == [[{"b": 0.0, "t": "q"}] * 2] * 3
        assert TensorDict(s="hi").to_dict(tolist_first=True) == {"s": "hi"}
        nones = TensorDict(a=torch.arange(3.0), s=None, batch_size=[3])
        assert nones.to_dict(tolist_first=True)["s"] == [None] * 3
        assert "s" not in nones.to_dict(tolist_first=True, retain_none=False)

    def test_collection_values_grow_to_their_largest_batch_size(self) -> None:
        # as the peer's auto_batch_size, but on a copy: the caller's TensorDict keeps its own
        inner = TensorDict({"b": torch.zeros(3, 4), "c": {"d": torch.zeros(3, 4, 5)}}, [])
        source = TensorDict({"a": inner, "d": torch.zeros(3)}, [])
        for td in (
            tclass.make_tensordict(source, auto_batch_size=True),
            TensorDict.from_dict({"a": inner, "d": torch.zeros(3)}, auto_batch_size=True),
        ):
            assert td.batch_size == (3,) and td["a"].batch_size == (3, 4)
            assert td["a", "c"].batch_size == (3, 4, 5)
            assert td["a", "b"] is inner["b"]  # the tensors are shared
        assert inner.batch_size == () and inner["c"].batch_size == ()
        capped = TensorDict.from_dict({"a": inner}, batch_dims=1)
        assert capped.batch_size == (3,) and capped["a", "c"].batch_size == (3,)

    def test_device(self) -> None:
        td = TensorDict.from_dict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, device="cpu")
        assert td.device == torch.device("cpu") and td.get("b").device == torch.device("cpu")

    def test_module_function_is_the_classmethod(self) -> None:
        assert type(tclass.from_dict({"a": torch.zeros(2)}, batch_size=[2])) is TensorDict

    def test_subclass_keeps_its_class(self) -> None:
        class MyTD(TensorDict):
            pass

        td = MyTD.from_dict({"a": torch.zeros(2)}, batch_size=[2])
        assert type(td) is MyTD and td.batch_size == torch.Size([2])

    def test_to_dict_round_trip(self) -> None:
        td = TensorDict.from_dict(_nested(), batch_size=[3])
        out = td.to_dict()
        assert out["n"] == "label" and out["b"]["c"] is td["b", "c"]
        back = TensorDict.from_dict(out, batch_size=[3])
        assert (back == td).all()
        assert td.to_dict(convert_tensors=True)["b"]["c"] == [[1.0] * 4] * 3
        arrays = td.to_dict(convert_tensors="numpy")  # numpy arrays, as the peer's
        assert isinstance(arrays["b"]["c"], np.ndarray) and arrays["b"]["c"].shape == (3, 4)
        assert arrays["n"] == "label"

    def test_record_to_dict_gives_numpy_arrays(self) -> None:
        @tensorclass
        class Rec:
            x: torch.Tensor
            y: torch.Tensor | None = None

        arrays = Rec(x=torch.ones(2, requires_grad=True), batch_size=[2]).to_dict(
            convert_tensors="numpy"
        )
        assert isinstance(arrays["x"], np.ndarray) and arrays["x"].tolist() == [1.0, 1.0]
        assert arrays["y"] is None

    def test_to_dict_of_value_stack(self) -> None:
        td = torch.stack([TensorDict.from_dict({"s": "a"}), TensorDict.from_dict({"s": "b"})])
        assert isinstance(td.get("s"), NonTensorStack) and td.to_dict() == {"s": ["a", "b"]}

    def test_to_dict_refuses_to_lose_the_keys_some_members_hold(self) -> None:
        a = TensorDict({"y": torch.zeros(2)}, [2])
        b = TensorDict({"y": torch.ones(2), "z": torch.ones(2), "n": {"q": torch.ones(2)}}, [2])
        for stack in (tclass.lazy_stack([a, b], 1), tclass.lazy_stack([b.clone(), b], 0)):
            stack.tensordicts[0].exclude("z", inplace=True)
            with pytest.raises(errors.HeterogeneousEntryError, match=r"'z'\]") as caught:
                stack.to_dict()
            assert isinstance(caught.value, RuntimeError)
        # nested: the keys a nested lazy stack's members do not share
        rows = [TensorDict({"n": {"q": torch.ones(2)}}, [2]) for _ in range(2)]
        rows[1]["n", "w"] = torch.zeros(2)
        with pytest.raises(errors.HeterogeneousEntryError, match=r"\['w'\]"):
            tclass.lazy_stack(rows).to_dict()
        same = tclass.lazy_stack([a, a.clone()], 0)
        assert torch.equal(same.to_dict()["y"], torch.zeros(2, 2))

    def test_value_stacks_leave_as_plain_lists(self) -> None:
        # to_dict / to_namedtuple hand out the values, not lists that write into the stack
        rows = [TensorDict({"s": s, "n": {"t": s}}, [2]) for s in "ab"]
        for stacked in (torch.stack(rows), tclass.lazy_stack(rows)):
            out = stacked.to_dict()
            assert type(out["s"]) is list and type(out["s"][0]) is list
            assert out["s"] == [["a", "a"], ["b", "b"]] and type(out["n"]["t"][1]) is list
            assert type(stacked.to_namedtuple().s) is list
            out["s"][0][0] = "z"
            assert stacked[0, 0]["s"] == "a"

    # errors

    def test_batch_size_and_batch_dims_conflict(self) -> None:
        with pytest.raises(errors.BatchSizeError, match="batch_size or batch_dims"):
            TensorDict.from_dict({"a": torch.zeros(3)}, batch_size=[3], batch_dims=1)

    def test_negative_batch_dims(self) -> None:
        with pytest.raises(errors.BatchSizeError, match="non-negative"):
            TensorDict.from_dict({"a": torch.zeros(3)}, batch_dims=-1)

    def test_mismatch_names_the_nested_key(self) -> None:
        with pytest.raises(errors.BatchMismatchError) as info:
            TensorDict.from_dict(
                {"a": torch.zeros(3), "b": {"c": {"d": torch.zeros(4)}}}, batch_size=[3]
            )
        assert info.value.key == ("b", "c", "d")
        assert isinstance(info.value, RuntimeError)  # what the peer raises

    def test_invalid_key(self) -> None:
        with pytest.raises(errors.InvalidKeyError, match="invalid key 3"):
            TensorDict.from_dict({3: torch.zeros(1)})

    def test_key_through_a_leaf(self) -> None:
        with pytest.raises(errors.KeyThroughTensorError, match="passes through"):
            TensorDict.from_dict({"a": torch.zeros(1), ("a", "b"): torch.zeros(1)})

    def test_key_given_twice(self) -> None:
        with pytest.raises(errors.KeyConflictError, match="given twice"):
            TensorDict.from_dict({"a": torch.zeros(1), ("a",): torch.ones(1)})

    def test_not_a_mapping(self) -> None:
        with pytest.raises(errors.EntryTypeError, match="expected a mapping"):
            TensorDict.from_dict([1, 2])  # type: ignore[arg-type]

    def test_names_name_the_dims(self) -> None:
        # names alone ask for as many inferred dims (the peer drops the names silently)
        td = TensorDict.from_dict({"a": torch.zeros(2), "n": {"b": torch.zeros(2)}}, names=["t"])
        assert td.batch_size == (2,) and td.names == ["t"] and td["n"].names == ["t"]
        with pytest.raises(tclass.errors.DimNameError, match="names 2 dims"):
            TensorDict.from_dict({"a": torch.zeros(2)}, names=["t", "u"])

    def test_lazy_stack_wants_a_dict_per_member(self) -> None:
        # As the peer (a KeyError): a dict is read as members keyed "0", "1", ...
        with pytest.raises(KeyError, match="LazyStackedTensorDict.from_dict"):
            tclass.LazyStackedTensorDict.from_dict({"a": torch.zeros(2)})


@pytest.mark.parametrize(
    "values, batch, size",
    [
        ([[[1, 2]], [[]]], [2, 1], (2, 1, -1)),
        ([[[1, 2]], [[]]], [2], (2, 1, -1)),
        ([[1, 2], [3]], None, (2, -1)),
        ([[1.5], [2, 3]], [2], (2, -1)),
        ([[], [True]], [2], (2, -1)),
        ([[[1, 2], [3]], [[4], [5, 6]]], [2, 2], (2, 2, -1)),
    ],
)
def test_from_dict_lists_of_numbers_stack_per_list(
    values: list[Any], batch: list[int] | None, size: tuple[int, ...]
) -> None:
    # Lists torch.tensor refuses (ragged ones): a stack dim per list, ragged where their
    # lengths differ, the numbers as given (as the peer's from_dict: NonTensorStack.from_list);
    # set() stores one value per item instead (a tensor each), in both libraries.
    td = TensorDict.from_dict({"v": values}, batch_size=batch)
    stack = td.get("v")
    assert isinstance(stack, NonTensorStack) and tuple(stack.batch_size) == size
    assert td.batch_size == torch.Size(batch or []) and _no_tensors(stack.tolist())
    assert td.to_dict()["v"] == values
    index, first = (0,) * td.batch_dims, values
    for _ in index:
        first = first[0]
    assert td[index]["v"] == first  # an element reads its nested list


def _no_tensors(values: Any) -> bool:
    if isinstance(values, list):
        return all(map(_no_tensors, values))
    return not isinstance(values, torch.Tensor)


@pytest.mark.parametrize(
    "values",
    [
        [[[None], [-1]], [[None], [None]]],
        [[[None], [None]], [[None], [-1]]],
        [[[1], [-1]], [[None]]],
    ],
)
def test_from_dict_lists_of_none_and_numbers_stack_per_list(values: list[Any]) -> None:
    # The lists of a to_dict() of values padded with None (pad(td, ..., value=0)): rows of
    # numbers and None beside rows of None alone, which the constructor's conversion does
    # not stack (a tensor [-1] beside a stack [None]); a stack dim per list, as the peer's
    # from_dict (it refused them, fz17b).
    batch = [2, len(values[0]), 1]
    if len(values[1]) != len(values[0]):
        batch = [2, -1, 1]
    td = TensorDict.from_dict({"v": values}, batch_size=[2])
    stack = td.get("v")
    assert isinstance(stack, NonTensorStack) and list(stack.batch_size) == batch
    assert stack.tolist() == values and _no_tensors(stack.tolist())


def test_from_dict_lists_of_values_and_tensors_stack_per_list() -> None:
    # to_dict() of a value stack whose elements hold numbers in some rows and tensors in
    # others (x[-2] = x[-2].to_dict() of a stack holding NonTensorData(-1)): a stack dim
    # per list, the numbers and tensors kept as values, as the peer's from_dict (the
    # first level was stacked into tensors, og32b); lists of tensors alone still stack.
    row, other = [[-1], [-1]], [[torch.ones(3)], [torch.ones(3)]]
    td = TensorDict.from_dict({"s": [row, other, row]})
    stack = td.get("s")
    assert isinstance(stack, NonTensorStack) and list(stack.batch_size) == [3, 2, 1]
    out = stack.tolist()
    assert out[0] == row and out[2] == row and isinstance(out[1][1][0], torch.Tensor)
    assert torch.equal(out[1][0][0], torch.ones(3))
    dense = TensorDict.from_dict({"s": other}).get("s")
    assert isinstance(dense, torch.Tensor) and dense.shape == (2, 1, 3)


def test_from_dict_ragged_lists_that_do_not_fit_the_batch() -> None:
    with pytest.raises(errors.BatchMismatchError, match=r"'v'.*\[2, -1\].*\[2, 1\]"):
        TensorDict.from_dict({"v": [[1, 2], [3]]}, batch_size=[2, 1])
    # items nesting to different depths (the peer raises): one value per item, as set()
    td = TensorDict.from_dict({"v": [[1, 2], 3]}, batch_size=[2])
    assert td[1]["v"] == 3 and td[0]["v"] == [1, 2]


@pytest.mark.parametrize(
    "options",
    [
        {"auto_batch_size": False},
        {"auto_batch_size": True},
        {"batch_dims": 1},
        {"batch_dims": 2},
        {"batch_size": [3]},
    ],
)
def test_from_dict_batch_sizes_like_the_peer(options: dict[str, Any]) -> None:
    peer = pytest.importorskip("tensordict")

    def source() -> dict[str, Any]:
        return {
            "a": torch.zeros(3, 4, 5),
            "b": {"c": torch.zeros(3, 4), "d": {"e": torch.zeros(3, 4, 2)}},
        }

    ours, theirs = (
        TensorDict.from_dict(source(), **options),
        peer.TensorDict.from_dict(source(), **options),
    )
    for key in [(), ("b",), ("b", "d")]:
        assert (ours.get(key) if key else ours).batch_size == (
            theirs.get(key) if key else theirs
        ).batch_size, key


@SETTINGS
@given(
    batch=batch_shapes(max_dims=3, min_side=1),
    extra=feature_shapes(),
    cap=st.none() | st.integers(0, 4),
)
def test_inferred_batch_is_the_largest_common_prefix(
    batch: torch.Size, extra: torch.Size, cap: int | None
) -> None:
    """Leaves sharing ``batch`` (one with more dims): the inferred batch is ``batch`` (cut
    at ``cap``), and every leaf starts with it."""
    source = {"a": torch.zeros(batch), "b": {"c": torch.zeros(batch + extra)}}
    td = TensorDict.from_dict(source, batch_dims=cap) if cap is not None else (
        TensorDict.from_dict(source, auto_batch_size=True)
    )  # fmt: skip
    expected = batch if cap is None else batch[:cap]
    assert td.batch_size == expected
    assert td.get("b").batch_size[: len(expected)] == expected
    for _, leaf in leaf_items(td):
        assert leaf.shape[: len(expected)] == expected


@SETTINGS
@given(
    st.lists(st.lists(st.integers(1, 3), max_size=4), min_size=1, max_size=4),
    st.none() | st.integers(0, 4),
)
def test_common_leading_shape(shapes: list[list[int]], cap: int | None) -> None:
    common = common_leading_shape(shapes, cap)
    n = len(common)
    assert all(list(shape[:n]) == list(common) for shape in shapes)
    assert cap is None or n <= cap
    limit = min(len(s) for s in shapes) if cap is None else min(cap, *(len(s) for s in shapes))
    if n < limit:  # maximal: the next dim differs somewhere
        assert len({shape[n] for shape in shapes}) > 1


# --- tensorclasses ------------------------------------------------------------------------


class TestRecordConstructors:
    def test_from_dict_auto_batch_size(self) -> None:
        rec = Rec.from_dict(
            {"obs": torch.zeros(4, 3, 2), "inner": {"x": torch.zeros(4, 3)}}, auto_batch_size=True
        )
        assert type(rec) is Rec and rec.batch_size == torch.Size([4, 3])
        assert type(rec.inner) is Inner and rec.env == "pong"

    def test_from_dict_python_fields_do_not_constrain(self) -> None:
        class WithList(TensorClass):
            obs: torch.Tensor
            counts: list  # type: ignore[type-arg]

        rec = WithList.from_dict(
            {"obs": torch.zeros(4, 2), "counts": [1, 2, 3]}, auto_batch_size=True
        )
        assert rec.batch_size == torch.Size([4, 2]) and rec.counts == [1, 2, 3]

    def test_from_dict_both_options_refused(self) -> None:
        with pytest.raises(errors.BatchSizeError):
            Rec.from_dict(
                {"obs": torch.zeros(2), "inner": {"x": torch.zeros(2)}},
                batch_size=[2],
                batch_dims=1,
            )

    def test_fromkeys(self) -> None:
        pair = Pair.fromkeys(["a", "b"], 1.0)
        assert type(pair) is Pair and pair.batch_size == torch.Size([])
        assert pair.a.item() == 1.0 and pair.a is not pair.b

    def test_fromkeys_unknown_field(self) -> None:
        with pytest.raises(errors.UnknownFieldError, match="zz"):
            Pair.fromkeys(["a", "b", "zz"])

    def test_from_namedtuple(self) -> None:
        Fields = namedtuple("Fields", ["obs", "inner"])
        InnerNT = namedtuple("InnerNT", ["x"])
        rec = Rec.from_namedtuple(Fields(torch.zeros(2, 3), InnerNT(torch.ones(2))), batch_size=[2])
        assert type(rec) is Rec and rec.obs.shape == (2, 3) and type(rec.inner) is Inner
        assert rec.to_namedtuple().obs is rec.obs

    @pytest.mark.parametrize("key", ["a-b", "class", "0"])
    def test_to_namedtuple_of_a_key_no_field_can_have(self, key: str) -> None:
        # a ValueError, as collections.namedtuple raises in the peer
        with pytest.raises(ValueError, match=f"the keys \\['{key}'\\] cannot all be"):
            TensorDict({key: torch.zeros(2)}, [2]).to_namedtuple()
        with pytest.raises(errors.NamedTupleKeyError, match="rename them with rename_key_"):
            TensorDict({"n": {key: torch.zeros(2)}}, [2]).to_namedtuple()

    def test_to_dict_of_nested_record_in_a_tensordict(self) -> None:
        rec = Rec(torch.zeros(2, 3), Inner(torch.zeros(2), batch_size=[2]), batch_size=[2])
        td = TensorDict({"rec": rec}, [2])
        out = td.to_dict()
        assert out["rec"]["env"] == "pong" and out["rec"]["extra"] is None


# --- fromkeys, namedtuples, make_tensordict -----------------------------------------------


class TestFromKeys:
    def test_scalar_per_key(self) -> None:
        td = TensorDict.fromkeys(["a", "b", "c", ("nested", "e")], 0)
        assert td.batch_size == torch.Size([])
        assert set(td.keys(include_nested=True, leaves_only=True)) == {
            "a",
            "b",
            "c",
            ("nested", "e"),
        }
        td["a"].add_(1)
        assert td["b"].item() == 0  # each key has its own tensor

    def test_tensor_is_cloned_per_key(self) -> None:
        value = torch.zeros(2)
        td = tclass.fromkeys(["a", "b"], value)
        assert td["a"] is not value and td["a"].data_ptr() != td["b"].data_ptr()
        assert torch.equal(td["a"], value)

    def test_python_value(self) -> None:
        assert tclass.fromkeys(["a"], "s").get("a").data == "s"

    def test_like_the_peer(self) -> None:
        peer = pytest.importorskip("tensordict")
        keys = ["a", ("b", "c")]
        ours, theirs = tclass.fromkeys(keys, 3), peer.TensorDict.fromkeys(keys, 3)
        assert set(ours.keys(True, True)) == set(theirs.keys(True, True))
        assert ours["b", "c"].dtype == theirs["b", "c"].dtype and ours["b", "c"].item() == 3

    def test_key_given_twice_is_set_twice(self) -> None:
        # "b" and ("b",) are one key: the peer's constructor sets it twice, no error
        td = tclass.fromkeys(["b", ("b",)], 1.5)
        assert list(td.keys()) == ["b"] and td["b"].item() == 1.5

    def test_plain_keys_first(self) -> None:
        # the peer's constructor sets the string keys, then the tuple ones
        td = tclass.fromkeys([("a", "b"), "c", ("a", "d"), "e"], 0)
        assert list(td.keys(True, True)) == ["c", "e", ("a", "b"), ("a", "d")]

    @pytest.mark.parametrize("keys", [["a", ("a", "b")], [("a", "b"), "a"]])
    def test_key_through_a_tensor_raises(self, keys: list[Any]) -> None:
        # the tensor "a" is set first either way: ("a", "b") cannot pass through it (the
        # peer's KeyError too), and "a" no longer silently replaces the group
        with pytest.raises(errors.KeyThroughTensorError, match="the entry \\('a',\\) is a tensor"):
            tclass.fromkeys(keys, 0)


class TestNamedTuples:
    def test_nested(self) -> None:
        nt = Outer(Point(torch.zeros(3, 2), torch.ones(3)), "lbl")
        td = TensorDict.from_namedtuple(nt, auto_batch_size=True)
        assert td.batch_size == torch.Size([3]) and td.get("p").batch_size == torch.Size([3])
        assert td.get("label").data == "lbl" and torch.equal(td["p", "y"], torch.ones(3))

    def test_round_trip(self) -> None:
        nt = Outer(Point(torch.zeros(3, 2), torch.ones(3)), "lbl")
        back = tclass.from_namedtuple(nt, batch_size=[3]).to_namedtuple()
        assert back._fields == ("p", "label") and back.p._fields == ("x", "y")
        assert back.p.x is nt.p.x and back.label == "lbl"

    def test_dest_cls(self) -> None:
        td = TensorDict({"x": torch.zeros(2), "y": torch.ones(2)}, [2])
        point = td.to_namedtuple(Point)
        assert type(point) is Point and point.y is td["y"]

    def test_torch_return_types(self) -> None:
        result = torch.max(torch.tensor([[1.0, 5.0], [7.0, 2.0]]), dim=1)
        td = tclass.from_namedtuple(result, auto_batch_size=True)
        assert td.batch_size == torch.Size([2])
        assert td.get("values").tolist() == [5.0, 7.0] and td.get("indices").tolist() == [1, 0]

    def test_namedtuple_inside_a_dict(self) -> None:
        td = tclass.from_dict({"p": Point(torch.zeros(2), torch.zeros(2))}, batch_size=[2])
        assert isinstance(td.get("p"), TensorDict) and set(td["p"].keys()) == {"x", "y"}

    def test_not_a_namedtuple(self) -> None:
        with pytest.raises(errors.EntryTypeError, match="from_pytree"):
            tclass.from_namedtuple((torch.zeros(1), torch.zeros(1)))

    def test_bad_field_names(self) -> None:
        with pytest.raises(errors.InvalidKeyError, match="rename"):
            TensorDict({"not valid": torch.zeros(1)}, []).to_namedtuple()

    def test_like_the_peer(self) -> None:
        peer = pytest.importorskip("tensordict")
        nt = Outer(Point(torch.zeros(3, 2), torch.ones(3)), torch.zeros(3))
        ours = tclass.from_namedtuple(nt, auto_batch_size=True)
        theirs = peer.from_namedtuple(nt, auto_batch_size=True)
        assert ours.batch_size == theirs.batch_size
        assert ours.get("p").batch_size == theirs.get("p").batch_size


class TestMakeTensorDict:
    def test_keywords(self) -> None:
        td = tclass.make_tensordict(a=torch.zeros(3, 2), b={"c": torch.zeros(3)}, batch_size=[3])
        assert td.batch_size == torch.Size([3]) and td.get("b").batch_size == torch.Size([3])

    def test_dict_and_keywords(self) -> None:
        td = tclass.make_tensordict({"a": torch.zeros(3)}, b=torch.ones(3), auto_batch_size=True)
        assert set(td.keys()) == {"a", "b"} and td.batch_size == torch.Size([3])

    def test_batch_is_inferred_only_when_asked(self) -> None:
        # As the peer 0.15: no batch dims unless auto_batch_size=True or batch_size given.
        assert tclass.make_tensordict(a=torch.zeros(3, 2)).batch_size == torch.Size([])
        assert tclass.make_tensordict(
            a=torch.zeros(3, 2), auto_batch_size=True
        ).batch_size == torch.Size([3, 2])
        assert tclass.make_tensordict(a=torch.zeros(3, 2), batch_size=[3]).batch_size == (3,)

    def test_key_given_twice(self) -> None:
        with pytest.raises(errors.KeyConflictError, match="'a'.*once"):
            tclass.make_tensordict({"a": torch.zeros(3)}, a=torch.zeros(2))


class TestIsTensorCollection:
    @pytest.mark.parametrize(
        "obj",
        [
            TensorDict({}, []),
            TensorDict,
            Pair,
            Pair(torch.zeros(1), torch.zeros(1), batch_size=[1]),
            tclass.LazyStackedTensorDict,
            NonTensorData("x"),
        ],
    )
    def test_true(self, obj: object) -> None:
        assert tclass.is_tensor_collection(obj)

    @pytest.mark.parametrize(
        "obj", [torch.zeros(1), torch.Tensor, {"a": 1}, dict, 3, None, "TensorDict"]
    )
    def test_false(self, obj: object) -> None:
        assert not tclass.is_tensor_collection(obj)


# --- nested collections built without a batch size ---------------------------------------


class _Obs(TensorClass):
    x: torch.Tensor


class _Step(TensorClass):
    obs: _Obs
    extra: TensorDict | None = None


def test_nested_collection_without_batch_takes_the_parents() -> None:
    inner = TensorDict(obs=torch.zeros(3, 4), reward=torch.zeros(3, 1))
    td = TensorDict(obs=torch.zeros(3, 4), next=inner, batch_size=[3])
    assert td["next"].batch_size == torch.Size([3])
    assert inner.batch_size == torch.Size([])  # the given one is left as it is (a copy)
    assert td["next", "reward"] is inner["reward"]  # a shallow copy: same tensors
    td["n"] = TensorDict(x=torch.zeros(3, 2))
    td.set(("m", "k"), TensorDict(x=torch.zeros(3, 2)))
    td.update({"u": TensorDict(x=torch.zeros(3, 2))})
    assert {td[k].batch_size for k in ("n", ("m", "k"), "u")} == {torch.Size([3])}
    # a shorter prefix of a 2-dim batch grows too
    grown = TensorDict(
        a=torch.zeros(2, 3), n=TensorDict(b=torch.zeros(2, 3), batch_size=[2]), batch_size=[2, 3]
    )
    assert grown["n"].batch_size == torch.Size([2, 3])


def test_nested_record_without_batch_takes_the_records() -> None:
    obs = _Obs(x=torch.zeros(3, 4))
    step = _Step(obs=obs, extra=TensorDict(a=torch.zeros(3, 1)), batch_size=[3])
    assert step.obs.batch_size == step.extra.batch_size == torch.Size([3])
    assert type(step.obs) is _Obs and obs.batch_size == torch.Size([])
    step.obs = _Obs(x=torch.ones(3, 4))
    assert step.obs.batch_size == torch.Size([3])


def test_nested_collection_that_does_not_fit_is_refused() -> None:
    with pytest.raises(errors.BatchMismatchError, match=r"\('n', 'x'\)") as info:
        TensorDict(n=TensorDict(x=torch.zeros(3, 2)), batch_size=[2])
    assert isinstance(info.value, RuntimeError)  # the peer's builtin
    with pytest.raises(errors.BatchMismatchError, match=r"\('n', 'y'\)"):
        TensorDict(n=TensorDict(x=torch.zeros(3, 2), y=torch.zeros(2)), batch_size=[3])
    with pytest.raises(errors.BatchMismatchError, match="'obs'"):
        _Step(obs=_Obs(x=torch.zeros(2, 4)), batch_size=[3])
    with pytest.raises(errors.BatchMismatchError):  # not a prefix: [4] under [3]
        TensorDict(n=TensorDict(x=torch.zeros(4), batch_size=[4]), batch_size=[3])


_PairNT = namedtuple("_PairNT", ["obs", "n"])


@pytest.mark.parametrize(
    "build",
    [
        lambda **kw: tclass.from_any({"obs": np.zeros((2, 3))}, **kw),
        lambda **kw: tclass.from_any((torch.zeros(2, 3),), **kw),
        lambda **kw: tclass.from_tuple((torch.zeros(2, 3),), **kw),
        lambda **kw: TensorDict.from_namedtuple(_PairNT(torch.zeros(2, 3), torch.zeros(2)), **kw),
    ],
    ids=["from_any-dict", "from_any-tuple", "from_tuple", "from_namedtuple"],
)
def test_batch_dims_without_auto_batch_size_is_ignored_with_a_warning(build: Any) -> None:
    # As the peer 0.15: batch_dims alone keeps the default batch size [] and says that
    # tensordict 0.17 will turn auto_batch_size on; with auto_batch_size it caps the dims.
    with pytest.warns(FutureWarning, match=r"ignores batch_dims=1 without auto_batch_size"):
        assert build(batch_dims=1).batch_size == torch.Size([])
    assert build(batch_dims=1, auto_batch_size=True).batch_size == torch.Size([2])
    assert build(batch_dims=2, auto_batch_size=True).batch_size[0] == 2


def test_batch_dims_that_would_change_nothing_gives_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tclass.from_any({"s": "x", "n": torch.tensor(1)}, batch_dims=1).batch_size == ()
        assert tclass.from_any((torch.zeros(2),), batch_dims=0).batch_size == ()


def test_batch_size_wins_over_batch_dims_for_a_tuple_but_not_for_a_dict() -> None:
    with pytest.warns(FutureWarning, match="drop batch_dims"):
        assert tclass.from_any((torch.zeros(2, 3),), batch_dims=1, batch_size=[2]).batch_size == (
            2,
        )
    with pytest.raises(errors.BatchSizeError, match="either batch_size or batch_dims"):
        tclass.from_any({"obs": torch.zeros(2, 3)}, batch_dims=1, batch_size=[2])


@pytest.mark.parametrize("locked", [False, True])
def test_to_namedtuple_and_to_dict_leave_out_none_values(locked: bool) -> None:
    """``None`` values are left out of ``to_namedtuple()`` (at every level) and of
    ``to_dict(retain_none=False)``, as the peer's; ``to_dict()`` keeps them."""
    td = TensorDict(
        {"a": torch.zeros(2), "s": None, "n": TensorDict({"s": None, "b": torch.ones(2)}, [2])},
        [2],
    )
    if locked:
        td.lock_()
    named = td.to_namedtuple()
    assert named._fields == ("a", "n")
    assert named.n._fields == ("b",)
    back = TensorDict.from_namedtuple(named, batch_size=[2])
    assert list(back.keys(True, True)) == ["a", ("n", "b")]
    assert set(td.to_dict(retain_none=False)) == {"a", "n"}
    assert set(td.to_dict(retain_none=False)["n"]) == {"b"}
    assert td.to_dict()["s"] is None
    values = TensorDict({"s": NonTensorStack(None, 1), "t": NonTensorStack(None, None)}, [2])
    assert values.to_dict(retain_none=False) == {"s": [None, 1]}  # a None in one element stays


def test_to_namedtuple_makes_a_dict_value_a_namedtuple_as_the_peer() -> None:
    """left46a (fuzz program 5,996): the peer's ``to_namedtuple`` converts every dict of
    its ``to_dict()``, a Python value's too; a dict whose keys cannot be field names stays
    a dict, and the stored value is not changed."""
    stored = {"q": torch.zeros(1), "n": {"r": 1}}
    td = TensorDict({}, [1])
    td.set_non_tensor("l", stored)
    td.set_non_tensor("odd", {1: "a"})
    out = td.to_namedtuple()
    assert out.l._fields == ("q", "n") and out.l.n.r == 1 and out.l.q is stored["q"]
    assert out.odd == {1: "a"}
    assert td["l"] == stored and isinstance(td["l"]["n"], dict)


def test_to_namedtuple_of_a_value_node_is_empty_as_the_peers() -> None:
    """lo24a: a ``NonTensorData`` has no entries: its namedtuple is empty, equal to the
    peer's ``()`` (the peer's record method makes it a plain tuple; tclass keeps the
    namedtuple, as for a record: see the README); a ``NonTensorStack``'s too (the peer's
    fails inside, "'list' object has no attribute 'items'"). Its value is read through
    the collection holding it."""
    for node in (
        NonTensorData("a"),
        NonTensorData("a", batch_size=[2]),
        MetaData("a"),
        NonTensorStack(NonTensorData("a"), NonTensorData("b")),
    ):
        out = node.to_namedtuple()
        assert out == () and isinstance(out, tuple) and out._fields == ()
    assert TensorDict(s=NonTensorData("a")).to_namedtuple().s == "a"


def test_from_dict_of_an_iterable_that_is_not_a_mapping_is_a_value_error() -> None:
    """The peer's ``dict(source)`` of a str or a list raises a ``ValueError``
    (``from_list`` of a 0-dim collection's ``tolist()``, a dict: its keys are the items);
    a number stays a ``TypeError`` only (fuzzer, fz26d)."""
    td = TensorDict({"a": torch.zeros(()), "d": torch.ones(())}, [])
    with pytest.raises(ValueError, match="expected a mapping"):
        TensorDict.from_list(td.tolist())
    with pytest.raises(ValueError, match="expected a mapping"):
        TensorDict.from_dict("ab")
    with pytest.raises(TypeError, match="expected a mapping") as caught:
        TensorDict.from_dict(3)
    assert not isinstance(caught.value, ValueError)


def test_from_dict_of_an_empty_list_has_no_entries() -> None:
    """The peer's ``dict([])``: ``from_list`` of a lazy stack over no elements' lists."""
    assert len(TensorDict.from_dict([]).keys()) == 0
    assert TensorDict.from_list([[]]).batch_size == (1,)


def test_an_inferred_batch_size_does_not_take_a_nested_collections_names() -> None:
    """``from_dict``/``from_tuple`` with ``auto_batch_size``: the root's dims are inferred
    and stay unnamed, the nested collection keeps its names, as the peer's (which builds
    the root without dims, then sets them; a constructor given the batch size adopts the
    names of a nested named collection, in both libraries)."""
    q = TensorDict({"b": torch.zeros(2, 3)}, batch_size=[2, 3], names=["i", "j"])
    by_dict = TensorDict.from_dict({"a": torch.zeros(2, 3), "q": q}, auto_batch_size=True)
    by_tuple = TensorDict.from_tuple((torch.zeros(2, 3), q), auto_batch_size=True)
    for out, nested in ((by_dict, "q"), (by_tuple, "1")):
        assert out.batch_size == (2, 3) and out.names == [None, None]
        assert out[nested].names == ["i", "j"]
    given = TensorDict({"a": torch.zeros(2, 3), "q": q}, batch_size=[2, 3])
    assert given.names == ["i", "j"]


def test_an_inferred_batch_size_grows_an_empty_nested_collection() -> None:
    """``from_dict``/``from_tuple`` with ``auto_batch_size``: a nested collection without
    a leaf does not stop the inference (as ``auto_batch_size_``); it grows to the root's
    batch size where its own does not start with it, as the peer's (a tensor first), and
    the caller's collection is left as it was."""
    t = torch.zeros(2, 3, 4)
    for own in ([], [2], [5]):
        empty = TensorDict({}, batch_size=own)
        out = TensorDict.from_tuple((t, empty), auto_batch_size=True)
        assert out.batch_size == (2, 3, 4)
        assert out["1"].batch_size == (2, 3, 4)
        assert empty.batch_size == tuple(own)
    kept = TensorDict.from_dict({"t": t, "e": TensorDict({}, [2, 3, 4, 5])}, batch_dims=2)
    assert (kept.batch_size, kept["e"].batch_size) == ((2, 3), (2, 3))
    deeper = TensorDict.from_dict(
        {"t": t, "m": {"e": TensorDict({}, [2, 3, 4, 5])}}, auto_batch_size=True
    )
    assert (deeper.batch_size, deeper["m"].batch_size) == ((2, 3, 4), (2, 3, 4, 5))
    alone = TensorDict.from_dict({"e": TensorDict({}, [2])}, auto_batch_size=True)
    assert alone.batch_size == (2,)


def test_from_dict_keeps_a_python_values_own_batch_size() -> None:
    """A ``NonTensorData`` with batch dims keeps them (``from_tuple(tuple(td.values()))``),
    and counts with them when the batch size is inferred (cut to ``batch_dims``), as the
    peer's; one that does not start with a given batch size spans it."""
    value = NonTensorData([1, 2], batch_size=[1, 1])
    out = TensorDict.from_tuple((value,))
    assert (out.batch_size, out.get("0").batch_size, out["0"]) == ((), (1, 1), [1, 2])
    inferred = TensorDict.from_tuple((value, torch.zeros(1, 3)), auto_batch_size=True)
    assert (inferred.batch_size, inferred.get("0").batch_size) == ((1,), (1, 1))
    alone = TensorDict.from_tuple((value,), auto_batch_size=True)
    assert alone.batch_size == (1, 1)
    cut = TensorDict.from_dict({"a": NonTensorData("s", batch_size=[2, 3])}, batch_dims=1)
    assert (cut.batch_size, cut.get("a").batch_size, cut["a"]) == ((2,), (2,), "s")
    spans = TensorDict.from_dict({"a": NonTensorData("s", batch_size=[2])}, batch_size=[3])
    assert (spans.get("a").batch_size, spans["a"]) == ((3,), "s")
    nested = TensorDict.from_dict({"a": {"b": NonTensorData("s", batch_size=[2, 3])}})
    assert nested.get(("a", "b")).batch_size == (2, 3)


def test_an_inferred_batch_size_grows_a_nested_record() -> None:
    """``from_tuple(tuple(rec.values()), auto_batch_size=True)``: a nested record whose
    fields allow more batch dims than it has gets them (a copy: the caller's keeps its
    batch size), as the peer's ``auto_batch_size_`` grows it (in place)."""

    @tensorclass
    class Inner:
        y: torch.Tensor
        z: Any = None

    inner = Inner(y=torch.zeros(5, 2, 2), batch_size=[5, 2])
    out = TensorDict.from_tuple((torch.zeros(5, 2), inner), auto_batch_size=True)
    assert (out.batch_size, out["1"].batch_size) == ((5, 2), (5, 2, 2))
    assert isinstance(out["1"], Inner) and out["1"].z is None
    assert inner.batch_size == (5, 2)


def test_a_grown_copy_of_a_locked_node_is_locked() -> None:
    """``from_tuple`` / ``from_dict(..., auto_batch_size=True)`` of a locked nested
    TensorDict that the inferred batch size grows: the copy is locked, nested nodes too, as
    the peer's result holds the caller's locked node (program 15,550,104 of
    methods,index,shape,combine, fz28b); the caller's keeps its batch size."""
    node = TensorDict({"n": {"b": torch.zeros(3, 2, 3)}}, batch_size=[3]).lock_()
    out = TensorDict.from_tuple((node, torch.zeros(3)), auto_batch_size=True)
    assert out["0"].batch_size == (3, 2, 3) and out["0"].is_locked
    assert out["0", "n"].is_locked and node.batch_size == (3,)
    with pytest.raises(RuntimeError, match="locked"):
        out["0"]["c"] = torch.zeros(3, 2, 3)
    free = TensorDict({"b": torch.zeros(3, 2)}, batch_size=[3])
    grown = TensorDict.from_dict({"a": free, "c": torch.zeros(3)}, auto_batch_size=True)
    assert grown["a"].batch_size == (3, 2) and not grown["a"].is_locked


def test_a_given_metadata_stays_one_through_from_dict_and_from_tuple() -> None:
    """fz31b (program 16,432,978 L16 of methods,features,entries,records): a ``MetaData``
    without batch dims given to ``from_dict`` / ``from_tuple`` / ``make_tensordict`` stays
    a ``MetaData`` (of the node's batch size), as the constructor keeps it and as the
    peer's; tclass made it a ``NonTensorData``. A plain value is a ``NonTensorData``."""
    meta = tclass.MetaData({"k": 1}, batch_size=[])
    built = [
        TensorDict.from_dict({"a": torch.zeros(2), "m": meta, "s": "x"}, auto_batch_size=True),
        TensorDict.from_dict({"a": torch.zeros(2), "m": meta, "s": "x"}, batch_size=[2]),
        TensorDict.from_tuple((torch.zeros(2), meta)),
        tclass.make_tensordict({"m": meta}, batch_size=[]),
    ]
    for td in built:
        node = td.get("m" if "m" in td.keys() else "1")
        assert type(node) is tclass.MetaData and node.data == {"k": 1}
    assert type(built[0].get("s")) is tclass.NonTensorData
    assert list(built[1].get("m").batch_size) == [2]


@pytest.mark.parametrize("lib_name", ["tclass", "tensordict"])
def test_from_dict_copies_numpy_arrays_torch_cannot_view(lib_name: str) -> None:
    """An array with negative strides (``a[::-1]``, ``np.flip``, as environments hand back
    frames) is a tensor entry, copied, as the constructor makes it; tclass's ``from_dict``
    kept it as one Python value (a ``NonTensorData`` holding the array)."""
    lib = pytest.importorskip(lib_name)
    flipped = np.arange(6.0).reshape(3, 2)[::-1]
    td = lib.from_dict({"obs": flipped, "n": {"r": np.arange(3)[::-1]}}, batch_size=[3])
    assert type(td.get("obs")) is torch.Tensor and type(td.get(("n", "r"))) is torch.Tensor
    assert td["obs"].tolist() == flipped.tolist() and td["n", "r"].tolist() == [2, 1, 0]
    assert td[0]["obs"].tolist() == [4.0, 5.0]
    strings = lib.from_dict({"s": np.array(["a", "b"])[::-1]}, batch_size=[2])
    assert not isinstance(strings.get("s"), torch.Tensor)  # not numbers: a Python value


@pytest.mark.parametrize("lib_name", ["tclass", "tensordict"])
def test_negative_stride_arrays_reach_fields_and_in_place_writes(lib_name: str) -> None:
    """The same arrays given to a record's tensor field, ``set_``, ``update_`` and
    ``load_state_dict``: copied into tensors, as the peer does; tclass refused them
    (``FieldTypeError``, ``InPlaceWriteError``, torch's "negative strides" ``ValueError``)."""
    lib = pytest.importorskip(lib_name)
    namespace = {"__annotations__": {"x": torch.Tensor}, "__module__": __name__}
    rec = lib.tensorclass(type("Flipped", (), namespace))
    flipped = np.arange(3.0)[::-1]
    assert rec(x=flipped, batch_size=[3]).x.tolist() == [2.0, 1.0, 0.0]
    for write in (
        lambda td: td.set_("x", flipped),
        lambda td: td.update_({"x": flipped}),
        lambda td: td.load_state_dict({"x": flipped}),
    ):
        td = lib.TensorDict({"x": torch.zeros(3, dtype=torch.float64)}, [3])
        write(td)
        assert td["x"].tolist() == [2.0, 1.0, 0.0]
