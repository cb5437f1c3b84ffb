"""Tests for the kinds of tensorclass fields (tensor, nested, Python value, forward
references), how values are cast by their annotation, and the batch checks of
construction (tclass._tensorclass). Split from test_tensorclass_declaration.py; the
classes declared with class statements are shared through tests/helpers/declared.py.

This file does not use ``from __future__ import annotations``, so most annotations are
real objects; the forward-reference tests write string annotations explicitly.
"""

import contextlib
import dataclasses
import re
import sys
import types
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import TensorDict, errors

from declared import (  # noqa: E402
    Color,
    Frame,
    Inner,
    Outer,
    Transition,
    mismatch,
    raises,
    transition,
)
from forms import decorated  # noqa: E402
from strategies import SETTINGS, batch_shapes, feature_shapes, make_values  # noqa: E402

BatchMismatchError = errors.BatchMismatchError
FieldTypeError = errors.FieldTypeError
UnknownFieldError = errors.UnknownFieldError


# --- field kinds and casting -------------------------------------------------------------


@tclass.tensorclass
class Values:
    t: torch.Tensor | None = None
    s: str | None = None
    i: int | None = None
    f: float | None = None
    b: bool | None = None
    l: list | None = None  # noqa: E741
    d: dict | None = None
    li: list[int] | None = None
    lit: Literal["a", "b"] | None = None
    c: Color | None = None
    u: torch.Tensor | str | None = None
    o: int | None = None
    n: Inner | None = None
    td: TensorDict | None = None


class TestTensorFields:
    def test_tensor_is_stored_as_is(self) -> None:
        obs = torch.zeros(4, 3)
        record = Transition(obs, "e", batch_size=[4])
        assert record.obs is obs and record.get("obs") is obs

    @pytest.mark.parametrize(
        "value, expected",
        [
            ([1, 2, 3], torch.tensor([1, 2, 3])),
            ((1.0, 2.0, 3.0), torch.tensor([1.0, 2.0, 3.0])),
            ([[1], [2], [3]], torch.tensor([[1], [2], [3]])),
            (np.arange(3, dtype=np.float32), torch.tensor([0.0, 1.0, 2.0])),
            (np.array([True, False, True]), torch.tensor([True, False, True])),
        ],
        ids=["list", "tuple", "nested-list", "numpy", "numpy-bool"],
    )
    def test_array_likes_become_tensors(self, value: Any, expected: torch.Tensor) -> None:
        record = Values(t=value, batch_size=[3])
        assert type(record.t) is torch.Tensor
        assert record.t.dtype == expected.dtype and torch.equal(record.t, expected)

    @pytest.mark.parametrize(
        "value, dtype",
        [
            (3, torch.int64),
            (2.5, torch.float32),
            (True, torch.bool),
            (np.float32(1.5), torch.float32),
        ],
        ids=["int", "float", "bool", "numpy-scalar"],
    )
    def test_numbers_become_0d_tensors(self, value: Any, dtype: torch.dtype) -> None:
        record = Values(t=value, batch_size=[])
        assert record.t.shape == () and record.t.dtype == dtype and record.t.item() == value

    @pytest.mark.parametrize(
        "value, shown",
        [("x", "str 'x'"), ({"a": 1}, "dict {'a': 1}"), (b"x", "bytes b'x'"), (Color, "type")],
        ids=["str", "dict", "bytes", "class"],
    )
    def test_refuses_non_arrays(self, value: Any, shown: str) -> None:
        with raises(
            FieldTypeError,
            TypeError,
            match=re.escape(f"Transition.obs is annotated Tensor; got {shown}"),
        ):
            Transition(value, "e", batch_size=[])

    def test_tensor_subclass_annotation_takes_tensors(self) -> None:
        @tclass.tensorclass
        class Params:
            w: torch.nn.Parameter

        assert type(Params(torch.zeros(2), batch_size=[2]).w) is torch.Tensor
        assert torch.equal(Params([1.0, 2.0], batch_size=[2]).w, torch.tensor([1.0, 2.0]))


