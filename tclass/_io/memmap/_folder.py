"""Where the reader finds a saved tree's files: a folder on disk, or an archive.

The reader (``_read.py``) walks a tree of :class:`Folder` objects and asks each for its
small files (``meta.json``, value files), its sub-folders, its entries and its leaves.
Two kinds answer:

* :class:`DirFolder`, a folder on disk held by its descriptor: every file and sub-folder
  is opened relative to it with ``O_NOFOLLOW``, so a symlink anywhere below the root is
  refused rather than followed, and a folder swapped by a concurrent save is read whole,
  old or new. Every file is opened non-blocking (a FIFO cannot hang the open) and
  checked with ``fstat`` before anything is read or mapped: small files must be regular
  files of at most ``MAX_FILE_BYTES``; a leaf file must hold at least the bytes its
  ``meta.json`` says, and only those are mapped. Nothing is created, grown, truncated or
  written.
* :class:`ArchiveFolder`, a folder inside a ``.tdz`` archive (see ``_zip.py``): the same
  questions answered from the archive's checked index, leaves as views into its mapping.
"""

from __future__ import annotations

import errno
import os
import stat
import time
import zipfile
from collections.abc import Callable
from typing import NamedTuple, NoReturn

import torch

from tclass._core._memmap import check_file_size, map_opened_file
from tclass._core._memmap_args import Mode
from tclass._io.memmap._format import MAX_FILE_BYTES
from tclass._io.memmap._zip import Archive, is_truncated_zip
from tclass.errors import (
    FilePermissionError,
    MetadataError,
    MissingFileError,
    NotAFileError,
    UnsafePathError,
)

__all__ = ["ArchiveFolder", "DirFolder", "FileFacts", "Folder", "open_root"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
_FILE_FLAGS = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
# How a leaf is opened for each load mode (written through unless mode="r").
_LEAF_FLAGS = {
    None: os.O_RDWR | _FILE_FLAGS,
    "r+": os.O_RDWR | _FILE_FLAGS,
    "r": os.O_RDONLY | _FILE_FLAGS,
}
# Errors of an O_RDWR open that a read-only open may not get: fall back to a private map.
_READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ETXTBSY})
_SWAP_WAITS = 50  # 20 ms waits for a folder a save has moved aside (no atomic exchange)
_SIZE_HINT = (
    "The file does not match its meta.json: the folder is damaged or was changed after saving"
)
_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
}


class FileFacts(NamedTuple):
    """What ``python -m tclass info`` shows of a leaf's file."""

    size: int  # bytes in the file (or the archive entry)
    disk_bytes: int  # bytes allocated on disk (a sparse file takes almost none)
    identity: tuple[object, ...]  # the same for two names of one file (hard links)


class Folder:
    """A folder of a saved tree, as the reader sees it. ``path`` names it in messages;
    ``rel`` is its path inside the tree (``""`` at the root)."""

    path: str
    rel: str

    def child_path(self, name: str) -> str:
        return f"{self.path}/{name}"  # path is absolute and normalised; names have no "/"

    def exists(self, name: str) -> bool:
        """Whether ``name`` is there (a file or a folder; a link counts, to be refused)."""
        raise NotImplementedError

    def read_small(self, name: str, what: str) -> bytes:
        """The bytes of a meta.json or value file: a regular file of at most
        ``MAX_FILE_BYTES`` (``what`` says what it holds, for messages)."""
        raise NotImplementedError

    def check_file(self, name: str, what: str) -> int:
        """The size of the file ``name``, which must be there (and not be a link)."""
        raise NotImplementedError

    def folder(self, name: str, what: str) -> Folder:
        """The sub-folder ``name`` (close it when done)."""
        raise NotImplementedError

    def names(self) -> list[str]:
        """The names of the entries of this folder."""
        raise NotImplementedError

    def check_leaf(
        self,
        name: str,
        what: str,
        dtype: torch.dtype,
        shape: list[int],
        seen: Callable[[FileFacts], None] | None = None,
    ) -> None:
        """Checks that the leaf file ``name`` holds at least ``dtype x shape`` bytes,
        without mapping it; ``seen`` gets the file's facts first (even if it is short)."""
        raise NotImplementedError

    def map_leaf(
        self, name: str, what: str, dtype: torch.dtype, shape: list[int], mode: Mode | None
    ) -> torch.Tensor:
        """The leaf file ``name`` as a tensor of ``dtype`` and ``shape``, mapped as
        ``mode`` says (see ``load_memmap``)."""
        raise NotImplementedError

    def may_write(self) -> bool:
        """Whether changes to a loaded node may go to this folder (write-through)."""
        return False

    def replaced(self) -> bool:
        """Whether the path now names another tree than the one being read."""
        return False

    def close(self) -> None:
        raise NotImplementedError


