"""The README's programs that say they run, run: the Schemas section's "One class, four
roles" (issue 31), as a module of its own, printing the two refusals it shows."""

from __future__ import annotations

import contextlib
import io
import re
import sys
import types
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _program(heading: str) -> str:
    """The first ``python`` block after the paragraph starting with ``heading``."""
    text = README.read_text()
    start = text.index(heading)
    found = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert found is not None, heading
    return found.group(1)


def test_one_class_four_roles_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    source = _program("**One class, four roles.**")
    module = types.ModuleType("readme_four_roles")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(source, str(README), "exec"), vars(module))  # noqa: S102
    lines = printed.getvalue().splitlines()
    assert lines[0].startswith("policy(): argument 'weights' has shape [5, 6]: dim 'h' is 5")
    assert "but 4 in argument 'step' (Step.obs)" in lines[0]
    assert lines[1].startswith("Step.masked_fill_(...): Step.probs: the result would hold 2.0")
    assert lines[1].endswith("Nothing was written") and lines[2] == "['k']"
    step = vars(module)["step"]
    assert step.probs.shape == (8, 6) and bool((step.probs <= 1).all())
