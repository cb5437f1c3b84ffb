"""Memory placement methods every collection has: pinned and shared memory, the
device predicates and stream records. (Consolidation into one buffer is declared in
``declared/_packing.py``; pinning a consolidated collection pins its buffer, through
``_provided.ENGINE.pinned``.)"""

from __future__ import annotations

from typing import Any

import torch
from typing_extensions import Self

from tclass._base._provided import ENGINE
from tclass._base.implemented._collection import TensorCollection
from tclass._core._device import ToOptions, parse_to_args
from tclass._core._memmap import functorch_base, in_memory_map
from tclass._core._records import is_record, storage_of

__all__ = ["DeviceOps", "map_tensors", "share"]


class DeviceOps(TensorCollection):
    """pin_memory, share_memory_, is_shared, record_stream, is_cpu / is_cuda / is_meta."""

    __slots__ = ()

    def pin_memory(self, num_threads: int | None = None, inplace: bool = False) -> Self:
        """A copy whose tensors are in page-locked (pinned) host memory, for fast and truly
        asynchronous ``to("cuda", non_blocking=True)``. A consolidated collection pins its
        one buffer. ``num_threads`` > 1 pins leaves in parallel. With ``inplace``, this
        collection's own tensors move to the pinned memory (they stay the same tensor
        objects) and ``self`` is returned.

        Raises:
            DeviceError: no accelerator runtime to pin memory with, or a leaf not on CPU.
        """
        out = self._pinned(num_threads or 0)
        if not inplace:
            return out
        for leaf, new in zip(self._tensor_leaves(), out._tensor_leaves()):
            if new is not leaf:
                leaf.data = new
        return self

    def _pinned(self, num_threads: int) -> Self:
        return ENGINE.pinned(self, num_threads)  # type: ignore[no-any-return]

    def _to_with(self, args: tuple[Any, ...], kwargs: dict[str, Any], options: ToOptions) -> Self:
        """``to(*args, **kwargs)`` with the peer's extra keywords (``ToOptions``): pinned
        first for ``non_blocking_pin`` (where the device changes), taken by ``self`` for
        ``inplace`` (nested collections stay the same objects), and given ``batch_size``
        (set on ``self`` when nothing moved, as the peer)."""
        request = parse_to_args(args, dict(kwargs))
        source = self
        if options.non_blocking_pin and request.device not in (None, self.device):
            source = self.pin_memory(options.num_threads)
            kwargs = {**kwargs, "non_blocking": True}
        result = source.to(*args, **kwargs)
        if options.memory_format is not None:  # each tensor laid out so (torch's keyword)
            result = _laid_out(result, options.memory_format)
        if options.inplace and result is not self:
            self._take_moved(result)
            result = self
        if options.batch_size is not None:
            result.batch_size = options.batch_size  # type: ignore[misc, assignment]
        return result

    def _take_moved(self, moved: Self) -> None:
        """Takes the tensors and device of ``moved`` (this collection moved or cast)."""
        raise NotImplementedError

    def pin_memory_(self, num_threads: int = 0) -> Self:
        """Same as ``pin_memory(num_threads, inplace=True)`` (the peer's older name)."""
        return self.pin_memory(num_threads, inplace=True)

    def record_stream(self, stream: torch.Stream) -> Self:
        """Marks every tensor as used by the CUDA ``stream`` (``Tensor.record_stream``):
        its memory is not reused, once freed, before the work queued on ``stream`` is
        done; returns ``self``."""
        for leaf in self._tensor_leaves():
            leaf.record_stream(stream)
        return self

    def clear_refs_for_compile_(self) -> Self:
        """Returns ``self``: the peer clears a weak reference to the result of its last
        operation here, for ``torch.compile``; tclass keeps none (a ``with`` block on a
        result holds a strong reference to its source instead), so there is nothing to
        clear."""
        return self

    @property
    def is_cpu(self) -> bool:
        """Whether the collection's ``device`` is the CPU (``False`` without a device, as
        the peer: the tensors may then be anywhere)."""
        device = self.device
        return device is not None and device.type == "cpu"

    @property
    def is_cuda(self) -> bool:
        """Whether the collection's ``device`` is a CUDA device."""
        device = self.device
        return device is not None and device.type == "cuda"

    @property
    def is_meta(self) -> bool:
        """Whether the collection's ``device`` is ``meta`` (shapes without data)."""
        device = self.device
        return device is not None and device.type == "meta"

    def is_shared(self) -> bool:
        """Whether every tensor is in shared memory (or on an accelerator, which shares
        across processes through its own IPC), so that other processes see writes. As in
        the peer, a memory-mapped file is not shared memory: ``is_memmap()`` tells those.
        A ``meta`` tensor holds no data to share: it is not asked."""
        leaves = [leaf for leaf in self._tensor_leaves() if not leaf.is_meta]
        if not leaves:  # nothing to ask: whether share_memory_() made it (a view of) shared
            return self._shared_without_tensors()
        return all(_in_shared_memory(leaf) or leaf.is_cuda for leaf in leaves)

    def _shared_without_tensors(self) -> bool:
        """Whether this collection, which holds no tensor, was put in shared memory
        (``share_memory_()``, or a locked view of such a collection), as the peer's flag
        answers; a TensorDict keeps that mark, a record its TensorDict's, a lazy stack its
        members' (other collections answer False)."""
        if is_record(self):
            return bool(storage_of(self)._shared_without_tensors())
        if self._is_lazy:
            members = _members(self)
            return bool(members) and all(m._shared_without_tensors() for m in members)
        return False

    def _mark_shared(self) -> None:
        """Records that ``share_memory_()`` ran (see ``_shared_without_tensors``)."""
        if is_record(self):
            storage_of(self)._mark_shared()
        elif self._is_lazy:
            for member in _members(self):
                member._mark_shared()

    def share_memory_(self) -> Self:
        """Moves every CPU tensor's storage to shared memory, in place (processes started
        after this, or receiving this collection through ``torch.multiprocessing``, see
        each other's writes). Returns ``self``, locked: replacing an entry would not be
        shared. Tensors on another device stay where they are, as in the peer (an
        accelerator's are shared through its own IPC; a ``meta`` tensor holds no data)."""
        for leaf in self._tensor_leaves():
            if leaf.device.type == "cpu" and not _shared(leaf):
                _share(leaf)
        self._mark_shared()
        self.lock_()
        return self


