"""The files under MemoryMappedTensors: created, checked and mapped.

A file is mapped by torch (``UntypedStorage.from_file``) through ``/proc/self/fd/N`` of a
descriptor this module opened and checked (see :func:`file_storage` for why torch maps it
and not this module). ``MemoryMappedTensor`` (``_memmap.py``) builds on these.
"""

from __future__ import annotations

import errno
import math
import os
import re
import stat
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn, TypeVar

import torch
from typing_extensions import Buffer

from tclass.errors import (
    FileConflictError,
    FileFormatError,
    FilePermissionError,
    MissingFileError,
    MissingFolderError,
    NotAFileError,
)

if TYPE_CHECKING:
    from tclass._core._memmap_args import Mode
    from tclass._core._memmap_new import MemmapConstructors

__all__ = [
    "OPEN_FLAGS",
    "PROC_FD",
    "PROTOS",
    "SIZE_HINT",
    "WRITE_FLAGS",
    "blank",
    "check_file_size",
    "check_regular",
    "create_file",
    "file_tensor",
    "fit",
    "map_file",
    "map_existing",
    "map_fd",
    "open_or_raise",
    "raise_open_error",
    "storage_file",
    "storage_from_file",
    "write_all",
    "write_pieces",
]


def _proc_fd() -> str | None:
    """This process's descriptor folder in /proc, named by the pid that ``/proc/self``
    names (the pid as /proc's namespace sees it), or None without one."""
    try:
        me = os.readlink("/proc/self")
    except OSError:
        return None
    return f"/proc/{me}/fd" if os.path.isdir(f"/proc/{me}/fd") else None


# Reopening "/proc/<pid>/fd/N" maps the very file we opened and checked, even if its path
# was replaced in between. Elsewhere we fall back to the path itself. The pid's folder,
# not "/proc/self/fd": one symlink less to resolve per file mapped (a forked child names
# its own, see _after_fork).
PROC_FD = _proc_fd()


def _after_fork() -> None:
    global PROC_FD
    PROC_FD = _proc_fd()


os.register_at_fork(after_in_child=_after_fork)
OPEN_FLAGS = os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK  # never block on a FIFO
WRITE_FLAGS = OPEN_FLAGS | os.O_RDWR | os.O_NOFOLLOW
# Typed by torch as returning any storage; from an UntypedStorage, it is one.
storage_from_file: Callable[[str, bool, int], torch.UntypedStorage]
storage_from_file = torch.UntypedStorage.from_file  # type: ignore[assignment]
# The copy-on-write maps of a file (``shared=False``): torch records no file name for
# them, so that their plain views (an archive's leaves, ``detach()``, ``t[1:]``) are told
# from memory by this set (see ``in_memory_map``).
PRIVATE_MAPS: weakref.WeakSet[torch.UntypedStorage] = weakref.WeakSet()


def map_file(source: str, shared: bool, nbytes: int) -> torch.UntypedStorage:
    """torch's mapping of the first ``nbytes`` of ``source`` (``storage_from_file``),
    recorded in ``PRIVATE_MAPS`` when copy-on-write."""
    storage = storage_from_file(source, shared, nbytes)
    if not shared:
        PRIVATE_MAPS.add(storage)
    return storage


_empty = torch.empty
_M = TypeVar("_M", bound="MemmapConstructors")
# An empty CPU tensor of each dtype met: its ``new()`` starts each mapped tensor (under
# half of ``torch.empty``'s time, which parses its arguments: 0.4-1.0 against 1.4-2.0 us
# on a loaded machine; and on the CPU even inside a ``torch.device`` context, as the
# storage it takes is).
PROTOS: dict[torch.dtype, torch.Tensor] = {}


def blank(dtype: torch.dtype) -> torch.Tensor:
    """A new empty CPU tensor of ``dtype``, to be given a storage with ``set_``."""
    proto = PROTOS.get(dtype)
    if proto is None:
        proto = PROTOS[dtype] = _empty(0, dtype=dtype, device="cpu")
    return proto.new()


