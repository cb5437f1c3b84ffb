"""The compatibility corpus: every program in ``programs/`` runs on tclass, and on the
peer (tensordict) when it is installed.

Each library runs in its own subprocess (``python -m compat.run``), so the programs see a
plain interpreter, as a user's script does (no pytest warning filters, no other test's
state), and so the two libraries never share a process. The peer run checks the programs
themselves: a program that fails there is wrong, not tclass.

A program that fails on tclass because of a gap an open issue covers is listed in
``XFAIL`` with the issue and the first failing call. The marks are strict: once the gap
is closed the test fails until the mark is removed. ``python -m compat.run --keep-going
NAME`` (from ``tests/``) lists every failing statement of a program, not only the first.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compat.run import program_names

TESTS = Path(__file__).resolve().parent.parent
PROGRAMS = program_names()

# program -> why it fails on tclass today: the issue(s) covering each failing call, first
# failure first. "NOT COVERED" marks a failure no open issue (17-21) names.
XFAIL: dict[str, str] = {}


def _run_corpus(lib: str, names: list[str], tmp: Path) -> dict[str, dict[str, object]]:
    """Run ``names`` on ``lib`` in one fresh interpreter; their results by name."""
    out = tmp / f"{lib}.json"
    env = dict(os.environ, TCLASS_COMPAT_LIB=lib)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "compat.run", "--lib", lib, "--json", str(out), *names],
        cwd=TESTS,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if not out.exists():
        raise RuntimeError(f"the {lib} run died before reporting:\n{proc.stdout}\n{proc.stderr}")
    results: dict[str, dict[str, object]] = json.loads(out.read_text())
    return results


def _selected(request: pytest.FixtureRequest, test_name: str) -> list[str]:
    """The programs whose ``test_name`` test this session runs (all of them by default)."""
    names = {
        item.callspec.params["name"]
        for item in request.session.items
        if getattr(item, "originalname", None) == test_name and hasattr(item, "callspec")
    }
    return sorted(names) or PROGRAMS


@pytest.fixture(scope="session")
def tclass_results(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    names = _selected(request, "test_program_on_tclass")
    return _run_corpus("tclass", names, tmp_path_factory.mktemp("compat"))


@pytest.fixture(scope="session")
def peer_results(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    names = _selected(request, "test_program_on_peer")
    return _run_corpus("tensordict", names, tmp_path_factory.mktemp("compat"))


def _check(results: dict[str, dict[str, object]], name: str) -> None:
    result = results[name]
    if result["skipped"]:
        pytest.skip(f"{name}: {result['skipped']}")
    if not result["ok"]:
        pytest.fail(f"{name} failed at {result['where']}\n{result['error']}", pytrace=False)


def _tclass_params() -> list[object]:
    return [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=XFAIL[name]))
        if name in XFAIL
        else name
        for name in PROGRAMS
    ]


@pytest.mark.parametrize("name", _tclass_params())
def test_program_on_tclass(name: str, tclass_results: dict[str, dict[str, object]]) -> None:
    _check(tclass_results, name)


@pytest.mark.peer
@pytest.mark.skipif(
    importlib.util.find_spec("tensordict") is None, reason="the peer (tensordict) is not installed"
)
@pytest.mark.parametrize("name", PROGRAMS)
def test_program_on_peer(name: str, peer_results: dict[str, dict[str, object]]) -> None:
    _check(peer_results, name)


def test_corpus_is_well_formed() -> None:
    """Every program has a docstring and a ``main()``; every xfail names a program."""
    assert len(PROGRAMS) >= 40
    assert set(XFAIL) <= set(PROGRAMS), sorted(set(XFAIL) - set(PROGRAMS))
    for name in PROGRAMS:
        spec = importlib.util.find_spec(f"compat.programs.{name}")
        assert spec is not None and spec.origin is not None
        source = Path(spec.origin).read_text()
        assert source.startswith('"""'), f"{name}: start with a docstring saying what it does"
        assert "\ndef main() -> None:" in source, f"{name}: define main() -> None"
        assert "from compat" in source, f"{name}: import the library through compat.lib"
    for reason in XFAIL.values():
        assert reason.startswith(("issue ", "NOT COVERED")), reason
