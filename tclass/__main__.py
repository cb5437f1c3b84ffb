"""The command line: ``python -m tclass info [--json] PATH``.

``info`` prints what a folder written by ``memmap``/``save`` holds (class, batch size,
each field's dtype, shape and size on disk, non-tensor values, totals), read from its
``meta.json`` files only: no user class is imported and no data is read.

Exit status: 0 on success; 1 when the folder is missing or damaged (one ``error: ...``
line on stderr; for damaged leaf files the tree is still printed first); 2 on a usage
error.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Sequence

from tclass._io._info import describe, info_json, info_text
from tclass.errors import TclassError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tclass", description="Tools for folders saved by tclass.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    info = commands.add_parser(
        "info",
        help="describe a saved folder",
        description=(
            "Print a saved folder's tree: class, batch size, each field's dtype, shape and "
            "size (logical, and allocated on disk), non-tensor values (shortened), totals. "
            "Reads meta.json files only: the classes need not be importable."
        ),
    )
    info.add_argument("path", metavar="PATH", help="a folder written by memmap/save/memmap_like")
    info.add_argument("--json", action="store_true", help="print the description as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as stop:  # argparse exits on --help (0) and on usage errors (2)
        return stop.code if isinstance(stop.code, int) else 2
    try:
        return _info(args.path, args.json)
    except BrokenPipeError:  # the reader went away (`| head`): not an error worth a message
        _silence_stdout()
        return 1
    except RecursionError:
        _error(f"{args.path}: the folder is nested too deeply to describe")
        return 1
    except (TclassError, OSError) as error:
        _error(str(error))
        return 1


def _info(path: str, as_json: bool) -> int:
    info = describe(path)
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
