"""``td.load_memmap_(prefix)`` and ``load_memmap(prefix, out=td)``, as the peer: ``td``
ends up holding the loaded, memory-mapped leaves (writes reach the loaded folder; the
tensors it held are not written into, nothing is read before it is used), its nested
collections kept; a memory-mapped ``td`` moves to the loaded folder. A
``TensorDictParams`` keeps its registered parameters instead (data copied into them)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from tclass import (
    MemoryMappedTensor,
    NonTensorData,
    TensorDict,
    TensorDictParams,
    lazy_stack,
    tensorclass,
)
from tclass.errors import LockedError, ShapeError


def _saved(path: Path) -> None:
    TensorDict({"a": torch.arange(3.0), "n": {"b": torch.ones(2, 2)}}).memmap(path)


def test_load_memmap_gives_the_loaded_leaves_whose_writes_reach_the_folder(
    tmp_path: Path,
) -> None:
    _saved(tmp_path / "a")
    td = TensorDict({"a": torch.zeros(3), "n": {"b": torch.zeros(2, 2)}, "x": torch.zeros(1)})
    held, nested = td["a"], td["n"]
    assert td.load_memmap_(tmp_path / "a") is td
    assert sorted(td.keys(True, True), key=str) == [("n", "b"), "a"]
    assert td["n"] is nested and isinstance(td["n", "b"], MemoryMappedTensor)
    assert isinstance(td["a"], MemoryMappedTensor) and td["a"].tolist() == [0.0, 1.0, 2.0]
    assert not held.any() and not td.is_locked and td.device is None  # its own device
    on_cpu = TensorDict({"a": torch.zeros(3), "n": {"b": torch.zeros(2, 2)}}, device="cpu")
    assert on_cpu.load_memmap_(tmp_path / "a").device == torch.device("cpu")
    assert isinstance(on_cpu["a"], MemoryMappedTensor)
    td["a"][0] = 42.0
    td["n", "b"].zero_()
    td["c"] = torch.ones(2)  # a new entry stays in memory, as the peer's
    again = TensorDict.load_memmap(tmp_path / "a")
    assert again["a"].tolist() == [42.0, 1.0, 2.0] and not again["n", "b"].any()
    assert sorted(again.keys()) == ["a", "n"]


def test_a_memory_mapped_out_moves_to_the_loaded_folder(tmp_path: Path) -> None:
    _saved(tmp_path / "a")
    mapped = TensorDict({"a": torch.zeros(3), "n": {"b": torch.zeros(2, 2)}}).memmap(tmp_path / "m")
    mapped.load_memmap_(tmp_path / "a")
    assert mapped.is_locked and mapped.saved_path == tmp_path / "a"
    mapped["a"][1] = 7.0
    assert TensorDict.load_memmap(tmp_path / "a")["a"].tolist() == [0.0, 7.0, 2.0]
    assert not TensorDict.load_memmap(tmp_path / "m")["a"].any()  # its old folder untouched


def test_out_with_mode_r_gets_copy_on_write_leaves(tmp_path: Path) -> None:
    _saved(tmp_path / "a")
    td = TensorDict({"a": torch.zeros(3), "n": {"b": torch.zeros(2, 2)}})
    TensorDict.load_memmap(tmp_path / "a", out=td, mode="r")["a"][0] = 5.0
    assert td["a"].tolist() == [5.0, 1.0, 2.0]
    assert TensorDict.load_memmap(tmp_path / "a")["a"].tolist() == [0.0, 1.0, 2.0]


def test_a_record_loads_its_fields_alike(tmp_path: Path) -> None:
    @tensorclass
    class Pair:
        x: torch.Tensor
        y: torch.Tensor

    Pair(x=torch.arange(2.0), y=torch.ones(2), batch_size=[2]).memmap(tmp_path / "p")
    pair = Pair(x=torch.zeros(2), y=torch.zeros(2), batch_size=[2])
    pair.load_memmap_(tmp_path / "p")
    assert isinstance(pair.x, MemoryMappedTensor) and pair.x.tolist() == [0.0, 1.0]
    pair.y[0] = 3.0
    assert Pair.load_memmap(tmp_path / "p").y.tolist() == [3.0, 1.0]


def test_params_keep_their_registered_objects_and_leave_the_folder_alone(
    tmp_path: Path,
) -> None:
    module = nn.Linear(2, 2)
    TensorDict.from_module(nn.Linear(2, 2)).detach().apply(torch.ones_like).memmap(tmp_path / "c")
    params = TensorDictParams(TensorDict.from_module(module))
    weight = params["weight"]
    params.load_memmap_(tmp_path / "c")
    assert params["weight"] is weight and isinstance(weight, nn.Parameter)
    assert bool((weight == 1).all()) and list(params.parameters())[0] is weight
    with torch.no_grad():
        weight.zero_()
    params["extra"] = torch.zeros(1)  # a new entry stays in memory
    assert TensorDict.load_memmap(tmp_path / "c")["weight"].tolist() == [[1.0, 1.0]] * 2
    assert sorted(TensorDict.load_memmap(tmp_path / "c").keys()) == ["bias", "weight"]


def test_a_lazy_stack_of_params_loads_into_its_members_registered_objects(
    tmp_path: Path,
) -> None:
    """``load_memmap_`` into a lazy stack whose members are TensorDictParams: each member
    loads as its own ``load_memmap_`` (the peer's loads too; it was "cannot walk a
    TensorDictParams": differential program 15,861,119)."""
    members = [TensorDictParams(TensorDict.from_module(nn.Linear(2, 2))) for _ in range(2)]
    stack = lazy_stack(members, 0)
    stack.apply(torch.ones_like).memmap(tmp_path / "s")
    weight = members[0]["weight"]
    out = stack.load_memmap_(tmp_path / "s")
    assert out is stack and all(a is b for a, b in zip(out.tensordicts, members))
    assert out.tensordicts[0]["weight"] is weight and isinstance(weight, nn.Parameter)
    assert bool((out["weight"] == 1).all()) and not isinstance(weight, MemoryMappedTensor)
    other = [TensorDictParams(TensorDict({"weight": torch.zeros(3, 2)}, [3])) for _ in range(2)]
    with pytest.raises(ShapeError, match="batch size"):  # checked before anything is written
        lazy_stack(other, 0).load_memmap_(tmp_path / "s")
    assert not other[0]["weight"].any()


def test_a_value_over_more_dims_than_its_parent_keeps_them(tmp_path: Path) -> None:
    """A ``NonTensorData`` over dims its collection lacks (``from_tuple(..., batch_dims=2)``
    of a record's values keeps the label's ``[1, 2]`` under a batch size ``[]``) is saved
    without dims of its own and loads at its parent's; loaded into a collection holding
    it, it keeps the dims it had, as the peer's (program 15,851,683 of
    methods,index,shape,combine, --length 12, fz28e)."""
    td = TensorDict({"a": torch.zeros(1, 2), "s": NonTensorData("x y", batch_size=[1, 2])}, [])
    td.memmap(tmp_path / "v")
    assert TensorDict.load_memmap(tmp_path / "v").get("s").batch_size == torch.Size([])
    out = td.clone().load_memmap_(tmp_path / "v")
    value = out.get("s")
    assert type(value) is NonTensorData and value.batch_size == torch.Size([1, 2])
    assert out["s"] == "x y" and isinstance(out["a"], MemoryMappedTensor)


def test_a_locked_out_that_is_not_memory_mapped_is_refused_as_by_the_peer(
    tmp_path: Path,
) -> None:
    _saved(tmp_path / "a")
    locked = TensorDict({"a": torch.zeros(3), "n": {"b": torch.zeros(2, 2)}}).lock_()
    with pytest.raises(LockedError, match="unlock_"):
        locked.load_memmap_(tmp_path / "a")
    with pytest.raises(RuntimeError):
        TensorDict.load_memmap(tmp_path / "a", out=locked)
    assert not locked["a"].any() and not isinstance(locked["a"], MemoryMappedTensor)
