"""Batch sizes, indices and devices as a new user gets them wrong (nu24d): a ``TclassError`` that is
also the builtin the peer raises, saying what is wrong and how to fix it."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorDict
from tclass.errors import BatchSizeError, BatchSizeTypeError, DeviceError, DimError, IndexTypeError


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


# nu26c: a boolean mask of the wrong shape, or an index tensor of a float dtype, named as
# such (the message used to say "out of range" and quote a leaf's shape and the whole mask).
@pytest.mark.parametrize(
    ("batch", "index", "said"),
    [
        ([2, 3], torch.ones(3, 2, dtype=torch.bool), "mask has shape [3, 2] but batch dims 0..1"),
        ([2, 3], (slice(None), torch.tensor([True, False])), "shape [2] but batch dim 1"),
        ([2, 3], (Ellipsis, torch.tensor([True, False])), "shape [2] but batch dim 1"),
        ([4], torch.tensor([True, False]), "mask has shape [2] but batch dim 0"),
    ],
)
def test_a_mask_of_the_wrong_shape_names_the_dims_it_covers(
    batch: list[int], index: object, said: str
) -> None:
    td = TensorDict({"a": torch.zeros(*batch, 5)}, batch)
    with pytest.raises(DimError) as info:
        td[index]
    assert isinstance(info.value, IndexError)  # the peer's (torch's) IndexError
    assert said in str(info.value)
    assert "[5]" not in str(info.value) and "out of range" not in str(info.value)
    assert "a boolean index must match the batch dims it covers" in str(info.value)


def test_a_mask_of_the_wrong_shape_in_a_write_is_an_index_error() -> None:
    """``td[mask] = other`` with a mask too short: the peer's ``IndexError`` about the
    mask (it was a ``BatchSizeError`` quoting torch's memory-overlap message)."""
    td = TensorDict({"a": torch.zeros(4, 3)}, [4])
    for value in (td[:1], {"a": torch.ones(1, 3)}, torch.ones(3), 1.0):
        with pytest.raises(DimError, match=r"mask has shape \[2\] but batch dim 0") as info:
            td[torch.tensor([True, False])] = value
        assert isinstance(info.value, IndexError)
    assert td["a"].sum().item() == 0.0  # nothing written


def test_an_index_tensor_of_floats_is_an_index_type_error() -> None:
    td = _td()
    with pytest.raises(IndexTypeError, match="Invalid index tensor") as info:
        td[torch.tensor([0.0, 1.0])]
    assert isinstance(info.value, IndexError)
    assert "must be long, int, byte or bool tensors" in str(info.value)
    with pytest.raises(DimError, match=r"index <int64 tensor of shape \[20\]> is out of range"):
        td[torch.arange(20)]  # a long index shown by its dtype and shape
