"""``lazy[idx] = rec`` where the index picks whole members: each member is updated in
place by its part, as the peer's, so a Python value stays one value (an indexed write
``member[...] = rec`` stores it per element). Checked against the peer when installed."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch

import tclass


def _written(lib: Any, index: Any, value_batch: list[int]) -> list[Any]:
    @lib.tensorclass
    class Rec:
        x: torch.Tensor
        n: int

    def rec(n: int, batch: list[int]) -> Any:
        return Rec(x=torch.zeros(batch), n=n, batch_size=batch)

    stack = lib.lazy_stack([rec(i, [2]) for i in range(3)])
    if value_batch[:1] == [2] and len(value_batch) == 2:
        value = torch.stack([rec(9, [2]), rec(9, [2])])
    else:
        value = rec(9, value_batch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        stack[index] = value
    return [stack[i].n for i in range(3)]


CASES = [
    (0, [2], [9, 1, 2]),
    (-1, [2], [0, 1, 9]),
    (slice(0, 2), [2, 2], [9, 9, 2]),
    (torch.tensor([0, 2]), [2, 2], [9, 1, 9]),
    ((0, slice(None)), [2], [9, 1, 2]),
]


@pytest.mark.parametrize(("index", "value_batch", "expected"), CASES)
def test_whole_member_write_keeps_python_value(
    index: Any, value_batch: list[int], expected: list[int]
) -> None:
    assert _written(tclass, index, value_batch) == expected


def test_element_write_still_per_element() -> None:
    # Index inside the members: each member's value is now per element, as the peer's.
    got = _written(tclass, (slice(None), 0), [3])
    assert [list(v) for v in got] == [[9, 0], [9, 1], [9, 2]]


def test_tensordict_member_keeps_non_tensor_data() -> None:
    stack = tclass.lazy_stack(
        [
            tclass.TensorDict(
                {"x": torch.ones(2), "n": tclass.NonTensorData(i, batch_size=[2])}, [2]
            )
            for i in range(2)
        ]
    )
    stack[0] = tclass.TensorDict(
        {"x": torch.zeros(2), "n": tclass.NonTensorData(9, batch_size=[2])}, [2]
    )
    assert stack[0]["n"] == 9 and isinstance(stack[0].get("n"), tclass.NonTensorData)
    assert stack[0]["x"].tolist() == [0.0, 0.0] and stack[1]["n"] == 1


@pytest.mark.parametrize(("index", "value_batch", "expected"), CASES)
def test_matches_peer(index: Any, value_batch: list[int], expected: list[int]) -> None:
    peer = pytest.importorskip("tensordict")
    assert _written(peer, index, value_batch) == expected
