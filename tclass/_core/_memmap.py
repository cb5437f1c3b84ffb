"""MemoryMappedTensor: a CPU tensor whose storage is a raw file or anonymous shared memory.

The storage layer of tclass (imports only torch, the stdlib and ``tclass.errors``). A file holds
the elements in C order and native byte order, exactly ``numel * itemsize`` bytes, no
header (the peer's ``*.memmap`` layout). Without a file, the tensor lives in anonymous
shared memory and crosses ``torch.multiprocessing`` without a copy. Unlike the peer:

* Opening a file (``from_filename``, unpickling) never changes it: a missing file, a
  directory or a size that disagrees with dtype and shape is an error. (A saved folder's
  loader also maps the needed prefix of a longer file, as older writers padded them; a
  pickle of such a tensor maps the same prefix again.)
* Writing creates the file with ``O_EXCL`` and sizes it with ``ftruncate`` (sparse). An
  existing file needs ``existsok=True`` and is resized exactly; symlinks are refused.
* A pickle of a file-backed tensor is a reference (path, dtype, file length, offset, size,
  stride, mode): any view round-trips and the payload does not grow with the data.
  Anonymous tensors refuse ``pickle`` but share their memory through multiprocessing.
* ``copy.deepcopy`` gives a plain tensor copy; ``copy.copy`` an alias on the same memory.
"""

from __future__ import annotations

import math
import os
import stat
import warnings
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.reduction import ForkingPickler
from typing import TYPE_CHECKING, Any, Literal, SupportsIndex, TypeAlias

import torch
import torch.multiprocessing
from typing_extensions import Self

from tclass._core import _memmap_files as _files
from tclass._core._memmap_args import (
    DeviceLike,
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
    warn_pickling_internal,
)
from tclass._core._memmap_files import (
    PROTOS,
    blank,
    check_file_size,
    create_file,
    file_tensor,
    fit,
    map_existing,
    write_all,
)
from tclass.errors import (
    ArgumentError,
    ArgumentValueError,
    DeviceError,
    DimError,
    EntryTypeError,
    FileConflictError,
    FileFormatError,
    GradError,
    IndexTypeError,
    MissingFileError,
    PickledFileMissingError,
    ShapeError,
    UnpicklableError,
    UnsupportedError,
)

if TYPE_CHECKING:
    from torch._C import _Index

__all__ = [
    "MemoryMappedTensor",
    "check_file_size",
    "in_memory_map",
    "map_opened_file",
    "save_new_file",
    "without_grad",
]

Mode = Literal["r", "r+"]
Scalar: TypeAlias = bool | int | float | complex
_Reduced = tuple[Callable[..., "MemoryMappedTensor"], tuple[object, ...]]

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


