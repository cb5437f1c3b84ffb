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
# (fz28f) The same module methods of ``TensorDictParams(x.to_tensordict())`` of a locked
# ``x`` holding a Python value: the peer's copy shares the locked value node, so its
# constructor cannot unlock it ("part of a locked graph"); tclass's copy is its own
# (programs 15,881,914 L12 / 15,891,179 L16). A peer that fails so where tclass raises
# what the peer raises on a dense collection (``get_parameter`` of an integer buffer,
# "is not an nn.Parameter": 15,890,223 L16 / 15,881,030 L12) is one too ("family").
_PARAMS_OF_LAZY = "Using a LazyStackedTensorDict within a TensorDictParams isn't permitted"
_PARAMS_OF_LOCKED = "Cannot unlock a tensordict that is part of a locked graph"
_MODULE_OPS = (
    "named_parameters",
    "named_buffers",
    "parameters",
    "buffers",
    "train",
    "children",
    "get_parameter",
)
_FEATURE_FAILS_INSIDE = {
    "grad": "Expected a TensorDictBase instance but got <class 'NoneType'>",
    "asdict": "The default implementation of __deepcopy__() for non-wrapper subclasses",
    # (fz28f: ``from_dataclass(record, as_tensorclass=True)`` of a memory-mapped record
    # deep-copies it too: program 15,880,663 L12)
    "from_dataclass": "The default implementation of __deepcopy__() for non-wrapper subclasses",
    "astuple": "The default implementation of __deepcopy__() for non-wrapper subclasses",
    "from_csv": "If using all scalar values, you must pass an index",
    "from_pandas": "If using all scalar values, you must pass an index",
    **dict.fromkeys(_MODULE_OPS, _PARAMS_OF_LAZY),
}


# (fz28f) ``x.from_dict_instance(x.to_dict(), ...)`` of a collection holding a
# ``MetaData`` of a dict: the peer rebuilds the MetaData with the dict's items as
# keywords (a TypeError from inside); tclass reads the dict as a nested collection
_METADATA_OF_DICT = "MetaData.__init__() got an unexpected keyword argument"
# (fz28f) ``select(strict=False)`` of the TensorDictParams ``from_modules(...,
# as_module=True)`` gives: the peer's select writes into its locked copy and refuses
_PARAMS_SELECT_LOCKED = "Cannot modify locked TensorDict"
# (fz28f) ``from_pandas(x.to_pandas())`` of an ``attrs()`` result: the peer's
# ``to_pandas`` reads its TensorAttrs as a nested collection (asking for a separator),
# with one its shape's numbers spread over rows (pandas' refusal of columns of other
# lengths); tclass's is a record, one cell per row as the peer's records (programs
# 15,880,744 L12 / 15,890,554 L16)
_ATTRS_AS_COLUMNS = (
    "requires a separator parameter to flatten to DataFrame columns",
    "All arrays must be of the same length",
)


