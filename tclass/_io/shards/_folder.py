"""A sharded dataset's folder: its manifest, its shards, and how a writer claims one.

::

    dataset/
      manifest.json          {"format": "tclass.sharded", "version": 1, "class": ...,
                              "layout": [...], "schema": {...}}: written once, never changed
      shards/
        <shard id>/          one writer's: claimed by mkdir, held with flock while it writes
          writer.json        who claimed it last (host, pid, time): for people, not a lock
          rows/              a saved folder (memmap), grown by append_memmap

Nothing is shared between writers but the manifest, which the first writer creates (a
complete temporary file hard-linked into place, so the name appears complete or not at
all; a writer that loses the race reads the winner's and checks its rows against it) and
nobody rewrites. A shard is the list entry: ``mkdir`` gives a new shard id to one writer
only, and the writer holds an exclusive ``flock`` on its shard's folder until it closes
(or dies: the kernel drops the lock of a killed process), so two writers never append to
one shard. Each shard's ``rows/`` is created whole (a save into a new folder is staged and
renamed into place) and grown by ``append_memmap``, whose commit is one atomic swap: a
reader lists ``shards/`` and loads each ``rows/``, and sees committed rows only.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import secrets
import socket
import stat
import time
from dataclasses import dataclass
from typing import Any

from tclass._io.memmap._format import MAX_FILE_BYTES, META, TENSORCLASS_DIR
from tclass._io.memmap._write import replace_file, sync_path, temp_path, write_file
from tclass._io.shards._layout import Layout, difference, layout_from_json, layout_json
from tclass.errors import (
    ArgumentValueError,
    FileBusyError,
    FileConflictError,
    MetadataError,
    MissingFileError,
    NotAFileError,
    ShardSchemaError,
    UnsupportedError,
)

__all__ = [
    "FORMAT",
    "MANIFEST",
    "VERSION",
    "Claim",
    "Manifest",
    "check_shard_id",
    "ensure_manifest",
    "list_shards",
    "new_shard_id",
    "prepare_root",
    "read_manifest",
    "read_writer",
    "rows_folder",
    "saved_rows",
    "shard_folder",
]

FORMAT = "tclass.sharded"
VERSION = 1
MANIFEST = "manifest.json"
SHARDS = "shards"
ROWS = "rows"
WRITER = "writer.json"
_SHARD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


@dataclass(frozen=True)
class Manifest:
    """What ``manifest.json`` records: the record class (``module:QualName``, None for
    TensorDict rows), the layout every shard has, the class's declared fields."""

    path: str
    class_id: str | None
    layout: Layout
    schema: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "class": self.class_id,
            "layout": layout_json(self.layout),
            "schema": self.schema,
        }

    def check(self, class_id: str | None, layout: Layout | None, shard: str) -> None:
        """Refuse rows of another class or layout than the dataset's, naming ``shard``."""
        if class_id != self.class_id:
            mine, theirs = _class_text(class_id), _class_text(self.class_id)
            msg = (
                f"shard {shard!r} holds {mine}, but the sharded dataset {self.root!r} holds "
                f"{theirs} (its {MANIFEST}): every shard holds rows of one schema; write "
                "these rows to another dataset"
            )
            raise ShardSchemaError(msg, shard)
        problem = None if layout is None else difference(self.layout, layout)
        if problem is not None:
            msg = (
                f"shard {shard!r} does not fit the sharded dataset {self.root!r}: {problem} "
                f"(its {MANIFEST}); every shard holds rows of the same keys, dtypes and "
                "trailing shapes"
            )
            raise ShardSchemaError(msg, shard)

    @property
    def root(self) -> str:
        return os.path.dirname(self.path)


def _class_text(class_id: str | None) -> str:
    return "TensorDict rows" if class_id is None else f"records of class {class_id}"


def shard_folder(root: str, shard_id: str) -> str:
    return os.path.join(root, SHARDS, shard_id)


