"""Tests for tclass/_bridges.py: numpy structured arrays (``from_struct_array`` /
``to_struct_array``) and pytrees (``from_pytree`` / ``to_pytree``), on TensorDicts and
tensorclasses, with round trips and comparisons with the peer."""

from __future__ import annotations

import warnings
from collections import OrderedDict, namedtuple
from typing import Any

import numpy as np
import pytest
import torch
import torch.utils._pytree as pytree
from hypothesis import given

import tclass
from tclass import NonTensorData, NonTensorStack, TensorClass, TensorDict, errors

from strategies import SETTINGS, leaf_items, tensordicts  # noqa: E402

Point = namedtuple("Point", ["x", "y"])


class Row(TensorClass):
    a: torch.Tensor
    b: torch.Tensor


def _records() -> np.ndarray[Any, Any]:
    dtype = [
        ("a", np.float32),
        ("b", np.int64, (2,)),
        ("c", [("d", np.float64), ("e", np.bool_)]),
        ("u", "U4"),
    ]
    array = np.zeros((3,), dtype=dtype)
    array["a"] = [1, 2, 3]
    array["b"][:, 1] = 7
    array["c"]["e"] = [True, False, True]
    array["u"] = ["ab", "cd", "ef"]
    return array


# --- structured arrays --------------------------------------------------------------------


class TestFromStructArray:
    def test_fields_become_entries(self) -> None:
        td = TensorDict.from_struct_array(_records())
        assert td.batch_size == torch.Size([3])
        assert td["a"].dtype == torch.float32 and td["a"].tolist() == [1.0, 2.0, 3.0]
        assert td["b"].shape == (3, 2) and td["b"][:, 1].tolist() == [7, 7, 7]
        assert isinstance(td["c"], TensorDict) and td["c", "d"].dtype == torch.float64
        assert td["c", "e"].tolist() == [True, False, True]
        assert isinstance(td.get("u"), NonTensorStack) and td["u"] == ["ab", "cd", "ef"]

    def test_data_is_copied(self) -> None:
        array = _records()
        td = tclass.from_struct_array(array)
        td["a"][0] = 100
        assert array["a"][0] == 1

    def test_batch_is_the_array_shape(self) -> None:
        array = np.zeros((3, 4), dtype=[("a", np.float32), ("b", np.int8, (5,))])
        td = tclass.from_struct_array(array)
        assert td.batch_size == torch.Size([3, 4]) and td["b"].shape == (3, 4, 5)

    @pytest.mark.parametrize(
        "options, expected",
        [
            ({"batch_dims": 1, "auto_batch_size": True}, [3]),
            ({"batch_size": []}, []),
            ({"auto_batch_size": True}, [3, 4]),
            ({"batch_dims": 0, "auto_batch_size": True}, []),
        ],
    )
    def test_batch_options(self, options: dict[str, Any], expected: list[int]) -> None:
        array = np.zeros((3, 4), dtype=[("a", np.float32), ("n", [("m", np.int16)]), ("s", "U2")])
        td = tclass.from_struct_array(array, **options)
        assert td.batch_size == torch.Size(expected)
        assert td["n"].batch_size[: len(expected)] == torch.Size(expected)
        assert td.get("s").batch_size == torch.Size(expected)

    def test_equal_values_stay_one_value(self) -> None:
        array = np.zeros((3,), dtype=[("a", np.float32), ("env", "U5")])
        array["env"] = "pong"
        td = tclass.from_struct_array(array)
        assert isinstance(td.get("env"), NonTensorData) and td["env"] == "pong"

    def test_object_and_bytes_fields(self) -> None:
        array = np.zeros((2,), dtype=[("o", object), ("s", "S3")])
        array["o"] = [{"k": 1}, [1, 2]]
        array["s"] = [b"ab", b"c"]
        td = tclass.from_struct_array(array)
        assert td["o"] == [{"k": 1}, [1, 2]] and td["s"] == [b"ab", b"c"]

    def test_big_endian_fields(self) -> None:
        array = np.zeros((2,), dtype=[("a", ">f4"), ("b", ">i8")])
        array["a"] = [1.5, 2.5]
        td = tclass.from_struct_array(array)
        assert td["a"].tolist() == [1.5, 2.5] and td["a"].dtype == torch.float32

    def test_device(self) -> None:
        td = tclass.from_struct_array(_records(), device="cpu")
        assert td.device == torch.device("cpu") and td["c"].device == torch.device("cpu")

    def test_record_class(self) -> None:
        array = np.zeros((4,), dtype=[("a", np.float32), ("b", np.int64, (2,))])
        row = Row.from_struct_array(array)
        assert type(row) is Row and row.batch_size == torch.Size([4]) and row.b.shape == (4, 2)

    @pytest.mark.parametrize("bad", [np.zeros(3), [1, 2], "x"])
    def test_not_a_struct_array(self, bad: Any) -> None:
        with pytest.raises(errors.EntryTypeError, match="structured array"):
            tclass.from_struct_array(bad)

    def test_like_the_peer(self) -> None:
        peer = pytest.importorskip("tensordict")
        array = _records()[["a", "b", "c"]]
        ours, theirs = tclass.from_struct_array(array), peer.TensorDict.from_struct_array(array)
        assert ours.batch_size == theirs.batch_size
        for key in ("a", "b", ("c", "d"), ("c", "e")):
            assert torch.equal(ours[key], theirs[key]), key


