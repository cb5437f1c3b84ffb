"""Run compatibility programs against one library and report each result.

    cd tests && python -m compat.run --lib tensordict [--json out.json] [NAME ...]

Without names, every program in ``compat/programs`` runs, in one process, each in turn.
Exit status 0 when all pass. ``--json`` writes ``{name: {"ok": bool, "error": str,
"where": str, "skipped": str, "seconds": float}}``; ``where`` is the program's line that
raised, ``skipped`` the optional package a skipped program lacks.

``--keep-going`` is for finding every failure of a program, not only its first: it runs
the statements of ``main()`` one at a time (entering ``with`` blocks, whose statements
run one at a time too) and prints each statement that raises, then goes on. A statement
that fails only because an earlier one did (a name left undefined) is marked "(follows)".
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import os
import pkgutil
import sys
import time
import traceback
from pathlib import Path

PROGRAMS = Path(__file__).parent / "programs"


def program_names() -> list[str]:
    """Every program module in the corpus, in name order."""
    return sorted(info.name for info in pkgutil.iter_modules([str(PROGRAMS)]))


def _where(exc: BaseException) -> str:
    """The last line of a program's own source in the traceback of ``exc``."""
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(str(PROGRAMS))
    ]
    if not frames:
        return ""
    frame = frames[-1]
    return f"{Path(frame.filename).name}:{frame.lineno}: {frame.line}"


def run_one(name: str) -> dict[str, object]:
    """Import program ``name`` and call its ``main()``; the outcome as a JSON-able dict."""
    # imported here, not at the top: compat.lib picks its library when first imported,
    # which must happen after main() has set TCLASS_COMPAT_LIB
    from compat.lib import Unavailable

    start = time.perf_counter()
    result: dict[str, object] = {"ok": True, "error": "", "where": "", "skipped": ""}
    try:
        importlib.import_module(f"compat.programs.{name}").main()
    except Unavailable as exc:
        result["skipped"] = str(exc)
    except Exception as exc:  # noqa: BLE001 - a program's failure is a result
        result.update(ok=False, error="".join(traceback.format_exception(exc)), where=_where(exc))
    result["seconds"] = time.perf_counter() - start
    return result


def _statements(body: list[ast.stmt]) -> list[ast.stmt | tuple[ast.With, list[ast.stmt]]]:
    """The statements of ``body``, ``with`` blocks opened into their own statements."""
    units: list[ast.stmt | tuple[ast.With, list[ast.stmt]]] = []
    for stmt in body:
        if isinstance(stmt, ast.With) and len(stmt.items) == 1:
            units.append((stmt, _statements(stmt.body)))
        else:
            units.append(stmt)
    return units


def _exec(stmt: ast.stmt, module: object, scope: dict[str, object], failures: list[str]) -> None:
    code = compile(ast.Module(body=[stmt], type_ignores=[]), inspect.getfile(module), "exec")
    try:
        exec(code, scope)
    except Exception as exc:  # noqa: BLE001 - every failure is reported, then we go on
        follows = " (follows)" if isinstance(exc, (NameError, UnboundLocalError)) else ""
        line = ast.get_source_segment(inspect.getsource(module), stmt) or ""
        first = line.splitlines()[0] if line else ""
        failures.append(f"line {stmt.lineno}{follows}: {first}\n    {type(exc).__name__}: {exc}")


def _run_units(units: list, module: object, scope: dict[str, object], failures: list[str]) -> None:
    for unit in units:
        if isinstance(unit, tuple):
            with_stmt, inner = unit
            item = with_stmt.items[0]
            enter = ast.Expression(body=item.context_expr)
            try:
                manager = eval(compile(enter, inspect.getfile(module), "eval"), scope)
                value = manager.__enter__()
            except Exception as exc:  # noqa: BLE001
                failures.append(
                    f"line {with_stmt.lineno}: with ...\n    {type(exc).__name__}: {exc}"
                )
                continue
            if isinstance(item.optional_vars, ast.Name):
                scope[item.optional_vars.id] = value
            try:
                _run_units(inner, module, scope, failures)
            finally:
                manager.__exit__(None, None, None)
        else:
            _exec(unit, module, scope, failures)


def keep_going(name: str) -> list[str]:
    """Run program ``name``'s ``main()`` statement by statement; each failure, described."""
    module = importlib.import_module(f"compat.programs.{name}")
    tree = ast.parse(inspect.getsource(module))
    body = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main").body
    failures: list[str] = []
    _run_units(_statements(body), module, dict(vars(module)), failures)
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", choices=("tclass", "tensordict"), default="tclass")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--keep-going", action="store_true", help="report every failure")
    parser.add_argument("names", nargs="*", help="programs to run (default: all)")
    args = parser.parse_args(argv)
    os.environ["TCLASS_COMPAT_LIB"] = args.lib
    if args.keep_going:
        failed = False
        for name in args.names or program_names():
            try:
                failures = keep_going(name)
            except Exception as exc:  # noqa: BLE001 - e.g. an import the library lacks
                failures = [f"import: {type(exc).__name__}: {exc}"]
            failed = failed or bool(failures)
            print(f"{'FAIL' if failures else 'ok  '} {name}")
            for failure in failures:
                print(f"  {failure}")
        return int(failed)
    results = {}
    for name in args.names or program_names():
        results[name] = result = run_one(name)
        status = "skip" if result["skipped"] else "ok  " if result["ok"] else "FAIL"
        print(f"{status} {name} ({result['seconds']:.2f}s) {result['where']}", flush=True)
        if not result["ok"] and not args.json:
            print(result["error"], file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0 if all(r["ok"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
