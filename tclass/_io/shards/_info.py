"""What a sharded dataset holds (``python -m tclass info FOLDER``): its schema, its shards
in the dataset's order with their committed rows, size on disk and last writer, and the
problems ``open_sharded`` would refuse (a shard of another schema, a damaged shard). As
``info`` of a saved folder: no class is imported, no data file mapped, nothing changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from tclass._io.memmap._format import META
from tclass._io.memmap._info import describe, human_size
from tclass._io.shards._folder import (
    FORMAT,
    MANIFEST,
    SHARDS,
    VERSION,
    Manifest,
    list_shards,
    read_manifest,
    read_writer,
    rows_folder,
)
from tclass._io.shards._layout import layout_json, layout_of_info, saved_class
from tclass.errors import ShardSchemaError

__all__ = [
    "ShardFacts",
    "ShardedInfo",
    "describe_sharded",
    "is_sharded",
    "sharded_json",
    "sharded_text",
]


@dataclass
class ShardFacts:
    shard_id: str
    rows: int
    start: int
    disk_bytes: int = 0
    writer: dict[str, Any] | None = None
    problem: str | None = None


@dataclass
class ShardedInfo:
    path: str
    manifest: Manifest | None
    shards: list[ShardFacts] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(shard.rows for shard in self.shards)

    @property
    def disk_bytes(self) -> int:
        return sum(shard.disk_bytes for shard in self.shards)


def is_sharded(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a sharded dataset's folder (not a saved folder)."""
    root = os.fspath(path)
    if os.path.isfile(os.path.join(root, MANIFEST)):
        return True
    return os.path.isdir(os.path.join(root, SHARDS)) and not os.path.exists(
        os.path.join(root, META)
    )


def describe_sharded(path: str | os.PathLike[str]) -> ShardedInfo:
    """The description of the sharded dataset at ``path``; what ``open_sharded`` would
    refuse is in ``problems`` (a shard's problem also in its ``problem``).

    Raises:
        TclassError: ``path`` is no sharded dataset, or its manifest is malformed.
    """
    root = os.path.abspath(os.fspath(path))
    info = ShardedInfo(root, read_manifest(root))
    start = 0
    for shard_id in list_shards(root):
        facts = _shard(root, shard_id, info.manifest, start)
        start += facts.rows
        info.shards.append(facts)
        if facts.problem is not None:
            info.problems.append(f"shard {shard_id!r}: {facts.problem}")
    return info


def _shard(root: str, shard_id: str, manifest: Manifest | None, start: int) -> ShardFacts:
    facts = ShardFacts(shard_id, 0, start, writer=read_writer(root, shard_id))
    path = rows_folder(root, shard_id)
    if not os.path.isdir(path):
        return facts  # claimed, nothing committed yet
    described = describe(path)
    facts.disk_bytes = described.disk_bytes
    if described.problems:
        facts.problem = described.problems[0]
        return facts
    facts.rows = (described.root.batch_size or [0])[0]
    if manifest is None:
        facts.problem = f"it holds rows, but the dataset has no {MANIFEST}"
        return facts
    try:
        saved = saved_class(described.root, manifest.class_id)
        manifest.check(saved, layout_of_info(described.root), shard_id)
    except ShardSchemaError as error:
        facts.problem = str(error)
    return facts


def sharded_text(info: ShardedInfo) -> str:
    """The human-readable description (no trailing newline)."""
    manifest = info.manifest
    held = "no rows yet" if manifest is None else (manifest.class_id or "TensorDict rows")
    lines = [f"{info.path}  sharded dataset ({FORMAT} v{VERSION})  {held}"]
    if manifest is not None:
        fields = (manifest.schema or {}).get("fields") or {}
        names = {key: ".".join(key) or "(rows)" for key in manifest.layout}
        width = max(len(name) for name in names.values())
        lines.append("schema (every shard; dims after the first):")
        for key, text in sorted(manifest.layout.items()):
            declared = fields.get(key[0], {}).get("annotation") if len(key) == 1 else None
            note = f"  : {declared}" if isinstance(declared, str) and declared != "Tensor" else ""
            lines.append(f"  {names[key]:<{width}}  {text}{note}")
    if info.shards:
        lines.append("shards (in the dataset's order):")
        id_width = max(len(shard.shard_id) for shard in info.shards)
        row_width = max(len(f"{shard.rows:,}") for shard in info.shards)
        for shard in info.shards:
            text = f"  {shard.shard_id:<{id_width}}  {shard.rows:>{row_width},} rows"
            text += f"  {human_size(shard.disk_bytes):>9}"
            if shard.writer is not None:
                text += f"  writer pid {shard.writer.get('pid')} on {shard.writer.get('host')}"
            if shard.problem is not None:
                text += f"  !! {shard.problem}"
            lines.append(text)
    count = len(info.shards)
    lines.append(
        f"total: {count} shard{'' if count == 1 else 's'}, {info.rows:,} rows, "
        f"{human_size(info.disk_bytes)} on disk"
    )
    if info.problems:
        lines.append(f"problems: {len(info.problems)} (open_sharded would refuse this dataset)")
    return "\n".join(lines)


def sharded_json(info: ShardedInfo) -> dict[str, Any]:
    """The description as JSON-ready data (``info --json``)."""
    manifest = info.manifest
    shards = [
        {
            "id": shard.shard_id,
            "rows": shard.rows,
            "start": shard.start,
            "disk_bytes": shard.disk_bytes,
            "writer": shard.writer,
            "problem": shard.problem,
        }
        for shard in info.shards
    ]
    return {
        "path": info.path,
        "format": FORMAT,
        "version": VERSION,
        "class": None if manifest is None else manifest.class_id,
        "layout": None if manifest is None else layout_json(manifest.layout),
        "schema": None if manifest is None else manifest.schema,
        "shards": shards,
        "totals": {"shards": len(info.shards), "rows": info.rows, "disk_bytes": info.disk_bytes},
        "problems": list(info.problems),
    }
