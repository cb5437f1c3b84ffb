"""The rules of the deliberate differences of collections over an HDF5 file (the worlds
``world.h5_lines``, ``h5_members`` and ``h5_record_lines`` build, and the derived worlds
made from them): the README bullet "HDF5 files keep their batch size and their strings".
Each rule takes a finding and says whether that bullet covers it."""

from __future__ import annotations

import re
import traceback
from typing import TYPE_CHECKING, Any

from .allow_common import _result_line
from .compare import FILE_VIEWS, entry_at, key_path, read_both

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts

# The peer refuses these on a PersistentTensorDict ("Call to_tensordict() first"), or
# h5py fails inside it (an index with None, an unsorted list, another dtype written into
# a dataset, a value of another kind in place of an entry, a tensor of another shape
# that does not broadcast to the dataset or to the rows of a view); tclass reads into
# memory or replaces the entry (or, for ``set_`` and a view's rows, raises its own error).
_PEER_REFUSES = (
    re.compile(r"Cannot call `?\w+`? on a (PersistentTensorDict|_SubTensorDict)"),
    # (a mask of a lazy stack of files: h5py's "Fancy indexing", program 5,671 of index;
    # of a file's rows over two elements too: 15,812,058 of features,index,shape,combine)
    re.compile(
        r"Selection can't process None|(Index \(\d+\)|Fancy indexing) out of range for \(0-\d+\)"
    ),
    re.compile(r"Indexing elements must be in increasing order"),
    re.compile(r"Indexing arrays must have integer dtypes"),
    re.compile(r"tensors used as indices must be long, int, byte or bool"),  # file[[]] = ...
    re.compile(r"no appropriate function for conversion path"),
    re.compile(r"invalid literal for \w+\(\)|could not convert string to \w+"),
    re.compile(r"A name should be string or bytes"),
    re.compile(r"Cannot build a memmap TensorDict in-place from a PersistentTensorDict"),
    re.compile(r"cannot set a tensor collection in place of a non-tensor"),
    re.compile(r"key \w+ not found in PersistentTensorDict"),  # an empty group it never wrote
    re.compile(r"the length of the dimension names must equate"),  # reshape of a named file
    re.compile(r"\d+ indexing arguments for \d+ dimensions"),  # an index with None (h5py)
    re.compile(r"Can't broadcast \(|Broadcasting is not supported for (complex|point-wise) se"),
    re.compile(r"must be called when the TensorDict is \(partially\) populated"),  # no tensors
    re.compile(r"Cannot store numpy object arrays as opaque data"),  # a None value
    re.compile(r"Failed to convert the metadata to json"),  # consolidate of a file or record
    re.compile(r"Names of a subtensordict cannot be modified"),  # rename() of a view
    re.compile(r"Cannot lock a _SubTensorDict"),  # a view's lock_/memmap, a record over a view
    # share_memory_ of a view of files' rows (a lazy stack of files indexed): tclass's view
    # reads from its file, left where it is and locked, as a whole file's (fz28e: 15,851,292)
    re.compile(r"Casting a sub-tensordict values to shared memory cannot be done"),
    re.compile(r"Index put requires the source and destination dtypes match"),  # rows of a view
    re.compile(r"`_SubTensorDict\.set\(key, value, inplace=False\)` is prohibited"),  # view.set
    re.compile(r"Calling nonzero on 0d arrays is not allowed"),  # masked_fill_ of a 0-dim file
    re.compile(r"set_non_tensor is not compatible with the tensordict type Persistent"),
    re.compile(r"Only one indexing vector or array is|Only 1D arrays allowed for fancy"),  # h5py
    re.compile(r"Use other code for boolean selection on 1D dataset"),  # [mask, None] (55,867)
    re.compile(r"Python integer -?\d+ out of bounds for u?int"),  # numpy: a number out of
    # an integer dtype's range (masked_fill_): tclass raises torch's in-place error
    # a collection written at rows the peer's file does not broadcast it to (it compares
    # batch sizes; tclass broadcasts each entry as torch, as into a TensorDict's rows)
    _ROWS_NOT_BROADCAST := re.compile(
        r"Cannot broadcast the tensordict .* to the shape of the indexed persistent", re.S
    ),
    # its items(is_leaf=...) (non_tensor_items) on a file, or a TensorDictParams of one
    re.compile(r"is_leaf .* is not supported within tensordicts of type PersistentTensorDict"),
    # replace() of a view's group by a value (its file and a TensorDict replace it)
    re.compile(r"Tried to replace a tensordict with an incompatible object of type"),
    # update_ of a group since replaced by a dataset (program 5,100,380 of ``--families
    # entries,records --length 6``, fz40c): h5py fails inside the peer's file
    re.compile(r"'Dataset' object has no attribute 'visit'"),
)
# Differences of the result: the peer's copies of a file are files (``clone``, and the
# math on a file or a view of one without tensors), its reads of strings bytes and of numbers numpy
# scalars, its rows at an empty list fail on every read, its names dropped by
# ``from_dict`` (some of the time), its ``memmap()`` copy not locked; its ``cpu()`` of rows
# read into memory (tclass's ``to`` keeps a view); a tensor of another shape written over
# a dataset, which tclass replaces and the peer broadcasts into; a group's batch size, which
# tclass keeps as written (the peer's ``from_dict`` infers a shorter one).
# ``x.clone().load_memmap_(folder)`` of a file: tclass's clone, in memory, loads the
# folder's memory-mapped tensors; the peer's clone, a temporary file, copies them in
_LOADED_MAPPED = re.compile(
    r": peer Tensor\[([\w.]+, shape \[[\d, ]*\])\], tclass MemoryMappedTensor\[\1\]$"
)
_LOADS_INTO = ("load_memmap_", "load_")
_RESULT_LINES = (
    re.compile(r"\.kind: peer 'PersistentTensorDict(View)?', tclass 'TensorDict'$"),
    re.compile(r": peer 'bytes', tclass 'str'$|: peer b'.*', tclass '.*'$"),
    re.compile(r": peer other \('(int|float)64',\), tclass py \('\1', "),  # a number
    # a list of numbers written as a value: the peer's file reads back a numpy array of
    # them (``iter``; its numbers the line above), tclass's JSON the list (fz29a: programs
    # 15,911,261 L12 of methods,features,entries,records, 15,831,908 L8 of methods,...)
    re.compile(r": peer 'iter', tclass 'list'$"),
    re.compile(r": peer error \('IndexError'.*, tclass Tensor\[[\w.]+, shape \[0[,\]]"),
)


