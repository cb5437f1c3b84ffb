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
import inspect
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import TensorClass, TensorDict, errors

sys.path.insert(0, str(Path(__file__).resolve().parent))

from strategies import SETTINGS, batch_shapes, feature_shapes, make_values  # noqa: E402

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


# --- module-level classes (explicit class statements, both forms) ------------------------


@tclass.tensorclass
class Transition:
    obs: torch.Tensor
    env: str
    mask: torch.Tensor | None = None


class Frame(TensorClass, frozen=True):
    pixels: torch.Tensor
    step: int = 0


@tclass.tensorclass(frozen=True, kw_only=True)
class Sample:
    x: torch.Tensor
    tag: str = "s"


class Keyed(TensorClass, kw_only=True):
    x: torch.Tensor
    tag: str = "k"


@tclass.tensorclass
class Inner:
    x: torch.Tensor


@tclass.tensorclass
class Outer:
    inner: Inner
    td: TensorDict | None = None


class Color:
    """A plain class used as a field annotation."""


def _transition(n: int = 4) -> Any:
    return Transition(torch.zeros(n, 3), "pong", batch_size=[n])


def _tagged_template() -> type:
    class Rec:
        a: torch.Tensor
        label: str = "x"
        tags: list = dataclasses.field(default_factory=list)

    return Rec


def _raises(
    error: type[BaseException], *also: type[BaseException], match: str | None = None
) -> Any:
    """``pytest.raises(error)`` that also checks the builtins it must derive from."""
    for base in also:
        assert issubclass(error, base), f"{error.__name__} is not a {base.__name__}"
    return pytest.raises(error, match=match)


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
        assert (info.frozen, info.kw_only) == expected

    def test_instances_have_no_dict(self) -> None:
        assert not hasattr(_transition(), "__dict__")


