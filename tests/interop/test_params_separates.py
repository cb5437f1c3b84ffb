"""``TensorDictParams.separates`` while locked: no keys remove nothing, so it answers (an
empty TensorDict of its batch size), as the peer's; any key (even a missing one with a
default) is a locked write, the peer's ``RuntimeError``."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass.errors import LockedError


def _locked(lib: ModuleType) -> Any:
    td = lib.TensorDict(
        a=torch.zeros(3), n=lib.TensorDict(c=torch.ones(3), batch_size=[3]), batch_size=[3]
    )
    params = lib.TensorDictParams(td)
    params.lock_()
    return params


def test_no_keys_separate_nothing_from_a_locked_params() -> None:
    params = _locked(tclass)
    out = params.separates()
    assert type(out) is tclass.TensorDict and out.batch_size == (3,) and list(out.keys()) == []
    assert set(params.keys(True)) == {"a", "n", ("n", "c")} and params.is_locked
    peer = pytest.importorskip("tensordict")
    theirs = _locked(peer).separates()
    assert (type(theirs).__name__, theirs.batch_size, list(theirs.keys())) == (
        "TensorDict",
        out.batch_size,
        [],
    )


@pytest.mark.parametrize(
    ("keys", "options"), [(("a",), {}), (("zz",), {"default": None}), (("zz",), {"strict": False})]
)
def test_any_key_is_a_locked_write(keys: tuple[str, ...], options: dict[str, Any]) -> None:
    params = _locked(tclass)
    with pytest.raises(LockedError) as raised:
        params.separates(*keys, **options)
    assert isinstance(raised.value, RuntimeError)
    assert set(params.keys()) == {"a", "n"}
    peer = pytest.importorskip("tensordict")
    with pytest.raises(RuntimeError, match="locked"):
        _locked(peer).separates(*keys, **options)