# a write at a mask over several batch dims (``set_at_(k, v, mask)``): the peer's file
# expands the mask's rows against the dataset's dims and fails; tclass writes the rows
_MASK_ROWS_EXPANDED = re.compile(r"The expanded size of the tensor \(\d+\) must match the")
# ``view.update_({missing: "text"})``: the peer's view refuses the Python value (a
# ``TypeError``) before it looks for the key; tclass's ``KeyError`` for the missing key, as
# the file's and a TensorDict's in both libraries
_VALUE_FIRST = re.compile(r"Expected value to be a Tensor, a TensorDictBase or a tensorclass but")


def _h5_peer_refuses(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    if finding.kind not in ("peer-raises", "family"):
        return False
    message = str(peer.error)
    if not facts.h5:  # a file a step made (``x.to_h5(...)``): rows written, program 5,667
        return finding.kind == "peer-raises" and bool(_ROWS_NOT_BROADCAST.search(message))
    if finding.kind == "family" and finding.step.op == "update_" and _VALUE_FIRST.search(message):
        return type(mine.error).__name__ == "KeyNotFoundError"  # the key checked first
    if finding.step.op == "split_keys" and "inplace=True" in finding.step.src:
        # a lazy stack of files: the peer deletes the keys from every file, then looks
        # for them again (a KeyError; the keys lost); tclass splits (program 1,107,020)
        if "not found in _SubTensorDict" in message:  # the same, a view of the file's rows:
            return type(mine.error).__name__ == "UnsupportedError"  # refused (106,755)
        if "not found in LazyStackedTensorDict" in message:
            return True  # (else as below: the peer refuses select on a file, 54,380)
    if finding.step.op in ("set_at_", "update_at_") and "'bool'" in finding.step.src:
        if _MASK_ROWS_EXPANDED.search(message):
            return True
    if finding.step.op in ("set_at_", "update_at_") and ", I[None])" in finding.step.src:
        if message.startswith("batch dimension mismatch"):
            return True  # its file takes the index None for no index (program 8,301,273)
    if "in-place shape operation that changes the batch size is not supported" in message:
        # tclass's clone of a file is in memory: changed in place (fz27b: program
        # 15,020,389 of methods,index,shape,combine, ``x.clone().masked_select(m, inplace=True)``)
        return finding.kind == "peer-raises" and ".clone()." in finding.step.src
    return any(p.search(message) for p in _PEER_REFUSES)


def _h5_missing_renamed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``rename_key_(k, k)`` of a key the file lacks: a ``KeyError`` in tclass, as for a
    TensorDict in both libraries; the peer's file does nothing. And ``rename_key_`` of a
    locked file (or a lazy stack of them): tclass's ``LockedError``, as a locked
    TensorDict's in both, where the peer's file renames through its lock (left46a)."""
    if not facts.h5 or finding.kind != "tclass-raises" or finding.step.op != "rename_key_":
        return False
    if type(mine.error).__name__ == "LockedError":
        return "lock_()" in "".join(finding.lines)
    same = re.search(r"rename_key_\((\S+), \1[,)]", finding.step.src)
    return same is not None and type(mine.error).__name__ == "KeyNotFoundError"


def _h5_rows_not_moved(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``separates`` (``cat_tensors`` / ``stack_tensors``) of a view of a file's rows, or
    of a lazy stack of such views: tclass refuses (nothing changed), where the peer
    deletes every row of the entries from the file and returns only the view's (fz37e:
    ``lazy_stack([file, file], 1)[1:].separates(...)``, decided by left40)."""
    if not facts.h5 or finding.kind not in ("tclass-raises", "family"):
        return False
    if finding.step.op not in ("separates", "cat_tensors", "stack_tensors"):
        return False
    return type(mine.error).__name__ == "UnsupportedError" and (
        "moving entries deletes them from the file, every row of them" in str(mine.error)
    )


# a Python value written through a view of a file's rows: over a dataset (torch cannot
# make a tensor of it) or at a new key (the file's other rows would hold none)
_VALUE_THROUGH_VIEW = re.compile(
    r"its rows hold a tensor and torch cannot make one of it|the file's other rows would hold none"
)


def _h5_value_not_dropped(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A Python value written through a view of a file's rows (``view[k] = "s"`` over a
    tensor, ``view.set(new_key, "s")``): tclass refuses it (``InPlaceWriteError``), where
    the peer's view drops it without a word (the tensor stays; the new key's group is made
    without the value). Programs 401,695, 1,105,466, 1,500,395 (inv18d)."""
    if not facts.h5 or finding.kind != "tclass-raises":
        return False
    if finding.step.op not in ("set", "setitem_key", "set_non_tensor"):
        return False
    error = mine.error
    return type(error).__name__ == "InPlaceWriteError" and bool(
        _VALUE_THROUGH_VIEW.search(str(error))
    )


# a view of a file's rows taken by a tensor or list index: its list of rows
_ROWS_BY_TENSOR = re.compile(r"^\s*x = x\[(?:torch\.tensor\()?\[([-\d, ]+)\]")
# writes of one value, the same whichever of a repeated row's places is written last
_CONSTANT_WRITES = ("setitem", "masked_fill_", "fill_", "zero_")


def _h5_repeated_rows_written(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A write into a view of a file taken at repeated rows (``f[tensor([-1, -1])]`` or
    ``f[[0, 0, 0]]``, then ``view[idx] = True`` or ``view.masked_fill_(mask, True)``):
    tclass writes the rows (each row of the file once), the peer's write is lost (the
    view and the file read as before; program 3,001,732; program 1,746 of index, inv19d)."""
    if not facts.h5 or finding.kind != "result" or finding.step.op not in _CONSTANT_WRITES:
        return False
    if not all("values differ" in line for line in finding.detail):
        return False
    for line in finding.lines[:-1]:
        rows = _ROWS_BY_TENSOR.match(line)
        if rows:
            taken = [int(n) for n in rows.group(1).split(",") if n.strip()]
            if len(set(taken)) < len(taken):
                return True
    return False


