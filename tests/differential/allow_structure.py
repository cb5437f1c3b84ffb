"""The rules of the deliberate differences (``allowlist.ENTRIES``), second part: lazy
stacks and their members, locks, dims (their names in ``allow_names``), records, Python
values over no elements or ragged, memory maps and state dicts (the shared helpers are in
``allow_ops``; writes and indices in ``allow_writes``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from .allow_fields import _nested_none_kept
from .allow_names import _NAMES_LINE, _names_of, _nested_names_dropped
from .allow_ops import (
    _EMPTY_LAZY,
    _KEYS_LINE,
    _LOCK_LINE,
    _REDUCTIONS,
    _VALUES_DROPPED,
    _fewer_in_order,
    _keys_of,
    _tagged,
)
from .allow_ragged import (
    _about_values,
)

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts


# The lines of a result that is a lazy stack of no members in the peer and a TensorDict
# of the same batch size in tclass (one line at least says the peer has no members).
_NO_MEMBERS = re.compile(r"<members>: peer \d+ \(\[\],\), tclass (None|\d+ \()")
_NO_MEMBERS_LINES = (
    _NO_MEMBERS,
    re.compile(
        r"\.kind: peer 'LazyStackedTensorDict', tclass '(TensorDict|Rec)'"
    ),  # (records kept)
    re.compile(r": keys: peer \[\], tclass \["),
    re.compile(r"\.(batch_size|names): peer "),
    re.compile(r"\.device: peer 'None', tclass "),  # the peer's stack of no members has none
    # nor a lock (nor the lazy stack holding it: a lazy stack of lazy stacks)
    re.compile(r"^result(\[\d+\]|\.<members>(\[\d+\])+)*\.is_locked: peer False, tclass True$"),
)


# The lines of a result that is a lazy stack in tclass and a dense TensorDict in the peer.
_STAYS_LAZY = (
    re.compile(r"\.kind: peer 'TensorDict', tclass 'LazyStackedTensorDict'"),
    re.compile(r"<members>: peer None, tclass \d+ \("),
    # a nested lazy stack whose members the peer made dense (and restacked elsewhere)
    re.compile(
        r"<members>: peer \d+ \(\[\('collection', 'TensorDict', .*, "
        r"tclass \d+ \(\[\('collection', 'LazyStackedTensorDict', "
    ),
)


_LAZY_KEPT = ("unflatten", "expand", "expand_as", "reshape", "view", "flatten")
_NESTED_DIM_OPS = ("unflatten", "reshape", "view")  # into dims of size 1
# the members of a nested lazy stack, lazy in both, grouped by the dims each keeps
_NESTED_LAZY = re.compile(
    r"\]\.<members>: peer \d+ \(\[\('collection', 'LazyStackedTensorDict', .*, "
    r"tclass \d+ \(\[\('collection', 'LazyStackedTensorDict', "
)


def _lock_follows_sharing(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A shape op's result (or what it holds) locked in one library only, in a program
    that saved or locked a collection: tclass locks views of a locked source (and
    ``unbind``'s slices of a memory-mapped, saved or shared one; ``rename`` of a locked
    file), the peer follows its memory-mapped flag, which some ops pass on and others
    drop."""
    renamed = finding.step.op in ("rename", "refine_names")  # a view of the same data
    if finding.kind != "result" or (
        finding.step.family not in ("shape", "records") and not renamed
    ):
        return False
    saved = re.compile(r"memmap|lock_\(\)|\.save\(|\.dumps\(|consolidate\(filename")
    if not (facts.memmap or any(saved.search(line) for line in finding.lines)):
        return False
    return all(_LOCK_LINE.search(line) for line in finding.detail)


