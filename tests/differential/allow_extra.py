"""The rules of the deliberate differences (``allowlist.ENTRIES``) that the ``extra``
family's module functions meet (``merge_tensordicts``...; ``ops_extra.py``). Each rule
takes a finding and says whether the README bullet of its entry covers it."""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import TYPE_CHECKING, Any

import torch

from .allow_names import _pad_sequence_unnamed
from .compare import VALUE_KINDS, is_collection, key_path

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts

# (a lazy stack's members too: ``result.<members>[0][1]``)
_ORDER = re.compile(
    r"^result((?:\['[^']*'\]|\.<members>\[0\]\[\d+\])*): key order: peer (\[.*\]), "
    r"tclass (\[.*\])$"
)


_ORDERED_LIKE_EMPTY = ("merge_tensordicts", "unpad_sequence")
# steps whose result lists the keys in their input's order, and the text of that input
_ORDER_CARRIED = {
    "make_tensordict": "x.to_dict()",
    "from_dict": "x.to_dict()",
    "arrow": "L.to_arrow(x)",
    "state_dict": "x.state_dict()",
    # (a merge of records: 17,141,859 L10 of extra,records, 17,145,353 L10 of
    # extra,features, fz34b)
    "to_dict": "x.to_dict()",
    "from_any": "x.to_dict()",  # (17,155,308 L10 of extra,entries, fz34b)
    "set_grad": "x.to_tensordict()",
}