_STACK_UNREAD = re.compile(
    r"^result((?:\['\w+'\])+): peer error \('RuntimeError', .*\), tclass nontensor \(\('values', "
)


def _values_unread(line: str, peer: Any, mine: Any) -> bool:
    """A value written at a new nested key of a lazy stack of a file and a TensorDict
    (``lazy.set(("n", "md"), MetaData(3, ...))``): each member holds it, the file's as a
    number the peer reads back as a numpy scalar; the peer's read of the stacked values
    fails inside ("devices differ, got cpu and None": its file's node has a device, the
    other none), tclass's reads them (fz29h: program 15,800,755 of
    features,index,shape,combine L8)."""
    found = _STACK_UNREAD.match(line)
    if found is None:
        return False
    key = key_path(found[1])
    try:
        peer.value.get(key).tolist()
    except RuntimeError as error:
        if "devices differ" not in str(error):
            return False
    else:
        return False
    ours = mine.value.get(key)
    return type(ours).__name__ == "NonTensorStack" and isinstance(ours.tolist(), list)


def _h5_result_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    if not facts.h5 or finding.kind != "result":
        return False
    op = finding.step.op
    records = {m.group(1) for m in map(_NESTED_RECORD.match, finding.detail) if m}
    for line in finding.detail:
        if any(p.search(line) for p in _RESULT_LINES) or _NESTED_RECORD.match(line):
            continue
        keys = _KEYS.match(line)
        if keys and keys.group(1) in records and _fewer_keys(keys.group(2), keys.group(3)):
            continue  # a nested record lists its unset fields, the peer's group does not
        if facts.derived == "params" and _PARAMETER.search(line):
            continue  # a TensorDictParams of a file holds parameters (the peer's, tensors)
        if _FROZEN_LOCKED.match(line) and type(mine.value).__name__ == "Frozen":
            continue  # a frozen record over a file is locked, as every frozen record
        if ".names: peer [" in line and (op == "world" or "from_dict" in finding.step.src):
            continue  # from_dict kept the names the peer dropped
        if op in ("load", "load_memmap") and _SAVED_BY.search(finding.step.src):
            if _NAMES_SAVED.search(line):
                continue  # save() / memmap() of a file kept its names, the peer's dropped
        if op in ("memmap", "memmap_like") and _SAVED_MAPPED.search(line):
            continue  # the peer's copy of a view is a view (its rows read into memory)
        if op in ("memmap", "memmap_like") and _SAVED_LOCKED.match(line):
            continue  # each level of the saved copy (its nested collections too)
        if op in ("replace", "rename_keys") and _KEY_ORDER.match(line):
            continue  # read into memory: new keys last, as a TensorDict's (the file: sorted)
        if op == "is_contiguous" and line == "result: peer True, tclass False":
            continue  # a view of a file's rows is not contiguous, as the file (the peer's is)
        if op in ("cpu", "to") and _VIEW_KEPT.search(line):
            continue
        if op in _LOADS_INTO and ".clone()" in finding.step.src and _LOADED_MAPPED.search(line):
            continue  # the clone is in memory: it loads memory-mapped tensors (the peer's
            # temporary file copies them; program 15,010,234 of methods,..., fz27a; its
            # load_, a name of load_memmap_: 15,510,334, fz28c)
        if op in ("setitem_key", "set", "update") and _RESHAPED.search(line):
            continue
        if op == "setitem_key" and (_RETYPED.search(line) or _STR_OVER_TENSOR.search(line)):
            continue  # ptd[key] = t of another dtype or a str replaces it (the peer casts)
        if op in ("setitem_key", "set", "update") and _new_nested_key_kept(finding, line):
            continue
        if op in ("setitem_key", "set", "update") and _view_names_kept(finding, line):
            continue  # the new group through a view named as the view (the peer's: fewer)
        if op in ("set_non_tensor", "create_nested") and _value_in_new_group_kept(finding, line):
            continue
        if op == "create_nested" and _existing_group_replaced(finding, line, mine):
            continue
        if op in ("set", "setitem_key", "set_non_tensor") and _values_unread(line, peer, mine):
            continue
        if op == "apply" and "batch_size=" in finding.step.src and _NAMES_DROPPED.search(line):
            continue  # apply(fn, batch_size=) drops the names, as a TensorDict's in both
        if op in ("apply", "named_apply") and _UNNAMED_BY.search(finding.step.src):
            if _NAMES_DROPPED.search(line):
                continue  # apply(fn, names=[None, ...]) unnames every level, as of any
                # collection; the peer applies the groups with their own names and the
                # file's result takes them back (its TensorDict's fails refining them, an
                # entry of its own; program 11,001,976 of the six families, fz21a)
        if op == "new_tensor" and _NAMES_DROPPED.search(line):
            continue  # the same, for new_tensor (its apply with batch_size=; fz17b)
        if op in ("tile", "reshape", "broadcast_to") and _NAMES_DROPPED.search(line):
            continue  # read into memory and shaped as a TensorDict, which drops them
        if op in _NEW_GROUP_OPS and _NEW_GROUP_NAMED.match(line):
            continue  # a new group takes the file's dim names, as in a TensorDict (replace:
            # read into memory, program 10,300,305, fz19c; create_nested, which the peer's
            # file leaves unnamed where its set names the group: 15,982,417 L12, fz30e)
        if op in ("get", "get_default", "getitem_key") and _NAMES_SAVED.search(line):
            continue  # a group nested twice keeps them too (the peer's reads [None, ...])
        keys = _KEYS.match(line)
        if op in ("setitem_key", "set") and keys and not keys.group(2) and _no_rows(mine):
            continue  # a value written through a view of a file without rows is kept
        if op == "auto_batch_size_" and (_NAMES_PADDED.match(line) or _names_cut(line)):
            continue  # a nested group names each new dim (the peer's: fewer names than dims)
        if keys and _separated_from_file(finding, keys.group(2), keys.group(3)):
            continue  # separates deleted them from the file (the peer's file keeps them)
        reopened = op == "world" and facts.h5.endswith("reload")
        read = op in ("getitem_key", "get", "get_default", "rename_key_", "pop")
        if (read or reopened) and _more_batch_dims(line):
            continue  # a group's batch size as written (the peer's inferred one is shorter)
        return False
    return True


