"""The cross-library tests need the peer, which the test extra installs; without it a
test run says how many it skipped and how to run them (tests/conftest.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import PEER

TESTS = Path(__file__).resolve().parents[1]

TINY = """
import pytest

def test_needs_the_peer():
    pytest.importorskip("tensordict")

@pytest.mark.skipif(True, reason="the peer (tensordict) is not installed")
def test_marked():
    pass

def test_skipped_for_another_reason():
    pytest.skip("needs a CUDA device")

def test_plain():
    pass
"""
MODULE = 'import pytest\n\npytest.importorskip("tensordict")\n\ndef test_a():\n    pass\n'


def _run(folder: Path, hide_peer: bool) -> str:
    """pytest over ``folder`` (with the project's conftest.py), in a fresh interpreter."""
    shutil.copy(TESTS / "conftest.py", folder / "conftest.py")
    hide = "sys.modules['tensordict'] = None; " if hide_peer else ""
    script = (
        f"import sys; {hide}import pytest; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=folder, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_without_the_peer_the_run_says_what_it_skipped(tmp_path: Path) -> None:
    (tmp_path / "test_tiny.py").write_text(TINY)
    (tmp_path / "test_peer_module.py").write_text(MODULE)
    out = _run(tmp_path, hide_peer=True)
    line = (
        f"2 cross-library tests and the module test_peer_module.py skipped: {PEER} is not "
        f"installed; run `pip install {PEER}` (the test extra does)"
    )
    assert line in out.splitlines(), out
    assert re.search(r"1 passed, 4 skipped", out), out


def test_no_line_when_nothing_was_skipped_for_the_peer(tmp_path: Path) -> None:
    (tmp_path / "test_tiny.py").write_text("def test_plain():\n    pass\n")
    assert "cross-library" not in _run(tmp_path, hide_peer=True)


def test_no_line_when_the_peer_is_installed(tmp_path: Path) -> None:
    """A skip that names the peer for another reason, with the peer importable."""
    (tmp_path / "tensordict.py").write_text("")  # found first on sys.path (the run's folder)
    (tmp_path / "test_tiny.py").write_text(
        textwrap.dedent(
            """
            import pytest

            def test_old_peer():
                pytest.skip("needs tensordict>=0.16")
            """
        )
    )
    assert "cross-library" not in _run(tmp_path, hide_peer=False)


def test_the_test_extra_pins_the_peer() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())
    assert PEER in project["project"]["optional-dependencies"]["test"]