def test_from_struct_array_auto_batch_size_reaches_the_leaves_dims() -> None:
    """``auto_batch_size=True``: the dims every leaf shares, a field's sub-array dims
    included (nested nodes too; ``batch_dims`` caps them), as the peer's (fuzzer, fz26d)."""
    td = TensorDict(
        {"d": torch.zeros(4, 3, 1, 2, dtype=torch.int32), "m": {"c": torch.zeros(4, 3, 1, 2, 3)}},
        [4, 3, 1],
    )
    array = td.to_struct_array()
    assert TensorDict.from_struct_array(array).batch_size == (4, 3, 1)
    auto = TensorDict.from_struct_array(array, auto_batch_size=True)
    assert auto.batch_size == (4, 3, 1, 2) and auto["m"].batch_size == (4, 3, 1, 2, 3)
    capped = TensorDict.from_struct_array(array, auto_batch_size=True, batch_dims=2)
    assert capped.batch_size == (4, 3)


def test_from_struct_array_ignores_batch_dims_without_auto_batch_size() -> None:
    """As the peer 0.15: each node keeps its array's shape (a nested field its own dims),
    with the peer's FutureWarning where auto_batch_size would differ (fuzzer, fz27d:
    programs 15,510,095 and 15,520,170 of methods,index,shape,combine)."""
    td = TensorDict(
        {"n": TensorDict({"d": torch.ones(2, 3)}, [2, 3]), "c": torch.ones(2, 3)}, [2, 3]
    )
    array = td.to_struct_array()
    with pytest.warns(FutureWarning, match="ignores batch_dims=1"):
        out = TensorDict.from_struct_array(array, batch_dims=1)
    assert out.batch_size == (2, 3) and out["n"].batch_size == (2, 3)
    with pytest.warns(FutureWarning, match="drop batch_dims"):
        sized = TensorDict.from_struct_array(array, batch_dims=1, batch_size=[2])
    assert sized.batch_size == (2,) and sized["n"].batch_size == (2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same batch sizes as auto_batch_size's: silent
        assert TensorDict.from_struct_array(array, batch_dims=2)["n"].batch_size == (2, 3)
    capped = TensorDict.from_struct_array(array, batch_dims=1, auto_batch_size=True)
    assert capped.batch_size == (2,) and capped["n"].batch_size == (2,)


class TestToStructArray:
    def test_round_trip(self) -> None:
        array = _records()
        back = tclass.from_struct_array(array).to_struct_array()
        assert back.shape == (3,) and back.dtype.names == array.dtype.names
        for name in ("a", "b"):
            np.testing.assert_array_equal(back[name], array[name])
        np.testing.assert_array_equal(back["c"]["e"], array["c"]["e"])
        assert back["u"].tolist() == ["ab", "cd", "ef"] and back.dtype["u"].kind == "U"

    @pytest.mark.parametrize("lib", ["tclass", "tensordict"])
    def test_a_lone_tensor_is_copied(self, lib: str) -> None:
        # a one-field collection is no evidence of a record buffer: its array is a copy,
        # as the peer's (program 15,530,113 of methods,index,shape,combine L8: a result
        # before from_struct_array(x.to_struct_array()) changed with a later write)
        module = tclass if lib == "tclass" else pytest.importorskip("tensordict")
        for td in (
            module.TensorDict({"b": torch.ones(1, 2, 3, 1)}, [1, 2, 3]),
            module.TensorDict.from_struct_array(np.zeros(3, dtype=[("b", "<f4", (1,))])),
        ):
            array = td.to_struct_array()
            array["b"][...] = 7
            assert not (td["b"] == 7).any()
            back = module.TensorDict.from_struct_array(td.to_struct_array())
            back["b"].fill_(5)
            assert not (td["b"] == 5).any()

    def test_nested_batch_dims_become_sub_arrays(self) -> None:
        td = TensorDict(
            {
                "a": torch.zeros(3, 2),
                "n": TensorDict({"c": torch.arange(12).reshape(3, 4)}, [3, 4]),
            },
            [3],
        )
        array = td.to_struct_array()
        assert array.shape == (3,) and array.dtype["a"].shape == (2,)
        assert array["n"].shape == (3, 4) and array["n"]["c"].tolist() == td["n", "c"].tolist()
        back = tclass.from_struct_array(array)
        assert back["n"].batch_size == torch.Size([3, 4]) and (back == td).all()

    def test_python_values(self) -> None:
        td = TensorDict(
            {
                "a": torch.zeros(2),
                "s": NonTensorData("txt", [2]),
                "o": NonTensorData({"k": 1}, [2]),
            },
            [2],
        )
        array = td.to_struct_array()
        assert array.dtype["s"].kind == "U" and array["s"].tolist() == ["txt", "txt"]
        assert array.dtype["o"] == np.dtype(object) and array["o"].tolist() == [{"k": 1}, {"k": 1}]
        back = tclass.from_struct_array(array)
        assert back["s"] == "txt" and back["o"] == {"k": 1}

    def test_value_stack(self) -> None:
        td = torch.stack(
            [
                TensorDict({"a": torch.zeros(()), "s": NonTensorData("x")}, []),
                TensorDict({"a": torch.ones(()), "s": NonTensorData("yy")}, []),
            ]
        )
        array = td.to_struct_array()
        assert array["s"].tolist() == ["x", "yy"] and array["a"].tolist() == [0.0, 1.0]

    def test_no_batch(self) -> None:
        array = TensorDict({"a": torch.zeros(2)}, []).to_struct_array()
        assert array.shape == () and array["a"].tolist() == [0.0, 0.0]

    def test_requires_grad_is_detached(self) -> None:
        td = TensorDict({"a": torch.zeros(3, requires_grad=True)}, [3])
        assert td.to_struct_array()["a"].tolist() == [0.0, 0.0, 0.0]

    def test_record(self) -> None:
        row = Row(torch.zeros(2), torch.ones(2, 3), batch_size=[2])
        array = row.to_struct_array()
        assert array.dtype.names == ("a", "b") and array["b"].shape == (2, 3)
        assert Row.from_struct_array(array).b.tolist() == row.b.tolist()

    @pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e5m2])
    def test_dtype_numpy_lacks(self, dtype: torch.dtype) -> None:
        td = TensorDict({"n": {"w": torch.zeros(2, dtype=dtype)}}, [2])
        with pytest.raises(errors.EntryTypeError, match=r"\('n', 'w'\).*cast it"):
            td.to_struct_array()

    def test_like_the_peer(self) -> None:
        peer = pytest.importorskip("tensordict")
        source = {"a": torch.arange(6.0).reshape(3, 2), "n": {"c": torch.arange(3)}}
        ours = TensorDict(source, [3]).to_struct_array()
        theirs = peer.TensorDict(source, [3]).to_struct_array()
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours["a"], theirs["a"])
        np.testing.assert_array_equal(ours["n"]["c"], theirs["n"]["c"])