# A group under a record field reads as a record of the field's class (the peer's: a
# ``PersistentTensorDict``, or its view), listing its fields that are not set.
_NESTED_RECORD = re.compile(
    r"^(result\S*)\.kind: peer 'PersistentTensorDict(View)?', "
    r"tclass '(Rec|Inner|Auto|NoCast|TOnly|Frozen)'$"
)
_NEW_GROUP_OPS = ("setitem_key", "set", "update", "rename_key_", "replace", "create_nested")
_KEY_ORDER = re.compile(r"^result(\['\w+'\])*: key order: peer \[.*\], tclass \[.*\]$")
_KEYS = re.compile(r"^(result\S*): keys: peer \[(.*)\], tclass \[(.*)\]$")
_PARAMETER = re.compile(r": peer Tensor\[([\w.]+), (shape [^\]]*\])\], tclass Parameter\[\1, \2\]$")
_FROZEN_LOCKED = re.compile(r"^result\.is_locked: peer False, tclass True$")


_CREATED = re.compile(r"\.create_nested\(['\"](\w+)['\"]\)$")
_SHAPE_OF_NODE = re.compile(r"\.(batch_size|names): peer [\(\[].*, tclass [\(\[].*$")


def _existing_group_replaced(finding: Finding, line: str, mine: Any) -> bool:
    """``create_nested(key)`` of a lazy stack of files that hold a group ``key``: tclass
    replaces it by an empty node of the batch size, as both libraries do in memory (the
    peer documents the overwrite), where the peer's file views keep the old group, its
    entries and its extra dims (fz33b: program 17,073,843 L12 of
    methods,index,shape,combine; og33k)."""
    found = _CREATED.search(finding.step.src)
    if found is None or f"['{found[1]}']" not in line:
        return False
    node = mine.value.get(found[1], None)
    if node is None or list(node.keys()) or node.batch_size != mine.value.batch_size:
        return False
    keys = _KEYS.match(line)
    return not keys.group(3) if keys else _SHAPE_OF_NODE.search(line) is not None


def _no_rows(mine: Any) -> bool:
    size = getattr(mine.value, "batch_size", None)
    return size is not None and size.numel() == 0


def _separated_from_file(finding: Finding, peer: str, mine: str) -> bool:
    """``separates`` of a file deletes the entries it takes, as a TensorDict's does in both
    libraries and the file's ``exclude(inplace=True)``: the peer's file keeps them, so its
    later copies (``clone().load_state_dict(x.state_dict())``) hold them (program
    9,191,437 of records,entries, inv19e)."""
    theirs, ours = (set(side.split(", ")) - {""} for side in (peer, mine))
    gone = theirs - ours
    separated = " ".join(line for line in finding.lines[:-1] if ".separates(" in line)
    return bool(gone) and ours <= theirs and all(key in separated for key in gone)


def _fewer_keys(peer: str, mine: str) -> bool:
    return set(peer.split(", ")) - {""} <= set(mine.split(", "))


_DIMS = re.compile(r"\.(batch_size|names): peer [\[(]([^\])]*)[\])], tclass [\[(]([^\])]*)[\])]$")


def _more_batch_dims(line: str) -> bool:
    found = _DIMS.search(line)
    if found is None:
        return False
    peer, mine = found.group(2).rstrip(","), found.group(3)
    return len(mine) > len(peer) and mine.startswith(peer)


_SAVED_LOCKED = re.compile(
    r"^result(\['\w+'\]|\.<members>(\[\d+\])+)*\.is_locked: peer False, tclass True$"
)
# the peer's memmap() of a view of a file's rows returns a view over the rows it read (plain
# tensors; its folder a ``_SubTensorDict`` with its ``_source``), tclass's a saved TensorDict
_SAVED_MAPPED = re.compile(
    r": peer Tensor\[([\w.]+, shape \[[^\]]*\])\], tclass MemoryMappedTensor\[\1\]$"
)
_VIEW_KEPT = re.compile(r"\.kind: peer 'TensorDict', tclass 'PersistentTensorDict(View)?'$")
_RETYPED = re.compile(
    r": peer Tensor\[[\w.]+, shape (\[[\d, ]*\])\], tclass Tensor\[[\w.]+, shape \1\]$"
)
# ptd[key] = "" over a dataset: a str value in tclass, the peer's numpy cast of it (fz41b)
_STR_OVER_TENSOR = re.compile(
    r": peer Tensor\[[\w.]+, shape \[[\d, ]*\]\], tclass nontensor \(\('value', \('py', 'str'"
)
_KEYS_KEPT = re.compile(r"^result((?:\['\w+'\])*): keys: peer \[([^\]]*)\], tclass \[([^\]]*)\]$")


