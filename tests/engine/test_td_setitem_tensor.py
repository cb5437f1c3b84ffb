"""``x[idx] = tensor`` (``_engine/_tensor_write.py``): the tensor goes into each entry as
torch writes ``entry[idx] = tensor`` (lined up with the last dims of the entry's
selection), as the peer writes it (issue 27); every entry is checked first, so a tensor
one entry refuses writes nothing. The expected values are torch's own write into a copy
of each entry (the peer's values, checked against tensordict 0.15.3 by hand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, MemoryMappedTensor, TensorDict, TensorDictParams
from tclass.errors import BatchSizeError, DimError, InPlaceWriteError

MASK = torch.tensor([True, False, True, False])
V3 = torch.tensor([10.0, 20.0, 30.0])

# (index into the [4, 3] batch, the same index spelled for a tensor, the value)
CASES: list[tuple[Any, Any, torch.Tensor]] = [
    (0, 0, V3),
    (slice(1, 3), slice(1, 3), V3),
    ((..., 0), (slice(None), 0), V3),
    ((None, 0), (None, 0), V3),
    ((0, ...), (0, slice(None)), V3[None]),
    (MASK, MASK, V3),
    ([2, 0], [2, 0], V3),
    (torch.tensor([3, 1]), torch.tensor([3, 1]), V3),
    (0, 0, torch.tensor(5.0)),  # a 0-d tensor fills any selection
    (0, 0, torch.ones(1, 1, 3)),  # leading dims of size 1 dropped, as torch drops them
    (..., (slice(None), slice(None)), V3),
]


def _td() -> TensorDict:
    """Three entries whose selections all end with a dim of 3: a tensor of shape [3]
    fits each, lined up with its last dim."""
    nested = TensorDict({"x": torch.zeros(4, 3, 3)}, [4, 3, 3])  # a deeper batch
    return TensorDict(
        {"a": torch.zeros(4, 3, 3), "b": torch.zeros(4, 3, 2, 3, dtype=torch.int64), "n": nested},
        [4, 3],
    )


def _as_torch(before: Any, index: Any, value: torch.Tensor) -> dict[Any, torch.Tensor] | None:
    """Each leaf of ``before`` with ``value`` written at ``index`` by torch itself; None
    when torch refuses it for one leaf (the peer then raises its RuntimeError)."""
    expected = {}
    for key in before.keys(True, True):
        leaf = before.get(key).clone()
        try:
            leaf[index] = value
        except RuntimeError:
            return None
        expected[key] = leaf
    return expected


def _assert_leaves(collection: Any, expected: dict[Any, torch.Tensor]) -> None:
    assert sorted(map(str, collection.keys(True, True))) == sorted(map(str, expected))
    for key, leaf in expected.items():
        got = collection.get(key)
        assert got.dtype == leaf.dtype and torch.equal(got, leaf), key


@pytest.mark.parametrize(("index", "torch_index", "value"), CASES, ids=repr)
def test_each_entry_takes_the_tensor_as_torch_writes_it(
    index: Any, torch_index: Any, value: torch.Tensor
) -> None:
    td = _td()
    expected = _as_torch(td, torch_index, value)
    if expected is None:  # a float tensor into b (int64) at an advanced index: refused
        before = td.clone()
        with pytest.raises(RuntimeError, match=r"'b' \(torch.int64.*nothing was written"):
            td[index] = value
        assert (td == before).all()  # not a and n.x before it either
        return
    td[index] = value
    _assert_leaves(td, expected)


def test_the_issue_case_and_a_tensor_of_the_selected_shape() -> None:
    td = TensorDict({"a": torch.zeros(4, 3, 3)}, [4, 3])
    td[0] = V3
    assert td["a"][0].tolist() == [[10.0, 20.0, 30.0]] * 3  # rows, not columns
    full = torch.arange(9.0).reshape(3, 3)
    td[1] = full
    assert torch.equal(td["a"][1], full)
    td[MASK] = torch.ones(2, 3, 3)
    assert td["a"][MASK].eq(1).all() and td["a"][1].eq(full).all()


def test_a_tensor_an_entry_refuses_writes_nothing() -> None:
    """``td[0:3] = torch.arange(2.)`` into an entry of shape [3, 2, 5]: the peer raises a
    RuntimeError (torch's broadcast fails); tclass too, naming the entry, the shapes and
    the fix, before writing any entry (the peer writes those before it)."""
    td = TensorDict({"ok": torch.zeros(3, 2, 2), "a": torch.zeros(3, 2, 5)}, [3, 2])
    before = td.clone()
    with pytest.raises(BatchSizeError) as info:
        td[0:3] = torch.arange(2.0)
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)
    for words in ("shape mismatch", "'a'", "[3, 2, 5]", "[2]", "value[..., None]", "nothing"):
        assert words in message, words
    assert (td == before).all()
    td[0:3] = torch.arange(2.0)[..., None]  # the fix it names: one value per batch row
    assert td["a"][:, 1].eq(1).all() and td["a"][:, 0].eq(0).all() and td["ok"][:, 1].eq(1).all()


def test_a_mask_refusal_and_an_index_out_of_range() -> None:
    td = _td()
    before = td.clone()
    with pytest.raises(BatchSizeError, match=r"\[2, 3, 3\]"):
        td[MASK] = torch.ones(2, 3)  # the selection is [2, 3, 3]: [2, 3] lines up with [3, 3]
    with pytest.raises(DimError, match=r"out of range.*\[4, 3\]"):
        td[7] = V3  # the index is checked first, against the batch size
    assert (td == before).all()


def test_numbers_and_python_values() -> None:
    td = TensorDict({"a": torch.zeros(4, 3, 2), "s": "text"}, [4, 3])
    td[0] = 7
    assert td["a"][0].eq(7).all() and td["a"][1:].eq(0).all()
    td[1] = torch.tensor([1.0, 2.0])  # the Python value is left as it is (README)
    assert td["a"][1].tolist() == [[1.0, 2.0]] * 3 and td["s"] == "text"


def test_a_tensor_leaves_a_python_value_alone_and_a_dict_stores_it() -> None:
    """Decided (README): ``td[0] = t`` leaves ``s`` as it is, as a number does (the
    peer 0.15 puts ``t`` whole into each element of row 0 of ``s``, unwarned, while its
    number write warns that 0.17 leaves Python values alone); ``td[0] = {"s": t}``
    stores ``t`` in each element of the row, as the peer does for both spellings."""
    td = TensorDict(a=torch.zeros(4, 3), s="x", batch_size=[4, 3])
    td[0] = V3
    assert td["a"][0].tolist() == [10.0, 20.0, 30.0] and td["s"] == "x"
    td[0] = {"s": V3}
    assert [v.tolist() for v in td[0]["s"]] == [[10.0, 20.0, 30.0]] * 3
    assert list(td[1]["s"]) == ["x"] * 3 and td["a"][0].tolist() == [10.0, 20.0, 30.0]


def test_a_dict_of_a_tensor_for_a_nested_collection() -> None:
    """``td[0] = {"n": t}``: ``t`` written into n's entries as torch writes it, as the
    peer; a tensor that is not of the selection's batch size is refused, as the peer."""
    td = TensorDict({"n": TensorDict({"x": torch.zeros(4, 3, 3)}, [4, 3])}, [4, 3])
    td[0] = {"n": V3}
    assert td["n", "x"][0].tolist() == [[10.0, 20.0, 30.0]] * 3
    with pytest.raises(BatchSizeError, match="batch"):
        td[0] = {"n": torch.ones(2)}


def _lazy(dim: int) -> LazyStackedTensorDict:
    shape = [3] if dim == 0 else [4]
    members = [
        TensorDict({"a": torch.zeros(*shape, 3), "n": {"x": torch.zeros(*shape, 2, 3)}}, shape)
        for _ in range(4 if dim == 0 else 3)
    ]
    return LazyStackedTensorDict.lazy_stack(members, dim)


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize(
    ("index", "torch_index"),
    [(0, 0), ((slice(None), 0), (slice(None), 0)), (..., ...), (MASK, MASK), ([1, 3], [1, 3])],
    ids=repr,
)
def test_a_lazy_stack_writes_each_entry_as_torch(dim: int, index: Any, torch_index: Any) -> None:
    stack = _lazy(dim)
    expected = _as_torch(stack.to_tensordict(), torch_index, V3)
    stack[index] = V3
    assert isinstance(stack, LazyStackedTensorDict)
    _assert_leaves(stack.to_tensordict(), expected)


def test_a_lazy_stack_splits_a_tensor_over_its_members() -> None:
    """A tensor with a dim over the members: each member its part, as torch would write
    it into the stacked entry."""
    stack = _lazy(0)
    value = torch.arange(12.0).reshape(4, 1, 3)  # [4, 3, 3] selects [4, 3, 3]: one per member
    before = stack.to_tensordict()
    with pytest.raises(BatchSizeError, match=r"'n', 'x'"):
        stack[...] = value  # n.x selects [4, 3, 2, 3]: [4, 1, 3] does not line up with it
    assert (stack.to_tensordict() == before).all()
    del stack["n"]
    expected = _as_torch(stack.to_tensordict(), ..., value)
    assert expected is not None
    stack[...] = value
    _assert_leaves(stack.to_tensordict(), expected)


def test_a_lazy_stack_writes_the_keys_its_members_share() -> None:
    """As the peer: a key only some members hold is not an entry of the stack, and is
    left as it is; a tensor the stack's entries refuse writes no member."""
    stack = _lazy(0)
    stack.tensordicts[2]["extra"] = torch.zeros(3, 5)
    stack[:] = V3
    assert stack.tensordicts[2]["extra"].eq(0).all()
    assert stack["a"].eq(V3).all() and stack["n", "x"].eq(V3).all()
    before = [member.clone() for member in stack.tensordicts]
    with pytest.raises(BatchSizeError, match="shape mismatch"):
        stack[1:] = torch.ones(2)
    for member, kept in zip(stack.tensordicts, before, strict=True):
        assert (member == kept).all()


def test_params_and_memory_mapped_entries(tmp_path: Path) -> None:
    params = TensorDictParams(TensorDict({"w": torch.zeros(4, 3, 3)}, [4, 3]))
    params[0] = V3  # the peer fails here (an in-place write into a leaf that needs grad)
    assert params["w"][0].tolist() == [[10.0, 20.0, 30.0]] * 3
    assert isinstance(params["w"], torch.nn.Parameter)
    saved = TensorDict({"a": torch.zeros(4, 3, 3)}, [4, 3]).memmap_(tmp_path / "td")
    saved[0] = V3
    assert isinstance(saved["a"], MemoryMappedTensor)
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert loaded["a"][0].tolist() == [[10.0, 20.0, 30.0]] * 3
    with pytest.raises(BatchSizeError):
        loaded[1] = torch.ones(2)
    assert loaded["a"][1].eq(0).all()


def _ragged() -> LazyStackedTensorDict:
    members = [TensorDict({"a": torch.zeros(n, 2)}, [n]) for n in (3, 4)]
    return LazyStackedTensorDict.lazy_stack(members, 0)


def test_a_ragged_stack_writes_the_tensor_whole_into_each_member() -> None:
    """As the peer: ``ragged[:] = t`` is ``member[...] = t`` for each member (no split
    of ``t`` over the members, even with a dim of their count); one member that refuses
    it leaves them all as they were."""
    stack = _ragged()
    stack[:] = torch.tensor([1.0, 2.0])  # two members: still whole into each
    assert [m["a"].tolist() for m in stack.tensordicts] == [[[1.0, 2.0]] * 3, [[1.0, 2.0]] * 4]
    stack[1] = torch.tensor([5.0, 6.0])
    assert stack.tensordicts[1]["a"].eq(torch.tensor([5.0, 6.0])).all()
    stack = _ragged()
    stack.tensordicts[1]["a"] = torch.zeros(4, 3)  # member 1 refuses a [2] tensor
    with pytest.raises(BatchSizeError, match=r"'a' \(shape \[4, 3\]\)"):
        stack[:] = torch.tensor([1.0, 2.0])
    assert all(m["a"].eq(0).all() for m in stack.tensordicts)


def test_a_lazy_stack_nested_in_a_tensordict() -> None:
    members = [TensorDict({"x": torch.zeros(3, 3)}, [3]) for _ in range(4)]
    td = TensorDict({"a": torch.zeros(4, 3, 2, 3), "s": tclass.lazy_stack(members)}, [4, 3])
    td[0] = V3
    assert td["s", "x"][0].tolist() == [[10.0, 20.0, 30.0]] * 3
    assert td["a"][0].tolist() == [[[10.0, 20.0, 30.0]] * 2] * 3
    with pytest.raises(BatchSizeError, match=r"'s', 'x'"):
        td[1] = torch.ones(2, 3)  # fits a's selection [3, 2, 3], not s.x's [3, 3]
    assert td["a"][1].eq(0).all() and td["s", "x"][1].eq(0).all()


@pytest.mark.parametrize("number", [300, float("nan"), 1 + 2j], ids=repr)
def test_a_number_one_dtype_refuses_writes_nothing(number: complex) -> None:
    """torch refuses a Python number that a dtype cannot hold (``int8_t[0] = 300``, an
    integer ``nan``, a complex into a real dtype): the peer raises a RuntimeError after
    writing the entries before it (a: [300., 300., 300.] for 300); tclass checks every
    entry (nested ones too) first and names the one that refuses it."""
    td = TensorDict({"a": torch.zeros(4, 3), "n": {"b": torch.zeros(4, 3, dtype=torch.int8)}}, [4])
    refused = r"'a' \(torch.float32" if isinstance(number, complex) else r"'n', 'b'\) \(torch.int8"
    with pytest.raises(InPlaceWriteError, match=rf"cannot write .* into \(?{refused}") as info:
        td[0] = number
    assert isinstance(info.value, RuntimeError)
    assert "nothing was written" in str(info.value)
    assert td["a"].eq(0).all() and td["n", "b"].eq(0).all()
    td[0] = 100  # both hold it: written into each, as torch writes it
    assert td["a"][0].eq(100).all() and td["n", "b"][0].eq(100).all()


def test_a_lazy_stack_whose_members_differ_in_dtype_checks_the_members_written() -> None:
    """A key held as float32 by one member and int8 by another: ``stack[:] = 300``
    leaves both as they were (the peer writes member 0 before member 1 refuses it);
    ``stack[0] = 300`` writes member 0 only, which holds it (as the peer)."""
    members = [
        TensorDict({"a": torch.zeros(3, dtype=dtype)}, [3]) for dtype in (torch.float32, torch.int8)
    ]
    stack = LazyStackedTensorDict.lazy_stack(members, 0)
    with pytest.raises(InPlaceWriteError, match=r"300 into 'a' \(torch.int8"):
        stack[:] = 300
    assert all(m["a"].eq(0).all() for m in stack.tensordicts)
    stack[0] = 300
    stack[(slice(0, 1), 1)] = 200
    assert stack.tensordicts[0]["a"].tolist() == [300.0, 200.0, 300.0]
    assert stack.tensordicts[1]["a"].eq(0).all()
    ragged = LazyStackedTensorDict.lazy_stack(
        [
            TensorDict({"a": torch.zeros(n, dtype=d)}, [n])
            for n, d in ((2, torch.int8), (3, torch.float32))
        ],
        0,
    )
    with pytest.raises(InPlaceWriteError, match="int8"):
        ragged[:] = 300
    ragged[1] = 300
    assert ragged.tensordicts[1]["a"].eq(300).all() and ragged.tensordicts[0]["a"].eq(0).all()


def _uneven(dim: int) -> LazyStackedTensorDict:
    """Two members whose entries differ in a feature dim (``get_item_shape``: a -1)."""
    members = [
        TensorDict({"a": torch.zeros(3, k), "n": {"b": torch.zeros(3, k)}}, [3]) for k in (2, 5)
    ]
    return LazyStackedTensorDict.lazy_stack(members, dim)


def _rows(stack: LazyStackedTensorDict, key: Any = "a") -> list[Any]:
    return [member[key].tolist() for member in stack.tensordicts]


def test_an_uneven_entry_takes_the_tensor_as_torch_writes_it_in_each_member() -> None:
    """Members ``a: [3, 2]`` and ``a: [3, 5]`` (batch [2, 3]): each member's entry takes
    the tensor as torch writes it into that member's part of the stacked entry, lined up
    with its last dims (the values are the peer's, tensordict 0.15.3); the old split
    lined ``[2, 1, 1]`` up with the batch dims and refused it."""
    stack = _uneven(0)
    stack[:] = torch.tensor([1.0, 2.0]).reshape(2, 1, 1)  # one value per member
    assert _rows(stack) == [[[1.0] * 2] * 3, [[2.0] * 5] * 3]
    assert _rows(stack, ("n", "b")) == [[[1.0] * 2] * 3, [[2.0] * 5] * 3]
    stack = _uneven(0)
    stack[:] = torch.arange(3.0)[:, None]  # one value per row, in both members
    assert _rows(stack) == [[[0.0] * 2, [1.0] * 2, [2.0] * 2], [[0.0] * 5, [1.0] * 5, [2.0] * 5]]
    stack = _uneven(0)
    stack[:, 1] = torch.tensor([1.0, 2.0])[:, None]
    assert _rows(stack) == [[[0.0] * 2, [1.0] * 2, [0.0] * 2], [[0.0] * 5, [2.0] * 5, [0.0] * 5]]
    stack = _uneven(1)  # stacked along dim 1 (batch [3, 2]): the members' dim is the last
    stack[0] = torch.tensor([1.0, 2.0])[:, None]
    assert _rows(stack) == [[[1.0] * 2, [0.0] * 2, [0.0] * 2], [[2.0] * 5, [0.0] * 5, [0.0] * 5]]


def test_an_uneven_entry_checks_every_member_written_first() -> None:
    """``[2]`` fits member 0's ``a`` ([3, 2]), not member 1's ([3, 5]): the peer writes
    member 0, then raises (a RuntimeError); tclass names member 1 and writes none. A
    write that reaches member 0 alone takes it (as the peer)."""
    stack = _uneven(0)
    with pytest.raises(BatchSizeError, match=r"\[2\].*'a'.*member 1") as info:
        stack[:] = torch.tensor([1.0, 2.0])
    assert isinstance(info.value, RuntimeError)
    assert all(m["a"].eq(0).all() and m["n", "b"].eq(0).all() for m in stack.tensordicts)
    stack[0] = torch.tensor([1.0, 2.0])
    assert _rows(stack) == [[[1.0, 2.0]] * 3, [[0.0] * 5] * 3]
    with pytest.raises(BatchSizeError, match="member 0"):
        stack[torch.tensor([True, False])] = torch.ones(5)
    with pytest.raises(BatchSizeError, match="shape mismatch"):
        stack[:] = torch.ones(3, 1, 1)  # no member's selection [2, 3, k] takes it
    assert _rows(stack) == [[[1.0, 2.0]] * 3, [[0.0] * 5] * 3]


def test_a_lazy_stack_takes_the_tensors_torch_takes_at_an_index() -> None:
    """``lazy[:, 1] = t`` where ``a`` ([2, 3, 2]) selects [2, 2]: leading dims of size 1
    dropped, as torch (tclass's split raised on ``[1, 2, 2]``, which torch and the peer
    write); ``[2, 1, 1]`` is refused as torch and the peer's TensorDict refuse it (a
    deliberate difference: the peer's lazy stack writes ``t[i]`` into member ``i``),
    writing nothing; ``t.reshape(2, 1)`` writes those values in both."""
    for shape in [(1, 2, 2), (1, 1, 2, 2), (2, 2)]:
        stack = tclass.lazy_stack(
            [TensorDict(a=torch.zeros(3, 2), batch_size=[3]) for _ in range(2)]
        )
        stack[:, 1] = torch.arange(1.0, 5.0).reshape(shape)
        assert stack["a"][:, 1].tolist() == [[1.0, 2.0], [3.0, 4.0]]
        assert stack["a"][:, 0].eq(0).all() and stack["a"][:, 2].eq(0).all()
    stack = tclass.lazy_stack([TensorDict(a=torch.zeros(3, 2), batch_size=[3]) for _ in range(2)])
    with pytest.raises(BatchSizeError, match=r"\[2, 1, 1\].*'a'.*selects \[2, 2\]") as info:
        stack[:, 1] = torch.arange(1.0, 3.0).reshape(2, 1, 1)
    assert isinstance(info.value, RuntimeError)
    assert stack["a"].eq(0).all()
    stack[:, 1] = torch.arange(1.0, 3.0).reshape(2, 1)
    assert stack["a"][:, 1].tolist() == [[1.0, 1.0], [2.0, 2.0]]


def _nested_ragged() -> tuple[TensorDict, LazyStackedTensorDict, LazyStackedTensorDict]:
    """Member 0 ``a: [3, 2]``; member 1 a lazy stack of ``a: [2]``, ``[5]``, ``[2]``: the
    stack's ``a`` is ``[2, 3, -1]``."""
    first = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
    second = tclass.lazy_stack([TensorDict(a=torch.zeros(n)) for n in (2, 5, 2)])
    return first, second, tclass.lazy_stack([first, second])


def _sums(first: TensorDict, second: LazyStackedTensorDict) -> list[float]:
    return [first["a"].sum().item(), *(m["a"].sum().item() for m in second.tensordicts)]


def test_a_nested_ragged_member_is_checked_before_any_member_is_written() -> None:
    """A nested lazy member whose ``a`` differs between its own members (``-1``): each
    of its members the index reaches is checked with the others, before any is written
    (the peer writes member 0, then raises; tclass wrote it too). Its shape reads
    without stacking the nested members (``get_item_shape`` raised)."""
    first, second, stack = _nested_ragged()
    assert stack.get_item_shape("a") == torch.Size([2, 3, -1])
    for index in [
        (slice(None), 1),
        (slice(None), torch.tensor([0, 1])),
        ...,
        (slice(None, None, -1), 1),
    ]:
        with pytest.raises(BatchSizeError, match=r"member 1 of member 1") as info:
            stack[index] = torch.ones(2)
        assert isinstance(info.value, RuntimeError)
        assert _sums(first, second) == [0.0, 0.0, 0.0, 0.0]
    # Indices that reach no [5] write, as the peer's.
    stack[:, 0] = torch.ones(2)
    assert _sums(first, second) == [2.0, 2.0, 0.0, 0.0]
    stack[:, torch.tensor([True, False, True])] = torch.full((2,), 2.0)
    assert _sums(first, second) == [8.0, 4.0, 0.0, 4.0]
    stack[::-1, 0] = torch.tensor([[1.0, 2.0], [3.0, 4.0]])  # member 1 first
    assert first["a"][0].tolist() == [3.0, 4.0] and second.tensordicts[0]["a"].tolist() == [
        1.0,
        2.0,
    ]


def test_a_slice_of_negative_step_over_the_members() -> None:
    """``lazy[::-1, 1] = t`` picks the members backwards, as the peer writes it (the
    shape checks indexed a stand-in tensor, which refuses a negative step)."""
    stack = tclass.lazy_stack([TensorDict(a=torch.zeros(3, 2), batch_size=[3]) for _ in range(2)])
    stack[::-1, 1] = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert stack["a"][:, 1].tolist() == [[3.0, 4.0], [1.0, 2.0]]
    stack[::-1, 2] = torch.tensor([5.0, 6.0])
    assert stack["a"][:, 2].tolist() == [[5.0, 6.0], [5.0, 6.0]]
