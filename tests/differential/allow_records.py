"""The rules of the deliberate differences (``allowlist.ENTRIES``) that the records family
(``ops_records.py``) meets: records of the class options, their constructors, their
fields' casts and their lock. Each rule takes a finding and says whether the README
bullet of its entry covers it."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from .allow_common import _later_lines, _result_line
from .allow_fields import _NONE_AS_LIST
from .allow_structure import _RECORD_KIND_LINES, _fields_line
from .compare import entry_at, key_path

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts

# A field's value as tclass keeps it (annotation ``int`` / ``list`` / ``Any``), where the
# peer casts it: a number to a 0-d tensor, a list to a tensor.
_NUMBER_KEPT = re.compile(
    r"\['(n|v|lst)'\](\[\d+\])*: peer Tensor\[torch\.\w+, shape \[[^\]]*\]\], "
    r"tclass (py \('(int|float|bool)', |list of )"
)
# a list kept as one value: a stack or cat of it holds one value where the peer's its items
_LIST_KEPT = re.compile(r"\['lst'\](\[\d+\])*: length: peer \d+, tclass \d+$")
# ``Optional[Tensor]`` under ``autocast``: a list cast to a tensor, where the peer keeps it
# (memory-mapped in a loaded record's folder, as every new tensor of it); read across a
# lazy stack whose other members hold a tensor there, the peer fails inside (it stacks
# the list as a collection: "'Tensor' object has no attribute 'batch_size'")
_OPTIONAL_CAST = re.compile(
    r"\['opt'\](\[\d+\])*: peer (list of \d+|error \('AttributeError', .*\)), "
    r"tclass (MemoryMapped)?Tensor\["
)


# ``from_tensordict`` of a stack of strings into a ``list`` field under ``autocast``: each
# element cast (``list("ab")``), as the constructor casts it, where the peer keeps them.
_ELEMENT_CAST = re.compile(r"\['lst'\](\[\d+\])*: peer py \('str', .*\), tclass list of \d+$")


# ``Optional[Tensor]`` lists of other shapes cast to tensors, read across a lazy stack:
# tclass's HeterogeneousEntryError (a RuntimeError), as the peer's read of ragged tensors
# given there, where the peer returns the lists it kept
_RAGGED_OPTIONAL = re.compile(
    r"^result\['opt'\]: peer list of \d+, "
    r"tclass error \('ValueError', \('ValueError', 'RuntimeError'"
)


# a list kept in an ``Any`` field, read across a lazy stack whose other members hold a
# tensor there: tclass's error naming the members, where the peer stacks its tensors
_LIST_BESIDE_TENSOR = re.compile(r"\['v'\](\[\d+\])*: peer Tensor\[.*?\]\], tclass error \(")


# nested empty lists (``to_dict()`` of a value stack over no elements) given to a ``str``
# field through ``from_dict``: kept, where the peer makes them a float tensor; at batch
# size ``[]``, one value cast as the constructor casts it (``str([])``, in both libraries:
# program 3,901,733 of ``--families records``)
_EMPTY_LISTS_KEPT = re.compile(
    r"\['(label|s)'\]: peer Tensor\[torch\.float32, shape \[[^\]]*\b0\]\], "
    r"tclass (list of \d+|py \('str', '\[[\[\], ]*\]'\))$"
)


# ``Auto.from_dict(d)`` of a value stack (a list) in its ``str`` field at batch size
# ``[]``: the string the constructor makes of the list in both libraries; the peer's
# ``from_dict`` skips ``autocast`` and keeps the list.
_STR_OF_LIST = re.compile(r"^result(\.\S+)?\['s'\]: peer list of \d+, tclass py \('str', \"\[")


# ``Auto.from_dict(d)`` of a list in its ``list`` field as long as the first batch dim: one
# value, as the constructor keeps it, where the peer's ``from_dict`` splits it (one item
# per element: program 10,511,424 of ``records``, ``x[1].lst``)
_LIST_SPLIT_BY_PEER = re.compile(r"^result: peer py \('str', .*\), tclass list of \d+$")


def _cast_line(line: str, lines: list[str]) -> bool:
    if _NUMBER_KEPT.search(line):
        return True
    if _EMPTY_LISTS_KEPT.search(line) and re.search(
        r"\.from_dict\(|\.update\(.*\.to_dict\(\)", lines[-1]
    ):
        return True  # (``update(x.to_dict())``: program 3,901,756 of ``--families records``)
    if _LIST_BESIDE_TENSOR.search(line) and re.search(r"\bv=\[", lines[0]):
        return True
    if _LIST_KEPT.search(line) and "Auto" in lines[0]:
        return True
    if _STR_OF_LIST.search(line) and re.search(r"\bAuto\.from_dict\(", lines[-1]):
        return True  # at batch [] the string both constructors make (program 1,924,046)
    if _LIST_SPLIT_BY_PEER.search(line) and re.search(r"\.lst$", lines[-1]):
        return any(re.search(r"\bAuto\.from_dict\(", src) for src in lines[:-1])
    if _RAGGED_OPTIONAL.search(line) and "lazy_stack(" in lines[0]:
        return _OPT_LIST_GIVEN.search(lines[0]) is not None  # (program 1,802,186)
    return bool(_OPTIONAL_CAST.search(line) or _ELEMENT_CAST.search(line)) and "Auto" in lines[0]


_OPT_LIST_GIVEN = re.compile(r"\bAuto\([^()]*(\([^()]*\)[^()]*)*opt=[^=]*\.tolist\(\)")


def _kept_as_annotated(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A number in an ``int`` / ``Optional[int]`` / ``Any`` field kept a Python number, a
    list in a ``list`` / ``Any`` field kept one value (with ``nocast`` too), a list in an
    ``Optional[Tensor]`` field of an ``autocast`` class cast to a tensor; the peer makes
    the number a 0-d tensor and the list a tensor (``from_dict`` bypasses its ``nocast``
    and ``autocast``), and keeps a list given to ``Optional[Tensor]``. A list the peer
    makes a tensor may not fit the batch, nor a number a batch of elements: the peer raises
    there, and an IndexError where it splits a list among the members of a lazy stack along
    a later stack dim (tclass: one item per member, or one value). Nested empty lists
    given to a ``str`` field through ``from_dict`` stay lists (the peer's a float tensor
    with no elements). So a stack of two ``autocast`` records, one given a list for
    ``opt`` and one a tensor, stacks in tclass (both tensors) where the peer's does not
    (a list against a tensor: program 1,926,694 of ``records``), and the field of a lazy
    stack of two whose lists had other shapes raises as the peer's ragged tensors do
    (the peer returns its lists: program 1,802,186). ``update(x.to_dict())`` of a stack
    of stacks of records over no elements: the str field's nested empty lists kept, its
    ``None`` fields unset, where the peer makes lists of them."""
    if finding.kind == "peer-raises":
        message = finding.detail[0]
        if "tensors to stack is incompatible" in message and message.endswith("for key opt."):
            return any(_OPT_LIST_GIVEN.search(line) for line in finding.lines)
        if "Python scalars are stored as 0-dim tensors" in message:
            return re.search(r"for key '(n|v)'", message) is not None
        given = re.search(r"\b(v|lst)( = |=|': |', )\[", " ".join(finding.lines))
        if "Dimension out of range" in message and "lazy_stack(" in finding.lines[0]:
            return given is not None  # its split of a list along a later stack dim
        about = re.search(r"batch[ _](dimension|size)|key '?(v|lst)\b", message)
        return given is not None and about is not None
    if finding.kind == "tclass-raises" and type(mine.error).__name__ == "StackError":
        # a list kept in an ``Any`` field stacked against a tensor there (the peer's
        # tensors: program 1,924,952 of ``records``)
        error = str(mine.error)
        mixed = re.search(r"entry 'v' (holds a Python value|is a tensor) in member", error)
        given = re.search(r"\bNoCast\([^()]*(\([^()]*\)[^()]*)*\bv=\[", " ".join(finding.lines))
        return mixed is not None and given is not None
    if finding.kind in ("tclass-raises", "family") and type(mine.error).__name__ == "CastError":
        return finding.step.op in ("from_dict", "from_tensordict")  # (the constructor's too)
    if finding.kind != "result":
        return False
    if re.search(r"\.update\(.*\.to_dict\(\)", finding.lines[-1]) and any(
        _EMPTY_LISTS_KEPT.search(line) for line in finding.detail
    ):  # beside it, its None fields the peer makes lists (none-field-unset's rule)
        return all(
            _cast_line(line, finding.lines) or _NONE_AS_LIST.match(line) for line in finding.detail
        )
    return all(_cast_line(line, finding.lines) for line in finding.detail)


