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

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

__all__ = [
    "AppendError",
    "AppendTargetError",
    "ArgumentError",
    "ArgumentValueError",
    "BatchMismatchError",
    "BatchSizeError",
    "BatchSizeTypeError",
    "BufferTypeError",
    "CastError",
    "ClassDefinitionError",
    "ClassMismatchError",
    "ClassResolutionError",
    "ClosedFileError",
    "ConsolidatedFileError",
    "DeviceError",
    "DeviceUnavailableError",
    "DimError",
    "DimNameCountError",
    "DimNameError",
    "DimNameTypeError",
    "DistributedError",
    "DtypeArgumentError",
    "DuplicateArgumentError",
    "EntriesTwiceError",
    "EntryExistsError",
    "EntryReplacedWarning",
    "EntryTypeError",
    "FieldIndexError",
    "FieldSpecError",
    "FieldTypeError",
    "FileBusyError",
    "FileConflictError",
    "FileFormatError",
    "FilePermissionError",
    "FolderWriteError",
    "FrozenInstanceError",
    "GradError",
    "HeterogeneousEntryError",
    "IgnoredKeywordWarning",
    "IgnoredValuesWarning",
    "InPlaceKernelError",
    "InPlaceKeysError",
    "InPlaceWriteError",
    "IndexTypeError",
    "InvalidKeyError",
    "KeyConflictError",
    "KeyNotFoundError",
    "KeyRenameError",
    "KeyThroughTensorError",
    "LockedError",
    "MemberKeyError",
    "MetaTensorError",
    "MetadataError",
    "MissingDependencyError",
    "MissingFileError",
    "MissingFolderError",
    "PickledFileMissingError",
    "MixedEntryError",
    "ModuleStructureError",
    "NestedLayoutError",
    "NamedTupleKeyError",
    "NoneFieldError",
    "NotAFileError",
    "NotAFolderError",
    "NotCloseError",
    "NotAMappingError",
    "NotConsolidatedError",
    "NotProvidedError",
    "NotSavedError",
    "NotSerializableError",
    "NotSerializableWriteError",
    "OperandError",
    "PickleRefusedError",
    "ReadOnlyError",
    "ReadOnlyFileError",
    "ReductionError",
    "ReprParseError",
    "ReservedNameError",
    "SchemaMismatchError",
    "ShapeError",
    "ShardSchemaError",
    "SharedDefaultWarning",
    "SourceTypeError",
    "SpecSyntaxError",
    "StackError",
    "StackKeysError",
    "StackTypeError",
    "StateDictDestinationError",
    "StateDictKeyError",
    "StoreDtypeError",
    "StoreFormatError",
    "StoreShapeError",
    "StructureMismatchError",
    "SubpathError",
    "TclassError",
    "TclassWarning",
    "UnknownArgumentError",
    "UnknownFieldError",
    "UnpicklableError",
    "UnravelKeyError",
    "UnsetFieldError",
    "UnsafePathError",
    "UnsupportedError",
    "UpdateArgumentError",
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


class KeyThroughTensorError(TclassError, KeyError, ValueError):
    """A nested key passes through a tensor, which has no entries (``("obs", "x")`` where
    ``"obs"`` is a tensor). The peer raises KeyError from ``get`` and ValueError from
    ``td[key]``; this is both."""


class KeyConflictError(TclassError, KeyError):
    """A key that must be new is already taken."""


class KeyRenameError(KeyConflictError, ValueError):
    """A renaming of several keys at once (``rename_keys``) that cannot be done: two
    sources with one destination, keys that lie inside one another, a destination that
    is already an entry. A ``ValueError``, as the peer raises."""


class EntryExistsError(KeyConflictError, RuntimeError):
    """A method that makes a new entry (``make_memmap``...) was given a key that is
    already an entry; a ``RuntimeError``, as the peer raises."""


class InvalidKeyError(TclassError, TypeError, KeyError):
    """A key is not a string or a non-empty tuple of strings (the peer raises KeyError)."""


class NamedTupleKeyError(InvalidKeyError, ValueError):
    """``to_namedtuple`` of a collection with a key that cannot be a namedtuple field name
    (``"a-b"``, ``"class"``, ``"0"``); a ``ValueError``, as ``collections.namedtuple``
    raises in the peer."""


class UnravelKeyError(InvalidKeyError, RuntimeError):
    """``unravel_key`` got a key that is not a string or a tuple of strings (the peer
    raises RuntimeError)."""


class NotCloseError(TclassError, AssertionError):
    """``assert_close``: two collections differ in a tensor beyond the tolerances (the
    message names the key)."""


class EntryTypeError(TclassError, TypeError):
    """A value cannot be stored in a container (not a tensor, collection or array-like)."""


class ModuleStructureError(EntryTypeError, KeyError):
    """``to_module``: the collection holds a nested collection where the module has a
    tensor; a ``KeyError``, as the peer raises."""


class NotAMappingError(EntryTypeError, AttributeError):
    """A value given where a mapping of entries is expected (``td.update(3)``,
    ``TensorDictParams(3)``, ``TensorDict.from_module(3)``): a ``TypeError``, and an
    ``AttributeError`` as the peer raises (``'int' object has no attribute 'items'``)."""


class StateDictDestinationError(EntryTypeError, AttributeError):
    """``state_dict(destination=...)`` got a mapping that cannot carry the ``_metadata``
    attribute (a plain ``dict``); a ``TypeError``, and an ``AttributeError`` as the peer
    raises (``'dict' object has no attribute '_metadata'``)."""


class SourceTypeError(EntryTypeError, ValueError):
    """``TensorDict()`` got a source that is neither a mapping nor a collection (a list, a
    tensor), or ``from_dict`` (``from_list``'s items) an iterable that is not a mapping (a
    list, a str); a ``ValueError``, as the peer raises."""


class EntriesTwiceError(EntryTypeError, ValueError):
    """``TensorDict()`` got entries both as ``source`` and as keyword arguments; a
    ``ValueError``, as the peer raises."""


class StateDictKeyError(TclassError, KeyError, RuntimeError):
    """The keys of a state dict and of the collection it is loaded into differ. A
    ``KeyError`` (what the peer raises for a tensorclass) and a ``RuntimeError`` (what it
    raises for a TensorDict)."""


class LockedError(TclassError, RuntimeError):
    """A locked container was asked to add, replace or remove an entry."""


def locked_prefix(kind: str) -> str:
    """The start of a :class:`LockedError`'s message for a collection of class ``kind``:
    the words tensordict uses for every kind (code written for it matches them), then
    the kind when it is not a TensorDict (``Cannot modify locked TensorDict (a
    LazyStackedTensorDict)``)."""
    return "Cannot modify locked TensorDict" + ("" if kind == "TensorDict" else f" (a {kind})")


# --- shapes and devices ---------------------------------------------------------------


class BatchSizeError(TclassError, ValueError, RuntimeError):
    """A batch size is malformed, or a value's leading dims do not match it."""


class BatchSizeTypeError(BatchSizeError, TypeError):
    """A batch size that is not made of ints (``td.batch_size = "x"``, ``[3, None]``): a
    ``TypeError`` too, as the peer's ``torch.Size()`` raises when it is assigned."""


class BatchMismatchError(BatchSizeError):
    """An entry's leading dims differ from the batch size.

    Attributes:
        key: the entry's key (a string, or a tuple for a nested entry).
        shape: the entry's shape.
        batch_size: the batch size it had to start with.
    """

    def __init__(self, key: object, shape: Sequence[int], batch_size: Sequence[int]) -> None:
        if type(key) is tuple and len(key) == 1:  # a top-level key reached by a walk: 'a'
            key = key[0]
        self.key = key
        self.shape = tuple(shape)
        self.batch_size = tuple(batch_size)
        super().__init__(
            f"batch dimension mismatch for key {key!r}: its shape {_dims(shape)} does not "
            f"start with the batch size {_dims(batch_size)}. Every entry's leading dims "
            "must equal the batch size; reshape the value or change batch_size"
            + (_SCALAR_HINT if not self.shape and self.batch_size else "")
        )

    def __reduce__(self) -> tuple[type[BatchMismatchError], tuple[object, ...]]:
        return (type(self), (self.key, self.shape, self.batch_size))

    def under(self, parent_key: str) -> BatchMismatchError:
        """The same mismatch, named from the collection holding this one at ``parent_key``."""
        path = self.key if isinstance(self.key, tuple) else (self.key,)
        return BatchMismatchError((parent_key, *path), self.shape, self.batch_size)


_SCALAR_HINT = (
    ". A Python scalar is stored as a 0-dim tensor: expand it to the batch size "
    "(torch.full(batch_size, value)), or keep it as one Python value with "
    "set_non_tensor(key, value) or NonTensorData(value)"
)


def _dims(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(size) for size in shape) + "]"


class ShapeError(TclassError, ValueError, RuntimeError):
    """A shape operation (reshape, expand, permute, ...) is invalid for the batch size."""


class DimError(TclassError, IndexError, ValueError, RuntimeError):
    """A batch dimension or an index is out of range for the batch size. An
    ``IndexError``, and a ``ValueError`` and a ``RuntimeError`` too: the peer raises
    each of them for a dim out of range, depending on the operation (``transpose``,
    ``permute``: ValueError; ``unsqueeze``, ``gather``, ``narrow``: RuntimeError)."""


class IndexTypeError(DimError, TypeError):
    """An index of a type that cannot index a batch (a set, a string, a float): torch's
    ``IndexError`` for a tensor, and a ``TypeError`` too, as the peer raises for a lazy
    stack ("Invalid index"). Also iteration over a collection with no batch dims (the
    peer's ``TypeError``, as torch's for a 0-d tensor)."""


class DimNameError(TclassError, ValueError, RuntimeError):
    """Names of batch dims are malformed (a wrong count, a repeat) or contradict the names
    a dim already has. The peer raises ValueError for the first and RuntimeError for the
    second; this is both."""


class DimNameTypeError(DimNameError, TypeError):
    """A name of a batch dim is not a string (or None), or names were given as something
    other than a sequence of them (``names=5``); a ``TypeError``, as the peer raises for
    names that are not a sequence."""


class DimNameCountError(DimNameError, IndexError):
    """Names were given for another number of dims than the batch has (``names=``,
    ``refine_names``, ``rename``). An ``IndexError`` too, as the peer raises there (and
    for a lazy stack's names)."""


class InPlaceWriteError(TclassError, ValueError, RuntimeError):
    """An in-place write into an entry failed, or would have: an expanded or overlapping
    tensor, a shape or dtype that does not fit (in-place math checks every entry before
    writing any, and then changes nothing); the message names the entry."""


class NoneFieldError(KeyNotFoundError, InPlaceWriteError):
    """An in-place write (``set_``) into a tensorclass field that holds ``None``: there is
    no tensor to copy into. The peer raises ``KeyError``, or its in-place write error (a
    ``ValueError``) once the ``None`` is stored as an entry (after
    ``update(x.to_dict())``); this is both."""


class ReadOnlyError(InPlaceWriteError):
    """An in-place write into a tensor that is a read-only view of shared memory (a
    collection unpickled over a read-only buffer, such as Ray's object store, whose
    memory every reader shares): nothing was written; ``.clone()`` gives a writable copy.
    A ``ValueError`` (as numpy's read-only arrays raise) and a ``RuntimeError``."""


class InPlaceKernelError(InPlaceWriteError, NotImplementedError):
    """In-place math torch has no kernel for on an entry's dtype (``abs_`` of a bool
    tensor, a bitwise operation on floats), or a write at an advanced index into a dtype
    it has no ``index_put`` / ``masked_fill`` for (``td[mask] = 0`` into ``uint16``): a
    ``NotImplementedError``, as torch raises; nothing was changed."""


class StackError(TclassError, ValueError, RuntimeError):
    """Containers given to stack or cat do not have the same keys, classes or shapes."""


class StackKeysError(StackError, KeyError):
    """Containers given to stack or cat do not have the same keys (the message names the
    missing and extra ones). A ``KeyError`` too, as the peer's ``cat`` raises."""


class StackTypeError(StackError, TypeError):
    """Containers given to stack or cat are of unrelated types (records of two classes
    neither of which subclasses the other, or a record and a TensorDict), or a member
    given to a lazy stack (``lazy_stack``, ``insert``, ``append``) is not a collection:
    also a ``TypeError``, as the peer raises."""


class HeterogeneousEntryError(StackError):
    """The members of a lazy stack differ where one dense value is needed: an entry's
    shapes, an entry present in only some members, or an operation mixing members."""


class MemberKeyError(HeterogeneousEntryError, KeyError):
    """An entry read from a lazy stack whose members do not all hold it (``lazy["y"]``
    where member 0 lacks ``"y"``): also a ``KeyError``, as the peer raises."""


class MixedEntryError(HeterogeneousEntryError, TypeError):
    """An entry of a lazy stack is a tensor, a nested collection or a Python value in
    some members and another of these in others: also a ``TypeError``, as the peer
    raises where member 0 holds a collection there."""


class NestedLayoutError(HeterogeneousEntryError, NotImplementedError):
    """A lazy stack whose members differ in shape densified along another dim than 0 (a
    nested tensor stacks along dim 0 only): also a ``NotImplementedError``, as the
    peer raises."""


class DeviceError(TclassError, ValueError, RuntimeError):
    """A device is malformed or unavailable, or a tensor sits on the wrong device."""


class DeviceUnavailableError(DeviceError, AssertionError):
    """A tensor was to move onto a device this machine does not have (``to("cuda:7")``
    without CUDA or with fewer GPUs): also an ``AssertionError``, as torch raises without
    CUDA, and a ``RuntimeError``, as it raises for a missing GPU."""


class MetaTensorError(DeviceError, NotImplementedError):
    """A meta tensor (shape and dtype, no data) was to be copied onto a real device, as
    on ``set`` into a collection with a device: a ``NotImplementedError``, as torch's."""


# --- files ----------------------------------------------------------------------------


class MissingFileError(TclassError, FileNotFoundError):
    """A file that should exist does not."""


class MissingFolderError(MissingFileError, RuntimeError):
    """A new file's directory does not exist (``MemoryMappedTensor.empty(shape,
    filename=...)``). A ``RuntimeError`` too, as the peer raises there."""


class PickledFileMissingError(MissingFileError, RuntimeError):
    """A pickled memory-mapped tensor (a reference to its file, as pickles of saved
    collections are) is loaded after its file was removed. A ``RuntimeError`` too, as the
    peer raises (torch's "unable to open file")."""


class NotAFileError(TclassError, OSError, ValueError, RuntimeError):
    """A path is not the kind of file asked for: a directory or a FIFO where a regular
    file must be, a file where a folder must be, a file that is not an archive. An
    ``OSError``, as the file system reports these (and what callers of file functions
    catch); a ``ValueError`` and a ``RuntimeError``, as the peer raises them in the same
    situations (``load_memmap`` of a file that is no archive, an archive written over a
    directory: ValueError; a MemoryMappedTensor over a directory: RuntimeError)."""


class NotAFolderError(NotAFileError, NotADirectoryError):
    """A file is where a folder must be: ``memmap(prefix)`` / ``save`` / ``memmap_like``
    into a path that is a file. A ``NotADirectoryError`` too, as the peer raises there."""


class FileConflictError(TclassError, FileExistsError, RuntimeError):
    """Writing would replace an existing file (or copy a file-backed tensor) unasked."""


class FileFormatError(TclassError, ValueError, RuntimeError):
    """A file disagrees with its metadata (size, dtype, shape); nothing was changed."""


class StoreFormatError(FileFormatError, OSError):
    """A file that is not of the store format asked for (``from_h5`` of a file that is not
    HDF5): an ``OSError`` too, as h5py (and so the peer) raises."""


class FolderWriteError(TclassError, OSError):
    """A change to a memory-mapped collection could not be written to its folder (not
    writable, removed...); the collection in memory was left as it was."""


class NotConsolidatedError(TclassError, AttributeError):
    """A record's ``_consolidated`` buffer was read before ``consolidate()`` (an
    ``AttributeError``, so that ``hasattr(record, "_consolidated")`` answers as the peer)."""


class NotSavedError(TclassError, AttributeError, RuntimeError):
    """A method that works on the folder a collection is saved in (``saved_path``,
    ``make_memmap``, ``memmap_refresh_``) was called on one saved nowhere. An
    ``AttributeError`` (``saved_path``) and a ``RuntimeError`` (the rest), as the peer."""


class MetadataError(FileFormatError):
    """A saved folder's ``meta.json`` is malformed or disagrees with the folder: not JSON,
    wrong types, negative or mismatched sizes, an unknown dtype, a lazy-stack member too
    many. The message names the file; nothing was changed."""


class BufferTypeError(MetadataError, TypeError):
    """``from_consolidated`` got something other than a consolidated buffer's file or its
    1-d ``uint8`` tensor (a TensorDict, a float tensor). A ``TypeError`` too, as the peer
    raises for these."""


class UnsafePathError(TclassError, ValueError):
    """A saved folder points outside itself: a symlink, or a key that is a path
    (``/``, ``..``, absolute); or an HDF5 file reads data from another file (an external
    link, raw external storage, a virtual dataset), opened without
    ``allow_external=True``. Nothing is followed and nothing was changed."""


class FilePermissionError(TclassError, PermissionError):
    """A file cannot be opened as asked: ``mode="r+"`` (write-through) on a file this
    process may not write. Load with ``mode="r"`` (copy-on-write) instead."""


class ReadOnlyFileError(FilePermissionError, ValueError, KeyError, RuntimeError):
    """A write into an HDF5 or zarr file opened with ``mode="r"`` (``set``, ``update``,
    ``del_``, an indexed write...): nothing was written. Reopen it with ``mode="r+"``.
    The peer passes h5py's errors on, by the write: an ``OSError`` for an in-place write
    (``set_``, ``td[key] = t``, ``apply_``...; ``PermissionError`` is one), a
    ``ValueError`` for a new key, a ``KeyError`` for replacing or removing one (``set``,
    ``update``, ``del_``, ``pop``, ``rename_key_``), and a ``RuntimeError`` where it checks
    something else first (a new key or ``del`` on a locked one, a value of the wrong
    shape): this error is each of them."""


class SubpathError(TclassError, ValueError, LookupError):
    """``subpath=`` is malformed or names no nested collection of the saved folder (the
    peer raises ValueError). Nothing was changed."""


class ClassMismatchError(TclassError, TypeError):
    """A saved folder holds a record of another class than the one asked to load it
    (``Other.load_memmap`` on a folder a ``Step`` was saved in); nothing is returned.
    The message names both classes and how to load the folder."""


class ClassResolutionError(TclassError, RuntimeError, LookupError):
    """A saved node names a class that is not defined in this process (or is defined
    twice). tclass never imports a module named in a file: import it yourself."""


class PickleRefusedError(TclassError, RuntimeError):
    """Loading would unpickle a value, which can run code; pass ``allow_pickle=True`` if
    the folder comes from a source you trust."""


class NotSerializableError(TclassError, TypeError):
    """A Python value cannot be saved as JSON (and pickling it was not allowed)."""


class ConsolidatedFileError(NotSerializableError, RuntimeError):
    """``consolidate(filename=...)`` cannot describe the collection in the file: a Python
    value that is not JSON, a sub-collection under a key the file's description uses for
    itself. Nothing was written. A ``RuntimeError`` too, as the peer raises."""


class NotSerializableWriteError(NotSerializableError, RuntimeError):
    """A Python value written in place into a collection saved in a folder (which tclass
    writes through to the folder) that cannot be saved as JSON; also a ``RuntimeError``,
    as the peer refuses an in-place write of another value into a memory-mapped
    collection. Nothing was written, in memory or in the folder."""


class UnpicklableError(TclassError, TypeError):
    """An object cannot be pickled the way it was asked to be."""


class ReprParseError(TclassError, ValueError):
    """A string given to ``parse_tensor_dict_string`` is not a collection's repr, or holds
    a field that cannot be rebuilt from its repr (the peer raises ValueError too)."""


class UnsupportedError(TclassError, NotImplementedError):
    """A feature of the peer that tclass does not implement (yet); nothing was changed."""


class InPlaceKeysError(UnsupportedError, ValueError):
    """An in-place rewrite of the keys that a collection cannot make (a
    ``PersistentTensorDict``'s ``flatten_keys(inplace=True)``: its file keeps its groups);
    also a ``ValueError``, as the peer raises. Nothing was changed."""


class StoreShapeError(InPlaceWriteError, TypeError):
    """A tensor that does not broadcast to the rows of an HDF5 file's or zarr store's
    array it is written into; also a ``TypeError``, as the peer's file raises (h5py's
    "Can't broadcast"). Checked before any array is written: nothing was written."""


class StoreDtypeError(UnsupportedError, TypeError):
    """A tensor of a dtype an HDF5 file or zarr store has no type for (bfloat16, the
    float8 dtypes); also a ``TypeError``, as the peer raises. Nothing was written."""


class AppendError(TclassError, ValueError):
    """Rows cannot be appended to a saved collection: the path holds no saved folder (or
    an archive), or the rows' classes, keys, dtypes or shapes differ from the saved ones
    (the peer raises ValueError). Nothing was written."""


class AppendTargetError(AppendError, AttributeError):
    """``append_memmap_`` of a collection that is not linked to a folder it may write
    (never saved, or loaded read-only or onto another device); also an
    ``AttributeError``, as the peer raises (it has no ``append_memmap_``). Use
    ``tclass.append_memmap(prefix, rows)`` on the folder. Nothing was written."""


class ShardSchemaError(MetadataError, AppendError):
    """A shard of a sharded dataset holds, or would hold, rows of another schema than the
    dataset's (another record class, key, dtype or trailing shape than its manifest
    records). The message names the shard and the first difference; nothing was written.

    Attributes:
        shard: the shard's id.
    """

    def __init__(self, message: str, shard: str | None = None) -> None:
        super().__init__(message)
        self.shard = shard

    def __reduce__(self) -> tuple[type[ShardSchemaError], tuple[object, ...]]:
        return (type(self), (str(self), self.shard))


class MissingDependencyError(TclassError, ModuleNotFoundError):
    """An optional dependency is not installed; the message names the extra that brings
    it (``pip install tclass[h5]``)."""


class FileBusyError(TclassError, BlockingIOError):
    """A file is held by another process (an HDF5 file open for writing elsewhere, which
    HDF5's file locking refuses to share), or open in this process in a mode the new open
    cannot share (read-only, then ``mode='r+'``; open, then ``mode='w'``); nothing was
    changed."""


class ClosedFileError(TclassError, KeyError, ValueError):
    """A collection over a file was read or written after its file was closed (the peer
    raises KeyError)."""


# --- math ------------------------------------------------------------------------------


class OperandError(TclassError, TypeError):
    """An operand or argument of a math operation is not one it takes: a string added to
    a collection, ``dim="feature"`` with ``keepdim=True``, ``clamp()`` with no bound."""


class GradError(TclassError, RuntimeError):
    """An autograd request the tensors cannot meet: ``requires_grad_()`` on an integer
    tensor, ``backward()`` with nothing that requires gradients, or without a gradient
    for a tensor of several elements (a ``RuntimeError``, as torch and the peer raise)."""


class ReductionError(TclassError, ValueError, RuntimeError):
    """A reduction has nothing to reduce (``reduce=True`` on a collection without tensors),
    or would merge Python values that differ between the elements it reduces."""


# --- tensorclasses -----------------------------------------------------------------------


class ClassDefinitionError(TclassError, TypeError):
    """A tensorclass definition cannot be built (raised when the class is created)."""


class ReservedNameError(ClassDefinitionError, AttributeError):
    """A field is named after a tensorclass attribute or method (``batch_size``, ``to``...)."""


class FieldTypeError(TclassError, TypeError):
    """A value does not fit its field's annotation, or a required field is missing."""


class UnknownFieldError(TclassError, AttributeError, ValueError):
    """A name that is not a field of the tensorclass was set or given."""


class UnsetFieldError(TclassError, AttributeError):
    """A field a ``TypedTensorDict`` declares (without a default) was read where it holds
    no value (a ``NotRequired`` field not set yet, an instance made with ``check=False``);
    an ``AttributeError``, as the peer raises, so ``hasattr`` answers false."""


class CastError(FieldTypeError, ValueError):
    """A value set to a field of an ``autocast`` tensorclass cannot be converted to the
    field's annotated type (``int("abc")``: the peer lets the ``ValueError`` or
    ``TypeError`` of the conversion through)."""


class ArgumentError(TclassError, TypeError):
    """A constructor or function got arguments its signature does not take: too many
    positional arguments, a required field or size missing, or an argument of the wrong
    type (a ``dtype`` that is not a ``torch.dtype``)."""


class UpdateArgumentError(ArgumentError, RuntimeError):
    """An argument of ``replace`` / ``copy_at_`` that holds no entries it can write (not
    a mapping or a collection, several of them, Python values only for a tensor copy); a
    ``RuntimeError``, as the peer raises."""


class DtypeArgumentError(ArgumentError, DeviceError):
    """``to(device, "float32")``: a string where ``to`` takes a ``torch.dtype``; a
    ``TypeError``, as torch raises there for the peer, and a ``DeviceError``, as tclass
    raised (and raises for ``to("float32")``, a string read as a device)."""


class ArgumentValueError(TclassError, ValueError):
    """An argument has a value the function does not take (a ``mask_key`` without
    ``pad_keys``, an unknown option value); the peer raises ValueError."""


class UnknownArgumentError(ArgumentError, AttributeError):
    """A constructor got a keyword that is no field (the peer raises AttributeError)."""


class DuplicateArgumentError(ArgumentError, ValueError):
    """A constructor got a field both by position and by keyword; a ``ValueError`` as
    the peer raises, and a ``TypeError`` as Python raises for any function."""


class FrozenInstanceError(LockedError, dataclasses.FrozenInstanceError):
    """A field of a frozen tensorclass instance was assigned or deleted. A frozen record
    is locked: ``except RuntimeError`` (the peer's error for ``set`` on it) catches this
    as ``except AttributeError`` (the dataclasses one) does."""


class FieldIndexError(TclassError, ValueError, TypeError):
    """A tensorclass was indexed with a string: it is indexed along batch dims only."""


# --- schemas: shapes and dtypes in annotations ------------------------------------------


class SpecSyntaxError(ClassDefinitionError, ValueError):
    """A field's shape spec (``Spec("3 h w")``, a jaxtyping annotation) cannot be read."""


class SpecProblem(NamedTuple):
    """One way a field's tensor does not fit its spec (see ``FieldSpecError``)."""

    field: str  # the field
    # the dim ('h', '3', '*rest'), "dtype", "ndim", a constraint ("ge", "isin"), or for
    # columns read into a record (tclass.ray) "missing" (a field), "unknown" (a column) or
    # "annotation" (a Python value the field's annotation refuses)
    dim: str
    got: object  # what the tensor has (for a constraint: the first value that breaks it)
    expected: object  # what the spec (or the other field) says ("ge=0" for a constraint)
    other: str | None = None  # the field that bound the dim first, if another
    message: str = ""
    element: tuple[int, ...] | None = None  # a constraint's: the value's index in the tensor
    argument: str | None = None  # @checked: the argument ("argument 'a'") or "return value"


class FieldSpecError(FieldTypeError, ValueError):
    """A tensor does not fit its field's spec: its dtype, a feature dim, a named dim
    that another field of the record binds to another size, or a value that breaks a
    constraint (``ge=0``, ``isin=...``: the problem names the first offending index and
    value). Raised when a record is built, written into or loaded; the record (and its
    files) are left as they were.

    Attributes:
        problems: every problem found, as ``SpecProblem`` (field, dim, both values).
    """

    def __init__(self, message: str, problems: Sequence[SpecProblem] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems)

    def __reduce__(self) -> tuple[type[FieldSpecError], tuple[object, ...]]:
        return (type(self), (str(self), self.problems))


class SchemaDifference(NamedTuple):
    """One difference between a saved folder and the class loading it."""

    path: str  # the record's folder, relative to the one loaded ("" for the root)
    field: str
    kind: str  # "missing", "extra", "dtype", "shape", "kind"
    saved: object  # what the folder holds (None when the field is missing)
    declared: object  # what the class declares (None for an extra field)
    option: str | None  # the load_memmap option that accepts it, or None
    message: str = ""


class SchemaMismatchError(MetadataError):
    """A folder does not hold what the class loading it declares: missing or extra
    fields, dtypes or shapes its specs do not allow. Every difference is listed, each
    with the option that would accept it (``strict=False``, ``widen=True``); nothing
    was loaded.

    Attributes:
        differences: every difference, as ``SchemaDifference``.
    """

    def __init__(self, message: str, differences: Sequence[SchemaDifference] = ()) -> None:
        super().__init__(message)
        self.differences = tuple(differences)

    def __reduce__(self) -> tuple[type[SchemaMismatchError], tuple[object, ...]]:
        return (type(self), (str(self), self.differences))


# --- distributed -----------------------------------------------------------------------


class DistributedError(TclassError, RuntimeError):
    """A ``torch.distributed`` transfer of a record cannot proceed: no process group, or
    the other rank sent something that is not a tclass record (the peer raises
    RuntimeError from torch in these cases)."""


class StructureMismatchError(DistributedError, ValueError):
    """The record received (or reduced, or gathered) does not have this rank's structure:
    a key only one side has, or a leaf whose dtype or shape differs. The transfer was
    completed (nothing is left pending on either side); this record was not changed.

    Attributes:
        key: the first differing key (a tuple; a lazy-stack member is its int index).
        rank: the other rank involved.
    """

    def __init__(
        self, message: str, key: tuple[str | int, ...] = (), rank: int | None = None
    ) -> None:
        super().__init__(message)
        self.key = key
        self.rank = rank

    def __reduce__(self) -> tuple[type[StructureMismatchError], tuple[object, ...]]:
        return (type(self), (str(self), self.key, self.rank))


# --- the package itself ------------------------------------------------------------------


class NotProvidedError(TclassError, RuntimeError):
    """A method of the base layer was called before the layer that implements it bound
    it (``tclass/_base/_provided.py``), or a layer bound one implementation twice: the
    package was only partly imported, or two modules provide the same slot."""


# --- warnings --------------------------------------------------------------------------


class TclassWarning(UserWarning):
    """Base class of every warning tclass emits."""


class IgnoredValuesWarning(TclassWarning, FutureWarning):
    """Python values an operation skipped, as the peer does (``copy_at_(fast=True)``
    copies tensors only): pass the option the message names to write them too."""


class IgnoredKeywordWarning(TclassWarning, FutureWarning):
    """A keyword argument the method does not know was ignored (``apply(fn, foo=1)``), as
    the peer ignores it with a ``FutureWarning`` (its 0.17 raises a ``TypeError``):
    remove it."""


class EntryReplacedWarning(TclassWarning):
    """``set(key, value)`` (``inplace=False``) on a ``PersistentTensorDict`` replaced an
    entry its file already held, as the peer warns: deleting an array and writing a new
    one is slower than writing into it, and an HDF5 file keeps the old array's space.
    Write in place (``set(..., inplace=True)``, ``set_``) or use a new key."""


class SharedDefaultWarning(TclassWarning, FutureWarning):
    """A tensorclass field has a tensor (or collection) default, which every instance
    shares: an in-place change on one changes all. Use
    ``dataclasses.field(default_factory=...)``. (The peer emits a ``FutureWarning``.)"""
