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


def _uint64_written(lib: Any, index: Any) -> tuple[list[Any], list[Any]]:
    """``stack[index] = value`` into a lazy stack of uint64 tensors and a Python value,
    ``index`` one list and ``None`` items (fuzz program 15,500,473 of
    methods,index,shape,combine ``--length 8``): torch has no uint64 ``index_put``."""
    members = [
        lib.TensorDict(a=(torch.arange(6).reshape(2, 3) + 10 * i).to(torch.uint64), s="x")
        for i in range(3)
    ]
    for member in members:
        member.batch_size = [2]
    stack = lib.lazy_stack(members, 0)
    value = stack[index].clone()
    value["a"] = (torch.arange(value["a"].numel()) + 100).reshape(value["a"].shape)
    value["a"] = value["a"].to(torch.uint64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        stack[index] = value
    kinds = [type(m.get("s")).__name__ for m in stack.tensordicts]
    return [m["a"].tolist() for m in stack.tensordicts], [m["s"] for m in stack.tensordicts] + kinds


UINT64_INDICES = [
    ([2, 0, 0], None),  # member 0 picked twice: the last part wins
    ([0, 2, 0], None),
    (None, [1, 0]),
    ([1], None, slice(None)),
    (torch.tensor([True, False, True]), None),
]


@pytest.mark.parametrize("index", UINT64_INDICES)
def test_a_list_and_none_write_whole_uint64_members_as_the_peer(index: Any) -> None:
    tensors, values = _uint64_written(tclass, index)
    assert values == ["x"] * 3 + ["NonTensorData"] * 3  # one value each, kept
    assert any(row[0][0] >= 100 for row in tensors)  # written
    peer = pytest.importorskip("tensordict")
    assert (tensors, values) == _uint64_written(peer, index)


def test_a_member_picked_twice_takes_its_last_part() -> None:
    tensors, _ = _uint64_written(tclass, ([2, 0, 0], None))
    assert tensors[0] == [[112, 113, 114], [115, 116, 117]]  # the third part (rows 12..17)
    assert tensors[2] == [[100, 101, 102], [103, 104, 105]]
