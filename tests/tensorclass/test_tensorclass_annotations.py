# ruff: noqa: UP037, UP045  (annotations spelled as tensordict users write them)
"""Field annotations and defaults as tensordict users write them (issue 18, items 5, 8, 9).

Forward references (the class itself, classes defined later, mutually recursive classes,
``from __future__ import annotations``) resolve on first use; ``None`` means "not set yet"
for any field, and ``data[i] = other`` then creates the storage; a tensor default is kept
(shared, as in the peer) with a warning naming ``default_factory``; annotations from the
ecosystem (jaxtyping, ``Annotated``, ``NewType``, ``TypeVar``, ``Literal``) are understood.
"""

from __future__ import annotations

import sys
import types
from typing import Annotated, Any, Literal, NewType, Optional, TypeVar

import pytest
import torch

import tclass
from tclass import TensorClass, TensorDict, errors, tensorclass

from forms import FORMS, Declare  # noqa: E402


@pytest.fixture(params=FORMS)
def declare(request: pytest.FixtureRequest) -> Declare:
    return request.param  # type: ignore[no-any-return]


def _compile(source: str, name: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """Runs ``source`` as a module named ``name`` (so annotations see its globals)."""
    module = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, module)
    exec(compile(source, f"<{name}>", "exec"), vars(module))  # noqa: S102
    return module


# --- forward references --------------------------------------------------------------------


FORWARD_SOURCE = """
from typing import Optional
import torch
from tclass import TensorClass, tensorclass

class MyClass(TensorClass):
    x: torch.Tensor
    y: "MyClass" = None

class OptClass(TensorClass):
    x: torch.Tensor
    y: Optional["OptClass"] = None

@tensorclass
class DecClass:
    x: torch.Tensor
    y: Optional["DecClass"] = None

class Ping(TensorClass):
    x: torch.Tensor
    pong: Optional["Pong"] = None

class Pong(TensorClass):
    y: torch.Tensor
    ping: Optional[Ping] = None

class Holder(TensorClass):
    later: "DefinedLater"
    maybe: "DefinedLater | None" = None

class DefinedLater(TensorClass):
    z: torch.Tensor
"""

FUTURE_SOURCE = """
from __future__ import annotations
from typing import Optional
import torch
from tclass import tensorclass

@tensorclass
class MyClass:
    x: torch.Tensor
    y: Optional[MyClass] = None
"""


