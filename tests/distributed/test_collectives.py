"""The peer's remaining collectives, ``reduce``, ``gather_and_stack``, ``scatter`` and the
cold start ``init_remote`` / ``from_remote_init``, on real gloo ranks (spawned once per
module, as in ``test_distributed.py``), for TensorDicts, records and Python values; the
results are checked against what torch's own collectives give on the same tensors."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import torch
import torch.distributed as dist
from test_distributed import Ranks  # noqa: E402

from tclass import LazyStackedTensorDict, TensorClass, TensorDict
from tclass.errors import (
    DistributedError,
    ShapeError,
    StructureMismatchError,
    UnsupportedError,
)


class Sample(TensorClass):
    obs: torch.Tensor
    label: str = "none"


@pytest.fixture(scope="module")
def ranks() -> Iterator[Ranks]:
    pool = Ranks(world=3)
    yield pool
    pool.close()


def _leaves(rank: int) -> TensorDict:
    return TensorDict(
        {
            "a": torch.arange(6.0).reshape(3, 2) * (rank + 1),
            "n": {
                "i": torch.arange(3) + rank,
                "t": torch.arange(12.0).reshape(4, 3).t() * (rank + 1),
            },
        },
        batch_size=[3],
    )


# --- reduce -------------------------------------------------------------------------------


def _reduce(rank: int, bucket_bytes: int | None, op: Any) -> dict[str, Any]:
    td = _leaves(rank)
    expected = {}
    for key, leaf in td.items(include_nested=True, leaves_only=True):
        copy = leaf.clone().contiguous()
        dist.reduce(copy, 0, dist.ReduceOp.SUM if op is None else op)
        expected[key] = copy
    assert td.reduce(0, op, bucket_bytes=bucket_bytes) is None
    if rank != 0:
        return {}
    return {str(k): (td.get(k), expected[k]) for k in expected}


@pytest.mark.parametrize("bucket_bytes", [None, 1 << 20])
@pytest.mark.parametrize("op", [None, dist.ReduceOp.MAX])
def test_reduce_writes_the_reduction_into_rank_dst(
    ranks: Ranks, bucket_bytes: int | None, op: Any
) -> None:
    results = ranks.run(_reduce, bucket_bytes, op)
    for got, expected in results[0].values():
        assert torch.equal(got, expected)


def _reduce_premature(rank: int) -> list[float]:
    td = TensorDict(a=torch.full((2,), float(rank)), b=torch.ones(2, 3)[:, 0], batch_size=[2])
    handles = td.reduce(1, async_op=True, return_premature=True, bucket_bytes=64)
    assert isinstance(handles, list) and handles
    for handle in handles:
        handle.wait()
    return td["a"].tolist() + td["b"].tolist()


def test_reduce_returns_the_requests_when_premature(ranks: Ranks) -> None:
    results = ranks.run(_reduce_premature)
    assert results[1] == [3.0, 3.0, 3.0, 3.0]  # 0 + 1 + 2, and 1 + 1 + 1


def _reduce_mismatch(rank: int) -> str:
    td = TensorDict(a=torch.zeros(2 + (rank == 2)), batch_size=[])
    try:
        td.reduce(0)
    except StructureMismatchError as error:
        return str(error)
    return "no error"


def test_reduce_refuses_different_records_on_every_rank(ranks: Ranks) -> None:
    for message in ranks.run(_reduce_mismatch):
        assert "rank 2" in message


# --- gather_and_stack ---------------------------------------------------------------------


def _gather(rank: int) -> Any:
    if rank == 1:
        out = Sample(obs=torch.zeros(2, 3), label="mine", batch_size=[2])
        assert out.gather_and_stack(1) is out
        return out.obs.tolist(), out.label
    record = Sample(obs=torch.full((3,), float(rank)), label=f"from {rank}", batch_size=[])
    assert record.gather_and_stack(1) is None
    return None


def test_gather_and_stack_writes_the_other_ranks_into_rows(ranks: Ranks) -> None:
    obs, label = ranks.run(_gather)[1]
    assert obs == [[0.0] * 3, [2.0] * 3]
    assert label == ["from 0", "from 2"]


def _gather_wrong_rows(rank: int) -> str:
    td = TensorDict(a=torch.full((5, 2), float(rank)), batch_size=[5])
    try:
        out = td.gather_and_stack(0)
    except ShapeError as error:
        return str(error) + f" (kept {td['a'][:, 0].tolist()})"
    return f"sent: {out}"


def test_gather_and_stack_needs_one_row_per_other_rank(ranks: Ranks) -> None:
    # the refusing rank still takes (and drops) what the others send: no sender is left
    # blocked (the peer's return too), and the group goes on working
    results = ranks.run(_gather_wrong_rows, timeout=30)
    assert "first batch dim of 2" in results[0] and "(kept [0.0, 0.0, 0.0, 0.0, 0.0])" in results[0]
    assert results[1:] == ["sent: None", "sent: None"]
    obs, label = ranks.run(_gather)[1]
    assert obs == [[0.0] * 3, [2.0] * 3] and label == ["from 0", "from 2"]


# --- scatter ------------------------------------------------------------------------------


def _scatter(rank: int) -> Any:
    parts = None
    if rank == 2:
        parts = [
            Sample(obs=torch.full((2, 2), float(r)), label=f"to {r}", batch_size=[2])
            for r in range(3)
        ]
    got = TensorDict().scatter(2, parts)
    return type(got).__name__, got.obs.tolist(), got.label


def test_scatter_gives_each_rank_its_record(ranks: Ranks) -> None:
    for rank, (kind, obs, label) in enumerate(ranks.run(_scatter)):
        assert kind == "Sample"
        assert obs == [[float(rank)] * 2] * 2
        assert label == f"to {rank}"


def _scatter_refused(rank: int, parts: str) -> tuple[str, list[float]]:
    bad = {"count": [TensorDict()], "none": None, "part": [TensorDict(), "text", TensorDict()]}
    try:
        TensorDict().scatter(0, bad[parts] if rank == 0 else None)
    except (DistributedError, UnsupportedError) as error:
        message = f"{type(error).__name__}: {error}"
    else:
        message = "no error"
    good = [TensorDict(a=torch.full((2,), float(r)), batch_size=[2]) for r in range(3)]
    return message, TensorDict().scatter(0, good if rank == 0 else None)["a"].tolist()


@pytest.mark.parametrize(
    ("parts", "why"),
    [
        ("count", "DistributedError: scatter: rank 0 must pass one record per rank (3), got 1"),
        ("none", "DistributedError: scatter: rank 0 must pass one record per rank (3), got none"),
        ("part", "UnsupportedError: cannot transfer a str"),
    ],
)
def test_a_refused_scatter_releases_the_receiving_ranks(ranks: Ranks, parts: str, why: str) -> None:
    # the source checks every part before sending and tells each waiting rank it refused
    # (the peer's receivers block forever there); the group then scatters as usual
    results = ranks.run(_scatter_refused, parts, timeout=30)
    assert results[0][0].startswith(why)
    for rank in (1, 2):
        message, got = results[rank]
        assert message.startswith(
            "DistributedError: rank 0 raised instead of sending, so nothing was received"
        )
        assert why in message and got == [float(rank)] * 2
    assert results[0][1] == [0.0, 0.0]


def test_collectives_need_an_initialized_group() -> None:
    with pytest.raises(DistributedError, match="init_process_group"):
        TensorDict(a=torch.zeros(2)).reduce(0)


# --- init_remote / from_remote_init --------------------------------------------------------


def _cold_start(rank: int) -> Any:
    if rank == 0:
        record = Sample(obs=torch.ones(2, 4), label="first", batch_size=[2])
        record.init_remote(dst=1)
        record.obs.add_(1)
        record.send(dst=1, consolidated=True)
        return None
    if rank == 1:
        got = TensorDict.from_remote_init(src=0)
        first = (type(got).__name__, got.batch_size, got.is_consolidated(), got.label)
        locked = got.is_locked
        got.recv(src=0, consolidated=True)
        return first, locked, got.obs.tolist()
    return None


def test_from_remote_init_builds_what_init_remote_sent(ranks: Ranks) -> None:
    (kind, batch, consolidated, label), locked, obs = ranks.run(_cold_start)[1]
    assert (kind, batch, consolidated, label) == ("Sample", torch.Size([2]), True, "first")
    assert not locked  # consolidated, yet unlocked as the peer's
    assert obs == [[2.0] * 4] * 2


def _cold_start_broadcast(rank: int) -> Any:
    if rank == 1:
        _leaves(rank).init_remote(use_broadcast=True)
        return None
    got = TensorDict.from_remote_init(src=1, use_broadcast=True)
    return got.to_dict(), got.is_consolidated() and not got.is_locked


def test_from_remote_init_by_broadcast_reaches_every_rank(ranks: Ranks) -> None:
    results = ranks.run(_cold_start_broadcast)
    expected = _leaves(1).to_dict()
    for rank in (0, 2):
        got, consolidated = results[rank]
        assert consolidated  # and unlocked, as the peer's
        assert got.keys() == expected.keys()
        assert torch.equal(got["a"], expected["a"])
        assert torch.equal(got["n"]["t"], expected["n"]["t"])


def _redefined() -> type:
    """A record class defined anew at each call, as a notebook cell run twice does: every
    definition has the same name, so the registry alone cannot tell them apart."""

    class Twin(TensorClass):
        obs: torch.Tensor
        tag: str = "t"

    return Twin


def _cold_start_named_class(rank: int, use_broadcast: bool) -> Any:
    _redefined()
    twin = _redefined()  # the class this rank's program uses
    if rank == 0:
        record = twin(obs=torch.arange(4.0).reshape(2, 2), tag="sent", batch_size=[2])
        record.init_remote(dst=None if use_broadcast else 1, use_broadcast=use_broadcast)
        record.broadcast(0)
        return None
    if rank == 2 and not use_broadcast:
        got = twin(obs=torch.zeros(2, 2), batch_size=[2]).broadcast(0)
        return type(got) is twin, got.obs.tolist(), got.tag
    got = twin.from_remote_init(src=0, use_broadcast=use_broadcast)
    own = twin(obs=torch.zeros(2, 2), batch_size=[2]).broadcast(0)  # the receiver's class
    return type(got) is twin and type(own) is twin, got.obs.tolist(), got.tag


@pytest.mark.parametrize("use_broadcast", [False, True])
def test_from_remote_init_and_broadcast_build_the_class_they_are_called_on(
    ranks: Ranks, use_broadcast: bool
) -> None:
    """``Twin.from_remote_init`` builds a ``Twin`` (the class named by the call, as
    ``Twin.load_memmap`` does) even when several classes of that name are alive, as does
    a rank's ``broadcast`` of its own ``Twin``; the registry alone refused the name as
    ambiguous (``ClassResolutionError``)."""
    results = ranks.run(_cold_start_named_class, use_broadcast)
    for rank in (1, 2):
        assert results[rank] == (True, [[0.0, 1.0], [2.0, 3.0]], "sent")


def test_init_remote_needs_a_destination() -> None:
    with pytest.raises(DistributedError, match="dst="):
        TensorDict(a=torch.zeros(2)).init_remote()


def test_from_remote_init_needs_an_initialized_group() -> None:
    with pytest.raises(DistributedError, match="init_process_group"):
        TensorDict.from_remote_init(src=0)


# --- asend / arecv -------------------------------------------------------------------------


class _QueuePipe:
    """A pipe in one process: what goes in with asend comes out, cloned, of arecv."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.devices: list[Any] = []

    async def asend(self, record: Any, /) -> None:
        await self.queue.put(record.clone())

    async def arecv(self, record: Any, /, *, device: Any = None) -> Any:
        self.devices.append(device)
        sent = await self.queue.get()
        if record.is_empty():
            return sent
        record.update_(sent)
        return record


