"""The command line: ``python -m tclass info [--json] PATH``, ``python -m tclass --version``.

``info`` prints what a folder written by ``memmap``/``save`` holds (class, batch size,
each field's dtype, shape and size on disk, non-tensor values, totals), after running
the checks ``load_memmap`` runs: no user class is imported, no data file is mapped and
no pickle is read.

Exit status: 0 when ``load_memmap`` would load the folder (given its classes); 1 when
it would refuse it, with ``load_memmap``'s error on one ``error: ...`` line on stderr
(the tree, as far as it could be read, is printed first); 2 on a usage error.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import json
import os
import sys
from collections.abc import Sequence

import tclass
from tclass._io.memmap._info import describe, info_json, info_text
from tclass.errors import TclassError

__all__ = ["main", "version"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tclass", description="Tools for folders saved by tclass."
    )
    parser.add_argument("--version", action="version", version=f"tclass {version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    info = commands.add_parser(
        "info",
        help="describe a saved folder",
        description=(
            "Print a saved folder's tree: class, batch size, each field's dtype, shape and "
            "size (logical, and allocated on disk), non-tensor values (shortened), totals. "
            "Runs load_memmap's checks without importing the classes or reading the data; "
            "exits 1 with load_memmap's error when it would refuse the folder."
        ),
    )
    info.add_argument("path", metavar="PATH", help="a folder written by memmap/save/memmap_like")
    info.add_argument("--json", action="store_true", help="print the description as JSON")
    info.add_argument(
        "--allow-pickle",
        action="store_true",
        help="accept pickled values, as load_memmap(allow_pickle=True) does",
    )
    return parser


def version() -> str:
    """The installed distribution's version, or the package's own where tclass runs
    from a checkout that is not installed."""
    try:
        return importlib.metadata.version("tclass")
    except importlib.metadata.PackageNotFoundError:
        return tclass.__version__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as stop:  # argparse exits on --help (0) and on usage errors (2)
        return stop.code if isinstance(stop.code, int) else 2
    try:
        return _info(args.path, args.json, args.allow_pickle)
    except BrokenPipeError:  # the reader went away (`| head`): not an error worth a message
        _silence_stdout()
        return 1
    except RecursionError:
        _error(f"{args.path}: the folder is nested too deeply to describe")
        return 1
    except (TclassError, OSError) as error:
        _error(str(error))
        return 1


def _info(path: str, as_json: bool, allow_pickle: bool) -> int:
    info = describe(path, allow_pickle)
    if as_json:
        text = json.dumps(info_json(info), indent=2, ensure_ascii=False, allow_nan=False)
    else:
        text = info_text(info)
    _write(text + "\n")
    if info.problems:
        more = f" (and {len(info.problems) - 1} more)" if len(info.problems) > 1 else ""
        _error(f"{info.problems[0]}{more}; load_memmap would refuse this folder")
        return 1
    return 0


_ASCII_TREE = str.maketrans({"├": "|", "└": "`", "│": "|", "─": "-", "…": "~"})


def _write(text: str) -> None:
    stream = sys.stdout
    if isinstance(stream, io.TextIOWrapper):
        # A stream that cannot encode the tree (LANG=C, a Windows console) gets an ASCII
        # tree, and escapes for whatever else it cannot show, rather than a crash.
        try:
            "├└│─…".encode(stream.encoding)
        except (UnicodeEncodeError, LookupError):
            text = text.translate(_ASCII_TREE)
        stream.reconfigure(errors="backslashreplace")
    stream.write(text)
    stream.flush()


def _error(message: str) -> None:
    print("error: " + " ".join(message.splitlines()), file=sys.stderr)  # one line, always


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (an in-process caller)
        pass
    finally:
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
