"""The ``torch.distributed`` methods every collection has (``send``, ``recv``, ``broadcast``...).

A mixin of ``TensorDictBase``, and the one place these calls are declared: the functions
of :mod:`tclass.distributed` are these very methods (``tclass.distributed.send(td, 1)`` is
``td.send(1)``). Each method is a one-line forwarder to its implementation in
``tclass/distributed/_transfer.py`` or ``_collectives.py``, which build on the engine
classes that derive from this mixin: ``_provided.DISTRIBUTED`` holds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from typing_extensions import Self

from tclass._base._provided import DISTRIBUTED

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup

    from tclass._core._device import DeviceLike
    from tclass.distributed._transfer import Handle

__all__ = ["DistributedOps", "Pipe"]


class Pipe(Protocol):
    """What :meth:`~DistributedOps.asend` / :meth:`~DistributedOps.arecv` talk to: an
    object with coroutine methods ``asend(record)`` and ``arecv(record, device=...)``
    (the peer's UCXX ``TensorDictPipe`` is one; tclass ships none)."""

    async def asend(self, record: Any, /) -> None: ...

    async def arecv(self, record: Any, /, *, device: DeviceLike = None) -> Any: ...


class DistributedOps:
    """Point-to-point transfers and collectives over ``torch.distributed`` (see
    :mod:`tclass.distributed` for the wire format and its guarantees)."""

    __slots__ = ()

    def send(
        self,
        dst: int | None = None,
        *,
        group: ProcessGroup | None = None,
        group_dst: int | None = None,
        init_tag: int = 0,
        pseudo_rand: bool = False,
        consolidated: bool | None = None,
    ) -> None:
        """Sends this record's tensors and Python values to rank ``dst``, which calls
        :meth:`recv` (or :meth:`irecv`) on a record of the same keys, dtypes and shapes.

        Args:
            dst: the receiver's global rank (or ``group_dst``: its rank in ``group``).
            group: the process group (default: the default group).
            init_tag: the transfer uses tags ``init_tag``, ``init_tag + 1``, ... (one per
                message: 2 plus one per bucket or large leaf); give transfers that run at
                the same time between the same ranks tag ranges that do not overlap.
            pseudo_rand: accepted for the peer's code; tags are always used in order.
            consolidated: None (default) packs leaves up to 32 KiB into 1 MiB buckets
                and sends larger ones alone; True packs every leaf into one message;
                False sends every leaf alone. The receiver follows the sender's choice.

        Raises:
            NotSerializableError: a Python value is not JSON (values never travel pickled);
                nothing but a refusal is sent, which the receiver raises (not left waiting).
            DistributedError: torch.distributed is not initialized.
        """
        return DISTRIBUTED.send(self, dst, group, group_dst, init_tag, consolidated)

    def isend(
        self,
        dst: int | None = None,
        *,
        group: ProcessGroup | None = None,
        group_dst: int | None = None,
        init_tag: int = 0,
        pseudo_rand: bool = False,
        return_early: bool = False,
        consolidated: bool | None = None,
    ) -> Handle[Self]:
        """:meth:`send` with every message in flight at once. As the peer's: with
        ``return_early=True`` it returns while they are, and ``wait()`` on the handle
        (which returns this record; iterating the handle gives it too, as the peer's
        list of works) must come before changing the record's tensors; otherwise it
        waits for them before it returns (the handle is then completed)."""
        return DISTRIBUTED.isend(
            self, dst, group, group_dst, init_tag, consolidated, not return_early
        )

    def recv(
        self,
        src: int | None = None,
        *,
        group: ProcessGroup | None = None,
        group_src: int | None = None,
        init_tag: int = 0,
        pseudo_rand: bool = False,
        consolidated: bool | None = None,
    ) -> Self:
        """Receives what rank ``src`` sends with :meth:`send` into this record, in place,
        and returns it (the peer returns a tag). Tensors are written in place (a
        memory-mapped or shared record receives straight into its files or shared
        memory); Python values are replaced by the sender's. Any class can receive what
        another sends (a TensorDict what a tensorclass sends) if the structure matches.

        Args:
            src: the sender's global rank (or ``group_src``: its rank in ``group``).
            init_tag: the sender's ``init_tag``.
            pseudo_rand: accepted for the peer's code; tags are always used in order.
            consolidated: accepted for the peer's code; the sender's choice, written in
                the header, is followed.

        Raises:
            StructureMismatchError: the sender's record has other keys, dtypes or shapes;
                the message names the first differing key. Nothing was written, and the
                sender's transfer completed.
            DistributedError: what arrived is not a tclass record, the sender refused
                its record (its error named), or no process group.
        """
        return DISTRIBUTED.recv(self, src, group, group_src, init_tag)

    def irecv(
        self,
        src: int | None = None,
        *,
        group: ProcessGroup | None = None,
        group_src: int | None = None,
        return_premature: bool = False,
        init_tag: int = 0,
        pseudo_rand: bool = False,
        consolidated: bool | None = None,
    ) -> Handle[Self]:
        """:meth:`recv` in a background thread. As the peer's: with
        ``return_premature=True`` it returns at once, and the handle's ``wait()``
        (iterating the handle gives it too, as the peer's list of works) returns this
        record once it holds the data, or raises what :meth:`recv` would: do not read
        the record before then; otherwise it waits before it returns (and raises
        there)."""
        return DISTRIBUTED.irecv(self, src, group, group_src, init_tag, not return_premature)

    def broadcast(
        self,
        src: int | None = None,
        *,
        group: ProcessGroup | None = None,
        group_src: int | None = None,
        device: DeviceLike = None,
        consolidated: bool | None = None,
    ) -> Self:
        """Sends rank ``src``'s record to every rank of the group; every rank calls it.

        On ``src``, returns this record. On the others, returns a new record of
        ``src``'s class, its classes found by name among those defined in this process
        (nothing is unpickled), and leaves this one as it was, whatever it holds
        (``TensorDict()`` will do), as the peer's does; to receive into a record's own
        memory (its files, shared memory), use :meth:`recv`.

        Args:
            device: on the receiving ranks, where a newly built record goes (default:
                the wire device, CPU with gloo).

        """
        return DISTRIBUTED.broadcast(self, src, group, group_src, device, consolidated)

    @overload
    def all_reduce(
        self,
        op: Any = None,
        *,
        group: ProcessGroup | None = None,
        async_op: Literal[False] = False,
        check: bool = True,
        bucket_bytes: int | None = None,
    ) -> Self: ...

    @overload
    def all_reduce(
        self,
        op: Any = None,
        *,
        group: ProcessGroup | None = None,
        async_op: Literal[True],
        check: bool = True,
        bucket_bytes: int | None = None,
    ) -> Handle[Self]: ...

    @overload
    def all_reduce(
        self,
        op: Any = None,
        *,
        group: ProcessGroup | None = None,
        async_op: bool,
        check: bool = True,
        bucket_bytes: int | None = None,
    ) -> Self | Handle[Self]: ...

    def all_reduce(
        self,
        op: Any = None,
        *,
        group: ProcessGroup | None = None,
        async_op: bool = False,
        check: bool = True,
        bucket_bytes: int | None = None,
    ) -> Self | Handle[Self]:
        """Reduces every tensor leaf over the ranks, in place (``op``: a
        ``torch.distributed.ReduceOp``, default ``SUM``); returns this record, or with
        ``async_op=True`` a handle whose ``wait()`` returns it. Small leaves of one dtype
        are reduced together in buckets. Python values are left alone.

        Args:
            check: first compare every rank's structure digest (one small
                ``all_gather``), so that different records raise
                ``StructureMismatchError`` on every rank instead of hanging or mixing
                unrelated numbers.
            bucket_bytes: pack the leaves of each dtype into buckets of at most this
                many bytes, one reduction per bucket (a larger leaf alone); default:
                leaves up to 32 KiB in buckets of up to 1 MiB.
        """
        return DISTRIBUTED.all_reduce(self, op, group, async_op, check, bucket_bytes)

    def all_gather(self, *, group: ProcessGroup | None = None) -> Self:
        """Every rank's record, stacked along a new first dim (rank order), on every
        rank: a record of the same class with batch size ``[world_size, *batch_size]``
        (``result[r]`` is rank ``r``'s record). The peer returns a list; iterating or
        indexing the stack gives the same records. Python values equal on every rank
        stay one value; others become a per-rank stack.

        Raises:
            StructureMismatchError: on every rank, when the ranks' records differ.
        """
        return DISTRIBUTED.all_gather(self, group)

    def reduce(
        self,
        dst: int,
        op: Any = None,
        async_op: bool = False,
        return_premature: bool = False,
        group: ProcessGroup | None = None,
        *,
        bucket_bytes: int | None = None,
    ) -> list[Any] | None:
        """Reduces every tensor leaf over the ranks of the group into rank ``dst``'s
        record, in place (``op``: a ``torch.distributed.ReduceOp``, default ``SUM``);
        every rank calls it. The other ranks' values are undefined afterwards (clone
        first to keep them). The ranks' structures are compared first (one small
        ``all_gather``): records that differ raise ``StructureMismatchError`` on every
        rank instead of mixing numbers.

        Args:
            async_op: start every reduction at once (the call still waits for them
                unless ``return_premature``).
            return_premature: with ``async_op``, return the requests without waiting:
                ``wait()`` each before using the record (on ``dst``, a request whose
                result must be copied back into the leaves is a ``torch.futures.Future``
                that does it).
            bucket_bytes: pack leaves of one dtype up to this size into buckets of this
                size, one reduction per bucket (faster with many small leaves); None:
                one reduction per leaf.

        Returns:
            The list of requests with ``async_op`` and ``return_premature``, else None.
        """
        return DISTRIBUTED.reduce(self, dst, op, async_op, return_premature, group, bucket_bytes)

    def gather_and_stack(self, dst: int, group: ProcessGroup | None = None) -> Self | None:
        """Writes every other rank's record into a row of rank ``dst``'s record, whose
        first batch dim must be ``world_size - 1`` (rows in rank order, ``dst``'s own
        data left out); every rank calls it. The records travel as bytes and JSON, never
        pickled.

        Returns:
            ``self`` on rank ``dst``, ``None`` on the others.

        Raises:
            ShapeError: on ``dst``, a first batch dim other than ``world_size - 1``.
            StructureMismatchError: a row differs from the record sent into it.
        """
        return DISTRIBUTED.gather_and_stack(self, dst, group)

    def scatter(
        self,
        src: int,
        tensordicts: list[Any] | None = None,
        *,
        group: ProcessGroup | None = None,
        device: DeviceLike = None,
    ) -> Any:
        """Sends ``tensordicts[r]`` (given on rank ``src``, one per rank) to each rank
        ``r``, which gets it as a new record of the sender's class (found by name among
        the classes defined in this process; nothing is unpickled); every rank calls it
        and the record it is called on is not used, as in the peer.

        Args:
            device: where the received record goes (default: the wire device).

        Returns:
            This rank's record.

        Raises:
            DistributedError: on ``src``, not one record per rank.
        """
        return DISTRIBUTED.scatter(self, src, tensordicts, group, device)

    def init_remote(
        self,
        dst: int | None = None,
        group: ProcessGroup | None = None,
        device: DeviceLike = None,
        use_broadcast: bool = False,
    ) -> None:
        """Sends this record, structure included, to rank ``dst``, which knows nothing of
        it and calls :meth:`from_remote_init`; later batches of the same structure go with
        ``send(dst)`` into the record that call returned. The structure travels as JSON
        (class names, keys, dtypes, shapes), the tensors as one consolidated message;
        nothing is pickled.

        Args:
            dst: the receiver's rank; required unless ``use_broadcast``.
            device: with ``use_broadcast``, as in :meth:`broadcast`; else unused (the
                wire device follows the group's backend).
            use_broadcast: :meth:`broadcast` the record from this rank instead; every
                rank of the group takes part, the others calling
                ``from_remote_init(src=..., use_broadcast=True)``.

        Raises:
            DistributedError: (a ``RuntimeError``) no ``dst`` without ``use_broadcast``.
            NotSerializableError: a Python value is not JSON.
        """
        DISTRIBUTED.init_remote(self, dst, group, device, use_broadcast)

    @classmethod
    def from_remote_init(
        cls,
        src: int,
        group: ProcessGroup | None = None,
        device: DeviceLike = None,
        use_broadcast: bool = False,
    ) -> Self:
        """The record rank ``src`` sent with :meth:`init_remote`, built on this rank (of
        the sender's class: ``cls`` when it is a record class of that name, else the one
        found by name among the classes defined here) and
        consolidated (:meth:`consolidate`), so that ``recv`` writes the next batches
        into its one buffer.

        Args:
            device: where the built record goes (default: the wire device).
            use_broadcast: the sender used ``use_broadcast=True``.

        Raises:
            DistributedError: no process group, or what arrived is not a tclass record.
        """
        return DISTRIBUTED.from_remote_init(src, group, device, use_broadcast, cls)  # type: ignore[no-any-return]

    async def asend(self, dst: Pipe) -> None:
        """Sends this record through ``dst``, awaiting ``dst.asend(self)`` (see
        :class:`Pipe`)."""
        await dst.asend(self)

    async def arecv(self, src: Pipe, *, device: DeviceLike = None) -> Any:
        """Receives a record from ``src``, awaiting ``src.arecv(self, device=device)``:
        the pipe writes into this record when it can and returns it, or returns another
        record (see :class:`Pipe`); use the result."""
        return await src.arecv(self, device=device)
