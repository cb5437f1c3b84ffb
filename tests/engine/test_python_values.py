"""Python values inside TensorDicts, with the peer's semantics (issue 18, items 1-4).

A TensorDict stores a Python value given to it as a ``NonTensorData`` node (lists follow
the peer's list rules), reading an entry with ``td[key]`` gives the value back while
``td.get(key)`` gives the node, a value spans the batch of the collection that holds it,
and the peer's switches (``set_list_to_stack``, ``set_capture_non_tensor_stack``,
``set_lazy_legacy``, ``get_defaults_to_none``) work as context managers, decorators and
``.set()``. The ``peer`` tests run the same scenario with tensordict and compare.
"""

from __future__ import annotations

import copy as copy_module
import pickle
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch

import tclass
from tclass import (
    LazyStackedTensorDict,
    MetaData,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    errors,
)
from tclass._core._options import OPTIONS

# --- storing values ----------------------------------------------------------------------


class TestStoringValues:
    def test_a_string_is_stored_as_non_tensor_data(self) -> None:
        td = TensorDict({"a": torch.zeros(2), "s": "hello"}, [2])
        node = td.get("s")
        assert type(node) is NonTensorData and node.data == "hello"
        assert node.batch_size == torch.Size([2])
        assert td["s"] == "hello"

    @pytest.mark.parametrize(
        "value",
        [None, "text", b"raw", object(), 1j, ("x", "y"), {1, 2}, np.array(["p", "q"])],
        ids=["none", "str", "bytes", "object", "complex", "str-tuple", "set", "str-array"],
    )
    def test_python_values_in_every_way_of_setting(self, value: Any) -> None:
        built = TensorDict({"v": value}, [2])
        by_item = TensorDict({}, [2])
        by_item["v"] = value
        by_set = TensorDict({}, [2]).set("v", value)
        by_update = TensorDict({}, [2]).update({"v": value})
        by_kwargs = TensorDict(v=value, batch_size=[2])
        for td in (built, by_item, by_set, by_update, by_kwargs):
            node = td.get("v")
            assert isinstance(node, NonTensorData), type(node)
            assert node.batch_size == torch.Size([2])
            read = td["v"]
            if isinstance(value, np.ndarray):
                assert read is value
            else:
                assert read == value or read is value

    @pytest.mark.parametrize("value", ["x y", None])
    def test_a_value_has_no_entries_to_set_under(self, value: Any) -> None:
        # The peer hides the entry in the value's node (keys() and clone() lose it).
        td = TensorDict({"a": torch.zeros(0, 2), "zz": value}, [0])
        for entry in (TensorDict({}, [0]), torch.zeros(0), "s"):
            with pytest.raises(errors.EntryTypeError, match="cannot set 'a' under it"):
                td["zz", "a"] = entry
            with pytest.raises(errors.EntryTypeError, match="has no entries"):
                td.set(("zz", "a"), entry)
        assert td["zz"] == value and sorted(td.keys(True)) == ["a", "zz"]

    def test_an_object_keeps_its_identity(self) -> None:
        marker = object()
        td = TensorDict({"o": marker}, [3])
        assert td["o"] is marker and td[1]["o"] is marker and td[:2]["o"] is marker

    def test_nested_dict_values(self) -> None:
        td = TensorDict({"meta": {"name": "run", "x": torch.ones(2)}}, [2])
        assert isinstance(td.get("meta"), TensorDict)
        assert td["meta", "name"] == "run"
        assert type(td.get(("meta", "name"))) is NonTensorData

    @pytest.mark.parametrize(
        "value, expected",
        [
            (3.0, torch.tensor(3.0)),
            (True, torch.tensor(True)),
            (2, torch.tensor(2)),
            (np.float32(1.5), torch.tensor(1.5)),
            (np.bool_(True), torch.tensor(True)),
            ((1, 2), torch.tensor([1, 2])),
            (np.arange(3), torch.arange(3)),
        ],
        ids=["float", "bool", "int", "np-float", "np-bool", "int-tuple", "int-array"],
    )
    def test_numbers_become_tensors(self, value: Any, expected: torch.Tensor) -> None:
        out = TensorDict({"n": value}, [])["n"]
        assert isinstance(out, torch.Tensor)
        assert out.dtype == expected.dtype and torch.equal(out, expected)

    def test_a_number_in_a_batched_collection_is_a_batch_mismatch(self) -> None:
        with pytest.raises(errors.BatchSizeError, match="'n'") as info:
            TensorDict({"n": 3}, [2])
        assert isinstance(info.value, RuntimeError)  # what the peer raises

    def test_none_is_a_value(self) -> None:
        td = TensorDict({"x": torch.zeros(2)}, [2])
        td["n"] = None
        assert td["n"] is None and "n" in td
        assert type(td.get("n")) is NonTensorData and td.get("n").data is None
        assert td[0]["n"] is None


