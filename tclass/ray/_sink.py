"""Ray Data writing saved folders: the datasink of ``tclass.ray.write_memmap``.

Each write task writes the blocks it is given into a folder of its own under ``path``:
each block is turned into rows of the declared class (``_columns.to_record``: the class's
constructor checks dtypes, shapes, named dims, value constraints and fields), saved by
the first block (``memmap``) and appended by the next ones (``append_memmap``, which
checks each block against the folder's keys, dtypes and row shapes). A block that does
not fit raises the class's error with the block named (``write task 2, block 0, rows
0-255``); nothing of that block is written.

A task writes into a staging folder (``.writing-<task>-<random>``); once every task has
succeeded, the driver checks that the folders hold the same columns and renames them
``shard-00000``, ``shard-00001``... in task order, then removes what failed attempts
left. A write that fails leaves no shard, only its staging folders, which the next
``write_memmap`` to an empty folder would refuse: remove them.

This module imports Ray (it subclasses ``ray.data.Datasink``): ``tclass.ray`` imports it
on first use, after checking that Ray is installed.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterable
from typing import Any, cast

from ray.data.block import Block, BlockAccessor
from ray.data.datasource import Datasink, WriteResult

from tclass._io.memmap._append import append_memmap
from tclass.errors import FieldSpecError, FileConflictError, MetadataError, TclassError
from tclass.ray._columns import Column, to_record
from tclass.ray._source import plan_folder

__all__ = ["MemmapDatasink", "SHARD"]

SHARD = "shard-{:05d}"
_STAGING = ".writing-"

Written = dict[str, Any]  # what a write task returns: its task index, folder and rows


class MemmapDatasink(Datasink[Written | None]):
    """The datasink of ``tclass.ray.write_memmap`` (see the module docstring)."""

    def __init__(self, path: str, cls: type | None, allow_pickle: bool) -> None:
        self.path = path
        self.cls = cls
        self.allow_pickle = allow_pickle
        self.shards: list[str] = []

    def get_name(self) -> str:
        return "WriteTclassMemmap"

    def on_write_start(self, schema: Any = None) -> None:
        os.makedirs(self.path, exist_ok=True)
        if os.listdir(self.path):
            msg = (
                f"write_memmap writes a new dataset, but {self.path!r} is not empty: write "
                "into a new folder (or remove what it holds)"
            )
            raise FileConflictError(msg)

    def write(self, blocks: Iterable[Block], ctx: Any) -> Written | None:
        task = int(ctx.task_idx)
        folder = os.path.join(self.path, f"{_STAGING}{task:05d}-{uuid.uuid4().hex[:12]}")
        rows = 0
        for index, block in enumerate(blocks):
            accessor = BlockAccessor.for_block(block)
            count = accessor.num_rows()
            if not count:
                continue
            batch = cast(dict[str, Any], accessor.to_numpy())  # every column, by name
            last = rows + count - 1
            where = f"write_memmap: write task {task}, block {index} (its rows {rows}-{last})"
            try:
                record = to_record(batch, self.cls)
            except FieldSpecError as error:
                raise FieldSpecError(f"{where}: {error}", error.problems) from None
            except TclassError as error:
                raise type(error)(f"{where}: {error}") from None
            if rows:
                append_memmap(folder, record, allow_pickle=self.allow_pickle)
            else:
                record.memmap(folder, allow_pickle=self.allow_pickle)
            rows += count
        return {"task": task, "folder": folder, "rows": rows} if rows else None

    def on_write_complete(self, write_result: WriteResult[Written | None]) -> None:
        written = sorted(
            (w for w in write_result.write_returns if w is not None), key=lambda w: w["task"]
        )
        try:
            _check_same_columns([w["folder"] for w in written], self.allow_pickle)
        except TclassError:
            self._remove_staging()
            raise
        for number, w in enumerate(written):
            shard = os.path.join(self.path, SHARD.format(number))
            os.rename(w["folder"], shard)
            self.shards.append(shard)
        self._remove_staging()

    def on_write_failed(self, error: Exception) -> None:
        self._remove_staging()

    def _remove_staging(self) -> None:
        if not os.path.isdir(self.path):
            return
        for name in os.listdir(self.path):
            if name.startswith(_STAGING):
                shutil.rmtree(os.path.join(self.path, name), ignore_errors=True)


def _check_same_columns(folders: list[str], allow_pickle: bool) -> None:
    """The folders the tasks wrote hold the same columns (the same dtypes and row
    shapes: each task checked its own blocks, not the others')."""
    plans = [plan_folder(folder, allow_pickle) for folder in folders]
    for plan in plans[1:]:
        if _tensor_columns(plan.columns) != _tensor_columns(plans[0].columns):
            mine = ", ".join(c.describe() for c in plans[0].columns)
            theirs = ", ".join(c.describe() for c in plan.columns)
            msg = (
                f"write_memmap: the write tasks wrote rows of different columns ({mine} in "
                f"one, {theirs} in another), which cannot form one dataset; nothing was "
                "kept: make the blocks agree (or declare cls=, whose schema fixes them)"
            )
            raise MetadataError(msg)


def _tensor_columns(columns: Iterable[Column]) -> list[tuple[Any, ...]]:
    return [(c.key, c.kind == "tensor", c.dtype, c.shape) for c in columns]
