"""``TensorDictParams`` of a TensorDict holding an HDF5 file (nu25c / lo26c): the file's
entries are read into memory as parameters, as for a params of the file itself (README:
"A TensorDictParams of a file holds the file's entries read into memory"); it raised a
TypeError from the file's ``_put``. The peer holds the file and registers none of its
tensors; its ``memmap_`` of a TensorDict holding such params fails after writing."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from tclass import PersistentTensorDict, TensorDict, TensorDictParams, load_memmap

pytest.importorskip("h5py")


def _file(folder: Path, name: str = "f.h5") -> PersistentTensorDict:
    inner = TensorDict(c=torch.arange(6.0).reshape(2, 3), batch_size=[2])
    return PersistentTensorDict.from_dict(inner, filename=folder / name)


@pytest.mark.parametrize("nested", [False, True])
def test_params_of_a_tensordict_holding_a_file_reads_it(tmp_path: Path, nested: bool) -> None:
    held = _file(tmp_path)
    entry = TensorDict(x=held, batch_size=[2]) if nested else held
    params = TensorDictParams(TensorDict(w=torch.ones(2), n=entry, batch_size=[2]))
    key = ("n", "x", "c") if nested else ("n", "c")
    assert type(params[key]) is nn.Parameter
    assert torch.equal(params[key], torch.arange(6.0).reshape(2, 3))
    assert {name for name, _ in params.named_parameters()} == {"w", ".".join(key)}
    with torch.no_grad():
        params[key].add_(1)
    assert torch.equal(held["c"], torch.arange(6.0).reshape(2, 3))  # the file is unchanged


def test_memmap_in_place_of_a_tensordict_holding_such_params(tmp_path: Path) -> None:
    params = TensorDictParams(TensorDict(w=torch.ones(2), x=_file(tmp_path), batch_size=[2]))
    td = TensorDict(p=params, y=torch.zeros(2), batch_size=[2])
    td.memmap_(tmp_path / "m")
    assert td.is_memmap() and type(td["p"]) is TensorDictParams
    loaded = load_memmap(tmp_path / "m")
    assert torch.equal(loaded["p", "x", "c"], torch.arange(6.0).reshape(2, 3))
    # a file held next to the params is still refused, naming its key, before writing
    other = TensorDict(p=params.clone(), x=_file(tmp_path, "g.h5"), batch_size=[2])
    with pytest.raises(RuntimeError, match=r"at key 'x': a PersistentTensorDict"):
        other.memmap_(tmp_path / "o")
    assert not (tmp_path / "o").exists()
