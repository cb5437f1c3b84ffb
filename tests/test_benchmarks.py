"""The benchmark cases still run and compute the same thing with tclass and by hand.

Timings are not checked here (they live in ``make bench``); this keeps the benchmark
statements from rotting as the API grows.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from engine_cases import engine_cases, namespace  # noqa: E402

CASES = engine_cases()


def _leaves(result: Any) -> dict[str, torch.Tensor] | None:
    if isinstance(result, dict):
        return result
    if hasattr(result, "items"):
        return {str(k): v for k, v in result.items(include_nested=True, leaves_only=True)}
    return None


def _is_expression(source: str) -> bool:
    try:
        compile(source, "<case>", "eval")
    except SyntaxError:
        return False
    return True


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case_runs_and_matches_the_hand_written_baseline(case: Any) -> None:
    ns = namespace(peer=None)
    if not _is_expression(case.tclass):  # an assignment: it must simply run
        exec(case.tclass, ns)
        return
    mine = eval(case.tclass, ns)
    if case.baseline is None or case.name.startswith("MemoryMappedTensor"):
        assert isinstance(mine, torch.Tensor)
        return
    reference = eval(case.baseline, ns)
    if isinstance(reference, (bool, torch.Tensor)):
        assert type(mine) is type(reference)
        assert mine == reference if isinstance(reference, bool) else torch.equal(mine, reference)
        return
    mine_leaves, reference_leaves = _leaves(mine), _leaves(reference)
    assert mine_leaves is not None and reference_leaves is not None
    assert mine_leaves.keys() == reference_leaves.keys()
    for key, value in reference_leaves.items():
        assert torch.equal(mine_leaves[key], value), key
