"""The rules of the deliberate differences (``allowlist.ENTRIES``), saved collections:
the peer's memory-mapped flag where it and the data disagree, tensors without elements
that have no file, and where a program first saves its collection. Each rule takes a
finding and says whether the README bullet of its entry covers it."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts


# Where the peer's memory-mapped flag and the data disagree: after loading, after views
# the flag does not follow (reshape, expand, flatten, detach, select, x[1:], squeeze()
# without a dim, where squeeze(dim) keeps it: program 14,110,012 of index,shape,combine), after
# tile's copy (flagged) and after a collection was given new entries.
_FLAG_CHANGES = re.compile(
    r"load_memmap\(|\.(reshape|expand|expand_as|flatten|unflatten|tile|select|exclude)\("
    r"|\.(detach|copy|contiguous|squeeze)\(\)|\.clone\(False\)|\.data\b|\[[^\]]*\b[1-9]\d*:"
    r"|\.(roll|flip|fliplr|flipud|rot90)\("  # copies in memory the peer flags as memory-mapped
    r"|\.(float|double|half|bfloat16|int|long|bool|to)\("  # a cast to the dtype it has
)
_LOCK_LINE = re.compile(r"\.is_locked: peer (True|False), tclass (True|False)$")


_KEYS_LINE = re.compile(r": keys: peer (\[[^\]]*\]), tclass (\[[^\]]*\])$")


def _keys_of(line: str) -> tuple[list[Any], list[Any]] | None:
    """The peer's and tclass's keys of a ``keys`` line, or None for another line."""
    keys = _KEYS_LINE.search(line)
    if keys is None:
        return None
    theirs, ours = (json.loads(group.replace("'", '"')) for group in keys.groups())
    return theirs, ours


def _fewer_in_order(fewer: list[Any], more: list[Any]) -> bool:
    """Whether ``fewer`` is some of ``more``'s keys (not all), in ``more``'s order."""
    return set(fewer) < set(more) and [key for key in more if key in fewer] == fewer


_SAVES = ("memmap", "memmap_like", "load_memmap", "save", "dumps", "load", "load_")


def _empty_tensors_have_no_file(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A memory-mapped collection saved elsewhere without ``copy_existing=True``: tclass
    answers only when its file-backed tensors have no elements (no file), where the peer
    refuses any tensor that has a file, an empty one included; also where another step
    reads what it saves (``x.memmap(other).memmap_refresh_()``, ``x.memmap(other).
    saved_path``: programs 15,817,439 L12 of methods,index,shape,combine, 15,910,929
    L8/L12 and 15,961,671 L12 of methods,features,entries,records, fz29b) or the step's
    argument saves it (``y.load_memmap_((x.memmap(folder), folder)[1])``: program
    16,026,097 L8 of methods,features,entries,records, a record over a zero-size dim
    given ``memmap_like``, fz29i)."""
    if finding.kind != "peer-raises" or "already has a file associated" not in str(peer.error):
        return False
    if finding.step.op in _SAVES:
        return True
    if ".memmap(" not in finding.step.src:
        return False
    return finding.step.op != "load_memmap_" or mine.error is None


def _memmap_by_data(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``is_memmap()`` and the lock of rows read from a locked collection follow where
    the data is (in a memory-mapped file or not), where the peer follows a flag some ops
    carry and others drop: ``is_memmap()`` true in tclass only (every tensor is in a file),
    or a lock that differs after an op that changes the peer's flag and not the data
    (the collection memory-mapped in the world, or by an earlier step); ``is_memmap()``
    false in tclass for a collection without tensors last given ``memmap()`` /
    ``memmap_()`` without a folder, where nothing of it is mapped (program 5,802,115 of
    index,entries,records). Of a lazy stack of a memory-mapped member and one in memory,
    false in tclass, where the peer refuses ("tensordicts memmap status mismatch";
    program 15,982,529 L12 of methods,features,entries,records, fz30d). ``narrow`` of a
    memory-mapped lazy stack is a TensorDict copied into memory (locked in both): its
    rows are unlocked in tclass, where the peer's flag follows the copy and locks them
    (program 16,055,702 L8 of methods,index,shape,combine, fz30k)."""
    if finding.kind == "peer-raises" and finding.step.op == "x.is_memmap()":
        return "memmap status mismatch" in str(peer.error) and mine.value is False
    if finding.kind != "result":
        return False
    saved = 0 if facts.memmap else _first_saving(finding.lines)
    if saved is None:
        return False
    if finding.step.op == "x.is_memmap()":
        if mine.value is True or any(_FLAG_CHANGES.search(line) for line in finding.lines):
            return True
        last = [line for line in finding.lines if _SAVING.search(line)][-1:]
        unsaved = bool(last) and re.search(r"\.memmap_?\(\)", last[0]) is not None
        return unsaved and "no-tensors" in finding.step.tags
    if not all(_LOCK_LINE.search(line) for line in finding.detail):
        return False
    last = max(n for n, line in enumerate(finding.lines) if n == saved or _SAVING.search(line))
    if ".consolidate(" in finding.lines[saved] or ".consolidate(" in finding.lines[last]:
        # its data is in the file; the peer's flag stays false from the start (or from a
        # later consolidate(filename=): program 5,200,270 of ``--families
        # index,shape,records --length 6``, fz40c)
        return True
    after = finding.lines[saved + 1 :]
    if facts.kind == "lazy" and any(".narrow(" in line for line in after):
        return True  # a lazy stack's narrow copies into memory; the peer's flag goes with it
    return any(_FLAG_CHANGES.search(line) for line in after)


_SAVING = re.compile(
    r"\.memmap(?:_like|_)?\(|load_memmap\(|[=(] ?x\.(?:dumps|save)\(|consolidate\([^)]*filename="
)  # (``x.clone().load_((x.save(D), D)[1])``: the clone loads the folder, 16,020,759 L8, fz30d)


def _first_saving(lines: list[str]) -> int | None:
    """The first line that memory-maps the collection (``memmap``, ``memmap_like``...,
    or ``x = x.dumps(...)``: the peer's name for ``memmap``, or ``consolidate(filename=)``)."""
    for number, line in enumerate(lines):
        if _SAVING.search(line):
            return number
    return None