def rows_folder(root: str, shard_id: str) -> str:
    """The saved folder that holds a shard's committed rows."""
    return os.path.join(root, SHARDS, shard_id, ROWS)


def prepare_root(root: str) -> None:
    """Make ``root`` a sharded dataset's folder (``shards/`` in it), refusing a path that
    holds something else."""
    _refuse_other(root)
    os.makedirs(os.path.join(root, SHARDS), exist_ok=True)


def _refuse_other(root: str) -> None:
    try:
        status = os.stat(root)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(status.st_mode):
        raise NotAFileError(f"{root!r} is a file; a sharded dataset is a folder: give a folder")
    if os.path.exists(os.path.join(root, META)):
        msg = (
            f"{root!r} is a saved folder (it holds {META}), not a sharded dataset: load it "
            "with load_memmap, or give a new folder for the sharded dataset"
        )
        raise NotAFileError(msg)


def read_manifest(root: str) -> Manifest | None:
    """The dataset's manifest; None when no shard has rows yet (a folder with ``shards/``).

    Raises:
        MissingFileError: ``root`` is no folder, or holds neither manifest nor shards.
        NotAFileError: ``root`` is a file, or a saved folder.
        MetadataError: the manifest is malformed.
        UnsupportedError: it was written by a newer tclass.
    """
    path = os.path.join(root, MANIFEST)
    try:
        with open(path, "rb") as stream:
            raw = stream.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        if not os.path.exists(root):
            msg = f"no sharded dataset at {root!r}: the folder does not exist"
            raise MissingFileError(msg) from None
        _refuse_other(root)
        if not os.path.isdir(os.path.join(root, SHARDS)):
            msg = (
                f"{root!r} is not a sharded dataset: it holds neither {MANIFEST} nor "
                f"{SHARDS}/ (a writer, tclass.shard_writer, creates them)"
            )
            raise MissingFileError(msg) from None
        return None
    return _parse_manifest(raw, path)


def _parse_manifest(raw: bytes, path: str) -> Manifest:
    try:
        meta = json.loads(raw) if len(raw) <= MAX_FILE_BYTES else None
    except (ValueError, UnicodeDecodeError) as error:
        raise MetadataError(f"{path!r} is not valid JSON: {error}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        msg = f"{path!r} is not the manifest of a sharded dataset (no 'format': {FORMAT!r})"
        raise MetadataError(msg)
    version = meta.get("version")
    if type(version) is not int or version < 1:
        raise MetadataError(f"{path!r}: 'version' must be a positive int, got {version!r}")
    if version > VERSION:
        msg = (
            f"{path!r} was written by a newer tclass (sharded format version {version}; "
            f"this one reads up to {VERSION}): upgrade tclass to read it"
        )
        raise UnsupportedError(msg)
    class_id, schema = meta.get("class"), meta.get("schema")
    if class_id is not None and not (isinstance(class_id, str) and ":" in class_id):
        raise MetadataError(f"{path!r}: 'class' must be 'module:QualName' or null")
    if schema is not None and not isinstance(schema, dict):
        raise MetadataError(f"{path!r}: 'schema' must be an object or null")
    return Manifest(path, class_id, layout_from_json(meta.get("layout"), path), schema)


def ensure_manifest(root: str, wanted: Manifest, shard: str, durable: bool) -> Manifest:
    """The dataset's manifest: ``wanted``, written if there is none yet, else the one
    another writer wrote first, which ``wanted``'s class and layout must fit."""
    path = os.path.join(root, MANIFEST)
    data = _manifest_text(wanted.to_json()).encode()
    temp = temp_path(root, MANIFEST)
    write_file(temp, data)
    try:
        if durable:
            sync_path(temp)
        os.link(temp, path)  # fails if another writer's is there: never replaced
        if durable:
            sync_path(root)
        return wanted
    except FileExistsError:
        existing = read_manifest(root)
        assert existing is not None
        existing.check(wanted.class_id, wanted.layout, shard)
        return existing
    finally:
        os.unlink(temp)


def _manifest_text(manifest: dict[str, Any]) -> str:
    """The manifest's JSON, one top-level field (and one layout entry) a line."""
    lines = []
    for key, value in manifest.items():
        if key == "layout":
            entries = ",\n".join(f"  {json.dumps(entry)}" for entry in value)
            lines.append(f' "layout": [\n{entries}\n ]')
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def list_shards(root: str) -> list[str]:
    """The ids of the dataset's shards, sorted (hidden and foreign entries are skipped)."""
    try:
        entries = os.scandir(os.path.join(root, SHARDS))
    except FileNotFoundError:
        return []
    with entries:
        found = [
            entry.name
            for entry in entries
            if _SHARD_ID.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)
        ]
    return sorted(found)


