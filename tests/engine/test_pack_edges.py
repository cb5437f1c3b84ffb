"""``pack`` at its edges (fz27e, the differential family ``features``): a collection
without tensors packs into an empty tensor of its batch size, and leaves over no
rows pack by their feature shapes, as the peer's ``pack``."""

from __future__ import annotations

import torch

from tclass import TensorDict


def test_pack_of_no_tensors_is_an_empty_float_tensor_of_the_batch_size() -> None:
    td = TensorDict({}, batch_size=[3, 1, 3])
    flat, layout = td.pack()
    assert flat.shape == (3, 1, 3, 0) and flat.dtype == torch.float32
    first, _ = td.pack(0)
    assert first.shape == (0, 3, 1, 3)
    assert layout.keys == () and layout.numel == 0


def test_pack_over_no_rows_counts_each_leafs_columns_from_its_shape() -> None:
    td = TensorDict({"b": torch.zeros(1, 0, 2, 1), "c": torch.zeros(1, 0, 3)}, batch_size=[1, 0])
    flat, layout = td.pack()
    assert flat.shape == (1, 0, 5) and layout.numel == 5
    along_rows, _ = td.pack(0)
    assert along_rows.shape == (5, 1, 0)
    back = layout.unpack(flat)
    assert back["b"].shape == (1, 0, 2, 1) and back["c"].shape == (1, 0, 3)
