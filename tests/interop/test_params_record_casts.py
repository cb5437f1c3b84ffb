"""``set`` on the parameters of a record (``TensorDictParams(Rec(...))``) casts the value
by the field's annotation, as the record's own ``set`` does and as the peer's params of
a record (which sets through the record it holds) does (its ``update`` and ``set_``
store values as given, as the peer's: README, "Schemas").

Before (hn34d), the value went into the wrapped TensorDict as it was: an ``autocast``
class's ``"3"`` set into an ``int`` field read back as the string ``"3"`` (the peer's
``3``), and a number set into a ``str`` or ``float`` field was refused as a 0-d tensor
that does not fit the batch size (``BatchMismatchError``; the peer stores ``"5"`` and
``2.0``).
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDictParams
from tclass.errors import CastError

HAS_PEER = importlib.util.find_spec("tensordict") is not None


def _classes(lib: Any) -> tuple[type, type]:
    @lib.tensorclass(autocast=True)
    class Auto:
        w: torch.Tensor
        n: int
        s: str = "a"
        f: float = 0.0

    @lib.tensorclass(autocast=True)
    class Outer:
        inner: Auto
        k: int = 0

    return Auto, Outer


def _params(lib: Any) -> Any:
    auto, _ = _classes(lib)
    return lib.TensorDictParams(auto(w=torch.ones(2, 3), n=1, batch_size=[2]))


_CASES = [
    ("n", "3", 3),
    (("n",), "4", 4),
    ("s", 5, "5"),
    ("f", 2, 2.0),
]


@pytest.mark.parametrize(("key", "value", "expected"), _CASES)
def test_set_casts_by_the_annotation(key: Any, value: Any, expected: Any) -> None:
    params = _params(tclass)
    params.set(key, value)
    name = key if isinstance(key, str) else key[0]
    read = params.get(name)
    assert read == expected and type(read) is type(expected)
    assert getattr(params.data, name) == expected  # the record it wraps reads it too


@pytest.mark.skipif(not HAS_PEER, reason="the peer (tensordict) is not installed")
@pytest.mark.parametrize(("key", "value", "expected"), _CASES)
def test_set_casts_as_the_peer(key: Any, value: Any, expected: Any) -> None:
    import tensordict

    params = _params(tensordict)
    params.set(key, value)
    read = params.get(key if isinstance(key, str) else key[0])
    assert read == expected and type(read) is type(expected)


def test_set_in_place_of_a_value_casts() -> None:
    params = _params(tclass)
    params.set("n", "6", inplace=True)
    assert params.get("n") == 6


def test_a_value_the_annotation_refuses_is_a_cast_error() -> None:
    params = _params(tclass)
    with pytest.raises(CastError) as caught:
        params.set("n", "x")
    assert isinstance(caught.value, ValueError)  # the peer's int("x") error
    assert params.get("n") == 1


def test_a_cast_tensor_becomes_a_parameter() -> None:
    params = _params(tclass)
    params.set("w", [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert isinstance(params.get("w"), torch.nn.Parameter)
    assert [name for name, _ in params.named_parameters()] == ["w"]
    weight = torch.nn.Parameter(torch.zeros(2, 3))
    params.set("w", weight)
    assert params.get("w") is weight


def test_a_locked_params_still_refuses() -> None:
    params = _params(tclass)
    params.lock_()
    with pytest.raises(RuntimeError):
        params.set("n", "3")
    assert params.get("n") == 1


def test_a_nested_record_field_casts() -> None:
    auto, outer = _classes(tclass)
    params = TensorDictParams(
        outer(inner=auto(w=torch.ones(2, 3), n=1, batch_size=[2]), batch_size=[2])
    )
    params.set("k", "3")
    params.set(("inner", "n"), "4")
    assert params.get("k") == 3 and params.get(("inner", "n")) == 4
