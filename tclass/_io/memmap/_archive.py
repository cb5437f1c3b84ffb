"""Single-file archives of saved trees (``.tdz``): saving a collection into one, and
converting between a saved folder and an archive (``pack_memmap`` / ``unpack_memmap``).

A save into an archive plans the tree as a folder save does (``_plan.py``: the same
``meta.json`` files, the same checks of what can be saved), then streams each file into a
new archive beside the target (``_zip.ArchiveWriter``) straight from the tensors' memory,
and renames it over the target. The collection returned is rebuilt over the archive's
mapping: each leaf a view into the file (copy-on-write after ``save``/``memmap``,
shared after ``memmap_like``/``memmap_``, whose writes reach the archive, as the peer's).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from tclass._core._memmap_args import Mode
from tclass._io.memmap._folder import ArchiveFolder
from tclass._io.memmap._format import MAX_FILE_BYTES, META
from tclass._io.memmap._plan import plan_tree
from tclass._io.memmap._read import validate_folder
from tclass._io.memmap._write import StagedTree, final_root, sync_path
from tclass._io.memmap._zip import (
    ARCHIVE_SUFFIX,
    Archive,
    ArchiveWriter,
    check_target,
    compression_type,
    entry_order,
    is_archive,
    require_archive,
    tensor_chunks,
)
from tclass.errors import FileFormatError, FolderWriteError, UnsafePathError

__all__ = [
    "is_memmap_archive",
    "pack_memmap",
    "refresh_archive_checksums",
    "save_archive",
    "unpack_memmap",
    "wants_archive",
]

PathLike = str | os.PathLike[str]
_ZEROS = bytes(1 << 20)


def wants_archive(prefix: PathLike | None, archive: bool | None) -> bool:
    """Whether a save into ``prefix`` writes an archive: ``archive=True``, or a ``.tdz``
    suffix unless ``archive=False``."""
    if prefix is None or archive is False:
        return False
    return archive is True or os.fspath(prefix).endswith(ARCHIVE_SUFFIX)


def save_archive(
    node: Any,
    prefix: PathLike,
    *,
    like: bool,
    existsok: bool,
    allow_pickle: bool,
    durable: bool,
    compression: str | int | None,
    mode: Mode | None = None,
) -> Any:
    """Write ``node`` into the archive ``prefix`` and return it rebuilt over the archive
    (leaves mapped as ``mode`` says: ``"r+"`` shares the file, else copy-on-write).
    ``like``: the payloads are zeros (a preallocated archive, mapped shared)."""
    method = compression_type(compression)
    target = os.path.abspath(os.fspath(prefix))
    check_target(target, existsok)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    plan, rebuild = plan_tree(
        node, target, copy_existing=True, like=like, allow_pickle=allow_pickle
    )
    sources: dict[str, Any] = dict(plan.files)
    leaves = [leaf for leaf in plan.leaves if leaf.tensor.numel()]  # empty leaves: no file
    sources.update((leaf.path, leaf.tensor) for leaf in leaves)
    kept = {leaf.path for leaf in leaves if leaf.keep}  # written with their data by like
    writer = ArchiveWriter(target, method)
    try:
        for name in entry_order(sources):
            source = sources[name]
            if isinstance(source, bytes):
                writer.add(name, [source], len(source), payload=False)
            else:
                size = source.numel() * source.element_size()
                blank = like and name not in kept
                chunks = _zeros(size) if blank else tensor_chunks(source.cpu())
                writer.add(name, chunks, size, payload=True)
        writer.commit(durable)
    except BaseException:
        writer.abort()
        raise
    if durable:
        sync_path(os.path.dirname(target))
    with Archive(target, "r+" if like else mode) as archive:
        written = [
            archive.tensor(leaf.path, leaf.tensor.dtype, list(leaf.tensor.shape))
            if leaf.tensor.numel()
            else torch.empty(leaf.tensor.shape, dtype=leaf.tensor.dtype)
            for leaf in plan.leaves
        ]
    return rebuild(written)


def _zeros(size: int) -> Iterator[bytes]:
    while size > 0:
        chunk = _ZEROS[: min(size, len(_ZEROS))]
        size -= len(chunk)
        yield chunk


def is_memmap_archive(path: PathLike) -> bool:
    """Whether ``path`` is an archive written by ``save(...".tdz")`` or
    :func:`pack_memmap`: a zip file with a ``meta.json`` at its top. A folder, a missing
    path or another file gives False."""
    return is_archive(path)


def pack_memmap(
    prefix: PathLike,
    archive_path: PathLike,
    *,
    compression: str | int | None = None,
    compresslevel: int | None = None,
) -> Path:
    """Pack a saved folder into a single-file archive (``unpack_memmap`` or ``unzip``
    gives the folder back).

    Args:
        prefix: a folder written by ``memmap`` / ``save``.
        archive_path: the archive to write, outside ``prefix``; an existing file is
            replaced (the new archive is written beside it, then renamed over it).
        compression: how tensor payloads are compressed: None or ``"stored"`` (the
            default: payloads are mapped, not copied, when loaded), ``"deflate"``,
            ``"bzip2"``, ``"lzma"``, or a ``zipfile`` constant.
        compresslevel: the compression level, as ``zipfile`` takes it.

    Returns:
        ``archive_path`` as a ``Path``.

    Raises:
        ValueError: ``prefix`` holds no ``meta.json``, or ``archive_path`` lies inside it.
        UnsafePathError: the folder holds a symlink (it could lead outside it).
    """
    source = os.path.abspath(os.fspath(prefix))
    target = os.path.abspath(os.fspath(archive_path))
    method = compression_type(compression)
    if not os.path.isfile(os.path.join(source, META)):
        msg = f"{source!r} holds no {META}: pack_memmap packs a folder written by memmap/save"
        raise FileFormatError(msg)
    if os.path.realpath(target).startswith(os.path.realpath(source) + os.sep):
        msg = f"the archive {target!r} must be written outside the folder it packs, {source!r}"
        raise FileFormatError(msg)
    check_target(target, existsok=True)
    files = entry_order(_folder_files(source))
    writer = ArchiveWriter(target, method, compresslevel)
    try:
        for name in files:
            fd = os.open(os.path.join(source, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as stream:
                size = os.fstat(stream.fileno()).st_size
                chunks = iter(lambda: stream.read(1 << 24), b"")  # noqa: B023 (used at once)
                writer.add(name, chunks, size, payload=name.endswith(".memmap"))
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    return Path(archive_path)


def _folder_files(root: str) -> list[str]:
    """The relative paths of a folder's files; a link or a special file is refused."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise UnsafePathError(f"{path!r} is a symlink; a saved folder holds no links")
            if name in files and not stat.S_ISREG(mode):
                raise FileFormatError(f"{path!r} is not a regular file; it cannot be packed")
        found.extend(os.path.relpath(os.path.join(folder, name), root) for name in files)
    return [path.replace(os.sep, "/") for path in found]


