"""``set(key, None)`` of a new key into a locked TensorDict is refused, as any new key is
(the peer's RuntimeError "Cannot modify locked TensorDict"): the check that lets a write
of an entry onto itself through compared the absent key's ``None`` with the value
``None`` and returned without storing or refusing (programs 15,965,668 (L12) of
methods,features,entries,records, 16,022,253 (L8) of features,index,shape,combine)."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorDict
from tclass.errors import LockedError


def _locked() -> TensorDict:
    td = TensorDict({"c": torch.ones(2)}, [2])
    return td.lock_()


@pytest.mark.parametrize("key", ["md", ("n", "md")])
def test_a_new_key_set_to_none_in_a_locked_collection_is_refused(key: object) -> None:
    td = _locked()
    with pytest.raises(LockedError, match="Cannot modify locked TensorDict") as info:
        td.set(key, None)
    assert isinstance(info.value, RuntimeError)  # the peer's
    assert list(td.keys(True)) == ["c"]


def test_set_none_unlocked_and_an_entry_onto_itself_locked_still_work() -> None:
    td = TensorDict({"c": torch.ones(2)}, [2])
    td.set("md", None)
    assert td.get("md").data is None
    td.lock_()
    c = td.get("c")
    assert td.set("c", c) is td  # the entry itself: nothing to replace
    with pytest.raises(LockedError):
        td.set("c", torch.zeros(2))
