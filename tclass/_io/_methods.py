"""The persistence methods every collection has (``memmap_``, ``load_memmap``...).

A mixin of ``TensorDictBase``: it imports the io implementation only when called, since
that implementation builds on the engine classes that derive from this mixin.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Union

from typing_extensions import Self

if TYPE_CHECKING:
    from tclass._device import DeviceLike

__all__ = ["PersistenceOps"]

PathLike = Union[str, "os.PathLike[str]"]


class PersistenceOps:
    """Saving to and loading from a folder of memory-mapped files (the peer's format)."""

    __slots__ = ()

    def memmap_(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        *,
        num_threads: int = 0,
        existsok: bool = True,
        allow_pickle: bool = False,
    ) -> Self:
        """Save into ``prefix`` and make this collection's leaves the memory-mapped files.

        Args:
            prefix: the folder to write (replaced whole, atomically, if it holds a saved
                tree); None keeps the data in anonymous shared memory instead.
            copy_existing: allow copying leaves already saved in another folder (else
                that is a ``FileConflictError``: the copy is probably unintended).
            num_threads: write leaves in that many threads (0 or 1: the calling thread).
            existsok: allow replacing leaf files that exist in ``prefix``.
            allow_pickle: save Python values that are not JSON with pickle (loading them
                will need ``allow_pickle=True`` too); otherwise they are an error.

        Returns:
            ``self``, now locked, its device ``cpu``. Later writes reach the folder:
            tensor data in place, Python values, fields filled for the first time (see
            "What reaches the folder" in the README).
        """
        from tclass._io._api import adopt_leaves, saved_copy

        saved = saved_copy(self, prefix, copy_existing, num_threads, existsok, False, allow_pickle)
        adopt_leaves(self, saved)
        self.lock_()  # type: ignore[attr-defined]
        return self

    def memmap(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        *,
        num_threads: int = 0,
        existsok: bool = True,
        allow_pickle: bool = False,
    ) -> Self:
        """A locked memory-mapped copy saved in ``prefix``; ``self`` is left as it is.
        Arguments as in :meth:`memmap_`."""
        from tclass._io._api import saved_copy

        return saved_copy(self, prefix, copy_existing, num_threads, existsok, False, allow_pickle)

    def memmap_like(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        *,
        num_threads: int = 0,
        existsok: bool = True,
        allow_pickle: bool = False,
    ) -> Self:
        """Like :meth:`memmap`, but the files are allocated, not filled: they read as
        zeros and take no disk blocks until written (an expanded record of a million
        rows costs neither RAM nor disk). Python values are saved as they are."""
        from tclass._io._api import saved_copy

        return saved_copy(self, prefix, copy_existing, num_threads, existsok, True, allow_pickle)

    def save(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        *,
        num_threads: int = 0,
        existsok: bool = True,
        allow_pickle: bool = False,
    ) -> Self:
        """Alias of :meth:`memmap`."""
        return self.memmap(prefix, copy_existing, num_threads=num_threads, existsok=existsok, allow_pickle=allow_pickle)

    dumps = save

    @classmethod
    def load_memmap(
        cls,
        prefix: PathLike,
        device: DeviceLike = None,
        non_blocking: bool = False,
        *,
        out: Any = None,
        allow_pickle: bool = False,
    ) -> Self:
        """Load a folder written by :meth:`memmap` / :meth:`save` (or by the peer).

        Leaves are MemoryMappedTensors on the files: nothing is read until used, in-place
        writes reach the files (when the files are writable), ``x[idx]`` reads only those
        rows. Python values written into the result and entries added to it are written
        to the folder too (replacing or removing a saved tensor changes memory only). A
        nested sub-folder loads on its own.

        Args:
            prefix: the folder.
            device: copy the leaves there (``"meta"``: shapes only, no data read).
            non_blocking: do not wait for device copies to finish.
            out: a collection of the same structure whose tensors receive the data.
            allow_pickle: unpickle Python values saved with pickle (this can run code:
                only for folders from a trusted source).

        Returns:
            The saved collection, of this class (a tensorclass), or of the class the
            folder records when called on ``TensorDictBase``.

        Raises:
            MissingFileError, MetadataError, FileFormatError, UnsafePathError: the folder
                is missing, damaged or crafted (the message names the file).
            ClassResolutionError: the saved class is not defined in this process.
            PickleRefusedError: a value needs unpickling and ``allow_pickle`` is False.
        """
        from tclass._io._api import load_memmap

        if cls.__name__ == "TensorDictBase":  # the generic loader: whatever the folder holds
            loaded: Any = load_memmap(prefix, device, non_blocking, out=out, allow_pickle=allow_pickle)
            return loaded  # type: ignore[no-any-return]
        return load_memmap(prefix, device, non_blocking, out=out, cls=cls, allow_pickle=allow_pickle)

    @classmethod
    def load(
        cls,
        prefix: PathLike,
        device: DeviceLike = None,
        non_blocking: bool = False,
        *,
        out: Any = None,
        allow_pickle: bool = False,
    ) -> Self:
        """The peer's other name for :meth:`load_memmap`."""
        return cls.load_memmap(prefix, device, non_blocking, out=out, allow_pickle=allow_pickle)

    def load_memmap_(self, prefix: PathLike, *, allow_pickle: bool = False) -> Self:
        """Copy the data saved in ``prefix`` into this collection's tensors (same keys
        and shapes)."""
        from tclass._io._api import load_memmap

        load_memmap(prefix, out=self, allow_pickle=allow_pickle)
        return self

    def is_memmap(self) -> bool:
        """Whether every tensor leaf is a MemoryMappedTensor."""
        from tclass._io._api import is_memmap

        return is_memmap(self)
