"""``torch.vmap`` returning an ``UnbatchedTensor``: the tensor itself comes back, its
batch size gaining the mapped dim (as the peer's vmap); other outputs are torch's."""

from __future__ import annotations

import torch

from tclass import TensorDict, UnbatchedTensor


def _td(data: torch.Tensor) -> TensorDict:
    return TensorDict(a=torch.randn(4, 3, 5), unbatched=UnbatchedTensor(data), batch_size=[4, 3])


def test_an_unbatched_output_is_the_tensor_with_the_mapped_dim_in_its_batch_size() -> None:
    data = torch.randn(7, 11)
    result = torch.vmap(lambda x: x["unbatched"])(_td(data))
    assert type(result) is UnbatchedTensor
    assert result.data_ptr() == data.data_ptr() and result.shape == (7, 11)
    assert result.batch_size == (4, 3)
    assert torch.equal(result.as_tensor(), data)


def test_out_dims_places_the_mapped_dim_and_nested_vmaps_add_both() -> None:
    data = torch.randn(7, 11)
    moved = torch.vmap(lambda x: x["unbatched"], out_dims=1)(_td(data))
    assert moved.batch_size == (3, 4) and moved.shape == (7, 11)
    nested = torch.vmap(torch.vmap(lambda x: x["unbatched"]))(_td(data))
    assert type(nested) is UnbatchedTensor and nested.batch_size == (4, 3)


def test_math_on_it_stays_unbatched_and_other_outputs_are_torchs() -> None:
    data = torch.randn(7, 11)
    shifted, a = torch.vmap(lambda x: (x["unbatched"] + 1, x["a"] * 2))(_td(data))
    assert type(shifted) is UnbatchedTensor and shifted.batch_size == (4, 3)
    assert torch.equal(shifted.as_tensor(), data + 1)
    assert type(a) is torch.Tensor and a.shape == (4, 3, 5)
    plain = torch.vmap(lambda t: t + 1)(torch.zeros(4, 2))
    assert type(plain) is torch.Tensor and torch.equal(plain, torch.ones(4, 2))
