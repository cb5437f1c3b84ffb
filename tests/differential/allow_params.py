"""The rules of the deliberate differences (``allowlist.ENTRIES``) about
``TensorDictParams``: what the peer raises where a TensorDictParams writes its data as
every other in-place write does, and the members and nested entries it keeps as
parameters (README: "`TensorDictParams` registers what it holds")."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts

# What the peer raises where a TensorDictParams writes its data as every other in-place
# write does (README: "`TensorDictParams` registers what it holds"), by op.
_PARAMS_PEER_RAISES = {
    "setitem": "leaf Variable that requires grad is being used",  # params[0] = rows
    "apply_": "a leaf Variable that requires grad is being used",  # through a lazy stack
    "load_state_dict": "Failed to update",  # into views of parameters
    "memmap": "Cannot modify locked TensorDict",  # of a locked one
    "saved_path": "Cannot modify locked TensorDict",  # the same, its saved_path read (fz28e)
    "empty": "Cannot modify locked TensorDict",  # empty() / empty(batch_size=) of a locked one
    "memmap_": "Cannot build a memmap TensorDict in-place",
}
# The peer's ``memmap`` of a locked one inside another op: its other names (``save``,
# ``dumps``), and the ops of a step that saves it first (``x.memmap(D).make_memmap(...)``,
# ``y.load_memmap_((x.memmap(D), D)[1])``, ``L.load_memmap(...)``, ``load_((x.save(D)``:
# programs 15,966,400 L8, 15,982,736 / 15,953,896 L12 of methods,features,entries,records,
# fz30d; ``x.memmap(D).make_memmap_from_tensor(...)``: 16,311,759 L8 of the same, og32b)
_PARAMS_SAVES = ("save", "dumps")
_PARAMS_SAVED_FIRST = (
    "load",
    "load_memmap",
    "load_memmap_",
    "load_",
    "make_memmap",
    "make_memmap_from_tensor",
)
_SAVED_IN_STEP = re.compile(r"(?:^|\()x\.(?:memmap|save|dumps)\(")


# ``x **= t`` and the other in-place operators (not ``==`` / ``!=`` / ``<=`` / ``>=``)
_INPLACE_OPERATOR = re.compile(r"^(?:\*\*|//|<<|>>|[-+*/%&|^@])=$")
_PARAMS_KIND = re.compile(
    r"^result(?:\.<members>\[\d+\]\[\d+\])*\.kind: peer 'TensorDictParams', tclass 'TensorDict'$"
)


# a member of the lazy stack, or of a lazy stack it holds (``unflatten``, 10,101,904, fz19b)
_PARAMS_MEMBER_KEPT = re.compile(
    r"^result(?:\.<members>\[\d+\]\[\d+\])+\.kind: peer 'TensorDict', tclass 'TensorDictParams'$"
)


_PARAMS_NESTED_LOCK = re.compile(r"^result(?:\['[^']*'\])+\.is_locked: peer True, tclass False$")


_KEYS = re.compile(r"^result: keys: peer \[(.*)\], tclass \[(.*)\]$")


# a nested entry that ``update`` wrote: a parameter, where the peer's is a plain tensor
_PARAMS_NESTED_WRAPPED = re.compile(
    r"^result(?:\['[^']*'\]){2,}: peer Tensor(\[[^\]]*\]\]), tclass Parameter\1$"
)
# the same in a TensorDictParams member of a lazy stack (``update`` of
# ``lazy_stack([params, params.clone()])``: program 16,024,549 L8 of
# methods,features,entries,records, fz30k), its nested entries two keys down or more
_PARAMS_MEMBER_WRAPPED = re.compile(
    r"^result(?:\.<members>\[\d+\]\[\d+\]|\['[^']*'\])*\.<members>\[\d+\]\[\d+\]"
    r"(?:\.<members>\[\d+\]\[\d+\]|\['[^']*'\])*: peer Tensor(\[[^\]]*\]\]), tclass Parameter\1$"
)


# what comes with a kept member: unlocked, as its own ``to`` gives (the peer's TensorDict
# is locked as the member was), its leaves parameters (the peer's tensors)
_PARAMS_MEMBER_UNLOCKED = re.compile(
    r"^result(?:\['[^']*'\]|\.<members>\[\d+\]\[\d+\])*"
    r"\.is_locked: peer True, tclass False$"
)


_PARAMS_MEMBER_LEAF = re.compile(r": peer Tensor(\[[^\]]*\]\]), tclass Parameter\1$")
# a leaf ``load_memmap_`` loads into one: the peer's a MemoryMappedTensor (or a plain
# tensor), tclass's the parameter (or buffer: an int64 leaf) it held, written in place
_PARAMS_LOADED_LEAF = re.compile(
    r": peer (?:MemoryMappedTensor|Tensor)(\[[^\]]*\]\]), tclass (?:Parameter|Tensor)\1$"
)


def _members_kept(lines: list[str]) -> bool:
    """A lazy stack's ``to`` that keeps its TensorDictParams members: their kind, lock
    and parameters."""
    return any(_PARAMS_MEMBER_KEPT.match(line) for line in lines) and all(
        _PARAMS_MEMBER_KEPT.match(line)
        or _PARAMS_MEMBER_UNLOCKED.match(line)
        or _PARAMS_MEMBER_LEAF.search(line)
        for line in lines
    )


# the views the peer's TensorDictParams leaves unlocked over a locked TensorDict (only
# their top level: their nested TensorDicts are locked); tclass locks them as every view
_HALF_LOCKED_VIEWS = frozenset({"flatten", "unflatten", "roll", "flip", "narrow", "rot90"})


_LOCKED_LIKE = re.compile(r"^result(\['[^']*'\])*\.is_locked: peer False, tclass True$")


# ``split_keys`` without ``inplace=True``: it changes nothing (program 1,001,201, inv18d)
_SPLIT_COPIES = re.compile(r"^x\.split_keys\((?!.*inplace=True)")


# What the peer raises inside an op of the locked TensorDictParams that
# ``TensorDict.from_modules(..., as_module=True)`` gives, by op: its ``empty()`` writes into
# its own locked copy (and so do ``save`` / ``memmap``, which build on it), its ``memmap_``
# refuses every TensorDictParams, and ``consolidate(filename=)`` cannot write its class
# into the metadata; tclass answers each as for a TensorDictParams over an unlocked
# TensorDict, whose ``empty()`` the peer gives too (fz29i)
_FROM_MODULES_FAILS_INSIDE = {
    "empty": "Cannot modify locked TensorDict",  # 16,027,200 L12 (methods,features,...)
    "load": "Cannot modify locked TensorDict",  # L.load(x.save(folder)): 16,027,960 L12
    # y.load_memmap_((x.memmap(folder), folder)[1]): its memmap (16,027,813 L12)
    "load_memmap_": "Cannot modify locked TensorDict",
    "memmap_": "Cannot build a memmap TensorDict in-place",  # clone().memmap_(): 16,025,039
    "from_consolidated": "Failed to convert the metadata to json",  # 16,020,404 L8
    "consolidate": "Failed to convert the metadata to json",  # (filename=): 16,023,727 L12
    # of its ``cpu()`` / ``to(dtype)`` copy, unlocked at its top level while its inner
    # TensorDict stays locked: the peer's ``set`` of a new nested key works there, its
    # ``set_non_tensor`` refuses it (og34l: 17,154,742 L16 of features,entries,math,records)
    "set_non_tensor": "Cannot modify locked TensorDict",
}


def _params_from_modules_fail_inside(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An op of the TensorDictParams ``from_modules(..., as_module=True)`` gives where
    the peer fails inside (``_FROM_MODULES_FAILS_INSIDE``) and tclass answers: the empty
    copy, the saved one loaded back (into its clone too), its clone memory-mapped in place,
    its consolidated file read back (programs 16,027,200 / 16,027,960 / 16,025,039 /
    16,027,813 L12 and 16,020,404 L8 of the fz29h windows; README: "peer fails inside")."""
    if finding.kind != "peer-raises" or mine.error is not None:
        return False
    text = _FROM_MODULES_FAILS_INSIDE.get(finding.step.op)
    made = any("from_modules(" in line and "as_module=True" in line for line in finding.lines)
    return made and text is not None and text in str(peer.error)


