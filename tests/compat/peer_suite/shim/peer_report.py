"""pytest plugin of a peer-suite run (``-p peer_report``): a per-test time limit, the peer's
private names each test function uses, and one JSON line per test in
``$TCLASS_PEER_REPORT`` (written by the controlling process, also under xdist)."""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import signal
import textwrap
from collections.abc import Generator
from typing import Any

import pytest

# Modules and objects whose ``_names`` are not the peer's.
NOT_THE_PEER = {"self", "cls", "torch", "np", "numpy", "os", "sys", "math", "pytest", "gc", "mp"}
_PRIVATE_CACHE: dict[Any, list[str]] = {}


class PeerTestTimeout(Exception):
    """The test ran past the runner's --timeout."""


def _peer_private_imports(module: Any) -> set[str]:
    """The ``_names`` a test module imports from the peer (``from tensordict.x import _y``)."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tensordict"):
            for alias in node.names:
                if alias.name.startswith("_") or (node.module or "").split(".")[-1].startswith("_"):
                    if alias.name[0].isupper() or alias.name.startswith("_"):
                        names.add(alias.asname or alias.name)
    return names


def _names_private_module(value: object) -> bool:
    """Whether a string constant names one of the peer's private modules."""
    if not isinstance(value, str) or not value.startswith("tensordict."):
        return False
    return any(part.startswith("_") for part in value.split(".")[1:])


def _own_code(item: pytest.Item) -> list[Any]:
    """The test function and the fixtures it requests that its own module defines (their
    code is the test's own, as ``_path_td_sync``, which patches ``TensorDict._sync_all``)."""
    function = getattr(item, "function", None)
    module = inspect.getmodule(function)
    code = [function]
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()) if info is not None else ():
        for fixturedef in info.name2fixturedefs.get(name, ()):
            func = getattr(fixturedef, "func", None)
            if func is not None and inspect.getmodule(func) is module and func not in code:
                code.append(func)
    return code


def private_names(item: pytest.Item) -> list[str]:
    """The peer's private names the test's own code (its function, and the fixtures its
    module defines that it requests) uses (a heuristic: attributes ``x._name`` on anything
    but the test class and other libraries, and the private names its module imports from
    the peer)."""
    function = getattr(item, "function", None)
    if function is None:
        return []
    key = function
    if key in _PRIVATE_CACHE:
        return _PRIVATE_CACHE[key]
    imported = _peer_private_imports(inspect.getmodule(function))
    found: set[str] = set()
    for code in _own_code(item):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(code)))
        except (OSError, TypeError, SyntaxError):
            continue
        found |= _private_in(tree, imported)
    _PRIVATE_CACHE[key] = sorted(found)
    return _PRIVATE_CACHE[key]


def _private_in(tree: ast.AST, imported: set[str]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if node.attr.startswith("__") and node.attr.endswith("__"):
                continue
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in NOT_THE_PEER:
                continue
            found.add(node.attr)
        elif isinstance(node, ast.Name) and node.id in imported:
            found.add(node.id)
        elif isinstance(node, ast.Constant) and _names_private_module(node.value):
            found.add(node.value)  # importlib.import_module("tensordict._td")
    return found


def _cause(excinfo: Any) -> str:
    """``Type: first line of the message``, with addresses and paths blanked, for grouping."""
    if excinfo is None:
        return ""
    error = excinfo.value
    lines = str(error).strip().splitlines()
    first = lines[0] if lines else ""
    first = re.sub(r"0x[0-9a-f]+", "0x…", first)
    first = re.sub(r"/tmp/[^\s'\"]+", "/tmp/…", first)
    return f"{type(error).__name__}: {first[:200]}"


def _timeout() -> int:
    return int(os.environ.get("TCLASS_PEER_TIMEOUT", "120"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    def expire(_signum: int, _frame: Any) -> None:
        raise PeerTestTimeout(f"ran past {_timeout()} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(_timeout())
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and not call.excinfo.errisinstance(pytest.skip.Exception):
        report.user_properties.append(("cause", _cause(call.excinfo)))
    if call.when == "setup":
        report.user_properties.append(("private", private_names(item)))


_RESULTS: dict[str, dict[str, Any]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # the controller writes the results
    entry = _RESULTS.setdefault(report.nodeid, {"nodeid": report.nodeid, "outcome": "passed"})
    props = dict(report.user_properties)
    if "private" in props:
        entry["private"] = props["private"]
    if report.when == "setup" and report.skipped:
        entry["outcome"] = "skipped"
    elif report.failed:
        entry["outcome"] = "error" if report.when != "call" else "failed"
        entry.setdefault("cause", props.get("cause", str(report.longrepr).splitlines()[-1][:200]))
    elif report.when == "call" and report.skipped:
        entry["outcome"] = "xfailed" if hasattr(report, "wasxfail") else "skipped"


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed and not os.environ.get("PYTEST_XDIST_WORKER"):
        cause = str(report.longrepr).strip().splitlines()[-1][:200]
        _RESULTS[report.nodeid] = {
            "nodeid": report.nodeid,
            "outcome": "collect-error",
            "cause": cause,
        }


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("TCLASS_PEER_REPORT")
    if not path or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    with open(path, "w", encoding="utf-8") as out:
        for entry in _RESULTS.values():
            out.write(json.dumps(entry) + "\n")
