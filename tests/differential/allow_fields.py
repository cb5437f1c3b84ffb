"""The rules of the deliberate differences (``allowlist.ENTRIES``) about records' fields
and the Python values collections hold: a TensorDict cast to a field's class, a dict
kept in a value field, fields set to ``None`` (unset, not written, not listed), values
kept through ``apply(batch_size=)``, and a record written at a ``None`` index. Each rule
takes a finding and says whether the README bullet of its entry covers it."""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import TYPE_CHECKING, Any

from .allow_names import _stack_dim_name_kept
from .allow_ops import (
    _MEMORY_MAPPED,
)
from .allow_saved import (
    _fewer_in_order,
    _keys_of,
)
from .compare import flat_values, key_path, list_dims
from .libs import TCLASS

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts


_CAST_KIND = re.compile(
    r"^result(\[[^\]]*\])+\.kind: peer '(?:LazyStacked)?TensorDict', tclass '(Inner|Rec)'$"
)
_CAST_KEYS = re.compile(r"^result(\[[^\]]*\])+: keys: peer \[[^\]]*\], tclass \[[^\]]*\]$")
_CAST_MEMBERS = re.compile(r"^result(\[[^\]]*\])+\.<members>: peer \d+ \(.*, tclass None$")


def _cast_to_the_field(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A TensorDict set into a field annotated with a tensorclass (``rec.inner = td``,
    ``rec.set("inner", td)``): that class in tclass, its fields listed (unset ones
    ``None``), where the peer stores the TensorDict as given; so too the empty collection
    ``create_nested("inner")`` sets there (in a lazy stack of records, where the peer's is
    a lazy stack of empty TensorDicts: program 15,841,558 of methods,index,shape,combine,
    fz28e)."""
    ops = ("set", "setattr", "setitem_key", "create_nested")
    if finding.kind != "result" or finding.step.op not in ops:
        return False
    kinds = [line for line in finding.detail if _CAST_KIND.match(line)]
    rest = [line for line in finding.detail if not _CAST_KIND.match(line)]
    return bool(kinds) and all(_CAST_KEYS.match(line) or _CAST_MEMBERS.match(line) for line in rest)


_VALUE_WRITES = ("update", "set", "setattr", "setitem_key")
_SAVES = ("memmap", "memmap_", "memmap_like", "save", "dumps")
# a dict given to a record's ``str`` field (``label``, ``s``): set, assigned or updated
_DICT_GIVEN = re.compile(
    r"\.set\(['\"](label|s)['\"], (L\.MetaData\()?\{|\.(label|s) = \{"
    r"|\.update\(\{['\"](label|s)['\"]: \{"
)
_DICT_NOT_FITTING = re.compile(r"^the Tensor \w+ has shape .* incompatible with the batch-size")
_DICT_KEPT = re.compile(r"^result(\.<members>\S*)?\['\w+'\]: peer TensorDict\(.*, tclass dict \(")
# the same given to a lazy stack of records: a value per element in tclass, as assigned
# in both libraries, where the peer's ``update`` / ``replace`` makes a lazy stack of
# TensorDicts of it (program 11,801,062 of the five families and records, fz22e)
_DICT_KEPT_STACKED = re.compile(
    r"^result\['(label|s)'\]: peer LazyStackedTensorDict\(batch_size=\[(\d+)[\d, ]*\], "
    r"keys=\[[^\]]*\]\), tclass list of (\d+)$"
)


# (fz29h) a number of the dict: the peer's TensorDict of it holds a 0-d tensor
_DICT_NUMBER_KEPT = re.compile(
    r"^result\['(label|s)'\](\['\w+'\])+: peer Tensor\[torch\.\w+, shape \[\]\], "
    r"tclass py \('(int|float|bool)', "
)


def _dict_kept(line: str, src: str) -> bool:
    """One difference of a dict kept in a value field (as given, or per element of a lazy
    stack of records when the step gives that field a dict)."""
    if _DICT_KEPT.match(line) or _DICT_NUMBER_KEPT.match(line):
        return True
    stacked = _DICT_KEPT_STACKED.match(line)
    if stacked is None:
        return False
    per_element = stacked.group(2) == stacked.group(3)  # the list runs along the first dim
    key = stacked.group(1)  # (create_nested sets {} there: fz28a, program 15,550,431 L16)
    return per_element and (f"'{key}': {{" in src or f".create_nested('{key}')" in src)


def _dict_kept_in_value_field(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A dict given through ``update`` (or ``replace``) to a record's field annotated with
    a Python type (``rec.update({"label": {"q": t}})``): kept as given in tclass, as the
    assignment keeps it in both libraries, where the peer's ``update`` makes it a
    TensorDict (of a lazy stack of records: one value per element in tclass, as assigned,
    a lazy stack of TensorDicts in the peer); into a saved record, where such a value is
    written to the folder, a ``NotSerializableError`` when the dict holds tensors, set or
    assigned too (the peer keeps it in memory only: a reload gives the old value), and by
    ``set_`` (the peer's ``_InplaceWriteError``, a ``ValueError``, as in memory), and by
    ``update_`` (the peer's looks for the dict's keys under the field: a ``KeyError``;
    program 858 of index,entries, inv19b). Where the dict's tensors do not fit the batch,
    the peer's ``update`` raises making its TensorDict. The same for ``Rec.from_dict(rec.
    to_dict())`` of a record holding such a dict (the peer's ``from_dict`` makes it a
    TensorDict), and for ``rec.create_nested("label")``, which sets ``{}`` there (of a
    lazy stack of records: ``{}`` per element, the peer's an empty lazy stack)."""
    if finding.kind == "family" and finding.step.op == "set_":  # the peer's set_ refuses it
        refused = _not_serializable(mine.error)
        return refused and "_InplaceWriteError" in type(peer.error).__name__
    if finding.kind == "family" and finding.step.op == "update_":
        refused = _not_serializable(mine.error)
        looked_under = isinstance(peer.error, KeyError) and "was not found in the dest" in str(
            peer.error
        )
        return refused and looked_under and "is of type torch.Tensor" in str(mine.error)
    if finding.kind == "tclass-raises" and finding.step.op in _VALUE_WRITES:
        refused = _not_serializable(mine.error)
        return refused and "is of type torch.Tensor" in str(mine.error)
    if finding.kind == "tclass-raises" and finding.step.op in _SAVES:
        # saved later, a record holding such a dict (the peer saves its TensorDict):
        # program 5,100,440 of ``--families entries,records --length 6``, fz40c
        refused = _not_serializable(mine.error)
        given = any(_DICT_GIVEN.search(line) for line in finding.lines[:-1])
        return refused and given and "is of type torch.Tensor" in str(mine.error)
    if finding.kind == "peer-raises" and finding.step.op in ("update", "replace"):
        # the peer's TensorDict of the dict does not fit the batch (a tensor of the dict
        # kept whole while the record was narrowed): program 9,901,758, fz19a
        given = any(_DICT_GIVEN.search(line) for line in finding.lines[:-1])
        return given and _DICT_NOT_FITTING.search(str(peer.error)) is not None
    ops = ("update", "replace", "from_dict", "from_dict_instance", "create_nested")
    if finding.kind != "result" or finding.step.op not in ops:  # (program 15,020,107, fz27a)
        return False
    if finding.step.op.startswith("from_dict"):  # ``Rec.from_dict(x.to_dict())`` of such a
        # record (program 9,194,497 of records,entries, inv19e); ``x.from_dict_instance``,
        # which calls it, of a ``MetaData`` of a dict set there (fz29h: 16,025,848 L12)
        if not any(_DICT_GIVEN.search(line) for line in finding.lines[:-1]):
            return False
    return all(_dict_kept(line, finding.step.src) for line in finding.detail)


_NONE_AS_LIST = re.compile(
    r"^result\S*\['\w+'\]: peer list of \d+, tclass py \('NoneType', None\)$"
)

# ``==`` / ``!=`` of the peer's stored ``None`` with itself: a bool tensor over the batch
_NONE_COMPARED = re.compile(
    r"^result\S*\['\w+'\]: peer Tensor\[torch\.bool, shape \[[\d, ]*\]\], "
    r"tclass py \('NoneType', None\)$"
)

_NONE_POPPED = re.compile(
    r"^result: peer value \(\('py', 'NoneType', None\), \[[\d, ]*\]\), "
    r"tclass py \('NoneType', None\)$"
)


# ``Cls.from_tensordict(TensorDict({..., 'f': None}))``: the peer's TensorDict stores a
# ``None`` value entry, which its record keeps (even a ``tensor_only`` class's field reads
# it back as a value over the batch, where its constructor given ``f=None`` reads ``None``)
_NONE_GIVEN_IN_TD = re.compile(r"\.from_tensordict\(L\.TensorDict\(\{.*'\w+': None[,}]")
_NONE_READ_IN_WORLD = re.compile(
    r"^result\['\w+'\]: peer value \(\('py', 'NoneType', None\), \[[\d, ]*\]\), "
    r"tclass py \('NoneType', None\)$"
)


def _none_field_unset(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A nested record's field set to ``None`` through ``update`` (``rec.update(rec.
    to_dict())`` where ``rec.inner.z`` is ``None``): not set in tclass, as at the top
    level in both libraries, where the peer keeps a ``None`` value entry under the nested
    record (a key of its ``keys()``, and a list of ``None`` once stacked or padded); so
    ``pop`` of that field gives the default, where the peer pops its ``None`` over the
    batch (program 57,520 of index,entries, inv19c), and ``==`` / ``!=`` of the record
    gives ``None`` there, where the peer's compares its ``None`` values: a bool tensor
    (program 13,600,047 of the six families --length 12, fz24c); so through
    ``Rec.from_tensordict(x.to_tensordict(retain_none=True))`` (15,890,402 L16, fz28f),
    and ``from_consolidated`` of the file of such a record (:func:`_none_values_more`). So
    too a record built by ``Cls.from_tensordict(TensorDict({..., "f": None}))``: its field
    ``f`` reads ``None`` in tclass as from ``Cls(f=None)`` in both, where the peer's reads
    its ``None`` value over the batch (a ``tensor_only`` class's too), lists it in its keys
    after ``save`` / ``load``, and stacks it as a list (og34k: programs 17,220,437,
    17,220,673, 17,220,710 L4 of records)."""
    if finding.kind != "result" or not any(
        ".update(" in line
        or ".from_dict(" in line
        or "retain_none=True)" in line
        or _NONE_GIVEN_IN_TD.search(line)
        for line in finding.lines
    ):
        return False
    if finding.step.src == "x.sorted_keys":
        return _none_keys_listed(finding, peer.value, mine.value)
    for line in finding.detail:
        if _NONE_AS_LIST.match(line):
            continue
        if finding.step.op == "pop" and _NONE_POPPED.match(line):
            continue
        if finding.step.op == "world" and _NONE_READ_IN_WORLD.match(line):
            continue
        if finding.step.op in ("==", "!=") and _NONE_COMPARED.match(line):
            continue
        keys = _keys_of(line)
        if keys is None:
            return False
        if finding.step.op == "from_consolidated" and _none_values_more(line, keys, peer):
            continue  # (the peer's file lists its Python values first: any order)
        if not _fewer_in_order(keys[1], keys[0]):
            return False
    return True


def _none_keys_listed(finding: Finding, theirs: Any, ours: Any) -> bool:
    """``x.sorted_keys`` of such a record: the peer's listing holds the keys of its
    ``None`` value entries too, each a field the program set ``None`` (og34k: program
    17,232,793 L6 of methods,features,entries,records)."""
    if not all(re.match(r"^result(\[1\])?: length: ", line) for line in finding.detail):
        return False
    if not isinstance(theirs, list) or not isinstance(ours, list):
        return False
    if not _fewer_in_order(ours, theirs):
        return False
    program = "\n".join(finding.lines[:-1])
    return all(
        isinstance(key, str) and re.search(rf"\b{key}=None|'{key}': None", program)
        for key in theirs
        if key not in ours
    )


def _none_values_more(line: str, keys: tuple[list[Any], list[Any]], peer: Any) -> bool:
    """Some of the peer's keys (any order), the others ``None`` values in the peer's
    collection: ``from_consolidated`` of such a record's file (17,030,415 L14 of
    features,index,shape,combine, fz32c)."""
    theirs, ours = keys
    if not set(ours) < set(theirs):
        return False
    path = key_path(line)
    try:
        node = peer.value.get(path) if path else peer.value
        more = [node.get(key) for key in theirs if key not in ours]
    except (KeyError, AttributeError, RuntimeError):
        return False
    return all(getattr(value, "data", value) is None for value in more)


_NONE_SET_BEFORE = re.compile(r"^x\.set_non_tensor\((['\"])(\w+)\1, None\)")
_NONE_LISTED_AT = re.compile(
    r"^result\['(\w+)'\]: peer list of \d+, tclass py \('NoneType', None\)$"
)


def _none_field_set_then_listed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A record's field set to ``None`` by ``set_non_tensor`` at an earlier step (not
    set in tclass: :func:`_none_field_set_read`), then an op that gives the peer's
    stored ``None`` value dims (``torch.unsqueeze(x, 0)``): the peer reads a list of
    ``None``, tclass the unset field's ``None`` (fz30j: program 16,123,011 of
    methods,index,shape,combine L12)."""
    if finding.kind != "result" or not finding.detail:
        return False
    unset = {
        found[2] for line in finding.lines[:-1] if (found := _NONE_SET_BEFORE.match(line.strip()))
    }
    for line in finding.detail:
        found = _NONE_LISTED_AT.match(line)
        if found is None or found[1] not in unset:
            return False
        values = peer.value.get(found[1]) if hasattr(peer.value, "get") else None
        values = values.tolist() if hasattr(values, "tolist") else values
        flat = [values]
        while any(isinstance(v, list) for v in flat):
            flat = [item for v in flat for item in (v if isinstance(v, list) else [v])]
        if not isinstance(values, list) or any(v is not None for v in flat):
            return False
    return True


