"""The archive variant of the format (``.tdz``): one zip file holding a saved folder's files.

The entries are the folder's files under their relative paths (``meta.json``,
``obs.memmap``, ``next/meta.json``...), in the peer's order: in every folder its
``meta.json`` first, then its other files by name, then its sub-folders. Tensor payloads
(``*.memmap``) are stored uncompressed unless a compression is asked for, and start at a
64-byte boundary of the file (padding goes in a zip "extra" field of the entry's local
header, id ``0x6474``), so that a reader maps the archive once and every leaf is a view
into that mapping. This is the peer's 0.15 archive format; any zip holding a saved tree
reads too (unaligned or compressed payloads are copied into memory).

Writing goes to a new file beside the target, renamed over it when complete: a writer
killed midway leaves the old archive (or none), never a partial one under the name.

Reading is as strict as reading a folder: the central directory and every local header
are checked before anything is mapped; a name that would leave the archive (absolute,
``..``, a backslash, a NUL) or appears twice, an encrypted entry, a payload past the end
of the file, or a compressed one that inflates to another size than it says, is refused
with an error naming the archive and the entry. A compressed leaf must record no more
than a page over what its dtype and shape need (checked before anything is inflated: a
zip bomb is refused, not inflated), and is inflated as a stream that stops at its
recorded size. A zip file cut short says so, with the sizes. The file is opened once and mapped
through that descriptor, never grown or written unless ``mode="r+"`` asks for it (then
the CRC-32 values of changed entries go stale, as in the peer; stored entries are read
without checking them).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import struct
import time
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, NoReturn

import torch

from tclass._core._memmap import map_opened_file
from tclass._core._memmap_args import Mode
from tclass.errors import (
    ArgumentValueError,
    FileConflictError,
    FileFormatError,
    FilePermissionError,
    MetadataError,
    MissingFileError,
    NotAFileError,
    UnsafePathError,
)

__all__ = [
    "ALIGNMENT",
    "ARCHIVE_SUFFIX",
    "Archive",
    "ArchiveWriter",
    "compression_type",
    "entry_order",
    "is_archive",
    "is_truncated_zip",
    "require_archive",
    "safe_entry_name",
    "tensor_chunks",
]

ARCHIVE_SUFFIX = ".tdz"
ALIGNMENT = 64  # a multiple of every dtype's size: a payload there views as any dtype
_PAD_ID = 0x6474  # the "extra" block that pads a local header up to the alignment
_LOCAL = struct.Struct("<4s5H3I2H")  # the fixed part of a local file header
_LOCAL_SIGNATURE = b"PK\x03\x04"
_CHUNK = 16 << 20
# Older writers padded a leaf's file up to a page: a compressed entry may inflate to less
# than a page more than its leaf needs (more is refused before anything is inflated).
PAGE = 4096
_CENTRAL_SIGNATURE = b"PK\x01\x02"
_END_SIGNATURE, _END_SIZE = b"PK\x05\x06", 22  # the end of central directory record
_ZIP64_EXTRA = 0x0001
# What zipfile raises for a damaged archive (NotImplementedError: a zip version or
# feature it does not know, such as a flipped "version needed" field).
_OPEN_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, NotImplementedError)
_INFLATE_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    OSError,
    ValueError,
    NotImplementedError,
)
_METHODS = {
    "stored": zipfile.ZIP_STORED,
    "deflate": zipfile.ZIP_DEFLATED,
    "deflated": zipfile.ZIP_DEFLATED,
    "bzip2": zipfile.ZIP_BZIP2,
    "lzma": zipfile.ZIP_LZMA,
}
_READABLE_METHODS = frozenset(_METHODS.values())
_STAGING = ".tclass-archive-"


def compression_type(compression: str | int | None) -> int:
    """The zip method of a ``compression=`` argument (None: stored)."""
    if compression is None:
        return zipfile.ZIP_STORED
    if isinstance(compression, int) and not isinstance(compression, bool):
        if compression in _READABLE_METHODS:
            return compression
    elif isinstance(compression, str) and compression.lower() in _METHODS:
        return _METHODS[compression.lower()]
    names = ", ".join(repr(name) for name in _METHODS)
    msg = f"unknown compression {compression!r}: use None, {names} or a zipfile constant"
    raise ArgumentValueError(msg)


def is_archive(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a zip file with a ``meta.json`` at its top (a directory, a
    missing path or another file: False)."""
    try:
        if not os.path.isfile(path) or not zipfile.is_zipfile(path):
            return False
        with zipfile.ZipFile(path) as archive:
            return "meta.json" in archive.NameToInfo
    except (OSError, *_OPEN_ERRORS):
        return False


