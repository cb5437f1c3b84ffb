"""More rules of the deliberate differences (``allowlist.ENTRIES``), for the entries and
math families (``allow_ops.py`` is at its size bar): where the peer's answer loses an
entry or is computed along another dim, and tclass keeps it or refuses."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts


def _separated_keys(src: str) -> list[tuple[str, ...]] | None:
    """The keys ``x.separates(...)`` in ``src`` is given, as paths (None: not a call of
    string and tuple keys)."""
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
    return [(key,) if isinstance(key, str) else tuple(key) for key in keys]


# a lazy stack member's entry: the file's tensor in tclass, a copy in the peer
_MEMBER_MAPPED = re.compile(
    r"^result\.<members>.*: peer Tensor(\[[^\]]*\]\]), tclass MemoryMappedTensor\1$"
)


def _separated_once(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``separates`` given a key twice, or one key inside another (``("inner", "y")``
    and ``"inner"``, in either order): tclass returns all it removes, where the peer's
    later key overwrites the earlier one's part of its result (with ``None`` under
    ``strict=False``, or with what is left of the nested collection), so an entry
    removed is lost. Every line is about such a later key. Of a lazy stack, the members'
    own tensors (a memory-mapped one stays so, as a TensorDict's ``separates`` gives in
    both), where the peer's result holds copies, plain tensors."""
    if finding.kind != "result" or finding.step.op != "separates":
        return False
    if all(_MEMBER_MAPPED.search(line) for line in finding.detail):
        return True
    keys = _separated_keys(finding.step.src)
    if not keys:
        return False
    later = {
        key
        for i, key in enumerate(keys)
        if any(key == earlier[: len(key)] or earlier == key[: len(earlier)] for earlier in keys[:i])
    }
    for line in finding.detail:
        path = tuple(re.findall(r"\['([^']*)'\]", line.split(": ")[0]))
        if not any(path[: len(key)] == key for key in later):
            return False
    return bool(later)


def _softmax_on_ragged(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``softmax`` along the stack dim of a lazy stack whose members differ in shape:
    tclass's ``HeterogeneousEntryError`` (the dense stack it needs does not exist, as for
    ``cummax`` / ``cummin`` / ``cumsum`` in both), where the peer runs ``softmax`` on each
    member along that member's own dim instead, a wrong result; or, where a member holds
    an integer entry, torch's ``NotImplementedError`` for it (a softmax tclass never
    starts)."""
    if finding.kind == "family" and not isinstance(peer.error, NotImplementedError):
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
        entry = peer.value
        for key in re.findall(r"\['(\w+)'\]", found.group(1)):
            entry = entry.get(key) if hasattr(entry, "get") else None
        if not isinstance(entry, list) or not _stacks_in_lists(entry):
            return False
    return True


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
    """``update_at_`` of a locked record (memory-mapped) at an index that keeps every
    batch dim (``rec.update_at_(rec[...].apply(fn), I[...])``): written in place, where
    the peer's record calls ``update`` on its TensorDict, which the lock refuses."""
    if finding.kind != "peer-raises" or finding.step.op != "update_at_":
        return False
    record = re.match(r"\s*x = (Rec|Inner|Auto|NoCast|TOnly|Frozen)\(", finding.lines[0])
    return record is not None and "Cannot modify locked TensorDict" in str(peer.error)
