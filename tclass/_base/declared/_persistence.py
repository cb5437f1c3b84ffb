"""The persistence methods every collection has (``memmap_``, ``load_memmap``...).

A mixin of ``TensorDictBase``: each method forwards to its io implementation, which
builds on the engine classes that derive from this mixin and is read from
``_provided.IO``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Union

import torch
from typing_extensions import Self, Unpack

from tclass._base._provided import IO
from tclass._core._method_names import check_keywords

if TYPE_CHECKING:
    from tclass._base._tensordict_base import TensorDictBase
    from tclass._core._device import DeviceLike
    from tclass._core._keys import NestedKey
    from tclass._core._memmap import MemoryMappedTensor
    from tclass._core._memmap_args import Mode

__all__ = ["H5Options", "PersistenceOps", "SaveOptions", "ZarrOptions"]

PathLike = Union[str, "os.PathLike[str]"]


class SaveOptions(TypedDict, total=False):
    """The keyword-only options of every save (``memmap``, ``memmap_``, ``memmap_like``,
    ``save`` and the module functions), written once; see :meth:`PersistenceOps.memmap_`.
    The defaults live in ``tclass._io._api.saved_copy``, the one implementation."""

    num_threads: int  # 0
    existsok: bool  # True
    allow_pickle: bool  # False
    durable: bool  # False
    archive: bool | None  # None: an archive when the prefix ends in ".tdz"
    compression: str | int | None  # None (stored); archives only
    return_early: bool  # False
    atomic: bool  # accepted: every save is staged and swapped into place
    robust_key: bool | None  # accepted: file names are always percent-encoded
    share_non_tensor: bool  # False (True is refused)


class LoadOptions(TypedDict, total=False):
    """The keyword-only options of every load (``load_memmap``, ``load`` and the module
    functions), written once; see :meth:`PersistenceOps.load_memmap`. The defaults live in
    ``tclass._io._api.load_memmap``, the one implementation."""

    subpath: NestedKey | None  # None: the whole tree
    mode: Mode | None  # None: shared where writable, else copy-on-write
    allow_pickle: bool | None  # None and False: refuse pickled values
    robust_key: bool | None  # accepted: both file-name layouts are always read
    num_threads: int  # accepted: archive entries are decompressed in the calling thread
    strict: bool  # True: a record's fields must match its class (see _io/_schema.py)
    widen: bool  # False: a dtype its spec no longer allows is refused, even if lossless


class H5Options(TypedDict, total=False):
    """The keyword-only options of opening an HDF5 file (``Cls.from_h5``,
    ``tclass.from_h5``, ``PersistentTensorDict.from_h5``), written once; the defaults
    live in ``PersistentTensorDict.from_h5``."""

    mode: str  # "r": as h5py.File's ("r", "r+", "a", "w", "w-"/"x")
    auto_batch_size: bool  # False: the saved batch size; True: the one the entries share
    batch_dims: int | None  # None: at most this many inferred batch dims
    batch_size: Any  # None: the saved one, else the largest the datasets share
    non_tensor_as_stack: bool  # False: other tools' string columns read as per-row values
    allow_external: bool  # False: external links, raw external storage, virtual datasets refused


class ZarrOptions(TypedDict, total=False):
    """The keyword-only options of opening a zarr store (``Cls.from_zarr``,
    ``tclass.from_zarr``, ``PersistentTensorDict.from_zarr``), written once; the
    defaults live in ``PersistentTensorDict.from_zarr``."""

    mode: str  # "r": "r", "r+", "a", "w", "w-"/"x"
    auto_batch_size: bool  # False: the saved batch size; True: the one the entries share
    batch_dims: int | None  # None: at most this many inferred batch dims
    batch_size: Any  # None: the saved one, else the largest the arrays share
    non_tensor_as_stack: bool  # False: other tools' string arrays read as per-row values
    allow_pickle: bool | None  # None and False: values the peer pickled are refused


class PersistenceOps:
    """Saving to and loading from a folder of memory-mapped files (the peer's format)."""

    __slots__ = ()

    def memmap_(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        **options: Unpack[SaveOptions],
    ) -> Self:
        """Save into ``prefix`` and make this collection's leaves the memory-mapped files.

        Args:
            prefix: the folder to write (replaced whole, atomically, if it holds a saved
                tree); None keeps the data in anonymous shared memory instead.
            copy_existing: allow copying leaves already saved in another folder (else
                that is a ``FileConflictError``: the copy is probably unintended).
            num_threads: write leaves in that many threads; 1: the calling thread
                only; 0 (the default): the calling thread, and one more when the leaves
                give each at least 32 MiB to copy and torch may use several threads
                (``torch.get_num_threads()``; the peer's save copies with torch's).
            existsok: allow replacing leaf files that exist in ``prefix`` (default True).
            allow_pickle: save Python values that are not JSON with pickle (loading them
                will need ``allow_pickle=True`` too); otherwise they are an error.
            durable: also survive a power cut: fsync every written file and folder and
                the parent folder after the swap. Without it (the default, as the peer)
                a save is safe against the writer being killed at any moment, not
                against power loss; ``durable=True`` costs a disk write of every byte
                before returning.
            archive: write one ``.tdz`` archive file (a zip of the folder's files, the
                peer's 0.15 format) instead of a folder. None (default): an archive when
                ``prefix`` ends in ``.tdz``. An archive's leaves are views into its
                mapping; ``memmap_`` and ``memmap_like`` map it shared (writes reach the
                file), ``memmap`` and ``save`` copy-on-write, as the peer does.
            compression: how an archive's tensor payloads are compressed: None (stored,
                mapped when loaded), ``"deflate"``, ``"bzip2"``, ``"lzma"`` or a
                ``zipfile`` constant (loaded into memory). Archives only.
            return_early: with ``num_threads > 1``, return a ``TensorDictFuture`` at
                once (``tclass.utils.TensorDictFuture``: its ``result()`` waits for the
                save and returns what the call would have); checkers still see the
                call's ``Self``. Not for archives.
            atomic: accepted for the peer's code: every tclass save is staged next to
                ``prefix`` and swapped into place, so a killed writer never leaves a
                half-written folder.
            robust_key: accepted for the peer's code: a key whose characters are not
                safe in a file name is always written percent-encoded (the peer's
                default), never as a raw path, whatever the value.
            share_non_tensor: only False. Python values written into the saved
                collection reach its ``meta.json`` (other processes see them when they
                load it); values shared live between processes are not supported.

        Returns:
            ``self``, now locked, its device ``cpu``. Later writes reach the folder:
            tensor data in place, Python values, fields filled for the first time (see
            "What reaches the folder" in the README); for an archive, tensor data.
        """
        return IO.memmap_in_place(
            self, prefix, copy_existing, **check_keywords(options, SaveOptions, self, "memmap_")
        )

    def memmap(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        **options: Unpack[SaveOptions],
    ) -> Self:
        """A locked memory-mapped copy saved in ``prefix``; ``self`` is left as it is.
        Arguments as in :meth:`memmap_`."""
        return IO.saved_copy(
            self,
            prefix,
            copy_existing,
            like=False,
            **check_keywords(options, SaveOptions, self, "memmap"),
        )

    def memmap_like(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        **options: Unpack[SaveOptions],
    ) -> Self:
        """Like :meth:`memmap`, but the files are allocated, not filled: they read as
        zeros and take no disk blocks until written (an expanded record of a million
        rows costs neither RAM nor disk). Python values are saved as they are.
        ``durable=True`` makes the new (empty) tree itself survive a power cut; rows
        written into it later reach the disk when the system writes them back (or on
        ``os.sync()``)."""
        return IO.saved_copy(
            self,
            prefix,
            copy_existing,
            like=True,
            **check_keywords(options, SaveOptions, self, "memmap_like"),
        )

    def save(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        **options: Unpack[SaveOptions],
    ) -> Self:
        """Alias of :meth:`memmap`."""
        return self.memmap(
            prefix, copy_existing, **check_keywords(options, SaveOptions, self, "save")
        )

    dumps = save

    @classmethod
    def load_memmap(
        cls,
        prefix: PathLike,
        device: DeviceLike = None,
        non_blocking: bool = False,
        *,
        out: Any = None,
        **options: Unpack[LoadOptions],
    ) -> Self:
        """Load a folder written by :meth:`memmap` / :meth:`save` (or by the peer).

        Leaves are MemoryMappedTensors on the files: nothing is read until used,
        ``x[idx]`` reads only those rows. By default (as the peer) in-place writes into
        the leaves reach the files when this process may write them: a loaded replay
        buffer or dataset is updated in place; Python values written into the result and
        entries added to it are written to the folder too (replacing or removing a saved
        tensor changes memory only). To use saved data without ever changing it (a
        checkpoint loaded into a model with ``to_module`` and trained), load with
        ``mode="r"``: the files are then mapped copy-on-write, writes stay in memory,
        and saving back into the folder writes the changed data out as any save does.
        A nested sub-folder loads on its own, or pass ``subpath``.

        Args:
            prefix: the folder.
            device: copy the leaves there (``"meta"``: shapes only, no data read).
            non_blocking: do not wait for device copies to finish.
            out: a collection of the same structure that is made to hold the loaded
                leaves, and returned (see :meth:`load_memmap_`).
            subpath: load only the nested collection at this key, as a ``"/"``-separated
                string (``"a/b"``) or a nested key (``("a", "b")``); a record's fields
                are reached by their names (its ``_tensordict/`` is stepped through). A
                part that would leave the folder (``..``, an absolute path) is an
                ``UnsafePathError``.
            mode: how the files are mapped. ``"r"``: copy-on-write, nothing ever
                reaches the files (they are opened read-only). ``"r+"``: shared, writes
                reach the files; a file this process may not write is a
                ``FilePermissionError`` (a ``PermissionError``). ``None`` (default):
                each file shared if it is writable, copy-on-write otherwise. Why
                write-through by default: it is the peer's behaviour, which programs
                that update a loaded buffer in place rely on (a copy-on-write default
                would drop their writes silently), and a copy-on-write mapping counts
                against the memory commit limit, so a file larger than RAM plus swap may
                fail to map with ``"r"``.
            allow_pickle: unpickle Python values saved with pickle (this can run code:
                only for folders from a trusted source). ``None`` (the peer's default,
                which unpickles with a warning) refuses, as ``False`` does.
            robust_key: accepted for the peer's code; both file-name layouts (the
                percent-encoded names written by default and the legacy raw names)
                are always read.
            num_threads: accepted for the peer's code; compressed archive entries are
                decompressed in the calling thread.
            strict: each record is checked against its class, and a field the folder
                holds that the class does not declare (or that the class requires and
                the folder lacks) is an error; ``False`` leaves such a field out (or
                loads it as None).
            widen: load a tensor whose dtype its field's spec no longer allows, but
                converts to without loss (uint8 to float32...), converted (in memory;
                the file is not changed).

        Returns:
            On a tensorclass, a record of that class. On ``TensorDict``,
            ``LazyStackedTensorDict`` and ``TensorDictBase``, whatever the folder holds
            (a record saved from a tensorclass comes back as that record), as the peer
            loads it.

        Raises:
            MissingFileError, MetadataError, FileFormatError, UnsafePathError: the folder
                is missing, damaged or crafted (the message names the file).
            SubpathError: ``subpath`` names no nested collection (a ``ValueError``).
            FilePermissionError: ``mode="r+"`` and a file is not writable.
            ValueError: ``mode`` is not None, ``"r"`` or ``"r+"``.
            ClassResolutionError: the saved class is not defined in this process.
            PickleRefusedError: a value needs unpickling and ``allow_pickle`` is False.
            SchemaMismatchError: a record's folder differs from its class; every
                difference is listed, each with the option that accepts it.
        """
        return IO.load_memmap(
            prefix,
            device,
            non_blocking,
            out=out,
            cls=cls,
            **check_keywords(options, LoadOptions, cls, "load_memmap"),
        )

    @classmethod
    def load(
        cls,
        prefix: PathLike,
        device: DeviceLike = None,
        non_blocking: bool = False,
        *,
        out: Any = None,
        **options: Unpack[LoadOptions],
    ) -> Self:
        """Alias of :meth:`load_memmap` (the peer's other name). A classmethod of its
        own, not ``load = load_memmap``: mypy refuses an alias of a classmethod returning
        ``Self`` read through the class (``Step.load(path)``: "Access to generic instance
        variables via class is ambiguous")."""
        return cls.load_memmap(
            prefix,
            device,
            non_blocking,
            out=out,
            **check_keywords(options, LoadOptions, cls, "load"),
        )

    def load_memmap_(
        self,
        prefix: PathLike,
        robust_key: bool | None = True,
        *,
        allow_pickle: bool | None = False,
        mode: Mode | None = None,
    ) -> Self:
        """Make this collection hold the data saved in ``prefix`` (its batch size), as the
        peer: each leaf replaced by the loaded memory-mapped tensor (writes reach the
        folder; the tensors it held are not written into: ``td.update_(load_memmap(p))``
        does that), nested collections kept, keys that were not saved removed; a
        memory-mapped collection moves to that folder. ``mode="r"`` maps the files
        copy-on-write (see :meth:`load_memmap`).
        ``robust_key`` is accepted for the peer's code: both file-name layouts are read."""
        return IO.load_memmap(prefix, out=self, mode=mode, allow_pickle=allow_pickle)  # type: ignore[return-value]

    load_ = load_memmap_  # the peer's older name

    def memmap_refresh_(self, *, allow_pickle: bool | None = None) -> Self:
        """Reads this collection's folder (:attr:`saved_path`) again: entries another
        process added, removed or rewrote there (Python values included) replace this
        collection's, which is returned. ``allow_pickle`` as in :meth:`load_memmap`.

        Raises:
            NotSavedError: (a ``RuntimeError``) the collection is not saved in a folder.
        """
        return IO.memmap_refresh(self, allow_pickle)  # type: ignore[no-any-return]

    @property
    def saved_path(self) -> Path | None:
        """The folder this collection is saved in (written through); None if it is
        memory-mapped but saved in no folder (``memmap()`` without a prefix, a lazy
        stack: its members know theirs), as the peer.

        Raises:
            NotSavedError: (an ``AttributeError``, as the peer) if it is saved nowhere
                and not memory-mapped.
        """
        return IO.saved_path(self)

    def make_memmap(
        self,
        key: NestedKey,
        shape: Sequence[int] | torch.Tensor,
        *,
        dtype: torch.dtype | None = None,
        robust_key: bool | None = True,
    ) -> MemoryMappedTensor:
        """A new entry of zeros of ``shape`` (batch dims included) and ``dtype`` at
        ``key``, allocated as a file in the folder this collection is saved in (a sparse
        file: nothing is written), and returned. Works on a locked saved collection, as
        the peer; ``robust_key`` is accepted (file names are always percent-encoded).

        Raises:
            NotSavedError: (a ``RuntimeError``) the collection is not saved in a folder.
            EntryExistsError: (a ``RuntimeError``) ``key`` is already an entry.
            BatchMismatchError: ``shape`` does not start with the batch size.
        """
        return IO.make_memmap(self, key, shape, dtype)  # type: ignore[no-any-return]

    def make_memmap_from_tensor(
        self,
        key: NestedKey,
        tensor: torch.Tensor,
        *,
        copy_data: bool = True,
        existsok: bool = True,
        robust_key: bool | None = True,
    ) -> MemoryMappedTensor:
        """Like :meth:`make_memmap`, the new entry holding a copy of ``tensor`` (zeros of
        its shape and dtype without ``copy_data``). ``existsok`` and ``robust_key`` are
        accepted: an existing key is always an ``EntryExistsError``, as in the peer."""
        return IO.make_memmap_from_tensor(self, key, tensor, copy_data)  # type: ignore[no-any-return]

    def make_memmap_from_storage(
        self,
        key: NestedKey,
        storage: torch.UntypedStorage,
        shape: Sequence[int] | torch.Tensor,
        *,
        dtype: torch.dtype | None = None,
        robust_key: bool | None = True,
    ) -> MemoryMappedTensor:
        """Like :meth:`make_memmap`, the new entry holding the bytes of ``storage`` read
        as ``dtype`` (the default dtype if None, as the peer) and ``shape``, copied into
        the folder."""
        return IO.make_memmap_from_storage(self, key, storage, shape, dtype)  # type: ignore[no-any-return]

    def to_h5(self, filename: PathLike, **kwargs: Any) -> TensorDictBase:
        """Write this collection to a new HDF5 file (truncated if it exists; needs
        ``pip install 'tclass[h5]'``) and return it opened for reading and writing: a
        ``PersistentTensorDict`` (a record of this class over one, for a record).
        ``kwargs`` go to ``h5py.Group.create_dataset`` (``compression="gzip"``...)."""
        return IO.to_h5(self, filename, **kwargs)  # type: ignore[no-any-return]

    @classmethod
    def from_h5(cls, filename: PathLike, **options: Unpack[H5Options]) -> TensorDictBase:
        """Open an HDF5 file as a ``PersistentTensorDict`` (reading its metadata only;
        needs ``pip install 'tclass[h5]'``); on a tensorclass, a record of that class
        over it. Without ``batch_size``: the batch size tclass saved in the file, else
        the largest its datasets share (at most ``batch_dims`` dims)."""
        return IO.open_as(cls, filename, **options)  # type: ignore[no-any-return]

    def to_zarr(
        self, filename: Any, *, allow_pickle: bool | None = None, **kwargs: Any
    ) -> TensorDictBase:
        """Write this collection to a new zarr store (a directory, or a zarr store object;
        replaced if it exists; needs ``pip install 'tclass[zarr]'``) and return it opened
        for reading and writing: a ``PersistentTensorDict`` (a record of this class over
        one, for a record). Each tensor is one uncompressed chunk unless ``kwargs`` (for
        ``zarr.Group.create_array``) say otherwise: ``chunks=(16,)`` chunks every array's
        first dim by 16, ``compressors=...`` compresses. Python values JSON cannot hold
        are refused unless ``allow_pickle=True`` (then pickled, as the peer writes them;
        reading them back needs ``allow_pickle=True`` too)."""
        return IO.to_zarr(  # type: ignore[no-any-return]
            self, filename, allow_pickle=allow_pickle, **kwargs
        )

    @classmethod
    def from_zarr(cls, filename: Any, **options: Unpack[ZarrOptions]) -> TensorDictBase:
        """Open a zarr store (a path, a zarr store object or an open ``zarr.Group``) as a
        ``PersistentTensorDict`` (reading its metadata only; needs ``pip install
        'tclass[zarr]'``); on a tensorclass, a record of that class over it. Without
        ``batch_size``: the batch size tclass (or the peer) saved in the store, else the
        largest its arrays share (at most ``batch_dims`` dims)."""
        return IO.open_zarr_as(cls, filename, **options)  # type: ignore[no-any-return]

    def append_memmap_(
        self, rows: Any, *, allow_pickle: bool | None = None, durable: bool = False
    ) -> Self:
        """Append ``rows`` to the folder this collection is saved in (along the first
        batch dim, without rewriting the saved rows: see ``tclass.append_memmap``), and
        extend this collection in place: its batch size grows, its leaves map the grown
        files, and it holds every row of the folder (rows other processes appended
        included). Its lock state is kept.

        Args:
            rows: a collection of this one's class, keys, dtypes and trailing shapes.
            allow_pickle: Python values JSON cannot hold may be pickled into the folder
                (and its pickled values read), as ``tclass.append_memmap``'s; None (the
                default): as this collection was saved or loaded.
            durable: fsync the grown files and the new ``meta.json`` files too.

        Returns:
            ``self``.

        Raises:
            AppendTargetError: (an ``AppendError``, a ``ValueError``, and an
                ``AttributeError``, as the peer, which has no ``append_memmap_``) this
                collection is not linked to a folder it may write (not saved with
                ``memmap``/``memmap_``/``memmap_like`` or loaded with ``load_memmap``;
                loaded with ``mode="r"``...).
            AppendError: (a ``ValueError``) it is nested under a parent that has its
                rows, or ``rows`` does not fit. Nothing was written and this collection
                is unchanged.
        """
        return IO.append_in_place(self, rows, durable, allow_pickle)  # type: ignore[no-any-return]

    def is_memmap(self) -> bool:
        """Whether every tensor leaf is a MemoryMappedTensor."""
        return IO.is_memmap(self)
