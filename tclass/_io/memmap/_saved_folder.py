"""Keeping a saved folder in step with the collection over it.

A ``TensorDict`` node that was saved (``memmap``, ``memmap_``, ``memmap_like``) or loaded
write-through (``load_memmap``) holds a :class:`SavedFolder` in its ``_saved_at`` slot.
Its tensors are memory-mapped, so data written into them reaches the files by itself;
the engine calls this object where the rest of the node changes, *before* memory
changes, so that a failure leaves both as they were:

* a Python value (``NonTensorData`` / ``NonTensorStack``) set, replaced, written by row or
  removed: the value node's ``meta.json`` is replaced (written beside it, then renamed
  over it; a node whose kind changes is rewritten whole). Writing what the node already
  holds writes nothing.
* a new entry (a field that was ``None`` when the folder was written, a new key): its
  files are written first (sparse zeros for an entry allocated by an indexed write,
  a copy otherwise), the parent's ``meta.json`` last, by rename, so a process killed in
  between leaves the folder as it was plus unlisted files.
* an entry renamed within the node (``rename_key_``): its file is linked under the new
  name (a nested node's folder renamed), the listing replaced, the old name removed.
* replacing or removing a tensor or nested collection that the folder holds changes
  memory only (as in tensordict): the folder keeps its data until saved again.

Every file is replaced by rename, so a reader never sees a torn ``meta.json``. Two
processes writing to one folder: each ``meta.json`` holds the last writer's version
(adding entries takes a lock on the folder, so concurrent additions all stay listed).
These small files are not fsynced, to keep a value write cheap: like data files (see
``_write``), they are safe against the writer dying, not against power loss.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import torch

from tclass._base._tensordict_base import Value
from tclass._base.implemented._collection import TensorCollection
from tclass._core._memmap import MemoryMappedTensor, without_grad
from tclass._core._records import field_names_of, storage_of
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData, _NonTensorNode, same_value
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._io.memmap._format import (
    META,
    TCLASS_FIELD,
    escape_key,
    file_name,
    is_marker,
)
from tclass._io.memmap._nested_leaf import SIZES_SUFFIX, build_nested
from tclass._io.memmap._plan import Leaf, plan_tree
from tclass._io.memmap._values import PICKLE_FILES
from tclass._io.memmap._write import replace_file, save_tree, temp_path
from tclass.errors import (
    FileConflictError,
    FolderWriteError,
    MetadataError,
    NotSerializableError,
    NotSerializableWriteError,
    UnsupportedError,
)

__all__ = ["SavedFolder", "linker", "relink", "unlinked"]

_VALUE_FILES = (*PICKLE_FILES, "json_types.json")
_MISSING: Any = object()


def linker(
    allow_pickle: bool, legacy: frozenset[str] = frozenset()
) -> Callable[[str], SavedFolder]:
    """What installs a :class:`SavedFolder` on each TensorDict node written or loaded."""
    return lambda folder: SavedFolder(folder, allow_pickle, legacy)


def relink(new: Any, old: Any, legacy: frozenset[str] = frozenset()) -> None:
    """Give the storage of a record built over a loaded TensorDict (``new``) the folder
    of that TensorDict (``old``): member by member for a lazy stack, and below, for the
    entries the record converted (a TensorDict under a tensorclass field). A record's
    storage may then take its absent fields while locked (see ``SavedAt.fields``)."""
    fields = field_names_of(new)
    new, old = storage_of(new), storage_of(old)
    if isinstance(new, LazyStackedTensorDict) and isinstance(old, LazyStackedTensorDict):
        for mine, theirs in zip(new._members, old._members):
            relink(mine, theirs, legacy)
    elif isinstance(new, TensorDict) and isinstance(old, TensorDict) and old._saved is not None:
        saved = old._saved
        if (legacy or fields) and isinstance(saved, SavedFolder):
            saved = SavedFolder(saved.folder, saved.allow_pickle, legacy or saved.legacy, fields)
        new._attach_folder(saved)
        if new is old:  # the record took the loaded TensorDict as it is: nothing converted
            return
        for key, value in new._items():
            previous = old._entries().get(key)
            if value is not previous and isinstance(value, TensorCollection):
                relink(value, previous)


@contextlib.contextmanager
def unlinked(collection: Any) -> Iterator[None]:
    """Within it, the nodes of ``collection`` (a loaded record: its storage, nested
    collections, lazy-stack members) write nothing to their folders: what a class's
    ``__post_init__`` sets on a record being loaded stays in memory, as a load never
    changes files. The links are back afterwards."""
    links: list[tuple[TensorDict, Any]] = []
    pending = [storage_of(collection)]
    while pending:
        node = storage_of(pending.pop())
        if isinstance(node, LazyStackedTensorDict):
            pending += node.tensordicts
        elif isinstance(node, TensorDict):
            if node._saved is not None:
                links.append((node, node._saved))
            pending += [v for v in node._entries().values() if isinstance(v, TensorCollection)]
    for node, _ in links:
        node._attach_folder(None)
    try:
        yield
    finally:
        for node, saved in links:
            node._attach_folder(saved)


class SavedFolder:
    """The folder of one TensorDict node (see the module docstring)."""

    __slots__ = ("folder", "allow_pickle", "legacy", "fields")

    def __init__(
        self,
        folder: str,
        allow_pickle: bool,
        legacy: frozenset[str] = frozenset(),
        fields: frozenset[str] = frozenset(),
    ) -> None:
        self.folder = folder
        self.allow_pickle = allow_pickle  # the save's or load's: values may be pickled
        self.legacy = legacy  # fields an older writer kept in the record's own meta.json
        self.fields = fields  # a record's storage: its fields (absent ones may be filled)

    def __repr__(self) -> str:
        return f"SavedFolder({self.folder!r})"

    # --- what the engine calls -------------------------------------------------------------

    def entry_set(self, td: TensorDict, key: str, value: Value, blank: bool) -> Value:
        current = td._entries().get(key, _MISSING)
        unchanged = current is value
        if unchanged:
            return value
        was_value = isinstance(current, _NonTensorNode)
        if not isinstance(value, _NonTensorNode) and current is not _MISSING and not was_value:
            return value  # a saved tensor or collection replaced: memory only
        self._check_legacy(key)
        try:
            if was_value and isinstance(value, _NonTensorNode):
                if not _same_values(current, value):
                    self._rewrite_values(key, current, value)
                return value
            return self._add_entry(td, key, value, current, blank)
        except FileConflictError:  # refused before anything was written: as it says
            raise
        except OSError as error:
            msg = (
                f"cannot write {key!r} into {self.folder!r}, where this collection is saved "
                f"({error}); nothing was changed. Load it read-only or work on a copy "
                "(.clone()) to change it in memory only"
            )
            raise FolderWriteError(msg) from error

    def entry_removed(self, td: TensorDict, key: str) -> None:
        if not isinstance(td._entries().get(key), _NonTensorNode):
            return  # a saved tensor or collection removed: memory only
        self._check_legacy(key)
        try:
            with _locked(self.folder):
                meta = _read_meta(self.folder)
                stored = _stored_name(meta, key)
                if meta.pop(stored, None) is not None:
                    replace_file(self.folder, META, _dump(meta))
            shutil.rmtree(os.path.join(self.folder, self._dir_name(stored)), ignore_errors=True)
        except OSError as error:
            msg = (
                f"cannot remove {key!r} from {self.folder!r}, where this collection is "
                f"saved ({error}); nothing was changed"
            )
            raise FolderWriteError(msg) from error

    def entry_renamed(self, td: TensorDict, old: str, new: str) -> None:
        self._check_legacy(old)
        self._check_legacy(new)
        try:
            with _locked(self.folder):
                meta = _read_meta(self.folder)
                escapes = escape_key(new) != new  # named like node metadata
                before = _stored_name(meta, old)
                after = escape_key(new) if escapes else _stored_name(meta, new)
                _check_key_naming(meta, new, after, escapes, self.folder)
                if escapes and not _escaped(meta):
                    _mark_escaped(meta)
                entry, moved = meta.pop(before, None), None
                replaced = meta.get(after)
                if replaced is not None:  # what the new name held goes first
                    self._remove_files(after, td._entries().get(new))
                if entry is not None:
                    moved = self._move_files(before, after, td._entries()[old])
                    meta[after] = entry  # (in the place of what it replaces, as in memory)
                elif replaced is not None:
                    del meta[after]
                replace_file(self.folder, META, _dump(meta))
                if moved is not None:
                    _remove_path(moved)  # the old name of the files, linked until now
                    if _is_nested(td._entries().get(old)):
                        _remove_file(moved.removesuffix(".memmap") + SIZES_SUFFIX)
        except OSError as error:
            msg = (
                f"cannot rename {old!r} to {new!r} in {self.folder!r}, where this collection "
                f"is saved ({error}). Load it read-only or work on a copy (.clone()) to "
                "rename it in memory only"
            )
            raise FolderWriteError(msg) from error

    def _remove_files(self, stored: str, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            _remove_file(os.path.join(self.folder, file_name(stored) + ".memmap"))
            if value.is_nested:
                _remove_file(os.path.join(self.folder, file_name(stored) + SIZES_SUFFIX))
        else:
            shutil.rmtree(os.path.join(self.folder, self._dir_name(stored)), ignore_errors=True)

    def _move_files(self, before: str, after: str, value: Any) -> str | None:
        """Give the files of the entry ``before`` (a leaf's file, a node's folder) the
        name of ``after``; what maps them keeps its mapping (same inode) and learns the
        new path. A leaf's file is linked under the new name (the old name, returned, is
        removed once ``meta.json`` lists the new one: a crash leaves a loadable folder); a
        node's folder likewise, as a new folder tree of links to the same files."""
        if isinstance(value, torch.Tensor):
            source = os.path.join(self.folder, file_name(before) + ".memmap")
            if not os.path.exists(source):
                return None  # an empty leaf has no file
            target = os.path.join(self.folder, file_name(after) + ".memmap")
            if value.is_nested:  # its sizes file too (the old name removed with the data's)
                sizes = os.path.join(self.folder, file_name(before) + SIZES_SUFFIX)
                if os.path.exists(sizes):
                    new_sizes = os.path.join(self.folder, file_name(after) + SIZES_SUFFIX)
                    _remove_file(new_sizes)
                    os.link(sizes, new_sizes)
            _remove_file(target)
            os.link(source, target)
            _repoint(value, source, target)
            return source
        source = os.path.join(self.folder, self._dir_name(before))
        target = os.path.join(self.folder, file_name(after))
        if not os.path.isdir(source):
            return None
        shutil.rmtree(target, ignore_errors=True)  # unlisted: left by an interrupted rename
        shutil.copytree(source, target, copy_function=os.link)
        _repoint(value, source, target)
        return source

    # --- writing ---------------------------------------------------------------------------

    def _rewrite_values(self, key: str, current: _NonTensorNode, value: _NonTensorNode) -> None:
        """Replace the files of a value node in place (its ``meta.json`` last)."""
        stored = _stored_name(_read_meta(self.folder), key)
        folder = os.path.join(self.folder, self._dir_name(stored))
        try:
            plan, _ = plan_tree(
                value,
                folder,
                copy_existing=False,
                like=False,
                allow_pickle=self.allow_pickle,
                key=(key,),
            )
        except NotSerializableError as error:
            msg = f"writing {key!r} into {self.folder!r}: {error}"
            if "of type torch.Tensor" in msg:
                msg += (
                    ". A number written at rows of a Python value is held there as a tensor, "
                    "as in memory (x[i] = x[i].to_dict() writes its numbers as tensors)"
                )
            raise NotSerializableWriteError(msg) from None
        if type(current) is not type(value):
            # The parent's entry names the kind. Readers go by the node's own meta.json,
            # so this goes first: if the node's write then fails, nothing read changed.
            with _locked(self.folder):
                meta = _read_meta(self.folder)
                if isinstance(meta.get(stored), dict):
                    meta[stored] = {"type": type(value).__name__}
                    replace_file(self.folder, META, _dump(meta))
        files = sorted(plan.files, key=lambda item: item[0] == META)  # meta.json last
        for name, data in files:
            replace_file(folder, name, data)
        written = {name for name, _ in files}
        for name in _VALUE_FILES:  # left by the previous kind: never read once meta.json changed
            if name not in written:
                _remove_file(os.path.join(folder, name))

    def _add_entry(
        self, td: TensorDict, key: str, value: Value, current: Any, blank: bool
    ) -> Value:
        """Write a new entry's files, then list it in the parent's ``meta.json``; the files
        of an entry it replaces (a Python value's folder, a leaf) are removed after."""
        stub = TensorDict._new_unchecked({key: value}, td.batch_size, None)
        try:
            plan, _ = plan_tree(
                stub, self.folder, copy_existing=True, like=blank, allow_pickle=self.allow_pickle
            )
        except NotSerializableError as error:
            raise NotSerializableError(f"writing {key!r} into {self.folder!r}: {error}") from None
        listing = json.loads(next(data for name, data in plan.files if name == META))
        stored, entry = next(
            (name, item)
            for name, item in listing.items()
            if isinstance(item, dict) and not is_marker(name, item)
        )
        escapes = isinstance(listing.get(TCLASS_FIELD), dict) and is_marker(
            TCLASS_FIELD, listing[TCLASS_FIELD]
        )
        meta = _read_meta(self.folder)
        _check_key_naming(meta, key, stored, escapes, self.folder)  # before any file
        _check_sizes_files(meta, key, stored, entry, self.folder)
        if isinstance(value, torch.Tensor) and value.is_nested:
            stored_value: Value = self._write_nested(plan.leaves, entry, blank)
        elif isinstance(value, torch.Tensor):
            stored_value = self._write_leaf(plan.leaves[0].path, value, blank)
        else:
            target = os.path.join(self.folder, plan.dirs[1])
            stored_value = save_tree(
                value, target, copy_existing=True, like=blank, allow_pickle=self.allow_pickle,
                link=linker(self.allow_pickle),
            )  # fmt: skip
            _keep_no_device(value, stored_value)
            if td.is_locked:
                stored_value._lock_each()  # type: ignore[union-attr]
        with _locked(self.folder):
            meta = _read_meta(self.folder)
            _check_key_naming(meta, key, stored, escapes, self.folder)
            meta[stored] = entry
            if escapes and not _escaped(meta):
                _mark_escaped(meta)
            replace_file(self.folder, META, _dump(meta))
        if current is not _MISSING:  # what the replaced entry left behind
            if isinstance(value, torch.Tensor):
                shutil.rmtree(os.path.join(self.folder, self._dir_name(stored)), ignore_errors=True)
                if not value.is_nested:  # a nested leaf's sizes file, left by one replaced
                    _remove_file(os.path.join(self.folder, file_name(stored) + SIZES_SUFFIX))
            else:
                _remove_file(os.path.join(self.folder, file_name(stored) + ".memmap"))
        return stored_value

    def _write_leaf(self, rel: str, tensor: torch.Tensor, blank: bool) -> torch.Tensor:
        if tensor.numel() == 0:  # the format writes no file for an empty leaf
            return MemoryMappedTensor.empty(tensor.shape, dtype=tensor.dtype)
        final = os.path.join(self.folder, rel)
        temp = temp_path(self.folder, rel)
        try:
            if blank:
                mapped = MemoryMappedTensor.empty(tensor.shape, dtype=tensor.dtype, filename=temp)
            else:
                mapped = MemoryMappedTensor.from_tensor(
                    without_grad(tensor), filename=temp, copy_existing=True
                )
            os.replace(temp, final)
        except BaseException:
            _remove_file(temp)
            raise
        mapped._filename = final  # same inode: the mapping stays valid
        return mapped

    def _write_nested(self, leaves: list[Leaf], entry: dict[str, Any], blank: bool) -> Value:
        """A nested leaf's two files (its elements, then its sizes: written whole by
        ``blank`` too), and the nested tensor over them."""
        values = self._write_leaf(leaves[0].path, leaves[0].tensor, blank)
        self._write_leaf(leaves[1].path, leaves[1].tensor, False)
        return build_nested(values, leaves[1].tensor, entry["_tclass"]["layout"])

    def _dir_name(self, stored: str) -> str:
        """The folder of the entry ``stored``: its encoded name, or the raw name older
        writers used (as the reader accepts it)."""
        name = file_name(stored)
        if not os.path.lexists(os.path.join(self.folder, name)) and "/" not in stored:
            if stored not in ("", ".", "..") and os.path.isdir(os.path.join(self.folder, stored)):
                return stored
        return name

    def _check_legacy(self, key: str) -> None:
        if key in self.legacy:
            msg = (
                f"cannot write {key!r}: {os.path.dirname(self.folder)!r} keeps this field in "
                "the record's own meta.json (an older writer's layout), which a write here "
                "would not replace. Save the record again first (record.memmap_(path))"
            )
            raise UnsupportedError(msg)


