"""How a ``MemoryMappedTensor`` is made (the base of the class, in ``_memmap.py``):
allocation in anonymous shared memory or in a new file (``empty``, ``zeros``, ``ones``,
``full`` and their ``*_like`` forms), maps of an existing file, storage or buffer
(``from_filename``, ``from_storage``, ``from_handler``), views of a tensor's own memory, and
the wrapping that carries a file's attributes over to each view. Copies of a tensor
(``from_tensor``), views by index and pickling are the class's own (``_memmap.py``)."""

from __future__ import annotations

import math
import os
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeAlias

import torch
import torch.multiprocessing
from typing_extensions import Self

from tclass._core._memmap_args import (
    DeviceLike,
    Mode,
    PathLike,
    SizeLike,
    abspath,
    as_size,
    check_cpu,
    check_dtype,
    check_tensor,
    nested_numel,
    nested_shape,
    tensor_shape,
)
from tclass._core._memmap_files import create_file, map_existing, storage_file, write_all
from tclass.errors import (
    ArgumentError,
    ArgumentValueError,
    DeviceError,
    FileConflictError,
    IndexTypeError,
    ShapeError,
)

if TYPE_CHECKING:
    from torch._C import _Index

__all__ = ["MemmapConstructors"]

Scalar: TypeAlias = bool | int | float | complex

# Typed aliases of untyped torch internals (torch.multiprocessing uses them too).
_new_shared: Callable[[int], torch.UntypedStorage] = torch.UntypedStorage._new_shared
_new_shared_fd: Callable[[int, int], torch.UntypedStorage] = torch.UntypedStorage._new_shared_fd_cpu  # type: ignore[attr-defined]
_sharing_strategy: Callable[[], str] = torch.multiprocessing.get_sharing_strategy
_memfd_create: Callable[[str, int], int] | None = getattr(os, "memfd_create", None)
# Dtypes numpy can expose; the bytes of the others are read through a same-size int.
_NUMPY_DTYPES = frozenset(
    {torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
     torch.float16, torch.float32, torch.float64, torch.complex64, torch.complex128}
)  # fmt: skip
_INT_BY_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
# The anonymous maps of MemoryMappedTensors made without a file (torch keeps one Python
# object per storage while it lives), so that their plain views (``detach()``, ``t[1:]``)
# count as memory-mapped, as file-backed ones do: see in_memory_map.
_ANONYMOUS_MAPS: weakref.WeakSet[torch.UntypedStorage] = weakref.WeakSet()