_NESTED_NONE_KEPT = re.compile(
    r"^result((?:\[1\]\[\d+\])?(?:\['\w+'\])*): peer \w+\(batch_size=\[[\d, ]*\], "
    r"keys=\[[^\]]*\]\), "
    r"tclass py \('NoneType', None\)$"
)


def _none_field_kept_by_apply(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``apply(fn)`` where ``fn`` leaves nothing of a nested record whose field was set to
    ``None`` through ``from_dict`` / ``update``, or ``separates`` of the other keys: no
    leaf is left there in tclass (``None``), where the peer keeps the nested record for
    the ``None`` value entry it stored (its other entries ``None`` too), and the record
    holding it (the whole result: tclass's ``None``) where nothing else is left. The same
    for ``filter_empty_()`` (the peer's keeps it for its ``None`` values, though it drops
    the constructor's ``Inner(y=None, z=None)``: program 9,190,756 of records,entries).
    The same for ``.grad`` (``x.float().requires_grad_().grad``), an ``apply`` of each
    tensor's grad, none there: the peer's keeps the nested record for its ``None`` value
    entry, stored through ``Rec.from_tensordict(x.to_tensordict(retain_none=True))`` too
    (programs 15,966,106 L8 of features,math,index, 15,970,697 L8 of
    features,entries,math,records, 15,953,576 L12 of methods,features,entries,records)."""
    if finding.kind != "result" or finding.step.op not in _NONE_KEPT_OPS:
        return False
    return all(_nested_none_kept(finding, line, peer.value) for line in finding.detail)


_NONE_KEPT_OPS = ("apply", "separates", "filter_empty_", "grad")
_NONE_STORED = (".from_dict(", ".update(", "retain_none=True)")
_ARROW_NULLS = re.compile(r"^The Arrow column \(((?:'\w+', )*'\w+')\) has \d+ null value\(s\)\.")


def _none_field_null_in_arrow(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``from_arrow(to_arrow(x))`` of a record whose nested field is ``None``, stored by an
    earlier ``to_tensordict(retain_none=True)`` / ``from_dict`` / ``update``: the peer's
    ``None`` value entry is a null column of its table, which its ``from_arrow`` refuses
    by default ("has 2 null value(s)"), where tclass's field is not set, so its table has
    no such column (fz33b: 17,065,914 L8 of extra,features)."""
    if finding.kind != "peer-raises" or finding.step.op != "arrow" or mine.error is not None:
        return False
    if not any(any(made in src for made in _NONE_STORED) for src in finding.lines[:-1]):
        return False
    found = _ARROW_NULLS.match(str(peer.error))
    if found is None:
        return False
    column = ast.literal_eval(f"({found[1]},)")
    return column not in set(getattr(mine.value, "keys", lambda *_: ())(True))


def _nested_none_kept(finding: Finding, line: str, result: Any) -> bool:
    """A line of :func:`_none_field_kept_by_apply`: the peer's nested record at its path
    holds only ``None`` values (stored by an earlier ``from_dict`` / ``update`` /
    ``to_tensordict(retain_none=True)``), where tclass's is ``None``."""
    if not any(any(made in src for made in _NONE_STORED) for src in finding.lines[:-1]):
        return False
    found = _NESTED_NONE_KEPT.match(line)
    if found is None:
        return False
    node = result
    part = re.match(r"\[1\]\[(\d+)\]", found.group(1))  # a part of a tuple result
    if part is not None:
        node = node[int(part.group(1))] if isinstance(node, tuple) else None
    for key in key_path(found.group(1)):
        node = node.get(key) if node is not None else None
    return node is not None and _none_leaves(node.to_dict())


def _none_leaves(tree: Any) -> bool:
    if isinstance(tree, dict):
        return all(_none_leaves(value) for value in tree.values())
    return tree is None


# ``rec.set_non_tensor("label", None).get_non_tensor("label")`` of a record's field
# (the key a name or a tuple of names: ``('inner',)``, ``('inner', 'y')``, programs
# 15,962,188 / 15,964,107 / 16,002,810 of methods,features,entries,records and
# methods,index,shape,combine L8, fz30c)
_NONE_SET_READ = re.compile(
    r"^x\.set_non_tensor\((\(?['\"]\w+['\"](?:, ['\"]\w+['\"])*,?\)?), None\)"
    r"\.get_non_tensor\(\1\)$"
)


def _none_field_set_read(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``rec.set_non_tensor(field, None).get_non_tensor(field)`` of a record: the field
    is unset, so tclass reads ``None``, where the peer stores a ``None`` value and reads
    it back as one ``None`` per element, a list (fz28e: program 15,841,600 of
    methods,index,shape,combine, after an ``unflatten``). Of a lazy stack of records, each
    member's field is unset, so the stack has no such key: ``get_non_tensor`` raises
    ``KeyNotFoundError``, as for a field unset in its members in both libraries (fz29h:
    program 15,865,803 of methods,index,shape,combine L16)."""
    if finding.step.op != "set_non_tensor":
        return False
    found = _NONE_SET_READ.match(finding.step.src.strip())
    if found is None:
        return False
    if finding.kind == "tclass-raises":
        message = str(mine.error)
        key = ast.literal_eval(found[1])
        name = key[0] if isinstance(key, tuple) and len(key) == 1 else key
        unset = f"key {name!r} was not found in LazyStackedTensorDict"
        if type(mine.error).__name__ != "KeyNotFoundError" or not message.startswith(unset):
            return False
    elif finding.kind != "result" or mine.value is not None:
        return False
    values = peer.value.tolist() if hasattr(peer.value, "tolist") else peer.value
    flat = [values]
    while any(isinstance(v, list) for v in flat):
        flat = [item for v in flat for item in (v if isinstance(v, list) else [v])]
    return isinstance(values, list) and all(v is None for v in flat)


_SHAPE_ASKED = re.compile(r"^x\.get_item_shape\('(\w+)'\)$")


def _none_field_shape_asked(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``get_item_shape(field)`` of a record whose field is ``None``, after
    ``Rec.from_tensordict(x.to_tensordict(retain_none=True))``: the field is unset, so
    tclass raises ``KeyNotFoundError`` as both libraries do for a record built with that
    field ``None``, where the peer's round trip stored a ``None`` value whose shape it
    gives (og33j: program 17,103,003 of methods,features,entries,records L8)."""
    found = _SHAPE_ASKED.match(finding.step.src.strip())
    if finding.kind != "tclass-raises" or found is None:
        return False
    if not any("retain_none=True)" in line for line in finding.lines[:-1]):
        return False
    unset = f"key {found[1]!r} was not found"
    first = finding.lines[0].strip()
    return (
        type(mine.error).__name__ == "KeyNotFoundError"
        and str(mine.error).startswith(unset)
        and re.match(r"x = (Rec|Inner|Auto|NoCast|TOnly|Frozen)\(", first) is not None
        and f"{found[1]}=None" in first
    )


def _none_field_class_asked(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``entry_class(("inner", "z"))`` of a record whose nested field is ``None``, after
    ``Rec.from_dict(x.to_dict())``: the field is unset, so tclass gives ``NoneType`` as
    both libraries give for a record built with it ``None`` (and for a top-level field
    after the same round trip), where the peer's ``from_dict`` stored a nested ``None``
    value (program 17,151,991 L16 of methods,features,entries,records, fz34b)."""
    if finding.kind != "result" or finding.step.op != "entry_class":
        return False
    if not any(".from_dict(x.to_dict()" in line for line in finding.lines[:-1]):
        return False
    return finding.detail == ["result: peer 'NonTensorData', tclass 'NoneType'"]


def _none_field_not_written(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``rec.update_(rec.to_dict())`` where a field is ``None``: nothing written there in
    tclass (the field stays unset), where the peer raises ``KeyError`` for the key it does
    not hold; so does ``update_({key: None})`` of a lazy stack whose members hold ``key``
    in some only."""
    if finding.kind != "peer-raises" or finding.step.op != "update_":
        return False
    found = re.search(r"The key (\([^)]*\)|\w+) was not found in the dest", str(peer.error))
    if found is None or not isinstance(peer.error, KeyError) or mine.value is None:
        return False
    text = found.group(1)
    key = ast.literal_eval(text) if text.startswith("(") else text
    if mine.value.get(key, None) is None:
        return True
    # a key only some members of a lazy stack hold (not its key), given None: nothing
    # written either (program 1,904,794 of ``records``, inv20a)
    given_none = re.search(rf"\{{'{text}': None\}}", finding.step.src) is not None
    stack = getattr(mine.value, "_tensordict", mine.value)
    return given_none and key not in mine.value.keys(True) and hasattr(stack, "tensordicts")


def _none_field_listed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The same, read through ``keys()``: the peer lists the nested ``None`` value it
    stored (``list(x.keys(True))``) or finds it (``("inner", "z") in x.keys(True, True)``,
    though its iteration of the leaves skips it), where tclass has no such key (and
    ``select``, ``pop`` or ``rename_key_`` of it is a ``KeyNotFoundError``, as of an unset
    field in both)."""
    if finding.kind == "result" and finding.step.op == "non_tensor_items":
        # a record's: the peer lists its None fields too (its keys() does not)
        theirs, ours = peer.value, mine.value
        if not isinstance(theirs, list) or not isinstance(ours, list):
            return False
        kept = [(key, value) for key, value in theirs if value is not None]
        return len(kept) == len(ours) and [k for k, _ in kept] == [k for k, _ in ours]
    if finding.kind == "tclass-raises" and (
        _unset_field_named(finding, mine.error) or _unset_by_set_non_tensor(finding, mine.error)
    ):
        return True
    # (``to_tensordict(retain_none=True)`` stores them too: keys and items of the
    # record made from it, fz30g: programs 16,011,517 L12 of features,math,index and
    # 16,028,277 L8 of features,entries,math,records)
    retained = any("retain_none=True)" in line for line in finding.lines[:-1])
    if not retained and not any(
        ".update(" in line or ".from_dict(" in line for line in finding.lines[:-1]
    ):
        return False
    # (``rename_keys`` of that key: the peer's moves its ``None``, then raises for a
    # destination taken, fz30g: program 15,964,497 L8 of methods,features,entries,records)
    renamed = finding.kind == "family" and finding.step.op == "rename_keys"
    if (finding.kind == "tclass-raises" or renamed) and type(
        mine.error
    ).__name__ == "KeyNotFoundError":
        # the key named alone or as the nested key's last name (program 9,201,843)
        missing = re.search(
            r"key (?:\('\w+', )*'(\w+)'\)?,? (?:which )?was not found", str(mine.error)
        )
        if missing is not None and retained and f"['{missing.group(1)}']" in finding.step.src:
            # a field of the record read by key, after ``consolidate`` too (ol31a: program
            # 16,302,047 L12 of methods,features,entries,records)
            return missing.group(1) in {field.name for field in dataclasses.fields(TCLASS.rec)}
        return missing is not None and f", '{missing.group(1)}')" in finding.step.src
    if finding.kind != "result":
        return False
    if finding.step.op == "get_default" and peer.snap == ("py", "NoneType", None):
        return re.match(r"x\.get\(\('\w+', '\w+'\)", finding.step.src) is not None
    if finding.step.op in ("items", "values") and isinstance(peer.value, list):
        return _none_items_only(peer.value, mine.value)
    if finding.step.op == "contains":
        key = finding.step.src.split(" in x.keys(")[0]
        return key.startswith("(") and "," in key and (peer.value, mine.value) == (True, False)
    if finding.step.op != "keys" or not isinstance(peer.value, list):
        return False
    extra = [key for key in peer.value if key not in mine.value]
    fields = {field.name for field in dataclasses.fields(TCLASS.rec)} if retained else set()
    return (
        bool(extra)
        and all((isinstance(key, tuple) and len(key) > 1) or key in fields for key in extra)
        and ([key for key in peer.value if key in mine.value] == mine.value)
    )


# tclass's error for a field of the record (``Rec`` / ``Inner``) that is not set
_UNSET_FIELD = re.compile(r"^key '(\w+)' was not found in (Rec|Inner) with keys \[")


def _unset_field_named(finding: Finding, error: Any) -> bool:
    """``separates`` of a record's field that is ``None`` after
    ``Rec.from_tensordict(x.to_tensordict(retain_none=True))``: not set in tclass (a
    ``KeyNotFoundError``, as of an unset field), where the peer's record holds a ``None``
    value and separates it (fz30g: program 15,963,362 L12 of features,entries,math,records)."""
    if type(error).__name__ != "KeyNotFoundError":
        return False
    if finding.step.op == "select":
        return _none_entry_selected(finding, str(error))
    if finding.step.op != "separates":
        return False
    found = _UNSET_FIELD.match(str(error))
    if found is None or found[1] in re.findall(r"'(\w+)'", str(error).split(" with keys ")[1]):
        return False
    built = any("retain_none=True)" in line for line in finding.lines[:-1])
    declared = {field.name for field in dataclasses.fields(TCLASS.classes()[found[2]])}
    return built and found[1] in declared


def _none_entry_selected(finding: Finding, message: str) -> bool:
    """``select(f)`` of a record built by ``Cls.from_tensordict(TensorDict({..., "f":
    None}))``: ``f`` is not set in tclass (a ``KeyNotFoundError``, as of an unset field),
    where the peer's record holds its ``None`` value (og34k: program 17,260,431 L4 of
    records, memory-mapped first: the message names the record's TensorDict)."""
    found = re.match(r"^key '(\w+)' was not found in \w+ with keys \[", message)
    if found is None or finding.step.src.strip() != f"x.select('{found[1]}')":
        return False
    first = finding.lines[0].strip()
    return (
        re.match(r"x = (Rec|Inner|Auto|NoCast|TOnly|Frozen)\.from_tensordict\(", first) is not None
        and f"'{found[1]}': None" in first
    )


def _unset_by_set_non_tensor(finding: Finding, error: Any) -> bool:
    """``is_non_tensor(key)`` after ``set_non_tensor(key, None)`` of a record's field
    (``("inner", "y")``): the field is unset in tclass (a ``KeyNotFoundError``), where
    the peer stores a ``None`` value (fz30g: program 16,025,336 L12 of
    methods,index,shape,combine; see ``_none_field_set_read``)."""
    if type(error).__name__ != "KeyNotFoundError" or finding.step.op != "is_non_tensor":
        return False
    found = re.fullmatch(r"x\.is_non_tensor\((.+)\)", finding.step.src.strip())
    if found is None:
        return False
    unset = re.compile(rf"^x\.set_non_tensor\({re.escape(found[1])}, None\)")
    return any(unset.match(line) for line in finding.lines[:-1])


def _none_items_only(theirs: list[Any], ours: list[Any]) -> bool:
    """Whether ``theirs`` (``items()`` / ``values()``) is ``ours`` and nested ``None``
    values besides (the peer's nodes of ``None``)."""
    if not isinstance(ours, list) or len(theirs) <= len(ours):
        return False
    values = [item[1] if isinstance(item, tuple) else item for item in theirs]
    extra = [value for value in values if value is None or getattr(value, "data", 0) is None]
    return len(theirs) - len(extra) == len(ours)


_NONE_FOR_EMPTY = re.compile(
    r"^result: peer TensorDict\(batch_size=\[[\d, ]*\], keys=\[[^\]]*\]\), "
    r"tclass py \('NoneType', None\)$"
)

# the peer's record with its values dropped, each field ``None``
_EMPTY_RECORD_FOR_NONE = re.compile(
    r"^result: peer (Rec|Inner)\(batch_size=\[[\d, ]*\], keys=\[[^\]]*\]\), "
    r"tclass py \('NoneType', None\)$"
)


_FIELD_DROPPED = re.compile(r"^result\['(\w+)'\]: peer py \('NoneType', None\), tclass ")


def _holds_value(record: Any, key: str) -> bool:
    """Whether ``record`` holds a Python value (one or per element) at ``key``."""
    is_non_tensor = getattr(record, "is_non_tensor", None)
    return is_non_tensor is not None and key in record.keys() and bool(is_non_tensor(key))


def _values_through_apply(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``apply(fn, batch_size=...)`` (or ``named_apply``) of a collection that holds
    per-element Python values (or of a lazy stack that holds values): kept where the new
    batch size keeps their
    dims, ``None`` when no leaf is left (a lazy stack computed on its dense form), where
    the peer drops them (a lazy stack's single values too) and keeps the nodes that held
    them. With them, a lazy stack's dim names as its README bullet keeps them (its stack
    dim's name alone: program 100,900 of index,entries, inv19c)."""
    if finding.kind != "result" or finding.step.op not in ("apply", "named_apply"):
        return False
    if "batch_size=" not in finding.step.src:
        return False
    names = [line for line in finding.detail if ".names: " in line]
    if names and not _stack_dim_name_kept(
        dataclasses.replace(finding, detail=names), facts, peer, mine
    ):
        return False
    for line in finding.detail:
        if line in names:
            continue
        if _NONE_FOR_EMPTY.match(line):
            continue
        if _EMPTY_RECORD_FOR_NONE.match(line) and _none_leaves(peer.value.to_dict()):
            continue  # a lazy stack of records holding values only (og34k: 17,232,313 L6)
        field = _FIELD_DROPPED.match(line)  # a record's field: the peer reads it None
        if field is not None and _holds_value(mine.value, field.group(1)):
            continue
        keys = _keys_of(line)
        if keys is None or not _fewer_in_order(*keys):
            return False
        theirs, ours = keys
        extra = [key for key in ours if key not in theirs]
        if line.startswith("result: ") and not all(_values_only(mine.value, k) for k in extra):
            return False
    return True


def _values_only(collection: Any, key: str) -> bool:
    """Whether the entry ``key`` holds Python values: it is one, or a nested collection
    whose every leaf is one (``set_non_tensor(("zz", "a"), ...)``: fz30g, program
    15,953,908 L12 of methods,features,entries,records)."""
    if collection.is_non_tensor(key):
        return True
    node = collection.get(key)
    if not hasattr(node, "keys"):
        return False
    values = [k for k in node.keys(True) if node.is_non_tensor(k)]
    tensors = [k for k in node.keys(True, True) if k not in values]
    return bool(values) and not tensors


def _record_written_at_none(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A record without batch dims written at a ``None`` index (``x[None] = x[None].
    apply(...)``): written in place in tclass, so the collection it was read from sees
    the write, where the peer swaps new tensors into the record; through
    ``update_at_(v, I[None, ...])`` (or ``I[None, tensor]``) those have the written
    value's shape (a leading 1, and the index tensor's dims).
    Also ``rec.update_at_(v, index)`` with a source of the record's own batch size at
    any index (``I[None, 0]`` of a record with a leading 1), which the peer's record
    passes to ``update`` (its docstring: replaced whatever the index, until its 0.17):
    written in place in tclass, so the records it was read from see it (fz41b); so its
    memory-mapped tensors stay (program 66,005), a Python value stays per-element
    (42,482), a source with more dims of size 1 is written at ``I[:, None, None]``
    (46,765), and one that does not fit the index (``I[..., ::3]`` of batch ``[4, 1]``)
    is the ``ShapeError`` a TensorDict's ``update_at_`` raises in both (58,742; inv18b;
    ``I[..., None]`` reaching a feature dim of batch ``[]``: 8,303,409 of ``--length 8``
    index,entries,records, fz18a; a Python value's extra list level too: 12,000,549 of
    ``--length 6`` index,entries,shape,combine,math,records, fz22g), or a mask after
    ``...`` that meets a feature dim of another size (``I[..., t([1], 'bool')]``): the
    ``DimError`` (an ``IndexError``) a TensorDict's ``update_at_`` raises in both
    (16,002,854 of methods,index,shape,combine L8, fz30b)."""
    if facts.kind != "record" or finding.step.op != "update_at_" and finding.kind != "alias":
        return False
    if finding.kind == "tclass-raises":  # the source has the entry's shape, not the index's
        message = str(mine.error)  # (or torch's broadcast fails, as a TensorDict's in both)
        name = type(mine.error).__name__
        return (
            _WHOLE_SOURCE.search(message) is not None
            or (name == "ShapeError" and _NOT_FITTING.search(message) is not None)
            or (name == "DimError" and _MASK_AT_FEATURES.search(message) is not None)
        )
    if finding.kind == "result":
        at_none = re.search(r", I\[.*\bNone\b.*\]\)$", finding.step.src)  # I[None, t([-1])] too
        nb = len(getattr(mine.value, "batch_size", ()))
        if at_none is not None and all(
            _more_unit_dims(line)
            or _source_shaped(line, nb)
            or _value_more_unit_dims(line, peer, mine)
            for line in finding.detail
        ):
            return True
        return all(
            _MEMORY_MAPPED.search(line) or _one_value_per_element(line, peer, mine)
            for line in finding.detail
        )
    if finding.kind != "alias":
        return False
    none_written = (re.match(r"x\[None[^\]]*\] = ", line) for line in finding.lines)
    updated_at = (re.match(r"(x = )?x\.update_at_\(", line.strip()) for line in finding.lines)
    if not any(none_written) and not any(updated_at):
        return False
    return all(": values differ: " in line for line in finding.detail)


# (tclass's tensor a MemoryMappedTensor where the record was loaded: written in place,
# the peer's a new tensor; program 15,826,624 of methods,index,shape,combine L12, fz29e)
_SHAPES = re.compile(
    r"^result\S*: peer Tensor\[([\w.]+), shape \[([\d, ]*)\]\], "
    r"tclass (?:MemoryMapped)?Tensor\[\1, shape \[([\d, ]*)\]\]$"
)
_NOT_FITTING = re.compile(
    r"^set_at_\(.*\): cannot write a value of shape \[[\d, ]*\] into elements .* of the entry "
    r"of shape \[[\d, ]*\]: The expanded size of the tensor"
)
_MASK_AT_FEATURES = re.compile(
    r"^set_at_\(.*, \(Ellipsis, tensor\(\[[a-zA-Z, ]*\]\)\)\): The shape of the mask "
    r"\[[\d, ]*\] at index 0 does not match the shape of the indexed tensor .*; the index "
    r"selects elements of the entry itself, its feature dims included$"
)
_WHOLE_SOURCE = re.compile(
    r"cannot write a value of shape (\[[\d, ]*\]) into elements .* of the entry of shape \1: "
)


def _more_unit_dims(line: str) -> bool:
    """The peer's tensor: tclass's with more dims of size 1 (the source's shape)."""
    found = _SHAPES.match(line)
    if found is None:
        return False
    theirs, ours = ([int(n) for n in re.findall(r"\d+", side)] for side in found.group(2, 3))
    unit = [n for n in theirs if n != 1] == [n for n in ours if n != 1]
    return unit and len(theirs) > len(ours)


def _value_more_unit_dims(line: str, peer: Any, mine: Any) -> bool:
    """A record's Python value: the peer's the same values in more levels of one list
    each (the written source's shape, as ``_more_unit_dims`` for tensors)."""
    both = _field_values(
        r"^result\['(\w+)'\][\[\]\d]*: peer list of 1, tclass py \(", line, peer, mine
    )
    if both is None:
        return False
    theirs, ours = both
    return (
        len(list_dims(theirs)) > len(list_dims(ours))
        and flat_values(theirs) == flat_values(ours) != []
    )


def _field_values(pattern: str, line: str, peer: Any, mine: Any) -> tuple[Any, Any] | None:
    """The value the field that ``pattern`` finds in ``line`` (its first group) holds in
    the peer's result and in tclass's (None where the line does not match or either
    cannot be read)."""
    found = re.match(pattern, line)
    if found is None:
        return None
    try:
        return peer.value.get(found.group(1)), mine.value.get(found.group(1))
    except (KeyError, AttributeError, RuntimeError):
        return None


def _source_shaped(line: str, nb: int) -> bool:
    """The peer's tensor: the written value's (batch dims the index's, ``I[None,
    t([0, 0, -1])]``: ``[1, 3]``), the same feature dims as tclass's of ``nb`` batch dims
    (program 8,702,738 of index,shape,combine --length 8)."""
    found = _SHAPES.match(line)
    if found is None:
        return False
    theirs, ours = ([int(n) for n in re.findall(r"\d+", side)] for side in found.group(2, 3))
    features = ours[nb:]
    return len(theirs) > len(ours) and theirs[len(theirs) - len(features) :] == features


def _one_value_per_element(line: str, peer: Any, mine: Any) -> bool:
    """The peer's one Python value where tclass's are per-element, each that value."""
    both = _field_values(
        r"^result\['(\w+)'\]: peer py \(.*\), tclass list of \d+$", line, peer, mine
    )
    if both is None:
        return False
    theirs, ours = both
    while ours and isinstance(ours, list) and all(isinstance(item, list) for item in ours):
        ours = [value for item in ours for value in item]
    return isinstance(ours, list) and bool(ours) and all(value == theirs for value in ours)


_SAVES = ("memmap", "memmap_", "memmap_like", "save", "dumps", "consolidate", "to_h5")


def _not_json_refused(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Saving a Python value that is not JSON (a tensor a row's ``to_dict()`` wrote back
    into a value): a ``NotSerializableError`` without ``allow_pickle=True`` in tclass,
    where the peer pickles it; or writing one into a collection loaded from (or saved
    to) a folder, which tclass writes through to the folder's values (fz17b: ``x[idx] =
    x[idx].to_dict()`` after ``load``), where the peer changes memory only. A ``load`` /
    ``load_memmap`` of what its own step saves (``Rec.load_memmap((x.memmap(D), D)[1])``)
    is such a save (program 15,310,501 of the six families ``--length 16``, fz26e: a dict
    of tensors set into ``label``), and so is a ``from_zarr`` / ``from_h5`` of what its
    step writes (``from_zarr((x.to_zarr(path), path)[1])`` of a numpy array value that
    ``from_pandas`` put in ``label``: the peer's zarr store pickles it; program 15,920,144
    L12 of features,math,index, fz29b). The same where the step's other ops read the folder
    it saved (``x.memmap(D).memmap_refresh_()``, ``.saved_path``, ``.make_memmap(...)``,
    ``load_memmap_``: fz30d,
    programs 15,963,254 L12 and 15,972,218 L8 of methods,features,entries,records)."""
    if finding.kind != "tclass-raises" or not _not_serializable(mine.error):
        return False
    saved_inside = (
        finding.step.op in _READS_SAVED and _SAVED_INSIDE.search(finding.step.src) is not None
    ) or (finding.step.op in ("from_zarr", "from_h5") and _STORED_INSIDE.search(finding.step.src))
    if finding.step.op not in _SAVES and not saved_inside:
        return _WRITTEN_THROUGH.match(str(mine.error)) is not None
    return "allow_pickle" not in finding.step.src


_SAVED_INSIDE = re.compile(r"(?:^|\()x\.(save|memmap)\(")  # the step reads what it saves
# the ops of a step that saves first: ``x.clone().load_memmap_((x.memmap(D), D)[1])``,
# ``x.memmap(D).memmap_refresh_()``, ``str(x.memmap(D).saved_path)``, ``x.memmap(D).
# make_memmap(...)`` (fz30d: attrs() results, whose torch.device the peer pickles; a dict
# of tensors set into ``label``)
_READS_SAVED = (
    *("load", "load_memmap", "load_memmap_", "load_", "memmap_refresh_", "saved_path"),
    *("make_memmap", "make_memmap_from_tensor"),
)
_STORED_INSIDE = re.compile(r"\.to_(zarr|h5)\(")  # the step's from_zarr reads what it writes


# the saved folder's rewrite of a value node (tclass/_io/memmap/_saved_folder.py)
_WRITTEN_THROUGH = re.compile(r"writing '[^']*' into '[^']*': cannot save the values at key ")


def _value_fits_its_new_node(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``rename_key_("v", ("n", "w"))`` of a Python value into a nested collection of more
    batch dims: tclass's value takes that collection's batch size, as ``set`` gives it in
    both, where the peer's keeps its old one (fewer dims than the collection holding it)."""
    if finding.kind != "result" or finding.step.op != "rename_key_":
        return False
    found = re.search(r"rename_key_\((.+?), (\(.+?\)|'[^']*'|\"[^\"]*\")", finding.step.src)
    if found is None:
        return False
    try:
        new = ast.literal_eval(found.group(2))
        theirs, ours = peer.value.get(new), mine.value.get(new)
        theirs_node, ours_node = peer.value.get(new[:-1]), mine.value.get(new[:-1])
    except Exception:  # not a nested key both can read back
        return False
    if not isinstance(new, tuple) or len(new) < 2 or not hasattr(theirs, "batch_size"):
        return False
    deeper = len(theirs.batch_size) < len(theirs_node.batch_size)
    return deeper and tuple(ours.batch_size) == tuple(ours_node.batch_size)


def _not_serializable(error: BaseException | None) -> bool:
    """Whether ``error`` is tclass's ``NotSerializableError`` (or its
    ``NotSerializableWriteError``, of a value written over a saved one in place)."""
    return any(cls.__name__ == "NotSerializableError" for cls in type(error).__mro__)


# ``result['a']['tgt_shape']: peer TensorDict(batch_size=[], keys=['0', '1']), tclass size
# ([1, 4],)``: a record's shape field that the peer's update made a TensorDict of its numbers
_SHAPE_AS_ENTRIES = re.compile(
    r"^result((?:\['[^']*'\])+): peer TensorDict\(batch_size=\[\], keys=\[(.*)\]\), "
    r"tclass size \(\[([\d, ]*)\],\)$"
)


def _shape_field_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x.update(x.to_dict())`` of a TensorDict holding records (``attrs()``'s
    ``TensorAttrs``): each record's Python-value field holding a ``torch.Size``
    (``tgt_shape``) takes the size the dict gives, as an assignment or ``set`` writes it
    in both, where the peer's record update reads the tuple as a collection, a TensorDict
    of its numbers under ``'0'``, ``'1'``...
    (fz30f: programs 16,027,127 L12 of methods,features,entries,records, 15,973,725 L12
    of features,entries,math,records)."""
    if finding.kind != "result" or finding.step.op != "update" or not finding.detail:
        return False
    for line in finding.detail:
        found = _SHAPE_AS_ENTRIES.match(line)
        if found is None:
            return False
        path = key_path(found[1])
        record = mine.value.get(tuple(path[:-1])) if len(path) > 1 else mine.value
        if path[-1] not in getattr(record, "__dataclass_fields__", {}):
            return False  # (a record's field, not a TensorDict's entry)
        sizes = [int(part) for part in found[3].split(",") if part.strip()]
        keys = ast.literal_eval(f"[{found[2]}]")
        if keys != [str(position) for position in range(len(sizes))]:
            return False
        theirs = peer.value.get(tuple(path))
        if [int(theirs[key]) for key in keys] != sizes:
            return False
    return True


def _empty_record_kept_in_math(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Binary math of a collection holding a nested record without entries (its tensor
    popped, its other field ``None``): tclass's result keeps the record, as every record
    keeps its fields, where the peer drops it as an empty nested collection (``x.div(
    x.clone())`` of ``TensorDict.from_dataclass(rec)``: program 16,013,650 L12 of
    features,entries,math,records, fz30k). Every line lists keys: tclass's are the
    peer's and more, each more a record holding no tensor."""
    if finding.kind != "result" or finding.step.family != "math":
        return False
    for line in finding.detail:
        keys = _keys_of(line)
        if keys is None or not line.startswith("result: "):
            return False
        theirs, ours = keys
        extra = [key for key in ours if key not in theirs]
        if not extra or [key for key in ours if key in theirs] != theirs:
            return False
        for key in extra:
            value = mine.value.get(key, None) if isinstance(key, str) else None
            if not dataclasses.is_dataclass(value) or list(value.keys(True, True)):
                return False
    return True