class MemoryMappedTensor(torch.Tensor):
    """A CPU tensor stored in a memory-mapped file or in anonymous shared memory.

    Build one with :meth:`empty`, :meth:`zeros`, :meth:`ones`, :meth:`full`, the
    ``*_like`` variants, :meth:`from_tensor` or :meth:`from_filename`. Torch operations
    return plain tensors; in-place ones (``x[i] = v``, ``copy_``, ``fill_``) write
    through to the storage and return the MemoryMappedTensor. Basic indexing,
    ``unbind``, ``split``, ``chunk`` and iteration return MemoryMappedTensor views.
    """

    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    # Set on file-backed instances only; anonymous ones read these class defaults.
    _filename: str | None = None
    _mode: Mode | None = None
    _prefix: bool = False  # maps the start of a longer file (a legacy padded leaf)
    # The peer's deprecated ``index`` / ``parent_shape``: the last index that made a view,
    # and the shape of the tensor it was taken from (None: this tensor's own).
    _index: object = None
    _parent_shape: torch.Size | None = None

    def __new__(
        cls, source: object, *, dtype: torch.dtype | None = None,
        shape: SizeLike | None = None, index: _Index | tuple[_Index, ...] | None = None,
        device: DeviceLike | None = None, handler: object = None,
        filename: PathLike | None = None,
    ) -> Self:  # fmt: skip
        """The peer's constructor, which dispatches on its arguments.

        * ``MemoryMappedTensor(path, dtype=, shape=)``: :meth:`from_filename`.
        * ``MemoryMappedTensor(data, filename=path)``: :meth:`from_tensor` (``data`` a
          tensor or anything ``torch.as_tensor`` takes; ``shape`` broadcasts it).
        * ``MemoryMappedTensor(storage, dtype=, shape=)``: :meth:`from_storage`.
        * ``MemoryMappedTensor(tensor)``: a view of the tensor's own memory, nothing
          copied (as the peer): memory-mapped only where that memory is (a shared or
          file-backed tensor; a MemoryMappedTensor keeps its file). Use
          :meth:`from_tensor` to copy into shared memory or a file.

        ``index`` is applied to the result; ``device`` may only be the CPU.

        Raises:
            TypeError: a path without ``dtype`` and ``shape``, or with ``filename``;
                ``dtype`` with ``filename`` (convert the data first); a ``dtype`` or
                ``shape`` that is not the viewed tensor's; a bare int (a size: use
                :meth:`empty`).
            DeviceError: a device other than the CPU, or a tensor on another device.
        """
        if device is not None and device != "cpu":
            check_cpu(device)
        if isinstance(source, (str, os.PathLike)):
            if filename is not None:
                msg = "MemoryMappedTensor(path, filename=...): give the file to map once"
                raise ArgumentError(msg)
            if dtype is None or shape is None:
                msg = "MemoryMappedTensor(path) maps an existing file: pass dtype= and shape="
                raise ArgumentError(msg)
            return cls.from_filename(source, dtype, shape, index)
        if filename is not None:
            if dtype is not None:
                msg = (
                    "MemoryMappedTensor(data, filename=..., dtype=...): the file takes the "
                    "data's dtype; convert the data first (data.to(dtype))"
                )
                raise ArgumentError(msg)
            data = source if isinstance(source, torch.Tensor) else torch.as_tensor(source)
            out = cls.from_tensor(without_grad(data), filename=filename, shape=shape)
            return out if index is None else out[index]  # type: ignore[return-value]
        if isinstance(source, (torch.UntypedStorage, torch.TypedStorage)):
            return cls.from_storage(source, shape=shape, dtype=dtype, index=index)
        if handler is not None:
            return cls._from_handler(handler, dtype, shape, index)
        out = cls._alias(source, dtype, shape)
        return out if index is None else out[index]  # type: ignore[return-value]

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
    def from_tensor(
        cls, input: torch.Tensor, *, filename: PathLike | None = None,
        existsok: bool = False, copy_existing: bool = False, copy_data: bool = True,
        shape: SizeLike | torch.Tensor | None = None,
    ) -> Self:  # fmt: skip
        """Copy a tensor into a new file, or into shared memory when ``filename`` is None.

        Any dtype works. Non-contiguous and expanded tensors are written in logical C
        order; tensors on other devices are copied to CPU. A tensor that requires grad is
        refused, as the peer refuses it (the copy could not keep its autograd graph):
        pass ``t.detach()``.

        Args:
            input: the tensor to copy.
            filename: the file to create; None for anonymous shared memory.
            existsok: allow replacing an existing regular file.
            copy_existing: allow copying a file-backed MemoryMappedTensor to another file.
            copy_data: ``False`` gives a tensor of ``input``'s shape and dtype whose
                content is not written (zeros in a fresh file or fresh shared memory).
            shape: the result's shape when it differs from ``input``'s, which is
                broadcast to it. A nested ``input`` (strided layout) gives a nested
                tensor over one buffer, of ``input``'s element shapes (``shape``, a
                tensor of them, must be those).

        Returns:
            ``input`` itself when it is already a MemoryMappedTensor on that file (or an
            anonymous one and ``filename`` is None); otherwise a new copy.

        Raises:
            EntryTypeError: (a TypeError) ``input`` is not a dense tensor (convert with
                ``torch.as_tensor``).
            DeviceError: ``input`` is on the meta device (it has no data).
            UnsupportedError: ``input`` is a nested tensor of the jagged layout (a
                ``NotImplementedError``, as the peer's).
            GradError: ``input`` requires grad (a ``RuntimeError``, as the peer's).
            FileConflictError: ``input`` is file-backed elsewhere and ``copy_existing`` is
                False, or ``filename`` exists (without ``existsok``) or is a symlink.
            NotAFileError, MissingFileError: as in :meth:`empty`.
        """
        if isinstance(input, MemoryMappedTensor):
            source = input._filename
            target = None if filename is None else abspath(filename)
            if source == target and isinstance(input, cls):
                return input
            if source is not None and target not in (None, source) and not copy_existing:
                msg = (
                    f"the tensor is already backed by {source!r}; pass "
                    f"copy_existing=True to copy it to {target!r}"
                )
                raise FileConflictError(msg)
        check_tensor(input, "from_tensor")
        if input.requires_grad:
            msg = (
                f"MemoryMappedTensor.from_tensor: the tensor (shape {list(input.shape)}, "
                f"{input.dtype}) requires grad, and a memory-mapped copy cannot keep its "
                "autograd graph; copy t.detach() (memmap() of a collection detaches its "
                "tensors itself)"
            )
            raise GradError(msg)
        if input.is_meta:
            msg = "a meta tensor has no data to copy; use empty_like(t) instead"
            raise DeviceError(msg)
        if input.is_nested and input.layout is torch.strided:
            return cls._nested_copy(input, filename, existsok, copy_data, shape)
        if input.layout is torch.jagged:  # one buffer holds the strided layout only
            msg = (
                "from_tensor: a nested tensor of the jagged layout is not memory-mapped (its "
                "values and offsets are two tensors); map its values (t.values()), convert "
                "it (torch.nested.nested_tensor(list(t.unbind()), layout=torch.strided)), or "
                "save the collection holding it (memmap), which keeps its layout"
            )
            raise UnsupportedError(msg)
        if input.layout is not torch.strided:
            msg = f"only dense tensors can be memory-mapped, got layout {input.layout}"
            raise EntryTypeError(msg + "; convert it with .to_dense() first")
        size = tensor_shape(shape)
        if size is not None:
            input = input.broadcast_to(as_size((), size))
        if not copy_data:
            return cls._new(input.shape, input.dtype, None, filename, existsok, True)
        data = _raw_bytes(input)
        out = cls._new(input.shape, input.dtype, None, filename, existsok, False, data)
        if data is None:  # not plain CPU memory: let torch copy (and convert) it
            out.copy_(input)
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
            shape: the shape of the result (1-d over the whole storage when None).
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
        own = getattr(storage, "filename", None)
        path = None if filename is None else abspath(filename)
        if own is not None:
            if path is not None and path != abspath(own):
                msg = (
                    f"from_storage: the storage maps {own!r}, not {path!r}; pass "
                    "filename=None (the storage names its file)"
                )
                raise FileConflictError(msg)
            path = abspath(own)
        numel = storage.nbytes() // dtype.itemsize
        flat: torch.Tensor = torch.empty(0, dtype=dtype)
        flat = flat.set_(storage, 0, (numel,))  # type: ignore[call-overload]
        if shape is not None:
            size = as_size((), shape)
            if math.prod(size) != numel:
                msg = (
                    f"from_storage: shape {list(size)} holds {math.prod(size)} elements but "
                    f"the storage holds {numel} of {dtype}"
                )
                raise ShapeError(msg)
            flat = flat.view(size)
        out = flat.as_subclass(cls) if path is None else cls._wrap_file(flat, path, "r+")
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

    @classmethod
    def _nested_copy(
        cls, input: torch.Tensor, filename: PathLike | None, existsok: bool, copy_data: bool,
        shape: object,
    ) -> Self:  # fmt: skip
        """``from_tensor`` of a nested tensor (strided layout): its elements, in order."""
        nested = input._nested_tensor_size()
        if shape is not None and not (
            isinstance(shape, torch.Tensor) and torch.equal(shape.to(nested.dtype), nested)
        ):
            msg = (
                f"from_tensor: shape={shape!r} is not the element shapes of the nested "
                f"input ({nested.tolist()}); leave shape out"
            )
            raise ShapeError(msg)
        if not copy_data:
            return cls._nested(nested, input.dtype, None, filename, existsok, True)
        parts = [part.detach().reshape(-1) for part in input.unbind()]
        values = torch.cat(parts) if parts else torch.empty(0, dtype=input.dtype)
        flat = cls.from_tensor(values.cpu(), filename=filename, existsok=existsok)
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

    def _file_reference(self) -> tuple[object, ...]:
        """Arguments of :func:`_rebuild_from_file`: the whole file (or the mapped prefix
        of a longer one) and this view of it."""
        reference: tuple[object, ...] = (
            type(self), self._filename, self.dtype,
            self.untyped_storage().nbytes() // self.dtype.itemsize,
            self.storage_offset(), tuple(self.shape), self.stride(), self._mode,
        )  # fmt: skip
        return (*reference, True) if self._prefix else reference

    # --- views -------------------------------------------------------------------------

    @property
    def filename(self) -> str | None:
        """Absolute path of the backing file, or None for anonymous shared memory."""
        return self._filename

    def __getitem__(self, indices: _Index | tuple[_Index, ...], /) -> torch.Tensor:
        if indices.__class__ is torch.Tensor and self.dim():
            rows = _gather_rows(self, indices)
            if rows is not None:
                return rows
        out = torch.Tensor.__getitem__(self, indices)
        # Basic indexes give views (wrapped); advanced ones give copies (left plain).
        return self._wrap(out, indices) if out._is_view() else out

    def unbind(self, dim: int = 0) -> tuple[Self, ...]:
        """Views along ``dim``, each a MemoryMappedTensor (iteration uses this)."""
        parts = torch._C.TensorBase.unbind(self, dim)
        before = (slice(None),) * (dim % self.dim())
        return tuple(self._wrap(t, (*before, i)) for i, t in enumerate(parts))

    def split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple[Self, ...]:
        """Like :meth:`torch.Tensor.split`, returning MemoryMappedTensor views."""
        if isinstance(split_size, int):
            parts = torch._C.TensorBase.split(self, split_size, dim)
        else:
            parts = torch._C.TensorBase.split_with_sizes(self, list(split_size), dim)
        return self._wrap_parts(parts, dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Self, ...]:
        """Like :meth:`torch.Tensor.chunk`, returning MemoryMappedTensor views."""
        return self._wrap_parts(torch._C.TensorBase.chunk(self, chunks, dim), dim)

    def _wrap_parts(self, parts: Sequence[torch.Tensor], dim: int) -> tuple[Self, ...]:
        """Consecutive views along ``dim``, each wrapped with the slice that takes it."""
        before = (slice(None),) * (dim % max(self.dim(), 1))
        out, start = [], 0
        for part in parts:
            stop = start + part.shape[dim]
            out.append(self._wrap(part, (*before, slice(start, stop))))
            start = stop
        return tuple(out)

    @property
    def index(self) -> object:  # type: ignore[override]
        """Deprecated, as in the peer: the index that took this view from the tensor it
        was built from (None for that tensor). Emits a ``DeprecationWarning``."""
        warn_pickling_internal("index")
        return self._index

    @property
    def parent_shape(self) -> torch.Size:
        """Deprecated, as in the peer: the shape of the tensor this view was taken from
        (its own shape for that tensor). Emits a ``DeprecationWarning``."""
        warn_pickling_internal("parent_shape")
        return self.shape if self._parent_shape is None else self._parent_shape

    def __format__(self, format_spec: str) -> str:
        # torch formats 0-d values (f"{t:.2f}") only for exact torch.Tensor instances.
        if self.dim() == 0:
            return format(self.item(), format_spec)
        return object.__format__(self, format_spec)  # what torch does for other tensors

    # --- copying and pickling ----------------------------------------------------------

    def __copy__(self) -> Self:
        if self.is_nested:  # a nested tensor has no view_as: its buffer, viewed again
            flat = torch.empty(0, dtype=self.dtype).set_(self.untyped_storage())
            return self._wrap(flat)._nested_view(self._nested_tensor_size())
        return self._wrap(torch._C.TensorBase.view_as(self, self))

    def __deepcopy__(self, memo: dict[int, object]) -> torch.Tensor:
        # A deep copy cannot share the file, so it is a plain tensor holding the data.
        out = torch._C.TensorBase.clone(self)
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol: SupportsIndex) -> _Reduced:
        if self._filename is None:
            msg = (
                "an anonymous MemoryMappedTensor cannot be pickled: create it with "
                "filename=... to pickle a file reference, send it through "
                "torch.multiprocessing to share its memory, or pickle a copy (t.clone())"
            )
            raise UnpicklableError(msg)
        if self.is_nested:  # the whole file, viewed with these element shapes
            sizes = self._nested_tensor_size().tolist()
            return (_rebuild_nested, (type(self), self._filename, self.dtype, sizes, self._mode))
        return (_rebuild_from_file, self._file_reference())


