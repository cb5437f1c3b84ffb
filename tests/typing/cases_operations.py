"""Methods a record gains: indexing, moves, shape ops, persistence, stacking."""

from __future__ import annotations

from pathlib import Path

import torch
from records import DStep, Inner, Step, dstep, step
from typing_extensions import assert_type

import tclass
from tclass import LazyStackedTensorDict, MemoryMappedTensor, TensorDict


def indexing() -> None:
    s, d = step(), dstep()
    assert_type(s[0], Step)
    assert_type(s[1:], Step)
    assert_type(s[torch.tensor([0, 2])], Step)
    assert_type(s[s.obs[:, 0] > 0], Step)
    assert_type(s[0].obs, torch.Tensor)
    assert_type(d[0], DStep)
    assert_type(d[torch.tensor([0, 2])], DStep)
    assert_type(d[0].inner.z, torch.Tensor)
    assert_type(list(s), list[Step])
    assert_type(list(d), list[DStep])


def moves_and_copies() -> None:
    s, d = step(), dstep()
    assert_type(s.to("cpu"), Step)
    assert_type(s.to(torch.float64), Step)
    assert_type(d.to("cpu", non_blocking=True), DStep)
    assert_type(s.cpu(), Step)
    assert_type(s.clone(), Step)
    assert_type(d.clone(), DStep)
    assert_type(d.detach(), DStep)
    assert_type(s.consolidate(), Step)
    assert_type(s.share_memory_(), Step)
    assert_type(s.apply(lambda x: x + 1), Step)
    assert_type(d.named_apply(lambda key, x: x), DStep)


def apply_functions() -> None:
    """Each form of ``apply``/``named_apply``/``apply_`` returns the caller's type. (The
    types of the lambda's parameters are checked with pyright, tests/pyright/: mypy
    checks a lambda given to an overloaded method against each overload in turn, and
    ``assert_type`` inside it sees ``Any`` in the first pass.)"""
    s, d = step(), dstep()
    assert_type(d.apply(lambda x, y: x + y, d), DStep)
    assert_type(s.apply(lambda x: x.float(), batch_size=[3], inplace=False), Step)
    assert_type(s.named_apply(lambda k, x: x, nested_keys=True), Step)
    assert_type(d.named_apply(lambda k, x, y: x + y, d, batch_size=[3]), DStep)
    assert_type(d.apply_(lambda x: x.zero_()), DStep)
    assert_type(s.apply_(lambda x, y: x.copy_(y), s), Step)
    # Options that hand fn nested collections or a default: any value, any result kind.
    assert_type(s.apply(lambda x: x, call_on_nested=True), Step)
    assert_type(d.apply(lambda x, y, z: x, d, d, default=None), DStep)


def shapes() -> None:
    s, d = step(), dstep()
    assert_type(s.reshape(-1), Step)
    assert_type(d.reshape(3, 1), DStep)
    assert_type(s.unsqueeze(0), Step)
    assert_type(d.unsqueeze(-1), DStep)
    assert_type(s.expand(2, 3), Step)
    assert_type(s.permute(0), Step)
    assert_type(s.unbind(0), tuple[Step, ...])
    assert_type(d.split(1), tuple[DStep, ...])
    assert_type(d.chunk(3), tuple[DStep, ...])


def persistence(folder: Path) -> None:
    s, d = step(), dstep()
    assert_type(s.memmap(folder), Step)
    assert_type(d.memmap(folder, num_threads=2), DStep)
    assert_type(s.memmap_(folder), Step)
    assert_type(d.memmap_like(folder), DStep)
    assert_type(Step.load_memmap(folder), Step)
    assert_type(DStep.load_memmap(folder, device="meta"), DStep)
    assert_type(tclass.load_memmap(folder, cls=Step), Step)
    assert_type(tclass.load_memmap(folder, cls=DStep), DStep)
    assert_type(tclass.load_memmap(folder), tclass.TensorDictBase)
    assert_type(Step.load_memmap(folder, mode="r", subpath=("a", "b")), Step)
    assert_type(tclass.load_memmap(folder, cls=Step, subpath="a/b", mode="r+"), Step)
    assert_type(s.memmap(folder, durable=True), Step)
    assert_type(s.load_memmap_(folder, mode="r"), Step)
    assert_type(s.is_memmap(), bool)
    assert_type(tclass.memmap(d, folder, existsok=False), DStep)
    assert_type(tclass.save(s, folder, allow_pickle=True), Step)
    s.memmap(folder, num_thread=2)  # type: ignore[call-arg]
    d.memmap_like(folder, durable="yes")  # type: ignore[arg-type]


