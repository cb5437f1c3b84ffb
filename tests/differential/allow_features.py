"""The rules of the deliberate differences (``allowlist.ENTRIES``) that the ops of the
family ``features`` meet (fz27e: autograd, constructors from other objects, tables,
record habits, modules). Each rule takes a finding and says whether the README bullet
of its entry covers it."""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import TYPE_CHECKING, Any

import torch

from .allow_values import _empty_values_rebuilt
from .compare import flat_values, key_path, read_both

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
_NESTED_NAME = re.compile(r"\.get_parameter\('\w+\.")
_MODULE_OPS = (
    "named_parameters",
    "named_buffers",
    "parameters",
    "buffers",
    "train",
    "children",
    "get_parameter",
)
# (torch's error for a MemoryMappedTensor, and for the wrapper subclass ``to("cpu")`` of a
# memory-mapped record leaves: ``astuple``, program 15,910,390 L8 / L12, fz29g)
_DEEPCOPY_FAILS = "The default implementation of __deepcopy__() for "
_FEATURE_FAILS_INSIDE = {
    "grad": "Expected a TensorDictBase instance but got <class 'NoneType'>",
    # (the same read as the last part of a ``backward`` step: ``(y := ..., (y * 2).backward(...),
    # y.grad)[2]`` of a record indexed to no elements: 16,014,665 L8 features, fz29g)
    "backward": "Expected a TensorDictBase instance but got <class 'NoneType'>",
    "asdict": _DEEPCOPY_FAILS,
    # (``from_dataclass(loaded, as_tensorclass=True)``: the same deepcopy; 15,810,320 L8,
    # fz28b; of a memory-mapped record too: program 15,880,663 L12, fz28f)
    "from_dataclass": _DEEPCOPY_FAILS,
    "astuple": _DEEPCOPY_FAILS,
    "from_csv": "If using all scalar values, you must pass an index",
    # (and its frame of columns of different lengths over no rows: pandas' "All arrays
    # must be of the same length"; tclass's frame has no rows: program 15,828,093 L12, fz28c)
    "from_pandas": ("If using all scalar values, you must pass an index", "All arrays must be of"),
    # (fz29d: ``to_pandas`` and ``to_parquet`` of one too, the same frame: programs
    # 15,920,433 L12 of features,math,index; 15,911,587 L12 of methods,features,entries,
    # records and 15,920,393 L12 of features,math,index)
    "to_pandas": "If using all scalar values, you must pass an index",
    "from_parquet": "If using all scalar values, you must pass an index",
    # (fz30e: ``from_json(x.to_json(path))`` of the same: program 15,960,713 L8 of
    # methods,features,entries,records)
    "from_json": "If using all scalar values, you must pass an index",
    **dict.fromkeys(_MODULE_OPS, _PARAMS_OF_LAZY),
}


# (fz28f) ``x.from_dict_instance(x.to_dict(), ...)`` of a collection holding a
# ``MetaData`` of a dict: the peer rebuilds the MetaData with the dict's items as
# keywords (a TypeError from inside); tclass reads the dict as a nested collection (and
# fz29a: of a NonTensorData too, the peer's message naming it; tclass answering, where it
# reads the dict as a nested collection: program 15,921,132 L12 of features,math,index;
# ``x[i] = x[i].to_dict()``, which tclass writes as a nested collection that the value's
# batch size refuses, a ``BatchMismatchError``: program 15,922,129 L12)
_METADATA_OF_DICT = "Data.__init__() got an unexpected keyword argument"
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
# (fz29d) the same through ``to_csv`` / ``to_parquet`` and back, and ``to_pandas``
# itself (program 15,912,558 L12 of methods,features,entries,records)
_TABLE_OPS = ("from_pandas", "from_csv", "from_parquet", "to_pandas")


_LIST_ROWS_BATCH = re.compile(r"^result\.batch_size: peer \((\d+),\), tclass \(1,\)$")
_LIST_ROWS_ENTRY = re.compile(
    r"^result\['(\w+)'\]: peer Tensor\[torch\.\w+, shape \[(\d+)\]\], tclass nontensor "
)


