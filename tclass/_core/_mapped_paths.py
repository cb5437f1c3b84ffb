"""Which file a tensor's memory maps: asked before a writer truncates or rewrites a file
in place (``to_h5`` over a file, which HDF5 creates by truncating it), since a tensor
mapping that file would read the new bytes, or fault on pages past its new end, before
they are copied (a loaded folder's leaves, an archive's, ``from_consolidated``'s).

The kernel's table of this process's mappings (``/proc/self/maps``) names the file of
every mapping, shared or copy-on-write, whatever path or descriptor mapped it, and is
read once per check (nothing is recorded at load time). Where there is no such table, a
``MemoryMappedTensor``'s own file name is used.
"""

from __future__ import annotations

import bisect
import os

import torch

from tclass._core._memmap import MemoryMappedTensor, maps_file

__all__ = ["MappedFiles"]

_TABLE = "/proc/self/maps"


class MappedFiles:
    """``MappedFiles(path).maps(tensor)``: whether ``tensor``'s storage maps the file at
    ``path`` (the same file: a hard link or another path to it too). The table is read
    at the first tensor that maps any file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.target = os.stat(path)
        self._starts: list[int] | None = None
        self._spans: list[tuple[int, int, str]] = []

    def maps(self, tensor: torch.Tensor) -> bool:
        if tensor.device.type != "cpu" or tensor.layout is not torch.strided:
            return False
        if not maps_file(tensor):
            return False
        path = self._path_of(tensor)
        if path is None:
            return False
        try:
            return os.path.samestat(os.stat(path), self.target)
        except OSError:  # removed since (a file replaced over it): not the target
            return False

    def _path_of(self, tensor: torch.Tensor) -> str | None:
        if self._starts is None:
            self._read_table()
        if not self._spans:  # no table: the tensor's own record of its file
            name = tensor._filename if isinstance(tensor, MemoryMappedTensor) else None
            return str(name) if name is not None else None
        address = tensor.untyped_storage().data_ptr()
        assert self._starts is not None
        at = bisect.bisect_right(self._starts, address) - 1
        if at < 0:
            return None
        start, end, path = self._spans[at]
        return path if start <= address < end else None

    def _read_table(self) -> None:
        spans: list[tuple[int, int, str]] = []
        try:
            with open(_TABLE, encoding="utf-8", errors="surrogateescape") as table:
                lines = table.read().splitlines()
        except OSError:
            lines = []
        for line in lines:
            fields = line.split(maxsplit=5)
            if len(fields) < 6 or fields[4] == "0" or not fields[5].startswith("/"):
                continue  # anonymous memory, the heap, the stack
            low, _, high = fields[0].partition("-")
            spans.append((int(low, 16), int(high, 16), fields[5]))
        spans.sort()
        self._spans = spans
        self._starts = [start for start, _, _ in spans]