class TestLists:
    def test_list_of_numbers_is_a_tensor(self) -> None:
        assert torch.equal(TensorDict({"a": [1, 2]}, [2])["a"], torch.tensor([1, 2]))
        assert torch.equal(
            TensorDict({"a": [[1, 2], [3, 4]]}, [2])["a"], torch.tensor([[1, 2], [3, 4]])
        )
        assert TensorDict({"a": [1.0, 2]}, [2])["a"].dtype == torch.float32

    def test_empty_list_is_an_empty_tensor(self) -> None:
        out = TensorDict({"a": []}, [])["a"]
        assert isinstance(out, torch.Tensor) and out.shape == torch.Size([0])

    def test_list_of_strings_is_a_stack(self) -> None:
        td = TensorDict({"a": ["x", "y"], "t": torch.zeros(2)}, [2])
        node = td.get("a")
        assert type(node) is NonTensorStack and node.batch_size == torch.Size([2])
        assert td["a"] == ["x", "y"] and isinstance(td["a"], list)
        assert td[0]["a"] == "x" and td[1]["a"] == "y"
        assert td[:1]["a"] == ["x"]
        assert type(td[0].get("a")) is NonTensorData

    def test_list_without_batch_dims_gets_its_own(self) -> None:
        td = TensorDict({"a": ["x", "y"]}, [])
        assert td.get("a").batch_size == torch.Size([2]) and td["a"] == ["x", "y"]

    def test_nested_lists_of_strings(self) -> None:
        td = TensorDict({"a": [["a", "b"], ["c", "d"]]}, [2, 2])
        assert td.get("a").batch_size == torch.Size([2, 2])
        assert td[1, 0]["a"] == "c" and td[:, 1]["a"] == ["b", "d"]

    def test_mixed_values(self) -> None:
        td = TensorDict({"a": ["x", 1, None]}, [3])
        assert td["a"] == ["x", 1, None] and td[1]["a"] == 1

    def test_list_of_dicts_keeps_the_dicts(self) -> None:
        td = TensorDict({"a": [{"k": 1}, {"k": 2}]}, [2])
        assert td["a"] == [{"k": 1}, {"k": 2}] and td[1]["a"] == {"k": 2}

    def test_list_of_tensors_is_stacked(self) -> None:
        td = TensorDict({"a": [torch.zeros(3), torch.ones(3)]}, [2])
        assert torch.equal(td["a"], torch.stack([torch.zeros(3), torch.ones(3)]))

    def test_list_of_ragged_tensors_is_a_stack_of_them(self) -> None:
        td = TensorDict({"a": [[1, 2], [3]]}, [2])
        assert type(td.get("a")) is NonTensorStack
        first, second = td["a"]
        assert torch.equal(first, torch.tensor([1, 2])) and torch.equal(second, torch.tensor([3]))

    def test_list_of_tensordicts_is_stacked(self) -> None:
        parts = [TensorDict(x=torch.zeros(2)), TensorDict(x=torch.ones(2))]
        td = TensorDict({"a": parts}, [2])
        assert isinstance(td.get("a"), TensorDict) and td["a", "x"].shape == torch.Size([2, 2])

    def test_list_of_the_wrong_length(self) -> None:
        with pytest.raises(errors.BatchSizeError, match="'a'"):
            TensorDict({"a": ["x", "y", "z"]}, [2])


