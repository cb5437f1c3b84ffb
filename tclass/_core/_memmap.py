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

import errno
import math
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from multiprocessing.reduction import ForkingPickler
from typing import TYPE_CHECKING, Any, SupportsIndex

import numpy as np
import torch
import torch.multiprocessing
from torch._C._functorch import get_unwrapped, is_functorch_wrapped_tensor
from typing_extensions import Buffer, Self

from tclass._core import _memmap_files as _files
from tclass._core._memmap_args import (
    DeviceLike,
    Mode,
    PathLike,
    SizeLike,
    abspath,
    as_size,
    check_cpu,
    check_tensor,
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
    raise_open_error,
)
from tclass._core._memmap_new import _ANONYMOUS_MAPS, MemmapConstructors, _raw_bytes
from tclass._core._method_names import name_methods_after
from tclass.errors import (
    ArgumentError,
    DeviceError,
    DimError,
    EntryTypeError,
    FileConflictError,
    FileFormatError,
    GradError,
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
    "first_class_data",
    "functorch_base",
    "in_memory_map",
    "maps_file",
    "map_opened_file",
    "open_mapped",
    "rewrite_file",
    "save_new_file",
    "tensor_bytes",
    "without_grad",
]

_Reduced = tuple[Callable[..., "MemoryMappedTensor"], tuple[object, ...]]


@name_methods_after
class MemoryMappedTensor(MemmapConstructors):
    """A CPU tensor stored in a memory-mapped file or in anonymous shared memory.

    Build one with :meth:`empty`, :meth:`zeros`, :meth:`ones`, :meth:`full`, the
    ``*_like`` variants, :meth:`from_tensor` or :meth:`from_filename`. Torch operations
    return plain tensors; in-place ones (``x[i] = v``, ``copy_``, ``fill_``) write
    through to the storage and return the MemoryMappedTensor. Basic indexing,
    ``unbind``, ``split``, ``chunk`` and iteration return MemoryMappedTensor views.
    """

    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

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


def first_class_data(value: object) -> torch.Tensor | None:
    """The tensor a first-class dim tensor (``functorch.dim``: ``td[i]["a"]`` for
    ``i = dims()``) reads, its dims back in place (a view of the same memory); None for
    anything else. A collection indexed with first-class dims holds those, which are not
    ``torch.Tensor`` instances."""
    if isinstance(value, torch.Tensor):
        return None
    dims, order = getattr(value, "dims", None), getattr(value, "order", None)
    if type(dims) is not tuple or not callable(order):
        return None
    data = order(*dims)
    return data if isinstance(data, torch.Tensor) else None


def in_memory_map(tensor: object) -> bool:
    """Whether ``tensor``'s data lives in a memory-mapped file: a ``MemoryMappedTensor``,
    or a view of one that torch's own ops returned as a plain tensor (``td.view(-1)``,
    ``td.unsqueeze(0)``, ``td.permute(...)``, ``td.detach()`` of a memory-mapped
    collection), whose writes reach the file all the same; the anonymous map of one made
    without a file (``memmap_()`` without a folder) and a copy-on-write map of a file (the
    leaves of a loaded archive, ``load_memmap(mode="r")``) too, so that ``is_memmap()`` and
    ``is_shared()`` do not change with a view of the same data."""
    if isinstance(tensor, MemoryMappedTensor):
        return True
    if not isinstance(tensor, torch.Tensor):  # a first-class dim tensor: what it reads
        data = first_class_data(tensor)
        return data is not None and in_memory_map(data)
    tensor = functorch_base(tensor)
    if tensor.layout is torch.jagged:  # a saved one: its values view the file
        jagged: Any = tensor  # torch's NestedTensor subclass: values()
        return in_memory_map(jagged.values())
    if tensor.device.type != "cpu" or tensor.is_sparse or tensor.layout is not torch.strided:
        return False
    storage = tensor.untyped_storage()
    return (
        storage.filename is not None or storage in _ANONYMOUS_MAPS or storage in _files.PRIVATE_MAPS
    )


