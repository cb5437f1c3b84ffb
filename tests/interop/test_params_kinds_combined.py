"""``TensorDictParams`` of a TensorDict holding records (nu25c's programs combining two
kinds): its ``to_tensordict`` gives plain tensors everywhere, as the peer's, and its
``memmap_`` / ``load_memmap_`` reach the records' tensors and keep them registered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict, TensorDictParams

peer = pytest.importorskip("tensordict")


_CLASSES: dict[str, tuple[Any, Any]] = {}


def _classes(lib: Any) -> tuple[Any, Any]:
    # one pair per library, so that load_memmap finds one class of each name
    if lib.__name__ not in _CLASSES:

        @lib.tensorclass
        class In:
            c: torch.Tensor

        @lib.tensorclass
        class Rec:
            a: torch.Tensor
            n: In

        _CLASSES[lib.__name__] = (In, Rec)
    return _CLASSES[lib.__name__]


def _params(lib: Any) -> Any:
    In, Rec = _classes(lib)  # noqa: N806
    rec = Rec(
        a=torch.arange(6.0).reshape(2, 3),
        n=In(c=torch.arange(8.0).reshape(2, 4), batch_size=[2]),
        batch_size=[2],
    )
    return lib.TensorDictParams(lib.TensorDict(r=rec, x=torch.ones(2), batch_size=[2]))


def test_to_tensordict_of_params_holding_records_gives_plain_tensors() -> None:
    # the records' leaves stayed Parameters (x, at the top, did not): the peer's are tensors
    out = _params(tclass).to_tensordict()
    expected = _params(peer).to_tensordict()
    assert type(out) is TensorDict
    for key in [("r", "a"), ("r", "n", "c"), ("x",)]:
        assert type(out[key]) is torch.Tensor, key
        assert type(expected[key]) is torch.Tensor
        assert torch.equal(out[key], expected[key].detach())
    assert out["r", "a"].grad_fn is not None  # still in the graph, as the peer's clone
    assert type(out["r"]) is TensorDict and type(out["r", "n"]) is TensorDict


def test_memmap_in_place_of_params_holding_a_record(tmp_path: Path) -> None:
    # memmap_ raised AttributeError: 'In' object has no attribute '_put'
    params = _params(tclass)
    registered = dict(params.named_parameters())
    params.memmap_(tmp_path / "p")
    assert params.is_memmap() and params.is_locked
    assert dict(params.named_parameters()).keys() == {"r.a", "r.n.c", "x"}
    assert params["r", "n", "c"] is registered["r.n.c"]  # the same objects stay registered
    with torch.no_grad():
        params["r", "n", "c"].fill_(5.0)
    loaded = tclass.load_memmap(tmp_path / "p")
    assert torch.equal(loaded["r", "n", "c"], torch.full((2, 4), 5.0))
    assert torch.equal(loaded["r", "a"], torch.arange(6.0).reshape(2, 3))


def test_load_memmap_into_params_holding_a_record(tmp_path: Path) -> None:
    saved = _params(tclass).data.apply(lambda t: t + 10)
    saved.memmap(tmp_path / "s")
    params = _params(tclass)
    registered = dict(params.named_parameters())
    params.load_memmap_(tmp_path / "s")
    assert params["r", "a"] is registered["r.a"]
    assert type(params["r", "n", "c"]) is torch.nn.Parameter
    assert torch.equal(params["r", "n", "c"].detach(), torch.arange(8.0).reshape(2, 4) + 10)
    assert torch.equal(params["x"].detach(), torch.full((2,), 11.0))


def test_params_to_tensordict_keeps_python_values() -> None:
    params = TensorDictParams(TensorDict(x=torch.ones(2), s="hi", batch_size=[2]))
    out = params.to_tensordict()
    assert out["s"] == "hi" and type(out["x"]) is torch.Tensor and not out.is_locked