# --- a folder on disk ----------------------------------------------------------------------------


class DirFolder(Folder):
    """A folder on disk, held open by its descriptor ``fd``."""

    def __init__(self, fd: int, path: str, rel: str = "") -> None:
        self.fd, self.path, self.rel = fd, path, rel

    def exists(self, name: str) -> bool:
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def open_at(self, name: str, flags: int, what: str) -> int:
        """A descriptor of ``name``, opened without following a link."""
        try:
            return os.open(name, flags | _FILE_FLAGS, dir_fd=self.fd)
        except OSError as error:
            path = self.child_path(name)
            is_dir_open = flags & os.O_DIRECTORY
            if error.errno == errno.ELOOP or (error.errno == errno.ENOTDIR and is_dir_open):
                if os.path.islink(path):
                    msg = (
                        f"{path!r} is a symlink; a saved folder holds no links (they may lead "
                        "outside it)"
                    )
                    raise UnsafePathError(msg) from None
            if error.errno == errno.EISDIR:  # a leaf opened for writing
                _raise_not_regular(path, stat.S_IFDIR, what)
            if error.errno == errno.ENOENT:
                msg = f"{path!r} is missing ({what}); the folder is incomplete or damaged"
                raise MissingFileError(msg) from None
            if error.errno == errno.ENOTDIR:
                msg = f"{path!r} should be a folder ({what}) but is a file"
                raise MetadataError(msg) from None
            raise

    def check_file(self, name: str, what: str) -> int:
        fd = self.open_at(name, os.O_RDONLY, what)
        try:
            return os.fstat(fd).st_size
        finally:
            os.close(fd)

    def folder(self, name: str, what: str) -> DirFolder:
        fd = self.open_at(name, _DIR_FLAGS, what)
        return DirFolder(fd, self.child_path(name), f"{self.rel}/{name}" if self.rel else name)

    def names(self) -> list[str]:
        return os.listdir(self.fd)

    def read_small(self, name: str, what: str) -> bytes:
        try:  # O_NONBLOCK: a FIFO does not block the open, and fstat then refuses it
            fd = os.open(name, os.O_RDONLY | _FILE_FLAGS, dir_fd=self.fd)
        except OSError:
            self._refuse_special(name, what)  # a socket cannot be opened: say what it is
            fd = self.open_at(name, os.O_RDONLY, what)  # or raise as open_at words it
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                _raise_not_regular(self.child_path(name), status.st_mode, what)
            _check_small(self, name, status.st_size, what)
            # One read of the known size, one byte more to see a file that grew (4 system
            # calls with the open, the fstat and the close; a Python file object adds 4
            # more). A regular file reads whole unless it is shorter than fstat said.
            data = os.read(fd, status.st_size + 1)
            while len(data) < status.st_size:  # shrank, or a partial read: read the rest
                more = os.read(fd, status.st_size + 1 - len(data))
                if not more:
                    break
                data += more
        finally:
            os.close(fd)
        if len(data) > status.st_size:
            raise MetadataError(
                f"{self.child_path(name)!r} grew while it was read; another program is writing "
                "into the folder"
            )
        return data

    def _refuse_special(self, name: str, what: str) -> None:
        """Raises NotAFileError if ``name`` is there but is neither a regular file nor a
        link (which the caller's open refuses in its own words)."""
        try:
            status = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except OSError:
            return
        if not stat.S_ISREG(status.st_mode) and not stat.S_ISLNK(status.st_mode):
            _raise_not_regular(self.child_path(name), status.st_mode, what)

    def check_leaf(
        self,
        name: str,
        what: str,
        dtype: torch.dtype,
        shape: list[int],
        seen: Callable[[FileFacts], None] | None = None,
    ) -> None:
        fd = self.open_at(name, os.O_RDONLY, what)
        try:
            if seen is not None:
                status = os.fstat(fd)
                seen(
                    FileFacts(
                        status.st_size, status.st_blocks * 512, (status.st_dev, status.st_ino)
                    )
                )
            check_file_size(fd, self.child_path(name), dtype, shape, _SIZE_HINT, longer_ok=True)
        finally:
            os.close(fd)

    def map_leaf(
        self, name: str, what: str, dtype: torch.dtype, shape: list[int], mode: Mode | None
    ) -> torch.Tensor:
        try:  # the common case first: this runs per leaf
            fd, opened = os.open(name, _LEAF_FLAGS[mode], dir_fd=self.fd), mode or "r+"
        except OSError as error:
            fd, opened = self._open_leaf_as(name, what, mode, error)
        try:
            tensor: torch.Tensor = map_opened_file(
                fd, f"{self.path}/{name}", dtype, shape, opened, _SIZE_HINT
            )
        finally:
            os.close(fd)
        return tensor

    def _open_leaf_as(
        self, name: str, what: str, mode: Mode | None, error: OSError
    ) -> tuple[int, Mode]:
        """The leaf file opened for ``mode`` when the first try failed with ``error``:
        read-only and mapped copy-on-write when this process may not write it (unless
        ``mode="r+"``, which must write through); any other failure as open_at says."""
        if mode == "r" or error.errno not in _READ_ONLY_ERRNOS:
            return self.open_at(name, os.O_RDONLY if mode == "r" else os.O_RDWR, what), mode or "r+"
        if mode == "r+":
            path = self.child_path(name)
            msg = (
                f"{path!r} cannot be opened for writing ({os.strerror(error.errno or 0)}), and "
                "mode='r+' maps every file shared, writes reaching the file. Load with "
                "mode='r' (copy-on-write: writes stay in memory) or mode=None (each file "
                "shared if writable)"
            )
            failure = FilePermissionError(msg)
            failure.errno = error.errno
            raise failure from None
        return self.open_at(name, os.O_RDONLY, what), "r"

    def may_write(self) -> bool:
        return os.access(".", os.W_OK, dir_fd=self.fd)  # the folder held, no path walk

    def replaced(self) -> bool:
        try:
            return os.stat(self.path).st_ino != os.fstat(self.fd).st_ino
        except OSError:
            return True

    def close(self) -> None:
        os.close(self.fd)


