"""Errors a new user meets in the math on collections (nu24d): what is wrong, where,
and how to fix it, as a ``TclassError`` that is also the builtin the peer raises."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import NotAMappingError, OperandError, ReductionError, ShapeError


def _td() -> TensorDict:
    return TensorDict(
        {"a": torch.zeros(4, 3), "b": torch.arange(4), "n": {"c": torch.ones(4, 2)}}, [4]
    )


def test_math_between_entries_of_shapes_that_do_not_broadcast_names_the_entry() -> None:
    other = _td()
    other["a"] = torch.zeros(4, 2)
    with pytest.raises(
        ShapeError, match=r"add: entry 'a' has shape \[4, 3\] in TensorDict but \[4, 2\]"
    ) as info:
        _td() + other
    assert isinstance(info.value, RuntimeError)  # torch's (and so the peer's)
    nested = _td()
    nested["n", "c"] = torch.ones(4, 5)
    with pytest.raises(ShapeError, match=r"mul: entry \('n', 'c'\) has shape \[4, 2\]"):
        _td() * nested
    # the math itself is unchanged
    assert (_td() + _td())["b"].tolist() == [0, 2, 4, 6]


def test_mean_of_an_integer_entry_names_it_and_the_fix() -> None:
    with pytest.raises(
        ReductionError, match=r"mean: torch refuses the entry 'b' \(torch.int64"
    ) as info:
        _td().mean()
    assert isinstance(info.value, RuntimeError)
    assert "td.exclude('b')" in str(info.value)
    nested = TensorDict({"n": {"i": torch.arange(4)}, "f": torch.ones(4)}, [4])
    with pytest.raises(ReductionError, match=r"entry \('n', 'i'\)"):
        nested.mean(dim=0)
    assert _td().float().mean()["b"].item() == 1.5


def test_a_string_operand_is_an_operand_error() -> None:
    with pytest.raises(OperandError, match=r"\+: unsupported operand of type str"):
        _td() + "x"  # type: ignore[operator]
    with pytest.raises(OperandError, match="operand of type str"):
        "x" + _td()  # type: ignore[operator]


@pytest.mark.parametrize("source", [3, [1, 2], object()])
def test_update_of_no_mapping_says_what_it_takes(source: object) -> None:
    td = _td()
    with pytest.raises(NotAMappingError, match=r"update expects a mapping of entries") as info:
        td.update(source)  # type: ignore[arg-type]
    assert isinstance(info.value, (TypeError, AttributeError, tclass.TclassError))
    assert isinstance(info.value, AttributeError)  # the peer's ('int' has no attribute 'items')
    assert td["b"].tolist() == [0, 1, 2, 3]


def test_unflatten_keys_with_an_empty_separator_says_so() -> None:
    td = TensorDict({"a.b": torch.zeros(2)}, [2])
    with pytest.raises(tclass.errors.ArgumentValueError, match="the separator '' is empty") as info:
        td.unflatten_keys("")
    assert isinstance(info.value, ValueError)  # the peer's (str.split's)
    assert td.unflatten_keys(".")["a", "b"].tolist() == [0.0, 0.0]


def test_comparing_entries_of_shapes_that_do_not_broadcast_names_the_entry() -> None:
    other = _td()
    other["a"] = torch.zeros(4, 5)
    with pytest.raises(
        ShapeError, match=r"eq: entry 'a' has shape \[4, 3\] in TensorDict but \[4, 5\]"
    ):
        _td() == other  # noqa: B015
    assert (_td() == _td())["a"].all()


def test_softmax_of_an_integer_entry_is_unsupported_naming_it() -> None:
    with pytest.raises(
        tclass.errors.UnsupportedError, match=r"softmax: torch refuses the entry 'b'"
    ) as info:
        _td().softmax(0)
    assert isinstance(info.value, NotImplementedError)  # torch's (and the peer's)
    assert _td().exclude("b").softmax(0)["a"].shape == (4, 3)


def test_math_torch_refuses_on_a_ragged_lazy_stack_raises_torchs_error() -> None:
    """Finding 13,500,254 (fz24b): the walk that names a mismatched entry read each
    entry's dense value, which a ragged lazy stack has none of, so `x & x` of float
    entries raised HeterogeneousEntryError instead of torch's (and the peer's) error."""
    ragged = [TensorDict({"d": torch.ones(3, 2)}, [3]), TensorDict({"d": torch.ones(3, 1)}, [3])]
    x = tclass.lazy_stack(ragged, 1)
    with pytest.raises(NotImplementedError, match="bitwise_and_cpu") as info:
        x & x.clone()
    assert not isinstance(info.value, tclass.errors.HeterogeneousEntryError)
    other = TensorDict({"d": torch.ones(3, 2, 5)}, [3, 2])
    with pytest.raises(RuntimeError, match=r"size of tensor a \(2\) must match") as shape:
        x + other
    assert not isinstance(shape.value, tclass.errors.HeterogeneousEntryError)
    flags = (x > 0) & (x > 0)  # what torch computes is unchanged
    assert [member["d"].tolist() for member in flags.tensordicts] == [
        [[True, True]] * 3,
        [[True]] * 3,
    ]


def test_softmax_of_an_integer_entry_beside_a_ragged_one_names_the_integer_one() -> None:
    """Programs 15,964,515 / 15,984,311 (L8) of features,math,index: softmax of a lazy
    stack holding an int64 entry and a ragged one (no dense value): the search for the
    entry torch refused read the ragged one's dense value and raised
    HeterogeneousEntryError (a RuntimeError) where torch's (and the peer's) error is a
    NotImplementedError."""
    members = [
        TensorDict({"b": torch.ones(1, k), "i": torch.ones(1, dtype=torch.long)}, [1])
        for k in (1, 2)
    ]
    x = tclass.lazy_stack(members, 0)
    with pytest.raises(
        tclass.errors.UnsupportedError, match=r"softmax: torch refuses the entry 'i'"
    ) as info:
        x.softmax(-1)
    assert isinstance(info.value, NotImplementedError)
    assert [m["b"].shape for m in x.exclude("i").softmax(-1).tensordicts] == [(1, 1), (1, 2)]
