"""``x in td.keys(...)`` of something that is no key (``1``, ``None``, a list such as
``["n", "c"]``, ``()``, ``("n", 1)``) is a ``TypeError``, as the peer's keys view raises
(the peer's "keys are always strings"), on every kind; before it was a silent ``False``,
which hid a list written for a nested key (nu26a in_keys_list). Keys and tuples answer as
before, and set operations with non-key members raise, as the peer's."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import TensorDict, TensorDictParams, errors, lazy_stack


def _td() -> TensorDict:
    return TensorDict(
        a=torch.zeros(2), n=TensorDict(c=torch.ones(2), batch_size=[2]), batch_size=[2]
    )


_KINDS = {
    "td": _td,
    "lazy": lambda: lazy_stack([_td()[0], _td()[1]]),
    "params": lambda: TensorDictParams(_td()),
    "view": lambda: torch.cat([_td(), _td()])[1:3],
}


@pytest.mark.parametrize("kind", sorted(_KINDS))
@pytest.mark.parametrize("item", [1, None, ["n", "c"], (), ("n", 1), 1.5], ids=repr)
def test_membership_of_a_non_key_is_a_type_error(kind: str, item: object) -> None:
    d = _KINDS[kind]()
    for view in (d.keys(), d.keys(True), d.keys(True, True)):
        with pytest.raises(errors.InvalidKeyError, match="membership checks take a string") as info:
            _ = item in view
        assert isinstance(info.value, TypeError)


def test_a_list_key_is_told_to_be_a_tuple() -> None:
    with pytest.raises(TypeError, match=r"write a nested key as a tuple, \('n', 'c'\)"):
        _ = ["n", "c"] in _td().keys(True)


@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_keys_and_tuples_answer_as_before(kind: str) -> None:
    d = _KINDS[kind]()
    assert "a" in d.keys()
    assert ("n", "c") in d.keys(True)
    assert ("n", "c") not in d.keys()
    assert "zz" not in d.keys(True)
    assert ("n",) in d.keys()
    assert d.keys() == {"a", "n"}


def test_set_operations_with_non_keys_raise_as_the_peers() -> None:
    keys = _td().keys()
    with pytest.raises(TypeError):
        _ = keys & {"a", 1}
    with pytest.raises(TypeError):
        _ = {1} <= keys
    assert keys - {1} == {"a", "n"}
    assert (keys == {1, "a"}) is False


@tclass.tensorclass
class _Inner:
    q: torch.Tensor


def _made(how: str) -> TensorDict:
    x = _td()
    if how == "dict":
        x[("zz", "a")] = {"q": torch.zeros(2)}
    elif how == "td":
        x[("zz", "a")] = TensorDict(q=torch.zeros(2), batch_size=[2])
    elif how == "record":
        x[("zz", "a")] = _Inner(q=torch.zeros(2), batch_size=[2])
    elif how == "empty dict":
        x[("zz", "a")] = {}
    elif how == "create_nested":
        x.create_nested(("zz", "a"))
    else:  # members of a lazy stack holding the node
        return lazy_stack([_made("dict")[0], _made("dict")[1]])  # type: ignore[return-value]
    return x


@pytest.mark.parametrize("how", ["dict", "td", "record", "empty dict", "create_nested", "lazy"])
def test_a_node_is_in_keys_but_not_in_leaves_however_made(how: str) -> None:
    # fz27g (program 15,701,971 of entries --length 8): a node set from a dict answers as
    # one set any other way: in keys(True), not in keys(True, True) (what iterating lists)
    x = _made(how)
    assert ("zz", "a") in x.keys(True) and "zz" in x.keys(True)
    assert ("zz", "a") not in x.keys(True, True) and "zz" not in x.keys(True, True)
    assert ("zz", "a") not in list(x.keys(True, True))
    leaf = ("zz", "a", "q")
    held = how not in ("empty dict", "create_nested")
    assert (leaf in x.keys(True, True)) == (leaf in list(x.keys(True, True))) == held
