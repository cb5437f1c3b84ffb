"""``select`` / ``exclude`` given something that is no key (``1``, ``None``, a list) raise
an ``UnravelKeyError``: a ``RuntimeError``, as the peer's "key should be a
Sequence<NestedKey>" on every kind, and a ``TypeError`` / ``KeyError`` as before. Before:
an ``InvalidKeyError`` without ``RuntimeError``, which code catching the peer's error
missed (nu26a keytype_*_select)."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorDict, errors, lazy_stack


def _td() -> TensorDict:
    return TensorDict(
        a=torch.zeros(2), n=TensorDict(c=torch.ones(2), batch_size=[2]), batch_size=[2]
    )


_KINDS = {
    "td": _td,
    "lazy": lambda: lazy_stack([_td()[0], _td()[1]]),
    "view": lambda: torch.cat([_td(), _td()])[1:3],
}


@pytest.mark.parametrize("kind", sorted(_KINDS))
@pytest.mark.parametrize("key", [1, None, ["a"], (), ("n", 1)], ids=repr)
@pytest.mark.parametrize("method", ["select", "exclude"])
def test_select_exclude_of_no_key_is_a_runtime_error(kind: str, key: object, method: str) -> None:
    d = _KINDS[kind]()
    with pytest.raises(errors.UnravelKeyError, match=method) as info:
        getattr(d, method)("a", key)
    assert isinstance(info.value, RuntimeError)
    assert isinstance(info.value, TypeError)


def test_nothing_removed_in_place_before_the_bad_key() -> None:
    d = _td()
    with pytest.raises(RuntimeError):
        d.exclude("a", 1, inplace=True)
    assert sorted(d.keys()) == ["a", "n"]


def test_valid_keys_still_select() -> None:
    d = _td()
    assert list(d.select(("n", "c")).keys(True, True)) == [("n", "c")]
    assert list(d.exclude(("n",)).keys()) == ["a"]