class TestRedecoration:
    def test_decorating_twice_returns_the_class(self, declare: Declare) -> None:
        cls = declare(_tagged_template())
        assert tclass.tensorclass(cls) is cls
        assert tclass.tensorclass(frozen=False, kw_only=False)(cls) is cls
        assert [f.name for f in dataclasses.fields(cls)] == ["a", "label", "tags"]
        assert cls(torch.zeros(2), batch_size=[2]).label == "x"

    def test_same_options_again_is_a_no_op(self) -> None:
        assert tclass.tensorclass(frozen=True, kw_only=True)(Sample) is Sample
        assert Sample.__tclass_info__.frozen and Sample.__tclass_info__.kw_only

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
        with _raises(
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
        assert info.frozen == parent.frozen and not info.kw_only
        # kw_only applies to the fields of the class that sets it, as in dataclasses.
        params = inspect.signature(Child).parameters
        assert params["more"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        if parent.kw_only:
            assert params["x"].kind is inspect.Parameter.KEYWORD_ONLY

    def test_frozen_is_inherited_by_instances(self) -> None:
        class Child(Frame):
            pass

        record = Child(torch.zeros(2), batch_size=[2])
        assert hash(record) == object.__hash__(record)
        with pytest.raises(FrozenInstanceError):
            record.step = 3

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

        with _raises(ClassDefinitionError, TypeError, match="WithSlots defines __slots__"):
            declare(WithSlots)

    @pytest.mark.parametrize(
        "name", ["batch_size", "device", "to", "shape", "apply", "keys", "names", "reshape"]
    )
    def test_reserved_field_name_raises(self, declare: Declare, name: str) -> None:
        template = type(
            "Reserved", (), {"__annotations__": {"ok": torch.Tensor, name: torch.Tensor}}
        )
        with _raises(
            ReservedNameError,
            ClassDefinitionError,
            AttributeError,
            TypeError,
            match=f"Reserved.{name}: '{name}'",
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

    def test_user_hash_on_frozen_class_survives(self) -> None:
        @tclass.tensorclass(frozen=True)
        class Hashed:
            a: torch.Tensor

            def __hash__(self) -> int:
                return 42

        assert hash(Hashed(torch.zeros(1), batch_size=[1])) == 42


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
        with _raises(errors.ArgumentError, TypeError, match="missing the required field 'a'"):
            declare(_tagged_template())(batch_size=[2])

    def test_unknown_keyword_names_it(self, declare: Declare) -> None:
        with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
            declare(_tagged_template())(torch.zeros(2), colour="red", batch_size=[2])

    def test_duplicated_argument_names_it(self, declare: Declare) -> None:
        with pytest.raises(TypeError, match="multiple values for argument 'a'"):
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
        assert _transition().device is None

    def test_names_none_is_accepted(self) -> None:
        record = Transition(torch.zeros(2, 3), "e", batch_size=[2], names=None)
        assert record.names == [None]

    def test_names_name_the_batch_dims(self) -> None:
        record = Transition(torch.zeros(2, 3), "e", batch_size=[2], names=["a"])
        assert record.names == ["a"] and record[:1].names == ["a"]

    def test_defaults_are_used(self) -> None:
        record = Frame(torch.zeros(2), batch_size=[2])
        assert record.step == 0
        assert _transition().mask is None

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
        assert str(sig) == "(a, *, b=1, c, batch_size=None, device=None, names=None)"
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
        assert str(sig) == "(a, label='x', mask=None, *, batch_size=None, device=None, names=None)"
        kinds = [p.kind for p in sig.parameters.values()]
        assert (
            kinds
            == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 3 + [inspect.Parameter.KEYWORD_ONLY] * 3
        )

    def test_class_without_fields(self, declare: Declare) -> None:
        cls = declare(type("Empty", (), {}))
        record = cls(batch_size=[3])
        assert record.batch_size == torch.Size([3]) and dataclasses.fields(cls) == ()
        assert str(inspect.signature(cls)) == "(*, batch_size=None, device=None, names=None)"

    def test_generated_init_has_the_class_qualname(self) -> None:
        assert Frame.__init__.__qualname__ == "Frame.__init__"
        assert Frame.__init__.__module__ == __name__


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
        with _raises(
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
        with _raises(
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

VALUE_BAD = [
    ("s", 1, "int 1"),
    ("s", torch.zeros(2), "a Tensor of shape [2]"),
    ("i", "1", "str '1'"),
    ("i", 1.5, "float 1.5"),
    ("f", "1.0", "str '1.0'"),
    ("b", 1, "int 1"),
    ("l", (1, 2), "tuple (1, 2)"),
    ("d", [1], "list [1]"),
    ("lit", "c", "str 'c'"),
    ("lit", 1, "int 1"),
    ("c", "red", "str 'red'"),
    ("u", 1, "int 1"),
    ("u", [1, 2], "list [1, 2]"),  # no array cast when str could claim the value
    ("o", "x", "str 'x'"),
]


class TestValueFields:
    @pytest.mark.parametrize("name, value", VALUE_OK, ids=[f"{n}-{v!r}" for n, v in VALUE_OK])
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
        with _raises(FieldTypeError, TypeError, match=r"annotated str.*; got a Tensor"):
            Values(s=value, batch_size=[2])  # a str field still refuses a tensor

    @pytest.mark.parametrize(
        "name, value, shown", VALUE_BAD, ids=[f"{n}-{s}" for n, _, s in VALUE_BAD]
    )
    def test_wrong_values_are_refused_naming_class_field_and_annotation(
        self, name: str, value: Any, shown: str
    ) -> None:
        with _raises(
            FieldTypeError,
            TypeError,
            match=rf"^Values\.{name} is annotated .+; got {re.escape(shown)}$",
        ):
            Values(**{name: value}, batch_size=[2])

    def test_message_shows_the_annotation(self) -> None:
        with pytest.raises(
            FieldTypeError, match=re.escape("Values.i is annotated int | None; got str '1'")
        ):
            Values(i="1", batch_size=[])
        with pytest.raises(
            FieldTypeError, match=re.escape("Values.lit is annotated Literal['a', 'b'] | None")
        ):
            Values(lit="z", batch_size=[])

    @pytest.mark.parametrize(
        "name, text", [("td", "TensorDict | None"), ("n", "Inner | None"), ("c", "Color | None")]
    )
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
        cls = _decorated(type("Anything", (), {"__annotations__": {"v": annotation}}))
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
        cls = _decorated(type("Anything", (), {"__annotations__": {"v": annotation}, "v": None}))
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

    def test_literal_checks_type_and_value(self) -> None:
        @tclass.tensorclass
        class Mode:
            m: Literal[1, "one", True]

        for value in (1, "one", True):
            assert Mode(value, batch_size=[]).m is value
        for bad in (1.0, "two", 2):
            with pytest.raises(FieldTypeError, match="Mode.m is annotated Literal"):
                Mode(bad, batch_size=[])


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


def _mismatch(key: str, shape: list[int], batch: list[int]) -> str:
    dims = lambda s: "[" + ", ".join(map(str, s)) + "]"  # noqa: E731
    return re.escape(
        f"for key {key}: its shape {dims(shape)} does not start with the batch size {dims(batch)}"
    )


class TestBatchChecks:
    def test_tensor_mismatch_at_construction(self) -> None:
        with _raises(
            BatchMismatchError, ValueError, RuntimeError, match=_mismatch("'obs'", [5, 3], [4])
        ) as info:
            Transition(torch.zeros(5, 3), "e", batch_size=[4])
        assert (info.value.key, info.value.shape, info.value.batch_size) == ("obs", (5, 3), (4,))

    def test_fewer_dims_than_the_batch(self) -> None:
        with pytest.raises(BatchMismatchError, match=_mismatch("'obs'", [4], [4, 2])):
            Transition(torch.zeros(4), "e", batch_size=[4, 2])

    def test_optional_tensor_mismatch(self) -> None:
        with pytest.raises(BatchMismatchError, match=_mismatch("'mask'", [3], [4])):
            Transition(torch.zeros(4, 3), "e", torch.zeros(3), batch_size=[4])

    def test_array_like_mismatch(self) -> None:
        with pytest.raises(BatchMismatchError, match=_mismatch("'obs'", [2], [4])):
            Transition([1.0, 2.0], "e", batch_size=[4])

    def test_nested_instance_mismatch(self) -> None:
        with pytest.raises(BatchMismatchError, match=_mismatch("'inner'", [5], [4])):
            Outer(Inner(torch.zeros(5), batch_size=[5]), batch_size=[4])

    def test_nested_dict_mismatch_names_the_nested_key(self) -> None:
        with pytest.raises(BatchMismatchError, match=_mismatch("('inner', 'x')", [5], [4])) as info:
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
        record = _transition()
        before = getattr(record, name)
        with pytest.raises(BatchMismatchError, match=_mismatch(key, shape, [4])):
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
        with pytest.raises(BatchMismatchError, match=_mismatch(key, shape, [4])):
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


# --- attribute assignment ----------------------------------------------------------------


ASSIGN_BAD = [
    ("obs", "x"),
    ("obs", {"a": 1}),
    ("env", 3),
    ("env", torch.zeros(4)),
    ("mask", "x"),
]


class TestAssignment:
    @pytest.mark.parametrize("name, value", ASSIGN_BAD, ids=[f"{n}-{v!r}" for n, v in ASSIGN_BAD])
    def test_assignment_is_checked_like_construction(self, name: str, value: Any) -> None:
        kwargs: dict[str, Any] = {"obs": torch.zeros(4, 3), "env": "e", name: value}
        with pytest.raises(FieldTypeError) as at_init:
            Transition(**kwargs, batch_size=[4])
        record = _transition()
        with pytest.raises(FieldTypeError) as at_set:
            setattr(record, name, value)
        assert str(at_set.value) == str(at_init.value)
        assert record.env == "pong" and record.obs.shape == (4, 3)

    def test_assignment_casts_like_construction(self) -> None:
        record = _transition()
        record.mask = [True, False, True, False]
        assert torch.equal(record.mask, torch.tensor([True, False, True, False]))
        record.env = "breakout"
        assert record.env == "breakout"
        outer = Outer({"x": torch.zeros(4)}, batch_size=[4])
        outer.inner = {"x": torch.ones(4, 2)}
        outer.td = {"y": torch.zeros(4)}
        assert type(outer.inner) is Inner and type(outer.td) is TensorDict

    def test_set_method_is_checked_too(self) -> None:
        record = _transition()
        with pytest.raises(FieldTypeError, match="Transition.env is annotated str"):
            record.set("env", 1)
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
        record = _transition()
        del record.obs
        assert record.obs is None and "obs" not in record.keys()

    def test_locked_record_refuses_assignment(self, declare: Declare) -> None:
        record = declare(_tagged_template())(torch.zeros(2), batch_size=[2])
        assert record.lock_() is record and record.is_locked
        msg = r"cannot assign to field 'label': this Rec is locked"
        with _raises(LockedError, RuntimeError, match=msg):
            record.label = "y"
        with pytest.raises(LockedError, match="field 'a'"):
            record.a = torch.ones(2)
        with pytest.raises(LockedError):
            del record.label
        assert record.label == "x"

    def test_locked_record_allows_in_place_writes(self) -> None:
        record = _transition().lock_()
        record.obs[:] = 1
        record.obs.add_(1)
        record[0:2] = Transition(torch.full((2, 3), 5.0), "pong", batch_size=[2])
        assert torch.equal(record.obs[0], torch.full((3,), 5.0))
        assert torch.equal(record.obs[3], torch.full((3,), 2.0))

    def test_unlock_allows_assignment_again(self) -> None:
        record = _transition().lock_()
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
        with _raises(
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
        with pytest.raises(FieldTypeError, match="Frame.step is annotated int; got str"):
            record.replace(step="one")
        with pytest.raises(BatchMismatchError, match=_mismatch("'pixels'", [3], [2])):
            record.replace(pixels=torch.zeros(3))
        with pytest.raises(
            UnknownFieldError, match="Frame has no field 'stop'.*did you mean 'step'"
        ):
            record.replace(stop=1)

    def test_replace_on_non_frozen_record(self) -> None:
        record = _transition()
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
            repr(_transition())
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
            [_transition(2), Transition(torch.zeros(2, 3), "breakout", batch_size=[2])]
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

    def test_same_values_stack_to_one_value(self) -> None:
        stacked = torch.stack([_transition(2), _transition(2)])
        assert (
            repr(stacked)
            == "Transition(batch_size=[2,2], fields={env: str, obs: f32[3], mask: None})"
        )
        assert stacked.env == "pong"

    def test_empty_record(self) -> None:
        cls = _subclassed(type("Nothing", (), {}))
        assert repr(cls(batch_size=[1, 2])) == "Nothing(batch_size=[1,2], fields={})"