def safe_entry_name(name: str) -> bool:
    """Whether an entry name stays inside the archive's tree: relative, ``/``-separated,
    with no empty, ``.`` or ``..`` part, no backslash and no NUL."""
    body = name[:-1] if name.endswith("/") else name
    if not body or body.startswith("/") or "\\" in body or "\x00" in body:
        return False
    return all(part not in ("", ".", "..") for part in body.split("/"))


def entry_order(paths: Iterable[str]) -> list[str]:
    """Relative file paths in the archive's order: in each folder ``meta.json``, then
    the other files by name, then the sub-folders (recursively)."""

    def key(path: str) -> tuple[tuple[int, str], ...]:
        *folders, name = path.split("/")
        return (*((2, part) for part in folders), (0, "") if name == "meta.json" else (1, name))

    return sorted(paths, key=key)


def tensor_chunks(tensor: torch.Tensor) -> Iterator[memoryview]:
    """The raw bytes of a CPU tensor, in bounded chunks, read from its memory."""
    flat = tensor.detach().resolve_conj().resolve_neg().contiguous().view(-1)
    view = memoryview(flat.view(torch.uint8).numpy().data)
    for start in range(0, len(view), _CHUNK):
        yield view[start : start + _CHUNK]


# --- writing -----------------------------------------------------------------------------------


class ArchiveWriter:
    """A new archive written beside ``target`` and renamed over it by :meth:`commit`
    (:meth:`abort` removes it). Payload entries (``payload=True``) are compressed with
    ``method`` and, when stored, aligned; other entries are stored as they are."""

    def __init__(self, target: str, method: int, compresslevel: int | None = None) -> None:
        self.target = target
        parent, name = os.path.split(target)
        # A name beside the target (same file system, so the rename is atomic), hidden,
        # no longer than the target's own (which the file system accepted).
        self.temp = os.path.join(parent, f".{name}{_STAGING}{secrets.token_hex(4)}")
        self.method, self.level = method, compresslevel
        self._file: BinaryIO = open(self.temp, "xb")  # noqa: SIM115 (closed by commit/abort)
        self._zip = zipfile.ZipFile(self._file, "w", allowZip64=True)

    def add(self, name: str, chunks: Iterable[bytes | memoryview], size: int, payload: bool) -> int:
        """Write one entry; returns where its data starts in the file."""
        info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
        info.external_attr = 0o644 << 16
        info.file_size = size
        method = self.method if payload else zipfile.ZIP_STORED
        info.compress_type = method
        if self.level is not None and method != zipfile.ZIP_STORED:
            info._compresslevel = self.level  # type: ignore[attr-defined]  # zipfile's own slot
        aligned = payload and method == zipfile.ZIP_STORED
        if aligned:
            info.extra = self._padding(info)
        with self._zip.open(info, "w", force_zip64=True) as stream:
            start = self._file.tell()
            if aligned and start % ALIGNMENT:
                msg = (
                    f"internal error: the payload of {name!r} starts at {start}, not a multiple of "
                    f"{ALIGNMENT}"
                )
                raise AssertionError(msg)
            for chunk in chunks:
                stream.write(chunk)
        return start

    def _padding(self, info: zipfile.ZipInfo) -> bytes:
        """The extra block that makes the payload of ``info`` start on the alignment."""
        info.CRC = info.compress_size = 0
        base = self._zip.start_dir + len(info.FileHeader(True)) + 4  # the block's own header
        pad = -base % ALIGNMENT
        return struct.pack("<HH", _PAD_ID, pad) + bytes(pad)

    def commit(self, durable: bool = False) -> None:
        """Finish the archive and put it at ``target`` in one rename (``durable``: fsync
        it first; the caller syncs the folder after)."""
        try:
            self._zip.close()
            if durable:
                self._file.flush()
                os.fsync(self._file.fileno())
            self._file.close()
            if os.path.exists(self.target):
                os.chmod(self.temp, stat.S_IMODE(os.stat(self.target).st_mode))
            os.replace(self.temp, self.target)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        try:
            self._zip.close()
        except (OSError, ValueError, zipfile.BadZipFile):
            pass
        self._file.close()
        try:
            os.unlink(self.temp)
        except FileNotFoundError:
            pass