@SETTINGS
@given(td=tensordicts(max_dims=2))
def test_struct_array_round_trip(td: TensorDict) -> None:
    """Any TensorDict of numeric leaves comes back with the same batch sizes and leaves."""
    back = tclass.from_struct_array(td.to_struct_array())
    assert back.batch_size == td.batch_size
    for path, leaf in leaf_items(td):
        assert back.get(path).dtype == leaf.dtype and torch.equal(back.get(path), leaf), path
        parent = path[:-1]
        if parent:
            assert back.get(parent).batch_size == td.get(parent).batch_size


# --- pytrees ------------------------------------------------------------------------------


def _tree() -> dict[str, Any]:
    return {
        "a": torch.zeros(3),
        "b": (torch.ones(3, 2), [torch.zeros(3), 1, "s"]),
        "c": Point(torch.zeros(3), None),
        "d": OrderedDict(z=torch.ones(3)),
    }


def _same_tree(a: Any, b: Any) -> None:
    leaves_a, spec_a = pytree.tree_flatten(a)
    leaves_b, spec_b = pytree.tree_flatten(b)
    assert spec_a == spec_b
    for x, y in zip(leaves_a, leaves_b):
        if isinstance(x, torch.Tensor):
            assert x is y
        else:
            assert type(x) is type(y) and x == y


