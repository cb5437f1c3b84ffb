"""The rules of the deliberate differences (``allowlist.ENTRIES``) that the ops of the
family ``features`` meet (fz27e: autograd, constructors from other objects, tables,
record habits, modules). Each rule takes a finding and says whether the README bullet
of its entry covers it."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts

# What the peer raises from inside where tclass answers, by op (README: "Where the peer
# fails inside, tclass answers"): a record's ``grad`` when no leaf has one (its class
# rebuilt around the ``None`` its TensorDict gives: "Expected a TensorDictBase instance
# but got <class 'NoneType'>"; tclass gives ``None`` as for a TensorDict; program
# 15,600,481), ``dataclasses.asdict`` of a memory-mapped record (its deepcopy of a
# ``MemoryMappedTensor``; tclass copies the values: 15,630,010), ``from_csv`` /
# ``from_pandas`` of a collection without batch dims (pandas' frame of scalars it
# builds without an index; tclass writes one row: 15,600,111 / 15,600,371); and the
# module methods of a ``TensorDictParams`` of a collection holding a lazy stack (the
# peer's ``load_memmap`` of an unsqueezed record makes one): its constructor refuses it
# ("Using a LazyStackedTensorDict within a TensorDictParams isn't permitted"), tclass's
# registers the members' tensors (program 15,600,059).
_PARAMS_OF_LAZY = "Using a LazyStackedTensorDict within a TensorDictParams isn't permitted"
_FEATURE_FAILS_INSIDE = {
    "grad": "Expected a TensorDictBase instance but got <class 'NoneType'>",
    "asdict": "The default implementation of __deepcopy__() for non-wrapper subclasses",
    "from_csv": "If using all scalar values, you must pass an index",
    "from_pandas": "If using all scalar values, you must pass an index",
    **dict.fromkeys(
        (
            "named_parameters",
            "named_buffers",
            "parameters",
            "buffers",
            "train",
            "children",
            "get_parameter",
        ),
        _PARAMS_OF_LAZY,
    ),
}


def _feature_fails_inside(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The peer raised one of ``_FEATURE_FAILS_INSIDE``'s errors for its op, where
    tclass answered (fz27e: programs 15,600,xxx-15,630,xxx of
    features,index,shape,combine)."""
    if finding.kind != "peer-raises":
        return False
    text = _FEATURE_FAILS_INSIDE.get(finding.step.op)
    return text is not None and text in str(peer.error)


# (a lazy stack's members too: ``result.<members>[0][1]``)
_KEY_ORDER = re.compile(
    r"^result(?:\['[^']*'\]|\.<members>|\[\d+\])*: key order: peer (\[.*\]), tclass (\[.*\])$"
)


def _consolidated_key_order(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``TensorDict.from_consolidated(file)`` of what ``consolidate(filename=...)``
    wrote: tclass's collection lists its keys in their order at every level, as
    ``consolidate()`` keeps them in both libraries; the peer's lists the Python values,
    then the tensors, then the nested collections (the order of its metadata). Only the
    order differs (programs 15,600,040 / 15,610,xxx of features,index,shape,combine)."""
    if finding.kind != "result" or finding.step.op != "from_consolidated":
        return False
    for line in finding.detail:
        found = _KEY_ORDER.match(line)
        if found is None or sorted(ast.literal_eval(found[1]), key=repr) != sorted(
            ast.literal_eval(found[2]), key=repr
        ):
            return False
    return True


_DICT_FIELD = re.compile(r"^result\['inner'\]: peer dict \(.*, tclass Inner\(batch_size=", re.S)


def _dict_cast_by_the_constructor(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``Rec(**rec.to_dict(), batch_size=...)``: the dict given for the field annotated
    ``Inner`` is an ``Inner`` in tclass (README: "a nested tensorclass field turns a dict
    or TensorDict into that class"), where the peer's constructor keeps the dict
    (programs 15,600,374 / 15,610,088 of features,index,shape,combine); so does
    ``from_dataclass(record, as_tensorclass=True)``'s, which gives its class the record's
    fields as a dict (fz27f: programs 15,600,580 / 15,620,137 L8)."""
    if finding.kind != "result":
        return False
    op, src = finding.step.op, finding.step.src
    if op != "ctor" and not (op == "from_dataclass" and "as_tensorclass=True" in src):
        return False
    return all(_DICT_FIELD.match(line) for line in finding.detail)


_RECORD_KIND = re.compile(r"^result(?:\['[^']*'\])*\.kind: peer '\w+', tclass 'TensorDict'$")
_VALUE_READ = re.compile(r"^result(?:\['[^']*'\])+: peer py \(.*\), tclass nontensor \(\('value', ")
_KEYS = re.compile(r"^result(?:\['[^']*'\])*: keys: peer (\[.*\]), tclass (\[.*\])$")


def _attrs_of_a_record(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``attrs()`` of a record: tclass's result is a TensorDict (README: "What remains
    unsupported"), the peer's a record of its class; so its nested records are
    TensorDicts, its Python values nodes (the peer's fields read them) and its fields set
    to ``None`` no keys (programs 15,600,062 L8 / 15,610,008 L12 of
    features,index,shape,combine)."""
    if finding.kind != "result" or finding.step.op != "attrs" or not finding.detail:
        return False
    if not _RECORD_KIND.match(finding.detail[0]) or not finding.detail[0].startswith("result.kind"):
        return False
    for line in finding.detail[1:]:
        keys = _KEYS.match(line)
        if keys is not None:
            if not set(ast.literal_eval(keys[2])) < set(ast.literal_eval(keys[1])):
                return False
        elif not (_RECORD_KIND.match(line) or _VALUE_READ.match(line)):
            return False
    return True


# ``result['c']['tgt_shape'][1][0]: peer tuple of 2, tclass size ([1, 3],)``
_SIZE_AS_TUPLE = re.compile(r"^result[^:]*: peer tuple of (\d+), tclass size \(\[([\d, ]*)\],\)$")


def _size_kept_a_size(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A ``torch.Size`` value (a ``TensorAttrs``' ``tgt_shape``, of ``attrs()``) in a
    stack of Python values that is cloned or copied (``clone()``, ``copy.copy``, a
    ``torch.stack`` of a clone): tclass's stays a ``torch.Size``, the peer's copy turns
    it into a plain tuple of the same length (its pytree copy of the value; fz28d:
    programs 15,610,218 and 15,610,171 of features,index,shape,combine ``--length
    12``)."""
    if finding.kind != "result":
        return False
    for line in finding.detail:
        found = _SIZE_AS_TUPLE.match(line)
        if found is None:
            return False
        sizes = [part for part in found[2].split(",") if part.strip()]
        if int(found[1]) != len(sizes):
            return False
    return True
