"""``new_tensor`` and the ``new_*`` ops: the names and Python values of their results
(lead35b, against the peer)."""

from __future__ import annotations

import warnings

import pytest
import torch

from tclass import NonTensorData, NonTensorStack, TensorDict


def _new_tensor(td: TensorDict, data: object) -> TensorDict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's copy-construct warning
        return td.new_tensor(data)


def test_new_tensor_leaves_its_batch_dims_unnamed_nested_ones_too() -> None:
    td = TensorDict(
        {"a": torch.zeros(2, 3), "n": TensorDict({"b": torch.ones(2, 3)}, [2, 3])},
        batch_size=[2, 3],
        names=["i", "j"],
    )
    out = _new_tensor(td, td.clone())
    assert out.batch_size == (2, 3)
    assert out.names == [None, None]
    assert out.get("n").names == [None, None]
    assert torch.equal(out["n", "b"], torch.ones(2, 3))
    assert _new_tensor(td, [[1, 2, 3], [4, 5, 6]]).names == [None, None]


def test_new_tensor_of_a_stack_of_values_over_another_batch_size() -> None:
    td = TensorDict({"a": torch.zeros(2)}, batch_size=[2])
    td["v"] = NonTensorStack("a", "b")
    out = _new_tensor(td, [1.0, 2.0, 3.0])  # a value per element cannot follow: new_empty's
    assert out.batch_size == (3,)
    assert out.get("v").batch_size == (3,)
    assert out.get("v").tolist() == td.new_empty(3).get("v").tolist() == ["a", "a", "a"]
    shared = TensorDict({"a": torch.zeros(2), "v": "x"}, batch_size=[2])
    kept = _new_tensor(shared, [1.0, 2.0, 3.0]).get("v")
    assert isinstance(kept, NonTensorData) and kept.data == "x" and kept.batch_size == (3,)


@pytest.mark.parametrize("size", [(), (4,), (1, 2)])
def test_new_empty_names_fit_the_batch(size: tuple[int, ...]) -> None:
    td = TensorDict({"a": torch.zeros(2, 1)}, batch_size=[2, 1], names=[None, "j"])
    out = td.new_empty(size)
    assert out.batch_size == size
    assert out.names == ([None] * (len(size) - 1) + ["j"] if size else [])
