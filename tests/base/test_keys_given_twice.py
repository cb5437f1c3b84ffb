"""A key given twice to ``separates`` / ``split_keys`` (or inside a key given before
it): the first takes it, the second finds nothing, the peer's KeyError; the message
says so, where it said the key "was not found" among keys listing it (fz42b)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tclass import TensorDict, errors, lazy_stack


def _td() -> TensorDict:
    return TensorDict({"b": torch.zeros(2), "c": torch.ones(2), "n": {"a": torch.ones(2)}}, [2])


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.split_keys(["c", "b"], ["c"]),
        lambda x: x.split_keys(["c"], ["c"], inplace=True),
        lambda x: x.separates("c", "c"),
        lambda x: x.separates("n", ("n", "a")),
    ],
)
def test_a_key_given_twice_says_so(lazy: bool, call: Any) -> None:
    x = lazy_stack([_td(), _td()]) if lazy else _td()
    with pytest.raises(KeyError, match="is given twice") as raised:
        call(x)
    assert isinstance(raised.value, errors.KeyNotFoundError)
    assert "pass strict=False" in str(raised.value)


def test_a_missing_key_is_still_not_found() -> None:
    with pytest.raises(KeyError, match="'z' was not found"):
        _td().split_keys(["c"], ["z"])
    with pytest.raises(KeyError, match="'z' was not found"):
        _td().separates("c", "z", "c")  # the missing key is named first


def test_without_strict_the_second_takes_nothing() -> None:
    first, second, rest = _td().split_keys(["c"], ["c"], strict=False)
    assert list(first.keys()) == ["c"] and list(second.keys()) == []
    assert sorted(rest.keys()) == ["b", "n"]
