"""``lazy[index] = dict_or_collection`` into a lazy stack whose members differ (a feature
dim, a dtype, a lock): every member's part is checked before any member is written
(``_engine/_part_checks.py``), so a part one member refuses leaves every member as
it was (the peer, tensordict 0.15.3, writes the members before it and then raises); the
error names the member, the key and both shapes. What writes today still writes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from tclass import LazyStackedTensorDict, TensorDict, lazy_stack
from tclass.errors import BatchSizeError, InPlaceWriteError, LockedError


def _uneven(dim: int = 0) -> LazyStackedTensorDict:
    """Two members of batch [3] whose entry ``a`` differs in its feature dim."""
    members = [
        TensorDict(a=torch.zeros(3, 2), batch_size=[3]),
        TensorDict(a=torch.zeros(3, 5), batch_size=[3]),
    ]
    return lazy_stack(members, dim)


def _snapshot(stack: LazyStackedTensorDict) -> list[dict[Any, torch.Tensor]]:
    return [{k: v.clone() for k, v in m.items(True, True)} for m in stack.tensordicts]


def _unchanged(stack: LazyStackedTensorDict, before: list[dict[Any, torch.Tensor]]) -> None:
    after = _snapshot(stack)
    assert [sorted(map(str, m)) for m in after] == [sorted(map(str, m)) for m in before]
    for old, new in zip(before, after):
        for key, value in old.items():
            assert torch.equal(new[key], value), key


MASK = torch.tensor([[True, False, False], [True, False, False]])

REFUSED: list[tuple[str, Callable[[], LazyStackedTensorDict], Any, Callable[[], Any], type]] = [
    ("dict", _uneven, (slice(None), 1), lambda: {"a": torch.ones(2, 2)}, BatchSizeError),
    (
        "td",
        _uneven,
        (slice(None), 1),
        lambda: TensorDict(a=torch.ones(2, 2), batch_size=[2]),
        BatchSizeError,
    ),
    ("stack dim 1", lambda: _uneven(1), 1, lambda: {"a": torch.ones(2, 2)}, BatchSizeError),
    ("mask", _uneven, MASK, lambda: {"a": torch.ones(2, 2)}, BatchSizeError),
]


@pytest.mark.parametrize(("name", "make", "index", "value", "error"), REFUSED)
def test_uneven_part_refused_writes_nothing(
    name: str,
    make: Callable[[], LazyStackedTensorDict],
    index: Any,
    value: Callable[[], Any],
    error: type,
) -> None:
    stack = make()
    before = _snapshot(stack)
    with pytest.raises(error, match=r"'a' of member 1 .*shape \[3, 5\].*nothing was written"):
        stack[index] = value()
    assert isinstance(stack, LazyStackedTensorDict)
    _unchanged(stack, before)


def test_second_key_refused_writes_neither_key() -> None:
    members = [
        TensorDict(a=torch.zeros(3, 2), b=torch.zeros(3, 2), batch_size=[3]),
        TensorDict(a=torch.zeros(3, 2), b=torch.zeros(3, 5), batch_size=[3]),
    ]
    stack = lazy_stack(members, 0)
    before = _snapshot(stack)
    with pytest.raises(BatchSizeError, match=r"shape \[2\] into 'b' of member 1"):
        stack[:, 1] = {"a": torch.ones(2, 2), "b": torch.ones(2, 2)}
    _unchanged(stack, before)


def test_nested_key_refused_writes_nothing() -> None:
    members = [
        TensorDict(n=TensorDict(a=torch.zeros(3, 2), batch_size=[3]), batch_size=[3]),
        TensorDict(n=TensorDict(a=torch.zeros(3, 5), batch_size=[3]), batch_size=[3]),
    ]
    stack = lazy_stack(members, 0)
    before = _snapshot(stack)
    with pytest.raises(BatchSizeError, match=r"\('n', 'a'\) of member 1"):
        stack[:, 1] = {"n": {"a": torch.ones(2, 2)}}
    _unchanged(stack, before)


@pytest.mark.parametrize("as_td", [False, True])
def test_dtype_refused_at_advanced_index_writes_nothing(as_td: bool) -> None:
    members = [
        TensorDict(a=torch.zeros(3, 2), batch_size=[3]),
        TensorDict(a=torch.zeros(3, 2, dtype=torch.int64), batch_size=[3]),
    ]
    stack = lazy_stack(members, 0)
    before = _snapshot(stack)
    value: Any = {"a": torch.ones(2, 1, 2)}
    if as_td:
        value = TensorDict(value, batch_size=[2, 1])
    with pytest.raises(InPlaceWriteError, match=r"'a' \(torch.int64, shape \[3, 2\]\) of member 1"):
        stack[:, torch.tensor([1])] = value
    _unchanged(stack, before)


def test_new_key_into_locked_member_writes_nothing() -> None:
    members = [
        TensorDict(a=torch.zeros(3, 2), batch_size=[3]),
        TensorDict(a=torch.zeros(3, 2), batch_size=[3]).lock_(),
    ]
    stack = lazy_stack(members, 0)
    before = _snapshot(stack)
    with pytest.raises(LockedError, match="cannot add 'b' to member 1"):
        stack[:, 1] = {"a": torch.ones(2, 2), "b": torch.ones(2)}
    _unchanged(stack, before)
    assert "b" not in members[0].keys()


def test_writes_every_member_takes_still_write() -> None:
    stack = _uneven()
    stack[:, 1] = {"a": torch.tensor([[1.0], [2.0]])}  # broadcast into each feature dim
    assert torch.equal(stack.tensordicts[0]["a"][1], torch.ones(2))
    assert torch.equal(stack.tensordicts[1]["a"][1], torch.full((5,), 2.0))
    stack[:, 2] = TensorDict(a=torch.full((2, 1), 3.0), batch_size=[2])
    assert stack.tensordicts[0]["a"][2].tolist() == [3.0, 3.0]
    assert stack.tensordicts[1]["a"][2].tolist() == [3.0] * 5
    stack[MASK] = {"a": torch.tensor([[4.0], [5.0]])}
    assert stack.tensordicts[0]["a"][0].tolist() == [4.0, 4.0]
    assert stack.tensordicts[1]["a"][0].tolist() == [5.0] * 5


def test_new_key_and_basic_cast_still_write() -> None:
    members = [
        TensorDict(a=torch.zeros(3, 2), b=torch.zeros(3), batch_size=[3]),
        TensorDict(a=torch.zeros(3, 2, dtype=torch.int64), batch_size=[3]),
    ]
    stack = lazy_stack(members, 0)
    stack[:, 1] = {"a": torch.full((2, 2), 1.5), "b": torch.ones(2)}  # as the peer
    assert members[0]["a"][1].tolist() == [1.5, 1.5]
    assert members[1]["a"][1].tolist() == [1, 1]  # a basic index casts, as torch
    assert members[1]["b"].tolist() == [0.0, 1.0, 0.0]


def test_nested_lazy_member_still_writes() -> None:
    inner = lazy_stack([TensorDict(a=torch.zeros(3, 2), batch_size=[3]) for _ in range(2)], 0)
    outer = lazy_stack(
        [inner, lazy_stack([TensorDict(a=torch.zeros(3, 2), batch_size=[3]) for _ in range(2)], 0)],
        0,
    )
    outer[:, :, 1] = {"a": torch.ones(2, 2, 2)}
    assert all(m["a"][1].tolist() == [1.0, 1.0] for s in outer.tensordicts for m in s.tensordicts)


def test_nested_lazy_member_refusing_writes_no_member() -> None:
    """The second member is a lazy stack whose members differ in ``a``'s feature dim:
    its members are checked before the first member is written."""

    def member(n: int) -> TensorDict:
        return TensorDict(a=torch.zeros(3, n), batch_size=[3])

    outer = lazy_stack(
        [lazy_stack([member(2), member(2)], 0), lazy_stack([member(2), member(5)], 0)], 0
    )
    before = [_snapshot(inner) for inner in outer.tensordicts]
    with pytest.raises(BatchSizeError, match=r"'a' of member 1 .*shape \[3, 5\]"):
        outer[:, :, 1] = {"a": torch.ones(2, 2, 2)}
    for inner, old in zip(outer.tensordicts, before):
        _unchanged(inner, old)


def test_ragged_stack_refused_part_writes_nothing() -> None:
    """Members of batch [3] and [4] (a ragged stack, batch [2, -1]): the write member by
    member checks each one's part first."""
    members = [
        TensorDict(a=torch.zeros(3, 2), batch_size=[3]),
        TensorDict(a=torch.zeros(4, 5), batch_size=[4]),
    ]
    stack = lazy_stack(members, 0)
    before = _snapshot(stack)
    with pytest.raises(BatchSizeError, match=r"'a' of member 1 .*shape \[4, 5\]"):
        stack[:, 1] = {"a": torch.ones(2)}
    _unchanged(stack, before)
    stack[:, 1] = {"a": torch.full((1,), 3.0)}  # every member takes it
    assert members[0]["a"][1].tolist() == [3.0, 3.0]
    assert members[1]["a"][1].tolist() == [3.0] * 5