def write_all(fd: int, data: memoryview, offset: int = 0) -> None:
    """Write ``data`` at ``offset`` of the file, whole."""
    done = 0
    while done < len(data):  # one write moves at most ~2 GiB on Linux
        done += os.pwrite(fd, data[done:], offset + done)


_IOV_MAX = 1024  # the most buffers one pwritev takes (Linux's IOV_MAX)


def write_pieces(fd: int, pieces: Sequence[Buffer], nbytes: int) -> None:
    """Write ``pieces`` (buffers, ``nbytes`` in all) one after the other from the start
    of the file, with one ``pwritev`` straight from their memory (no copy gathers them)
    per 1,024 pieces."""
    if len(pieces) <= _IOV_MAX and os.pwritev(fd, pieces, 0) == nbytes:
        return
    offset = 0  # more pieces than one call takes, or a short write (over ~2 GiB): in
    for first in range(0, len(pieces), _IOV_MAX):  # batches, from the start again
        batch = [memoryview(piece) for piece in pieces[first : first + _IOV_MAX]]
        size = sum(view.nbytes for view in batch)
        if os.pwritev(fd, batch, offset) != size:  # short: piece by piece, whole
            at = offset
            for view in batch:
                if view.nbytes:  # (an empty one cannot be cast)
                    write_all(fd, view.cast("B"), at)
                    at += view.nbytes
        offset += size


def _open_to_write(path: str, existsok: bool) -> tuple[int, bool]:
    """A descriptor of ``path`` open for writing, and whether this created the file. With
    ``existsok``, an existing file is opened first (a rewrite, the usual case then: one
    open, where a refused create, its exception and two checks of the path cost ~10 us)."""
    if existsok:
        try:
            return os.open(path, WRITE_FLAGS), False  # O_NOFOLLOW: a symlink fails
        except (FileNotFoundError, NotADirectoryError):
            pass  # created below (or its error told there)
        except OSError as err:
            raise_open_error(path, err)
    try:
        return os.open(path, WRITE_FLAGS | os.O_CREAT | os.O_EXCL, 0o666), True
    except FileExistsError as err:
        if not existsok or os.path.islink(path) or os.path.isdir(path):
            raise_open_error(path, err)
        return open_or_raise(path, WRITE_FLAGS), False  # created since by another
    except OSError as err:
        if err.errno in (errno.ENOENT, errno.ENOTDIR):
            msg = f"cannot create {path!r}: its directory does not exist; create it first"
            raise MissingFolderError(msg) from err
        raise_open_error(path, err)


def create_file(
    cls: type[_M], path: str, size: Sequence[int], dtype: torch.dtype, existsok: bool,
    zero: bool, data: memoryview | list[Buffer] | None, name: str | None = None,
) -> _M:  # fmt: skip
    """Create (or, with ``existsok``, resize) ``path``, write ``data`` (one buffer, or a
    list of buffers that fill the file one after the other), map it as a ``cls`` of
    ``size``. ``name``: the caller owns the new file's folder (a save's
    staging folder), and will move it to ``name``, which the tensor reports; torch then
    maps the file by its path (one lookup less than through /proc/self/fd)."""
    fd, created = _open_to_write(path, existsok)
    try:
        current = 0 if created else check_regular(fd, path)  # its size
        if zero and not created:
            os.ftruncate(fd, 0)  # drop old content; the regrown file reads as zeros
            current = 0
        nbytes = math.prod(size) * dtype.itemsize
        # A new file that the data fills is sized by the write itself: sizing it first
        # would make the write fill a hole (on ext4, a slower path for the same bytes).
        # (A file of the size already is left as it is: ftruncate costs a few us even so.)
        fills = isinstance(data, list) or (data is not None and len(data) == nbytes)
        if (not fills or not created) and current != nbytes:
            os.ftruncate(fd, nbytes)  # sparse: no blocks are written
        if isinstance(data, list):
            write_pieces(fd, data, nbytes)
        elif data is not None:
            write_all(fd, data)
        if name is not None and created:
            out = file_tensor(cls, -1, path, size, nbytes, dtype, "r+")
            out._filename = name
            return out
        return file_tensor(cls, fd, path, size, nbytes, dtype, "r+")
    except BaseException:
        if created:
            os.unlink(path)
        raise
    finally:
        os.close(fd)