def _params_as_modules(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A program with a TensorDictParams: rows written at an index, ``apply_`` through a
    lazy stack, ``load_state_dict`` into views of parameters and ``memmap`` of a locked
    one, its ``empty()`` / ``empty(batch_size=...)`` when locked (program 49,847 of the five
    families; 8,304,339, fz18a), and its ``select`` and ``split_keys`` (a ``KeyError``
    for a key it lacks) and ``apply(fn, inplace=True)`` and ``named_apply(fn,
    inplace=True)``, work (the peer raises); ``set_`` of a missing nested key creates it
    (the peer drops it); an op on one without tensors gives a TensorDict (the peer's a
    TensorDictParams); ``to`` of a locked one unlocks its nested TensorDicts too, and
    ``to`` of a lazy stack keeps its TensorDictParams members (the peer's are TensorDicts);
    ``update`` of plain tensors makes nested entries parameters as top-level ones (the
    peer's nested ones are plain tensors, no longer registered; of a member of a lazy stack
    too, fz30k); ``torch.empty_like`` of a
    locked one is locked as its ``zeros_like`` (the peer's alone unlocked: program 5,502,622),
    and so are its ``flatten`` / ``unflatten`` / ``roll`` / ``flip`` / ``narrow`` / ``rot90``
    over a locked TensorDict, as its other views (the peer's top level alone unlocked);
    an in-place operator (``x **= t``) of one over a file gives it back, as every in-place
    op (the peer's a new TensorDict: program 2,827 of math, inv19a); ``load_state_dict``
    into a lazy stack of their (zeroed) clones writes the parameters in place, where the
    peer raises torch's leaf-variable error (program 10,805,075 of entries,combine --length
    6, inv20e); ``load_memmap_`` (``load_``) into one, a clone too, keeps its entries
    parameters (the peer's become plain tensors it no longer registers); its
    ``share_memory_()`` locks it, as a TensorDict's in both (the peer's stays unlocked:
    program 15,826,341 of methods,index,shape,combine L12, fz28c; 15,861,175, fz28e)."""
    if not any(
        "TensorDictParams(" in line or "as_module=True" in line for line in finding.lines
    ):  # (``from_modules(..., as_module=True)`` gives one: program 15,911,703 L12, fz29g)
        return False
    locked = "Cannot modify locked" in str(peer.error)
    if finding.kind == "family" and finding.step.op in ("select", "split_keys") and locked:
        return type(mine.error).__name__ == "KeyNotFoundError"  # a key it lacks (fz41b)
    if finding.kind == "peer-raises":
        if (".select(" in finding.step.src or _SPLIT_COPIES.search(finding.step.src)) and locked:
            return True  # the peer's lock check wraps select, which changes nothing
        inplace = "inplace=True" in finding.step.src
        if finding.step.op in ("apply", "named_apply") and inplace and locked:
            return True  # written in place, as into a locked TensorDict in both (fz41b)
        if finding.step.op == "load_state_dict" and _PARAMS_PEER_RAISES["apply_"] in str(
            peer.error
        ):
            return True  # loaded into a lazy stack of their clones (10,805,075, inv20e)
        op = finding.step.op
        if op in _PARAMS_SAVES or (
            op in _PARAMS_SAVED_FIRST and _SAVED_IN_STEP.search(finding.step.src)
        ):
            op = "memmap"  # (the peer's memmap of it, inside the step)
        text = _PARAMS_PEER_RAISES.get(op)
        return text is not None and text in str(peer.error)
    if finding.kind != "result":
        return False
    if finding.step.op in ("torch.empty_like", "share_memory_"):
        return all(_LOCKED_LIKE.match(line) for line in finding.detail)
    if finding.step.op in _HALF_LOCKED_VIEWS:  # locked as its TensorDict, as other views
        return all(line == "result.is_locked: peer False, tclass True" for line in finding.detail)
    if finding.step.op == "share_memory_":  # locked as the TensorDict it locks (15,861,175)
        return finding.detail == ["result.is_locked: peer False, tclass True"]
    if finding.step.op == "update" and all(
        _PARAMS_NESTED_WRAPPED.match(line)
        or (_PARAMS_MEMBER_WRAPPED.match(line) and line.split(":")[0].count("['") >= 2)
        for line in finding.detail
    ):
        return True
    if finding.step.op == "set_":
        found = [_KEYS.match(line) for line in finding.detail]
        return all(m is not None and m.group(2).startswith(m.group(1)) for m in found)
    if re.search(r"\.(?:to|cpu)\(", finding.step.src) and type(mine.value).__name__ == (
        "TensorDictParams"
    ):
        return all(_PARAMS_NESTED_LOCK.match(line) for line in finding.detail)
    if _INPLACE_OPERATOR.match(finding.step.op) and all(
        line == "result.kind: peer 'TensorDict', tclass 'TensorDictParams'"
        for line in finding.detail
    ):
        return any("PersistentTensorDict" in line for line in finding.lines)  # (2,827)
    if finding.step.op in ("load_memmap_", "load_") and all(
        _PARAMS_LOADED_LEAF.search(line) for line in finding.detail
    ):  # loaded as parameters, still registered (15,826,016 L12, fz28c); the peer's
        return True  # nested leaves MemoryMappedTensors (16,081,159 L8, fz30d)
    if re.search(r"\.to\(", finding.step.src) and _members_kept(finding.detail):
        return True  # a lazy stack's ``to`` keeps its TensorDictParams members
    return all(_PARAMS_KIND.match(line) for line in finding.detail) and not _holds_tensors(
        mine.value
    )


def _holds_tensors(value: Any) -> bool:
    """Whether the collection ``value`` (a lazy stack's members too) holds a tensor."""
    for member in getattr(value, "tensordicts", None) or [value]:
        for key in member.keys(True, True):
            if isinstance(member.get(key), torch.Tensor):
                return True
    return False


_GRAD_LEAF_REFUSED = "a leaf Variable that requires grad is being used in an in-place operation"


def _grad_leaves_loaded(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``load_state_dict`` into leaves that require grad (parameters: the swap
    ``to_module`` returns; ``float().requires_grad_()``, which makes a float32 entry's
    own tensor require grad): tclass writes their data outside autograd, as
    ``nn.Module.load_state_dict`` does, where the peer's in-place update fails on the
    first one (its ``_InplaceWriteError`` over autograd's error; programs 15,905,612 /
    15,905,941 of features,entries,math,records L12, 15,910,051 / 15,910,724 (L8, L12)
    and 15,912,181 (L12) of methods,features,entries,records, fz29g)."""
    if finding.kind != "peer-raises" or finding.step.op != "load_state_dict":
        return False
    if mine.error is not None or type(peer.error).__name__ != "_InplaceWriteError":
        return False
    error: BaseException | None = peer.error
    for _ in range(8):  # the error and those it was raised from
        if error is None:
            return False
        if _GRAD_LEAF_REFUSED in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


# x.set_non_tensor(('n', 'zz'), v).get_non_tensor(('n', 'zz')): a new nested key set, read
_NESTED_VALUE_SET_READ = re.compile(
    r"^x\.set_non_tensor\((\(['\"]\w+['\"](?:, ['\"]\w+['\"])+\)), .*\)\.get_non_tensor\(\1\)$"
)


def _params_stack_value_dropped(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``set_non_tensor(('n', 'zz'), v)`` of a lazy stack of ``TensorDictParams`` at a new
    nested key: the peer's members get an empty ``n`` (the value written into a copy it
    drops: a tensor set there is kept), so its ``get_non_tensor`` raises ``KeyError``;
    tclass writes and reads the value (program 16,029,467 of methods,index,shape,combine
    L16, fz30c)."""
    if finding.kind != "peer-raises" or finding.step.op != "set_non_tensor":
        return False
    if not isinstance(peer.error, KeyError) or mine.error is not None:
        return False
    if _NESTED_VALUE_SET_READ.match(finding.step.src.strip()) is None:
        return False
    lines = finding.lines[:-1]
    return any("L.TensorDictParams(" in line for line in lines) and any(
        "lazy_stack(" in line for line in lines
    )
