# ruff: noqa: UP037, UP045  (annotations spelled as tensordict users write them)
"""Declaring tensorclasses from dataclasses and by subclassing (issue 18, items 7 and 10).

``from_dataclass`` converts a dataclass type or instance; ``__init_subclass__`` keywords
reach a user's base class; a user ``__init__`` (and ``__setattr__``) is kept and
``super().__init__`` reaches the generated constructor; errors from public calls are
tclass errors deriving from the builtins the peer raises.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Optional

import pytest
import torch

import tclass
from tclass import TensorClass, TensorDict, errors

from forms import FORMS, Declare  # noqa: E402


@pytest.fixture(params=FORMS)
def declare(request: pytest.FixtureRequest) -> Declare:
    return request.param  # type: ignore[no-any-return]


@dataclasses.dataclass
class Plain:
    a: int
    b: torch.Tensor
    c: str = "x"


@dataclasses.dataclass
class Obs:
    x: torch.Tensor
    tag: str = "t"


@dataclasses.dataclass
class WithNested:
    inner: Plain
    w: torch.Tensor


# --- from_dataclass ------------------------------------------------------------------------


class TestFromDataclass:
    def test_instance(self) -> None:
        rec = tclass.from_dataclass(Plain(1, torch.zeros(3)))
        assert type(rec).__name__ == "Plain_tc" and tclass.is_tensorclass(rec)
        assert rec.a == 1 and torch.equal(rec.b, torch.zeros(3)) and rec.c == "x"
        assert rec.batch_size == torch.Size([])

    def test_instance_with_batch_options(self) -> None:
        value = Plain(1, torch.zeros(3, 2))
        assert tclass.from_dataclass(value, batch_size=[3]).batch_size == torch.Size([3])
        assert tclass.from_dataclass(value, auto_batch_size=True).batch_size == torch.Size([3, 2])
        limited = tclass.from_dataclass(value, auto_batch_size=True, batch_dims=1)
        assert limited.batch_size == torch.Size([3])
        with pytest.raises(errors.BatchSizeError, match="auto_batch_size"):
            tclass.from_dataclass(value, auto_batch_size=True, batch_size=[3])

    def test_instance_copies_values(self) -> None:
        value = Plain(1, torch.zeros(2))
        rec = tclass.from_dataclass(value)
        rec.b[0] = 5.0
        assert value.b[0] == 0.0

    def test_instance_nested_dataclasses_become_dicts(self, declare: Declare) -> None:
        # As dataclasses.asdict gives them (the peer's): a dict that a field annotated with
        # a tensorclass casts to its class; kept a dict (a Python value) otherwise.
        value = WithNested(Plain(1, torch.zeros(3)), torch.ones(3))
        rec = tclass.from_dataclass(value)
        assert type(rec.inner) is dict and rec.inner["a"] == 1
        assert torch.equal(rec.inner["b"], torch.zeros(3)) and rec.inner["c"] == "x"
        inner = declare(
            type(
                "Inner",
                (),
                {
                    "__annotations__": {"a": int, "b": torch.Tensor, "c": str},
                    "__module__": __name__,
                },
            )
        )
        target = declare(
            type(
                "Outer",
                (),
                {"__annotations__": {"inner": inner, "w": torch.Tensor}, "__module__": __name__},
            )
        )
        typed = tclass.from_dataclass(value, dest_cls=target, auto_batch_size=True)
        assert type(typed.inner) is inner and typed.inner.a == 1
        assert typed.batch_size == torch.Size([3]) and typed[1].inner.c == "x"

    def test_instance_into_a_given_class(self, declare: Declare) -> None:
        template = type(
            "Target",
            (),
            {"__annotations__": {"a": int, "b": torch.Tensor, "c": str}, "__module__": __name__},
        )
        target = declare(template)
        rec = tclass.from_dataclass(Plain(2, torch.ones(2)), dest_cls=target, batch_size=[2])
        assert type(rec) is target and rec.a == 2 and rec.batch_size == torch.Size([2])

    def test_type(self) -> None:
        cls = tclass.from_dataclass(Plain)
        assert cls.__name__ == "Plain_tc" and tclass.is_tensorclass(cls)
        assert [f.name for f in dataclasses.fields(cls)] == ["a", "b", "c"]
        rec = cls(a=0, b=torch.zeros(2), batch_size=[2])
        assert rec.c == "x" and rec.a == 0

    def test_type_with_options(self) -> None:
        cls = tclass.from_dataclass(Plain, autocast=True, frozen=True)
        rec = cls(a=torch.tensor(3), b=torch.zeros(1))
        assert rec.a == 3 and type(rec.a) is int
        with pytest.raises(errors.FrozenInstanceError):
            rec.c = "y"

    def test_type_inplace_gives_a_tensorclass_of_that_name(self) -> None:
        @dataclasses.dataclass
        class Local:
            v: torch.Tensor

        cls = tclass.from_dataclass(Local, inplace=True)
        assert cls.__name__ == "Local" and tclass.is_tensorclass(cls)

    def test_a_tensorclass_type_is_returned_as_it_is(self) -> None:
        class Already(TensorClass):
            x: torch.Tensor

        assert tclass.from_dataclass(Already) is Already

    def test_exclusive_flags(self) -> None:
        with pytest.raises(errors.ClassDefinitionError, match="tensor_only"):
            tclass.from_dataclass(Plain(1, torch.zeros(1)), tensor_only=True, autocast=True)

    def test_not_a_dataclass(self) -> None:
        with pytest.raises(errors.EntryTypeError, match="dataclass") as info:
            tclass.from_dataclass(3)
        assert isinstance(info.value, TypeError)

    def test_tensordict_from_dataclass(self) -> None:
        td = TensorDict.from_dataclass(WithNested(Plain(1, torch.zeros(2)), torch.ones(2)))
        assert type(td) is TensorDict and isinstance(td.get("inner"), TensorDict)
        assert td["inner", "c"] == "x" and torch.equal(td["w"], torch.ones(2))
        assert TensorDict.from_dataclass(Obs(torch.zeros(2)), batch_size=[2]).batch_size == (2,)
        auto = TensorDict.from_dataclass(Obs(torch.zeros(2, 3)), auto_batch_size=True)
        assert auto.batch_size == (2, 3) and auto["tag"] == "t"
        with pytest.raises(errors.BatchSizeError, match="'a'"):  # a number is a 0-d tensor
            TensorDict.from_dataclass(Plain(1, torch.zeros(2)), batch_size=[2])

    def test_tensordict_from_dataclass_as_tensorclass(self) -> None:
        rec = TensorDict.from_dataclass(
            Plain(1, torch.zeros(3)), as_tensorclass=True, batch_size=[3]
        )
        assert type(rec).__name__ == "Plain_tc" and rec.batch_size == (3,)


# --- __init_subclass__ keywords --------------------------------------------------------------


class TestInitSubclass:
    def test_keywords_reach_a_user_base(self) -> None:
        class Base(TensorClass):
            x: torch.Tensor
            tag: ClassVar[str | None] = None

            def __init_subclass__(cls, tag: str | None = None, **kwargs: Any) -> None:
                super().__init_subclass__(**kwargs)
                cls.tag = tag

        class Sub(Base, tag="hello"):
            y: Optional[torch.Tensor] = None

        class Both(Base, tag="f", kw_only=True):
            z: torch.Tensor

        assert Sub.tag == "hello" and Sub(x=torch.zeros(1)).y is None
        assert Both.tag == "f" and Both(x=torch.zeros(1), z=torch.ones(1)).z.shape == (1,)

    def test_decorator_form(self) -> None:
        @tclass.tensorclass
        class Base:
            x: torch.Tensor

            def __init_subclass__(cls, tag: str | None = None, **kwargs: Any) -> None:
                super().__init_subclass__(**kwargs)
                cls.tag = tag  # type: ignore[attr-defined]

        @tclass.tensorclass
        class Sub(Base, tag="hello"):  # type: ignore[call-arg]
            y: Optional[torch.Tensor] = None

        assert Sub.tag == "hello"  # type: ignore[attr-defined]

    def test_an_unknown_keyword(self) -> None:
        with pytest.raises(TypeError, match="colour"):

            class Rec(TensorClass, colour="red"):  # type: ignore[call-arg]
                x: torch.Tensor


# --- user __init__ and __setattr__ -------------------------------------------------------------


class TestUserInit:
    def test_subclass_init_calls_super(self) -> None:
        class Scaled(TensorClass):
            x: torch.Tensor

        class Doubled(Scaled):
            def __init__(self, x: torch.Tensor, scale: float = 2.0, **kwargs: Any) -> None:
                super().__init__(x=x * scale, **kwargs)

        rec = Doubled(torch.ones(2), batch_size=[2])
        assert torch.equal(rec.x, torch.full((2,), 2.0))
        assert type(rec[0]) is Doubled and type(rec.clone()) is Doubled
        assert torch.equal(torch.stack([rec, rec]).x, torch.full((2, 2), 2.0))

    def test_own_init_calls_super(self, declare: Declare) -> None:
        class Pair(TensorClass):
            x: torch.Tensor
            y: torch.Tensor

            def __init__(self, x: torch.Tensor, **kwargs: Any) -> None:
                super().__init__(x=x, y=x + 1, **kwargs)

        rec = Pair(torch.ones(2), batch_size=[2])
        assert torch.equal(rec.y, torch.full((2,), 2.0)) and torch.equal(
            rec[0].y, torch.tensor(2.0)
        )

    def test_own_init_decorator_form(self) -> None:
        @tclass.tensorclass
        class Pair:
            x: torch.Tensor
            y: torch.Tensor

            def __init__(self, x: torch.Tensor, **kwargs: Any) -> None:
                super().__init__(x=x, y=x + 1, **kwargs)

        rec = Pair(torch.ones(2), batch_size=[2])
        assert torch.equal(rec.y, torch.full((2,), 2.0)) and type(rec[1]) is Pair

    def test_init_that_assigns_fields(self) -> None:
        class Assigned(TensorClass):
            x: torch.Tensor

            def __init__(self, value: torch.Tensor) -> None:
                self.x = value

        rec = Assigned(torch.ones(2))
        assert torch.equal(rec.x, torch.ones(2)) and rec.batch_size == torch.Size([])

    def test_subclass_without_init_inherits_the_user_init(self) -> None:
        class Base(TensorClass):
            x: torch.Tensor

            def __init__(self, x: torch.Tensor, **kwargs: Any) -> None:
                super().__init__(x=x + 1, **kwargs)

        class Child(Base):
            pass

        assert torch.equal(Child(torch.zeros(1)).x, torch.ones(1))

    def test_from_dict_takes_fields_past_the_user_init(self) -> None:
        calls: list[str] = []

        class Scaled(TensorClass):
            a: torch.Tensor
            b: Optional[torch.Tensor] = None

            def __post_init__(self) -> None:
                calls.append("post_init")

            def __init__(self, a: torch.Tensor, scale: float = 3.0, **kwargs: Any) -> None:
                calls.append("init")
                super().__init__(a=a, b=a * scale, **kwargs)

        rec = Scaled.from_dict({"a": torch.ones(2), "b": torch.zeros(2)}, batch_size=[2])
        assert calls == ["post_init"]  # the mapping holds fields, not __init__'s arguments
        assert torch.equal(rec.b, torch.zeros(2)) and rec.batch_size == torch.Size([2])
        assert Scaled.from_dict({"a": torch.ones(2)}, batch_size=[2]).b is None

        @dataclasses.dataclass
        class Plain:
            a: torch.Tensor
            b: torch.Tensor

        calls.clear()
        converted = Scaled.from_dataclass(Plain(torch.ones(2), torch.zeros(2)), batch_size=[2])
        assert calls == ["post_init"] and torch.equal(converted.b, torch.zeros(2))
        assert torch.equal(Scaled(torch.ones(2), batch_size=[2]).b, torch.full((2,), 3.0))

    def test_user_setattr_is_kept(self) -> None:
        seen: list[str] = []

        class Watched(TensorClass):
            x: torch.Tensor

            def __setattr__(self, name: str, value: Any) -> None:
                seen.append(name)
                super().__setattr__(name, value)

        rec = Watched(x=torch.zeros(1))
        rec.x = torch.ones(1)
        assert "x" in seen and torch.equal(rec.x, torch.ones(1))

    def test_post_init_still_runs_once(self) -> None:
        calls: list[str] = []

        class Checked(TensorClass):
            x: torch.Tensor

            def __init__(self, x: torch.Tensor) -> None:
                super().__init__(x=x)

            def __post_init__(self) -> None:
                calls.append("post")

        Checked(torch.zeros(1)).clone()
        assert calls == ["post"]


# --- consistency (item 10) -------------------------------------------------------------------


class Rec(TensorClass):
    x: torch.Tensor
    s: str = "v"


class TestConsistency:
    def test_nested_set_of_an_unknown_field_is_refused(self) -> None:
        rec = Rec(x=torch.zeros(2), batch_size=[2])
        with pytest.raises(errors.UnknownFieldError, match="'nest'") as info:
            rec.set(("nest", "x"), torch.zeros(2))
        assert isinstance(info.value, AttributeError)
        with pytest.raises(errors.UnknownFieldError, match="'nest'"):
            rec.update({"nest": {"x": torch.zeros(2)}})
        assert "nest" not in rec.keys()

    def test_nested_set_below_a_field(self) -> None:
        class Holder(TensorClass):
            td: TensorDict

        holder = Holder(td=TensorDict({}, [2]), batch_size=[2])
        holder.set(("td", "x"), torch.zeros(2))
        assert torch.equal(holder.td["x"], torch.zeros(2))

    def test_in_takes_keys(self) -> None:
        rec = Rec(x=torch.zeros(2), batch_size=[2])
        assert ("x" in rec) is True
        with pytest.raises(RuntimeError, match="NestedKey"):  # as the peer
            _ = 0 in rec

    @pytest.mark.parametrize(
        "call, builtins",
        [
            (lambda: Rec(torch.zeros(1), "a", "b"), (TypeError,)),
            (lambda: Rec(x=torch.zeros(1), q=2), (TypeError, AttributeError)),
            (lambda: Rec(), (TypeError,)),
            (lambda: Rec(torch.zeros(2), batch_size=[2])[5], (IndexError,)),
            (lambda: Rec(torch.zeros(2), batch_size=[2])[-3], (IndexError,)),
            (lambda: TensorDict({"a": torch.zeros(2)}, [2])[5], (IndexError,)),
            (lambda: TensorDict({}, [2])[5], (IndexError,)),
            (lambda: TensorDict({"a": torch.zeros(2, 3)}, [2, 3])[0, 7], (IndexError,)),
            (lambda: TensorDict({"a": torch.zeros(2)}, [2])[torch.tensor([4])], (IndexError,)),
            (lambda: TensorDict({"a": torch.zeros(2)}, [2], bogus=1), (TypeError,)),
        ],
        ids=[
            "too-many-args", "unknown-keyword", "missing-field", "index", "negative-index",
            "td-index", "td-index-empty", "td-second-dim", "td-tensor-index", "td-keyword",
        ],
    )  # fmt: skip
    def test_public_errors_are_tclass_errors(
        self, call: Any, builtins: tuple[type[BaseException], ...]
    ) -> None:
        with pytest.raises(errors.TclassError) as info:
            call()
        for builtin in builtins:
            assert isinstance(info.value, builtin), (type(info.value).__mro__, builtin)

    def test_constructor_errors_name_the_class_and_field(self) -> None:
        with pytest.raises(errors.TclassError, match=r"Rec.*'x'"):
            Rec()
        with pytest.raises(errors.TclassError, match=r"Rec.*'q'"):
            Rec(x=torch.zeros(1), q=2)  # type: ignore[call-arg]

    def test_signature_is_still_the_field_signature(self) -> None:
        import inspect

        assert (
            str(inspect.signature(Rec))
            == "(x: torch.Tensor, s: str = 'v', *, batch_size=None, device=None, names=None)"
            " -> None"
        )


# --- stacking a record class with its subclass ----------------------------------------------


class _Base(TensorClass):
    a: torch.Tensor
    tag: str = "x"


class _Derived(_Base):
    pass


class _Unrelated(TensorClass):
    a: torch.Tensor


def _pair(first: type, second: type) -> list[Any]:
    return [first(a=torch.zeros(3), batch_size=[3]), second(a=torch.ones(3), batch_size=[3])]


@pytest.mark.parametrize(("first", "second"), [(_Base, _Derived), (_Derived, _Base)])
@pytest.mark.parametrize("join", [torch.stack, torch.cat, tclass.stack, tclass.cat])
def test_a_record_joins_with_its_subclass_into_the_first_class(
    first: type, second: type, join: Any
) -> None:
    """As the peer: records whose classes subclass one another stack and concatenate,
    the result of the first member's class."""
    out = join(_pair(first, second))
    assert type(out) is first
    assert out.a.reshape(-1).tolist() == [0.0] * 3 + [1.0] * 3
    assert out.batch_size == (torch.Size([2, 3]) if "stack" in join.__name__ else (6,))


