"""The rules of the deliberate differences (``allowlist.ENTRIES``), second part: lazy
stacks and their members, locks, dims (their names in ``allow_names``) and records (the
shared helpers are in ``allow_common`` and ``allow_ops``; writes and indices in
``allow_writes``; Python values over no elements or ragged, memory maps and state dicts in
``allow_values``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import torch

from .allow_fields import _nested_none_kept
from .allow_names import _NAMES_LINE, _nested_names_dropped
from .allow_ops import (
    _EMPTY_LAZY,
    _REDUCTIONS,
    _VALUES_DROPPED,
)
from .allow_saved import (
    _LOCK_LINE,
)
from .compare import entry_at, key_path

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
_LAZY_KEPT += ("pad",)  # a nested lazy stack padded member by member (15,860,458, fz28e)
_NESTED_DIM_OPS = ("unflatten", "reshape", "view")  # into dims of size 1
# the members of a nested lazy stack, lazy in both, grouped by the dims each keeps
_NESTED_LAZY = re.compile(
    r"\]\.<members>: peer \d+ \(\[\('collection', 'LazyStackedTensorDict', .*, "
    r"tclass \d+ \(\[\('collection', 'LazyStackedTensorDict', "
)


# the ops that copy and that the peer's shared flag goes with (README: "is_memmap() looks
# at the data": `tile`, `roll`, `flip` and `rot90`, copies in memory)
_COPIES_SHARED_FLAG = re.compile(r"\b(flip|fliplr|flipud|roll|tile|rot90)\(")


_MEMMAPPED = re.compile(r"^x = x\.memmap\(")
_STACK_COPIED = re.compile(r"^x = x\.(broadcast_to|expand)\(")


def _index_of_a_stack_copy(finding: Finding, mine: Any) -> bool:
    """An index of a memory-mapped lazy stack's ``broadcast_to`` (or ``expand``): a
    TensorDict copied into memory in tclass, locked as its source, whose index is then
    unlocked (not memory-mapped: ``memmap-by-data``), where the peer's copy keeps its
    memory-mapped flag and its index stays locked (fz33b: program 17,070,894 L12 of
    features,index,shape,combine; og33k)."""
    if finding.detail != ["result.is_locked: peer True, tclass False"]:
        return False
    saved = [n for n, line in enumerate(finding.lines) if _MEMMAPPED.match(line)]
    if not saved or "lazy_stack(" not in finding.lines[0]:
        return False
    copied = [n for n, line in enumerate(finding.lines) if _STACK_COPIED.match(line)]
    return bool(copied) and copied[-1] > saved[0] and not mine.value.is_memmap()


def _lock_follows_sharing(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A shape op's result (or what it holds) locked in one library only, in a program
    that saved or locked a collection: tclass locks views of a locked source (and
    ``unbind``'s slices of a memory-mapped, saved or shared one; ``rename`` of a locked
    file), the peer follows its memory-mapped flag, which some ops pass on and others
    drop; an index of a shared collection after a shape op the peer's shared flag does not
    pass on (``x.share_memory_().squeeze()[-1]``: fz27b, program 15,000,265 of
    methods,index,shape,combine), and unlocked for an index of a copy made after it
    (``torch.flip``), which the peer's flag goes with (fz28e: 15,841,465). A
    ``consolidate()`` result is locked in both, with or without a file: its
    ``view(dtype)`` shares its storage, locked in tclass (the peer's unlocked, as of any
    locked TensorDict: program 16,027,909 L12 of methods,features,entries,records, fz29i)."""
    renamed = finding.step.op in ("rename", "refine_names")  # a view of the same data
    if finding.kind == "result" and finding.step.op == "getitem":
        shares = [n for n, line in enumerate(finding.lines) if line.endswith(".share_memory_()")]
        if not shares:
            return _index_of_a_stack_copy(finding, mine)
        if all(line.endswith(".is_locked: peer False, tclass True") for line in finding.detail):
            return True
        # a copy made after it (flip, roll...), in memory not shared: the peer's flag goes
        # with the copy and locks its index (fz28e: program 15,841,465, torch.flip)
        copied = any(_COPIES_SHARED_FLAG.search(line) for line in finding.lines[shares[0] :])
        return copied and all(
            line.endswith(".is_locked: peer True, tclass False") for line in finding.detail
        )
    if finding.kind != "result" or (
        finding.step.family not in ("shape", "records") and not renamed
    ):
        return False
    if finding.step.op == "view_dtype":  # a view of a locked source, however it was locked
        # (``from_modules``' locked result: programs 15,954,731, 15,982,499 L8 of
        # features,index,shape,combine and 15,982,111 L8 of features,math,index, fz30a)
        return all(line.endswith(".is_locked: peer False, tclass True") for line in finding.detail)
    if not (facts.memmap or any(_SAVED_OR_SHARED.search(line) for line in finding.lines)):
        return False
    return all(_LOCK_LINE.search(line) for line in finding.detail)


