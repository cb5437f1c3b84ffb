"""The rule of the deliberate differences (``allowlist.ENTRIES``, records-predictable)
for the key order after ``dataclasses.replace`` of a record: tclass's follows the
fields' declaration order, the peer's the order of the constructor's keywords (moved
from ``allow_records.py``, which is at its size limit, fz30g)."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

import torch

from .allow_saved import _fewer_in_order, _keys_of
from .compare import differences

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts


_REPLACED = re.compile(r"__import__\(\"dataclasses\"\)\.replace\(")
_ORDER_LINE = re.compile(
    r"^result(?:\['[^']*'\]|\[\d+\])*: key order: peer (\[.*\]), tclass (\[.*\])$"
)


def _replaced_fields(lines: list[str]) -> list[str] | None:
    """The fields the last ``dataclasses.replace(x, ...)`` of a program gave, in order."""
    for line in reversed(lines):
        if _REPLACED.search(line) is None:
            continue
        try:
            tree = ast.parse(line.strip())
        except SyntaxError:
            return None
        for node in ast.walk(tree):
            func = getattr(node, "func", None)
            if isinstance(node, ast.Call) and getattr(func, "attr", "") == "replace":
                return [kw.arg for kw in node.keywords if kw.arg is not None]
        return None
    return None


def _fields_moved_first(
    theirs: list[Any], ours: list[Any], fields: list[str], dotted: bool = False
) -> bool:
    """Whether ``theirs`` is ``ours`` with the keys under ``fields`` first, in that order
    (the other keys, nested ones under their field, as they were); ``dotted``: keys of
    ``state_dict``, nested ones joined with dots."""

    def rank(key: Any) -> int:
        top = key[0] if isinstance(key, tuple) else key.split(".")[0] if dotted else key
        return fields.index(top) if top in fields else len(fields)

    return theirs != ours and sorted(ours, key=rank) == theirs


# ``cat_from_tensordict`` / ``stack_from_tensordict``: the leaves joined in key order
_JOINED_LEAVES = ("cat_from_tensordict", "stack_from_tensordict")
_JOIN_DIM = re.compile(r"_from_tensordict\((?:dim=)?(-?\d+)")


def _slices_reordered(src: str, theirs: Any, ours: Any) -> bool:
    """Whether the tensors ``theirs`` and ``ours`` hold the same slices along the dim the
    step joins the leaves along, in another order: the leaves joined in each library's
    key order (fz30j: ``x.cat_from_tensordict(-1)`` after ``replace``, program
    16,072,585 L12 of features,math,index)."""
    if not isinstance(theirs, torch.Tensor) or not isinstance(ours, torch.Tensor):
        return False
    if theirs.shape != ours.shape or theirs.dtype != ours.dtype or not theirs.ndim:
        return False
    found = _JOIN_DIM.search(src)
    dim = int(found[1]) if found else 0
    if not -theirs.ndim <= dim < theirs.ndim:
        return False

    def slices(t: torch.Tensor) -> list[tuple[float, ...]]:
        return sorted(tuple(row.reshape(-1).tolist()) for row in t.movedim(dim, 0))

    return bool((theirs != ours).any()) and slices(theirs) == slices(ours)


def _entries_moved_first(theirs: Any, ours: Any, most: int) -> bool:
    """Whether the list ``theirs`` (a snapshot) is ``ours`` with up to ``most`` of its
    items moved to the front (``values()`` / ``items()``, whose keys are not at hand)."""
    if not (isinstance(theirs, tuple) and isinstance(ours, tuple) and theirs[:2] == ours[:2]):
        return False
    if theirs[:2] != ("seq", "list") or len(theirs[2]) != len(ours[2]):
        return False
    for moved in range(1, most + 1):
        rest = list(ours[2])
        for item in theirs[2][:moved]:
            found = [i for i, kept in enumerate(rest) if not any(differences(item, kept))]
            if not found:
                break
            del rest[found[0]]
        else:
            later = theirs[2][moved:]
            if all(not any(differences(a, b)) for a, b in zip(later, rest, strict=True)):
                return True
    return False


def _replaced_fields_first(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Keys after ``dataclasses.replace(x, f=...)`` of a record: tclass's come in the
    fields' declaration order, as the constructor (which ``replace`` calls) stores them
    whatever the keywords' order; the peer's constructor stores them in the keywords'
    order, and ``replace`` passes the changed fields first (fz29h: program 15,905,445 of
    features,entries,math,records L12, ``list(x.keys(True, False))``; ``values`` and
    ``items`` follow the keys: 16,028,588 L8; ``cat_from_tensordict`` joins the leaves
    in that order: 16,072,585 L12 of features,math,index, fz30j; and ``parameters()`` of
    a TensorDictParams of its ``to_tensordict()``, fz30k)."""
    if finding.kind != "result" or not finding.detail:
        return False
    dotted = finding.step.op == "state_dict"  # (its keys: "inner.y")
    if _built_from_a_dict(finding, peer, mine):
        return True
    fields = _replaced_fields(finding.lines[:-1])
    if not fields:
        return False
    if finding.step.op == "keys":
        theirs, ours = peer.value, mine.value
        if not isinstance(theirs, list) or not isinstance(ours, list):
            return False
        return _fields_moved_first(theirs, ours, fields)
    if finding.step.op in ("values", "items"):
        return _entries_moved_first(peer.snap, mine.snap, len(fields))
    if finding.step.op in _JOINED_LEAVES:
        return _slices_reordered(finding.step.src, peer.value, mine.value)
    if finding.step.op == "parameters" and ".to_tensordict()" in finding.step.src:
        # the parameters of its to_tensordict() in a TensorDictParams: the replaced fields'
        # leaves first, a nested record's several (16,010,671 L8 of the same families, fz30k)
        most = len(peer.snap[2]) if isinstance(peer.snap, tuple) and len(peer.snap) > 2 else 0
        return _entries_moved_first(peer.snap, mine.snap, most)
    for line in finding.detail:
        found = _ORDER_LINE.match(line)
        if found is None:
            if _none_values_kept(finding, line):
                continue
            return False
        theirs, ours = ast.literal_eval(found[1]), ast.literal_eval(found[2])
        if not _fields_moved_first(theirs, ours, fields, dotted):
            return False
    return True


