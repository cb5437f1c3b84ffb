"""One writer of a sharded dataset: ``shard_writer(path, cls_or_example)``.

A writer claims one shard (``_folder.Claim``: a new one by default, named by time, host,
process and random bits) and appends rows to it with ``append_memmap``, whose guarantees
it keeps: the rows are checked before anything is written, and each append is committed
at once for the whole tree, so a writer killed at any moment leaves every row it had
committed, and no part of the rest. The shard's saved folder is created empty (from an
example's first zero rows, or from the first rows appended when only a record class was
given), after its layout was checked against the dataset's manifest (or became it).
"""

from __future__ import annotations

import os
import weakref
from typing import Any, Generic, Literal, TypeVar, overload

from tclass._base.implemented._collection import TensorCollection
from tclass._core._records import is_record, is_record_class
from tclass._engine._nontensor import _NonTensorNode
from tclass._io._api import memmap
from tclass._io._schema import class_schema
from tclass._io.memmap._append import append_memmap
from tclass._io.memmap._format import class_id
from tclass._io.memmap._info import describe
from tclass._io.shards._folder import (
    MANIFEST,
    Claim,
    Manifest,
    check_shard_id,
    ensure_manifest,
    new_shard_id,
    prepare_root,
    read_manifest,
    rows_folder,
)
from tclass._io.shards._layout import Layout, layout_of, layout_of_info, saved_class
from tclass.errors import (
    AppendError,
    ArgumentValueError,
    ClosedFileError,
    EntryTypeError,
    MetadataError,
    UnpicklableError,
)

__all__ = ["ShardWriter", "shard_writer"]

R = TypeVar("R")
PathLike = str | os.PathLike[str]


class ShardWriter(Generic[R]):
    """Appends rows to one shard of a sharded dataset, which no other writer shares.

    Built by :func:`tclass.shard_writer`. Each :meth:`append` is committed when it
    returns: readers that open (or ``refresh()``) the dataset afterwards see the rows; a
    crash (even ``kill -9``) leaves every committed row and nothing of an append under way.
    A writer belongs to the process that made it (it holds the shard's lock); close it,
    or use it as a context manager, to let another writer resume the shard
    (``mode="a"``).
    """

    def __init__(
        self,
        path: PathLike,
        cls_or_example: type[R] | R,
        shard_id: str | None = None,
        *,
        mode: Literal["x", "a"] = "x",
        durable: bool = False,
    ) -> None:
        if mode not in ("x", "a"):
            raise ArgumentValueError(
                f"mode must be 'x' (a new shard) or 'a' (append), got {mode!r}"
            )
        self._root = os.path.abspath(os.fspath(path))
        self._cls, example = _class_and_example(cls_or_example)
        self._class_id = class_id(self._cls) if self._cls is not None else None
        self._durable = durable
        layout = None if example is None else layout_of(example)
        self._shard_id = new_shard_id() if shard_id is None else check_shard_id(shard_id)
        prepare_root(self._root)
        self._manifest = read_manifest(self._root)
        if self._manifest is not None:  # checked before claiming: nothing is created
            self._manifest.check(self._class_id, layout, self._shard_id)
        self._claim = Claim(self._root, self._shard_id, mode, durable)
        self._closed = weakref.finalize(self, self._claim.release)
        self._pid = os.getpid()
        self._rows_path = rows_folder(self._root, self._shard_id)
        try:
            self._count = self._resume() if os.path.isdir(self._rows_path) else -1
            if self._count < 0 and example is not None and layout is not None:
                self._create(example, layout)
        except BaseException:
            self.close()
            raise

    @property
    def shard_id(self) -> str:
        """The shard's id (its folder's name under ``shards/``)."""
        return self._shard_id

    @property
    def path(self) -> str:
        """The shard's saved folder (``load_memmap`` reads it; an append swaps it)."""
        return self._rows_path

    @property
    def dataset_path(self) -> str:
        return self._root

    @property
    def closed(self) -> bool:
        return not self._closed.alive

    def __len__(self) -> int:
        """The rows this shard has committed (0 before the first append)."""
        return max(self._count, 0)

    def append(self, rows: R) -> int:
        """Append ``rows`` (along their first batch dim) to the shard and commit them;
        return the shard's committed row count.

        Raises:
            AppendError: the rows are not of the dataset's class, or their keys, dtypes or
                trailing shapes differ from the shard's (a ``ShardSchemaError``, naming the
                shard, from the dataset's); nothing was written.
            ClosedFileError: the writer was closed, or belongs to another process.
        """
        self._check_usable()
        _check_rows(rows, self._cls)
        layout = layout_of(rows)
        if self._count < 0:
            self._create(rows, layout)
        else:
            assert self._manifest is not None
            self._manifest.check(self._class_id, layout, self._shard_id)
        append_memmap(self._rows_path, rows, durable=self._durable)
        self._count += rows.batch_size[0]  # type: ignore[attr-defined]
        return self._count

    def close(self) -> None:
        """Release the shard (its committed rows stay); later appends are refused."""
        self._closed()

    def __enter__(self) -> ShardWriter[R]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __reduce__(self) -> Any:
        msg = (
            "a ShardWriter cannot be pickled: it holds its shard's lock in this process. "
            "Open a writer in each process (tclass.shard_writer): each gets its own shard"
        )
        raise UnpicklableError(msg)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self)} rows"
        return f"ShardWriter({self._root!r}, shard_id={self._shard_id!r}, {state})"

    def _check_usable(self) -> None:
        if self.closed:
            raise ClosedFileError(f"the writer of shard {self._shard_id!r} is closed")
        if os.getpid() != self._pid:
            msg = (
                f"the writer of shard {self._shard_id!r} belongs to process {self._pid}; this "
                f"is {os.getpid()} (a fork?): open a writer here (tclass.shard_writer)"
            )
            raise ClosedFileError(msg)

    def _resume(self) -> int:
        """The committed rows of the claimed shard, whose layout must be the dataset's."""
        info = describe(self._rows_path)
        if info.problems:
            raise MetadataError(f"shard {self._shard_id!r}: {info.problems[0]}")
        if self._manifest is None:
            msg = (
                f"shard {self._shard_id!r} of {self._root!r} holds rows but the dataset has "
                "no manifest.json: the folder was changed by hand; restore the manifest"
            )
            raise MetadataError(msg)
        saved = saved_class(info.root, self._manifest.class_id)
        self._manifest.check(saved, layout_of_info(info.root), self._shard_id)
        return (info.root.batch_size or [0])[0]

    def _create(self, template: Any, layout: Layout) -> None:
        """Check ``template``'s layout against the manifest (write the manifest if there is
        none), then save the shard's first (empty) tree: zero rows of ``template``."""
        schema = None
        if self._cls is not None:
            fields, _ = class_schema(self._cls)
            schema = {"fields": {f.name: f.to_json() for f in fields}}
        wanted = Manifest(os.path.join(self._root, MANIFEST), self._class_id, layout, schema)
        self._manifest = ensure_manifest(self._root, wanted, self._shard_id, self._durable)
        memmap(template[:0], self._rows_path, existsok=False, durable=self._durable)
        self._count = 0