_NEW_NESTED_WRITE = re.compile(r"x(\.set\(|\[|\.update\(\{)\(['\"]\w+['\"], ")


def _new_nested_key_kept(finding: Finding, line: str) -> bool:
    """``view[("k", "a")] = t`` (or ``view.set(("k", "a"), t)``, ``view.update({("k",
    "a"): t})``) of a new nested key through a view of a view: tclass writes it, the peer
    makes the group ``k`` and drops ``t`` (left46a: ``t`` an empty TensorDict)."""
    found = _KEYS_KEPT.match(line)
    if found is None or not _NEW_NESTED_WRITE.match(finding.step.src):
        return False
    theirs, ours = (set(re.findall(r"'(\w+)'", found.group(n))) for n in (2, 3))
    return theirs < ours and sum("x[" in step for step in finding.lines) >= 2


_VIEW_NAMES = re.compile(r"^result(\['\w+'\])+\.names: peer \[(.*)\], tclass \[(.*)\]$")


def _view_names_kept(finding: Finding, line: str) -> bool:
    """The new group ``k`` of a nested write through a view of a view (above) is named as
    the view, where the peer's view of the group names fewer of its dims (``['i', None,
    None]`` for the view's ``['i', None, 'j']``; left46a)."""
    found = _VIEW_NAMES.match(line)
    if found is None or not _NEW_NESTED_WRITE.match(finding.step.src):
        return False
    theirs, ours = found.group(2).split(", "), found.group(3).split(", ")
    if len(theirs) != len(ours) or theirs == ours:
        return False
    return all(a in (b, "None") for a, b in zip(theirs, ours, strict=True))


_MEMBER_KEYS_KEPT = re.compile(
    r"^result(?:\['\w+'\]|\.<members>(?:\[\d+\])+)*: keys: peer \[(.*)\], tclass \[(.*)\]$"
)
_NEW_NESTED_PAIR = re.compile(
    r"x(\s*=\s*x)?\.(set_non_tensor|create_nested)\(\(['\"]\w+['\"], ['\"](\w+)['\"]\)"
)


def _value_in_new_group_kept(finding: Finding, line: str) -> bool:
    """``lazy.set_non_tensor(("k", "a"), v)`` of a lazy stack of files at a new nested
    key: tclass writes ``v`` into each member's new group ``k``, the peer makes the
    groups and drops ``v`` (fuzz35b: program 2,405,544 of index,entries; the peer's silent drop,
    decided by left35); ``lazy.create_nested(("k", "a"))``: the peer makes ``k`` and drops
    the empty ``a`` below it (fz27d: program 15,540,236 of methods,index,shape,combine),
    also where ``k`` is a group already (its other entries listed in both: fz30e, program
    15,951,699 L12 of methods,features,entries,records). tclass's keys are the peer's and
    ``a``."""
    found, made = _MEMBER_KEYS_KEPT.match(line), _NEW_NESTED_PAIR.match(finding.step.src.strip())
    if found is None or made is None:
        return False
    theirs, ours = (re.findall(r"'(\w+)'", found.group(n)) for n in (1, 2))
    return sorted([*theirs, made.group(3)]) == sorted(ours) and any(
        "lazy_stack(" in step for step in finding.lines
    )


_NAMES_DROPPED = re.compile(
    r"^result(\['\w+'\])*\.names: peer \[[^\]]*\], tclass \[None(, None)*\]$"
)
_UNNAMED_BY = re.compile(r"\bnames=\[None(, None)*\]")
_NAMES_SAVED = re.compile(
    r"^result(\['\w+'\])*\.names: peer \[None(, None)*\], tclass \[(None, )*'"
)
# ``clone().auto_batch_size_()`` of a named file: a nested group's names for every dim of
# its new batch size, as a TensorDict's in both; the peer's clone, still a file, keeps its
# old names, fewer than its new dims (left42)
_NAMES_PADDED = re.compile(r"^result(\['\w+'\])+\.names: peer \[(.*)\], tclass \[\2(, None)+\]$")
_NAMES_LINE = re.compile(r"^result(\['\w+'\])*\.names: peer \[(.*)\], tclass \[(.*)\]$")


def _names_cut(line: str) -> bool:
    """Fewer dims than before (``auto_batch_size_(batch_dims=0)``): tclass's copy names
    its first ones as before, as a TensorDict's in both; the peer's, still a file, keeps
    every old name, more names than dims (program 69,335 of index,entries, inv19c)."""
    found = _NAMES_LINE.match(line)
    if found is None:
        return False
    theirs, mine = (side.split(", ") if side else [] for side in found.group(2, 3))
    return len(mine) < len(theirs) and theirs[: len(mine)] == mine


_SAVED_BY = re.compile(r"\.(save|memmap)\(")
_NEW_GROUP_NAMED = re.compile(r"^result(\['\w+'\])+\.names: peer \[None(, None)*\], tclass \[")
_RESHAPED = re.compile(r": peer Tensor\[[\w.]+, shape \[[\d, ]*\]\], tclass Tensor\[[\w.]+, shape")