def _merged_in_order_of_holders(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``merge_tensordicts``: tclass lists the keys in the order the inputs first hold
    them, where the peer lists the first input's nested collections and Python values
    first (its result starts as the first input's ``empty(recurse=True)``), then the
    tensors and nested collections of all, then the later inputs' Python values: the
    tensors keep their order in both (fz31b: the ``extra`` family, 16,491,000-16,491,399
    L4). ``unpad_sequence(pad_sequence(...))`` alike: tclass's rows keep the input's key
    order, the peer's ``pad_sequence`` starts from ``empty(recurse=True)`` too and sets
    the leaves in the order of a set of their keys (og32a: programs 16,491,010 /
    17,000,114 L4); ``make_tensordict(x.to_dict())`` of a merge's result, which
    carries its order (programs 16,491,040 / 16,491,053 L4), and ``TensorDict.from_dict(
    x.to_dict())``, ``from_arrow(to_arrow(x))`` and ``state_dict()`` alike (17,062,061 L8
    of extra,entries; 17,060,561 L6 of extra; 17,061,572 L8 of extra,records; fz33b). A
    merge whose first
    input holds a locked empty node shows that node's lock too (``_merge_shares_no_empty_node``:
    17,062,027 L8 of extra,entries, fz33b). Unpadded rows show the unnamed dims of
    ``pad_sequence``'s result too (``_pad_sequence_unnamed``: 17,181,644 L8 of
    extra,index, og34a)."""
    if finding.kind == "result" and finding.step.op == "keys":
        return _keys_listed_in_merge_order(finding, peer, mine)
    if finding.kind == "result" and finding.step.op == "items":
        return _items_listed_in_merge_order(finding, peer, mine)
    carried = _ORDER_CARRIED.get(finding.step.op)
    if finding.kind != "result" or (carried is None and finding.step.op not in _ORDERED_LIKE_EMPTY):
        return False
    if carried is not None and not (
        carried in finding.step.src
        and any("L.merge_tensordicts(" in line for line in finding.lines[:-1])
    ):
        return False
    named = [line for line in finding.detail if ".names: peer [" in line]
    if named and finding.step.op == "unpad_sequence":  # the rows of an unnamed pad too
        if not _pad_sequence_unnamed(dataclasses.replace(finding, detail=named), facts, peer, mine):
            return False
        finding = dataclasses.replace(finding, detail=[x for x in finding.detail if x not in named])
    locked = [line for line in finding.detail if _MERGED_NODE_LOCKED.match(line)]
    if locked:
        shared = dataclasses.replace(finding, detail=locked)
        if finding.step.op != "merge_tensordicts" or not _merge_shares_no_empty_node(
            shared, facts, peer, mine
        ):
            return False
        finding = dataclasses.replace(
            finding, detail=[x for x in finding.detail if x not in locked]
        )
    lines = _key_lines(finding.detail, _ORDER, mine)
    if lines is None:
        return False
    unordered = finding.step.op == "unpad_sequence"  # the peer's walks a set of keys
    for theirs, ours, node in lines:
        tensors = [key for key in ours if isinstance(_entry_of(node, key), torch.Tensor)]
        if finding.step.op == "state_dict":  # dotted keys: the order of the top level's
            tensors = [key for key in ours if "." not in key]
            theirs, ours = (list(dict.fromkeys(k.split(".")[0] for k in s)) for s in (theirs, ours))
        if sorted(theirs) != sorted(ours):
            return False
        if not unordered and [k for k in theirs if k in tensors] != tensors:
            return False
    return bool(finding.detail)


def _keys_listed_in_merge_order(finding: Finding, peer: Any, mine: Any) -> bool:
    """``list(x.keys(...))`` of a merge's result: the same keys in the merge's order
    (17,142,364 L10 of extra,entries, fz34b)."""
    if not any("L.merge_tensordicts(" in line for line in finding.lines[:-1]):
        return False
    theirs, ours = peer.value, mine.value
    if not isinstance(theirs, list) or not isinstance(ours, list) or theirs == ours:
        return False
    same = sorted(map(repr, theirs)) == sorted(map(repr, ours))
    return same and all(_KEY_AT.match(line) for line in finding.detail)


def _items_listed_in_merge_order(finding: Finding, peer: Any, mine: Any) -> bool:
    """``list(x.items(...))`` of a merge's result: the same pairs in the merge's order
    (og34l: 17,270,599 L10 of extra,entries)."""
    if not any("L.merge_tensordicts(" in line for line in finding.lines[:-1]):
        return False
    theirs, ours = peer.value, mine.value
    if not isinstance(theirs, list) or not isinstance(ours, list) or len(theirs) != len(ours):
        return False
    if not all(isinstance(pair, tuple) and len(pair) == 2 for pair in theirs + ours):
        return False
    by_key = {repr(key): value for key, value in ours}
    if sorted(map(repr, (key for key, _ in theirs))) != sorted(by_key):
        return False
    for key, value in theirs:
        other = by_key[repr(key)]
        if type(value).__name__.removeprefix("Peer") != type(other).__name__:
            return False
        if isinstance(value, torch.Tensor) and not torch.equal(value, other):
            return False
    return all(_ITEM_AT.match(line) for line in finding.detail)


_ITEM_AT = re.compile(r"^result\[\d+\]\[\d+\]\[\d+\](?:\[\d+\])?: ")
_KEY_AT = re.compile(r"^result\[\d+\](?:\[\d+\])?: ")
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
            node = mine.value.get(key_path(found.group(1)))
        except KeyError:
            return False
        if not _is_node(node) or not node.is_empty():
            return False
    return bool(finding.detail)


# the peer's merge of a lazy stack sets its members' entries into the stack it made with
# ``empty(recurse=True)``, which refuses them
_LAZY_MERGE_REFUSED = re.compile(
    r"^batch dimension mismatch, got self\.batch_size=torch\.Size\(\[[-\d, ]*\]\) and "
    r"value\.shape=torch\.Size\(\[[\d, ]*\]\) for key "
)


# a lazy stack first: a lazy stack of the merged members; a lazy stack later: a TensorDict
_MERGED_KINDS = ("TensorDict", "LazyStackedTensorDict")


def _merge_of_lazy_fails_inside(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``merge_tensordicts`` with a lazy stack holding tensors: the peer fails inside on
    the entries of its own members ("batch dimension mismatch" of a member's entry
    against the stack's batch size), where tclass merges member by member into a lazy
    stack (the lazy stack first) or the stacked entries into a TensorDict (fz31b: the
    ``extra`` family; a ragged stack's batch size, -1 at its ragged dim, after
    ``unpad_sequence``: 17,064,359 L8 of extra,math, fz33b); where the members' entries
    fit the stack's batch size, it gives values of one dim less instead
    (``_member_entries_set_whole``)."""
    if finding.step.op != "merge_tensordicts" or mine.error is not None:
        return False
    data = getattr(mine.value, "_tensordict", mine.value)  # (a record's: 17,072,842, fz33b)
    if type(data).__name__ not in _MERGED_KINDS:
        return False
    # (unpad_sequence: 16,435,153 L4; from_modules(..., lazy_stack=True): 17,122,564 L8)
    # (to_lazystack: 17,146,940 L10 of extra,shape, fz34b)
    made_lazy = ("L.lazy_stack(", "L.unpad_sequence(", "lazy_stack=True)", ".to_lazystack(")
    if not any(text in " ".join(finding.lines) for text in made_lazy) and facts.kind != "lazy":
        return False
    if finding.kind == "result":
        return _member_entries_set_whole(finding, mine)
    return finding.kind == "peer-raises" and _LAZY_MERGE_REFUSED.match(str(peer.error)) is not None


