"""``print_directory_tree``: the files of a saved folder, with their total size.

A reading aid with the peer's name and output (``tensordict.utils.print_directory_tree``):
one line per folder (``name/``) and file, each level indented by four more spaces,
entries in directory order, the total size first. The lines are printed (the peer logs
them at ``INFO`` on a logger it gives a console handler, which shows them the same way)
and returned as one string. Links are listed, never followed.
"""

from __future__ import annotations

import os

from tclass.errors import MissingFileError

__all__ = ["print_directory_tree"]

_UNITS = ("B", "KB", "MB", "GB", "TB")


def print_directory_tree(
    path: str | os.PathLike[str], indent: str = "", display_metadata: bool = True
) -> str:
    """Prints the tree of files and folders under ``path`` and returns it as text.

    Args:
        path: a folder (or a file) to show.
        indent: put before every line; each level adds four spaces.
        display_metadata: start with a line giving the total size of the files.

    Raises:
        MissingFileError: if ``path`` does not exist.

    Example:
        >>> _ = print_directory_tree("/data/batch", display_metadata=False)
        batch/
            a.memmap
            meta.json
    """
    root = os.fspath(path)
    if not os.path.lexists(root):
        msg = f"print_directory_tree: {root!r} does not exist; give a saved folder or a file"
        raise MissingFileError(msg)
    lines: list[str] = []
    if display_metadata:
        lines.append(f"Directory size: {_human(_total_size(root))}")
    _walk(root, indent, lines)
    text = "\n".join(lines)
    print(text)  # noqa: T201  # what the function is for
    return text


def _walk(path: str, indent: str, lines: list[str]) -> None:
    name = os.path.basename(os.path.normpath(path))
    if os.path.isdir(path) and not os.path.islink(path):
        lines.append(f"{indent}{name}/")
        for entry in os.listdir(path):
            _walk(os.path.join(path, entry), indent + "    ", lines)
    else:
        lines.append(f"{indent}{name}")


def _total_size(path: str) -> int:
    if not os.path.isdir(path):
        return os.lstat(path).st_size
    total = 0
    for folder, _, files in os.walk(path):
        total += sum(os.lstat(os.path.join(folder, file)).st_size for file in files)
    return total


def _human(size: float) -> str:
    for unit in _UNITS[:-1]:
        if size < 1024.0:
            return f"{size:.2f} {unit}"
        size /= 1024.0
    return f"{size:.2f} {_UNITS[-1]}"