class TestNestedFields:
    def test_instance_is_stored_as_is(self) -> None:
        inner = Inner(torch.zeros(4, 2), batch_size=[4])
        record = Outer(inner, batch_size=[4])
        assert record.inner is inner

    def test_dict_becomes_the_class_with_the_parent_batch(self) -> None:
        x = torch.zeros(4, 2)
        record = Outer({"x": x}, batch_size=[4])
        assert type(record.inner) is Inner
        assert record.inner.batch_size == torch.Size([4]) and record.inner.x is x

    def test_tensordict_becomes_the_class(self) -> None:
        x = torch.zeros(4, 2)
        record = Outer(TensorDict({"x": x}, batch_size=[4]), batch_size=[4])
        assert type(record.inner) is Inner and record.inner.x is x

    def test_tensordict_with_unknown_key_raises(self) -> None:
        with raises(
            UnknownFieldError, AttributeError, ValueError, match="'y' is not a field of Inner"
        ):
            Outer(TensorDict({"y": torch.zeros(4)}, batch_size=[4]), batch_size=[4])

    @pytest.mark.parametrize(
        "value",
        [torch.zeros(4), "x", Frame(torch.zeros(4), batch_size=[4])],
        ids=["tensor", "str", "other-class"],
    )
    def test_other_values_are_refused(self, value: Any) -> None:
        with pytest.raises(FieldTypeError, match="Outer.inner is annotated Inner; got"):
            Outer(value, batch_size=[4])

    def test_tensordict_field_takes_dict_and_tensordict(self) -> None:
        given = TensorDict({"y": torch.zeros(4, 3)}, batch_size=[4])
        assert Outer({"x": torch.zeros(4)}, given, batch_size=[4]).td is given
        converted = Outer({"x": torch.zeros(4)}, {"y": torch.zeros(4, 3)}, batch_size=[4]).td
        assert type(converted) is TensorDict and converted.batch_size == torch.Size([4])
        with pytest.raises(
            FieldTypeError, match=r"Outer.td is annotated .*TensorDict \| None; got a Tensor"
        ):
            Outer({"x": torch.zeros(4)}, torch.zeros(4), batch_size=[4])

    def test_nested_record_may_have_more_batch_dims(self) -> None:
        inner = Inner(torch.zeros(4, 2, 3), batch_size=[4, 2])
        record = Outer(inner, batch_size=[4])
        assert record.inner.batch_size == torch.Size([4, 2])
        assert record[1].inner.batch_size == torch.Size([2])


VALUE_OK = [
    ("s", "hello"),
    ("i", 3),
    ("i", True),  # int takes bool
    ("i", np.int64(3)),
    ("f", 1.5),
    ("f", 2),  # float takes int
    ("b", False),
    ("l", [1, 2]),
    ("d", {"k": 1}),
    ("li", ["not", "checked"]),  # the items of list[int] are not checked
    ("lit", "a"),
    ("c", Color()),
    ("u", "text"),
    ("o", 5),
]

# Python values of a type the annotation does not name: the peer stores them as a
# TensorDict does, so they are kept as given (DESIGN.md 5), not refused.
VALUE_OTHER = [
    ("s", 1),
    ("s", b"x"),
    ("i", "1"),
    ("i", 1.5),
    ("f", "1.0"),
    ("b", 1),
    ("l", (1, 2)),
    ("l", "a string"),
    ("d", "x"),
    ("c", "red"),
    ("o", "x"),
]

# Values of the other kind (a tensor where a Python value belongs, a Python value where a
# tensor or a record belongs) are refused.
VALUE_BAD = [
    ("s", torch.zeros(2), "a Tensor of shape [2]"),
    ("l", TensorDict(batch_size=[2]), "a TensorDict of shape [2]"),
    ("n", "x", "str 'x'"),
    ("td", 3.5, "float 3.5"),
    ("t", "x", "str 'x'"),
]


