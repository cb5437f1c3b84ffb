"""The rules of the deliberate differences (``allowlist.ENTRIES``) about writes and
indices: numbers written around Python values, values written in place, indices past
the batch dims, the shapes and writes tclass checks as torch does, and a ``None`` field
filled on a saved record."""

from __future__ import annotations

import ast
import json
import re
import traceback
from typing import TYPE_CHECKING, Any

import torch

from .allow_common import _later_lines, _result_line
from .allow_ragged import (
    _about_values,
)
from .compare import flat_values, key_path

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts

# What the peer 0.15 says refusing to write a number into a Python value.
_NUMBER_REFUSED = (
    "update a leaf in-place with a shared tensordict",  # a memory-mapped collection's
    "holds one value for all its elements",  # a value shared by the elements
)


def _number_written_around_values(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``td[idx] = 1.5``: tclass writes the number into the tensors and leaves Python
    values as they are, where the peer 0.15 writes it into them too (a tensor in a list
    per element, with a FutureWarning), or refuses to on a memory-mapped collection; rows
    written into a memory-mapped collection's Python values, which the peer refuses (or,
    rows holding its values, leaves as its one value: tclass writes them per element)."""
    if finding.kind == "peer-raises" and finding.step.op == "setitem":
        if "update a leaf in-place with a shared tensordict" in str(peer.error):
            return True
    if finding.kind == "result" and finding.step.op == "setitem" and facts.memmap:
        if _same_values_rows(finding.detail):
            return True
    if finding.kind == "result" and _number_hidden_by_the_cache(finding):
        return True
    if "number" not in finding.step.tags:
        return False
    if finding.kind == "peer-raises":
        return any(text in str(peer.error) for text in _NUMBER_REFUSED)
    if finding.kind != "result":
        return False
    return all(
        _about_values(line)
        or re.search(r": peer Tensor\[[^\]]*\]\], tclass py \(", line)
        or _ATTRS_SIZE_KEPT.match(line)
        or _MEMMAP_KEPT.search(line)
        or _tensor_kept_in_values(line, mine.value)
        or _MEMBER_VALUE_LENGTH.match(line)
        or _ARRAY_VALUE_ROW.match(line)
        or _value_length_kept(line, mine.value)
        for line in finding.detail
    )


# a Python value that is a numpy array (``from_pandas``): the peer's row the number
# replaced, a list of the array and a tensor, where tclass keeps the array (an 'iter';
# program 17,138,479 L25 of features,math,index, fz34b)
_ARRAY_VALUE_ROW = re.compile(
    r"^result(?:\['\w+'\])+(?:\[\d+\])*: peer ('list'|iter of \d+), tclass ('iter'|py \()"
)
# a list value's length where the peer's number went into it (17,135,002 L25, fz34b)
_VALUE_LENGTH = re.compile(r"^result((?:\['\w+'\])+)(?:\[\d+\])+: length: peer \d+, tclass \d+$")


def _value_length_kept(line: str, mine: Any) -> bool:
    """A length line under a key whose tclass value is a node of Python values."""
    found = _VALUE_LENGTH.match(line)
    if found is None or not hasattr(mine, "get"):
        return False
    node = mine.get(key_path(line), None)
    return type(node).__name__ in ("NonTensorData", "NonTensorStack")


# A lazy stack's member's Python value (a list) that the peer's number replaced, one
# item where tclass keeps the list (og33j: program 17,101,901 of
# methods,index,shape,combine L8, a cat of a lazy stack of a TensorDictParams)
_MEMBER_VALUE_LENGTH = re.compile(
    r"^result\.<members>(?:\[\d+\])+\['\w+'\](?:\[\d+\])*: length: peer \d+, tclass \d+$"
)


# result['s'][0][1][0]: peer Tensor[...], tclass Tensor[...]: a tensor held in a value
_TENSOR_IN_VALUE = re.compile(
    r"^result\['(\w+)'\](?:\[\d+\])+: peer Tensor\[[^\]]*\]\], tclass Tensor\["
)


def _tensor_kept_in_values(line: str, mine: Any) -> bool:
    """A tensor a Python value holds (``x[i] = x[i].to_dict()`` of a value stack wrote
    one per element in both): the peer writes the number over it, tclass keeps it, as
    any Python value (program 15,961,449 of features,math,index L12, fz30c)."""
    found = _TENSOR_IN_VALUE.match(line)
    if found is None:
        return False
    try:
        node = mine.get(found.group(1))
    except (AttributeError, KeyError, RuntimeError, TypeError):
        return False
    return type(node).__name__ in ("NonTensorData", "NonTensorStack")


# an ``attrs()`` row's shape (a ``torch.Size`` value) the number leaves as it is (program
# 15,984,733 of features,math,index L8: ``x[None, ...] = True``, fz30c)
_ATTRS_SIZE_KEPT = re.compile(
    r"^result(?:\['\w+'\])*\['tgt_shape'\]: peer Tensor\[[^\]]*\]\], tclass size \("
)


# ``x[idx] = 0`` (the fuzzer's numbers) of a locked collection
_NUMBER_WRITE = re.compile(r"^x\[.*\] = (0|1|1\.5|True)$")


def _number_hidden_by_the_cache(finding: Finding) -> bool:
    """A number written into the Python values of a locked lazy stack whose values were
    read before: the peer's reads after the write still give the old values (its cache of
    a locked collection), so the write step agrees, and the written number (a tensor where
    tclass keeps the value) shows in what a later step builds (``torch.cat``; program
    12,710,065 of index,shape,combine --length 12, fz23f)."""
    earlier = finding.lines[:-1]
    writes = [i for i, line in enumerate(earlier) if _NUMBER_WRITE.match(line.strip())]
    locks = [i for i, line in enumerate(earlier) if line.strip().endswith(".lock_()")]
    return (
        bool(writes)
        and bool(locks)
        and locks[0] < writes[-1]
        and all(
            re.search(r": peer Tensor\[[^\]]*\]\], tclass py \(", line) for line in finding.detail
        )
    )


# rows holding the value a memory-mapped collection holds: the peer leaves its one value
# (it refuses another one), tclass writes the rows' values per element, as both do into a
# collection not memory-mapped (program 11,100,941 of index,combine --length 6, inv21d)
_ROW_VALUES = re.compile(
    r"^(result\S*): peer value \((\('py', '\w+', .*\)), \[[\d, ]*\]\), "
    r"tclass values \((.*), \[[\d, ]*\]\)$"
)
_ROW_VALUES_KIND = re.compile(r"^(result\S*): peer py \('\w+', .*\), tclass list of \d+$")


def _same_values_rows(detail: list[str]) -> bool:
    """Every line says the peer holds one value where tclass holds that value per
    element (``peer value (v, shape)``, ``tclass values`` listing only ``v``)."""
    keys: set[str] = set()
    for line in detail:
        found = _ROW_VALUES.match(line)
        if found is None:
            continue
        key, value, rows = found.groups()
        rest = rows.replace(value, "").replace("('seq', 'list', ", "")
        if value not in rows or re.fullmatch(r"[\[\](), ]*", rest) is None:
            return False
        keys.add(key)
    return bool(keys) and all(
        (_ROW_VALUES.match(line) or _ROW_VALUES_KIND.match(line) or [None, None])[1] in keys
        for line in detail
    )


_MEMBER_ROW_VALUE = re.compile(
    r"^result((?:\.<members>\[0\]\[\d+\])+)((?:\['\w+'\])+): "
    r"peer py \('\w+', (.*)\), tclass list of \d+$"
)


def _member_rows_written_per_element(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """Rows written into a lazy stack of records (``x[..., None] = rows``) whose value is
    the one each member holds: tclass writes it per element into the members, as both
    write rows' values into a TensorDict's; the peer's members keep their one value
    (program 15,860,433 of methods,index,shape,combine, --length 16, fz28e)."""
    if finding.kind != "result" or finding.step.op != "setitem" or not finding.detail:
        return False
    for line in finding.detail:
        found = _MEMBER_ROW_VALUE.match(line)
        if found is None:
            return False
        node = mine.value
        try:
            for index in re.findall(r"\[0\]\[(\d+)\]", found.group(1)):
                node = node.tensordicts[int(index)]
            keys = key_path(found.group(2))
            values = node.get(keys if len(keys) > 1 else keys[0]).tolist()
            expected = ast.literal_eval(found.group(3))
        except Exception:  # noqa: BLE001 (a read that fails is no value written)
            return False
        flat = flat_values(values)
        if not flat or any(v != expected for v in flat):
            return False
    return True


# ``loaded[None] = 1.5`` of a collection loaded unlocked by ``load_memmap``: the peer's
# write leaves each tensor a plain one (over the same file: the values agree), tclass's
# stays a ``MemoryMappedTensor`` (program 401,328, inv18d)
_MEMMAP_KEPT = re.compile(r": peer Tensor(\[[^\]]*\]\]), tclass MemoryMappedTensor\1$")


def _values_written_in_place(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``load_state_dict`` / ``update_`` of a memory-mapped (or shared) collection: tclass
    writes its Python values, where the peer fails on the first key that holds one; and
    ``set_`` / ``update_`` of a number into a Python value, which the peer refuses."""
    if finding.kind != "peer-raises":
        return False
    if "copy_ / update_ requires the source to be a NonTensorDataBase" in str(peer.error):
        return finding.step.op in ("update_", "set_", "load_state_dict")
    if type(peer.error).__name__ != "_InplaceWriteError":
        return False
    found = re.search(r"Failed to update '([^']+)'", str(peer.error))
    if found is None or finding.step.op not in ("load_state_dict", "update_", "set_"):
        return False
    if not hasattr(mine.value, "get"):
        return False
    nested = [k for k in mine.value.keys(True) if isinstance(k, tuple) and k[-1] == found.group(1)]
    value = mine.value.get(found.group(1), None)
    if value is None and nested:  # a nested key's (the peer names its last part)
        value = mine.value.get(nested[0])
    if type(value).__name__ in ("NonTensorData", "NonTensorStack"):
        return True
    return (
        value is not None
        and not isinstance(value, torch.Tensor)
        and not hasattr(value, "batch_size")
    )