class TestRoundTrips:
    def test_to_dict_gives_values(self) -> None:
        td = TensorDict({"s": "hello", "n": None, "l": ["a", "b"], "t": torch.zeros(2)}, [2])
        out = td.to_dict()
        assert out["s"] == "hello" and out["n"] is None and out["l"] == ["a", "b"]
        back = TensorDict(out, [2])
        assert back["s"] == "hello" and back["n"] is None and back["l"] == ["a", "b"]
        assert type(back.get("l")) is NonTensorStack

    def test_clone_and_pickle(self) -> None:
        td = TensorDict({"s": "hello", "l": ["a", "b"]}, [2])
        for copy in (td.clone(), pickle.loads(pickle.dumps(td))):
            assert copy["s"] == "hello" and copy["l"] == ["a", "b"]

    def test_stack_of_equal_values_reads_per_element(self) -> None:
        td = TensorDict({"s": "hello"}, [2])
        stacked = torch.stack([td, td.clone()])
        assert type(stacked.get("s")) is NonTensorStack
        assert stacked["s"] == [["hello", "hello"], ["hello", "hello"]]
        assert stacked.get("s").data == "hello" and stacked[1]["s"] == "hello"

    def test_stack_of_different_values(self) -> None:
        stacked = torch.stack([TensorDict({"s": "hello"}, [2]), TensorDict({"s": "bye"}, [2])])
        assert stacked["s"] == [["hello", "hello"], ["bye", "bye"]]
        assert stacked[0]["s"] == "hello" and stacked[1, 0]["s"] == "bye"
        assert torch.cat([stacked[0], stacked[1]])["s"] == ["hello", "hello", "bye", "bye"]

    def test_writing_a_different_value_at_an_index(self) -> None:
        td = TensorDict({"s": "x"}, [3])
        td[1] = TensorDict({"s": "y"}, [])
        assert td["s"] == ["x", "y", "x"]
        td[2] = {"s": "z"}
        assert td["s"] == ["x", "y", "z"]

    def test_saved_and_loaded(self, tmp_path: Path) -> None:
        td = TensorDict({"s": "hello", "l": ["a", "b"], "n": None, "t": torch.ones(2)}, [2])
        td.memmap(tmp_path / "td")
        back = TensorDict.load_memmap(tmp_path / "td")
        assert back["s"] == "hello" and back["l"] == ["a", "b"] and back["n"] is None
        assert torch.equal(back["t"], torch.ones(2))

    def test_a_value_that_is_not_json_needs_allow_pickle(self, tmp_path: Path) -> None:
        td = TensorDict({"o": 1j}, [])
        with pytest.raises(
            errors.NotSerializableError,
            match=r"value at key .o.: a value of type builtins.complex, .*allow_pickle=True",
        ):
            td.memmap(tmp_path / "td")
        td.memmap(tmp_path / "td2", allow_pickle=True)
        assert TensorDict.load_memmap(tmp_path / "td2", allow_pickle=True)["o"] == 1j


class TestReading:
    def test_get_gives_the_node_and_item_the_value(self) -> None:
        td = TensorDict({"s": "v", "l": ["a", "b"]}, [2])
        assert type(td.get("s")) is NonTensorData and td["s"] == "v"
        assert type(td.get("l")) is NonTensorStack and td["l"] == ["a", "b"]
        assert td.get("missing") is None
        assert td.get("missing", "dflt") == "dflt"

    def test_comparing_a_read_value(self) -> None:
        td = TensorDict({"s": "x"}, [2])
        assert td["s"] == "x" and td["s"] != "y"

    def test_values_and_items_give_nodes(self) -> None:
        td = TensorDict({"s": "x", "t": torch.zeros(2)}, [2])
        assert type(dict(td.items())["s"]) is NonTensorData
        assert list(td.keys(leaves_only=True)) == ["t"]

    def test_lazy_stack_reads_values(self) -> None:
        stack = tclass.lazy_stack([TensorDict({"s": "p"}, []), TensorDict({"s": "q"}, [])])
        assert isinstance(stack, LazyStackedTensorDict)
        assert stack["s"] == ["p", "q"] and stack[1]["s"] == "q"

    def test_in_takes_keys_only(self) -> None:
        """As the peer, ``in`` refuses what is no key (a RuntimeError naming NestedKey)."""
        td = TensorDict({"a": torch.zeros(2)}, [2])
        for not_a_key in (0, (0,)):
            with pytest.raises(RuntimeError, match="NestedKey"):
                _ = not_a_key in td
        assert ("a" in td) is True and (("a",) in td) is True


class TestSetAndGetNonTensor:
    def test_a_list_stays_one_value(self) -> None:
        td = TensorDict({"a": torch.zeros(2)}, [2])
        assert td.set_non_tensor("tags", ["x", "y"]) is td
        assert type(td.get("tags")) is NonTensorData and td.get("tags").batch_size == (2,)
        assert td.get_non_tensor("tags") == ["x", "y"] and td[1]["tags"] == ["x", "y"]

    def test_nested_key_and_default(self) -> None:
        td = TensorDict({"n": {"a": torch.zeros(2)}}, [2])
        td.set_non_tensor(("n", "label"), "v")
        assert td.get_non_tensor(("n", "label")) == "v" and td["n", "label"] == "v"
        assert td.get_non_tensor("missing", None) is None
        with pytest.raises(errors.KeyNotFoundError, match="missing"):
            td.get_non_tensor("missing")

    def test_on_a_record(self) -> None:
        class Rec(tclass.TensorClass):
            label: Any = None

        rec = Rec(batch_size=[3]).set_non_tensor("label", [1, 2])
        assert rec.label == [1, 2] and rec.get_non_tensor("label") == [1, 2]