class MemmapConstructors(torch.Tensor):
    """The constructors and file attributes of ``MemoryMappedTensor`` (its only subclass),
    each returning an instance of the class it is called on."""

    # Set on file-backed instances only; anonymous ones read these class defaults.
    _filename: str | None = None
    _mode: Mode | None = None
    _prefix: bool = False  # maps the start of a longer file (a legacy padded leaf)
    # The peer's deprecated ``index`` / ``parent_shape``: the last index that made a view,
    # and the shape of the tensor it was taken from (None: this tensor's own).
    _index: object = None
    _parent_shape: torch.Size | None = None

    @classmethod
    def _alias(cls, source: object, dtype: torch.dtype | None, shape: SizeLike | None) -> Self:
        """``MemoryMappedTensor(tensor)``: the tensor's memory viewed as this class."""
        if isinstance(source, (bool, int)):
            msg = f"MemoryMappedTensor({source!r}): to allocate n elements use .empty(n)"
            raise ArgumentError(msg)
        if not isinstance(source, torch.Tensor):
            default = torch.get_default_dtype() if dtype is None else dtype
            return torch.tensor(source, dtype=default).as_subclass(cls)
        if not source.is_cpu or source.is_nested or source.layout is not torch.strided:
            msg = (
                f"MemoryMappedTensor(tensor) views a dense CPU tensor, got one on "
                f"{source.device} with layout {source.layout}; copy it with from_tensor(t)"
            )
            raise (ArgumentError if source.is_cpu else DeviceError)(msg)
        wrong = (dtype is not None and dtype != source.dtype) or (
            shape is not None and as_size((), shape) != tuple(source.shape)
        )
        if wrong:
            msg = (
                f"MemoryMappedTensor(tensor) views the tensor as it is ({source.dtype}, "
                f"shape {list(source.shape)}), not as dtype={dtype}, shape={shape}: convert "
                "or reshape it first, or pass filename= to copy it into a new file"
            )
            raise ArgumentError(msg)
        view = torch._C.TensorBase.view_as(source, source).detach()
        return source._wrap(view) if isinstance(source, cls) else view.as_subclass(cls)

    # --- constructors ------------------------------------------------------------------

    @classmethod
    def empty(
        cls, *size: SizeLike, dtype: torch.dtype | None = None,
        device: DeviceLike | None = None, filename: PathLike | None = None,
        existsok: bool = False, shape: SizeLike | None = None,
    ) -> Self:  # fmt: skip
        """A new tensor. Its content is zero (fresh shared memory or a sparse file).

        Args:
            *size: ints, one sequence of ints, or a ``torch.Size``; or pass ``shape=``.
            dtype: element type; ``torch.get_default_dtype()`` when None.
            device: None or a CPU device; the tensor always lives in CPU memory.
            filename: the file to create; None for anonymous shared memory.
            existsok: allow replacing an existing regular file (it is resized to the
                exact size and its old content discarded).
            shape: the size, as a keyword.

        Returns:
            A MemoryMappedTensor of that size and dtype.

        Raises:
            ShapeError: a malformed or negative size.
            DeviceError: a device other than CPU.
            FileConflictError: ``filename`` exists (without ``existsok``) or is a symlink.
            NotAFileError: ``filename`` is a directory or another non-regular file.
            MissingFileError: the directory of ``filename`` does not exist.

        A tensor of element shapes (one row per element, as ``nested_tensor_size()``
        gives) for the size makes a nested tensor over one buffer, as the peer's.
        """
        nested = nested_shape(size, shape)
        if nested is not None:
            return cls._nested(nested, dtype, device, filename, existsok, True)
        return cls._new(as_size(size, shape), dtype, device, filename, existsok, True)

    @classmethod
    def zeros(
        cls, *size: SizeLike, dtype: torch.dtype | None = None,
        device: DeviceLike | None = None, filename: PathLike | None = None,
        existsok: bool = False, shape: SizeLike | None = None,
    ) -> Self:  # fmt: skip
        """A new tensor filled with zeros. Args, Returns and Raises as in :meth:`empty`."""
        return cls.empty(*size, dtype=dtype, device=device, filename=filename, existsok=existsok,
                         shape=shape)  # fmt: skip

    @classmethod
    def ones(
        cls, *size: SizeLike, dtype: torch.dtype | None = None,
        device: DeviceLike | None = None, filename: PathLike | None = None,
        existsok: bool = False, shape: SizeLike | None = None,
    ) -> Self:  # fmt: skip
        """A new tensor filled with ones. Args, Returns and Raises as in :meth:`empty`."""
        return cls.full(*size, fill_value=1, dtype=dtype, device=device, filename=filename,
                        existsok=existsok, shape=shape)  # fmt: skip

    @classmethod
    def full(
        cls, *size: SizeLike, fill_value: Scalar, dtype: torch.dtype | None = None,
        device: DeviceLike | None = None, filename: PathLike | None = None,
        existsok: bool = False, shape: SizeLike | None = None,
    ) -> Self:  # fmt: skip
        """A new tensor filled with ``fill_value`` (keyword-only).

        The dtype defaults to ``torch.get_default_dtype()`` whatever ``fill_value`` is.
        Other Args, Returns and Raises as in :meth:`empty`.
        """
        nested = nested_shape(size, shape)
        if nested is not None:
            out = cls._nested(nested, dtype, device, filename, existsok, False)
        else:
            out = cls._new(as_size(size, shape), dtype, device, filename, existsok, False)
        out.fill_(fill_value)
        return out

    @classmethod
    def empty_like(
        cls, input: torch.Tensor, *, filename: PathLike | None = None, existsok: bool = False
    ) -> Self:
        """:meth:`empty` with the shape and dtype of ``input`` (its data is not read).

        Raises EntryTypeError (a TypeError) if ``input`` is not a tensor, else as
        :meth:`empty` does.
        """
        check_tensor(input, "empty_like")
        return cls._new(input.shape, input.dtype, None, filename, existsok, True)

    @classmethod
    def zeros_like(
        cls, input: torch.Tensor, *, filename: PathLike | None = None, existsok: bool = False
    ) -> Self:
        """:meth:`zeros` with the shape and dtype of ``input``; see :meth:`empty_like`."""
        check_tensor(input, "zeros_like")
        return cls._new(input.shape, input.dtype, None, filename, existsok, True)

    @classmethod
    def ones_like(
        cls, input: torch.Tensor, *, filename: PathLike | None = None, existsok: bool = False
    ) -> Self:
        """:meth:`ones` with the shape and dtype of ``input``; see :meth:`empty_like`."""
        return cls.full_like(input, 1, filename=filename, existsok=existsok)

    @classmethod
    def full_like(
        cls, input: torch.Tensor, fill_value: Scalar, *,
        filename: PathLike | None = None, existsok: bool = False,
    ) -> Self:  # fmt: skip
        """:meth:`full` with the shape and dtype of ``input``; see :meth:`empty_like`."""
        check_tensor(input, "full_like")
        out = cls._new(input.shape, input.dtype, None, filename, existsok, False)
        out.fill_(fill_value)
        return out

    @classmethod
    def from_filename(
        cls, filename: PathLike, dtype: torch.dtype, shape: SizeLike,
        index: _Index | tuple[_Index, ...] | None = None, mode: Mode | None = None,
    ) -> Self:  # fmt: skip
        """Map an existing raw file (C order, native byte order, no header).

        Opening never modifies the file: its size must be ``dtype.itemsize * prod(shape)``.

        Args:
            filename: path of the file.
            dtype: element type the file was written with.
            shape: shape the file was written with.
            index: a basic index (ints, slices, None, Ellipsis) applied to the result.
            mode: ``"r+"`` shares writes with the file (it must be writable); ``"r"``
                is a private copy-on-write mapping whose writes never reach the file.
                None picks ``"r+"`` when the file is writable, else ``"r"``.

        Returns:
            A MemoryMappedTensor view of the file.

        Raises:
            MissingFileError: the file does not exist.
            NotAFileError: the path is a directory or another non-regular file.
            FileFormatError: the file size disagrees with dtype and shape.
            PermissionError: ``mode="r+"`` on a file this process cannot write.
            ArgumentValueError: (a ValueError) an unknown mode.
            IndexTypeError: (a TypeError) ``index`` is not a basic index.
        """
        if mode not in (None, "r", "r+"):
            msg = (
                f"mode must be None, 'r' or 'r+', got {mode!r}: 'r' reads only, 'r+' writes through"
            )
            raise ArgumentValueError(msg)
        nested = nested_shape((), shape)
        if nested is not None:
            if index is not None:
                msg = "from_filename: index a nested tensor after mapping it"
                raise ArgumentError(msg)
            whole = cls.from_filename(filename, dtype, (nested_numel(nested),), mode=mode)
            return whole._nested_view(nested)
        size = as_size((), shape)
        path = abspath(filename)
        flat, mode = map_existing(path, check_dtype(dtype), size, mode)
        out = cls._wrap_file(flat.view(size), path, mode)
        if index is None:
            return out
        view = out[index]
        if not isinstance(view, cls):
            msg = (
                f"index must be a basic index (ints, slices, None, ...), got {index!r}; "
                "index the returned tensor instead for a copy"
            )
            raise IndexTypeError(msg)
        return view

    @classmethod
    def from_storage(
        cls,
        storage: torch.UntypedStorage | torch.TypedStorage,
        *,
        shape: SizeLike | None = None,
        dtype: torch.dtype | None = None,
        device: DeviceLike | None = None,
        index: _Index | tuple[_Index, ...] | None = None,
        filename: PathLike | None = None,
    ) -> Self:
        """A MemoryMappedTensor viewing ``storage``; nothing is copied.

        A storage mapped from a file (``UntypedStorage.from_file``, ``torch.from_file``)
        gives a file-backed tensor, which pickles as a reference to that file;
        ``filename`` names the file of a storage that does not record it. Any other
        storage gives an anonymous one (shared through multiprocessing, not pickled).

        Args:
            storage: the storage to view.
            shape: the shape of the result (1-d over the whole storage when None); a 2-d
                integer tensor (one row per element, as ``_nested_tensor_size()`` gives)
                gives a nested tensor over the storage's first elements.
            dtype: how to read the bytes; a typed storage's own dtype when None, else
                ``torch.int64`` (as the peer reads an untyped storage).
            device: None or a CPU device.
            index: a basic index applied to the result.
            filename: the file the storage maps, if it does not record it.

        Raises:
            RuntimeError: (a FileConflictError) if ``filename`` is not the storage's file.
            ShapeError: if ``shape`` does not fit the storage.
            DeviceError: for a device other than the CPU.
        """
        if device is not None and device != "cpu":
            check_cpu(device)
        if isinstance(storage, torch.TypedStorage):
            dtype = storage.dtype if dtype is None else dtype
            storage = storage.untyped()  # type: ignore[no-untyped-call]
        dtype = torch.int64 if dtype is None else check_dtype(dtype)
        own = storage_file(storage)
        path = None if filename is None else abspath(filename)
        if own is not None:
            own = abspath(own)
            if path is None:
                path = own
            elif path != own and os.path.realpath(path) != os.path.realpath(own):
                msg = (
                    f"from_storage: the storage maps {own!r}, not {path!r}; pass "
                    "filename=None (the storage names its file)"
                )
                raise FileConflictError(msg)
        numel = storage.nbytes() // dtype.itemsize
        flat: torch.Tensor = torch.empty(0, dtype=dtype)
        flat = flat.set_(storage, 0, (numel,))  # type: ignore[call-overload]
        nested = nested_shape((), shape)
        if nested is not None:  # one element shape per row: its first elements, nested
            needed = nested_numel(nested)
            if needed > numel:
                msg = (
                    f"from_storage: the element shapes {nested.tolist()} hold {needed} "
                    f"elements but the storage holds {numel} of {dtype}"
                )
                raise ShapeError(msg)
            flat = flat[:needed]
        elif shape is not None:
            size = as_size((), shape)
            if math.prod(size) != numel:
                msg = (
                    f"from_storage: shape {list(size)} holds {math.prod(size)} elements but "
                    f"the storage holds {numel} of {dtype}"
                )
                raise ShapeError(msg)
            flat = flat.view(size)
        out = flat.as_subclass(cls) if path is None else cls._wrap_file(flat, path, "r+")
        if nested is not None:
            out = out._nested_view(nested)
        return out if index is None else out[index]  # type: ignore[return-value]

    @classmethod
    def from_handler(
        cls, handler: object, dtype: torch.dtype, shape: SizeLike,
        index: _Index | tuple[_Index, ...] | None = None,
    ) -> Self:  # fmt: skip
        """Deprecated, as in the peer (which removes it in TensorDict 0.17; it rebuilds
        pickles of its 0.14 and earlier): a MemoryMappedTensor over the memory of a
        shared-memory handler, an object whose ``buffer`` (or itself) is a writable
        buffer, read as ``dtype`` and ``shape``, then ``index``. Emits a
        ``DeprecationWarning``; use :meth:`from_storage` or :meth:`from_tensor`."""
        msg = (
            "MemoryMappedTensor.from_handler() is deprecated (the peer removes it in "
            "TensorDict 0.17); use MemoryMappedTensor.from_storage() or from_tensor()"
        )
        warnings.warn(msg, DeprecationWarning, stacklevel=2)
        return cls._from_handler(handler, dtype, shape, index)

    @classmethod
    def _from_handler(
        cls, handler: object, dtype: torch.dtype | None, shape: SizeLike | None,
        index: _Index | tuple[_Index, ...] | None,
    ) -> Self:  # fmt: skip
        try:
            memory = memoryview(getattr(handler, "buffer", handler)).cast("B")  # type: ignore[arg-type]
        except TypeError as err:
            msg = f"a handler must expose a buffer (its .buffer), got {type(handler).__name__}"
            raise ArgumentError(msg) from err
        dtype = torch.get_default_dtype() if dtype is None else check_dtype(dtype)
        size = as_size((), tensor_shape(shape)) if shape is not None else None
        numel = len(memory) // dtype.itemsize if size is None else math.prod(size)
        if numel * dtype.itemsize > len(memory):
            msg = (
                f"from_handler: shape {list(size or ())} of {dtype} needs "
                f"{numel * dtype.itemsize} bytes, the handler holds {len(memory)}"
            )
            raise ShapeError(msg)
        flat = (
            torch.frombuffer(memory, dtype=dtype, count=numel)
            if numel
            else torch.empty(0, dtype=dtype)
        )
        out = flat.view(size if size is not None else (numel,)).as_subclass(cls)
        return out if index is None else out[index]  # type: ignore[return-value]

    # --- internals ---------------------------------------------------------------------

    @classmethod
    def _new(
        cls, size: Sequence[int], dtype: torch.dtype | None, device: DeviceLike | None,
        filename: PathLike | None, existsok: bool, zero: bool, data: memoryview | None = None,
    ) -> Self:  # fmt: skip
        """Allocate a tensor holding ``data`` (raw bytes) or zeros.

        Fresh memory and fresh files read as zeros; ``zero`` also clears an existing
        file that ``existsok`` lets us replace (callers that overwrite it all skip that).
        """
        if device is not None and device != "cpu":
            check_cpu(device)
        dtype = torch.get_default_dtype() if dtype is None else check_dtype(dtype)
        numel = math.prod(size)
        if filename is None:
            storage = _shared_storage(numel * dtype.itemsize, data)
            _ANONYMOUS_MAPS.add(storage)
            # The stub misses set_'s default (contiguous) stride; passing it costs 0.4 us.
            flat: torch.Tensor = torch.empty(0, dtype=dtype)
            flat = flat.set_(storage, 0, size)  # type: ignore[call-overload]
            return flat.as_subclass(cls)
        return create_file(cls, abspath(filename), size, dtype, existsok, zero, data)

    @classmethod
    def _nested(
        cls, nested: torch.Tensor, dtype: torch.dtype | None, device: DeviceLike | None,
        filename: PathLike | None, existsok: bool, zero: bool, data: memoryview | None = None,
    ) -> Self:  # fmt: skip
        """A nested tensor of element shapes ``nested`` over one new buffer."""
        flat = cls._new((nested_numel(nested),), dtype, device, filename, existsok, zero, data)
        return flat._nested_view(nested)

    def _nested_view(self, nested: torch.Tensor) -> Self:
        """This 1-d tensor's buffer as a nested tensor of element shapes ``nested``."""
        strides, offsets = torch._nested_compute_contiguous_strides_offsets(nested)
        plain = self.as_subclass(torch.Tensor)
        # The offsets count from the storage's start, not from the buffer's first element.
        offsets = offsets.add(plain.storage_offset())
        view = torch._nested_view_from_buffer(plain, nested, strides, offsets)
        return self._wrap(view)

    @classmethod
    def _wrap_file(cls, tensor: torch.Tensor, path: str, mode: Mode) -> Self:
        out = tensor.as_subclass(cls)
        out._filename = path
        out._mode = mode
        return out

    def _wrap(self, view: torch.Tensor, index: object = None) -> Self:
        """Wrap a view of this tensor's storage (taken with ``index``), carrying the file
        attributes over."""
        out = view.as_subclass(type(self))
        out._index = index
        out._parent_shape = self.shape if self._parent_shape is None else self._parent_shape
        if self._filename is not None:
            out._filename = self._filename
            out._mode = self._mode
            if self._prefix:
                out._prefix = True
        return out


