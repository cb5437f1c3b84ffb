"""``stack(..., out=)`` writes the stacked values into ``out`` and leaves its dim names as
they were, as the peer's and as ``cat(..., out=)`` does (before, the members' names
replaced them: an unnamed ``out`` came back named, a named one lost its names)."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import TensorDict


def _member() -> TensorDict:
    return TensorDict(
        {"a": torch.ones(2, 3), "n": {"b": torch.full((2, 3), 2.0)}}, [2, 3], names=["x", "y"]
    )


def _out(names: list[str | None] | None) -> TensorDict:
    zeros = torch.zeros(2, 2, 3)
    return TensorDict({"a": zeros, "n": {"b": zeros.clone()}}, [2, 2, 3], names=names)


@pytest.mark.parametrize("names", [None, ["s", "x", "y"], ["p", None, None]])
@pytest.mark.parametrize("stack", [torch.stack, tclass.stack])
def test_stack_out_keeps_the_names_of_out(names: list[str | None] | None, stack: object) -> None:
    out = _out(names)
    result = stack([_member(), _member()], 0, out=out)  # type: ignore[operator]
    assert result is out
    expected = [None, None, None] if names is None else names
    assert out.names == expected
    assert out["n"].names == expected
    assert out["a"].eq(1.0).all() and out["n", "b"].eq(2.0).all()


def test_stack_without_out_names_the_result_from_its_members() -> None:
    assert torch.stack([_member(), _member()], 1).names == ["x", None, "y"]


def test_cat_out_keeps_the_names_of_out_too() -> None:
    out = TensorDict({"a": torch.zeros(4, 3), "n": {"b": torch.zeros(4, 3)}}, [4, 3])
    torch.cat([_member(), _member()], 0, out=out)
    assert out.names == [None, None]
    assert out["a"].eq(1.0).all()