def check_target(path: str, existsok: bool) -> None:
    """Refuse to write an archive over a directory, or over a file unless ``existsok``."""
    if os.path.isdir(path):
        msg = f"cannot write an archive at {path!r}: it is a directory; choose a file path"
        raise NotAFileError(msg)
    if not existsok and os.path.lexists(path):
        raise FileConflictError(f"{path!r} already exists; pass existsok=True to replace it")


# --- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    offset: int  # where the data starts in the file
    size: int  # its size once inflated
    method: int
    stored_size: int  # its size in the file
    crc: int


class Archive:
    """An archive opened for reading: its checked index, and one mapping of the file
    (made on the first stored leaf read). ``mode`` as ``load_memmap``'s: ``"r+"`` maps
    the file shared (writes reach it), anything else copy-on-write."""

    def __init__(self, path: str, mode: Mode | None = None) -> None:
        self.path = path
        self.mode: Mode = "r+" if mode == "r+" else "r"
        self.entries: dict[str, Entry] = {}
        self.children: dict[str, set[str]] = {"": set()}
        self.leaves: dict[str, int] = {}  # leaf entries checked, and the bytes they need
        self._mapping: torch.Tensor | None = None
        self._fd = _open_archive(path, self.mode)
        self._stream = os.fdopen(os.dup(self._fd), "rb")
        try:
            self.size = os.fstat(self._fd).st_size
            try:
                self._zip = zipfile.ZipFile(self._stream)
            except _OPEN_ERRORS as error:
                cut = _truncation(self._stream, self.size)
                if cut is not None:
                    raise FileFormatError(_truncated_message(path, self.size, *cut)) from None
                msg = (
                    f"{path!r} is not a readable zip archive ({_short(error)}); it is damaged "
                    "or not an archive written by save/pack_memmap"
                )
                raise FileFormatError(msg) from None
            for info in self._zip.infolist():
                self._add(info, self._stream)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._fd >= 0:
            self._stream.close()
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def where(self, name: str) -> str:
        return f"{self.path}::{name}" if name else self.path

    # --- the index ---------------------------------------------------------------------------

    def _add(self, info: zipfile.ZipInfo, stream: BinaryIO) -> None:
        name = info.filename
        if not safe_entry_name(name):
            msg = (
                f"{self.where(name)!r}: the entry's name leaves the archive (absolute, '..', a "
                "backslash or a NUL); the archive is crafted or damaged"
            )
            raise UnsafePathError(msg)
        if info.flag_bits & 0x1:
            raise FileFormatError(f"{self.where(name)!r} is encrypted, which tclass does not read")
        if name.endswith("/"):
            self._add_folder(name[:-1])
            return
        if name in self.entries or name in self.children:
            msg = f"{self.where(name)!r} appears twice in the archive; it is crafted or damaged"
            raise MetadataError(msg)
        if info.compress_type not in _READABLE_METHODS:
            msg = (
                f"{self.where(name)!r} uses zip compression method {info.compress_type}, which "
                "tclass does not read"
            )
            raise FileFormatError(msg)
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            msg = (
                f"{self.where(name)!r} is stored uncompressed, but its header records "
                f"{info.file_size} bytes held in {info.compress_size}; the archive is damaged "
                "or crafted"
            )
            raise FileFormatError(msg)
        offset = self._payload_offset(info, stream)
        if offset + info.compress_size > self.size:
            self._raise_truncated(name, offset + info.compress_size)
        self.entries[name] = Entry(
            offset, info.file_size, info.compress_type, info.compress_size, info.CRC
        )
        folder, _, base = name.rpartition("/")
        self._add_folder(folder)
        self.children[folder].add(base)

    def _raise_truncated(self, name: str, end: int) -> NoReturn:
        cut = (f"the data of {name!r} ends at byte {end}", end)
        raise FileFormatError(_truncated_message(self.path, self.size, *cut))

    def _payload_offset(self, info: zipfile.ZipInfo, stream: BinaryIO) -> int:
        if not 0 <= info.header_offset < self.size:
            msg = (
                f"{self.where(info.filename)!r}: the central directory places its header at "
                f"byte {info.header_offset}, outside the file ({self.size} bytes); the archive "
                "is damaged or crafted"
            )
            raise FileFormatError(msg)
        stream.seek(info.header_offset)
        header = stream.read(_LOCAL.size)
        if len(header) != _LOCAL.size or header[:4] != _LOCAL_SIGNATURE:
            raise FileFormatError(f"{self.where(info.filename)!r}: its local header is damaged")
        name_length, extra_length = (int(size) for size in _LOCAL.unpack(header)[-2:])
        expected = info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")
        local_name = stream.read(name_length) if name_length == len(expected) else b""
        if local_name != expected:  # (its bytes are not shown: they may be any data)
            msg = (
                f"{self.where(info.filename)!r}: its local header, at byte {info.header_offset}, "
                "names another file than the central directory does; the archive is crafted or "
                "damaged"
            )
            raise MetadataError(msg)
        return info.header_offset + _LOCAL.size + name_length + extra_length

    def _add_folder(self, folder: str) -> None:
        while folder not in self.children:
            if folder in self.entries:
                raise MetadataError(
                    f"{self.where(folder)!r} is both a file and a folder in the archive"
                )
            self.children[folder] = set()
            parent, _, base = folder.rpartition("/")
            self.children.setdefault(parent, set()).add(base)
            folder = parent

    # --- what the reader asks ------------------------------------------------------------------

    def is_folder(self, name: str) -> bool:
        return name in self.children

    def is_file(self, name: str) -> bool:
        return name in self.entries

    def read(self, name: str, limit: int) -> bytes:
        """The bytes of a small entry (a ``meta.json``...), at most ``limit``."""
        entry = self.entries[name]
        if entry.size > limit:
            msg = (
                f"{self.where(name)!r} is {entry.size} bytes: a meta.json or value file "
                f"larger than {limit} bytes is refused, as it would be read whole"
            )
            raise MetadataError(msg)
        return b"".join(self.chunks(name))

    def tensor(self, name: str, dtype: torch.dtype, shape: list[int]) -> torch.Tensor:
        """The leaf of ``dtype`` and ``shape`` stored in ``name``: a view into the
        archive's mapping when stored aligned, else a copy in memory."""
        entry = self.entries[name]
        needed = self.check_size(name, dtype, shape)
        if entry.method == zipfile.ZIP_STORED:
            flat = self._mapped()[entry.offset : entry.offset + needed]
            if entry.offset % dtype.itemsize:
                if self.mode == "r+":
                    msg = (
                        f"{self.where(name)!r} is not aligned (written by another zip tool), so "
                        "mode='r+' cannot map it; re-save it with tclass or load without mode='r+'"
                    )
                    raise FileFormatError(msg)
                flat = flat.clone()
        else:
            if self.mode == "r+":
                msg = (
                    f"{self.where(name)!r} is compressed, so mode='r+' cannot write through to it; "
                    "load it without mode='r+', or re-save without compression"
                )
                raise FileFormatError(msg)
            flat = torch.empty(needed, dtype=torch.uint8)
            filled = flat.numpy()
            position = 0
            for chunk in self.chunks(name, needed):  # a page of padding: only the start
                filled[position : position + len(chunk)] = memoryview(chunk)
                position += len(chunk)
        return flat.view(dtype).view(shape)

    def check_size(self, name: str, dtype: torch.dtype, shape: list[int]) -> int:
        """The bytes ``dtype`` and ``shape`` need, which the entry must hold: at least
        that, and, inflated, less than a page more (what older writers padded a file to;
        a larger claim is refused before anything is inflated). ``leaves`` records it."""
        needed = dtype.itemsize
        for size in shape:
            needed *= size
        entry = self.entries[name]
        if entry.size < needed:
            msg = (
                f"{self.where(name)!r} holds {entry.size} bytes, but dtype {dtype} and shape "
                f"{list(shape)} need {needed}; the archive is damaged or its meta.json was changed"
            )
            raise FileFormatError(msg)
        if entry.method != zipfile.ZIP_STORED and entry.size - needed >= PAGE:
            msg = (
                f"{self.where(name)!r} is compressed and records {entry.size} bytes once "
                f"inflated, but dtype {dtype} and shape {list(shape)} need {needed}: it is "
                "refused before inflating anything (a zip bomb, or a damaged archive). Re-save "
                "the collection, or pack its folder again"
            )
            raise FileFormatError(msg)
        self.leaves[name] = needed
        return needed

    def compressed(self) -> bool:
        """Whether some entry is compressed (loading it inflates it into memory)."""
        return any(entry.method != zipfile.ZIP_STORED for entry in self.entries.values())

    def check_memory(self) -> None:
        """Refuse compressed leaves (those checked so far) that take more memory once
        inflated than the machine has."""
        total = sum(
            needed
            for name, needed in self.leaves.items()
            if self.entries[name].method != zipfile.ZIP_STORED
        )
        memory = _physical_memory()
        if memory is not None and total > memory:
            msg = (
                f"{self.path!r}: its compressed leaves take {total} bytes once inflated, more "
                f"than this machine's memory ({memory} bytes); nothing was inflated. Unpack it "
                "into a folder (unpack_memmap), whose leaves are mapped rather than read, and "
                "load that"
            )
            raise FileFormatError(msg)

    def _mapped(self) -> torch.Tensor:
        if self._mapping is None:
            whole = map_opened_file(self._fd, self.path, torch.uint8, [self.size], self.mode)
            self._mapping = whole.as_subclass(torch.Tensor)
        return self._mapping

    def chunks(self, name: str, limit: int | None = None) -> Iterator[bytes]:
        """The entry's bytes (its first ``limit`` only, if given) in bounded chunks. A
        compressed one is inflated as a stream that stops at its recorded size: an entry
        that inflates to more (a lying header) is an error once one byte more came out,
        and, read whole, its CRC-32 is checked."""
        entry = self.entries[name]
        wanted = entry.size if limit is None else min(limit, entry.size)
        if entry.method == zipfile.ZIP_STORED:
            for start in range(0, wanted, _CHUNK):
                self._stream.seek(entry.offset + start)
                chunk = self._stream.read(min(_CHUNK, wanted - start))
                if len(chunk) < min(_CHUNK, wanted - start):  # the file shrank meanwhile
                    self._raise_truncated(name, entry.offset + entry.stored_size)
                yield chunk
            return
        left = wanted + 1 if wanted == entry.size else wanted  # whole: one byte more shows
        try:
            with self._zip.open(name) as stream:
                while left and (chunk := stream.read(min(_CHUNK, left))):
                    left -= len(chunk)
                    if wanted == entry.size and not left:
                        break  # the byte past the recorded size came out
                    yield chunk
        except _INFLATE_ERRORS as error:
            msg = (
                f"{self.where(name)!r} does not inflate ({_short(error)}); the archive is "
                "damaged or crafted"
            )
            raise FileFormatError(msg) from None
        if left != (1 if wanted == entry.size else 0):
            msg = (
                f"{self.where(name)!r} inflates to another size than the {entry.size} bytes its "
                "header records; the archive is damaged or crafted"
            )
            raise FileFormatError(msg)


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        return None