def unpack_memmap(archive_path: PathLike, prefix: PathLike) -> Path:
    """Extract an archive into the folder ``prefix`` (the inverse of :func:`pack_memmap`):
    the archive's files are written into a new folder beside ``prefix`` and swapped into
    place, as a save is, so that a folder already there (an earlier save or unpack) is
    replaced whole and a reader never sees a mix.

    Nothing is inflated before the whole archive is checked as loading checks it: an
    entry that records more bytes than its leaf's dtype and shape need (a zip bomb), a
    compressed non-leaf entry past the small-file limit, or more bytes in all than the destination
    has free is refused first; an entry inflating past its recorded size stops there.

    Raises:
        ValueError: ``archive_path`` is not an archive (see :func:`is_memmap_archive`), is
            truncated, or does not load (``FileFormatError``, ``MetadataError``...).
        UnsafePathError: an entry's name would leave the folder (nothing is written).
        FolderWriteError: the destination has too little space (nothing is written).
    """
    source = os.path.abspath(os.fspath(archive_path))
    require_archive(source)
    root, old_tree = final_root(prefix)
    with Archive(source) as archive:
        _check_unpack(archive, root)
        _extract(archive, root, old_tree)
    return Path(prefix)


def _check_unpack(archive: Archive, root: str) -> None:
    """What ``unpack_memmap`` checks before it inflates anything: the tree as loading
    checks it (each leaf's recorded size against its dtype and shape, a compressed one to
    less than a page more), every other compressed entry as a small file, and the total
    against the space free where it goes."""
    validate_folder(ArchiveFolder(archive), None, allow_pickle=True)  # nothing is unpickled
    for name, entry in archive.entries.items():
        compressed = entry.method != zipfile.ZIP_STORED  # (a stored one is in the file)
        if compressed and name not in archive.leaves and entry.size > MAX_FILE_BYTES:
            msg = (
                f"{archive.where(name)!r} records {entry.size} bytes once inflated, but it is no "
                f"leaf of the saved tree, and other files (meta.json, value files) hold at most "
                f"{MAX_FILE_BYTES} bytes; nothing was inflated: the archive is crafted or "
                "damaged (unzip extracts it, if you trust it)"
            )
            raise FileFormatError(msg)
    total = sum(entry.size for entry in archive.entries.values())
    free = shutil.disk_usage(_existing_parent(root)).free
    if total > free:
        msg = (
            f"unpacking {archive.path!r} writes {total} bytes, but {os.path.dirname(root)!r} has "
            f"{free} bytes free; nothing was written. Free some space or unpack elsewhere"
        )
        failure = FolderWriteError(msg)
        failure.errno = errno.ENOSPC
        raise failure


