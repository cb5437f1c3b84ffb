"""The deliberate differences: findings that are not bugs.

Each entry cites the README bullet it comes from (``readme``: text that appears in
README.md's "Differences from tensordict", checked by the tests) and says which findings
it covers. Entries marked ``pending`` are differences another branch is removing (the
Python values in stacks); they are reported as allowed until it lands. Anything not
covered here is a bug.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .compare import differences

if TYPE_CHECKING:
    from .engine import Finding, Outcome
    from .world import Facts


@dataclass(frozen=True)
class Entry:
    name: str
    readme: str  # a phrase of the README bullet this difference comes from
    covers: Callable[[Finding, Facts, Outcome, Outcome], bool]
    pending: str = ""  # the branch that removes the difference, if any


def _tagged(tag: str, *kinds: str) -> Callable[[Finding, Facts, Any, Any], bool]:
    def covers(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
        return tag in finding.step.tags and finding.kind in kinds

    return covers


def _raised_by(name: str) -> Callable[[Finding, Facts, Any, Any], bool]:
    def covers(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
        return finding.kind in ("tclass-raises", "family") and type(mine.error).__name__ == name

    return covers


def _beyond_the_peer(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """What the README lists tclass answering where the peer raises: ``td // x``, ``2 **
    td``, ``x % td``, ``div(rounding_mode=)``, ``cumsum``, ``long()`` / ``byte()``,
    reductions over several dims or of lazy stacks; and the results that differ on
    purpose: several dims all reduced, ``max`` / ``min`` along a dim as ``ValuesIndices``."""
    tags = finding.step.tags
    if finding.kind == "peer-raises":
        return bool(tags & {"peer-stops", "multi-dim", "lazy-reduce"})
    return finding.kind == "result" and bool(tags & {"multi-dim", "values-indices"})


def _one_value(snap: Any) -> Any:
    """The Python value every element of a (nested) list snapshot holds, or None."""
    if isinstance(snap, tuple) and snap[:1] == ("py",):
        return snap
    if isinstance(snap, tuple) and snap[:1] == ("seq",) and snap[2]:
        values = [_one_value(item) for item in snap[2]]
        if values[0] is not None and all(v == values[0] for v in values):
            return values[0]
    return None


def _as_one_value(snap: Any) -> Any:
    """The peer's snapshot with each list of equal Python values (a stacked, expanded or
    unsqueezed value) read as that one value, as tclass keeps it."""
    if isinstance(snap, list):
        return [_as_one_value(item) for item in snap]
    if not isinstance(snap, tuple) or not snap or snap[0] == "tensor":
        return snap
    if snap[0] == "values":
        one = _one_value(snap[1])
        if one is not None:
            return ("value", one, snap[2])
    if snap[0] == "seq":
        one = _one_value(snap)
        if one is not None:
            return one
    return tuple(_as_one_value(item) for item in snap)


def _one_python_value(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    if finding.kind != "result":
        return False
    return not list(differences(_as_one_value(peer.snap), mine.snap))


ENTRIES: list[Entry] = [
    Entry(
        "python-value-one",
        "**A Python value stays one value.** Stacking records whose `env` fields are equal",
        _one_python_value,
        pending="nontensor (capture_non_tensor_stack default False, the peer's)",
    ),
    Entry(
        "index-beyond-batch",
        "**Indexing stays in the batch dims.** An index with more entries than batch dims is an",
        _tagged("beyond-batch", "tclass-raises", "family"),
    ),
    Entry(
        "annotation-casts",
        "5. **Casting follows the annotation** of tensorclass fields",
        _raised_by("FieldTypeError"),
    ),
    Entry(
        "math-beyond-the-peer",
        "**Math goes where the peer stops.** A reduction over several dims reduces all of them",
        _beyond_the_peer,
    ),
    Entry(
        "lazy-members-share-batch-size",
        "Lazy-stack members share their batch size (the peer allows members of different",
        _tagged("ragged", "tclass-raises"),
        pending="ragged lazy stacks (nontensor branch)",
    ),
    Entry(
        "from-dict-infers",
        "**`from_dict` infers the batch size** when none is given",
        _tagged("infers", "result"),
    ),
]


def covering(finding: Finding, facts: Facts, peer: Outcome, mine: Outcome) -> str | None:
    """The name of the entry that covers ``finding``, or None (a bug)."""
    for entry in ENTRIES:
        if entry.covers(finding, facts, peer, mine):
            return entry.name
    return None