def _check_small(folder: Folder, name: str, size: int, what: str) -> None:
    if size > MAX_FILE_BYTES:
        msg = (
            f"{folder.child_path(name)!r} ({what}) is {size} bytes: a meta.json or value "
            f"file larger than {MAX_FILE_BYTES} bytes ({MAX_FILE_BYTES >> 20} MiB) is refused, "
            "as it would be read whole. tclass never writes one; the folder is damaged or crafted"
        )
        raise MetadataError(msg)


def _raise_not_regular(path: str, mode: int, what: str) -> NoReturn:
    kind = _KINDS.get(stat.S_IFMT(mode), "a special file")
    msg = (
        f"{path!r} should be a regular file ({what}) but is {kind}; the folder is damaged or "
        "crafted"
    )
    raise NotAFileError(msg)


# --- a folder inside an archive ------------------------------------------------------------------


class ArchiveFolder(Folder):
    """The folder ``rel`` of an open archive (the root, ``""``, closes the archive)."""

    def __init__(self, archive: Archive, rel: str = "") -> None:
        self.archive, self.rel = archive, rel
        self.path = archive.where(rel)

    def child_path(self, name: str) -> str:
        return self.archive.where(self._name(name))

    def _name(self, name: str) -> str:
        return f"{self.rel}/{name}" if self.rel else name

    def exists(self, name: str) -> bool:
        return name in self.archive.children.get(self.rel, ())

    def read_small(self, name: str, what: str) -> bytes:
        entry = self._name(name)
        if not self.archive.is_file(entry):
            self._missing(name, what)
        _check_small(self, name, self.archive.entries[entry].size, what)
        return self.archive.read(entry, MAX_FILE_BYTES)

    def check_file(self, name: str, what: str) -> int:
        entry = self._name(name)
        if not self.archive.is_file(entry):
            self._missing(name, what)
        return self.archive.entries[entry].size

    def folder(self, name: str, what: str) -> ArchiveFolder:
        entry = self._name(name)
        if not self.archive.is_folder(entry):
            if self.archive.is_file(entry):
                raise MetadataError(
                    f"{self.child_path(name)!r} should be a folder ({what}) but is a file"
                )
            self._missing(name, what)
        return ArchiveFolder(self.archive, entry)

    def names(self) -> list[str]:
        return sorted(self.archive.children.get(self.rel, ()))

    def check_leaf(
        self,
        name: str,
        what: str,
        dtype: torch.dtype,
        shape: list[int],
        seen: Callable[[FileFacts], None] | None = None,
    ) -> None:
        entry = self._name(name)
        if not self.archive.is_file(entry):
            self._missing(name, what)
        if seen is not None:
            facts = self.archive.entries[entry]
            seen(FileFacts(facts.size, facts.stored_size, (self.archive.path, entry)))
        self.archive.check_size(entry, dtype, shape)

    def map_leaf(
        self, name: str, what: str, dtype: torch.dtype, shape: list[int], mode: Mode | None
    ) -> torch.Tensor:
        entry = self._name(name)
        if not self.archive.is_file(entry):
            self._missing(name, what)
        return self.archive.tensor(entry, dtype, shape)

    def _missing(self, name: str, what: str) -> NoReturn:
        msg = f"{self.child_path(name)!r} is missing ({what}); the archive is incomplete or damaged"
        raise MissingFileError(msg)

    def close(self) -> None:
        if not self.rel:
            self.archive.close()