def test_asend_and_arecv_go_through_the_pipe() -> None:
    pipe = _QueuePipe()
    first = Sample(obs=torch.arange(4.0).reshape(2, 2), label="a", batch_size=[2])

    async def exchange() -> tuple[Any, Any]:
        await first.asend(pipe)
        got = await TensorDict().arecv(pipe, device="cpu")
        await (first * 2).asend(pipe)
        again = await got.arecv(pipe)
        return got, again

    got, again = asyncio.run(exchange())
    assert again is got
    assert torch.equal(got.obs, first.obs * 2)
    assert pipe.devices == ["cpu", None]


# --- the peer's keywords -------------------------------------------------------------------


def _all_reduce_buckets(rank: int, bucket_bytes: int) -> list[list[float]]:
    td = TensorDict(
        a=torch.full((4,), float(rank)), b=torch.ones(3, 2), c=torch.arange(3.0), batch_size=[]
    )
    assert td.all_reduce(bucket_bytes=bucket_bytes) is td
    return [td["a"].tolist(), td["b"].reshape(-1).tolist(), td["c"].tolist()]


@pytest.mark.parametrize("bucket_bytes", [8, 1 << 20])
def test_all_reduce_packs_leaves_into_buckets_of_the_given_size(
    ranks: Ranks, bucket_bytes: int
) -> None:
    for got in ranks.run(_all_reduce_buckets, bucket_bytes):
        assert got == [[3.0] * 4, [3.0] * 6, [0.0, 3.0, 6.0]]


