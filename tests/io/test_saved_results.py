"""A record saved holding an op's result in a value field loads back (lead35b).

``record != record.apply(torch.ones_like)`` compares a ``str`` field into a bool tensor:
the record keeps it in memory (as the peer's does), and ``memmap`` saves it. Loading the
folder with the record's class gives it back, as the peer loads it, instead of refusing
the tensor as the constructor refuses one given for a ``str`` field. Only a folder saved
from this class with the field declared as now: a field whose annotation changed since,
or a folder without tclass's schema (the peer's), is still a difference.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import tclass
from tclass import TensorClass, errors


class Rec(TensorClass):
    a: torch.Tensor
    s: str


def compared(tmp_path: Path) -> tuple[Rec, Path]:
    x = Rec(a=torch.zeros(2), s="pong", batch_size=[2])
    x = x != x.apply(torch.ones_like)
    assert isinstance(x.s, torch.Tensor) and x.s.dtype == torch.bool
    folder = tmp_path / "rec"
    x.memmap(folder)
    return x, folder


def marker_meta(folder: Path) -> tuple[Path, dict]:  # type: ignore[type-arg]
    path = folder / "_tensordict" / "meta.json"
    return path, json.loads(path.read_text())


def test_a_saved_op_result_in_a_str_field_loads_back(tmp_path: Path) -> None:
    x, folder = compared(tmp_path)
    y = Rec.load_memmap(folder)
    assert type(y) is Rec
    assert isinstance(y.s, torch.Tensor) and y.s.dtype == torch.bool
    assert torch.equal(y.s, x.s) and torch.equal(y.a, x.a)
    assert list(y.keys()) == list(x.keys())
    _, meta = marker_meta(folder)
    assert meta["_tclass"]["schema"]["fields"]["s"]["held"] == "tensor"
    z = tclass.load_memmap(folder)  # the class from the folder: the same
    assert type(z) is Rec and torch.equal(z.s, x.s)


def test_the_constructor_still_refuses_a_tensor_for_a_str_field() -> None:
    with pytest.raises(errors.FieldTypeError, match=r"Rec\.s is annotated str"):
        Rec(a=torch.zeros(2), s=torch.zeros(2, dtype=torch.bool), batch_size=[2])


def test_a_field_whose_annotation_changed_since_is_still_a_difference(tmp_path: Path) -> None:
    _, folder = compared(tmp_path)
    path, meta = marker_meta(folder)
    fields = meta["_tclass"]["schema"]["fields"]
    fields["s"] = {"kind": "tensor", "annotation": "Tensor"}  # saved when s was a Tensor
    path.write_text(json.dumps(meta))
    with pytest.raises(errors.SchemaMismatchError, match=r"Rec\.s is annotated str; got a"):
        Rec.load_memmap(folder)


def test_a_tensor_put_in_the_folder_by_hand_is_still_a_difference(tmp_path: Path) -> None:
    _, folder = compared(tmp_path)
    path, meta = marker_meta(folder)
    del meta["_tclass"]["schema"]["fields"]["s"]["held"]  # saved holding a str
    path.write_text(json.dumps(meta))
    with pytest.raises(errors.SchemaMismatchError, match=r"Rec\.s is annotated str; got a"):
        Rec.load_memmap(folder)
    plain = tmp_path / "plain"
    Rec(a=torch.zeros(2), s="pong", batch_size=[2]).memmap(plain)
    _, meta = marker_meta(plain)
    assert "held" not in meta["_tclass"]["schema"]["fields"]["s"]


def test_a_folder_without_the_schema_is_still_checked(tmp_path: Path) -> None:
    _, folder = compared(tmp_path)
    path, meta = marker_meta(folder)
    del meta["_tclass"]["schema"]  # as the peer (or an older tclass) writes it
    path.write_text(json.dumps(meta))
    with pytest.raises(errors.SchemaMismatchError, match=r"Rec\.s is annotated str"):
        Rec.load_memmap(folder)