class TestValueFields:
    @pytest.mark.parametrize(
        "name, value", VALUE_OK, ids=[f"{n}-{v!r}" if n != "c" else "c-Color" for n, v in VALUE_OK]
    )
    def test_accepted_values_are_kept(self, name: str, value: Any) -> None:
        record = Values(**{name: value}, batch_size=[2])
        assert getattr(record, name) is value
        assert getattr(record[0], name) is value
        assert record.get(name) is value

    @pytest.mark.parametrize("name", ["i", "f", "b", "o"])
    def test_number_fields_keep_tensors_as_the_peer(self, name: str, tmp_path: Path) -> None:
        value = torch.ones(2, dtype=torch.bool if name == "b" else torch.float32)
        record = Values(**{name: value}, batch_size=[2])
        assert getattr(record, name) is value  # a number in tensor form stays a tensor
        assert torch.equal(getattr(record[1], name), value[1])
        setattr(record, name, value * 0)
        assert torch.equal(getattr(record, name), value * 0)
        record.memmap(tmp_path / "r")
        assert torch.equal(getattr(Values.load_memmap(tmp_path / "r"), name), value * 0)
        with raises(FieldTypeError, TypeError, match=r"annotated str.*; got a Tensor"):
            Values(s=value, batch_size=[2])  # a str field still refuses a tensor

    @pytest.mark.parametrize("name, value", VALUE_OTHER, ids=[f"{n}-{v!r}" for n, v in VALUE_OTHER])
    def test_other_python_values_are_kept_as_given(self, name: str, value: Any) -> None:
        record = Values(**{name: value}, batch_size=[2])
        assert getattr(record, name) is value and getattr(record[1], name) is value
        assert record.get(name) is value and record.to_dict()[name] is value

    @pytest.mark.parametrize("name", ["i", "s", "d", "lit"])
    def test_a_list_of_other_values_is_one_value_per_row(self, name: str) -> None:
        record = Values(**{name: ["a", "b"]}, batch_size=[2])
        assert getattr(record, name) == ["a", "b"] and record.get(name) == ["a", "b"]
        assert (getattr(record[0], name), getattr(record[1], name)) == ("a", "b")
        with raises(BatchMismatchError, RuntimeError, match=mismatch(f"'{name}'", [3], [2])):
            Values(**{name: ["a", "b", "c"]}, batch_size=[2])

    def test_a_list_of_other_values_stays_one_value_without_list_to_stack(self) -> None:
        with pytest.warns(DeprecationWarning), tclass.set_list_to_stack(False):
            record = Values(i=["a", "b", "c"], batch_size=[2])
        assert record.i == ["a", "b", "c"] and record[0].i == ["a", "b", "c"]

    def test_a_field_taking_tensors_too_stores_numbers_as_a_tensordict(self) -> None:
        record = Values(u=[1, 2], batch_size=[2])  # Tensor | str: as td["u"] = [1, 2]
        assert torch.equal(record.u, torch.tensor([1, 2]))
        assert Values(u=3, batch_size=[]).u.item() == 3
        with raises(BatchMismatchError, RuntimeError, match=mismatch("'u'", [], [2])):
            Values(u=3, batch_size=[2])

    def test_a_tensor_field_keeps_a_collection(self) -> None:
        td = TensorDict({"x": torch.zeros(2, 3)}, batch_size=[2])
        record = Values(t=td, batch_size=[2])
        assert record.t is td and record[1].t["x"].shape == (3,)
        inner = Inner(torch.zeros(2, 4), batch_size=[2])
        assert Values(t=inner, batch_size=[2]).t is inner
        with raises(BatchMismatchError, RuntimeError, match=mismatch("'t'", [3], [2])):
            Values(t=TensorDict(batch_size=[3]), batch_size=[2])

    def test_a_tensor_field_stacks_a_list_of_tensors(self) -> None:
        record = Values(t=[torch.ones(3), torch.zeros(3)], batch_size=[2])
        assert torch.equal(record.t, torch.stack([torch.ones(3), torch.zeros(3)]))
        with raises(FieldTypeError, TypeError, match="Values.t is annotated"):
            Values(t=[torch.ones(3), torch.zeros(2)], batch_size=[2])  # shapes differ

    @pytest.mark.parametrize(
        "name, value, shown", VALUE_BAD, ids=[f"{n}-{s}" for n, _, s in VALUE_BAD]
    )
    def test_wrong_values_are_refused_naming_class_field_and_annotation(
        self, name: str, value: Any, shown: str
    ) -> None:
        with raises(
            FieldTypeError,
            TypeError,
            match=rf"^Values\.{name} is annotated .+; got {re.escape(shown)}$",
        ):
            Values(**{name: value}, batch_size=[2])

    def test_message_shows_the_annotation(self) -> None:
        with pytest.raises(
            FieldTypeError,
            match=re.escape("Values.s is annotated str | None; got a Tensor of shape [2]"),
        ):
            Values(s=torch.zeros(2), batch_size=[2])
        with pytest.raises(
            FieldTypeError,
            match=re.escape("Values.lit is annotated Literal['a', 'b'] | None; got a Tensor"),
        ):
            Values(lit=torch.zeros(()), batch_size=[])

    @pytest.mark.parametrize("name, text", [("td", "TensorDict | None"), ("n", "Inner | None")])
    def test_message_shows_union_of_classes_as_written(self, name: str, text: str) -> None:
        with pytest.raises(
            FieldTypeError, match=re.escape(f"Values.{name} is annotated {text}; got str 'x'")
        ):
            Values(**{name: "x"}, batch_size=[])

    def test_list_and_dict_keep_identity(self) -> None:
        items, mapping = [1, 2], {"a": torch.zeros(1)}
        record = Values(l=items, d=mapping, batch_size=[3])
        assert record.l is items and record.d is mapping
        items.append(3)
        assert record.l == [1, 2, 3]

    def test_python_values_are_not_tensors_in_storage(self) -> None:
        record = Values(s="x", i=1, batch_size=[2])
        assert type(record.s) is str and type(record.i) is int
        assert record.to_dict(retain_none=False) == {"s": "x", "i": 1}

    @pytest.mark.parametrize("annotation", [Any, object], ids=["Any", "object"])
    def test_any_takes_tensors_as_tensors_and_the_rest_as_values(self, annotation: Any) -> None:
        cls = decorated(type("Anything", (), {"__annotations__": {"v": annotation}}))
        t = torch.zeros(2, 3)
        assert cls(t, batch_size=[2]).v is t
        td = TensorDict({"z": torch.zeros(2)}, batch_size=[2])
        assert cls(td, batch_size=[2]).v is td
        for value in ("x", [1], {"a": 1}, 3.5, Color()):
            assert cls(value, batch_size=[2]).v is value
        with pytest.raises(BatchMismatchError):
            cls(torch.zeros(3), batch_size=[2])

    @pytest.mark.parametrize("annotation", [Any, object], ids=["Any", "object"])
    def test_any_takes_none(self, annotation: Any) -> None:
        cls = decorated(type("Anything", (), {"__annotations__": {"v": annotation}, "v": None}))
        assert cls(batch_size=[2]).v is None

    @pytest.mark.parametrize("name", ["t", "s", "o", "n", "td", "u"])
    def test_optional_fields_take_none(self, name: str) -> None:
        record = Values(**{name: None}, batch_size=[2])
        assert getattr(record, name) is None
        assert name not in record.keys()
        assert record.get(name) is None

    def test_optional_annotation_forms(self) -> None:
        @tclass.tensorclass
        class Forms:
            a: torch.Tensor | None
            b: torch.Tensor | None
            c: str | None = None

        record = Forms(None, None, batch_size=[2])
        assert (record.a, record.b, record.c) == (None, None, None)
        record = Forms(torch.zeros(2), [1, 2], "c", batch_size=[2])
        assert record.c == "c" and torch.equal(record.b, torch.tensor([1, 2]))

    @pytest.mark.parametrize(
        "kwargs, name",
        [({"obs": None, "env": "e"}, "obs"), ({"obs": torch.zeros(2, 3), "env": None}, "env")],
        ids=["tensor", "str"],
    )
    def test_none_for_a_required_field_means_not_set_yet(
        self, kwargs: dict[str, Any], name: str
    ) -> None:
        record = Transition(**kwargs, batch_size=[2])
        assert getattr(record, name) is None and name not in record.keys()

    def test_none_for_a_required_nested_field(self) -> None:
        assert Outer(None, batch_size=[2]).inner is None

    def test_union_of_tensor_and_str(self) -> None:
        t = torch.zeros(2)
        assert Values(u=t, batch_size=[2]).u is t
        assert Values(u="s", batch_size=[2]).u == "s"

    def test_literal_keeps_listed_and_other_values(self) -> None:
        @tclass.tensorclass
        class Mode:
            m: Literal[1, "one", True]

        for value in (1, "one", True):
            assert Mode(value, batch_size=[]).m is value
        for value in (1.0, "two", 2):  # the peer keeps them: tclass holds the Literal
            with pytest.raises(
                errors.FieldSpecError, match=rf"Mode.m is given .*{value!r}.*, which breaks in"
            ):
                Mode(value, batch_size=[])
        with pytest.raises(FieldTypeError, match="Mode.m is annotated Literal"):
            Mode(torch.ones(()), batch_size=[])


