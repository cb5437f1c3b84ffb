"""Memory placement methods every collection has: pinned and shared memory, and
consolidation into one buffer (implemented in ``_engine/_consolidate.py``, imported when
called)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any, Literal, TypedDict, overload

import torch
from typing_extensions import Self, Unpack

from tclass._base._collection import TensorCollection
from tclass._core._device import DeviceLike

__all__ = ["ConsolidateOptions", "DeviceOps", "map_tensors", "share"]


class ConsolidateOptions(TypedDict, total=False):
    """The keywords of ``consolidate`` (the peer's). ``device``: where the buffer lives
    (default: where the tensors are). ``pin_memory`` / ``share_memory``: allocate it
    pinned or shared. ``num_threads``: copy the leaves with that many threads.
    ``non_blocking``: copy asynchronously (waited for before returning to the host).
    ``inplace``: this collection itself takes the buffer's views (and is locked).
    ``use_buffer`` and ``metadata``: the peer's switches for reusing a buffer and storing
    the structure in it; the structure is always stored here, and a new buffer made."""

    device: DeviceLike
    pin_memory: bool
    share_memory: bool
    num_threads: int
    non_blocking: bool
    inplace: bool
    use_buffer: bool
    metadata: bool


class DeviceOps(TensorCollection):
    """pin_memory, share_memory_, is_shared, consolidate, is_consolidated."""

    __slots__ = ()

    def pin_memory(self, num_threads: int = 0) -> Self:
        """A copy whose tensors are in page-locked (pinned) host memory, for fast and truly
        asynchronous ``to("cuda", non_blocking=True)``. A consolidated collection pins its
        one buffer. ``num_threads`` > 1 pins leaves in parallel.

        Raises:
            DeviceError: no accelerator runtime to pin memory with, or a leaf not on CPU.
        """
        from tclass._engine._consolidate import pinned

        return pinned(self, num_threads)  # type: ignore[no-any-return]

    def is_shared(self) -> bool:
        """Whether every tensor is in shared memory (or on an accelerator, which shares
        across processes through its own IPC), so that other processes see writes."""
        leaves = list(_leaves(self))
        return bool(leaves) and all(_shared(leaf) or leaf.is_cuda for leaf in leaves)

    def share_memory_(self) -> Self:
        """Moves every CPU tensor's storage to shared memory, in place (processes started
        after this, or receiving this collection through ``torch.multiprocessing``, see
        each other's writes). Returns ``self``, locked: replacing an entry would not be
        shared."""
        for leaf in _leaves(self):
            if not _shared(leaf):
                _share(leaf)
        self.lock_()
        return self

    @overload
    def consolidate(
        self,
        filename: str | os.PathLike[str] | None = None,
        *,
        return_early: Literal[False] = False,
        **options: Unpack[ConsolidateOptions],
    ) -> Self: ...
    @overload
    def consolidate(
        self,
        filename: str | os.PathLike[str] | None = None,
        *,
        return_early: Literal[True],
        **options: Unpack[ConsolidateOptions],
    ) -> Future[Self]: ...

    def consolidate(
        self,
        filename: str | os.PathLike[str] | None = None,
        *,
        return_early: bool = False,
        **options: Unpack[ConsolidateOptions],
    ) -> Self | Future[Self]:
        """A locked copy whose every tensor (nested included) is a view of one contiguous
        buffer, detached from autograd.

        Moving it (``to(device)``) then costs one copy of that buffer plus rebuilding the
        views, pickling it sends the one buffer, and :func:`tclass.from_consolidated`
        rebuilds it from the buffer alone. Replacing an entry of the result ends the
        consolidation (it is then moved leaf by leaf again); in-place writes keep it.
        ``filename`` puts the buffer in that file (memory-mapped); ``return_early`` gives
        a future of the result, as the peer does. See :class:`ConsolidateOptions`.
        """
        from tclass._engine._consolidate import consolidate

        return consolidate(self, filename, return_early=return_early, **options)  # type: ignore[no-any-return]

    def is_consolidated(self) -> bool:
        """Whether the tensors are (still) views of one consolidated buffer."""
        from tclass._engine._consolidate import consolidation_of

        return consolidation_of(self) is not None


def map_tensors(node: Any, fn: Any, device: torch.device | None = None) -> Any:
    """``node`` with ``fn`` applied to every tensor, nested ones included; with
    ``device``, every node of the result records that device."""

    def each(value: Any) -> Any:
        return fn(value) if isinstance(value, torch.Tensor) else map_tensors(value, fn, device)

    if device is None:
        return node._map_values(each, node.batch_size)
    return node._map_values(each, node.batch_size, device)


def _leaves(node: Any) -> Iterator[torch.Tensor]:
    yield from node.values(include_nested=True, leaves_only=True)


# torch leaves these two untyped.
_shared: Any = torch.Tensor.is_shared
_share: Any = torch.Tensor.share_memory_
share: Any = _share
