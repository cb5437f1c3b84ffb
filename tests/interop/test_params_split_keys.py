"""``TensorDictParams.split_keys``: the parts of the key sets are TensorDicts and the keys
left over a TensorDictParams over the same parameters (registered: its ``parameters()``
lists them), as the peer's (whose rest is its ``copy()`` with the keys popped)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict, TensorDictParams


def _params(lib: ModuleType) -> Any:
    td = lib.TensorDict(
        a=torch.zeros(2),
        b=torch.ones(2),
        n=lib.TensorDict(c=torch.zeros(2, 1), batch_size=[2, 1]),
        batch_size=[2],
    )
    return lib.TensorDictParams(td)


def _shape(parts: tuple[Any, ...]) -> list[tuple[str, list[Any], int | None]]:
    return [
        (
            type(part).__name__,
            sorted(part.keys(True, True), key=str),
            len(list(part.parameters())) if hasattr(part, "parameters") else None,
        )
        for part in parts
    ]


@pytest.mark.parametrize(
    ("sets", "options"),
    [((["a"],), {}), ((["a"], [("n", "c")]), {}), ((["a", "zz"],), {"strict": False})],
)
def test_the_rest_is_a_params_over_the_same_parameters(sets: Any, options: Any) -> None:
    params = _params(tclass)
    parts = params.split_keys(*sets, **options)
    rest = parts[-1]
    assert type(rest) is TensorDictParams and rest is not params
    assert all(type(part) is TensorDict for part in parts[:-1])
    assert rest.get("b") is params.get("b")  # shared, not copied
    assert any(p is params.get("b") for p in rest.parameters())  # and registered
    assert set(params.keys()) == {"a", "b", "n"}  # the source keeps every key
    peer = pytest.importorskip("tensordict")
    assert _shape(parts) == _shape(_params(peer).split_keys(*sets, **options))


def test_in_place_the_rest_is_the_params_itself() -> None:
    params = _params(tclass)
    first, rest = params.split_keys(["a"], inplace=True)
    assert rest is params and type(first) is TensorDict
    assert set(params.keys()) == {"b", "n"}


def test_a_tensor_set_into_the_rest_stays_a_tensor_as_the_peers() -> None:
    rest = _params(tclass).split_keys(["a"])[-1]
    rest.set("z", torch.ones(2))
    assert type(rest.get("z")) is torch.Tensor
