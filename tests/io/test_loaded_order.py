"""What a loaded collection reports about itself.

- key order: a folder loads its tensors first, then its Python values, then its nested
  collections (each group in saved order), for a TensorDict, a record (whose fields
  then come in that order, absent ones last in ``to_dict()``) and a lazy stack of loaded
  records; what was saved keeps its order in memory (``memmap_``). ``keys()``,
  ``items()``, ``to_dict()`` and ``state_dict()`` all show it;
- ``is_memmap()``: True for a saved or loaded collection, also one with no tensors (only
  Python values, or empty nested collections); False for one that never was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, TensorClass, TensorDict


class Part(TensorClass):
    y: torch.Tensor
    z: Optional[torch.Tensor] = None  # noqa: UP045


class Row(TensorClass):
    x: torch.Tensor
    label: str
    part: Part
    opt: Optional[torch.Tensor] = None  # noqa: UP045


def _row(label: str | None = "a") -> Row:
    return Row(
        x=torch.zeros(2, 3),
        label=label,  # type: ignore[arg-type]
        part=Part(y=torch.ones(2), batch_size=[2]),
        opt=torch.ones(2, 1),
        batch_size=[2],
    )


def _td() -> TensorDict:
    return TensorDict(
        s="pong",
        a=torch.zeros(2),
        n=TensorDict(z="q", b=torch.ones(2), batch_size=[2]),
        c=torch.ones(2),
        e=TensorDict(batch_size=[2]),
        batch_size=[2],
    )


# --- key order ----------------------------------------------------------------------------


def test_a_loaded_tensordict_lists_tensors_then_values_then_nested(tmp_path: Path) -> None:
    td = _td()
    assert list(td.keys()) == ["s", "a", "n", "c", "e"]
    td.memmap_(tmp_path / "td")
    assert list(td.keys()) == ["s", "a", "n", "c", "e"]  # kept in memory as it was
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert list(loaded.keys()) == ["a", "c", "s", "n", "e"]
    assert list(loaded["n"].keys()) == ["b", "z"]
    assert list(loaded.to_dict()) == ["a", "c", "s", "n", "e"]


def test_a_loaded_record_lists_its_fields_in_the_folder_order(tmp_path: Path) -> None:
    row = _row()
    assert list(row.keys()) == ["x", "label", "part", "opt"]
    row.memmap(tmp_path / "row")
    loaded = Row.load_memmap(tmp_path / "row")
    assert list(loaded.keys()) == ["x", "opt", "label", "part"]
    assert [key for key, _ in loaded.items()] == ["x", "opt", "label", "part"]
    assert list(loaded.to_dict()) == ["x", "opt", "label", "part"]
    assert list(loaded.state_dict()) == ["x", "opt", "part.y"]
    assert list(loaded.to_tensordict().keys()) == ["x", "opt", "label", "part"]
    # the values are the saved ones, whatever the order
    assert torch.equal(loaded.x, row.x) and loaded.label == "a"
    assert torch.equal(loaded.part.y, row.part.y) and torch.equal(loaded.opt, row.opt)


def test_an_absent_field_is_left_out_after_loading(tmp_path: Path) -> None:
    _row(label=None).memmap(tmp_path / "row")
    loaded = Row.load_memmap(tmp_path / "row")
    assert list(loaded.keys()) == ["x", "opt", "part"]
    assert loaded.label is None and list(loaded.to_dict()) == ["x", "opt", "part", "label"]


def test_a_lazy_stack_of_loaded_records_lists_their_order(tmp_path: Path) -> None:
    _row().memmap(tmp_path / "row")
    loaded = Row.load_memmap(tmp_path / "row")
    stack = LazyStackedTensorDict.lazy_stack([loaded, loaded.clone()], 0)
    assert list(stack.keys()) == ["x", "opt", "label", "part"]
    assert list(torch.cat([loaded, loaded], 0).keys()) == ["x", "opt", "label", "part"]


@pytest.mark.peer
def test_key_orders_are_the_peers(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    for lib in (tclass, peer):
        td = lib.TensorDict(
            {"s": "pong", "a": torch.zeros(2), "n": lib.TensorDict({"z": "q"}, [2])}, [2]
        )
        td.memmap(tmp_path / lib.__name__)
    mine = TensorDict.load_memmap(tmp_path / "tclass")
    theirs = peer.TensorDict.load_memmap(tmp_path / "tensordict")
    assert list(mine.keys(True)) == list(theirs.keys(True))
    lazy = [
        list(lib.LazyStackedTensorDict.lazy_stack([td, td.clone()]).keys(True))
        for lib, td in ((tclass, mine), (peer, theirs))
    ]
    assert lazy[0] == lazy[1]


# --- is_memmap ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: TensorDict(s="x"),
        lambda: TensorDict(s="x", batch_size=[2]),
        lambda: TensorDict(n=TensorDict(batch_size=[2]), batch_size=[2]),
        lambda: TensorDict(),
        lambda: TensorDict(s="x", n=TensorDict(t="y")),
    ],
    ids=["value", "batched-value", "empty-nested", "empty", "values-nested"],
)
def test_a_saved_collection_without_tensors_is_memory_mapped(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    plain = make()
    assert not plain.is_memmap()
    assert plain.memmap(tmp_path / "a").is_memmap()
    assert not plain.is_memmap()  # memmap() saved a copy
    plain.memmap_(tmp_path / "b")
    assert plain.is_memmap()
    assert TensorDict.load_memmap(tmp_path / "a").is_memmap()
    assert not plain.clone().is_memmap()  # a copy in memory


def test_is_memmap_with_tensors_asks_the_tensors(tmp_path: Path) -> None:
    td = TensorDict(a=torch.zeros(2), s="x", batch_size=[2])
    saved = td.memmap(tmp_path / "td")
    assert saved.is_memmap() and TensorDict.load_memmap(tmp_path / "td").is_memmap()
    assert not td.is_memmap()
    stack = LazyStackedTensorDict.lazy_stack([saved, saved])
    assert stack.is_memmap()
    assert not LazyStackedTensorDict.lazy_stack([saved, td]).is_memmap()


def test_a_lazy_stack_of_saved_members_without_tensors(tmp_path: Path) -> None:
    members = [TensorDict(s="x").memmap(tmp_path / str(i)) for i in range(2)]
    assert LazyStackedTensorDict.lazy_stack(members).is_memmap()
    assert not LazyStackedTensorDict.lazy_stack([members[0], TensorDict(s="y")]).is_memmap()


@pytest.mark.peer
def test_is_memmap_after_memmap_is_the_peers(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    for name, data in (("v", {"s": "x"}), ("e", {}), ("n", {"n": {}})):
        mine = TensorDict(data).memmap(tmp_path / f"t{name}").is_memmap()
        theirs = peer.TensorDict(data).memmap(tmp_path / f"p{name}").is_memmap()
        assert mine is theirs is True