# ``result.<members>[0][0]['d']: peer Tensor[torch.uint8, shape [2]], tclass Tensor[...]``
_SHAPES = re.compile(
    r"^result(?:\['[^']*'\]|\.<members>\[0\]\[\d+\])*: peer (?P<k>(?:MemoryMapped)?)Tensor"
    r"\[([\w.]+), shape \[([\d, ]*)\]\], tclass (?P=k)Tensor\[([\w.]+), shape \[([\d, ]*)\]\]$"
)


def _member_entries_set_whole(finding: Finding, mine: Any) -> bool:
    """Where a member's entry of the lazy stack starts with the stack's batch size, the
    peer's merge sets it whole as the stack's entry, which its members split: each of
    the peer's tensors is tclass's without its first dim (og32a: program 17,000,312 L4;
    a memory-mapped lazy stack's, og33k: 17,122,088 L8 of extra,features)."""
    if type(mine.value).__name__ != "LazyStackedTensorDict":
        return False
    dim = mine.value.stack_dim  # (a stack along dim 1: 17,063,672 L8 of extra,index, fz33b)
    cut: list[list[int]] = []  # each member's tensor without the stack's first dim
    for line in finding.detail:
        if _RAGGED_WHOLE.match(line):  # members' tensors of different shapes (below)
            continue
        found = _SHAPES.match(line)
        if found is None or found[2] != found[4]:
            return False
        theirs, ours = ([int(n) for n in re.findall(r"\d+", side)] for side in found.group(3, 5))
        cut.append(ours[:dim] + ours[dim + 1 :])
        # (members of different shapes: the peer gives each the first one's part,
        # 17,144,478 L10 of extra,math, fz34b)
        if theirs not in (cut[-1], cut[0]):
            return False
    return bool(cut)


# the entry read whole from tclass's lazy stack whose members' tensors differ in shape
_RAGGED_WHOLE = re.compile(
    r"^result\['[^']*'\]: peer Tensor\[[^\]]*\]\], tclass error \('ValueError'"
)


_LOSSES = ("l1_loss", "mse_loss", "smooth_l1_loss")
# a keys line (of the losses, of the merge)
_LOSS_KEYS = re.compile(r"^result((?:\['[^']*'\])*): keys: peer (\[.*\]), tclass (\[.*\])$")
# and of a lazy stack's members (a merge of lazy stacks: 17,072,672 L10 of all families, fz33b)
_NODE_KEYS = re.compile(
    r"^result((?:\['[^']*'\]|\.<members>\[0\]\[\d+\])*): keys: peer (\[.*\]), tclass (\[.*\])$"
)
_EMPTY_NODE_MISSING = re.compile(r"""^'key "([^"]+)" not found in TensorDict with keys """)