def _none_values_kept(finding: Finding, line: str) -> bool:
    """A ``keys`` line of a nested record beside the order: the peer's lists the fields
    an earlier ``to_tensordict(retain_none=True)`` / ``update`` / ``from_dict`` gave
    ``None`` values, tclass's leaves them unset (entry none-field-unset; fz30g: program
    15,983,016 L12 of features,entries,math,records)."""
    keys = _keys_of(line)
    if keys is None or not line.startswith("result["):
        return False
    built = any(
        ".update(" in src or ".from_dict(" in src or "retain_none=True)" in src
        for src in finding.lines[:-1]
    )
    return built and _fewer_in_order(keys[1], keys[0])


# the last record built from a dict's keywords (``Rec(**x.to_dict(), batch_size=[])``)
_FROM_KEYWORDS = re.compile(r"^\s*x = [A-Z]\w*\(\*\*x\.to_dict\(\)")


def _built_from_a_dict(finding: Finding, peer: Any, mine: Any) -> bool:
    """``values()`` / ``items()`` / ``keys()`` of a record built as ``Rec(**d)``: tclass's
    in the fields' declared order, the peer's in ``d``'s (README: "A record's keys come in
    its fields' declaration order, whatever the order of the constructor's keywords"):
    the same entries in another order (17,151,454 L16 of methods,features,entries,
    records, fz34b)."""
    if finding.step.op not in ("values", "items", "keys"):
        return False
    if not _FROM_KEYWORDS.match(finding.lines[-2] if len(finding.lines) > 1 else ""):
        return False
    theirs, ours = peer.snap, mine.snap
    if not (isinstance(theirs, tuple) and isinstance(ours, tuple) and theirs[:1] == ("seq",)):
        return False
    if ours[:2] != theirs[:2] or len(ours[2]) != len(theirs[2]) or ours[2] == theirs[2]:
        return False
    left = list(ours[2])
    for entry in theirs[2]:
        match = next((i for i, o in enumerate(left) if not list(differences(entry, o))), None)
        if match is None:
            return False
        left.pop(match)
    return True
