"""``TensorDictParams`` holding a lazy stack or a record over a file (lo26e). ``memmap_``
of one holding a lazy stack (built with it, or set in later, as the peer allows) wrote
the files, then failed with an ``AttributeError`` from the lazy stack's missing
``_put``; it now moves the members' parameters into the files, the same objects (the
peer refuses ``memmap_`` of params, and fails nested after creating the folder).
A record over an HDF5 file inside params raised a ``TypeError`` from the file's
``_put`` at init: it is read into memory, as a file held there is (README)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from tclass import (
    LazyStackedTensorDict,
    MemoryMappedTensor,
    PersistentTensorDict,
    TensorDict,
    TensorDictParams,
    lazy_stack,
    load_memmap,
    tensorclass,
)
from tclass.errors import HeterogeneousEntryError


@tensorclass
class _Rec:
    c: torch.Tensor


def _stack() -> LazyStackedTensorDict:
    return lazy_stack([TensorDict(c=torch.zeros(3)), TensorDict(c=torch.ones(3))])


def _params(at_init: bool) -> TensorDictParams:
    if at_init:
        return TensorDictParams(TensorDict(w=torch.ones(2), l=_stack(), batch_size=[2]))
    params = TensorDictParams(TensorDict(w=torch.ones(2), batch_size=[2]))
    params["l"] = _stack()
    return params


@pytest.mark.parametrize("at_init", [True, False])
@pytest.mark.parametrize("nested", [False, True])
def test_memmap_in_place_of_params_holding_a_lazy_stack(
    tmp_path: Path, at_init: bool, nested: bool
) -> None:
    params = _params(at_init)
    w, members = params["w"], [member["c"] for member in params["l"].tensordicts]
    assert all(type(leaf) is nn.Parameter for leaf in members)
    if nested:
        td = TensorDict(p=params, batch_size=[2])
        td.memmap_(tmp_path / "m")
        assert td["p"] is params and td.is_memmap()
    else:
        assert params.memmap_(tmp_path / "m") is params
    assert params.is_memmap() and params.is_locked
    assert params["w"] is w and [m["c"] for m in params["l"].tensordicts] == members
    assert all(type(leaf) is nn.Parameter for leaf in members)
    with torch.no_grad():
        members[0].add_(5)  # in place, in the file
    loaded = load_memmap(tmp_path / "m")
    got = loaded["p"] if nested else loaded
    assert type(got["l"]) is LazyStackedTensorDict
    assert torch.equal(got["l", "c"], torch.tensor([[5.0] * 3, [1.0] * 3]))
    assert torch.equal(got["w"], torch.ones(2))


@pytest.mark.parametrize("method", ["memmap", "memmap_like"])
def test_memmap_copies_of_params_holding_a_lazy_stack(tmp_path: Path, method: str) -> None:
    params = _params(at_init=True)
    saved = getattr(params, method)(tmp_path / "m")
    assert type(saved) is TensorDict and type(saved["l"]) is LazyStackedTensorDict
    assert all(type(m["c"]) is MemoryMappedTensor for m in saved["l"].tensordicts)
    expected = _stack()["c"] if method == "memmap" else torch.zeros(2, 3)
    assert torch.equal(load_memmap(tmp_path / "m")["l", "c"], expected)
    assert type(params["l"].tensordicts[0]["c"]) is nn.Parameter  # the params unchanged


def _record_over_file(folder: Path) -> _Rec:
    pytest.importorskip("h5py")
    inner = TensorDict(c=torch.arange(6.0).reshape(2, 3), batch_size=[2])
    return _Rec.from_tensordict(PersistentTensorDict.from_dict(inner, filename=folder / "f.h5"))


def test_params_holding_a_record_over_a_lazy_stack_move_its_members_into_files(
    tmp_path: Path,
) -> None:
    # raised AttributeError (the lazy stack's _put) at init, converting the record's fields
    stack = lazy_stack(
        [_Rec(c=torch.zeros(3), batch_size=[]), _Rec(c=torch.ones(3), batch_size=[])]
    )
    params = TensorDictParams(TensorDict(w=torch.ones(2), r=stack, batch_size=[2]))
    members = [member["c"] for member in params["r"]._tensordict.tensordicts]
    assert all(type(leaf) is nn.Parameter for leaf in members)
    params.memmap_(tmp_path / "m")
    assert params.is_memmap()
    assert [m["c"] for m in params["r"]._tensordict.tensordicts] == members
    with torch.no_grad():
        members[1].mul_(3)
    assert torch.equal(load_memmap(tmp_path / "m")["r"].c, torch.tensor([[0.0] * 3, [3.0] * 3]))


@pytest.mark.parametrize("how", ["nested", "set", "top"])
def test_a_record_over_a_file_in_params_is_read_into_memory(tmp_path: Path, how: str) -> None:
    record = _record_over_file(tmp_path)
    if how == "top":
        params = TensorDictParams(record)
        leaf, names = params.get("c"), {"c"}
    else:
        if how == "nested":
            params = TensorDictParams(TensorDict(w=torch.ones(2), r=record, batch_size=[2]))
        else:
            params = TensorDictParams(TensorDict(w=torch.ones(2), batch_size=[2]))
            params["r"] = record
        assert type(params["r"]) is _Rec and type(params["r"]._tensordict) is TensorDict
        leaf, names = params["r", "c"], {"w", "r.c"}
    assert type(leaf) is nn.Parameter
    assert {name for name, _ in params.named_parameters()} == names
    with torch.no_grad():
        leaf.add_(1)
    assert torch.equal(record.c, torch.arange(6.0).reshape(2, 3))  # the file is unchanged
    if how != "top":
        td = TensorDict(p=params, batch_size=[2])
        td.memmap_(tmp_path / "m")
        assert params["r", "c"] is leaf and td.is_memmap()
        assert torch.equal(
            load_memmap(tmp_path / "m")["p", "r"].c, torch.arange(1.0, 7.0).reshape(2, 3)
        )


@pytest.mark.parametrize("at_init", [True, False])
def test_a_ragged_lazy_stack_is_refused_before_any_file(tmp_path: Path, at_init: bool) -> None:
    # it was held, then named_parameters() / memmap_ (after writing the files) failed
    # stacking it; the peer's set refuses it (RuntimeError)
    ragged = lazy_stack([TensorDict(c=torch.zeros(3)), TensorDict(c=torch.ones(4))])
    params = TensorDictParams(TensorDict(w=torch.ones(2), batch_size=[2]))
    with pytest.raises(HeterogeneousEntryError, match=r"cannot hold this lazy stack.*entry 'c'"):
        if at_init:
            TensorDictParams(TensorDict(w=torch.ones(2), l=ragged, batch_size=[2]))
        else:
            params["l"] = ragged
    assert isinstance(HeterogeneousEntryError("x"), RuntimeError)
    assert "l" not in params.keys() and [n for n, _ in params.named_parameters()] == ["w"]
    params.memmap_(tmp_path / "m")
    assert torch.equal(load_memmap(tmp_path / "m")["w"], torch.ones(2))


def _records_over_files(folder: Path) -> list[_Rec]:
    pytest.importorskip("h5py")
    records = []
    for i in range(2):
        inner = TensorDict(c=torch.arange(3.0) + i, batch_size=[3])
        file = PersistentTensorDict.from_dict(inner, filename=folder / f"f{i}.h5")
        file.close()
        records.append(_Rec.from_tensordict(PersistentTensorDict.from_h5(folder / f"f{i}.h5")))
    return records


@pytest.mark.parametrize("at_init", [True, False])
def test_params_holding_a_lazy_stack_of_records_over_files(tmp_path: Path, at_init: bool) -> None:
    # lo27b: the members are read into memory, as one record over a file is; memmap_
    # writes the parameters, the HDF5 files are unchanged
    stack = lazy_stack(_records_over_files(tmp_path))
    if at_init:
        params = TensorDictParams(TensorDict(w=torch.ones(2), r=stack, batch_size=[2]))
    else:
        params = TensorDictParams(TensorDict(w=torch.ones(2), batch_size=[2]))
        params["r"] = stack
    members = [member["c"] for member in params["r"]._tensordict.tensordicts]
    assert all(type(leaf) is nn.Parameter for leaf in members)
    params.memmap_(tmp_path / "m")
    assert params.is_memmap() and [m["c"] for m in params["r"]._tensordict.tensordicts] == members
    with torch.no_grad():
        members[0].add_(5)
    expected = torch.tensor([[5.0, 6.0, 7.0], [1.0, 2.0, 3.0]])
    assert torch.equal(load_memmap(tmp_path / "m")["r"].c, expected)
    assert torch.equal(stack[0].c, torch.arange(3.0))  # the file is unchanged


def test_params_of_a_record_over_a_lazy_stack_is_refused_as_the_stack(tmp_path: Path) -> None:
    # it said "takes a TensorDict, a record or a dict of named tensors, got a _Rec"; the
    # peer wraps it and registers none of its tensors
    stack = lazy_stack(_records_over_files(tmp_path))
    with pytest.raises(NotImplementedError, match=r"cannot wrap a lazy stack \(a _Rec over a"):
        TensorDictParams(stack)


def _held_stack() -> TensorDictParams:
    stack = lazy_stack([TensorDict(w=torch.ones(3)), TensorDict(w=torch.zeros(3))])
    return TensorDictParams(TensorDict(l=stack, v=torch.ones(2)))


class _Holder(nn.Module):
    def __init__(self, params: TensorDictParams) -> None:
        super().__init__()
        self.p = params


def test_the_module_lists_a_held_lazy_stack_s_members() -> None:
    # the module's tables listed the stacked copy "l.w" (a new tensor at each read) as a
    # buffer: an optimizer missed the members, load_state_dict wrote into the copy and
    # lost the values while reporting every key matched, and module.to() replaced the
    # members' parameters by plain tensors (hn34d)
    params = _held_stack()
    members = [member["w"] for member in params["l"].tensordicts]
    assert dict(params.named_parameters()) == {
        "l.0.w": members[0],
        "l.1.w": members[1],
        "v": params["v"],
    }
    assert list(params.named_buffers()) == []
    assert list(_Holder(params).state_dict()) == ["p.l.0.w", "p.l.1.w", "p.v"]
    loss = (params["l", "w"] * 2).sum()
    loss.backward()
    torch.optim.SGD(params.parameters(), lr=1.0).step()
    assert torch.equal(members[0], torch.full((3,), -1.0)) and torch.equal(
        members[1], torch.full((3,), -2.0)
    )


def test_load_state_dict_and_module_to_reach_a_held_lazy_stack_s_members() -> None:
    source, params = _held_stack(), _held_stack()
    with torch.no_grad():
        source.apply_(lambda leaf: leaf.data.add_(5.0))
    holder = _Holder(params)
    assert not holder.load_state_dict(_Holder(source).state_dict()).missing_keys
    members = params["l"].tensordicts
    assert torch.equal(members[0]["w"], torch.full((3,), 6.0))
    assert torch.equal(members[1]["w"], torch.full((3,), 5.0))
    holder.to(torch.float64)
    for member in params["l"].tensordicts:
        assert type(member["w"]) is nn.Parameter and member["w"].dtype == torch.float64
    with pytest.raises(RuntimeError, match="Missing key"):
        holder.load_state_dict({"p.v": torch.ones(2), "p.l.w": torch.ones(2, 3)})


@pytest.mark.parametrize("held", ["lazy stack", "record"])
def test_clone_and_to_of_params_holding_a_lazy_stack_or_a_record(held: str) -> None:
    # clone() shared the held lazy stack's members and the record's tensors with the
    # original (a write into the copy, a target network's soft update, changed the
    # source; the peer's clone copies them), and to(dtype) gave them as plain tensors,
    # no longer parameters (hn34d)
    def leaves(p: TensorDictParams) -> list[torch.Tensor]:
        return [p["h"].c] if held == "record" else [m["c"] for m in p["h"].tensordicts]

    value: object = _Rec(c=torch.ones(3), batch_size=[])
    if held == "lazy stack":
        value = lazy_stack([TensorDict(c=torch.ones(3)), TensorDict(c=torch.zeros(3))])
    params = TensorDictParams(TensorDict(h=value, w=torch.ones(2)))
    names = [name for name, _ in params.named_parameters()]
    copy = params.clone()
    assert type(copy["h"]) is type(params["h"])
    assert [name for name, _ in copy.named_parameters()] == names
    for new, old in zip(leaves(copy), leaves(params)):
        assert type(new) is nn.Parameter and new is not old
        with torch.no_grad():
            new.add_(5.0)
        assert not torch.equal(new, old)
    moved = params.to(torch.float64)
    assert [name for name, _ in moved.named_parameters()] == names
    assert all(type(leaf) is nn.Parameter and leaf.dtype == torch.float64 for leaf in leaves(moved))
