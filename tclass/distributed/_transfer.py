"""How records travel over ``torch.distributed``: the implementations behind the
``send``/``recv``/``broadcast``... methods of every collection (``_base/declared/_dist_ops.py``,
where each is declared and documented once) and the functions of :mod:`tclass.distributed`.

Each function takes the method's arguments positionally, in the method's order."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import numpy as np
import torch
import torch.distributed as dist

from tclass._base._provided import DISTRIBUTED
from tclass._base.implemented._device_ops import map_tensors
from tclass._core._device import DeviceLike
from tclass._core._records import is_record, storage_of
from tclass._engine._consolidate import unlocked_consolidation
from tclass._engine._lazy._build import lazy_stack
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import same_value
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass.distributed import _wire
from tclass.distributed._wire import Header, Layout, first_difference, layout_of
from tclass.errors import DistributedError, StructureMismatchError, UnsupportedError

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup, Work

__all__ = [
    "BackgroundTransfer", "Handle", "Transfer", "all_gather", "all_reduce", "broadcast",
    "from_remote_init", "init_remote", "irecv", "isend", "recv", "send",
]  # fmt: skip

R = TypeVar("R")


# --- handles -------------------------------------------------------------------------------


class Handle(Generic[R]):
    """A transfer in flight. ``wait()`` finishes it and returns its result (the record);
    ``is_completed()`` says whether ``wait()`` would return at once."""

    def wait(self, timeout: float | None = None) -> R:
        raise NotImplementedError

    def is_completed(self) -> bool:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Handle[R]]:
        """The handle itself, once: the peer's ``isend`` / ``irecv`` return a list of
        works, waited on as ``for work in works: work.wait()``."""
        return iter((self,))


class Transfer(Handle[R]):
    """``torch.distributed`` requests plus what to do once they are done (copy packed
    buffers back into leaves). Keeps the buffers alive until then."""

    def __init__(
        self,
        works: Sequence[Work | None],
        finish: Callable[[], R],
        keep: Sequence[torch.Tensor] = (),
    ) -> None:
        self._works = [work for work in works if work is not None]
        self._finish: Callable[[], R] | None = finish
        self._keep = list(keep)
        self._result: R | None = None

    def wait(self, timeout: float | None = None) -> R:
        for work in self._works:
            if timeout is None:
                work.wait()
            else:
                work.wait(timedelta(seconds=timeout))
        if self._finish is not None:
            self._result, self._finish = self._finish(), None
            self._keep = []
        return self._result  # type: ignore[return-value]

    def is_completed(self) -> bool:
        return all(work.is_completed() for work in self._works)


class BackgroundTransfer(Handle[R]):
    """A transfer running in a thread (a receive cannot post its data requests before its
    header arrives). ``wait()`` re-raises what the transfer raised."""

    def __init__(self, run: Callable[[], R], device: torch.device) -> None:
        self._result: R | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(run, device), name="tclass-irecv", daemon=True
        )
        self._thread.start()

    def _run(self, run: Callable[[], R], device: torch.device) -> None:
        try:
            if device.type == "cuda":
                torch.cuda.set_device(device)
            self._result = run()
        except BaseException as error:  # handed to wait(), in the caller's thread
            self._error = error

    def wait(self, timeout: float | None = None) -> R:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise DistributedError(
                f"the receive is still running after {timeout} s (the sender may not have sent yet)"
            )
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]

    def is_completed(self) -> bool:
        return not self._thread.is_alive()


# --- where messages go ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Peer:
    """The other end: one rank (send / recv), or the source of a broadcast."""

    kind: Literal["send", "recv", "broadcast"]
    rank: int | None
    group: ProcessGroup | None
    group_rank: int | None
    tag: int

    def post(self, tensor: torch.Tensor, index: int) -> Work | None:
        """Starts moving message ``index`` of a transfer (each has its own tag)."""
        if self.kind == "send":
            return dist.isend(
                tensor, self.rank, self.group, self.tag + index, group_dst=self.group_rank
            )
        if self.kind == "recv":
            return dist.irecv(
                tensor, self.rank, self.group, self.tag + index, group_src=self.group_rank
            )
        # A broadcast moves bytes: as uint8, every dtype goes (gloo's typed path has few).
        work: Work | None = dist.broadcast(
            _byte_view(tensor), self.rank, self.group, async_op=True, group_src=self.group_rank
        )
        return work

    def name(self) -> str:
        return (
            f"rank {self.rank}"
            if self.group_rank is None
            else f"rank {self.group_rank} of the group"
        )


def _byte_view(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor's memory as flat uint8 (the same memory, written in place)."""
    return tensor if tensor.dtype is torch.uint8 else tensor.view(-1).view(torch.uint8)


