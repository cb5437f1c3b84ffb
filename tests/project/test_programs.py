"""Programs written for tensordict run with tclass after the import swap alone.

Each file in ``tests/programs/`` imports ``from tensordict import ...``. The test swaps
that line for ``from tclass import ...`` and nothing else, runs the program's ``main()``
as a module of its own, and compares the result with the peer's when it is installed.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

PROGRAMS = Path(__file__).resolve().parent / "programs"


def _source(name: str, library: str) -> str:
    source = (PROGRAMS / name).read_text()
    if library == "tclass":
        swapped = source.replace("from tensordict import", "from tclass import")
        assert "from tensordict" not in swapped and "import tensordict" not in swapped
        return swapped
    return source


def _run(name: str, library: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    module = types.ModuleType(f"program_{Path(name).stem}_{library}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(_source(name, library), str(PROGRAMS / name), "exec"), vars(module))  # noqa: S102
    return module.main()


def test_rollout_runs_with_tclass(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _run("rollout.py", "tclass", monkeypatch)
    horizon, episodes = 5, 3
    assert out["buffer_actions"] == [
        (t + e) % 3 - 1 for e in range(episodes) for t in range(horizon)
    ]
    assert out["done_count"] == episodes and out["env"] == "toy" and out["frozen"] is True
    assert out["log_tags"] == ["first", "second", "third"] and out["log_env"] == "toy"
    assert out["picked"][1:] == ("warmup", "toy", "run-7") and out["seed"] == 1234
    assert out["tags"] == ["ep0", "ep1", "ep2"] and out["lazy_tags"] == ["first", "third"]
    assert out["round_trip"] == ["env", "phase", "return", "run", "tag"]
    assert out["picked"][0] == out["log_tags"][max(range(3), key=out["returns"].__getitem__)]


@pytest.mark.peer
def test_rollout_gives_what_the_peer_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tensordict")
    assert _run("rollout.py", "tclass", monkeypatch) == _run(
        "rollout.py", "tensordict", monkeypatch
    )
