"""The rules of the deliberate differences (``allowlist.ENTRIES``) that the ``extra``
family's module functions meet (``merge_tensordicts``...; ``ops_extra.py``). Each rule
takes a finding and says whether the README bullet of its entry covers it."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

import torch

from .compare import VALUE_KINDS, is_collection

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts

_ORDER = re.compile(r"^result((?:\['[^']*'\])*): key order: peer (\[.*\]), tclass (\[.*\])$")


def _merged_in_order_of_holders(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``merge_tensordicts``: tclass lists the keys in the order the inputs first hold
    them, where the peer lists the first input's nested collections and Python values
    first (its result starts as the first input's ``empty(recurse=True)``), then the
    tensors and nested collections of all, then the later inputs' Python values: the
    tensors keep their order in both (fz31b: the ``extra`` family, 16,491,000-16,491,399
    L4)."""
    if finding.kind != "result" or finding.step.op != "merge_tensordicts":
        return False
    lines = _key_lines(finding, _ORDER, mine)
    if lines is None:
        return False
    for theirs, ours, node in lines:
        tensors = [key for key in ours if isinstance(node.get(key), torch.Tensor)]
        if sorted(theirs) != sorted(ours) or [k for k in theirs if k in tensors] != tensors:
            return False
    return bool(finding.detail)


_MERGED_NODE_LOCKED = re.compile(r"^result((?:\['[^']*'\])+)\.is_locked: peer True, tclass False$")


def _merge_shares_no_empty_node(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``merge_tensordicts`` whose first input holds an empty nested collection, locked (by
    a save or ``lock_()``): the peer's result holds that very node (writes into it reach
    the input), locked; tclass's holds a new empty one, unlocked as the result (fz32c:
    17,023,221 L8 of extra,index)."""
    if finding.kind != "result" or finding.step.op != "merge_tensordicts":
        return False
    saved = re.compile(r"memmap|lock_\(\)|\.save\(|consolidate\(")
    if not (facts.memmap or any(saved.search(line) for line in finding.lines[:-1])):
        return False
    for line in finding.detail:
        found = _MERGED_NODE_LOCKED.match(line)
        if found is None:
            return False
        try:
            node = mine.value.get(tuple(re.findall(r"\['([^']*)'\]", found.group(1))))
        except KeyError:
            return False
        if not _is_node(node) or not node.is_empty():
            return False
    return bool(finding.detail)


# the peer's merge of a lazy stack sets its members' entries into the stack it made with
# ``empty(recurse=True)``, which refuses them
_LAZY_MERGE_REFUSED = re.compile(
    r"^batch dimension mismatch, got self\.batch_size=torch\.Size\(\[[\d, ]*\]\) and "
    r"value\.shape=torch\.Size\(\[[\d, ]*\]\) for key "
)


def _merge_of_lazy_fails_inside(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``merge_tensordicts`` with a lazy stack first: the peer fails inside on the entries
    of its own members ("batch dimension mismatch" of a member's entry against the stack's
    batch size), where tclass merges the stacked entries into a TensorDict (fz31b: the
    ``extra`` family)."""
    if finding.kind != "peer-raises" or finding.step.op != "merge_tensordicts":
        return False
    if mine.error is not None or type(mine.value).__name__ != "TensorDict":
        return False
    made_lazy = ("L.lazy_stack(", "L.unpad_sequence(")  # (unpad_sequence: 16,435,153 L4)
    return _LAZY_MERGE_REFUSED.match(str(peer.error)) is not None and (
        any(text in " ".join(finding.lines) for text in made_lazy) or facts.kind == "lazy"
    )


_LOSSES = ("l1_loss", "mse_loss", "smooth_l1_loss")
_LOSS_KEYS = re.compile(r"^result((?:\['[^']*'\])*): keys: peer (\[.*\]), tclass (\[.*\])$")
_EMPTY_NODE_MISSING = re.compile(r"""^'key "([^"]+)" not found in TensorDict with keys """)


def _loss_keeps_values(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``F.l1_loss`` / ``mse_loss`` / ``smooth_l1_loss`` of collections holding Python
    values: tclass's result keeps the values (as its math ops do), the peer's loss drops
    them; every key only tclass lists holds a Python value, or a nested collection of
    Python values only (og31g: the ``extra`` family, programs 16,491,030 / 16,491,285 L4)."""
    if finding.kind != "result" or finding.step.op not in _LOSSES:
        return False
    lines = _key_lines(finding, _LOSS_KEYS, mine)
    if lines is None:
        return False
    for theirs, ours, node in lines:
        more = [key for key in ours if key not in theirs]
        if not more or any(key not in ours for key in theirs):
            return False
        if not all(_values_only(node.get(key)) for key in more):
            return False
    return bool(finding.detail)


def _values_only(value: Any) -> bool:
    """A Python value, or a nested collection holding Python values and nothing else
    (at any depth, at least one: the peer's loss drops such a node, 17,022,904 L8 of
    extra,entries, and keeps an empty one)."""
    if isinstance(value, torch.Tensor):
        return False
    if not _is_node(value):
        return True
    names = list(value.keys())
    return bool(names) and all(_values_only(value.get(name)) for name in names)


def _is_node(value: Any) -> bool:
    """A nested collection (not a Python value, whatever holds it)."""
    return is_collection(value) and type(value).__name__ not in VALUE_KINDS


def _loss_fails_on_empty_node(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A loss of two collections one of which lost an empty nested collection
    (``x.float() * 2`` drops it, in both libraries): the peer fails inside (a
    ``KeyError`` for the empty node, walking the other operand's keys), where tclass's
    result keeps that node, empty, at any depth (og31g: the ``extra`` family, programs 16,435,279 /
    16,435,462 / 16,435,960 L4)."""
    if finding.kind != "peer-raises" or finding.step.op not in _LOSSES:
        return False
    if mine.error is not None or not isinstance(peer.error, KeyError):
        return False
    found = _EMPTY_NODE_MISSING.match(str(peer.error))
    if found is None:
        return False
    if not _is_node(mine.value):
        return False
    return _empty_node_named(mine.value, found.group(1))


def _empty_node_named(node: Any, key: str) -> bool:
    """``node`` holds an empty nested collection ``key``, at any depth."""
    for name in list(node.keys()):
        child = node.get(name)
        if _is_node(child) and (
            (name == key and child.is_empty()) or _empty_node_named(child, key)
        ):
            return True
    return False


def _key_lines(
    finding: Finding, pattern: re.Pattern[str], mine: Any
) -> list[tuple[list[str], list[str], Any]] | None:
    """Each detail line of ``finding`` matched by ``pattern`` (a node's path, then the
    peer's and tclass's key lists) as ``(theirs, ours, tclass's node)``; None where a line
    does not match or cannot be read."""
    out = []
    for line in finding.detail:
        found = pattern.match(line)
        if found is None:
            return None
        try:
            theirs, ours = (ast.literal_eval(side) for side in found.group(2, 3))
            path = tuple(re.findall(r"\['([^']*)'\]", found.group(1)))
            node = mine.value.get(path) if path else mine.value
        except (ValueError, SyntaxError, KeyError):
            return None
        out.append((theirs, ours, node))
    return out
