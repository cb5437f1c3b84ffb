"""What the rule modules (``allow_*.py``) share: the rule makers of ``allowlist.ENTRIES``
(a rule made of several, one made of a step's tag or of tclass's error class) and the
line an alias finding's earlier result comes from. Reading a detail line's key path is
``compare.key_path``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts

Covers = Callable[["Finding", "Facts", Any, Any], bool]


def _tagged(tag: str, *kinds: str) -> Covers:
    def covers(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
        return tag in finding.step.tags and finding.kind in kinds

    return covers


def _raised_by(name: str) -> Covers:
    def covers(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
        return finding.kind in ("tclass-raises", "family") and type(mine.error).__name__ == name

    return covers


def _any_of(*covers: Covers) -> Covers:
    """One entry's rule made of several (one README bullet, several ops)."""

    def covered(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
        return any(rule(finding, facts, peer, mine) for rule in covers)

    return covered


def _result_line(finding: Finding) -> int | None:
    """The number of the line whose result an alias finding is about (1 for the first;
    its step's source is ``<result of line N>``), None for another finding."""
    found = re.fullmatch(r"<result of line (\d+)>", finding.step.src)
    return int(found.group(1)) if found else None


def _later_lines(finding: Finding) -> list[str]:
    """The lines after the one whose result an alias finding is about."""
    line = _result_line(finding)
    return finding.lines[line:] if line is not None else []
