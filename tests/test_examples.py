"""Every example runs, at a small size, as a user would run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_quickstart_runs_and_reports_each_step() -> None:
    out = run_example("quickstart.py", "--capacity", "2000", "--batch-size", "64", "--batches", "3")
    assert "1. a batch of 8 transitions" in out
    assert "next: Step{done: bool[], obs: u8[3,84,84]}" in out
    assert "different envs    -> ['pong', 'breakout']" in out
    assert "sampled 32 rows -> Transition torch.Size([32])" in out
    assert "stack of 5 steps  -> torch.Size([8, 5])" in out
    assert "wrote 192 rows" in out
    assert "reward[0] = 42.0" in out