class TestVmap:
    """Collections through ``torch.vmap`` (as pytree nodes): the batch size loses the
    mapped dim inside and gets it back outside, as the peer's."""

    def test_batch_size_follows_the_mapped_dim(self) -> None:
        td = TensorDict(a=torch.randn(4, 3, 5), n={"b": torch.zeros(4, 3)}, batch_size=[4, 3])
        inside: list[torch.Size] = []

        def body(x: TensorDict) -> TensorDict:
            inside.append(x.batch_size)
            assert x["n"].batch_size == x.batch_size
            return x

        out = torch.vmap(body)(td)
        assert inside == [torch.Size([3])] and out.batch_size == (4, 3)
        assert out["n"].batch_size == (4, 3) and torch.equal(out["a"], td["a"])
        assert torch.vmap(body, (1,))(td).batch_size == (3, 4) and inside[-1] == (4,)
        assert torch.vmap(torch.vmap(body))(td).batch_size == (4, 3) and inside[-1] == ()
        assert torch.vmap(lambda x: x.sum(-1))(td).batch_size == (4,)

    def test_an_unbatched_tensor_is_not_mapped(self) -> None:
        data = torch.randn(7, 11)
        td = TensorDict(a=torch.randn(4, 3, 5), u=tclass.UnbatchedTensor(data), batch_size=[4, 3])

        def body(x: TensorDict) -> TensorDict:
            assert x.get("u").shape == (7, 11) and x.get("u").batch_size == (3,)
            return x

        out = torch.vmap(body)(td)
        unbatched = out.get("u")
        assert isinstance(unbatched, tclass.UnbatchedTensor) and unbatched.batch_size == (4, 3)
        assert unbatched.data_ptr() == data.data_ptr() and out["a"].shape == (4, 3, 5)


