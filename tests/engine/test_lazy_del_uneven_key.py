"""``del lazy[key]`` / ``lazy.del_(key)`` of a key only some members hold removes it from
those members, as the peer's does (the stack's keys, the shared ones, are unchanged); a
key no member holds is still a ``KeyNotFoundError`` (a ``KeyError``, as the peer's).
Before: a ``KeyNotFoundError`` for the key that member 0 held (nu26a lazyhet_del_x)."""

from __future__ import annotations

import pytest
import torch

from tclass import LazyStackedTensorDict, TensorDict, errors, lazy_stack


def _stack() -> LazyStackedTensorDict:
    return lazy_stack(
        [
            TensorDict(
                a=torch.ones(3), x=torch.zeros(3), n=TensorDict(c=torch.ones(2), u=torch.ones(1))
            ),
            TensorDict(
                a=torch.zeros(3), y=torch.ones(3), n=TensorDict(c=torch.zeros(2), v=torch.ones(1))
            ),
        ]
    )


def _member_keys(lazy: LazyStackedTensorDict) -> list[list[str]]:
    return [sorted(map(str, m.keys(True, True))) for m in lazy.tensordicts]


def test_del_of_a_key_some_members_hold_removes_it_there() -> None:
    lazy = _stack()
    del lazy["x"]
    assert _member_keys(lazy) == [
        ["('n', 'c')", "('n', 'u')", "a"],
        ["('n', 'c')", "('n', 'v')", "a", "y"],
    ]
    lazy.del_(("n", "v"))
    assert _member_keys(lazy) == [["('n', 'c')", "('n', 'u')", "a"], ["('n', 'c')", "a", "y"]]
    assert torch.equal(lazy["a"], torch.stack([torch.ones(3), torch.zeros(3)]))


def test_del_reaches_members_of_a_nested_lazy_stack() -> None:
    outer = lazy_stack([_stack(), _stack()])
    del outer["n", "u"]
    for inner in outer.tensordicts:
        assert _member_keys(inner) == [
            ["('n', 'c')", "a", "x"],
            ["('n', 'c')", "('n', 'v')", "a", "y"],
        ]


def test_del_of_a_key_no_member_holds_is_a_key_error() -> None:
    lazy = _stack()
    with pytest.raises(errors.KeyNotFoundError) as info:
        del lazy["zz"]
    assert isinstance(info.value, KeyError)
    assert _member_keys(lazy)[0] == ["('n', 'c')", "('n', 'u')", "a", "x"]


def test_del_of_an_uneven_key_on_a_locked_stack_is_the_lock_error() -> None:
    lazy = _stack().lock_()
    with pytest.raises(errors.LockedError):
        del lazy["x"]
    assert "x" in lazy.tensordicts[0].keys()
