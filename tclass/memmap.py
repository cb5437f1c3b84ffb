"""``tensordict.memmap``'s public name (``from tclass.memmap import MemoryMappedTensor``)."""

from tclass._core._memmap import MemoryMappedTensor as MemoryMappedTensor

__all__ = ["MemoryMappedTensor"]
