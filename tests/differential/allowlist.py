"""The deliberate differences: findings that are not bugs.

Each entry cites the README bullet it comes from (``readme``: text that appears in
README.md's "Differences from tensordict", checked by the tests) and says which findings
it covers. Anything not covered here is a bug: fixed, or listed in ``OPEN`` (below) with
the reason it is not fixed yet, and reported as open by the runner.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from .compare import is_collection
from .open_findings import OPEN

if TYPE_CHECKING:
    from .engine import Finding, Outcome
    from .world import Facts


@dataclass(frozen=True)
class Entry:
    name: str
    readme: str  # a phrase of the README bullet this difference comes from
    covers: Callable[[Finding, Facts, Outcome, Outcome], bool]


def _tagged(tag: str, *kinds: str) -> Callable[[Finding, Facts, Any, Any], bool]:
    def covers(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
        return tag in finding.step.tags and finding.kind in kinds

    return covers


def _raised_by(name: str) -> Callable[[Finding, Facts, Any, Any], bool]:
    def covers(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
        return finding.kind in ("tclass-raises", "family") and type(mine.error).__name__ == name

    return covers


Covers = Callable[["Finding", "Facts", Any, Any], bool]


def _any_of(*covers: Covers) -> Covers:
    """One entry's rule made of several (one README bullet, several ops)."""

    def covered(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
        return any(rule(finding, facts, peer, mine) for rule in covers)

    return covered


# What the peer says when it has no such operator, keyword or method at all.
_PEER_LACKS = ("unsupported operand type(s)", "unexpected keyword argument", "has no attribute")


_DIMS_LINE = re.compile(
    r"\.(batch_size|names): peer [\[(]([^\])]*)[\])], tclass [\[(]([^\])]*)[\])]$"
)


def _reflected_on_ragged(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A tensor on the left of an operator with a ragged lazy stack (``t != stack``): the
    batch size ``stack != t`` gives, where the peer's result has a dim more in front (it
    hands each member the whole tensor, not the member's slice)."""
    if finding.kind != "result" or not finding.step.op.startswith("r"):
        return False
    if -1 not in getattr(mine.value, "batch_size", ()):
        return False
    for line in finding.detail:
        found = _DIMS_LINE.search(line) or _SHAPES_LINE.search(line)
        if found is None:
            return False
        theirs, ours = (
            [d.strip() for d in side.split(",") if d.strip()] for side in found.groups()[1:]
        )
        if theirs[1:] != ours and not (found.group(1) == "names" and len(theirs) == len(ours) + 1):
            return False
    return True


_SHAPES_LINE = re.compile(
    r"\]: peer Tensor\[(\S+), shape \[([^\]]*)\]\], tclass Tensor\[\1, shape \[([^\]]*)\]\]$"
)


def _beyond_the_peer(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """What the README lists tclass answering where the peer raises: ``td // x``, ``2 **
    td``, ``x % td``, ``div(rounding_mode=)``, ``cumsum``, ``long()`` / ``byte()``,
    reductions over several dims or of lazy stacks; and the results that differ on
    purpose: several dims all reduced, ``max`` / ``min`` along a dim as ``ValuesIndices``.
    Where the peer has no such operator (``//``, ``//=``...) and torch refuses an entry
    (an integer division by zero, no kernel for ``bool``), tclass raises torch's error;
    where several dims are all reduced, torch's error for one of them (a dim of size 0)
    or tclass's for indices along several dims."""
    tags = finding.step.tags
    if finding.kind == "peer-raises" and finding.step.op == "//=":
        return any(text in str(peer.error) for text in _PEER_LACKS)
    if finding.kind == "peer-raises" and finding.step.op in _REDUCTIONS:
        if any(text in str(peer.error) for text in _REDUCTION_REFUSALS):
            return True
    if finding.kind == "peer-raises":
        return bool(tags & {"peer-stops", "multi-dim", "lazy-reduce"}) or _first_of_tuple(finding)
    if finding.kind in ("family", "tclass-raises") and "multi-dim" in tags:
        return True
    if finding.kind == "tclass-raises" and _first_of_tuple(finding):
        return "Expected reduction dim" in str(mine.error)  # torch's, for a dim of size 0
    if finding.kind == "family" and ("peer-stops" in tags or finding.step.op == "//="):
        return any(text in str(peer.error) for text in _PEER_LACKS)
    if finding.kind == "result" and "dim-tuple" in tags:
        return finding.step.op in _FIRST_OF_TUPLE
    return finding.kind == "result" and bool(tags & {"multi-dim", "values-indices"})


# What the peer says refusing a reduction tclass computes: a tuple of dims with
# ``reduce=True``, a lazy stack of records.
_REDUCTION_REFUSALS = (
    "argument 'dim' must be int, not tuple",
    "requires this object to be cast to a regular TensorDict",
)

# The peer's reductions that take only the first dim of a tuple, not checked against the
# batch dims (``amax(dim=(-1,))`` reduces each leaf's last dim), with a FutureWarning.
_FIRST_OF_TUPLE = ("prod", "amax", "amin", "max", "min")


def _first_of_tuple(finding: Finding) -> bool:
    """A tuple of dims given to a reduction whose first dim the peer takes for a dim of
    the leaves (it raises there, or answers for a dim of size 0 torch refuses to reduce)."""
    return "dim-tuple" in finding.step.tags and finding.step.op in _FIRST_OF_TUPLE


def _values_kept(*ops: str) -> Covers:
    """``ops`` keep per-element Python values (a ``NonTensorStack``) or a value as values,
    where the peer turns them into a ``TensorDict`` without keys (a lazy stack without
    keys, for a stack): its reductions of a value stack, its ``==`` / ``!=`` with a number."""

    def covers(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
        if finding.kind != "result" or finding.step.op not in ops:
            return False
        return all(
            "peer TensorDict(batch_size=" in line or _about_values(line) or _EMPTY_LAZY.search(line)
            for line in finding.detail
        )

    return covers


# the comparisons and bitwise ops whose results the peer holds no Python values in
_VALUES_DROPPED = ("==", "!=", "r==", "r!=", "|", "^", "r|", "r^", "|=", "^=")
_EMPTY_LAZY = re.compile(
    r": peer LazyStackedTensorDict\(batch_size=\[[-\d, ]*\], keys=\[\]\), tclass "
)


_REDUCTIONS = ("sum", "mean", "prod", "std", "var", "max", "min", "amax", "amin", "any", "all")
_REDUCTIONS += ("nansum", "nanmean", "norm", "logsumexp")


def _values_not_merged(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A reduction over elements whose Python values differ: tclass's ``ReductionError``
    naming the entry, where the peer loses the values (a ``TensorDict`` without keys)."""
    return (
        finding.kind == "tclass-raises"
        and finding.step.op in _REDUCTIONS
        and type(mine.error).__name__ == "ReductionError"
        and "different Python value per element" in str(mine.error)
    )


def _joined_disagree(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``reduce=True`` along a dim of tensors that disagree in shape beside it and hold
    no elements: tclass's ``ReductionError``, as with elements, where the peer's
    ``torch.cat`` lets a 1-d tensor of no elements join."""
    refused = type(mine.error).__name__ == "ReductionError"
    return refused and "so they must agree in shape elsewhere" in str(mine.error)


def _nested_batch_dims_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``amax`` / ``amin`` / ``prod`` along a dim: the results differ only in nested
    collections, whose own batch dims beyond their parent's tclass keeps (as ``sum`` does
    in both libraries) and whose dim names follow their parent's; the peer drops them."""
    if finding.kind != "result" or finding.step.op not in ("amax", "amin", "prod"):
        return False
    return all(
        line.startswith("result[") and "Tensor[" not in line and " list of " not in line
        for line in finding.detail
    )


# The in-place operators the peer lacks (Python falls back to a new collection there).
_BITWISE_IN_PLACE = re.compile(r"^x (%|&|\^|\||//)= ")


def _changed_in_place_later(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A result that changed later in tclass only, where a later step applies ``&=``,
    ``|=``, ``^=``, ``%=`` or ``//=``: tclass changes the collection (and what shares its
    tensors) in place, where the peer rebinds ``x`` to a new collection."""
    if finding.kind != "alias":
        return False
    found = re.match(r"<result of line (\d+)>", finding.step.src)
    later = finding.lines[int(found.group(1)) :] if found else []
    return any(_BITWISE_IN_PLACE.match(line) for line in later)


def _later_lines(finding: Finding) -> list[str]:
    """The lines after the one whose result an alias finding is about."""
    found = re.match(r"<result of line (\d+)>", finding.step.src)
    return finding.lines[int(found.group(1)) :] if found else []


def _names_read_live(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A locked lazy stack's names read from its members (one renamed through another
    stack that holds it), where the peer shows the names it cached while locked."""
    lazy = "LazyStackedTensorDict"
    if (
        finding.kind != "alias"
        or not type(peer.value).__name__ == type(mine.value).__name__ == lazy
    ):
        return False
    if not all(line.startswith("result.names: ") for line in finding.detail):
        return False
    theirs = [list(member.names) for member in peer.value.tensordicts]
    return bool(peer.value.is_locked) and theirs == [
        list(member.names) for member in mine.value.tensordicts
    ]


def _empty_gives_new_nodes(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A nested node changed later through ``empty(recurse=True)``'s result in the peer
    only, which returns a nested node without tensors itself; or that node's lock, the
    source's in the peer (a new node's, unlocked, in tclass)."""
    if finding.kind == "result" and finding.step.op == "empty":
        return "recurse=True" in finding.step.src and all(
            _NESTED_LOCKED.match(line) for line in finding.detail
        )
    if finding.kind != "alias" or not all(line.startswith("result[") for line in finding.detail):
        return False
    return any(".empty(recurse=True)" in line for line in _later_lines(finding))


def _stack_of_values_not_empty(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A lazy stack whose members hold only per-element Python values: not empty in
    tclass (``is_empty()`` is true when every member is empty), empty in the peer, so its
    ``apply(fn, batch_size=...)``, which leaves the values out, gives an empty TensorDict
    there and ``None`` in tclass."""
    if finding.kind != "result" or "lazy" not in finding.step.tags:
        return False
    if finding.step.op == "x.is_empty()":
        return (peer.value, mine.value) == (True, False)
    if finding.step.op != "apply" or "batch_size=" not in finding.step.src:
        return False
    return mine.value is None and is_collection(peer.value) and not list(peer.value.keys())


_NESTED_LOCKED = re.compile(r"^result\S+\.is_locked: peer True, tclass False$")


# A result line that differs in the tensor's dtype only (or, with the group, its class).
_DTYPE_ONLY = re.compile(
    r": peer Tensor\[torch\.\w+, shape (\[[^\]]*\])\], tclass Tensor\[torch\.\w+, shape \1\]$"
)
_MEMORY_MAPPED = re.compile(
    r": peer Tensor\[torch\.\w+, shape (\[[^\]]*\])\], "
    r"tclass MemoryMappedTensor\[torch\.\w+, shape \1\]$"
)
# What an operator the peer lacks in place changes in tclass's result: the collection
# itself, with its lock, dim names, memory-mapped tensors, dtypes, empty nested
# collections and Python values (the peer's operator empties them, see _values_kept).
_KEPT_IN_PLACE = (
    re.compile(r"\.is_locked: peer False, tclass True$"),
    re.compile(r"\.names: peer "),
    re.compile(r": keys: peer \["),
    re.compile(r": peer TensorDict\(batch_size="),
    re.compile(r": peer Tensor\[torch\.bool, shape \[[\d, ]*\]\], tclass nontensor \("),  # a value
    _MEMORY_MAPPED,
    _DTYPE_ONLY,
)


def _kept_in_place(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x |= y`` (``&=``, ``^=``, ``%=``, ``//=``): tclass's collection changed in place,
    where the peer's ``x | y`` is a new, unlocked TensorDict without dim names."""
    if finding.kind != "result" or not _BITWISE_IN_PLACE.match(finding.step.src):
        return False
    return all(any(p.search(line) for p in _KEPT_IN_PLACE) for line in finding.detail)


# The ops whose result dtypes are torch's for each entry (README, "Math goes where the
# peer stops": "Math dtypes are torch's, entry by entry").
_TORCH_DTYPES = ("+", "-", "*", "**", "r+", "r-", "r*", "add", "sub", "mul", "pow")
_TORCH_DTYPES += ("maximum", "minimum", "|", "^", "&", "r|", "r^", "r&")
_TENSOR_OPERAND = re.compile(r"torch\.tensor\(|\bt\(\[")
_TENSOR_WITH_DIMS = re.compile(r"\bt\(\[\d")
_BOOL_ALPHA = re.compile(r"\.(add|sub)_?\(True, alpha=")


def _torch_dtypes(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Results that differ in dtype only where torch's dtype for each entry and the
    peer's fused kernels differ (a 0-d entry with a 0-d tensor, a lazy stack's members
    with slices of a tensor), ``add``/``sub`` of ``True`` with ``alpha``; ``&`` with a
    tensor with dims, which the peer broadcasts against the leaves' trailing dims; and
    ``1 / td``, where the peer multiplies by a reciprocal rounded to a float16 entry's
    precision."""
    op, src = finding.step.op, finding.step.src
    if finding.kind == "tclass-raises" and _BOOL_ALPHA.search(src):
        return src.startswith("x.sub") and "Subtraction, the `-` operator, with" in str(mine.error)
    if op in ("&", "r&", "&=") and _TENSOR_WITH_DIMS.search(src):
        if finding.kind in ("peer-raises", "family"):
            return "must match the size of tensor" in str(peer.error)
        return finding.kind == "result"
    if finding.kind != "result":
        return False
    if op == "r/":
        return all(": values differ: " in line for line in finding.detail)
    if op not in _TORCH_DTYPES or not (_TENSOR_OPERAND.search(src) or _BOOL_ALPHA.search(src)):
        return False
    return all(_DTYPE_ONLY.search(line) for line in finding.detail)


def _written_back(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Entries written back unchanged into a locked collection (``update(x.to_dict())``,
    an update giving a nested collection no entries),
    and rows written in place at an index the peer sends through its locked ``set``
    (``rec[None,] = rows`` on a memory-mapped record; it writes in place at the others):
    nothing is replaced, which tclass accepts and the peer refuses. The peer refuses any
    ``update`` of a locked collection, even one that writes nothing (a source without
    entries, or whose nested collections are empty); tclass answers only where nothing
    locked is replaced (else its ``LockedError``), so an update it answers is covered."""
    if finding.kind != "peer-raises" or "Cannot modify locked" not in str(peer.error):
        return False
    if finding.step.op == "setitem":
        return not finding.step.src.startswith(("x['", 'x["'))  # an index, not a key
    return finding.step.op == "update"


# A leaf that is a file of tclass's folder and a plain tensor in the peer, or the other
# way round: the same dtype and shape either way.
_MAPPED_HERE = re.compile(r": peer Tensor(\[[^\]]*\]\]), tclass MemoryMappedTensor\1$")
_MAPPED_THERE = re.compile(r": peer MemoryMappedTensor(\[[^\]]*\]\]), tclass Tensor\1$")
_ENTRY_WRITES = ("set", "set_", "setitem_key", "setattr", "update", "update_")


def _new_entries_saved(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """New entries written into a loaded (or saved) collection (``loaded["new"] = t``,
    ``set``, ``update``...): files of its folder in tclass, memory-mapped tensors, where
    the peer keeps plain tensors in memory that a reload does not see; so is an entry
    ``rename_key_`` moves into another node (a copy saved there)."""
    if finding.kind != "result":
        return False
    if finding.step.op == "rename_key_" and not _renamed_into_another_node(finding.step.src):
        return False
    if finding.step.op not in _ENTRY_WRITES + ("rename_key_",):
        return False
    return all(_MAPPED_HERE.search(line) for line in finding.detail)


def _renamed_into_another_node(src: str) -> bool:
    """Whether ``x.rename_key_(old, new...)`` gives the entry a new parent node."""
    try:
        call = ast.parse(src, mode="eval").body
        assert isinstance(call, ast.Call)
        old, new = (ast.literal_eval(arg) for arg in call.args[:2])
    except (SyntaxError, ValueError, AssertionError):
        return False
    parents = [tuple(key)[:-1] if isinstance(key, tuple) else () for key in (old, new)]
    return parents[0] != parents[1]


def _saved_later(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The same, seen later in an earlier result: a new entry written through a lazy stack
    into its loaded records (memory-mapped there), or the new name ``rename_key_`` gives
    in another node (a copy in its own file, which what shared the old tensor no longer
    sees)."""
    if finding.kind != "alias" or not facts.memmap:
        return False
    if all(_MAPPED_HERE.search(line) for line in finding.detail):
        return True
    renamed = any(".rename_key_(" in line for line in _later_lines(finding))
    return renamed and all(": values differ: " in line for line in finding.detail)


def _memory_mapped_as_indexed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An advanced index that selects no element of a memory-mapped entry: a copy, a
    plain tensor, where the peer's ``MemoryMappedTensor`` wraps it (two empty storages
    compare equal). A write at an index with ``None`` into a collection without batch
    dims or into a lazy stack: written in place, the leaves kept, where the peer swaps in
    plain tensors for them (views, or copies in a lazy stack's members)."""
    if finding.kind != "result" or finding.step.op not in ("getitem", "get_at", "setitem"):
        return False
    if finding.step.op == "setitem":
        target = finding.step.src.split("] = ", 1)[0]
        at_none = target.startswith("x[") and re.search(r"\bNone\b", target) is not None
        return at_none and all(_MAPPED_HERE.search(line) for line in finding.detail)
    return all(
        (found := _MAPPED_THERE.search(line)) is not None and re.search(r"\b0\b", found.group(1))
        for line in finding.detail
    )


def _through_a_value(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A nested key through a Python value (``x[("zz", "a")] = v``): tclass's
    ``EntryTypeError``, where the peer hides the entry in the value's node."""
    if finding.kind not in ("tclass-raises", "family"):
        return False
    refused = type(mine.error).__name__ == "EntryTypeError"
    return refused and "holds a Python value and has no entries" in str(mine.error)


def _in_place_all_or_nothing(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """In-place math (``x &= -1``, ``x %= t``, ``pow_``...) that torch refuses in place for
    an entry's dtype: tclass's ``InPlaceWriteError`` / ``InPlaceKernelError`` before any
    write, where the peer replaces the entries with new tensors of another dtype (which
    views and memory-mapped files never see) or raises from the first refused entry."""
    refused = type(mine.error).__name__ in ("InPlaceWriteError", "InPlaceKernelError")
    in_place = finding.step.family == "math" and finding.step.op.endswith(("=", "_"))
    return finding.kind in ("tclass-raises", "family") and refused and in_place


# What the peer's errors say when they come from inside it rather than from a check.
_PEER_INTERNAL = (
    "Multiple dispatch failed",
    "no implementation found for",
    "tuple index out of range",
    "list index out of range",
    "len() of a 0-d tensor",
    "received an invalid combination of arguments",
    "not supported between instances of 'tuple' and 'int'",
    "'str' and 'str'",  # a bitwise operator applied to a Python value (a record's str)
    "'NoneType' and 'NoneType'",  # the same, to a None value
    "'NoneType' object has no attribute",  # a record's missing key taken for a field
    "Only NestedKeys are supported",  # a tensor taken for a mapping of keys (set_, update_)
    "iteration over a 0-d tensor",  # the same, for a 0-d tensor
    "cannot convert dictionary update sequence",  # the same, in update_
    "object has no attribute '_get_str'",  # a nested dict written into a tensor (update_)
    "Cannot set the attribute '_device'",  # memmap of a lazy stack of records
    "cannot mmap an empty file",  # memmap_ of an entry with no elements
    "Failed to stack tensors within a tensordict",  # a lazy stack's members stacked first
    "Cannot call `view` on a lazy stacked tensordict",  # a view that mixes no members
    'missing 1 required positional arguments: "repeats"',  # repeat of a record, lazy stack
    "Boolean value of Tensor with no values is ambiguous",  # torch.where over no elements
    "Integers to negative integer powers are not allowed",  # its fused kernel, not torch.pow
    "devices differ, got None and",  # a cpu collection stacked with one of no device
    "stack expects a non-empty TensorList",  # a record's indexed write into no elements
    "Cannot get the non-unique data of a NonTensorStack",  # load_state_dict of value stacks
    "too many indices for tensor of dimension",  # a number written into a value stack
    "items cannot be empty",  # permute / unsqueeze of Python values over no elements
    "list_of_tensordicts cannot be empty",  # expand of a lazy stack of no members
    "is too big for batch size",  # repeat_interleave(0) along a lazy stack's later dim
    "broadcast a dimension with negative length",  # a tensor against a ragged stack's -1
    "zip() argument 2 is shorter than argument 1",  # flatten of a ragged lazy stack
    "a NonTensorStack cannot be empty",  # pad of a Python value to no elements
    "'Tensor' object has no attribute 'batch_size'",  # a lazy entry: tensor and collection
    '"clamp_min_scalar_cpu" not implemented for',  # maximum of bool entries, as clamp_min
    '"clamp_max_scalar_cpu" not implemented for',  # minimum of bool entries, as clamp_max
    "refer to a single memory location",  # x[i] = x[i].to_dict(): its rebuilt value overlaps
    "upper bound and lower bound inconsistent with step sign",  # tile of ragged values
    "Non-tensor batch sizes must match outside",  # cat: a squeezed record's value kept its dims
)


def _read_fails_inside(value: Any, line: str) -> bool:
    """Whether reading the entry a detail line names (``result['n']['s']: peer error``)
    from the peer's ``value`` fails inside it (``_PEER_INTERNAL``)."""
    found = re.match(
        r"result((?:\[1\]\[\d+\])*)((?:\['[^']*'\])+): (?:peer error \(|error: peer )", line
    )
    if found is None:
        return False
    try:
        for index in re.findall(r"\[1\]\[(\d+)\]", found.group(1)):  # an item of a tuple
            value = value[int(index)]
        value.get(tuple(re.findall(r"'([^']*)'", found.group(2))))
    except Exception as error:  # noqa: BLE001  (the peer's error is the point)
        return any(text in str(error) for text in _PEER_INTERNAL)
    return False


# Where the peer's memory-mapped flag and the data disagree: after loading, after views
# the flag does not follow (reshape, expand, flatten, detach, select, x[1:]...), after
# tile's copy (flagged) and after a collection was given new entries.
_FLAG_CHANGES = re.compile(
    r"load_memmap\(|\.(reshape|expand|expand_as|flatten|unflatten|tile|select|exclude)\("
    r"|\.(detach|copy|contiguous)\(\)|\.clone\(False\)|\.data\b|\[[^\]]*\b[1-9]\d*:"
    r"|\.(float|double|half|bfloat16|int|long|bool|to)\("  # a cast to the dtype it has
)
_LOCK_LINE = re.compile(r"\.is_locked: peer (True|False), tclass (True|False)$")


_CAST_KIND = re.compile(r"^result(\[[^\]]*\])+\.kind: peer 'TensorDict', tclass '(Inner|Rec)'$")
_CAST_KEYS = re.compile(r"^result(\[[^\]]*\])+: keys: peer \[[^\]]*\], tclass \[[^\]]*\]$")


def _cast_to_the_field(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A TensorDict set into a field annotated with a tensorclass (``rec.inner = td``,
    ``rec.set("inner", td)``): that class in tclass, its fields listed (unset ones
    ``None``), where the peer stores the TensorDict as given."""
    if finding.kind != "result" or finding.step.op not in ("set", "setattr", "setitem_key"):
        return False
    kinds = [line for line in finding.detail if _CAST_KIND.match(line)]
    rest = [line for line in finding.detail if not _CAST_KIND.match(line)]
    return bool(kinds) and all(_CAST_KEYS.match(line) for line in rest)


_DICT_KEPT = re.compile(r"^result(\.<members>\S*)?\['\w+'\]: peer TensorDict\(.*, tclass dict \(")


def _dict_kept_in_value_field(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A dict given through ``update`` to a record's field annotated with a Python type
    (``rec.update({"label": {"q": t}})``): kept as given in tclass, as the assignment keeps
    it in both libraries, where the peer's ``update`` makes it a TensorDict; into a saved
    record, where such a value is written to the folder, a ``NotSerializableError`` when
    the dict holds tensors."""
    if finding.step.op != "update":
        return False
    if finding.kind == "tclass-raises":
        refused = type(mine.error).__name__ == "NotSerializableError"
        return refused and "is of type torch.Tensor" in str(mine.error)
    if finding.kind != "result":
        return False
    return all(_DICT_KEPT.match(line) for line in finding.detail)


_NONE_AS_LIST = re.compile(
    r"^result\S*\['\w+'\]: peer list of \d+, tclass py \('NoneType', None\)$"
)
_KEYS_LINE = re.compile(r"^result\S*: keys: peer (\[[^\]]*\]), tclass (\[[^\]]*\])$")


def _none_field_unset(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A nested record's field set to ``None`` through ``update`` (``rec.update(rec.
    to_dict())`` where ``rec.inner.z`` is ``None``): not set in tclass, as at the top
    level in both libraries, where the peer keeps a ``None`` value entry under the nested
    record (a key of its ``keys()``, and a list of ``None`` once stacked or padded)."""
    if finding.kind != "result" or not any(".update(" in line for line in finding.lines):
        return False
    for line in finding.detail:
        if _NONE_AS_LIST.match(line):
            continue
        keys = _KEYS_LINE.match(line)
        if keys is None:
            return False
        theirs, ours = (json.loads(group.replace("'", '"')) for group in keys.groups())
        if not set(ours) < set(theirs) or [key for key in theirs if key in ours] != ours:
            return False
    return True


def _none_field_listed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The same, read through ``keys()``: the peer lists the nested ``None`` value it
    stored (``list(x.keys(True))``) or finds it (``("inner", "z") in x.keys(True, True)``,
    though its iteration of the leaves skips it), where tclass has no such key (and
    ``select`` of it is a ``KeyNotFoundError``, as of an unset field in both)."""
    if not any(".update(" in line for line in finding.lines[:-1]):
        return False
    if finding.kind == "tclass-raises" and type(mine.error).__name__ == "KeyNotFoundError":
        missing = re.match(r"key '(\w+)' was not found", str(mine.error))
        return missing is not None and f", '{missing.group(1)}')" in finding.step.src
    if finding.kind != "result":
        return False
    if finding.step.op == "contains":
        key = finding.step.src.split(" in x.keys(")[0]
        return key.startswith("(") and "," in key and (peer.value, mine.value) == (True, False)
    if finding.step.op != "keys" or not isinstance(peer.value, list):
        return False
    extra = [key for key in peer.value if key not in mine.value]
    return (
        bool(extra)
        and all(isinstance(key, tuple) and len(key) > 1 for key in extra)
        and ([key for key in peer.value if key in mine.value] == mine.value)
    )


def _empty_tensors_have_no_file(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A memory-mapped collection saved elsewhere without ``copy_existing=True``: tclass
    answers only when its file-backed tensors have no elements (no file), where the peer
    refuses any tensor that has a file, an empty one included."""
    return (
        finding.kind == "peer-raises"
        and finding.step.op in ("memmap", "memmap_like", "load_memmap")
        and "already has a file associated" in str(peer.error)
    )


def _memmap_by_data(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``is_memmap()`` and the lock of rows read from a locked collection follow where
    the data is (in a memory-mapped file or not), where the peer follows a flag some ops
    carry and others drop: ``is_memmap()`` true in tclass only (every tensor is in a file),
    or a lock that differs after an op that changes the peer's flag and not the data
    (the collection memory-mapped in the world, or by an earlier step)."""
    if finding.kind != "result":
        return False
    saved = 0 if facts.memmap else _first_saving(finding.lines)
    if saved is None:
        return False
    if finding.step.op == "x.is_memmap()":
        return mine.value is True or any(_FLAG_CHANGES.search(line) for line in finding.lines)
    if not all(_LOCK_LINE.search(line) for line in finding.detail):
        return False
    return any(_FLAG_CHANGES.search(line) for line in finding.lines[saved + 1 :])


def _first_saving(lines: list[str]) -> int | None:
    """The first line that memory-maps the collection (``memmap``, ``memmap_like``...)."""
    for number, line in enumerate(lines):
        if re.search(r"\.memmap(?:_like|_)?\(|load_memmap\(", line):
            return number
    return None


# an entry with no elements that torch.logsumexp(t, dim=()) reduces whole
_EMPTY_REDUCED_WHOLE = re.compile(
    r": peer Tensor\[([\w.]+), shape \[\]\], tclass Tensor\[\1, shape \[[\d, ]*\b0\b[\d, ]*\]\]$"
)
_BROKEN_SIZE = re.compile(r"^result\.(batch_size|names): peer ")


def _peer_fails_inside(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The peer raised from inside (see ``_PEER_INTERNAL``), or returned ``None`` for an
    operation on a collection without entries, or cannot read the Python values of a
    stack of members on a device and of none, or returned a result whose entries fail to
    read (its batch size and names wrong with them), where tclass answers."""
    if finding.kind in ("peer-raises", "family"):
        if finding.step.op == "logsumexp" and "doesn't match the broadcast shape" in str(
            peer.error
        ):
            return True  # torch.logsumexp(t, dim=()), for a collection without batch dims
        if _rebuilt_with_more_dims(finding, peer):
            return True
        return any(text in str(peer.error) for text in _PEER_INTERNAL)
    if finding.kind == "result" and finding.step.op == "logsumexp":  # the same, no elements
        return all(_EMPTY_REDUCED_WHOLE.search(line) for line in finding.detail)
    if finding.kind == "result" and any(": peer error (" in d for d in finding.detail):
        # the peer's result fails to read; its batch size and names show it broken too
        return all(
            _read_fails_inside(peer.value, line) or _BROKEN_SIZE.match(line)
            for line in finding.detail
        )
    if finding.kind == "alias" and ": error: peer " in finding.detail[0]:
        return all(_read_fails_inside(peer.value, line) for line in finding.detail)
    if finding.kind == "result" and peer.snap == ("py", "NoneType", None):
        keys = getattr(mine.value, "keys", None)  # no leaf (empty nested collections)
        return keys is not None and not list(keys(True, True))
    return False


_MORE_DIMS = re.compile(
    r"the number of sizes provided \((\d+)\) must be greater or equal to the number of "
    r"dimensions in the tensor \((\d+)\)|value tensor of shape \[([\d, ]*)\] cannot be "
    r"broadcast to indexing result of shape \[([\d, ]*)\]"
)


def _rebuilt_with_more_dims(finding: Finding, peer: Any) -> bool:
    """``x[i] = x[i].to_dict()`` where the peer rebuilt a nested collection of the dict
    with more dims than the value it came from (its leaves then do not fit)."""
    if finding.step.op != "setitem" or not finding.step.src.endswith(".to_dict()"):
        return False
    found = _MORE_DIMS.search(str(peer.error))
    if found is None:
        return False
    if found.group(1) is not None:
        return int(found.group(2)) > int(found.group(1))
    return found.group(3).count(",") > found.group(4).count(",")


def _padded_values(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``pad_sequence`` of tensorclasses with masks, which the peer refuses (README,
    "Stacking keeps what can be kept")."""
    if finding.step.op not in ("pad", "pad_sequence"):
        return False
    return finding.kind == "peer-raises" and "contains tensorclasses" in str(peer.error)


def _about_values(line: str) -> bool:
    """A Python value line: the peer's list or values against tclass's shared value, or
    one element that is ``None`` in the peer."""
    if " list of " in line or "peer values (" in line:
        return True
    return re.search(r"\[\d+\]: peer (None|'NoneType'), tclass ", line) is not None


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
    re.compile(r"^result(\[\d+\])*\.is_locked: peer False, tclass True$"),  # nor a lock
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


_LOCK_LINE = re.compile(r"\.is_locked: peer (True|False), tclass (True|False)$")


def _lock_follows_sharing(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A shape op's result (or what it holds) locked in one library only, in a program
    that saved or locked a collection: tclass locks views of a locked source (and
    ``unbind``'s slices of a memory-mapped, saved or shared one), the peer follows its
    memory-mapped flag, which some ops pass on and others drop."""
    if finding.kind != "result" or finding.step.family != "shape":
        return False
    if not (facts.memmap or any("memmap" in line or "lock_()" in line for line in finding.lines)):
        return False
    return all(_LOCK_LINE.search(line) for line in finding.detail)


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
    r"|\]: peer Tensor\[([\w.]+), shape \[([^\]]*)\]\], tclass Tensor\[\3, shape \[([^\]]*)\]\]$"
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
    """``flatten`` of a collection without batch dims: batch size ``[1]`` in both, and
    every entry with a dim of size 1 in front, as torch's ``flatten`` of a 0-d tensor,
    where the peer's ``flatten(-1, 0)`` leaves the entries as they were (their first own
    dim taken for the new batch dim), and a Python value one value where tclass holds it
    once for the new dim (a list of one, as the peer's own ``flatten(0, 0)`` gives)."""
    if finding.kind != "result" or finding.step.op != "flatten":
        return False
    if "no-batch-dims" not in finding.step.tags:
        return False
    return all(_front_dim_kept(line) or _VALUE_ONE_DEEPER.search(line) for line in finding.detail)


def _stays_lazy(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``unflatten`` along a lazy stack's stack dim, ``expand`` of a lazy stack, a
    ``reshape`` / ``view`` / ``flatten`` that merges or splits dims of size 1: a lazy
    stack of the same entries in tclass, a dense TensorDict in the peer (whose nested lazy
    stacks, after an ``expand``, keep the lock of the members' nested collections)."""
    if finding.kind != "result" or finding.step.op not in _LAZY_KEPT:
        return False
    if finding.step.op in _NESTED_DIM_OPS and any(_nested_dim_kept(d) for d in finding.detail):
        return all(
            any(p.search(d) for p in _STAYS_LAZY) or _nested_dim_kept(d) or _NESTED_LAZY.search(d)
            for d in finding.detail
        )
    if finding.step.op == "expand":  # the peer's nested lazy stacks keep their lock
        return all(
            any(p.search(d) for p in _STAYS_LAZY) or _NESTED_LOCK_KEPT.search(d)
            for d in finding.detail
        )
    return all(any(p.search(d) for p in _STAYS_LAZY) for d in finding.detail)


_NESTED_LOCK_KEPT = re.compile(r"^result\[.*\.is_locked: peer True, tclass False$")


def _contains_as_dense(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``key in lazy.keys(...)``: answered as for a TensorDict in both libraries (a nested
    node is in ``keys(True, True)``, a nested key is not in ``keys()``), where the peer's
    lazy stack answers the other way."""
    return finding.step.op == "contains" and _tagged("lazy", "result")(finding, facts, peer, mine)


def _lazy_batch_size_set(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A new batch size of a lazy stack that keeps its stack dim, which the peer refuses."""
    if finding.kind != "peer-raises" or finding.step.op != "set_batch_size":
        return False
    return "Modifying the batch size of a lazy representation" in str(peer.error)


def _no_members_taken(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A selection of none of a lazy stack's members (``split`` / ``chunk`` pieces of size
    0, ``repeat_interleave(0)``, a reshape of no elements): tclass's TensorDict (or lazy
    stack of members with no elements, its batch size as torch gives it) with the
    stack's keys, where the peer gives a lazy stack of no members, without keys."""
    if finding.kind != "result" or not any(_NO_MEMBERS.search(d) for d in finding.detail):
        return False
    return all(any(p.search(d) for p in _NO_MEMBERS_LINES) for d in finding.detail)


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
    and ``None`` fields for others, and its ``cat`` raises."""
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
    return all(
        any(p.search(d) for p in _RECORD_KIND_LINES)
        or _fields_line(d)
        or (dropped and _EMPTY_LAZY.search(d) is not None)
        for d in finding.detail
    )


_EMPTY_LIST = re.compile(r"\]: length: peer 0, tclass [1-9]\d*$")


def _holds_empty_values(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` (a collection, or a tuple of them) holds a NonTensorStack with
    no elements whose batch size starts with a nonzero dim."""
    if depth > 8:
        return False
    if isinstance(value, (tuple, list)):
        return any(_holds_empty_values(item, depth + 1) for item in value)
    if type(value).__name__ == "NonTensorStack":
        size = value.batch_size
        return 0 in size and size[0] > 0
    if not hasattr(value, "batch_size") or not hasattr(value, "keys"):
        return False
    source = getattr(value, "_tensordict", value)  # a record's entries
    for key in source.keys():
        try:
            child = source.get(key)
        except Exception:  # noqa: BLE001  (a read that raises holds nothing here)
            continue
        if _holds_empty_values(child, depth + 1):
            return True
    return False


def _empty_values_shaped(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Per-element Python values over a batch with no elements: nested empty lists shaped
    like the batch in tclass (``[[], []]`` for ``[2, 0]``), where the peer's stack of no
    members lists as ``[]``."""
    if finding.kind != "result" or not all(_EMPTY_LIST.search(d) for d in finding.detail):
        return False
    return _holds_empty_values(mine.value)


_NO_VALUES_LEFT = re.compile(r": peer py \('NoneType', None\), tclass list of 0$")
_KEYS_LINE = re.compile(r": keys: peer (\[[^\]]*\]), tclass (\[[^\]]*\])$")


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


_EMPTY_PIECE = re.compile(
    r": peer LazyStackedTensorDict\(batch_size=\[[\d, ]*\], keys=\[\]\), "
    r"tclass nontensor \(\('values', \('seq', 'list', \[\]\)"
)
_MISMATCH = re.compile(
    r"keys in .* mismatch\. The \w+ TD has keys \{([^}]*)\}|keys in .* mismatch, got"
)


def _keys_mismatch_over_no_elements(finding: Finding, peer: Any, mine: Any) -> bool:
    """The peer's "keys ... mismatch" where one side is an ``apply`` result that dropped
    Python values over no elements (or its stack's "sets of keys ... are exclusive"): the
    keys it names are such values in tclass's result (or, where tclass raises too, the
    peer's message shows a batch size with a 0)."""
    message = str(peer.error)
    if "sets of keys in the tensordicts to stack are exclusive" in message:  # names none
        return finding.kind == "peer-raises" and bool(_empty_value_keys(mine.value))
    found = _MISMATCH.search(message)
    if found is None:
        return False
    if finding.kind == "family":
        return re.search(r"batch_size=\[(\d+,)*0[,\]]", message) is not None
    named = set(re.findall(r"'(\w+)'", found.group(1) or ""))
    return bool(named) and named <= _empty_value_keys(mine.value)


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
        if _VALUE_ONE_DEEPER.search(line) is None:
            return False
    return True


_NAMES_LINE = re.compile(r"^result(\[.*\])?\.names: peer (\[[^\]]*\]), tclass (\[[^\]]*\])$")


def _names_of(line: str) -> tuple[str, list[str], list[str]] | None:
    """The path and both sides' names of a ``....names: peer [...], tclass [...]`` line."""
    found = _NAMES_LINE.match(line)
    if found is None:
        return None
    sides = [re.findall(r"'[^']*'|None", side) for side in found.groups()[1:]]
    return found.group(1) or "", sides[0], sides[1]


_ONE_NAME = re.compile(r"^result(\[[^\]]*\])*\.names: peer \[None\], tclass \['[a-z]+'\]$")


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


def _stack_dim_name_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The name of the one dim of a lazy stack of members without batch dims, kept by
    ``to_tensordict`` / ``contiguous`` / ``apply(batch_size=)``, where the peer drops it."""
    if finding.kind != "result" or facts.kind != "lazy":
        return False
    if finding.step.op not in ("to_tensordict", "contiguous", "apply", "named_apply"):
        return False
    return all(_ONE_NAME.match(line) for line in finding.detail)


def _broadcast_index_unnamed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Tensor indices over several named dims: the dim they broadcast to unnamed in
    tclass, named after one of those dims in the peer when the other's index has one
    element."""
    if finding.kind != "result" or finding.step.op not in ("getitem", "get_at"):
        return False
    if finding.step.src.count("torch.tensor(") + finding.step.src.count("t([") < 2:
        return False
    parsed = [_names_of(line) for line in finding.detail]
    return all(
        p is not None
        and len(p[1]) == len(p[2])
        and all(a == b or b == "None" for a, b in zip(p[1], p[2]))
        for p in parsed
    )


def _pad_sequence_unnamed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``pad_sequence``'s result has unnamed dims, where the peer keeps the members' names
    at a level that holds a Python value."""
    if finding.kind != "result" or finding.step.op != "pad_sequence":
        return False
    parsed = [_names_of(line) for line in finding.detail]
    return all(p is not None and set(p[2]) == {"None"} for p in parsed)


def _nested_names_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``squeeze``: a nested node keeps the names of the dims it keeps, where the peer
    drops them (the top node keeps them in both), and a nested Python value that all
    elements share stays one value, where the peer's ``squeeze()`` keeps its stack."""
    if finding.kind != "result" or finding.step.op != "squeeze":
        return False
    shared = {line.split(": ")[0] for line in finding.detail if _shared_value_line(line)}
    names = [
        line
        for line in finding.detail
        if line.split(": ")[0] not in shared or not _about_values(line)
    ]
    parsed = [_names_of(line) for line in names]
    return all(
        p is not None
        and p[0].startswith("[")
        and len(p[1]) == len(p[2])
        and all(a == "None" or a == b for a, b in zip(p[1], p[2]))
        for p in parsed
    )


_VALUE_STACK_LINE = re.compile(
    r"^result\[.*: peer values \(\('seq', 'list', \[(.*)\]\), \[[\d, ]*\]\), "
    r"tclass value \((.*), \[[\d, ]*\]\)$"
)


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
    list per element."""
    if finding.kind != "result" or finding.step.op != "load_memmap":
        return False
    return _holds_ragged_values(mine.value)


def _holds_ragged_values(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` (a collection, or a tuple of them) holds a NonTensorStack with
    ``-1`` in its batch size."""
    if depth > 8:
        return False
    if isinstance(value, (tuple, list)):
        return any(_holds_ragged_values(item, depth + 1) for item in value)
    if type(value).__name__ == "NonTensorStack":
        return -1 in value.batch_size
    if not hasattr(value, "batch_size") or not hasattr(value, "keys"):
        return False
    source = getattr(value, "_tensordict", value)  # a record's entries
    for key in source.keys():
        try:
            child = source.get(key)
        except Exception:  # noqa: BLE001  (a read that raises holds nothing here)
            continue
        if _holds_ragged_values(child, depth + 1):
            return True
    return False


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


# What the peer 0.15 says refusing to write a number into a Python value.
_NUMBER_REFUSED = (
    "update a leaf in-place with a shared tensordict",  # a memory-mapped collection's
    "holds one value for all its elements",  # a value shared by the elements
)


def _number_written_around_values(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``td[idx] = 1.5``: tclass writes the number into the tensors and leaves Python
    values as they are, where the peer 0.15 writes it into them too (a tensor in a list
    per element, with a FutureWarning), or refuses to on a memory-mapped collection; rows
    written into a memory-mapped collection's Python values, which the peer refuses."""
    if finding.kind == "peer-raises" and finding.step.op == "setitem":
        if "update a leaf in-place with a shared tensordict" in str(peer.error):
            return True
    if "number" not in finding.step.tags:
        return False
    if finding.kind == "peer-raises":
        return any(text in str(peer.error) for text in _NUMBER_REFUSED)
    if finding.kind != "result":
        return False
    return all(
        _about_values(line) or re.search(r": peer Tensor\[[^\]]*\]\], tclass py \(", line)
        for line in finding.detail
    )


def _values_written_in_place(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``load_state_dict`` / ``update_`` of a memory-mapped (or shared) collection: tclass
    writes its Python values, where the peer fails on the first key that holds one; and
    ``set_`` / ``update_`` of a number into a Python value, which the peer refuses."""
    if finding.kind != "peer-raises":
        return False
    if "copy_ / update_ requires the source to be a NonTensorDataBase" in str(peer.error):
        return finding.step.op in ("update_", "set_", "load_state_dict")
    if type(peer.error).__name__ != "_InplaceWriteError":
        return False
    found = re.search(r"Failed to update '([^']+)'", str(peer.error))
    if found is None or finding.step.op not in ("load_state_dict", "update_", "set_"):
        return False
    if not hasattr(mine.value, "get"):
        return False
    nested = [k for k in mine.value.keys(True) if isinstance(k, tuple) and k[-1] == found.group(1)]
    value = mine.value.get(found.group(1), None)
    if value is None and nested:  # a nested key's (the peer names its last part)
        value = mine.value.get(nested[0])
    if type(value).__name__ in ("NonTensorData", "NonTensorStack"):
        return True
    return (
        value is not None
        and not isinstance(value, torch.Tensor)
        and not hasattr(value, "batch_size")
    )


def _dims_in_batch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A dim outside the batch dims (``stack``, ``cat``, ``flatten``...), a lazy stack's
    ``flatten`` with ``end_dim`` before ``start_dim``, an index out of range of a
    collection without entries: tclass's ``DimError`` / ``ShapeError``, where the peer 0.15
    uses the dim on the leaves (with a FutureWarning) or computes a batch size unchecked."""
    if finding.kind not in ("tclass-raises", "family"):
        return False
    name, message = type(mine.error).__name__, str(mine.error)
    if name == "ShapeError":
        return finding.step.op == "flatten" and "comes after end_dim" in message
    return name == "DimError" and (
        "batch dim(s) (expected a value in" in message
        or (
            finding.step.op in ("getitem", "setitem")  # x[i] = x[i].to_dict() indexes too
            and (
                "is out of range for the batch size" in message or "for a lazy stack of" in message
            )
        )
    )


def _too_many_indices(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An index with more entries than batch dims anywhere in an indexing step (the value
    written by ``x[i] = x[j, k]`` too): tclass's ``DimError``, where the peer indexes the
    leaves' feature dims."""
    if finding.kind not in ("tclass-raises", "family") or finding.step.family != "index":
        return False
    error = mine.error
    return type(error).__name__ == "DimError" and str(error).startswith("too many indices")


def _beyond_the_index(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """What tclass answers as torch does for a tensor of the batch size, where the peer
    checks and refuses: an indexed write or ``set_`` of a value that broadcasts
    (``td[...] = td[0]``), ``gather`` with an empty index, ``flatten`` without batch dims."""
    if finding.kind != "peer-raises":
        return False
    message = str(peer.error)
    if finding.step.op == "gather":
        return "Cannot use torch.gather with an empty index" in message
    if finding.step.op == "flatten":  # (tclass raises for a start after the end elsewhere)
        if "start_dim cannot come after end_dim" in message:
            return True
        return "Incompatible end_dim" in message and "shape torch.Size([])" in message
    if finding.step.op == "set_":
        return message.startswith("batch dimension mismatch")
    return finding.step.op == "setitem" and "which differs from the source batch size" in message


def _names_unique(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Names repeated across a lazy stack's dims, or of the wrong length with ``None``
    entries: tclass's ``DimNameError``, as for a TensorDict in both libraries, where the
    peer 0.15 accepts them with a FutureWarning."""
    if finding.kind not in ("tclass-raises", "family") or type(mine.error).__name__ != (
        "DimNameError"
    ):
        return False
    message = str(mine.error)
    return "dim names must be unique" in message or (
        "dims but the batch has" in message and "None" in message
    )


# tclass's errors for a shape torch refuses or an in-place write the peer skips: the ops
# they come from and a phrase of the message.
_CHECKED_AS_TORCH = {
    "ShapeError": (
        ("split", "do not add up to the dim size"),
        ("expand", "-1 is only allowed for existing dims"),
        ("permute", "is not a permutation of the leading batch dims"),
    ),
    "DimError": (("narrow", "do not fit"),),  # a batch dim, or a lazy stack's members
    "BatchSizeError": (
        ("set_", "cannot copy a value of shape"),
        ("setitem", "without entries writes nothing"),
    ),
    "InPlaceWriteError": (("set_", "cannot be copied into"), ("update_", "cannot be copied into")),
    "BatchMismatchError": tuple(
        (op, "does not start with the batch size")
        for op in ("set", "setitem_key", "rename_key_", "update_")
    ),
}


def _checked_as_torch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """What the README lists under "Shapes, names and in-place writes are checked as torch
    checks a tensor": tclass's error where the peer computes a batch size torch refuses or
    silently skips (or half-does) an in-place write."""
    if finding.kind not in ("tclass-raises", "family"):
        return False
    rules = _CHECKED_AS_TORCH.get(type(mine.error).__name__, ())
    message = str(mine.error)
    return any(finding.step.op == op and phrase in message for op, phrase in rules)


_WRITE_SIZES = re.compile(
    r"destination TensorDict batch size is (\[[\d, ]*\]), and the source's batch size "
    r"(\[[\d, ]*\])|values of batch size (\[[\d, ]*\]) into the elements (\[[\d, ]*\])"
)


def _written_as_torch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A collection written at an index whose batch size torch would not broadcast to the
    selection's as a tensor's shape (``td[0] = td[1:1]``): tclass's error, where the peer
    writes the one Python value (or nothing) it holds."""
    if finding.kind != "tclass-raises" or finding.step.op != "setitem":
        return False
    found = _WRITE_SIZES.search(str(mine.error))
    if found is None:
        return False
    dest, source = (found.group(1), found.group(2)) if found.group(1) else found.group(4, 3)
    try:
        torch.empty(json.loads(dest))[...] = torch.empty(json.loads(source))
    except RuntimeError:
        return True
    return False


def _absent_field_filled(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A field that is ``None`` assigned on a locked record saved in a folder
    (``saved.opt = t``): filled in tclass (written to the folder), refused by the peer's
    lock. tclass refuses the assignment of a field already set, or on a record not saved."""
    if finding.kind != "peer-raises" or finding.step.op != "setattr":
        return False
    saved = facts.memmap or any("memmap" in line for line in finding.lines)
    return saved and "Cannot modify locked" in str(peer.error)


def _loaded_is_memmap(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``is_memmap()`` of a collection loaded with ``load_memmap``: True in tclass (its
    tensors are memory-mapped), False in the peer, which flags only what it mapped."""
    return (
        finding.kind == "result"
        and finding.step.op == "x.is_memmap()"
        and peer.value is False
        and mine.value is True
        and any("load_memmap" in line for line in finding.lines)
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
        keys = _KEYS_LINE.match(line)
        if keys is None:
            return False
        theirs, ours = (json.loads(group.replace("'", '"')) for group in keys.groups())
        if not set(ours) < set(theirs) or [key for key in theirs if key in ours] != ours:
            return False
    return True


ENTRIES: list[Entry] = [
    Entry(
        "ragged-dim-unsupported",
        "Along the ragged dim of a lazy stack (a `-1` in its batch size), `unbind`,",
        _ragged_dim,
    ),
    Entry(
        "ragged-values-keep-sizes",
        "**Ragged stacks of Python values keep their sizes.**",
        _ragged_values_loaded,
    ),
    Entry(
        "values-kept-shared",
        "**Python values in collections.**",
        _any_of(
            _number_written_around_values,
            _values_written_in_place,
            _values_kept(*_VALUES_DROPPED),
            _through_a_value,
            _empty_values_shaped,
            _empty_values_kept,
            _empty_gives_new_nodes,
            _stack_of_values_not_empty,
            _new_entries_saved,
            _saved_later,
        ),
    ),
    Entry(
        "stacking-keeps",
        "**Stacking keeps what can be kept.**",
        _any_of(
            _padded_values,
            _no_members_taken,
            _lazy_batch_size_set,
            _stays_lazy,
            _records_kept,
            _pad_sequence_unnamed,
            _contains_as_dense,
        ),
    ),
    Entry(
        "peer-fails-inside",
        "**Where the peer fails inside, tclass answers.**",
        _peer_fails_inside,
    ),
    Entry(
        "index-beyond-batch",
        "**Indexing stays in the batch dims.** An index with more entries than batch dims is an",
        _any_of(
            _tagged("beyond-batch", "tclass-raises", "family"),
            _dims_in_batch,
            _too_many_indices,
            _beyond_the_index,
            _memory_mapped_as_indexed,
        ),
    ),
    Entry(
        "checked-as-torch",
        "**Shapes, names and in-place writes are checked as torch checks a tensor.**",
        _any_of(
            _checked_as_torch,
            _written_as_torch,
            _names_unique,
            _broadcast_index_unnamed,
            _shaped_as_torch,
            _flattened_without_dims,
            _values_shaped_as_torch,
            _nested_names_kept,
            _names_read_live,
            _stack_dim_name_kept,
            _empty_set_under_node,
        ),
    ),
    Entry(
        "empty-tensors-have-no-file",
        "**A tensor with no elements has no file.**",
        _empty_tensors_have_no_file,
    ),
    Entry(
        "memmap-by-data",
        "**`is_memmap()` looks at the data.**",
        _any_of(_memmap_by_data, _loaded_is_memmap, _nothing_mapped),
    ),
    Entry(
        "lock-follows-sharing",
        "**A result's lock follows what it shares, not a flag.**",
        _any_of(_lock_follows_sharing, _members_lock_as_the_stack),
    ),
    Entry(
        "annotation-casts",
        "5. **Casting follows the annotation** of tensorclass fields",
        _any_of(_raised_by("FieldTypeError"), _cast_to_the_field, _dict_kept_in_value_field),
    ),
    Entry(
        "absent-field-filled",
        "**An absent field of a saved record is filled while locked.**",
        _absent_field_filled,
    ),
    Entry(
        "none-field-unset",
        "**A field set to `None` is not set, at every level.**",
        _any_of(_none_field_unset, _none_field_listed),
    ),
    Entry(
        "state-dict-keys-skipped",
        "and with `strict=False` skips keys only one side has, as `nn.Module`",
        _state_dict_keys_skipped,
    ),
    Entry(
        "record-fields-are-declared",
        "Instances have `__slots__`, so assigning a misspelt\n  attribute raises",
        lambda finding, facts, peer, mine: (
            finding.kind in ("tclass-raises", "family")
            and type(mine.error).__name__ == "UnknownFieldError"
        ),
    ),
    Entry(
        "in-place-all-or-nothing",
        "**In-place math is all or nothing.**",
        _any_of(_in_place_all_or_nothing, _written_back),
    ),
    Entry(
        "bitwise-in-place",
        "**`&=`, `|=`, `^=`, `%=` and `//=` work in place**",
        _any_of(_changed_in_place_later, _kept_in_place),
    ),
    Entry(
        "math-beyond-the-peer",
        "**Math goes where the peer stops.** A reduction over several dims reduces all of them",
        _any_of(
            _beyond_the_peer,
            _reflected_on_ragged,
            _nested_batch_dims_kept,
            _values_kept(*_REDUCTIONS),
            _values_not_merged,
            _joined_disagree,
            _torch_dtypes,
        ),
    ),
]


def covering(finding: Finding, facts: Facts, peer: Outcome, mine: Outcome) -> str | None:
    """The name of the entry that covers ``finding``, or None (a bug)."""
    for entry in ENTRIES:
        if entry.covers(finding, facts, peer, mine):
            return entry.name
    return None


# --- open: discrepancies found and not fixed yet ------------------------------------------


def open_issue(finding: Finding) -> str | None:
    """The signature of ``finding`` if it is a known open discrepancy (``open_findings``)."""
    signature = finding.signature()
    return signature if signature in OPEN else None