class TestForwardReferences:
    @pytest.fixture
    def module(self, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
        return _compile(FORWARD_SOURCE, "tclass_forward_refs", monkeypatch)

    @pytest.mark.parametrize("name", ["MyClass", "OptClass", "DecClass"])
    def test_self_reference(self, module: types.ModuleType, name: str) -> None:
        cls = getattr(module, name)
        leaf = cls(torch.zeros(2), batch_size=[2])
        assert leaf.y is None
        root = cls(torch.ones(2), y=leaf, batch_size=[2])
        assert root.y is leaf and type(root[0].y) is cls
        from_dict = cls(torch.ones(2), y={"x": torch.zeros(2)}, batch_size=[2])
        assert type(from_dict.y) is cls and torch.equal(from_dict.y.x, torch.zeros(2))

    def test_mutually_recursive(self, module: types.ModuleType) -> None:
        ping = module.Ping(torch.zeros(2), pong={"y": torch.ones(2)}, batch_size=[2])
        assert type(ping.pong) is module.Pong
        pong = module.Pong(torch.zeros(2), ping={"x": torch.ones(2)}, batch_size=[2])
        assert type(pong.ping) is module.Ping

    def test_class_defined_later_in_the_module(self, module: types.ModuleType) -> None:
        rec = module.Holder({"z": torch.zeros(3)}, batch_size=[3])
        assert type(rec.later) is module.DefinedLater and rec.maybe is None
        with pytest.raises(errors.FieldTypeError, match="Holder.later is annotated DefinedLater"):
            module.Holder("text", batch_size=[3])

    def test_future_annotations(self, monkeypatch: pytest.MonkeyPatch) -> None:
        module = _compile(FUTURE_SOURCE, "tclass_future_refs", monkeypatch)
        rec = module.MyClass(torch.ones(2), y={"x": torch.zeros(2)}, batch_size=[2])
        assert type(rec.y) is module.MyClass and rec.y.y is None

    def test_local_classes(self) -> None:
        class Leaf(TensorClass):
            v: torch.Tensor

        class Tree(TensorClass):
            leaf: Optional["Leaf"] = None
            parent: Optional["Tree"] = None

        tree = Tree(leaf={"v": torch.zeros(1)}, parent={"leaf": None})
        assert type(tree.leaf) is Leaf and type(tree.parent) is Tree

    def test_local_plain_class_named_in_a_string(self) -> None:
        class Colour:
            pass

        class Rec(TensorClass):
            colour: "Colour"

        value = Colour()
        assert Rec(colour=value).colour is value
        with pytest.raises(errors.FieldTypeError, match="Rec.colour is annotated Colour"):
            Rec(colour=torch.zeros(2))  # the annotation is found: a tensor is refused

    def test_a_local_class_shadows_the_modules_of_the_same_name(self) -> None:
        # As Python scopes names: the function's ``Sub`` and ``Data`` before the module's
        # (both forms; the module-level classes are defined below, and used first).
        outer = globals()["Sub"]
        held = WithSub(x=torch.zeros(2), child=outer(z=torch.zeros(2), batch_size=[2]))
        assert type(held.child) is outer

        class Sub(TensorClass):
            y: torch.Tensor

        @tclass.tensorclass
        class Data:
            z: torch.Tensor

        class Holder(TensorClass):
            child: "Sub | None" = None
            data: Optional["Data"] = None

        mine = Holder(child=Sub(y=torch.ones(2), batch_size=[2]), data=Data(z=torch.ones(1)))
        assert type(mine.child) is Sub and type(mine.data) is Data
        with pytest.raises(errors.FieldTypeError, match="Holder.child is annotated"):
            Holder(child=held.child)  # another class is still refused

    def test_a_name_never_found_takes_any_value(self) -> None:
        # As in the peer: a name imported only under TYPE_CHECKING, for instance.
        class Dangling(TensorClass):
            x: "NoSuchClassAnywhere"  # type: ignore[name-defined]  # noqa: F821

        assert Dangling(x="text").x == "text"
        assert torch.equal(Dangling(x=torch.zeros(1)).x, torch.zeros(1))
        assert Dangling(x={"k": 1}).x == {"k": 1}

    def test_type_checking_import(self, monkeypatch: pytest.MonkeyPatch) -> None:
        source = (
            "from typing import TYPE_CHECKING, Optional\n"
            "import torch\n"
            "from tclass import TensorClass\n"
            "if TYPE_CHECKING:\n"
            "    from somewhere import Hidden\n"
            "class Rec(TensorClass):\n"
            "    x: torch.Tensor\n"
            "    h: Optional['Hidden'] = None\n"
        )
        module = _compile(source, "tclass_type_checking_refs", monkeypatch)
        rec = module.Rec(x=torch.zeros(2), h=object(), batch_size=[2])
        assert torch.equal(rec.x, torch.zeros(2)) and rec.h is not None


# --- None means "not set yet" ------------------------------------------------------------


class Data(TensorClass):
    X: torch.Tensor
    y: torch.Tensor


class Tagged(TensorClass):
    x: torch.Tensor
    s: str
    t: TensorDict


class Sub(TensorClass):
    z: torch.Tensor


class WithSub(TensorClass):
    x: torch.Tensor
    child: Sub


class TestNoneIsNotSetYet:
    def test_any_field_takes_none(self, declare: Declare) -> None:
        template = type(
            "Rec",
            (),
            {"__annotations__": {"x": torch.Tensor, "s": str, "n": int}, "__module__": __name__},
        )
        rec = declare(template)(x=None, s=None, n=None, batch_size=[3])
        assert (rec.x, rec.s, rec.n) == (None, None, None)
        assert repr(rec) == "Rec(batch_size=[3], fields={x: None, s: None, n: None})"

    def test_assigning_none_removes_the_value(self) -> None:
        rec = Data(X=torch.zeros(3), y=torch.zeros(3), batch_size=[3])
        rec.X = None
        assert rec.X is None and "X" not in list(rec.keys())
        rec.X = torch.ones(3)
        assert torch.equal(rec.X, torch.ones(3))

    def test_none_default(self) -> None:
        class Rec(TensorClass):
            x: torch.Tensor = None  # type: ignore[assignment]

        assert Rec(batch_size=[2]).x is None

    def test_preallocation_by_index(self) -> None:
        data = Data(X=None, y=None, batch_size=[4])
        data[0] = Data(X=torch.ones(3), y=torch.tensor(1), batch_size=[])
        assert torch.equal(data.X, torch.tensor([[1.0] * 3] + [[0.0] * 3] * 3))
        assert torch.equal(data.y, torch.tensor([1, 0, 0, 0]))
        data[2:] = Data(X=torch.full((2, 3), 2.0), y=torch.tensor([5, 6]), batch_size=[2])
        assert data.y.tolist() == [1, 0, 5, 6]

    def test_preallocation_of_values_and_collections(self) -> None:
        rec = Tagged(x=None, s=None, t=None, batch_size=[3])
        rec[1] = Tagged(x=torch.ones(2), s="p", t=TensorDict(q=torch.ones(())), batch_size=[])
        assert rec.x.shape == (3, 2) and rec.x[1].tolist() == [1.0, 1.0]
        assert rec.s == "p"  # the written value fills the other rows too, as the peer
        assert isinstance(rec.t, TensorDict) and rec.t["q"].tolist() == [0.0, 1.0, 0.0]

    def test_preallocation_of_a_nested_record(self) -> None:
        rec = WithSub(x=None, child=None, batch_size=[3])
        rec[1:] = WithSub(
            x=torch.ones(2, 2), child=Sub(z=torch.ones(2), batch_size=[2]), batch_size=[2]
        )
        assert type(rec.child) is Sub and rec.child.z.tolist() == [0.0, 1.0, 1.0]

    def test_preallocation_decorator_form(self) -> None:
        @tclass.tensorclass
        class DData:
            X: torch.Tensor
            y: torch.Tensor

        data = DData(X=None, y=None, batch_size=[2])
        data[1] = DData(X=torch.ones(2), y=torch.ones(()), batch_size=[])
        assert data.X.tolist() == [[0.0, 0.0], [1.0, 1.0]]

    def test_a_value_that_contradicts_the_annotation_is_still_refused(self) -> None:
        with pytest.raises(errors.FieldTypeError, match="Tagged.s is annotated str"):
            Tagged(x=None, s=torch.zeros(3), t=None, batch_size=[3])


# --- tensor defaults ---------------------------------------------------------------------


class TestTensorDefaults:
    def test_accepted_with_a_warning_naming_default_factory(self, declare: Declare) -> None:
        template = type(
            "Rec",
            (),
            {"__annotations__": {"x": torch.Tensor}, "x": torch.zeros(3), "__module__": __name__},
        )
        with pytest.warns(errors.SharedDefaultWarning, match=r"Rec\.x.*default_factory") as record:
            cls = declare(template)
        assert issubclass(record[0].category, FutureWarning)
        a, b = cls(), cls()
        assert torch.equal(a.x, torch.zeros(3)) and a.x is b.x  # shared, as the warning says

    def test_a_tensordict_default_warns_too(self) -> None:
        with pytest.warns(errors.SharedDefaultWarning, match="Rec.t"):

            class Rec(TensorClass):
                t: TensorDict = TensorDict(a=torch.zeros(1))  # noqa: RUF009

    def test_the_warning_names_the_class_statement(self) -> None:
        with pytest.warns(errors.SharedDefaultWarning) as record:

            @tensorclass
            class Decorated:
                x: torch.Tensor = torch.zeros(2)  # noqa: RUF009

            class Subclassed(TensorClass["nocast"]):
                y: torch.Tensor = torch.zeros(2)  # noqa: RUF009

        assert [w.filename for w in record] == [__file__, __file__]

    def test_default_factory_does_not_warn(self) -> None:
        import dataclasses

        class Rec(TensorClass):
            x: torch.Tensor = dataclasses.field(default_factory=lambda: torch.zeros(3))

        assert Rec().x is not Rec().x


# --- ecosystem annotations ---------------------------------------------------------------

MyTensor = NewType("MyTensor", torch.Tensor)
T = TypeVar("T")


class TestEcosystemAnnotations:
    def test_jaxtyping(self, declare: Declare) -> None:
        jaxtyping = pytest.importorskip("jaxtyping")
        Float, UInt8 = jaxtyping.Float, jaxtyping.UInt8
        template = type(
            "Cam",
            (),
            {
                "__annotations__": {
                    "K": Float[torch.Tensor, "*num_cameras 3 3"],
                    "img": UInt8[torch.Tensor, "*batch h w"],
                    "ts": Float[torch.Tensor, "*num_cameras"],
                },
                "__module__": __name__,
            },
        )
        cls = declare(template)
        cam = cls(
            K=torch.zeros(4, 3, 3),
            img=torch.zeros(4, 5, 6, dtype=torch.uint8),
            ts=torch.zeros(4),
            batch_size=[4],
        )
        assert cam[0].ts.shape == () and cam.img.dtype == torch.uint8
        eye = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
        assert torch.equal(cls(K=eye, img=None, ts=None).K, torch.tensor(eye))
        with pytest.raises(errors.FieldSpecError, match="Cam.K"):  # shapes are checked (#21)
            cls(K=[[1.0]], img=None, ts=None)
        with pytest.raises(errors.FieldTypeError, match="Cam.ts"):
            cls(K=None, img=None, ts="text")

    def test_annotated_newtype_typevar_literal(self, declare: Declare) -> None:
        template = type(
            "Rec",
            (),
            {
                "__annotations__": {
                    "a": Annotated[torch.Tensor, "meta"],
                    "n": MyTensor,
                    "t": T,
                    "mode": Literal["train", "eval"],
                    "doc": Annotated[str, "doc"],
                },
                "doc": "d",
                "__module__": __name__,
            },
        )
        cls = declare(template)
        rec = cls(a=[1.0], n=torch.zeros(1), t="anything", mode="eval", batch_size=[1])
        assert torch.equal(rec.a, torch.tensor([1.0])) and rec.t == "anything"
        assert rec.mode == "eval" and rec.doc == "d"
        # a value outside the Literal is refused (the peer keeps it: README, Differences)
        with pytest.raises(
            errors.FieldSpecError, match=r"Rec.mode is given str 'test'.*in \('train'"
        ):
            cls(a=None, n=None, t=None, mode="test")
        with pytest.raises(errors.FieldTypeError, match="Rec.mode is annotated Literal"):
            cls(a=None, n=None, t=None, mode=torch.zeros(()))

    def test_generic_class(self) -> None:
        from typing import Generic

        class Box(TensorClass, Generic[T]):
            item: T
            extra: Any = None

        assert Box[int](item=3).item == 3
