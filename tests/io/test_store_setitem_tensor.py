"""``ptd[idx] = tensor`` into a file (``PersistentTensorDict`` and its views, on each
backend whose library is installed): each array takes the tensor as torch writes
``array[idx] = tensor`` (lined up with the last dims of its selection), as the peer's
TensorDict writes it (issue 27); every array is checked before any is written. Every
check reads the file back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tclass import PersistentTensorDict, TensorDict
from tclass.errors import BatchSizeError, InPlaceWriteError

LIBRARIES = {"h5": "h5py", "zarr": "zarr"}
V3 = torch.tensor([10.0, 20.0, 30.0])


@pytest.fixture(params=sorted(LIBRARIES))
def ptd(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PersistentTensorDict]:
    pytest.importorskip(LIBRARIES[request.param])
    data = TensorDict({"a": torch.zeros(4, 3, 3), "n": {"b": torch.zeros(4, 3, 2)}}, [4, 3])
    backend = str(request.param)
    written = PersistentTensorDict.from_dict(data, tmp_path / f"f.{backend}", backend=backend)
    yield written
    written.close()


def test_each_array_takes_the_tensor_as_torch_writes_it(ptd: PersistentTensorDict) -> None:
    ptd[0] = V3[..., None]  # a: [3, 3], n.b: [3, 2] selected: [3, 1] fits both
    assert ptd["a"][0].tolist() == [[10.0] * 3, [20.0] * 3, [30.0] * 3]
    assert ptd["n", "b"][0].tolist() == [[10.0] * 2, [20.0] * 2, [30.0] * 2]
    ptd[1:3] = torch.tensor([1.0, 2.0])[:, None, None]  # a dim of 2 rows, lined up on the right
    assert ptd["a"][1:3].tolist() == [[[1.0] * 3] * 3, [[2.0] * 3] * 3]
    ptd[torch.tensor([False, False, False, True])] = torch.tensor(5.0)
    assert ptd["a"][3].eq(5).all() and ptd["n", "b"][3].eq(5).all()


@pytest.mark.parametrize("through_a_view", [False, True])
def test_a_tensor_one_array_refuses_writes_none(
    ptd: PersistentTensorDict, through_a_view: bool
) -> None:
    """``[3]`` fits a's selection [3, 3], not n.b's [3, 2]: the peer's TensorDict raises
    (a RuntimeError); the file raises before writing a, and names n.b."""
    target = ptd[1:] if through_a_view else ptd
    with pytest.raises(BatchSizeError, match=r"'n', 'b'.*\[3, 2\]") as info:
        target[0] = V3
    assert isinstance(info.value, RuntimeError)
    assert ptd["a"].eq(0).all() and ptd["n", "b"].eq(0).all()
    target = ptd[1:] if through_a_view else ptd
    target[0] = V3[..., None]
    row = 1 if through_a_view else 0
    assert ptd["a"][row].tolist() == [[10.0] * 3, [20.0] * 3, [30.0] * 3]


@pytest.mark.parametrize("through_a_view", [False, True])
@pytest.mark.parametrize("value", [[1.0, 2.0, 3.0], np.array([1.0, 2.0, 3.0])], ids=type)
def test_a_list_or_array_one_array_refuses_writes_none(
    ptd: PersistentTensorDict, through_a_view: bool, value: Any
) -> None:
    """A list or a numpy array is made a tensor once, then checked as a tensor is: [3]
    fits a's selection [3, 3], not n.b's [3, 2], and the file is left as it was (it
    wrote ``a`` before n.b refused it). The peer's file refuses a list (a TypeError)."""
    target = ptd[1:] if through_a_view else ptd
    with pytest.raises(BatchSizeError, match=r"'n', 'b'.*\[3, 2\]"):
        target[0] = value
    assert ptd["a"].eq(0).all() and ptd["n", "b"].eq(0).all()
    del ptd["n"]
    target = ptd[1:] if through_a_view else ptd
    target[0] = value
    assert ptd["a"][1 if through_a_view else 0].tolist() == [[1.0, 2.0, 3.0]] * 3


@pytest.mark.parametrize("through_a_view", [False, True])
@pytest.mark.parametrize("number", [300, float("nan"), 1 + 2j], ids=repr)
def test_a_number_one_dtype_refuses_writes_none(
    ptd: PersistentTensorDict, through_a_view: bool, number: complex
) -> None:
    """As torch (and the peer's file, which raises a RuntimeError and writes nothing): a
    number an array's dtype cannot hold is refused, where the file wrote 300 into an
    ``int8`` array as 44 (and ``nan`` as 0, a complex as its real part)."""
    ptd["n", "c"] = torch.zeros(4, 3, dtype=torch.int8)
    target = ptd[1:] if through_a_view else ptd
    with pytest.raises(InPlaceWriteError, match=r"nothing was written") as info:
        target[0] = number
    assert isinstance(info.value, RuntimeError)
    assert ptd["a"].eq(0).all() and ptd["n", "c"].eq(0).all() and ptd["n", "b"].eq(0).all()
    target[0] = 100
    assert ptd["n", "c"][1 if through_a_view else 0].eq(100).all()
