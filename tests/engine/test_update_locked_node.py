"""``td.update(source)`` into a TensorDict with a locked nested node: the set the locked
node refuses (an entry replaced, a key added, a missing nested node created under it)
is refused before the entries planned ahead of it are written
(``_engine/_update_plan.py``); the peer writes those first, then refuses."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tclass import TensorDict
from tclass.errors import LockedError, TclassError


def _td() -> TensorDict:
    return TensorDict(
        {"a": torch.zeros(3, 2), "b": torch.zeros(3), "n": {"c": torch.zeros(3)}},
        batch_size=[3],
    )


@pytest.mark.parametrize(
    "source",
    [
        {"a": torch.ones(3, 2), "b": torch.ones(3), "n": {"c": torch.ones(3)}},
        {"a": torch.ones(3, 2), "b": torch.ones(3), "n": {"z": torch.ones(3)}},
        {"a": torch.ones(3, 2), ("n", "c"): torch.ones(3)},
        {"a": torch.ones(3, 2), ("n", "m", "z"): torch.ones(3)},
    ],
    ids=["replaced", "added", "nested-key", "missing-node"],
)
def test_an_update_a_locked_node_refuses_writes_nothing(source: dict[Any, Any]) -> None:
    td = _td()
    td["n"].lock_()
    with pytest.raises(LockedError, match="Cannot modify locked TensorDict") as caught:
        td.update(source)
    assert isinstance(caught.value, TclassError) and isinstance(caught.value, RuntimeError)
    assert torch.equal(td["a"], torch.zeros(3, 2)) and torch.equal(td["b"], torch.zeros(3))
    assert list(td["n"].keys(True)) == ["c"] and torch.equal(td["n", "c"], torch.zeros(3))
    source_td = TensorDict(source, batch_size=[3])
    with pytest.raises(LockedError):
        td.update(source_td)
    assert torch.equal(td["a"], torch.zeros(3, 2))


def test_what_a_locked_node_takes_is_written() -> None:
    td = _td()
    td["n"].lock_()
    # in place, or its own entry again: the locked node takes it, as before
    td.update({"a": torch.ones(3, 2), "n": {"c": torch.ones(3)}}, inplace=True)
    assert torch.equal(td["n", "c"], torch.ones(3)) and torch.equal(td["a"], torch.ones(3, 2))
    td.update({"b": torch.ones(3), "n": {"c": td["n", "c"]}})
    assert torch.equal(td["b"], torch.ones(3))
    td.lock_()
    with pytest.raises(LockedError):  # the root locked: its first key refuses
        td.update({"a": torch.zeros(3, 2)})
    assert torch.equal(td["a"], torch.ones(3, 2))