def _int8_member() -> LazyStackedTensorDict:
    """Member 0 holds ``b`` (and ``n.c``) as int8, member 1 as int64."""
    members = [
        TensorDict(a=torch.zeros(2), b=torch.zeros(2, dtype=torch.int8), batch_size=[2]),
        TensorDict(a=torch.zeros(2), b=torch.zeros(2, dtype=torch.int64), batch_size=[2]),
    ]
    members[0]["n"] = TensorDict(c=torch.zeros(2, dtype=torch.int8), batch_size=[2])
    members[1]["n"] = TensorDict(c=torch.zeros(2, dtype=torch.int64), batch_size=[2])
    return lazy_stack(members)


@pytest.mark.parametrize(
    ("index", "part"),
    [
        (0, {"a": 1.0, "b": 300}),
        ((slice(None), 0), {"a": 1.0, "b": 300}),
        (torch.tensor([1, 0]), {"a": 1.0, "b": 300}),
        ((slice(None), 0), {"a": 1.0, "n": {"c": 300}}),
        ((slice(None), 0), {"a": 1.0, "b": float("nan")}),
        ((slice(None), 1), {"a": 1.0, "b": -1500.0}),
    ],
    ids=["member", "rows", "members", "nested", "nan", "float"],
)
def test_number_a_members_dtype_refuses_writes_nothing(index: Any, part: Any) -> None:
    # torch refuses the number (``int8[0] = 300``: "value cannot be converted"); it was
    # refused after the members' "a" were written (inv21a)
    with pytest.raises(RuntimeError, match="cannot be converted"):
        torch.zeros(2, dtype=torch.int8)[0] = 300
    stack = _int8_member()
    before = _snapshot(stack)
    with pytest.raises(InPlaceWriteError, match="int8") as info:
        stack[index] = part
    assert isinstance(info.value, RuntimeError) and "nothing was written" in str(info.value)
    _unchanged(stack, before)


