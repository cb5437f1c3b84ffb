"""Tests for the names of results built from their entries (tclass._base.implemented._apply:
``names_from_nested``) over an unnamed collection whose nested collection names its dims,
and for ``gather`` of a lazy stack whose members name their dims otherwise
(_shape_ops.gather); checked against the peer where it is installed (program 15,826,522
of methods,index,shape,combine, --length 12)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass

_LIBS = ["tclass", "tensordict"]


def _lib(name: str) -> ModuleType:
    return tclass if name == "tclass" else pytest.importorskip("tensordict")


def _unnamed_over_named(lib: ModuleType) -> Any:
    """batch [2, 3], unnamed, holding a nested collection named ['i', 'j'] (as from_tuple
    of a named lazy stack's values leaves it) and an unnamed one."""
    named = lib.TensorDict({"a": torch.ones(2, 3)}, [2, 3], names=["i", "j"])
    values = (torch.ones(2, 3), named, torch.zeros(2, 3, 1))
    x = lib.TensorDict.from_tuple(values, auto_batch_size=True, batch_dims=2)
    x.set("m", lib.TensorDict({"c": torch.ones(2, 3)}, [2, 3]))
    return x


_BUILT: dict[str, Callable[[Any], Any]] = {
    "apply": lambda x: x.apply(torch.zeros_like),
    "apply-other": lambda x: x.apply(lambda a, b: a + b, x),
    "named_apply": lambda x: x.named_apply(lambda key, value: value),
    "to_tensordict": lambda x: x.to_tensordict(),
    "filter_non_tensor_data": lambda x: x.filter_non_tensor_data(),
}


@pytest.mark.parametrize("lib", _LIBS)
@pytest.mark.parametrize("op", list(_BUILT))
def test_a_built_result_takes_a_nested_collections_names(lib: str, op: str) -> None:
    x = _unnamed_over_named(_lib(lib))
    assert x.names == [None, None] and x["1"].names == ["i", "j"]
    result = _BUILT[op](x)
    assert result.names == ["i", "j"]
    assert result["1"].names == ["i", "j"] and result["m"].names == ["i", "j"]
    assert x.names == [None, None] and x["m"].names == [None, None]  # the source kept


@pytest.mark.parametrize("lib", _LIBS)
def test_other_results_keep_the_unnamed_dims(lib: str) -> None:
    x = _unnamed_over_named(_lib(lib))
    for result in (x.clone(), x + 1, torch.zeros_like(x), x.to(torch.float64)):
        assert result.names == [None, None] and result["1"].names == ["i", "j"]
    resized = x.apply(lambda t: t.reshape(6, *t.shape[2:]), batch_size=[6])
    assert resized.names == [None]


def test_a_nested_result_naming_a_dim_otherwise_gives_no_names() -> None:
    # the peer's apply raises inside itself there ("cannot coerce TensorDict names")
    x = tclass.TensorDict(
        {
            "n": tclass.TensorDict({"a": torch.ones(2, 3)}, [2, 3]),
            "m": tclass.TensorDict({"a": torch.ones(2, 3)}, [2, 3]),
        },
        [2, 3],
    )
    x.get("n").names = [None, "j"]
    x.get("m").names = ["k", None]
    assert x.names == [None, None]
    result = x.apply(torch.zeros_like)
    assert result.names == [None, None]
    assert result["n"].names == [None, "j"] and result["m"].names == ["k", None]


@pytest.mark.parametrize("lib", _LIBS)
def test_gather_of_a_lazy_stack_of_members_named_otherwise(lib: str) -> None:
    module = _lib(lib)
    named = module.TensorDict({"b": torch.arange(6.0).reshape(2, 3)}, [2, 3], names=["i", "j"])
    plain = module.TensorDict({"b": torch.arange(6.0).reshape(2, 3) + 10}, [2, 3])
    stack = module.lazy_stack([named, plain])
    index = torch.tensor([[[1, 0, 1], [0, 0, 0]], [[1, 1, 0], [0, 1, 0]]])
    result = stack.gather(1, index)
    assert result.names == [None, None, None]
    expected = torch.stack([named["b"], plain["b"]]).gather(1, index)
    assert torch.equal(result["b"], expected)
