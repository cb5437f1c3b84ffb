"""``memmap_like(prefix)`` into the folder that the collection's own tensors map (it was
loaded from there, or is a view or a nested node of such a collection) is refused with
a ``FileConflictError``, the folder unchanged: its zero-filled tree would replace the
files holding the data, which would then live only in this process (and writes into the
loaded collection would never reach a file). Into another folder, or a folder another
collection was loaded from, it gives zeros as before; ``memmap(prefix)`` of the loaded
collection into its own folder keeps working (its files are linked, nothing copied)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import TensorDict, errors, tensorclass


@tensorclass
class _Rec:
    x: torch.Tensor


def _saved(path: Path) -> TensorDict:
    TensorDict(a=torch.arange(3.0), n={"b": torch.ones(3)}, batch_size=[3]).memmap(path)
    return TensorDict.load_memmap(path)


@pytest.mark.parametrize(
    ("like", "where"),
    [
        pytest.param(lambda ld: ld, "", id="itself"),
        pytest.param(lambda ld: ld[1:], "", id="rows"),
        pytest.param(lambda ld: ld.view(-1), "", id="view"),
        pytest.param(lambda ld: ld["n"], "n", id="nested-into-its-folder"),
        pytest.param(lambda ld: ld["n"], "", id="nested-into-the-root"),
    ],
)
def test_memmap_like_into_the_folder_it_maps_is_refused(
    tmp_path: Path, like: Any, where: str
) -> None:
    path = tmp_path / "saved"
    loaded = _saved(path)
    with pytest.raises(errors.FileConflictError, match="maps .*a file of that folder"):
        like(loaded).memmap_like(path / where if where else path)
    again = TensorDict.load_memmap(path)
    assert again["a"].tolist() == [0.0, 1.0, 2.0] and again["n", "b"].tolist() == [1.0] * 3
    loaded["a"] += 1  # still the folder's files
    assert TensorDict.load_memmap(path)["a"].tolist() == [1.0, 2.0, 3.0]


def test_a_record_loaded_from_the_folder_is_refused_too(tmp_path: Path) -> None:
    _Rec(x=torch.arange(3.0), batch_size=[3]).memmap(tmp_path / "r")
    record = _Rec.load_memmap(tmp_path / "r")
    with pytest.raises(errors.FileConflictError):
        record.memmap_like(tmp_path / "r")
    assert _Rec.load_memmap(tmp_path / "r").x.tolist() == [0.0, 1.0, 2.0]


def test_other_folders_and_saves_are_unchanged(tmp_path: Path) -> None:
    loaded = _saved(tmp_path / "saved")
    assert loaded.memmap_like(tmp_path / "new")["a"].tolist() == [0.0] * 3
    other = TensorDict(a=torch.arange(3.0) + 10, n={"b": torch.ones(3)}, batch_size=[3])
    assert other.memmap_like(tmp_path / "saved")["a"].tolist() == [0.0] * 3  # not its files
    reloaded = _saved(tmp_path / "again")
    assert reloaded.memmap(tmp_path / "again")["a"].tolist() == [0.0, 1.0, 2.0]