def _short(error: BaseException) -> str:
    """An error's text for a message: one line, bounded (zipfile quotes raw names)."""
    text = " ".join(str(error).split())
    return text if len(text) <= 120 else text[:119] + "\N{HORIZONTAL ELLIPSIS}"


def _truncated_message(path: str, size: int, what: str, expected: int) -> str:
    return (
        f"{path!r} is truncated: {what}, but the file holds {size} bytes (expected at least "
        f"{expected}). A copy or download was cut short, or a save was interrupted: copy the "
        "archive again, or re-save it (save(..., '.tdz') or pack_memmap)"
    )


def require_archive(path: str) -> None:
    """Refuse ``path`` unless it is an archive (see ``is_archive``); a zip archive cut
    short says so, with the sizes."""
    if is_archive(path):
        return
    if is_truncated_zip(path):
        Archive(path).close()  # raises the truncation, with the sizes
    msg = f"{path!r} is not a memory-mapped archive (a zip file with a meta.json at its top)"
    raise FileFormatError(msg)


def is_truncated_zip(path: str) -> bool:
    """Whether ``path`` is a zip archive cut short: it starts as one but its end is lost
    (``zipfile.is_zipfile`` says False for it)."""
    try:
        with open(path, "rb") as stream:
            return _truncation(stream, os.fstat(stream.fileno()).st_size) is not None
    except OSError:
        return False