def test_number_every_member_holds_is_written() -> None:
    stack = _int8_member()
    stack[:, 0] = {"a": 1.0, "b": 100, "n": {"c": -100}}
    stack[1] = {"b": 300}  # member 1's int64 holds it
    assert stack.tensordicts[0]["b"].tolist() == [100, 0]
    assert stack.tensordicts[0]["n", "c"].tolist() == [-100, 0]
    assert stack.tensordicts[1]["b"].tolist() == [300, 300]
    assert stack.tensordicts[1]["a"].tolist() == [1.0, 0.0]


@pytest.mark.parametrize("op", ["update_at_", "update_"])
def test_update_of_several_entries_refused_writes_no_member(op: str) -> None:
    # the peer's update_at_ writes "a" into the members before it refuses "b"
    lazy = lazy_stack(
        [TensorDict({"a": torch.zeros(3), "b": torch.zeros(2)}, []) for _ in range(4)]
    )
    with pytest.raises(BatchSizeError, match="'b'"):
        if op == "update_at_":
            lazy.update_at_({"a": torch.ones(3), "b": torch.ones(5)}, 1)
        else:
            lazy.update_({"a": torch.ones(4, 3), "b": torch.ones(5)})
    assert lazy["a"].sum().item() == 0.0
    lazy.update_at_({"a": torch.ones(3), "b": torch.ones(2)}, 1)
    assert lazy["a"].sum().item() == 3.0 and lazy["b"][1].tolist() == [1.0, 1.0]
