"""Ray Data writing a sharded dataset: the datasink of ``tclass.ray.write_memmap``.

The target is a sharded dataset (``tclass/_io/shards``: a manifest and one saved folder
per shard, each grown by one writer); each write task writes the blocks it is given into
a shard of its own, through ``shard_writer``. Each block is first turned into rows of the
declared class (``_columns.to_record``: the class's constructor checks dtypes, shapes,
named dims, value constraints and fields), then appended and committed
(``ShardWriter.append``: the rows must have the dataset's class, keys, dtypes and
trailing shapes, as its manifest records them). A block that does not fit raises with the
block named (``write task 2, block 0, its rows 0-255``); nothing of that block is written.

The shards of one write are named ``<write>-<task>-<random>``, ``<write>`` starting with
the time: they sort after the shards already there, in task order. A write task that Ray
runs again (its worker died) writes a new shard: when every task has succeeded, the
driver removes the shards of this write that no successful task returned (what the
failed attempts committed), so that no row is there twice. A failed write removes every
shard it made. Readers that open the dataset while a write is under way see the rows
committed so far.

This module imports Ray (it subclasses ``ray.data.Datasink``): ``tclass.ray`` imports it
on first use, after checking that Ray is installed.
"""

from __future__ import annotations

import secrets
import shutil
import time
from collections.abc import Iterable
from typing import Any, cast

from ray.data.block import Block, BlockAccessor
from ray.data.datasource import Datasink, WriteResult

from tclass._io.shards._folder import list_shards, shard_folder
from tclass._io.shards._writer import ShardWriter, shard_writer
from tclass.errors import FieldSpecError, ShardSchemaError, TclassError
from tclass.ray._columns import to_record

__all__ = ["MemmapDatasink", "new_write_id"]


def new_write_id() -> str:
    """The prefix of one write's shards: the time (so that writes sort in order), and
    random bits."""
    return f"{time.time_ns():016x}-w{secrets.token_hex(3)}"


class MemmapDatasink(Datasink[str | None]):
    """The datasink of ``tclass.ray.write_memmap`` (see the module docstring): each
    write task returns the id of the shard it wrote, or None for no rows."""

    def __init__(self, path: str, cls: type | None, write_id: str, durable: bool) -> None:
        self.path = path
        self.cls = cls
        self.write_id = write_id
        self.durable = durable

    def get_name(self) -> str:
        return "WriteTclassShards"

    def write(self, blocks: Iterable[Block], ctx: Any) -> str | None:
        task = int(ctx.task_idx)
        shard_id = f"{self.write_id}-{task:05d}-{secrets.token_hex(2)}"
        writer: ShardWriter[Any] | None = None
        rows = 0
        try:
            for index, block in enumerate(blocks):
                accessor = BlockAccessor.for_block(block)
                count = accessor.num_rows()
                if not count:
                    continue
                where = f"write task {task}, block {index} (its rows {rows}-{rows + count - 1})"
                record = _record_of(cast(dict[str, Any], accessor.to_numpy()), self.cls, where)
                try:
                    if writer is None:
                        template = self.cls if self.cls is not None else record
                        writer = shard_writer(self.path, template, shard_id, durable=self.durable)
                    writer.append(record)
                except ShardSchemaError as error:
                    raise ShardSchemaError(f"write_memmap: {where}: {error}", error.shard) from None
                rows += count
        finally:
            if writer is not None:
                writer.close()
        return shard_id if rows else None

    def on_write_complete(self, write_result: WriteResult[str | None]) -> None:
        kept = {shard for shard in write_result.write_returns if shard is not None}
        self._remove_shards(kept)

    def on_write_failed(self, error: Exception) -> None:
        self._remove_shards(set())

    def _remove_shards(self, kept: set[str]) -> None:
        """Remove this write's shards but ``kept`` (those of failed attempts)."""
        prefix = self.write_id + "-"
        for shard in list_shards(self.path):
            if shard.startswith(prefix) and shard not in kept:
                shutil.rmtree(shard_folder(self.path, shard), ignore_errors=True)


def _record_of(batch: dict[str, Any], cls: type | None, where: str) -> Any:
    """The block ``batch`` as rows of ``cls``, an error naming the block otherwise."""
    try:
        return to_record(batch, cls)
    except FieldSpecError as error:
        raise FieldSpecError(f"write_memmap: {where}: {error}", error.problems) from None
    except TclassError as error:
        raise type(error)(f"write_memmap: {where}: {error}") from None
