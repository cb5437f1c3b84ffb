"""The tensor-like introspection API code written for tensors also calls on
TensorDicts: ``shape``/``size()``/``dim()``/``ndimension()``/``numel()``, ``batch_dims``,
``device``, ``is_empty``, ``len``, ``bool`` errors, ``get_item_shape``, ``entry_class``,
``is_tensor_collection``.
"""

import torch

from compat.lib import TensorDict, is_tensor_collection, tensorclass


@tensorclass
class Rec:
    x: torch.Tensor


def main() -> None:
    td = TensorDict({"a": torch.zeros(2, 3, 4), "n": {"b": torch.zeros(2, 3)}}, [2, 3])
    assert td.shape == torch.Size([2, 3]) == td.batch_size
    assert td.size() == torch.Size([2, 3])
    assert td.size(0) == 2 and td.size(-1) == 3
    assert td.dim() == 2 and td.ndimension() == 2 and td.ndim == 2
    assert td.numel() == 6
    assert len(td) == 2
    assert td.get_item_shape("a") == torch.Size([2, 3, 4])
    assert td.entry_class("n") is TensorDict
    assert td.entry_class("a") is torch.Tensor
    assert is_tensor_collection(td) and is_tensor_collection(Rec)
    assert is_tensor_collection(Rec(x=torch.zeros(1), batch_size=[1]))
    assert not is_tensor_collection(torch.zeros(1))
    assert not td.is_empty()
    assert TensorDict({}, [2]).is_empty()
    try:
        bool(td)
    except (RuntimeError, ValueError):
        pass
    else:
        raise AssertionError("bool() of a TensorDict must raise")
    assert td.device is None
    assert TensorDict({}, [], device="cpu").device == torch.device("cpu")
    assert td.batch_dims == 2
    assert td[0].batch_dims == 1
    assert td.is_locked is False