def _truncation(stream: BinaryIO, size: int) -> tuple[str, int] | None:
    """What is cut off a zip file whose end record cannot be found, found by walking its
    local headers from the start: (what the file lacks, the size it needs at least), or
    None when the file does not start as a zip archive (or is not cut short)."""
    position = 0
    while True:
        stream.seek(position)
        signature = stream.read(4)
        if position == 0 and signature != _LOCAL_SIGNATURE:
            return None
        if signature == _LOCAL_SIGNATURE:
            header = signature + stream.read(_LOCAL.size - 4)
            if len(header) < _LOCAL.size:
                return "a local header is cut", position + _LOCAL.size
            fields = _LOCAL.unpack(header)
            flags, stored, name_length, extra_length = fields[2], fields[7], *fields[-2:]
            text = stream.read(name_length).decode("utf-8", "replace")
            name = repr(text[:80]) if text.isprintable() else "an entry"  # no raw bytes
            extra = stream.read(extra_length)
            start = position + _LOCAL.size + name_length + extra_length
            if stored == 0xFFFFFFFF:
                stored = _zip64_stored_size(extra, fields[8] == 0xFFFFFFFF)
            if flags & 0x8 or stored is None:  # sizes only after the data: cannot follow
                return None if start <= size else (f"the header of {name} is cut", start)
            if start + stored > size:
                return f"the data of {name} ends at byte {start + stored}", start + stored
            position = start + stored
            continue
        if (signature == _CENTRAL_SIGNATURE or len(signature) < 4) and not _has_end(stream, size):
            what = f"its central directory (the index after the data, from byte {position})"
            return f"{what} is cut or missing", position + _END_SIZE
        return None  # an end record is there, or something else: damaged, not cut short


