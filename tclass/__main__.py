"""The command line: ``python -m tclass info [--json] PATH``, ``python -m tclass schema
TARGET``, ``python -m tclass --version``.

``info`` prints what a folder written by ``memmap``/``save`` holds (class, batch size,
each field's dtype, shape and size on disk, non-tensor values, totals), after running
the checks ``load_memmap`` runs: no user class is imported, no data file is mapped and
no pickle is read. Of a sharded dataset's folder (``shard_writer``), it prints the schema
every shard shares and each shard's committed rows, size and last writer.

Exit status: 0 when ``load_memmap`` would load the folder (given its classes); 1 when
it would refuse it, with ``load_memmap``'s error on one ``error: ...`` line on stderr
(the tree, as far as it could be read, is printed first); 2 on a usage error.

``schema`` prints a record class's JSON Schema document (``Cls.json_schema()``): of the
class ``module:QualName`` (the module is imported: it is the caller's own code), or
the one a saved folder (or ``.tdz`` archive) records (its ``_tensordict/schema.json``, or
inline in the ``meta.json`` beside it as earlier versions wrote it), read without
importing anything. Exit status: 0; 1 when the class cannot be found or is no record
class, or the folder records no schema or its file does not read; 2 on a usage error.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import io
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import tclass
from tclass._core._records import is_record_class
from tclass._io.memmap._info import describe, info_json, info_text
from tclass._io.shards._info import describe_sharded, is_sharded, sharded_json, sharded_text
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
    info.add_argument(
        "path",
        metavar="PATH",
        help="a folder written by memmap/save/memmap_like, or a sharded dataset's folder",
    )
    info.add_argument("--json", action="store_true", help="print the description as JSON")
    info.add_argument(
        "--allow-pickle",
        action="store_true",
        help="accept pickled values, as load_memmap(allow_pickle=True) does",
    )
    schema = commands.add_parser(
        "schema",
        help="print a record class's JSON Schema",
        description=(
            "Print the JSON Schema document (draft 2020-12) of a record class, named "
            "module:QualName (the module is imported), or the one a saved folder records."
        ),
    )
    schema.add_argument("target", metavar="TARGET", help="module:QualName, or a saved folder")
    schema.add_argument("--indent", type=int, default=2, help="JSON indent (default 2)")
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
        if args.command == "schema":
            return _schema(args.target, args.indent)
        return _info(args.path, args.json, args.allow_pickle)
    except BrokenPipeError:  # the reader went away (`| head`): not an error worth a message
        _silence_stdout()
        return 1
    except RecursionError:
        _error(
            f"{getattr(args, 'path', args.command)}: the folder is nested too deeply to describe"
        )
        return 1
    except (TclassError, OSError) as error:
        _error(str(error))
        return 1


def _info(path: str, as_json: bool, allow_pickle: bool) -> int:
    if is_sharded(path):
        sharded = describe_sharded(path)
        text = _json_text(sharded_json(sharded)) if as_json else sharded_text(sharded)
        return _report(text, sharded.problems, "open_sharded would refuse this dataset")
    info = describe(path, allow_pickle)
    text = _json_text(info_json(info)) if as_json else info_text(info)
    return _report(text, info.problems, "load_memmap would refuse this folder")


def _json_text(document: dict[str, Any], indent: int = 2) -> str:
    return json.dumps(document, indent=indent, ensure_ascii=False, allow_nan=False)


def _report(text: str, problems: Sequence[str], verdict: str) -> int:
    """Writes ``text``, then the first of ``problems`` and ``verdict`` to stderr; the exit
    status: 1 where there are problems."""
    _write(text + "\n")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        _error(f"{problems[0]}{more}; {verdict}")
        return 1
    return 0


def _schema(target: str, indent: int) -> int:
    if os.path.exists(target) or ":" not in target:
        document = _saved_document(target)
    else:
        document = _class_document(target)
    if document is None:
        return 1
    _write(_json_text(document, indent) + "\n")
    return 0


def _class_document(target: str) -> dict[str, Any] | None:
    module_name, _, qualname = target.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as error:
        _error(f"{target}: cannot import {module_name!r} ({error})")
        return None
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if not isinstance(found, type) or not is_record_class(found):
        what = "nothing" if found is None else f"a {type(found).__name__}"
        _error(f"{target}: {qualname!r} in {module_name!r} is {what}, not a record class")
        return None
    record_class: Any = found  # a tensorclass (either form): it has json_schema
    document: dict[str, Any] = record_class.json_schema()
    return document


def _saved_document(target: str) -> dict[str, Any] | None:
    info = describe(target)
    schema = info.root.schema or {}
    document = schema.get("json_schema")
    if not isinstance(document, dict):
        problem = schema.get("json_schema_problem")
        if problem is not None:  # named, but its file is missing or damaged
            _error(f"{target}: the record's JSON Schema document does not read: {problem}")
            return None
        why = "holds no record" if info.root.kind != "tensorclass" else "records no JSON Schema"
        _error(f"{target}: the folder {why} (saved by an older tclass, or by the peer)")
        return None
    return document


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