def in_memory_map(tensor: torch.Tensor) -> bool:
    """Whether ``tensor``'s data lives in a memory-mapped file: a ``MemoryMappedTensor``,
    or a view of one that torch's own ops returned as a plain tensor (``td.view(-1)``,
    ``td.unsqueeze(0)``, ``td.permute(...)``, ``td.detach()`` of a memory-mapped
    collection), whose writes reach the file all the same; the anonymous map of one made
    without a file (``memmap_()`` without a folder) and a copy-on-write map of a file (the
    leaves of a loaded archive, ``load_memmap(mode="r")``) too, so that ``is_memmap()`` and
    ``is_shared()`` do not change with a view of the same data."""
    if isinstance(tensor, MemoryMappedTensor):
        return True
    if tensor.layout is torch.jagged:  # a saved one: its values view the file
        jagged: Any = tensor  # torch's NestedTensor subclass: values()
        return in_memory_map(jagged.values())
    if tensor.device.type != "cpu" or tensor.is_sparse or tensor.layout is not torch.strided:
        return False
    storage = tensor.untyped_storage()
    return (
        storage.filename is not None or storage in _ANONYMOUS_MAPS or storage in _files.PRIVATE_MAPS
    )


def _gather_rows(tensor: MemoryMappedTensor, index: torch.Tensor) -> torch.Tensor | None:
    """``tensor[index]`` for a 1-d integer index, through ``index_select``, which copies
    whole rows (memcpy) where general advanced indexing copies element by element: about
    8x faster for a random gather of image rows. None for any other index."""
    if index.dim() != 1 or index.dtype not in (torch.int64, torch.int32) or not index.numel():
        return None
    size = tensor.shape[0]
    low, high = torch.aminmax(index)
    low_value, high_value = int(low), int(high)
    if low_value < -size or high_value >= size:
        bad = low_value if low_value < -size else high_value
        msg = f"index {bad} is out of bounds for dimension 0 with size {size}"
        raise DimError(msg)
    if low_value < 0:
        index = torch.where(index < 0, index + size, index)
    plain = torch._C.TensorBase.view_as(tensor, tensor)  # a plain alias: no subclass dispatch
    return torch.index_select(plain, 0, index)


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


