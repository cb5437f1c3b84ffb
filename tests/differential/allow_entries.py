"""More rules of the deliberate differences (``allowlist.ENTRIES``), for the entries,
math and combine families (``allow_ops.py`` and ``allow_structure.py`` are at their size
bar): where the peer's answer loses an entry or is computed along another dim, or has a
structure that depends on its pytree, and tclass keeps it, refuses or restacks."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

import torch
from torch.utils._pytree import tree_leaves

from .allow_common import _later_lines
from .allow_features import size_as_tuple
from .allow_fields import _nested_none_kept
from .allow_structure import _fields_line
from .compare import entry_at, is_collection, key_path

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts


def _separated_keys(src: str) -> list[tuple[str, ...]] | None:
    """The keys ``x.separates(...)`` in ``src`` is given, as paths, or those of the key
    lists of ``x.split_keys(...)`` in order (None: not such a call of string and tuple
    keys)."""
    try:
        call = ast.parse(src, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call):
        return None
    try:
        keys = [ast.literal_eval(arg) for arg in call.args]
    except ValueError:
        return None
    if src.startswith("x.split_keys("):
        if not all(isinstance(keys_set, list) for keys_set in keys):
            return None
        keys = [key for key_set in keys for key in key_set]
    return [(key,) if isinstance(key, str) else tuple(key) for key in keys]


_KEYS_LINE = re.compile(r"^(.*): keys: peer (\[.*\]), tclass (\[.*\])$")


def _keys_of(line: str) -> tuple[str, list[Any], list[Any]] | None:
    """A line ``<path>: keys: peer [...], tclass [...]``: the path and the two key lists."""
    found = _KEYS_LINE.match(line)
    if found is None:
        return None
    try:
        return found.group(1), ast.literal_eval(found.group(2)), ast.literal_eval(found.group(3))
    except (ValueError, SyntaxError):
        return None


# a lazy stack member's entry (of a part of ``split_keys``): the file's tensor in tclass,
# a copy in the peer
_MEMBER_MAPPED = re.compile(
    r"^result(?:\[\d+\]|\['\w+'\])*\.<members>.*: peer Tensor(\[[^\]]*\]\]), "
    r"tclass MemoryMappedTensor\1$"
)  # (also a lazy stack nested in a part: program 4,902,059 of ``--families entries``)


def _separated_once(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``separates`` (or ``split_keys``) given a key twice, or one key inside another
    (``("inner", "y")`` and ``"inner"``, in either order): tclass returns all it removes,
    where the peer's later key overwrites the earlier one's part of its result (with
    ``None`` under ``strict=False``, or with what is left of the nested collection, which
    ``separates`` then drops as empty), so an entry removed is lost. Every line is about
    such a later key (a keys line: the keys only tclass lists lead to one, or only the
    peer's lists them, the later key's ``None`` where the earlier one moved an empty
    nested collection, which both drop from the result). Of a lazy
    stack, the members' own tensors (a memory-mapped one stays so, as a TensorDict's
    ``separates`` / ``split_keys`` give in both), where the peer's result holds copies,
    plain tensors. Another key's nested record that holds only the ``None`` values the
    peer stored through ``from_dict`` reads as ``none-field-unset`` has it (program
    8,301,445 of ``--length 8`` index,entries,records, fz18a), and a nested node's
    batch size that ``split_keys`` keeps (8,303,496, as :func:`_split_parts_keep_nested_dims`),
    and an ``attrs()`` shape beside it that the peer's copy made a plain tuple
    (:func:`size_as_tuple`; fz30f: program 16,010,219 L8 of features,entries,math,records).
    The peer takes the keys in
    its set's order, so with some hash seeds it raises a ``KeyError`` for the key inside
    the other instead (program 6,001,168 of the six families)."""
    if finding.step.op not in ("separates", "split_keys"):
        return False
    keys = _separated_keys(finding.step.src) or []
    later = {
        key
        for i, key in enumerate(keys)
        if any(key == earlier[: len(key)] or earlier == key[: len(earlier)] for earlier in keys[:i])
    }
    if finding.kind == "peer-raises":
        return isinstance(peer.error, KeyError) and bool(later)
    if finding.kind != "result":
        return False
    if all(_MEMBER_MAPPED.search(x) for x in finding.detail):
        return True
    if not keys:
        return False

    def about_later(path: tuple[str, ...]) -> bool:
        return any(path[: len(key)] == key or key[: len(path)] == path for key in later)

    for line in finding.detail:
        if _MEMBER_MAPPED.search(line):
            continue  # (beside keys lines too: ol31a, program 16,101,206 L12 of the records)
        path, listed = key_path(line), _keys_of(line)
        if listed is not None and path not in later:
            _, theirs, ours = listed
            if _later_set_none(path, theirs, ours, peer.value, about_later):
                continue
            extra = [key for key in ours if key not in theirs]
            if len(theirs) + len(extra) != len(ours) or not extra:
                return False
            if not all(isinstance(key, str) and about_later(path + (key,)) for key in extra):
                return False
        elif not any(path[: len(key)] == key for key in later):
            if _nested_none_kept(finding, line, peer.value):
                continue  # (none-field-unset's)
            if size_as_tuple(line):
                continue  # (an ``attrs()`` shape the peer's copy made a tuple: fz30f)
            if finding.step.op != "split_keys" or not _nested_dims_kept(line):
                return False  # (split-parts-keep-nested-dims', below)
    return bool(later)


