"""``load_memmap(..., subpath=...)``: the folder of one nested node of a saved tree.

The path is walked through each node's ``meta.json``, never joined from the caller's
string: a part names a nested key of a TensorDict (its folder name found as the reader
finds it), a member of a lazy stack, or a field of a record (its ``_tensordict/`` stepped
through, as the peer does; naming ``_tensordict`` explicitly works too). Every folder is
opened relative to its parent's descriptor without following links, so nothing outside
the saved folder is reached; ``..``, ``.`` and absolute paths are refused outright.
"""

from __future__ import annotations

from typing import Any

from tclass._core._keys import NestedKey, key_path
from tclass._io.memmap._classes import saved_class_name
from tclass._io.memmap._folder import Folder
from tclass._io.memmap._format import META, TENSORCLASS_DIR
from tclass._io.memmap._meta_file import read_header, read_meta, saved_marker
from tclass._io.memmap._read import _builtin_kind, _member_count, node_entries
from tclass._io.memmap._read_leaf import dir_name
from tclass.errors import InvalidKeyError, SubpathError, UnsafePathError

__all__ = ["descend", "subpath_parts"]


def subpath_parts(subpath: NestedKey | None) -> tuple[str, ...]:
    """The keys ``subpath`` steps through: ``"a/b"`` or ``("a", "b")``; ``""`` or None
    is the whole tree. A part that would leave the folder (``..``, ``.``, an absolute
    path, a NUL) is an UnsafePathError."""
    if subpath is None:
        return ()
    if isinstance(subpath, str):
        if subpath.startswith(("/", "\\")):
            raise UnsafePathError(
                f"subpath={subpath!r} is absolute; give a path inside the saved folder, like 'a/b'"
            )
        parts: tuple[str, ...] = tuple(
            part for part in subpath.split("/") if part
        )  # "a//b/" is "a/b"
    else:
        try:
            parts = key_path(subpath)
        except InvalidKeyError as error:
            raise SubpathError(
                f"subpath must be a '/'-separated string or a (nested) tuple of strings: {error}"
            ) from None
    for part in parts:
        if part in (".", "..") or "\x00" in part:
            msg = (
                f"subpath={subpath!r} holds {part!r}, a path step that could leave the "
                "saved folder; name nested keys only"
            )
            raise UnsafePathError(msg)
    return parts


def descend(root: Folder, parts: tuple[str, ...], subpath: NestedKey | None) -> Folder:
    """The open folder of the node ``parts`` name, stepping from ``root`` through each
    node's meta.json (a record's fields are in its ``_tensordict/``, which a part may
    also name); never a path joined from the parts, so nothing outside the folder is
    reached and no link is followed."""
    folder = root
    try:
        for index, part in enumerate(parts):
            meta, name = read_header(folder)
            kind, child = _builtin_kind(name), None
            if kind is None and part == TENSORCLASS_DIR:
                child = part
            elif kind is None:  # a record: its fields are one level down
                folder = _step(
                    folder, folder.folder(TENSORCLASS_DIR, "the fields of a record"), root
                )
                meta = read_meta(folder)
                name = saved_class_name(meta) or "nothing"
                kind = _builtin_kind(name)
            if child is not None:
                pass
            elif kind == "TensorDict":
                child = _entry_dir(folder, meta, part, parts[: index + 1], subpath)
            elif kind == "LazyStackedTensorDict":
                child = _member_name(folder, meta, part, parts[: index + 1], subpath)
            else:
                msg = (
                    f"subpath={subpath!r}: {folder.path!r} holds a {name}, which has "
                    "no nested collections"
                )
                raise SubpathError(msg)
            folder = _step(folder, folder.folder(child, f"the nested entry {part!r}"), root)
    except BaseException:
        if folder is not root:
            folder.close()
        raise
    return folder


def _step(previous: Folder, new: Folder, root: Folder) -> Folder:
    if previous is not root:
        previous.close()
    return new


def _entry_dir(
    folder: Folder,
    meta: dict[str, Any],
    part: str,
    so_far: tuple[str, ...],
    subpath: NestedKey | None,
) -> str:
    where = folder.child_path(META)
    nested = []
    for stored, key, entry in node_entries(meta, where):
        if key == part:
            if "type" not in entry:
                msg = (
                    f"subpath={subpath!r}: {'/'.join(so_far)!r} is a tensor, not a nested "
                    "collection; load its parent and read the key"
                )
                raise SubpathError(msg)
            return dir_name(folder, stored, key)
        if "type" in entry:
            nested.append(key)
    msg = (
        f"subpath={subpath!r}: {folder.path!r} has no nested collection {part!r} "
        f"(it has: {', '.join(map(repr, nested)) or 'none'})"
    )
    raise SubpathError(msg)


def _member_name(
    folder: Folder,
    meta: dict[str, Any],
    part: str,
    so_far: tuple[str, ...],
    subpath: NestedKey | None,
) -> str:
    count = _member_count(
        folder, saved_marker(meta, folder.child_path(META)).get("members"), folder.child_path(META)
    )
    if not (part.isascii() and part.isdigit() and str(int(part)) == part and int(part) < count):
        msg = (
            f"No tensordict found under subpath={subpath!r}: {'/'.join(so_far)!r} is not a "
            f"member of the lazy stack at {folder.path!r} (members 0 to {count - 1})"
        )
        raise SubpathError(msg)
    return part
