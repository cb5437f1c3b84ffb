"""The transforms of ``test_transforms.py`` compared with the peer, case by case and kind
by kind: the same outcome (``collection_kinds.outcome``: type, batch size, names, lock,
device, every entry), except the deliberate differences below, where the peer is wrong
(README, "torch.func transforms") and tclass gives what the plain tensors give.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import collection_kinds  # noqa: E402
from test_transforms import CASES, EXTRA_KINDS  # noqa: E402

peer = pytest.importorskip("tensordict")

# The batch dims a case maps first (and, for collections vmap gives back, next), and the
# stack dims of the lazy kinds. Mapping a stack dim, the peer's results keep the stack
# dim besides the mapped one ([2, 2, 3] for [2, 3]) or fail; tclass gives the dense result
# (chunked, the peer's error over ragged members is tclass's too).
_MAPPED = {
    "vmap": {0},
    "vmap in_dims=1": {1},
    "vmap out_dims=1": {0},
    "nested vmap": {0, 1},
    "nested vmap in_dims=1": {1},
    "vmap chunk_size=1": {0},
    "vmap in_dims=1 chunk_size=2": {1},
    "randomness=different": {0},
    "randomness=same": {0},
    "vmap of grad": {0},
}
_STACK_DIMS = {
    "lazy_dim0": {0},
    "lazy_nested": {0},
    "lazy_of_lazy": {0},
    "ragged": {0},
    "lazy_dim1": {1},
    "records_stacked": {1},
}
# Chunked vmap: the peer rebuilds records and collections holding Python values with
# batch size [] and drops the names; over a lazy stack's stack dim it fails.
_CHUNKED = {"vmap chunk_size=1", "vmap in_dims=1 chunk_size=2"}
_CHUNK_LOSSES = {"autocast_record", "python_value", "record", "named"}
# grad / jacrev of a record over a lazy stack: the peer stacks its fields inside the
# transform and fails (an internal assert of torch); tclass maps the members.
_OVER_STACK_FAILS = {"grad", "grad_and_value", "jacrev", "vmap of grad"}


def deliberate(case: str, kind: str) -> str | None:
    """Why tclass and the peer differ on ``case`` over ``kind``, or None if they agree."""
    if kind == "ragged" and case in _CHUNKED:
        return None
    if _MAPPED.get(case, set()) & _STACK_DIMS.get(kind, set()):
        return "vmap over a stack dim: the dense result (a ragged entry: an error naming it)"
    if kind == "memmap" and case in _MAPPED and case != "nested vmap in_dims=1":
        return "vmap keeps the device (the peer's results have none)"
    if case in _CHUNKED and kind in _CHUNK_LOSSES:
        return "chunk_size keeps the batch size and names"
    if kind == "records_stacked" and case in _OVER_STACK_FAILS:
        return "grad over a record over a lazy stack"
    return None


def _seeded(method: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(collection: Any) -> Any:
        torch.manual_seed(0)
        return method(collection)

    return run


PAIRS = [
    (case, kind)
    for case in CASES
    for kind in sorted(set(collection_kinds.COMPARED) | set(EXTRA_KINDS))
]


@pytest.mark.parametrize(("case", "kind"), PAIRS)
def test_as_the_peer(case: str, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if kind in EXTRA_KINDS:  # outcome() builds the kinds it knows: this file's too, here
        monkeypatch.setitem(collection_kinds.KINDS, kind, EXTRA_KINDS[kind])
    method = _seeded(CASES[case][0])
    ours = collection_kinds.outcome(tclass, kind, tmp_path, method)
    theirs = collection_kinds.outcome(peer, kind, tmp_path, method)
    reason = deliberate(case, kind)
    if reason is None:
        collection_kinds.assert_same(ours, theirs)
        return
    assert ours != theirs, f"the peer now agrees ({reason}): drop the README bullet's case"
    if kind == "ragged":  # the members' entries differ along the stack dim vmap maps
        assert ours[0] == "error" and "ValueError" in ours[1]
    else:
        assert ours[0] != "error", ours
