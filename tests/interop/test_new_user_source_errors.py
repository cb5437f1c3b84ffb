"""Constructors given something that is no mapping or module (nu24d): a
``NotAMappingError`` (a ``TypeError``, and an ``AttributeError`` as the peer raises)
or an ``EntryTypeError`` naming what was given."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorDict, TensorDictParams
from tclass.errors import ArgumentError, EntryTypeError, NotAMappingError


def test_params_of_a_number_is_a_not_a_mapping_error() -> None:
    with pytest.raises(
        NotAMappingError,
        match=r"takes a TensorDict, a record or a dict of named tensors, got int 3",
    ) as info:
        TensorDictParams(3)  # type: ignore[arg-type]
    assert isinstance(info.value, AttributeError) and isinstance(info.value, TypeError)
    assert isinstance(info.value, ArgumentError) is False
    params = TensorDictParams({"w": torch.zeros(2)})
    assert list(params.keys()) == ["w"]


def test_from_module_of_a_number_is_a_not_a_mapping_error() -> None:
    with pytest.raises(
        NotAMappingError, match=r"from_module expects a torch.nn.Module, got int"
    ) as info:
        TensorDict.from_module(3)  # type: ignore[arg-type]
    assert isinstance(info.value, AttributeError)
    assert isinstance(info.value, EntryTypeError)


def test_fromkeys_of_a_number_says_it_takes_keys() -> None:
    with pytest.raises(EntryTypeError, match="fromkeys expects an iterable of keys, got int"):
        TensorDict.fromkeys(3)  # type: ignore[arg-type]
    assert TensorDict.fromkeys(["a", "b"], 0)["b"].item() == 0


@pytest.mark.parametrize("data", [3, [1, 2]])
def test_from_dict_of_no_mapping_names_the_call_and_the_fix(data: object) -> None:
    # was: "expected a mapping, got int"; a list is a SourceTypeError (a ValueError too,
    # as the peer's dict() of a list of str or of dicts), a number a NotAMappingError
    with pytest.raises(EntryTypeError, match=r"from_dict: expected a mapping of entries") as info:
        TensorDict.from_dict(data)  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError)  # the peer's
    assert isinstance(info.value, NotAMappingError) == (data == 3)
    assert "from_dict({'obs': tensor})" in str(info.value)
