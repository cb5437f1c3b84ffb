"""``copy.copy`` / ``copy.deepcopy`` of collections, checked on tclass and on the peer.

The peer's ``__copy__`` is ``clone(recurse=False)``: a new collection tree (nested
collections and Python-value nodes new too) over the same tensors; its ``__deepcopy__``
is ``clone()``. Each test runs against both libraries, so the expectations are the
peer's observed behaviour, not a guess.
"""

from __future__ import annotations

import copy
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass

_LIBS = ["tclass", "tensordict"]


@pytest.fixture(params=_LIBS)
def lib(request: pytest.FixtureRequest) -> ModuleType:
    if request.param == "tensordict":
        return pytest.importorskip("tensordict")
    return tclass


def _node(td: Any, key: str) -> Any:
    """The stored node of a Python value (not the value ``td[key]`` unwraps to)."""
    return td._tensors[key] if isinstance(td, tclass.TensorDict) else td._get_str(key, None)


class _Obj:
    pass


def test_copy_makes_new_nested_collections_over_the_same_leaves(lib: ModuleType) -> None:
    td = lib.TensorDict({"sub": {"v": torch.zeros(2)}, "x": torch.ones(2)}, [2])
    out = copy.copy(td)
    assert out is not td and out["sub"] is not td["sub"]
    assert out["x"] is td["x"] and out["sub", "v"] is td["sub", "v"]
    td["sub", "v"].add_(1)  # the leaf is shared: an in-place write shows in the copy
    assert (out["sub", "v"] == 1).all()
    out["sub", "new"] = torch.zeros(2)
    del out["sub", "v"]
    assert set(td["sub"].keys()) == {"v"}  # the copy's nested collection is its own


def test_deepcopy_copies_the_leaves(lib: ModuleType) -> None:
    td = lib.TensorDict({"sub": {"v": torch.zeros(2)}}, [2])
    out = copy.deepcopy(td)
    assert out["sub"] is not td["sub"]
    assert out["sub", "v"].data_ptr() != td["sub", "v"].data_ptr()
    assert torch.equal(out["sub", "v"], td["sub", "v"])


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy])
def test_copies_of_a_locked_collection_are_unlocked(lib: ModuleType, how: Any) -> None:
    td = lib.TensorDict({"sub": {"v": torch.zeros(2)}}, [2]).lock_()
    out = how(td)
    assert td.is_locked and not out.is_locked and not out["sub"].is_locked
    out["sub", "w"] = torch.zeros(2)
    assert "w" not in td["sub"].keys()


def test_copies_of_a_memmapped_collection(lib: ModuleType, tmp_path: Any) -> None:
    saved = lib.TensorDict({"sub": {"v": torch.arange(2.0)}}, [2]).memmap(tmp_path)
    shallow, deep = copy.copy(saved), copy.deepcopy(saved)
    assert not shallow.is_locked and shallow["sub"] is not saved["sub"]
    assert shallow["sub", "v"] is saved["sub", "v"]  # the same file-backed tensor
    assert not deep.is_locked and not deep.is_memmap()
    deep["sub", "v"].add_(5)
    assert torch.equal(saved["sub", "v"], torch.arange(2.0))


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy])
def test_python_value_nodes_are_new_nodes(lib: ModuleType, how: Any) -> None:
    obj = _Obj()
    td = lib.TensorDict({"s": "abc", "o": obj, "names": ["a", "b"]}, [2])
    out = how(td)
    for key in ("s", "o", "names"):
        assert _node(out, key) is not _node(td, key)
    assert out["s"] == "abc" and out["names"] == ["a", "b"]
    assert (out["o"] is obj) == (how is copy.copy)  # deepcopy copies the object
    out["s"] = "changed"
    assert td["s"] == "abc"


def test_copy_of_a_lazy_stack_has_new_members(lib: ModuleType) -> None:
    members = [lib.TensorDict({"sub": {"v": torch.zeros(2)}}, [2]) for _ in range(2)]
    stack = lib.lazy_stack(members, 0)
    out = copy.copy(stack)
    assert type(out) is type(stack)
    for got, member in zip(out.tensordicts, members, strict=True):
        assert got is not member and got["sub"] is not member["sub"]
        assert got["sub", "v"] is member["sub", "v"]
    deep = copy.deepcopy(stack)
    assert deep.tensordicts[0]["sub", "v"].data_ptr() != members[0]["sub", "v"].data_ptr()


@pytest.mark.filterwarnings("ignore")
def test_copy_of_a_legacy_view_views_a_copy_of_the_source(lib: ModuleType) -> None:
    td = lib.TensorDict({"sub": {"v": torch.zeros(2)}}, [2])
    with lib.set_lazy_legacy(True):
        view = td.unsqueeze(0)
        out = copy.copy(view)
        assert type(out) is type(view) and out["sub"] is not view["sub"]
        assert out["sub", "v"].data_ptr() == td["sub", "v"].data_ptr()
        out["sub", "w"] = torch.zeros(1, 2)
        assert "w" not in td["sub"].keys()
        assert type(copy.deepcopy(view)) is lib.TensorDict


@pytest.mark.parametrize("how", [copy.copy, lambda node: node.copy()])
def test_copy_of_a_value_node_copies_its_containers(lib: ModuleType, how: Any) -> None:
    listed, obj = lib.NonTensorData([1, 2]), lib.NonTensorData(_Obj())
    out = how(listed)
    assert type(out) is lib.NonTensorData and out.data == [1, 2] and out.data is not listed.data
    assert how(obj).data is obj.data  # not a container: shared
    assert listed.clone(recurse=False).data is listed.data  # clone(False) shares, as the peer's
    meta = lib.MetaData({"a": [1]})
    assert type(how(meta)) is lib.MetaData and how(meta).data is not meta.data
    stack = lib.NonTensorStack(lib.NonTensorData(["x"]), lib.NonTensorData(["y"]))
    copied = how(stack)
    assert copied.tolist() == [["x"], ["y"]] and copied.tolist()[0] is not stack.tolist()[0]
