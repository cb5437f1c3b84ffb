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