def new_shard_id() -> str:
    """A new, unique shard id: the time (so ids sort by creation, roughly), the host, the
    process and 32 random bits."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:40].strip(".-") or "host"
    return f"{time.time_ns():016x}-{host}-{os.getpid()}-{secrets.token_hex(4)}"


def check_shard_id(shard_id: object) -> str:
    if not isinstance(shard_id, str) or not _SHARD_ID.fullmatch(shard_id):
        msg = (
            f"shard_id must be a name of letters, digits, '.', '_' and '-' (not starting with "
            f"'.', '_' or '-', at most 200 characters), got {shard_id!r}"
        )
        raise ArgumentValueError(msg)
    return shard_id


def saved_rows(path: str) -> int | None:
    """The rows the saved folder ``path`` holds, from its ``meta.json`` (a record's: its
    fields'), without loading it; None when unreadable (the caller loads it and learns
    why)."""
    for rel in (META, os.path.join(TENSORCLASS_DIR, META)):
        try:
            with open(os.path.join(path, rel), "rb") as stream:
                meta = json.loads(stream.read(MAX_FILE_BYTES))
        except (OSError, ValueError):
            return None
        shape = meta.get("shape") if isinstance(meta, dict) else None
        if isinstance(shape, list) and shape and type(shape[0]) is int:
            return shape[0]
    return None


def read_writer(root: str, shard_id: str) -> dict[str, Any] | None:
    """What ``writer.json`` says of the shard's last writer, if readable."""
    try:
        with open(os.path.join(shard_folder(root, shard_id), WRITER), "rb") as stream:
            found = json.loads(stream.read(1 << 16))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


class Claim:
    """A shard claimed by this process: its folder, held with an exclusive ``flock`` until
    :meth:`release` (or until the process ends).

    ``mode="x"`` claims a new shard (its folder is created: an existing one is a
    ``FileConflictError``); ``"a"`` claims the shard whether or not it exists, to append
    to its rows. A shard another live writer holds is a ``FileBusyError``."""

    def __init__(self, root: str, shard_id: str, mode: str, durable: bool) -> None:
        folder = shard_folder(root, shard_id)
        try:
            os.mkdir(folder)
        except FileExistsError:
            if mode == "x":
                msg = (
                    f"shard {shard_id!r} of {root!r} exists: pass mode='a' to append to it, "
                    "or another shard_id (None: a new unique one)"
                )
                raise FileConflictError(msg) from None
        self.fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(self.fd)
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            writer = read_writer(root, shard_id) or {}
            who = f" (pid {writer.get('pid')} on {writer.get('host')})" if writer else ""
            msg = (
                f"shard {shard_id!r} of {root!r} is being written by another writer{who}: "
                "two writers never share a shard; give another shard_id (None: a new one)"
            )
            raise FileBusyError(msg) from None
        self._write_writer(folder, durable)

    def _write_writer(self, folder: str, durable: bool) -> None:
        facts = {"host": socket.gethostname(), "pid": os.getpid(), "claimed": time.time()}
        replace_file(folder, WRITER, json.dumps(facts).encode())
        if durable:
            sync_path(folder)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # drops the flock
            self.fd = -1