def _class_and_example(cls_or_example: Any) -> tuple[type | None, Any]:
    """The record class (None for TensorDict rows) and the example rows, if given."""
    if isinstance(cls_or_example, type):
        if is_record_class(cls_or_example):
            return cls_or_example, None
        msg = (
            f"shard_writer needs a tensorclass or example rows, got the class "
            f"{cls_or_example.__name__}: for TensorDict rows, give an example TensorDict "
            "(its keys, dtypes and shapes are the dataset's)"
        )
        raise EntryTypeError(msg)
    if not isinstance(cls_or_example, TensorCollection) or isinstance(
        cls_or_example, _NonTensorNode
    ):
        msg = (
            "shard_writer needs a tensorclass or example rows (a record or TensorDict), "
            f"got a {type(cls_or_example).__name__}"
        )
        raise EntryTypeError(msg)
    return (type(cls_or_example) if is_record(cls_or_example) else None), cls_or_example


def _check_rows(rows: Any, cls: type | None) -> None:
    if cls is not None and type(rows) is not cls:
        msg = (
            f"this shard holds {cls.__name__} records ({cls.__module__}.{cls.__qualname__}); "
            f"got a {type(rows).__name__}: append {cls.__name__} records"
        )
        raise AppendError(msg)
    if not isinstance(rows, TensorCollection) or isinstance(rows, _NonTensorNode):
        msg = f"rows must be a TensorDict or a tensorclass, got {type(rows).__name__}"
        raise EntryTypeError(msg)
    if cls is None and is_record(rows):
        msg = (
            f"this shard holds TensorDict rows; got a {type(rows).__name__} record: append "
            "rows.to_tensordict()"
        )
        raise AppendError(msg)


@overload
def shard_writer(
    path: PathLike,
    cls_or_example: type[R],
    shard_id: str | None = None,
    *,
    mode: Literal["x", "a"] = "x",
    durable: bool = False,
) -> ShardWriter[R]: ...
@overload
def shard_writer(
    path: PathLike,
    cls_or_example: R,
    shard_id: str | None = None,
    *,
    mode: Literal["x", "a"] = "x",
    durable: bool = False,
) -> ShardWriter[R]: ...
def shard_writer(
    path: PathLike,
    cls_or_example: Any,
    shard_id: str | None = None,
    *,
    mode: Literal["x", "a"] = "x",
    durable: bool = False,
) -> ShardWriter[Any]:
    """A writer of one shard of the sharded dataset in the folder ``path`` (created if
    needed), which no other writer shares.

    Args:
        path: the dataset's folder.
        cls_or_example: the record class of the rows (the shard is created at the first
            append, from the rows' dtypes and shapes), or example rows (a record or a
            TensorDict with a first batch dim: their class, keys, dtypes and trailing
            shapes are the shard's; the example itself is not written).
        shard_id: the shard's name (letters, digits, ``.``, ``_``, ``-``); None: a new
            unique one (time, host, process, random bits). Shards are read in the order
            of their ids.
        mode: ``"x"``: a new shard (an existing id is a ``FileConflictError``); ``"a"``:
            append to the shard, created if needed (to resume a writer that stopped).
        durable: fsync each commit (a power cut keeps it); a crash of the process keeps
            every commit without it.

    Raises:
        ShardSchemaError: the dataset holds rows of another class or layout (nothing is
            created).
        FileBusyError: another live writer holds the shard.
        FileConflictError: ``mode="x"`` and the shard exists.
        AppendError: the example cannot be a shard's rows (no batch dim, a lazy stack).
    """
    return ShardWriter(path, cls_or_example, shard_id, mode=mode, durable=durable)
