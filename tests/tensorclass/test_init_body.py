"""The storage step of the generated ``__init__`` unrolled per class
(tclass/_tensorclass/_init_body.py) against the generic loop it replaces
(``_builder.init_record``, which a class whose rules are not known when it is built
still uses): each class is declared twice, once with each, and every construction must
give the same record, or the same error, both ways. The cases go through each inline
branch (a plain tensor, a value of the field's exact class, a record of the field's
exact class) and past it (a subclass, a wrong kind, a batch or device that differs).
"""

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict, errors
from tclass._tensorclass import _builder


def _declare(unrolled: bool) -> dict[str, Any]:
    @tclass.tensorclass
    class Leaf:
        x: torch.Tensor

    @tclass.tensorclass
    class Rec:
        obs: torch.Tensor
        env: str
        leaf: Leaf | None = None
        step: int = 0
        score: float = 0.0
        td: TensorDict | None = None

    @tclass.tensorclass(frozen=True)
    class Frozen:
        obs: torch.Tensor
        env: str

    return {"Leaf": Leaf, "Rec": Rec, "Frozen": Frozen}


@pytest.fixture(scope="module")
def classes() -> dict[bool, dict[str, Any]]:
    """The classes with the unrolled step (True) and with the generic loop (False)."""
    unrolled = _declare(True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_builder, "unrolled_init", lambda info: None)
        generic = _declare(False)
    return {True: unrolled, False: generic}


class Tag(str):
    """A str subclass: past the exact-class branch."""


def _outcome(make: Callable[[dict[str, Any]], Any], classes: dict[str, Any]) -> Any:
    try:
        record = make(classes)
    except Exception as error:  # noqa: BLE001  (compared: type and message)
        return type(error), str(error)
    td = record._tensordict
    entries = {key: (type(value).__name__, _data(value)) for key, value in td.items()}
    return type(record).__name__, td.batch_size, td.device, td.is_locked, entries


