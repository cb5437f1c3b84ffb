"""Memory placement methods every collection has: pinned and shared memory, and
consolidation into one buffer (implemented in ``_engine/_consolidate.py``, imported when
called)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch
from typing_extensions import Self

from tclass._base._collection import TensorCollection

if TYPE_CHECKING:
    from tclass._core._device import DeviceLike

__all__ = ["DeviceOps", "map_tensors", "share"]


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
        self.lock_()  # type: ignore[attr-defined]
        return self

    def consolidate(
        self, *, device: DeviceLike = None, pin_memory: bool = False, share_memory: bool = False
    ) -> Self:
        """A copy whose every tensor (nested included) is a view of one contiguous buffer.

        Moving it (``to(device)``) then costs one copy of that buffer plus rebuilding the
        views, pickling it sends the one buffer, and :func:`tclass.from_consolidated`
        rebuilds it from the buffer alone. Replacing an entry of the result ends the
        consolidation (it is then moved leaf by leaf again); in-place writes keep it.

        Args:
            device: where the buffer lives (default: where the tensors are).
            pin_memory: allocate the buffer in pinned host memory.
            share_memory: allocate the buffer in shared memory.
        """
        from tclass._engine._consolidate import consolidate

        return consolidate(  # type: ignore[no-any-return]
            self, device=device, pin_memory=pin_memory, share_memory=share_memory
        )

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