_DIMS_GIVEN = re.compile(r"^result\.(batch_size: peer \(\), tclass \(|names: peer \[\], tclass \[)")


def _from_dict_batch_dims(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A record class's ``from_dict(d, batch_dims=n)``: ``n`` batch dims, as
    ``TensorDict.from_dict`` gives in both libraries, where the peer's record ignores
    ``batch_dims`` (batch size ``[]``); its fields kept as annotated (above)."""
    if finding.kind != "result" or not re.search(
        r"\w\.from_dict\(.*batch_dims=", finding.lines[-1]
    ):
        return False
    dims = [line for line in finding.detail if _DIMS_GIVEN.match(line)]
    rest = [line for line in finding.detail if not _DIMS_GIVEN.match(line)]
    frozen = "Frozen" in finding.lines[0]
    return bool(dims) and all(
        _cast_line(line, finding.lines) or (frozen and _LOCKED.match(line)) for line in rest
    )


_INFERRED_PAST_EMPTY = re.compile(
    r"^result(\['\w+'\])*\.(batch_size: peer \(\), tclass \(|names: peer \[\], tclass \[)"
    r"|^result(\['\w+'\])+\[\d+\]: length: peer 0, tclass \d+$"
)


def _inferred_past_empty_dicts(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``TensorDict.from_dict`` / ``from_any`` / ``from_tuple`` / ``from_dict_instance``
    (program 15,620,125 of features,index,shape,combine, L8) of a dict (tuple) holding an
    empty dict or collection (at any depth), or ``auto_batch_size_()`` of a collection
    holding an empty one: the batch size inferred from the rest (``batch_dims=n``: ``n``
    dims), where the peer's gives ``[]`` (an empty one first: the key order decides), and
    its nested collections and values with it; or, for ``auto_batch_size_``, the empty
    one's own batch size (fewer dims: standard window programs of ``--seed 0`` after left37);
    ``from_list(rows, auto_batch_size=True)`` of rows holding an empty dict first: the
    peer's batch size is the list's one dim (``_LISTED_PAST_EMPTY``)."""
    if finding.kind != "result" or finding.step.op not in (
        "from_dict",
        "from_any",
        "from_tuple",  # (fz27a: an empty collection first among the values)
        "from_dict_instance",  # (fz28b: an empty nested dict first, its node's [] too)
        "auto_batch_size_",
        "make_tensordict",  # (og31g: make_tensordict(d, auto_batch_size=True), extra L4)
        "from_list",  # (fz34b: rows whose first entry is an empty dict)
    ):
        return False
    if not _holds_empty(mine.value):
        return False
    if finding.step.op == "from_list":
        return "auto_batch_size=True" in finding.step.src and all(
            _LISTED_PAST_EMPTY.match(line) for line in finding.detail
        )
    if finding.detail[0].startswith("result.batch_size: peer (), tclass ("):
        return all(_INFERRED_PAST_EMPTY.match(line) for line in finding.detail)
    first = _NESTED_INFERRED.match(finding.detail[0])
    if first is not None and finding.step.op == "from_dict_instance":
        # a nested dict whose first entry is an empty dict: the peer's node (and those
        # below) stops at [], tclass's infers past it (ol31a: program 16,112,117 L8 of
        # features,entries,math,records)
        node = _node_at(mine.value, key_path(first.group(1)))
        inferred = node is not None and _holds_empty(node)
        return inferred and all(_INFERRED_PAST_EMPTY.match(line) for line in finding.detail)
    if "batch_dims=0" in finding.step.src:  # the peer's 0 is None: an empty one kept
        return all(_emptied_to_no_dims(line, mine.value) for line in finding.detail)
    # auto_batch_size_ of a collection whose empty nested one (first in its node) has a
    # batch size of its own: the peer stops at it, tclass infers past it (more dims); or
    # the empty one's own batch size, longer: tclass's takes its parent's, the peer's
    # keeps it (program 4,901,761 of ``--families entries``, fz40c)
    # (from_dict / from_tuple / from_any: the same auto_batch_size_ of what they build,
    # an empty collection first among the values; fz27a)
    return all(
        _longer_past_empty(line) or _empty_took_parents(line, mine.value, peer.value)
        for line in finding.detail
    )


# ``from_list(rows, auto_batch_size=True)``: the peer's rows stop at ``[]`` (an empty dict
# first in each), so its batch size is the list's one dim; tclass's infers past it (more
# dims after the list's, program 17,130,067 L16 of methods,index,shape,combine, fz34b)
_LISTED_PAST_EMPTY = re.compile(
    r"^result(\['\w+'\])*\.(batch_size: peer \((\d+),\), tclass \(\3, \d"
    r"|names: peer \[None\], tclass \[None, None)"
)


_NESTED_INFERRED = re.compile(r"^result((?:\['\w+'\])+)\.batch_size: peer \(\), tclass \(\d")


def _node_at(top: Any, path: tuple[str, ...]) -> Any:
    """The nested collection of ``top`` at ``path``, or ``None``."""
    node = entry_at(top, path)
    return node if hasattr(node, "keys") else None


_NO_DIMS_LEFT = re.compile(
    r"^result((?:\['\w+'\])+)\."
    r"(batch_size: peer \([^)]+\), tclass \(\)|names: peer \[[^\]]+\], tclass \[\])$"
)


def _emptied_to_no_dims(line: str, mine: Any) -> bool:
    """``auto_batch_size_(batch_dims=0)``: an empty nested collection with no batch dims in
    tclass, as ``batch_dims=1`` leaves it one in both; the peer's keeps its own dims."""
    found = _NO_DIMS_LEFT.match(line)
    if found is None:
        return False
    node = entry_at(mine, key_path(found.group(1)))
    return hasattr(node, "is_empty") and node.is_empty()


def _empty_took_parents(line: str, mine: Any, theirs_top: Any = None) -> bool:
    """A nested collection without a leaf whose batch size (or unnamed dims) in tclass
    is its parent's, the first dims of the peer's; or, as long, where the peer's does
    not start with its parent's (``[3, 1]`` under ``[3, 2]``: programs 38,101 and
    51,885 of the five families, inv18a)."""
    found = _SIZE_OR_NAMES.match(line)
    path = key_path(line)
    if found is None or not path:
        return False
    node, parent = mine, mine
    for key in path:
        parent, node = node, node.get(key, None)
        if node is None or not hasattr(node, "keys"):
            return False
    if list(node.keys(True, True)) or node.batch_size != parent.batch_size:
        return False
    if found.group(1) is not None:
        theirs, ours = (re.findall(r"-?\d+", side) for side in found.group(1, 2))
    else:
        theirs, ours = found.group(3).split(", "), found.group(4).split(", ")
        if set(theirs) | set(ours) != {"None"}:
            return False
    if len(theirs) == len(ours) and theirs != ours and found.group(1) is not None:
        return not _starts_with_parents(theirs_top, path) or _stopped_short(theirs_top, mine, path)
    return len(theirs) > len(ours) and theirs[: len(ours)] == ours


def _stopped_short(top: Any, mine: Any, path: tuple[str, ...]) -> bool:
    """Whether the peer's parent of the node at ``path`` has fewer batch dims than
    tclass's, which start with them: the peer stopped at the empty node, which then fits
    it (``[3, 1]`` under ``[3]``), tclass inferred past it (``[3, 2]``, the node too:
    program 10,541,280 of ``--families entries``, fz20a)."""
    theirs, ours = entry_at(top, path[:-1]), entry_at(mine, path[:-1])
    if not hasattr(theirs, "batch_size") or not hasattr(ours, "batch_size"):
        return False
    short, long = tuple(theirs.batch_size), tuple(ours.batch_size)
    return len(short) < len(long) and long[: len(short)] == short


def _starts_with_parents(top: Any, path: tuple[str, ...]) -> bool:
    """Whether the batch size of the node at ``path`` of ``top`` starts with its parent's
    (True where the path does not lead to collections)."""
    parent = entry_at(top, path[:-1])
    node = entry_at(parent, path[-1:])
    if not hasattr(node, "batch_size") or not hasattr(parent, "batch_size"):
        return True
    return tuple(node.batch_size[: len(parent.batch_size)]) == tuple(parent.batch_size)


_SIZE_OR_NAMES = re.compile(
    r"^result(?:\['\w+'\])*\.(?:batch_size: peer \(([^)]*)\), tclass \(([^)]*)\)"
    r"|names: peer \[([^\]]*)\], tclass \[([^\]]*)\])$"
)


def _longer_past_empty(line: str) -> bool:
    """A batch size (or names) of tclass's that starts with the peer's and has more
    dims, unnamed (program 7,426 of entries,index: a named one, left46a)."""
    found = _SIZE_OR_NAMES.match(line)
    if found is None:
        return False
    if found.group(1) is not None:
        theirs, mine = (re.findall(r"-?\d+", side) for side in found.group(1, 2))
        return len(mine) > len(theirs) and mine[: len(theirs)] == theirs
    theirs, mine = found.group(3).split(", "), found.group(4).split(", ")
    extra = mine[len(theirs) :]
    return len(mine) > len(theirs) and mine[: len(theirs)] == theirs and set(extra) == {"None"}


def _holds_empty(node: Any) -> bool:
    """Whether a nested collection of ``node`` (at any depth) holds no leaf (a lazy stack's
    entry with no dense value, members of different shapes, is a leaf: program 7,792 of
    entries,index); a plain dict's keys are read as a dict's (program 9,194,497 of
    records,entries)."""
    for key in list(node.keys()):
        try:
            value = node.get(key)
        except (RuntimeError, ValueError):  # HeterogeneousEntryError: a leaf
            continue
        if hasattr(value, "keys") and hasattr(value, "items"):
            # a plain dict (a ``to_dict()`` value) has no ``keys(include_nested, leaves_only)``
            leaves = list(value) if isinstance(value, dict) else list(value.keys(True, True))
            if not leaves or _holds_empty(value):
                return True
    return False


_KEYS_LINE = re.compile(r"^result(\[\d+\])*: keys: peer (\[[^\]]*\]), tclass (\[[^\]]*\])$")


def _tolist_lists_fields(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``record.tolist()``: each element is ``record[i].to_dict()`` in tclass, fields that
    are ``None`` listed as ``to_dict`` lists them in both libraries; the peer's ``tolist``
    leaves out the top-level ones; and so ``from_list(record.tolist())`` has them as keys
    (the runner's seed 5,000: program 5,017, fz27a). After ``dataclasses.replace``, in
    their declared order, where the peer's record lists them in the order of its
    constructor's keywords, the changed fields first (program 15,912,064 of
    methods,features,entries,records L12, fz29g; README "A record lists its fields")."""
    if finding.kind != "result":
        return False
    if finding.step.op != "tolist" and not (
        finding.step.op == "from_list" and ".tolist()" in finding.step.src
    ):
        return False
    replaced = any(_REPLACED.search(line) for line in finding.lines)
    for line in finding.detail:
        found = _KEYS_LINE.match(line)
        if found is None:
            return False
        theirs, ours = ast.literal_eval(found.group(2)), ast.literal_eval(found.group(3))
        kept = [key for key in ours if key in theirs]
        if kept != theirs and not (replaced and sorted(kept) == sorted(theirs)):
            return False
    return True


_REPLACED = re.compile(r'__import__\("dataclasses"\)\.replace\(')


_PLAIN_TUPLE = re.compile(
    r"^result(\[\d+\])*: peer 'tuple', tclass ['\"]namedtuple\("
)  # () when no fields


def _namedtuple_of_record(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``record.to_namedtuple()``: a namedtuple of the fields in tclass, as a TensorDict's;
    the peer's record gives a plain tuple (the field names lost), which its
    ``from_namedtuple`` then refuses (a tuple has no ``items``). Where tclass's
    namedtuple holds a Python value stacked over no elements (``[]``, of shape ``[0]``),
    its ``from_namedtuple`` raises the batch mismatch (``BatchMismatchError``, a
    ``RuntimeError``) that the peer's raises for a TensorDict's namedtuple (program
    3,259 of index,entries, inv19b); over no elements of more dims (a padded record:
    ``[[[]], [[]]]``, of shape ``[2, 1, 0]``) the same (program 15,740,054 of
    index,combine,shape,entries ``--length 8``, fz27g)."""
    if finding.kind == "result" and finding.step.op == "to_namedtuple":
        return all(_PLAIN_TUPLE.match(line) for line in finding.detail)
    if finding.kind not in ("peer-raises", "family") or finding.step.op != "from_namedtuple":
        return False
    if "'tuple' object has no attribute 'items'" not in str(peer.error):
        return False
    return finding.kind == "peer-raises" or (
        type(mine.error).__name__ == "BatchMismatchError"
        and re.search(r"its shape \[(\d+, )*0\] ", str(mine.error)) is not None
    )


_LOCKED = re.compile(r"^result\S*\.is_locked: peer False, tclass True$")


def _frozen_locked(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A record of a ``frozen=True`` class (or a result built from one: its stack, clone,
    reload) is locked in tclass, where the peer's is not."""
    if finding.kind != "result" or "Frozen" not in finding.lines[0]:
        return False
    values = mine.value if isinstance(mine.value, (list, tuple)) else [mine.value]
    frozen = all(type(value).__name__ == "Frozen" for value in values)
    locked = [line for line in finding.detail if _LOCKED.match(line)]
    rest = [line for line in finding.detail if not _LOCKED.match(line)]
    return frozen and bool(locked) and all(_cast_line(line, finding.lines) for line in rest)


def _exclusive_keys_refused(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``to_tensordict()`` of a lazy stack whose members hold different keys (a record
    field set in some members only; ``contiguous()`` too): tclass names the keys and the
    members holding them, where the peer drops them (a ``KeyError`` when one is read
    later)."""
    if finding.kind not in ("tclass-raises", "family"):
        return False
    message = str(mine.error)
    return type(mine.error).__name__ == "HeterogeneousEntryError" and (
        "has different keys from member" in message
        or "hold different keys" in message
        or "held by only some of its members" in message
    )


_MIXED_READ = re.compile(
    r"^result\S*: (error: peer AttributeError, tclass \(.*'(TypeError|ValueError)'"
    r"|peer error \('AttributeError', .*\), tclass list of \d+$)"
)


def _mixed_field_refused(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A field a lazy stack's members hold as different kinds (a tensor in some, a Python
    value in others) or shapes read as one value: tclass's ``MixedEntryError`` (a
    ``TypeError``) or ``HeterogeneousEntryError`` naming the members (or the members'
    values, for a field some members hold as a list and others as another value), where
    the peer fails inside with an ``AttributeError``; or a Python value in some members
    and a nested collection in others, where the peer's read is a lazy stack of them with
    no key in common (whose ``contiguous()`` drops them; program 8,300,268 of
    ``--length 8`` index,entries,records, an earlier result read again, fz18a)."""
    if finding.kind == "alias" or (finding.kind == "result" and mine.error is not None):
        result = mine.value if finding.kind == "alias" else None
        if all(_keyless_mixed(line, result, mine.error) for line in finding.detail):
            return True
    return finding.kind == "result" and all(_MIXED_READ.match(line) for line in finding.detail)


_KEYLESS_MIXED = re.compile(
    r"^result(\S*): peer LazyStackedTensorDict\(batch_size=\[[\d, ]*\], keys=\[\]\), "
    r"tclass error \('ValueError', \(.*'TypeError'"
)


def _keyless_mixed(line: str, result: Any, error: BaseException | None) -> bool:
    """The peer's keyless lazy stack where tclass's read at that path (of ``result``, or
    the step's ``error``) is a ``MixedEntryError``."""
    found = _KEYLESS_MIXED.match(line)
    if found is None:
        return False
    if error is None:
        try:
            for key in key_path(found.group(1)):
                result = result[key]
        except Exception as refused:  # noqa: BLE001 (its class is what is checked)
            error = refused
    return type(error).__name__ == "MixedEntryError"


_NO_DEVICE = re.compile(
    r"^result(?:\[[^\]]*\]|\.<members>(?:\[\d+\])+)*\.device: peer 'None', tclass 'cpu'$"
)


def _consolidated_on_cpu(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``consolidate(filename=...)`` of a collection consolidated before: tclass's result
    is on ``cpu``, where its tensors are (views of the file), as the peer's is for a
    collection not consolidated before; the peer's then keeps the source's no device (a
    lazy stack's members and their nested collections too). tclass's is locked, as any
    ``consolidate`` result, where the peer's source may not be (a ``from_consolidated``
    result is not: program 15,970,822 L8 of methods,features,entries,records, fz29c)."""
    if finding.kind == "alias":
        return _refiled(finding)
    if finding.kind != "result" or "consolidate(filename=" not in finding.lines[-1]:
        return False
    return all(_NO_DEVICE.match(line) or _NO_LOCK.match(line) for line in finding.detail)


_NO_LOCK = re.compile(
    r"^result(?:\[[^\]]*\]|\.<members>(?:\[\d+\])+)*\.is_locked: peer False, tclass True$"
)


_NESTED_DEVICE = re.compile(
    r"^result(?:\[[^\]]*\]|\.<members>(?:\[\d+\])+)+\.device: "
    r"peer '(None|cpu)', tclass '(None|cpu)'$"
)


def _consolidated_keeps_devices(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``consolidate()`` (in memory) of a collection whose nested collections have a
    device other than its own: tclass's result keeps each node's device, as ``clone()``
    and the pickle of the peer's result do; the peer's gives every node the root's
    device (``None`` for a root without one; program 15,912,879 L12 of
    methods,features,entries,records, fz29c)."""
    line = finding.lines[-1]
    if finding.kind != "result" or ".consolidate(" not in line or "filename=" in line:
        return False
    for detail in finding.detail:
        found = _NESTED_DEVICE.match(detail)
        if found is None or found[1] == found[2]:
            return False
    return bool(finding.detail)


def _refiled_not_written(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``from_consolidated`` of what ``consolidate(filename=...)`` wrote of a collection
    consolidated before (a ``from_consolidated`` or ``consolidate`` result): tclass wrote
    the file; the peer's ``consolidate`` writes nothing ("already consolidated", a
    warning) and returns the source, so the peer cannot find the file (program 15,820,047
    L8 of features,index,shape,combine, fz28c); in-place methods since (``x = x.zero_()``:
    15,910,631 L12, fz29c), ``load_state_dict`` and lines giving no collection (x kept:
    ``min(reduce=True)``; 16,020,298 / 16,014,282 L8, fz30d) leave it so in both."""
    if (finding.kind, finding.step.op) != ("peer-raises", "from_consolidated"):
        return False
    if not isinstance(peer.error, FileNotFoundError):
        return False
    for line in reversed(finding.lines[:-1]):
        if line.startswith("x = ") and not _IN_PLACE.search(line) and not _same_dims(line):
            return ".consolidate(" in line
    return False


def _same_dims(line: str) -> bool:
    """``x = torch.permute(x, [-1])``: a permutation that keeps every dim in place, which
    the peer answers with the collection itself, still consolidated (ol31a: program
    16,300,813 L8 of features,index,shape,combine)."""
    found = re.fullmatch(r"x = (?:torch\.permute\(x, |x\.permute\()\[([-\d, ]*)\]\)", line)
    if found is None:
        return False
    dims = [int(d) for d in found[1].split(",") if d.strip()]
    return [d % len(dims) for d in dims] == list(range(len(dims))) if dims else False


_IN_PLACE = re.compile(  # returns x itself, or no collection (a tensor, None)
    r"^x = x\.(?:\w+_|load_state_dict)\(|(?:reduce=True|return_swap=False)\)$"
)


def _shared_on_files(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``share_memory_()`` of a memory-mapped collection: tclass leaves its tensors on
    their files (torch's file mappings, which count as shared) and returns it; the peer
    refuses ("memmap and shared memory are mutually exclusive features"; program
    15,824,202 L8 of methods,index,shape,combine, fz28c)."""
    if finding.kind != "peer-raises" or finding.step.op != "share_memory_":
        return False
    if "memmap and shared memory are mutually exclusive" not in str(peer.error):
        return False
    return mine.value is not None and bool(mine.value.is_memmap())


def _refiled(finding: Finding) -> bool:
    """The result of a ``consolidate`` line, consolidated again into a file by a later
    line before ``x`` changed: tclass's is a new collection over the file, the peer's
    the source itself (it writes nothing), so writes into one reach the other in the peer
    only (program 4,801,557 of ``--families records``, fz40c)."""
    at = _result_line(finding)
    if at is None or ".consolidate(" not in finding.lines[at - 1]:
        return False
    for line in finding.lines[at:]:
        if re.match(r"x = x\.consolidate\(filename=", line):
            return True
        if line.startswith("x = "):
            return False
    return False


_VALUE_LEFT_OUT = re.compile(
    r"^result\['(\w+)'\]: peer (?:'\w+'|[^,]+), tclass (?:'NoneType'|None|py \('NoneType', None\))$"
)  # (py ...: the value of a lazy stack over no elements, the peer's an empty list: inv19c)


def _key_below_a_value(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``select((name, key), strict=False)`` where ``name`` holds a Python value: tclass
    leaves it out, as both leave out a tensor there (nothing is below a leaf); the peer
    keeps the value (its node taken for a collection)."""
    if finding.kind != "result" or finding.step.op != "select":
        return False
    if "strict=False" not in finding.lines[-1]:
        return False
    for line in finding.detail:
        found = _VALUE_LEFT_OUT.match(line)
        if found is None or f'("{found.group(1)}", ' not in finding.lines[-1]:
            return False
    return True


def _missing_key_first(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``update_`` of a source with a key the destination lacks and another that does not
    fit: tclass's ``KeyNotFoundError`` (checked before any write), where the peer, going
    key by key, may raise torch's error of the one that does not fit first. A nested key
    the destination lacks (``update_({"inner": Inner(y=..., z=...)})`` where ``inner.z``
    is unset) is tclass's ``KeyNotFoundError`` too, where the peer skips it silently."""
    if finding.step.op != "update_" or type(mine.error).__name__ != "KeyNotFoundError":
        return False
    if finding.kind == "family":
        return type(peer.error) is RuntimeError
    found = re.search(r"key (\('[^)]*\)) was not found", str(mine.error))
    if finding.kind != "tclass-raises" or found is None or peer.value is None:
        return False
    key = ast.literal_eval(found.group(1))
    try:
        return peer.value.get(key, None) is None  # the peer wrote nothing there
    except KeyError:
        return True


def _contains_a_field(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``"k" in record`` tells whether the field ``k`` is set, as ``in`` does for a
    TensorDict; the peer's records have no ``__contains__`` (``in`` iterates over the
    rows: ``False`` for every key, a ``TypeError`` without batch dims)."""
    if finding.step.op != "contains" or not re.fullmatch(r'"\w+" in x', finding.step.src):
        return False
    if type(mine.value).__name__ != "bool" and finding.kind == "result":
        return False
    if finding.kind == "peer-raises":
        return "is not iterable" in str(peer.error)
    return finding.kind == "result" and peer.value is False and mine.value is True


# the records' fields that hold Python values (``Rec.label``, ``Auto.s`` / ``n`` / ``lst``...)
_VALUE_FIELDS = frozenset({"label", "s", "n", "lst", "v"})
_LEAVES_AT_THE_TOP = re.compile(r"\.(valid_)?keys\((include_nested=)?False, (leaves_only=)?True\)")
_STACKED_LAZILY = re.compile(r"LazyStackedTensorDict|lazy_stack\(|to_lazystack\(")


def _value_field_not_a_leaf(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``keys(include_nested=False, leaves_only=True)`` of a lazy stack of records lists
    the tensor fields, as of a record and of a lazy stack of TensorDicts in both; the
    peer's lists a Python-value field too (its first member's ``get`` gives the value,
    not a node), which its ``items(leaves_only=True)`` and ``keys(include_nested=True,
    leaves_only=True)`` leave out (program 15,320,258 of the six families ``--length
    16``, fz26e); ``valid_keys`` too, the same listing (15,881,423 L12, fz28f)."""
    if finding.kind != "result" or finding.step.op not in ("keys", "valid_keys"):
        return False
    if facts.kind != "record":
        return False
    if not _LEAVES_AT_THE_TOP.search(finding.step.src):
        return False
    if not any(_STACKED_LAZILY.search(line) for line in finding.lines[:-1]):
        return False
    if not (isinstance(peer.value, list) and isinstance(mine.value, list)):
        return False
    extra = [key for key in peer.value if key not in mine.value]
    kept = [key for key in peer.value if key in mine.value]
    return bool(extra) and set(extra) <= _VALUE_FIELDS and kept == mine.value


def _namedtuple_number_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``TensorDict.from_namedtuple(x.to_namedtuple(), batch_size=...)`` of a collection
    holding a Python number (``NonTensorData(7)`` with batch dims): tclass converts the
    fields as its ``from_dict`` does, in both libraries a Python value, where the peer's
    constructor makes the number a 0-dim tensor and fails its own batch check. A stack of
    Python values over no elements of more than one dim: tclass's ``to_namedtuple`` gives
    its ``tolist()``, ``[]`` (of shape ``[0]``), which ``from_namedtuple`` refuses with the
    batch mismatch the peer's raises for that namedtuple, where the peer's
    ``to_namedtuple`` fails inside reading it ("index 0 is out of bounds", program
    12,010,240 of records,entries,combine ``--length 10``, fz22g)."""
    if finding.kind == "family" and finding.step.op == "from_namedtuple":
        return (
            ".to_namedtuple()" in finding.step.src
            and _OUT_OF_BOUNDS_AT_0.search(str(peer.error)) is not None
            and type(mine.error).__name__ == "BatchMismatchError"
            and "its shape [0] " in str(mine.error)
        )
    return (
        finding.kind == "peer-raises"
        and finding.step.op == "from_namedtuple"
        and "Python scalars are stored as 0-dim tensors" in str(peer.error)
    )


_OUT_OF_BOUNDS_AT_0 = re.compile(r"^index 0 is out of bounds for dimension 0 with size 0$")


# a Python value of a record's field, one element of its per-element stack
_ELEMENT_VALUE = re.compile(
    r"^result\['(n|s|lst|v|label)'\](\[\d+\])+: "
    r"peer (-?\d+(?:\.\d+)?|'[^']*'|None), tclass (-?\d+(?:\.\d+)?|'[^']*'|None)$"
)


def _state_dict_values_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``load_state_dict`` of a record whose Python values differ per element: tclass
    keeps them, where the peer's state dict takes one value of their stack (its
    ``.data``: "Cannot get the non-unique data" or, for a stack loaded from a folder,
    the first element's) and writes it into every element (program 3,101,876 of the
    records family; a list field's float items too: program 1,916,597, inv20a)."""
    if finding.kind != "result" or finding.step.op != "load_state_dict":
        return False
    return all(_ELEMENT_VALUE.match(line) for line in finding.detail)


def _mixed_keys_unsorted(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A mapping (``fromkeys``, ``from_dict``) with a plain key that is also the parent of
    a nested key, among other nested keys: the peer fails sorting its keys ("'<' not
    supported between instances of 'str' and 'tuple'", or of 'tuple' and 'str', as its
    set's order has them); tclass's ``KeyThroughTensorError`` (a ``KeyError``, as the
    peer's "already present" for two such keys)."""
    unsorted = ("'str' and 'tuple'", "'tuple' and 'str'")
    return (
        finding.kind == "family"
        and any(
            f"'<' not supported between instances of {pair}" in str(peer.error) for pair in unsorted
        )
        and type(mine.error).__name__ in ("KeyThroughTensorError", "KeyConflictError")
    )


# What the peer raises saving a TensorDictParams, by op: ``save`` / ``dumps`` (and a
# ``load`` of what they save, ``load_memmap`` of what ``memmap`` writes) of a locked one,
# its lock check as for ``memmap``; and
# ``consolidate(filename=...)``, whose metadata of the parameters it cannot write as JSON.
_PARAMS_SAVE_REFUSED = {
    "save": "Cannot modify locked TensorDict",
    "dumps": "Cannot modify locked TensorDict",
    "load": "Cannot modify locked TensorDict",
    "load_memmap": "Cannot modify locked TensorDict",
    "consolidate": "Failed to convert the metadata to json",
    "from_consolidated": "Failed to convert the metadata to json",  # (of a lazy stack)
    "memmap_": "'_is_memmap' of 'TensorDictParams' object has no setter",  # (a member)
}


def _params_saved(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A TensorDictParams saved (README: "`TensorDictParams` registers what it holds"):
    a locked one with ``save`` / ``dumps``, any one consolidated into a file (a lazy
    stack holding one too, then read back by ``from_consolidated``: program 15,600,181
    L8 of features,index,shape,combine, fz28c), ``memmap_``
    of a lazy stack of them; tclass
    writes them (a TensorDict, as the peer's ``consolidate()`` without a file gives),
    where the peer raises."""
    if finding.kind != "peer-raises" or not any("TensorDictParams(" in x for x in finding.lines):
        return False
    if finding.step.op == "consolidate" and "filename=" not in finding.step.src:
        return False
    text = _PARAMS_SAVE_REFUSED.get(finding.step.op)
    return text is not None and text in str(peer.error)


def _params_nested_read_locked(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``params.n`` of a locked TensorDictParams, ``n`` a nested collection: tclass gives
    a TensorDictParams over it, as both do unlocked; the peer's new TensorDictParams
    unlocks ``n`` to convert its leaves and fails inside ("Cannot unlock a tensordict
    that is part of a locked graph"), where its ``params["n"]`` reads it."""
    if finding.kind != "peer-raises" or finding.step.op != "getattr":
        return False
    if not re.fullmatch(r"x\.\w+", finding.step.src.strip()):
        return False
    return (
        any("TensorDictParams(" in line for line in finding.lines)
        and "Cannot unlock a tensordict that is part of a locked graph" in str(peer.error)
        and type(mine.value).__name__ == "TensorDictParams"
    )


_LIST_UNREAD = re.compile(r"^result\['(lst|v)'\]: peer error \('RuntimeError', ")


def _ragged_lists_loaded(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``load_memmap`` (``load``) of a saved lazy stack of records whose list field holds lists of
    different nesting (``[0.5]`` and ``[[1], [2]]``): tclass reads the lists back, where
    the peer's loaded field fails to read ("batch sizes in tensordicts differs":
    programs 4,801,438 and 4,801,998 of ``--families records``, fz40c)."""
    if finding.kind != "result" or not re.search(r"load_memmap\(|\.load\(", finding.lines[-1]):
        return False
    for line in finding.detail:
        found = _LIST_UNREAD.match(line)
        if found is None:
            return False
        try:
            peer.value.get(found[1])
        except RuntimeError as error:
            if "batch sizes in tensordicts differs" not in str(error):
                return False
        else:
            return False
    return True


_STACKED_RECORDS = (
    re.compile(r"^result\.kind: peer 'LazyStackedTensorDict', tclass '(Rec|Inner)'$"),
    re.compile(r"^result\.<members>: peer \d+ \(.*, tclass None$"),
)


_NESTED_MEMBER = r"^result(\.<members>\[\d+\]\[\d+\])+\."
_NESTED_RECORD_STACK = (
    re.compile(_NESTED_MEMBER + r"kind: peer 'LazyStackedTensorDict', tclass '(Rec|Inner)'$"),
    re.compile(
        _NESTED_MEMBER + r"<members>: peer \d+ \(\[\('collection', '(Rec|Inner)', .*, tclass None$"
    ),
)


def _nested_records_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A shape op (``transpose``) of a lazy stack of lazy stacks of records: each member
    is a record over its lazy stack in tclass, as every lazy stack of records of one class
    is, where the peer's is a plain ``LazyStackedTensorDict`` of the records (its keys
    leave out the ``None`` fields a record lists; program 51,962 of shape,combine)."""
    if finding.kind != "result" or finding.step.family != "shape" or not finding.detail:
        return False
    return all(
        any(p.match(line) for p in _NESTED_RECORD_STACK)
        or (line.startswith("result.<members>[") and _fields_line(line))
        for line in finding.detail
    )


def _stacked_leaves(members: list[Any]) -> list[Any]:
    """The members of lazy stacks, through nested lazy stacks, that are not lazy stacks."""
    leaves: list[Any] = []
    for member in members:
        if type(member).__name__ == "LazyStackedTensorDict":
            leaves += _stacked_leaves(list(member.tensordicts))
        else:
            leaves.append(member)
    return leaves


# (``torch.stack(x.unbind(d), d)`` of a lazy stack of lazy stacks of records: program
# 10,521,735 of ``combine``)
_RESTACKS = ("stack", "maybe_dense_stack", "getitem", "unbind_stack")


def _records_restacked(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``torch.stack`` (or ``stack`` / ``maybe_dense_stack``) of lazy stacks of records of
    one class, stacked member by member: a record of that class over the new lazy stack,
    as every lazy stack of records of one class is (``lazy_stack`` in both), where the
    peer gives a plain ``LazyStackedTensorDict`` of the records (program 5,700,118 of
    shape,math,combine, left42); its keys leave out the ``None`` fields a record lists, and
    its ``label`` reads as a ``NonTensorStack`` (the record's: a list, as for any record).
    Lazy stacks of lazy stacks of records too (the peer's members are lazy stacks of them:
    program 7,753 of shape,combine), and such a member taken by an index (``view([2, 1])``
    of a lazy stack of records, then ``[1]``: program 8,700,257 of index,shape,combine)."""
    if finding.kind != "result" or finding.step.op not in _RESTACKS:
        return False
    if type(getattr(mine.value, "_tensordict", None)).__name__ != "LazyStackedTensorDict":
        return False
    members = getattr(peer.value, "tensordicts", None)
    if type(peer.value).__name__ != "LazyStackedTensorDict" or not members:
        return False
    if {type(m).__name__ for m in _stacked_leaves(members)} != {"Peer" + type(mine.value).__name__}:
        return False
    if not finding.detail[0].startswith("result.kind: "):
        return False
    return all(
        any(p.match(line) for p in _STACKED_RECORDS)
        or any(p.search(line) for p in _RECORD_KIND_LINES[2:5])  # a str field: a list
        or _fields_line(line)
        for line in finding.detail
    )


_NESTED_VALUES_DIFFER = re.compile(r"^result\['inner'\]\['\w+'\]: values differ: ")


def _nested_record_written_in_place(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A record whose tensors are views of an earlier result's (``apply(lambda v: v[...,
    None], batch_size=[])``), then ``copy_at_``: tclass writes into its nested record's
    tensors in place, as into its own fields and as a TensorDict's nested ones in both, so
    the earlier result sees the write; the peer's record replaces its nested record's
    tensors (new storage), so only its own fields' write reaches the earlier result
    (program 19,717 of ``--families entries,index``, left46a)."""
    if finding.kind != "alias":
        return False
    later = _later_lines(finding)  # (none for another finding)
    if not any(re.match(r"x = x\.apply\(lambda v: v\[", line) for line in later):
        return False
    if not any(re.match(r"x = x\.copy_at_\(", line) for line in later):
        return False
    return all(_NESTED_VALUES_DIFFER.match(line) for line in finding.detail)


_LIST_READ_NONE = re.compile(
    r"^result\['(\w+)'\]: peer py \('NoneType', None\), tclass list of \d+$"
)
_LOADED = re.compile(r"load_memmap\(|\.load\(")


def _only_empty_lists(value: Any) -> bool:
    """Whether ``value`` is a list of empty lists (``[[]]``, ``[[], []]``, ``[[[]]]``)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, list) and (not item or _only_empty_lists(item)) for item in value)
    )


def _saved_empty_lists_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A loaded record's list field whose elements each hold an empty list (``lst=[]``
    unsqueezed, saved, loaded) keeps its lists through ``apply`` and ``memmap_like``; the
    peer loads them as a stack with no elements, which its ``apply`` (and ``memmap_like``
    of a consolidated copy) drops: the field reads ``None`` (a silent loss; programs 3,255
    and 901,130 of ``--families records``, prune18)."""
    if finding.kind != "result" or not any(_LOADED.search(line) for line in finding.lines):
        return False
    for line in finding.detail:
        found = _LIST_READ_NONE.match(line)
        if found is None:
            return False
        value = mine.value.get(found[1], None) if hasattr(mine.value, "get") else None
        if not _only_empty_lists(value.tolist() if hasattr(value, "tolist") else value):
            return False
    return True
