"""The key order of a TensorDict built from a mapping with nested (tuple) keys, as the
peer's: the plain keys first, then the tuple keys in their order (making their nodes),
for ``TensorDict(...)``, ``from_dict`` and ``fromkeys``."""

from __future__ import annotations

import torch

from tclass import TensorDict

_ORDER = ["a", "z", ("m", "b"), ("m", "c"), "m", "n"]


def _mapping() -> dict[object, torch.Tensor]:
    keys = [("m", "b"), "a", ("m", "c"), ("n",), "z"]
    return {key: torch.zeros(()) for key in keys}


def test_the_constructor_sets_plain_keys_first() -> None:
    assert list(TensorDict(_mapping(), []).keys(True)) == _ORDER


def test_from_dict_and_fromkeys_alike() -> None:
    assert list(TensorDict.from_dict(_mapping()).keys(True)) == _ORDER
    keys = [("m", "b"), "a", ("m", "c"), ("n",), "z"]
    assert list(TensorDict.fromkeys(keys, 0).keys(True)) == _ORDER
    deeper = TensorDict.fromkeys([("m", "b", "x"), "a", ("m", "c")], 0)
    assert list(deeper.keys(True)) == ["a", ("m", "b", "x"), ("m", "b"), ("m", "c"), "m"]


def test_plain_keys_keep_their_order() -> None:
    td = TensorDict({"c": torch.zeros(2), "a": torch.ones(2), "b": {"x": torch.zeros(2)}}, [2])
    assert list(td.keys()) == ["c", "a", "b"]
