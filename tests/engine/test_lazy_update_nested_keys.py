"""``update(..., keys_to_update=[nested key])`` of a lazy stack (session 23, nu23d): the
nested key is updated, as a TensorDict's and the peer's (the stack compared the top-level
key with the nested one and skipped it, writing nothing)."""

from __future__ import annotations

import torch

from tclass import TensorDict, lazy_stack


def _member() -> TensorDict:
    nested = {"c": torch.ones(3, dtype=torch.int64), "d": torch.ones(3)}
    return TensorDict({"a": torch.zeros(3, 4), "b": nested}, [3])


def _source() -> dict[str, object]:
    return {
        "a": torch.ones(2, 3, 4),
        "b": {"c": torch.zeros(2, 3, dtype=torch.int64), "d": torch.zeros(2, 3)},
    }


def test_a_nested_key_alone_is_updated() -> None:
    stack = lazy_stack([_member(), _member()])
    stack.update(_source(), keys_to_update=[("b", "c")])
    assert stack["b", "c"].sum() == 0  # updated
    assert stack["b", "d"].sum() == 6 and stack["a"].sum() == 0  # left alone
    assert stack[1]["b", "c"].sum() == 0  # in the members


def test_top_level_keys_still_update_what_is_under_them() -> None:
    stack = lazy_stack([_member(), _member()])
    stack.update(_source(), keys_to_update=["b"])
    assert stack["b", "c"].sum() == 0 and stack["b", "d"].sum() == 0 and stack["a"].sum() == 0
