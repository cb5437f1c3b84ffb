"""The rules of the deliberate differences (``allowlist.ENTRIES``) that alias findings
meet: an earlier result that a later step changed in one library only (what it shares
with later results). Each rule takes a finding and says whether the README bullet of its
entry covers it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .allow_common import _result_line
from .compare import VALUE_KINDS, key_path

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts


# a nested collection's batch size (or names) in an earlier result, longer in the peer's
_GROWN_NODE = re.compile(
    r"^result((?:\['\w+'\])+)\.(?:batch_size: peer \(([\d, ]*)\), tclass \(([\d, ]*)\)"
    r"|names: peer \[.*\], tclass \[.*\])$"
)
# the batch size of a Python value's node (``("value", data, batch size)``), longer in
# the peer's: grown by its ``auto_batch_size_`` too (``replace({'weight': "pong"})`` then
# ``from_tuple``: program 15,985,560 L12 of methods,features,entries,records; a value of a
# grown node, ``attrs()``'s ``tgt_device``: 16,024,755 L8 of the same families, fz30a)
_GROWN_VALUE = re.compile(r"^result((?:\['\w+'\])+)\[1\]: length: peer (\d+), tclass (\d+)$")
_INFERS_BATCH = re.compile(
    r"\.from_(dict|tuple|any|dataclass)\(.*(auto_batch_size=True|batch_dims=)"
)


def _grown_in_a_copy(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An alias finding: a nested TensorDict or record of an earlier result that a later
    ``from_dict`` / ``from_tuple`` / ``from_any`` / ``from_dataclass`` with an inferred
    batch size grows, in the peer only: its ``auto_batch_size_`` grows the caller's in
    place, tclass's a shallow copy (``from_tuple(tuple(rec.values()),
    auto_batch_size=True)``: program 15,020,592 of methods,index,shape,combine, fz27a;
    ``from_dataclass(rec, auto_batch_size=True)``, and a node of one dim, ``(1,)``, grown:
    fz30a, programs 15,982,551 L8 of features,math,index, 15,952,859 L8 of
    methods,features,entries,records). An entry of such a node that a later write into
    the result replaced (``x[("2", "y")] = t``) changes with it in the peer only, the
    node being the caller's there (og32b: program 16,311,647 L8 of
    methods,features,entries,records)."""
    line_number = _result_line(finding)
    if finding.kind != "alias" or line_number is None:
        return False
    if not any(_INFERS_BATCH.search(line) for line in finding.lines[line_number:]):
        return False
    nodes = set()
    for line in finding.detail:
        grown = _GROWN_NODE.match(line)
        if grown is None:
            continue
        nodes.add(grown.group(1))
        if grown.group(2) is not None:
            theirs, ours = re.findall(r"\d+", grown.group(2)), re.findall(r"\d+", grown.group(3))
            if len(theirs) <= len(ours) or theirs[: len(ours)] != ours:
                return False
    return all(
        _GROWN_NODE.match(line) is not None
        or _value_grown(line, peer.value)
        or _entry_of(line, nodes)
        for line in finding.detail
    )


# an entry of a nested node: ``result['inner']['y']: peer Tensor[...], tclass Tensor[...]``
_NODE_ENTRY = re.compile(r"^result((?:\['\w+'\])+)\['\w+'\]: peer Tensor\[.*, tclass Tensor\[")


def _entry_of(line: str, nodes: set[str]) -> bool:
    """Whether ``line`` is a tensor entry (its dtype or shape) of one of the ``nodes``
    (their key paths, ``['inner']``)."""
    found = _NODE_ENTRY.match(line)
    return found is not None and found.group(1) in nodes


def _value_grown(line: str, result: Any) -> bool:
    """Whether ``line`` is the batch size of a Python value's node of the peer's
    ``result``, with more dims than tclass's."""
    found = _GROWN_VALUE.match(line)
    if found is None or int(found[2]) <= int(found[3]):
        return False
    keys = key_path(found[1])
    try:
        node = result.get(keys[0] if len(keys) == 1 else keys)
    except (KeyError, AttributeError, RuntimeError):
        return False
    kind = type(node).__name__
    return kind in VALUE_KINDS and len(node.batch_size) == int(found[2])