def _list_read_as_rows(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``from_csv(x.to_csv(...))`` (or through pandas / parquet) of a collection without
    batch dims holding a list value (``MetaData([1, 2])``): the peer's frame of scalars
    takes the list as a column, its items as rows (the batch), repeating the other
    entries; tclass writes one row, the list one cell read back as its text (fz30j:
    program 16,059,236 L8 of methods,features,entries,records)."""
    if finding.kind != "result" or finding.step.op not in _TABLE_OPS or not finding.detail:
        return False
    rows = _LIST_ROWS_BATCH.match(finding.detail[0])
    if rows is None or int(rows[1]) < 2 or len(finding.detail) < 2:
        return False
    for line in finding.detail[1:]:
        found = _LIST_ROWS_ENTRY.match(line)
        if found is None or found[2] != rows[1]:
            return False
        cell = getattr(mine.value.get(found[1]), "data", None)  # (pandas' array of cells)
        cell = cell.tolist() if hasattr(cell, "tolist") else cell
        if not (isinstance(cell, list) and len(cell) == 1 and isinstance(cell[0], str)):
            return False
        if cell[0] != str(peer.value.get(found[1]).tolist()):
            return False
    return True


_DICT_ROWS = re.compile(r"^result\['(\w+)'\]: keys: peer \[(.*)\], tclass \[0\]$")


def _dict_read_as_rows(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x.to_pandas().to_dict()`` of a collection without batch dims holding a dict value
    (``MetaData({'k': 1})``): the peer's frame of scalars reads the dict as a column
    indexed by its keys (its values as cells, the other entries repeated on each key);
    tclass's one row holds the dict as one cell, as for a list value (hn33g: program
    33,750,029 L6 of features,entries,math,records)."""
    if finding.kind != "result" or finding.step.op != "to_pandas" or not finding.detail:
        return False
    if not (isinstance(mine.value, dict) and isinstance(peer.value, dict)):
        return False
    index = None
    for line in finding.detail:
        found = _DICT_ROWS.match(line)
        if found is None or list(mine.value.get(found[1], {})) != [0]:
            return False
        index = found[2] if index is None else index
        if found[2] != index:
            return False
    for key, column in mine.value.items():  # the dict cell whose keys are the peer's rows
        cell = column.get(0) if isinstance(column, dict) else None
        if isinstance(cell, dict) and index == ", ".join(repr(k) for k in cell):
            return list(cell) == list(peer.value.get(key, ()))
    return False


def _consolidation_kept_by_equal_values(
    finding: Finding, facts: Facts, peer: Any, mine: Any
) -> bool:
    """``is_consolidated()`` after ``x = x.load_state_dict(...)`` of a consolidated
    collection holding Python values: the peer's load sets each value again (a new
    node, the same value) and so drops its consolidation, its tensors still the
    buffer's views; tclass's skips a value equal to the one held, and stays
    consolidated (a value that differs ends it: og33k, program 17,075,828 L12 of
    methods,features,entries,records)."""
    if finding.kind != "result" or finding.step.op != "is_consolidated":
        return False
    if finding.detail != ["result: peer False, tclass True"]:
        return False
    loads = [i for i, line in enumerate(finding.lines) if "x = x.load_state_dict(" in line]
    made = [i for i, line in enumerate(finding.lines) if "x = x.consolidate(" in line]
    return bool(loads and made) and made[-1] < loads[-1]


def _feature_fails_inside(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The peer raised one of ``_FEATURE_FAILS_INSIDE``'s errors for its op, where
    tclass answered (fz27e: programs 15,600,xxx-15,630,xxx of
    features,index,shape,combine)."""
    if finding.kind not in ("peer-raises", "family"):
        return False
    op, error = finding.step.op, str(peer.error)
    if op in _MODULE_OPS and _PARAMS_OF_LOCKED in error:
        # (fz30a) or get_parameter of a nested name of a locked TensorDictParams: the peer
        # wraps the nested collection in a new one, which cannot unlock it (15,982,617 L12)
        nested = op == "get_parameter" and _NESTED_NAME.search(finding.step.src) is not None
        return nested or "TensorDictParams(x.to_tensordict())" in finding.step.src
    if op == "from_dict_instance":  # (15,891,752 L16, fz28f; 15,921,132 L12, fz29a)
        return _METADATA_OF_DICT in error  # tclass reads the dict (or its error about it)
    if finding.kind == "family" and op == "setitem" and ".to_dict()" in finding.step.src:
        return _METADATA_OF_DICT in error and type(mine.error).__name__ == "BatchMismatchError"
    if finding.kind == "family":
        return op in _MODULE_OPS and _PARAMS_OF_LAZY in error
    if op == "select" and "as_module=True" in " ".join(finding.lines):  # (15,905,008 L12)
        return _PARAMS_SELECT_LOCKED in error
    if op in _TABLE_OPS and any(".attrs()" in line for line in finding.lines):
        if any(text in error for text in _ATTRS_AS_COLUMNS):
            return True  # (else pandas' other refusals below: 15,950,046 L8 features)
    texts = _FEATURE_FAILS_INSIDE.get(op, ())
    return any(text in error for text in ((texts,) if isinstance(texts, str) else texts))


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


_META_KEPT = re.compile(
    r"^result(?:\['[^']*'\]|\.<members>|\[\d+\])+: peer value (\(.*\)), tclass meta \1$"
)


def _consolidated_values_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``TensorDict.from_consolidated(file)`` of a collection holding Python values that
    the peer's file does not give back as they were: a ``MetaData``, which tclass reads
    back a ``MetaData``, as ``consolidate()`` and ``load_memmap`` keep it in both
    libraries, where the peer's is a ``NonTensorData`` of the same value (which then
    stacks into a value per element; programs 15,600,562 L8 / 15,630,515 L12 of
    features,index,shape,combine, fz28c), or per-element values over no elements,
    which keep their batch size (``_empty_values_rebuilt``: the peer's lose the dims
    after the one of size 0). The peer lists them first, by kind
    (``_consolidated_key_order``)."""
    if finding.kind != "result" or finding.step.op != "from_consolidated":
        return False
    rest = []
    for line in finding.detail:
        found = _KEY_ORDER.match(line)
        if found is None:
            rest.append(line)
        elif sorted(ast.literal_eval(found[1]), key=repr) != sorted(
            ast.literal_eval(found[2]), key=repr
        ):
            return False
    if not rest:
        return False  # (the order alone: ``_consolidated_key_order``)
    if all(_META_KEPT.match(line) or _meta_over_stack(line, peer, mine) for line in rest):
        return True
    if _list_meta_over_stack(rest, peer, mine):
        return True
    return _empty_values_rebuilt(dataclasses.replace(finding, detail=rest), facts, peer, mine)


_LENGTH_UNDER = re.compile(r"^(result(?:\['[^']*'\])+)\[\d+\]: length: peer \d+, tclass \d+$")


def _list_meta_over_stack(lines: list[str], peer: Any, mine: Any) -> bool:
    """A lazy stack's ``MetaData`` of a list (``MetaData([1, 2], batch_size=[1])``): the
    peer's file gives a value stack of that list per element, each the list, compared
    with tclass's list item by item (a length line under the key; fz33b: 17,056,770 L20
    of features,index,shape,combine)."""
    kept = {line.split(":")[0] for line in lines if _meta_over_stack(line, peer, mine, True)}
    for line in lines:
        under = _LENGTH_UNDER.match(line)
        if not (_META_KEPT.match(line) or line.split(":")[0] in kept or under and under[1] in kept):
            return False
    return bool(kept)


_META_READ = re.compile(r"^result((?:\['[^']*'\])+): peer ")


def _meta_kept_by_expand(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``expand`` (``expand_as``) of a lazy stack of one member along its stack dim,
    whose member holds a ``MetaData``: tclass's members repeat that one (shared, as
    ``expand`` shares), which stacks into that ``MetaData``; the peer copies the member
    per new element, a new ``MetaData`` each, which stack into a value per element,
    each the value (program 16,000,859 L8 of features,index,shape,combine, fz30b)."""
    if finding.kind != "result" or not finding.detail:
        return False
    if finding.step.op == "getitem":  # (after a flip: see _meta_picked_after_flip)
        return _meta_picked_after_flip(finding, peer, mine)
    if finding.step.op not in ("expand", "expand_as"):
        return False
    return all(_meta_over_stack(line, peer, mine) for line in finding.detail)


def _meta_picked_after_flip(finding: Finding, peer: Any, mine: Any) -> bool:
    """``x.flip(dims)[..., mask]`` of a collection whose ``MetaData`` was stacked with
    clones (``torch.stack([x, x.clone(), x.apply(torch.zeros_like)], 3)``): tclass's flip
    moves the elements' values (shared, as it moves a tensor's), so the picked ones that
    share one ``MetaData`` read as it; the peer's flip copies each element's value, which
    then stack into a value per element, each the value (a list ``[1, 2]`` kept whole;
    program 16,021,799 L12 of features,index,shape,combine, fz30j)."""
    if not any(".flip(" in line for line in finding.lines[:-1]):
        return False
    seen: list[str] = []
    for line in finding.detail:
        found = _META_READ.match(line)
        if found is None or any(found[1].startswith(f"{path}[") for path in seen):
            if not any(line.startswith(f"result{path}[") for path in seen):
                return False
            continue  # (an item of a value checked above: "result['s'][1][0]: ...")
        if not _meta_over_stack(line, peer, mine, whole=True):
            return False
        seen.append(found[1])
    return True


def _meta_over_stack(line: str, peer: Any, mine: Any, whole: bool = False) -> bool:
    """A line about a key of a lazy stack whose members hold a ``MetaData``: tclass's
    stack reads it as that ``MetaData``, the peer's members' ``NonTensorData`` stack into
    a value per element, each the value (program 15,822,046 L12 of
    features,index,shape,combine, fz28c)."""
    found = _META_READ.match(line)
    if found is None:
        return False
    both = read_both(found[1], peer, mine)
    if both is None:
        return False
    theirs, ours = both
    if type(ours).__name__ != "MetaData" or type(theirs).__name__ != "NonTensorStack":
        return False
    values = theirs.tolist()
    for _ in range(len(theirs.batch_size) - 1 if whole else 0):  # (a list value kept whole)
        values = [item for part in values for item in part]
    values = values if whole else flat_values(values)
    return theirs.batch_size == ours.batch_size and all(value == ours.data for value in values)


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
        _DICT_FIELD.match(line) or _kept_in_str_field(line, finding, peer, mine) for line in lines
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


def _kept_in_str_field(line: str, finding: Finding, peer: Any, mine: Any) -> bool:
    if _NUMBER_IN_STR.match(line):
        return any(_NUMBER_GIVEN.search(src) for src in finding.lines)
    if _STACKS_IN_LIST.match(line) or _EMPTY_LISTS.match(line):
        if _GIVEN_WHOLE.search(finding.step.src) is not None:
            return True
    # (fz29h) a list of numbers, or nested empty lists, given whole to the field: set,
    # replace, the constructor of ``**rec.to_dict()``; and (og33j) the class
    # ``from_dataclass(record, as_tensorclass=True)`` makes of a record holding one
    # (program 17,100,599 L8 of features,index,shape,combine)
    given = finding.step.op in _LIST_GIVEN_BY or _GIVEN_WHOLE.search(finding.step.src)
    return bool(given) and _list_kept(line, peer, mine)


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
    lines = _past_inferred_batch(finding)
    return bool(lines) and all(_kept_in_str_field(line, finding, peer, mine) for line in lines)


_INFERRED_BATCH = re.compile(r"^result\.batch_size: peer \(([\d, ]*)\), tclass \(([\d, ]*)\)$")


def _past_inferred_batch(finding: Finding) -> list[str]:
    """The lines of ``finding`` past its batch size and names lines where it is
    ``record.from_dict_instance(d, auto_batch_size=True)`` and one batch size starts the
    other: a field's value the two read differently counts for the inferred batch size
    (the peer's 0-d tensor of a number stops it at ``[]``; its one value of a stack lets
    the tensors' dims through), so those lines follow the value's (fz30f: programs
    16,020,373 L8 of features,math,index, 15,951,119 L12 of
    features,entries,math,records)."""
    lines = list(finding.detail)
    if finding.step.op != "from_dict_instance" or "auto_batch_size=True" not in finding.step.src:
        return lines
    found = _INFERRED_BATCH.match(lines[0])
    if found is None:
        return lines
    theirs, ours = (
        [int(part) for part in text.split(",") if part.strip()] for text in found.groups()
    )
    shorter, longer = sorted((theirs, ours), key=len)
    if longer[: len(shorter)] != shorter or len(longer) == len(shorter):
        return lines
    return [line for line in lines[1:] if not line.startswith("result.names: ")]


_JOINED_KIND = re.compile(r"^result\.kind: peer 'TensorDict', tclass '(\w+)'$")
_VALUE_OF_RECORD = re.compile(
    r"^result(?:\['[^']*'\])+: peer nontensor \(\('value', .*, tclass py \("
)


def _joined_into_the_record(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``record.cat_tensors(...)`` / ``stack_tensors(...)`` into a field: tclass writes in
    place and returns the record, as a TensorDict's returns the TensorDict in both; the
    peer's record returns its TensorDict, whose Python values read as nodes (program
    15,826,009 L12 of methods,index,shape,combine, fz28c), and whose keys come in its
    storage's order (a loaded record: the tensors first), where tclass's record lists
    its fields in their order (fz31b: program 16,415,402 L12 of the six families)."""
    if finding.kind != "result" or finding.step.op not in ("cat_tensors", "stack_tensors"):
        return False
    if not finding.detail or not finding.step.src.startswith("x."):
        return False
    kind = _JOINED_KIND.match(finding.detail[0])
    if kind is None or kind[1] != type(mine.value).__name__:
        return False
    return all(
        _VALUE_OF_RECORD.match(line) or _fields_in_their_order(line, mine.value)
        for line in finding.detail[1:]
    )


def _fields_in_their_order(line: str, record: Any) -> bool:
    """A top-level key order line where tclass lists the record's fields in their
    declared order."""
    found = _KEY_ORDER.match(line)
    if found is None or not line.startswith("result: key order: "):
        return False
    try:
        theirs, ours = (ast.literal_eval(side) for side in found.group(1, 2))
    except (ValueError, SyntaxError):
        return False
    if not dataclasses.is_dataclass(record):
        return False
    order = [field.name for field in dataclasses.fields(record)]
    return sorted(theirs) == sorted(ours) and ours == [name for name in order if name in ours]


_RECORD_KIND = re.compile(r"^result(?:\['[^']*'\])*\.kind: peer '\w+', tclass 'TensorDict'$")
_VALUE_READ = re.compile(
    r"^result(?:\['[^']*'\])+: peer (py|size) \(.*\), tclass nontensor \(\('(?:value|meta)', "
)  # (a MetaData's value: fz30f, program 16,102,456 L8 of features,index,shape,combine)
_KEYS = re.compile(r"^result(?:\['[^']*'\])*: keys: peer (\[.*\]), tclass (\[.*\])$")
# a stack of Python values that the peer's attrs() reads as a collection without tensors
_VALUES_AS_EMPTY = re.compile(
    r"^result(?:\['[^']*'\])+: peer TensorDict\(batch_size=\[\], keys=\[\]\), "
    r"tclass nontensor \(\('values', "
)


def _attrs_of_a_record(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``attrs()`` of a record: tclass's result is a TensorDict (README: "What remains
    unsupported"), the peer's a record of its class; so its nested records are
    TensorDicts, its Python values nodes (the peer's fields read them) and its fields set
    to ``None`` no keys (programs 15,600,062 L8 / 15,610,008 L12 of
    features,index,shape,combine); of a loaded record, whose keys come in the order
    ``load_memmap`` gives them (the tensors first), the TensorDict keeps that order,
    where the peer's record lists its fields in their order (fz29d: program 15,911,200
    L12 of methods,features,entries,records); a stack of values it holds (a lazy stack of records'
    ``label``) keeps them, which the peer's reads as an empty collection
    (:func:`_attrs_values_kept`; fz28a: 15,610,183 L12)."""
    if finding.kind != "result" or finding.step.op != "attrs" or not finding.detail:
        return False
    # (``attrs()`` of ``attrs()``: each tensor's TensorAttrs record a TensorDict too,
    # 15,891,283 L16, fz28f)
    # (fz30f) of a lazy stack of records, the record kind of its nested ``inner`` only
    # (program 15,982,841 L8 of features,index,shape,combine)
    if not any(_RECORD_KIND.match(line) for line in finding.detail):
        return False
    for line in finding.detail:
        keys = _KEYS.match(line)
        order = _KEY_ORDER.match(line)
        if keys is not None:
            if not set(ast.literal_eval(keys[2])) < set(ast.literal_eval(keys[1])):
                return False
        elif order is not None:  # (a loaded record's keys: the TensorDict keeps their order)
            if set(ast.literal_eval(order[1])) != set(ast.literal_eval(order[2])):
                return False
        elif not (
            _RECORD_KIND.match(line) or _VALUE_READ.match(line) or _VALUES_AS_EMPTY.match(line)
        ):
            return False
    return True


def _attrs_values_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``attrs()`` of a collection holding a stack of Python values (one per element):
    tclass keeps them, where the peer reads the stack as a collection without tensors
    and gives an empty ``TensorDict`` in its place, losing the values (fz28a: programs
    15,801,170 / 15,801,819 L12 of features,index,shape,combine)."""
    if finding.kind != "result" or finding.step.op != "attrs" or not finding.detail:
        return False
    return all(_VALUES_AS_EMPTY.match(line) for line in finding.detail)


# a value read as one (the peer's MetaData) where tclass reads one per element
_ONE_VALUE_PER_ELEMENT = re.compile(
    r"^result(?:\['[^']*'\])+(?:\[\d+\])*: (?:peer (?:py|dict|list|meta|value) \(.*, "
    r"tclass (?:list of \d+|values \(|value \()|length: peer \d+, tclass \d+)"
)


def _clone_copies_values(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A stack (``stack``, ``lazy_stack``...) of a collection holding a ``MetaData`` and
    its ``clone()``: tclass's clone copies the value (as the peer documents for
    ``MetaData`` and does without a device), so the stack holds one value per member;
    the peer's ``clone()`` of a collection with a device shares every Python value, and
    its stack then holds the one object as one ``MetaData`` (fz28a: program 15,600,031
    L8 of features,index,shape,combine); ``exclude()`` without keys is such a copy in both
    (of a ``memmap_like`` lazy stack whose ``MetaData`` was set on the stack, one object
    per member: og32b, program 16,434,045 L16 of features,entries,math,records)."""
    if finding.kind != "result" or getattr(peer.value, "device", None) is None:
        return False
    program = "\n".join(finding.lines)
    if "MetaData(" not in program or (".clone()" not in program and ".exclude()" not in program):
        return False
    return all(_ONE_VALUE_PER_ELEMENT.match(line) for line in finding.detail)


_ONE_VALUE_OF_LIST = re.compile(
    r"^result((?:\['[^']*'\])+)(?:\[\d+\])*: (?:peer py \(.*\), tclass list of \d+"
    r"|peer 'tuple', tclass 'list'|length: peer \d+, tclass \d+)$"
)  # (a shape's tuple: its items and length against the list's)


def _field_value(node: Any, keys: tuple[str, ...]) -> Any:
    """The value under ``keys``: a record's field as its attribute reads it, a
    TensorDict's entry as ``get`` reads it (a TensorDict of records, fz30f)."""
    for key in keys:
        if hasattr(node, "__dataclass_fields__"):
            node = getattr(node, key, None)
        elif hasattr(node, "get"):
            node = node.get(key, None)
        else:
            return None
    return node


def _record_values_kept_per_element(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``record.from_dict_instance(record.to_dict(), ...)`` of a record whose Python
    value is a stack (one value per element, unsqueezed, expanded or stacked): tclass's
    field reads the per-element list it was given, as ``Rec.from_dict`` and a
    TensorDict's ``from_dict_instance`` read it in both libraries; the peer's record
    method makes it the one value the elements share (its ``.data``; it raises
    ``AttributeError`` where they differ; of two stack dims or more, the one value of the
    first row, the others' ``None`` of a ``pad`` lost), so the round trip changes the
    field (programs 15,600,174 L8 and 15,610,430 L12 of features,index,shape,combine);
    also of a TensorDict's ``from_dict_instance`` of the records it holds (``attrs()``
    unsqueezed and repeated: each ``TensorAttrs`` built by its class's ``from_dict``),
    where the peer's ``tgt_shape`` is the one shape as a tuple (fz30f: program
    15,960,402 L8 of features,index,shape,combine)."""
    if finding.kind != "result" or finding.step.op != "from_dict_instance":
        return False
    lines = _past_inferred_batch(finding)  # (the one value lets the tensors' dims through)
    if not lines:
        return False
    for line in lines:
        found = _ONE_VALUE_OF_LIST.match(line)
        if found is None:
            return False
        keys = key_path(found.group(1))
        node = _field_value(mine.value, keys)
        if isinstance(node, list) and node and isinstance(node[0], list):
            node = node[0]  # (the peer's ``.data`` of a stack of stacks: its first row's)
        values = flat_values(node) if isinstance(node, list) else []
        theirs = _field_value(peer.value, keys)
        if not values or any(value != theirs for value in values):
            return False
    return True


def _holds_a_node(value: Any) -> bool:
    if isinstance(value, list):
        return any(_holds_a_node(item) for item in value)
    return hasattr(value, "batch_size")


_REPLACED_FIELD = re.compile(r"^result\['(\w+)'\](\[\d+\])*: ")


def _replaced_values_not_nodes(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``dataclasses.replace(rec, ...)`` of a record whose Python value is a stack of three
    stack dims or more (unsqueezed or stacked twice): the new record (batch size ``[]`` in
    both, as the constructor's default) holds the values as nested lists in tclass, where
    the peer's lists hold its ``NonTensorStack`` nodes below the second level (program
    15,810,053 L8 of features,index,shape,combine, fz28b)."""
    if finding.kind != "result" or finding.step.op != "replace":
        return False
    for line in finding.detail:
        found = _REPLACED_FIELD.match(line)
        if found is None:
            return False
        theirs, ours = getattr(peer.value, found[1], None), getattr(mine.value, found[1], None)
        if not _holds_a_node(theirs) or _holds_a_node(ours):
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
    return all(size_as_tuple(line) for line in finding.detail)


def size_as_tuple(line: str) -> bool:
    """A line of a ``torch.Size`` that the peer's copy made a plain tuple of its length."""
    found = _SIZE_AS_TUPLE.match(line)
    if found is None:
        return False
    sizes = [part for part in found[2].split(",") if part.strip()]
    return int(found[1]) == len(sizes)


_LIST_CAST_BY_PEER = re.compile(
    r"^result\['(label|s)'\]: peer Tensor\[torch\.\w+, shape \[[\d, ]*\]\], tclass list of \d+$"
)


# the ops that give a ``str`` field a list whole, which it keeps (fz29h: ``set``,
# ``dataclasses.replace``, the constructor; ``setattr`` and ``update`` as ``set``)
_LIST_GIVEN_BY = ("from_dict_instance", "set", "setattr", "update", "replace", "ctor")


def _list_kept(line: str, peer: Any, mine: Any) -> bool:
    """A ``str`` field's list (of numbers, or nested empty lists) that the peer made a
    tensor of the same values."""
    found = _LIST_CAST_BY_PEER.match(line)
    if found is None:
        return False
    ours, theirs = getattr(mine.value, found[1], None), getattr(peer.value, found[1], None)
    if not isinstance(ours, list) or not isinstance(theirs, torch.Tensor):
        return False
    flat = flat_values(ours)
    if any(isinstance(value, str) for value in flat):
        return False
    try:  # compared in the peer's dtype (a float32 tensor of 0.1)
        return torch.tensor(flat, dtype=theirs.dtype).tolist() == flat_values(theirs.tolist())
    except (TypeError, ValueError, RuntimeError):
        return False


def _list_read_into_str_field(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``record.from_dict_instance(record.to_dict(), ...)`` (built by the class's
    ``from_dict`` since fz28b) of a record whose ``str`` field's dict value is a list of
    numbers (a ``MetaData([1, 2])`` written there) or nested empty lists (a value stack
    over no elements): the field reads the list's values, one per element, as the
    constructor and ``Rec.from_dict`` read them, where the peer's ``from_dict`` makes
    them a tensor (README: "``from_dict`` and ``from_tensordict`` cast as the constructor
    does"; programs 15,830,615 L8 and 15,890,742 L16 of features,index,shape,combine,
    rg28b). The batch size is the peer's (its tensor's shape counts, the stack's here).
    (fz29h) The same list given whole to the field, ``set('label', [1, 2])`` or
    ``dataclasses.replace`` of a record holding one (at batch size ``[]``: programs
    15,910,541 / 15,913,442 of features,math,index L8, 15,830,760 of
    features,index,shape,combine L8): the field keeps it, as it keeps a number
    (``_value_kept_in_str_field``), where the peer makes it a tensor."""
    if finding.kind != "result" or finding.step.op not in _LIST_GIVEN_BY:
        return False
    if not finding.detail:
        return False
    return all(_list_kept(line, peer, mine) for line in finding.detail)


# a column of an ``attrs()`` result's TensorAttrs (``"b.tgt_shape"``), or the rows
_ATTRS_COLUMN = re.compile(
    r"^result(?:\.batch_size: |\['[^']*tgt_(?:shape|dtype|device)'\][^:]*: )"
)


def _attrs_shape_not_rows(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``to_pandas`` (``to_csv``, ``to_parquet`` and back) of an ``attrs()`` result
    without batch dims: tclass writes one row, each ``TensorAttrs`` one cell per field;
    the peer's frame spreads the numbers of each ``tgt_shape`` over rows, its device and
    dtype repeated, where pandas does not refuse it (one tensor's shape, or shapes of
    the same length): a shape of 4 dims gives 4 rows (fz29d: programs 15,810,799 L8 of
    features,index,shape,combine, 15,912,878 L12 of methods,features,entries,records,
    15,920,143 L12 of features,math,index)."""
    if finding.kind != "result" or finding.step.op not in _TABLE_OPS or not finding.detail:
        return False
    if not any(".attrs()" in line for line in finding.lines):
        return False
    return all(_ATTRS_COLUMN.match(line) for line in finding.detail)


_TUPLE_OF_RECORD = re.compile(r"^result(\[\d+\])*: peer 'tuple', tclass ['\"]namedtuple\(")
_TUPLE_ITEM = re.compile(r"^result(\[\d+\])+: ")
_REPLACED_RECORD = re.compile(r'__import__\("dataclasses"\)\.replace\(')


def _namedtuple_in_field_order(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``record.to_namedtuple()`` of a record that ``dataclasses.replace(rec, inner=...)``
    made: tclass's namedtuple lists the fields in their declared order (README: "A record
    lists its fields ... in their declared order"), the peer's plain tuple in its
    record's keys' order, the replaced field first; the items are the same (fz30f:
    program 16,014,304 L8 of features,entries,math,records). A record that
    ``merge_tensordicts`` made alike: tclass's keeps the order its inputs hold the keys
    in, the peer's lists the Python values and nested records first (the merge's
    decided order, ``_merged_in_order_of_holders``; og34l: program 17,155,262 L10 of
    extra,entries)."""
    if finding.kind != "result" or finding.step.op != "to_namedtuple" or not finding.detail:
        return False
    made = (
        _REPLACED_RECORD.search(line) or "L.merge_tensordicts(" in line
        for line in finding.lines[:-1]
    )
    if not any(made):
        return False
    if not _TUPLE_OF_RECORD.match(finding.detail[0]):
        return False
    if not all(_TUPLE_ITEM.match(line) for line in finding.detail[1:]):
        return False
    theirs, ours = _last_tuple(peer.value), _last_tuple(mine.value)
    if theirs is None or ours is None or len(theirs) != len(ours):
        return False
    return sorted(map(_item_kind, theirs)) == sorted(map(_item_kind, ours))


def _last_tuple(value: Any) -> tuple[Any, ...] | None:
    """The namedtuple (or tuple) of fields in a result, itself or its last item."""
    if hasattr(value, "_fields") or (isinstance(value, tuple) and not value):
        return tuple(value)
    if isinstance(value, tuple) and isinstance(value[-1], tuple):
        return tuple(value[-1])
    return tuple(value) if isinstance(value, tuple) else None


def _item_kind(item: Any) -> str:
    if isinstance(item, torch.Tensor):
        return f"tensor {item.dtype} {list(item.shape)}"
    if isinstance(item, tuple):
        return f"tuple {len(item)}"
    return type(item).__name__


_GRAD_NONE = re.compile(r"^result(?:\['\w+'\])*: peer py \('NoneType', None\), tclass ")


def _grad_spread_by_foreach(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``y.grad`` of ``y := x.float().requires_grad_()`` after ``x.float() * 2`` (in a
    loss) of a collection where one entry requires grad: the peer's ``*`` goes through
    ``torch._foreach_mul``, whose results all require grad, so its other entries became
    non-leaves and ``requires_grad_()`` leaves every grad ``None``; tclass's per-leaf
    math leaves them leaves, as torch does, and gives their grads (og33j: program
    17,065,628 L8 of extra,features)."""
    if finding.kind != "result" or finding.step.op != "backward" or not finding.detail:
        return False
    if not finding.lines[-1].strip().startswith("x = (y := x.float().requires_grad_(), "):
        return False
    if not any(re.search(r"\.float\(\) \* \d", line) for line in finding.lines[:-1]):
        return False
    return all(_GRAD_NONE.match(line) for line in finding.detail)
