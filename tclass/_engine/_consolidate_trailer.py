"""Reading the trailer of a consolidated buffer (see :mod:`._consolidate`): its last 8
bytes give the length of the JSON before them, which is tclass's description or, in a
file, the peer's, preceded by tclass's own part (see :mod:`._consolidate_peer`). A
buffer in memory is read where it lies; a file is mapped copy-on-write for the leaves'
views, and its trailer read with ``pread`` (through the map, each page read takes a page
fault, with the pages around it).
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from typing import Any

import torch

from tclass._core._memmap import open_mapped
from tclass._engine._consolidate_peer import is_peer_description, own_part_at, tree_of_peer
from tclass.errors import MetadataError, MissingFileError

__all__ = ["LENGTH", "Read", "file_reader", "mapped_file", "memory_reader", "read_trailer"]

LENGTH = struct.Struct("<Q")  # the trailer's length, little-endian, ends every buffer


Read = Callable[[int, int], bytes]  # the bytes of a buffer from start to stop


def memory_reader(buffer: torch.Tensor) -> Read:
    """Reads a (1-d uint8) buffer's bytes from its memory (a CPU copy of another
    device's)."""
    raw = (buffer.cpu() if buffer.device.type != "cpu" else buffer).numpy()
    return lambda start, stop: raw[start:stop].tobytes()


_TAIL = 16 << 10  # what one pread takes from a file's end: its trailer, as a rule


def file_reader(fd: int, total: int) -> Read:
    """Reads the bytes of the file behind ``fd`` (of ``total`` bytes) with ``pread``,
    its last bytes (where the trailer is) read once: through the map, each page read
    takes a page fault."""
    base = max(total - _TAIL, 0)
    tail = os.pread(fd, total - base, base)

    def read(start: int, stop: int) -> bytes:
        if start >= base:
            return tail[start - base : stop - base]
        return os.pread(fd, stop - start, start)

    return read


def read_trailer(read: Read, total: int) -> dict[str, Any]:
    """The description at the end of a consolidated buffer of ``total`` bytes."""
    if total < LENGTH.size:
        raise MetadataError("the buffer is too short to be a consolidated collection")
    (length,) = LENGTH.unpack(read(total - LENGTH.size, total))
    if length > total - LENGTH.size:
        raise MetadataError(
            "the buffer's trailer length is out of range: not a consolidated collection"
        )
    start = total - LENGTH.size - length
    # a file tclass wrote: its own part, found from the start of the peer's description
    own = _own_part(read, own_part_at(read(start, start + 32)), start)
    if own is not None:
        return own
    try:
        description = json.loads(read(start, total - LENGTH.size))
    except ValueError as error:
        raise MetadataError(f"the buffer's trailer is not valid JSON ({error})") from None
    if is_peer_description(description):
        return tree_of_peer(description, start)
    if (
        not isinstance(description, dict)
        or "tree" not in description
        or "leaves" not in description
    ):
        raise MetadataError("the buffer's trailer does not describe a collection")
    return description


def _own_part(read: Read, end: int | None, start: int) -> dict[str, Any] | None:
    """tclass's own description in a file that ends with the peer's: from ``end``, where
    the leaves end, to ``start``, where the peer's begins; None where there is none (a
    file the peer wrote)."""
    if end is None or not 0 <= end < start:
        return None
    try:
        own = json.loads(read(end, start))
    except ValueError:
        return None
    if isinstance(own, dict) and own.keys() == {"tree", "leaves"}:
        return own
    return None


def mapped_file(path: str | os.PathLike[str]) -> tuple[torch.Tensor, dict[str, Any]]:
    """The file at ``path`` mapped copy-on-write, and the description its trailer holds
    (read with ``pread``, not through the map).

    Raises:
        MissingFileError: no regular file is at ``path``.
    """
    opened = open_mapped(path)
    if opened is None:
        msg = f"from_consolidated: no file {os.fspath(path)!r}; check the path"
        raise MissingFileError(msg)
    buffer, fd = opened
    try:
        total = buffer.numel()
        return buffer, read_trailer(file_reader(fd, total), total)
    finally:
        os.close(fd)
