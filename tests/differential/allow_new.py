"""The rules of the deliberate differences (``allowlist.ENTRIES``) that the ``new_*`` ops
meet (``new_empty``, ``new_zeros``, ``new_ones``, ``new_full``, ``new_tensor``). Each rule
takes a finding and says whether the README bullet of its entry covers it."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts

_NEW_FILLED = ("new_empty", "new_zeros", "new_ones", "new_full")
# the ops whose stacks of Python values the peer turns into empty TensorDicts
_NEW_LIKE = (*_NEW_FILLED, "new_tensor")
_NAMES_OF_NONE = re.compile(r"^result\S*\.names: peer \[[^\]]+\], tclass \[\]$")


def _names_fit_the_batch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``new_empty(())`` (any ``new_*`` to no batch dims) of a named collection: no
    names in tclass, as torch gives a 0-d tensor, where the peer keeps all of the
    source's names on a result without batch dims (``names[-0:]``), more names than
    dims, which its later ops carry on (a Python value held: the peer's empty TensorDict
    for it too, program 20,793, inv18b). Likewise a file's new batch size of fewer dims
    (``ptd.batch_size = [3]`` for ``[1, 1]``): the names of the dims it keeps, as a
    TensorDict's, where the peer's file keeps all of its old names; of more dims, the new
    ones unnamed, as a TensorDict's, where the peer's file keeps its old names, fewer than
    its dims (its own ``clone()`` then raises; program 3,227 of shape, split19)."""
    if finding.kind == "result" and finding.step.op == "set_batch_size" and facts.h5:
        return all(_leading_names_kept(line, mine) for line in finding.detail)
    if finding.kind != "result" or finding.step.op not in _NEW_FILLED:
        return False
    if getattr(mine.value, "batch_dims", None) != 0:
        return False
    # a Python value: the empty TensorDict the peer's new_* makes of it ("values-kept-shared")
    return all(_NAMES_OF_NONE.match(line) or _VALUE_EMPTIED.match(line) for line in finding.detail)


_VALUE_EMPTIED = re.compile(
    r"^result\S*: peer TensorDict\(batch_size=\[\], keys=\[\]\), tclass nontensor "
)


_NAMES = re.compile(r"^result\.names: peer (\[.*\]), tclass (\[.*\])$")


def _name_lists(line: str, pattern: re.Pattern[str]) -> tuple[Any, Any] | None:
    """The peer's and tclass's name lists of a detail ``line`` matching ``pattern``
    (its two groups), None where it does not match or a side is not a literal."""
    found = pattern.match(line)
    if found is None:
        return None
    try:
        theirs, kept = (ast.literal_eval(side) for side in found.group(1, 2))
    except (ValueError, SyntaxError):
        return None
    return theirs, kept


def _leading_names_kept(line: str, mine: Any) -> bool:
    """tclass's names: the peer's first ones, one per batch dim, the peer's more."""
    pair = _name_lists(line, _NAMES)
    if pair is None:
        return False
    peer, kept = pair
    n = getattr(mine.value, "batch_dims", None)
    if len(kept) == n and len(peer) < n:  # more dims: the new ones unnamed (program 3,227)
        return kept == [*peer, *[None] * (n - len(peer))]
    return len(kept) == n and len(peer) > n and kept == peer[:n]


_NESTED_NAMES = re.compile(r"^result(?:\[[^\]]+\])+\.names: peer (\[.*\]), tclass (\[.*\])$")


def _lazy_names_reach_nested(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``new_tensor`` of a named lazy stack with data of as many dims: both results keep
    the stack's names, and tclass's nested collections lead with them too (as both
    libraries' ``apply(batch_size=)`` name them), where the peer's nested ones, each
    given its own ``new_tensor``, are unnamed under a named parent."""
    if finding.kind != "result" or finding.step.op != "new_tensor":
        return False
    top = list(getattr(mine.value, "names", None) or [])
    if not any(top) or list(getattr(peer.value, "names", None) or []) != top:
        return False
    for line in finding.detail:
        pair = _name_lists(line, _NESTED_NAMES)
        if pair is None:
            return False
        theirs, kept = pair
        if any(theirs) or len(theirs) != len(kept) or kept[: len(top)] != top:
            return False
    return True


_ANY_NAMES = re.compile(r"^result(?:\[[^\]]+\])*\.names: peer (\[.*\]), tclass (\[.*\])$")


def _lazy_new_batch_named(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``new_empty`` / ``new_zeros`` / ``new_ones`` / ``new_full`` of a named lazy stack:
    tclass names the new batch right-aligned with the old names (nested collections too),
    as both libraries do for a TensorDict, where the peer's result from a lazy stack is
    unnamed (fz31b: ``new_empty((3, 3))`` of a stack named ``['i']``, program 16,404,085
    L16 of features,entries,math,records)."""
    if finding.kind != "result" or finding.step.op not in _NEW_FILLED:
        return False
    if facts.kind != "lazy":
        return False
    for line in finding.detail:
        pair = _name_lists(line, _ANY_NAMES)
        if pair is None:
            return False
        theirs, kept = pair
        if any(theirs) or len(theirs) != len(kept) or not any(kept):
            return False
        named = [i for i, name in enumerate(kept) if name is not None]
        if kept[: named[0]] != [None] * named[0]:
            return False
    return bool(finding.detail)
