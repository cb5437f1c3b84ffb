"""In-place math of a collection holding a file nested in it (a ``PersistentTensorDict``
set as an entry, or a lazy stack of a file's rows, as ``masked_select`` of a lazy stack
of a file and a TensorDict gives): the walk that gathers the tensors reads the file's
part into memory, the kernels write there and the results go back into the file, as
the peer's in-place ops write the file (its values are the expected ones below, from
tensordict 0.15.3 running the same programs).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import PersistentTensorDict, TensorDict

pytest.importorskip("h5py")


def data(value: float) -> TensorDict:
    return TensorDict(
        a=torch.full((3,), value),
        m=TensorDict(c=torch.full((4, 1), value), batch_size=[4]),
        batch_size=[],
    )


OPS: dict[str, tuple[Callable[[Any], Any], float]] = {
    # op on the masked rows -> what the file's m.c holds after it (the peer's values)
    "zero_": (lambda y: y.zero_(), 0.0),
    "mul_": (lambda y: y.mul_(5), 10.0),
    "add_": (lambda y: y.add_(y.clone()), 4.0),
    "copy_": (lambda y: y.copy_(y.clone().zero_()), 0.0),
    "iadd": (lambda y: y.__iadd__(1), 3.0),
    "clamp_": (lambda y: y.clamp_(max=1.0), 1.0),
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_a_nested_lazy_stack_of_a_files_rows_is_written(tmp_path: Path, op: str) -> None:
    f = PersistentTensorDict.from_dict(data(2.0), tmp_path / "f.h5")
    y = tclass.lazy_stack([f, data(3.0)], 0).masked_select(torch.tensor([True, False]))
    assert type(y) is TensorDict and y.get("m")._is_lazy
    apply, expected = OPS[op]
    apply(y)
    assert y["m", "c"].flatten().tolist() == [expected] * 4
    assert f["m", "c"].flatten().tolist() == [expected] * 4
    assert y["a"].flatten().tolist() == [expected] * 3  # (a copy: masked_select read it)
    assert f["a"].tolist() == [2.0] * 3


def test_a_file_set_in_a_tensordict_is_written(tmp_path: Path) -> None:
    f = PersistentTensorDict.from_dict(data(2.0), tmp_path / "f.h5")
    y = TensorDict({"f": f, "b": torch.ones(2)}, [])
    y.mul_(3)
    assert f["m", "c"].flatten().tolist() == [6.0] * 4
    assert f["a"].tolist() == [6.0] * 3
    assert y["b"].tolist() == [3.0, 3.0]


def test_a_refused_write_leaves_the_nested_file_as_it_was(tmp_path: Path) -> None:
    f = PersistentTensorDict.from_dict(data(2.0), tmp_path / "f.h5")
    y = TensorDict({"f": f, "i": torch.ones(2, dtype=torch.int64)}, [])
    with pytest.raises(tclass.errors.InPlaceWriteError):
        y.mul_(1.5)  # the int tensor cannot hold the float result: nothing written
    assert f["a"].tolist() == [2.0] * 3


def test_a_read_only_nested_file_refuses_before_anything_is_written(tmp_path: Path) -> None:
    PersistentTensorDict.from_dict(data(2.0), tmp_path / "f.h5").close()
    f = PersistentTensorDict.from_h5(tmp_path / "f.h5")  # mode="r"
    y = TensorDict({"f": f, "b": torch.ones(2)}, [])
    with pytest.raises(tclass.errors.ReadOnlyFileError):
        y.mul_(3)
    assert y["b"].tolist() == [1.0, 1.0] and f["a"].tolist() == [2.0] * 3