def _h5_keys_listed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``keys(True)`` of a file lists a group after the keys below it, as of any
    collection (the peer's file lists it before them, its TensorDict after); ``set()``
    on a file gives the file (the peer's result can lack entries the file holds, or be
    the group a nested key was set in)."""
    if not facts.h5 or finding.kind != "result":
        return False
    if finding.step.op in ("keys", "items", "values") and isinstance(peer.value, list):
        return sorted(map(repr, peer.value)) == sorted(map(repr, mine.value))
    if finding.step.op == "set":
        keys_only = all(": keys: peer " in d for d in finding.detail)
        if keys_only and set(peer.value.keys()) < set(mine.value.keys()):
            return True
        path = re.match(r"x\.set\(\(((?:'\w+', )+)'\w+'\), ", finding.step.src)
        if path is None:  # the peer's result: the group the key was set in, at any depth
            return False
        group = mine.value.get(tuple(re.findall(r"'(\w+)'", path[1])), None)
        if group is None or sorted(peer.value.keys()) != sorted(group.keys()):
            return False
        # (its batch size and names too, when the group has more dims than the file: fz17b)
        return keys_only or tuple(peer.value.batch_size) == tuple(group.batch_size)
    return False


def _h5_params_read(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A ``TensorDictParams`` of a file holds the file's entries read into memory, as
    parameters: writes through it leave the file as it was, and its in-place math
    writes the parameters and returns them (the peer's holds the file, registers none
    of its tensors and writes the file, but its in-place math and ``load_state_dict``
    write nothing, or fail,
    and on a file without tensors returns a TensorDict). So the file (a result of a line
    before the wrap) is not written through the parameters, and the parameters are
    written through their views (``unbind``, an index: the peer's are copies read from
    the file; program 2,904,809 of the six families), and ``params[...]`` is the params
    themselves (the peer's a view of the file); its ``load_state_dict`` loads the
    parameters (the peer's writes neither them nor the file: program 4,202,883 of
    ``--families entries``); its ``is_contiguous()`` is the parameters' (the peer's, the
    file's, is false: program 6,000,875 of the six families); a new tensor set through
    them is a parameter (the peer's file refuses the parameter it makes of it, "Cannot
    set a tensor that has requires_grad=True": program 20,808 of the five families; a new
    nested one by ``update``: 16,310,652 L8 of methods,features,entries,records, og32b)."""
    if not facts.h5 or facts.derived != "params":
        return False
    wrapped = [i for i, line in enumerate(finding.lines, 1) if _WRAPS_X.search(line)]
    if not wrapped:
        return False
    if finding.kind == "result" and finding.step.op == "is_contiguous":
        return (peer.value, mine.value) == (False, True)
    if finding.kind == "peer-raises" and finding.step.op in ("set", "setitem_key", "update"):
        return "Cannot set a tensor that has requires_grad=True" in str(peer.error)
    if finding.kind == "alias":
        return _result_line(finding) is not None
    if finding.kind == "result" and finding.step.op == "getitem":  # params[...]: itself
        return all(_PARAMS_FILE_VIEW.search(line) for line in finding.detail)
    written = finding.step.op.endswith("_") or finding.step.op == "load_state_dict"
    if finding.kind != "result" or not written:  # (the peer's load_state_dict writes nothing)
        return False
    return all(_PARAMS_IN_PLACE.search(line) for line in finding.detail)


_WRAPS_X = re.compile(r"L\.TensorDictParams\(x[,)]")
_PARAMS_FILE_VIEW = re.compile(
    r"^result\.kind: peer 'PersistentTensorDictView', tclass 'TensorDictParams'$"
)
_PARAMS_IN_PLACE = re.compile(
    r": values differ: |^result\.kind: peer 'TensorDict', tclass 'TensorDictParams'$"
)


def _h5_memmap_saved_path(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``f.memmap(folder).saved_path`` of an HDF5 file (``to_h5`` made by a step or the
    world's): tclass's copy is saved in that folder, the peer's TensorDict says it is not
    (``saved_path`` ``None``; program 15,030,441 of methods,index,shape,combine, fz27a)."""
    if ".memmap(" not in finding.step.src:
        return False
    if finding.kind == "peer-raises" and finding.step.op == "memmap_refresh_":
        # so ``f.memmap(folder).memmap_refresh_()`` reloads it, as a TensorDict's in both
        # (the peer's: "Cannot refresh a TensorDict that is not memory mapped or has no
        # path associated"; program 15,540,046 L16, fz28c)
        if "Cannot refresh a TensorDict that is not memory mapped" not in str(peer.error):
            return False
    elif finding.kind != "result" or finding.step.op != "saved_path":
        return False
    elif finding.detail != ["result: peer False, tclass True"]:
        return False
    return bool(facts.h5) or any(".to_h5(" in line for line in finding.lines[:-1])


def _h5_params_missing_entry_class(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``entry_class(key)`` of a key missing from a TensorDictParams made of a file (a
    step's ``to_h5``): tclass's parameters hold the file's entries read into memory, so it
    answers as a TensorDict's ``entry_class`` of a missing key does in both libraries
    (``NoneType``), where the peer's holds the file, which raises ``KeyError`` (fz28e:
    program 15,865,109 of methods,index,shape,combine, --length 16)."""
    if finding.kind != "peer-raises" or finding.step.op != "entry_class":
        return False
    if "not found in PersistentTensorDict" not in str(peer.error):
        return False
    made = [i for i, line in enumerate(finding.lines) if ".to_h5(" in line or "h5" in line]
    wrapped = [i for i, line in enumerate(finding.lines) if _WRAPS_X.search(line)]
    return bool(made) and bool(wrapped) and made[0] < wrapped[-1] and mine.value == "NoneType"


_STORE_ROUND_TRIPS = ("from_zarr", "from_h5")
_GRAD_REFUSED = "Cannot set a tensor that has requires_grad=True"


def _store_writes_grad_data(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``to_zarr`` / ``to_h5`` of tensors that require grad (``requires_grad_()``,
    parameters): tclass writes their values (README: "`to_h5` of tensors that require
    grad save their values"), as ``memmap``, ``save`` and ``consolidate(filename=...)``
    do in both libraries; the peer's store refuses each such tensor ("Cannot set a
    tensor that has requires_grad=True") and leaves an empty store behind (programs
    15,630,231 / 15,630,418 L12 of features,index,shape,combine, fz28c). A write into
    an open store refuses them in both."""
    if finding.kind != "peer-raises" or finding.step.op not in _STORE_ROUND_TRIPS:
        return False
    src = finding.step.src
    return (".to_zarr(" in src or ".to_h5(" in src) and _GRAD_REFUSED in str(peer.error)


def _ragged_batch_refused(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``from_zarr(x.to_zarr(path))`` (``to_h5``) of a lazy stack whose members differ in
    shape and hold no tensor (a batch size with ``-1``): tclass refuses to write it (a
    ``HeterogeneousEntryError``, as for such a stack's tensors in both); the peer's store
    records the ``-1``, read back as a batch size no collection can have (program
    15,830,852 L8 of features,index,shape,combine, fz29b)."""
    if finding.kind != "tclass-raises" or finding.step.op not in _STORE_ROUND_TRIPS:
        return False
    if type(mine.error).__name__ != "HeterogeneousEntryError":
        return False
    src = finding.step.src
    if ".to_zarr(" not in src and ".to_h5(" not in src:
        return False
    return any(size < 0 for size in getattr(peer.value, "batch_size", ()))


def _empty_stack_not_written(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``from_zarr(x.to_zarr(path))`` (``to_h5``) of a collection holding a
    ``NonTensorStack`` over a dim of size 0 (a record's str field, stacked): the peer's
    writer asks the stack for its one value, which reads its first element, an
    ``IndexError`` inside its own code; tclass writes the stack of no elements and reads
    it back (program 15,982,062 L8 of features,index,shape,combine, fz30e)."""
    if finding.kind != "peer-raises" or finding.step.op not in _STORE_ROUND_TRIPS:
        return False
    src = finding.step.src
    if (".to_zarr(" not in src and ".to_h5(" not in src) or mine.error is not None:
        return False
    if not isinstance(peer.error, IndexError) or "with size 0" not in str(peer.error):
        return False
    frames = traceback.extract_tb(peer.error.__traceback__)
    return any(f.filename.endswith("persistent.py") and f.name == "_to_numpy" for f in frames)


# a line of a value read back from a store: ``result['k']...: peer ...``
_STORE_VALUE_LINE = re.compile(r"^result((?:\['[^']*'\])+): peer (value|py) ")


def _stack_read_per_element(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``from_zarr(x.to_zarr(path))`` of a ``NonTensorStack`` whose elements are equal (a
    str field of records stacked, ``NonTensorStack("a")``): tclass reads it back one
    value per element, as both libraries load it from a folder (README: "A
    `NonTensorStack` is written one value per element, in HDF5 files and zarr stores");
    the peer's store writes its one value, read back as a ``NonTensorData`` of the batch
    size (programs 15,610,223 L12 / 15,620,244 L8 of features,index,shape,combine,
    fz28c), or of its parent's batch size where the stack has dims of its own (a record's
    ``label`` stack of ``[2]`` in a collection of batch size ``[]``: the peer's read back
    loses them, program 15,891,400 L16 of features,index,shape,combine, fz29b). Each line
    is about such an entry: the peer's value is every one of tclass's, or, for a stack
    of stacks (2 dims or more, whose ``.data`` the peer's writer takes without checking
    every element), one of them: the peer's store keeps one and loses the others (a
    pad's ``None`` after three ``6``, program 15,950,728 L8; a record's ``"pong"``
    among the ``None`` of ``to_padded_tensor``, program 16,021,911 L12, both of
    features,index,shape,combine; fz30e). A stack of no elements (a record's ``label``
    over a dim of size 0) reads back with none, the peer's one value over the same
    batch size holding no element either (programs 15,960,784 / 16,024,213 L8 of
    methods,features,entries,records, fz30e)."""
    if finding.kind != "result" or finding.step.op not in _STORE_ROUND_TRIPS:
        return False
    seen: list[str] = []

    for line in finding.detail:
        found = _STORE_VALUE_LINE.match(line)
        if found is None:  # (an item of a list value checked above: "result['zz'][1]: ...")
            if not any(line.startswith(f"result{path}[") for path in seen):
                return False
            continue
        seen.append(found[1])
        both = read_both(found[1], peer, mine)
        if both is None:
            return False
        theirs, ours = both
        if type(theirs).__name__ != "NonTensorData" or type(ours).__name__ != "NonTensorStack":
            return False
        mine_dims = ours.batch_size
        if mine_dims[: len(theirs.batch_size)] != theirs.batch_size:
            return False
        if not mine_dims.numel() and mine_dims != theirs.batch_size:
            return False  # (no elements: the peer's one value over the same ones, none)
        values = _elements(ours.tolist(), len(mine_dims))  # (a list value kept whole)
        if any(value != theirs.data for value in values) and (
            len(mine_dims) < 2 or theirs.data not in values  # noqa: PLR2004
        ):
            return False
    return bool(finding.detail)


def _elements(values: Any, dims: int) -> list[Any]:
    """The elements of a stack's nested lists over its ``dims`` batch dims (a list value
    an element holds stays whole: ``set_non_tensor("zz", [1, 2])``, program 16,101,945
    L12 of methods,features,entries,records, fz30j)."""
    for _ in range(dims - 1):
        values = [item for part in values for item in part]
    return values if dims else [values]


# result['c']: values differ: peer [0, 0], tclass [253, 253] (short lists of ints only)
_INT_VALUES = re.compile(
    r"^result(?:\['\w+'\])+: values differ: peer \[([-\d, ]*)\], tclass \[([-\d, ]*)\]$"
)
_SIGNED_INTO = re.compile(r"^x\.set_\(.*t\(\[[\d, ]*\], 'int(8|16|32|64)'")


def _h5_cast_as_torch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``f.set_('c', ints)`` of negative signed ints into a file's ``uint8`` dataset:
    tclass casts them as torch's ``copy_`` does (-3 is 253), as a TensorDict's ``set_``
    does in both libraries; the peer's file casts them through HDF5, which clips them
    (0) (program 16,022,963 of methods,features,entries,records L8, fz30c)."""
    if finding.kind != "result" or _SIGNED_INTO.match(finding.step.src) is None:
        return False
    made = ("PersistentTensorDict.from_dict(", ".to_h5(")
    if not facts.h5 and not any(m in line for line in finding.lines[:-1] for m in made):
        return False
    for line in finding.detail:
        found = _INT_VALUES.match(line)
        if found is None:
            return False
        theirs, ours = ([int(n) for n in part.split(",") if n.strip()] for part in found.groups())
        if len(theirs) != len(ours):
            return False
        if any(p != m and not (p == 0 and 252 <= m <= 255) for p, m in zip(theirs, ours)):
            return False  # (t()'s ints are in [-4, 4]: -4..-1 wrap to 252..255)
    return True


_GROUP_SIZE_OR_NAMES = re.compile(
    r"^result((?:\['[^']*'\])+)\.(?:batch_size: peer \(([\d, ]*)\), tclass \(([\d, ]*)\)"
    r"|names: peer \[(None(?:, None)*)\], tclass \[(None(?:, None)*)\])$"
)


def _group_without_batch_inferred(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``from_zarr(x.to_zarr(path))`` of a collection of flattened keys (``"n/c"``),
    whose ``/`` makes a zarr group ``n`` that never was a collection and so has no batch
    size recorded: tclass reads it with the largest batch size its arrays share, as any
    store or file without one (README: "a zarr group without a batch size"), where the
    peer's store reads it with ``[]`` under its parent's, its ``to_tensordict()`` with
    the parent's (ol31a: program 16,105,153 L8 of methods,features,entries,records)."""
    if finding.kind != "result" or finding.step.op != "from_zarr" or not finding.detail:
        return False
    if not any('flatten_keys("/")' in line for line in finding.lines):
        return False
    for line in finding.detail:
        found = _GROUP_SIZE_OR_NAMES.match(line)
        if found is None:
            return False
        if found.group(2) is None:
            continue  # unnamed dims, as many as the batch size's
        theirs, ours = (
            [int(s) for s in side.split(",") if s.strip()] for side in found.group(2, 3)
        )
        node = entry_at(mine.value, key_path(found.group(1)))
        if node is None or not hasattr(node, "keys") or ours[: len(theirs)] != theirs:
            return False
        shapes = [list(node.get(k).shape) for k in node.keys(True, True)]
        if (
            not shapes
            or len(ours) <= len(theirs)
            or not all(s[: len(ours)] == ours for s in shapes)
        ):
            return False
        if all(len(s) > len(ours) and s[len(ours)] == shapes[0][len(ours)] for s in shapes):
            return False  # not the largest they share
    return True


# a group of ``masked_select``'s result: the peer's a view of the file's rows, tclass's a
# TensorDict in memory (unlocked, as every copy)
_MASKED_GROUP = re.compile(
    r"^result(?:\['\w+'\])+(?:\.kind: peer 'PersistentTensorDictView', tclass 'TensorDict'"
    r"|\.is_locked: peer True, tclass False)$"
)


def _h5_masked_select_copies(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``masked_select`` of an HDF5 file (a locked one too): tclass's result is a
    TensorDict in memory at every level, as torch's ``masked_select`` copies; the peer's
    copies its top level's datasets but keeps each group as a view of the file's rows at
    the mask, locked with the file (og32b: program 17,014,983 L16 of
    entries,index,combine)."""
    if finding.kind != "result" or finding.step.op != "masked_select" or not facts.h5:
        return False
    if type(mine.value).__name__ != "TensorDict":
        return False
    return bool(finding.detail) and all(_MASKED_GROUP.match(line) for line in finding.detail)


def _h5_view_class_named(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``entry_class(key)`` of a group read through a view of a file's rows (``x[[0]]`` of
    a ``to_h5`` result): a view of the group's rows in both, named
    ``PersistentTensorDictView`` in tclass and ``_SubTensorDict`` (private) in the peer,
    as the kinds compare (``compare.FILE_VIEWS``; og33a: program 17,002,919 L8 of
    methods,index,shape,combine)."""
    if finding.kind != "result" or finding.step.op != "entry_class":
        return False
    return peer.value in FILE_VIEWS and mine.value == FILE_VIEWS[peer.value]


def _h5_empty_group_auto_batched(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``TensorDict.from_tuple(tuple(f.values()), auto_batch_size=True)`` of an HDF5 file
    holding a group without entries beside tensors: tclass's group takes the batch size
    its parent's auto batch size gives, as the peer's of the same collection in memory
    (or of ``f.to_tensordict()``), where the peer's keeps the group's batch size as the
    file reads it, which does not begin with its parent's new one (a collection no
    constructor builds; program 33,338,862 L6 of methods,index,shape,combine, og34a)."""
    if not facts.h5 or finding.kind != "result" or finding.step.op != "from_tuple":
        return False
    if "auto_batch_size=True" not in finding.step.src or mine.error is not None:
        return False
    for line in finding.detail:
        found = _GROUP_SHAPE.match(line)
        if found is None:
            return False
        keys = tuple(re.findall(r"\['([^']*)'\]", found.group(1)))
        try:
            ours, ours_parent = mine.value.get(keys), mine.value.get(keys[:-1])
            theirs, theirs_parent = peer.value.get(keys), peer.value.get(keys[:-1])
        except Exception:  # (a path that is not a nested collection in both)
            return False
        if list(ours.keys()) or list(theirs.keys()) or ours.batch_size != ours_parent.batch_size:
            return False
        parent = theirs_parent.batch_size
        if theirs.batch_size[: len(parent)] == parent:
            return False  # the peer's group fits its parent: no accident to keep
    return True


_GROUP_SHAPE = re.compile(r"^result((?:\['[^']*'\])+)\.(?:batch_size|names): peer .*, tclass .*$")
