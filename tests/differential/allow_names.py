"""The rules of the deliberate differences (``allowlist.ENTRIES``) about dim names: names
dropped or kept by lazy stacks, indices and ``masked_select`` / ``pad_sequence`` results, and
names a lazy stack refuses. Each rule takes a finding and says whether the README bullet of
its entry covers it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .compare import key_path

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts


_NAMES_LINE = re.compile(r"^result(\[.*\])?\.names: peer (\[[^\]]*\]), tclass (\[[^\]]*\])$")


def _names_of(line: str) -> tuple[str, list[str], list[str]] | None:
    """The path and both sides' names of a ``....names: peer [...], tclass [...]`` line."""
    found = _NAMES_LINE.match(line)
    if found is None:
        return None
    sides = [re.findall(r"'[^']*'|None", side) for side in found.groups()[1:]]
    return found.group(1) or "", sides[0], sides[1]


_ONE_NAME = re.compile(
    r"^result(\[[^\]]*\])*\.names: peer \[None(?:, None)*\], "
    r"tclass \[(?:None, )*'[a-z]+'(?:, None)*\]$"
)  # one dim named in tclass (the stack dim: the first, or another), none in the peer


def _nested_names_dropped(line: str) -> bool:
    found = _NAMES_LINE.match(line)
    if found is None or found.group(1) is None:
        return False
    theirs, mine = (side.strip("[]").split(", ") for side in found.group(2, 3))
    return len(theirs) == len(mine) and set(theirs) == {"None"}


_LAZY_MADE = re.compile(r"\b(?:lazy_stack|LazyStackedTensorDict)\(")
# a lazy stack made by a step, ``to_lazystack`` included (a TensorDict's dim made the stack
# dim: the name of that dim alone, after a derived ``unsqueeze(0)``: kinds32p's roll line)
_STACK_MADE = re.compile(r"\b(?:lazy_stack|LazyStackedTensorDict|to_lazystack)\(")


