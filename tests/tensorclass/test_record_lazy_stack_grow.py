"""``append`` / ``insert`` on a record over a lazy stack (``lazy_stack`` of records, or
``Rec.from_tensordict(lazy_stack([...]))``): the stack grows by one member, as the
peer's (which falls through to its storage, with a deprecation warning); the new member
is checked as a row of the record class; a record over one TensorDict has no member to
add to (an ``AttributeError``, as the peer's)."""

from __future__ import annotations

import functools
import warnings
from types import ModuleType
from typing import Annotated, Any

import pytest
import torch

import tclass
from tclass import Spec, TensorClass, errors


@pytest.fixture(params=["tclass", "tensordict"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    if request.param == "tensordict":
        return pytest.importorskip("tensordict")
    return tclass


@functools.cache
def _classes(lib: ModuleType) -> tuple[Any, Any]:
    @lib.tensorclass
    class Inner:
        y: torch.Tensor

    @lib.tensorclass
    class Rec:
        x: torch.Tensor
        label: str
        inner: Inner

    return Inner, Rec


def _rec(lib: ModuleType, value: float, label: str) -> Any:
    inner_cls, rec_cls = _classes(lib)
    inner = inner_cls(y=torch.full((3, 1), value), batch_size=[3])
    return rec_cls(x=torch.full((3, 1), value), label=label, inner=inner, batch_size=[3])


@pytest.mark.parametrize("built", ["lazy_stack", "from_tensordict"])
def test_append_and_insert_grow_the_stack(lib: ModuleType, built: str) -> None:
    a, b = _rec(lib, 0.0, "a"), _rec(lib, 1.0, "b")
    if built == "lazy_stack":
        stack = lib.lazy_stack([a, b], 0)
    else:
        stack = type(a).from_tensordict(lib.lazy_stack([a._tensordict, b._tensordict], 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the peer's deprecated fall-through
        assert stack.append(_rec(lib, 2.0, "c")) is None
        assert stack.insert(0, _rec(lib, 5.0, "z")) is None
    assert type(stack) is type(a)
    assert isinstance(stack._tensordict, lib.LazyStackedTensorDict)
    assert stack.batch_size == torch.Size([4, 3])
    assert stack.x[:, 0, 0].tolist() == [5.0, 0.0, 1.0, 2.0]
    assert stack.inner.y[:, 0, 0].tolist() == [5.0, 0.0, 1.0, 2.0]
    assert [row[0] for row in stack.label] == ["z", "a", "b", "c"]
    assert type(stack[3]) is type(a) and stack[3].label == "c"


def test_the_stacks_checks_hold(lib: ModuleType) -> None:
    stack = lib.lazy_stack([_rec(lib, 0.0, "a"), _rec(lib, 1.0, "b")], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="Batch sizes"):
            stack.append(_rec(lib, 2.0, "c")[:2])
        with pytest.raises(TypeError, match="TensorDictBase"):
            stack.insert(0, torch.zeros(3))
        stack.lock_()
        with pytest.raises(RuntimeError, match="locked"):
            stack.append(_rec(lib, 2.0, "c"))
    assert stack.batch_size == torch.Size([2, 3])


def test_a_tensordict_with_the_fields_is_a_member(lib: ModuleType) -> None:
    stack = lib.lazy_stack([_rec(lib, 0.0, "a"), _rec(lib, 1.0, "b")], 0)
    inner = lib.TensorDict(y=torch.full((3, 1), 7.0), batch_size=[3])
    member = lib.TensorDict(x=torch.full((3, 1), 7.0), label="w", inner=inner, batch_size=[3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stack.append(member)
    assert stack.x[:, 0, 0].tolist() == [0.0, 1.0, 7.0]
    assert stack[2].label == "w" and stack[2].inner["y"][0, 0].item() == 7.0


def test_a_record_over_a_tensordict_has_no_member_to_add(lib: ModuleType) -> None:
    rec = _rec(lib, 0.0, "a")
    for op in ("append", "insert"):
        with pytest.raises(AttributeError, match=f"'Rec'.*{op}"):
            getattr(rec, op)(*([0] if op == "insert" else []), _rec(lib, 1.0, "b"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the peer's extend is deprecated
        with pytest.raises(AttributeError, match="extend"):
            rec.extend([_rec(lib, 1.0, "b")])


def test_a_record_over_a_tensordict_names_its_class_and_the_fix() -> None:
    rec = _rec(tclass, 0.0, "a")
    with pytest.raises(errors.UnknownFieldError, match=r"^Rec\.insert: .*tclass\.lazy_stack"):
        rec.insert(0, _rec(tclass, 1.0, "b"))
    assert rec.batch_size == torch.Size([3])


class Bounded(TensorClass):
    p: Annotated[torch.Tensor, Spec("", torch.float32, ge=0, le=1)]
    note: str = "n"


def test_the_new_member_is_checked_as_a_row_of_the_class() -> None:
    """tclass only: the peer adds any TensorDict (a key no field names, a value out of
    the field's bounds), as its row writes do not check."""
    stack = tclass.lazy_stack([Bounded(p=torch.zeros(2), batch_size=[2])] * 2, 0)
    with pytest.raises(errors.FieldSpecError, match="Bounded"):
        stack.append(tclass.TensorDict(p=torch.full((2,), 3.0), batch_size=[2]))
    with pytest.raises(errors.UnknownFieldError, match="'q'"):
        stack.insert(0, tclass.TensorDict(p=torch.zeros(2), q=torch.zeros(2), batch_size=[2]))
    with pytest.raises(errors.FieldTypeError, match="note"):
        stack.append(tclass.TensorDict(p=torch.zeros(2), note=torch.zeros(2), batch_size=[2]))
    with pytest.raises(errors.FieldSpecError, match="Bounded"):  # checked before any is added
        stack.extend(
            [
                Bounded(p=torch.zeros(2), batch_size=[2]),
                tclass.TensorDict(p=-torch.ones(2), batch_size=[2]),
            ]
        )
    assert stack.batch_size == torch.Size([2, 2])
    stack.append(tclass.TensorDict(p=torch.full((2,), 0.5), note="m", batch_size=[2]))
    assert stack.p[:, 0].tolist() == [0.0, 0.0, 0.5] and stack[2].note == "m"


def test_fields_named_append_and_insert_are_allowed(lib: ModuleType) -> None:
    """The peer's records have no ``append``/``insert`` of their own: no ``shadow``."""

    @lib.tensorclass
    class Named:
        insert: torch.Tensor
        append: int

    rec = Named(insert=torch.ones(2), append=1, batch_size=[2])
    assert rec.insert.tolist() == [1.0, 1.0] and rec.append == 1
