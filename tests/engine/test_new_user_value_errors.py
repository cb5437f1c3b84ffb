"""The engine's errors a new user meets (nu24d): Python-value nodes indexed wrong, a
constructor option misspelled; each also the builtin the peer raises."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import NonTensorStack, TensorDict
from tclass.errors import DimError, EntriesTwiceError, IndexTypeError


def test_a_non_tensor_stack_indexed_past_its_end_is_a_dim_error() -> None:
    stack = NonTensorStack("a", "b")
    with pytest.raises(DimError, match=r"index 2 is out of range for the batch size \[2\]") as info:
        stack[2]
    assert isinstance(info.value, IndexError)  # the peer's
    assert stack[1].data == "b"
    td = TensorDict({"s": NonTensorStack("a", "b")}, [2])
    with pytest.raises(DimError, match="out of range"):
        td.get("s")[-3]


def test_a_non_tensor_stack_indexed_by_a_set_is_an_index_type_error() -> None:
    with pytest.raises(IndexTypeError, match="Invalid index"):
        NonTensorStack("a", "b")[{1}]  # type: ignore[index]


@pytest.mark.parametrize(("typo", "option"), [("batch_sze", "batch_size"), ("devce", "device")])
def test_a_misspelled_constructor_option_is_named(typo: str, option: str) -> None:
    with pytest.raises(
        EntriesTwiceError, match=rf"{typo}= is taken as an entry: did you mean {option}=\?"
    ):
        TensorDict({"a": torch.zeros(3)}, **{typo: [3]})
    with pytest.raises(EntriesTwiceError, match=r"not both$"):
        TensorDict({"a": torch.zeros(3)}, zz=torch.zeros(3))


def test_a_lazy_stack_still_takes_a_member_then_a_key() -> None:
    # the key check of td[0, "a"] (IndexTypeError) leaves lazy stacks as the peer's:
    # member 0, then its entry
    lazy = tclass.lazy_stack(
        [TensorDict(a=torch.zeros(3), batch_size=[3]), TensorDict(a=torch.ones(3), batch_size=[3])]
    )
    assert lazy[1, "a"].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(IndexTypeError, match="'a' is a key"):
        TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])[1, "a"]


def test_the_constructor_takes_non_blocking_and_lock_by_position_as_the_peers() -> None:
    """nu26c: ``TensorDict(source, batch_size, device, names, non_blocking, lock)``, the
    peer's order (they were keyword-only: a ``TypeError`` for working peer code)."""
    td = TensorDict({"a": torch.zeros(3)}, [3], "cpu", ["x"], False, True)
    assert td.is_locked and td.names == ["x"] and td.device == torch.device("cpu")
    assert not TensorDict({"a": torch.zeros(3)}, [3], None, None, True).is_locked
    with pytest.raises(TypeError, match="takes from 1 to 7 positional arguments"):
        TensorDict({"a": torch.zeros(3)}, [3], None, None, False, True, 7)  # type: ignore[misc]


@pytest.mark.parametrize("index", [(7,), ([0, 7],)])
def test_an_index_out_of_range_is_said_once_with_a_nested_collection_first(index: object) -> None:
    """The nested collection refuses the index first (its entry comes first): its error
    is not wrapped in the same words again ("index 7 is out of range ...: index 7 ...")."""
    inner = TensorDict({"m": {"a": torch.zeros(3, 2)}}, [3])
    td = TensorDict({"n": inner, "b": torch.zeros(3)}, [3])
    with pytest.raises(DimError) as info:
        td[index]
    message = str(info.value)
    assert message.count("is out of range") == 1, message
    assert message.endswith("index 7 is out of bounds for dimension 0 with size 3")
    assert isinstance(info.value, IndexError)
