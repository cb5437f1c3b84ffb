"""A locked ``TensorDictParams``: ``select`` of the keys it has, a ``KeyError`` naming a
key it lacks (as the peer's for the same params unlocked; the peer's locked params raises
its lock error instead: its select writes into the locked copy it builds), and
``apply(fn, inplace=True)`` written in place, as into a locked TensorDict in both (the
peer's locked params refuses it)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tclass import TensorDict, TensorDictParams
from tclass.errors import KeyNotFoundError, UnsupportedError


def _locked() -> TensorDictParams:
    data = TensorDict(w=nn.Parameter(torch.zeros(2)), n=TensorDict(b=torch.ones(2)))
    return TensorDictParams(data).lock_()


def test_select_keeps_the_parameters_it_names() -> None:
    params = _locked()
    out = params.select(("n", "b"))
    assert list(out.keys(True, True)) == [("n", "b")] and "w" not in out.keys()
    assert torch.equal(out["n", "b"], torch.ones(2)) and params.is_locked


@pytest.mark.parametrize("key", ["zz", ("zz", "a"), ("n", "c")])
def test_select_of_a_missing_key_is_a_key_error(key: str | tuple[str, ...]) -> None:
    params = _locked()
    with pytest.raises(KeyError) as caught:
        params.select(key)
    assert isinstance(caught.value, KeyNotFoundError)
    assert ("'c'" if key == ("n", "c") else "zz") in str(caught.value)
    assert sorted(params.keys()) == ["n", "w"] and params.is_locked


def test_apply_in_place_writes_the_parameters() -> None:
    params = _locked()
    weight = params["w"]
    with torch.no_grad():  # autograd refuses an in-place write into a parameter
        out = params.apply(lambda v: v + 1, inplace=True)
    assert out is params and params["w"] is weight and params.is_locked
    assert torch.equal(weight.detach(), torch.ones(2)) and torch.equal(
        params["n", "b"], 2 * torch.ones(2)
    )


@pytest.mark.parametrize("mask", [torch.tensor([True, False]), torch.ones(3, dtype=torch.bool)])
def test_masked_select_in_place_is_refused_whatever_the_mask(mask: torch.Tensor) -> None:
    """``masked_select(mask, inplace=True)``: an ``UnsupportedError`` (a
    ``NotImplementedError``, as the peer's) before the mask is checked, the parameters
    left as they were (the selected copies would be no parameters of the module: program
    15,992,673 of methods,index,shape,combine L8); ``inplace=False`` selects."""
    params = TensorDictParams(TensorDict(w=torch.arange(2.0), batch_size=[2]))
    with pytest.raises(UnsupportedError, match="inplace=False") as info:
        params.masked_select(mask, inplace=True)
    assert isinstance(info.value, NotImplementedError)
    assert params.batch_size == torch.Size([2]) and isinstance(params["w"], nn.Parameter)
    assert [name for name, _ in params.named_parameters()] == ["w"]
    assert params.masked_select(torch.tensor([True, False]))["w"].tolist() == [0.0]