def _dims_in_batch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A dim outside the batch dims (``stack``, ``cat``, ``flatten``...), a lazy stack's
    ``flatten`` with ``end_dim`` before ``start_dim``, an index out of range of a
    collection without entries: tclass's ``DimError`` / ``ShapeError``, where the peer 0.15
    uses the dim on the leaves (with a FutureWarning) or computes a batch size unchecked."""
    if finding.kind not in ("tclass-raises", "family"):
        return False
    name, message = type(mine.error).__name__, str(mine.error)
    if name == "ShapeError":
        return finding.step.op == "flatten" and "comes after end_dim" in message
    return name == "DimError" and (
        "batch dim(s) (expected a value in" in message
        or (
            # x[i] = x[i].to_dict(), copy_at_ / update_at_ of x[i] at I[i], get_at too
            finding.step.op in ("getitem", "setitem", "copy_at_", "update_at_", "get_at")
            and (
                "is out of range for the batch size" in message or "for a lazy stack of" in message
            )
        )
    )


def _too_many_indices(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An index with more entries than batch dims anywhere in an indexing step (the value
    written by ``x[i] = x[j, k]`` too): tclass's ``DimError``, where the peer indexes the
    leaves' feature dims."""
    if finding.kind not in ("tclass-raises", "family") or finding.step.family != "index":
        return False
    error = mine.error
    return type(error).__name__ == "DimError" and str(error).startswith("too many indices")