def _stack_dim_name_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The name of the one dim of a lazy stack of members without batch dims (or of its stack
    dim when no member dim is named), kept by ``to_tensordict`` / ``contiguous`` /
    ``apply(batch_size=)`` and by ``narrow`` / ``flip`` / ``roll`` / ``tile`` /
    ``gather`` (as a TensorDict's in both), where the peer drops it (its lazy stack has
    names only when its members' dims have; program 2,902,715 of the six families; a
    stack along dim 1 named there: program 4,202,126 of ``--families entries``);
    ``unbind`` along another dim, whose parts keep it as ``stack[i]`` does in both (the
    peer's unbind drops it: program 4,400,807 of the six families; where the members'
    dims are named too, it keeps theirs: 10,005,577 of entries,records, fz19b); a key
    read of such a ``to_tensordict()`` (its nested collections lead with the name:
    program 5,604,404 of index,entries,records, left42); a reduction over the feature
    dims (``sum(dim="feature")``), which keeps the batch dims and their names as a
    TensorDict's in both (fz17b), or over given dims, which the peer computes from its
    ``to_tensordict()`` (``nansum(dim=(-1,), keepdim=True)``: program 46,825, inv18b). A
    stack of such stacks keeps the names of its stack dims, no more named than the
    program made lazy stacks (``named_apply(fn, batch_size=[2, 2])``: program 8,301,067
    of ``--length 8`` index,entries,records, fz18a); a ``reshape`` of a lazy stack of
    members without batch dims into more dims stacks each member in both (a stack of
    stacks, one more stack dim named; ``fliplr`` after it: program 10,300,741 of the six
    families, fz19c); a stack made by ``to_lazystack`` is one too (a TensorDict unsqueezed
    at 0, stacked there and named at that dim alone, then rolled: kinds32p's line,
    inv20d); an ``unflatten`` of that dim into one dim (``unflatten(-1, [-1])``, the
    identity: program 10,803,424 of index,combine,shape,entries --length 6, inv20e); a
    ``rot90`` (its dims rotated as a TensorDict's in both: program 12,600,068 of the six
    families ``--length 12``, fz23e); a ``to_safetensors`` / ``from_safetensors`` round
    trip (the peer writes such a stack's names as null: 17,022,490 L8 of extra,entries,
    fz32c); a ``gather`` of a stack of stacks made by ``flatten().unflatten(0, [1, 3])``
    (17,066,906 L10 of all families, fz33b)."""
    if finding.kind != "result":
        return False
    lazy = facts.kind == "lazy" or any(_STACK_MADE.search(line) for line in finding.lines)
    ops = ("to_tensordict", "contiguous", "apply", "named_apply", "narrow", "flip", "roll")
    ops += ("fliplr", "flipud", "rot90", "safetensors")
    if finding.step.op == "getitem_key":
        if not re.search(r"\.(?:to_tensordict|contiguous)\(\)\[", finding.step.src):
            return False
    elif finding.step.op == "unflatten":  # into one dim: the identity (10,803,424)
        if not _IDENTITY_UNFLATTEN.search(finding.step.src):
            return False
    elif finding.step.op not in ops + ("tile", "unbind", "gather"):
        reduced = finding.step.op in _REDUCTIONS and "dim=" in finding.step.src
        if not reduced or finding.step.family != "math":
            return False
    if not lazy:
        return False
    stacks = sum(len(_STACK_MADE.findall(line)) for line in finding.lines)
    stacks += _reshaped_after_stack(finding.lines[:-1])
    kept = finding.step.op == "unbind"  # the members' dim names kept by both (10,005,577)
    return all(
        (_ONE_NAME.match(line) or _stack_names(line, stacks, kept)) and _same_dims(line)
        for line in finding.detail
    )


_IDENTITY_UNFLATTEN = re.compile(r"\.unflatten\(-?\d+, \[-?\d+\]\)$")


def _reshaped_after_stack(lines: list[str]) -> int:
    """How many ``reshape`` / ``unflatten`` steps follow the program's first lazy stack
    (each can stack the members of a lazy stack of members without batch dims once more:
    ``flatten().unflatten(0, [1, 3])`` of a lazy stack of one member of batch size [3] is
    a lazy stack of a lazy stack in the peer, fz33b)."""
    made = [i for i, line in enumerate(lines) if _LAZY_MADE.search(line)]
    later = lines[made[0] + 1 :] if made else []
    return sum(".reshape(" in line or ".unflatten(" in line for line in later)


def _stack_names(line: str, stacks: int, kept: bool = False) -> bool:
    """Unnamed in the peer, at most ``stacks`` dims named in tclass (a stack's stack dims);
    with ``kept``, the peer's other dims named as tclass's (an ``unbind`` of a lazy stack
    whose members' dims are named: the peer drops the stack dim's name alone)."""
    parsed = _names_of(line)
    if parsed is None or (set(parsed[1]) != {"None"} and not kept):
        return False
    if any(theirs not in ("None", ours) for theirs, ours in zip(parsed[1], parsed[2])):
        return False
    dropped = [ours for theirs, ours in zip(parsed[1], parsed[2]) if theirs != ours]
    return 0 < len(dropped) <= stacks


_REDUCTIONS = ("sum", "nansum", "mean", "nanmean", "prod", "std", "var", "amax", "amin")
_REDUCTIONS += ("max", "min", "logsumexp", "median", "norm", "all", "any")


def _same_dims(line: str) -> bool:
    """Whether both sides of a ``.names`` line name as many dims."""
    parsed = _names_of(line)
    return parsed is not None and len(parsed[1]) == len(parsed[2])


def _broadcast_index_unnamed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Tensor indices over several named dims: the dim they broadcast to unnamed in
    tclass, named after one of those dims in the peer when the other's index has one
    element."""
    if finding.kind != "result" or finding.step.op not in ("getitem", "get_at"):
        return False
    src = finding.step.src
    lists = len(re.findall(r"[\[,]\s*\[", src))  # list indices: x[[-1], mask]
    if src.count("torch.tensor(") + src.count("t([") + lists < 2:
        return False
    parsed = [_names_of(line) for line in finding.detail]
    return all(
        p is not None
        and len(p[1]) == len(p[2])
        and all(a == b or b == "None" for a, b in zip(p[1], p[2]))
        for p in parsed
    )


def _masked_select_unnamed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``masked_select``'s new dim is unnamed, as torch's; the peer keeps the name of a
    one-dim batch when the collection holds a Python value, or when the mask selects
    nothing and it holds a nested collection (a lazy stack's members too; lazy35's
    programs 3,000,148 and 3,002,697 of index,entries), and drops it otherwise; a nested
    collection's first dim is that new dim (the peer's keeps the name, where its result's
    own dim is unnamed: program 50,089 of entries,index, left46a)."""
    if finding.kind != "result" or finding.step.op != "masked_select":
        return False
    parsed = [_names_of(line) for line in finding.detail]
    return all(
        p is not None and len(p[1]) == len(p[2]) and p[2][0] == "None" and p[1][1:] == p[2][1:]
        for p in parsed
    )


def _broadcast_unnamed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``broadcast_to`` of a lazy stack: every dim unnamed in tclass, as the peer's
    TensorDict's, where the peer's lazy stack keeps the names (nested ones too; left43);
    or ``to_tensordict()`` of a TensorDict ``broadcast_to`` gave unnamed dims, which the
    peer's names again from the stack of Python values its broadcast kept named (a
    Python-value node has no names in tclass; program 11,600,984 of the six families
    ``--length 6``, fz22c)."""
    if finding.kind != "result" or finding.step.op not in ("broadcast_to", "to_tensordict"):
        return False
    if finding.step.op == "to_tensordict" and not (
        facts.python_values and any("broadcast_to(" in line for line in finding.lines[:-1])
    ):
        return False
    parsed = [_names_of(line) for line in finding.detail]
    return all(p is not None and len(p[1]) == len(p[2]) and set(p[2]) == {"None"} for p in parsed)


