"""The rules of the deliberate differences (``allowlist.ENTRIES``), third part (split
from ``allow_structure``): Python values over no elements or ragged, read whole or per
element, memory maps and state dicts (the shared helpers are in ``allow_common``)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch

from .allow_names import _names_of
from .allow_ragged import (
    _about_values,
)
from .allow_saved import (
    _KEYS_LINE,
    _LOCK_LINE,
    _fewer_in_order,
    _keys_of,
    _memmap_by_data,
)
from .allow_structure import (
    _NESTED_DIM_OPS,
    _VALUE_DIMS,
    _VALUE_LIST_DEEPER,
    _VALUE_ONE_DEEPER,
    _as_deep_as_its_node,
)
from .compare import flat_values, key_path, list_dims

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts


_EMPTY_LIST = re.compile(r"\]: length: peer 0, tclass [1-9]\d*$")


def _entries_read(source: Any) -> Iterator[tuple[str, Any]]:
    """``source``'s keys with the entries read at them, an entry whose read raises left
    out (it holds nothing these rules look for: a ragged lazy stack's entry, a tensor)."""
    for key in getattr(source, "keys", list)():
        try:
            yield key, source.get(key)
        except Exception:  # noqa: BLE001  (see above)
            continue


def _holds_value_stack(value: Any, picks: Callable[[Any], bool], depth: int = 0) -> bool:
    """Whether ``value`` (a collection, or a tuple of them) holds a NonTensorStack whose
    batch size ``picks`` accepts."""
    if depth > 8:
        return False
    if isinstance(value, (tuple, list)):
        return any(_holds_value_stack(item, picks, depth + 1) for item in value)
    if type(value).__name__ == "NonTensorStack":
        return picks(value.batch_size)
    if not hasattr(value, "batch_size") or not hasattr(value, "keys"):
        return False
    source = getattr(value, "_tensordict", value)  # a record's entries
    return any(_holds_value_stack(child, picks, depth + 1) for _, child in _entries_read(source))


def _holds_empty_values(value: Any) -> bool:
    """A NonTensorStack with no elements whose batch size starts with a nonzero dim."""
    return _holds_value_stack(value, lambda size: 0 in size and size[0] > 0)


def _empty_values_shaped(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Per-element Python values over a batch with no elements: nested empty lists shaped
    like the batch in tclass (``[[], []]`` for ``[2, 0]``), where the peer's stack of no
    members lists as ``[]``."""
    if finding.kind != "result" or not all(_EMPTY_LIST.search(d) for d in finding.detail):
        return False
    return _holds_empty_values(mine.value)


def _memmap_lock_beside_empty_values(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The lock of an index of a memory-mapped collection after an op the peer's flag
    follows and the data does not (``_memmap_by_data``), beside the per-element Python
    values over no elements that tclass lists as torch does (``_empty_values_shaped``:
    ``[[]]`` for ``[1, 0]``, the peer's ``[]``): ``x[None]`` of ``x.flip(0)`` of a
    memory-mapped record over no elements (program 15,870,291 of
    features,index,shape,combine --length 8)."""
    if finding.kind != "result" or not _holds_empty_values(mine.value):
        return False
    rest = [line for line in finding.detail if not _EMPTY_LIST.search(line)]
    if not rest or len(rest) == len(finding.detail):
        return False
    return _memmap_by_data(dataclasses.replace(finding, detail=rest), facts, peer, mine)


_NO_VALUES_LEFT = re.compile(r": peer py \('NoneType', None\), tclass list of 0$")


def _empty_value_keys(value: Any, depth: int = 0) -> set[str]:
    """The keys, at any depth of ``value`` (a collection), of per-element Python values
    over no elements."""
    if depth > 8 or not hasattr(value, "batch_size") or not hasattr(value, "keys"):
        return set()
    found: set[str] = set()
    for source in [getattr(value, "_tensordict", value), *getattr(value, "tensordicts", ())]:
        for key, child in _entries_read(source):
            if type(child).__name__ == "NonTensorStack" and child.batch_size.numel() == 0:
                found.add(key)
            else:
                found |= _empty_value_keys(child, depth + 1)
    return found


def _emptied_nodes(value: Any) -> set[str]:
    """The keys of ``value``'s nested collections that hold only per-element Python values
    over no elements (at any depth): the peer's ``apply`` drops those values, then the
    node they leave empty, so its ``cat`` with that result misses the node's key (program
    10,904,302 of index,combine --length 6, inv21d)."""
    found: set[str] = set()
    for key, child in _entries_read(getattr(value, "_tensordict", value)):
        if hasattr(child, "keys") and type(child).__name__ != "NonTensorStack":
            keys = set(child.keys())
            if keys and keys <= _empty_value_keys(child) | _emptied_nodes(child):
                found.add(key)
    return found


def _empty_values_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Per-element Python values over no elements, kept by ``apply``, pointwise math and
    ``split`` as a tensor with no elements is, where the peer drops the entry (a record's
    field reads ``None``; a piece holds an empty lazy stack in its place), and its
    comparison with such an ``apply`` result fails on the keys; its ``maybe_dense_stack``
    with one keeps its operands as members (their keys differ: program 10,905,699 of
    index,combine --length 6) where tclass's, the keys alike, stacks them. The peer's
    ``memmap_like`` drops them too, and a nested collection that held only them
    (program 13,600,433 of the six families --length 12, fz24c), and so does its binary
    math (``mul``, ``clamp``, ``clamp_min`` by a number: a nested collection left holding
    nothing is left out of its result; programs 16,022,209 / 16,022,522 L8 of
    features,math,index, 15,966,655 L8 of features,entries,math,records)."""
    if finding.kind in ("peer-raises", "family"):
        return _keys_mismatch_over_no_elements(finding, peer, mine)
    if finding.kind != "result":
        return False
    kept = _empty_value_keys(mine.value)
    restacked = finding.step.op in _RESTACKED and ".apply(" in finding.step.src
    keyed = members_kept = False
    for line in finding.detail:
        keys = _KEYS_LINE.search(line)
        if keys is not None:
            theirs, ours = (re.findall(r"'(\w+)'", side) for side in keys.groups())
            extra = set(ours) - set(theirs)
            if not extra <= kept and (
                finding.step.op == "memmap_like" or finding.step.family == "math"
            ):
                kept = kept | _emptied_nodes(mine.value)  # its node left empty goes too
            if not extra or not set(theirs) <= set(ours) or not extra <= kept:
                return False
            keyed = True
        elif restacked and _OPERANDS_KEPT.search(line) is not None:
            members_kept = True  # (only beside the keys line that explains it)
        elif _NO_VALUES_LEFT.search(line) is None and _EMPTY_PIECE.search(line) is None:
            return False
    return keyed or not members_kept


# a stack whose operands the peer keeps as members where an ``apply`` dropped a key of one
_RESTACKED = frozenset({"maybe_dense_stack", "stack", "lazy_stack"})
_OPERANDS_KEPT = re.compile(r"^result\.<members>: peer \d+ \(\[\('collection', .*, tclass \d+ \(")


# such a value read as nested empty lists, after ``pad`` (17,230,493 L6, og34l)
_PADDED_EMPTY_READ = re.compile(
    r": peer value \(\('py', .*\), tclass values \(\('seq', 'list', "
    r"\[(?:\('seq', 'list', \[|\]\)|, )*\]\), \[[\d, ]*\]\)$"
)


# The lines of a Python value over no elements that the peer rebuilt from the members of
# its stack, which it has none of: a node shorter than the batch or a list of another
# length, an empty lazy stack without keys in its place, a read that fails ("items cannot
# be empty"), None where such a member's own ``apply`` dropped it, or the one value its
# stack was built from (``unbind`` of an ``expand`` or ``unsqueeze`` over no elements:
# program 3,202,084 of shape,combine,math).
_REBUILT_LINES = (
    re.compile(r": length: peer \d+, tclass \d+$"),
    re.compile(
        r": peer LazyStackedTensorDict\(batch_size=\[[\d, ]*\], keys=\[\]\), "
        r"tclass (list of \d+$|nontensor \(\('values', \('seq', 'list', \["
        r"(?:\]\)|\('seq', 'list', \[))"  # ``[]``, or lists of them (a later dim is 0)
    ),
    re.compile(r": peer error \('RuntimeError', .*tclass nontensor \(\('values', "),
    re.compile(r": peer py \('NoneType', None\), tclass list of \d+$"),
    re.compile(
        r": peer value \(\('py', .*\), tclass values \(\('seq', 'list', \[\]\), \[[\d, ]*\]\)$"
    ),
    re.compile(r": peer py \(.*\), tclass list of \d+$"),  # (of nested empty lists)
)


def _empty_values_rebuilt(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Per-element Python values over no elements kept with the batch size (``chunk``,
    ``type``, ``repeat_interleave(0)``, a stack with an ``apply`` result...), as a tensor
    with no elements is, where the peer rebuilds them from their stack's members, which
    it has none of: its node loses the dims after the one of size 0, or becomes an empty
    lazy stack without keys, or (after its ``apply``) is gone; or, of a row of ``pad``'s
    result, the peer keeps the one value its stack was built from where tclass reads nested
    empty lists (og34l). Every line is about a key that holds such values in tclass's
    result."""
    if finding.kind != "result":
        return False
    if finding.step.op == "getitem" and _flattened_member_read(finding, peer, mine):
        return True
    results = mine.value if isinstance(mine.value, (tuple, list)) else [mine.value]
    kept = set().union(*(_empty_value_keys(result) for result in results))
    padded = any("L.pad(" in line for line in finding.lines[:-1])
    for line in finding.detail:
        keys = key_path(line)
        if not keys or keys[-1] not in kept:
            return False
        rebuilt = any(p.search(line) for p in _REBUILT_LINES)
        if not rebuilt and not (padded and _PADDED_EMPTY_READ.search(line)):
            return False
    return True


def _flattened_member_read(finding: Finding, peer: Any, mine: Any) -> bool:
    """An index that takes one member of a stack of Python values over no elements after
    ``flatten``: tclass's flatten keeps the stack's members (values over no elements), so
    the index reads a member's one value, as both libraries' index of the stack before
    the flatten does, where the peer's flatten rebuilt the stack from the members it has
    none of, whose index lists as ``[]`` (program 12,520,528 of index,shape,combine
    --length 12, fz23d: ``torch.stack([x, x.clone()], -1).flatten(1, 2)[..., -2]`` of a
    record over ``[0, 1]``)."""
    if not any(".flatten(" in line for line in finding.lines[:-1]):
        return False
    for line in finding.detail:
        found = _VALUE_LISTED.match(line)
        if found is None or not _squeezed_over_none(found.group(1), peer, mine, storage=True):
            return False
    return True


_STACK_SHAPES = re.compile(
    r"The shapes of the tensors to stack is incompatible: torch\.Size\(\[([\d, ]*)\]\) "
    r"vs torch\.Size\(\[([\d, ]*)\]\) for key '?(\w+)'?\.$"
)


def _empty_values_cut_short(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The peer's stack failing on the sizes of a key that holds per-element Python values
    over no elements in tclass's result: one of its operands (a ``clone`` of such values
    memory-mapped, rebuilt from the members it has none of) keeps a node that stops at
    the dim of size 0 (``[0]`` for ``[0, 8]``; program 11,710,218 of index,combine,records
    --length 12, fz22d)."""
    if finding.kind != "peer-raises" or finding.step.op not in _RESTACKED:
        return False
    found = _STACK_SHAPES.search(str(peer.error))
    if found is None or ".clone()" not in finding.step.src:
        return False
    short, long = sorted(
        ([int(n) for n in side.split(",") if n.strip()] for side in found.groups()[:2]), key=len
    )
    cut = short[-1:] == [0] and 0 not in short[:-1] and long[: len(short)] == short != long
    return cut and found.group(3) in _empty_value_keys(mine.value)


def _stack_of_no_elements_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``NonTensorStack.from_nontensordata(node)`` / ``node.maybe_to_stack()`` of a value
    over a batch size with a 0 (``[0, 4]``): tclass's stack keeps the node's batch size,
    where the peer's stops at the dim of size 0 (``[0]``: it rebuilds the stack from its
    nested lists, the empty one telling no size after it; programs 15,610,455 L12 /
    15,600,576 L8 of features,index,shape,combine, fz28a)."""
    if finding.kind != "result" or finding.step.op not in ("from_nontensordata", "maybe_to_stack"):
        return False
    short = list(getattr(peer.value, "batch_size", [None]))
    long = list(getattr(mine.value, "batch_size", []))
    return short[-1:] == [0] and 0 not in short[:-1] and long[: len(short)] == short != long


_EMPTY_PIECE = re.compile(
    r": peer LazyStackedTensorDict\(batch_size=\[[\d, ]*\], keys=\[\]\), "
    r"tclass nontensor \(\('values', \('seq', 'list', \[\]\)"
)
_MISMATCH = re.compile(
    r"keys in .* mismatch\. The \w+ TD has keys \{([^}]*)\}|keys in .* mismatch, got"
)
_KEY_NOT_FOUND = re.compile(r"""^'key "(\w+)" not found in TensorDict with keys """)
_CAT_MISMATCH = re.compile(
    r"tensordict \d+ has keys \[([^\]]*)\] but tensordict \d+ has keys \[([^\]]*)\]"
)


def _keys_mismatch_over_no_elements(finding: Finding, peer: Any, mine: Any) -> bool:
    """The peer's "keys ... mismatch" where one side is an ``apply`` result that dropped
    Python values over no elements (or its stack's "sets of keys ... are exclusive", its
    cat's "tensordict 2 has keys [...] but tensordict 0 has keys [...]"; its ``addcdiv``'s
    'key "label" not found'): the
    keys it names are such values in tclass's result (or, where tclass raises too, the
    peer's message shows a batch size with a 0)."""
    message = str(peer.error)
    if _STACKED_NONE.search(message) and ".apply(" in finding.step.src:  # every key dropped:
        # its apply gave None, which its stack takes for a tensor (program 10,950,397; a
        # node holding only such values: 17,051,604 L12 of features,index,shape,combine)
        keys = set(getattr(mine.value, "keys", lambda: ())())
        dropped = _empty_value_keys(mine.value) | _emptied_nodes(mine.value)
        return finding.kind == "peer-raises" and bool(keys) and keys <= dropped
    if "sets of keys in the tensordicts to stack are exclusive" in message:  # names none
        return finding.kind == "peer-raises" and bool(_empty_value_keys(mine.value))
    joined = _CAT_MISMATCH.search(message)  # its cat's, naming both sides' keys
    if joined is not None and finding.kind == "peer-raises":
        one, other = (set(re.findall(r"'(\w+)'", side)) for side in joined.groups())
        dropped = _empty_value_keys(mine.value) | _emptied_nodes(mine.value)
        return bool(one ^ other) and one ^ other <= dropped
    missing = _KEY_NOT_FOUND.search(message)  # a binary op with that apply result
    if missing is not None and finding.kind == "peer-raises" and ".apply(" in finding.step.src:
        return missing.group(1) in _empty_value_keys(mine.value)  # (program 10,359, inv18b)
    found = _MISMATCH.search(message)
    if found is None:
        return False
    if finding.kind == "family":
        return re.search(r"batch_size=\[(\d+,)*0[,\]]", message) is not None
    named = set(re.findall(r"'(\w+)'", found.group(1) or ""))
    if named and finding.step.op in _COMPARED and ".apply(" in finding.step.src:
        return named <= _compared_over_no_elements(mine.value)  # (program 3,803,383)
    return bool(named) and named <= _empty_value_keys(mine.value)


_COMPARED = ("==", "!=", "<", "<=", ">", ">=")
_STACKED_NONE = re.compile(r"^expected Tensor as element \d+ in argument 0, but got NoneType$")


def _compared_over_no_elements(value: Any) -> set[str]:
    """The keys, at any depth of a comparison's result, of entries with no elements: a
    Python value there compared with an ``apply`` result that kept it is one, as the
    comparison of any value stacks is a bool tensor."""
    found: set[str] = set()
    source = getattr(value, "_tensordict", value)
    for key in getattr(source, "keys", list)():
        child = source.get(key)
        if isinstance(child, torch.Tensor) and child.numel() == 0:
            found.add(key)
        elif hasattr(child, "batch_size") and child.batch_size.numel() == 0:
            found |= _compared_over_no_elements(child)
    return found


def _shaped_as_torch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``unflatten`` / ``view`` / ``reshape`` whose result has the batch size torch gives a
    tensor of that batch size, where the peer's (its lazy ``view``) does not."""
    tags = [tag for tag in finding.step.tags if tag.startswith("torch-shape=")]
    if finding.kind != "result" or len(tags) != 1:
        return False
    expected = tags[0].removeprefix("torch-shape=")
    size = getattr(mine.value, "batch_size", None)
    peer_size = getattr(peer.value, "batch_size", None)
    return str(list(size or ())) == expected and str(list(peer_size or ())) != expected


def _values_shaped_as_torch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``unflatten`` / ``view`` / ``reshape`` into dims of size 1 of a collection with
    per-element Python values: the values keep every batch dim torch gives a tensor of
    that batch size, where the peer's value stack loses one of size 1 (one level less of
    lists, one dim less in its batch size), or, in a nested node, several (ol31a:
    program 16,023,400 L12 of methods,index,shape,combine)."""
    tags = [tag for tag in finding.step.tags if tag.startswith("torch-shape=")]
    if finding.kind != "result" or finding.step.op not in _NESTED_DIM_OPS or len(tags) != 1:
        return False
    if str(list(getattr(mine.value, "batch_size", ()))) != tags[0].removeprefix("torch-shape="):
        return False
    for line in finding.detail:
        sizes = _VALUE_DIMS.search(line)
        if sizes is not None and int(sizes.group(2)) == int(sizes.group(1)) + 1:
            continue
        if sizes is not None and _as_deep_as_its_node(line, int(sizes.group(2)), mine.value):
            continue
        if _VALUE_ONE_DEEPER.search(line) is None and _VALUE_LIST_DEEPER.search(line) is None:
            return False
    return True


_VALUE_LENGTH = re.compile(r"^result\['(\w+)'\](\[\d+\])*: length: peer \d+, tclass \d+$")
# an element the peer's kept dim of size 1 lists (program 9,294,995 of index,shape, nu19a)
_VALUE_ONE_LISTED = re.compile(r"^result\['(\w+)'\](\[\d+\])*: peer list of 1, tclass py \(")


def _value_at(result: Any, key: str) -> Any:
    """A record's field ``key``, or a TensorDict's entry (a stack of values reads as its
    nested lists: program 12,893 of shape,combine)."""
    if hasattr(result, "get") and not hasattr(type(result), key):
        try:
            value = result.get(key, None)
            return value.tolist() if hasattr(value, "tolist") else value
        except Exception:  # noqa: BLE001 (a read the comparison reports)
            return None
    return getattr(result, key, None)


def _values_squeezed_as_the_batch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``squeeze()`` of a collection with per-element Python values: the values keep the
    result's batch dims, where the peer's value stack keeps a squeezed dim of size 1 (a
    label of dims ``[2, 1, 4, 3]`` under a batch ``[2, 4, 3]``; program 7,502,593 of
    shape,combine,math at length 8; a TensorDict's after ``rot90`` and ``torch.stack`` of
    a lazy stack, program 12,893 of shape,combine; ``None`` after ``unsqueeze(1)`` and
    ``reshape([3, 1, 1])``, program 9,294,995 of index,shape)."""
    if finding.kind != "result" or finding.step.op != "squeeze" or not finding.detail:
        return False
    peers = _peer_values_past_ours(finding, peer, mine, _VALUE_ONE_LISTED)
    return peers is not None and all(
        list_dims(theirs) != list(peer.value.batch_size) for theirs in peers
    )


def _peer_values_past_ours(
    finding: Finding, peer: Any, mine: Any, listed: re.Pattern[str]
) -> list[Any] | None:
    """The peer's values the finding's lines name (each line a value's length, or
    ``listed``), where tclass's each have its result's batch dims; None otherwise."""
    peers = []
    for line in finding.detail:
        found = _VALUE_LENGTH.match(line) or listed.match(line)
        if found is None:
            return None
        key = found.group(1)
        if list_dims(_value_at(mine.value, key)) != list(mine.value.batch_size):
            return None
        peers.append(_value_at(peer.value, key))
    return peers


def _nested_names_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``squeeze``: a nested node keeps the names of the dims it keeps, where the peer
    drops them (the top node keeps them in both), and a nested Python value that all
    elements share stays one value, where the peer's ``squeeze()`` keeps its stack (or
    removes one of its dims of size 1 only: its node has more dims than tclass's, and a
    record's value reads one level deeper)."""
    if finding.kind != "result" or finding.step.op != "squeeze":
        return False
    shared = {
        line.split(": ")[0]
        for line in finding.detail
        if _shared_value_line(line) or _shared_value_read(line, peer, mine)
    }
    names = [
        line
        for line in finding.detail
        if (line.split(": ")[0] not in shared or not _about_values(line))
        and not _longer_value_node(line)
        and not _value_read_one_deeper(line, peer, mine)
    ]
    parsed = [_names_of(line) for line in names]
    return all(
        p is not None
        and p[0].startswith("[")
        and len(p[1]) == len(p[2])
        and all(a == "None" or a == b for a, b in zip(p[1], p[2]))
        for p in parsed
    )


def _shared_value_as_one(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A Python value every element shares, one value in tclass after ``squeeze``, where
    the peer keeps its value stack (a nested one too: its ``squeeze()`` views a nested
    stack of one member as a stack of stacks; left44); or listed one level deeper by
    the peer's ``lazy_stack`` of a record whose value node kept a dim the peer's
    ``squeeze()`` took off the record (its node has more dims than its collection), or
    its ``expand`` (``expand_as``, ``broadcast_to``, then ``maybe_dense_stack``: left43)
    or ``flatten`` (program 17,618 of shape, split19) or ``torch.stack`` (program 19,582;
    of its ``unbind(0)``, after a ``permute``: 17,051,932 L12 of features,index,shape,
    combine, fz33b);
    or written at an index over itself (``td[i] = td[i].to_dict()``), where the peer makes
    it a value stack. The same value in every slot; over no elements, none in the peer's
    (``_squeezed_over_none``), and a node the peer's ``squeeze()`` left past its
    collection's batch size (``_node_left_past_its_parent``). (fz29f: ``reshape``,
    ``unbind``, ``to_lazystack`` and an index after the peer's ``fliplr()`` / ``flipud()``
    / ``tile`` of a lazy stack agree now: tclass's make each element a member too.)"""
    ops = ("squeeze", "setitem", *_DEEPER)
    if finding.kind != "result" or finding.step.op not in ops:
        return False
    stacked = finding.step.op in ("stack", "unbind_stack")  # (its unbind: 17,051,932, fz33b)
    if stacked and not any(".squeeze()" in line for line in finding.lines):
        return False  # (torch.stack of a squeezed record: program 19,582 of shape,combine,math)
    for line in finding.detail:
        if _STACK_FOR_VALUE.match(line) and finding.step.op in _VALUE_LINE_OPS:
            continue  # (its values are compared by the line that lists them)
        if finding.step.op == "squeeze" and _node_left_past_its_parent(line, peer, mine):
            continue
        found = _VALUE_LISTED.match(line)
        if found is None:
            return False
        if finding.step.op in _OVER_NONE_OPS and _squeezed_over_none(found.group(1), peer, mine):
            continue
        theirs, ours = (_read_value(side.value, found.group(1)) for side in (peer, mine))
        if finding.step.op in _DEEPER and len(list_dims(theirs)) <= len(peer.value.batch_size):
            return False
        values = flat_values(theirs) + flat_values(ours)
        if not values or any(value != values[0] for value in values):
            return False
    return True


_NODE_SIZE_LINE = re.compile(r"^result((?:\['\w+'\])+)\[1\]: length: peer (\d+), tclass (\d+)$")


def _node_left_past_its_parent(line: str, peer: Any, mine: Any) -> bool:
    """A Python value's node (``result['v'][1]``: its batch size) that the peer's
    ``squeeze()`` left with more dims than its collection, which its batch size no longer
    begins with (``[1, 0, 2]`` under ``[0, 2]``: a node that does not fit its parent),
    where tclass's has its collection's batch size (program 15,829,583 of
    methods,index,shape,combine --length 8: ``None`` over ``[1, 0, 2, 1]``)."""
    found = _NODE_SIZE_LINE.match(line)
    if found is None or int(found.group(2)) <= int(found.group(3)):
        return False
    keys = key_path(found.group(1))
    try:
        sizes = []
        for side in (peer.value, mine.value):
            parent = side.get(keys[:-1]) if len(keys) > 1 else side
            sizes.append((list(side.get(keys).batch_size), list(parent.batch_size)))
    except Exception:  # noqa: BLE001  (a read that fails is no such node)
        return False
    (theirs, their_parent), (ours, our_parent) = sizes
    return theirs[: len(their_parent)] != their_parent and ours == our_parent


_VALUE_LINE_OPS = ("setitem", "squeeze", "unbind", "flatten")
_OVER_NONE_OPS = ("squeeze", "flatten")


def _squeezed_over_none(path: str, peer: Any, mine: Any, storage: bool = False) -> bool:
    """``squeeze()`` (or ``flatten``) of a collection over no elements holding a Python
    value: tclass's node the one value (a ``NonTensorData``), where the peer's value
    stack, rebuilt from members it has none of, lists as (nested) empty lists (its
    ``squeeze(0)`` gives the one value back; program 10,347 of shape,combine:
    ``x.expand([1, 2]).squeeze()`` of a batch ``[2]`` holding a ``[2, 0]`` node; 22,692
    of shape ``--length 8``: ``flatten(1)`` after ``repeat_interleave(0)``); ``storage``:
    a record's nodes read from its storage (its ``get`` reads the values)."""
    keys = key_path(path)
    sides = [side.value for side in (peer, mine)]
    if storage:
        sides = [getattr(side, "_tensordict", side) for side in sides]
    try:
        theirs, ours = (side.get(keys) for side in sides)
    except Exception:  # noqa: BLE001  (a read that fails is no such value)
        return False
    if type(theirs).__name__ != "NonTensorStack" or type(ours).__name__ != "NonTensorData":
        return False
    size = list(ours.batch_size)
    listed = theirs.tolist()
    return 0 in size and size == list(theirs.batch_size) and not flat_values(listed)


# ops after which the peer lists a record's kept value node deeper than its batch dims
_DEEPER = (
    "lazy_stack",
    "stack",
    "expand",
    "expand_as",
    "broadcast_to",
    "maybe_dense_stack",
    "flatten",
    "unbind_stack",
)
_VALUE_LISTED = re.compile(r"^result((?:\['\w+'\])+)(\[\d+\])*: peer list of \d+, tclass ")
_STACK_FOR_VALUE = re.compile(r"^result(\['\w+'\])+: peer values \(.*, tclass value \(")


def _read_value(collection: Any, path: str) -> Any:
    """A record's field or a collection's entry (``['n']['s']``: nested), where it holds
    a string or a list."""
    value = collection
    try:
        for key in key_path(path):
            value = getattr(value, key) if hasattr(value, key) else value[key]
    except Exception:  # a read that fails is no shared value
        return None
    return value if isinstance(value, (str, list)) else None


def _longer_value_node(line: str) -> bool:
    """A Python value's node (``result['s'][1]``: its batch size) with more dims in the
    peer than in tclass."""
    found = re.match(r"^result.*\['\w+'\]\[1\]: length: peer (\d+), tclass (\d+)$", line)
    return found is not None and int(found.group(1)) > int(found.group(2))


def _value_read_one_deeper(line: str, peer: Any, mine: Any) -> bool:
    """A record's Python value read as a list one level deeper in the peer (a list of
    one: tclass's list), under the size-1 dim its ``squeeze()`` left on the value's node."""
    found = re.match(r"^result((?:\['\w+'\])+)\[1\]: length: peer 1, tclass \d+$", line)
    if found is None:
        return False
    theirs, ours = (_read_value(side.value, found.group(1)) for side in (peer, mine))
    return isinstance(theirs, list) and isinstance(ours, list) and list(theirs) == [list(ours)]


_VALUE_STACK_LINE = re.compile(
    r"^result\[.*: peer values \(\('seq', 'list', \[(.*)\]\), \[[\d, ]*\]\), "
    r"tclass value \((.*), \[[\d, ]*\]\)$"
)


def _shared_value_read(line: str, peer: Any, mine: Any) -> bool:
    """The same as ``_shared_value_line`` for a line too long to list the peer's stack
    whole: read from both results, each element of the peer's stack equals tclass's one
    value (not a list; program 63,772 of the five families: a nested stack of 36 ints)."""
    found = re.match(r"^result((?:\['\w+'\])+): peer values \(\('seq', 'list', ", line)
    if found is None:
        return False
    try:
        path = key_path(found.group(1))
        theirs, ours = (side.value[path] for side in (peer, mine))
    except Exception:  # a read that fails is no shared value
        return False
    values = flat_values(theirs)
    return not isinstance(ours, list) and bool(values) and all(v == ours for v in values)


def _shared_value_line(line: str) -> bool:
    """A nested value stack in the peer whose elements all equal tclass's one value."""
    found = _VALUE_STACK_LINE.match(line)
    if found is None:
        return False
    items, value = found.groups()
    return bool(items) and not items.replace(value, "").replace(", ", "")


def _ragged_values_loaded(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A ragged stack of Python values (``-1`` in its batch size) saved and loaded:
    tclass's comes back with that batch size, the peer's as a regular stack holding a
    list per element. Or a Python value set into a ragged lazy stack at a new nested key
    (``set``, ``[]``, ``set_non_tensor``): each member's value has the member's batch
    size, where the peer gives the members' new nested nodes the stack's ``-1`` (their
    values list as empty); so too the ``None`` that ``separates(key, strict=False)`` (or
    ``default=``) sets for a missing key (program 11,040,612 of combine,entries)."""
    if finding.kind != "result":
        return False
    src = finding.step.src
    defaulted = finding.step.op == "separates" and ("strict=False" in src or "default=" in src)
    if finding.step.op in ("set", "setitem_key", "set_non_tensor") or defaulted:
        return all(_RAGGED_IN_MEMBER.search(line) for line in finding.detail)
    return finding.step.op == "load_memmap" and _holds_ragged_values(mine.value)


# The peer's value node with the stack's -1 inside a member: it lists as empty; tclass's
# stacked value read whole, ragged before its stack dim, a HeterogeneousEntryError (no
# nested lists in that order: program 1,500,506)
_RAGGED_IN_MEMBER = re.compile(
    r"^result\[.*\]: length: peer 0, tclass \d+$|^result.*\.<members>.*\]: peer -1, tclass \d+$"
    r"|^result\[.*\]: peer list of 0, tclass error \('ValueError', "
)


def _holds_ragged_values(value: Any) -> bool:
    """A NonTensorStack with ``-1`` in its batch size."""
    return _holds_value_stack(value, lambda size: -1 in size)


def _ragged_dim(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An operation along the ragged dim of a lazy stack (``split``, ``unbind``, a
    reshape other than to one dim...): tclass's ``HeterogeneousEntryError`` saying the dim
    is ragged, where the peer fails inside or cuts the members (``split(1, ragged_dim)``
    gives one piece whose members keep one element each: the rest is silently dropped)."""
    if finding.kind not in ("tclass-raises", "family"):
        return False
    message = str(mine.error)
    return type(mine.error).__name__ == "HeterogeneousEntryError" and (
        "of this lazy stack (batch size" in message and ") is ragged" in message
    )


_PIECE_LINE = re.compile(r"^result(?:\[\d+\])+\.(?:kind|batch_size|<members>): ")


def _ragged_split_by_member(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``tensor_split(x, [i], dim)`` at indices along the ragged dim of a lazy stack: each
    member sliced alike (``[:i]`` and ``[i:]``, as a slice there indexes each member),
    the pieces lazy stacks, ragged where the members' parts differ; the peer takes the
    ``-1`` for a size and gives dense pieces of size 0 there (program 15,860,058 of
    methods,index,shape,combine, --length 16, fz28e)."""
    if finding.kind != "result" or finding.step.op != "tensor_split":
        return False
    pieces = mine.value if isinstance(mine.value, (tuple, list)) else ()
    lazy = [type(p).__name__ == "LazyStackedTensorDict" for p in pieces]
    if not lazy or not all(lazy) or not any(-1 in p.batch_size for p in pieces):
        return False
    return all(_PIECE_LINE.match(line) for line in finding.detail)


_RAGGED_UNREAD = re.compile(r"^result((?:\['\w+'\])+)(?:\[0\])?: peer list of \d+, tclass error \(")
_MEMBER_RAGGED = re.compile(
    r"^result\.<members>\[0\]\[\d+\](?:\['\w+'\])+\[1\]\[\d+\]: peer -1, tclass \d+$"
)


def _ragged_values_unread(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A Python value set in a lazy stack whose ragged dim comes before the stack dim
    (``x.set("s", "a")`` of ``[4, -1, 2]``): tclass's ragged ``NonTensorStack`` has no
    nested lists to read (its ``tolist`` raises), where the peer reads empty lists, and
    its members' values have their own batch sizes, where the peer's have ``-1`` there
    (program 30,239 of the five families, inv18a)."""
    if finding.kind != "result" or -1 not in tuple(getattr(mine.value, "batch_size", ())):
        return False
    for line in finding.detail:
        found = _RAGGED_UNREAD.match(line)
        if found is not None:
            node = mine.value.get(key_path(found.group(1)), None)
            if type(node).__name__ != "NonTensorStack" or -1 not in node.batch_size:
                return False
        elif _MEMBER_RAGGED.match(line) is None:
            return False
    return True


def _ragged_made_dense(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``to_tensordict()`` / ``contiguous()`` of a ragged lazy stack holding no tensor
    to stack: tclass's ``HeterogeneousEntryError`` where the peer returns a dense
    TensorDict whose batch size holds ``-1`` (its ``numel()`` 1; left43)."""
    if finding.kind != "tclass-raises" or finding.step.op not in ("to_tensordict", "contiguous"):
        return False
    dense = type(peer.value).__name__ == "TensorDict"
    size = tuple(getattr(peer.value, "batch_size", ()))
    return dense and -1 in size and type(mine.error).__name__ == "HeterogeneousEntryError"


def _ragged_pad_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``pad`` of a lazy stack with a ragged dim: tclass's result stays a lazy stack, ``-1``
    along that dim (its members padded), where the peer pads a dense stack whose size
    there is ``-1`` plus the padding (program 3,203,281 of shape,combine,math), and its
    nested collections alike (program 5,502,669 of the six families, left42)."""
    if finding.kind != "result" or finding.step.op != "pad":
        return False
    size = getattr(mine.value, "batch_size", ())
    if type(mine.value).__name__ != "LazyStackedTensorDict" or -1 not in size:
        return False
    peer_size = getattr(peer.value, "batch_size", None)
    if peer_size is None or -1 in peer_size or len(peer_size) != len(size):
        return False
    shown = re.compile(r"^result(\['[^']*'\])*\.(kind|batch_size|<members>): ")
    return all(shown.match(line) for line in finding.detail)


# ``load_memmap``, ``L.load(`` / ``L.LazyStackedTensorDict.load(``, or a record class's
# ``Rec.load(`` (fz29i)
_LOADED = re.compile(r"load_memmap|\bL\.(\w+\.)?load\(|\b[A-Z]\w*\.load\(")


def _loaded_is_memmap(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``is_memmap()`` of a collection loaded with ``load_memmap`` (or ``L.load``, or a
    class's ``load``: ``L.LazyStackedTensorDict.load``, whose members' tensors the peer
    maps but never flags, program 9,194,225 of records,entries; a record class's
    ``Rec.load``: 16,027,557 L12 of methods,features,entries,records, fz29i): True in
    tclass (its tensors are memory-mapped), False in the peer, which flags only what it
    mapped (not an empty nested collection)."""
    return (
        finding.kind == "result"
        and finding.step.op == "x.is_memmap()"
        and peer.value is False
        and mine.value is True
        and any(_LOADED.search(line) for line in finding.lines)
    )


def _nothing_mapped(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Rows of a collection without tensors given ``memmap_()`` without a folder: not
    locked in tclass, where nothing of it is mapped (``is_memmap()`` false), locked in the
    peer, whose flag says memory-mapped."""
    if finding.kind != "result" or finding.step.op not in ("getitem", "get_at"):
        return False
    if not all(_LOCK_LINE.search(line) for line in finding.detail) or peer.value is None:
        return False
    unsaved = any(re.search(r"\.memmap_?\(\)", line) for line in finding.lines)
    if not unsaved or not hasattr(mine.value, "is_memmap"):
        return False
    tensors = [v for v in mine.value.values(True, True) if isinstance(v, torch.Tensor)]
    return not tensors and mine.value.is_memmap() is False


def _state_dict_keys_skipped(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``load_state_dict(..., strict=False)``: the keys tclass's result has, in the peer's
    order, where the peer adds others (a state dict of flat keys holding dots, whose
    Python values it lacks: the peer rebuilds nested entries from the dotted names)."""
    if finding.kind != "result" or finding.step.op != "load_state_dict":
        return False
    if "strict=False" not in finding.step.src:
        return False
    for line in finding.detail:
        keys = _keys_of(line)
        if keys is None or not _fewer_in_order(keys[1], keys[0]):
            return False
    return True


_STACKED_LAZY_BY_APPLY = re.compile(
    r"^result((?:\['\w+'\])*)(\.kind: peer 'LazyStackedTensorDict', tclass 'TensorDict'"
    r"|\.<members>: peer \d+ \(.*, tclass None)$"
)
# a member's value of the dropped node: None in the peer (its stack lacks the key)
_MEMBER_READS_NONE = re.compile(
    r"^result\.<members>(?:\[\d+\])+\['(\w+)'\]: peer py \('NoneType', None\)"
)


def _stacked_past_apply_drop(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``maybe_dense_stack([x, x.apply(fn)])`` over no elements: the peer's ``apply``
    drops a nested node holding only a Python value there (as for ``x < x.apply(fn)``),
    so its members' keys differ and it stacks them lazily without that node; tclass's
    ``apply`` keeps it and the stack is dense (program 52,511 of the five families). And
    that ``apply`` itself of a lazy stack over no elements (its result lacks the node; a
    TensorDict's keeps it in both: program 10,808,016 of index,combine,shape,entries
    --length 4, inv20e). And ``LazyStackedTensorDict(x, x.clone(), x.apply(fn))``: the
    peer's stack lists the keys its members share, not the dropped one, and reads None
    for it in a member (program 12,810,485 of index,shape,combine --length 12, fz23g).
    ``collate`` and ``dense_stack_tds`` of such operands alike (17,071,064 / 17,063,798
    L8 of extra,index, fz33b)."""
    if finding.kind != "result" or finding.step.op not in (
        "maybe_dense_stack",
        "apply",
        "lazy_stack",
        "collate",
        "dense_stack",
    ):
        return False
    if ".apply(" not in finding.step.src or not hasattr(mine.value, "batch_size"):
        return False
    if mine.value.batch_size.numel() != 0:
        return False
    for line in finding.detail:
        keys = _keys_of(line)
        if keys is None:
            dropped = _MEMBER_READS_NONE.match(line)
            if dropped is not None and finding.step.op == "lazy_stack":
                if not _holds_no_tensor(mine.value.get(dropped.group(1))):
                    return False
            elif not _STACKED_LAZY_BY_APPLY.match(line):
                return False
            continue
        path = key_path(line)
        if not _fewer_in_order(keys[0], keys[1]):
            return False
        for extra in set(keys[1]) - set(keys[0]):
            if not _holds_no_tensor(mine.value.get((*path, extra))):
                return False
    return True


def _holds_no_tensor(node: Any) -> bool:
    """Whether ``node`` (an entry of tclass's result) holds Python values only."""
    leaves = node.values(True, True) if hasattr(node, "values") else [node]
    return not any(isinstance(leaf, torch.Tensor) for leaf in leaves)


def _first_row_none_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``numpy()`` / ``to_dict(retain_none=False)`` of a stack of per-element Python values
    with two dims or more whose first row holds only None and a later one a value (a
    padded record's ``label`` gathered): tclass keeps the entry, where the peer's drops
    it as a None field, its ``NonTensorStack.data`` reading the common value of the first
    row only (program 10,814,140 of index,combine,shape,entries ``--length 8``, inv21e).
    Every line lists keys; only tclass's has some, each such a nested list."""
    if finding.kind != "result" or finding.step.op not in ("numpy", "to_dict"):
        return False
    for line in finding.detail:
        listed = _keys_of(line)
        if listed is None or not re.match(r"^result(\['[^']*'\])*: keys: ", line):
            return False
        theirs, ours = listed
        if not _fewer_in_order(theirs, ours):
            return False
        node = mine.value
        for key in key_path(line):
            node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            return False
        if not all(_first_row_none(node.get(key)) for key in ours if key not in theirs):
            return False
    return True


def _first_row_none(value: Any) -> bool:
    """Whether ``value`` is a nested list of two dims or more whose first row holds only
    None and that holds something else later."""
    if not isinstance(value, list) or not value or not isinstance(value[0], list):
        return False
    first, rest = flat_values(value[0]), flat_values(value[1:])
    return all(item is None for item in first) and any(item is not None for item in rest)


# a str (or a number: program 15,520,535, fz27g) the peer's ``share_memory_()`` made a
# ``multiprocessing`` shared value
_SHARED_STR = re.compile(
    r": peer other (\('SynchronizedString',\), tclass py \('str', "
    r"|\('Synchronized',\), tclass py \('(int|float|bool)', "
    r"|\('ListProxy',\), tclass list of )"  # a list (15,965,623, fz29b)
)


def _shared_str_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A ``str`` of a collection after ``share_memory_()``: tclass's stays a ``str``, where
    the peer's shares it as a ``multiprocessing`` ``SynchronizedString`` that an index by
    a list, or the values of a lazy stack over it, then hold (fz27b: programs 15,020,032
    and 15,020,472 of methods,index,shape,combine); a number as a ``Synchronized`` that a
    ``reshape`` / ``flatten`` of an expanded value then holds (15,520,535, fz27g); a list
    as a ``ListProxy`` that ``unflatten`` then holds (15,965,623 L12, fz29b)."""
    if finding.kind != "result" or not any("share_memory_()" in line for line in finding.lines):
        return False
    return all(_SHARED_STR.search(line) for line in finding.detail)


def _value_stack_reshaped_in_place(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``repeat_interleave(..., inplace=True)`` (or ``masked_select(mask, inplace=True)``:
    program 15,530,225, ``--length 12``, fz27g) of a TensorDict holding a stack of Python
    values (a ``NonTensorStack``): tclass changes it in place, as one holding tensors,
    where the peer refuses (fz27b: program 15,000,345 of methods,index,shape,combine);
    and ``repeat_interleave(n, dim=0, inplace=True)`` of a collection without batch dims,
    which gets batch ``[n]`` in place, as the peer's out-of-place result, where the peer
    refuses the change of ndim (15,550,304, ``--length 16``, fz27g)."""
    if finding.kind != "peer-raises":
        return False
    if finding.step.op not in ("repeat_interleave", "masked_select"):
        return False
    message = str(peer.error)
    if finding.step.op == "repeat_interleave" and "on a scalar tensordict because" in message:
        return "changes ndim" in message and "inplace=True" in finding.step.src
    # (or a lazy stack: repeat_interleave(1, dim=0, inplace=True) of a TensorDict holding
    # one, program 15,850,221, --length 12, fz28e)
    return "holds a lazy tensordict" in message and (
        "found a NonTensorStack" in message or "found a LazyStackedTensorDict" in message
    )


_VALUE_PER_ELEMENT = re.compile(r"^result\['(\w+)'\](\[\d+\])*: peer list of \d+, tclass py \(")


def _refreshed_values_as_loaded(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An op after ``memmap_refresh_()`` of a collection whose Python value the peer held
    with dims past its batch size (a record's label of dims ``[1, 1, 3]`` after
    ``batch_size = []``): tclass's refreshed value has the batch dims, as a load gives
    them in both; the peer's refresh keeps the old dims, which its ``unsqueeze`` nests
    (program 15,000,286 of methods,index,shape,combine, fz27a); the refresh's result
    itself too (a value of dims ``[1, 1, 1, 4, 2]`` under a batch ``[]``: 16,012,132 L8
    of methods,index,shape,combine, fz30d)."""
    if finding.kind != "result" or not finding.detail:
        return False
    if finding.step.op == "memmap_refresh_":
        return all(_refreshed_at_its_node(line, peer, mine) for line in finding.detail)
    if not any(".memmap_refresh_()" in line for line in finding.lines[:-1]):
        return False
    peers = _peer_values_past_ours(finding, peer, mine, _VALUE_PER_ELEMENT)
    return peers is not None and all(
        len(list_dims(theirs)) > len(peer.value.batch_size) for theirs in peers
    )


_VALUE_SIZE_LINE = re.compile(r"^result((?:\['[^']*'\])+)\[1\]: length: peer \d+, tclass \d+$")


def _refreshed_at_its_node(line: str, peer: Any, mine: Any) -> bool:
    """A refreshed Python value (one, not a stack) of the same data whose batch size is
    its node's in tclass and that plus more dims in the peer."""
    found = _VALUE_SIZE_LINE.match(line)
    key = () if found is None else key_path(found.group(1))
    try:
        theirs, ours = peer.value.get(key), mine.value.get(key)
        node = mine.value.get(key[:-1]) if len(key) > 1 else mine.value
    except Exception:  # not a key both hold
        return False
    if {type(theirs).__name__, type(ours).__name__} != {"NonTensorData"}:
        return False
    size, past = list(ours.batch_size), list(theirs.batch_size)
    grown = len(past) > len(size) and past[: len(size)] == size
    return grown and size == list(node.batch_size) and theirs.data == ours.data