def _beyond_the_index(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """What tclass answers as torch does for a tensor of the batch size, where the peer
    checks and refuses: an indexed write or ``set_`` of a value that broadcasts
    (``td[...] = td[0]``, ``td[None] = td[None, None]``; ``update_at_``, a nested
    collection's batch ``[1, 1]`` into the ``[3, 1]`` that ``I[..., ::3]`` selects of
    it), ``gather`` with an empty index, ``flatten`` without batch dims,
    ``copy_at_`` (``fast=True``) at an advanced index or of a collection that is not a
    TensorDict, written as ``update_at_`` writes (the peer's fast path refuses)."""
    if finding.kind != "peer-raises":
        return False
    message = str(peer.error)
    if finding.step.op == "gather":
        return "Cannot use torch.gather with an empty index" in message
    if finding.step.op == "flatten":  # (tclass raises for a start after the end elsewhere)
        if "start_dim cannot come after end_dim" in message:
            return True
        return "Incompatible end_dim" in message and "shape torch.Size([])" in message
    if finding.step.op == "set_":
        return message.startswith("batch dimension mismatch")
    if finding.step.op == "copy_at_":  # the peer's fast path, where it cannot copy fast
        return "requires the optimized tensor-only copy path" in message
    if finding.step.op == "setitem" and _MORE_LEADING_DIMS in message:
        # a value with more leading dims of size 1 (``x[None] = x[None, None]``), which
        # torch broadcasts (program 302,208 of index,entries, inv20b)
        return mine.error is None
    if "which differs from the source batch size" not in message:
        return False
    return finding.step.op in ("setitem", "update_at_")  # (update_at_: program 20,756)


_MORE_LEADING_DIMS = "must be greater or equal to the number of dimensions in the TensorDict"


# tclass's errors for a shape torch refuses or an in-place write the peer skips: the ops
# they come from and a phrase of the message.
_CHECKED_AS_TORCH = {
    "ShapeError": (
        ("split", "do not add up to the dim size"),
        ("expand", "-1 is only allowed for existing dims"),
        ("permute", "is not a permutation of the leading batch dims"),
        ("rot90", "the two dims must differ"),
        # an index larger than the batch outside its dim, also without tensors (the peer's
        # empty collection takes the index's shape; with a value or a nested one it raises)
        ("gather", "is larger than the batch size"),
    ),
    "DimError": (("narrow", "do not fit"),),  # a batch dim, or a lazy stack's members
    # an operand the math does not take (a dict), refused also without tensors (the peer
    # returns a copy, reading no operand; fz27b: program 15,000,036 of methods,index,...)
    "OperandError": (("pow", "unsupported operand of type dict"),),
    # members without entries whose batch sizes differ outside pad_dim: the peer's result
    # takes member 0's sizes (program 10,520,720 of ``combine``: ``x[:0]`` of a ragged stack)
    "StackError": (("pad_sequence", "batch sizes may differ only at pad_dim"),),
    "BatchSizeError": (
        ("set_", "cannot copy a value of shape"),
        ("setitem", "without entries writes nothing"),
    ),
    "InPlaceWriteError": (
        ("set_", "cannot be copied into"),
        ("update_", "cannot be copied into"),
        ("set_", "torch cannot make one of it"),  # a Python value into a file's dataset
        # a tensor of a shape torch does not expand to a file's dataset (h5py writes into
        # one with no elements, or drops a dim of size 1: programs 4,900,613 and 4,900,810
        # of ``--families entries``, fz40c)
        ("set_", r"does not broadcast to the rows written; give a tensor of their shape \(expand"),
    ),
    # (``cat_tensors`` of a lazy stack into an ``out_key`` whose joined shape does not fit
    # the node: the peer's members take it unchecked, its TensorDict raises; program
    # 15,030,296 of ``--length 12`` methods,index,shape,combine, fz27c; ``stack_tensors``
    # the same: 15,540,631 of ``--length 16`` methods,index,shape,combine, fz29g)
    "BatchMismatchError": tuple(
        (op, "does not start with the batch size")
        for op in (
            "set",
            "setdefault",
            "setitem_key",
            "rename_key_",
            "rename_keys",  # (the same: 16,011,185 L12 methods,features,entries,records)
            "update_",
            "cat_tensors",
            "stack_tensors",
        )
    ),
}


def _checked_as_torch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """What the README lists under "Shapes, names and in-place writes are checked as torch
    checks a tensor": tclass's error where the peer computes a batch size torch refuses or
    silently skips (or half-does) an in-place write."""
    if finding.kind not in ("tclass-raises", "family"):
        return False
    rules = _CHECKED_AS_TORCH.get(type(mine.error).__name__, ())
    message = str(mine.error)
    return any(finding.step.op == op and re.search(phrase, message) for op, phrase in rules)


_WRITE_SIZES = re.compile(
    r"destination TensorDict batch size is (\[[\d, ]*\]), and the source's batch size "
    r"(\[[\d, ]*\])|values of batch size (\[[\d, ]*\]) into the elements (\[[\d, ]*\])"
)


def _written_as_torch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A collection written at an index whose batch size torch would not broadcast to the
    selection's as a tensor's shape (``td[0] = td[1:1]``): tclass's error, where the peer
    writes the one Python value (or nothing) it holds."""
    if finding.kind != "tclass-raises" or finding.step.op != "setitem":
        return False
    found = _WRITE_SIZES.search(str(mine.error))
    if found is None:
        return False
    dest, source = (found.group(1), found.group(2)) if found.group(1) else found.group(4, 3)
    try:
        torch.empty(json.loads(dest))[...] = torch.empty(json.loads(source))
    except RuntimeError:
        return True
    return False


_NO_SIZE_FITS = re.compile(
    r"^(?:reshape|view): shape (\[[-\d, ]*\]) is invalid for a batch of (\d+) "
)


def _reshaped_past_a_ragged_dim(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``reshape`` / ``view`` of a ragged lazy stack (members of different sizes) into a
    shape its elements do not fit (3 elements into ``[-1, 2]``): tclass's error, as torch
    refuses that shape for a tensor of as many elements, where the peer counts the ragged
    dim's ``-1`` as a size and returns a batch size with a ``-1`` in it."""
    if finding.kind != "tclass-raises" or finding.step.op not in ("reshape", "view"):
        return False
    found = _NO_SIZE_FITS.search(str(mine.error))
    peer_size = getattr(peer.value, "batch_size", None)
    if found is None or peer_size is None or all(size >= 0 for size in peer_size):
        return False
    try:
        torch.empty(int(found.group(2))).reshape(json.loads(found.group(1)))
    except RuntimeError:
        return True
    return False


def _absent_field_filled(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A field that is ``None`` assigned on a locked record saved in a folder
    (``saved.opt = t``): filled in tclass (written to the folder), refused by the peer's
    lock. tclass refuses the assignment of a field already set, or on a record not saved."""
    if finding.kind != "peer-raises" or finding.step.op not in ("setattr", "set"):
        return False
    saved = facts.memmap or any(
        re.search(r"memmap|\.save\(|\.dumps\(", line) for line in finding.lines
    )
    return saved and "Cannot modify locked" in str(peer.error)


# ``x = torch.stack([x, ...])``: a dense stack (``lazy_stack`` shares its members in both)
_DENSE_STACK = re.compile(r"^x = (torch\.stack|L\.maybe_dense_stack)\(\[")
# the in-place writes that reach the peer's stacked values (``update_at_`` does not)
_VALUE_WRITTEN = re.compile(r"\.(update_|set_|set_at_|copy_)\(")
_KEY_DIFFERS = re.compile(r"^result((?:\['\w+'\])+): peer (.+), tclass (.+)$")


# ``x[...] = ...``: an indexed write (its value a dict, ``to_dict()``, or a collection)
_INDEXED_WRITE = re.compile(r"^x\[.+\] = ")
# ``result['s'][0][1][0]: peer Tensor[...], tclass py ('int', 0)``: an element of a value
# stack that tclass keeps a Python value
_ELEMENT_KEPT = re.compile(r"^result((?:\['\w+'\])+)(?:\[\d+\])*: peer .+, tclass py \(.+\)$")


def _stacked_value_stacks_copied(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A collection holding a stack of Python values (a ``NonTensorStack``), stacked by
    ``torch.stack`` or ``maybe_dense_stack``, whose values changed later in the peer
    only: an indexed write into the stack (``x[idx] = x[idx].to_dict()``) reaches the
    peer's stacked collections, whose value stacks its dense stack holds; tclass's stack
    copies the values as it copies tensors (README, as ``_stacked_values_copied``;
    fz28d: program 15,600,178 of features,index,shape,combine ``--length 8``)."""
    return _value_stacks_written_after(finding, mine, _DENSE_STACK, _ELEMENT_KEPT, 0)


def _value_stacks_written_after(
    finding: Finding, mine: Any, op: re.Pattern[str], element: re.Pattern[str], back: int
) -> bool:
    """An alias finding on an earlier result (its line, less ``back``, then the lines
    after it) where a line matching ``op`` is followed by an indexed write, and where each
    detail line matches ``element`` at a key tclass's result holds as a value stack."""
    at = _result_line(finding)
    if finding.kind != "alias" or at is None or not hasattr(mine.value, "get"):
        return False
    later = finding.lines[at - back :]
    at = [i for i, line in enumerate(later) if op.match(line)]
    if not at or not any(_INDEXED_WRITE.match(line) for line in later[at[0] + 1 :]):
        return False
    for line in finding.detail:
        kept = element.match(line)
        if kept is None:
            return False
        keys = key_path(kept[1])
        value = mine.value.get(keys[0] if len(keys) == 1 else keys, None)
        if type(value).__name__ != "NonTensorStack":
            return False
    return True


# ``x = torch.permute(x, [1, 0])`` / ``x = x.permute(...)``: a permuted view
_PERMUTED = re.compile(r"^x = (?:torch\.permute\(x, |x\.permute\()")
# ``result['s'][0][1][0]: peer py ('int', 2), tclass Tensor[...]``: an element of a value
# stack that the peer's earlier result keeps
_ELEMENT_KEPT_BY_PEER = re.compile(
    r"^result((?:\['\w+'\])+)(?:\[\d+\])*: peer py \(.+\), tclass .+$"
)


def _values_written_through_a_permute(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An earlier result whose value stack changed in tclass only after a ``permute`` of
    it (or of a result holding its values) and an indexed write into the view (or into
    its ``contiguous()``, which holds the same value stack in both): tclass's permuted
    view shares its source's values, as its tensors do (README, "A view shares its
    source's values"); the peer's permute of a stack whose members each hold one value
    (a ``NonTensorData``) writes into members of its own, so its source keeps its values
    while its tensors change (og32b: program 31,410,434 L8 of
    features,index,shape,combine)."""
    return _value_stacks_written_after(finding, mine, _PERMUTED, _ELEMENT_KEPT_BY_PEER, 1)


def _stacked_values_copied(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A collection stacked by ``torch.stack`` whose Python value changed later in the
    peer only: an in-place write of a value into the stack (``update_``, ``set_``,
    ``copy_``, ``set_at_``) reaches the peer's stacked collections, whose own
    ``NonTensorData`` its dense stack holds (its tensors are copies, which the write
    leaves alone in both); tclass's stack copies both (program 1,900,664 of ``--families
    records``, inv20a); ``maybe_dense_stack`` of members of one shape too (program
    12,100,807 of the six families ``--length 8``, fz22h)."""
    if finding.kind != "alias" or not hasattr(mine.value, "get"):
        return False
    later = _later_lines(finding)  # (none for another finding)
    stacked = [i for i, line in enumerate(later) if _DENSE_STACK.match(line)]
    if not stacked or not any(_VALUE_WRITTEN.search(line) for line in later[stacked[0] + 1 :]):
        return False
    for line in finding.detail:
        differs = _KEY_DIFFERS.match(line)
        if differs is None or "Tensor[" in line or ": values differ: " in line:
            return False
        keys = key_path(differs[1])
        value = mine.value.get(keys[0] if len(keys) == 1 else keys, None)
        if value is None or isinstance(value, torch.Tensor) or hasattr(value, "keys"):
            return False
    return True


_EQUAL_KEPT = re.compile(
    r"^result((?:\['\w+'\])+)(?:\[\d+\])*: peer py \('(int|float|bool)', ([^)]+)\), "
    r"tclass Tensor\[torch\.\w+, shape \[(?:1(?:, 1)*)?\]\]$"
)
# a stack or a cat of collections (the peer's values a stack of NonTensorData members)
_JOINED = re.compile(r"^x = (torch\.(stack|cat)|L\.(maybe_dense_stack|cat))\(\[")


def _equal_value_rewritten(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An indexed write into a dense stack (``torch.stack``) whose number equals the one a
    member holds (``x[-62] = x[-62].to_dict()`` of a stack of collections holding
    ``NonTensorData(2)``): the written number is a 0-d tensor (a dict's numbers are), which
    tclass stores in that element as both do in a collection not stacked; the peer's stack
    of ``NonTensorData`` members keeps the member's old ``2``, the value comparing equal
    (it warns the metadata "may or may not be equal"; program 13,710,360 of
    index,shape,combine ``--length 12``, fz24d). So too after a ``torch.cat``, the
    number a tensor of one element written at rows of that shape (``tensor([[-1]])``;
    program 15,840,648 of methods,index,shape,combine ``--length 8``, fz28e)."""
    if finding.kind not in ("alias", "result") or not hasattr(mine.value, "get"):
        return False
    if not _INDEXED_WRITE.match(finding.lines[-1].strip()):
        return False
    if not any(_JOINED.match(line.strip()) for line in finding.lines[:-1]):
        return False
    for line in finding.detail:
        found = _EQUAL_KEPT.match(line)
        if found is None:
            return False
        keys = key_path(found[1])
        stack = mine.value.get(keys[0] if len(keys) == 1 else keys, None)
        if stack is None or not hasattr(stack, "tolist"):
            return False
        tensors = [v for v in flat_values(stack.tolist()) if isinstance(v, torch.Tensor)]
        literal = {"True": True, "False": False}.get(found[3], None)
        expected = float(found[3]) if literal is None else literal
        if not tensors or any(t.numel() != 1 or t.item() != expected for t in tensors):
            return False
    return True


# its squeeze() left a Python value's node with the squeezed dim of size 1, which the mask
# then does not fit (the mask's shape, after a 1): program 15,610,993 L8 / L12
_MASK_PAST_SQUEEZED = re.compile(
    r"The shape of the mask \[([\d, ]*)\] at index 0 does not match the shape of the "
    r"indexed tensor \[1, \1\] at index 0"
)


def _setitem_fails_inside(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x[idx] = v`` where the peer fails inside (methods / features,index,shape,combine,
    fz29e): a number 1.5 into uint64 entries (its own cast of the number); a
    ``MetaData``'s dict written back (:func:`_metadata_dict_fails_inside`); a record
    (or a TensorDict holding a str) after ``share_memory_()``; a mask into a record after
    its ``squeeze()``; and a
    collection whose batch size does not fit the selection, which tclass refuses
    (``BatchSizeError``, a ``RuntimeError`` as the peer's refusal of a TensorDict's) where
    the peer copies the value first and that copy of a stack of Python values without
    members fails (``IndexError: list assignment index out of range``: programs
    15,540,922 L16 and 15,824,778 L8); the same copy of a value that fits as torch's
    would (``x[:0] = x[None].clone()`` over no elements: its leading dim of size 1),
    which tclass writes (fz32c: 17,030,985 L14 of features,index,shape,combine)."""
    if finding.step.op != "setitem" or finding.kind not in ("peer-raises", "family"):
        return False
    message = str(peer.error)
    if _METADATA_REBUILT in message:  # see _metadata_dict_fails_inside
        return _metadata_dict_fails_inside(finding, mine)
    copy_failed = (
        isinstance(peer.error, IndexError)
        and "list assignment index out of range" in message
        and _raised_in(peer.error, "_lazy.py", "_clone")
    )
    if finding.kind == "family":
        return type(mine.error).__name__ == "BatchSizeError" and copy_failed
    if copy_failed:  # a value that fits, as torch's (leading dims of size 1): tclass writes
        return mine.error is None
    earlier = " ".join(finding.lines[:-1])
    if _MASK_PAST_SQUEEZED.search(message):
        return ".squeeze(" in earlier
    if "should only be shared between processes through inheritance" in message:
        # the clone of a record holding a str its ``share_memory_()`` made a
        # ``SynchronizedString``, which pickling refuses: program 15,824,608 L8
        return "share_memory_()" in earlier
    if "'SynchronizedString' object has no attribute" in message:
        # the same str, a TensorDict's: its rows' copy fails on it (program 16,071,590 of
        # methods,index,shape,combine L8, fz30c)
        return "share_memory_()" in earlier
    # its own float-to-uint64 cast of the number (``torch.tensor(1.5, dtype=torch.uint64)``
    # is a TypeError; torch's ``t[i] = 1.5`` writes 1): program 15,530,620 L12
    return "an integer is required" in message and ".uint64()" in earlier


# the peer's MetaData rebuilt from a dict's keys: MetaData(k=1)
_METADATA_REBUILT = "MetaData.__init__() got an unexpected keyword argument"


def _metadata_dict_fails_inside(finding: Finding, mine: Any) -> bool:
    """``x[i] = x[i].to_dict()`` of a collection holding a ``MetaData({'k': 1})``: the
    peer's dict gives the MetaData's dict, and its write rebuilds a ``MetaData`` from that
    dict's keys (``MetaData(k=1)``), a ``TypeError`` inside its own code; tclass writes
    the dict into the node, or refuses it as any dict whose numbers do not fit the rows
    (``BatchSizeError``: ``x[[]] = ...``, its ``'k'`` a scalar against no rows) (programs
    15,953,732 and 15,984,873 of features,index,shape,combine L12, fz30c)."""
    if ".to_dict()" not in finding.step.src:
        return False
    if not any("L.MetaData({" in line for line in finding.lines[:-1]):
        return False
    return finding.kind == "peer-raises" or type(mine.error).__name__ == "BatchSizeError"


def _raised_in(error: BaseException, file: str, function: str) -> bool:
    """Whether ``error`` was raised in ``function`` of the peer's module ``file``."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and frames[-1].filename.endswith(file) and frames[-1].name == function


_ROW_DICT = re.compile(r"^x\[(.+)\] = x\[\1\]\.to_dict\(\)$")
_LIST_READ_AS_ENTRY = re.compile(r"for key '(\w+)': its shape \[(\d+)\] does not start with")


def _row_dict_of_one_list(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x[i] = x[i].to_dict()`` where the rows share one list value (``set_non_tensor(k,
    [1, 2])``, then an op the peer rebuilds per element, ``roll``): tclass's rows hold the
    one list, which the dict gives and the write reads as an entry of shape ``[2]`` under
    the rows' batch, refused as the peer refuses that dict (``x[i] = {k: [1, 2]}``: its
    "batch dimension mismatch"); the peer's rows list it per element, and its write makes
    that nested list one tensor written into every element (program 15,845,120 of
    methods,index,shape,combine L8, fz29e)."""
    if finding.kind != "tclass-raises" or finding.step.op != "setitem":
        return False
    found = _LIST_READ_AS_ENTRY.search(str(mine.error))
    if _ROW_DICT.match(finding.step.src) is None or found is None:
        return False
    key, length = found.groups()
    listed = re.compile(rf"set_non_tensor\(\(?'{key}',?\)?, \[([^\[\]]*)\]\)")
    for line in finding.lines[:-1]:
        value = listed.search(line)
        if value is not None and len(value.group(1).split(",")) == int(length):
            return True
    return False


# x[...] = <a Python number>: the step that writes a number at an index
_NUMBER_AT = re.compile(r"^x\[.*\] = (True|False|-?\d+(\.\d+)?)$")
# result.<members>[i][j]['k']['l']: values differ: a leaf of a member of the lazy stack
_MEMBER_LEAF = re.compile(r"^result\.<members>(?:\[\d+\])+((?:\['\w+'\])+): values differ")


def _number_into_keys_some_members_hold(
    finding: Finding, facts: Facts, peer: Any, mine: Any
) -> bool:
    """``lazy[idx] = 1.5`` of a lazy stack whose members hold different keys: tclass
    fills each member's entries at ``idx``, those under a key only some members hold
    too, as ``zero_()``, ``masked_fill_`` and ``apply_`` fill them in both; the peer's
    index write fills the keys every member holds only and leaves the others as they
    were (program 15,983,003 of features,index,shape,combine L8: the grads of a lazy
    stack, ``None`` in two members, fz30c)."""
    if finding.kind != "result" or finding.step.op != "setitem":
        return False
    stack = peer.value
    if _NUMBER_AT.match(finding.step.src) is None or not hasattr(stack, "tensordicts"):
        return False
    shared = {(k,) if type(k) is str else tuple(k) for k in stack.keys(True, True)}
    for line in finding.detail:
        found = _MEMBER_LEAF.match(line)
        if found is None or key_path(found.group(1)) in shared:
            return False
    return True


# result['s']: the first key path of a detail line
_DETAIL_KEYS = re.compile(r"^result((?:\['\w+'\])+)(?:\[\d+\])*: ")


def _metadata_rows_written(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x[i] = x[i].to_dict()`` (or another row's dict) of a collection holding a
    ``MetaData``: tclass writes the row's value, the node becoming a ``NonTensorStack``
    of its values (the dict's number a 0-d tensor there), as both do for a
    ``NonTensorData``; the peer's ``MetaData`` keeps its one value and drops the written
    one, a different one too, without a word (program 15,983,945 of features,math,index
    L12, fz30c)."""
    if finding.kind != "result" or finding.step.op != "setitem" or not finding.detail:
        return False
    if not any("L.MetaData(" in line for line in finding.lines[:-1]):
        return False
    for line in finding.detail:
        found = _DETAIL_KEYS.match(line)
        if found is None:
            return False
        keys = key_path(found[1])
        key = keys[0] if len(keys) == 1 else keys
        try:
            theirs, ours = peer.value.get(key), mine.value.get(key)
        except (AttributeError, KeyError, RuntimeError, TypeError):
            return False
        if (type(theirs).__name__, type(ours).__name__) != ("MetaData", "NonTensorStack"):
            return False
    return True


# x.set(('n', 'md'), ...): a value set at a nested key
_NESTED_SET = re.compile(
    r"^x\.set\((\(['\"]\w+['\"](?:, ['\"]\w+['\"])+\)), L\.(MetaData|NonTensorStack)\("
)


def _value_spans_member_nodes(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``lazy.set(('n', 'md'), NonTensorStack(...))`` (or a ``MetaData``) where each
    member's node ``n`` has batch dims past the member's: tclass's value spans each
    member's node (one value per element over its dims, as a value set there in the
    member itself), the peer's member nodes get a value of fewer dims than their own
    (its stack then reads a flat list; programs 15,951,161 and 15,984,092 of
    features,index,shape,combine, 15,952,145 of features,math,index L12, fz30c)."""
    if finding.kind != "result" or finding.step.op != "set":
        return False
    found = _NESTED_SET.match(finding.step.src.strip())
    if found is None:
        return False
    key = ast.literal_eval(found[1])
    theirs = getattr(peer.value, "tensordicts", None)
    ours = getattr(mine.value, "tensordicts", None)
    if not theirs or not ours or len(theirs) != len(ours):
        return False
    try:
        for peer_member, member in zip(theirs, ours):
            node, value = peer_member.get(key[:-1]), peer_member.get(key)
            if len(value.batch_size) >= len(node.batch_size):
                return False
            if member.get(key).batch_size != member.get(key[:-1]).batch_size:
                return False
    except (AttributeError, KeyError, RuntimeError, TypeError):
        return False
    return True


_OVER_NONE_LINE = re.compile(
    r"^result((?:\.<members>\[0\]\[\d+\])*)((?:\['\w+'\])+): peer (?:values \(|list of \d+, )"
)


def _value_kept_over_no_write(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """An indexed write over no elements (``x[...] = x[-2].clone()`` of a lazy stack of
    batch ``[3, 2, 0]`` holding a ``MetaData``): the value every element shares stays
    one value in tclass, the write having no element to write, where the peer makes it a
    value stack over none, listing nested empty lists, its members too (fz31b: program
    16,406,778 L20 of features,index,shape,combine)."""
    if finding.kind != "result" or finding.step.op != "setitem":
        return False
    if 0 not in tuple(getattr(mine.value, "batch_size", (1,))) or not finding.detail:
        return False
    for line in finding.detail:
        found = _OVER_NONE_LINE.match(line)
        if found is None:
            return False
        keys = key_path(found.group(2))
        members = [int(i) for i in re.findall(r"\[0\]\[(\d+)\]", found.group(1))]
        try:
            theirs, ours = (_member(side.value, members).get(keys) for side in (peer, mine))
        except Exception:  # noqa: BLE001  (a read that fails is no kept value)
            return False
        if type(theirs).__name__ != "NonTensorStack" or flat_values(theirs.tolist()):
            return False
        if type(ours).__name__ not in ("NonTensorData", "MetaData"):
            return False
        if list(ours.batch_size) != list(theirs.batch_size):
            return False
    return True


def _member(collection: Any, path: list[int]) -> Any:
    """The lazy stack member at ``path`` (indices into ``tensordicts``, nested; a finding
    line's ``.<members>[0][i]``: the snapshot's members, then member ``i``)."""
    for i in path:
        collection = collection.tensordicts[i]
    return collection


_SHAPE_LINE = re.compile(r"\.(names|batch_size): peer ")


def _empty_set_under_node(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A collection without entries or a Python value set under a nested node of a lazy
    stack (``lazy.set(("n", "k"), TensorDict({}, [2]))``, ``lazy.set(("n", "k"), "a")``,
    ``lazy.setdefault(("n", "k"), "a")``, whose result is the new value stack): its
    members' copies take the node's batch size in tclass, and keep the value's own
    (shorter) one in the peer (setdefault: og32a, program 16,301,688 L8 of
    features,entries,math,records)."""
    if finding.kind != "result" or finding.step.op not in ("set", "setitem_key", "setdefault"):
        return False
    src = finding.step.src
    if re.fullmatch(r"x\.(?:set|setdefault)\(\(.*\), \"[^\"]*\"\)|x\[\(.*\)\] = \"[^\"]*\"", src):
        if finding.step.op == "setdefault" and not _members_short(peer.value):
            return False
        return all(_VALUE_UNDER_NODE.search(line) for line in finding.detail)
    if not re.search(r"\(\(.*\), L\.TensorDict\(\{\}, batch_size=", src) and not (
        re.search(r"^x\[\(.*\)\] = L\.TensorDict\(\{\}, batch_size=", src)
    ):
        return False
    return all(_SHAPE_LINE.search(line) for line in finding.detail)


def _members_short(value: Any) -> bool:
    """``value`` is a stack whose members have fewer dims than its other dims (the peer's
    value stack over member nodes whose values kept the members' batch size)."""
    members = getattr(value, "tensordicts", None)
    if not members or not hasattr(value, "batch_size"):
        return False
    return all(len(member.batch_size) < len(value.batch_size) - 1 for member in members)


# A Python value under a nested node: the peer's members hold it at their own batch size
# ([] read as the one value), tclass's at the node's (a list, of more dims).
_VALUE_UNDER_NODE = re.compile(
    r": peer py \('str', '[^']*'\), tclass list of \d+$|: length: peer \d+, tclass \d+$"
)


# What the peer 0.15 says writing a Python value of a shared collection (``share_memory_``)
# back in place: its refusal over no elements, its multiprocessing value over elements
_SHARED_VALUE_REFUSED = (
    "update a leaf in-place with a shared tensordict",
    "'Synchronized' object cannot be interpreted as an integer",
)


def _shared_value_written_at(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x.update_at_(x[idx].apply(torch.zeros_like), I[idx])`` of a collection given
    ``share_memory_()`` that holds a Python value: the value written is the one it holds
    (``apply`` keeps Python values), which the peer's shared value refuses, or fails on
    inside over elements (its ``Synchronized`` number); tclass writes it (og33j: program
    17,101,482 of methods,index,shape,combine L8)."""
    if finding.kind != "peer-raises" or finding.step.op != "update_at_" or mine.error is not None:
        return False
    if not finding.lines[-1].strip().startswith("x = x.update_at_(x["):
        return False
    if not any(line.strip() == "x = x.share_memory_()" for line in finding.lines[:-1]):
        return False
    return any(text in str(peer.error) for text in _SHARED_VALUE_REFUSED)


_EMPTIED_ROW = re.compile(r"^result(?:\['\w+'\])+(?:\[\d+\])+: length: peer 0, tclass \d+$")


def _shared_list_written_empty(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A write at an index of a collection after ``share_memory_()`` whose list values the
    peer made ``multiprocessing`` ``ListProxy`` objects: the rows written back read as
    empty lists in the peer (the lists lost), where tclass's lists stay lists
    (``_shared_str_kept``; program 17,135,174 L25 of methods,index,shape,combine, fz34b)."""
    if finding.kind != "result" or finding.step.op != "setitem":
        return False
    if not any("share_memory_()" in line for line in finding.lines[:-1]):
        return False
    return all(
        _EMPTIED_ROW.match(line) and _value_length_kept(line, mine.value) for line in finding.detail
    )