def _wire_device(group: ProcessGroup | None) -> torch.device:
    """Where messages live: the current CUDA device for NCCL, else the CPU (gloo)."""
    if not dist.is_available():
        raise DistributedError("this torch build has no torch.distributed")
    if group is None and not dist.is_initialized():
        msg = (
            "torch.distributed is not initialized: call torch.distributed.init_process_group"
            "('gloo', ...) (or 'nccl' for CUDA records) first, or pass group="
        )
        raise DistributedError(msg)
    if "nccl" in str(dist.get_backend(group)):
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _packing(consolidated: bool | None) -> tuple[int, int]:
    """(threshold, bucket): None packs small leaves, True every leaf, False none."""
    if consolidated is None:
        return _wire.SMALL_LEAF, _wire.BUCKET
    return (1 << 62, 1 << 62) if consolidated else (-1, 0)


def _wait(works: Sequence[Work | None]) -> None:
    for work in works:
        if work is not None:
            work.wait()


# --- point to point ------------------------------------------------------------------------


def send(
    record: Any,
    dst: int | None,
    group: ProcessGroup | None,
    group_dst: int | None,
    init_tag: int,
    consolidated: bool | None,
) -> None:
    isend(record, dst, group, group_dst, init_tag, consolidated, True)


def isend(
    record: R,
    dst: int | None,
    group: ProcessGroup | None,
    group_dst: int | None,
    init_tag: int,
    consolidated: bool | None,
    wait: bool,
) -> Handle[R]:
    """:meth:`send` with every message posted at once; with ``wait``, completed before
    it returns (the peer's default)."""
    device = _wire_device(group)
    peer = _Peer("send", dst, group, group_dst, init_tag)
    messages = _encoded(record, peer, device, consolidated, with_tree=False)
    works = [peer.post(message, index) for index, message in enumerate(messages)]
    return _waited(Transfer(works, lambda: record, messages), wait)


def recv(
    record: R, src: int | None, group: ProcessGroup | None, group_src: int | None, init_tag: int
) -> R:
    device = _wire_device(group)
    peer = _Peer("recv", src, group, group_src, init_tag)
    return _incoming(record, peer, device, build=False)  # type: ignore[no-any-return]


def irecv(
    record: R,
    src: int | None,
    group: ProcessGroup | None,
    group_src: int | None,
    init_tag: int,
    wait: bool,
) -> Handle[R]:
    """:meth:`recv` in a background thread; with ``wait``, completed before it returns
    (the peer's default: it raises there what :meth:`recv` would)."""
    device = _wire_device(group)
    peer = _Peer("recv", src, group, group_src, init_tag)
    run = BackgroundTransfer(lambda: _incoming(record, peer, device, build=False), device)
    return _waited(run, wait)


def _waited(handle: Handle[R], wait: bool) -> Handle[R]:
    if wait:
        handle.wait()
    return handle


def init_remote(
    record: Any,
    dst: int | None,
    group: ProcessGroup | None,
    device: DeviceLike,
    use_broadcast: bool,
) -> None:
    if use_broadcast:
        broadcast(record, dist.get_rank(group), group, None, device, True)
        return
    if dst is None:
        msg = (
            "init_remote: give the receiver's rank (dst=...), or use_broadcast=True to send "
            "the record to every rank of the group"
        )
        raise DistributedError(msg)
    peer = _Peer("send", dst, group, None, 0)
    messages = _encoded(record, peer, _wire_device(group), True, with_tree=True)
    _wait([peer.post(message, index) for index, message in enumerate(messages)])