def _pad_sequence_unnamed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``pad_sequence``'s result has unnamed dims, where the peer keeps the members' names
    at a level that holds a Python value; and so have the members ``unpad_sequence``
    gives back from it (the rows of that unnamed result: program 17,063,232 L8 of
    extra,index, og34a)."""
    if finding.kind != "result" or finding.step.op not in ("pad_sequence", "unpad_sequence"):
        return False
    if finding.step.op == "unpad_sequence" and "pad_sequence(" not in finding.lines[-1].replace(
        "unpad_sequence(", ""
    ):
        return False
    parsed = [_names_of(_MEMBERS.sub("", line)) for line in finding.detail]
    return all(p is not None and set(p[2]) == {"None"} for p in parsed)


_MEMBERS = re.compile(r"\.<members>(\[\d+\])+")  # a lazy stack's member (unpad's rows)


def _padded_value_names_mismatch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``pad_sequence`` of a named lazy stack holding a Python value (``torch.stack(...,
    dim=2).refine_names(None, "l", "j")``) and a slice of it (``x[:0]``): the peer's slice
    drops the stack dim's name of the nested value stack (``[None, 'l', None]``), and its
    ``lazy_stack`` of the padded values fails on its own names ("Not all dim names
    match"), where tclass pads (its value nodes carry no names; program 12,300,550 of the
    six families ``--length 10``, fz23b); ``broadcast_to`` of a named collection holding
    such a value stack (its own value stack's ``expand`` meets names that a slice dropped:
    17,029,497 L14 of methods,index,shape,combine, fz32c)."""
    if finding.kind != "peer-raises" or finding.step.op not in ("pad_sequence", "broadcast_to"):
        return False
    cause = peer.error if finding.step.op == "broadcast_to" else peer.error.__cause__
    named = any(re.search(r"names|\.rename_?\(", line) for line in finding.lines)
    return named and mine.error is None and "Not all dim names match" in str(cause)