def functorch_base(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor whose data ``tensor`` reads: itself, or, for a tensor that a function
    transform wrapped (``torch.vmap``'s batched tensors, ``torch.func.grad``'s), the
    tensor under every wrapper (a wrapper has no storage to ask)."""
    while is_functorch_wrapped_tensor(tensor):
        tensor = get_unwrapped(tensor)
    return tensor


def maps_file(tensor: torch.Tensor) -> bool:
    """Whether the storage of ``tensor`` (a dense one) maps a file, shared or
    copy-on-write: about 0.4 us, where :func:`in_memory_map` takes 2-4."""
    storage = tensor.untyped_storage()
    return storage.filename is not None or storage in _files.PRIVATE_MAPS


def _gather_rows(tensor: MemoryMappedTensor, index: torch.Tensor) -> torch.Tensor | None:
    """``tensor[index]`` for a 1-d integer index, through ``index_select``, which copies
    whole rows (memcpy) where general advanced indexing copies element by element: about
    8x faster for a random gather of image rows. None for any other index, or a dtype
    torch has no ``index_select`` for (``uint16``, ``uint32``, ``uint64``)."""
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
    try:
        return torch.index_select(plain, 0, index)
    except NotImplementedError:  # no kernel for its dtype (uint16): torch's own indexing
        return None


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


def tensor_bytes(tensor: torch.Tensor) -> np.ndarray[Any, Any]:
    """The bytes of ``tensor``'s values in C order: an array over its own memory where
    numpy reads it (a contiguous CPU tensor of a numpy dtype, not requiring grad, no lazy
    conjugation or negation; about 0.6 us), else over a contiguous CPU copy."""
    if tensor.is_contiguous():
        try:
            return tensor.numpy()  # (it refuses each of the other cases)
        except (RuntimeError, TypeError):
            pass
    # a copy into a new flat tensor (torch calls a tensor contiguous whatever the strides
    # of its size-1 dims, which a view as bytes refuses); copy_ reads any strides, device
    # and lazy bit
    out = torch.empty(tensor.numel(), dtype=tensor.dtype)
    out.view(tensor.shape).copy_(tensor.detach())
    return out.view(torch.uint8).numpy()


def rewrite_file(
    path: PathLike, pieces: list[Buffer], nbytes: int, staged: bool
) -> MemoryMappedTensor:
    """A flat ``uint8`` MemoryMappedTensor (``"r+"``) over ``path`` (created, or an
    existing regular file replaced), once ``pieces`` (buffers, ``nbytes`` in all) are
    written into it one after the other, with ``pwritev`` straight from their memory:
    a fresh mapping written through takes a page fault per page, most of the cost of
    rewriting a small file, as ``consolidate(filename=...)`` does every step.

    In place by default: an existing file is resized and keeps its pages in the page
    cache (truncating it would free them; the peer writes in place too). ``staged``: a
    new file beside ``path``, moved over it once written (removed if writing fails), for
    a writer whose data may be read from the old file, whose maps keep it."""
    path = abspath(path)
    staging = None
    if staged and os.path.lexists(path):
        if os.path.islink(path) or os.path.isdir(path):
            raise_open_error(path, FileExistsError(errno.EEXIST, "exists", path))
        staging = f"{path}.{os.getpid()}-{secrets.token_hex(6)}.tmp"
    size = (nbytes,)
    if staging is None:
        return create_file(MemoryMappedTensor, path, size, torch.uint8, True, False, pieces)
    flat = create_file(MemoryMappedTensor, staging, size, torch.uint8, False, False, pieces, path)
    try:
        os.replace(staging, path)
    except BaseException:
        os.unlink(staging)
        raise
    return flat


def map_opened_file(
    fd: int,
    path: str,
    dtype: torch.dtype,
    shape: Sequence[int],
    mode: Mode,
    hint: str = "",
    status: os.stat_result | None = None,
) -> MemoryMappedTensor:
    """A MemoryMappedTensor over the file opened as ``fd`` (checked, never modified),
    reporting ``path`` as its file name. The caller keeps and closes ``fd``; ``status``
    is its ``fstat`` where the caller has just taken it.

    A file longer than ``dtype`` and ``shape`` need (older writers padded them to a page)
    is mapped over its first bytes, the rest left alone; a shorter one is an error.
    """
    # Inline, as this runs once per leaf of every load: the checks of check_file_size in
    # their passing case (any other case goes through fit, for its verdict and message),
    # then file_tensor's mapping.
    if status is None:
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


def open_mapped(path: PathLike) -> tuple[MemoryMappedTensor, int] | None:
    """The regular file at ``path`` mapped whole, copy-on-write (``"r"``), as a flat
    ``uint8`` MemoryMappedTensor, and the descriptor it was opened with, which the
    caller may read through (``os.pread``: no page fault, as reading the map takes) and
    closes; None where no regular file is at ``path``."""
    path = abspath(path)
    try:
        fd = os.open(path, _files.OPEN_FLAGS | os.O_RDONLY)
    except OSError as err:
        if err.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise_open_error(path, err)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            os.close(fd)
            return None
        return map_opened_file(fd, path, torch.uint8, (status.st_size,), "r", "", status), fd
    except BaseException:
        os.close(fd)
        raise


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