def from_remote_init(
    src: int,
    group: ProcessGroup | None,
    device: DeviceLike,
    use_broadcast: bool,
    cls: type | None = None,
) -> Any:
    """The record ``src`` sent with :func:`init_remote`, built here (received into an
    empty TensorDict, as the peer's is), consolidated and unlocked as the peer's is.
    ``cls`` is the class the call was made on: a record class the sender's class name
    resolves to before the registry's (as ``cls.load_memmap`` does)."""
    empty = TensorDict()
    if use_broadcast:
        built = _broadcast(empty, src, group, None, device, True, cls)
    else:
        wire = _wire_device(group)
        peer = _Peer("recv", src, group, None, 0)
        built = _incoming(empty, peer, wire, build=True, cls=cls)
        if device is not None:
            built = built.to(device)
    return unlocked_consolidation(built.consolidate())


# --- the two halves of a transfer ----------------------------------------------------------


def _encoded(
    record: Any, peer: _Peer, device: torch.device, consolidated: bool | None, *, with_tree: bool
) -> list[torch.Tensor]:
    """:func:`_outgoing`'s messages for ``peer`` (a receiver, or the ranks of a
    broadcast, that already wait for them); when ``record`` cannot travel, ``peer`` is
    sent a refusal carrying the error (:func:`refuse`) before it is raised here, so that
    no receiver is left blocked (the peer's ``recv`` waits forever there)."""
    try:
        return _outgoing(record, device, *_packing(consolidated), with_tree=with_tree)
    except Exception as error:
        refuse([peer], error, device)
        raise


def _outgoing(
    record: Any, device: torch.device, threshold: int, bucket: int, *, with_tree: bool
) -> list[torch.Tensor]:
    """The messages that carry ``record``: header, metadata, data."""
    layout = layout_of(record)
    values = _wire.encode_values(layout.slots)
    tree = _wire.describe_tree(record, layout.leaves) if with_tree else b""
    header = Header(
        layout.digest, threshold, bucket, len(layout.description), len(values), len(tree)
    )
    meta = torch.frombuffer(bytearray(layout.description + values + tree), dtype=torch.uint8).to(
        device
    )
    plan = _wire.bucket_plan(layout.nbytes(), threshold, bucket)
    with torch.no_grad():  # bytes travel; leaves that require grad need no graph
        data = [_wire.pack([layout.leaves[index] for index in message], device) for message in plan]
    return [header.encode(device), meta, *data]


def _incoming(
    record: Any, peer: _Peer, device: torch.device, *, build: bool, cls: type | None = None
) -> Any:
    """Receives a transfer into ``record`` (or, with ``build`` and an empty record, into
    a new record rebuilt from the sender's tree, its record class resolved with ``cls``
    first)."""
    raw_header = torch.empty(_wire.HEADER_SIZE, dtype=torch.int64, device=device)
    _wait([peer.post(raw_header, 0)])
    header = Header.decode(raw_header, peer.name())
    meta = torch.empty(header.meta_size(), dtype=torch.uint8, device=device)
    if header.refused:
        _wait([peer.post(meta, 1)])
        msg = (
            f"{peer.name()} raised instead of sending, so nothing was received here (fix "
            f"the call on {peer.name()}): {_bytes(meta).decode()}"
        )
        raise DistributedError(msg)
    layout = layout_of(record)
    if header.digest == layout.digest:
        _receive_into(layout.leaves, header, meta, peer, device)
        if header.values_size:
            start = header.description_size
            _wire.set_values(
                layout.slots, _wire.decode_values(_bytes(meta[start : start + header.values_size]))
            )
        return record
    # Another structure: receive everything the sender sent (so it completes), then decide.
    _wait([peer.post(meta, 1)])
    raw = _bytes(meta)
    theirs = raw[: header.description_size]
    leaves = [
        torch.empty(shape, dtype=dtype, device=device)
        for _, dtype, shape in _wire.parse_description(theirs)[0]
    ]
    _receive_into(leaves, header, None, peer, device)
    if build and not layout.leaves and not layout.slots and header.tree_size:
        return _wire.build_from_tree(raw[header.meta_size() - header.tree_size :], leaves, cls)
    raise _mismatch(layout, theirs, peer, "broadcast" if peer.kind == "broadcast" else "recv")


def refuse(peers: Sequence[_Peer], error: BaseException, device: torch.device) -> None:
    """Sends each of ``peers`` (receivers already waiting for a transfer) a refusal that
    carries ``error``'s text, so that they raise it instead of waiting forever."""
    text = f"{type(error).__name__}: {error}".encode()
    header = Header.refusal(len(text)).encode(device)
    meta = torch.frombuffer(bytearray(text), dtype=torch.uint8).to(device)
    _wait(
        [
            peer.post(message, index)
            for peer in peers
            for index, message in enumerate((header, meta))
        ]
    )


