"""Ray Data over tclass datasets: saved folders and sharded datasets read as
``ray.data.Dataset``s, datasets written as sharded datasets, batches back as records.

``pip install 'tclass[ray]'`` (Ray Data 2.50 or later; tested with 2.60). Importing this
module imports nothing of Ray; each function that needs it imports it when called, and
raises :class:`~tclass.errors.MissingDependencyError` naming the extra when it is not
installed. (Records themselves need nothing from here to travel through Ray: see
``tclass/_engine/_pickle5.py``.)

* :func:`read_memmap` — a folder written by ``memmap``/``save``/``append_memmap``, a
  sharded dataset (or several of either, with the same columns) as a Dataset of one row
  per index of the first batch dim, one block per range of rows. Columns are the leaves,
  named by their key paths joined with ``"."`` (``meta.seed``); Python values are string
  or Python-object columns. Read tasks map the files and hand Arrow views of the rows to
  Ray, which copies each block once, into its object store (``_source.py``).
* :func:`write_memmap` — a Dataset written into a sharded dataset
  (``tclass.shard_writer``, ``tclass.open_sharded``), one shard per write task, grown
  block by block; with ``cls``, each block is checked against the class's schema
  (``_sink.py``).
* :func:`iter_records` — a Dataset's batches as records of a class (nested records and
  Python values rebuilt), views of Ray's object store; :func:`to_record` and
  :func:`to_batch` convert one batch each way, e.g. in ``map_batches``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

import numpy as np

from tclass._core._device import DeviceLike
from tclass._engine._td import TensorDict
from tclass._io._optional import need
from tclass._io.shards._dataset import ShardedDataset, open_sharded
from tclass._io.shards._folder import prepare_root
from tclass.errors import ArgumentValueError, MissingDependencyError, TclassError
from tclass.ray._columns import SEPARATOR, to_columns
from tclass.ray._columns import to_record as _to_record

if TYPE_CHECKING:
    from ray.data import Dataset

__all__ = ["SEPARATOR", "iter_records", "read_memmap", "to_batch", "to_record", "write_memmap"]

C = TypeVar("C")
PathLike = str | os.PathLike[str]

MINIMUM_RAY = (2, 50)  # Ray Data's datasource and datasink interfaces as tclass uses them


def _ray_data(what: str) -> Any:
    """The ``ray`` module, once Ray Data (at ``MINIMUM_RAY`` or later) is known to import.

    Raises:
        MissingDependencyError: Ray or Ray Data is missing or too old, naming the extra.
    """
    ray = need("ray", "ray", what)
    need("ray.data", "ray", what)
    release = tuple(int(part) for part in ray.__version__.split(".")[:2] if part.isdigit())
    if release < MINIMUM_RAY:
        wanted = ".".join(map(str, MINIMUM_RAY))
        msg = (
            f"{what} needs Ray {wanted} or later, got {ray.__version__}: install it with "
            f"pip install 'tclass[ray]' (or pip install 'ray[data]>={wanted}')"
        )
        raise MissingDependencyError(msg)
    return ray


def read_memmap(
    path: PathLike | Sequence[PathLike],
    *,
    rows_per_block: int | None = None,
    columns: Sequence[str] | None = None,
    cls: type | None = None,
    allow_pickle: bool = False,
    **read_args: Any,
) -> Dataset:
    """A Ray dataset of the rows saved in the folder ``path``: a saved folder, or a
    sharded dataset (the rows of its shards, in its order); or of those of each in a
    sequence, in that order. Read lazily by Ray Data's tasks.

    The rows are those saved (committed) when this is called: rows appended later are not
    read (call it again for them); a folder replaced by another since is an error in the
    task reading it. Each read task maps its folder and reads one block: the rows
    ``start:stop`` of every column (see the module doc), with no copy before Ray's own
    into its object store.

    Args:
        path: a folder written by ``memmap``/``save``/``append_memmap``, a sharded
            dataset (``shard_writer``, ``write_memmap``), or a sequence of them with the
            same columns.
        rows_per_block: the rows of each block (and read task). By default, enough
            blocks for Ray's requested parallelism, each within its target block size
            (128 MiB by default).
        columns: the columns to read (a name selects a column, or all those nested
            under it: ``"meta"``); all of them by default. ``Dataset.select_columns``
            also reads only those it selects.
        cls: a record class the folders must hold: each is loaded once with it here
            (a sharded dataset: opened with it), which checks its schema and its values'
            constraints. Without it, no class needs to be importable.
        allow_pickle: read Python values saved as pickles (``load_memmap``'s option).
        read_args: passed to ``ray.data.read_datasource``: the read tasks' resources
            (``num_cpus``, ``resources``...), ``concurrency``, ``override_num_blocks``.

    Raises:
        MissingDependencyError: Ray Data is not installed.
        ShapeError: a folder holds a collection without batch dims.
        InvalidKeyError: a key holds ``"."``, the separator of nested column names.
        UnsupportedError: a complex tensor (Arrow has none), or a lazy stack.
        MetadataError: the folders do not hold the same columns.
        MissingFileError: ``path`` holds neither a saved folder nor a sharded dataset.
        ArgumentValueError: a column name that matches no column.
    """
    ray = _ray_data("tclass.ray.read_memmap")
    # Imported here, not at the top: this module subclasses Ray's, which is optional.
    from tclass.ray import _source

    _source.check_rows_per_block(rows_per_block)
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not paths:
        raise ArgumentValueError("read_memmap needs at least one folder, got an empty sequence")
    plans = _source.planned(paths, columns, cls, allow_pickle)
    source = _source.MemmapDatasource(plans, rows_per_block, allow_pickle)
    if rows_per_block is not None and read_args.get("override_num_blocks") is None:
        # As many blocks as planned: Ray would otherwise split them to reach its minimum.
        blocks = sum(-(-plan.rows // rows_per_block) for plan in plans)
        read_args["override_num_blocks"] = max(1, blocks)
    dataset: Dataset = ray.data.read_datasource(source, **read_args)
    return dataset


def write_memmap(
    ds: Dataset,
    path: PathLike,
    cls: type[C] | None = None,
    *,
    durable: bool = False,
    **write_args: Any,
) -> ShardedDataset[C]:
    """Write the dataset ``ds`` into the sharded dataset in the folder ``path`` (created
    if needed; a dataset already there gets new shards, which must hold its class and
    columns), one shard per write task, written by ``tclass.shard_writer``. Returns the
    dataset as ``tclass.open_sharded(path, cls)`` opens it after the write.

    Columns are named as :func:`read_memmap` names them (``"."`` joins nested keys). With
    ``cls``, each block must fit the class: its fields (a column for each it requires, no
    other), their dtypes, shapes, named dims and value constraints, and its Python values'
    annotations, as its constructor checks a record; a column whose field's spec names
    one dtype is converted to it when that dtype holds every value exactly. Each block is
    committed when appended (readers opening the dataset meanwhile see it); a write that
    fails removes the shards it made, and the shards of task attempts Ray ran again are
    removed when the write succeeds (no row twice). ``path`` must be on a filesystem every
    node that writes sees, and the driver. ``durable``: fsync each commit.
    ``write_args`` go to ``Dataset.write_datasink`` (``ray_remote_args``, ``concurrency``).

    Raises:
        MissingDependencyError: Ray Data is not installed.
        NotAFileError: ``path`` is a file, or a saved folder (not a sharded dataset).
        FieldSpecError: a block does not fit ``cls`` (the message names the write task,
            the block and its rows, and each field, as ``.problems`` does).
        ShardSchemaError: a block's rows differ from the dataset's class, keys, dtypes or
            trailing shapes (those of the first shard written, or of the shards there).
        NotSerializableError: a Python value that JSON cannot hold.
    """
    _ray_data("tclass.ray.write_memmap")
    from tclass.ray import _sink  # subclasses Ray's Datasink: imported once Ray is there

    target = os.path.abspath(os.fspath(path))
    prepare_root(target)  # refuses a file or a saved folder before any task runs
    sink = _sink.MemmapDatasink(target, cls, _sink.new_write_id(), durable)
    try:
        ds.write_datasink(sink, **write_args)
    except Exception as error:
        raise _tclass_cause(error) from None
    return open_sharded(target, cls)


def _tclass_cause(error: Exception) -> Exception:
    """The tclass error a Ray task raised, out of Ray's wrappers (Ray re-raises a
    task's error as a subclass of both, chained to Ray Data's own), or ``error``."""
    seen: Exception | None = error
    while seen is not None:
        if isinstance(seen, TclassError):
            cause = getattr(seen, "cause", None)  # RayTaskError(X): its .cause is the X
            return cause if isinstance(cause, TclassError) else seen
        following = seen.__cause__ or seen.__context__
        seen = following if isinstance(following, Exception) else None
    return error


@overload
def iter_records(
    ds: Any,
    cls: type[C],
    *,
    batch_size: int | None = ...,
    device: DeviceLike = ...,
    drop_last: bool = ...,
    local_shuffle_buffer_size: int | None = ...,
    local_shuffle_seed: int | None = ...,
    prefetch_batches: int = ...,
) -> Iterator[C]: ...
@overload
def iter_records(
    ds: Any,
    cls: None = ...,
    *,
    batch_size: int | None = ...,
    device: DeviceLike = ...,
    drop_last: bool = ...,
    local_shuffle_buffer_size: int | None = ...,
    local_shuffle_seed: int | None = ...,
    prefetch_batches: int = ...,
) -> Iterator[TensorDict]: ...


def iter_records(
    ds: Any,
    cls: type[Any] | None = None,
    *,
    batch_size: int | None = 256,
    device: DeviceLike = None,
    drop_last: bool = False,
    local_shuffle_buffer_size: int | None = None,
    local_shuffle_seed: int | None = None,
    prefetch_batches: int = 1,
) -> Iterator[Any]:
    """The batches of ``ds`` (a Dataset, or a ``DataIterator`` such as a Ray Train
    worker's shard) as records of ``cls`` (TensorDicts without one), of batch size
    ``[rows]``: Ray's ``iter_batches`` in numpy format, each batch rebuilt by
    :func:`to_record`. On the CPU the tensors are views of Ray's object store
    (read-only: ``ReadOnlyTensor``, ``clone()`` for a writable copy); ``device`` moves
    each batch there. The other arguments are ``iter_batches``'.

    Raises:
        MissingDependencyError: Ray Data is not installed.
        FieldSpecError: a batch does not fit ``cls`` (a missing field, an unknown
            column, a dtype, shape, named dim or value constraint, a Python value its
            field's annotation refuses).
    """
    _ray_data("tclass.ray.iter_records")
    batches = ds.iter_batches(
        batch_size=batch_size,
        batch_format="numpy",
        drop_last=drop_last,
        local_shuffle_buffer_size=local_shuffle_buffer_size,
        local_shuffle_seed=local_shuffle_seed,
        prefetch_batches=prefetch_batches,
    )
    return (_to_record(batch, cls, device) for batch in batches)


@overload
def to_record(batch: Mapping[str, Any], cls: type[C], *, device: DeviceLike = ...) -> C: ...
@overload
def to_record(
    batch: Mapping[str, Any], cls: None = ..., *, device: DeviceLike = ...
) -> TensorDict: ...


def to_record(
    batch: Mapping[str, Any], cls: type[Any] | None = None, *, device: DeviceLike = None
) -> Any:
    """One batch of columns (a dict of numpy arrays or tensors, as Ray Data's numpy
    batches are) as a record of ``cls`` (a TensorDict without one) of batch size
    ``[rows]``: names split at ``"."`` into nested keys, numeric columns as tensors over
    the arrays' memory, other columns as Python values; with ``cls``, its fields decide
    and its constructor checks the record. Needs no Ray.

    Raises:
        ShapeError: the columns hold different numbers of rows.
        KeyConflictError: a name is both a column and a prefix of others.
        FieldSpecError: the columns do not fit ``cls`` (a missing field, an unknown
            column, a dtype, shape, named dim or value constraint, a Python value its
            field's annotation refuses).
    """
    return _to_record(batch, cls, device)


def to_batch(record: Any) -> dict[str, np.ndarray[Any, Any]]:
    """A collection's rows as a batch of columns, as :func:`read_memmap` names them:
    numpy arrays over the tensors' memory (rows along the first batch dim), object
    arrays of the Python values; what a ``map_batches`` function returns to Ray Data.
    Needs no Ray.

    Raises:
        ShapeError: the collection has no batch dim.
        InvalidKeyError: a key holds ``"."``.
        UnsupportedError: a complex tensor, or a lazy stack.
    """
    return to_columns(record)
