"""A nested collection holding only Python values (no tensor at any depth) on one side of
a binary operation: it needs no counterpart in the other collection, as a Python value at
the top level needs none. The left one's is kept in the result, the right one's is not
read, as the peer's math gives them (program 15,971,792 of methods,features,entries,records
--length 12: ``x.pow(x.select())`` of ``{'n': {'s': value}}``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import errors


def _with_values() -> tclass.TensorDict:
    return tclass.TensorDict(
        {
            "n": {"s": tclass.NonTensorData(2, batch_size=[1, 3]), "m": {"q": "label"}},
            "a": torch.ones(1, 3) * 2,
        },
        batch_size=[1, 3],
    )


def _tensors_only() -> tclass.TensorDict:
    return tclass.TensorDict({"a": torch.ones(1, 3) * 3}, batch_size=[1, 3])


CALLS: list[Any] = [
    pytest.param(lambda x, y: x.pow(y), id="pow"),
    pytest.param(lambda x, y: x + y, id="+"),
    pytest.param(lambda x, y: x.mul(y), id="mul"),
    pytest.param(lambda x, y: x.maximum(y), id="maximum"),
    pytest.param(lambda x, y: x.lerp(y, 0.5), id="lerp"),
    pytest.param(lambda x, y: x.where(torch.ones(1, 3, dtype=torch.bool), y), id="where"),
    pytest.param(lambda x, y: x.mul_(y), id="mul_"),
    pytest.param(lambda x, y: x.__iadd__(y), id="+="),
]


@pytest.mark.parametrize("call", CALLS)
def test_left_group_of_values_is_kept(call: Callable[[Any, Any], Any]) -> None:
    result = call(_with_values(), _tensors_only())
    assert set(result.keys(True)) == {"a", "n", ("n", "s"), ("n", "m"), ("n", "m", "q")}
    assert result.get(("n", "s")).data == 2
    assert result.get(("n", "m", "q")).data == "label"
    assert result.get("a").shape == (1, 3)


def test_right_group_of_values_is_not_read() -> None:
    result = _tensors_only().pow(_with_values())
    assert list(result.keys(True)) == ["a"]
    assert torch.equal(result.get("a"), torch.full((1, 3), 9.0))


def test_empty_operand() -> None:
    x = _with_values().exclude("a")
    result = x.pow(x.select())
    assert result.get(("n", "s")).data == 2


def test_a_group_holding_a_tensor_still_needs_its_counterpart() -> None:
    x = _with_values()
    x.set(("n", "t"), torch.zeros(1, 3))
    with pytest.raises(errors.KeyNotFoundError, match=r"only in the left one: \['n'\]"):
        x.pow(_tensors_only())
    with pytest.raises(errors.KeyNotFoundError, match=r"only in the right one: \['n'\]"):
        _tensors_only().pow(x)
