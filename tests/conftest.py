"""The test run's summary says how many cross-library tests were skipped because the
peer is not installed, and how to run them. Hypothesis runs without its per-example
deadline: on a loaded machine (CI runners, ``-n 2`` beside other jobs) a first example
that imports or compiles something can take longer than 200 ms, which Hypothesis reports
as a flaky test; the tests check values, never time."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import settings

settings.register_profile("tclass", deadline=None)
settings.load_profile("tclass")

PEER = "tensordict==0.15.3"  # as the test extra of pyproject.toml pins it


def _skipped_for_the_peer(report: object) -> bool:
    """Whether a skip's reason is the peer (``importorskip("tensordict")``, the ``skipif``
    and ``skip`` calls of the cross-library tests: each names ``tensordict``)."""
    longrepr = getattr(report, "longrepr", None)
    reason = longrepr[2] if isinstance(longrepr, tuple) else longrepr
    return "tensordict" in str(reason)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if importlib.util.find_spec("tensordict") is not None:
        return
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if _skipped_for_the_peer(r)]
    tests = sum(isinstance(report, pytest.TestReport) for report in skipped)
    # A module that skips itself at import is one report, whatever its number of tests.
    modules = [report.nodeid for report in skipped if isinstance(report, pytest.CollectReport)]
    if not skipped:
        return
    what = f"{tests} cross-library tests"
    if modules:
        what += f" and the module{'s' * (len(modules) > 1)} {', '.join(modules)}"
    terminalreporter.write_line(
        f"{what} skipped: {PEER} is not installed; run `pip install {PEER}` (the test extra does)",
        yellow=True,
    )
