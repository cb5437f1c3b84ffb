"""A field annotated with a tensorclass turns any TensorDict-like collection into a
record of that class: a TensorDict, and a lazy stack, an HDF5 file (``PersistentTensorDict``)
or a ``TensorDictParams`` too, given to the constructor, assigned or through
``update`` (the peer stores these as given, unchecked); a record of another class is
still refused (``FieldTypeError``, a ``TypeError``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import errors


@tclass.tensorclass
class Inner:
    c: torch.Tensor


@tclass.tensorclass
class Other:
    c: torch.Tensor


@tclass.tensorclass
class Outer:
    a: torch.Tensor
    n: Inner


def _source(kind: str, tmp_path: Path) -> Any:
    td = tclass.TensorDict(
        a=torch.arange(6.0).reshape(2, 3),
        n=tclass.TensorDict(c=torch.arange(12.0).reshape(2, 3, 2), batch_size=[2, 3]),
        batch_size=[2, 3],
    )
    if kind == "lazy":
        return tclass.lazy_stack(list(td.unbind(0)), 0)
    if kind == "h5":
        return td.to_h5(tmp_path / "f.h5")
    return tclass.TensorDictParams(td)


KINDS = ["lazy", "h5", "params"]


def _check(record: Any) -> None:
    assert type(record.n) is Inner and record.n.batch_size == torch.Size([2, 3])
    assert torch.equal(record.n.c.detach(), torch.arange(12.0).reshape(2, 3, 2))


@pytest.mark.parametrize("kind", KINDS)
def test_the_constructor_makes_a_nested_collection_a_record(kind: str, tmp_path: Path) -> None:
    source = _source(kind, tmp_path)
    _check(Outer(a=source["a"], n=source["n"], batch_size=[2, 3]))


@pytest.mark.parametrize("kind", KINDS)
def test_assignment_makes_a_nested_collection_a_record(kind: str, tmp_path: Path) -> None:
    source = _source(kind, tmp_path)
    record = Outer(
        a=torch.zeros(2, 3), n=Inner(c=torch.zeros(2, 3, 2), batch_size=[2, 3]), batch_size=[2, 3]
    )
    record.n = source["n"]
    _check(record)


@pytest.mark.parametrize("kind", KINDS)
def test_update_from_a_collection_makes_its_nested_one_a_record(kind: str, tmp_path: Path) -> None:
    record = Outer(
        a=torch.zeros(2, 3), n=Inner(c=torch.zeros(2, 3, 2), batch_size=[2, 3]), batch_size=[2, 3]
    )
    record.update(_source(kind, tmp_path))
    _check(record)
    assert torch.equal(record.a.detach(), torch.arange(6.0).reshape(2, 3))


def test_a_record_of_another_class_is_refused() -> None:
    record = Outer(a=torch.zeros(2), n=Inner(c=torch.zeros(2, 1), batch_size=[2]), batch_size=[2])
    with pytest.raises(errors.FieldTypeError, match="Outer.n is annotated Inner") as caught:
        record.n = Other(c=torch.ones(2, 1), batch_size=[2])
    assert isinstance(caught.value, TypeError) and torch.equal(record.n.c, torch.zeros(2, 1))


def test_a_nested_collection_of_another_batch_size_is_refused() -> None:
    stack = tclass.lazy_stack([tclass.TensorDict(c=torch.zeros(1))] * 3, 0)
    record = Outer(a=torch.zeros(2), n=Inner(c=torch.zeros(2, 1), batch_size=[2]), batch_size=[2])
    with pytest.raises(errors.BatchMismatchError, match="n"):
        record.n = stack
    assert type(record.n) is Inner and record.n.batch_size == torch.Size([2])