class TestPytree:
    def test_round_trip(self) -> None:
        tree = _tree()
        td = TensorDict.from_pytree(tree)
        assert td.batch_size == torch.Size([])
        _same_tree(td.to_pytree(), tree)

    def test_structure(self) -> None:
        td = tclass.from_pytree(_tree(), auto_batch_size=True)
        assert td.batch_size == torch.Size([3])
        assert torch.equal(td["b", "0"], torch.ones(3, 2)) and td["b", "1", "1"] == 1
        assert td["c", "y"] is None and td["c", "x"].shape == (3,)
        assert td["b", "1"].batch_size == torch.Size([3])  # "1" and "s" do not constrain it

    def test_python_leaves_are_kept(self) -> None:
        back = tclass.from_pytree({"n": 1, "f": 2.5, "s": "x"}).to_pytree()
        assert back == {"n": 1, "f": 2.5, "s": "x"}  # the peer gives tensor(1), tensor(2.5)

    def test_top_level_list(self) -> None:
        tree = [torch.zeros(2), torch.ones(2)]
        td = tclass.from_pytree(tree, batch_size=[2])
        assert set(td.keys()) >= {"0", "1"} and td.batch_size == torch.Size([2])
        _same_tree(td.to_pytree(), tree)

    def test_collections_inside_are_leaves(self) -> None:
        inner = TensorDict({"x": torch.zeros(2)}, [2])
        back = tclass.from_pytree({"inner": inner}).to_pytree()
        assert back["inner"] is inner

    def test_tree_map_after_round_trip(self) -> None:
        back = tclass.from_pytree(_tree()).to_pytree()
        doubled = pytree.tree_map(lambda t: t * 2 if isinstance(t, torch.Tensor) else t, back)
        assert torch.equal(doubled["b"][0], torch.full((3, 2), 2.0))

    def test_tree_map_reaches_the_values_of_a_stack_of_python_values(self) -> None:
        # td[key] of a NonTensorStack is a LinkedList: a list to pytree, as the peer's.
        stack = torch.stack([TensorDict({"s": "a"}, []), TensorDict({"s": "b"}, [])])
        values = stack["s"]
        assert type(values) is tclass.utils.LinkedList
        assert pytree.tree_map(str.upper, values) == ["A", "B"]
        assert pytree.tree_leaves({"v": values}) == ["a", "b"]

    def test_survives_indexing(self) -> None:
        td = tclass.from_pytree(
            {"a": torch.arange(4), "b": [torch.arange(4)]}, auto_batch_size=True
        )
        back = td[1:3].to_pytree()
        assert back["a"].tolist() == [1, 2] and back["b"][0].tolist() == [1, 2]

    def test_without_markers_returns_itself(self) -> None:
        td = TensorDict({"a": torch.zeros(2)}, [2])
        assert td.to_pytree() is td

    def test_collection_at_the_top_is_returned(self) -> None:
        # the peer's: from_pytree(td.to_pytree()) round-trips a TensorDict without markers
        td = TensorDict({"a": torch.arange(3.0), "n": {"b": torch.arange(3)}}, [3])
        back = tclass.from_pytree(td.to_pytree(), batch_size=[3])
        assert back is td and back.batch_size == (3,)
        assert back["n", "b"].tolist() == [0, 1, 2]
        lazy = tclass.lazy_stack([TensorDict(a=torch.ones(i + 1)) for i in range(2)])
        assert tclass.from_pytree(lazy) is lazy and TensorDict.from_pytree(lazy) is lazy

        @tclass.tensorclass
        class R:
            x: torch.Tensor

        rec = R(x=torch.arange(3.0), batch_size=[3])
        assert TensorDict.from_pytree(rec) is rec
        wrapped = R.from_pytree(TensorDict(x=torch.ones(2), batch_size=[2]))  # the peer's: an R
        assert type(wrapped) is R and wrapped.x.tolist() == [1.0, 1.0]

    def test_leaf_at_the_top(self) -> None:
        with pytest.raises(errors.EntryTypeError, match="wrap it"):
            tclass.from_pytree(torch.zeros(3))

    def test_collections_and_tensors_at_the_top_come_back_as_they_are(self) -> None:
        """``TensorDict.from_pytree`` of what ``to_pytree`` gives for a lazy stack or a
        record (itself), or of a tensor: returned as is, as the peer's (fuzzer, fz26d)."""
        stack = tclass.lazy_stack([TensorDict({"c": torch.arange(2)}, [])], 0)
        assert TensorDict.from_pytree(stack.to_pytree()) is stack

        @tclass.tensorclass
        class Point:
            x: torch.Tensor

        point = Point(x=torch.zeros(3), batch_size=[3])
        assert TensorDict.from_pytree(point.to_pytree()) is point
        tensor = torch.zeros(3)
        assert TensorDict.from_pytree(tensor) is tensor

    def test_plain_nodes_record_only_their_type(self) -> None:
        """A list, tuple or dict with string keys holds a ``_pytree_type`` entry and
        nothing else, as the peer's; other nodes keep their context too."""
        td = TensorDict.from_pytree(
            {"obs": torch.zeros(3, 4), "pair": (torch.zeros(3), torch.ones(3))},
            auto_batch_size=True,
        )
        assert sorted(td.keys()) == ["_pytree_type", "obs", "pair"]
        assert sorted(td["pair"].keys()) == ["0", "1", "_pytree_type"]
        back = td.to_pytree()
        assert type(back["pair"]) is tuple and torch.equal(back["pair"][1], torch.ones(3))
        marked = tclass.from_pytree({"p": Point(torch.zeros(1), None), 3: torch.ones(1)})
        assert "_pytree_spec" in marked.keys() and "_pytree_spec" in marked["p"].keys()
        assert "_pytree_spec" not in tclass.from_pytree([OrderedDict(z=1)])["0"].keys()

    def test_key_order_and_empty_nodes_come_back(self) -> None:
        tree = {"z": [torch.zeros(1)], "a": OrderedDict(y=torch.ones(1), b=torch.ones(1)), "e": []}
        _same_tree(tclass.from_pytree(tree).to_pytree(), tree)

    def test_a_node_type_entry_alone_is_not_enough_for_other_nodes(self) -> None:
        td = tclass.from_pytree({"p": Point(torch.zeros(1), None)})
        del td["p"]["_pytree_spec"]
        assert td.to_pytree()["p"] is not None  # left as the collection it is
        assert isinstance(td.to_pytree()["p"], TensorDict)

    def test_reserved_key(self) -> None:
        with pytest.raises(errors.KeyConflictError, match="_pytree_type"):
            tclass.from_pytree({"_pytree_type": torch.zeros(1)})

    def test_record(self) -> None:
        row = Row.from_pytree({"a": torch.zeros(2), "b": torch.ones(2)}, batch_size=[2])
        assert type(row) is Row and row.batch_size == torch.Size([2])
        assert Row.from_pytree(row) is row and row.to_pytree() is row

    def test_like_the_peer(self) -> None:
        peer = pytest.importorskip("tensordict")
        tree = {"a": torch.zeros(3), "b": (torch.ones(3, 2), [torch.zeros(3)])}
        ours = tclass.from_pytree(tree, auto_batch_size=True)
        theirs = peer.from_pytree(tree, auto_batch_size=True)
        assert ours.batch_size == theirs.batch_size
        assert torch.equal(ours["b", "1", "0"], theirs["b", "1", "0"])
        _same_tree(ours.to_pytree(), theirs.to_pytree())
