"""Sharded datasets: writers and datasets carry the record class they were given."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import torch
from records import DStep, Step, dstep, step
from typing_extensions import assert_type

import tclass
from tclass import ShardedDataset, ShardInfo, ShardWriter, TensorDict


def writers(folder: Path) -> None:
    assert_type(tclass.shard_writer(folder, Step), ShardWriter[Step])
    assert_type(tclass.shard_writer(folder, step(), "s-0", mode="a"), ShardWriter[Step])
    assert_type(tclass.shard_writer(folder, DStep), ShardWriter[DStep])
    rows = TensorDict(obs=torch.zeros(2, 3), batch_size=[2])
    assert_type(tclass.shard_writer(folder, rows, durable=True), ShardWriter[TensorDict])
    with tclass.shard_writer(folder, Step) as writer:
        assert_type(writer, ShardWriter[Step])
        assert_type(writer.append(step()), int)
        assert_type(writer.shard_id, str)
        writer.append(dstep())  # type: ignore[arg-type]
    tclass.shard_writer(folder, Step, mode="w")  # type: ignore[call-overload]


def datasets(folder: Path) -> None:
    data = tclass.open_sharded(folder, Step)
    assert_type(data, ShardedDataset[Step])
    assert_type(data[0], Step)
    assert_type(data[1:5], Step)
    assert_type(data[torch.tensor([3, 0])], Step)
    assert_type(data[[3, 0]], Step)
    assert_type(len(data), int)
    assert_type(data.refresh(), ShardedDataset[Step])
    assert_type(data.indices(7, num_workers=4, worker_id=1), torch.Tensor)
    assert_type(data.iter_batches(32, seed=7), Iterator[Step])
    assert_type(iter(data), Iterator[Step])
    assert_type(data.shards, tuple[ShardInfo, ...])
    assert_type(data.shards[0].rows, int)
    assert_type(ShardedDataset(folder, DStep)[0], DStep)
    print(data[0].missing)  # type: ignore[attr-defined]
    print(data["obs"])  # type: ignore[index]