def _rows(lib: Any, field: str, value: Any, batch: list[int]) -> tuple[Any, list[Any]]:
    """What a record of ``lib`` holding ``value`` in ``field`` (annotated as Values's
    fields below) reads, whole and row by row."""

    @lib.tensorclass
    class Held:
        i: int | None = None
        s: str | None = None
        l: list | None = None  # noqa: E741
        t: torch.Tensor | None = None

    record = Held(**{field: value}, batch_size=batch)
    read = getattr(record, field)
    return read, [getattr(record[k], field) for k in range(batch[0])] if batch else []


def _plain(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return ("tensor", value.tolist())
    if hasattr(value, "batch_size"):  # a collection of either library
        return ("collection", list(value.batch_size), sorted(map(str, value.keys())))
    return list(value) if isinstance(value, list) else value  # a LinkedList as a list


OTHER_VALUES_AS_THE_PEER = [
    ("i", ["a string", "another string"], [2]),  # a list of other values: one per row
    ("s", ["u", "v"], [2]),
    ("l", "a string", [2]),  # a str in a list field: one value
    ("i", "x", []),
    ("t", [torch.ones(3), torch.zeros(3)], [2]),  # tensors of one shape: their stack
]


@pytest.mark.peer
@pytest.mark.parametrize("field, value, batch", OTHER_VALUES_AS_THE_PEER)
def test_other_values_are_stored_as_the_peer(field: str, value: Any, batch: list[int]) -> None:
    peer = pytest.importorskip("tensordict")
    ours, theirs = _rows(tclass, field, value, batch), _rows(peer, field, value, batch)
    assert _plain(ours[0]) == _plain(theirs[0])
    assert [_plain(v) for v in ours[1]] == [_plain(v) for v in theirs[1]]


@pytest.mark.peer
def test_a_collection_in_a_tensor_field_as_the_peer() -> None:
    peer = pytest.importorskip("tensordict")
    for lib in (tclass, peer):
        td = lib.TensorDict({"x": torch.zeros(2, 3)}, batch_size=[2])
        read, rows = _rows(lib, "t", td, [2])
        assert read is td and _plain(rows[1]) == ("collection", [], ["x"])


@pytest.mark.peer
@pytest.mark.parametrize("list_to_stack", [True, False])
def test_a_list_in_a_list_field_under_set_list_to_stack(list_to_stack: bool) -> None:
    peer = pytest.importorskip("tensordict")
    for lib in (tclass, peer):
        with pytest.warns(DeprecationWarning) if not list_to_stack else contextlib.nullcontext():
            switch = lib.set_list_to_stack(list_to_stack)
        with switch:
            if list_to_stack:  # one value per row, so its length must be the batch's
                read, rows = _rows(lib, "l", ["a", "b"], [2])
                assert (list(read), rows) == (["a", "b"], ["a", "b"])
                with pytest.raises(RuntimeError, match="batch dimension mismatch"):
                    _rows(lib, "l", ["a", "b", "c"], [2, 4])
            else:
                read, rows = _rows(lib, "l", ["a", "b", "c"], [2, 4])
                assert read == ["a", "b", "c"] and rows == [read, read]


class TestForwardReferences:
    def test_string_annotation_to_a_class_defined_later(self) -> None:
        @tclass.tensorclass
        class FwdHolder:
            leaf: "FwdLeaf"
            maybe: "FwdLeaf | None" = None

        @tclass.tensorclass
        class FwdLeaf:
            y: torch.Tensor

        record = FwdHolder({"y": torch.zeros(2, 5)}, batch_size=[2])
        assert type(record.leaf) is FwdLeaf and record.leaf.batch_size == torch.Size([2])
        assert record.maybe is None
        with pytest.raises(FieldTypeError, match="FwdHolder.leaf is annotated FwdLeaf; got"):
            FwdHolder("x", batch_size=[2])

    def test_self_referential_optional_field(self) -> None:
        @tclass.tensorclass
        class SelfNode:
            x: torch.Tensor
            child: "SelfNode | None" = None

        leaf = SelfNode(torch.ones(2), batch_size=[2])
        root = SelfNode(torch.zeros(2), leaf, batch_size=[2])
        assert root.child is leaf and leaf.child is None
        from_dict = SelfNode(torch.zeros(2), {"x": torch.ones(2)}, batch_size=[2])
        assert type(from_dict.child) is SelfNode and from_dict.child.child is None
        assert repr(leaf) == "SelfNode(batch_size=[2], fields={x: f32[], child: None})"
        assert repr(root) == (
            "SelfNode(batch_size=[2], fields={\n"
            "    child: SelfNode{x: f32[], child: None},\n"
            "    x: f32[]})"
        )

    def test_unresolvable_name_takes_any_value(self) -> None:
        @tclass.tensorclass
        class Dangling:
            x: "NoSuchClassAnywhere"  # noqa: F821

        assert Dangling("text", batch_size=[1]).x == "text"  # as in the peer

    def test_future_annotations_module(self, monkeypatch: pytest.MonkeyPatch) -> None:
        source = (
            "from __future__ import annotations\n"
            "import torch, tclass\n"
            "def make():\n"
            "    @tclass.tensorclass\n"
            "    class FutTree:\n"
            "        x: torch.Tensor\n"
            "        leaf: FutLeaf\n"
            "        parent: FutTree | None = None\n"
            "    class FutLeaf(tclass.TensorClass):\n"
            "        label: str\n"
            "    return FutTree, FutLeaf\n"
        )
        module = types.ModuleType("tclass_future_snippet")
        monkeypatch.setitem(sys.modules, module.__name__, module)
        exec(compile(source, "<future snippet>", "exec"), vars(module))  # noqa: S102
        tree, leaf = module.make()
        assert dataclasses.fields(tree)[1].type == "FutLeaf"
        record = tree(torch.zeros(2), {"label": "l"}, batch_size=[2])
        assert type(record.leaf) is leaf and record.leaf.label == "l"
        child = tree(torch.zeros(2), leaf("m", batch_size=[2]), record, batch_size=[2])
        assert child.parent is record
        with pytest.raises(FieldTypeError, match="FutTree.parent is annotated FutTree | None"):
            tree(torch.zeros(2), {"label": "l"}, 3, batch_size=[2])


# --- batch checks ------------------------------------------------------------------------


class TestBatchChecks:
    def test_tensor_mismatch_at_construction(self) -> None:
        with raises(
            BatchMismatchError, ValueError, RuntimeError, match=mismatch("'obs'", [5, 3], [4])
        ) as info:
            Transition(torch.zeros(5, 3), "e", batch_size=[4])
        assert (info.value.key, info.value.shape, info.value.batch_size) == ("obs", (5, 3), (4,))

    def test_fewer_dims_than_the_batch(self) -> None:
        with pytest.raises(BatchMismatchError, match=mismatch("'obs'", [4], [4, 2])):
            Transition(torch.zeros(4), "e", batch_size=[4, 2])

    def test_a_zero_dim_tensor_under_a_one_dim_batch(self) -> None:
        with pytest.raises(BatchMismatchError, match=mismatch("'obs'", [], [4])):
            Transition(torch.zeros(()), "e", batch_size=[4])
        with pytest.raises(BatchMismatchError, match=mismatch("'obs'", [3], [4])):
            Transition(torch.zeros(3), "e", batch_size=(4,))  # not the `[n]` spelling

    def test_optional_tensor_mismatch(self) -> None:
        with pytest.raises(BatchMismatchError, match=mismatch("'mask'", [3], [4])):
            Transition(torch.zeros(4, 3), "e", torch.zeros(3), batch_size=[4])

    def test_array_like_mismatch(self) -> None:
        with pytest.raises(BatchMismatchError, match=mismatch("'obs'", [2], [4])):
            Transition([1.0, 2.0], "e", batch_size=[4])

    def test_nested_instance_mismatch(self) -> None:
        with pytest.raises(BatchMismatchError, match=mismatch("'inner'", [5], [4])):
            Outer(Inner(torch.zeros(5), batch_size=[5]), batch_size=[4])

    def test_nested_dict_mismatch_names_the_nested_key(self) -> None:
        with pytest.raises(BatchMismatchError, match=mismatch("('inner', 'x')", [5], [4])) as info:
            Outer({"x": torch.zeros(5)}, batch_size=[4])
        assert info.value.key == ("inner", "x")

    def test_trailing_feature_dims_are_free(self) -> None:
        record = Transition(torch.zeros(2, 3, 4, 5), "e", torch.zeros(2, 3, 1), batch_size=[2, 3])
        assert record.obs.shape == (2, 3, 4, 5) and record.mask.shape == (2, 3, 1)
        record.mask = torch.zeros(2, 3, 8, 8)
        assert record.mask.shape == (2, 3, 8, 8)

    @pytest.mark.parametrize(
        "name, value, key, shape",
        [
            ("obs", torch.zeros(3, 3), "'obs'", [3, 3]),
            ("obs", [1.0, 2.0], "'obs'", [2]),
            ("mask", torch.zeros(5), "'mask'", [5]),
        ],
        ids=["tensor", "array-like", "optional"],
    )
    def test_mismatch_on_assignment(
        self, name: str, value: Any, key: str, shape: list[int]
    ) -> None:
        record = transition()
        before = getattr(record, name)
        with pytest.raises(BatchMismatchError, match=mismatch(key, shape, [4])):
            setattr(record, name, value)
        assert getattr(record, name) is before

    @pytest.mark.parametrize(
        "name, value, key, shape",
        [
            ("inner", Inner(torch.zeros(3), batch_size=[3]), "'inner'", [3]),
            ("inner", {"x": torch.zeros(3)}, "('inner', 'x')", [3]),
            ("td", TensorDict({}, batch_size=[2]), "'td'", [2]),
            ("td", {"y": torch.zeros(2)}, "('td', 'y')", [2]),
        ],
        ids=["nested", "nested-dict", "tensordict", "tensordict-dict"],
    )
    def test_nested_mismatch_on_assignment(
        self, name: str, value: Any, key: str, shape: list[int]
    ) -> None:
        record = Outer({"x": torch.zeros(4)}, batch_size=[4])
        with pytest.raises(BatchMismatchError, match=mismatch(key, shape, [4])):
            setattr(record, name, value)

    @SETTINGS
    @given(batch=batch_shapes(), features=feature_shapes(), inner_extra=feature_shapes(max_dims=1))
    def test_any_batch_shape_constructs(
        self, batch: torch.Size, features: torch.Size, inner_extra: torch.Size
    ) -> None:
        obs = make_values((*batch, *features))
        inner = Inner(make_values((*batch, *inner_extra)), batch_size=[*batch, *inner_extra])
        record = Outer(inner, {"y": make_values((*batch, *features))}, batch_size=batch)
        assert record.batch_size == batch and record.inner.batch_size == torch.Size(
            [*batch, *inner_extra]
        )
        plain = Transition(obs, "e", batch_size=batch)
        assert plain.obs is obs and plain.batch_size == batch

    @SETTINGS
    @given(data=st.data(), batch=batch_shapes(min_dims=1), features=feature_shapes())
    def test_leading_dims_that_differ_raise(
        self, data: st.DataObject, batch: torch.Size, features: torch.Size
    ) -> None:
        how = data.draw(st.sampled_from(["grow", "drop"]))
        leading = list(batch)
        if how == "grow":
            dim = data.draw(st.integers(0, len(batch) - 1))
            leading[dim] += data.draw(st.integers(1, 3))
            shape = [*leading, *features]
        else:
            shape = leading[:-1]  # one dim short: cannot start with the batch size
        with pytest.raises(BatchMismatchError) as info:
            Transition(torch.zeros(shape), "e", batch_size=batch)
        assert info.value.shape == tuple(shape) and info.value.batch_size == tuple(batch)
        record = Transition(torch.zeros(*batch, *features), "e", batch_size=batch)
        with pytest.raises(BatchMismatchError):
            record.obs = torch.zeros(shape)


def test_set__of_a_nested_key_under_no_field_is_an_unknown_field_error() -> None:
    """``set_(("n", "k"), v)`` would add a node ``n`` that is not a field (the peer adds it,
    then refuses to save the record): an ``UnknownFieldError`` naming it, as ``set``;
    nested keys under a field are written in place."""
    outer = Outer(inner=Inner(x=torch.zeros(2), batch_size=[2]), batch_size=[2])
    with pytest.raises(errors.UnknownFieldError, match="no field 'n'") as info:
        outer.set_(("n", "k"), "text")
    assert isinstance(info.value, ValueError) and "n" not in outer.to_tensordict().keys()
    outer.set_(("inner", "x"), torch.ones(2))
    assert outer.inner.x.tolist() == [1.0, 1.0]
    outer.lock_()
    with pytest.raises(errors.LockedError):  # the lock is reported first, as the peer
        outer.set_(("n", "k"), "text")


@tclass.tensorclass
class _Optional:
    y: torch.Tensor
    z: torch.Tensor | None = None


@tclass.tensorclass
class _HoldsOptional:
    inner: _Optional
    label: str | None = None


def test_set__into_a_field_that_holds_none_says_so() -> None:
    """``set_`` has no tensor to copy into where a field is ``None``: a ``NoneFieldError``
    naming the field, a ``KeyError`` and a ``ValueError`` (the peer raises either, as the
    ``None`` is an entry or not); a field given a value is written in place."""
    inner = _Optional(y=torch.zeros(2), batch_size=[2])
    outer = _HoldsOptional(inner=inner, batch_size=[2])
    outer = outer.update(outer.to_dict())
    for key in (("inner", "z"), "label"):
        with pytest.raises(errors.NoneFieldError, match="is None") as info:
            outer.set_(key, torch.ones(2))
        assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
    assert outer.inner.z is None and outer.label is None
    with pytest.raises(errors.KeyNotFoundError) as missing:  # not a field: as before
        outer.set_(("inner", "w"), torch.ones(2))
    assert not isinstance(missing.value, errors.NoneFieldError)
    outer.inner.z = torch.zeros(2)
    outer.set_(("inner", "z"), torch.ones(2))
    assert outer.inner.z.tolist() == [1.0, 1.0]


def test_none_unsets_a_field_some_members_of_a_lazy_stack_hold() -> None:
    """Assigning ``None`` to a field of a record over a lazy stack unsets it in every
    member, those that hold it included (nested lazy stacks too)."""
    held = Values(t=torch.ones(2, 3), s="a", batch_size=[2])
    unset = Values(batch_size=[2])
    stack = tclass.lazy_stack([held, unset], 0)
    assert stack.s == ["a", None]
    stack.t = None
    stack.s = None
    assert stack.t is None and stack.s is None
    for row in (stack[0], stack[1]):
        assert row.t is None and row.s is None and "t" not in row.to_tensordict().keys()
    inner = tclass.lazy_stack([Values(t=torch.ones(2), batch_size=[2]), unset], 0)
    outer = tclass.lazy_stack([inner, inner.clone()], 0)
    assert outer.t[1][0] is not None
    outer.t = None
    assert outer.t is None and outer[1, 0].t is None and outer[0, 0].t is None


def test_update_from_a_like_lazy_stack_goes_member_by_member() -> None:
    """``update`` of a record over a lazy stack whose members' tensors differ in shape,
    from a record of its class over a like stack: each member from its counterpart."""
    stack = tclass.lazy_stack(
        [Values(t=torch.ones(2, 3), i=2, batch_size=[2]), Values(t=torch.ones(2), batch_size=[2])]
    )
    zeros = stack.clone().apply(torch.zeros_like)
    assert stack.update(zeros) is stack
    assert torch.equal(stack[0].t, torch.zeros(2, 3)) and torch.equal(stack[1].t, torch.zeros(2))
    assert stack[0].i == 2 and stack[1].i is None
    with pytest.raises(errors.HeterogeneousEntryError):  # no dense value
        stack.to_tensordict()


def test_update_from_a_dict_replaces_a_ragged_field_of_a_lazy_stack() -> None:
    """``update({name: tensor})`` of a record over a lazy stack whose members hold the
    field in different shapes: the tensor replaces it in each member (split along the
    stack dim, as ``set``), the ragged value never read (it has no dense value)."""
    stack = tclass.lazy_stack(
        [Values(t=torch.ones(2, 3), i=2, batch_size=[2]), Values(t=torch.ones(2), batch_size=[2])]
    )
    new = torch.arange(2 * 2 * 4.0).reshape(2, 2, 4)
    assert stack.update({"t": new, "i": 5}) is stack
    assert torch.equal(stack.t, new) and torch.equal(stack[1].t, new[1])
    assert stack[0, 1].i == 5 and stack[1, 0].i == 5


def test_a_list_written_in_place_into_a_list_field_stays_a_list(tmp_path: Path) -> None:
    """``set_`` and ``update_`` of a Python value field keep the value as the field
    does (a list given for a ``list`` field stays a list, as attribute assignment and
    ``set`` keep it), also in a record memory-mapped to a folder (locked)."""
    record = Values(t=torch.zeros(2), l=[[1], [2]], li=[1, 2], s="a", batch_size=[2])
    record.set_("l", [[3], [4]])
    assert record.l == [[3], [4]] and type(record.l) is list
    record.update_({"l": [[5], [6]], "li": [3, 4], "s": "b", "t": torch.ones(2)})
    assert record.l == [[5], [6]] and record.li == [3, 4] and record.s == "b"
    assert torch.equal(record.t, torch.ones(2))
    mapped = record.memmap(tmp_path / "rec")
    mapped.update_(mapped.to_dict() | {"l": [[7], [8]]})
    assert mapped.l == [[7], [8]] and type(mapped.l) is list and mapped.is_locked
    assert torch.equal(mapped.t, torch.ones(2))


@tclass.tensorclass
class PeerLists:
    t: torch.Tensor
    lst: list


@pytest.mark.parametrize("batch_size", [[], [2]])
def test_update_with_to_dict_of_a_record_loaded_from_a_peer_folder(
    tmp_path: Path, batch_size: list[int]
) -> None:
    """The peer writes a list as values per element (a NonTensorStack): the record's
    to_dict() given back to update_ writes nothing (the files are not touched), and
    other values are written to the folder, which both libraries read back (the peer
    keeps them in memory only, and a reload loses them)."""
    peer = pytest.importorskip("tensordict")

    @peer.tensorclass
    class PeerLists:  # the same class, in the peer
        t: torch.Tensor
        lst: list

    folder = tmp_path / "rec"
    PeerLists(t=torch.zeros(2), lst=["x", "y"], batch_size=batch_size).memmap(folder)
    record = globals()["PeerLists"].load_memmap(folder)
    files = sorted(folder.rglob("*"))
    stamps = [path.stat().st_mtime_ns for path in files]
    assert record.update_(record.to_dict()) is record and record.lst == ["x", "y"]
    assert sorted(folder.rglob("*")) == files
    assert [path.stat().st_mtime_ns for path in files] == stamps
    record.lock_().update_({"lst": ["z", "w"], "t": torch.ones(2)})
    assert record.lst == ["z", "w"]
    for loaded in (globals()["PeerLists"].load_memmap(folder), PeerLists.load_memmap(folder)):
        assert list(loaded.lst) == ["z", "w"] and loaded.t.tolist() == [1.0, 1.0]
