"""The members the lazy-stack tests stack (tests/engine/test_lazy*.py): TensorDicts of
distinct values with a nested TensorDict, ragged ones, and the check that a lazy stack
reads as the dense stack of the same members."""

from __future__ import annotations

from typing import Any

import torch

from tclass import TensorDict

from strategies import make_values  # noqa: E402

__all__ = ["DIMS", "KEYS", "_assert_matches", "_member", "_members", "_ragged"]


DIMS = [0, 1, 2]
KEYS = ["a", "b", ("n", "c")]


def _member(batch: tuple[int, ...] = (3, 4)) -> TensorDict:
    """Distinct values: a float leaf, an int leaf with a feature dim, a nested TensorDict."""
    return TensorDict(
        {
            "a": make_values(batch),
            "b": make_values([*batch, 2], torch.int64),
            "n": TensorDict({"c": make_values(batch)}, list(batch)),
        },
        list(batch),
    )


def _members(count: int = 2) -> list[TensorDict]:
    return [_member() for _ in range(count)]


def _ragged() -> list[TensorDict]:
    """Two members of batch [4]: ``obs`` of 3 and 5 features, ``x`` alike, ``y`` in one."""
    a = TensorDict(obs=make_values([4, 3]), x=make_values([4]), batch_size=[4])
    b = TensorDict(obs=make_values([4, 5]), x=make_values([4]), y=make_values([4]), batch_size=[4])
    return [a, b]


def _assert_matches(got: Any, expected: Any, keys: list[Any] = KEYS) -> None:
    assert got.batch_size == expected.batch_size
    for key in keys:
        assert torch.equal(got[key], expected[key]), key
