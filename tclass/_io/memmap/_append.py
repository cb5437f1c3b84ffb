"""Growing a saved collection along its first batch dim: ``append_memmap(prefix, rows)``
and the method ``saved.append_memmap_(rows)``.

The protocol keeps the guarantees of every save (see ``_write.py``):

1. The saved tree is loaded (with ``load_memmap``'s checks) and ``rows`` checked against
   it: same classes, keys, dtypes, trailing shapes and batch dims after the first.
   Nothing is written before every check has passed.
2. Each leaf file is grown in place: the new rows' bytes are written right after the
   saved ones (``pwrite`` from the rows' memory; a tail left by an append that was
   killed is cut first). The saved bytes are neither read nor rewritten, and readers
   that mapped them keep their mappings: a reader maps only what ``meta.json`` says.
3. The new row count is published for the whole tree at once: the tree's ``meta.json``
   files are written into a staging folder beside it, the grown leaf files hard-linked
   there (same inodes: no copy), and the staging folder swapped with the old tree in one
   atomic rename, as a save does. A reader holds its root folder open while it loads,
   so it sees the old tree or the new one, never a mix of row counts across nodes.

A writer killed before step 3 leaves the old tree (some files longer than their
``meta.json`` says, which loads; the next append cuts the tail); killed during step 3,
the old tree or the new one. Appends to one folder take a lock on it, so two appenders
run one after the other (each adds its rows after the other's). The cost of an append is
the bytes of the new rows plus a few files per node: it does not grow with the rows
already saved, except where a Python value becomes a per-row list (its ``meta.json``
holds every row).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import torch

from tclass._base._provided import IO
from tclass._base.implemented._collection import TensorCollection
from tclass._core._memmap import MemoryMappedTensor, map_opened_file
from tclass._core._records import is_record, storage_of
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData, _NonTensorNode, same_value
from tclass._engine._nontensor_stack import NonTensorStack, join_non_tensor
from tclass._engine._td import TensorDict
from tclass._engine._walk import NodeVisitor
from tclass._io._api import adopt_leaves
from tclass._io._schema import class_schema
from tclass._io.memmap._format import META, TENSORCLASS_DIR, file_name
from tclass._io.memmap._plan import stored_names
from tclass._io.memmap._read import load_tree
from tclass._io.memmap._saved_folder import linker
from tclass._io.memmap._values import pickle_policy
from tclass._io.memmap._write import save_tree
from tclass._io.memmap._zip import is_archive, tensor_chunks
from tclass.errors import AppendError, AppendTargetError, EntryTypeError, MissingFileError

__all__ = ["append_memmap", "append_in_place"]

PathLike = str | os.PathLike[str]
Build = Callable[[list[torch.Tensor]], Any]


def append_memmap(
    prefix: PathLike, rows: Any, *, allow_pickle: bool = False, durable: bool = False
) -> None:
    """Append ``rows`` to the collection saved in the folder ``prefix``, along its first
    batch dim, without rewriting what is saved (see the module docstring).

    Args:
        prefix: a folder written by ``memmap`` / ``save`` (by tclass or the peer).
        rows: a collection of the saved one's class, keys, dtypes and trailing shapes,
            whose batch size differs from the saved one's in its first dim only. A
            Python value stays one value when the rows hold the same one; otherwise it
            becomes a per-row list (and a saved per-row list grows).
        allow_pickle: the saved folder's pickled Python values may be read (and are
            written again); as ``load_memmap``'s.
        durable: fsync the grown files and the new ``meta.json`` files before returning.

    Raises:
        AppendError: (a ``ValueError``) ``prefix`` is not a saved folder, or ``rows``
            does not fit it; nothing was written.
        TypeError: ``rows`` is not a collection.
    """
    if not isinstance(rows, TensorCollection) or isinstance(rows, _NonTensorNode):
        msg = (
            f"append_memmap: rows must be a TensorDict or a tensorclass, got {type(rows).__name__}"
        )
        raise EntryTypeError(msg)
    allow_pickle = pickle_policy(allow_pickle, "append_memmap")
    root = os.path.abspath(os.fspath(prefix))
    if is_archive(root):
        msg = (
            f"{root!r} is an archive, which cannot grow: unpack it with unpack_memmap, "
            "append to the folder, and pack it again"
        )
        raise AppendError(msg)
    if not os.path.isdir(root):
        raise AppendError(f"append_memmap: no saved folder at {root!r}; check the path")
    _check_parent(root)
    with _locked(root):
        requested = type(rows) if is_record(rows) else None
        saved = load_tree(root, requested, None, allow_pickle)
        _grow(saved, rows, root, allow_pickle, durable)


def append_in_place(
    node: Any, rows: Any, durable: bool = False, allow_pickle: bool | None = None
) -> Any:
    """``node.append_memmap_(rows)``: append to the folder ``node`` is saved in, then
    make ``node`` hold every row of the folder (its batch size grows, its leaves map the
    grown files); ``allow_pickle`` None: as ``node`` was saved or loaded."""
    storage = storage_of(node)
    saved_at = storage._saved if isinstance(storage, TensorDict) else None
    if isinstance(storage, LazyStackedTensorDict):
        msg = (
            f"this {type(node).__name__} is a lazy stack, which cannot grow: append_memmap_ "
            "adds rows to a dense collection's folder; save a dense one (torch.stack(...) "
            "of the members, or .contiguous() of the stack) to grow it"
        )
        raise AppendTargetError(msg)
    if saved_at is None:
        msg = (
            f"this {type(node).__name__} is not linked to a folder it may write: it was not "
            "saved with memmap/memmap_/memmap_like or loaded with load_memmap (it may have "
            "been loaded with mode='r', onto another device, or from a folder this process "
            "may not write). Use tclass.append_memmap(prefix, rows) on the folder"
        )
        raise AppendTargetError(msg)
    folder = saved_at.folder
    root = os.path.dirname(folder) if is_record(node) else folder
    if allow_pickle is None:
        allow_pickle = bool(getattr(saved_at, "allow_pickle", False))
    append_memmap(root, rows, allow_pickle=allow_pickle, durable=durable)
    fresh = load_tree(root, type(node) if is_record(node) else None, None, allow_pickle)
    adopt_leaves(node, fresh)
    return node


def _check_parent(root: str) -> None:
    """Refuse to grow a nested node apart from a parent whose batch dims include its
    first one (the parent's rows would no longer match)."""
    folder = root
    parent = os.path.dirname(folder)
    if os.path.basename(folder) == TENSORCLASS_DIR:  # a record's fields: its record's parent
        folder, parent = parent, os.path.dirname(parent)
    try:
        with open(os.path.join(parent, META), "rb") as stream:
            meta = json.loads(stream.read(1 << 20))
    except (OSError, ValueError):
        return  # no saved parent
    if not isinstance(meta, dict) or not meta.get("shape"):
        return
    name = os.path.basename(folder)
    for key, entry in meta.items():
        if isinstance(entry, dict) and "type" in entry and file_name(key) == name:
            msg = (
                f"{folder!r} is nested in {parent!r}, whose batch size {meta['shape']} its rows "
                "must keep: append to the parent folder instead"
            )
            raise AppendError(msg)


@contextlib.contextmanager
def _locked(root: str) -> Iterator[None]:
    """An exclusive lock on the folder at ``root`` (the folder there once the lock is
    held: an append that held it before may have swapped a new one in)."""
    while True:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            status, now = os.fstat(fd), os.stat(root)
            if (status.st_dev, status.st_ino) == (now.st_dev, now.st_ino):
                yield
                return
        finally:
            os.close(fd)


def _grow(saved: Any, rows: Any, root: str, allow_pickle: bool, durable: bool) -> None:
    saved_batch, rows_batch = saved.batch_size, rows.batch_size
    if not saved_batch or not rows_batch:
        msg = (
            "append_memmap appends along the first batch dim, which the saved collection "
            f"(batch size {list(saved_batch)}) and the rows (batch size {list(rows_batch)}) "
            "must both have"
        )
        raise AppendError(msg)
    if rows_batch[0] == 0:
        _Grower(0).visit(saved, rows, root, ())  # checked all the same
        return
    grower = _Grower(rows_batch[0])
    build = grower.visit(saved, rows, root, ())
    written = [_write_rows(*grow, durable) for grow in grower.grows]
    save_tree(
        build(written), root, allow_pickle=allow_pickle, link=linker(allow_pickle), durable=durable
    )


class _Grower(NodeVisitor[Build]):
    """Checks each node of the rows against the saved node, and returns how to build the
    grown node from the grown leaves (collected in ``grows``: path, saved leaf, rows)."""

    action = "append to"

    def __init__(self, added: int) -> None:
        self.added = added
        self.grows: list[tuple[str, torch.Tensor, torch.Tensor]] = []

    def visit(self, node: Any, *args: Any) -> Build:
        saved, (rows, folder, where) = node, args
        if saved.batch_size[1:] != rows.batch_size[1:]:
            msg = (
                f"cannot append rows of batch size {list(rows.batch_size)} to "
                f"{_name(where)}, of batch size {list(saved.batch_size)}: they differ beyond "
                "the first dim"
            )
            raise AppendError(msg)
        if is_record(saved) != is_record(rows) or (
            is_record(saved) and type(saved) is not type(rows)
        ):
            raise AppendError(_other_class(saved, rows, where))
        return super().visit(saved, rows, folder, where)

    def visit_record(self, record: Any, rows: Any, folder: str, where: tuple[str, ...]) -> Build:
        cls = type(record)
        specs = class_schema(cls)[1]
        if specs is not None and isinstance(rows._tensordict, TensorDict):
            # The rows meet the class (its specs and value constraints), as a write into
            # rows of the record would: built past the checks, they are not saved.
            specs.check(rows._tensordict._entries(), len(rows.batch_size), True)
        content = self.visit(
            record._tensordict, rows._tensordict, os.path.join(folder, TENSORCLASS_DIR), where
        )
        return lambda written: cls._from_tensordict_unchecked(content(written))

    def visit_lazy(self, stack: LazyStackedTensorDict, *args: Any) -> Build:
        raise AppendError(f"cannot append to {_name(args[-1])}: a lazy stack cannot grow")

    def visit_tensordict(
        self, td: TensorDict, rows: Any, folder: str, where: tuple[str, ...]
    ) -> Build:
        if not isinstance(rows, TensorDict):
            msg = f"cannot append a {type(rows).__name__} to {_name(where)}, a TensorDict"
            raise AppendError(msg)
        keys, their_keys = td._key_names(), rows._key_names()
        if set(keys) != set(their_keys):
            msg = (
                f"cannot append rows with other keys than {_name(where)}: "
                f"{_key_difference(keys, their_keys)}. Give the rows exactly the saved keys "
                f"{sorted(keys)} (rows.select(...) drops the others)"
            )
            raise AppendError(msg)
        names = stored_names(td)
        parts: list[tuple[str, Build]] = []
        for key, value in td._items():
            here, theirs = (*where, key), rows._entry(key)
            path = os.path.join(folder, file_name(names[key]))
            if isinstance(value, torch.Tensor):
                parts.append((key, self._leaf(value, theirs, path + ".memmap", here)))
            elif isinstance(value, _NonTensorNode):
                parts.append((key, self._values(value, theirs, here)))
            elif isinstance(theirs, TensorCollection) and not isinstance(theirs, _NonTensorNode):
                parts.append((key, self.visit(value, theirs, path, here)))
            else:
                msg = (
                    f"cannot append a {type(theirs).__name__} to {_name(here)}, a "
                    f"{type(value).__name__}"
                )
                raise AppendError(msg)
        batch = torch.Size((td.batch_size[0] + self.added, *td.batch_size[1:]))
        dim_names = td._dim_names  # the grown folder keeps them, as a save would

        def build(written: list[torch.Tensor]) -> TensorDict:
            entries = {key: part(written) for key, part in parts}
            grown = TensorDict._new_unchecked(entries, batch, td.device)
            grown._assign_names(dim_names)
            return grown

        return build

    def _leaf(self, saved: torch.Tensor, rows: Any, path: str, where: tuple[str, ...]) -> Build:
        if not isinstance(rows, torch.Tensor):
            msg = f"cannot append a {type(rows).__name__} to {_name(where)}, a tensor"
            raise AppendError(msg)
        if rows.dtype != saved.dtype or rows.shape[1:] != saved.shape[1:] or rows.is_nested:
            msg = (
                f"cannot append rows of dtype {rows.dtype} and shape {list(rows.shape)} to "
                f"{_name(where)}, of dtype {saved.dtype} and shape {list(saved.shape)}"
            )
            raise AppendError(msg)
        filename = saved.filename if isinstance(saved, MemoryMappedTensor) else None
        if saved.numel() and filename != path:
            msg = (
                f"{_name(where)} is not in the file the format names ({path!r}; it maps "
                f"{filename!r}): re-save the folder with tclass before appending to it"
            )
            raise AppendError(msg)
        self.grows.append((path, saved, rows))
        index = len(self.grows) - 1
        return lambda written: written[index]

    def _values(self, saved: _NonTensorNode, rows: Any, where: tuple[str, ...]) -> Build:
        if not isinstance(rows, (NonTensorData, NonTensorStack)):
            msg = f"cannot append a {type(rows).__name__} to {_name(where)}, a Python value"
            raise AppendError(msg)
        batch = torch.Size((saved.batch_size[0] + self.added, *saved.batch_size[1:]))
        if isinstance(saved, NonTensorData) and all(
            same_value(value, saved.data) for value in rows._as_array().reshape(-1)
        ):  # one value for every row, old and new: it stays one value
            grown: _NonTensorNode = type(saved)._make(saved.data, batch, saved.device)
        else:
            grown = join_non_tensor([saved, rows], "cat", 0, where)
        return lambda written: grown


def _name(where: tuple[str, ...]) -> str:
    return f"the entry {'.'.join(where)!r}" if where else "the saved collection"


def _other_class(saved: Any, rows: Any, where: tuple[str, ...]) -> str:
    """Why rows of another class than the saved one cannot be appended, and what to do."""
    keys, their_keys = storage_of(saved)._key_names(), storage_of(rows)._key_names()
    same = set(keys) == set(their_keys)
    fields = "" if same else f"; their fields differ too: {_key_difference(keys, their_keys)}"
    head = f"cannot append {_kind(rows)} to {_name(where)}, which holds {_kind(saved)}{fields}"
    cls = type(saved)
    if is_record(saved):
        convert = f": {cls.__name__}.from_tensordict(rows.to_tensordict()) builds them"
        fix = convert if same else f" (fields {sorted(keys)})"
        return f"{head}. Append {cls.__name__} records{fix}"
    return f"{head}. Append a TensorDict{': rows.to_tensordict()' if same else ''}"


def _kind(value: Any) -> str:
    cls = type(value)
    if is_record(value):
        return f"records of class {cls.__name__} ({cls.__module__}.{cls.__qualname__})"
    return f"a {cls.__name__}"


def _key_difference(saved: Any, rows: Any) -> str:
    missing, extra = sorted(set(saved) - set(rows)), sorted(set(rows) - set(saved))
    parts = [f"the rows lack {missing}"] if missing else []
    if extra:
        parts.append(f"the rows have {extra}, which the saved ones do not")
    return " and ".join(parts)


def _write_rows(path: str, saved: torch.Tensor, rows: torch.Tensor, durable: bool) -> torch.Tensor:
    """Write ``rows`` right after the ``saved`` bytes of the leaf file ``path`` (created
    for a leaf that had no rows) and map the grown file."""
    old = saved.numel() * saved.element_size()
    shape = [saved.shape[0] + rows.shape[0], *saved.shape[1:]]
    flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | (0 if old else os.O_CREAT)
    try:
        fd = os.open(path, flags, 0o666)
    except FileNotFoundError:
        raise MissingFileError(f"{path!r} disappeared during the append") from None
    try:
        if os.fstat(fd).st_size != old:
            os.ftruncate(fd, old)  # a tail an append that was killed left: nobody maps it
        offset = old
        for chunk in tensor_chunks(rows.cpu()):
            while chunk:
                done = os.pwrite(fd, chunk, offset)
                chunk, offset = chunk[done:], offset + done
        if durable:
            os.fsync(fd)
        return map_opened_file(fd, path, saved.dtype, shape, "r+")
    finally:
        os.close(fd)


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

IO.append_in_place = append_in_place