# a step that saves or locks, or shares (``unbind`` of ``x.share_memory_().reshape(...)``:
# the peer's reshape drops its shared flag; program 15,965,055 L12 of
# methods,index,shape,combine, fz30a)
_SAVED_OR_SHARED = re.compile(
    r"memmap|lock_\(\)|\.save\(|\.dumps\(|consolidate\(|share_memory_\(\)"
)


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
_LOCKING = re.compile(r"memmap|lock_\(\)|consolidate\(")  # a step that locks what it gives


def _members_lock_as_the_stack(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Pointwise math of a lazy stack with a locked member (locked, saved or consolidated):
    the result's members have the stack's lock in tclass, where the peer locks a member
    whose source member is locked when it hands a tensor operand to each member (``x + t``,
    ``torch.where``; ``x.where(mask, 0)`` too, the member's own ``where`` keeping its
    lock: fz26e, program 15,200,429 of the six families at length 16, a ``consolidate()``
    member), and not for a number (``x + 1``)."""
    if finding.kind != "result" or finding.step.family != "math":
        return False
    if not (facts.memmap or any(_LOCKING.search(line) for line in finding.lines)):
        return False
    return all(_MEMBER_LOCKED.search(line) for line in finding.detail)


_VALUE_DIMS = re.compile(r"\]\[1\]: length: peer (\d+), tclass (\d+)$")  # a value's batch size
_VALUE_ONE_DEEPER = re.compile(r": peer py \(.*\), tclass list of 1$")
# the same, as the node holds it: one value in the peer, a stack of one in tclass (a
# nested node's: over its own batch dims too)
_NODE_ONE_DEEPER = re.compile(
    r": peer value \(.*, \[[\d, ]*\]\), tclass values \(\('seq', 'list', \[\("
)
# a list of the values where tclass has one more level of lists (a dim of size 1)
_VALUE_LIST_DEEPER = re.compile(r"\]\[1\]: length: peer \d+, tclass 1$")
_SIZES = re.compile(
    r"\]\.(?:batch_size|names): peer [\[(]([^\])]*)[\])], tclass [\[(]([^\])]*)[\])]$"
    r"|\]: peer (?:Tensor|Parameter|MemoryMappedTensor)\[([\w.]+), shape \[([^\]]*)\]\], "
    r"tclass Tensor\[\3, shape \[([^\]]*)\]\]$"
)


def _nested_dim_kept(line: str) -> bool:
    """A nested collection's batch size, names or tensor shape with one more dim in
    tclass, of size 1 (the peer's dense ``unflatten`` of a lazy stack into dims of size 1
    loses one of a nested collection's own dims), or more (its ``reshape`` of a lazy
    stack of one member stacked at 1 into five dims of size 1: ol31a, by hand)."""
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
    if len(my_dims) <= len(peer_dims):
        return False
    if ".names: " in line:
        return all(d == "None" for d in my_dims + peer_dims)
    return _ones_dropped(my_dims, peer_dims)


def _ones_dropped(longer: list[str], shorter: list[str]) -> bool:
    """Whether ``shorter`` is ``longer`` without some of its dims of size 1."""
    if not shorter:
        return all(d == "1" for d in longer)
    if not longer:
        return False
    if longer[0] == shorter[0] and _ones_dropped(longer[1:], shorter[1:]):
        return True
    return longer[0] == "1" and _ones_dropped(longer[1:], shorter)


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
    (contiguous tensors), where torch's result of a transposed tensor is strided. So
    ``is_contiguous()`` right after such a ``narrow`` (along a dim after the first) is
    true in tclass, false in the peer (program 14,210,116 of index,shape,combine
    --length 12)."""
    lines = finding.lines[:-1]
    lazy = [  # (``to_lazystack(d)`` too: program 15,817,222 of methods,index,shape,combine)
        i
        for i, line in enumerate(lines)
        if any(word in line for word in ("lazy_stack(", "LazyStacked", "to_lazystack("))
    ]
    after = lines[lazy[0] + 1 :] if lazy else []
    if finding.kind == "result" and finding.step.op == "is_contiguous":
        narrowed = bool(after) and _NARROW.search(after[-1]) is not None
        return narrowed and (peer.value, mine.value) == (False, True)
    if finding.kind != "peer-raises":
        return False
    op, error = finding.step.op, str(peer.error)
    if op != "view" or "view size is not compatible with input tensor's size and" not in error:
        return False
    if any(_QUANTILES_STACKED.search(line) for line in lines):
        return True
    return any(".narrow(" in line or ".broadcast_to(" in line for line in after)


# x = x.narrow(...) / x = torch.narrow(x, ...): the line that narrows the result
_NARROW = re.compile(r"^\s*x = (?:x\.narrow\(|torch\.narrow\(x, )")
_EXPANDS = re.compile(r"^\s*x = (?:x\.expand\(|torch\.broadcast_to\(x, |x\.broadcast_to\()")
_RESHAPES = re.compile(r"^\s*x = (?:x\.(?:reshape|view|flatten)\(|torch\.(?:reshape|flatten)\(x, )")


def _written_through_expanded_view(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x[i] = v`` after ``narrow`` of a lazy stack, ``expand`` and ``reshape``: tclass's
    narrowed stack is contiguous (:func:`_narrowed_stack_contiguous`), so the reshape of
    its expand is a view of the expanded memory (a stride of 0, as torch's ``reshape`` of
    such a tensor), and the write reaches every row that memory is; the peer's narrowed
    stack is strided, its reshape a copy, and the write reaches the rows written only
    (program 16,022,285 of methods,index,shape,combine L8, fz30c)."""
    if finding.kind != "result" or finding.step.op != "setitem":
        return False
    if not all("values differ" in line for line in finding.detail):
        return False
    lines = finding.lines[:-1]
    lazy = [i for i, line in enumerate(lines) if "lazy_stack(" in line]
    narrowed = [i for i, line in enumerate(lines) if _NARROW.search(line)]
    if not lazy or not narrowed or narrowed[-1] < lazy[0]:
        return False
    after = lines[narrowed[-1] + 1 :]
    expanded = [i for i, line in enumerate(after) if _EXPANDS.search(line)]
    reshaped = [i for i, line in enumerate(after) if _RESHAPES.search(line)]
    if not expanded or not reshaped or reshaped[-1] < expanded[0]:
        return False
    return _has_stride_0(mine.value) and not _has_stride_0(peer.value)


def _has_stride_0(value: Any) -> bool:
    """Whether a tensor of collection ``value`` repeats its memory along a dim."""
    try:
        leaves = list(value.values(True, True))
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return False
    return any(
        hasattr(leaf, "stride") and leaf.numel() > 1 and 0 in leaf.stride() for leaf in leaves
    )


_NO_ELEMENT_GROUPING = (
    re.compile(r"\.kind: peer 'LazyStackedTensorDict', tclass 'TensorDict'$"),
    re.compile(r"\.<members>: peer \d+ \(\[\('collection', 'TensorDict', \(0,\), .*, tclass None$"),
)


def _grouped_over_no_elements(finding: Finding, peer: Any, mine: Any) -> bool:
    """``x[1:2:3, mask]`` of a lazy stack of lazy stacks that selects no element: the
    peer's members stay lazy stacks of one member over no elements each, tclass's are
    TensorDicts over the same (no) elements, with the same keys: only the grouping of
    nothing differs (fz30j: program 15,951,676 L12 of methods,index,shape,combine)."""
    if finding.kind != "result" or finding.step.op != "getitem" or not finding.detail:
        return False
    sizes = [getattr(value, "batch_size", None) for value in (peer.value, mine.value)]
    if sizes[0] is None or sizes[0] != sizes[1] or sizes[0].numel():
        return False
    return all(any(p.search(d) for p in _NO_ELEMENT_GROUPING) for d in finding.detail)


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
    if _grouped_over_no_elements(finding, peer, mine):
        return True
    if finding.kind == "result" and finding.step.op == "getitem":  # (7,801,035 agrees: inv20h)
        # (the members of a nested lazy stack kept lazy; x[None, mask], 8,706,712 of
        # index,shape, agrees since inv21g: the peer's block-path unbind, followed)
        return all(
            _STAYS_LAZY[2].search(d)
            or (d.startswith("result.<members>[") and any(p.search(d) for p in _STAYS_LAZY))
            for d in finding.detail
        )
    if finding.kind == "result" and finding.step.op in ("apply", "named_apply"):
        # apply(fn, batch_size=...) of a collection holding a lazy stack: tclass's stays
        # lazy, the peer's is dense (17,137,590 L25 of methods,features,entries,records)
        nested = all(d.startswith("result[") for d in finding.detail)
        return (
            nested
            and "batch_size=" in finding.step.src
            and all(any(p.search(d) for p in _STAYS_LAZY[:2]) for d in finding.detail)
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
    # elements (unflatten into dims of size 1), nor of one regrouped into dims of size 1
    # only (tclass's stays lazy and keeps its members' names, as the peer's lazy result
    # of a reshape adding one such dim does: 17,055,200 L20 of methods,index,shape,combine)
    ones = set(mine.value.batch_size) == {1} and finding.step.op in _NESTED_DIM_OPS
    return all(
        any(p.search(d) for p in _STAYS_LAZY)
        or _nested_names_dropped(d)
        or ((0 in mine.value.batch_size or ones) and _names_dropped(d))
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


def _as_deep_as_its_node(line: str, dims: int, mine: Any) -> bool:
    """Whether the value of ``result['n']['d'][1]: length: ...`` sits in a nested node
    whose batch size has ``dims`` dims in tclass."""
    keys = key_path(line)
    node = entry_at(mine, keys[:-1])
    size = getattr(node, "batch_size", None)
    return len(keys) > 1 and size is not None and len(size) == dims


_NESTED_LOCK_KEPT = re.compile(r"^result\[.*\.is_locked: peer True, tclass False$")
# tclass's lazy expand of a locked (memory-mapped) lazy stack is a view of it, locked as
# its source ("A result's lock follows what it shares"); the peer's dense copy is not
# (locked by share_memory_() too: 16,023,726 L12 of methods,index,shape,combine, fz30b)
_SHARED_LOCK_KEPT = re.compile(r"^result(\[.*)?\.is_locked: peer False, tclass True$")
_SAVED_OR_LOCKED = re.compile(
    r"memmap|lock_\(\)|share_memory_\(\)|\.save\(|\.dumps\(|consolidate\(filename"
)


def _contains_as_dense(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``key in x.keys(...)`` answers as iterating the view lists: a nested node or a
    Python value is not in ``keys(True, True)`` (as the peer's lazy stack; its TensorDict
    and record say it is: lo26c), and a nested key is not in ``keys()`` of a lazy stack
    (a record over one too: program 5,100,396 of ``--families entries,records --length
    6``, fz40c), as of a TensorDict in both (the peer's lazy stack says it is)."""
    if finding.step.op != "contains" or finding.kind != "result":
        return False
    if "lazy" in finding.step.tags:
        return True
    dense_node = "node" in finding.step.tags and finding.step.src.endswith(" in x.keys(True, True)")
    return dense_node and (peer.value, mine.value) == (True, False)


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
    if _empty_parts_dense(finding, mine):
        return True
    if finding.kind != "result" or not any(_NO_MEMBERS.search(d) for d in finding.detail):
        return False
    empty = {d.split(".<members>: peer")[0] for d in finding.detail if _NO_MEMBERS.search(d)}
    return all(
        any(p.search(d) for p in _NO_MEMBERS_LINES) or _lock_of_no_members(d, empty)
        for d in finding.detail
    )


# a part over no elements: a lazy stack of its empty members in the peer, dense in tclass
_EMPTY_PART_LINES = (
    re.compile(
        r"^result(\.<members>\[\d+\]\[\d+\])+\.kind: "
        r"peer 'LazyStackedTensorDict', tclass 'TensorDict'$"
    ),
    re.compile(r"^result(\.<members>\[\d+\]\[\d+\])+\.<members>: peer \d+ \(.*, tclass None$"),
)


def _empty_parts_dense(finding: Finding, mine: Any) -> bool:
    """A tensor index selecting no element of a lazy stack of lazy stacks (``[:0, mask]``
    over the stack dims of both): the peer indexes each member with its part of the
    index, its members picked by the tensor, a lazy stack of empty parts; tclass's part of
    a member is dense, the empty selection's rule (the same keys, shapes and no values)."""
    if finding.kind != "result" or finding.step.op != "getitem" or mine.value is None:
        return False
    if 0 not in tuple(getattr(mine.value, "batch_size", (1,))):
        return False
    return all(any(p.match(d) for p in _EMPTY_PART_LINES) for d in finding.detail)


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
    # a record over a lazy stack given back by a method that returns self (cat_tensors),
    # where the peer's gives its lazy stack of the records (15,861,116, fz28e)
    re.compile(r"^result\.kind: peer 'LazyStackedTensorDict', tclass '(Rec|Inner)'$"),
    re.compile(r"^result\.<members>: peer \d+ \(.*, tclass None$"),
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


# a leaf memory-mapped in the peer's result, a plain tensor of the same dtype and shape in
# tclass's (as allow_ops's ``_MAPPED_THERE``)
_LOADED_THERE = re.compile(r": peer MemoryMappedTensor(\[[^\]]*\]\]), tclass Tensor\1$")


def _lazy_load_reads_stacked(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x.clone().load_memmap_(folder)`` (``load_``) of a collection tclass keeps a lazy
    stack where the peer's is dense (an ``unflatten`` of a lazy stack, ``_stays_lazy``):
    each member's leaves are the folder's memory-mapped tensors, and a leaf read of the
    stack is their stack, a plain tensor (as a lazy stack's read in both), where the
    peer's dense result holds the MemoryMappedTensor (program 16,001,000 of
    methods,index,shape,combine L12, fz30d)."""
    if finding.kind != "result" or finding.step.op not in ("load_memmap_", "load_"):
        return False
    if not all(_LOADED_THERE.search(line) for line in finding.detail):
        return False
    ours = getattr(mine.value, "_tensordict", mine.value)
    theirs = getattr(peer.value, "_tensordict", peer.value)
    if not hasattr(ours, "tensordicts") or hasattr(theirs, "tensordicts"):
        return False
    return _members_mapped(ours)


def _members_mapped(stack: Any) -> bool:
    """Whether every tensor of the members of the lazy stack ``stack`` (of its nested lazy
    stacks' members, through their members) is memory-mapped."""
    for member in stack.tensordicts:
        member = getattr(member, "_tensordict", member)
        if hasattr(member, "tensordicts"):
            if not _members_mapped(member):
                return False
            continue
        for leaf in member.values(True, True):
            if isinstance(leaf, torch.Tensor) and type(leaf).__name__ != "MemoryMappedTensor":
                return False
    return True


# the ops after which tclass keeps a lazy stack where the peer's is dense (``_stays_lazy``)
_KEPT_LAZY_BY = re.compile(r"\.(?:unflatten|expand|expand_as|reshape|view|flatten)\(")


def _lazy_data_ptr_per_member(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``list(x.data_ptr().keys(True, True))`` of a collection tclass keeps a lazy stack
    (of lazy stacks) where the peer's is dense (``_stays_lazy``: an ``unflatten`` of a
    lazy stack): one pointer per member's leaf, under the members' indices, as a lazy
    stack's in both, where the peer's dense one has one per leaf (program 16,021,857 of
    methods,index,shape,combine L12, fz30d)."""
    if finding.kind != "result" or finding.step.op != "data_ptr":
        return False
    if not isinstance(peer.value, list) or not isinstance(mine.value, list):
        return False
    if not any(_KEPT_LAZY_BY.search(line) for line in finding.lines[:-1]):
        return False
    theirs = [key if isinstance(key, tuple) else (key,) for key in peer.value]
    ours = [key if isinstance(key, tuple) else (key,) for key in mine.value]
    if any(key[0].isdigit() for key in theirs) or not all(key[0].isdigit() for key in ours):
        return False
    stripped = set()
    for key in ours:
        parts = list(key)
        while parts and parts[0].isdigit():
            parts.pop(0)
        stripped.add(tuple(parts))
    return stripped == set(theirs)


_MEMBERS_LINE = re.compile(r"^result(\['\w+'\])*\.<members>: peer \d+ \(")


def _regrouped_by_view(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``view`` / ``reshape`` of a lazy stack that merges dims of size 1 around its stack
    dim: both results are lazy stacks of the same batch size and entries, equal, whose
    members are grouped differently (the peer unbinds the dims of size 1 and stacks along
    dim 0, tclass keeps the stack dim where the merged span puts it: program 16,024,715
    L8 of features,index,shape,combine, fz30b / ol31a)."""
    if finding.kind != "result" or finding.step.op not in ("view", "reshape"):
        return False
    ours, theirs = mine.value, peer.value
    lazy = "LazyStackedTensorDict"
    if not type(ours).__name__ == type(theirs).__name__ == lazy:
        return False
    if ours.batch_size != theirs.batch_size or -1 in ours.batch_size:
        return False
    if not finding.detail or not all(_MEMBERS_LINE.match(line) for line in finding.detail):
        return False
    try:
        keys = list(ours.keys(include_nested=True, leaves_only=True))
        if sorted(map(str, keys)) != sorted(map(str, theirs.keys(True, True))):
            return False
        return all(torch.equal(ours.get(key), theirs.get(key)) for key in keys)
    except (RuntimeError, TypeError, ValueError, KeyError, IndexError):
        return False


_UINT_UNSUPPORTED = ("not implemented for 'UInt", "Promotion for uint16, uint32, uint64")


def _lazy_uint_refused_per_member(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An operator that torch refuses for ``uint32`` / ``uint64`` entries (``x > torch.tensor(2)``)
    of a record over a lazy stack that tclass's reshapes kept lazy (``_stays_lazy``) where
    the peer's made it dense: both refuse; tclass's members' 0-d entries against the 0-d
    operand are torch's promotion ``RuntimeError``, as the peer's own lazy stack raises,
    where the peer's dense entry gives torch's ``NotImplementedError`` (fz31b: program
    16,418,485 L12 of methods,math,shape)."""
    if finding.kind != "family" or peer.error is None or mine.error is None:
        return False
    if not any("L.lazy_stack(" in line for line in finding.lines[:-1]):
        return False
    theirs, ours = str(peer.error), str(mine.error)
    return (
        type(peer.error).__name__ == "NotImplementedError"
        and _UINT_UNSUPPORTED[0] in theirs
        and isinstance(mine.error, RuntimeError)
        and _UINT_UNSUPPORTED[1] in ours
    )


def _partial_key_not_defaulted(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``lazy.get(key, default=...)`` where only some members hold ``key`` (the ``grad``
    of a stack whose later members' tensors were not leaves): tclass names the members
    that lack it (``MemberKeyError``), as for ``lazy[key]``; the peer returns the default
    in place of the values the other members hold (fz32c: 17,031,904 L14 of
    methods,features,entries,records)."""
    if finding.kind != "tclass-raises" or finding.step.op != "get_default":
        return False
    if type(mine.error).__name__ != "MemberKeyError" or peer.error is not None:
        return False
    return "is in some members of this lazy stack" in str(mine.error)


_EXPANDED_INTO_MEMBER = re.compile(
    r"tensor shape is incompatible with dest shape, got: tensor\.shape=torch\.Size\(\[(\d+)\]\), "
    r"dest=torch\.Size\(\[([\d, ]*)\]\)"
)


def _compared_through_lazy_node(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``t != x`` (a comparison with a tensor of the batch's shape) of a collection whose
    nested collection the peer keeps as a lazy stack along its first dim (its
    ``masked_select`` of a lazy stack whose members hold a nested collection of more batch
    dims): the peer hands the whole tensor to each member and fails inside expanding it
    onto a member's leaf ("tensor shape is incompatible with dest shape"), where tclass
    compares each leaf along the batch dim, as both do for the same collection built
    dense (og34l: 17,231,571 L6 of features,math,index)."""
    if finding.kind != "peer-raises" or mine.error is not None:
        return False
    if finding.step.op.lstrip("r") not in ("!=", "==", "<", "<=", ">", ">="):
        return False
    found = _EXPANDED_INTO_MEMBER.search(str(peer.error))
    if found is None or not any("lazy_stack(" in line for line in finding.lines[:-1]):
        return False
    value = mine.value
    if not hasattr(value, "batch_size") or list(value.batch_size) != [int(found.group(1))]:
        return False
    dest = [int(n) for n in found.group(2).split(", ") if n]
    nested = [
        value.get(key) for key in value.keys(True, True) if isinstance(key, tuple) and len(key) > 1
    ]
    return any(isinstance(leaf, torch.Tensor) and list(leaf.shape[1:]) == dest for leaf in nested)
