"""The ``torch.distributed`` methods every collection has (``send``, ``recv``, ``broadcast``...).

A mixin of ``TensorDictBase``. The implementation (``tclass/distributed.py``) is imported
when a method is called: it builds on the engine classes that derive from this mixin, and
importing ``torch.distributed`` is not free for programs that never use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, overload

from typing_extensions import Self

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup

    from tclass._core._device import DeviceLike
    from tclass.distributed import Handle

__all__ = ["DistributedOps"]


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
        consolidated: bool | None = None,
    ) -> None:
        """Sends this record's tensors and Python values to rank ``dst``, which calls
        :meth:`recv` on a record of the same keys, dtypes and shapes.

        Args:
            dst: the receiver's global rank (or ``group_dst``: its rank in ``group``).
            group: the process group (default: the default group).
            init_tag: the first of the tags the transfer uses (one per message).
            consolidated: None packs leaves up to 32 KiB into 1 MiB buckets and sends
                larger leaves alone; True packs every leaf into one message; False sends
                each leaf alone. The receiver follows the sender's choice.

        Raises:
            NotSerializableError: a Python value is not JSON (values never travel pickled).
            DistributedError: torch.distributed is not initialized.
        """
        from tclass.distributed import send

        return send(
            self,
            dst,
            group=group,
            group_dst=group_dst,
            init_tag=init_tag,
            consolidated=consolidated,
        )

    def isend(
        self,
        dst: int | None = None,
        *,
        group: ProcessGroup | None = None,
        group_dst: int | None = None,
        init_tag: int = 0,
        consolidated: bool | None = None,
    ) -> Handle[Self]:
        """:meth:`send` without waiting; ``wait()`` on the handle (which returns this
        record) before changing the record's tensors."""
        from tclass.distributed import isend

        return isend(
            self,
            dst,
            group=group,
            group_dst=group_dst,
            init_tag=init_tag,
            consolidated=consolidated,
        )

    def recv(
        self,
        src: int | None = None,
        *,
        group: ProcessGroup | None = None,
        group_src: int | None = None,
        init_tag: int = 0,
        consolidated: bool | None = None,
    ) -> Self:
        """Receives what rank ``src`` sends with :meth:`send` into this record, in place,
        and returns it (the peer returns a tag). Tensors are written in place; Python
        values are replaced by the sender's.

        Args:
            src: the sender's global rank (or ``group_src``: its rank in ``group``).
            init_tag: the sender's ``init_tag``.
            consolidated: accepted for compatibility; the sender's choice is followed.

        Raises:
            StructureMismatchError: the sender's record has other keys, dtypes or shapes;
                the message names the first differing key. Nothing was written, and the
                sender's transfer completed.
        """
        from tclass.distributed import recv

        return recv(
            self,
            src,
            group=group,
            group_src=group_src,
            init_tag=init_tag,
            consolidated=consolidated,
        )

    def irecv(
        self,
        src: int | None = None,
        *,
        group: ProcessGroup | None = None,
        group_src: int | None = None,
        init_tag: int = 0,
        consolidated: bool | None = None,
    ) -> Handle[Self]:
        """:meth:`recv` in the background; the handle's ``wait()`` returns this record once
        it holds the data, or raises what :meth:`recv` would."""
        from tclass.distributed import irecv

        return irecv(
            self,
            src,
            group=group,
            group_src=group_src,
            init_tag=init_tag,
            consolidated=consolidated,
        )

    def broadcast(
        self,
        src: int | None = None,
        *,
        group: ProcessGroup | None = None,
        group_src: int | None = None,
        device: DeviceLike = None,
        consolidated: bool | None = None,
    ) -> Self:
        """Rank ``src``'s record on every rank (every rank calls it). A receiving rank
        passes a record of ``src``'s structure (filled in place) or an empty one such as
        ``TensorDict()`` (a new record of ``src``'s class is returned, placed on
        ``device`` if given). Returns the record."""
        from tclass.distributed import broadcast

        return broadcast(
            self, src, group=group, group_src=group_src, device=device, consolidated=consolidated
        )

    @overload
    def all_reduce(
        self,
        op: Any = None,
        *,
        group: ProcessGroup | None = None,
        async_op: Literal[False] = False,
        check: bool = True,
    ) -> Self: ...

    @overload
    def all_reduce(
        self,
        op: Any = None,
        *,
        group: ProcessGroup | None = None,
        async_op: Literal[True],
        check: bool = True,
    ) -> Handle[Self]: ...

    @overload
    def all_reduce(
        self,
        op: Any = None,
        *,
        group: ProcessGroup | None = None,
        async_op: bool = False,
        check: bool = True,
    ) -> Self | Handle[Self]: ...

    def all_reduce(
        self,
        op: Any = None,
        *,
        group: ProcessGroup | None = None,
        async_op: bool = False,
        check: bool = True,
    ) -> Self | Handle[Self]:
        """Reduces every tensor leaf over the ranks in place (``op`` a
        ``torch.distributed.ReduceOp``, default ``SUM``) and returns this record, or
        with ``async_op=True`` a handle whose ``wait()`` returns it. ``check`` first
        compares the ranks' structures (one small all_gather), raising
        ``StructureMismatchError`` on every rank when they differ."""
        from tclass.distributed import all_reduce

        return all_reduce(self, op, group=group, async_op=async_op, check=check)

    def all_gather(self, *, group: ProcessGroup | None = None) -> Self:
        """Every rank's record stacked along a new first dim, on every rank (batch size
        ``[world_size, *batch_size]``; ``result[r]`` is rank ``r``'s record). The peer
        returns a list; iterating or indexing the stack gives the same records."""
        from tclass.distributed import all_gather

        return all_gather(self, group=group)
