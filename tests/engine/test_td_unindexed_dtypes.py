"""Entries of a dtype torch reads at any index but writes at ints and slices only
(``uint16``, ``uint32``, ``uint64``: no ``index_select``, ``index_put`` nor
``masked_fill`` kernel). A read at a mask or rows gives torch's rows, as the peer's; a
write at an advanced index (a mask, a list, a tensor of rows) is refused as torch and
the peer refuse it, with a ``NotImplementedError`` (``InPlaceKernelError``), but before
any entry is written (the peer writes the entries before the refused one)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import InPlaceKernelError

MASK = torch.tensor([True, False, True, True])
UNSIGNED = [torch.uint16, torch.uint32, torch.uint64]


def _td(dtype: torch.dtype) -> TensorDict:
    """A float entry before the one of ``dtype`` (nested), so a partial write shows."""
    return TensorDict({"a": torch.ones(4), "m": {"b": torch.arange(4).to(dtype)}}, [4])


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("index", [MASK, torch.tensor([0, 2, 3]), [0, 2, 3]])
def test_reads_at_a_mask_or_rows_give_torchs_rows(dtype: torch.dtype, index: Any) -> None:
    rows = _td(dtype)[index]
    assert rows.batch_size == (3,)
    assert rows["m", "b"].dtype == dtype and rows["m", "b"].tolist() == [0, 2, 3]
    assert rows["a"].tolist() == [1.0, 1.0, 1.0]


def _row_of_zeros(td: TensorDict, index: Any) -> Any:
    return td[index].clone().zero_()


WRITES = [
    (MASK, _row_of_zeros),  # a collection (the fuzzer's program 12,400,929)
    ([0, 2], _row_of_zeros),
    (torch.tensor([0, 2]), _row_of_zeros),
    (MASK, lambda td, index: 0),  # a number: torch's masked_fill
    (torch.tensor([0, 2]), lambda td, index: 0),  # torch's index_put
    (MASK, lambda td, index: torch.tensor(0)),  # a tensor broadcast into each entry
    ([0, 2], lambda td, index: {"a": torch.zeros(2), "m": {"b": torch.zeros(2)}}),
]


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize(("index", "value"), WRITES)
def test_writes_at_an_advanced_index_are_refused_before_any_entry_is_written(
    dtype: torch.dtype, index: Any, value: Any
) -> None:
    td = _td(dtype)
    written = value(td, index)
    if isinstance(written, dict):
        written["m"]["b"] = written["m"]["b"].to(dtype)
    with pytest.raises(NotImplementedError, match="not implemented for") as caught:
        td[index] = written
    assert isinstance(caught.value, InPlaceKernelError)
    assert f"('m', 'b') ({dtype}, shape [4])" in str(caught.value)
    assert "nothing was written" in str(caught.value)
    assert td["a"].tolist() == [1.0] * 4 and td["m", "b"].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_a_lazy_stacks_write_at_rows_of_its_members_is_refused_before_any_is_written(
    dtype: torch.dtype,
) -> None:
    """Members stacked along dim 1: rows of dim 0 are rows of each member."""
    stack = tclass.lazy_stack([_td(dtype), _td(dtype)], 1)
    with pytest.raises(InPlaceKernelError, match="member 0 of the lazy stack"):
        stack[[0, 1]] = stack[[0, 1]].clone().zero_()
    assert stack["a"].tolist() == [[1.0, 1.0]] * 4
    assert stack["m", "b"][:, 1].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_writes_at_ints_and_slices_and_a_lazy_stacks_members_are_written(
    dtype: torch.dtype,
) -> None:
    td = _td(dtype)
    td[1:3] = 0
    td[0] = {"a": torch.tensor(7.0), "m": {"b": torch.tensor(7).to(dtype)}}
    assert td["m", "b"].tolist() == [7, 0, 0, 3] and td["a"].tolist() == [7.0, 0.0, 0.0, 1.0]
    stack = tclass.lazy_stack(list(_td(dtype).unbind(0)))  # a mask selects members
    stack[MASK] = 0
    assert stack["m", "b"].tolist() == [0, 1, 0, 0]


NUMBER_DICTS = [
    (MASK, {"a": 1.0, "m": {"b": 0}}),  # torch's masked_fill (fz23c's leftover)
    (MASK, {"a": 1.0, "m": {"b": True}}),
    ([0, 2], {"a": 1.0, "m": {"b": 0}}),  # torch's index_put
    (torch.tensor([0, 2]), {"a": torch.zeros(2), "m": {"b": 5}}),
]


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize(("index", "value"), NUMBER_DICTS)
def test_a_dict_of_numbers_at_an_advanced_index_is_refused_before_any_entry_is_written(
    dtype: torch.dtype, index: Any, value: dict[Any, Any]
) -> None:
    """A number for the unsigned entry (one every dtype holds: no check of its value) is
    tried on a stand-in too; "a" was written before the refusal."""
    td = _td(dtype)
    with pytest.raises(NotImplementedError, match="not implemented for") as caught:
        td[index] = value
    assert isinstance(caught.value, InPlaceKernelError)
    assert "('m', 'b')" in str(caught.value) and "nothing was written" in str(caught.value)
    assert td["a"].tolist() == [1.0] * 4 and td["m", "b"].tolist() == [0, 1, 2, 3]


def test_a_dict_of_numbers_at_a_mask_into_a_flat_collection_is_all_or_nothing() -> None:
    td = TensorDict(a=torch.zeros(4), b=torch.zeros(4, dtype=torch.uint16), batch_size=[4])
    with pytest.raises(InPlaceKernelError, match="'b' \\(torch.uint16"):
        td[MASK] = {"a": 1.0, "b": 0}
    assert td["a"].tolist() == [0.0] * 4
    td[1:3] = {"a": 1.0, "b": 3}  # at a slice: written
    assert td["a"].tolist() == [0.0, 1.0, 1.0, 0.0] and td["b"].tolist() == [0, 3, 3, 0]
    td[MASK] = {"a": 2.0}  # the unsigned entry not written: the others are
    assert td["a"].tolist() == [2.0, 1.0, 2.0, 2.0]


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_a_lazy_stacks_dict_of_numbers_at_rows_is_refused_before_any_member_is_written(
    dtype: torch.dtype,
) -> None:
    stack = tclass.lazy_stack([_td(dtype), _td(dtype)], 1)
    with pytest.raises(InPlaceKernelError, match="member 0 of the lazy stack"):
        stack[[0, 1]] = {"a": 5.0, "m": {"b": 0}}
    assert stack["a"].tolist() == [[1.0, 1.0]] * 4


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_a_lazy_stacks_write_at_a_mask_into_a_members_nested_entry_is_torchs_refusal(
    dtype: torch.dtype,
) -> None:
    """Members stacked along their last dim, a mask over every dim: each member's nested
    collection refuses the rows it is given (a ``NotImplementedError``, as the peer's),
    not a shape mismatch (the fuzzer's program 16,021,065 of methods,index,shape,combine)."""
    member = TensorDict({"m": {"b": torch.zeros(2, 2, 3).to(dtype)}, "a": torch.ones(2, 2)}, [2, 2])
    stack = tclass.lazy_stack([member, member.clone()], 2)
    mask = torch.tensor([[[True, False], [True, False]], [[False, False], [True, True]]])
    with pytest.raises(NotImplementedError, match="not implemented for") as caught:
        stack[mask] = stack[mask].clone()
    assert isinstance(caught.value, InPlaceKernelError)
    assert "'m'" in str(caught.value) and "'b'" in str(caught.value)


@pytest.mark.parametrize("dtype", UNSIGNED)
@pytest.mark.parametrize("value", ["rows", 0])
def test_a_lazy_stacks_write_at_no_rows_of_its_members_is_torchs_refusal(
    dtype: torch.dtype, value: Any
) -> None:
    # x[0, []] = ...: the member is written at a tensor index selecting no element, which
    # torch's index_put refuses for these dtypes (as the peer, and a TensorDict at (0, []))
    lazy = tclass.lazy_stack([_td(dtype).unsqueeze(0)], 0)
    part = lazy[0, []].clone().zero_() if value == "rows" else value
    with pytest.raises(NotImplementedError, match="index_put") as raised:
        lazy[0, []] = part
    assert isinstance(raised.value, InPlaceKernelError)
    with pytest.raises(InPlaceKernelError):
        TensorDict({"b": torch.zeros(1, 4, dtype=dtype)}, [1, 4])[0, []] = 0
    lazy[0, :0] = part  # a slice: torch's basic write, for no element too
    assert lazy["m", "b"].tolist() == [[[0, 1, 2, 3]]]
