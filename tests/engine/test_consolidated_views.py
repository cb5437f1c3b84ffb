"""The leaves of a consolidated collection over its buffer (``leaf_views`` in
tclass/_engine/_consolidate_views.py, the leaves kept by ``from_consolidated`` in
_consolidate.py): each run of at least 3 leaves of one dtype and shape that follow each
other is cut from the buffer by one split, any other leaf is one view of it; either way
each leaf is its values, row-major, at its offset in the buffer, and takes in-place
writes (under autograd too) that reach the buffer. ``from_consolidated`` keeps the views
as the collection's leaves when a walk of the tree meets them in their order, and walks
the tree otherwise."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import NonTensorData, TensorDict, lazy_stack
from tclass._core._batch import row_major_strides


def _leaves() -> dict[str, torch.Tensor]:
    """Runs of like leaves, and leaves that break a run (another dtype, other trailing
    dims, no dims, no elements, padding after a leaf of 3 bytes)."""
    generator = torch.Generator().manual_seed(0)
    return {
        "a": torch.randn(4, 3, generator=generator),
        "b": torch.randn(4, 3, generator=generator),
        "b2": torch.randn(4, 3, generator=generator),  # a, b, b2: a run
        "c": torch.randn(6, 3, generator=generator),  # same trailing dims, other rows
        "d": torch.randn(4, 2, generator=generator),
        "scalar": torch.tensor(2.5),
        "e": torch.randn(4, 2, generator=generator),
        "none": torch.empty(4, 0),
        "f": torch.randn(4, 2, generator=generator),
        "odd": torch.arange(3, dtype=torch.uint8),  # 3 bytes: 13 of padding after it
        "odd2": torch.arange(3, 6, dtype=torch.uint8),
        "g": torch.arange(4),
        "h": torch.arange(4, 8),
        "i": torch.arange(8, 12),  # g, h, i: a run of another dtype
        "flags": torch.tensor([True, False, True, True]),
    }


def _file(tmp_path: Path) -> Any:
    path = str(tmp_path / "c.bin")
    TensorDict(_leaves(), []).consolidate(filename=path)
    return TensorDict.from_consolidated(path)


def _memory(tmp_path: Path) -> Any:
    return TensorDict(_leaves(), []).consolidate()


READS = [pytest.param(_file, id="from_consolidated"), pytest.param(_memory, id="consolidate")]


@pytest.mark.parametrize("read", READS)
def test_each_leaf_is_its_values_row_major_in_the_buffer(
    read: Callable[[Path], Any], tmp_path: Path
) -> None:
    result = read(tmp_path)
    buffer = result._consolidated["storage"]
    start, end = buffer.data_ptr(), buffer.data_ptr() + buffer.numel()
    for key, value in _leaves().items():
        got = result[key]
        assert got.dtype == value.dtype and torch.equal(got, value), key
        assert got.stride() == row_major_strides(value.shape), key
        assert got.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr(), key
        if value.numel():  # (torch gives a tensor of no elements no address)
            assert start <= got.data_ptr() < end and got.data_ptr() % 16 == 0, key
    assert result.is_consolidated()
    # (the leaves of a run are pieces of a split, no views; the others views of the buffer)
    assert not result["b"]._is_view() and not result["h"]._is_view()
    assert result["d"]._is_view() and result["odd2"]._is_view()


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize("key", ["b", "scalar", "odd2", "h"])
def test_an_in_place_write_reaches_the_buffer_under_autograd_too(
    read: Callable[[Path], Any], key: str, tmp_path: Path
) -> None:
    result = read(tmp_path)
    buffer = result._consolidated["storage"]
    leaf = result[key]
    if leaf.is_floating_point():
        source = torch.full_like(leaf, 7.0).requires_grad_()
        leaf.copy_(source)  # a leaf of a run (b) or a view of its own (scalar)
        leaf.sum().backward()
        assert source.grad is not None and torch.equal(source.grad, torch.ones_like(leaf))
    else:
        leaf.fill_(7)
    rebuilt = tclass.from_consolidated(buffer)
    assert torch.equal(rebuilt[key].detach(), torch.full_like(leaf, 7).detach())
    assert result.is_consolidated()


def test_a_grad_write_into_a_leaf_of_a_run_leaves_its_neighbours_alone(tmp_path: Path) -> None:
    result = _file(tmp_path)
    result["b"].copy_(torch.ones(4, 3, requires_grad=True))
    assert result["b"].requires_grad
    assert not any(result[key].requires_grad for key in ("a", "b2", "c", "d"))


def _tree() -> TensorDict:
    inner = TensorDict({"x": torch.arange(6.0).reshape(3, 2), "v": NonTensorData("s")}, [3])
    stack = lazy_stack(
        [TensorDict({"y": torch.ones(2)}, []), TensorDict({"y": torch.zeros(2)}, [])]
    )
    return TensorDict(
        {"a": torch.arange(3.0), "inner": inner, "stack": stack, "z": torch.arange(3)}, []
    )


def _jagged_tree() -> TensorDict:
    jagged = torch.nested.nested_tensor([torch.arange(2.0), torch.arange(3.0)], layout=torch.jagged)
    return TensorDict({"a": torch.arange(3.0), "j": jagged, "z": torch.arange(2)}, [])


@pytest.mark.parametrize("made", [_tree, _jagged_tree], ids=["tree", "jagged"])
def test_a_loaded_file_is_consolidated_until_a_leaf_is_replaced(
    made: Callable[[], TensorDict], tmp_path: Path
) -> None:
    path = str(tmp_path / "c.bin")
    made().consolidate(filename=path)
    result = TensorDict.from_consolidated(path)
    assert result.is_consolidated()
    assert torch.equal(result["a"], torch.arange(3.0))
    result["a"] = torch.zeros(3)
    assert not result.is_consolidated()


def _reordered_buffer() -> torch.Tensor:
    """A consolidated buffer whose description lists its two leaves in the other order
    (entry "a" at position 1, "b" at 0): a walk meets the views out of their order."""
    buffer = TensorDict({"a": torch.arange(4.0), "b": torch.arange(4.0, 8.0)}, []).consolidate()
    raw = bytes(buffer._consolidated["storage"].numpy())
    (length,) = struct.unpack("<Q", raw[-8:])
    description = json.loads(raw[-8 - length : -8])
    description["tree"]["entries"] = {"a": 1, "b": 0}
    trailer = json.dumps(description).encode()
    data = raw[: -8 - length] + trailer + struct.pack("<Q", len(trailer))
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def test_a_description_out_of_order_still_gives_its_leaves() -> None:
    result = tclass.from_consolidated(_reordered_buffer())
    assert torch.equal(result["a"], torch.arange(4.0, 8.0))
    assert torch.equal(result["b"], torch.arange(4.0))
    assert result.is_consolidated()
    result["a"] = torch.zeros(4)
    assert not result.is_consolidated()
