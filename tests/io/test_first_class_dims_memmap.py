"""A collection indexed with first-class dims (``functorch.dim.dims()``) holds
``functorch.dim`` tensors, which are not ``torch.Tensor`` instances: ``is_memmap()`` and
``is_shared()`` ask the memory they read (a view of the same memory, as the rows of a
slice are), where ``is_memmap()`` raised ``TypeError`` and ``is_shared()`` torch's
``NotImplementedError`` (the peer refuses to index a memory-mapped collection so;
``is_memmap()`` of a plain one answers False in both)."""

from __future__ import annotations

from pathlib import Path

import functorch.dim as ftdim
import torch

from tclass import TensorDict


def _td() -> TensorDict:
    return TensorDict({"a": torch.zeros(3, 4), "n": {"b": torch.ones(3, 4, 2)}}, [3, 4])


def test_a_memory_mapped_collection_indexed_with_first_class_dims_is_memmap(
    tmp_path: Path,
) -> None:
    td = _td().memmap_(tmp_path / "m")
    i, j = ftdim.dims(2)
    assert td[i].is_memmap() and td[i, j].is_memmap() and td[0].is_memmap()
    assert not td[i].is_shared()  # a file is not shared memory, as for td[0]
    assert td[i].saved_path is None and td[0].saved_path is None


def test_a_collection_in_memory_indexed_with_first_class_dims() -> None:
    i = ftdim.dims(1)
    td = _td()
    assert not td[i].is_memmap() and not td[i].is_shared()
    shared = _td().share_memory_()
    assert shared[i].is_shared() and shared[0].is_shared()
