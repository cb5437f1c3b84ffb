"""Batch sizes, indices and devices as a new user gets them wrong (nu24d): a ``TclassError`` that is
also the builtin the peer raises, saying what is wrong and how to fix it."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorDict
from tclass.errors import BatchSizeError, BatchSizeTypeError, DeviceError, IndexTypeError


def _td() -> TensorDict:
    return TensorDict({"a": torch.zeros(4, 3), "b": torch.arange(4)}, [4])


@pytest.mark.parametrize("index", [(0, "a"), (None, "a"), (slice(None), "b")])
def test_a_key_after_batch_indices_says_how_to_reach_the_entry(index: tuple[object, ...]) -> None:
    key = index[1]
    with pytest.raises(IndexTypeError, match=rf"{key!r} is a key") as read:
        _td()[index]
    assert isinstance(read.value, TypeError)  # torch's (and so the peer's) TypeError
    assert f"td[{key!r}]" in str(read.value)
    td = _td()
    with pytest.raises(IndexTypeError, match=rf"td.set_at_\({key!r}, value"):
        td[index] = 1
    assert td["b"].tolist() == [0, 1, 2, 3]
    assert _td()["a"].shape == (4, 3)


@pytest.mark.parametrize("size", ["x", [3, None], [3.0], torch.zeros(1)])
def test_a_batch_size_not_made_of_ints_is_a_type_error(size: object) -> None:
    td = _td()
    with pytest.raises(BatchSizeTypeError, match="invalid batch_size") as info:
        td.batch_size = size  # type: ignore[assignment]
    assert isinstance(info.value, (TypeError, ValueError))  # the peer: TypeError / ValueError
    assert td.batch_size == (4,)
    with pytest.raises(BatchSizeTypeError):
        TensorDict({"a": torch.zeros(3)}, batch_size=size)  # type: ignore[arg-type]


def test_a_negative_batch_size_stays_a_value_error() -> None:
    with pytest.raises(BatchSizeError) as info:
        _td().batch_size = [-1]
    assert not isinstance(info.value, BatchSizeTypeError)


@pytest.mark.parametrize("args", [("cpu", "float32"), ("float32",)])
def test_a_dtype_given_as_a_device_string_says_how_to_give_it(args: tuple[str, ...]) -> None:
    td = _td()
    with pytest.raises(DeviceError, match=r"'float32' names a dtype: give it as torch.float32"):
        td.to(*args)
    assert td.to(torch.float64)["b"].dtype == torch.float64