def _copy_unlocked(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``unlock_()`` of a stacked copy of a locked collection, or of the ``to_tensordict()``
    copy of a locked record: it shares nothing with the locked one and unlocks, where the
    peer's lock graph still counts the source's nested collections as the copy's and
    refuses ("part of a locked graph"; the record's: program 2,120 of ``--families
    entries,index``, left46a)."""
    if finding.kind != "peer-raises" or finding.step.op != "unlock_":
        return False
    if "part of a locked graph" not in str(peer.error) or len(finding.lines) < 2:
        return False
    if finding.lines[-2] == "x = x.to_tensordict()":
        return type(mine.value).__name__ == "TensorDict" and not mine.value.is_locked
    storage = getattr(mine.value, "_tensordict", mine.value)  # a dense stack: a copy
    lazy = type(storage).__name__ == "LazyStackedTensorDict"
    return _STACKED_COPY.search(finding.lines[-2]) is not None and not lazy


# x stacked with itself or with copies of it (``maybe_dense_stack``: dense when they match)
_STACKED_COPY = re.compile(
    r"^x = (torch|L)\.(stack|cat|maybe_dense_stack)"
    r"\(\[x(, x(\.clone\(\)|\.apply\([\w.]+\))?)*\], -?\d+\)$"
)


def _write_into_locked_slices(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A write into ``unbind`` / ``split`` slices of a saved or memory-mapped collection
    (or of a lazy stack of one): the slices are locked in tclass, as the collection they
    share is, so the write is a ``LockedError``; the peer's slices are not locked."""
    if finding.kind != "tclass-raises" or type(mine.error).__name__ != "LockedError":
        return False
    saved = re.compile(r"memmap|\.save\(|consolidate\(filename")
    before = finding.lines[:-1]
    if not (facts.memmap or any(saved.search(line) for line in before)):
        return False
    return any(".unbind(" in line or ".split(" in line for line in before)


_NODE_KEPT_LOCKED = re.compile(r"^result\S+\.is_locked: peer False, tclass True$")


def _moved_nodes_keep_their_lock(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``to`` / ``cpu()`` / ``detach()`` of an unlocked collection whose nested collections
    or lazy-stack members are locked (saved, locked or consolidated): tclass's result keeps
    each of those locked, as its source is; the peer gives every node the lock of the
    collection it was called on."""
    if finding.kind != "result" or finding.step.op not in ("to", "cpu", "detach"):
        return False
    if getattr(mine.value, "is_locked", True) or getattr(peer.value, "is_locked", True):
        return False
    saved = re.compile(r"memmap|lock_\(\)|\.save\(|consolidate\(")
    if not (facts.memmap or any(saved.search(line) for line in finding.lines[:-1])):
        return False
    return all(_NODE_KEPT_LOCKED.match(line) for line in finding.detail)


_MEMBER_LOCKED = re.compile(r"<members>\[\d+\]\[\d+\].*\.is_locked: peer True, tclass False$")


def _members_lock_as_the_stack(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Pointwise math of a lazy stack with a locked member: the result's members have the
    stack's lock in tclass, where the peer locks a member whose source member is locked
    when it hands a tensor operand to each member (``x + t``, ``torch.where``), and not
    for a number (``x + 1``)."""
    if finding.kind != "result" or finding.step.family != "math":
        return False
    if not (facts.memmap or any("memmap" in line or "lock_()" in line for line in finding.lines)):
        return False
    return all(_MEMBER_LOCKED.search(line) for line in finding.detail)


_SIZES = re.compile(
    r"\]\.(?:batch_size|names): peer [\[(]([^\])]*)[\])], tclass [\[(]([^\])]*)[\])]$"
    r"|\]: peer (?:Tensor|Parameter|MemoryMappedTensor)\[([\w.]+), shape \[([^\]]*)\]\], "
    r"tclass Tensor\[\3, shape \[([^\]]*)\]\]$"
)


def _nested_dim_kept(line: str) -> bool:
    """A nested collection's batch size, names or tensor shape with one more dim in
    tclass, of size 1 (the peer's dense ``unflatten`` of a lazy stack into dims of size 1
    loses one of a nested collection's own dims)."""
    found = _SIZES.search(line)
    if found is None:
        return False
    theirs, mine = (
        (found.group(1), found.group(2))
        if found.group(1) is not None
        else (
            found.group(4),
            found.group(5),
        )
    )
    peer_dims = [d.strip() for d in theirs.split(",") if d.strip()]
    my_dims = [d.strip() for d in mine.split(",") if d.strip()]
    if len(my_dims) != len(peer_dims) + 1:
        return False
    if ".names: " in line:
        return all(d == "None" for d in my_dims + peer_dims)
    return any(
        my_dims[:i] + my_dims[i + 1 :] == peer_dims for i, d in enumerate(my_dims) if d == "1"
    )


def _front_dim_kept(line: str) -> bool:
    """A batch size, names or tensor shape with one more dim in tclass, in front, of size 1."""
    found = _SIZES.search(line)
    if found is None:
        return False
    theirs, mine = found.group(1, 2) if found.group(1) is not None else found.group(4, 5)
    peer_dims = [d.strip() for d in theirs.split(",") if d.strip()]
    my_dims = [d.strip() for d in mine.split(",") if d.strip()]
    if ".names: " in line:
        return len(my_dims) == len(peer_dims) + 1 and all(d == "None" for d in my_dims)
    return my_dims == ["1", *peer_dims]


def _flattened_without_dims(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``flatten`` of a collection without batch dims: batch size ``[1]`` in both, each
    entry with a dim of size 1 in front, as torch's ``flatten`` of a 0-d tensor, where
    the peer's ``flatten(-1, 0)`` leaves the entries as they were (first own dim taken for
    the new batch dim, a file kept), and a Python value one value where tclass holds it
    once for the new dim (a list of one, as the peer's own ``flatten(0, 0)`` gives)."""
    if finding.kind != "result" or finding.step.op != "flatten":
        return False
    if "no-batch-dims" not in finding.step.tags:
        return False
    return all(
        _front_dim_kept(line) or _VALUE_ONE_DEEPER.search(line) or _NODE_ONE_DEEPER.search(line)
        for line in finding.detail
    )


# quantile with a 1-D q along a dim: one result per quantile, stacked (in tclass)
_QUANTILES_STACKED = re.compile(r"\.quantile\(torch\.tensor\(\[[^\]]*\]\), (dim=)?-?\d")


def _narrowed_stack_contiguous(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A ``view`` after a ``narrow`` of a lazy stack: tclass narrows the members and
    stacks them (contiguous tensors, which a view takes), the peer narrows its dense
    stack (strided views, which this view refuses); after a ``broadcast_to`` of a
    ragged lazy stack, which tclass keeps lazy as the ``expand`` of both. As
    after ``quantile`` with a 1-D ``q`` along a dim: tclass stacks one quantile at a time
    (contiguous tensors), where torch's result of a transposed tensor is strided. As
    after ``masked_fill``: tclass's tensors are ``torch.masked_fill``'s (contiguous), the
    peer's are clones that keep a permuted layout (program 8,704,380 of
    index,shape,combine --length 8)."""
    if finding.kind != "peer-raises":
        return False
    op, error = finding.step.op, str(peer.error)
    lines = finding.lines[:-1]
    lazy = [i for i, line in enumerate(lines) if "lazy_stack(" in line or "LazyStacked" in line]
    after = lines[lazy[0] + 1 :] if lazy else []
    if op != "view" or "view size is not compatible with input tensor's size and" not in error:
        return False
    if any(_QUANTILES_STACKED.search(line) or ".masked_fill(" in line for line in lines):
        return True
    return any(".narrow(" in line or ".broadcast_to(" in line for line in after)


def _stays_lazy(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``unflatten`` along a lazy stack's stack dim, ``expand`` (``expand_as``) of a lazy
    stack, a ``reshape`` / ``view`` / ``flatten`` / ``unflatten`` that merges or splits
    dims of size 1: a lazy stack of the same entries in tclass, a dense TensorDict in the
    peer (whose nested lazy stacks, after an ``expand``, keep the lock of the members'
    nested collections; the ``expand`` of a locked or memory-mapped stack, a view of its
    locked members in tclass, is locked; over no elements the peer's dense copy drops the
    dim names its copy of a stack with elements keeps). An index (a mask) of a lazy stack
    of lazy stacks keeps their members' lazy stacks where the peer's are dense (of
    index,shape)."""
    if finding.kind == "result" and finding.step.op == "getitem":  # program 7,801,035
        # (the members of a nested lazy stack kept lazy: x[None, mask], 8,706,712 of
        # index,shape)
        return all(
            _STAYS_LAZY[2].search(d)
            or (d.startswith("result.<members>[") and any(p.search(d) for p in _STAYS_LAZY))
            for d in finding.detail
        )
    if finding.kind != "result" or finding.step.op not in _LAZY_KEPT:
        return False
    if finding.step.op in _NESTED_DIM_OPS and any(_nested_dim_kept(d) for d in finding.detail):
        return all(
            any(p.search(d) for p in _STAYS_LAZY)
            or _nested_dim_kept(d)
            or _NESTED_LAZY.search(d)
            or _value_dim_kept(d)  # a nested value node's own dim of size 1 too
            for d in finding.detail
        )
    if finding.step.op in ("expand", "expand_as"):  # (expand_as(t): expand(t.shape), both)
        # the peer's nested lazy stacks keep their lock
        locked = facts.memmap or any(_SAVED_OR_LOCKED.search(line) for line in finding.lines)
        return all(
            any(p.search(d) for p in _STAYS_LAZY)
            or _NESTED_LOCK_KEPT.search(d)
            or (locked and _SHARED_LOCK_KEPT.search(d))  # tclass's view of locked members
            for d in finding.detail
        )
    if not _STAYS_LAZY[0].search(finding.detail[0]):
        return all(any(p.search(d) for p in _STAYS_LAZY) for d in finding.detail)
    # the peer's dense copy of a nested lazy stack has no dim names, nor of one over no
    # elements (unflatten into dims of size 1)
    return all(
        any(p.search(d) for p in _STAYS_LAZY)
        or _nested_names_dropped(d)
        or (0 in mine.value.batch_size and _names_dropped(d))
        for d in finding.detail
    )


def _names_dropped(line: str) -> bool:
    """A ``result.names`` line: the peer's all None, tclass's as many, some named."""
    found = _NAMES_LINE.match(line)
    if found is None or found.group(1) is not None:
        return False
    theirs, mine = (side.strip("[]").split(", ") for side in found.group(2, 3))
    return len(theirs) == len(mine) and set(theirs) == {"None"} and set(mine) != {"None"}


def _value_dim_kept(line: str) -> bool:
    """A Python value's batch size with one more dim (of size 1) in tclass, or its
    values one list deeper there."""
    sizes = _VALUE_DIMS.search(line)
    if sizes is not None and int(sizes.group(2)) == int(sizes.group(1)) + 1:
        return True  # (else a list of one deeper down: program 4,625 of shape,combine)
    return _VALUE_ONE_DEEPER.search(line) is not None or _VALUE_LIST_DEEPER.search(line) is not None


_NESTED_LOCK_KEPT = re.compile(r"^result\[.*\.is_locked: peer True, tclass False$")
# tclass's lazy expand of a locked (memory-mapped) lazy stack is a view of it, locked as
# its source ("A result's lock follows what it shares"); the peer's dense copy is not
_SHARED_LOCK_KEPT = re.compile(r"^result(\[.*)?\.is_locked: peer False, tclass True$")
_SAVED_OR_LOCKED = re.compile(r"memmap|lock_\(\)|\.save\(|\.dumps\(|consolidate\(filename")


def _contains_as_dense(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``key in lazy.keys(...)`` (a record over a lazy stack too: program 5,100,396 of
    ``--families entries,records --length 6``, fz40c): answered as for a TensorDict in
    both libraries (a nested node is in ``keys(True, True)``, a nested key is not in
    ``keys()``), where the peer's lazy stack answers the other way."""
    return finding.step.op == "contains" and _tagged("lazy", "result")(finding, facts, peer, mine)


def _lazy_batch_size_set(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A new batch size of a lazy stack that keeps its stack dim, set or inferred by
    ``auto_batch_size_`` (from the stack's own entries, its nested collections left as
    they were, as the peer), which the peer refuses."""
    if finding.kind != "peer-raises":
        return False
    if finding.step.op not in ("set_batch_size", "auto_batch_size_"):
        return False
    return "Modifying the batch size of a lazy representation" in str(peer.error)


def _no_members_taken(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A selection of none of a lazy stack's members (``split`` / ``chunk`` pieces of size
    0, ``repeat_interleave(0)``, a reshape of no elements): tclass's TensorDict (or lazy
    stack of members with no elements, its batch size as torch gives it) with the
    stack's keys, where the peer gives a lazy stack of no members, without keys (nor a
    lock: that of a member the peer gives as such a stack, too)."""
    if finding.kind != "result" or not any(_NO_MEMBERS.search(d) for d in finding.detail):
        return False
    empty = {d.split(".<members>: peer")[0] for d in finding.detail if _NO_MEMBERS.search(d)}
    return all(
        any(p.search(d) for p in _NO_MEMBERS_LINES) or _lock_of_no_members(d, empty)
        for d in finding.detail
    )


# a member's lock, where the peer's member is a lazy stack of no members (which has none)
_MEMBER_LOCK = re.compile(
    r"^(result(?:\[\d+\])*(?:\.<members>\[\d+\]\[\d+\])+)\.is_locked: peer False, tclass True$"
)


def _lock_of_no_members(line: str, empty: set[str]) -> bool:
    """``line`` is the lock of a member (path in ``empty``) the peer gives as a lazy stack
    of no members."""
    match = _MEMBER_LOCK.match(line)
    return match is not None and match.group(1) in empty


# The lines of a result of a LazyStackedTensorDict built from records: a record where the
# peer gives a TensorDict (or a lazy stack of records where it gives a record over one),
# and what comes with the kind (a record's fields, its value read as a list).
_RECORD_KIND_LINES = (
    re.compile(r"\.kind: peer 'TensorDict', tclass '(Rec|Inner)'$"),
    re.compile(r"\.kind: peer 'Rec', tclass 'LazyStackedTensorDict'$"),
    re.compile(r"<members>: peer None, tclass \d+ \("),
    re.compile(r"\['label'\]: peer nontensor \(.*, tclass list of \d+$"),
    re.compile(r"\['label'\]: peer list of \d+, tclass nontensor \("),
)
_RECORD_FIELDS = {"x", "label", "inner", "opt", "y", "z"}
# a reduction's Python value: kept (math-beyond-the-peer), a TensorDict without keys in the peer
_VALUE_REDUCED = re.compile(
    r"\['label'\]: peer TensorDict\(batch_size=\[[\d, ]*\], keys=\[\]\), "
    r"tclass (py \(|list of \d+$)"
)


def _fields_line(line: str) -> bool:
    """``result: keys: peer [...], tclass [...]`` where one side lacks fields that are
    ``None`` (a record lists them all; a TensorDict or lazy stack leaves them out), or
    lists them in another order (a record's in its declaration's)."""
    found = re.search(r": (?:key order|keys): peer (\[[^\]]*\]), tclass (\[[^\]]*\])$", line)
    if found is None:
        return False
    peer_keys, my_keys = (set(re.findall(r"'(\w+)'", side)) for side in found.groups())
    both = peer_keys | my_keys
    return both <= _RECORD_FIELDS and (peer_keys <= my_keys or my_keys <= peer_keys)


def _records_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A ``LazyStackedTensorDict`` built from records: a lazy stack of those records
    through the ops that keep it lazy, one record where an op makes it dense; the peer
    gives a record over a lazy stack for some ops, a TensorDict without the record's class
    and ``None`` fields for others, and its ``cat`` raises. A reduction keeps the record's
    Python values too, where the peer's are ``TensorDict``s without keys. Beside them, a
    nested record of the ``None`` values the peer stored through ``from_dict`` reads as
    ``none-field-unset`` has it (``split_keys``: program 8,305,880 of ``--length 8``
    index,entries,records, fz18a)."""
    if finding.kind == "peer-raises":
        message = str(peer.error)
        if "no attribute '_from_tensordict'" in message:  # its cat, another way
            return finding.step.op == "cat"
        return "Expected a TensorDictBase instance but got" in message and "Rec'>" in message
    if finding.kind != "result" or not any(
        "].kind: " in d or d.startswith("result.kind: ") for d in finding.detail
    ):
        return False
    dropped = finding.step.op in _VALUES_DROPPED  # and the values, as for a TensorDict
    reduced = finding.step.op in _REDUCTIONS  # the values kept, as for a TensorDict
    return all(
        any(p.search(d) for p in _RECORD_KIND_LINES)
        or _fields_line(d)
        or (dropped and _EMPTY_LAZY.search(d) is not None)
        or (reduced and _VALUE_REDUCED.search(d) is not None)
        or _nested_none_kept(finding, d, peer.value)  # (none-field-unset's: 8,305,880)
        for d in finding.detail
    )


_EMPTY_LIST = re.compile(r"\]: length: peer 0, tclass [1-9]\d*$")


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
    for key in source.keys():
        try:
            child = source.get(key)
        except Exception:  # noqa: BLE001  (a read that raises holds nothing here)
            continue
        if _holds_value_stack(child, picks, depth + 1):
            return True
    return False


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


_NO_VALUES_LEFT = re.compile(r": peer py \('NoneType', None\), tclass list of 0$")


def _empty_value_keys(value: Any, depth: int = 0) -> set[str]:
    """The keys, at any depth of ``value`` (a collection), of per-element Python values
    over no elements."""
    if depth > 8 or not hasattr(value, "batch_size") or not hasattr(value, "keys"):
        return set()
    found: set[str] = set()
    for source in [getattr(value, "_tensordict", value), *getattr(value, "tensordicts", ())]:
        for key in source.keys():
            try:
                child = source.get(key)
            except Exception:  # noqa: BLE001  (a read that raises holds nothing here)
                continue
            if type(child).__name__ == "NonTensorStack" and child.batch_size.numel() == 0:
                found.add(key)
            else:
                found |= _empty_value_keys(child, depth + 1)
    return found


def _empty_values_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Per-element Python values over no elements, kept by ``apply``, pointwise math and
    ``split`` as a tensor with no elements is, where the peer drops the entry (a record's
    field reads ``None``; a piece holds an empty lazy stack in its place), and its
    comparison with such an ``apply`` result fails on the keys."""
    if finding.kind in ("peer-raises", "family"):
        return _keys_mismatch_over_no_elements(finding, peer, mine)
    if finding.kind != "result":
        return False
    kept = _empty_value_keys(mine.value)
    for line in finding.detail:
        keys = _KEYS_LINE.search(line)
        if keys is not None:
            theirs, ours = (re.findall(r"'(\w+)'", side) for side in keys.groups())
            extra = set(ours) - set(theirs)
            if not extra or not set(theirs) <= set(ours) or not extra <= kept:
                return False
        elif _NO_VALUES_LEFT.search(line) is None and _EMPTY_PIECE.search(line) is None:
            return False
    return True


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
    lazy stack without keys, or (after its ``apply``) is gone. Every line is about a key
    that holds such values in tclass's result."""
    if finding.kind != "result":
        return False
    results = mine.value if isinstance(mine.value, (tuple, list)) else [mine.value]
    kept = set().union(*(_empty_value_keys(result) for result in results))
    for line in finding.detail:
        keys = re.findall(r"\['(\w+)'\]", line.split(": ")[0])
        if not keys or keys[-1] not in kept or not any(p.search(line) for p in _REBUILT_LINES):
            return False
    return True


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
    if "sets of keys in the tensordicts to stack are exclusive" in message:  # names none
        return finding.kind == "peer-raises" and bool(_empty_value_keys(mine.value))
    joined = _CAT_MISMATCH.search(message)  # its cat's, naming both sides' keys
    if joined is not None and finding.kind == "peer-raises":
        one, other = (set(re.findall(r"'(\w+)'", side)) for side in joined.groups())
        return bool(one ^ other) and one ^ other <= _empty_value_keys(mine.value)
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


_VALUE_DIMS = re.compile(r"\]\[1\]: length: peer (\d+), tclass (\d+)$")  # a value's batch size
_VALUE_ONE_DEEPER = re.compile(r": peer py \(.*\), tclass list of 1$")
# the same, as the node holds it: one value in the peer, a stack of one in tclass (a
# nested node's: over its own batch dims too)
_NODE_ONE_DEEPER = re.compile(
    r": peer value \(.*, \[[\d, ]*\]\), tclass values \(\('seq', 'list', \[\("
)
# a list of the values where tclass has one more level of lists (a dim of size 1)
_VALUE_LIST_DEEPER = re.compile(r"\]\[1\]: length: peer \d+, tclass 1$")


def _values_shaped_as_torch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``unflatten`` / ``view`` / ``reshape`` into dims of size 1 of a collection with
    per-element Python values: the values keep every batch dim torch gives a tensor of
    that batch size, where the peer's value stack loses one of size 1 (one level less of
    lists, one dim less in its batch size)."""
    tags = [tag for tag in finding.step.tags if tag.startswith("torch-shape=")]
    if finding.kind != "result" or finding.step.op not in _NESTED_DIM_OPS or len(tags) != 1:
        return False
    if str(list(getattr(mine.value, "batch_size", ()))) != tags[0].removeprefix("torch-shape="):
        return False
    for line in finding.detail:
        sizes = _VALUE_DIMS.search(line)
        if sizes is not None and int(sizes.group(2)) == int(sizes.group(1)) + 1:
            continue
        if _VALUE_ONE_DEEPER.search(line) is None and _VALUE_LIST_DEEPER.search(line) is None:
            return False
    return True


_VALUE_LENGTH = re.compile(r"^result\['(\w+)'\](\[\d+\])*: length: peer \d+, tclass \d+$")


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


def _value_dims(value: Any) -> list[int]:
    """The dims of a stack of Python values: its nested lists' lengths, outermost first."""
    dims: list[int] = []
    while isinstance(value, list) and value:
        dims.append(len(value))
        value = value[0]
    return dims


def _values_squeezed_as_the_batch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``squeeze()`` of a collection with per-element Python values: the values keep the
    result's batch dims, where the peer's value stack keeps a squeezed dim of size 1 (a
    label of dims ``[2, 1, 4, 3]`` under a batch ``[2, 4, 3]``; program 7,502,593 of
    shape,combine,math at length 8; a TensorDict's after ``rot90`` and ``torch.stack`` of
    a lazy stack, program 12,893 of shape,combine)."""
    if finding.kind != "result" or finding.step.op != "squeeze" or not finding.detail:
        return False
    for line in finding.detail:
        found = _VALUE_LENGTH.match(line)
        if found is None:
            return False
        key = found.group(1)
        theirs, ours = _value_at(peer.value, key), _value_at(mine.value, key)
        if _value_dims(ours) != list(mine.value.batch_size):
            return False
        if _value_dims(theirs) == list(peer.value.batch_size):
            return False
    return True


_SHAPE_LINE = re.compile(r"\.(names|batch_size): peer ")


def _empty_set_under_node(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A collection without entries or a Python value set under a nested node of a lazy
    stack (``lazy.set(("n", "k"), TensorDict({}, [2]))``, ``lazy.set(("n", "k"), "a")``):
    its members' copies take the node's batch size in tclass, and keep the value's own
    (shorter) one in the peer."""
    if finding.kind != "result" or finding.step.op not in ("set", "setitem_key"):
        return False
    src = finding.step.src
    if re.fullmatch(r"x\.set\(\(.*\), \"[^\"]*\"\)|x\[\(.*\)\] = \"[^\"]*\"", src):  # a value
        return all(_VALUE_UNDER_NODE.search(line) for line in finding.detail)
    if not re.search(r"\(\(.*\), L\.TensorDict\(\{\}, batch_size=", src) and not (
        re.search(r"^x\[\(.*\)\] = L\.TensorDict\(\{\}, batch_size=", src)
    ):
        return False
    return all(_SHAPE_LINE.search(line) for line in finding.detail)


# A Python value under a nested node: the peer's members hold it at their own batch size
# ([] read as the one value), tclass's at the node's (a list, of more dims).
_VALUE_UNDER_NODE = re.compile(
    r": peer py \('str', '[^']*'\), tclass list of \d+$|: length: peer \d+, tclass \d+$"
)


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
    its ``expand`` (``expand_as``, ``broadcast_to``, then ``maybe_dense_stack``: left43);
    or written at an index over itself (``td[i] = td[i].to_dict()``), where the peer makes
    it a value stack; or ``reshape`` after the peer's ``fliplr()`` of a lazy stack of one
    member rebuilt the value as a stack of stacks (the reshape of its ``contiguous()``
    gives the one value; program 18,034 of shape,combine); or ``unbind`` after the peer's
    ``tile`` of a lazy stack rebuilt the value per element (its unbind of the stack itself
    gives the one value, as tclass's after ``tile``; program 8,203,299 of the six
    families, fz18a). The same value in every slot."""
    ops = ("squeeze", "setitem", "reshape", "unbind", *_DEEPER)
    if finding.kind != "result" or finding.step.op not in ops:
        return False
    if finding.step.op == "reshape" and not any(".fliplr()" in line for line in finding.lines):
        return False
    if finding.step.op == "unbind":
        if not any(".tile(" in line for line in finding.lines):
            return False
        return all(_part_value_as_one(line, peer.value, mine.value) for line in finding.detail)
    for line in finding.detail:
        if _STACK_FOR_VALUE.match(line) and finding.step.op in ("setitem", "squeeze", "unbind"):
            continue  # (its values are compared by the line that lists them)
        found = _VALUE_LISTED.match(line)
        if found is None:
            return False
        theirs, ours = (_read_value(side.value, found.group(1)) for side in (peer, mine))
        if finding.step.op in _DEEPER and _depth(theirs) <= len(peer.value.batch_size):
            return False
        values = _flat(theirs) + _flat(ours)
        if not values or any(value != values[0] for value in values):
            return False
    return True


# ops after which the peer lists a record's kept value node deeper than its batch dims
_DEEPER = ("lazy_stack", "expand", "expand_as", "broadcast_to", "maybe_dense_stack")
_VALUE_LISTED = re.compile(r"^result((?:\['\w+'\])+)(\[\d+\])*: peer list of \d+, tclass ")
_STACK_FOR_VALUE = re.compile(r"^result(\['\w+'\])+: peer values \(.*, tclass value \(")


_PART_VALUE = re.compile(r"^result\[1\]\[(\d+)\]((?:\['\w+'\])+): peer (?:list of|values \()")


def _part_value_as_one(line: str, theirs: Any, ours: Any) -> bool:
    """A line about a Python value of part ``i`` of an ``unbind``: the peer's values, each
    tclass's one value."""
    found = _PART_VALUE.match(line)
    if found is None:
        return False
    keys = tuple(re.findall(r"\['(\w+)'\]", found.group(2)))
    try:
        listed = theirs[int(found.group(1))].get(keys).tolist()
        one = ours[int(found.group(1))].get(keys)
    except Exception:  # noqa: BLE001 (a read that fails is no shared value)
        return False
    one = getattr(one, "data", one)
    return isinstance(listed, list) and bool(listed) and all(v == one for v in _flat(listed))


def _read_value(collection: Any, path: str) -> Any:
    """A record's field or a collection's entry (``['n']['s']``: nested), where it holds
    a string or a list."""
    value = collection
    try:
        for key in re.findall(r"\['(\w+)'\]", path):
            value = getattr(value, key) if hasattr(value, key) else value[key]
    except Exception:  # a read that fails is no shared value
        return None
    return value if isinstance(value, (str, list)) else None


def _depth(value: Any) -> int:
    return 1 + _depth(value[0]) if isinstance(value, list) and value else 0


def _flat(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [item for part in value for item in _flat(part)]
    return [] if value is None else [value]


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
        path = tuple(re.findall(r"\['(\w+)'\]", found.group(1)))
        theirs, ours = (side.value[path] for side in (peer, mine))
    except Exception:  # a read that fails is no shared value
        return False
    values = _flat(theirs)
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
    values list as empty)."""
    if finding.kind != "result":
        return False
    if finding.step.op in ("set", "setitem_key", "set_non_tensor"):
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
            node = mine.value.get(tuple(re.findall(r"'(\w+)'", found.group(1))), None)
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


def _loaded_is_memmap(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``is_memmap()`` of a collection loaded with ``load_memmap`` (or ``L.load``): True
    in tclass (its tensors are memory-mapped), False in the peer, which flags only what
    it mapped (not an empty nested collection)."""
    return (
        finding.kind == "result"
        and finding.step.op == "x.is_memmap()"
        and peer.value is False
        and mine.value is True
        and any(re.search(r"load_memmap|\bL\.load\(", line) for line in finding.lines)
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