def _existing_parent(path: str) -> str:
    while not os.path.isdir(path):
        path = os.path.dirname(path)
    return path


def _extract(archive: Archive, root: str, old_tree: bool) -> None:
    with StagedTree(root, old_tree) as staging:
        for folder in sorted(archive.children):
            if folder:
                os.makedirs(os.path.join(staging, folder), exist_ok=True)
        for name in archive.entries:
            fd = os.open(
                os.path.join(staging, name),
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o666,
            )
            with os.fdopen(fd, "wb") as stream:
                for chunk in archive.chunks(name):
                    stream.write(chunk)


_CENTRAL = struct.Struct("<4s6H3I5H2I")  # the fixed part of a central directory record
_CENTRAL_SIGNATURE = b"PK\x01\x02"
_CRC_IN_LOCAL = 14  # where a local header keeps its entry's CRC-32
_CRC_IN_CENTRAL = 16  # and where a central directory record keeps it


def refresh_archive_checksums(archive_path: PathLike) -> Path:
    """Recompute the CRC-32 of each stored (uncompressed) entry of an archive, in place.

    Writes through a collection loaded with ``mode="r+"`` (or made by ``memmap_`` /
    ``memmap_like`` into a ``.tdz``) reach the archive's tensor payloads without updating
    the checksums the zip format keeps (loading does not check them); tools that do
    (``unzip``, ``zipfile``, :func:`unpack_memmap`) then report those entries as damaged.
    Only the checksum fields change; compressed entries cannot have been written in place.

    Returns:
        ``archive_path`` as a ``Path``.

    Raises:
        FileFormatError: (a ``ValueError``) ``archive_path`` is not an archive, or its
            central directory is damaged.
    """
    source = os.fspath(archive_path)
    require_archive(source)
    with Archive(source) as archive, open(source, "r+b") as stream:
        with zipfile.ZipFile(stream) as index:
            infos, start = index.infolist(), index.start_dir
        central = start
        for info in infos:
            stream.seek(central)
            record = stream.read(_CENTRAL.size)
            if len(record) != _CENTRAL.size or record[:4] != _CENTRAL_SIGNATURE:
                raise FileFormatError(f"{source!r}: its central directory is damaged")
            here = central
            central += _CENTRAL.size + sum(_CENTRAL.unpack(record)[10:13])
            entry = archive.entries.get(info.filename)
            if entry is None or entry.method != zipfile.ZIP_STORED:
                continue
            crc = 0
            for chunk in archive.chunks(info.filename):
                crc = zlib.crc32(chunk, crc)
            if crc != entry.crc:
                for position in (info.header_offset + _CRC_IN_LOCAL, here + _CRC_IN_CENTRAL):
                    stream.seek(position)
                    stream.write(struct.pack("<I", crc))
    return Path(archive_path)