# a save into a folder (``memmap``, ``memmap_``, ``save``, ``dumps``), its path
_SAVED_INTO = re.compile(r"\.(?:memmap_?|save|dumps)\((D \+ \"/\w+\")")
_LOADED_FROM = re.compile(r"(?:load_memmap|\.load|\.memmap_?|\.save)\(.*?(D \+ \"/\w+\")")


def _saved_over_a_loaded_folder(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An alias finding: the result of a line that maps a folder's files (a load, a
    save) whose values change later in the peer only, where a later line saves another
    collection into that folder: the peer writes its files in place, into the mapped
    bytes of the earlier result; tclass builds the new tree beside the folder and swaps
    it in (README, "Writes are crash-safe"), so the earlier result keeps the data it
    mapped (program 16,010,505 L8 of features,entries,math,records, fz30a: ``load`` of a
    saved folder, ``x.dumps`` of an ``amin()`` into it)."""
    line_number = _result_line(finding)
    if finding.kind != "alias" or line_number is None:
        return False
    mapped = _LOADED_FROM.search(finding.lines[line_number - 1])
    if mapped is None:
        return False
    later = finding.lines[line_number:]
    if not any((found := _SAVED_INTO.search(line)) and found[1] == mapped[1] for line in later):
        return False
    return all(": values differ: " in line for line in finding.detail)


# ``x = torch.unflatten(x, 0, [-1])`` / ``x = x.unflatten(0, [4])`` (after a ``flatten()``
# of one dim, the stack itself in both): one size for one dim
_ONE_SIZE_UNFLATTEN = re.compile(
    r"^x = (?:torch\.unflatten\(x, |x(?:\.flatten\(\))?\.unflatten\()-?\d+, \[-?\d+\]\)$"
)
# names given in tclass only: the stack's or a nested collection's first dim
_RENAMED = re.compile(r"^result(?:\['\w+'\])*\.names: peer \[None(?:, None)*\], tclass \['\w+'")
# a stack of one dim longer in tclass: its batch size, an entry's first dim, its members
_GROWN_STACK = (
    re.compile(r"^result\.batch_size: peer \((?P<peer>\d+),\), tclass \((?P<mine>\d+),\)$"),
    re.compile(
        r"^result\['\w+'\]: peer Tensor\[(?P<dtype>[\w.]+), shape \[(?P<peer>\d+)(?P<rest>.*)\]\], "
        r"tclass Tensor\[(?P=dtype), shape \[(?P<mine>\d+)(?P=rest)\]\]$"
    ),
    re.compile(r"^result\.<members>\[0\]: length: peer (?P<peer>\d+), tclass (?P<mine>\d+)$"),
)


def _identity_unflatten_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An earlier lazy stack of one dim that an ``append`` (``insert``) after an identity
    ``unflatten`` of it (one size, the dim's own or ``-1``) grew in tclass only: tclass's
    identity ``unflatten`` of a lazy stack is the stack itself, as ``flatten()`` of one
    dim and ``view`` of its own batch size are in both; the peer's gives a new lazy stack
    over the same members for a stack of one dim (and the stack itself for more dims), so
    the append grows that one (fz31b: program 16,413,667 L8 of methods,math,shape); or a
    ``rename_`` of it names the earlier stack (and its nested stacks' stack dim) in tclass
    only (fz34i: program 17,200,854 L3 of methods,index,shape,combine)."""
    line_number = _result_line(finding)
    if finding.kind != "alias" or line_number is None:
        return False
    if type(peer.value).__name__ != "LazyStackedTensorDict" or len(peer.value.batch_size) != 1:
        return False
    later = finding.lines[line_number:]
    cut = [i for i, line in enumerate(later) if _ONE_SIZE_UNFLATTEN.match(line)]
    if cut and any(".rename_(" in line for line in later[cut[0] :]):
        return all(_RENAMED.match(line) for line in finding.detail)
    if not cut or not any(".append(" in line or ".insert(" in line for line in later[cut[0] :]):
        return False
    for line in finding.detail:
        found = next((m for p in _GROWN_STACK if (m := p.match(line)) is not None), None)
        if found is None or int(found["mine"]) <= int(found["peer"]):
            return False
    return True