def _receive_into(
    leaves: Sequence[torch.Tensor],
    header: Header,
    meta: torch.Tensor | None,
    peer: _Peer,
    device: torch.device,
) -> None:
    """Posts the metadata message (unless received already) and every data message,
    writing large leaves in place where possible; waits, then unpacks the buckets."""
    nbytes = [leaf.numel() * leaf.element_size() for leaf in leaves]
    targets: list[tuple[torch.Tensor, list[torch.Tensor] | None]] = []
    for message in _wire.bucket_plan(nbytes, header.threshold, header.bucket):
        group = [leaves[index] for index in message]
        if len(group) > 1:
            size = sum(nbytes[index] for index in message)
            targets.append((torch.empty(size, dtype=torch.uint8, device=device), group))
        elif _receivable(group[0], device):
            targets.append((group[0], None))
        else:
            targets.append(
                (torch.empty(group[0].shape, dtype=group[0].dtype, device=device), group)
            )
    works = [] if meta is None else [peer.post(meta, 1)]
    works += [peer.post(target, 2 + index) for index, (target, _) in enumerate(targets)]
    _wait(works)
    with torch.no_grad():  # in-place writes into leaves that may require grad
        for target, held in targets:
            if held is not None:
                _wire.unpack(target, held) if len(held) > 1 else held[0].copy_(target)


def _receivable(leaf: torch.Tensor, device: torch.device) -> bool:
    """Whether a message can land in ``leaf`` itself."""
    return leaf.device == device and leaf.is_contiguous() and not (leaf.is_conj() or leaf.is_neg())


def _bytes(tensor: torch.Tensor) -> bytes:
    return tensor.cpu().numpy().tobytes()


def _mismatch(layout: Layout, theirs: bytes, peer: _Peer, action: str) -> StructureMismatchError:
    path, mine, sent = first_difference(layout.description, theirs)
    other = peer.name()
    hint = (
        "to receive a record this rank has no copy of, call broadcast on an empty record"
        if not layout.leaves and not layout.slots
        else "pre-allocate the receiving record like the sender's (the same class, keys "
        "and batch size)"
    )
    msg = (
        f"{action}: the record {other} sent differs from this one at key {_key_text(path)}: "
        f"{other} sent {sent}, this record has {mine}. Nothing was written; {hint}"
    )
    return StructureMismatchError(msg, path, peer.group_rank if peer.rank is None else peer.rank)


def _key_text(path: _wire.Path) -> str:
    return repr(path[0]) if len(path) == 1 else repr(path)


# --- collectives ---------------------------------------------------------------------------


def broadcast(
    record: R,
    src: int | None,
    group: ProcessGroup | None,
    group_src: int | None,
    device: DeviceLike,
    consolidated: bool | None,
) -> R:
    # A receiving rank's own record names the class the sender's resolves to first.
    return _broadcast(record, src, group, group_src, device, consolidated, type(record))


def _broadcast(
    record: R,
    src: int | None,
    group: ProcessGroup | None,
    group_src: int | None,
    device: DeviceLike,
    consolidated: bool | None,
    cls: type | None,
) -> R:
    wire = _wire_device(group)
    peer = _Peer("broadcast", src, group, group_src, 0)
    mine = dist.get_rank(group) if group_src is not None else dist.get_rank()
    if mine == (src if group_src is None else group_src):
        messages = _encoded(record, peer, wire, consolidated, with_tree=True)
        _wait([peer.post(message, index) for index, message in enumerate(messages)])
        return record
    # As the peer: a new record on the receiving ranks, whatever this one holds, which
    # is left as it was (its structure need not match: the peer's ranks often pass an
    # empty TensorDict, or a record of their own that they keep).
    result = _incoming(TensorDict(), peer, wire, build=True, cls=cls)
    if device is not None:
        result = result.to(device)
    return result  # type: ignore[no-any-return]