def _loss_keeps_values(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``F.l1_loss`` / ``mse_loss`` / ``smooth_l1_loss`` of collections holding Python
    values: tclass's result keeps the values (as its math ops do), the peer's loss drops
    them; every key only tclass lists holds a Python value, or a nested collection of
    Python values only (og31g: the ``extra`` family, programs 16,491,030 / 16,491,285 L4)."""
    if finding.kind != "result" or finding.step.op not in _LOSSES:
        return False
    lines = _key_lines(finding.detail, _LOSS_KEYS, mine)
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
    detail: list[str], pattern: re.Pattern[str], mine: Any
) -> list[tuple[list[str], list[str], Any]] | None:
    """Each of a finding's ``detail`` lines matched by ``pattern`` (a node's path, then
    the peer's and tclass's key lists) as ``(theirs, ours, tclass's node)``; None where a
    line does not match or cannot be read."""
    out = []
    for line in detail:
        found = pattern.match(line)
        if found is None:
            return None
        try:
            theirs, ours = (ast.literal_eval(side) for side in found.group(2, 3))
        except (ValueError, SyntaxError):
            return None
        node = _node_at(mine.value, found.group(1))
        if node is None:
            return None
        out.append((theirs, ours, node))
    return out


_STEP = re.compile(r"\['([^']*)'\]|\.<members>\[0\]\[(\d+)\]")


def _node_at(value: Any, path: str) -> Any:
    """The node of ``value`` at a detail line's ``path`` (``['k']`` a key,
    ``.<members>[0][i]`` a lazy stack's member ``i``); None where it cannot be read."""
    node = value
    for key, member in _STEP.findall(path):
        try:
            node = node.tensordicts[int(member)] if member else node.get(key)
        except (AttributeError, IndexError, KeyError, RuntimeError):
            return None
    return node


# ``result['n']['m'].batch_size: peer (0, 3), tclass (0, 3, 3)`` (and ``.names``)
_NODE_SHAPE = re.compile(r"^result((?:\['[^']*'\])+)\.(batch_size|names): peer (.*), tclass (.*)$")
# ``result['inner']: peer py ('NoneType', None), tclass Inner(batch_size=[2], keys=[...])``,
# ``result['label']: peer 'NoneType', tclass 'str'`` / ``peer None, tclass 'a'``
_NODE_FOR_NONE = re.compile(
    r"^result((?:\['[^']*'\])+): peer (?:py \('NoneType', None\)|'NoneType'|None), tclass "
)


_ATTRS_MERGED = re.compile(
    r"^result(?:\['\w+'\])+(?:\.kind: peer 'TensorDict', tclass 'TensorAttrs'"
    r"|\['tgt_\w+'\]: peer nontensor \(\('value', \('py', (?P<v>.*)\), \[\]\), "
    r"\('py', (?P=v)\)\), tclass py \((?P=v)\)"
    r"|\['tgt_shape'\]: peer nontensor \(\('value', \('size', (?P<s>\[[\d, ]*\])\), \[\]\), "
    r"\('size', (?P=s)\)\), tclass size \((?P=s),\)"
    r"|\['tgt_shape'\]: peer tuple of (?P<n>\d+), tclass size \(\[(?P<d>[\d, ]*)\],\))$"
)


def _merge_keeps_attrs(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``merge_tensordicts`` of ``attrs()`` results (after a loss of them, their batch
    size ``[]``): tclass keeps each node a ``TensorAttrs`` holding its shape as a
    ``torch.Size``, where the peer's merge rebuilds some as TensorDicts of
    ``NonTensorData`` (the same values) and gives others' shapes as tuples (fz33b:
    program 17,065,358 L8 of extra,features; og33k)."""
    if finding.kind != "result" or finding.step.op != "merge_tensordicts":
        return False
    if ".attrs()" not in "\n".join(finding.lines) or not finding.detail:
        return False
    for line in finding.detail:
        found = _ATTRS_MERGED.match(line)
        if found is None:
            return False
        if found["n"] is not None and int(found["n"]) != len(found["d"].split(",")):
            return False
    return True


def _merge_keeps_later_nodes(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``merge_tensordicts`` of a nested collection that only a later input holds: tclass
    keeps it as that input holds it, where the peer's merge (walking the later inputs'
    leaves into its first input's ``empty(recurse=True)``) drops one without leaves (a
    record's field then reads ``None``; programs 16,435,281 / 16,491,036 L4) and makes one
    with leaves anew under its parent, with the parent's batch size, dropping its own
    extra dims (program 16,435,799 L4); and a Python value that only a later input holds
    under a record (the first input's kind, as in both): tclass keeps it, the peer's
    record reads ``None`` (it adds the later inputs' Python values except under a
    record; program 16,491,068 L4; og32a, the ``extra`` family)."""
    if finding.kind != "result" or finding.step.op != "merge_tensordicts" or mine.error:
        return False
    shaped: set[str] = set()
    for line in finding.detail:
        if (found := _NODE_SHAPE.match(line)) is not None:
            if not _own_dims_kept(mine.value, found, peer):
                return False
            shaped.add(found.group(1))
        elif (found := _NODE_FOR_NONE.match(line)) is not None:
            ours = _node_at(mine.value, found.group(1))
            if not _leafless(ours) and not _value_under_record(peer, found.group(1), ours):
                return False
        elif not _leafless_keys_kept(line, mine):
            return False
    return bool(finding.detail)


def _value_under_record(peer: Any, path: str, ours: Any) -> bool:
    """tclass's entry at ``path`` is a Python value and the peer's node holding it a
    record."""
    parent = _node_at(peer.value, path.rsplit("[", 1)[0])
    if not dataclasses.is_dataclass(parent) or ours is None:
        return False
    return not isinstance(ours, torch.Tensor) and (
        not is_collection(ours) or type(ours).__name__ in VALUE_KINDS
    )


def _own_dims_kept(value: Any, found: re.Match[str], peer: Any) -> bool:
    """A ``batch_size`` / ``names`` line of a nested node whose batch size in tclass
    extends the peer's, the peer's being that of the node's parent in tclass."""
    node = _node_at(value, found.group(1))
    parent = _node_at(value, found.group(1).rsplit("[", 1)[0])
    if not _is_node(node) or not _is_node(parent):
        return False
    try:
        theirs, ours = (ast.literal_eval(side) for side in found.group(3, 4))
    except (ValueError, SyntaxError):
        return False
    if found.group(2) == "names":
        return len(theirs) == parent.batch_dims and len(ours) == node.batch_dims
    return tuple(theirs) == tuple(parent.batch_size) and tuple(ours) == tuple(node.batch_size)


def _leafless_keys_kept(line: str, mine: Any) -> bool:
    """A ``keys`` line where tclass lists the peer's keys and more, each of them a nested
    collection without leaves."""
    lines = _key_lines([line], _NODE_KEYS, mine)
    if lines is None:
        return False
    ((theirs, ours, node),) = lines
    more = [key for key in ours if key not in theirs]
    if not more or any(key not in ours for key in theirs):
        return False
    return all(_leafless(_entry_of(node, key)) for key in more)


def _entry_of(node: Any, key: str) -> Any:
    """``node``'s entry ``key``; a lazy stack's first member's where the stack has no
    dense value for it (a ragged entry); None where it cannot be read."""
    try:
        return node.get(key)
    except (RuntimeError, ValueError, KeyError):
        members = getattr(node, "tensordicts", None)
        return _entry_of(members[0], key) if members else None


def _leafless(node: Any) -> bool:
    """A nested collection holding no tensor and no Python value, at any depth."""
    if not _is_node(node):
        return False
    return all(_leafless(_entry_of(node, key)) for key in list(node.keys()))


_TENSORS_STACKED = re.compile(
    r"^result((?:\['\w+'\])+): peer nontensor \(\('values', \('seq', 'list', \[\('tensor', "
    r".*, tclass Tensor\[torch\.\w+, shape \[[\d, ]*\]\]$"
)


def _tensor_list_stacked(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``make_tensordict(x.to_dict(), batch_size=...)`` (or ``from_dict``) where a value
    stack holds tensors (``x[-1] = x[-1].to_dict()`` wrote a 0-d tensor into a number
    value): tclass stacks the list of tensors of one shape into one tensor, as both
    constructors do (README: "`from_dict` stacks a list of tensors of one shape"), where
    the peer's ``from_dict`` keeps a ``NonTensorStack`` of them (og33j: program
    17,063,957 L8 of extra,index)."""
    if finding.kind != "result" or finding.step.op not in ("make_tensordict", "from_dict"):
        return False
    for line in finding.detail:
        found = _TENSORS_STACKED.match(line)
        if found is None:
            return False
        path = key_path(found[1])
        try:
            theirs, ours = peer.value.get(path).tolist(), mine.value.get(path)
            stacked = torch.stack(theirs)
        except (AttributeError, KeyError, RuntimeError, TypeError):
            return False
        if not isinstance(ours, torch.Tensor) or not torch.equal(stacked, ours):
            return False
    return True
