"""``numpy()`` of a collection holding Python-value nodes whose values hold tensors
(session 31, og31h): the tensors inside the values' lists, tuples and dicts become numpy
arrays, as the peer's (they stayed torch tensors)."""

from __future__ import annotations

import numpy as np
import torch

from tclass import NonTensorData, TensorDict


def test_a_value_stack_written_back_from_to_dict_gives_arrays() -> None:
    td = TensorDict({"s": NonTensorData(-1, batch_size=[2])}, [2])
    td = torch.stack([td, td], -1)
    td[0] = td[0].to_dict()  # the row's values become one tensor per element
    out = td.numpy()["s"]
    assert isinstance(out[0][0], np.ndarray) and out[0][0].tolist() == [-1, -1]
    assert out[1] == [-1, -1]  # plain values stay as they are


def test_tensors_nested_in_a_value_become_arrays() -> None:
    value = [torch.ones(2), "a", {"k": torch.zeros(1)}, (torch.ones(1), [torch.ones(1)])]
    out = TensorDict({"s": NonTensorData(value)}, []).numpy()["s"]
    assert isinstance(out, list) and isinstance(out[0], np.ndarray)
    assert out[1] == "a" and isinstance(out[2]["k"], np.ndarray)
    assert isinstance(out[3], tuple) and isinstance(out[3][1][0], np.ndarray)
    assert isinstance(value[0], torch.Tensor)  # the stored value itself is unchanged


def test_a_value_that_is_a_tensor_still_gives_its_array() -> None:
    out = TensorDict({"s": NonTensorData(torch.ones(2))}, []).numpy()["s"]
    assert isinstance(out, np.ndarray)
