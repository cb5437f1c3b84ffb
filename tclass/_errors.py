"""Every exception tclass raises on purpose.

One base, :class:`TclassError`, so ``except tclass.TclassError`` catches all of them.
Each subclass also derives from the builtin a caller would naturally catch and, where
it differs, from the builtin the peer library (``tensordict``) raises in the same
situation, so code written against the peer keeps working. For instance a batch-size
mismatch is a ``ValueError`` (wrong argument) and a ``RuntimeError`` (what the peer
raises).

Messages say what is wrong, name the key, file or shape involved, and how to fix it.
"""

from __future__ import annotations

__all__ = [
    "BatchSizeError",
    "DeviceError",
    "DimError",
    "EntryTypeError",
    "FileConflictError",
    "FileFormatError",
    "InvalidKeyError",
    "KeyConflictError",
    "KeyNotFoundError",
    "LockedError",
    "MissingFileError",
    "NotAFileError",
    "ShapeError",
    "StackError",
    "TclassError",
    "UnpicklableError",
]


class TclassError(Exception):
    """Base class of every error raised by tclass."""

    def __str__(self) -> str:
        # KeyError and OSError format their message differently (KeyError quotes it);
        # every tclass error prints its message as written.
        return BaseException.__str__(self)


# --- keys and entries -----------------------------------------------------------------


class KeyNotFoundError(TclassError, KeyError):
    """A key is not in the container."""


class KeyConflictError(TclassError, KeyError):
    """A key that must be new is already taken."""


class InvalidKeyError(TclassError, TypeError, KeyError):
    """A key is not a string or a non-empty tuple of strings (the peer raises KeyError)."""


class EntryTypeError(TclassError, TypeError):
    """A value cannot be stored in a container (not a tensor, collection or array-like)."""


class LockedError(TclassError, RuntimeError):
    """A locked container was asked to add, replace or remove an entry."""


# --- shapes and devices ---------------------------------------------------------------


class BatchSizeError(TclassError, ValueError, RuntimeError):
    """A batch size is malformed, or a value's leading dims do not match it."""


class ShapeError(TclassError, ValueError, RuntimeError):
    """A shape operation (reshape, expand, permute, ...) is invalid for the batch size."""


class DimError(TclassError, IndexError):
    """A batch dimension or an index is out of range for the batch size."""


class StackError(TclassError, ValueError, RuntimeError):
    """Containers given to stack or cat do not have the same keys, classes or shapes."""


class DeviceError(TclassError, ValueError, RuntimeError):
    """A device is malformed or unavailable, or a tensor sits on the wrong device."""


# --- files ----------------------------------------------------------------------------


class MissingFileError(TclassError, FileNotFoundError):
    """A file that should exist does not."""


class NotAFileError(TclassError, IsADirectoryError):
    """A path that should be a regular file is a directory or something else."""


class FileConflictError(TclassError, FileExistsError, RuntimeError):
    """Writing would replace an existing file (or copy a file-backed tensor) unasked."""


class FileFormatError(TclassError, ValueError, RuntimeError):
    """A file disagrees with its metadata (size, dtype, shape); nothing was changed."""


class UnpicklableError(TclassError, TypeError):
    """An object cannot be pickled the way it was asked to be."""