class TestBroadcasting:
    def test_non_tensor_data_without_batch_spans_the_collection(self) -> None:
        built = TensorDict({"s": NonTensorData("x")}, [2])
        by_set = TensorDict({}, [2]).set("s", NonTensorData("x"))
        by_item = TensorDict({}, [2])
        by_item["s"] = NonTensorData("x")
        for td in (built, by_set, by_item):
            assert td.get("s").batch_size == torch.Size([2]) and td[1]["s"] == "x"

    def test_non_tensor_data_of_another_batch_is_rebatched(self) -> None:
        td = TensorDict({"s": NonTensorData("x", batch_size=[3])}, [2])
        assert td.get("s").batch_size == torch.Size([2])

    def test_non_tensor_data_with_more_dims_keeps_them(self) -> None:
        td = TensorDict({"s": NonTensorData("x", batch_size=[2, 3])}, [2])
        assert td.get("s").batch_size == torch.Size([2, 3])

    def test_the_given_node_is_not_changed(self) -> None:
        node = NonTensorData("x")
        TensorDict({"s": node}, [4])
        assert node.batch_size == torch.Size([])


class TestNonTensorStackConstructors:
    def test_from_values(self) -> None:
        stack = NonTensorStack("a", "b")
        assert stack.batch_size == torch.Size([2]) and stack.tolist() == ["a", "b"]
        assert stack.stack_dim == 0 and stack.device is None

    def test_from_nodes(self) -> None:
        stack = NonTensorStack(NonTensorData("a"), NonTensorData("b"))
        assert stack.tolist() == ["a", "b"]
        assert [type(t) for t in stack.tensordicts] == [NonTensorData, NonTensorData]
        assert [t.data for t in stack.tensordicts] == ["a", "b"]

    def test_stack_dim(self) -> None:
        a = NonTensorData("a", batch_size=[2])
        b = NonTensorData("b", batch_size=[2])
        stack = NonTensorStack(a, b, stack_dim=1)
        assert stack.batch_size == torch.Size([2, 2])
        assert stack.tolist() == [["a", "b"], ["a", "b"]]
        assert stack.stack_dim == 1

    def test_stack_dim_too_big(self) -> None:
        with pytest.raises(errors.DimError, match="stack_dim"):
            NonTensorStack("a", "b", stack_dim=1)

    def test_list_values_stay_values(self) -> None:
        stack = NonTensorStack(["a", "b"], ["c", "d"])
        assert stack.batch_size == torch.Size([2]) and stack[1].data == ["c", "d"]

    def test_empty(self) -> None:
        assert NonTensorStack().batch_size == torch.Size([0])

    def test_from_list(self) -> None:
        assert NonTensorStack.from_list(["a", "b"]).tolist() == ["a", "b"]
        nested = NonTensorStack.from_list([["a", "b"], ["c", "d"]])
        assert nested.batch_size == torch.Size([2, 2]) and nested[1, 0].data == "c"
        dicts = NonTensorStack.from_list([{"k": 1}, {"k": 2}])
        assert dicts.batch_size == torch.Size([2]) and dicts[0].data == {"k": 1}

    def test_indexing_and_data(self) -> None:
        stack = NonTensorStack("a", "b")
        assert type(stack[0]) is NonTensorData and stack[0].data == "a"
        assert NonTensorStack("a", "a").data == "a"  # one value for every element
        assert stack.data == ["a", "b"]

    def test_equality_is_per_element(self) -> None:
        assert torch.equal(
            NonTensorStack("a", "b") == NonTensorStack("a", "c"), torch.tensor([True, False])
        )


