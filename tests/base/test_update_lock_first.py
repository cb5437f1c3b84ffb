"""``update`` of a locked collection with what is no mapping: the lock error first, as
tensordict 0.15.3 (its ``update(3)`` of a locked TensorDict raises its lock error; tclass
raised ``NotAMappingError``). In place, or unlocked, the source is checked as before.
So is an update of nothing (``update(None)``, ``update()``, ``update(td)`` of itself,
``keys_to_update=[]``): tclass returned the collection unchanged, locked or not."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import PersistentTensorDict, TensorDict, lazy_stack
from tclass.errors import KeyThroughTensorError, LockedError, NotAMappingError


def _memmap(tmp_path: Path) -> Any:
    return TensorDict(a=torch.zeros(3), batch_size=[3]).memmap_(tmp_path)


def _locked(tmp_path: Path) -> Any:
    return TensorDict(a=torch.zeros(3), batch_size=[3]).lock_()


def _lazy(tmp_path: Path) -> Any:
    return lazy_stack([TensorDict(a=torch.zeros(())) for _ in range(3)]).lock_()


def _nested(tmp_path: Path) -> Any:
    inner = TensorDict(a=torch.zeros(3), batch_size=[3])
    return TensorDict(n=inner, batch_size=[3]).lock_()["n"]


def _h5(tmp_path: Path) -> Any:
    pytest.importorskip("h5py")
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    return PersistentTensorDict.from_dict(td, filename=tmp_path / "x.h5").lock_()


_LOCKED_KINDS = [_memmap, _locked, _lazy, _nested, _h5]


@pytest.mark.parametrize("build", _LOCKED_KINDS)
@pytest.mark.parametrize("source", [3, [1], "ab"])
def test_a_locked_update_of_no_mapping_is_a_lock_error(
    build: Callable[[Path], Any], source: Any, tmp_path: Path
) -> None:
    td = build(tmp_path)
    with pytest.raises(LockedError, match="Cannot modify locked"):
        td.update(source)
    with pytest.raises(NotAMappingError, match="update expects a mapping"):
        td.update(source, inplace=True)  # in place: the lock allows it, the source does not
    assert td.is_locked and set(td.keys()) == {"a"}
    assert (td["a"] == 0).all()


def test_an_unlocked_update_of_no_mapping_says_what_to_pass() -> None:
    with pytest.raises(NotAMappingError, match=r"got int 3; pass e.g. td.update"):
        TensorDict(a=torch.zeros(3), batch_size=[3]).update(3)


_NOTHING: list[Callable[[Any], Any]] = [
    lambda td: td.update(None),
    lambda td: td.update(),
    lambda td: td.update(td),
    lambda td: td.update({"a": torch.ones(td.batch_size)}, keys_to_update=[]),
]


@pytest.mark.parametrize("build", _LOCKED_KINDS)
@pytest.mark.parametrize("nothing", _NOTHING)
def test_a_locked_update_of_nothing_is_a_lock_error(
    build: Callable[[Path], Any], nothing: Callable[[Any], Any], tmp_path: Path
) -> None:
    # as tensordict 0.15.3: its locked TensorDict (a lazy stack, a memory-mapped one, an
    # h5 file) refuses update(None) with its lock error, unless in place
    td = build(tmp_path)
    with pytest.raises(LockedError, match="Cannot modify locked"):
        nothing(td)
    assert td.is_locked and set(td.keys()) == {"a"}
    assert (td["a"] == 0).all()
    assert td.update(None, inplace=True) is td and td.update(td, inplace=True) is td
    with pytest.warns(FutureWarning, match="ignore_lock"):
        assert td.update(None, ignore_lock=True) is td  # as the peer's


@pytest.mark.parametrize("nothing", _NOTHING)
def test_an_unlocked_update_of_nothing_returns_the_collection(
    nothing: Callable[[Any], Any],
) -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    assert nothing(td) is td and (td["a"] == 0).all()


def test_a_key_through_a_tensor_of_a_locked_collection_is_refused_as_locked(
    tmp_path: Path,
) -> None:
    # session 31 (og31h): tclass said the key passes through a tensor (a KeyError)
    for td in (TensorDict({"a": torch.zeros(3)}, [3]).lock_(), _memmap(tmp_path)):
        with pytest.raises(LockedError):
            td.update({("a", "b"): {"q": torch.ones(3)}}, inplace=False)
        assert isinstance(td.get("a"), torch.Tensor)


def test_a_key_through_a_tensor_of_an_unlocked_collection_still_names_the_tensor() -> None:
    td = TensorDict({"zz": torch.zeros(2)}, [2])
    with pytest.raises(KeyThroughTensorError):
        td.update({("zz", "a"): torch.ones(2)})