def _feature_fails_inside(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The peer raised one of ``_FEATURE_FAILS_INSIDE``'s errors for its op, where
    tclass answered (fz27e: programs 15,600,xxx-15,630,xxx of
    features,index,shape,combine)."""
    if finding.kind not in ("peer-raises", "family"):
        return False
    op, error = finding.step.op, str(peer.error)
    if op in _MODULE_OPS and _PARAMS_OF_LOCKED in error:
        return "TensorDictParams(x.to_tensordict())" in finding.step.src
    if finding.kind == "family" and op == "from_dict_instance":  # (15,891,752 L16, fz28f)
        return _METADATA_OF_DICT in error  # tclass's own error about the dict it reads
    if finding.kind == "family":
        return op in _MODULE_OPS and _PARAMS_OF_LAZY in error
    if op == "select" and "as_module=True" in " ".join(finding.lines):  # (15,905,008 L12)
        return _PARAMS_SELECT_LOCKED in error
    if op == "from_pandas" and any(".attrs()" in line for line in finding.lines):
        return any(text in error for text in _ATTRS_AS_COLUMNS)
    text = _FEATURE_FAILS_INSIDE.get(op)
    return text is not None and text in error


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
    lines = finding.detail
    return any(_DICT_FIELD.match(line) for line in lines) and all(
        _DICT_FIELD.match(line) or _kept_in_str_field(line, finding) for line in lines
    )


# (fz28f) A value a ``str`` field (``label``, ``s``) keeps as given where the peer casts
# it: a number (the peer's 0-d tensor, with its FutureWarning announcing Python values in
# 0.17); nested lists three deep (a value stack of 2 or more batch dims that
# ``dataclasses.replace`` passes at batch size ``[]``, or the class
# ``from_dataclass(record, as_tensorclass=True)`` makes: the peer holds a list of its
# value stacks); empty nested lists there (the peer's float tensor with no elements).
_NUMBER_IN_STR = re.compile(
    r"^result\['(label|s)'\]: peer Tensor\[torch\.(int64|float32|bool), shape \[\]\], "
    r"tclass py \('(int|float|bool)', "
)
_NUMBER_GIVEN = re.compile(
    r"""\.set\(['"](label|s)['"], (L\.MetaData\()?(-?[\d.]+|True|False)\b"""
    r"""|\.(label|s) = (-?[\d.]+|True|False)$|\.update\(\{['"](label|s)['"]: -?[\d.]"""
)
_STACKS_IN_LIST = re.compile(
    r"^result\['(label|s)'\](\[\d+\])+: peer values \(.*, tclass list of \d+$"
)
_EMPTY_LISTS = re.compile(
    r"^result\['(label|s)'\]: peer Tensor\[torch\.float32, shape \[[^\]]*\b0\]\], "
    r"tclass list of \d+$"
)
_GIVEN_WHOLE = re.compile(r"dataclasses\"\)\.replace\(|\.from_dataclass\(.*as_tensorclass=True")


def _kept_in_str_field(line: str, finding: Finding) -> bool:
    if _NUMBER_IN_STR.match(line):
        return any(_NUMBER_GIVEN.search(src) for src in finding.lines)
    if _STACKS_IN_LIST.match(line) or _EMPTY_LISTS.match(line):
        return _GIVEN_WHOLE.search(finding.step.src) is not None
    return False


def _value_kept_in_str_field(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A ``str`` field keeps a number or nested lists as given (README: "A number given
    to a `str` field"), where the peer casts them (programs 15,870,710 L8 ``set``;
    15,870,012 L8 / 15,880,887 L12 ``dataclasses.replace``; 15,890,595 L16
    ``from_dataclass``)."""
    if finding.kind == "peer-raises":  # the peer's 0-d tensor does not span the batch
        message = finding.detail[0]
        about = "0-dim tensors" in message and re.search(r"for key '(label|s)'", message)
        return bool(about) and _NUMBER_GIVEN.search(finding.step.src) is not None
    if finding.kind != "result" or not finding.detail:
        return False
    return all(_kept_in_str_field(line, finding) for line in finding.detail)


_RECORD_KIND = re.compile(r"^result(?:\['[^']*'\])*\.kind: peer '\w+', tclass 'TensorDict'$")
_VALUE_READ = re.compile(
    r"^result(?:\['[^']*'\])+: peer (py|size) \(.*\), tclass nontensor \(\('value', "
)
_KEYS = re.compile(r"^result(?:\['[^']*'\])*: keys: peer (\[.*\]), tclass (\[.*\])$")


def _attrs_of_a_record(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``attrs()`` of a record: tclass's result is a TensorDict (README: "What remains
    unsupported"), the peer's a record of its class; so its nested records are
    TensorDicts, its Python values nodes (the peer's fields read them) and its fields set
    to ``None`` no keys (programs 15,600,062 L8 / 15,610,008 L12 of
    features,index,shape,combine)."""
    if finding.kind != "result" or finding.step.op != "attrs" or not finding.detail:
        return False
    # (``attrs()`` of ``attrs()``: each tensor's TensorAttrs record a TensorDict too,
    # 15,891,283 L16, fz28f)
    if not _RECORD_KIND.match(finding.detail[0]):
        return False
    for line in finding.detail[1:]:
        keys = _KEYS.match(line)
        if keys is not None:
            if not set(ast.literal_eval(keys[2])) < set(ast.literal_eval(keys[1])):
                return False
        elif not (_RECORD_KIND.match(line) or _VALUE_READ.match(line)):
            return False
    return True
