"""``saved_path`` of a Python-value node saved in a folder (``memmap(prefix)``,
``memmap_``, ``memmap_like``) or read from one (``load_memmap``, a record's too): the
folder holding its ``meta.json``, where its collection's ``saved_path`` names a folder
(None before; the peer's ``NonTensorData`` names a ``_tensordict`` sub-folder that does not
exist, its ``NonTensorStack`` None). What an index or ``unsqueeze`` gives is in no folder of
its own (None), a copy is not saved (``NotSavedError``, an ``AttributeError``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import LazyStackedTensorDict, NonTensorData, NonTensorStack, TensorClass, TensorDict


def _td() -> TensorDict:
    return TensorDict(
        a=torch.arange(3),
        s=NonTensorData("v", batch_size=[3]),
        st=NonTensorStack("x", "y", "z"),
        n=TensorDict(u=NonTensorData("w", batch_size=[3]), batch_size=[3]),
        batch_size=[3],
    )


KEYS = {"s": "s", "st": "st", ("n", "u"): "n/u"}


def _check_paths(td: TensorDict, folder: Path) -> None:
    assert td.saved_path == folder
    for key, rel in KEYS.items():
        node = td.get(key)
        assert node.is_memmap() and node.saved_path == folder / rel
        assert (node.saved_path / "meta.json").is_file()


SAVES = {
    "memmap(prefix)": lambda td, p: td.memmap(p),
    "memmap_(prefix)": lambda td, p: td.memmap_(p),
    "memmap_like(prefix)": lambda td, p: td.memmap_like(p),
    "load_memmap": lambda td, p: (td.memmap(p), TensorDict.load_memmap(p))[1],
}


@pytest.mark.parametrize("save", SAVES.values(), ids=list(SAVES))
def test_a_saved_or_loaded_node_s_saved_path_is_its_folder(tmp_path: Path, save: Any) -> None:
    folder = tmp_path / "td"
    _check_paths(save(_td(), folder), folder)


class _Tagged(TensorClass):
    a: torch.Tensor
    tag: str


@pytest.mark.parametrize("load", [False, True], ids=["saved", "loaded"])
def test_a_record_s_value_field_s_saved_path(tmp_path: Path, load: bool) -> None:
    rec = _Tagged(a=torch.arange(3), tag="hi", batch_size=[3]).memmap(tmp_path / "rec")
    if load:
        rec = _Tagged.load_memmap(tmp_path / "rec")
    node = rec._tensordict.get("tag")
    assert node.saved_path == rec.saved_path / "tag"  # (the record's: rec/_tensordict)
    assert (node.saved_path / "meta.json").is_file()


@pytest.mark.parametrize("load", [False, True], ids=["saved", "loaded"])
def test_a_lazy_stack_member_s_value_s_saved_path(tmp_path: Path, load: bool) -> None:
    members = [TensorDict(s=NonTensorData(c)) for c in "xy"]
    lazy = LazyStackedTensorDict(*members).memmap(tmp_path / "lazy")
    if load:
        lazy = TensorDict.load_memmap(tmp_path / "lazy")
    assert lazy.tensordicts[1].get("s").saved_path == tmp_path / "lazy" / "1" / "s"


def test_no_folder_of_its_own_where_its_collection_has_none(tmp_path: Path) -> None:
    td = _td()
    archived = td.memmap(tmp_path / "td.tdz")  # an archive: no folder to write through
    loaded = TensorDict.load_memmap(tmp_path / "td.tdz")
    read_only = TensorDict.load_memmap(_td().memmap(tmp_path / "td").saved_path, mode="r")
    for collection in (archived, loaded, read_only):
        assert collection.saved_path is None
        assert collection.get("s").is_memmap() and collection.get("s").saved_path is None


def test_what_an_index_or_unsqueeze_gives_has_no_folder_a_copy_is_not_saved(
    tmp_path: Path,
) -> None:
    saved = _td().memmap(tmp_path / "td")
    node, stack = saved.get("s"), saved.get("st")
    for out in (node[0], node[:2], node.unsqueeze(0), stack[0], stack[:2], saved[0].get("s")):
        assert out.is_memmap() and out.saved_path is None
    with pytest.raises(AttributeError):
        node.clone().saved_path  # noqa: B018


def test_a_renamed_node_s_saved_path_follows_its_folder(tmp_path: Path) -> None:
    saved = TensorDict.load_memmap(_td().memmap(tmp_path / "td").saved_path)  # unlocked
    saved.rename_key_("s", "r")
    node = saved.get("r")
    assert node.saved_path == tmp_path / "td" / "r"
    assert (node.saved_path / "meta.json").is_file() and not (tmp_path / "td" / "s").exists()


@pytest.mark.parametrize("stack", [False, True], ids=["value", "stack"])
def test_a_node_saved_on_its_own_names_its_folder(tmp_path: Path, stack: bool) -> None:
    def node() -> Any:
        return NonTensorStack("x", "y") if stack else NonTensorData("v", batch_size=[2])

    assert node().memmap(tmp_path / "a").saved_path == tmp_path / "a"
    in_place = node()
    in_place.memmap_(tmp_path / "b")
    assert in_place.is_memmap() and in_place.saved_path == tmp_path / "b"
    assert (tmp_path / "b" / "meta.json").is_file()
