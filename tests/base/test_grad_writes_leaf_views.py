"""``update_`` into a view of a leaf tensor that requires grad, where the leaf is itself a
view of a tensor that does not (``requires_grad_()`` of a view; a memory-mapped tensor
over no elements is a view of a plain one): autograd refuses the copy as into any view of
a leaf, so tclass refuses it before writing anything, as the peer's ``update_`` raises
autograd's error (fuzz program 16,026,357 of methods,features,entries,records
``--length 8``: a split of a memory-mapped TensorDict over a zero-size dim given
``float().requires_grad_()``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass.errors import InPlaceWriteError

VIEWS: dict[str, Callable[[Any], Any]] = {
    "split": lambda x: x.split(1, 0)[0],
    "slice": lambda x: x[0:1],
    "unbind": lambda x: x.unbind(0)[0],
}


def _grad_view_leaf(lib: Any) -> Any:
    leaf = torch.empty(0).view(1, 0, 3).requires_grad_()  # a leaf view of a plain tensor
    return lib.TensorDict({"b": leaf}, batch_size=[1, 0])


def _grad_memmap(lib: Any, folder: Path) -> Any:
    saved = lib.TensorDict({"b": torch.rand(1, 0, 3)}, batch_size=[1, 0]).memmap(folder)
    return saved.float().requires_grad_()


def _write(view: Any) -> None:
    view.update_(view.clone().apply(torch.zeros_like))


@pytest.mark.parametrize("take", VIEWS.values(), ids=list(VIEWS))
def test_a_view_of_a_leaf_view_requiring_grad_is_refused(
    take: Callable[[Any], Any], tmp_path: Path
) -> None:
    for collection in (_grad_view_leaf(tclass), _grad_memmap(tclass, tmp_path)):
        with pytest.raises(InPlaceWriteError, match="autograd refuses"):
            _write(take(collection))
        with pytest.raises(RuntimeError):  # and as the builtin the peer raises
            _write(take(collection))


@pytest.mark.parametrize("take", VIEWS.values(), ids=list(VIEWS))
def test_the_peer_refuses_them_too(take: Callable[[Any], Any], tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    for collection in (_grad_view_leaf(peer), _grad_memmap(peer, tmp_path)):
        with pytest.raises(RuntimeError, match="view"):
            _write(take(collection))


def test_no_grad_writes_them() -> None:
    collection = _grad_view_leaf(tclass)
    with torch.no_grad():
        _write(collection.split(1, 0)[0])
    assert collection["b"].requires_grad
