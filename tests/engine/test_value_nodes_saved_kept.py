"""A Python-value node saved in a folder (``td.memmap(prefix)``, or read back with
``load_memmap``) keeps what it is through a pickle (alone, in its collection, or as
multiprocessing pickles it), ``unsqueeze`` and an index: ``is_memmap()`` stays true and a
locked node stays locked, as the peer's do. Copies (``copy.copy``, ``clone()``) are new
nodes: neither saved nor locked, in both. (They forgot both: a pickle or ``unsqueeze`` of
a saved node answered ``is_memmap()`` false and was unlocked; its rows were unlocked.)"""

from __future__ import annotations

import copy
import pickle
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import NonTensorData, NonTensorStack, TensorDict


def _saved(tmp_path: Path, stack: bool, load: bool) -> tuple[TensorDict, Any]:
    value = (
        NonTensorStack(*[NonTensorData(v) for v in "xyz"])
        if stack
        else NonTensorData("hello", batch_size=[3])
    )
    td = TensorDict(a=torch.arange(3), s=value, batch_size=[3])
    saved = td.memmap(tmp_path / "saved")
    if load:
        saved = TensorDict.load_memmap(tmp_path / "saved")
    return saved, saved.get("s")


KEPT = {
    "pickle": lambda node: pickle.loads(pickle.dumps(node)),
    "multiprocessing's pickle": lambda node: pickle.loads(ForkingPickler.dumps(node)),
    "unsqueeze(0)": lambda node: node.unsqueeze(0),
    "unsqueeze(-1)": lambda node: node.unsqueeze(-1),
    "[0]": lambda node: node[0],
    "[:2]": lambda node: node[:2],
}


@pytest.mark.parametrize("stack", [False, True], ids=["value", "stack"])
@pytest.mark.parametrize("name", list(KEPT))
def test_a_saved_node_s_pickle_unsqueeze_and_rows_stay_saved_and_locked(
    tmp_path: Path, name: str, stack: bool
) -> None:
    saved, node = _saved(tmp_path, stack, load=False)
    assert saved.is_locked and node.is_locked and node.is_memmap()
    out = KEPT[name](node)
    # (the rows of a stack are left unlocked: a write into one names the locked stack)
    assert out.is_memmap() and out.is_locked == (not stack or not name.startswith("["))
    assert out.saved_path is None  # (in no folder of its own, as the peer's rows)


@pytest.mark.parametrize("stack", [False, True], ids=["value", "stack"])
@pytest.mark.parametrize("make", KEPT.values(), ids=list(KEPT))
def test_a_loaded_node_s_pickle_unsqueeze_and_rows_stay_saved(
    tmp_path: Path, make: Any, stack: bool
) -> None:
    _, node = _saved(tmp_path, stack, load=True)
    assert node.is_memmap() and not node.is_locked
    out = make(node)
    assert out.is_memmap() and not out.is_locked


@pytest.mark.parametrize("load", [False, True], ids=["saved", "loaded"])
def test_a_pickle_of_the_collection_keeps_its_node_saved(tmp_path: Path, load: bool) -> None:
    saved, _ = _saved(tmp_path, stack=False, load=load)
    node = pickle.loads(pickle.dumps(saved)).get("s")
    assert node.is_memmap() and node.is_locked == (not load)
    assert node.data == "hello"


COPIES = {
    "copy.copy": copy.copy,
    "copy.deepcopy": copy.deepcopy,
    "clone()": lambda node: node.clone(),
    "clone(False)": lambda node: node.clone(False),
}


@pytest.mark.parametrize("stack", [False, True], ids=["value", "stack"])
@pytest.mark.parametrize("make", COPIES.values(), ids=list(COPIES))
def test_copies_are_new_nodes_neither_saved_nor_locked(
    tmp_path: Path, make: Any, stack: bool
) -> None:
    _, node = _saved(tmp_path, stack, load=False)
    out = make(node)
    assert not out.is_memmap() and not out.is_locked
    with pytest.raises(AttributeError):  # NotSavedError, as the peer's AttributeError
        out.saved_path  # noqa: B018


def test_an_unsaved_unlocked_node_pickles_as_before() -> None:
    node = NonTensorData("v", batch_size=[2])
    out = pickle.loads(pickle.dumps(node))
    assert not out.is_memmap() and not out.is_locked and out.data == "v"
    stack = NonTensorStack(NonTensorData(1), NonTensorData(2))
    assert pickle.dumps(stack) == pickle.dumps(NonTensorStack(NonTensorData(1), NonTensorData(2)))
    again = pickle.loads(pickle.dumps(stack))
    assert again.tolist() == [1, 2] and not again.is_memmap() and not again.is_locked
