"""The peer's remaining collectives over ``torch.distributed``: ``reduce`` (every rank's
leaves reduced into rank ``dst``'s), ``gather_and_stack`` (the other ranks' records
written into the rows of rank ``dst``'s) and ``scatter`` (one record of rank ``src`` to
each rank). Built on the wire of ``_transfer.py``: leaves as bytes, Python values as
JSON, classes by name; nothing is pickled."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import torch
import torch.distributed as dist

from tclass._base._provided import DISTRIBUTED
from tclass._core._device import DeviceLike
from tclass._engine._td import TensorDict
from tclass.distributed import _wire
from tclass.distributed._transfer import (
    Transfer,
    _agree,
    _incoming,
    _outgoing,
    _packing,
    _Peer,
    _reduction_buffers,
    _wire_device,
    recv,
    refuse,
    send,
)
from tclass.distributed._wire import layout_of
from tclass.errors import DistributedError, ShapeError, StructureMismatchError

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup, Work

__all__ = ["gather_and_stack", "reduce", "scatter"]

R = TypeVar("R")


def reduce(
    record: Any,
    dst: int,
    op: Any,
    async_op: bool,
    return_premature: bool,
    group: ProcessGroup | None,
    bucket_bytes: int | None,
) -> list[Any] | None:
    """``record.reduce(dst, ...)``: see ``DistributedOps.reduce``."""
    wire = _wire_device(group)
    layout = layout_of(record)
    _agree(layout, group, wire, "reduce", 0)
    reduce_op = dist.ReduceOp.SUM if op is None else op
    threshold, bucket = (-1, 0) if bucket_bytes is None else (bucket_bytes, bucket_bytes)
    with torch.no_grad():
        targets = _reduction_buffers(layout.leaves, wire, threshold, bucket)
    receiving = _rank(group) == dst
    handles: list[Any] = []
    for buffer, leaves in targets:
        work = dist.reduce(buffer, dst, reduce_op, group, async_op=True)
        if not receiving or (len(leaves) == 1 and buffer is leaves[0]):
            handles.append(work)
        else:
            handles.append(work.get_future().then(_writer(buffer, leaves)))
    if async_op and return_premature:
        return handles
    for handle in handles:
        handle.wait()
    return None


def _writer(buffer: torch.Tensor, leaves: list[torch.Tensor]) -> Any:
    """The callback that copies a finished reduction's buffer back into its leaves."""

    def write(_: Any) -> None:
        with torch.no_grad():
            if len(leaves) > 1:
                _wire.unpack(buffer, leaves)
            else:
                leaves[0].copy_(buffer)

    return write


def gather_and_stack(record: R, dst: int, group: ProcessGroup | None) -> R | None:
    """``record.gather_and_stack(dst)``: see ``DistributedOps.gather_and_stack``."""
    _wire_device(group)  # raises if torch.distributed is not initialized
    mine = _rank(group)
    world = dist.get_world_size(group)
    if mine != dst:
        send(record, _global(group, dst), group, None, 0, None)
        return None
    batch = record.batch_size  # type: ignore[attr-defined]
    if not batch or batch[0] != world - 1:
        msg = (
            f"gather_and_stack: on rank {dst} the record must have one row per other rank: "
            f"a first batch dim of {world - 1}, not a batch size of {list(batch)}"
        )
        _drain_senders(dst, world, group)
        raise ShapeError(msg)
    for rank in range(world):
        if rank == dst:
            continue
        row = rank if rank < dst else rank - 1
        part = record[row]  # type: ignore[index]
        received = recv(part, _global(group, rank), group, None, 0)
        if received.non_tensor_items(include_nested=True):
            record[row] = received  # type: ignore[index]  # its Python values too
    return record


def _drain_senders(dst: int, world: int, group: ProcessGroup | None) -> None:
    """Receive (and drop) what every other rank sends to ``dst``, so that a refusal on
    ``dst`` leaves no sender blocked (the peer's senders return there too): an empty
    record's structure differs from any sender's, and ``recv`` then takes every message
    before raising."""
    for rank in range(world):
        if rank != dst:
            with contextlib.suppress(StructureMismatchError):
                recv(TensorDict(), _global(group, rank), group, None, 0)


def scatter(
    record: Any,
    src: int,
    tensordicts: Sequence[Any] | None,
    group: ProcessGroup | None,
    device: DeviceLike,
) -> Any:
    """``record.scatter(src, tensordicts)``: see ``DistributedOps.scatter``."""
    wire = _wire_device(group)
    mine = _rank(group)
    world = dist.get_world_size(group)
    if mine == src:
        peers = {rank: _Peer("send", _global(group, rank), group, None, 0) for rank in range(world)}
        del peers[src]
        try:  # every check before any send: on a refusal, the receivers are released
            parts = _scatter_messages(tensordicts, src, world, wire)
        except Exception as error:
            refuse(list(peers.values()), error, wire)
            raise
        works: list[Work | None] = []
        keep = [message for messages in parts.values() for message in messages]
        for rank, messages in parts.items():
            post = peers[rank].post
            works.extend(post(message, index) for index, message in enumerate(messages))
        Transfer(works, lambda: None, keep).wait()
        own = tensordicts[src]  # type: ignore[index]
        return own if device is None else own.to(device)
    peer = _Peer("recv", _global(group, src), group, None, 0)
    received = _incoming(TensorDict(), peer, wire, build=True)
    return received if device is None else received.to(device)


def _scatter_messages(
    tensordicts: Sequence[Any] | None, src: int, world: int, wire: torch.device
) -> dict[int, list[torch.Tensor]]:
    """The messages for each rank but ``src``; raises (before anything is sent) when
    ``tensordicts`` is not one record per rank or a record cannot travel."""
    if tensordicts is None or len(tensordicts) != world:
        count = "none" if tensordicts is None else len(tensordicts)
        msg = f"scatter: rank {src} must pass one record per rank ({world}), got {count}"
        raise DistributedError(msg)
    return {
        rank: _outgoing(part, wire, *_packing(None), with_tree=True)
        for rank, part in enumerate(tensordicts)
        if rank != src
    }


def _rank(group: ProcessGroup | None) -> int:
    return dist.get_rank(group) if group is not None else dist.get_rank()


def _global(group: ProcessGroup | None, rank: int) -> int:
    """The global rank of ``rank`` of ``group`` (collectives take group ranks)."""
    return rank if group is None else dist.get_global_rank(group, rank)


# --- the methods of every collection (``_base/declared/_dist_ops.py``) ----------------------

DISTRIBUTED.reduce = reduce
DISTRIBUTED.gather_and_stack = gather_and_stack
DISTRIBUTED.scatter = scatter