class TestMetaData:
    def test_holds_one_value(self) -> None:
        meta = MetaData("x", batch_size=[2])
        assert isinstance(meta, NonTensorData) and meta.data == "x"
        assert meta.batch_size == torch.Size([2])

    def test_stacking(self) -> None:
        marker = object()
        same = torch.stack([MetaData(marker), MetaData(marker)])
        assert type(same) is MetaData and same.data is marker
        assert same.batch_size == torch.Size([2])
        different = torch.stack([MetaData("x"), MetaData("y")])
        assert type(different) is NonTensorStack and different.tolist() == ["x", "y"]

    def test_stacking_compares_by_identity(self) -> None:
        # As the peer (its MetaData docstring: "with ``is``, not ``==``"): equal copies, a
        # clone's or a reload's, stack to one value per member, in dense and lazy stacks.
        td = TensorDict({"x": torch.zeros(3), "m": MetaData({"a": 1})}, [3])
        copy = td.clone()
        assert copy["m"] == td["m"] and copy["m"] is not td["m"]
        for stacked in (torch.stack([td, copy]), tclass.lazy_stack([td, copy])):
            node = stacked.get("m")
            assert type(node) is NonTensorStack, type(stacked)
            assert node.tolist() == [[{"a": 1}] * 3] * 2
        for stacked in (torch.stack([td, td]), tclass.lazy_stack([td, td])):
            assert type(stacked.get("m")) is MetaData and stacked["m"] is td["m"]
        equal = torch.stack([MetaData([1]), MetaData([1])])
        assert type(equal) is NonTensorStack and equal.tolist() == [[1], [1]]
        # concatenating keeps one value when the parts hold equal ones (as the peer)
        assert type(torch.cat([td, copy]).get("m")) is MetaData

    def test_inside_a_tensordict(self) -> None:
        td = TensorDict({"m": MetaData("x")}, [3])
        assert type(td.get("m")) is MetaData and td["m"] == "x"
        assert type(td[0].get("m")) is MetaData
        assert type(td.unsqueeze(0).get("m")) is MetaData
        assert td.unsqueeze(0).get("m").batch_size == torch.Size([1, 3])

    @pytest.mark.parametrize(
        "write",
        [
            lambda td: td.set_("m", "y"),
            lambda td: td.update_({"m": "y"}),
            lambda td: td.update({"m": "y"}, inplace=True),
            lambda td: td.set_("m", MetaData("y")),
        ],
    )
    def test_in_place_writes_keep_the_class(self, tmp_path: Path, write: Any) -> None:
        # As the peer, which writes into the node: a plain value written in place into a
        # MetaData leaves a MetaData (it was replaced by a NonTensorData), also in a folder.
        td = TensorDict({"x": torch.zeros(3), "m": MetaData("x")}, [3])
        node = td.get("m")
        write(td)
        assert td.get("m") is node and type(node) is MetaData and node.data == "y"
        saved = TensorDict({"x": torch.zeros(3), "m": MetaData("x")}, [3]).memmap(tmp_path / "a")
        write(saved)
        for got in (saved, TensorDict.load_memmap(tmp_path / "a")):
            assert type(got.get("m")) is MetaData and got["m"] == "y"
        # set() replaces the entry: a plain value is a NonTensorData there, as in the peer
        assert type(td.set("m", "z").get("m")) is NonTensorData

    def test_shallow_clones_copy_the_containers(self) -> None:
        # As the peer (its tree_map copy): a collection's clone(False) / copy() gives each
        # Python value new dict / list / tuple containers over the same leaves, so editing
        # the copy's dict leaves the source's alone; a MetaData's own clone(False) shares it.
        cfg, leaf = {"k": [1], "t": (2,)}, object()
        td = TensorDict(
            {"x": torch.zeros(2), "m": MetaData(cfg), "n": NonTensorData([leaf]),
             "s": NonTensorStack([1], [2]), "sub": {"v": NonTensorData({"a": 1})}},
            [2],
        )  # fmt: skip
        for copy_ in (td.clone(False), td.copy()):
            assert copy_["x"] is td["x"] and copy_["m"] == cfg and copy_["m"] is not cfg
            assert copy_["m"]["k"] is not cfg["k"] and copy_["n"][0] is leaf
            assert copy_["s"][0] is not td["s"][0] and copy_["s"] == [[1], [2]]
            assert copy_["sub", "v"] is not td["sub", "v"] and copy_["sub", "v"] == {"a": 1}
            copy_["m"]["k"].append(9)
            assert cfg == {"k": [1], "t": (2,)}
        assert td.get("m").clone(False).data is cfg

        @tclass.tensorclass
        class Run:
            x: torch.Tensor
            cfg: dict[str, Any]

        run = Run(x=torch.zeros(2), cfg=cfg, batch_size=[2])
        assert run.clone(False).cfg == cfg and run.clone(False).cfg is not cfg

    @pytest.mark.parametrize("name", ["folder", "file.tdz"])
    def test_saving_keeps_the_class(self, tmp_path: Path, name: str) -> None:
        td = TensorDict({"m": MetaData("x"), "n": NonTensorData("y")}, [3])
        saved = td.save(tmp_path / name)
        for got in (saved, TensorDict.load_memmap(tmp_path / name)):
            assert (type(got.get("m")), type(got.get("n"))) == (MetaData, NonTensorData)
            assert got["m"] == "x" and got.get("m").batch_size == (3,)

    @pytest.mark.peer
    def test_saved_metadata_reads_as_metadata_in_the_peer(self, tmp_path: Path) -> None:
        peer = pytest.importorskip("tensordict")
        TensorDict({"m": MetaData("x")}, [3]).memmap(tmp_path / "ours")
        assert type(peer.TensorDict.load_memmap(tmp_path / "ours").get("m")) is peer.MetaData
        peer.TensorDict({"m": peer.MetaData("x")}, [3]).memmap(tmp_path / "theirs")
        assert type(TensorDict.load_memmap(tmp_path / "theirs").get("m")) is MetaData


