"""Memory placement methods every collection has: pinned and shared memory, and
consolidation into one buffer (``consolidate``, whose implementation lives with the
serialisation code in ``_io/_consolidate.py`` and is imported when called)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import torch
from typing_extensions import Self

from tclass._base._collection import TensorCollection
from tclass._core._device import DeviceLike, as_device
from tclass.errors import DeviceError

if TYPE_CHECKING:
    from tclass._engine._consolidate import Consolidated

__all__ = ["DeviceOps", "consolidation_of", "map_tensors", "move_consolidated", "share"]


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
        _require_pinning()
        state = consolidation_of(self)
        if state is not None:
            from tclass._engine._consolidate import moved_buffer

            return moved_buffer(self, state, state.buffer.pin_memory())  # type: ignore[no-any-return]
        leaves = [leaf for leaf in _leaves(self) if not leaf.is_pinned()]
        pinned = _map_threads(lambda leaf: leaf.pin_memory(), leaves, num_threads)
        replacement = {id(leaf): new for leaf, new in zip(leaves, pinned)}
        return map_tensors(self, lambda leaf: replacement.get(id(leaf), leaf))  # type: ignore[no-any-return]

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

        if pin_memory:
            _require_pinning()
        result: Self = consolidate(
            self, device=as_device(device), pin_memory=pin_memory, share_memory=share_memory
        )
        return result

    def is_consolidated(self) -> bool:
        """Whether the tensors are (still) views of one consolidated buffer."""
        return consolidation_of(self) is not None


def consolidation_of(node: Any) -> Consolidated | None:
    """The consolidation state of ``node`` if its leaves are still the buffer's views."""
    holder = getattr(node, "_tensordict", node)
    state: Consolidated | None = getattr(holder, "_consolidated", None)
    if state is None or not state.is_current(node):
        return None
    return state


def move_consolidated(node: Any, device: torch.device | None, non_blocking: bool) -> Any:
    """``node`` moved to ``device`` as one buffer, if it is (still) consolidated and the
    device changes; None otherwise (the caller then moves it leaf by leaf)."""
    state = consolidation_of(node)
    if state is None or device is None or device == node.device:
        return None
    from tclass._engine._consolidate import moved

    return moved(node, state, device, non_blocking)


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


def _require_pinning() -> None:
    if not torch.cuda.is_available():
        msg = (
            "pinned memory needs an accelerator runtime (CUDA), and none is available; "
            "skip pin_memory() on this machine, or pass pin_memory=False"
        )
        raise DeviceError(msg)


def _map_threads(fn: Any, items: list[torch.Tensor], num_threads: int) -> list[torch.Tensor]:
    if num_threads > 1 and len(items) > 1:
        with ThreadPoolExecutor(min(num_threads, len(items))) as pool:
            return list(pool.map(fn, items))
    return [fn(item) for item in items]
