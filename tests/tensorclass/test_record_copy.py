"""``copy.copy`` / ``copy.deepcopy`` of records, checked on tclass and on the peer: the
peer's are ``clone(recurse=False)`` (nested records new, tensors shared) and ``clone()``."""

from __future__ import annotations

import copy
import dataclasses
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass


@pytest.fixture(params=["tclass", "tensordict"])
def lib(request: pytest.FixtureRequest) -> ModuleType:
    if request.param == "tensordict":
        return pytest.importorskip("tensordict")
    return tclass


def _classes(lib: ModuleType) -> tuple[Any, Any]:
    @lib.tensorclass
    class Inner:
        v: torch.Tensor

    @lib.tensorclass
    class Outer:
        inner: Inner
        w: torch.Tensor
        name: str

    return Inner, Outer


def test_copy_gives_new_nested_records_over_the_same_tensors(lib: ModuleType) -> None:
    inner_cls, outer_cls = _classes(lib)
    rec = outer_cls(
        inner=inner_cls(v=torch.zeros(2), batch_size=[2]), w=torch.ones(2), name="n", batch_size=[2]
    )
    out = copy.copy(rec)
    assert type(out) is outer_cls and out is not rec and out.inner is not rec.inner
    assert out.w is rec.w and out.inner.v is rec.inner.v and out.name == "n"
    out.inner.v = torch.full((2,), 7.0)
    out.name = "other"
    assert (rec.inner.v == 0).all() and rec.name == "n"


def test_deepcopy_copies_the_tensors(lib: ModuleType) -> None:
    inner_cls, outer_cls = _classes(lib)
    rec = outer_cls(
        inner=inner_cls(v=torch.zeros(2), batch_size=[2]), w=torch.ones(2), name="n", batch_size=[2]
    )
    out = copy.deepcopy(rec)
    assert out.inner is not rec.inner and out.name == "n"
    assert out.inner.v.data_ptr() != rec.inner.v.data_ptr() and torch.equal(out.w, rec.w)


def test_empty_with_names_none_is_unnamed_left_out_keeps_the_names() -> None:
    """As a TensorDict's (README, "``names=None`` means unnamed dims"; the peer's record
    keeps the names there, its TensorDict drops them)."""
    inner_cls, outer_cls = _classes(tclass)
    rec = outer_cls(
        inner=inner_cls(v=torch.zeros(2, 3), batch_size=[2, 3]),
        w=torch.ones(2, 3),
        name="n",
        batch_size=[2, 3],
        names=["i", None],
    )
    assert rec.empty().names == ["i", None]
    assert rec.empty(names=None).names == [None, None]
    out = rec.empty(recurse=True, names=None)
    assert out.names == [None, None] and out.inner.names == [None, None]
    assert rec.apply(lambda x: x + 1, names=None).inner.names == [None, None]


def test_astuple_of_a_memory_mapped_record_moved_to_the_cpu(tmp_path: Any) -> None:
    """Decided (README "so does its `dataclasses.astuple`"): tclass copies the values;
    the peer's deepcopy of the leaves ``to("cpu")`` leaves fails inside torch (program
    15,910,390 of methods,features,entries,records, fz29g)."""
    inner_cls, outer_cls = _classes(tclass)
    rec = outer_cls(
        inner=inner_cls(v=torch.zeros(0, 4), batch_size=[0, 4]),
        w=torch.ones(0, 4),
        name="a",
        batch_size=[0, 4],
    )
    moved = rec.memmap_like(tmp_path / "r").to("cpu")
    inner, w, name = dataclasses.astuple(moved)
    assert name == "a" and w.shape == (0, 4) and inner[0].shape == (0, 4)
