"""``torch.vmap`` and tree utilities over an HDF5 file, as the peer's: a view of its rows
is read as a TensorDict (vmap maps over the rows), a file given to vmap is refused with
a ``RuntimeError`` that says to call ``to_tensordict()`` (torch's ``ValueError`` for an
unknown input before), and ``tree_leaves`` / ``tree_map`` see the file's tensors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree

import tclass
from tclass import TensorDict
from tclass.errors import UnsupportedError

h5py = pytest.importorskip("h5py")


def _file(lib: Any, path: Path) -> Any:
    source = lib.TensorDict(
        a=torch.arange(6.0).reshape(2, 3),
        n=lib.TensorDict(b=torch.ones(2), batch_size=[2]),
        batch_size=[2],
    )
    return lib.PersistentTensorDict.from_dict(source, filename=path)


def _mapped(x: Any) -> torch.Tensor:
    return torch.vmap(lambda t: t["a"] + t["n", "b"][..., None])(x)  # type: ignore[no-any-return]


def test_vmap_maps_over_the_rows_of_a_view(tmp_path: Path) -> None:
    ptd = _file(tclass, tmp_path / "f.h5")
    assert torch.equal(_mapped(ptd[:]), torch.arange(6.0).reshape(2, 3) + 1)
    out = torch.vmap(lambda t: t + 1)(ptd[0:1])
    assert type(out) is TensorDict and out["a"].tolist() == [[1.0, 2.0, 3.0]]
    peer = pytest.importorskip("tensordict")
    theirs = _file(peer, tmp_path / "p.h5")
    assert torch.equal(_mapped(ptd[:]), _mapped(theirs[:]))


def test_vmap_refuses_a_file_with_the_peers_runtime_error(tmp_path: Path) -> None:
    ptd = _file(tclass, tmp_path / "f.h5")
    with pytest.raises(RuntimeError, match="to_tensordict") as info:
        _mapped(ptd)
    assert isinstance(info.value, UnsupportedError)
    assert torch.equal(_mapped(ptd.to_tensordict()), _mapped(ptd[:]))
    peer = pytest.importorskip("tensordict")
    with pytest.raises(RuntimeError, match="to_tensordict"):
        _mapped(_file(peer, tmp_path / "p.h5"))


def test_tree_utilities_read_a_file_as_a_tensordict(tmp_path: Path) -> None:
    ptd = _file(tclass, tmp_path / "f.h5")
    leaves = pytree.tree_leaves(ptd)
    assert sorted(leaf.shape for leaf in leaves) == [(2,), (2, 3)]
    out = pytree.tree_map(lambda t: t * 2, ptd)
    assert type(out) is TensorDict and out["n", "b"].tolist() == [2.0, 2.0]
    assert ptd["a"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]  # the file unchanged
