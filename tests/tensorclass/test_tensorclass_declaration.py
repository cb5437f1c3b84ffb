"""Tests for declaring and constructing tensorclasses (tclass._tensorclass).

Both declaration forms are covered, usually through the ``declare`` fixture: it turns a
plain *template* class (annotations, defaults, methods) into a tensorclass either with
``@tclass.tensorclass`` or as a subclass of ``tclass.TensorClass``, with the same options.

This file does not use ``from __future__ import annotations``, so most annotations are
real objects; the forward-reference tests write string annotations explicitly (which is
what that import produces) and one compiles a module-style snippet that uses the import.
"""

import copy
import dataclasses
import functools
import inspect
import re
import types
from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorClass, TensorDict, errors

from declared import (  # noqa: E402
    Color,
    Frame,
    Inner,
    Keyed,
    Outer,
    Sample,
    Transition,
    mismatch,
    raises,
    transition,
)

BatchMismatchError = errors.BatchMismatchError
ClassDefinitionError = errors.ClassDefinitionError
FieldTypeError = errors.FieldTypeError
FrozenInstanceError = errors.FrozenInstanceError
LockedError = errors.LockedError
ReservedNameError = errors.ReservedNameError
UnknownFieldError = errors.UnknownFieldError
UnsupportedError = errors.UnsupportedError


# --- the two declaration forms ---------------------------------------------------------


def _decorated(template: type, **options: Any) -> Any:
    """``@tclass.tensorclass`` (bare) or ``@tclass.tensorclass(**options)``."""
    return tclass.tensorclass(**options)(template) if options else tclass.tensorclass(template)


def _subclassed(template: type, **options: Any) -> Any:
    """``class X(tclass.TensorClass, **options)`` with the template's body."""
    body = {k: v for k, v in vars(template).items() if k not in ("__dict__", "__weakref__")}
    return types.new_class(template.__name__, (TensorClass,), options, lambda ns: ns.update(body))


Declare = Callable[..., Any]
FORMS = [pytest.param(_decorated, id="decorator"), pytest.param(_subclassed, id="base-class")]


@pytest.fixture(params=FORMS)
def declare(request: pytest.FixtureRequest) -> Declare:
    return request.param  # type: ignore[no-any-return]


# --- module-level classes (explicit class statements, both forms: tests/helpers/declared.py) ---


def _tagged_template() -> type:
    class Rec:
        a: torch.Tensor
        label: str = "x"
        tags: list = dataclasses.field(default_factory=list)

    return Rec


# --- dataclass protocol and identity -----------------------------------------------------


class TestDataclassProtocol:
    def test_is_dataclass_and_fields_in_order(self, declare: Declare) -> None:
        cls = declare(_tagged_template())
        assert dataclasses.is_dataclass(cls)
        assert [f.name for f in dataclasses.fields(cls)] == ["a", "label", "tags"]
        record = cls(torch.zeros(2), batch_size=[2])
        assert dataclasses.is_dataclass(record)
        assert [f.name for f in dataclasses.fields(record)] == ["a", "label", "tags"]

    def test_field_objects_keep_defaults(self, declare: Declare) -> None:
        a, label, items = dataclasses.fields(declare(_tagged_template()))
        assert a.default is dataclasses.MISSING and a.default_factory is dataclasses.MISSING
        assert label.default == "x"
        assert items.default_factory is list
        assert a.type is torch.Tensor and label.type is str

    def test_is_tensorclass_for_class_and_instance(self, declare: Declare) -> None:
        cls = declare(_tagged_template())
        assert tclass.is_tensorclass(cls)
        assert tclass.is_tensorclass(cls(torch.zeros(2), batch_size=[2]))

    @pytest.mark.parametrize(
        "obj",
        [
            TensorDict,
            TensorDict({}, batch_size=[]),
            Color,
            Color(),
            dataclasses.make_dataclass("Plain", [("a", int)]),
            TensorClass,
            torch.zeros(2),
            3,
        ],
        ids=[
            "TensorDict",
            "td",
            "plain-class",
            "plain-obj",
            "dataclass",
            "TensorClass",
            "tensor",
            "int",
        ],
    )
    def test_is_tensorclass_false_for_others(self, obj: object) -> None:
        assert tclass.is_tensorclass(obj) is False

    def test_python_value_nodes(self) -> None:
        # as the peer's: NonTensorData (and its subclasses) is a tensorclass, a stack is not
        class Tagged(tclass.NonTensorData): ...

        for obj in (tclass.NonTensorData, tclass.NonTensorData(1), Tagged, Tagged(data=1)):
            assert tclass.is_tensorclass(obj) and tclass.is_tensor_collection(obj)
        assert tclass.is_non_tensor(Tagged(data=1, batch_size=[]))
        stack = tclass.NonTensorStack(tclass.NonTensorData(1))
        assert not tclass.is_tensorclass(stack) and not tclass.is_tensorclass(type(stack))

    def test_python_value_nodes_are_dataclasses(self) -> None:
        # code that checks is_tensorclass then walks dataclasses.fields works, as on the
        # peer's node (a dataclass with these three fields)
        peer = pytest.importorskip("tensordict")
        node = TensorDict(s="hi", batch_size=[3]).get("s")
        peer_node = peer.TensorDict(s="hi", batch_size=[3]).get("s")
        names = [f.name for f in dataclasses.fields(node)]
        assert names == [f.name for f in dataclasses.fields(peer_node)]
        assert names == ["data", "_metadata", "_is_non_tensor"]
        assert dataclasses.is_dataclass(node) and dataclasses.is_dataclass(tclass.MetaData)
        assert dataclasses.asdict(node) == dataclasses.asdict(peer_node)
        assert dataclasses.astuple(node) == ("hi", None, True)
        replaced = dataclasses.replace(node, data="ho")  # the batch size is not a field
        peer_replaced = dataclasses.replace(peer_node, data="ho")
        assert type(replaced) is tclass.NonTensorData and replaced.data == "ho"
        assert replaced.batch_size == peer_replaced.batch_size == ()
        with pytest.raises(ValueError, match="init=False"):  # not an argument here
            dataclasses.replace(node, _metadata={})
        stack = tclass.NonTensorStack(tclass.NonTensorData(1), tclass.NonTensorData(2))
        assert not dataclasses.is_dataclass(stack)  # as the peer's stack
        with pytest.raises(TypeError):
            dataclasses.fields(stack)

    def test_isinstance_tensorclass(self, declare: Declare) -> None:
        cls = declare(_tagged_template())
        record = cls(torch.zeros(2), batch_size=[2])
        assert isinstance(record, TensorClass) and isinstance(record, cls)
        assert issubclass(cls, TensorClass)
        assert not isinstance(TensorDict({}, batch_size=[]), TensorClass)

    def test_class_metadata_kept(self, declare: Declare) -> None:
        class Documented:
            """Docs of Documented."""

            a: torch.Tensor

        cls = declare(Documented)
        assert cls.__name__ == "Documented"
        assert cls.__doc__ == "Docs of Documented."
        assert cls.__module__ == __name__

    def test_decorator_keeps_qualname(self) -> None:
        @tclass.tensorclass
        class Local:
            a: torch.Tensor

        assert Local.__qualname__.endswith("test_decorator_keeps_qualname.<locals>.Local")

    def test_base_class_form_keeps_qualname(self) -> None:
        class Local(TensorClass):
            a: torch.Tensor

        assert Local.__qualname__.endswith("test_base_class_form_keeps_qualname.<locals>.Local")

    @pytest.mark.parametrize(
        "cls", [Sample, Keyed, Frame], ids=["decorator", "base-kw", "base-frozen"]
    )
    def test_options_of_both_forms(self, cls: Any) -> None:
        info = cls.__tclass_info__
        expected = {Sample: (True, True), Keyed: (False, True), Frame: (True, False)}[cls]
        assert (info.options["frozen"], info.options["kw_only"]) == expected

    def test_instances_have_no_dict(self) -> None:
        assert not hasattr(transition(), "__dict__")


