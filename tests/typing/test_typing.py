"""The static typing cases (tests/typing/) are numerous and cannot pass vacuously.

mypy itself checks the cases in ``make test``; this file checks the harness: enough
cases, precise error codes, and that a missing expected error fails a mypy run.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

CASES = Path(__file__).resolve().parent
ROOT = CASES.parent.parent


def _lines() -> list[str]:
    return [
        line for path in sorted(CASES.glob("cases_*.py")) for line in path.read_text().splitlines()
    ]


def test_at_least_forty_cases_in_both_forms() -> None:
    lines = _lines()
    asserts = [line for line in lines if "assert_type(" in line]
    errors = [line for line in lines if "# type: ignore[" in line]
    assert len(asserts) + len(errors) >= 40
    assert len(errors) >= 10
    assert any("DStep" in line for line in asserts) and any("Step(" in line for line in errors)


def test_expected_errors_name_their_codes() -> None:
    for line in _lines():
        if "type: ignore" in line:
            assert re.search(r"# type: ignore\[[a-z-]+(, [a-z-]+)*\]$", line), line


def test_a_missing_expected_error_fails_mypy(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import torch\nfrom tclass import TensorClass\n\n\nclass P(TensorClass):\n    x: "
        "torch.Tensor\n\n\n"
        "P(torch.zeros(1), batch_size=[1])  # type: ignore[call-arg]\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            str(probe),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 1, result.stdout
    assert 'Unused "type: ignore" comment' in result.stdout