def _has_end(stream: BinaryIO, size: int) -> bool:
    """Whether the last 64 KiB of the file hold a whole zip end record (what ends the
    archive: 22 bytes, then a comment of at most 64 KiB)."""
    start = max(0, size - (1 << 16) - _END_SIZE)
    stream.seek(start)
    tail = stream.read(size - start)
    return 0 <= tail.rfind(_END_SIGNATURE) <= len(tail) - _END_SIZE


def _zip64_stored_size(extra: bytes, has_size: bool) -> int | None:
    """The compressed size in a local header's zip64 extra field (after the inflated size
    when that is there too)."""
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<HH", extra, at)
        if kind == _ZIP64_EXTRA:
            offset = at + 4 + (8 if has_size else 0)
            if offset + 8 <= at + 4 + length <= len(extra):
                return int(struct.unpack_from("<Q", extra, offset)[0])
            return None
        at += 4 + length
    return None


def _open_archive(path: str, mode: Mode) -> int:
    flags = (
        (os.O_RDWR if mode == "r+" else os.O_RDONLY) | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
    )
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ENOENT:
            raise MissingFileError(f"no archive at {path!r}; check the path") from None
        if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and mode == "r+":
            msg = (
                f"{path!r} cannot be opened for writing ({os.strerror(error.errno)}), and "
                "mode='r+' writes through to it; load it without mode='r+'"
            )
            failure = FilePermissionError(msg)
            failure.errno = error.errno
            raise failure from None
        raise
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        raise NotAFileError(f"{path!r} is not a regular file; an archive is a zip file")
    return fd