def archives_and_growth(folder: Path) -> None:
    s, d = step(), dstep()
    assert_type(s.save(folder / "s.tdz"), Step)
    assert_type(d.memmap(folder, archive=True, compression="deflate"), DStep)
    assert_type(s.append_memmap_(s), Step)
    assert_type(d.append_memmap_(d, durable=True), DStep)
    assert_type(tclass.append_memmap(folder, s), None)
    assert_type(tclass.pack_memmap(folder, folder / "x.tdz"), Path)
    assert_type(tclass.unpack_memmap(folder / "x.tdz", folder), Path)
    assert_type(tclass.is_memmap_archive(folder), bool)
    assert_type(Step.from_h5(folder / "x.h5"), Step)
    assert_type(DStep.from_h5(folder / "x.h5", mode="r+", allow_external=True), DStep)
    assert_type(Step.from_h5(folder / "x.h5").inner, Inner)
    assert_type(tclass.TensorDict.from_h5(folder / "x.h5"), tclass.TensorDictBase)
    assert_type(tclass.from_h5(folder / "x.h5"), tclass.TensorDictBase)
    assert_type(s.close(), None)
    Step.from_h5(folder / "x.h5", allow_externals=True)  # type: ignore[call-arg]
    assert_type(Step.from_zarr(folder / "x.zarr"), Step)
    assert_type(DStep.from_zarr(folder / "x.zarr", mode="r+", allow_pickle=True), DStep)
    assert_type(tclass.TensorDict.from_zarr(folder / "x.zarr"), tclass.TensorDictBase)
    assert_type(tclass.from_zarr(folder / "x.zarr", batch_dims=1), tclass.TensorDictBase)
    Step.from_zarr(folder / "x.zarr", allow_external=True)  # type: ignore[call-arg]
    params = tclass.TensorDictParams(TensorDict({"w": torch.zeros(2)}, []))
    assert_type(params.clone(), tclass.TensorDictParams)
    assert_type(params.to(torch.float64), tclass.TensorDictParams)
    d.save(folder, archive="yes")  # type: ignore[arg-type]


def stacking() -> None:
    s, d = step(), dstep()
    assert_type(tclass.stack([s, s]), Step)
    assert_type(tclass.stack([d, d], dim=0), DStep)
    assert_type(tclass.cat([s, s]), Step)
    assert_type(tclass.cat([d, d]), DStep)
    assert_type(tclass.lazy_stack([s, s]), Step)
    assert_type(tclass.lazy_stack([d, d]), DStep)
    assert_type(tclass.maybe_dense_stack([d, d]), DStep)
    td = TensorDict({"a": torch.zeros(2)}, batch_size=[2])
    assert_type(tclass.stack([td, td]), TensorDict)
    assert_type(tclass.lazy_stack([td, td]), LazyStackedTensorDict[TensorDict])


def engine_and_memmap(folder: Path) -> None:
    td = TensorDict({"a": torch.zeros(2)}, batch_size=[2])
    assert_type(td[0], TensorDict)
    assert_type(td[:, None], TensorDict)
    assert_type(td[torch.tensor([True, False])], TensorDict)
    lazy = tclass.lazy_stack([td, td])
    assert_type(lazy[1:], LazyStackedTensorDict[TensorDict])
    assert_type(td.to("cpu"), TensorDict)
    assert_type(td.clone(), TensorDict)
    assert_type(TensorDict.load_memmap(folder), TensorDict)
    assert_type(td.batch_size, torch.Size)
    assert_type(MemoryMappedTensor.empty(3, 4, dtype=torch.uint8), MemoryMappedTensor)
    assert_type(MemoryMappedTensor.zeros((2, 2)), MemoryMappedTensor)
    assert_type(MemoryMappedTensor.from_tensor(torch.zeros(2)), MemoryMappedTensor)
    assert_type(
        MemoryMappedTensor.from_filename(folder / "a.memmap", torch.float32, [2]),
        MemoryMappedTensor,
    )
    assert_type(
        MemoryMappedTensor.empty_like(torch.zeros(2), filename=folder / "b"), MemoryMappedTensor
    )
    assert_type(MemoryMappedTensor.full((2,), fill_value=3), MemoryMappedTensor)


def expected_errors(folder: Path) -> None:
    s = step()
    s.reshape("x")  # type: ignore[arg-type]
    Step.load_memmap(folder, device=[1])  # type: ignore[arg-type]
    Step.load_memmap(folder, mode="w")  # type: ignore[arg-type]
