"""``update_`` into parameters and views of them, checked on tclass and on the peer:
autograd refuses an in-place copy into a leaf that requires grad, or a view of one, under
grad mode, even of the entry's own values (``x.update_(x.to_dict())``: fuzz programs
2,105,277 of the six families and 202,808 of ``shape,records --seed 200000``); a
TensorDictParams' own ``update_`` writes the data outside autograd."""

from __future__ import annotations

import operator
from typing import Any

import pytest
import torch
from torch import nn

import tclass


@pytest.fixture(params=["tclass", "tensordict"])
def lib(request: pytest.FixtureRequest) -> Any:
    if request.param == "tensordict":
        return pytest.importorskip("tensordict")
    return tclass


def _params(lib: Any, shape: tuple[int, ...]) -> Any:
    data = lib.TensorDict({"a": torch.arange(6.0).reshape(shape)}, batch_size=shape[:-1])
    return lib.TensorDictParams(data)


@pytest.mark.parametrize(
    "view",
    [
        lambda p: p.squeeze(0),
        lambda p: p[0],
        lambda p: p.flatten(1, 2).unsqueeze(-2),
    ],
    ids=["squeeze", "index", "flatten-unsqueeze"],
)
def test_update_of_a_view_of_parameters_with_its_own_values_is_refused(lib: Any, view: Any) -> None:
    params = _params(lib, (1, 1, 2, 3))
    x = view(params)
    with pytest.raises(RuntimeError, match="leaf"):
        x.update_(x.to_dict())
    with pytest.raises(RuntimeError, match="leaf"):
        x.update_({"a": x["a"].detach()})  # the same memory, another tensor
    assert torch.equal(params["a"].data, torch.arange(6.0).reshape(1, 1, 2, 3))
    with torch.no_grad():  # outside autograd: written
        x.update_({"a": torch.zeros_like(x["a"])})
    assert not params["a"].data.any()


def test_update_of_a_leaf_that_requires_grad_is_refused_before_any_write(lib: Any) -> None:
    td = lib.TensorDict({"b": torch.ones(2), "w": nn.Parameter(torch.ones(2))}, [])
    with pytest.raises(RuntimeError, match="leaf"):
        td.update_({"b": torch.zeros(2), "w": torch.zeros(2)})
    assert torch.equal(td["b"], torch.ones(2))  # nothing written
    with pytest.raises(RuntimeError, match="leaf"):
        td.update_(td.to_dict())
    td.update_({"b": torch.zeros(2)})  # a plain entry: written
    assert not td["b"].any()


def test_params_update_writes_the_data_outside_autograd(lib: Any) -> None:
    params = _params(lib, (2, 3))
    params.update_(params.to_dict())
    params.update_({"a": torch.full((2, 3), 5.0)})
    assert isinstance(params["a"], nn.Parameter) and params["a"].requires_grad
    assert torch.equal(params["a"].data, torch.full((2, 3), 5.0))
    assert params["a"].grad_fn is None


def test_set_of_a_view_keeps_its_own_values_as_nothing_to_write(lib: Any) -> None:
    x = _params(lib, (1, 6)).squeeze(0)
    x.set_("a", x["a"])  # set_ skips the entry itself, as the peer's
    x.set_("a", x["a"].detach())  # and its own memory
    with pytest.raises(RuntimeError):
        x.set_("a", torch.zeros(6))


def test_update_of_a_lazy_stack_of_params_writes_each_member_outside_autograd(lib: Any) -> None:
    # tclass refused it (InPlaceWriteError "held by the lazy stack's member [0]"): its
    # check walked into the members, whose own update_ writes outside autograd (fuzz
    # program 9,193,994 of `records,entries`); the peer writes.
    first, second = _params(lib, (2, 3)), _params(lib, (2, 3))
    stack = lib.lazy_stack([first, second], 0)
    stack.update_({"a": torch.full((2, 2, 3), 7.0)})
    for member in (first, second):
        assert isinstance(member["a"], nn.Parameter) and member["a"].requires_grad
        assert torch.equal(member["a"].data, torch.full((2, 3), 7.0))
    stack.update_(stack.clone().apply(torch.zeros_like))  # a collection: member by member
    assert not first["a"].data.any() and not second["a"].data.any()


@pytest.mark.parametrize(
    ("op", "expected"), [(operator.iadd, 5.0), (operator.imul, 6.0), (operator.imod, 1.0)]
)
def test_in_place_operators_on_parameters_follow_one_rule(op: Any, expected: float) -> None:
    # tclass's rule (README "TensorDictParams"; "&=, |=, ^=, %= and //= work in place"):
    # every in-place operator writes through autograd, refused on parameters under grad
    # mode and in place under no_grad. The peer's += and *= agree; its %= falls back to
    # % (a new TensorDict), a documented difference.
    params = tclass.TensorDictParams(tclass.TensorDict(a=torch.full((3,), 3.0), batch_size=[3]))
    with pytest.raises(tclass.errors.InPlaceWriteError, match="'a'.*requires grad"):
        op(params, 2)
    assert params["a"].tolist() == [3.0, 3.0, 3.0]
    with torch.no_grad():
        out = op(params, 2)
    assert out is params and isinstance(params["a"], nn.Parameter)
    assert params["a"].tolist() == [expected] * 3