@pytest.mark.parametrize("join", [tclass.stack, tclass.cat])
def test_unrelated_record_classes_do_not_join(join: Any) -> None:
    with pytest.raises(errors.StackError, match="_Unrelated but member 0 is a _Base"):
        join(_pair(_Base, _Unrelated))


class TestSetattrHook:
    """A class defining ``__setattr__`` has it called for each field by ``__init__``, as
    the peer's dataclass ``__init__`` does; rebuilt records (index, clone) skip it."""

    @staticmethod
    def _hooked() -> tuple[type, list[str]]:
        seen: list[str] = []

        class Shifted(TensorClass, nocast=True):
            a: int
            b: int

            def __setattr__(self, key: str, value: Any) -> None:
                seen.append(key)
                shift = 1 if key == "b" else -1
                super().__setattr__(key, value + shift)

        return Shifted, seen

    def test_init_sets_each_field_through_it(self) -> None:
        shifted, seen = self._hooked()
        s = shifted(a=torch.zeros(3), b=torch.zeros(3), batch_size=[3])
        assert seen == ["a", "b"]
        assert s.a.tolist() == [-1.0] * 3 and s.b.tolist() == [1.0] * 3
        s.a = torch.ones(3)
        assert seen == ["a", "b", "a"] and s.a.tolist() == [0.0] * 3

    def test_rebuilt_records_do_not_call_it(self) -> None:
        shifted, seen = self._hooked()
        s = shifted(a=torch.zeros(3), b=torch.zeros(3), batch_size=[3])
        seen.clear()
        row, copy = s[1], s.clone()
        assert seen == [] and row.a.item() == -1.0 and copy.b.tolist() == [1.0] * 3

    def test_a_frozen_class_is_filled_directly(self) -> None:
        class Guarded(TensorClass, frozen=True):
            a: torch.Tensor

            def __setattr__(self, key: str, value: Any) -> None:
                raise AssertionError("not called by __init__")

        g = Guarded(a=torch.zeros(2), batch_size=[2])
        assert g.a.tolist() == [0.0, 0.0] and g[0].a.item() == 0.0

    def test_a_user_init_with_the_hook(self) -> None:
        seen: list[str] = []

        class Own(TensorClass):
            a: torch.Tensor

            def __init__(self, value: float) -> None:
                super().__init__(a=torch.full((2,), value), batch_size=[2])

            def __setattr__(self, key: str, value: Any) -> None:
                seen.append(key)
                super().__setattr__(key, value)

        assert Own(2.0).a.tolist() == [2.0, 2.0] and seen == ["a"]