def all_reduce(
    record: R,
    op: Any,
    group: ProcessGroup | None,
    async_op: bool,
    check: bool,
    bucket_bytes: int | None = None,
) -> R | Handle[R]:
    wire = _wire_device(group)
    layout = layout_of(record)
    if check:
        _agree(layout, group, wire, "all_reduce", 0)
    reduce_op = dist.ReduceOp.SUM if op is None else op
    with torch.no_grad():
        if bucket_bytes is None:
            targets = _reduction_buffers(layout.leaves, wire)
        else:
            targets = _reduction_buffers(layout.leaves, wire, bucket_bytes, bucket_bytes)
    works = [dist.all_reduce(buffer, reduce_op, group, async_op=True) for buffer, _ in targets]

    def finish() -> R:
        with torch.no_grad():
            for buffer, leaves in targets:
                if len(leaves) > 1:
                    _wire.unpack(buffer, leaves)
                elif buffer is not leaves[0]:
                    leaves[0].copy_(buffer)
        return record

    transfer = Transfer(works, finish)
    return transfer if async_op else transfer.wait()


def _reduction_buffers(
    leaves: Sequence[torch.Tensor],
    device: torch.device,
    threshold: int = _wire.SMALL_LEAF,
    bucket: int = _wire.BUCKET,
) -> list[tuple[torch.Tensor, list[torch.Tensor]]]:
    """Per dtype, leaves up to ``threshold`` bytes packed into flat buckets of up to
    ``bucket`` bytes; larger ones as themselves (or a contiguous copy on the wire
    device). Each buffer with the leaves it holds."""
    by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
    for leaf in leaves:
        if leaf.numel():
            by_dtype.setdefault(leaf.dtype, []).append(leaf)
    buffers = []
    for same in by_dtype.values():
        sizes = [leaf.numel() * leaf.element_size() for leaf in same]
        for message in _wire.bucket_plan(sizes, threshold, bucket):
            group = [same[index] for index in message]
            if len(group) == 1:
                buffers.append((group[0].to(device).contiguous(), group))
            else:
                buffers.append((torch.cat([leaf.to(device).reshape(-1) for leaf in group]), group))
    return buffers


def all_gather(record: R, group: ProcessGroup | None) -> R:
    wire = _wire_device(group)
    layout = layout_of(record)
    values = _wire.encode_values(layout.slots)
    headers = _agree(layout, group, wire, "all_gather", len(values))
    world = len(headers)
    out: R = _gathered_like(record, world)
    out_layout = layout_of(out)
    if len(out_layout.leaves) != len(layout.leaves):
        msg = (
            f"all_gather: this {type(record).__name__}'s leaves could not be laid out "
            "stacked over the ranks (a lazy stack inside a node all_gather does not descend "
            "into): gather a dense copy (record.to_tensordict())"
        )
        raise UnsupportedError(msg)
    with torch.no_grad():
        _gather_leaves(layout.leaves, out_layout.leaves, group, wire)
    if any(header.values_size for header in headers):
        raw = _gather_bytes(values, [header.values_size for header in headers], group, wire)
        _set_gathered_values(out_layout.slots, [_wire.decode_values(part) for part in raw])
    return out


def _gathered_like(record: Any, world: int) -> Any:
    """An empty record to gather ``world`` ranks' ``record`` into, each leaf
    ``[world, *shape]``: a lazy stack stays lazy (its members gathered, stacked one dim
    further), so that its leaves come in ``record``'s layout order; a record over a lazy
    stack, a record over the gathered stack."""
    storage = storage_of(record)
    if storage is not record and isinstance(storage, LazyStackedTensorDict):
        return record._wrap(_gathered_like(storage, world))
    if isinstance(record, LazyStackedTensorDict):
        members = [_gathered_like(member, world) for member in record.tensordicts]
        return lazy_stack(members, dim=record.stack_dim + 1)
    grown = record.unsqueeze(0).expand(world, *record.batch_size)
    out = map_tensors(grown, lambda t: torch.empty(t.shape, dtype=t.dtype, device=t.device))
    if len(layout_of(out).leaves) != len(layout_of(record).leaves):  # a lazy stack below
        for key, child in record.items():
            if is_record(child) or isinstance(child, (TensorDict, LazyStackedTensorDict)):
                out.set(key, _gathered_like(child, world))
    return out


