# ruff: noqa: UP037, UP045  (annotations spelled as tensordict users write them)
"""Class options of tensorclasses (issue 18, item 6), in all three spellings.

``@tensorclass(autocast=True)``, ``class X(TensorClass, autocast=True)`` and
``class X(TensorClass["autocast"])`` build the same class. The options: ``autocast``,
``nocast``, ``tensor_only`` (exclusive with each other), ``shadow``, ``kw_only``,
``frozen``, ``cast_filter`` and ``skip_post_init_on_rebuild``; subclasses inherit them
(``kw_only`` as in dataclasses: it applies to the fields of the class that sets it).
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
import warnings
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest
import torch

import tclass
from tclass import TensorClass, TensorDict, errors
from tclass._core import _class_options as class_options_module
from tclass._core._class_options import OPTIONS, ClassOptions

from forms import FORMS, FORMS_AND_BRACKETS, Declare, bracketed, subclassed  # noqa: E402


@pytest.fixture(params=FORMS_AND_BRACKETS)
def declare(request: pytest.FixtureRequest) -> Declare:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=FORMS)
def declare2(request: pytest.FixtureRequest) -> Declare:
    """The two forms that take every option (``cast_filter`` is no bracket flag)."""
    return request.param  # type: ignore[no-any-return]


def _template(**annotations: Any) -> type:
    return type("Rec", (), {"__annotations__": annotations, "__module__": __name__})


# --- the bracket form ----------------------------------------------------------------------


class TestBrackets:
    def test_flags_make_a_base_with_the_options(self) -> None:
        base = TensorClass["nocast", "frozen"]
        assert issubclass(base, TensorClass) and base.__name__ == "TensorClass_nocast_frozen"
        assert base is TensorClass["nocast", "frozen"]  # one class per set of flags

        class Rec(base):  # type: ignore[misc,valid-type]
            x: int

        rec = Rec(x=1)
        assert rec.x == 1
        with pytest.raises(errors.FrozenInstanceError):
            rec.x = 2

    def test_one_flag(self) -> None:
        class Rec(TensorClass["frozen"]):  # type: ignore[misc]
            x: torch.Tensor

        with pytest.raises(dataclasses.FrozenInstanceError):
            Rec(x=torch.zeros(1)).x = torch.ones(1)

    def test_unknown_flag(self) -> None:
        with pytest.raises(errors.ClassDefinitionError, match="'foo'.*autocast") as info:
            TensorClass["foo"]
        assert isinstance(info.value, TypeError)

    def test_generic_type_arguments_still_work(self) -> None:
        from typing import Generic, TypeVar

        T = TypeVar("T")

        class Box(TensorClass, Generic[T]):
            item: T

        assert Box[int] is not None and Box(item=3).item == 3


# --- exclusions ----------------------------------------------------------------------------


class TestExclusions:
    @pytest.mark.parametrize(
        "options, words",
        [
            ({"autocast": True, "nocast": True}, "autocast.*nocast"),
            ({"tensor_only": True, "autocast": True}, "tensor_only.*autocast"),
            ({"tensor_only": True, "nocast": True}, "tensor_only.*nocast"),
        ],
        ids=["autocast-nocast", "tensor_only-autocast", "tensor_only-nocast"],
    )
    def test_exclusive_options(
        self, declare: Declare, options: dict[str, bool], words: str
    ) -> None:
        with pytest.raises(errors.ClassDefinitionError, match=words) as info:
            declare(_template(x=torch.Tensor), **options)
        assert isinstance(info.value, TypeError)

    def test_exclusive_with_an_inherited_option(self) -> None:
        class Base(TensorClass, autocast=True):
            x: int

        with pytest.raises(errors.ClassDefinitionError, match="autocast.*nocast"):

            class Sub(Base, nocast=True):
                y: int

    def test_decorator_refuses_unknown_options(self) -> None:
        with pytest.raises(TypeError, match="colour"):
            tclass.tensorclass(colour=True)  # type: ignore[call-overload]


# --- autocast ----------------------------------------------------------------------------


class TestAutocast:
    @pytest.mark.parametrize(
        "annotation, value, expected",
        [
            (int, torch.ones(()), 1),
            (float, 1, 1.0),
            (str, 1, "1"),
            (bool, torch.tensor(True), True),
            (torch.Tensor, 1, torch.tensor(1)),
            (torch.Tensor, [1, 2], torch.tensor([1, 2])),
            (Optional[int], torch.tensor(3), 3),
        ],
        ids=["int", "float", "str", "bool", "tensor-from-int", "tensor-from-list", "optional-int"],
    )
    def test_values_take_the_annotated_type(
        self, declare: Declare, annotation: Any, value: Any, expected: Any
    ) -> None:
        cls = declare(_template(x=annotation), autocast=True)
        got = cls(x=value).x
        assert type(got) is type(expected)
        assert torch.equal(got, expected) if isinstance(expected, torch.Tensor) else got == expected

    def test_arrays_and_mappings(self, declare: Declare) -> None:
        cls = declare(_template(a=np.ndarray, t=TensorDict), autocast=True)
        rec = cls(a=torch.ones(2), t={"k": torch.zeros(2)})
        assert isinstance(rec.a, np.ndarray) and rec.a.tolist() == [1.0, 1.0]
        assert isinstance(rec.t, TensorDict) and rec.t["k"].shape == (2,)

    def test_assignment_casts_too(self, declare: Declare) -> None:
        rec = declare(_template(n=int), autocast=True)(n=1)
        rec.n = torch.tensor(5)
        assert rec.n == 5 and type(rec.n) is int
        rec.set("n", 2.0)
        assert rec.n == 2 and type(rec.n) is int

    def test_a_value_that_does_not_cast(self, declare: Declare) -> None:
        cls = declare(_template(n=int), autocast=True)
        with pytest.raises(errors.FieldTypeError, match="Rec.n.*int.*'abc'") as info:
            cls(n="abc")
        assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)

    def test_a_tensor_field_refuses_what_it_cannot_cast(self, declare: Declare) -> None:
        # As the peer's autocast (a TypeError), at construction and on assignment; a
        # class without autocast refuses it too (README, Differences 5).
        rec = declare(_template(t=torch.Tensor), autocast=True)(t=1.0)
        with pytest.raises(errors.FieldTypeError, match="Rec.t"):
            rec.t = "str"
        with pytest.raises(errors.FieldTypeError, match="Rec.t"):
            declare(_template(t=torch.Tensor))(t="str")

    def test_none_stays_none(self, declare: Declare) -> None:
        assert declare(_template(n=int), autocast=True)(n=None).n is None

    def test_a_stored_value_is_cast_inside_its_node(self, declare: Declare) -> None:
        # A node (what a loaded folder and to_tensordict() hold) has its value cast, not
        # itself: str(node) would be its repr, int(node) a TypeError.
        cls = declare(_template(s=str, n=int, a=Any), autocast=True)
        rec = cls(s=tclass.NonTensorData(1), n=tclass.NonTensorData("3"), a=tclass.NonTensorData(5))
        assert (rec.s, rec.n, rec.a) == ("1", 3, 5)
        assert (type(rec.s), type(rec.n), type(rec.a)) == (str, int, int)  # Any: kept a value
        rec.n = tclass.NonTensorStack(2.0, True)
        assert rec.n == [2, 1] and [type(v) for v in rec.n] == [int, int]
        with pytest.raises(errors.CastError, match="Rec.n.*int.*str 'abc'"):
            rec.n = tclass.NonTensorStack(1, "abc")

    def test_a_value_stack_beyond_the_batch_is_one_list(self, declare: Declare) -> None:
        # A TensorDict stores a list as one value per item; from_tensordict into a record
        # without those dims gives the list field the list, not each item cast to a list.
        cls = declare(_template(lst=list, n=int), autocast=True)
        td = tclass.TensorDict({"lst": ["a", "b"], "n": 1}, batch_size=[])
        assert isinstance(td.get("lst"), tclass.NonTensorStack)
        rec = cls.from_tensordict(td)
        assert rec.lst == ["a", "b"] and rec.n == 1
        rows = tclass.TensorDict({"lst": [["a", "b"], ["c", "d"]]}, batch_size=[2])
        rec = cls.from_tensordict(rows)
        assert rec.lst == [["a", "b"], ["c", "d"]] and rec[1].lst == ["c", "d"]
        # along the batch, each element is cast, as the constructor casts a str
        rec = cls.from_tensordict(tclass.TensorDict({"lst": ["ab", "c"]}, batch_size=[2]))
        assert rec[0].lst == ["a", "b"] and rec[1].lst == ["c"]

    def test_a_list_nested_as_the_batch_is_cast_per_element(self, declare: Declare) -> None:
        # One value per element, as to_dict() of a stacked record writes the field: each
        # value is cast (the whole list would be "['a', 'b']", True, or a TypeError).
        cls = declare(_template(x=torch.Tensor, s=str, b=bool, n=int), autocast=True)
        rec = cls(
            x=torch.zeros(2, 1),
            s=[["a"], ["b"]],
            b=[[True], [False]],
            n=[[1], [2.0]],
            batch_size=[2, 1],
        )
        assert rec[1, 0].s == "b" and rec[1, 0].b is False and rec[0, 0].b is True
        assert rec.n == [[1], [2]] and type(rec[1, 0].n) is int
        # a list of another shape is one value, cast whole
        whole = cls(x=torch.zeros(2), s=[1, 2, 3], b=None, n=None, batch_size=[2])
        assert whole.s == "[1, 2, 3]"
        with pytest.raises(errors.CastError, match=r"Rec.n is annotated int.*list \[1\]"):
            cls(x=torch.zeros(2), s=None, b=None, n=[[1], [2]], batch_size=[2])

    def test_update_and_from_dict_take_back_what_to_dict_gives(self, declare: Declare) -> None:
        cls = declare(_template(x=torch.Tensor, n=int, s=str, lst=list), autocast=True)
        one = cls(x=torch.zeros(3, 2), n=7, s="a", lst=[0.5], batch_size=[3, 2])
        two = cls(x=torch.ones(3, 2), n=5, s="b", lst=[0.5], batch_size=[3, 2])
        stacked = torch.stack([one, two])  # n, s and lst become value stacks
        as_dict = stacked.to_dict()
        assert isinstance(as_dict["n"], list) and len(as_dict["n"]) == 2
        for rec in (stacked.clone().update(as_dict), cls.from_dict(as_dict, batch_size=[2, 3, 2])):
            assert rec.n == stacked.n and rec.s == stacked.s
            assert type(rec[1, 0, 0].n) is int and rec[1, 0, 0].n == 5 and rec[0, 2, 1].n == 7
            assert rec[1, 2, 1].s == "b" and rec[0, 0, 0].s == "a"


# --- autocast: Python values through to_tensordict(), saving and loading ---------------------

_VALUES = {
    "name": "walker", "count": 3, "rate": 1.5, "done": True, "tags": [1, "x"], "info": {"k": [1.0]}
}  # fmt: skip


def _autocast_classes(declare: Declare) -> tuple[Any, Any]:
    """An autocast record with a field of each Python type and an autocast record nested
    in it, both declared in the form under test."""
    inner = declare(_template(s=str, i=int), autocast=True)
    fields = {**{key: type(value) for key, value in _VALUES.items()}, "t": torch.Tensor}
    template = _template(**fields, inner=Optional[inner], maybe=Optional[int], label=Optional[str])
    for name in ("inner", "maybe", "label"):
        setattr(template, name, None)
    return declare(template, autocast=True), inner


def _make(rec_cls: Any, inner_cls: Any, shift: int = 0) -> Any:
    values = {key: value + shift if key == "count" else value for key, value in _VALUES.items()}
    inner = inner_cls(s="in", i=7 + shift, batch_size=[2])
    return rec_cls(**values, t=torch.zeros(2), inner=inner, label="x", batch_size=[2])


def _typed(value: Any) -> Any:
    """``value`` with the type of every part spelled out (``1``, ``1.0`` and ``True``
    differ)."""
    if isinstance(value, (list, tuple)):
        return type(value), [_typed(item) for item in value]
    if isinstance(value, dict):
        return dict, {key: _typed(item) for key, item in value.items()}
    return type(value), value


def _picture(rec: Any) -> dict[str, Any]:
    fields = [*_VALUES, "maybe", "label"]
    picture = {name: _typed(getattr(rec, name)) for name in fields}
    picture["inner"] = None if rec.inner is None else _typed([rec.inner.s, rec.inner.i])
    return picture


class TestAutocastRoundTrip:
    def test_from_tensordict(self, declare: Declare) -> None:
        rec_cls, inner_cls = _autocast_classes(declare)
        rec = _make(rec_cls, inner_cls)
        # In memory, each field holds the Python value given (as in the peer: no tensors).
        expected = {key: _typed(value) for key, value in _VALUES.items()}
        expected.update(maybe=_typed(None), label=_typed("x"), inner=_typed(["in", 7]))
        assert _picture(rec) == expected
        assert _picture(rec_cls.from_tensordict(rec.to_tensordict())) == expected

    @pytest.mark.parametrize("method", ["memmap", "memmap_", "save"])
    def test_saved_values_load_as_saved(
        self, declare: Declare, method: str, tmp_path: Path
    ) -> None:
        rec_cls, inner_cls = _autocast_classes(declare)
        rec = _make(rec_cls, inner_cls)
        getattr(_make(rec_cls, inner_cls), method)(tmp_path / "r")
        loaded = rec_cls.load_memmap(tmp_path / "r")
        assert type(loaded) is rec_cls and type(loaded.inner) is inner_cls
        assert _picture(loaded) == _picture(rec)

    def test_archive(self, declare: Declare, tmp_path: Path) -> None:
        rec_cls, inner_cls = _autocast_classes(declare)
        rec = _make(rec_cls, inner_cls)
        rec.save(tmp_path / "r.tdz")
        assert _picture(rec_cls.load(tmp_path / "r.tdz")) == _picture(rec)

    def test_unset_optional_fields(self, declare: Declare, tmp_path: Path) -> None:
        rec_cls, inner_cls = _autocast_classes(declare)
        rec = _make(rec_cls, inner_cls)
        rec.inner, rec.label = None, None
        rec.memmap(tmp_path / "r")
        loaded = rec_cls.load_memmap(tmp_path / "r")
        assert (loaded.inner, loaded.maybe, loaded.label) == (None, None, None)
        assert _picture(loaded) == _picture(rec)

    @pytest.mark.parametrize("stack", [torch.stack, tclass.lazy_stack], ids=["dense", "lazy"])
    def test_stacks(self, declare: Declare, stack: Any, tmp_path: Path) -> None:
        rec_cls, inner_cls = _autocast_classes(declare)
        stacked = stack([_make(rec_cls, inner_cls), _make(rec_cls, inner_cls, shift=1)])
        assert stacked.count == [[3, 3], [4, 4]]  # one value per element of the batch [2, 2]
        assert _picture(rec_cls.from_tensordict(stacked.to_tensordict())) == _picture(stacked)
        stacked.memmap(tmp_path / "st")
        loaded = rec_cls.load_memmap(tmp_path / "st")
        assert type(loaded) is rec_cls and loaded.batch_size == (2, 2)
        assert _picture(loaded) == _picture(stacked)


# --- nocast ------------------------------------------------------------------------------


class TestNocast:
    def test_numbers_and_arrays_stay_python_values(self, declare: Declare) -> None:
        cls = declare(_template(x=torch.Tensor, a=Any), nocast=True)
        rec = cls(x=1, a=np.zeros(2))
        assert rec.x == 1 and type(rec.x) is int
        assert isinstance(rec.a, np.ndarray)
        rec.x = 2.5
        assert rec.x == 2.5

    def test_tensors_stay_tensors(self, declare: Declare) -> None:
        rec = declare(_template(x=torch.Tensor), nocast=True)(x=torch.zeros(2), batch_size=[2])
        assert isinstance(rec.x, torch.Tensor)

    def test_without_nocast_numbers_become_tensors(self, declare2: Declare) -> None:
        rec = declare2(_template(x=torch.Tensor))(x=1)
        assert torch.equal(rec.x, torch.tensor(1))

    def test_a_number_field_takes_an_array(self, declare2: Declare) -> None:
        # An array of numbers given to an int field is a number in array form: a tensor,
        # as a tensor given there stays one (the peer); nocast keeps the array.
        rec = declare2(_template(x=int))(x=np.array([1]))
        assert isinstance(rec.x, torch.Tensor) and rec.x.tolist() == [1]
        kept = declare2(_template(x=int), nocast=True)(x=np.array([1]))
        assert isinstance(kept.x, np.ndarray)
        array = np.array([1])  # a str field keeps it as the Python value it is given
        assert declare2(_template(x=str))(x=array).x is array


# --- tensor_only -------------------------------------------------------------------------


class TestTensorOnly:
    @pytest.mark.parametrize(
        "annotation", [str, int, Any, Optional[str], torch.Tensor | str], ids=str
    )
    def test_other_annotations_are_refused(self, declare: Declare, annotation: Any) -> None:
        with pytest.raises(errors.ClassDefinitionError, match="tensor_only.*'x'") as info:
            declare(_template(x=annotation), tensor_only=True)
        assert isinstance(info.value, TypeError)

    def test_tensors_collections_and_optionals(self, declare: Declare) -> None:
        class Inner(TensorClass):
            z: torch.Tensor

        cls = declare(
            _template(x=torch.Tensor, t=TensorDict, i=Inner, o=Optional[torch.Tensor]),
            tensor_only=True,
        )
        rec = cls(x=1, t={"a": torch.zeros(())}, i={"z": torch.ones(())}, o=None)
        assert torch.equal(rec.x, torch.tensor(1)) and isinstance(rec.t, TensorDict)
        assert type(rec.i) is Inner and rec.o is None
        rec.x = np.zeros(2)
        assert isinstance(rec.x, torch.Tensor) and rec.x.dtype == torch.float64

    def test_a_python_value_is_refused(self, declare: Declare) -> None:
        rec = declare(_template(x=torch.Tensor), tensor_only=True)(x=torch.zeros(1))
        with pytest.raises(errors.FieldTypeError, match="Rec.x"):
            rec.x = "text"

    def test_forward_reference_to_a_tensorclass(self) -> None:
        class Node(TensorClass, tensor_only=True):
            x: torch.Tensor
            child: Optional["Node"] = None

        rec = Node(x=torch.zeros(2), child={"x": torch.ones(2)}, batch_size=[2])
        assert type(rec.child) is Node and rec.child.child is None

    def test_fields_read_the_storage_directly(self, declare: Declare) -> None:
        cls = declare(_template(x=torch.Tensor), tensor_only=True)
        rec = cls(x=torch.zeros(3), batch_size=[3])
        assert rec.x is rec._tensordict.get("x")
        assert cls.__tclass_info__.options["tensor_only"]

    def test_a_node_of_python_values_is_a_collection(self, declare: Declare) -> None:
        # A field annotated NonTensorData holds a node, which tensor_only takes (the peer).
        value = {"metadata": "value"}
        rec = declare(_template(x=tclass.NonTensorData), tensor_only=True)(x=value)
        assert isinstance(rec.x, tclass.NonTensorData) and rec.x.data is value

    def test_subscripted_collection_annotations(self, declare: Declare) -> None:
        cls = declare(
            _template(t=TensorDict[str, torch.Tensor], o=Optional[TensorDict[str, Any]]),
            tensor_only=True,
        )
        rec = cls(t={"a": torch.zeros(2)}, o=None, batch_size=[2])
        assert isinstance(rec.t, TensorDict) and rec.o is None

    def test_none_over_an_unset_field_of_a_locked_record(self, declare: Declare) -> None:
        # Nothing changes, so attribute assignment passes (as the peer's); set(), update(),
        # del and a set field stay refused, as the peer's.
        cls = declare(_template(x=torch.Tensor, o=Optional[torch.Tensor]), tensor_only=True)
        rec = cls(x=torch.zeros(2), o=None, batch_size=[2]).lock_()
        rec.o = None
        assert rec.o is None and list(rec.keys()) == ["x"] and rec.is_locked
        stack = tclass.lazy_stack([rec, cls(x=torch.ones(2), o=None, batch_size=[2])])
        stack.o = None
        assert stack.o is None
        for write in (
            lambda: setattr(rec, "x", None),
            lambda: rec.set("o", None),
            lambda: rec.update({"o": None}),
            lambda: delattr(rec, "o"),
            lambda: setattr(rec, "o", torch.ones(2)),
        ):
            with pytest.raises(errors.LockedError, match="field '[xo]'.*locked") as info:
                write()
            assert isinstance(info.value, RuntimeError)
        assert torch.equal(rec.x, torch.zeros(2)) and rec.o is None

    def test_from_dataclass_keeps_the_instance_values(self) -> None:
        @dataclasses.dataclass
        class Plain:
            data: TensorDict

        value = TensorDict(tensor=torch.ones(())).lock_()
        assert tclass.from_dataclass(Plain(value), tensor_only=True).data is value
        nested = tclass.from_dataclass(Plain({"nested": value}), tensor_only=True)  # type: ignore[arg-type]
        assert nested.data["nested"] is value
        assert tclass.from_dataclass(Plain(value)).data is not value  # copies without it


# --- shadow ------------------------------------------------------------------------------


class TestShadow:
    def test_member_names_need_shadow(self, declare: Declare) -> None:
        with pytest.raises(
            errors.ReservedNameError, match="Attribute name apply .*shadow=True"
        ) as info:
            declare(_template(apply=torch.Tensor))
        assert isinstance(info.value, AttributeError)

    def test_fields_hide_members(self, declare: Declare) -> None:
        cls = declare(_template(sum=torch.Tensor, to=str, apply=int), shadow=True)
        rec = cls(sum=torch.ones(3), to="x", apply=2, batch_size=[3])
        assert torch.equal(rec.sum, torch.ones(3)) and rec.to == "x" and rec.apply == 2
        assert torch.equal(rec[1:].sum, torch.ones(2)) and rec[0].to == "x"
        assert torch.equal(torch.stack([rec, rec]).sum, torch.ones(2, 3))

    def test_batch_size_field(self) -> None:
        class Rec(TensorClass, shadow=True):
            batch_size: torch.Tensor

        rec = Rec(batch_size=torch.zeros(3))
        assert torch.equal(rec.batch_size, torch.zeros(3))

    def test_repr_never_shows_a_field_named_device_as_the_records_device(self) -> None:
        # the repr read record.device, the field: "D(batch_size=[2], device=gpu0, ...)";
        # a field named device hides the header's device, as the peer prints it (nu25b)
        class Rec(TensorClass, shadow=True):
            data: torch.Tensor
            device: str = "gpu0"

        rec = Rec(data=torch.zeros(2), batch_size=[2])
        assert repr(rec) == "Rec(batch_size=[2], fields={data: f32[], device: str})"
        moved = rec.to("cpu")
        assert repr(moved) == "Rec(batch_size=[2], fields={data: f32[], device: str})"
        assert moved.device == "gpu0" and moved.data.device == torch.device("cpu")
        with tclass.set_printoptions(compact=False):
            assert repr(rec) == (  # the field only, as the peer's
                "Rec(\n    data=Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, "
                "is_shared=False),\n    device=NonTensorData(data=gpu0, "
                "batch_size=torch.Size([2]), device=None),\n    batch_size=torch.Size([2]),\n"
                "    is_shared=False)"
            )

    def test_from_dict_fills_fields_named_as_constructor_options(self) -> None:
        # from_dict passed batch_size=, device= and names= to the constructor, whose
        # shadow fields of those names take them: "got multiple values for keyword
        # argument 'device'"; the peer (and the constructor, set, update) fill the field.
        class Rec(TensorClass, shadow=True):
            data: torch.Tensor
            device: str = "gpu0"
            names: str | None = None

        rec = Rec.from_dict({"data": torch.zeros(2), "device": "x", "names": "n"}, batch_size=[2])
        assert (rec.device, rec.names, rec.batch_size) == ("x", "n", torch.Size([2]))
        assert Rec.from_dict({"data": torch.zeros(2)}, batch_size=[2]).device == "gpu0"

        class Sized(TensorClass, shadow=True):
            batch_size: torch.Tensor

        assert torch.equal(Sized.from_dict({"batch_size": torch.ones(3)}).batch_size, torch.ones(3))

    def test_from_dict_gives_the_storage_the_options_that_shadow_fields_hide(self) -> None:
        # device= (or batch_size=, names=) asked of from_dict beside a field of that
        # name: "multiple values for keyword argument"; the peer fills the field and gives
        # the record's storage the batch size, names and device asked for.
        class Rec(TensorClass, shadow=True):
            device: torch.Tensor
            batch_size: torch.Tensor
            names: torch.Tensor

        data = {"device": torch.zeros(3), "batch_size": torch.ones(3), "names": torch.ones(3)}
        rec = Rec.from_dict(data, batch_size=[3], device="cpu", names=["i"])
        assert torch.equal(rec.device, torch.zeros(3)) and torch.equal(rec.names, torch.ones(3))
        storage = rec.to_tensordict()
        assert (storage.batch_size, storage.device, storage.names) == (
            (3,),
            torch.device("cpu"),
            ["i"],
        )
        assert Rec.from_dict(data, auto_batch_size=True).to_tensordict().batch_size == (3,)

    def test_a_field_named_as_a_member_has_no_default_from_it(self) -> None:
        # dataclasses read the inherited `device` property as the field's default: a
        # field declared after it was "no default but follows 'device'" (the peer's runs).
        class Rec(TensorClass, shadow=True):
            device: torch.Tensor
            x: torch.Tensor

        with pytest.raises(errors.ArgumentError, match="the field .x."):
            Rec(torch.zeros(2), batch_size=[2])
        rec = Rec(torch.zeros(2), torch.ones(2), batch_size=[2])
        assert torch.equal(rec.device, torch.zeros(2)) and torch.equal(rec.x, torch.ones(2))
        assert inspect.signature(Rec).parameters["device"].default is inspect.Parameter.empty

    def test_shadow_is_inherited(self) -> None:
        class Base(TensorClass, shadow=True):
            x: torch.Tensor

        class Sub(Base):
            to: str = "here"

        assert Sub(x=torch.zeros(1)).to == "here"

    def test_data_and_fields_need_no_shadow(self, declare: Declare) -> None:
        rec = declare(_template(data=torch.Tensor, fields=str))(data=torch.ones(1), fields="f")
        assert torch.equal(rec.data, torch.ones(1)) and rec.fields == "f"

    def test_a_fields_field_is_required_as_any_other(self, declare: Declare) -> None:
        # the inherited fields() classmethod was its default: a required field after it
        # was refused ("follows 'fields', which has one"), the peer declares it
        cls = declare(_template(fields=torch.Tensor, close=torch.Tensor, x=torch.Tensor))
        rec = cls(torch.zeros(2), torch.ones(2), x=torch.full((2,), 2.0), batch_size=[2])
        assert torch.equal(rec.fields, torch.zeros(2)) and torch.equal(rec.x, torch.full((2,), 2.0))
        assert torch.equal(rec[1:].fields, torch.zeros(1)) and torch.equal(rec.close, torch.ones(2))
        with pytest.raises(TypeError, match="fields"):
            cls(close=torch.ones(2), x=torch.ones(2), batch_size=[2])


# --- kw_only and frozen --------------------------------------------------------------------


class TestKwOnlyAndFrozen:
    def test_kw_only(self, declare2: Declare) -> None:
        cls = declare2(_template(x=torch.Tensor), kw_only=True)
        with pytest.raises(TypeError):
            cls(torch.zeros(1))
        assert torch.equal(cls(x=torch.zeros(1)).x, torch.zeros(1))

    def test_kw_only_applies_to_the_fields_of_the_class_that_sets_it(self) -> None:
        class Base(TensorClass, kw_only=True):
            x: torch.Tensor

        class Sub(Base):
            y: torch.Tensor

        params = inspect.signature(Sub).parameters
        assert params["x"].kind is inspect.Parameter.KEYWORD_ONLY
        assert params["y"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        rec = Sub(torch.ones(1), x=torch.zeros(1))
        assert torch.equal(rec.y, torch.ones(1))

    def test_frozen(self, declare: Declare) -> None:
        rec = declare(_template(x=torch.Tensor), frozen=True)(x=torch.zeros(2))
        with pytest.raises(dataclasses.FrozenInstanceError):
            rec.x = torch.ones(2)
        rec.x[0] = 1.0  # tensors stay writable in place

    def test_frozen_is_inherited(self) -> None:
        class Base(TensorClass["frozen"]):  # type: ignore[misc]
            x: torch.Tensor

        class Sub(Base):
            y: int = 0

        with pytest.raises(errors.FrozenInstanceError):
            Sub(x=torch.zeros(1)).y = 1

    def test_frozen_post_init_sets_fields_then_locks(self) -> None:
        # the frozen-dataclass idiom (and the peer's): __post_init__ runs unlocked and
        # sets derived fields with object.__setattr__; the record is locked after it
        seen: list[bool] = []

        class Seg(TensorClass, frozen=True):
            start: torch.Tensor
            end: torch.Tensor
            length: Optional[torch.Tensor] = None

            def __post_init__(self) -> None:
                seen.append(self.is_locked)
                if self.length is None:
                    object.__setattr__(self, "length", self.end - self.start)

        seg = Seg(start=torch.tensor([0, 2]), end=torch.tensor([5, 3]), batch_size=[2])
        assert seen == [False] and seg.is_locked
        assert seg.length.tolist() == [5, 1] and seg[1].length.item() == 1
        with pytest.raises(errors.FrozenInstanceError, match="'length'"):
            object.__setattr__(seg, "length", seg.start)  # after __init__: locked
        with pytest.raises(dataclasses.FrozenInstanceError):
            seg.start = torch.zeros(2, dtype=torch.long)
        assert seg.clone().is_locked and seg.length.tolist() == [5, 1]

    def test_frozen_post_init_that_raises_leaves_no_record(self) -> None:
        class Pos(TensorClass, frozen=True):
            v: torch.Tensor

            def __post_init__(self) -> None:
                if (self.v < 0).any():
                    raise ValueError("negative")

        assert Pos(v=torch.ones(2), batch_size=[2]).is_locked
        with pytest.raises(ValueError, match="negative"):
            Pos(v=-torch.ones(2), batch_size=[2])


# --- inheritance -------------------------------------------------------------------------


class TestInheritance:
    def test_options_are_inherited_and_added(self) -> None:
        class Base(TensorClass["autocast"]):  # type: ignore[misc]
            x: int

        class Sub(Base, shadow=True):
            y: float
            sum: Optional[torch.Tensor] = None

        rec = Sub(x=torch.ones(()), y=torch.ones(()))
        assert (rec.x, rec.y) == (1, 1.0) and type(rec.x) is int
        info = Sub.__tclass_info__
        assert info.options["autocast"] and info.options["shadow"] and not info.options["nocast"]

    def test_an_option_can_be_turned_off(self) -> None:
        class Base(TensorClass, autocast=True):
            x: int

        class Sub(Base, autocast=False, nocast=True):
            y: torch.Tensor

        rec = Sub(x=3, y=4)
        assert rec.x == 3 and rec.y == 4

    def test_decorated_subclass_inherits(self) -> None:
        @tclass.tensorclass(autocast=True)
        class Base:
            x: int

        @tclass.tensorclass
        class Sub(Base):
            y: float

        rec = Sub(x=torch.ones(()), y=torch.ones(()))
        assert (type(rec.x), type(rec.y)) == (int, float)


# --- cast_filter and skip_post_init_on_rebuild -----------------------------------------------


def _floating(key: tuple[str, ...], value: torch.Tensor) -> bool:
    return value.is_floating_point()


class TestCastFilter:
    def test_to_dtype_casts_the_selected_leaves(self, declare2: Declare) -> None:
        cls = declare2(_template(p=torch.Tensor, c=torch.Tensor), cast_filter=_floating)
        rec = cls(p=torch.zeros(2), c=torch.zeros(2, dtype=torch.long))
        half = rec.to(torch.float16)
        assert (half.p.dtype, half.c.dtype) == (torch.float16, torch.int64)
        every = rec.to(torch.float16, cast_filter=None)
        assert every.c.dtype == torch.float16
        keys: list[tuple[str, ...]] = []
        rec.to(torch.float64, cast_filter=lambda k, v: keys.append(k) or True)
        assert sorted(keys) == [("c",), ("p",)]

    def test_inherited(self) -> None:
        class Base(TensorClass, cast_filter=_floating):
            p: torch.Tensor

        class Sub(Base):
            c: torch.Tensor

        rec = Sub(p=torch.zeros(1), c=torch.zeros(1, dtype=torch.int32)).to(torch.float16)
        assert rec.c.dtype == torch.int32
        assert Sub.__tclass_info__.options["cast_filter"] is _floating

    def test_not_a_callable(self) -> None:
        with pytest.raises(errors.ClassDefinitionError, match="cast_filter"):

            class Rec(TensorClass, cast_filter=3):  # type: ignore[arg-type]
                p: torch.Tensor

    def test_nested_keys(self) -> None:
        class Inner(TensorClass):
            w: torch.Tensor
            n: torch.Tensor

        def only_w(key: tuple[str, ...], value: torch.Tensor) -> bool:
            return key[-1] == "w"

        class Outer(TensorClass, cast_filter=only_w):
            inner: Inner

        rec = Outer(inner=Inner(w=torch.zeros(1), n=torch.zeros(1))).to(torch.float16)
        assert (rec.inner.w.dtype, rec.inner.n.dtype) == (torch.float16, torch.float32)


class TestSkipPostInit:
    @pytest.mark.parametrize("flag", [True, False])
    def test_post_init_runs_once_per_construction(self, flag: bool) -> None:
        calls: list[int] = []

        class Rec(TensorClass, skip_post_init_on_rebuild=flag):
            x: torch.Tensor

            def __post_init__(self) -> None:
                calls.append(1)

        rec = Rec(x=torch.zeros(2), batch_size=[2])
        rec[0], rec.clone(), torch.stack([rec, rec])
        assert len(calls) == 1

    def test_bracket_spelling(self) -> None:
        assert bracketed(_template(x=torch.Tensor), skip_post_init_on_rebuild=True) is not None
        assert subclassed(_template(x=torch.Tensor), skip_post_init_on_rebuild=True) is not None


# --- one list of options -----------------------------------------------------------------


def _value_of(name: str) -> Any:
    """A value that turns the option ``name`` on."""
    return True if isinstance(OPTIONS[name].default, bool) else _floating


class TestOneList:
    """Every option of ``ClassOptions`` is taken, or refused on purpose, by every place
    that takes options; none is known to one place only."""

    @pytest.mark.parametrize("name", list(OPTIONS))
    def test_the_decorator_and_class_keywords_take_it(self, name: str) -> None:
        value = _value_of(name)
        decorated = tclass.tensorclass(**{name: value})(_template(x=torch.Tensor))
        keyword = type(
            "Rec", (TensorClass,), {"__annotations__": {"x": torch.Tensor}}, **{name: value}
        )
        for cls in (decorated, keyword):
            options = cls.__tclass_info__.options
            assert options[name] == value and set(options) == set(OPTIONS)
            assert not hasattr(cls.__tclass_info__, name)  # one object, no copied slots

    @pytest.mark.parametrize("name", list(OPTIONS))
    def test_from_dataclass_takes_it(self, name: str) -> None:
        source = dataclasses.make_dataclass("Source", [("x", torch.Tensor)])
        cls = tclass.from_dataclass(source, **{name: _value_of(name)})
        assert cls.__tclass_info__.options[name] == _value_of(name)

    @pytest.mark.parametrize("name", list(OPTIONS))
    def test_brackets_take_a_flag_and_refuse_the_others(self, name: str) -> None:
        if OPTIONS[name].flag:
            assert TensorClass[name].__tclass_info__.options[name] is True
        else:
            with pytest.raises(errors.ClassDefinitionError, match=f"TensorClass\\['{name}'\\]"):
                TensorClass[name]

    @pytest.mark.parametrize("name", list(OPTIONS))
    def test_typed_tensordict_applies_ignores_or_refuses_it(self, name: str) -> None:
        typed = OPTIONS[name].typed
        body = {"__annotations__": {"x": torch.Tensor}}
        if typed is None:
            with pytest.raises(ValueError, match="Unknown TypedTensorDict option"):
                tclass.TypedTensorDict[name]
            with pytest.raises(TypeError):
                type("State", (tclass.TypedTensorDict,), body, **{name: True})
            return
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cls = type("State", (tclass.TypedTensorDict,), body, **{name: True})
        warned = [w for w in caught if issubclass(w.category, DeprecationWarning)]
        assert bool(warned) == (typed == "inert") and getattr(cls, f"_{name}") is True

    def test_every_signature_names_every_option(self) -> None:
        for function in (
            tclass.tensorclass,
            tclass.from_dataclass,
            TensorClass.__init_subclass__,
        ):
            parameters = inspect.signature(function).parameters
            assert set(OPTIONS) <= set(parameters), function
            assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in OPTIONS)

    def test_unknown_keywords_name_the_options(self) -> None:
        source = dataclasses.make_dataclass("Source", [("x", torch.Tensor)])
        for call in (
            lambda: tclass.tensorclass(colour=True),  # type: ignore[call-overload]
            lambda: tclass.from_dataclass(source, colour=True),  # type: ignore[call-arg]
        ):
            with pytest.raises(errors.ArgumentError, match="'colour'.*kw_only and cast_filter"):
                call()

    def test_the_options_module_documents_each_option(self) -> None:
        table = class_options_module.__doc__ or ""
        assert all(f"``{name}``" in table for name in OPTIONS)
        assert list(OPTIONS) == list(typing.get_type_hints(ClassOptions))