# --- switches ----------------------------------------------------------------------------


class TestListToStack:
    def test_default(self) -> None:
        assert tclass.list_to_stack() is True

    def test_off_stores_the_list_as_one_value(self) -> None:
        with pytest.warns(DeprecationWarning, match="set_list_to_stack"):
            switch = tclass.set_list_to_stack(False)
        with switch:
            assert tclass.list_to_stack() is False
            td = TensorDict({"a": ["x", "y"], "n": [1, 2]}, [2])
            assert type(td.get("a")) is NonTensorData and td["a"] == ["x", "y"]
            assert td[0]["a"] == ["x", "y"]
            assert torch.equal(td["n"], torch.tensor([1, 2]))  # numbers still become tensors
        assert tclass.list_to_stack() is True

    def test_on_as_a_decorator(self) -> None:
        @tclass.set_list_to_stack(True)
        def build() -> Any:
            return TensorDict({"a": ["x", "y"]}, [2]).get("a")

        assert type(build()) is NonTensorStack

    def test_off_as_a_decorator_warns_once(self) -> None:
        with pytest.warns(DeprecationWarning):

            @tclass.set_list_to_stack(False)
            def build() -> Any:
                return TensorDict({"a": ["x", "y"]}, [2]).get("a")

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert type(build()) is NonTensorData
            assert type(build()) is NonTensorData
        assert tclass.list_to_stack() is True

    def test_set_for_the_rest_of_the_program(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # (the mode is put back to "never set" afterwards: an explicit True changes what a
        # list given to a list field of a tensorclass stores)
        monkeypatch.setattr(OPTIONS, "list_to_stack", tclass.list_to_stack(allow_none=True))
        with pytest.warns(DeprecationWarning):
            switch = tclass.set_list_to_stack(False)
        switch.set()
        assert tclass.list_to_stack() is False
        tclass.set_list_to_stack(True).set()
        assert tclass.list_to_stack() is True and tclass.list_to_stack(allow_none=True) is True


class TestCaptureNonTensorStack:
    def test_default_stacks_equal_values_element_by_element(self) -> None:
        assert tclass.capture_non_tensor_stack() is False
        stacked = torch.stack([NonTensorData("a"), NonTensorData("a")])
        assert type(stacked) is NonTensorStack and stacked.data == "a"
        td = torch.stack([TensorDict({"s": "a"}, []), TensorDict({"s": "a"}, [])])
        assert type(td.get("s")) is NonTensorStack and td["s"] == ["a", "a"]

    def test_on_warns_as_the_peer_does_and_keeps_one_value(self) -> None:
        with pytest.warns(DeprecationWarning, match="set_capture_non_tensor_stack"):
            switch = tclass.set_capture_non_tensor_stack(True)
        with switch:
            assert tclass.capture_non_tensor_stack() is True
            stacked = torch.stack([NonTensorData("a"), NonTensorData("a")])
            assert type(stacked) is NonTensorData and stacked.data == "a"
            td = torch.stack([TensorDict({"s": "a"}, []), TensorDict({"s": "a"}, [])])
            assert type(td.get("s")) is NonTensorData and td["s"] == "a"
        assert tclass.capture_non_tensor_stack() is False

    def test_as_a_decorator(self) -> None:
        @tclass.set_capture_non_tensor_stack(False)
        def stack() -> Any:
            return torch.stack([NonTensorData("a"), NonTensorData("a")])

        assert type(stack()) is NonTensorStack
        assert tclass.capture_non_tensor_stack() is False


class TestLazyLegacy:
    def test_default(self) -> None:
        assert tclass.lazy_legacy() is False

    def test_on_makes_stack_lazy(self) -> None:
        with pytest.warns(DeprecationWarning, match="lazy"):
            switch = tclass.set_lazy_legacy(True)
        parts = [TensorDict(a=torch.zeros(1)), TensorDict(a=torch.ones(1))]
        with switch:
            assert tclass.lazy_legacy() is True
            stacked = torch.stack(parts)
            assert isinstance(stacked, LazyStackedTensorDict)
            assert torch.equal(stacked["a"], torch.tensor([[0.0], [1.0]]))
        assert tclass.lazy_legacy() is False
        assert type(torch.stack(parts)) is TensorDict

    def test_off_as_a_decorator(self) -> None:
        @tclass.set_lazy_legacy(False)
        def read() -> bool:
            return tclass.lazy_legacy()

        assert read() is False


class TestGetDefaultsToNone:
    def test_default(self) -> None:
        with pytest.warns(DeprecationWarning, match="get_defaults_to_none"):
            assert tclass.get_defaults_to_none() is True

    def test_set_to_raise(self) -> None:
        td = TensorDict({"a": torch.zeros(1)}, [])
        try:
            with pytest.warns(DeprecationWarning):
                tclass.set_get_defaults_to_none(False)
            with pytest.raises(errors.KeyNotFoundError, match="'b'"):
                td.get("b")
            assert td.get("b", 3) == 3
        finally:
            with pytest.warns(DeprecationWarning):
                tclass.set_get_defaults_to_none(True)
        assert td.get("b") is None


# --- against the peer --------------------------------------------------------------------


def _value_scenarios() -> dict[str, Callable[[ModuleType], Any]]:
    """Scenarios of single values, written once against a library module, run with tclass
    and the peer."""

    def strings(lib: ModuleType) -> Any:
        td = lib.TensorDict({"a": torch.zeros(2), "s": "hello", "l": ["x", "y"]}, [2])
        return (
            td["s"], td[0]["s"], td[:1]["s"], list(td["l"]), td[1]["l"], list(td[:1]["l"]),
            type(td.get("s")).__name__, type(td.get("l")).__name__, tuple(td.get("s").batch_size),
        )  # fmt: skip

    def values(lib: ModuleType) -> Any:
        td = lib.TensorDict({"n": None, "b": b"x", "c": 1j}, [2])
        return td["n"], td["b"], td["c"], type(td.get("n")).__name__

    def numbers(lib: ModuleType) -> Any:
        td = lib.TensorDict({"f": 1.5, "i": 2, "t": (1, 2), "l": [[1, 2], [3, 4]], "e": []}, [])
        return {k: (td[k].dtype, td[k].tolist()) for k in ("f", "i", "t", "l", "e")}

    def lists(lib: ModuleType) -> Any:
        td = lib.TensorDict(
            {"m": ["x", 1], "d": [{"k": 1}, {"k": 2}], "s": [["a", "b"], ["c", "d"]]}, [2]
        )
        return (
            list(td["m"]),
            list(td["d"]),
            [list(r) for r in td["s"]],
            td[1]["s"][0],
            tuple(td.get("s").batch_size),
        )

    def broadcast(lib: ModuleType) -> Any:
        a = lib.TensorDict({"s": lib.NonTensorData("x")}, [2])
        b = lib.TensorDict({"s": lib.NonTensorData("x", batch_size=[3])}, [2])
        c = lib.TensorDict({"s": lib.NonTensorData("x", batch_size=[2, 3])}, [2])
        return [tuple(td.get("s").batch_size) for td in (a, b, c)]

    return {
        "strings": strings, "values": values, "numbers": numbers, "lists": lists,
        "broadcast": broadcast,
    }  # fmt: skip


def _stack_scenarios() -> dict[str, Callable[[ModuleType], Any]]:
    """Scenarios of stacked values (as :func:`_value_scenarios`)."""

    def stacked(lib: ModuleType) -> Any:
        one = lib.TensorDict({"s": "hello"}, [2])
        other = lib.TensorDict({"s": "bye"}, [2])
        out = torch.stack([one, other])
        return (
            out[0]["s"],
            out[1, 1]["s"],
            [list(r) for r in out["s"]],
            list(torch.cat([one, other])["s"]),
        )

    def round_trip(lib: ModuleType) -> Any:
        td = lib.TensorDict({"s": "hello", "n": None, "l": ["a", "b"]}, [2])
        back = lib.TensorDict(td.to_dict(), [2])
        return td.to_dict(), back["s"], back["n"], list(back["l"])

    def stacks(lib: ModuleType) -> Any:
        a, b = lib.NonTensorData("a", batch_size=[2]), lib.NonTensorData("b", batch_size=[2])
        return (
            lib.NonTensorStack("a", "b").tolist(), lib.NonTensorStack(a, b, stack_dim=1).tolist(),
            tuple(lib.NonTensorStack().batch_size), lib.NonTensorStack("a", "b")[1].data,
            lib.NonTensorStack(["a"], ["b"]).tolist(),
            lib.NonTensorStack.from_list([["a", "b"], ["c", "d"]]).tolist(),
        )  # fmt: skip

    def metadata(lib: ModuleType) -> Any:
        td = lib.TensorDict({"m": lib.MetaData("x")}, [3])
        return (
            type(torch.stack([lib.MetaData("x"), lib.MetaData("x")])).__name__,
            type(torch.stack([lib.MetaData("x"), lib.MetaData("y")])).__name__,
            td["m"], type(td[0].get("m")).__name__, type(td.unsqueeze(0).get("m")).__name__,
        )  # fmt: skip

    def records(lib: ModuleType) -> Any:
        class Rec(lib.TensorClass):  # type: ignore[name-defined,misc]
            s: str

        both = torch.stack([Rec(s="p"), Rec(s="q")])
        return both[0].s, both[1].s, list(both.s)

    def list_off(lib: ModuleType) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            switch = lib.set_list_to_stack(False)
        with switch:
            td = lib.TensorDict({"n": [1, 2]}, [2])
            return td["n"].tolist(), lib.list_to_stack()

    return {
        "stacked": stacked, "round_trip": round_trip, "stacks": stacks, "metadata": metadata,
        "records": records, "list_off": list_off,
    }  # fmt: skip


SCENARIOS = {**_value_scenarios(), **_stack_scenarios()}


@pytest.mark.peer
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_as_the_peer(name: str) -> None:
    peer = pytest.importorskip("tensordict")
    scenario = SCENARIOS[name]
    assert scenario(tclass) == scenario(peer)


@pytest.mark.parametrize("copy_of", [lambda x: x.clone(), copy_module.copy, lambda x: x.copy()])
def test_a_size_value_stays_a_size_through_a_copy(copy_of: Any) -> None:
    """README ("Python values in collections"): the peer's copy of a stack of values
    turns a ``torch.Size`` into a plain tuple (fz28d, programs 15,610,171 / 15,610,218
    of features,index,shape,combine); tclass keeps the value as it is."""
    td = tclass.TensorDict(c=torch.zeros(1, 3), d=torch.zeros(()))
    stacked = torch.stack([td.attrs(), td.attrs().clone(), td.attrs()], 0)
    copied = copy_of(stacked)
    shapes = copied["c"].tgt_shape
    assert [type(s) for s in shapes] == [torch.Size] * 3 and shapes[0] == torch.Size([1, 3])
    assert copied["d"].tgt_shape[2] == torch.Size([])
    assert type(copy_of(tclass.NonTensorData(torch.Size([2]), batch_size=[2])).data) is torch.Size


@pytest.mark.parametrize("stack", [torch.stack, tclass.maybe_dense_stack])
def test_an_indexed_write_into_a_stack_leaves_the_stacked_value_stacks(stack: Any) -> None:
    """README (``torch.stack`` copies Python values): the peer's dense stack holds its
    members' value stacks, so ``stack[i] = rows`` reaches them (fz28d, program 15,600,178
    of features,index,shape,combine); tclass's members keep their values."""
    one = tclass.TensorDict(s=tclass.NonTensorData(0, batch_size=[2]), t=torch.zeros(2))
    one.batch_size = [2]
    a = torch.stack([one, one.clone()], -1)  # "s": a stack of values
    b = a.apply(torch.zeros_like)
    stacked = stack([a, b])
    stacked[:, 0] = stacked[:, 0].to_dict()  # "s": a tensor of the rows' values, in both
    assert isinstance(stacked["s"][0][0][0], torch.Tensor)
    assert a["s"] == [[0, 0], [0, 0]] and b["s"] == [[0, 0], [0, 0]]