def _members(stack: Any) -> list[Any]:
    """A lazy stack's members."""
    return list(stack.tensordicts)


def _laid_out(collection: Any, memory_format: torch.memory_format) -> Any:
    """``collection`` with its 4-d and 5-d tensors in ``memory_format`` (as
    ``nn.Module.to`` and the peer lay them out; others, and a tensor already so laid
    out, are kept), locked as it was."""

    def lay_out(leaf: torch.Tensor) -> torch.Tensor:
        return leaf.to(memory_format=memory_format) if leaf.dim() in (4, 5) else leaf

    result = collection.apply(lay_out)
    return result.lock_() if collection.is_locked and not result.is_locked else result


def map_tensors(node: Any, fn: Any, device: torch.device | None = None) -> Any:
    """``node`` with ``fn`` applied to every tensor, nested ones included; with
    ``device``, every node of the result records that device."""

    def each(value: Any) -> Any:
        return fn(value) if isinstance(value, torch.Tensor) else map_tensors(value, fn, device)

    if device is None:
        return node._map_values(each, node.batch_size)
    return node._map_values(each, node.batch_size, device)


def _in_shared_memory(leaf: torch.Tensor) -> bool:
    """Whether ``leaf`` is in shared memory, not memory-mapped (a file, or the anonymous
    map ``memmap_()`` gives without a folder, as in the peer)."""
    leaf = functorch_base(leaf)
    return bool(_shared(leaf)) and not in_memory_map(leaf)


# torch leaves these two untyped.
_shared: Any = torch.Tensor.is_shared
_share: Any = torch.Tensor.share_memory_
share: Any = _share
