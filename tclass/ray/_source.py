"""Ray Data reading saved folders: the datasource of ``tclass.ray.read_memmap``.

A path is a saved folder, or a sharded dataset (``tclass/_io/shards``: its shards'
saved folders, in the dataset's order). The driver loads each folder once (records as
their fields' TensorDicts, no class needed) to plan: its rows (a snapshot: rows appended
or committed later are not read), its columns (``_columns.py``) and the blocks, row
ranges of ``rows_per_block`` rows that never span two folders. Each read task loads
its folder memory-mapped (``mode="r"``, again without classes or value checks), checks
that the planned columns are still there as planned, and turns its rows into one Arrow
table whose numeric buffers are the mapping itself: numpy views of the leaves' rows,
wrapped by Arrow without a copy (bool columns are bit-packed, a copy; bfloat16 and
float8 leaves are widened to float32). Ray then copies the table once, into its object
store, where readers map it: batches are views of the store. Python values become
string or Python-object columns.

This module imports Ray (it subclasses ``ray.data.Datasource``): ``tclass.ray`` imports
it on first use, after checking that Ray is installed.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ray.data import DataContext
from ray.data.block import BlockMetadata
from ray.data.datasource import Datasource, ReadTask
from ray.data.extensions import ArrowPythonObjectArray, ArrowTensorArray

from tclass._io._api import load_memmap
from tclass._io._optional import need
from tclass._io.memmap._format import META
from tclass._io.memmap._read import load_tree
from tclass._io.shards._dataset import ShardedDataset, open_sharded
from tclass._io.shards._folder import list_shards, read_manifest, rows_folder
from tclass.errors import ArgumentValueError, MetadataError
from tclass.ray._columns import Column, blocks_of, plan_columns, row_columns, select_columns

__all__ = ["FolderPlan", "MemmapDatasource", "folders_of", "plan_folder", "planned", "read_block"]

pa: Any = need("pyarrow", "ray", "tclass.ray")  # Ray Data's own dependency
_VALUE_BYTES = 64  # the size a Python value is guessed to take in a block
_DEFAULT_BLOCK_BYTES = 128 << 20  # Ray Data's default target block size


@dataclass(frozen=True)
class FolderPlan:
    """One saved folder as the driver found it: its path, rows and columns."""

    path: str
    rows: int
    columns: tuple[Column, ...]

    @property
    def row_bytes(self) -> int:
        total = 0
        for column in self.columns:
            if column.kind == "tensor":
                assert column.dtype is not None
                item = column.dtype.itemsize if column.dtype.itemsize >= 4 else 4
                total += item * math.prod(column.shape)
            else:
                total += _VALUE_BYTES
        return max(total, 1)


def plan_folder(
    path: str | os.PathLike[str], allow_pickle: bool, rows: int | None = None
) -> FolderPlan:
    """The plan of the saved folder ``path`` (loaded once, its records as their fields):
    its first ``rows`` rows (None: all it holds)."""
    where = repr(os.fspath(path))
    tree = load_tree(path, None, None, allow_pickle, "r", fields_only=True)
    columns = plan_columns(tree, where)
    held = int(tree.batch_size[0])
    return FolderPlan(os.path.abspath(os.fspath(path)), min(held, rows or held), tuple(columns))


def folders_of(
    path: str | os.PathLike[str], cls: type | None, allow_pickle: bool
) -> list[tuple[str, int | None]]:
    """The saved folders ``path`` stands for, each with the rows to read of it (None: all
    it holds): the folder itself, or the shards of a sharded dataset (in the dataset's
    order, each with the rows it has committed). With ``cls``, each is checked against
    the class here (its schema and its values), once.
    """
    root = os.path.abspath(os.fspath(path))
    if os.path.isfile(os.path.join(root, META)):  # a saved folder
        if cls is not None:
            load_memmap(root, cls=cls, mode="r", allow_pickle=allow_pickle)
        return [(root, None)]
    if cls is not None:
        data: ShardedDataset[Any] = open_sharded(root, cls)  # its snapshot, checked
        return [(shard.path, shard.rows) for shard in data.shards]
    read_manifest(root)  # a sharded dataset, or the error saying what the folder is
    shards = (rows_folder(root, shard) for shard in list_shards(root))
    return [(folder, None) for folder in shards if os.path.isdir(folder)]


def read_block(
    path: str, columns: Sequence[Column], start: int, stop: int, allow_pickle: bool
) -> list[Any]:
    """Rows ``start:stop`` of the folder ``path`` as one Arrow table (a read task)."""
    where = repr(path)
    tree = load_tree(path, None, None, allow_pickle, "r", fields_only=True)
    rows = int(tree.batch_size[0]) if tree.batch_size else 0
    if rows < stop:
        msg = (
            f"{where} holds {rows} rows, but the dataset was planned over {stop} or more: "
            "the folder was replaced by a shorter one since; read it again with "
            "tclass.ray.read_memmap"
        )
        raise MetadataError(msg)
    arrays = row_columns(tree, columns, start, stop, where)
    return [table_of(arrays, columns)]


def table_of(arrays: dict[str, Any], columns: Sequence[Column]) -> Any:
    """An Arrow table over ``arrays`` (``row_columns``' output): numeric columns wrap
    the arrays' memory (a tensor extension column for rows of more than one value)."""
    out = []
    for column in columns:
        values = arrays[column.name]
        if column.kind == "tensor":
            one = values.ndim == 1
            out.append(pa.array(values) if one else ArrowTensorArray.from_numpy(values))
        elif column.kind == "text":
            out.append(pa.array(values, type=pa.string()))
        else:
            out.append(ArrowPythonObjectArray.from_objects(values))
    return pa.Table.from_arrays(out, names=[column.name for column in columns])


class MemmapDatasource(Datasource):
    """The datasource of ``tclass.ray.read_memmap``: folders planned on the driver,
    one read task per block of rows (see the module docstring)."""

    def __init__(
        self,
        plans: Sequence[FolderPlan],
        rows_per_block: int | None,
        allow_pickle: bool,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self._projection_map: dict[str, str] | None = None
        self.plans = tuple(plans)
        self.rows_per_block = rows_per_block
        self.allow_pickle = allow_pickle

    def get_name(self) -> str:
        return "ReadTclassMemmap"

    def supports_projection_pushdown(self) -> bool:
        return True  # select_columns reads only the chosen columns

    def estimate_inmemory_data_size(self) -> int:
        return sum(plan.rows * plan.row_bytes for plan in self.plans)

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None
    ) -> list[ReadTask]:
        total = sum(plan.rows for plan in self.plans)
        tasks = []
        for plan in self.plans:
            columns = self._projected(plan.columns)
            size = self.rows_per_block or self._default_rows(plan, total, parallelism, data_context)
            for start, stop in blocks_of(plan.rows, size):
                read = functools.partial(
                    read_block, plan.path, columns, start, stop, self.allow_pickle
                )
                metadata = BlockMetadata(
                    num_rows=stop - start,
                    size_bytes=(stop - start) * plan.row_bytes,
                    input_files=None,
                    exec_stats=None,
                )
                tasks.append(ReadTask(read, metadata, per_task_row_limit=per_task_row_limit))
        return tasks

    def _projected(self, columns: tuple[Column, ...]) -> list[Column]:
        wanted = self._get_data_columns()
        if wanted is None:
            return list(columns)
        return [column for column in columns if column.name in wanted]

    @staticmethod
    def _default_rows(plan: FolderPlan, total: int, parallelism: int, context: Any) -> int:
        """At least ``parallelism`` blocks over all folders, each within Ray's target
        block size."""
        context = context or DataContext.get_current()
        target = getattr(context, "target_max_block_size", None) or _DEFAULT_BLOCK_BYTES
        fits = max(1, target // plan.row_bytes)
        spread = max(1, math.ceil(total / max(parallelism, 1)))
        return min(fits, spread)


def check_rows_per_block(rows_per_block: int | None) -> None:
    if rows_per_block is not None and (type(rows_per_block) is not int or rows_per_block < 1):
        msg = f"rows_per_block must be a positive int or None, got {rows_per_block!r}"
        raise ArgumentValueError(msg)


def planned(
    paths: Sequence[str | os.PathLike[str]],
    columns: Sequence[str] | None,
    cls: type | None,
    allow_pickle: bool,
) -> list[FolderPlan]:
    """The plans of the folders ``paths`` stand for (saved folders, sharded datasets),
    each restricted to ``columns``; every folder must have the first one's columns (the
    same dtypes and row shapes)."""
    folders = [found for path in paths for found in folders_of(path, cls, allow_pickle)]
    plans = [plan_folder(folder, allow_pickle, rows) for folder, rows in folders]
    if not plans:
        return []  # a sharded dataset without rows yet: a dataset of none
    first = plans[0]
    for plan in plans[1:]:
        if list(map(_signature, plan.columns)) != list(map(_signature, first.columns)):
            theirs = ", ".join(c.describe() for c in plan.columns)
            mine = ", ".join(c.describe() for c in first.columns)
            msg = (
                f"{plan.path!r} does not hold the columns of {first.path!r}, so their rows "
                f"cannot form one dataset: {theirs} against {mine}"
            )
            raise MetadataError(msg)
    # A column of values is text only when it is text in every folder.
    objects = {c.name for plan in plans for c in plan.columns if c.kind == "object"}
    unified = [
        replace(c, kind="object") if c.name in objects else c
        for c in select_columns(list(first.columns), columns)
    ]
    return [FolderPlan(plan.path, plan.rows, tuple(unified)) for plan in plans]


def _signature(column: Column) -> tuple[Any, ...]:
    """What folders must agree on for a column: its place, and a tensor's dtype and
    row shape (a column of values may be text in one folder, objects in another)."""
    kind = "tensor" if column.kind == "tensor" else "value"
    return column.key, kind, column.dtype, column.shape