def _pad_keeps_names(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``pad`` of a named lazy stack keeps its dim names (nested collections' too), as
    ``pad`` of a TensorDict does in both, where the peer's of a lazy stack drops them
    (program 7,700,325, nu17b)."""
    if finding.kind != "result" or finding.step.op != "pad" or not finding.detail:
        return False
    if not any(_LAZY_MADE.search(line) for line in finding.lines):
        return False
    parsed = [_names_of(line) for line in finding.detail]
    return all(
        p is not None and set(p[1]) == {"None"} and len(p[1]) == len(p[2]) and set(p[2]) != {"None"}
        for p in parsed
    )


def _names_unique(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Names repeated across a lazy stack's dims, or of the wrong length with ``None``
    entries: tclass's ``DimNameError``, as for a TensorDict in both libraries, where the
    peer 0.15 accepts them with a FutureWarning."""
    if finding.kind not in ("tclass-raises", "family") or type(mine.error).__name__ not in (
        "DimNameError",
        "DimNameCountError",  # (a DimNameError for a list of the wrong length)
    ):
        return False
    message = str(mine.error)
    return "dim names must be unique" in message or (
        "dims but the batch has" in message and "None" in message
    )


_NESTED_SIZE = re.compile(
    r"^result((?:\['[^']*'\])+)\.batch_size: peer \(([\d, ]*)\), tclass \(([\d, ]*)\)$"
)


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


def _empty_nested_resized(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x.batch_size = new`` where a nested collection without leaves has a batch size
    that does not begin with ``new``: tclass gives it ``new``, as every nested
    collection's batch size begins with its parent's; the peer leaves it as it was (a
    nested batch size its parent's does not begin), and its dims' names with it: tclass's
    new dims are unnamed (program 10,939,813 of shape --length 8: a named one kept)."""
    if finding.kind != "result" or finding.step.op != "set_batch_size":
        return False
    new = _sizes(finding.step.src.split("=", 1)[1].strip(" []"))
    resized = {
        m.group(1): _sizes(m.group(2))
        for m in map(_NESTED_SIZE.match, finding.detail)
        if m is not None
    }
    for line in finding.detail:
        names = _names_of(line)
        if names is not None and names[0] in resized:  # (program 55,813 of shape,combine)
            if set(names[2]) != {"None"} or len(names[1]) != len(resized[names[0]]):
                return False
            continue
        found = _NESTED_SIZE.match(line)
        if found is None:
            return False
        node = mine.value
        for key in key_path(found.group(1)):
            node = node.get(key)
        peer_size, mine_size = _sizes(found.group(2)), _sizes(found.group(3))
        if list(node.keys(True, True)) or peer_size[: len(new)] == new:
            return False
        if mine_size[: len(new)] != new:
            return False
    return True


def _value_node_names_unread(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``TensorDict.from_tuple(tuple(x.values()), ...)`` of a named collection holding a
    Python value: the peer's value node reads its parent's names and hands them to the new
    collection, where tclass's value nodes carry no names (README: "Every collection is a
    ``TensorDictBase``"), so its result is unnamed, as it is in both from plain tensors
    (programs 16,115,276 L8 of methods,features,entries,records and 16,060,007 L8 of
    methods,index,shape,combine, fz30k)."""
    if finding.kind != "result" or finding.step.op != "from_tuple":
        return False
    parsed = [_names_of(line) for line in finding.detail]
    if not all(p is not None and p[0] == "" and set(p[2]) == {"None"} for p in parsed):
        return False
    nodes = ("NonTensorData", "NonTensorStack", "MetaData")
    theirs = [v for v in peer.value.values() if type(v).__name__ in nodes]
    mine_named = [
        v
        for v in mine.value.values()
        if hasattr(v, "names") and type(v).__name__ not in nodes and set(v.names) != {None}
    ]
    return not mine_named and any(list(v.names) == list(peer.value.names) for v in theirs)


def _lazy_flatten_names_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``flatten`` of a lazy stack keeps the names of the dims it leaves alone (the merged
    dim unnamed), as ``flatten`` of a TensorDict does in both and torch's of a named
    tensor, where the peer's of a lazy stack (a TensorDict) drops every name
    (``flatten(-3)`` of a stack of a ``[1, 0, 4]`` TensorDict named ``['i', None, 'k']``:
    ``['i', None]``, the peer's ``[None, None]``; program 16,071,633 L8 of
    methods,index,shape,combine, fz30k)."""
    if finding.kind != "result" or finding.step.op != "flatten":
        return False
    if not (facts.kind == "lazy" or any(_LAZY_MADE.search(line) for line in finding.lines)):
        return False
    args = [int(a) for a in re.findall(r"-?\d+", finding.step.src.rsplit(".flatten(", 1)[-1])]
    start, end = (args + [0, -1])[:2] if args else (0, -1)
    for p in (_names_of(line) for line in finding.detail):
        if p is None or p[0] != "" or set(p[1]) != {"None"} or len(p[1]) != len(p[2]):
            return False
        merged = start if start >= 0 else len(p[2]) + end if end < 0 else None
        if merged is not None and (merged >= len(p[2]) or p[2][merged] != "None"):
            return False
    return True


def _empty_lazy_unflatten_named(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``unflatten`` of a lazy stack over no elements: tclass's result keeps the names
    of the dims, as ``unflatten`` of a TensorDict and of a lazy stack with elements do in
    both (the peer's quirk included: an unflattened dim's name goes to the last new dim),
    where the peer's result over no elements (a TensorDict) has none (ol31a: program
    16,201,121 L12 of methods,index,shape,combine)."""
    if finding.kind != "result" or finding.step.op != "unflatten":
        return False
    if not (facts.kind == "lazy" or any(_LAZY_MADE.search(line) for line in finding.lines)):
        return False
    if 0 not in getattr(mine.value, "batch_size", ()):
        return False
    for p in (_names_of(line) for line in finding.detail):
        if p is None or p[0] != "" or set(p[1]) != {"None"} or len(p[1]) != len(p[2]):
            return False
    return True
