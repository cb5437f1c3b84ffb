"""A ``TensorDictParams`` saved inside another collection (a lazy stack's member, a
nested entry): ``memmap`` / ``memmap_like`` write what it wraps, a TensorDict, as it
saves at the top level and as the peer saves it; ``memmap_`` of a lazy stack of them moves
each one's parameters into the files, the same ``nn.Parameter`` objects kept (the peer
fails inside: its ``_is_memmap`` has no setter)."""

from __future__ import annotations

from pathlib import Path

import torch

import tclass
from tclass import TensorDict, TensorDictParams


def _params() -> TensorDictParams:
    data = {"w": torch.arange(4.0).view(2, 2), "n": {"i": torch.arange(2)}, "s": "tag"}
    return TensorDictParams(TensorDict(data, batch_size=[2]))


def test_a_lazy_stack_and_a_nested_entry_of_params_save_as_tensordicts(tmp_path: Path) -> None:
    params = _params()
    stack = tclass.lazy_stack([params, params.clone()], 0)
    saved = stack.memmap(tmp_path / "stack")
    loaded = tclass.load_memmap(tmp_path / "stack")
    for out in (saved, loaded):
        assert [type(m).__name__ for m in out.tensordicts] == ["TensorDict", "TensorDict"]
        assert torch.equal(out["w"], torch.stack([params["w"], params["w"]]))
        assert out[1]["s"] == "tag" and out.is_memmap()
    like = stack.memmap_like(tmp_path / "like")
    assert torch.equal(like["w"], torch.zeros(2, 2, 2)) and like.is_memmap()
    nested = TensorDict({"p": params}, [2]).memmap(tmp_path / "nested")
    assert type(nested["p"]).__name__ == "TensorDict"
    assert torch.equal(tclass.load_memmap(tmp_path / "nested")["p", "n", "i"], params["n", "i"])
    assert type(params["w"]) is torch.nn.Parameter and not params.is_memmap()  # unchanged


def test_memmap_in_place_of_a_lazy_stack_keeps_the_parameters(tmp_path: Path) -> None:
    stack = tclass.lazy_stack([_params(), _params()], 0)
    weights = [member["w"] for member in stack.tensordicts]
    assert stack.memmap_(tmp_path / "s") is stack
    assert stack.is_locked and stack.is_memmap()
    for member, weight in zip(stack.tensordicts, weights):
        assert type(member) is TensorDictParams and member["w"] is weight
        assert type(weight) is torch.nn.Parameter and weight.requires_grad
    with torch.no_grad():
        weights[1].add_(10.0)  # written through the parameter: into the file
    assert tclass.load_memmap(tmp_path / "s")[1]["w"].tolist() == [[10.0, 11.0], [12.0, 13.0]]


def test_memmap_of_a_locked_params_of_stacked_modules(tmp_path: Path) -> None:
    # decided (README "`memmap` of a locked one"): saved, where the peer's memmap writes
    # into the locked TensorDictParams and raises (program 15,911,703 of
    # methods,features,entries,records L12, fz29g)
    modules = [torch.nn.Linear(2, 3), torch.nn.Linear(2, 3)]
    params = TensorDict.from_modules(*modules, as_module=True)
    assert isinstance(params, TensorDictParams) and params.is_locked
    saved = params.memmap(tmp_path / "p", num_threads=2)
    assert saved.is_memmap() and saved.batch_size == (2,)
    assert torch.equal(saved["weight"], torch.stack([m.weight.detach() for m in modules]))
    assert torch.equal(tclass.load_memmap(tmp_path / "p")["bias"], params["bias"].detach())
