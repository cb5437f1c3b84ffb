"""Locked TensorDicts: no new keys and no replaced entries, while in-place writes and
``set_`` still work; ``unlock_`` as a context manager; locks propagate to nested levels
and to ``memmap`` results; the errors are ``RuntimeError`` as user code catches them.
"""

import torch

from compat.lib import TensorDict


def expect_runtime_error(fn) -> None:
    try:
        fn()
    except RuntimeError:
        return
    raise AssertionError("expected a RuntimeError")


def main() -> None:
    td = TensorDict({"a": torch.rand(3), "b": {"c": torch.rand(3, 2)}}, [3])
    assert not td.is_locked
    assert td.lock_() is td
    assert td.is_locked and td["b"].is_locked

    expect_runtime_error(lambda: td.__setitem__("x", torch.zeros(3)))
    expect_runtime_error(lambda: td.set("a", torch.zeros(3)))
    expect_runtime_error(lambda: td["b"].__setitem__("x", torch.zeros(3)))
    expect_runtime_error(lambda: td.del_("a"))
    expect_runtime_error(lambda: td.pop("a"))
    expect_runtime_error(lambda: td.rename_key_("a", "z"))

    # in-place writes are allowed
    td.set_("a", torch.zeros(3))
    assert td["a"].tolist() == [0.0, 0.0, 0.0]
    td["a"][0] = 5.0
    td["b", "c"].fill_(1.0)
    td.set_(("b", "c"), torch.full((3, 2), 2.0))
    assert (td["b", "c"] == 2).all()
    td.update_({"a": torch.ones(3)})
    assert td["a"].tolist() == [1.0, 1.0, 1.0]
    td.zero_()
    assert (td["b", "c"] == 0).all()
    td[0] = TensorDict({"a": torch.tensor(7.0), "b": {"c": torch.ones(2)}}, [])
    assert td["a"][0].item() == 7.0

    # temporarily unlocked
    with td.unlock_():
        td["x"] = torch.ones(3)
        assert not td.is_locked
    assert td.is_locked and "x" in td.keys()

    td.unlock_()
    assert not td.is_locked and not td["b"].is_locked
    td["y"] = torch.ones(3)
    del td["y"]

    # clones are unlocked, a locked tensordict can be re-locked explicitly
    td.lock_()
    assert not td.clone().is_locked
    td.unlock_()

    # memmap returns a locked copy; unlock it to add keys
    mm = td.memmap()
    assert mm.is_locked
    with mm.unlock_():
        mm["new"] = torch.zeros(3)
    assert "new" in mm.keys()

    # is_locked can also be set as a property
    td.is_locked = True
    assert td.is_locked
    td.is_locked = False
    assert not td.is_locked

    # a lock on a nested TensorDict blocks its parent from changing it
    td["b"].lock_()
    expect_runtime_error(lambda: td.set(("b", "new"), torch.zeros(3)))