class TestRedecoration:
    def test_decorating_twice_returns_the_class(self, declare: Declare) -> None:
        cls = declare(_tagged_template())
        assert tclass.tensorclass(cls) is cls
        assert tclass.tensorclass(frozen=False, kw_only=False)(cls) is cls
        assert [f.name for f in dataclasses.fields(cls)] == ["a", "label", "tags"]
        assert cls(torch.zeros(2), batch_size=[2]).label == "x"

    def test_same_options_again_is_a_no_op(self) -> None:
        assert tclass.tensorclass(frozen=True, kw_only=True)(Sample) is Sample
        options = Sample.__tclass_info__.options
        assert options["frozen"] and options["kw_only"]

    def test_redecorating_with_frozen_applies_it(self, declare: Declare) -> None:
        cls = declare(_tagged_template())
        again = tclass.tensorclass(frozen=True)(cls)
        record = again(torch.zeros(2), batch_size=[2])
        with pytest.raises(FrozenInstanceError):
            record.label = "y"

    def test_redecorating_with_kw_only_applies_it(self) -> None:
        cls = _decorated(_tagged_template())
        again = tclass.tensorclass(kw_only=True)(cls)
        with pytest.raises(TypeError):
            again(torch.zeros(2), batch_size=[2])


# --- inheritance -------------------------------------------------------------------------


