"""Every tensor of a collection in one buffer, and where the tensors' data lies:
``pack`` (one tensor and its :class:`~tclass.PackLayout`), ``consolidate``,
``from_consolidated`` and ``is_consolidated`` (one buffer the tensors are views of), and
``data_ptr`` (the addresses of the data). Declared here, implemented in the engine
(``_engine/_pack.py``, ``_engine/_consolidate.py``, ``_engine/_record_fields.py``), read
from ``_provided.ENGINE``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal, TypedDict, overload

import torch
from typing_extensions import Self, Unpack

from tclass._base._provided import ENGINE
from tclass._base.implemented._collection import TensorCollection
from tclass._core._device import DeviceLike
from tclass._core._future import TensorDictFuture

if TYPE_CHECKING:
    from tclass._engine._pack import PackLayout
    from tclass._engine._td import TensorDict

__all__ = ["ConsolidateOptions", "PackingOps"]


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


class PackingOps(TensorCollection):
    """pack, consolidate, from_consolidated, is_consolidated, data_ptr."""

    __slots__ = ()

    def pack(
        self, dim: int = -1, *, layout: PackLayout | None = None
    ) -> tuple[torch.Tensor, PackLayout]:
        """Every tensor flattened after the batch dims and joined, in the order of the
        sorted keys, into one contiguous tensor of shape ``(*batch_size, F)`` (the packed
        dim at ``dim``, in ``[-(batch_dims + 1), batch_dims]``), with the
        :class:`~tclass.PackLayout` whose ``unpack`` rebuilds the collection. The
        tensors must share one dtype and device; Python values cannot be packed
        (``filter_non_tensor_data()`` first). ``layout`` packs in its column order
        instead (the leaves must match it).

        Raises:
            EntryTypeError: (a ``TypeError``) Python values, or tensors of several dtypes
                or devices.
            KeyNotFoundError: (a ``KeyError``) the leaves differ from ``layout``'s keys.
            ShapeError: a leaf's feature shape or ``dim`` differs from ``layout``'s.
        """
        return ENGINE.pack(self, dim, layout)

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
    ) -> Self | TensorDictFuture[Self]: ...

    def consolidate(
        self,
        filename: str | os.PathLike[str] | None = None,
        *,
        return_early: bool = False,
        **options: Unpack[ConsolidateOptions],
    ) -> Self | TensorDictFuture[Self]:
        """A locked copy whose every tensor (nested included) is a view of one contiguous
        buffer, detached from autograd.

        Moving it (``to(device)``) then costs one copy of that buffer plus rebuilding the
        views, pickling it sends the one buffer, and :func:`tclass.from_consolidated`
        rebuilds it from the buffer alone. Replacing an entry of the result ends the
        consolidation (it is then moved leaf by leaf again); in-place writes keep it.
        A collection consolidated already (its leaves still the buffer's views) is
        returned itself, as the peer does, unless a file, another device, pinned or
        shared memory that its buffer is not asks for a new one.
        ``filename`` puts the buffer in that file (memory-mapped); ``return_early`` with
        ``num_threads > 0`` gives a :class:`~tclass.utils.TensorDictFuture` of the result,
        as the peer does (not with ``non_blocking`` or ``use_buffer``). See
        :class:`ConsolidateOptions`.
        """
        return ENGINE.consolidate(self, filename, return_early=return_early, **options)  # type: ignore[no-any-return]

    @classmethod
    def from_consolidated(cls, filename: str | os.PathLike[str]) -> Self:
        """The collection a ``consolidate(filename=...)`` file holds; its tensors are views
        of one copy-on-write mapping of the file (writes stay in memory). Locked where the
        collection consolidated was locked (``lock_()``, ``memmap``), at every level, as the
        peer's; unlocked otherwise. On a tensorclass, a record of that class; on
        ``TensorDict``, what the file holds (a record's file: its TensorDict, as the peer's).

        Raises:
            MissingFileError: (a ``FileNotFoundError``) no such file.
            MetadataError: the file is not a consolidated buffer.
        """
        return ENGINE.from_consolidated_file(filename, cls)  # type: ignore[no-any-return]

    def is_consolidated(self) -> bool:
        """Whether the tensors are (still) views of one consolidated buffer."""
        return ENGINE.consolidation_of(self) is not None

    def data_ptr(self, *, storage: bool = False) -> TensorDict:
        """A TensorDict (no batch dims) of the data addresses of the tensors, nested like
        this collection; with ``storage``, the addresses of their storages."""
        return ENGINE.data_ptrs(self, storage)