def _later_set_none(
    path: tuple[str, ...], theirs: list[Any], ours: list[Any], result: Any, about_later: Any
) -> bool:
    """Only the peer's result at ``path`` lists keys, each a later key the peer set to
    ``None`` (``strict=False``) over what the earlier one moved: that was an empty nested
    collection, which both drop from the result."""
    gone = [key for key in theirs if key not in ours]
    if not gone or len(ours) + len(gone) != len(theirs):
        return False
    node = entry_at(result, path)  # the peer's None: a NonTensorData (of the batch size)
    return hasattr(node, "get") and all(
        isinstance(key, str)
        and about_later(path + (key,))
        and getattr(node.get(key, 0), "data", 0) is None
        for key in gone
    )


# a nested node's batch size or names in a part of ``split_keys``
_NESTED_DIMS = re.compile(r"^result.*\['[^']*'\].*\.(batch_size|names): peer (.*), tclass (.*)$")


def _split_parts_keep_nested_dims(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``split_keys`` (without ``reproduce_struct``) of a nested key whose node has batch
    dims of its own: tclass's part keeps the node's batch size and names, as ``select``,
    ``separates`` and ``split_keys(reproduce_struct=True)`` give in both, where the peer's
    part rebuilds the node with the part's batch size (its first dims). Every line is
    about a nested node whose peer dims are the first of tclass's, or (of a lazy stack)
    a member's memory-mapped entry the peer's part copies, as :func:`_separated_once`
    (program 51,550 of index,entries, inv19b). The peer's rebuilt node loses a nested
    record's class too: of a lazy stack of records, a lazy stack of TensorDicts without the
    record's ``None`` fields, where tclass's part keeps the record (program 10,991,077 of
    the six families, fz20c; of a record, ``stacking-keeps``' rule takes the TensorDict)."""
    if finding.kind != "result" or finding.step.op != "split_keys":
        return False
    rebuilt = {found[1] for line in finding.detail if (found := _RECORD_REBUILT.match(line))}
    kept = [_nested_dims_kept(line) or _of_rebuilt(line, rebuilt) for line in finding.detail]
    return any(kept) and all(
        k or _MEMBER_MAPPED.search(line) for k, line in zip(kept, finding.detail, strict=True)
    )


# a nested record in a part of ``split_keys`` of a lazy stack of records: the peer's lazy
# stack of TensorDicts (its members' lines, and its keys without the ``None`` fields)
_RECORD_REBUILT = re.compile(
    r"^(result\S*\['\w+'\])\.kind: peer 'LazyStackedTensorDict', tclass '(Rec|Inner)'$"
)
_REBUILT_MEMBERS = re.compile(
    r"^(result\S*\['\w+'\])\.<members>: peer \d+ \(\[\('collection', 'TensorDict', .*, tclass None$"
)


def _of_rebuilt(line: str, rebuilt: set[str]) -> bool:
    """A line of :func:`_split_parts_keep_nested_dims` about a nested record (at a path in
    ``rebuilt``) the peer's part rebuilt as a lazy stack of TensorDicts."""
    if _RECORD_REBUILT.match(line):
        return True
    found = _REBUILT_MEMBERS.match(line)
    if found is not None:
        return found[1] in rebuilt
    listed = _keys_of(line)
    return listed is not None and listed[0] in rebuilt and _fields_line(line)


def _nested_dims_kept(line: str) -> bool:
    """A line of :func:`_split_parts_keep_nested_dims`: the peer's dims the first of
    tclass's."""
    found = _NESTED_DIMS.match(line)
    if found is None:
        return False
    try:
        theirs, ours = ast.literal_eval(found.group(2)), ast.literal_eval(found.group(3))
    except (ValueError, SyntaxError):
        return False
    return len(theirs) < len(ours) and list(ours[: len(theirs)]) == list(theirs)


def _split_strict_on_lazy(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``split_keys`` (``strict=True``) of a lazy stack with a key that an earlier set
    took: tclass's ``KeyNotFoundError``, as the peer's ``TensorDict`` raises, where the
    peer's lazy stack falls back to splitting each member with ``strict=False``."""
    if finding.kind != "tclass-raises" or finding.step.op != "split_keys":
        return False
    if type(mine.error).__name__ != "KeyNotFoundError" or "strict=False" in finding.step.src:
        return False
    if not all(type(part).__name__ == "LazyStackedTensorDict" for part in peer.value):
        return False
    keys = _separated_keys(finding.step.src) or []
    taken = [
        key
        for i, key in enumerate(keys)
        if any(key[: len(earlier)] == earlier for earlier in keys[:i])
    ]
    said = str(mine.error).replace(" was not found", " is given twice")  # (older wording)
    return any(f"key {key!r} is given twice" in said for key in taken) or any(
        f"key {key[0]!r} is given twice" in said for key in taken if len(key) == 1
    )


# a nested record field the peer's ``filter_empty_()`` dropped (it reads None), or of a
# member of a lazy stack of such records (its stacked field, empty, is every member's)
_FIELD_DROPPED = re.compile(
    r"^result(?:\[\d+\])*(?:\.<members>\[\d+\]\[\d+\])*(\['[^']*'\])+"
    r": peer py \('NoneType', None\), tclass "
)
_RECORDS = ("Rec", "Inner", "Auto", "NoCast", "TOnly", "Frozen")


def _separates_kept_empty(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """After ``separates`` (``filter_empty=True``, the default), or in its result: tclass
    keeps the nested collections the removal did not empty (one empty before the call)
    and a record's nested record field, where the peer's ``filter_empty_()`` drops every
    empty nested collection (also from an earlier result sharing the nested node: an
    alias finding, the ``separates`` after that result). Every line lists keys (or a
    listing of keys one longer): only tclass's has some, each an empty collection in
    tclass's result (an empty dict in its ``numpy()``); or is a record's nested record
    field, empty in tclass's result, that the peer's reads as None (a dict of None in
    its ``to_dict()``). On a locked collection, a call that removes no entry answers
    (nothing to change) where the peer's ``filter_empty_()`` raises its lock error
    dropping one of those. With
    ``filter_empty=False`` too: the peer's still drops an empty collection nested in
    another (``("zz", "a")``), which tclass keeps. A lazy stack of the collection lists
    its members' keys too (``.<members>[0][i]`` lines; of a member that is a lazy stack
    itself, its members': ``.<members>[0][0].<members>[0][0]``, program 13,400,414 of the
    six families, ``--length 12``, fz24a). Of a lazy stack of records with a
    nested record field (``LazyStackedTensorDict(rec, rec)``), the peer's
    ``filter_empty_()`` of its own result, with ``filter_empty=False`` too, deletes that
    emptied field from a member record, which has no ``__delitem__`` (program 10,601,333
    of the six families, ``--length 8``, fz20b; 10,814,864 of
    index,combine,shape,entries --length 8, inv20e)."""
    if finding.kind == "peer-raises" and finding.step.op == "separates":
        if isinstance(peer.error, AttributeError) and str(peer.error) == "__delitem__":
            return True
        return "filter_empty=False" not in finding.step.src and "locked" in str(peer.error)
    if finding.kind == "alias":
        earlier = _later_lines(finding)
    elif finding.kind == "result":
        earlier = finding.lines[:-1] if finding.step.op != "separates" else finding.lines
    else:
        return False
    if not any(re.match(r"^(x = )?x\.separates\(", line) for line in earlier):
        return False
    if all(re.match(r"^result(\[1\])?: length: ", line) for line in finding.detail):
        theirs, ours = peer.value, mine.value  # a listing of keys (x.sorted_keys)
        return (
            (  # (left46a: keys(True, False), program 13,742 of entries,index)
                finding.step.src == "x.sorted_keys"
                or re.fullmatch(
                    r"list\(x\.keys\((True|False)?(, (True|False))?\)\)", finding.step.src
                )
            )
            and isinstance(theirs, list)
            and isinstance(ours, list)
            and len(theirs) < len(ours)
            and [key for key in ours if key in theirs] == theirs
        ) or _values_kept_empty(finding.step.src, theirs, ours)
    for line in finding.detail:
        node = mine.value
        lead = re.match(r"^result((?:\[\d+\])*)", line)
        indices = re.findall(r"\[(\d+)\]", lead.group(1) if lead else "")
        while isinstance(node, (tuple, list)) and indices[:1] == ["1"] and len(indices) > 1:
            node = node[int(indices[1])]  # (a sequence's snap: unbind's; group_by's
            indices = indices[2:]  # groups, a tuple in a tuple: og34l, 17,155,798)
        if indices:
            node = None
        elif lead is not None:
            line = "result" + line[lead.end() :]  # (the element's own lines)
        member = re.match(r"^result\.<members>\[0\]\[(\d+)\]", line)
        while member is not None and type(node).__name__ == "LazyStackedTensorDict":
            node = node.tensordicts[int(member.group(1))]  # a member of the result (left43)
            line = "result" + line[member.end() :]  # (of a member lazy stack too: fz24a)
            member = re.match(r"^result\.<members>\[0\]\[(\d+)\]", line)
        listed = _keys_of(line)
        node = entry_at(node, key_path(line))
        if _FIELD_DROPPED.match(line) and type(node).__name__ in _RECORDS:
            if not node.is_empty():
                return False
            continue  # the record's nested record field, empty (the peer's reads None)
        if finding.step.op in ("to_dict", "from_dict") and _as_dict_of_none(
            line, node, finding.detail
        ):
            continue  # the same in a record's to_dict(), listed before its unset fields
        # (``result[1][0]``: an element of a sequence, read above; program 17,255)
        if listed is None or not re.fullmatch(r"result(\[\d+\])*(\['[^']*'\])*", listed[0]):
            return False
        theirs, ours = listed[1], listed[2]
        extra = [key for key in ours if key not in theirs]
        if not extra or len(theirs) + len(extra) != len(ours) or node is None:
            return False
        for key in extra:
            value = node.get(key, None) if isinstance(key, str) else None
            if finding.step.op in ("numpy", "to_dict") and value == {}:
                continue  # the empty collection's numpy() / to_dict(), a dict (10,202,540,
                # fz19b; to_dict: 16,092,389 L8 of features,entries,math,records, fz30k)
            if not hasattr(value, "is_empty") or not value.is_empty():
                return False
    return True


def _separates_default_left(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """After ``x.separates(..., ("n", "zz"), default=None)`` of a collection whose empty
    nested ``n`` lacks ``zz``: the peer writes the default into the source's node too
    (``n`` lists ``zz`` afterwards, its members' too), where tclass's ``separates`` only
    removes from the source (program 16,126,422 L8 of features,entries,math,records,
    ``copy.deepcopy(x)`` after it, fz30k). Every line lists keys: the peer's are tclass's
    and more, each more named in that call."""
    if finding.kind != "result":
        return False
    calls = [line for line in finding.lines[:-1] if re.search(r"\.separates\(.*default=", line)]
    if not calls:
        return False
    named = set(re.findall(r"['\"]([^'\"]+)['\"]", calls[-1]))
    for line in finding.detail:
        listed = _keys_of(line)
        if listed is None:
            return False
        theirs, ours = listed[1], listed[2]
        extra = [key for key in theirs if key not in ours]
        if not extra or len(ours) + len(extra) != len(theirs):
            return False
        if not all(isinstance(key, str) and key in named for key in extra):
            return False
    return True


def _values_kept_empty(src: str, theirs: Any, ours: Any) -> bool:
    """``list(x.values())`` / ``list(x.items())`` after ``separates``: tclass's lists the
    peer's and more, each more an empty collection (program 45,792 of the five families,
    inv18a)."""
    if not re.fullmatch(r"list\(x\.(values|items)\(.*\)\)", src):
        return False
    if not isinstance(theirs, list) or not isinstance(ours, list) or len(theirs) >= len(ours):
        return False
    values = [pair[1] for pair in ours] if src.startswith("list(x.items") else ours
    empty = [v for v in values if hasattr(v, "is_empty") and is_collection(v) and v.is_empty()]
    return len(ours) - len(empty) == len(theirs)


def _separated_from_value_node(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An alias finding (or a later op's result) after ``separates`` of a key in a
    nested collection that holds no tensor (only Python values): the peer builds its
    result on ``empty(recurse=True)``,
    which returns that node itself, so the entry it pops goes back into the source (and
    the result shares the node), where tclass's source no longer lists it (``x[("n",
    "zz")] = ""; x.separates(("n", "zz"))``; left44). Every line lists keys, the peer's
    more: each key only it lists leads to a separated key whose node, in the peer's
    source, holds no tensor. In the result itself, that node's keys in another order
    (the peer's pop and set put the separated key last), or locked in the peer's only
    (the source's locked node itself; ``separates(filter_empty=False)`` of a saved
    collection: program 15,963,434 L12 of features,entries,math,records, fz30a)."""
    if finding.kind == "result" and finding.step.op == "separates":
        if all(
            _NODE_LOCKED.match(line) and _holds_no_tensor(peer.value, key_path(line))
            for line in finding.detail
        ):
            return True
        keys = _separated_keys(finding.step.src) or []
        return all(_reordered_in_value_node(line, keys, peer.value) for line in finding.detail)
    if finding.kind == "alias":
        earlier = _later_lines(finding)
    elif finding.kind == "result":  # a later op's result (unlock_: program 401,365)
        earlier = finding.lines[:-1]
    else:
        return False
    separated = [
        key
        for line in earlier
        if re.match(r"^(x = )?x\.separates\(", line)
        for key in _separated_keys(line.removeprefix("x = ")) or []
    ]
    if finding.kind == "result" and re.fullmatch(r"list\(x\.values\(.*\)\)", finding.step.src):
        return _value_back_listed(finding, separated, peer.value, mine.value)
    for line in finding.detail:
        listed = _keys_of(line)
        # (``result[1][0]``: an element of a sequence, read above; program 17,255)
        if listed is None or not re.fullmatch(r"result(\[\d+\])*(\['[^']*'\])*", listed[0]):
            return False
        path, theirs, ours = key_path(line), listed[1], listed[2]
        extra = [key for key in theirs if key not in ours]
        if not extra or len(ours) + len(extra) != len(theirs):
            return False
        for key in extra:
            leads = [sep for sep in separated if sep[: len(path) + 1] == path + (key,)]
            if not leads or not all(
                len(sep) > 1 and _holds_no_tensor(peer.value, sep[:-1]) for sep in leads
            ):
                return False
    return bool(finding.detail)


# a nested node locked in the peer's result only
_NODE_LOCKED = re.compile(r"^result(?:\['[^']*'\])+\.is_locked: peer True, tclass False$")


def _value_back_listed(
    finding: Finding, separated: list[tuple[str, ...]], theirs: Any, ours: Any
) -> bool:
    """``list(x.values(True, ...))`` after such a ``separates`` (``filter_empty=False``:
    the node stays): the peer's lists the Python values it put back, one per separated
    nested key at most, tclass's the rest (program 15,730,054 of
    index,combine,shape,entries ``--length 6``, fz27g)."""
    if not all(re.match(r"^result(\[1\])?: length: ", line) for line in finding.detail):
        return False
    if not isinstance(theirs, list) or not isinstance(ours, list):
        return False
    extra = len(theirs) - len(ours)
    values = [sum(type(v).__name__ == "NonTensorData" for v in got) for got in (theirs, ours)]
    nested = [key for key in separated if len(key) > 1]
    return 0 < extra <= len(nested) and values[0] - values[1] == extra


_ORDER_LINE = re.compile(r"^(result(?:\['[^']*'\])*): key order: peer (\[.*\]), tclass (\[.*\])$")


def _reordered_in_value_node(line: str, separated: list[tuple[str, ...]], result: Any) -> bool:
    """A key order line of a node of the result that a separated key is in, holding no
    tensor in the peer's result."""
    found = _ORDER_LINE.match(line)
    if found is None:
        return False
    path = key_path(found.group(1))
    theirs, ours = ast.literal_eval(found.group(2)), ast.literal_eval(found.group(3))
    inside = any(len(key) == len(path) + 1 and key[:-1] == path for key in separated)
    return (
        inside
        and sorted(map(str, theirs)) == sorted(map(str, ours))
        and _holds_no_tensor(result, path)
    )


def _holds_no_tensor(source: Any, path: tuple[str, ...]) -> bool:
    """Whether the nested collection at ``path`` of ``source`` holds no tensor."""
    node = source
    for key in path:
        node = node.get(key, None) if is_collection(node) else None
    if not is_collection(node):
        return False
    return not any(isinstance(value, torch.Tensor) for value in node.values(True, True))


def _as_dict_of_none(line: str, node: Any, lines: list[str]) -> bool:
    """A line of ``to_dict()`` of a record after ``separates``: its nested record field
    kept empty (a dict of ``None``) where the peer's reads ``None``, or the key order
    that follows (the peer lists it with the unset fields, after the set ones); and so
    in a TensorDict made of that dict (``TensorDict(x.to_dict())``: the peer's value
    ``None``, tclass's nested TensorDict of ``None`` values; program 13,873, inv19b)."""
    if line.startswith("result: key order: "):
        return any(_FIELD_DROPPED.match(o) or _NONE_VALUE_READ.match(o) for o in lines)
    if _NONE_VALUE_READ.match(line):
        keys = list(node.keys()) if is_collection(node) else None
        return bool(keys) and all(getattr(node.get(key), "data", 0) is None for key in keys)
    return (
        _FIELD_DROPPED.match(line) is not None
        and isinstance(node, dict)
        and all(value is None for value in node.values())
    )


# a nested key whose value is the peer's ``None`` (a NonTensorData), a TensorDict in tclass
_NONE_VALUE_READ = re.compile(
    r"^result(\['[^']*'\])+: peer nontensor \(\('value', \('py', 'NoneType', None\), "
    r"\[[\d, ]*\]\), \('py', 'NoneType', None\)\), tclass TensorDict\("
)


def _restacked_by_member(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``torch.stack`` (``maybe_dense_stack`` too, the peer's same ``_stack``) of lazy
    stacks of as many members, along another dim: tclass
    restacks them member by member whatever the members' kind, where the peer does so only
    when its pytree finds as many leaves in each (a ``TensorDictParams`` member is one
    leaf to it) and otherwise gives a lazy stack of the lazy stacks (its nested
    collections' too): a ``TensorDictParams`` member, or members whose Python values it
    counts only where set (the ``None`` of a padded slot is no leaf; ``unbind_stack``,
    program 9,905,671 of fz19a). The same batch size and entries."""
    ops = ("stack", "maybe_dense_stack", "unbind_stack")
    if finding.kind != "result" or finding.step.op not in ops:
        return False
    lazy = "LazyStackedTensorDict"
    ours, theirs = mine.value, peer.value
    if not type(ours).__name__ == type(theirs).__name__ == lazy:
        return False
    if not all(type(member).__name__ == lazy for member in theirs.tensordicts):
        return False
    params = any("TensorDictParams(" in line for line in finding.lines)
    if not params and len({len(tree_leaves(m)) for m in theirs.tensordicts}) < 2:
        return False
    if ours.batch_size != theirs.batch_size:
        return False
    if not all(re.match(r"result(\['\w+'\])*\.<members>", line) for line in finding.detail):
        return False
    try:
        keys = list(ours.keys(include_nested=True, leaves_only=True))
        return sorted(map(str, keys)) == sorted(
            map(str, theirs.keys(include_nested=True, leaves_only=True))
        ) and _same_leaves(ours, theirs, keys)
    except (RuntimeError, TypeError, ValueError, KeyError, IndexError):
        return False


def _same_leaves(ours: Any, theirs: Any, keys: list[Any]) -> bool:
    """The leaves of two lazy stacks of the same batch size are equal; for a ragged one
    (a ``-1``, program 14,138 of shape,combine), slice by slice along tclass's stack dim,
    where each slice is dense."""
    if -1 not in ours.batch_size:
        return all(torch.equal(ours.get(key), theirs.get(key)) for key in keys)
    lead = (slice(None),) * ours.stack_dim
    return all(
        torch.equal(ours[(*lead, i)].get(key), theirs[(*lead, i)].get(key))
        for i in range(ours.batch_size[ours.stack_dim])
        for key in keys
    )


def _softmax_on_ragged(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``softmax`` along the stack dim of a lazy stack whose members differ in shape:
    tclass's ``HeterogeneousEntryError`` (the dense stack it needs does not exist, as for
    ``cummax`` / ``cummin`` / ``cumsum`` in both), where the peer runs ``softmax`` on each
    member along that member's own dim instead, a wrong result; or, where a member holds
    an integer entry, torch's ``NotImplementedError`` for it (a softmax tclass never
    starts), or, where a member's tensor has no dim there (the stack dim is past its
    dims), torch's ``IndexError`` (program 6,100,441 of records,math)."""
    if finding.kind == "family" and not isinstance(peer.error, (NotImplementedError, IndexError)):
        return False
    return (
        finding.kind in ("tclass-raises", "family")
        and finding.step.op == "softmax"
        and type(mine.error).__name__ == "HeterogeneousEntryError"
        and "an operation along the stack dim" in str(mine.error)
    )


# an entry the peer holds as a plain list, tclass as one value stack
_LIST_OF_STACKS = re.compile(r"^result((?:\['\w+'\])+): peer list of \d+, tclass nontensor \(")


def _nested_lists_stacked_whole(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Lists of Python values nested three deep or more (``{"s": [[["a", "a"]]]}``, which
    ``to_dict()`` gives for a value stack of three dims): one ``NonTensorStack`` over all
    their levels in tclass, as two-deep ones in both; the peer stacks the two inner levels
    and keeps the outer ones a plain Python list of stacks as the entry (which its own
    batch-size check then fails on)."""
    if finding.kind != "result":
        return False
    for line in finding.detail:
        found = _LIST_OF_STACKS.match(line)
        if found is None:
            return False
        entry = entry_at(peer.value, key_path(found.group(1)))
        if not isinstance(entry, list) or not _stacks_in_lists(entry):
            return False
    return True


# a line about an entry's value read back from a folder: ``result['k']...: ...``
_LOADED_VALUE_LINE = re.compile(r"^result((?:\.<members>\[0\]\[\d+\])*)((?:\['[^']*'\])+)")
_FOLDER_LOADS = ("load_memmap", "load_memmap_", "load", "load_", "memmap_refresh_")


def _list_values_loaded_whole(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A stack of Python values that are lists (``set_non_tensor("b", [1, 2])``, then
    stacked) loaded back from a folder: tclass's keeps the batch size it was saved with,
    one list per element, where the peer's reads each list's items as one more stack
    dim (``[2, 2, 2]`` for ``[2, 2]``): the same nested lists either way (program
    15,831,984 L8 of methods,index,shape,combine, fz29b); and in the members of a lazy
    stack of lazy stacks (``load_memmap_``: 16,062,516 L12, fz30j); ``memmap_refresh_``,
    which reads the folder again, likewise (16,952,539 L8, fm31e)."""
    if finding.kind != "result" or finding.step.op not in _FOLDER_LOADS:
        return False
    for line in finding.detail:
        found = _LOADED_VALUE_LINE.match(line)
        both = None if found is None else _read_in_members(found[1], found[2], peer, mine)
        if both is None:
            return False
        theirs, ours = both
        if {type(theirs).__name__, type(ours).__name__} != {"NonTensorStack"}:
            return False
        dims = len(ours.batch_size)
        if len(theirs.batch_size) <= dims or theirs.batch_size[:dims] != ours.batch_size:
            return False
        if theirs.tolist() != ours.tolist():
            return False
    return bool(finding.detail)


def _read_in_members(members: str, keys: str, peer: Any, mine: Any) -> tuple[Any, Any] | None:
    """``keys`` read in both results (as ``compare.read_both``) in the members a line's
    ``.<members>[0][i]`` parts name (a lazy stack of lazy stacks loaded back: fz30j,
    program 16,062,516 L12 of methods,index,shape,combine), None where either lacks it."""
    both = [peer.value, mine.value]
    try:
        for number in re.findall(r"\[0\]\[(\d+)\]", members):
            both = [value.tensordicts[int(number)] for value in both]
        key = key_path(keys)
        return both[0].get(key), both[1].get(key)
    except (KeyError, AttributeError, IndexError):
        return None


def _stacks_in_lists(value: Any) -> bool:
    """Whether ``value`` is the peer's stacks held in (nested) plain lists."""
    if isinstance(value, list):
        return bool(value) and all(_stacks_in_lists(item) for item in value)
    return type(value).__name__ == "NonTensorStack"


_KEY_SETS = re.compile(
    r"key sets don't match: got state_dict extra keys\s*(\{.*?\})\s*and tensordict extra keys"
    r"\s*(\{.*?\})",
    re.DOTALL,
)


def _dotted_keys_loaded(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``load_state_dict`` of a collection holding a Python value whose keys have a ``.``
    (``flatten_keys(".")``): tclass loads each key as it is, where the peer splits them
    at the dots and finds the key sets differ (its extra keys: their first parts)."""
    if finding.kind != "peer-raises" or finding.step.op != "load_state_dict":
        return False
    found = _KEY_SETS.search(str(peer.error))
    if found is None:
        return False
    try:
        split, whole = (ast.literal_eval(side) for side in found.groups())
    except (ValueError, SyntaxError):
        return False
    dotted = {key for key in whole if isinstance(key, str) and "." in key}
    return bool(dotted) and dotted == set(whole) and split <= {k.split(".")[0] for k in dotted}


_CONFLICT_FILE = re.compile(r"the tensor for '(?:[^']*/)?([^'/]+)\.memmap' is saved in")
_LOADS = re.compile(r"load_memmap\(|\.load\(")


def _new_entry_copied(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``memmap(other_folder)`` of a loaded collection after a new key was set into it
    (``loaded.setdefault("zz", t)``): a ``FileConflictError`` asking for
    ``copy_existing=True`` in tclass, whose new entry is a file of the loaded folder, as
    its loaded entries are in both libraries; the peer's new entry is a plain tensor in
    memory, which it copies."""
    if finding.kind != "tclass-raises" or finding.step.op not in ("memmap", "memmap_"):
        return False
    found = _CONFLICT_FILE.search(str(mine.error))
    if type(mine.error).__name__ != "FileConflictError" or found is None:
        return False
    loads = [i for i, line in enumerate(finding.lines) if _LOADS.search(line)]
    if not loads:
        return False
    quoted = re.compile(rf"""["']{re.escape(found.group(1))}["']""")
    before, after = finding.lines[: loads[-1] + 1], finding.lines[loads[-1] + 1 : -1]
    return not any(map(quoted.search, before)) and any(map(quoted.search, after))


_EMPTY_SHAPES = re.compile(
    r"^result\S*: peer Tensor\[([\w.]+), shape \[0((?:, \d+)*)\]\], "
    r"tclass Tensor\[\1, shape \[0((?:, \d+)*)\]\]$"
)


def _written_into_no_elements(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An indexed write into a record with no elements (``rec.update_at_(v, I[:-1,
    None])`` of batch size ``[0]``): its entries keep their shapes, as a tensor's
    ``t[:-1, None] = v`` does, where the peer's record takes the written value's shapes."""
    if finding.kind != "result" or finding.step.op not in ("update_at_", "set_at_"):
        return False
    for line in finding.detail:
        found = _EMPTY_SHAPES.match(line)
        if found is None or len(found.group(2)) <= len(found.group(3)):
            return False
    return True


_NESTED_BATCH = re.compile(r"^result(?:\['\w+'\])+\.(batch_size|names): peer (.*), tclass (.*)$")


def _batch_past_unset_field(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``auto_batch_size_`` of a record after ``update(rec.to_dict())`` where a nested
    record's field is ``None``: tclass leaves the field unset (``none-field-unset``), so
    the nested record's batch size comes from its tensors; the peer's ``None`` entry,
    shaped as the nested batch, holds it at that batch size."""
    if finding.kind != "result" or finding.step.op != "auto_batch_size_":
        return False
    if not any(".update(" in line or "from_dict(" in line for line in finding.lines[:-1]):
        return False
    if not finding.lines[0].lstrip().startswith("x = Rec("):
        return False
    for line in finding.detail:  # the peer's nested batch size: a prefix of tclass's
        found = _NESTED_BATCH.match(line)
        if found is None:
            return False
        try:
            peer_dims, my_dims = (ast.literal_eval(side) for side in found.group(2, 3))
        except (ValueError, SyntaxError):
            return False
        if found.group(1) == "batch_size" and not (
            len(peer_dims) < len(my_dims) and tuple(my_dims[: len(peer_dims)]) == peer_dims
        ):
            return False
    return True


def _locked_record_updated_at(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``update_at_`` (or ``copy_at_``) of a locked record (memory-mapped) at an index
    that keeps every batch dim (``rec.update_at_(rec[...].apply(fn), I[...])``): written
    in place, where the peer's record calls ``update`` on its TensorDict, which the lock
    refuses. Or
    ``update_at_`` of a record, or of a lazy stack of records, at an index that takes
    part of a dim, or drops one (``I[-1,]`` of a batch ``[1, 1]``): the peer's record
    passes the indexed source to ``update``, which refuses its batch size (fz41b); where
    that source has the record's batch size (``I[[-1, -1]]`` of a batch ``[2, 2]``), the
    peer's ``update`` writes it whole, every row zeroed (61,552 of index,entries, inv19a)."""
    if finding.kind == "peer-raises" and finding.step.op == "copy_at_":  # (113,056, inv19a)
        record = re.match(r"\s*x = (Rec|Inner|Auto|NoCast|TOnly|Frozen)\(", finding.lines[0])
        return record is not None and "Cannot modify locked TensorDict" in str(peer.error)
    if finding.kind not in ("peer-raises", "result") or finding.step.op != "update_at_":
        return False
    record = re.match(r"\s*x = (Rec|Inner|Auto|NoCast|TOnly|Frozen)\(", finding.lines[0])
    if record is None:
        return False
    if finding.kind == "result":  # (the fuzzer's source: x[index].apply(torch.zeros_like))
        leaves = list(peer.value.items(include_nested=True, leaves_only=True))
        return (
            bool(leaves)
            and all(isinstance(v, torch.Tensor) and not v.any() for _, v in leaves)
            and all("values differ" in line for line in finding.detail)
        )
    if "Cannot modify locked TensorDict" in str(peer.error):
        return True
    return _UPDATE_SOURCE_SIZE.match(str(peer.error)) is not None


_UPDATE_SOURCE_SIZE = re.compile(
    r"update\(\) got a source with batch size |batch dimension mismatch, got self\.batch_size="
)


# a batch size or names of the result, read from its entries
_RESULT_DIMS = re.compile(r"^result\.(batch_size|names): peer (.*), tclass (.*)$")


def _h5_separated_removed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A later result of a collection over an HDF5 file that ``separates`` took entries
    from: tclass removed them from the file (as its ``exclude(inplace=True)``), where the
    peer's ``separates`` leaves them there (its keys and a reopened file still list
    them). Every line lists keys, where only the peer's has some, each a key separated;
    or gives the result's batch size or names read from its entries, tclass's the first
    of the peer's; or ``x.get(key)`` of a key separated is tclass's ``None`` (program
    31,254 of the five families, inv18a; 8,600,176 of entries,records, fz18b)."""
    if not facts.h5 or finding.kind != "result" or finding.step.op == "separates":
        return False
    separated = [
        key
        for line in finding.lines[:-1]
        if line.startswith("x.separates(")
        for key in _separated_keys(line) or []
    ]
    if finding.step.op in ("items", "keys") and all(_LENGTH.search(d) for d in finding.detail):
        return _listed_without(peer.value, mine.value, finding.step.op, separated)
    if finding.step.op in ("get", "get_default"):  # a key separated: tclass's default None,
        # the peer's entry (``x.get(key, None)`` too: 15,950,288 L8 of
        # features,entries,math,records, fz30e)
        src = finding.step.src
        if finding.step.op == "get_default":
            if not src.endswith(", None)"):
                return False
            src = src.removesuffix(", None)") + ")"
        key = _separated_keys(src.replace("x.get(", "x.separates(", 1))
        return mine.value is None and key is not None and key[:1] == key and key[0] in separated
    listed = False
    for line in finding.detail:
        keys, dims = _keys_of(line), _RESULT_DIMS.match(line)
        # (``result[1][i]``: the i-th dict of ``tolist()``, left43)
        if keys is not None and re.fullmatch(r"result(\[1\]\[\d+\])?(\['[^']*'\])*", keys[0]):
            path, theirs, ours = key_path(line), keys[1], keys[2]
            gone = [key for key in theirs if key not in ours]
            if not gone or len(ours) + len(gone) != len(theirs):
                return False
            if not all(isinstance(key, str) and path + (key,) in separated for key in gone):
                return False
            listed = True
        elif dims is not None:
            try:
                theirs, ours = ast.literal_eval(dims.group(2)), ast.literal_eval(dims.group(3))
            except (ValueError, SyntaxError):
                return False
            if len(ours) >= len(theirs) or list(theirs[: len(ours)]) != list(ours):
                return False
        else:
            return False
    return listed


_LENGTH = re.compile(r": length: peer \d+, tclass \d+$")


def _listed_without(theirs: Any, ours: Any, op: str, separated: list[Any]) -> bool:
    """``list(x.items())`` / ``list(x.keys())`` of a file after ``separates``: tclass's
    lists the peer's keys but the separated ones (program 57,612 of ``--families
    entries,index``: a file without elements, left46a)."""
    if op == "items":
        theirs, ours = [pair[0] for pair in theirs], [pair[0] for pair in ours]
    gone = [key for key in theirs if key not in ours]
    as_path = [key if isinstance(key, tuple) else (key,) for key in gone]
    return (
        bool(gone)
        and len(ours) + len(gone) == len(theirs)
        and all(path in separated for path in as_path)
    )


def _popped_as_stored(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``pop`` / ``popitem`` of a record's field that holds a TensorDict (``rec.opt =
    td``): the TensorDict, as stored, where the peer makes a record of its own class of
    it: one with every field unset when it holds no entries (program 4,900,220 of
    ``--families entries``, fz40c), its ``ValueError`` ("Keys from the tensordict ...
    must correspond to the class attributes") otherwise. ``setdefault`` of a field that
    is set gives its value alike: the TensorDict, or the stack of a Python value over the
    batch of an unsqueezed record (programs 41,066 and 60,743 of the five families, inv18a),
    and so does ``popitem`` of a field holding such a stack, which the peer makes a record of
    its own class with every field unset (program 11,720,426 of entries,math,shape --length
    8, fz22d; its ``pop`` gives the stack)."""
    if finding.step.op not in ("pop", "popitem", "setdefault"):
        return False
    if finding.kind in ("peer-raises", "family"):
        return "must correspond to the class attributes" in str(peer.error)
    if finding.kind != "result":
        return False
    theirs, ours = peer.value, mine.value
    if finding.step.op == "popitem":
        theirs, ours = theirs[1], ours[1]
    stacks = finding.step.op in ("setdefault", "popitem")
    kinds = ("TensorDict", "NonTensorStack") if stacks else ()
    if type(ours).__name__ not in ("TensorDict", *kinds) or list(ours.keys()):
        return False
    fields = getattr(type(theirs), "__dataclass_fields__", None)
    return bool(fields) and all(theirs.get(name, None) is None for name in fields)


def _params_value_attribute(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``params.s`` of a ``TensorDictParams`` key holding a Python value (``None``): an
    ``AttributeError``, as the peer's for a string, where the peer wraps ``None`` in a new
    ``TensorDictParams`` without entries (program 5,000,562 of ``--families
    records,combine --length 6``, fz40c)."""
    if finding.kind != "tclass-raises" or finding.step.op != "getattr":
        return False
    name = re.fullmatch(r"x\.(\w+)", finding.step.src.strip())
    refused = f"'TensorDictParams' object has no attribute '{name[1]}'" if name else None
    if refused is None or not isinstance(mine.error, AttributeError) or refused != str(mine.error):
        return False
    return type(peer.value).__name__ == "TensorDictParams" and not list(peer.value.keys())


def _stack_of_values_not_empty(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A lazy stack whose members hold only per-element Python values: not empty in
    tclass (``is_empty()`` is true when every member is empty), empty in the peer, so its
    ``apply(fn, batch_size=...)`` (``named_apply`` too), which leaves the values out,
    gives an empty TensorDict there and ``None`` in tclass; a nested one, an empty nested
    TensorDict kept in the peer's result only (program 5,802,894 of
    index,entries,records)."""
    if finding.kind != "result" or "lazy" not in finding.step.tags:
        return False
    if finding.step.op == "x.is_empty()":
        return (peer.value, mine.value) == (True, False)
    if finding.step.op not in ("apply", "named_apply") or "batch_size=" not in finding.step.src:
        return False
    if mine.value is None and is_collection(peer.value) and not list(peer.value.keys()):
        return True
    return all(_peer_keeps_emptied(peer.value, line) for line in finding.detail)


def _peer_keeps_emptied(result: Any, line: str) -> bool:
    """A line ``<path>: keys: peer [...], tclass [...]`` where the peer's result only
    lists more keys, each a nested collection without a leaf."""
    listed = _keys_of(line)
    if listed is None or not listed[0].startswith("result"):
        return False
    _, theirs, ours = listed
    extra = [key for key in theirs if key not in ours]
    if not extra or len(ours) + len(extra) != len(theirs):
        return False
    node = result
    for key in key_path(line):
        node = node.get(key, None) if is_collection(node) else None
    if not is_collection(node):
        return False
    found = [node.get(key, None) for key in extra]
    return all(is_collection(value) and not list(value.keys(True, True)) for value in found)


# a nested collection of a lazy stack's member after a write at an index: a lazy stack
# in the peer (the source's node put in), the member's own TensorDict in tclass
_WRITTEN_NODE_KEPT = re.compile(
    r"^result\S*\.kind: peer 'LazyStackedTensorDict', tclass 'TensorDict'$"
    r"|^result\S*\.<members>: peer \d+ \(.*, tclass None$"
)


def _written_node_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x[0] = x[mask,].clone()`` of a lazy stack whose members hold a nested
    TensorDict: tclass writes the values into it (it stays a TensorDict, as a tensor
    keeps its dtype), where the peer's member takes the source's nested lazy stack
    (program 1,005,853). Every line is such a node's kind or members."""
    if finding.kind != "result" or finding.step.op != "setitem":
        return False
    return bool(finding.detail) and all(_WRITTEN_NODE_KEPT.match(d) for d in finding.detail)


_MISSING_AS_NONE = re.compile(
    r"^result((?:\.<members>(?:\[\d+\])+|\['\w+'\])+)(?:\[\d+\])*: "
    r"(?:peer py \('NoneType', None\), tclass list of \d+|length: peer \d+, tclass \d+)$"
)


def _missing_separated_spans_its_node(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``separates(("n", "zz"), strict=False)`` of a lazy stack whose members' ``n`` (of
    more batch dims than the member) has no ``zz``: both results hold ``None`` there;
    tclass's spans ``n``'s batch (one ``None`` per element), the peer's only the
    member's, fewer dims than the collection holding it (fz30g: program 15,964,195 L8
    of features,entries,math,records)."""
    if finding.kind != "result" or finding.step.op != "separates":
        return False
    if "strict=False" not in finding.step.src:
        return False
    keys = _separated_keys(finding.step.src) or []
    for line in finding.detail:
        found = _MISSING_AS_NONE.match(line)
        if found is None:
            return False
        path = key_path(found[1])
        if path not in keys:
            return False
        value = mine.value.get(path, None) if is_collection(mine.value) else None
        if value is None:
            return False
        if not _all_none(value.tolist() if hasattr(value, "tolist") else value):
            return False
    return True


def _all_none(tree: Any) -> bool:
    if isinstance(tree, list):
        return all(_all_none(item) for item in tree)
    return tree is None