def _early(rank: int) -> list[float]:
    td = TensorDict(a=torch.full((2,), float(rank)), batch_size=[2])
    if rank == 0:
        td.isend(dst=1, return_early=True).wait()
    elif rank == 1:
        td.irecv(src=0, return_premature=True).wait()
    return td["a"].tolist()


def test_isend_irecv_take_the_peers_flags(ranks: Ranks) -> None:
    assert ranks.run(_early)[1] == [0.0, 0.0]


def _cold_start_lazy(rank: int) -> Any:
    if rank == 0:
        lazy = LazyStackedTensorDict.lazy_stack(
            [TensorDict(a=torch.ones(2), name="p"), TensorDict(a=torch.zeros(2), name="q")]
        )
        lazy.init_remote(dst=2)
        return None
    if rank == 2:
        got = TensorDict.from_remote_init(src=0)
        return type(got).__name__, got.batch_size, got["a"].tolist(), got[1]["name"]
    return None


def test_from_remote_init_builds_a_lazy_stack(ranks: Ranks) -> None:
    kind, batch, a, name = ranks.run(_cold_start_lazy)[2]
    assert kind == "LazyStackedTensorDict" and batch == torch.Size([2])
    assert a == [[1.0, 1.0], [0.0, 0.0]] and name == "q"