# --- memory and files ------------------------------------------------------------------


def _raw_bytes(tensor: torch.Tensor) -> memoryview | None:
    """The bytes of a CPU tensor in C order, if readable without a copy (else None)."""
    if not (tensor.is_cpu and tensor.is_contiguous()) or not tensor.numel():
        return None
    if tensor.is_conj() or tensor.is_neg():  # lazy bits: the memory is not the values
        return None
    if tensor.dtype not in _NUMPY_DTYPES:
        as_int = _INT_BY_SIZE.get(tensor.dtype.itemsize)
        if as_int is None:
            return None
        tensor = tensor.view(as_int)
    return tensor.numpy().data.cast("B")


def _shared_storage(nbytes: int, data: memoryview | None) -> torch.UntypedStorage:
    """Zero-filled anonymous shared memory of ``nbytes``, holding ``data`` if given."""
    if _memfd_create is None or nbytes == 0 or _sharing_strategy() != "file_descriptor":
        storage = _new_shared(nbytes)
        if data is not None:
            target = torch.empty(0, dtype=torch.uint8).set_(storage)
            target.copy_(torch.frombuffer(data, dtype=torch.uint8))
        return storage
    # Same kind of storage as _new_shared makes (an fd torch.multiprocessing can pass),
    # but twice as fast: no shm name to create and unlink, and pwrite fills the pages
    # without taking one page fault per page.
    fd = _memfd_create("tclass", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, nbytes)
        if data is not None:
            write_all(fd, data)
        return _new_shared_fd(fd, nbytes)  # keeps its own duplicate of fd
    finally:
        os.close(fd)