def _is_nested(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_nested


def _escaped(meta: dict[str, Any]) -> bool:
    """Whether the node's keys are stored escaped (see ``escape_key``)."""
    marker = meta.get(TCLASS_FIELD)
    return is_marker(TCLASS_FIELD, marker) and marker.get("escaped_keys") is True  # type: ignore[union-attr]


def _mark_escaped(meta: dict[str, Any]) -> None:
    """Mark the node's keys as stored escaped (its other keys read the same either way)."""
    marker = meta.get(TCLASS_FIELD)
    kept = marker if is_marker(TCLASS_FIELD, marker) and isinstance(marker, dict) else {}
    meta[TCLASS_FIELD] = {**kept, "escaped_keys": True}


def _stored_name(meta: dict[str, Any], key: str) -> str:
    """The name under which the node whose ``meta.json`` is ``meta`` lists ``key``."""
    return escape_key(key) if _escaped(meta) else key


def _check_key_naming(
    meta: dict[str, Any], key: str, stored: str, escapes: bool, folder: str
) -> None:
    """Refuse a new key whose stored name would disagree with the node's: a key named like
    a node field added to a node whose keys are stored as they are, where another key
    would then read back differently (or the reverse). Renaming the node's files is a
    save's work."""
    escaped = _escaped(meta)
    if escaped:
        fits = stored == escape_key(key)
    else:
        fits = not escapes or all(
            escape_key(name) == name
            for name, item in meta.items()
            if isinstance(item, dict) and not is_marker(name, item)
        )
    if not fits:
        msg = (
            f"cannot add {key!r} to {folder!r}: the folder names its keys "
            f"{'escaped' if escaped else 'as they are'}, and {key!r} would change how "
            "its other keys read back. "
            "Save the collection again (memmap_) to add it"
        )
        raise UnsupportedError(msg)


def _check_sizes_files(
    meta: dict[str, Any], key: str, stored: str, entry: dict[str, Any], folder: str
) -> None:
    """Refuse a new entry whose file or folder would be a nested leaf's sizes file, or a
    nested leaf whose sizes file would be another entry's (as a save refuses them)."""
    mine = file_name(stored)
    sizes = mine + SIZES_SUFFIX if entry.get("is_nested") is True else None
    for name, item in meta.items():
        if not isinstance(item, dict) or is_marker(name, item) or name == stored:
            continue
        other = file_name(name)
        theirs = other + SIZES_SUFFIX if item.get("is_nested") is True else None
        if theirs in (mine, mine + ".memmap") or sizes in (other, other + ".memmap"):
            msg = (
                f"cannot add {key!r} to {folder!r}: the sizes file of a nested tensor "
                f"({theirs or sizes!r}) would be the file of another entry; rename one of "
                f"{key!r} and {name!r}"
            )
            raise FileConflictError(msg)


def _same_values(a: _NonTensorNode, b: _NonTensorNode) -> bool:
    if type(a) is not type(b) or a.batch_size != b.batch_size:
        return False
    if isinstance(a, NonTensorData) and isinstance(b, NonTensorData):
        return same_value(a.data, b.data)
    assert isinstance(a, NonTensorStack) and isinstance(b, NonTensorStack)
    return all(
        same_value(x, y) for x, y in zip(a._as_array().reshape(-1), b._as_array().reshape(-1))
    )


def _repoint(value: Any, source: str, target: str, seen: set[int] | None = None) -> None:
    """The files under ``source`` moved to ``target``: the paths ``value``'s memory-mapped
    leaves and saved nodes record follow (their mappings stay valid)."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, MemoryMappedTensor):
        path = value._filename
        if path is not None and (path == source or path.startswith(source + os.sep)):
            value._filename = target + path[len(source) :]
        return
    folder = getattr(value, "_saved_folder", None)  # a saved Python-value node
    if isinstance(folder, str) and (folder == source or folder.startswith(source + os.sep)):
        value._saved_folder = target + folder[len(source) :]
        return
    value = storage_of(value)
    if isinstance(value, LazyStackedTensorDict):
        for member in value._members:
            _repoint(member, source, target, seen)
    elif isinstance(value, TensorDict):
        saved = value._saved
        if isinstance(saved, SavedFolder) and id(saved) not in seen:
            seen.add(id(saved))
            folder = saved.folder
            if folder == source or folder.startswith(source + os.sep):
                saved.folder = target + folder[len(source) :]
        for _, item in value._items():
            _repoint(item, source, target, seen)


# --- files ---------------------------------------------------------------------------------


def _remove_path(path: str) -> None:
    """Remove a file or a folder tree (nothing when it is gone already)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        _remove_file(path)


def _remove_file(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _read_meta(folder: str) -> dict[str, Any]:
    path = os.path.join(folder, META)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as stream:
        raw = stream.read()
    try:
        meta = json.loads(raw)
    except ValueError:
        meta = None
    if not isinstance(meta, dict):
        raise MetadataError(
            f"{path!r} is not a JSON object; the folder was damaged since it was loaded"
        )
    return meta


def _dump(meta: dict[str, Any]) -> bytes:
    return json.dumps(meta, separators=(", ", ": ")).encode()


@contextlib.contextmanager
def _locked(folder: str) -> Iterator[None]:
    """An exclusive lock on a folder, held while its ``meta.json`` is read and replaced,
    so that entries added by two processes at once are both kept."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _keep_no_device(value: Any, saved: Any) -> None:
    """A new collection written into the folder (``create_nested``, ``td["k"] = {}``)
    keeps no device where it had none (nested ones too), as an entry set into a
    collection that is not saved: the save's copy is on the CPU."""
    source, copy = storage_of(value), storage_of(saved)
    if not isinstance(source, TensorDict) or not isinstance(copy, TensorDict):
        return
    if source.device is None:
        copy._assign_device(None)
    kept = copy._entries()
    for key, sub in source._entries().items():
        if isinstance(sub, TensorCollection) and key in kept:
            _keep_no_device(sub, kept[key])