def without_grad(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor``, detached if it requires grad: what a collection's memmap writes (it
    drops gradients, as the peer's), where ``from_tensor`` itself refuses them."""
    return tensor.detach() if tensor.requires_grad else tensor


def save_new_file(tensor: torch.Tensor, path: str, name: str, blank: bool) -> MemoryMappedTensor:
    """``from_tensor(tensor, filename=path)`` (``blank``: ``empty_like``, a sparse file) for
    a writer that owns the folder of ``path`` (a new, absolute, normalised path) and has
    checked ``tensor`` (dense, of a dtype with a file form, not empty), and that will
    move the file to ``name``, which the result reports: the file is created with one
    open, written with ``pwrite`` (or only sized), and mapped by torch by its path."""
    shape, dtype = tensor.shape, tensor.dtype
    if blank:
        return create_file(MemoryMappedTensor, path, shape, dtype, False, True, None, name)
    data = None if tensor.requires_grad else _raw_bytes(tensor)
    if data is None:  # not plain CPU memory: from_tensor copies (and converts) it
        out = MemoryMappedTensor.from_tensor(
            without_grad(tensor), filename=path, copy_existing=True
        )
        out._filename = name
        return out
    return create_file(MemoryMappedTensor, path, shape, dtype, False, False, data, name)


def map_opened_file(
    fd: int, path: str, dtype: torch.dtype, shape: Sequence[int], mode: Mode, hint: str = ""
) -> MemoryMappedTensor:
    """A MemoryMappedTensor over the file opened as ``fd`` (checked, never modified),
    reporting ``path`` as its file name. The caller keeps and closes ``fd``.

    A file longer than ``dtype`` and ``shape`` need (older writers padded them to a page)
    is mapped over its first bytes, the rest left alone; a shorter one is an error.
    """
    # Inline, as this runs once per leaf of every load: the checks of check_file_size in
    # their passing case (any other case goes through fit, for its verdict and message),
    # then file_tensor's mapping.
    status = os.fstat(fd)
    nbytes = math.prod(shape) * dtype.itemsize
    if status.st_size != nbytes or not stat.S_ISREG(status.st_mode) or not nbytes:
        longer = fit(fd, path, dtype, shape, hint, True)[1]
        checked = file_tensor(MemoryMappedTensor, fd, path, shape, nbytes, dtype, mode)
        if longer:
            checked._prefix = True
        return checked
    proto = PROTOS.get(dtype)
    mapped = proto.new() if proto is not None else blank(dtype)
    proc_fd = _files.PROC_FD
    shared = mode == "r+"
    # map_file's two steps, inline (a call less per leaf)
    storage = _files.storage_from_file(
        f"{proc_fd}/{fd}" if proc_fd is not None else path, shared, nbytes
    )
    if not shared:
        _files.PRIVATE_MAPS.add(storage)
    mapped.set_(storage, 0, shape)  # type: ignore[call-overload]
    mapped.__class__ = MemoryMappedTensor
    out: MemoryMappedTensor = mapped  # type: ignore[assignment]  # now of its class
    out._filename = path
    out._mode = mode
    return out


# --- pickling and multiprocessing ------------------------------------------------------


def _rebuild_from_file(
    cls: type[MemoryMappedTensor], path: str, dtype: torch.dtype, file_numel: int,
    offset: int, size: tuple[int, ...], stride: tuple[int, ...], mode: Mode,
    prefix: bool = False,
) -> MemoryMappedTensor:  # fmt: skip
    """Unpickle a file reference: map the file (checked, unchanged) and take the view.
    ``prefix``: the tensor mapped the first ``file_numel`` elements of a longer file."""
    try:
        flat, mode = map_existing(path, dtype, (file_numel,), mode, longer_ok=prefix)
    except MissingFileError as err:
        msg = (
            f"{err}: the pickled MemoryMappedTensor refers to that file (a pickle of a saved "
            "collection holds references to its files, not their data); keep the folder "
            "until it is loaded, or pickle a clone() to carry the data"
        )
        raise PickledFileMissingError(msg) from err
    try:
        view = flat.as_strided(size, stride, offset)
    except RuntimeError as err:
        msg = f"the pickled view (size {size}, stride {stride}) does not fit {path!r}"
        raise FileFormatError(msg) from err
    out = cls._wrap_file(view, path, mode)
    if prefix:
        out._prefix = True
    return out


def _rebuild_nested(
    cls: type[MemoryMappedTensor], path: str, dtype: torch.dtype, sizes: list[list[int]],
    mode: Mode | None,
) -> MemoryMappedTensor:  # fmt: skip
    return cls.from_filename(path, dtype, torch.tensor(sizes, dtype=torch.int64), mode=mode)


def _rebuild_shared(cls: type[MemoryMappedTensor], tensor: torch.Tensor) -> MemoryMappedTensor:
    return tensor.as_subclass(cls)


def _reduce_for_ipc(tensor: MemoryMappedTensor) -> _Reduced:
    """multiprocessing reducer: a file reference, or the shared memory itself."""
    if tensor._filename is not None:
        return (_rebuild_from_file, tensor._file_reference())
    # A plain alias goes through torch's own reducer, which passes the shm fd.
    plain = torch._C.TensorBase.view_as(tensor, tensor)
    return (_rebuild_shared, (type(tensor), plain))


ForkingPickler.register(MemoryMappedTensor, _reduce_for_ipc)