def _gather_leaves(
    leaves: Sequence[torch.Tensor],
    stacked: Sequence[torch.Tensor],
    group: ProcessGroup | None,
    wire: torch.device,
) -> None:
    """Every rank's ``leaves`` into ``stacked`` (each ``[world, *shape]``): small leaves
    in byte buckets, large ones gathered straight into their stacked leaf."""
    world = stacked[0].shape[0] if stacked else 0
    copies: list[tuple[torch.Tensor, list[torch.Tensor]]] = []
    works = []
    sizes = [leaf.numel() * leaf.element_size() for leaf in leaves]
    for message in _wire.bucket_plan(sizes, _wire.SMALL_LEAF, _wire.BUCKET):
        buffer = _wire.pack([leaves[index] for index in message], wire)
        targets = [stacked[index] for index in message]
        if len(targets) == 1 and _receivable(targets[0], wire):  # gathered in place
            gathered = targets[0]
        else:
            gathered = torch.empty((world, *buffer.shape), dtype=buffer.dtype, device=wire)
            copies.append((gathered, targets))
        rows = [_byte_view(row) for row in gathered.unbind(0)]
        works.append(dist.all_gather(rows, _byte_view(buffer), group, async_op=True))
    _wait(works)
    for gathered, targets in copies:
        if len(targets) == 1:
            targets[0].copy_(gathered)
        else:
            for rank in range(world):
                _wire.unpack(gathered[rank], [leaf[rank] for leaf in targets])


def _set_gathered_values(
    slots: Sequence[_wire.Slot], per_rank: Sequence[list[dict[str, Any]]]
) -> None:
    """Each slot of the stacked record: one value if every rank has the same one, else
    a stack of every rank's values."""
    for position, slot in enumerate(slots):
        entries = [ranks[position] for ranks in per_rank]
        first = entries[0]
        if all("one" in entry and same_value(entry["one"], first.get("one")) for entry in entries):
            _wire.set_values([slot], [first])
            continue
        batch = slot.node.batch_size
        array: np.ndarray[Any, Any] = np.empty(tuple(batch), dtype=object)
        for rank, entry in enumerate(entries):
            array[rank, ...] = _wire.value_array(entry, batch[1:])
        slot.parent._store_entry(slot.key, NonTensorStack._from_array(array, slot.node.device))


def _agree(
    layout: Layout, group: ProcessGroup | None, device: torch.device, action: str, values_size: int
) -> list[Header]:
    """Every rank's header (one all_gather); raises the same error on every rank when the
    structures differ, naming the first rank that differs from rank 0 and the key."""
    mine = Header(layout.digest, 0, 0, len(layout.description), values_size, 0).encode(device)
    gathered = [torch.empty_like(mine) for _ in range(dist.get_world_size(group))]
    _wait([dist.all_gather(gathered, mine, group, async_op=True)])
    headers = [Header.decode(header, f"rank {rank}") for rank, header in enumerate(gathered)]
    different = [rank for rank, header in enumerate(headers) if header.digest != headers[0].digest]
    if not different:
        return headers
    descriptions = _gather_bytes(
        layout.description, [header.description_size for header in headers], group, device
    )
    rank = different[0]
    path, reference, other = first_difference(descriptions[0], descriptions[rank])
    msg = (
        f"{action}: the ranks' records differ at key {_key_text(path)}: rank 0 has {reference}, "
        f"rank {rank} has {other}. Every rank must pass a record of the same keys, dtypes and "
        "shapes; nothing was changed"
    )
    raise StructureMismatchError(msg, path, rank)


def _gather_bytes(
    data: bytes, sizes: Sequence[int], group: ProcessGroup | None, device: torch.device
) -> list[bytes]:
    """Every rank's ``data`` (whose lengths are ``sizes``), gathered padded to the longest."""
    longest = max(sizes)
    padded = torch.zeros(longest, dtype=torch.uint8)
    if data:
        padded[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    padded = padded.to(device)
    gathered = [torch.empty_like(padded) for _ in sizes]
    _wait([dist.all_gather(gathered, padded, group, async_op=True)])
    return [_bytes(part)[:size] for part, size in zip(gathered, sizes)]


# --- the methods of every collection (``_base/declared/_dist_ops.py``) ----------------------

DISTRIBUTED.send = send
DISTRIBUTED.isend = isend
DISTRIBUTED.recv = recv
DISTRIBUTED.irecv = irecv
DISTRIBUTED.broadcast = broadcast
DISTRIBUTED.all_reduce = all_reduce
DISTRIBUTED.all_gather = all_gather
DISTRIBUTED.init_remote = init_remote
DISTRIBUTED.from_remote_init = from_remote_init