# --- the root ------------------------------------------------------------------------------------


def open_root(root: str, mode: Mode | None = None) -> Folder:
    """The saved tree at ``root``: a folder (waiting out a save between its two renames on
    systems without an atomic exchange), or an archive file."""
    for attempt in range(_SWAP_WAITS + 1):
        try:
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # may be a link
            return DirFolder(fd, root)
        except FileNotFoundError:
            old = _swapped_out(root)
            if old is None or attempt == _SWAP_WAITS:
                msg = f"no saved folder at {root!r}; check the path"
                if old is not None:
                    msg += (
                        ". A save was interrupted while replacing it: the previous "
                        f"data is in {old!r}"
                    )
                raise MissingFileError(msg) from None
            time.sleep(0.02)  # a save without atomic exchange is between its two renames
        except NotADirectoryError:
            if not zipfile.is_zipfile(root) and not is_truncated_zip(root):
                msg = (
                    f"{root!r} is a file but not an archive (not a memory-mapped tensordict); "
                    "load_memmap reads a folder written by memmap/save, or a .tdz archive"
                )
                raise NotAFileError(msg) from None
            return ArchiveFolder(Archive(root, mode))
    raise AssertionError("unreachable")


def _swapped_out(root: str) -> str | None:
    """The old tree a save moved aside (systems without atomic exchange), if any."""
    parent, name = os.path.split(root)
    prefix = f".{name}.tclass-staging-"
    try:
        found = [
            entry
            for entry in os.listdir(parent)
            if entry.startswith(prefix) and entry.endswith("-old")
        ]
    except OSError:
        return None
    return os.path.join(parent, found[0]) if found else None