def _data(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        parts = [part.tolist() for part in value.unbind()] if value.is_nested else value.tolist()
        return value.dtype, parts
    if isinstance(value, tclass.NonTensorData):
        return value.batch_size, type(value.data).__name__, value.data
    if isinstance(value, tclass.TensorCollection):
        td = getattr(value, "_tensordict", value)
        entries = {key: _data(entry) for key, entry in td.items()}
        return type(value).__name__, value.batch_size, value.device, entries
    return value


_X = torch.arange(6.0).reshape(2, 3)

CASES: dict[str, Callable[[dict[str, Any]], Any]] = {
    "tensor and str": lambda c: c["Rec"](_X, "pong", batch_size=[2]),
    "tensor, 2 batch dims": lambda c: c["Rec"](_X, "pong", batch_size=[2, 3]),
    "tensor, no batch dims": lambda c: c["Rec"](_X, "pong"),
    "tensor, batch mismatch": lambda c: c["Rec"](_X, "pong", batch_size=[3]),
    "0-d tensor, batch [2]": lambda c: c["Rec"](torch.tensor(1.0), "e", batch_size=[2]),
    "tensor, 2 dims mismatch": lambda c: c["Rec"](_X, "e", batch_size=[2, 4]),
    "nested tensor": lambda c: c["Rec"](
        torch.nested.nested_tensor([torch.zeros(3), torch.zeros(2)]), "e", batch_size=[2]
    ),
    "device given": lambda c: c["Rec"](_X, "pong", batch_size=[2], device="cpu"),
    "batch size not cached": lambda c: c["Rec"](torch.zeros(5000), "e", batch_size=[5000]),
    "batch size [True]": lambda c: c["Rec"](_X, "e", batch_size=[True]),
    "batch size Size": lambda c: c["Rec"](_X, "e", batch_size=torch.Size([2])),
    "str subclass": lambda c: c["Rec"](_X, Tag("t"), batch_size=[2]),
    "int in a str field": lambda c: c["Rec"](_X, 3, batch_size=[2]),
    "None in a str field": lambda c: c["Rec"](_X, None, batch_size=[2]),
    "tensor in a str field": lambda c: c["Rec"](_X, _X, batch_size=[2]),
    "bool in an int field": lambda c: c["Rec"](_X, "e", step=True, batch_size=[2]),
    "int in a float field": lambda c: c["Rec"](_X, "e", score=3, batch_size=[2]),
    "str in an int field": lambda c: c["Rec"](_X, "e", step="3", batch_size=[2]),
    "float in a float field": lambda c: c["Rec"](_X, "e", score=0.5, batch_size=[2]),
    "record": lambda c: c["Rec"](
        _X, "e", c["Leaf"](torch.zeros(2, 4), batch_size=[2]), batch_size=[2]
    ),
    "record, more batch dims": lambda c: c["Rec"](
        _X, "e", c["Leaf"](torch.zeros(2, 4), batch_size=[2, 4]), batch_size=[2]
    ),
    "record, no batch dims": lambda c: c["Rec"](
        _X, "e", c["Leaf"](torch.zeros(2, 4)), batch_size=[2]
    ),
    "record, batch mismatch": lambda c: c["Rec"](
        _X, "e", c["Leaf"](torch.zeros(3), batch_size=[3]), batch_size=[2]
    ),
    "record, device given": lambda c: c["Rec"](
        _X, "e", c["Leaf"](torch.zeros(2), batch_size=[2], device="cpu"), device="cpu"
    ),
    "record of another class": lambda c: c["Rec"](
        _X, "e", c["Rec"](_X, "f", batch_size=[2]), batch_size=[2]
    ),
    "dict for a record": lambda c: c["Rec"](_X, "e", {"x": torch.zeros(2)}, batch_size=[2]),
    "TensorDict for a record": lambda c: c["Rec"](
        _X, "e", TensorDict({"x": torch.zeros(2)}, [2]), batch_size=[2]
    ),
    "TensorDict field": lambda c: c["Rec"](
        _X, "e", td=TensorDict({"y": torch.zeros(2, 2)}, [2]), batch_size=[2]
    ),
    "TensorDict field, no batch dims": lambda c: c["Rec"](
        _X, "e", td=TensorDict({"y": torch.zeros(2, 2)}), batch_size=[2]
    ),
    "frozen": lambda c: c["Frozen"](_X, "e", batch_size=[2]),
}


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")
@pytest.mark.parametrize("case", list(CASES))
def test_unrolled_step_stores_as_the_generic_loop(
    case: str, classes: dict[bool, dict[str, Any]]
) -> None:
    make = CASES[case]
    assert _outcome(make, classes[True]) == _outcome(make, classes[False])


def test_classes_take_the_step_they_were_declared_with(
    classes: dict[bool, dict[str, Any]],
) -> None:
    for unrolled, declared in classes.items():
        for cls in declared.values():
            store = cls.__tclass_info__.generated_init.__globals__["__tclass_init__"]
            assert (store is _builder.init_record) is not unrolled


def test_kept_values_and_records_are_the_given_objects(
    classes: dict[bool, dict[str, Any]],
) -> None:
    leaf_cls, rec_cls = classes[True]["Leaf"], classes[True]["Rec"]
    leaf = leaf_cls(torch.zeros(2, 4), batch_size=[2])
    record = rec_cls(_X, "pong", leaf, batch_size=[2])
    assert record.obs is _X and record.leaf is leaf and record.env == "pong"
    assert type(record._tensordict.get("env")) is tclass.NonTensorData


def test_errors_name_the_field(classes: dict[bool, dict[str, Any]]) -> None:
    rec_cls, leaf_cls = classes[True]["Rec"], classes[True]["Leaf"]
    with pytest.raises(errors.FieldTypeError, match=r"Rec\.env is annotated str; got a Tensor"):
        rec_cls(_X, _X, batch_size=[2])
    with pytest.raises(errors.BatchMismatchError, match="leaf"):
        rec_cls(_X, "e", leaf_cls(torch.zeros(3), batch_size=[3]), batch_size=[2])
    with pytest.raises(errors.BatchMismatchError, match="obs"):
        rec_cls(torch.tensor(1.0), "e", batch_size=[2])


def test_forward_reference_class_uses_the_generic_loop() -> None:
    @tclass.tensorclass
    class Ahead:
        later: "NotYet | None" = None  # noqa: F821
        x: torch.Tensor | None = None

    store = Ahead.__tclass_info__.generated_init.__globals__["__tclass_init__"]
    assert store is _builder.init_record
    assert Ahead(x=torch.zeros(2), batch_size=[2]).x.shape == (2,)


# --- binding the arguments (_generated._binding_lines) -------------------------------


@tclass.tensorclass
class _Bound:
    a: torch.Tensor
    b: str = "q"
    d: int = dataclasses.field(kw_only=True)


_Z = torch.zeros(2)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        # every field by position: the one unpacking, then the keyword checks
        (lambda: _Bound(_Z, "e", bogus=1), errors.UnknownArgumentError, "'bogus'"),
        (lambda: _Bound(_Z, "e"), errors.ArgumentError, r"missing 1 .*'d'"),
        (lambda: _Bound(_Z, "e", b="f", d=1), errors.DuplicateArgumentError, "'b'"),
        # some by position: one by one
        (lambda: _Bound(_Z, a=_Z, d=1), errors.DuplicateArgumentError, "'a'"),
        (lambda: _Bound(_Z, "e", 3, d=1), errors.ArgumentError, "takes 3 positional"),
        (lambda: _Bound(b="e", d=1), errors.ArgumentError, r"missing 1 .*'a'"),
    ],
)
def test_wrong_calls(call: Callable[[], Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    ("call", "fields"),
    [
        (lambda: _Bound(_Z, "e", d=1), ("e", 1)),  # every field by position
        (lambda: _Bound(_Z, d=1), ("q", 1)),  # the default filled in
        (lambda: _Bound(_Z, b="f", d=2), ("f", 2)),
        (lambda: _Bound(a=_Z, b="g", d=3), ("g", 3)),
    ],
)
def test_bound_calls(call: Callable[[], Any], fields: tuple[str, int]) -> None:
    record = call()
    assert record.a is _Z and (record.b, record.d) == fields
