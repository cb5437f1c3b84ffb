"""Records built wrong by a new user (nu24d): errors naming the class, what is wrong and
the fix, also the builtin the peer raises."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorClass, tensorclass
from tclass.errors import ArgumentError, NotAMappingError


@tensorclass
class Row:
    x: torch.Tensor
    y: torch.Tensor


class KwRow(TensorClass, kw_only=True):
    x: torch.Tensor


@pytest.mark.parametrize("data", [3, [1, 2]])
def test_from_dict_of_no_mapping_says_what_it_takes(data: object) -> None:
    with pytest.raises(
        NotAMappingError, match=r"Row.from_dict expects a mapping of fields"
    ) as info:
        Row.from_dict(data)  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError)  # the peer's
    assert "Row.from_dict({'x': value})" in str(info.value)
    row = Row.from_dict({"x": torch.zeros(2), "y": torch.ones(2)}, batch_size=[2])
    assert row.y.tolist() == [1.0, 1.0]


def test_a_positional_field_of_a_keyword_only_class_says_they_are_keyword_only() -> None:
    keyword_only = r"\(self only: KwRow's fields are keyword-only\); pass the fields by keyword"
    with pytest.raises(ArgumentError, match="takes 1 positional argument but 2 .* " + keyword_only):
        KwRow(torch.zeros(3), batch_size=[3])  # type: ignore[misc]
    assert KwRow(x=torch.zeros(3), batch_size=[3]).x.shape == (3,)


def test_deleting_a_key_that_is_no_field_names_the_fields() -> None:
    row = Row(x=torch.zeros(2), y=torch.ones(2), batch_size=[2])
    # was: "You are trying to pop key 'xx' ... pass a default (pop(key, None))"
    with pytest.raises(
        KeyError,
        match=r"cannot delete 'xx': Row has no field 'xx' \(fields: x, y\); did you mean 'x'\?",
    ):
        del row["xx"]
    del row["x"]
    assert row.x is None and row.y.tolist() == [1.0, 1.0]