class TestInheritance:
    def test_fields_accumulate_in_dataclass_order(self, declare: Declare) -> None:
        base = declare(_tagged_template())

        class Child(base):  # type: ignore[valid-type, misc]
            extra: torch.Tensor | None = None

        child = _decorated(Child) if declare is _decorated else Child
        assert [f.name for f in dataclasses.fields(child)] == ["a", "label", "tags", "extra"]
        params = list(inspect.signature(child).parameters)
        assert params == ["a", "label", "tags", "extra", "batch_size", "device", "names"]
        record = child(torch.zeros(2), "l", [1], torch.ones(2), batch_size=[2])
        assert isinstance(record, base) and tclass.is_tensorclass(record)
        assert record.label == "l" and torch.equal(record.extra, torch.ones(2))

    def test_undecorated_subclass_is_a_tensorclass(self) -> None:
        class Child(Transition):
            reward: torch.Tensor | None = None

        assert tclass.is_tensorclass(Child)
        record = Child(torch.zeros(2, 3), "e", reward=[1.0, 2.0], batch_size=[2])
        assert torch.equal(record.reward, torch.tensor([1.0, 2.0]))

    def test_redeclared_field_keeps_its_position_and_takes_the_new_annotation(self) -> None:
        @tclass.tensorclass
        class Base:
            a: torch.Tensor
            b: torch.Tensor

        @tclass.tensorclass
        class Child(Base):
            b: torch.Tensor | None = None  # now optional

        assert [f.name for f in dataclasses.fields(Child)] == ["a", "b"]
        record = Child(torch.zeros(2), batch_size=[2])
        assert record.b is None
        assert Base(torch.zeros(2), None, batch_size=[2]).b is None  # None: not set yet

    def test_redeclared_default_wins(self) -> None:
        class Child(Keyed):
            tag: str = "child"

        assert Child(x=torch.zeros(1), batch_size=[1]).tag == "child"
        assert Keyed(x=torch.zeros(1), batch_size=[1]).tag == "k"

    def test_stack_and_index_return_the_subclass(self, declare: Declare) -> None:
        base = declare(_tagged_template())

        class Child(base):  # type: ignore[valid-type, misc]
            pass

        c = Child(torch.zeros(3), batch_size=[3])
        stacked = torch.stack([c, c])
        assert type(stacked) is Child and stacked.batch_size == torch.Size([2, 3])
        assert type(c[0]) is Child and type(torch.cat([c, c])) is Child

    @pytest.mark.parametrize("base_frozen", [True, False])
    def test_frozen_mix_in_class_keywords_raises(self, base_frozen: bool) -> None:
        class Base(TensorClass, frozen=base_frozen):
            a: torch.Tensor

        kind = "frozen" if base_frozen else "non-frozen"
        with raises(
            ClassDefinitionError, TypeError, match=f"cannot derive from the {kind} tensorclass Base"
        ):

            class Child(Base, frozen=not base_frozen):
                b: torch.Tensor

    @pytest.mark.parametrize("base_frozen", [True, False])
    def test_frozen_mix_in_decorator_names_the_frozen_option(self, base_frozen: bool) -> None:
        base = Frame if base_frozen else Transition
        with pytest.raises(ClassDefinitionError, match="frozen option"):

            @tclass.tensorclass(frozen=not base_frozen)
            class Child(base):  # type: ignore[valid-type, misc]
                extra: torch.Tensor | None = None

    @pytest.mark.parametrize(
        "base", [Frame, Sample, Keyed], ids=["frozen", "frozen-kw-only", "kw-only"]
    )
    def test_options_are_inherited(self, base: Any) -> None:
        class Child(base):  # type: ignore[valid-type, misc]
            more: int = 1

        decorated = tclass.tensorclass(Child)
        assert decorated is Child
        info, parent = Child.__tclass_info__, base.__tclass_info__
        assert info.options["frozen"] == parent.options["frozen"] and not info.options["kw_only"]
        # kw_only applies to the fields of the class that sets it, as in dataclasses.
        params = inspect.signature(Child).parameters
        assert params["more"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        if parent.options["kw_only"]:
            assert params["x"].kind is inspect.Parameter.KEYWORD_ONLY

    def test_frozen_is_inherited_by_instances(self) -> None:
        class Child(Frame):
            pass

        record = Child(torch.zeros(2), batch_size=[2])
        assert hash(record) == object.__hash__(record)
        with pytest.raises(FrozenInstanceError):
            record.step = 3

    def test_frozen_set_is_the_locked_error_the_peer_raises(self) -> None:
        # the peer refuses set() on a frozen record as a locked TensorDict (RuntimeError)
        record = Frame(torch.zeros(2), batch_size=[2])
        with pytest.raises(RuntimeError, match="'step'.*frozen") as info:
            record.set("step", 3)
        assert isinstance(info.value, errors.LockedError) and isinstance(info.value, AttributeError)
        assert record.step == 0

    def test_required_field_after_default_is_a_class_definition_error(self) -> None:
        with pytest.raises(TypeError, match="c"):

            class Child(Transition):  # Transition.mask has a default
                c: torch.Tensor

    def test_kw_only_decorator_on_subclass_comes_too_late_and_says_how(self) -> None:
        # The subclass is built when its class statement runs, before the decorator
        # sees it; the error points at the class keyword that works.
        with pytest.raises(ClassDefinitionError, match=r"kw_only=True"):

            @tclass.tensorclass(kw_only=True)
            class Child(Transition):
                c: torch.Tensor

    def test_kw_only_class_keyword_on_subclass_allows_required_fields_after_defaults(self) -> None:
        class Child(Transition, kw_only=True):
            c: torch.Tensor

        record = Child(obs=torch.zeros(1, 3), env="e", c=torch.zeros(1), batch_size=[1])
        assert record.c.shape == (1,)

    def test_super_in_post_init_chains(self) -> None:
        calls: list[str] = []

        @tclass.tensorclass
        class Parent:
            a: torch.Tensor

            def __post_init__(self) -> None:
                calls.append("parent")

        @tclass.tensorclass
        class Child(Parent):
            b: torch.Tensor | None = None

            def __post_init__(self) -> None:
                super().__post_init__()
                calls.append("child")

        Child(torch.zeros(1), batch_size=[1])
        assert calls == ["parent", "child"]


# --- what the user writes in the body ----------------------------------------------------


class TestUserDefinitions:
    def test_user_methods_are_never_overwritten(self, declare: Declare) -> None:
        class Custom:
            a: torch.Tensor

            def __repr__(self) -> str:
                return "custom repr"

            def __eq__(self, other: object) -> bool:
                return isinstance(other, str) and other == "magic"

            def double(self) -> torch.Tensor:
                return self.a * 2

            @classmethod
            def zeros(cls, n: int) -> Any:
                return cls(torch.zeros(n), batch_size=[n])

            @staticmethod
            def answer() -> int:
                return 42

        cls = declare(Custom)
        record = cls(torch.ones(2), batch_size=[2])
        assert repr(record) == "custom repr"
        assert (record == "magic") is True and (record == record) is False
        assert torch.equal(record.double(), torch.full((2,), 2.0))
        zeros = cls.zeros(3)
        assert type(zeros) is cls and zeros.batch_size == torch.Size([3])
        assert cls.answer() == 42

    def test_property_with_setter_survives(self, declare: Declare) -> None:
        class WithProp:
            a: torch.Tensor

            @property
            def twice(self) -> torch.Tensor:
                return self.a * 2

            @twice.setter
            def twice(self, value: torch.Tensor) -> None:
                self.a = value / 2

            @property
            def readonly(self) -> int:
                return 1

        record = declare(WithProp)(torch.ones(2), batch_size=[2])
        assert torch.equal(record.twice, torch.full((2,), 2.0))
        record.twice = torch.full((2,), 8.0)
        assert torch.equal(record.a, torch.full((2,), 4.0))
        with pytest.raises(BatchMismatchError):  # the setter goes through the field check
            record.twice = torch.zeros(3)
        with pytest.raises(AttributeError, match="readonly"):
            record.readonly = 2

    def test_zero_argument_super_in_decorated_class(self) -> None:
        @tclass.tensorclass
        class Wrapped:
            a: torch.Tensor

            def __repr__(self) -> str:
                return "<" + super().__repr__() + ">"

            def __getitem__(self, index: Any) -> Any:
                return super().__getitem__(index)

            def clone(self, recurse: bool = True) -> Any:
                return super().clone(recurse)

            @property
            def base_repr(self) -> str:
                return super().__repr__()

        record = Wrapped(torch.zeros(3), batch_size=[3])
        assert repr(record) == "<Wrapped(batch_size=[3], fields={a: f32[]})>"
        assert type(record[0]) is Wrapped and record[0].batch_size == torch.Size([])
        assert type(record.clone()) is Wrapped
        assert record.base_repr == "Wrapped(batch_size=[3], fields={a: f32[]})"

    def test_zero_argument_super_in_base_class_form(self) -> None:
        class Wrapped(TensorClass):
            a: torch.Tensor

            def __repr__(self) -> str:
                return "<" + super().__repr__() + ">"

        assert (
            repr(Wrapped(torch.zeros(3), batch_size=[3]))
            == "<Wrapped(batch_size=[3], fields={a: f32[]})>"
        )

    def test_user_init_is_kept(self, declare: Declare) -> None:
        class WithInit:
            a: torch.Tensor

            def __init__(self) -> None:
                self.a = torch.ones(1)

        assert torch.equal(declare(WithInit)().a, torch.ones(1))

    def test_user_setattr_is_kept(self, declare: Declare) -> None:
        class WithSetattr:
            a: torch.Tensor

            def __setattr__(self, name: str, value: Any) -> None:
                object.__setattr__(self, name, value * 2 if name == "a" else value)

        record = declare(WithSetattr)(torch.ones(1))
        record.a = torch.ones(1)
        assert torch.equal(record.a, torch.full((1,), 2.0))

    def test_slots_raise(self, declare: Declare) -> None:
        class WithSlots:
            __slots__ = ("q",)
            a: torch.Tensor

        with raises(ClassDefinitionError, TypeError, match="WithSlots defines __slots__"):
            declare(WithSlots)

    @pytest.mark.parametrize(
        "name", ["batch_size", "device", "to", "shape", "apply", "keys", "names", "reshape"]
    )
    def test_reserved_field_name_raises(self, declare: Declare, name: str) -> None:
        template = type(
            "Reserved", (), {"__annotations__": {"ok": torch.Tensor, name: torch.Tensor}}
        )
        with raises(
            ReservedNameError,
            ClassDefinitionError,
            AttributeError,
            TypeError,
            match=f"Reserved.{name}: Attribute name {name} can't be used",
        ):
            declare(template)

    def test_tensordict_attribute_is_reserved(self) -> None:
        template = type("Reserved", (), {"__annotations__": {"_tensordict": torch.Tensor}})
        with pytest.raises(ReservedNameError, match="_tensordict"):
            _decorated(template)

    def test_tensor_default_warns(self, declare: Declare) -> None:
        class WithTensorDefault:
            a: torch.Tensor = torch.zeros(3)

        with pytest.warns(
            errors.SharedDefaultWarning, match=r"WithTensorDefault.a is shared.*default_factory"
        ):
            cls = declare(WithTensorDefault)
        assert cls().a is cls().a

    def test_tensor_default_through_field_warns(self) -> None:
        class WithTensorDefault:
            a: torch.Tensor = dataclasses.field(default=torch.zeros(3))

        with pytest.warns(errors.SharedDefaultWarning, match="default_factory"):
            _subclassed(WithTensorDefault)

    def test_field_shadowed_by_method_raises(self) -> None:
        with pytest.raises(ClassDefinitionError, match="also defined as a method"):

            @tclass.tensorclass
            class Clash:
                def a(self) -> int:
                    return 1

                a: int  # noqa: F811

    def test_annotation_without_a_runtime_check_takes_anything(self, declare: Declare) -> None:
        template = type("Odd", (), {"__annotations__": {"a": 5}})
        assert declare(template)(a="anything").a == "anything"

    def test_classvar_is_not_a_field(self) -> None:
        from typing import ClassVar

        @tclass.tensorclass
        class WithClassVar:
            a: torch.Tensor
            K: ClassVar[int] = 3

        assert [f.name for f in dataclasses.fields(WithClassVar)] == ["a"]
        assert WithClassVar(torch.zeros(1), batch_size=[1]).K == 3
        assert WithClassVar.__expected_keys__ == frozenset({"a"})  # the peer's name

    def test_expected_keys_are_the_fields_inherited_ones_included(self) -> None:
        from typing import ClassVar

        class Base(TensorClass):
            a: torch.Tensor
            K: ClassVar[int] = 3

        class Child(Base):
            b: str = "b"

        assert Base.__expected_keys__ == {"a"} and Child.__expected_keys__ == {"a", "b"}
        assert Child(torch.zeros(1)).__expected_keys__ == {"a", "b"}

    def test_too_many_positional_arguments_are_counted_as_python_counts(self) -> None:
        from typing import ClassVar

        @tclass.tensorclass
        class Spaced:
            a: torch.Tensor
            b: ClassVar[str] = "constant"
            c: torch.Tensor

        with pytest.raises(
            errors.ArgumentError,
            match=re.escape(
                "Spaced.__init__() takes 3 positional arguments but 5 were given (self, then "
                "the fields a, c, in order; ClassVar attributes are no fields)"
            ),
        ) as info:
            Spaced(torch.ones(2), "constant", torch.zeros(2), 42, batch_size=[2])
        assert isinstance(info.value, TypeError)

    def test_user_hash_on_frozen_class_survives(self) -> None:
        @tclass.tensorclass(frozen=True)
        class Hashed:
            a: torch.Tensor

            def __hash__(self) -> int:
                return 42

        assert hash(Hashed(torch.zeros(1), batch_size=[1])) == 42

    def test_cached_property_caches_per_instance(self) -> None:
        # a class with a functools.cached_property gets a __dict__ to cache into (as the
        # peer's records have); classes without one keep refusing unknown attributes
        calls: list[int] = []

        @tclass.tensorclass
        class Poly:
            coef: torch.Tensor

            @functools.cached_property
            def degree(self) -> int:
                calls.append(1)
                return int(self.coef.shape[-1]) - 1

        class Sub(Poly):
            @functools.cached_property
            def twice(self) -> int:
                return 2 * self.degree

        p = Poly(coef=torch.zeros(2, 4), batch_size=[2])
        assert (p.degree, p.degree, len(calls)) == (3, 3, 1)
        assert p[0].degree == 3 and len(calls) == 2  # a new record computes its own
        assert Sub(coef=torch.zeros(1, 2), batch_size=[1]).twice == 2
        with pytest.raises(AttributeError):
            _Plain(a=torch.zeros(1), batch_size=[1]).typo = 1  # type: ignore[attr-defined]


@tclass.tensorclass
class _Plain:
    a: torch.Tensor


# --- construction ------------------------------------------------------------------------


class TestConstruction:
    def test_fields_by_position_and_keyword(self, declare: Declare) -> None:
        cls = declare(_tagged_template())
        a = torch.zeros(2, 5)
        by_position = cls(a, "p", [1], batch_size=[2])
        by_keyword = cls(tags=[2], label="k", a=a, batch_size=[2])
        assert by_position.a is a and by_position.label == "p" and by_position.tags == [1]
        assert by_keyword.a is a and by_keyword.label == "k" and by_keyword.tags == [2]

    def test_missing_field_names_it(self, declare: Declare) -> None:
        with raises(
            errors.ArgumentError,
            TypeError,
            match="missing 1 required positional argument \\(the field 'a'\\)",
        ):
            declare(_tagged_template())(batch_size=[2])

    def test_unknown_keyword_names_it(self, declare: Declare) -> None:
        with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
            declare(_tagged_template())(torch.zeros(2), colour="red", batch_size=[2])

    def test_duplicated_argument_names_it(self, declare: Declare) -> None:
        with raises(
            errors.DuplicateArgumentError,
            TypeError,
            ValueError,
            match="multiple values for argument 'a'",
        ):
            declare(_tagged_template())(torch.zeros(2), a=torch.zeros(2), batch_size=[2])

    def test_batch_size_is_keyword_only(self) -> None:
        with pytest.raises(TypeError, match="positional"):
            Transition(torch.zeros(2, 3), "e", None, [2])

    @pytest.mark.parametrize(
        "batch_size", [[4], 4, torch.Size([4]), (4,)], ids=["list", "int", "Size", "tuple"]
    )
    def test_batch_size_forms(self, batch_size: Any) -> None:
        record = Transition(torch.zeros(4, 3), "e", batch_size=batch_size)
        assert record.batch_size == torch.Size([4]) and type(record.batch_size) is torch.Size
        assert record.shape == torch.Size([4]) and record.batch_dims == 1

    @pytest.mark.parametrize("batch_size", [None, []])
    def test_empty_batch_size(self, batch_size: Any) -> None:
        record = Transition(torch.zeros(4, 3), "e", batch_size=batch_size)
        assert record.batch_size == torch.Size([]) and record.obs.shape == (4, 3)

    def test_device_cpu_is_reported(self) -> None:
        record = Transition(torch.zeros(2, 3), "e", batch_size=[2], device="cpu")
        assert record.device == torch.device("cpu") and record.obs.device.type == "cpu"

    def test_device_moves_tensors_and_nested_records(self) -> None:
        record = Outer(
            Inner(torch.zeros(2), batch_size=[2]),
            {"y": torch.zeros(2)},
            batch_size=[2],
            device="meta",
        )
        assert record.device == torch.device("meta")
        assert record.inner.x.device.type == "meta" and record.inner.device == torch.device("meta")
        assert record.td["y"].device.type == "meta"

    def test_no_device_by_default(self) -> None:
        assert transition().device is None

    def test_names_none_is_accepted(self) -> None:
        record = Transition(torch.zeros(2, 3), "e", batch_size=[2], names=None)
        assert record.names == [None]

    def test_names_name_the_batch_dims(self) -> None:
        record = Transition(torch.zeros(2, 3), "e", batch_size=[2], names=["a"])
        assert record.names == ["a"] and record[:1].names == ["a"]

    def test_defaults_are_used(self) -> None:
        record = Frame(torch.zeros(2), batch_size=[2])
        assert record.step == 0
        assert transition().mask is None

    def test_default_factory_gives_each_instance_its_own_value(self, declare: Declare) -> None:
        class Factories:
            a: torch.Tensor
            tags: list = dataclasses.field(default_factory=list)
            buf: torch.Tensor = dataclasses.field(default_factory=lambda: torch.zeros(2, 3))

        cls = declare(Factories)
        first, second = cls(torch.zeros(2), batch_size=[2]), cls(torch.zeros(2), batch_size=[2])
        assert first.tags == [] and first.tags is not second.tags
        assert first.buf is not second.buf
        first.buf.add_(1)
        assert torch.equal(second.buf, torch.zeros(2, 3))
        given_tags = [1]
        assert cls(torch.zeros(2), given_tags, batch_size=[2]).tags is given_tags

    def test_init_false_field_with_default(self, declare: Declare) -> None:
        class Computed:
            a: torch.Tensor
            version: int = dataclasses.field(default=7, init=False)
            cache: dict = dataclasses.field(default_factory=dict, init=False)

        cls = declare(Computed)
        assert list(inspect.signature(cls).parameters) == ["a", "batch_size", "device", "names"]
        record = cls(torch.zeros(2), batch_size=[2])
        assert record.version == 7 and record.cache == {}
        with pytest.raises(TypeError, match="version"):
            cls(torch.zeros(2), version=1, batch_size=[2])

    def test_kw_only_makes_fields_keyword_only(self, declare: Declare) -> None:
        cls = declare(_tagged_template(), kw_only=True)
        with pytest.raises(TypeError, match="positional"):
            cls(torch.zeros(2), batch_size=[2])
        record = cls(a=torch.zeros(2), batch_size=[2])
        assert record.label == "x"
        kinds = {p.kind for p in inspect.signature(cls).parameters.values()}
        assert kinds == {inspect.Parameter.KEYWORD_ONLY}

    def test_kw_only_sentinel_and_per_field_kw_only(self) -> None:
        @tclass.tensorclass
        class Mixed:
            a: torch.Tensor
            b: int = dataclasses.field(default=1, kw_only=True)
            _: dataclasses.KW_ONLY
            c: str

        sig = inspect.signature(Mixed)
        assert str(sig) == (
            "(a: torch.Tensor, *, b: int = 1, c: str, batch_size=None, device=None, names=None)"
            " -> None"
        )
        record = Mixed(torch.zeros(1), c="c", batch_size=[1])
        assert (record.b, record.c) == (1, "c")

    def test_frozen_kw_only_decorator(self) -> None:
        with pytest.raises(TypeError):
            Sample(torch.zeros(2), batch_size=[2])
        record = Sample(x=torch.zeros(2), batch_size=[2])
        assert record.tag == "s" and record.is_locked

    def test_signature_shows_fields_then_keyword_only_arguments(self, declare: Declare) -> None:
        class Sig:
            a: torch.Tensor
            label: str = "x"
            mask: torch.Tensor | None = None

        sig = inspect.signature(declare(Sig))
        assert str(sig) == (
            "(a: torch.Tensor, label: str = 'x', mask: Optional[torch.Tensor] = None, *, "
            "batch_size=None, device=None, names=None) -> None"
        )
        kinds = [p.kind for p in sig.parameters.values()]
        assert (
            kinds
            == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 3 + [inspect.Parameter.KEYWORD_ONLY] * 3
        )

    def test_class_without_fields(self, declare: Declare) -> None:
        cls = declare(type("Empty", (), {}))
        record = cls(batch_size=[3])
        assert record.batch_size == torch.Size([3]) and dataclasses.fields(cls) == ()
        assert (
            str(inspect.signature(cls)) == "(*, batch_size=None, device=None, names=None) -> None"
        )

    def test_generated_init_has_the_class_qualname(self) -> None:
        assert Frame.__init__.__qualname__ == "Frame.__init__"
        assert Frame.__init__.__module__ == Frame.__module__ == "declared"  # not tclass's


class TestPostInit:
    def test_runs_exactly_once_per_construction(self, declare: Declare) -> None:
        calls: list[Any] = []

        class Counted:
            a: torch.Tensor

            def __post_init__(self) -> None:
                calls.append(self.a)

        cls = declare(Counted)
        cls([1.0, 2.0], batch_size=[2])
        assert len(calls) == 1
        assert isinstance(calls[0], torch.Tensor)  # sees the stored (cast) value
        cls(torch.zeros(2), batch_size=[2])
        assert len(calls) == 2

    @pytest.mark.parametrize(
        "op",
        [
            lambda r: r[0],
            lambda r: r[1:],
            lambda r: r[torch.tensor([True, False, True, False])],
            lambda r: r.clone(),
            lambda r: r.to("cpu"),
            lambda r: r.to(torch.float64),
            lambda r: r.reshape(2, 2),
            lambda r: r.unsqueeze(0),
            lambda r: r.unbind(0),
            lambda r: r.split(2),
            lambda r: torch.stack([r, r]),
            lambda r: torch.cat([r, r]),
            lambda r: r.apply(lambda t: t + 1),
            lambda r: r.replace(a=torch.ones(4, 2)),
            copy.copy,
            copy.deepcopy,
            lambda r: tclass.pad(r, [0, 1]),
            lambda r: tclass.pad_sequence([r, r]),
            lambda r: r.consolidate(),
            lambda r: tclass.LazyStackedTensorDict.lazy_stack([r, r]),
            lambda r: r.memmap(),
            lambda r: r + 1,
            lambda r: r.select("a"),
        ],
        ids=[
            "int",
            "slice",
            "mask",
            "clone",
            "to-device",
            "to-dtype",
            "reshape",
            "unsqueeze",
            "unbind",
            "split",
            "stack",
            "cat",
            "apply",
            "replace",
            "copy",
            "deepcopy",
            "pad",
            "pad_sequence",
            "consolidate",
            "lazy_stack",
            "memmap",
            "add",
            "select",
        ],
    )
    def test_not_run_by_operations(self, op: Callable[[Any], Any]) -> None:
        calls: list[int] = []

        @tclass.tensorclass
        class Counted:
            a: torch.Tensor

            def __post_init__(self) -> None:
                calls.append(1)

        record = Counted(torch.zeros(4, 2), batch_size=[4])
        assert calls == [1]
        op(record)
        assert calls == [1]

    def test_errors_propagate(self) -> None:
        @tclass.tensorclass
        class Positive:
            a: torch.Tensor

            def __post_init__(self) -> None:
                if (self.a < 0).any():
                    raise ValueError("a must be >= 0")

        with pytest.raises(ValueError, match="a must be >= 0"):
            Positive(torch.tensor([-1.0]), batch_size=[1])

    def test_initvar_is_passed_to_post_init(self) -> None:
        @tclass.tensorclass
        class Scaled:
            a: torch.Tensor
            scale: dataclasses.InitVar[float] = 1.0

            def __post_init__(self, scale: float) -> None:
                self.a = self.a * scale

        assert [f.name for f in dataclasses.fields(Scaled)] == ["a"]
        assert torch.equal(Scaled(torch.ones(2), 3.0, batch_size=[2]).a, torch.full((2,), 3.0))
        assert torch.equal(Scaled(torch.ones(2), batch_size=[2]).a, torch.ones(2))


# --- attribute assignment ----------------------------------------------------------------


ASSIGN_BAD = [
    ("obs", "x"),
    ("obs", {"a": 1}),
    ("env", torch.zeros(4)),
    ("mask", "x"),
]


class TestAssignment:
    @pytest.mark.parametrize("name, value", ASSIGN_BAD, ids=[f"{n}-{v!r}" for n, v in ASSIGN_BAD])
    def test_assignment_is_checked_like_construction(self, name: str, value: Any) -> None:
        kwargs: dict[str, Any] = {"obs": torch.zeros(4, 3), "env": "e", name: value}
        with pytest.raises(FieldTypeError) as at_init:
            Transition(**kwargs, batch_size=[4])
        record = transition()
        with pytest.raises(FieldTypeError) as at_set:
            setattr(record, name, value)
        assert str(at_set.value) == str(at_init.value)
        assert record.env == "pong" and record.obs.shape == (4, 3)

    def test_assignment_casts_like_construction(self) -> None:
        record = transition()
        record.mask = [True, False, True, False]
        assert torch.equal(record.mask, torch.tensor([True, False, True, False]))
        record.env = "breakout"
        assert record.env == "breakout"
        outer = Outer({"x": torch.zeros(4)}, batch_size=[4])
        outer.inner = {"x": torch.ones(4, 2)}
        outer.td = {"y": torch.zeros(4)}
        assert type(outer.inner) is Inner and type(outer.td) is TensorDict

    def test_set_method_is_checked_too(self) -> None:
        record = transition()
        with pytest.raises(FieldTypeError, match="Transition.env is annotated str"):
            record.set("env", torch.ones(4))
        record.set("env", 1)  # a Python value of another type: kept, as the peer
        assert record.env == 1 and record[0].env == 1
        with pytest.raises(
            UnknownFieldError, match="Transition has no field 'ens'.*did you mean 'env'"
        ):
            record.set("ens", "x")

    def test_unknown_attribute_raises(self, declare: Declare) -> None:
        record = declare(_tagged_template())(torch.zeros(2), batch_size=[2])
        with pytest.raises(AttributeError, match="no attribute 'lable'"):
            record.lable = "x"

    def test_deleting_an_optional_field_sets_none(self) -> None:
        record = Transition(torch.zeros(4, 3), "e", torch.ones(4), batch_size=[4])
        del record.mask
        assert record.mask is None and "mask" not in record.keys()
        record.mask = torch.ones(4)
        record.mask = None
        assert record.mask is None

    def test_deleting_a_required_field_unsets_it(self) -> None:
        record = transition()
        del record.obs
        assert record.obs is None and "obs" not in record.keys()

    def test_locked_record_refuses_assignment(self, declare: Declare) -> None:
        record = declare(_tagged_template())(torch.zeros(2), batch_size=[2])
        assert record.lock_() is record and record.is_locked
        msg = r"cannot assign to field 'label': this Rec is locked"
        with raises(LockedError, RuntimeError, match=msg):
            record.label = "y"
        with pytest.raises(LockedError, match="field 'a'"):
            record.a = torch.ones(2)
        with pytest.raises(LockedError):
            del record.label
        assert record.label == "x"

    def test_a_locked_record_over_a_lazy_stack_refuses_assignment(self) -> None:
        # Found by the differential fuzzer: the refusal read the storage's folder, which a
        # lazy stack (a record built by lazy_stack) does not have: an AttributeError.
        stacked = tclass.lazy_stack([transition(), transition()]).lock_()
        with raises(LockedError, RuntimeError, match="field 'obs': this .* is locked"):
            stacked.obs = torch.zeros_like(stacked.obs)

    def test_none_over_a_lazy_stack_with_a_locked_member_reaches_its_holders(self) -> None:
        # Found by the differential fuzzer: None unsets the field in the members that hold
        # it only; the peer lets None over an unset field of such a stack pass (the stack
        # itself is not locked), and refuses it where a locked member holds the field.
        stacked = tclass.lazy_stack([transition().lock_(), transition()])
        assert not stacked.is_locked
        assert stacked.set("mask", None) is stacked and stacked.mask is None
        stacked.mask = None
        assert "mask" not in stacked.keys()
        held = transition()
        held.mask = torch.ones(4)
        stacked = tclass.lazy_stack([held.lock_(), transition()])
        with raises(LockedError, RuntimeError, match="field 'mask': this .* is locked"):
            stacked.mask = None
        with raises(LockedError, RuntimeError, match="field 'mask': this .* is locked"):
            stacked.set("mask", torch.zeros(2, 4))
        assert torch.equal(stacked[0].mask, torch.ones(4)) and stacked[1].mask is None

    def test_locked_record_allows_in_place_writes(self) -> None:
        record = transition().lock_()
        record.obs[:] = 1
        record.obs.add_(1)
        record[0:2] = Transition(torch.full((2, 3), 5.0), "pong", batch_size=[2])
        assert torch.equal(record.obs[0], torch.full((3,), 5.0))
        assert torch.equal(record.obs[3], torch.full((3,), 2.0))

    def test_unlock_allows_assignment_again(self) -> None:
        record = transition().lock_()
        record.unlock_()
        record.env = "other"
        assert record.env == "other"
        with record.lock_():
            with pytest.raises(LockedError):
                record.env = "again"
        record.env = "again"
        assert record.env == "again"

    def test_assigned_tensor_moves_to_the_device(self) -> None:
        record = Outer({"x": torch.zeros(3)}, batch_size=[3], device="meta")
        record.inner = Inner(torch.ones(3, 2), batch_size=[3])
        record.td = {"y": torch.zeros(3)}
        assert record.inner.x.device.type == "meta" and record.inner.device == torch.device("meta")
        assert record.td["y"].device.type == "meta"
        plain = Transition(torch.zeros(2, 3), "e", batch_size=[2], device="meta")
        plain.obs = torch.ones(2, 7)
        assert plain.obs.device.type == "meta" and plain.obs.shape == (2, 7)


# --- frozen ------------------------------------------------------------------------------


class TestFrozen:
    @pytest.fixture(params=FORMS)
    def frozen_cls(self, request: pytest.FixtureRequest) -> Any:
        return request.param(_tagged_template(), frozen=True)

    def test_assignment_raises(self, frozen_cls: Any) -> None:
        record = frozen_cls(torch.zeros(2), batch_size=[2])
        match = r"cannot assign to field 'label': Rec is frozen \(use replace\(\)\)"
        with raises(
            FrozenInstanceError, dataclasses.FrozenInstanceError, AttributeError, match=match
        ):
            record.label = "y"
        with pytest.raises(FrozenInstanceError, match="field 'a'"):
            record.a = torch.ones(2)
        assert record.label == "x"

    def test_delete_raises(self, frozen_cls: Any) -> None:
        record = frozen_cls(torch.zeros(2), batch_size=[2])
        with pytest.raises(FrozenInstanceError):
            del record.label

    def test_hashable_by_identity(self, frozen_cls: Any) -> None:
        a = frozen_cls(torch.zeros(2), batch_size=[2])
        b = frozen_cls(torch.zeros(2), batch_size=[2])
        assert hash(a) == hash(a) and hash(a) != hash(b)
        table = {a: "a", b: "b"}
        assert table[a] == "a" and table[b] == "b" and len(table) == 2
        assert a in {a} and b not in {a}

    def test_non_frozen_is_unhashable(self, declare: Declare) -> None:
        record = declare(_tagged_template())(torch.zeros(2), batch_size=[2])
        with pytest.raises(TypeError, match="unhashable type: 'Rec'"):
            hash(record)

    def test_frozen_instances_are_locked(self, frozen_cls: Any) -> None:
        record = frozen_cls(torch.zeros(4), batch_size=[4])
        assert record.is_locked
        assert record[0].is_locked and record.clone().is_locked
        assert torch.stack([record, record]).is_locked
        with pytest.raises(FrozenInstanceError):
            record[1:].label = "y"

    def test_in_place_writes_still_work(self, frozen_cls: Any) -> None:
        record = frozen_cls(torch.zeros(4, 2), batch_size=[4])
        record[0:2] = frozen_cls(torch.ones(2, 2), batch_size=[2])
        record.a[3] = 7
        assert torch.equal(record.a[:, 0], torch.tensor([1.0, 1.0, 0.0, 7.0]))

    def test_replace_returns_a_new_frozen_record(self, frozen_cls: Any) -> None:
        record = frozen_cls(torch.zeros(2), batch_size=[2])
        new = record.replace(label="y", a=[1.0, 2.0])
        assert type(new) is frozen_cls and new is not record
        assert new.label == "y" and torch.equal(new.a, torch.tensor([1.0, 2.0]))
        assert record.label == "x" and torch.equal(record.a, torch.zeros(2))
        assert new.tags is record.tags  # unchanged fields are shared
        assert new.is_locked
        with pytest.raises(FrozenInstanceError):
            new.label = "z"

    def test_replace_checks_values_and_names(self) -> None:
        record = Frame(torch.zeros(2), batch_size=[2])
        with pytest.raises(FieldTypeError, match="Frame.step is annotated int; got a TensorDict"):
            record.replace(step=TensorDict(batch_size=[2]))
        with pytest.raises(BatchMismatchError, match=mismatch("'pixels'", [3], [2])):
            record.replace(pixels=torch.zeros(3))
        with pytest.raises(
            UnknownFieldError, match="Frame has no field 'stop'.*did you mean 'step'"
        ):
            record.replace(stop=1)

    def test_replace_on_non_frozen_record(self) -> None:
        record = transition()
        new = record.replace(env="other")
        assert new.env == "other" and record.env == "pong" and not new.is_locked

    def test_unlock_does_not_unfreeze(self) -> None:
        record = Frame(torch.zeros(2), batch_size=[2])
        record.unlock_()
        with pytest.raises(FrozenInstanceError):
            record.step = 5


# --- repr --------------------------------------------------------------------------------


class TestRepr:
    def test_fields_sorted_with_type_codes(self) -> None:
        record = Transition(
            torch.zeros(4, 3), "pong", torch.ones(4, dtype=torch.bool), batch_size=[4]
        )
        assert (
            repr(record)
            == "Transition(batch_size=[4], fields={env: str, mask: bool[], obs: f32[3]})"
        )

    def test_absent_optional_fields_come_last(self) -> None:
        assert (
            repr(transition())
            == "Transition(batch_size=[4], fields={env: str, obs: f32[3], mask: None})"
        )

    def test_nested_class_is_named(self) -> None:
        record = Outer({"x": torch.zeros(4, 2, dtype=torch.int64)}, batch_size=[4])
        assert repr(record) == "Outer(batch_size=[4], fields={inner: Inner{x: i64[2]}, td: None})"

    def test_nested_extra_batch_dims_and_tensordict(self) -> None:
        inner = Inner(torch.zeros(4, 2, 3), batch_size=[4, 2])
        record = Outer(inner, {"y": torch.zeros(4, dtype=torch.float64)}, batch_size=[4])
        assert (
            repr(record)
            == "Outer(batch_size=[4], fields={inner: Inner[2]{x: f32[3]}, td: {y: f64[]}})"
        )

    def test_device_is_shown(self) -> None:
        record = Frame(torch.zeros(2, 3, dtype=torch.uint8), batch_size=[2], device="cpu")
        assert (
            repr(record) == "Frame(batch_size=[2], device=cpu, fields={pixels: u8[3], step: int})"
        )

    def test_base_class_form_repr(self) -> None:
        record = Sample(x=torch.zeros(3, 2), batch_size=[3])
        assert repr(record) == "Sample(batch_size=[3], fields={tag: str, x: f32[2]})"

    def test_long_repr_puts_one_field_per_line(self) -> None:
        @tclass.tensorclass
        class Observation:
            pixels_from_the_camera: torch.Tensor
            joint_positions_of_the_arm: torch.Tensor
            episode_label: str
            mask: torch.Tensor | None = None

        record = Observation(
            torch.zeros(4, 84, 84, dtype=torch.uint8), torch.zeros(4, 7), "ep-1", batch_size=[4]
        )
        assert repr(record) == (
            "Observation(batch_size=[4], fields={\n"
            "    episode_label: str,\n"
            "    joint_positions_of_the_arm: f32[7],\n"
            "    pixels_from_the_camera: u8[84,84],\n"
            "    mask: None})"
        )

    def test_non_tensor_stack_field(self) -> None:
        stacked = torch.stack(
            [transition(2), Transition(torch.zeros(2, 3), "breakout", batch_size=[2])]
        )
        assert repr(stacked) == (
            "Transition(batch_size=[2,2], fields={\n"
            "    env: NonTensorStack,\n"
            "    obs: f32[3],\n"
            "    mask: None})"
        )
        assert stacked[0, 1].env == "pong" and stacked[1, 0].env == "breakout"
        assert stacked.env == [["pong", "pong"], ["breakout", "breakout"]]
        short = torch.stack(
            [Frame(torch.zeros(2), 1, batch_size=[2]), Frame(torch.zeros(2), 2, batch_size=[2])]
        )
        assert (
            repr(short) == "Frame(batch_size=[2,2], fields={pixels: f32[], step: NonTensorStack})"
        )

    def test_same_values_stack_per_element(self) -> None:
        stacked = torch.stack([transition(2), transition(2)])
        assert repr(stacked) == (
            "Transition(batch_size=[2,2], fields={\n    env: NonTensorStack,\n    obs: f32[3],"
            "\n    mask: None})"
        )
        assert stacked.env == [["pong", "pong"], ["pong", "pong"]] and stacked[1].env == "pong"

    def test_empty_record(self) -> None:
        cls = _subclassed(type("Nothing", (), {}))
        assert repr(cls(batch_size=[1, 2])) == "Nothing(batch_size=[1,2], fields={})"
