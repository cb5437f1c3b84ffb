"""The record the sharded-dataset tests write, and the writer loop their child processes
run (imported by name in those processes, so that the record's class is the same one
there and in the test)."""

from __future__ import annotations

import time
from typing import Annotated, Any

import torch

import tclass
from tclass import Spec, TensorClass

UID_BLOCK = 1_000_000  # the uids of one shard: its base + 0, 1, 2, ...


class Row(TensorClass):
    """One row: ``uid`` is unique across the dataset; ``obs`` is derived from it, so a
    torn row shows."""

    uid: Annotated[torch.Tensor, Spec("", torch.int64)]
    obs: Annotated[torch.Tensor, Spec("3", torch.float32)]
    source: str = "sim"


def rows(start: int, count: int) -> Row:
    uid = torch.arange(start, start + count)
    obs = uid.to(torch.float32).unsqueeze(1) * torch.tensor([1.0, -1.0, 0.5])
    return Row(uid=uid, obs=obs, batch_size=[count])


def check_rows(batch: Row) -> list[int]:
    """The uids of ``batch``, after checking every row is whole."""
    expected = batch.uid.to(torch.float32).unsqueeze(1) * torch.tensor([1.0, -1.0, 0.5])
    assert torch.equal(batch.obs, expected), "a row's obs does not match its uid"
    uids: list[int] = batch.uid.tolist()
    return uids


def write_shard(
    path: str, shard_id: str, base: int, chunk: int, state: Any, appends: int, pace: float
) -> None:
    """Resume shard ``shard_id`` (uids ``base + 0, 1, ...``) and append ``chunk`` rows at
    a time, ``appends`` times (0: until killed or ``state.stop`` is set), sleeping
    ``pace`` seconds between appends. ``state.ready`` is set once the writer holds its
    shard; ``state.appending`` is 1 during each append, which took ``state.seconds`` last
    time; ``state.committed`` holds the rows the writer knows committed."""
    with tclass.shard_writer(path, Row, shard_id, mode="a") as writer:
        count = len(writer)
        state.committed.value = count
        state.ready.set()
        done = 0
        while not state.stop.is_set() and (appends == 0 or done < appends):
            began = time.perf_counter()
            state.appending.value = 1
            count = writer.append(rows(base + count, chunk))
            state.appending.value = 0
            state.seconds.value = time.perf_counter() - began
            state.committed.value = count
            done += 1
            time.sleep(pace)