def map_existing(
    path: str, dtype: torch.dtype, shape: Sequence[int], mode: Mode | None, longer_ok: bool = False
) -> tuple[torch.Tensor, Mode]:
    """Map an existing file flat after checking it; the file is never modified."""
    if mode is None:
        mode = "r+" if os.access(path, os.W_OK) else "r"
    flags = OPEN_FLAGS | (os.O_RDWR if mode == "r+" else os.O_RDONLY)
    hint = "; mode='r' maps it read-only, copy-on-write" if mode == "r+" else ""
    fd = open_or_raise(path, flags, hint)
    try:
        numel = check_file_size(fd, path, dtype, shape, longer_ok=longer_ok)
        return map_fd(fd, path, numel, dtype, shared=mode == "r+"), mode
    finally:
        os.close(fd)


def check_file_size(
    fd: int,
    path: str,
    dtype: torch.dtype,
    shape: Sequence[int],
    hint: str = "",
    longer_ok: bool = False,
) -> int:
    """The element count of ``shape``, after checking that the regular file behind ``fd``
    holds exactly (or, with ``longer_ok``, at least) that many elements of ``dtype``;
    raises FileFormatError otherwise."""
    return fit(fd, path, dtype, shape, hint, longer_ok)[0]


def fit(
    fd: int, path: str, dtype: torch.dtype, shape: Sequence[int], hint: str, longer_ok: bool
) -> tuple[int, bool]:
    """:func:`check_file_size`, and whether the file is longer than needed."""
    size = check_regular(fd, path)
    numel = math.prod(shape)
    needed = numel * dtype.itemsize
    if size != needed and not (longer_ok and size > needed):
        msg = (
            f"{path!r} holds {size} bytes, but dtype {dtype} and shape "
            f"{list(shape)} need {needed} bytes ({numel} x "
            f"{dtype.itemsize}); the file was left unchanged. "
        )
        raise FileFormatError(msg + (hint or SIZE_HINT))
    return numel, size != needed


SIZE_HINT = (
    "Pass the dtype and shape it was written with (a raw file has no header), or rewrite "
    "it with MemoryMappedTensor.from_tensor(t, filename=..., existsok=True)"
)


def file_tensor(
    cls: type[_M], fd: int, path: str, shape: Sequence[int], nbytes: int, dtype: torch.dtype,
    mode: Mode,
) -> _M:  # fmt: skip
    """A ``cls`` of ``shape`` over the first ``nbytes`` of the file behind ``fd`` (checked
    to hold them; -1: the file at ``path``, which only the caller writes). One tensor,
    which takes the mapping and then the class: a flat tensor, a view of it and an alias
    would be three per leaf, and ``as_subclass`` makes a second Python object (a
    tensor's class is a plain Python class: assigning a subclass of it that adds no
    slots is what ``as_subclass`` does, less the new object)."""
    if nbytes:
        mapped = blank(dtype)
        source = f"{PROC_FD}/{fd}" if PROC_FD and fd >= 0 else path
        mapped.set_(map_file(source, mode == "r+", nbytes), 0, shape)  # type: ignore[call-overload]
        mapped.__class__ = cls
        out: _M = mapped  # type: ignore[assignment]  # now of its class
    else:  # mmap cannot map 0 bytes
        out = _empty(shape, dtype=dtype).as_subclass(cls)
    out._filename = path
    out._mode = mode
    return out


def map_fd(fd: int, path: str, numel: int, dtype: torch.dtype, shared: bool) -> torch.Tensor:
    """Map the first ``numel`` elements of the file behind ``fd`` (already checked to
    hold at least that many) as a flat tensor."""
    if numel == 0:
        return torch.empty(0, dtype=dtype)  # mmap cannot map 0 bytes
    flat = blank(dtype)
    flat.set_(file_storage(fd, path, numel * dtype.itemsize, shared), 0, (numel,))  # type: ignore[call-overload]
    return flat


