"""The rules of the deliberate differences (``allowlist.ENTRIES``), first part: operations
the peer lacks or refuses, dtypes, math beyond the peer, saved folders and memory maps,
in-place writes, records' fields and the peer's own failures. Each rule takes a finding
and says whether the README bullet of its entry covers it."""

from __future__ import annotations

import ast
import json
import re
from typing import TYPE_CHECKING, Any

import torch

from .allow_common import Covers, _later_lines, _result_line
from .allow_ragged import (
    _RAGGED_KEPT,
    _about_values,
    _one_member_resolved,
    _ragged_made_dense,
    _rebuilt_with_more_dims,
    _viewed_with_extra_dims,
)
from .compare import is_collection, key_path

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts


# What the peer says when it has no such operator, keyword or method at all.
_PEER_LACKS = ("unsupported operand type(s)", "unexpected keyword argument", "has no attribute")


_DIMS_LINE = re.compile(
    r"\.(batch_size|names): peer [\[(]([^\])]*)[\])], tclass [\[(]([^\])]*)[\])]$"
)


def _reflected_on_ragged(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A tensor on the left of an operator with a ragged lazy stack (``t != stack``): the
    batch size ``stack != t`` gives, where the peer's result has a dim more in front (it
    hands each member the whole tensor, not the member's slice), more in a lazy stack of
    lazy stacks."""
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
        if len(theirs) <= len(ours) or not (found.group(1) == "names" or _within(ours, theirs)):
            return False
    return True


def _within(ours: list[str], theirs: list[str]) -> bool:
    """Whether ``theirs`` is ``ours`` with dims added (anywhere: at each level of a lazy
    stack of lazy stacks, the peer adds the tensor's dims before that level's stack dim)."""
    rest = iter(theirs)
    return all(dim in rest for dim in ours)


def _tensor_on_ragged(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An operator with a ragged lazy stack on the left and a tensor of its batch dims
    (``stack | t``): each member gets its slice of the tensor, where the peer hands each
    member the whole tensor and fails to broadcast it."""
    if finding.kind != "peer-raises" or finding.step.family != "math":
        return False
    if -1 not in getattr(mine.value, "batch_size", ()):
        return False
    return "Attempting to broadcast a dimension of length" in str(peer.error)


_RAGGED_READ = re.compile(
    r"^result((?:\['[^']*'\])+): peer Tensor\[.*, tclass error \('ValueError'"
)


def _tensor_spread_on_ragged(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The same (``stack | t``) where the peer's broadcast works: it gives every member
    the whole tensor's dims (dims longer), tclass each member its slice (a ragged stack,
    whose entries are read member by member; its Python values' nodes the peer's dims
    too: ``==`` of a stacked ragged stack, program 8,403,514 of ``--length 6``
    shape,combine,math, fz18a)."""
    if finding.kind != "result" or finding.step.family != "math":
        return False
    mine_size, peer_size = (
        getattr(mine.value, "batch_size", ()),
        getattr(peer.value, "batch_size", ()),
    )
    if -1 not in mine_size or len(peer_size) <= len(mine_size):
        return False
    for line in finding.detail:
        found = _DIMS_LINE.search(line) or _SHAPES_LINE.search(line)
        if found is not None:
            theirs, ours = (side.rstrip(", ").count(",") for side in found.groups()[1:])
            if theirs > ours:
                continue
        longer = _VALUE_NODE_LONGER.match(line)  # a Python value's shape: the peer's dims too
        if longer is not None and int(longer.group(1)) > int(longer.group(2)):
            continue
        if _RAGGED_READ.match(line) is None:
            return False
    return True


# the shape of a Python value's node (``['s'][1]``, a nested value's ``[0][1][0][1]``, a
# member's)
_VALUE_NODE_LONGER = re.compile(
    r"^result(?:\['\w+'\]|\.<members>(?:\[\d+\])+)*\['\w+'\](?:\[\d+\])*\[1\]: "
    r"length: peer (\d+), tclass (\d+)$"
)


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
    or tclass's for indices along several dims; a lazy stack along a dim of size 0,
    torch's (as the peer's for a TensorDict)."""
    tags = finding.step.tags
    if finding.kind == "peer-raises" and finding.step.op == "//=":
        return any(text in str(peer.error) for text in _PEER_LACKS)
    if finding.kind == "peer-raises" and finding.step.op in _REDUCTIONS:
        if any(text in str(peer.error) for text in _REDUCTION_REFUSALS):
            return True
    if finding.kind == "family" and finding.step.op in _REDUCTIONS:
        # a lazy stack reduced along a dim of size 0: torch's error, as the peer's for a
        # TensorDict or a stack of like members (program 17,045 of math, inv19a); max / min
        # over several dims: tclass's TypeError, as the peer's TensorDict's (12,305,296)
        if _REDUCTION_REFUSALS[1] in str(peer.error):
            several = "multi-dim" in tags and "indices exist along one dim" in str(mine.error)
            return several or "Expected reduction dim" in str(mine.error)
    if finding.kind == "peer-raises":
        return bool(tags & {"peer-stops", "multi-dim", "lazy-reduce"}) or _first_of_tuple(finding)
    if finding.kind in ("family", "tclass-raises") and "multi-dim" in tags:
        return True
    if finding.kind in ("tclass-raises", "family") and _first_of_tuple(finding):
        # torch's, for a dim of size 0 (the peer answers, or fails on a leaf's dim)
        return "Expected reduction dim" in str(mine.error)
    if finding.kind == "family" and ("peer-stops" in tags or finding.step.op == "//="):
        return any(text in str(peer.error) for text in _PEER_LACKS)
    if finding.kind == "result" and "dim-tuple" in tags:
        return finding.step.op in _FIRST_OF_TUPLE
    return finding.kind == "result" and bool(tags & {"multi-dim", "values-indices"})


_KEYS_OF = re.compile(r"^result((?:\['\w+'\])*): keys: peer \[([^\]]*)\], tclass \[([^\]]*)\]$")


def _intersection_without_tensors(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x.pow(y, default="intersection")`` (any binary math) of a collection holding no
    tensor: tclass leaves out an empty nested collection that ``y`` lacks, as any key
    ``y`` lacks, where the peer's math copies such a collection whatever the operand
    (ol31a: program 16,013,886 L12 of methods,index,shape,combine)."""
    if finding.kind != "result" or 'default="intersection"' not in finding.step.src:
        return False
    if not finding.detail or any(isinstance(leaf, torch.Tensor) for leaf in _leaves(mine.value)):
        return False
    for line in finding.detail:
        found = _KEYS_OF.match(line)
        if found is None:
            return False
        theirs, ours = (set(re.findall(r"'(\w+)'", side)) for side in found.group(2, 3))
        node = peer.value
        for key in key_path(found.group(1)):
            node = node.get(key)
        if not ours < theirs or any(list(node.get(k).keys(True, True)) for k in theirs - ours):
            return False
    return True


def _leaves(value: Any) -> list[Any]:
    keys = getattr(value, "keys", None)
    return [] if keys is None else [value.get(key) for key in keys(True, True)]


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


# the last call of a chain: ``x.float().norm()`` -> ``norm``
_LAST_CALL = re.compile(r"^x(?:\.\w+\([^()]*\))+?\.(\w+)\([^()]*\)$")


def _values_kept(*ops: str) -> Covers:
    """``ops`` keep per-element Python values (a ``NonTensorStack``) or a value as values,
    where the peer turns them into a ``TensorDict`` without keys (a lazy stack without
    keys, for a stack): its reductions of a value stack, its ``==`` / ``!=`` with a number,
    its ``|`` / ``^`` of per-element numbers (a bool tensor). A step that chains calls
    (``x.float().norm()``, named after its first) is judged by its last one."""

    def covers(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
        last = _LAST_CALL.search(finding.step.src)
        named = finding.step.op in ops or (last is not None and last.group(1) in ops)
        if finding.kind != "result" or not named:
            return False
        return all(
            "peer TensorDict(batch_size=" in line
            or _about_values(line)
            or _EMPTY_LAZY.search(line)
            or (finding.step.op in _BITWISE and _BOOL_FOR_VALUES.search(line))
            for line in finding.detail
        )

    return covers


# numbers: the peer's ``|`` / ``^`` of per-element values is a bool tensor of the results
_BITWISE = ("|", "^", "r|", "r^", "|=", "^=")
_BOOL_FOR_VALUES = re.compile(
    r": peer Tensor\[torch\.bool, shape \[[\d, ]*\]\], tclass nontensor \("
)


# the comparisons and bitwise ops whose results the peer holds no Python values in
_VALUES_DROPPED = ("==", "!=", "r==", "r!=", "|", "^", "r|", "r^", "|=", "^=")
_EMPTY_LAZY = re.compile(
    r": peer LazyStackedTensorDict\(batch_size=\[[-\d, ]*\], keys=\[\]\), tclass "
)


_REDUCTIONS = ("sum", "mean", "prod", "std", "var", "max", "min", "amax", "amin", "any", "all")
_REDUCTIONS += ("nansum", "nanmean", "norm", "logsumexp", "quantile")


_REDUCED_LOSSES = ("l1_loss", "mse_loss", "smooth_l1_loss")


def _values_not_merged(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A reduction over elements whose Python values differ: tclass's ``ReductionError``
    naming the entry, where the peer loses the values (a ``TensorDict`` without keys);
    so too a loss reduced to one value (``smooth_l1_loss(..., reduction='sum')``, whose
    result keeps the Python values as tclass's math does: 17,072,026 L10 of all
    families, fz33b)."""
    reduced = finding.step.op in _REDUCTIONS or (
        finding.step.op in _REDUCED_LOSSES and "reduction='none'" not in finding.step.src
    )
    return (
        finding.kind == "tclass-raises"
        and reduced
        and type(mine.error).__name__ == "ReductionError"
        and "different Python value per element" in str(mine.error)
    )


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
    return any(_BITWISE_IN_PLACE.match(line) for line in _later_lines(finding))


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
    only, which returns a nested node without tensors itself (so does the result of
    ``separates``, built on it); or that node's lock, the
    source's in the peer (a new node's, unlocked, in tclass)."""
    if finding.kind == "result" and finding.step.op == "empty":
        return _RECURSE.search(finding.step.src) is not None and all(
            _NESTED_LOCKED.match(line) for line in finding.detail
        )
    if finding.kind != "alias" or not all(
        line.startswith(("result[", "result.<members>")) for line in finding.detail
    ):
        return False
    if any(_RECURSE.search(line) for line in _later_lines(finding)):
        return True  # (a lazy stack's members too: program 1,105,079)
    # the result of ``separates``, which the peer builds on ``empty(recurse=True)``: a
    # nested node holding only Python values shared with the source (program 1,004,589)
    line = _result_line(finding)
    source = finding.lines[line - 1] if line is not None else ""
    return re.match(r"^x\.separates\(", source) is not None


# ``empty(recurse=True)``, also spelled ``empty(True)`` (program 9,302,004)
_RECURSE = re.compile(r"\.empty\((recurse=)?True\b")
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
_OVERLAP = "more than one element of the written-to tensor refers to a single memory location"
_KEPT_IN_PLACE = (
    re.compile(r"\.is_locked: peer False, tclass True$"),
    re.compile(r"\.names: peer "),
    re.compile(r": keys: peer \["),
    re.compile(r": peer TensorDict\(batch_size="),
    # a lazy stack's value: an empty lazy stack in the peer (programs 17,546, 34,292)
    re.compile(
        r": peer LazyStackedTensorDict\(batch_size=\[[\d, ]*\], keys=\[\]\), tclass nontensor \("
    ),
    re.compile(r"\.kind: peer 'TensorDict', tclass 'PersistentTensorDict(View)?'$"),  # the file
    re.compile(r"\.kind: peer 'TensorDict', tclass 'TensorDictParams'$"),  # a lazy stack's member
    re.compile(r": peer Tensor\[torch\.bool, shape \[[\d, ]*\]\], tclass nontensor \("),  # a value
    _MEMORY_MAPPED,
    _DTYPE_ONLY,
)


def _kept_in_place(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x |= y`` (``&=``, ``^=``, ``%=``, ``//=``): tclass's collection changed in place,
    where the peer's ``x | y`` is a new, unlocked TensorDict without dim names; in place
    into an expanded collection, torch's error, as for the same tensor. A nested record
    without leaves is kept, where the peer's ``x % y`` reads it ``None``, as for any of
    its math (``_nested_without_leaves``; program 8,500,028 of records,math)."""
    if not _BITWISE_IN_PLACE.match(finding.step.src):
        return False
    if finding.kind in ("tclass-raises", "family"):
        return _OVERLAP in str(mine.error) and any(".expand" in line for line in finding.lines)
    if finding.kind != "result":
        return False
    if _repeats_a_member(mine.value):  # changed once per holding, as the peer's ``+=``
        return all(": values differ: " in line for line in finding.detail)
    return all(
        any(p.search(line) for p in _KEPT_IN_PLACE) or _nested_without_leaves(mine.value, line)
        for line in finding.detail
    )


def _repeats_a_member(value: Any) -> bool:
    """A lazy stack holding one member twice or more (an index that repeats it,
    ``x[torch.tensor([-1, 0, -1])]``): in place, that member changes once per holding
    (``^= True`` twice: back as it was), as the peer's ``+=`` changes it, where the peer's
    ``x ^ True`` makes new members (fz32c: 17,032,695 L14 of features,math,index)."""
    members = getattr(value, "tensordicts", None)
    if type(value).__name__ != "LazyStackedTensorDict" or not members:
        return False
    return len({id(member) for member in members}) < len(members)


# The ops whose result dtypes are torch's for each entry (README, "Math goes where the
# peer stops": "Math dtypes are torch's, entry by entry").
_TORCH_DTYPES = ("+", "-", "*", "**", "r+", "r-", "r*", "add", "sub", "rsub", "mul", "pow")
_TORCH_DTYPES += ("maximum", "minimum", "torch.maximum", "torch.minimum")
_TORCH_DTYPES += ("|", "^", "&", "r|", "r^", "r&")
_TORCH_DTYPES += ("lerp",)  # a 0-d entry with a 0-d weight tensor (fz28e: 15,850,282 L12)
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
    if finding.kind == "peer-raises" and _BOOL_ALPHA.search(src):  # bool entries: torch's own
        return "can't be cast to the desired output type Bool" in str(peer.error)
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
_AT_NONE = re.compile(
    r", I\[None\]\)$|, I\[None(, \.\.\.)?\], fast=False\)$"
)  # update_at_ / copy_at_


def _new_entries_saved(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """New entries written into a loaded (or saved) collection (``loaded["new"] = t``,
    ``set``, ``update``, ``setdefault``...): its folder's files in tclass (memory-mapped), where
    the peer keeps plain tensors in memory that a reload does not see; so is an entry
    ``rename_key_`` moves into another node (a copy saved there); and such an entry
    written by an earlier line, seen in a later op's result (``x.setdefault("zz", t);
    x = x.del_("m")`` of a loaded lazy stack: program 15,500 of index,entries, inv19b);
    and the ``out_key`` of ``stack_tensors`` / ``cat_tensors`` (a loaded member of a lazy
    stack: program 15,010,338 of ``--length 12`` methods,index,shape,combine, fz27c)."""
    if finding.kind != "result":
        return False
    if finding.step.op == "rename_key_" and not _renamed_into_another_node(finding.step.src):
        return False
    if not all(_MAPPED_HERE.search(line) for line in finding.detail):
        return False
    if finding.step.op in _ENTRY_WRITES + ("rename_key_", "setdefault"):
        return True
    keys = [key_path(line)[-1:] for line in finding.detail]
    loaded = facts.memmap or any(re.search(r"load_memmap\(|\.load\(", s) for s in finding.lines)
    if finding.step.op in ("stack_tensors", "cat_tensors"):
        out = _OUT_KEY.search(finding.step.src)
        return loaded and out is not None and all(key == (out.group(1),) for key in keys)
    written = [s for s in finding.lines[:-1] if _NEW_ENTRY_WRITE.match(s)]
    return loaded and all(
        key and any(f"'{key[0]}'" in s or f'"{key[0]}"' in s for s in written) for key in keys
    )


# the last name of ``stack_tensors`` / ``cat_tensors``'s ``out_key`` (``"out"``, ``("n", "out")``)
_OUT_KEY = re.compile(r"\bout_key=\(?(?:['\"]\w+['\"], )*['\"](\w+)['\"]")


# an earlier line that writes an entry by key (``x["zz"] = t``, ``x.setdefault("zz", t)``...)
_NEW_ENTRY_WRITE = re.compile(r"^(?:x = )?x(?:\[['\"(]|\.(?:setdefault|set|update)\()")


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
    if finding.kind != "alias":
        return False
    loaded = any(re.search(r"load_memmap\(|\.load\(", line) for line in finding.lines)
    if not (facts.memmap or loaded):
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
    plain tensors for them (views, or copies in a lazy stack's members); ``update_at_(v,
    I[None])`` too (program 10,980,271 of index ``--length 8``, fz20c), and ``copy_at_(v,
    I[None, ...], fast=False)``, the peer's ``update_at_``, whose swapped leaves the file
    no longer sees (17,002,598 L8 of methods,index,shape,combine, og33a)."""
    if finding.kind == "result" and finding.step.op in ("update_at_", "copy_at_"):
        at_none = _AT_NONE.search(finding.step.src) is not None
        no_dims = finding.step.op == "update_at_" or not getattr(mine.value, "batch_size", 1)
        return at_none and no_dims and all(_MAPPED_HERE.search(line) for line in finding.detail)
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
    if isinstance(peer.error, TypeError) and "leaf tensor that requires grad" in str(mine.error):
        return False  # torch's TypeError of the arguments comes first (par22)
    return finding.kind in ("tclass-raises", "family") and refused and in_place


# What the peer's errors say when they come from inside it rather than from a check.
# unsqueeze / roll of a record whose value node the peer's repeat_interleave(0) left at
# [0], fewer dims than the record's (its check reads that node's batch size); cat of a
# record whose value node the peer's repeat of no elements left at [0] (14,210,396)
_NODE_LEFT_AT_0 = (
    "unsqueezing is allowed for dims comprised between",
    "for tensordict with shape torch.Size([0])",  # (roll's "Incompatible dim 1")
    "too many indices for a tensordict with batch size torch.Size([0])",  # (cat's)
    # (that node stacked: a cast's, by maybe_dense_stack; 15,992,610 L8 of
    # methods,index,shape,combine, fz30b)
    "too many indices for a tensordict with batch size torch.Size([0, ",
    # broadcast_to / expand: its members' expand of the node it left at [0] (program
    # 15,845,455 of methods,index,shape,combine --length 8: after repeat of a lazy stack
    # of records over no elements made dense by view([0, 3]); repeat_interleave(2, dim=1)
    # of a record over a lazy stack of batch [0, 1]: 31,410,013 L8 of
    # features,index,shape,combine, og32b)
    "existing_shape = torch.Size([0])",
)
# a dtype cast, which leaves a value stack over no elements at [0] too (x[..., :-1] = ...
# after it: program 15,540,591 of methods,index,shape,combine, fz27d)
_CAST_OVER_NONE = re.compile(r"^\s*x = x\.(u?int\d+|int|long|float|double|half|bool)\(\)$")
# ``update_(x.to_dict())`` of a record or collection over no elements: the peer makes a
# tensor of shape ``[0]`` of the empty list its own Python value gives, and refuses it
# (five families, program 8,009, inv18a).
_VALUES_OVER_NONE = re.compile(
    r"^batch dimension mismatch, got self\.batch_size=torch\.Size\(\[[\d, ]*\b0\b[\d, ]*\]\) "
    r"and value\.shape=torch\.Size\(\[(?:1, )*0\]\)"  # ([1, 0] under [1, 0, 1, 2]: its
    # list nests as the batch up to its 0; program 16,419,260 L12 of entries,index,combine)
    # (or its check of a tensor against those rows: ``x[None, mask] = rows.to_dict()`` of
    # a lazy stack's dense copy with an empty mask, program 15,840,636, fz28e)
    r"|^the Tensor \w+ has shape torch\.Size\(\[0\]\) which is incompatible with the "
    r"batch-size torch\.Size\(\[[\d, ]*\b0\b[\d, ]*\]\)"
)

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
    "'torch.device' and 'torch.device'",  # the same, to attrs()' device (15,965,586, fz30h)
    "can't convert np.ndarray of type numpy.object_",  # |= of from_csv's values (15,964,143)
    "'NoneType' object has no attribute",  # a record's missing key taken for a field
    "Only NestedKeys are supported",  # a tensor taken for a mapping of keys (set_, update_)
    "iteration over a 0-d tensor",  # the same, for a 0-d tensor
    "cannot convert dictionary update sequence",  # the same, in update_
    "object has no attribute '_get_str'",  # a nested dict written into a tensor (update_)
    "'Tensor' object has no attribute '_get_non_tensor'",  # get_non_tensor through a tensor
    "Cannot set the attribute '_device'",  # memmap of a lazy stack of records
    "cannot mmap an empty file",  # memmap_ of an entry with no elements
    "Failed to stack tensors within a tensordict",  # a lazy stack's members stacked first
    "Cannot call `view` on a lazy stacked tensordict",  # a view that mixes no members
    'missing 1 required positional arguments: "repeats"',  # repeat of a record, lazy stack
    "Boolean value of Tensor with no values is ambiguous",  # torch.where over no elements
    "Integers to negative integer powers are not allowed",  # its fused kernel, not torch.pow
    "devices differ, got None and",  # a cpu collection stacked with one of no device
    "devices differ, got cpu and None",  # a list field of a loaded lazy stack's rows
    "stack expects a non-empty TensorList",  # a record's indexed write into no elements
    "Cannot get the non-unique data of a NonTensorStack",  # load_state_dict of value stacks
    "too many indices for tensor of dimension",  # a number written into a value stack
    "'Tensor' object has no attribute 'is_empty'",  # the same, lazy[None, i] = 0 (fz17b)
    "items cannot be empty",  # permute / unsqueeze of Python values over no elements
    "list_of_tensordicts cannot be empty",  # expand of a lazy stack of no members
    "'NoneType' object is not iterable",  # update_at_ of a lazy stack's rows of no member
    # holding a Python value (program 2,400,281 of index,entries, fuzz35b; inv19a)
    "is too big for batch size",  # repeat_interleave(0) along a lazy stack's later dim
    "broadcast a dimension with negative length",  # a tensor against a ragged stack's -1
    "zip() argument 2 is shorter than argument 1",  # flatten of a ragged lazy stack
    "zip() argument 2 is longer than argument 1",  # masked_fill(_) of one (10,950,376)
    "Cannot set the attribute 'stack_dim'",  # cat of a lazy stack of records (10,950,919)
    "unexpected keyword argument 'stack_dim'",  # the same, its record class given it (10,903,873)
    "'list' object has no attribute 'shape'",  # a list field's values taken for a tensor
    "object has no attribute '_tensordict'",  # a stack of records, a value a tensor in some
    "Modifying the batch size of a lazy representation",  # its own value stack resized
    "Cannot update a NonTensorDataBase",  # update_ of values with a NonTensorStack (2 wordings)
    "out must be a LazyStackedTensorDict instance",  # its record over a lazy stack as out=
    "object has no attribute 'squeeze'",  # a number written into a record (rec[None] = 1)
    "length should not be negative",  # a write into a ragged lazy stack: its -1 taken as a size
    "with size -1",  # the same, an index checked against it (any dim: program 65,451)
    "but got sum([-1]) = -1",  # tensor_split(1) along a ragged dim (8,405,363, fz18a)
    "but got split_sizes=[-1]",  # the same, a stack of its lazy stacks (13,810,130, fz24e)
    # a comparison with a tensor of a collection holding a lazy stack (its members' 0-d
    # leaves): `+` and the stack alone answer (program 24,629, inv18b)
    "expand_as_right requires the destination tensor to have at least as many",
    "Expected all inputs to be TensorDictBase instances",  # a value or a tensor by member
    "a NonTensorStack cannot be empty",  # pad of a Python value to no elements
    '"flip_cpu" not implemented',  # a lazy stack's uint16 members stacked to flip
    '"scatter_gather_tensor_cpu" not implemented',  # uint16 gather at an index out of bounds
    "unexpected keyword argument 'tolist_first'",  # tolist of a lazy stack of records
    # a write at a mask: into a lazy stack of lazy stacks of a TensorDictParams' chunks
    # holding a Python value (10,801,264), into a memory-mapped record's value stack
    # (10,801,208; of index,combine,shape,entries --length 6, inv20b)
    "Failed to reconstruct the lazy stack of tensordicts with class",
    "Cannot update a leaf NonTensorDataBase from a memmaped parent",
    "is out of bounds for the stack dim of size 0",  # state_dict of values all empty lists
    "'Tensor' object has no attribute 'batch_size'",  # a lazy entry: tensor and collection
    "'Tensor' object has no attribute '_set_non_tensor'",  # a value under a tensor (left46a)
    '"clamp_min_scalar_cpu" not implemented for',  # maximum of bool entries, as clamp_min
    '"clamp_max_scalar_cpu" not implemented for',  # minimum of bool entries, as clamp_max
    "refer to a single memory location",  # x[i] = x[i].to_dict(): its rebuilt value overlaps
    "upper bound and lower bound inconsistent with step sign",  # tile of ragged values
    "cannot update stacked tensordicts with different shapes",  # a lazy stack: a value
    "is not supported within NonTensorStack.update",  # update_ of values from to_dict()
    "Non-tensor batch sizes must match outside",  # cat: a squeezed record's value kept its dims
    "the unspecified dimension size -1 can be any value",  # roll of a ragged stack over none
    "Autograd not support dtype",  # math on a TensorDictParams of parameters and int buffers
    "'bool' object has no attribute 'squeeze'",  # record[None] = True, no batch dims
    "object has no attribute '_set_tuple'",  # a file's set / set_ through a dataset
    # a write into no elements of a lazy stack of one record (10,813,522, inv20e)
    "torch.cat(): expected a non-empty list of Tensors",
    "object has no attribute '_metadata'",  # load_state_dict of a TensorDictParams' clone
    "not supported between instances of 'str' and 'tuple'",  # its KeyError's sorted keys
    "and td[i].batch_size=torch.Size([0])",  # transpose of a value stack over no elements
    "refine_names: cannot coerce TensorDict names",  # stack: a value node kept a flattened name
    '"add_stub" not implemented for',  # its clone: _foreach_add(0) of uint16/32/64 tensors
)


_NONE_NESTED = re.compile(r"^result((?:\['[^']*'\])+): peer py \('NoneType', None\), tclass ")


def _nested_without_leaves(value: Any, line: str) -> bool:
    """Whether a detail line says the peer's arithmetic gave ``None`` for a nested
    collection (a record's field) that tclass's result holds without leaves."""
    found = _NONE_NESTED.match(line)
    if found is None:
        return False
    node = value.get(key_path(found.group(1)))
    keys = getattr(node, "keys", None)
    return keys is not None and not list(keys(True, True))


def _read_fails_inside(value: Any, line: str) -> bool:
    """Whether reading the entry a detail line names (``result['n']['s']: peer error``)
    from the peer's ``value`` fails inside it (``_PEER_INTERNAL``)."""
    found = re.match(
        r"result((?:\[1\]\[\d+\]|\.<members>\[0\]\[\d+\])*)((?:\['[^']*'\])+): "
        r"(?:peer error \(|error: peer )",
        line,
    )
    if found is None:
        return False
    try:  # an item of a tuple, or a lazy stack's member
        for item, member in re.findall(r"\[1\]\[(\d+)\]|\.<members>\[0\]\[(\d+)\]", found.group(1)):
            value = value[int(item)] if item else value.tensordicts[int(member)]
        value.get(key_path(found.group(2)))
    except Exception as error:  # noqa: BLE001  (the peer's error is the point)
        return any(text in str(error) for text in _PEER_INTERNAL)
    return False


_NO_KEYS_LINE = re.compile(r"^result((?:\[1\]\[\d+\])*): keys: peer \[\], tclass \['")


def _keys_lost_over_no_elements(line: str, theirs: Any, ours: Any) -> bool:
    """The keys of a result (or an item of a tuple of them) over no elements that the
    peer's has none of, where tclass's keeps its source's: beside its entries that fail
    to read (a lazy stack of lazy stacks of no members: ``tensor_split`` of a lazy stack
    of lazy stacks into a piece of size 0, program 15,826,917 of
    methods,index,shape,combine --length 12; its dense stack's piece keeps the keys)."""
    found = _NO_KEYS_LINE.match(line)
    if found is None:
        return False
    for index in re.findall(r"\[1\]\[(\d+)\]", found.group(1)):
        theirs, ours = theirs[int(index)], ours[int(index)]
    size = getattr(theirs, "batch_size", None)
    return size is not None and size.numel() == 0 and not list(theirs.keys())


# an entry with no elements that torch.logsumexp(t, dim=()) reduces whole
_EMPTY_REDUCED_WHOLE = re.compile(
    r": peer Tensor\[([\w.]+), shape \[\]\], tclass Tensor\[\1, shape \[[\d, ]*\b0\b[\d, ]*\]\]$"
)
# pad_sequence of a named collection holding a MetaData: the peer gives the padded value
# node the names of the unpadded dims ("pad_sequence failed for key s"; tclass pads it as
# a tensor, no names: 15,991,411 L12 of features,index,shape,combine, fz30b)
_PAD_NAMES_INSIDE = "the length of the dimension names must equate the tensordict batch_dims"
_BROKEN_SIZE = re.compile(r"^result\.(batch_size|names): peer ")
_LAZY_INSTEAD = re.compile(
    r"^result\.kind: peer 'LazyStackedTensorDict', tclass '\w+'$"
    r"|^result\.<members>: peer \d+ \(.*, tclass None$"
)


def _stacked_lazily_instead(finding: Finding, line: str, theirs: Any, ours: Any) -> bool:
    """``maybe_dense_stack`` of collections with the same keys and batch sizes whose
    entries the peer fails to stack inside (an empty value stack it keeps at ``[0]`` in a
    ``clone()``): its lazy stack, whose entries then fail to read, where tclass's is the
    dense stack (program 16,022,937 of features,index,shape,combine L8, fz30b)."""
    if finding.step.op != "maybe_dense_stack" or _LAZY_INSTEAD.match(line) is None:
        return False
    members = list(getattr(theirs, "tensordicts", ()))
    if not members or getattr(ours, "_is_lazy", True):
        return False
    first = members[0]
    return all(
        set(m.keys(True, True)) == set(first.keys(True, True)) and m.batch_size == first.batch_size
        for m in members
    )


_ZERO_DIM_UNBOUND = "Dimension specified as 0 but tensor has no dimensions"


def _chain(error: BaseException | None) -> list[BaseException]:
    """``error`` and the errors it was raised from: the peer's ``_InplaceWriteError`` of an
    indexed write wraps the one its member's ``update_`` raised (program 3,496 of
    index,shape,combine: ``x[...] = x[-2, -1].clone()`` of a lazy stack of lazy stacks)."""
    found: list[BaseException] = []
    while error is not None and len(found) < 8:
        found.append(error)
        if type(error).__name__ != "_InplaceWriteError":
            break
        error = error.__cause__ or error.__context__
    return found


def _peer_fails_inside(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The peer raised from inside (see ``_PEER_INTERNAL``), or returned ``None`` for an
    operation on a collection without entries, or cannot read the Python values of a
    stack of members on a device and of none, or returned a result whose entries fail to
    read (its batch size and names wrong with them), or one without batch dims
    (``to_padded_tensor`` of a ragged lazy stack without leaves), where tclass answers.
    ``fill_`` of an expanded ragged lazy stack
    (which the peer's ``expand`` keeps lazy): the peer copies a full tensor into each
    member's expanded one, torch's overlap error, where it fills an expanded TensorDict
    and torch an expanded tensor (program 10,601,418 of the six families, fz20b)."""
    if finding.kind in ("peer-raises", "family"):
        if finding.step.op == "logsumexp" and "doesn't match the broadcast shape" in str(
            peer.error
        ):
            return True  # torch.logsumexp(t, dim=()), for a collection without batch dims
        if _rebuilt_with_more_dims(finding, peer) or _viewed_with_extra_dims(finding, peer, mine):
            return True
        taken_back = finding.step.src.endswith("x.update_(x.to_dict())") or (
            finding.step.op == "setitem" and finding.step.src.endswith(".to_dict()")
        )  # (``x[i] = x[i].to_dict()`` over no elements: program 71,025 of five families)
        if taken_back and _VALUES_OVER_NONE.search(str(peer.error)):
            return True  # its own values over no elements, a list of no dims (program 8,009)
        if _value_dropped_by_apply(finding, peer, mine):
            return True
        if any(text in str(peer.error) for text in _NODE_LEFT_AT_0):
            repeated = mine.error is None and 0 in getattr(mine.value, "batch_size", ())
            return any(
                ".repeat_interleave(0," in line
                or (repeated and (".repeat(" in line or ".repeat_interleave(" in line))
                or (mine.error is None and _CAST_OVER_NONE.match(line) is not None)
                for line in finding.lines
            )
        if finding.step.op == "setitem" and _ZERO_DIM_UNBOUND in str(peer.error):
            # a 0-d value at a lazy stack's tensor index: the peer unbinds it; torch writes
            # it, or refuses its dtype with a RuntimeError, as tclass's InPlaceWriteError
            return mine.error is None or isinstance(mine.error, RuntimeError)
        if finding.step.op == "pad_sequence" and _PAD_NAMES_INSIDE in str(peer.error.__cause__):
            return mine.error is None  # its value node padded with the collection's names
        if finding.step.op == "fill_" and any(_OVERLAP in str(e) for e in _chain(peer.error)):
            return any(".expand" in line for line in finding.lines)  # see the docstring
        return any(text in str(error) for error in _chain(peer.error) for text in _PEER_INTERNAL)
    if finding.kind == "result" and finding.step.op == "logsumexp":  # the same, no elements
        return all(_EMPTY_REDUCED_WHOLE.search(line) for line in finding.detail)
    if finding.kind == "result" and any(
        ": peer error (" in d or ": error: peer " in d for d in finding.detail
    ):
        # the peer's result fails to read; its batch size and names show it broken too
        return all(
            _read_fails_inside(peer.value, line)
            or _BROKEN_SIZE.match(line)
            or _keys_lost_over_no_elements(line, peer.value, mine.value)
            or _stacked_lazily_instead(finding, line, peer.value, mine.value)
            for line in finding.detail
        )
    if finding.kind == "alias" and ": error: peer " in finding.detail[0]:
        return all(_read_fails_inside(peer.value, line) for line in finding.detail)
    if finding.kind == "result" and peer.snap == ("py", "NoneType", None):
        keys = getattr(mine.value, "keys", None)  # no leaf (empty nested collections)
        return keys is not None and not list(keys(True, True))
    if finding.kind == "result" and _pow_as_torch(finding):
        return True
    if finding.kind == "result" and finding.step.family == "math":  # the same, nested
        if all(_nested_without_leaves(mine.value, line) for line in finding.detail):
            return True
    if finding.kind == "tclass-raises" and finding.step.family in ("shape", "math"):
        # (math: a reduction along a ragged stack's stack dim, program 14,611, inv18b)
        peer_size = getattr(peer.value, "batch_size", ())  # a shape no TensorDict can have
        return type(peer.value).__name__ == "TensorDict" and -1 in peer_size
    if finding.kind == "result" and finding.step.op == "to_padded_tensor":
        return _padded_without_leaves(peer.value, mine.value)
    if finding.kind == "result" and _one_member_resolved(finding, peer.value, mine.value):
        return True
    if finding.kind == "result" and _ragged_made_dense(peer.value, mine.value):
        return all(any(p.search(line) for p in _RAGGED_KEPT) for line in finding.detail)
    return False


# the keys the peer's stack (``x < y``, ``x + y``...) finds in one operand only
_KEYS_MISMATCH = re.compile(
    r"keys in tensordicts mismatch\. The (?:first|second) TD has keys (\{.*\}) that the"
    r" (?:second|first) does not have"
)


def _value_dropped_by_apply(finding: Finding, peer: Any, mine: Any) -> bool:
    """An op between a collection over no elements and its ``apply(fn)``: the peer's
    ``apply`` drops a Python value there (a stack of no members, which it maps to
    nothing), so the op finds the key in one operand only (either, by the peer's wording:
    program 13,800,289 of the six families, fz24e); tclass's ``apply`` keeps the value and
    the op answers (program 10,102,854, fz19b)."""
    match = _KEYS_MISMATCH.search(str(peer.error))
    if match is None or ".apply(" not in finding.step.src or mine.error is not None:
        return False
    result = mine.value
    if not is_collection(result) or result.batch_size.numel() != 0:
        return False
    try:
        keys = ast.literal_eval(match.group(1))
        return all(not isinstance(result.get(key), torch.Tensor) for key in keys)
    except (ValueError, SyntaxError, KeyError, TypeError):
        return False


def _padded_without_leaves(peer: Any, mine: Any) -> bool:
    """``to_padded_tensor`` of a ragged lazy stack without leaves: the peer's TensorDict
    has no batch dims (it infers them from the leaves it pads, and has none), tclass,
    with no nested tensor to pad, keeps the stack (program 68,631 of shape,combine)."""
    if type(peer).__name__ != "TensorDict" or peer.batch_size != ():
        return False
    if type(mine).__name__ != "LazyStackedTensorDict" or -1 not in mine.batch_size:
        return False
    return not list(peer.keys(True, True)) and not list(mine.keys(True, True))


_POWERED = re.compile(r": values differ: peer (.*), tclass (.*)$")
_NUMBER = re.compile(r"-?inf|nan|-?[\d.]+(?:e[-+]?\d+)?")


def _last_bit(theirs: str, ours: str) -> bool:
    """Whether two printed finite numbers differ by about a float32's last bit."""
    try:
        a, b = float(theirs), float(ours)
    except ValueError:
        return False
    return a != b and abs(a - b) <= 2.0**-22 * max(abs(a), abs(b))


def _pow_as_torch(finding: Finding) -> bool:
    """``td ** torch.tensor(e)`` (or ``td.pow(torch.tensor(e))``, program 4,834 of math,
    inv19a): tclass's values are ``torch.pow``'s, the peer's fused
    kernel differs at infinities (``-inf ** 0.5``: ``inf`` in torch, ``nan`` in the
    peer) and in the last bit of a float32 (the peer's is ``t ** 0.5``, a Python number's
    kernel: program 8,501,629 of records,math); every other value the same."""
    if finding.step.op not in ("**", "pow") or "torch.tensor(" not in finding.step.src:
        return False
    for line in finding.detail:
        found = _POWERED.search(line)
        if found is None:
            return False
        theirs, ours = (_NUMBER.findall(side) for side in found.groups())
        if len(theirs) != len(ours) or not all(
            a == b or (a == "nan" and b in ("inf", "-inf")) or _last_bit(a, b)
            for a, b in zip(theirs, ours)
        ):
            return False
    return True


_MISMATCH = re.compile(
    r"got self\.batch_size=torch\.Size\((\[[\d, ]*\])\) and "
    r"value\.shape=torch\.Size\((\[[\d, ]*\])\)"
)


def _broadcast_as_torch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``update_`` / ``set_`` of a tensor whose leading dims broadcast to the batch size
    as torch broadcasts them (``[1]`` into a batch of ``[0]``): written in tclass, where
    the peer raises its batch-size mismatch."""
    if finding.kind != "peer-raises" or finding.step.op not in ("update_", "set_"):
        return False
    found = _MISMATCH.search(str(peer.error))
    if found is None:
        return False
    batch, shape = (json.loads(group) for group in found.groups())
    try:
        return list(torch.broadcast_shapes(tuple(shape[: len(batch)]), tuple(batch))) == batch
    except RuntimeError:
        return False
