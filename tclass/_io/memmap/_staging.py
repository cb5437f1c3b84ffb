"""Loading memory-mapped leaves onto an accelerator through pinned staging buffers.

Copying a memory-mapped (pageable) tensor to a GPU makes the driver stage it through its
own small pinned buffer, synchronously, leaf by leaf. Instead, the bytes of every leaf are
cut into chunks; reader threads copy chunks from the mapped files into a ring of pinned
buffers while the GPU copies the previous chunks out of them on a side stream, each
buffer reused only after the event recorded behind its last copy has completed. File
reads and host-to-device copies overlap, and each copy runs from pinned memory at full
bandwidth.

Without CUDA (tests, CPU targets) the same pipeline runs with ordinary buffers and
synchronous copies, so its chunking is exercised everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["CHUNK_BYTES", "stage_copy"]

# torch leaves these constructors untyped.
_Stream: Any = torch.cuda.Stream
_Event: Any = torch.cuda.Event
CHUNK_BYTES = 32 << 20  # large enough for full-bandwidth copies, small enough to overlap
_BUFFERS = 4  # staging buffers in the ring: reads of up to 3 chunks run ahead of the GPU
_READERS = 4


@dataclass
class _Chunk:
    source: torch.Tensor  # a flat uint8 view of the source leaf
    target: torch.Tensor  # the same bytes of the destination leaf
    start: int
    stop: int


def stage_copy(
    sources: Sequence[torch.Tensor],
    device: torch.device,
    non_blocking: bool = False,
    chunk_bytes: int = CHUNK_BYTES,
) -> list[torch.Tensor]:
    """Copies of ``sources`` (CPU tensors, typically memory-mapped) on ``device``."""
    targets = [torch.empty(s.shape, dtype=s.dtype, device=device) for s in sources]
    chunks = _chunks(sources, targets, chunk_bytes)
    if not chunks:
        return targets
    cuda = device.type == "cuda"
    size = min(chunk_bytes, max(c.stop - c.start for c in chunks))
    ring = [
        torch.empty(size, dtype=torch.uint8, pin_memory=cuda)
        for _ in range(min(_BUFFERS, len(chunks)))
    ]
    stream = _Stream(device) if cuda else None
    done: list[Any] = [None] * len(ring)  # the event behind each buffer's last copy
    with ThreadPoolExecutor(min(_READERS, len(ring))) as readers:
        reads: dict[int, Future[None]] = {}
        for index in range(min(len(ring), len(chunks))):
            reads[index] = readers.submit(_read, chunks[index], ring[index])
        for index, chunk in enumerate(chunks):
            slot = index % len(ring)
            reads.pop(index).result()
            done[slot] = _send(chunk, ring[slot], stream)
            following = index + len(ring)
            if following < len(chunks):
                reads[following] = readers.submit(
                    _read_after, chunks[following], ring[slot], done[slot]
                )
    _finish(stream, targets, non_blocking)
    return targets


def _chunks(
    sources: Sequence[torch.Tensor], targets: Sequence[torch.Tensor], chunk_bytes: int
) -> list[_Chunk]:
    chunks = []
    for source, target in zip(sources, targets):
        flat_source = _bytes(source.contiguous())
        flat_target = _bytes(target)
        for start in range(0, flat_source.numel(), chunk_bytes):
            stop = min(start + chunk_bytes, flat_source.numel())
            chunks.append(_Chunk(flat_source, flat_target, start, stop))
    return chunks


def _bytes(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's memory as a flat uint8 tensor (a view, no copy)."""
    flat = tensor.reshape(-1)
    if flat.dtype == torch.bool:
        return flat.view(torch.uint8)
    return (
        flat.view(torch.uint8)
        if flat.numel()
        else torch.empty(0, dtype=torch.uint8, device=tensor.device)
    )


def _read(chunk: _Chunk, buffer: torch.Tensor) -> None:
    """File pages -> staging buffer (the page-cache read; runs in a reader thread)."""
    buffer[: chunk.stop - chunk.start].copy_(chunk.source[chunk.start : chunk.stop])


def _read_after(chunk: _Chunk, buffer: torch.Tensor, event: Any) -> None:
    if event is not None:
        event.synchronize()  # the GPU is done reading this buffer
    _read(chunk, buffer)


def _send(chunk: _Chunk, buffer: torch.Tensor, stream: Any) -> Any:
    """Staging buffer -> destination, asynchronously on ``stream`` when there is one."""
    size = chunk.stop - chunk.start
    if stream is None:
        chunk.target[chunk.start : chunk.stop].copy_(buffer[:size])
        return None
    with torch.cuda.stream(stream):
        chunk.target[chunk.start : chunk.stop].copy_(buffer[:size], non_blocking=True)
        event = _Event()
        event.record(stream)
    return event


def _finish(stream: Any, targets: Sequence[torch.Tensor], non_blocking: bool) -> None:
    if stream is None:
        return
    if non_blocking:
        # Later work on the caller's stream waits for the copies; the targets' memory is
        # not reused before the side stream is done with it.
        torch.cuda.current_stream(stream.device).wait_stream(stream)
        for target in targets:
            target.record_stream(stream)
    else:
        stream.synchronize()