# Files are mapped by torch (``UntypedStorage.from_file``), not by us (``mmap`` and
# ``torch.frombuffer``), although our own mapping would save the reopen below and three
# system calls per leaf. torch's mapping is a ``MapAllocator`` storage: ``is_shared()`` is
# True, ``share_memory_()`` leaves it in place, and sending a plain view of it through
# ``torch.multiprocessing`` fails loudly. A storage over our own buffer is none of that:
# ``share_memory_()`` or that send would silently copy it into shared memory and swap the
# copy in, detaching every tensor over it (the MemoryMappedTensor included) from its file.
# Reopening "/proc/self/fd/N" maps the very file we opened and checked, even if its path
# was replaced in between; from_file grows a short file (and zeroes its first byte),
# hence the size checks before. shared=False is a private copy-on-write mapping of a
# read-only open.
def file_storage(fd: int, path: str, nbytes: int, shared: bool) -> torch.UntypedStorage:
    return map_file(f"{PROC_FD}/{fd}" if PROC_FD else path, shared, nbytes)  # as file_tensor


# The name torch records for a storage mapped through a descriptor (as this module maps
# every file): it stops naming the file once the descriptor is closed, and names another
# file when the number is reused.
_FD_NAME = re.compile(r"/proc/(?:self|\d+)/fd/\d+")


def storage_file(storage: torch.UntypedStorage | torch.TypedStorage) -> str | None:
    """The path of the file ``storage`` maps, or None: no file, or one since deleted.

    The name torch recorded when it still names a file; else (a map made through
    ``/proc/<pid>/fd/N``, as this module maps every file, or in a save's staging folder
    since renamed into place) the file Linux lists for the address of its bytes in
    ``/proc/self/maps`` (checked by its inode)."""
    own: str | None = getattr(storage, "filename", None)
    if own is None or (not _FD_NAME.fullmatch(own) and os.path.exists(own)):
        return own
    address = storage.data_ptr()
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="surrogateescape") as maps:
            for line in maps:
                span, _, rest = line.partition(" ")
                start, _, end = span.partition("-")
                if int(start, 16) <= address < int(end, 16):
                    fields = rest.rstrip("\n").split(maxsplit=4)
                    return _same_inode(fields[4], int(fields[3])) if len(fields) == 5 else None
    except OSError:
        return None
    return None


def _same_inode(path: str, inode: int) -> str | None:
    """``path`` if it still names the file of that inode (a deleted file's entry in
    ``/proc/self/maps`` ends with " (deleted)", a path holding a newline is escaped)."""
    try:
        return path if os.stat(path).st_ino == inode else None
    except OSError:
        return None


def open_or_raise(path: str, flags: int, hint: str = "") -> int:
    try:
        return os.open(path, flags)
    except OSError as err:
        raise_open_error(path, err, hint)


def check_regular(fd: int, path: str) -> int:
    """Return the size of the file behind ``fd``; refuse anything but a regular file."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        msg = f"{path!r} is not a regular file; give the path of a file"
        raise NotAFileError(msg)
    return st.st_size


def raise_open_error(path: str, err: OSError, hint: str = "") -> NoReturn:
    """Re-raise an ``os.open`` error as the tclass error for it, with a fix."""
    code = err.errno
    if code in (errno.EEXIST, errno.ELOOP) and os.path.islink(path):
        msg = f"refusing to write through symlink {path!r}; give the real path"
        raise FileConflictError(msg) from err
    if code in (errno.EEXIST, errno.EISDIR) and os.path.isdir(path):
        msg = f"{path!r} is a directory; give the path of a file"
        raise NotAFileError(msg) from err
    if code == errno.EEXIST:
        msg = f"{path!r} already exists; pass existsok=True to overwrite it"
        raise FileConflictError(msg) from err
    if code in (errno.ENOENT, errno.ENOTDIR):
        msg = f"{path!r} does not exist (or its directory does not); check the path"
        raise MissingFileError(msg) from err
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        msg = f"this process may not open {path!r} as needed ({os.strerror(code)}){hint}"
        failure = FilePermissionError(msg)
        failure.errno = code
        raise failure from err
    raise err
