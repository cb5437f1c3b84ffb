"""The rules of the deliberate differences (``allowlist.ENTRIES``) that the ops of the
family ``methods`` meet (the methods no other family called: ``detach_``, ``pow`` /
``lerp`` with ``default=``, ``torch.gather``, ``from_struct_array``...). Each rule takes
a finding and says whether the README bullet of its entry covers it."""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .allow_common import _later_lines
from .allow_fields import _none_field_unset
from .allow_values import _first_row_none
from .compare import entry_at, key_path

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts

# What the peer raises from inside where tclass answers, by op (README: "Where the peer
# fails inside, tclass answers"): torch's refusal of ``view.detach_()`` (called on every
# leaf), ``torch._foreach_pow`` given no tensors (``pow`` of a collection with none in
# common with the other), its own check of ``torch.gather``'s index (torch gathers by an
# empty index), its ``from_struct_array`` of a nested or Python entry, and its ``lerp``
# by a 0-d tensor weight, taken as a number, of integer tensors (torch's tensor weight
# promotes them); fz27d: its own refusal of ``detach_`` of a view of a file's rows, the
# unlock inside ``share_memory_`` of a locked record, and its numpy copy inside
# ``from_struct_array`` of a lazy stack's struct array.
_METHOD_FAILS_INSIDE = {
    "detach_": ("Can't detach views in-place", "Detaching a sub-tensordict in-place"),
    "pow": ("Tensor list must have at least one tensor",),
    "gather": ("Cannot use torch.gather with an empty index",),
    "from_struct_array": ("not enough values to unpack", "could not broadcast input array"),
    "lerp": ('"lerp_kernel_scalar" not implemented',),
    "share_memory_": ("Cannot unlock a tensordict that is part of a locked graph",),
    # split sizes computed from a ragged dim's -1 (fz30k: program 16,090,121 L8 of
    # features,index,shape,combine, a lazy stack of an HDF5 file's chunks)
    "tensor_split": ("split_sizes have only non-negative entries, but got split_sizes=[",),
    # dense_stack_tds of a record over a lazy stack: the peer takes it for a list of
    # collections and asks for a dim; tclass stacks along its stack dim (fz31b: the
    # ``extra`` family, 16,491,000-16,491,399 L4)
    "dense_stack": ("If a list of tensordicts is provided, stack_dim must not be None",),
    # non_tensor_items of a lazy stack of lazy stacks holding a string (a cat of loaded
    # records): the peer's torch.stack of a member's value stack with the other members'
    # strings; tclass gives the stack of the values (og32b: program 17,014,010 L16 of
    # entries,index,combine)
    "non_tensor_items": ("expected Tensor as element 1 in argument 0, but got str",),
}


# ``pow(other)`` (no ``default``) by a collection holding no tensor: the peer's key check
# skips it and ``torch._foreach_pow`` fails on the lengths, where its ``pow`` of
# collections with different tensors raises a ``KeyError``, as tclass's always does
_POW_LENGTHS = "Tensor list must have same number of elements as scalar list"
# ``cat_tensors`` / ``stack_tensors`` of a Python value and a tensor: the peer reads the
# tensor as a collection
_VALUE_WITH_TENSOR = re.compile(
    r"'Tensor' object has no attribute '(batch_dims|_tensordict)'"
    r"|'dict' object has no attribute 'batch_size'"  # (a value with a collection: fz30g)
    # (a value with the collection holding it: 17,135,624 L25 of methods,index,shape,
    # combine, fz34b)
    r"|^[\"']?tensordict \d+ has keys \[[^\]]*\] but tensordict \d+ has keys "
)


def _method_fails_inside(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The peer raised one of ``_METHOD_FAILS_INSIDE``'s errors for its op, where
    tclass answered (fz26d: programs 15,000,xxx of methods,index,shape,combine); or its
    ``pow`` failed on the lengths of no tensors, where tclass names the keys the other
    collection lacks (``KeyNotFoundError``, a ``KeyError``: fz27b, ``x.pow(x.select())``,
    programs 15,010,388 and 15,020,224 of methods,index,shape,combine); or its
    ``cat_tensors`` / ``stack_tensors`` of a value and a tensor failed inside (fz29a),
    or of a value and a nested collection (``stack_tensors(("zz", "a"), "zz")``, fz30g:
    programs 15,953,122 L12 of methods,index,shape,combine and 16,024,476 L8 of
    methods,features,entries,records)."""
    if finding.kind == "family" and finding.step.op == "pow":
        return _POW_LENGTHS in str(peer.error) and type(mine.error).__name__ == ("KeyNotFoundError")
    if finding.kind == "family" and finding.step.op == "assert_close":
        # its apply(torch.zeros_like) of the second operand fails on its own lazy stack's
        # names (members named differently after x[1, -1] = x[1, -1].to_dict() of a named
        # dense stack); tclass's names stay one per dim and it compares (og34a: program
        # 17,114,086 L8 of extra,index)
        named = any("names=[" in line or ".refine_names(" in line for line in finding.lines)
        return (
            named
            and "Not all dim names match" in str(peer.error)
            and type(mine.error).__name__ == "NotCloseError"
        )
    if finding.kind == "family" and finding.step.op in ("cat_tensors", "stack_tensors"):
        # a Python value joined with a tensor: tclass's StackError names both keys (fz29a:
        # program 15,954,320 L12 of methods,features,entries,records)
        return _VALUE_WITH_TENSOR.search(str(peer.error)) is not None and (
            "holds a Python value and" in str(mine.error)
        )
    if finding.kind != "peer-raises":
        return False
    if finding.step.op == "view_dtype" and _STRIDE_VIEW.search(str(peer.error)):
        return _strided_over_no_elements(finding, mine)
    texts = _METHOD_FAILS_INSIDE.get(finding.step.op, ())
    return any(text in str(peer.error) for text in texts)


# torch's refusal to view a tensor of a last stride other than 1 as a dtype of another size
_STRIDE_VIEW = re.compile(r"stride\(-1\) must be 1 to view \w+ as \w+")


def _strided_over_no_elements(finding: Finding, mine: Any) -> bool:
    """``view(dtype)`` after ``masked_fill`` of a collection whose tensors have no
    elements and a last stride other than 1 (an index ``x[1::3]`` over no elements): the
    peer's ``masked_fill`` keeps those strides (a ``clone``), so torch refuses its
    ``view(dtype)``; tclass's gives contiguous tensors, as ``torch.masked_fill`` does, and
    views them (program 16,000,617 L8 of features,index,shape,combine, fz30a); or after
    ``clone()`` of a loaded folder over no elements, which the peer gives strides such as
    ``(0, 1, 0)`` and tclass contiguous ones (program 17,213,473 L6 of
    methods,features,entries,records, fz34i)."""
    if not any(".masked_fill(" in line or ".clone()" in line for line in finding.lines[:-1]):
        return False
    value = mine.value
    if mine.error is not None or not hasattr(value, "keys"):
        return False
    leaves = [value.get(key) for key in value.keys(True, True)]
    tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
    return bool(tensors) and all(leaf.numel() == 0 for leaf in tensors)


# a field of ``from_struct_array(x.to_struct_array())``, or its first row: the peer's numpy
# array of strings (``iter``; nested empty ones too) where tclass reads the value back
_STRUCT_FIELD_READ = re.compile(
    r"^result((?:\['[\w.]+'\])+)(?:\[\d+\])*: (?:peer iter of \d+, tclass (?:py|dict) \("
    r"|peer value \(\('seq', 'iter', .*, tclass values \(\('seq', 'list', "
    r"|peer 'iter', tclass 'list'$"
    r"|peer error \('TypeError', .*\), tclass py \("  # (iter of a 0-d array: fz28b)
    r"|peer Tensor\[torch\.float64, shape \[[\d, ]*\b0\b[\d, ]*\]\], tclass nontensor \("
    r"|peer 'str_', tclass '\w+'$"  # (an element of a column of rows of values: og33a)
    r"|peer np\.str_\('(?P<written>[^']*)'\), tclass '?(?P=written)'?$)"
)


def _struct_array_values_read_back(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``from_struct_array(x.to_struct_array())`` of a collection holding Python values
    (a str, ``None``, an int): tclass reads each back as it was (one per row), the peer's
    field is one numpy array of the ``'<U10'`` strings its ``to_struct_array`` writes
    (``None`` as ``'None'``, ``3`` as ``'3'``), or for a stack of values one object array
    of them all, which every row reads whole (programs 15,000,122, 15,000,589, 15,020,387
    and 15,030,225 of methods,index,shape,combine, fz27a; the object arrays and a peer
    value cut short in the line: 15,841,861, 15,861,414 and 15,841,300, fz28e); at batch
    size ``[]`` a 0-d array, whose rows cannot be read (``TypeError``: 15,500,175); over no
    elements, a stack of values is a ``float64`` column there (numpy's empty list), which
    reads back as a float tensor with no elements, where tclass writes an object column
    and reads back the (empty) values (15,520,057, 15,530,215; fz28b). A ``MetaData``
    dict reads back as the dict (15,971,880 L12 of methods,features,entries,records);
    beside a nested record's field set to ``None`` through ``update``, which tclass
    does not set (the entry ``none-field-unset``: the peer's ``'None'`` column,
    15,951,283 L12; fz30e); a column of rows of values (a cat's stack of ``None``), whose
    elements the peer reads as its strings (17,002,297 L8 of methods,index,shape,combine,
    og33a)."""
    if finding.kind != "result" or finding.step.op != "from_struct_array":
        return False
    return all(
        _string_field_read(line, peer)
        or _none_field_unset(dataclasses.replace(finding, detail=[line]), facts, peer, mine)
        or _batch_from_size_column(line, finding, peer)
        for line in finding.detail
    )


# a node of ``from_struct_array(x.to_struct_array(), auto_batch_size=True)`` of ``attrs()``
# whose batch the peer reads as ``[1]``, or a Python value's batch within it
_SIZE_COLUMN_BATCH = re.compile(
    r"^result((?:\['[\w.]+'\])*)(?:\.batch_size: peer \(1,\), tclass \(\)"
    r"|\.names: peer \[None\], tclass \[\]"
    r"|\['tgt_(?:device|dtype)'\]\[1\]: length: peer 1, tclass 0"
    r"|\['tgt_shape'\]: peer Tensor\[torch\.int64, shape \[1\]\], "
    r"tclass nontensor \(\('value', \('size', \[(?P<size>\d+)\]\), .*)$"
)


def _batch_from_size_column(line: str, finding: Finding, peer: Any) -> bool:
    """One line of :func:`_struct_array_values_read_back` of ``attrs()`` nodes: the peer's
    ``to_struct_array`` writes a ``torch.Size`` of one dim as an int array of shape
    ``(1,)``, so its ``auto_batch_size`` reads every node holding only such shapes with
    batch size ``[1]`` (its device and dtype strings then fail to read, ``TypeError``,
    and its Size reads back as that int tensor), where tclass's object column reads the
    Size back and the node keeps batch ``[]``
    (og34l: 17,137,593 L25 of methods,features,entries,records)."""
    found = _SIZE_COLUMN_BATCH.match(line)
    if found is None or not any(".attrs()" in step for step in finding.lines[:-1]):
        return False
    node = entry_at(peer.value, key_path(found.group(1)))
    if not hasattr(node, "keys") or tuple(getattr(node, "batch_size", ())) != (1,):
        return False
    shapes = [
        node.get(key)
        for key in node.keys(True, True)
        if (key[-1] if isinstance(key, tuple) else key) == "tgt_shape"
    ]
    if found.group("size") is not None:  # the Size itself, its one number kept
        shapes = [node.get("tgt_shape", None)]
        if not isinstance(shapes[0], torch.Tensor) or shapes[0].tolist() != [
            int(found.group("size"))
        ]:
            return False
    return bool(shapes) and all(
        isinstance(shape, torch.Tensor) and shape.shape == (1,) for shape in shapes
    )


def _string_field_read(line: str, peer: Any) -> bool:
    """One line of :func:`_struct_array_values_read_back`: the peer's field an array of
    strings (or objects) where tclass reads the value back."""
    found = _STRUCT_FIELD_READ.match(line)
    if found is None:
        return False
    node = entry_at(peer.value, key_path(found.group(1)))  # ('n.zz': from_pandas)
    if isinstance(node, torch.Tensor):  # (an empty stack's column: numpy makes it float64)
        return node.dtype is torch.float64 and node.numel() == 0
    data = node if isinstance(node, np.ndarray) else getattr(node, "data", None)
    return isinstance(data, np.ndarray) and data.dtype.kind in "UO"


# a list (or number) value of ``from_struct_array(x.to_struct_array())``: the peer's tensor
_STRUCT_LIST_READ = re.compile(
    r"^result((?:\['\w+'\])+): peer Tensor\[torch\.\w+, shape \[[\d, ]*\]\], "
    r"tclass nontensor \(\('value', \('(?:seq', 'list'|py', 'int'|py', 'float'|size'), "
)  # (a size: an ``attrs()`` shape, fz30f)


def _struct_array_list_read_back(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``from_struct_array(x.to_struct_array())`` of a collection holding a list of
    numbers as one Python value (``set_non_tensor(key, [1, 2])``): tclass reads the list
    back as the value, the peer as a tensor with one more dim holding the numbers (fz28e:
    program 15,861,988 of methods,index,shape,combine, --length 16); a number alike, beside
    strings read back (15,845,492, --length 8); a ``torch.Size`` alike (an ``attrs()``
    shape, beside its device and dtype read back: fz30f, program 16,101,819 L12 of
    methods,features,entries,records)."""
    if finding.kind != "result" or finding.step.op != "from_struct_array":
        return False
    for line in finding.detail:
        found = _STRUCT_LIST_READ.match(line)
        if found is None:
            if _string_field_read(line, peer):
                continue
            return False
        keys = key_path(found.group(1))
        try:
            theirs, ours = peer.value.get(keys), mine.value.get(keys)
        except Exception:  # noqa: BLE001 (a read that fails is no value read back)
            return False
        value = getattr(ours, "data", None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not isinstance(theirs, torch.Tensor) or not bool((theirs == value).all()):
                return False
            continue
        if not isinstance(theirs, torch.Tensor) or not isinstance(value, (list, tuple)):
            return False
        if not value or theirs.shape[-1:] != (len(value),):
            return False
        if not bool((theirs == torch.tensor(list(value))).all()):
            return False
    return True


def _nested_lists_not_read_as_pairs(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``TensorDict.from_list(x.tolist())`` of 2+ batch dims (lists of lists of dicts):
    tclass raises the ``ValueError`` (``SourceTypeError``) the peer's ``dict()`` raises for
    an item that is not a pair; where each dict has two keys, the peer's reads it as one
    key/value pair, a result of strings without a tensor (programs 15,000,190 and
    15,020,525 of methods,index,shape,combine, fz27a)."""
    if finding.kind != "tclass-raises" or finding.step.op != "from_list":
        return False
    if type(mine.error).__name__ != "SourceTypeError" or "got list [" not in str(mine.error):
        return False
    leaves = list(peer.value.values(True, True)) if hasattr(peer.value, "values") else [None]
    return not any(isinstance(leaf, torch.Tensor) for leaf in leaves)


def _mapped_files_shared(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``share_memory_()`` of a memory-mapped collection (a view of one, one after its
    ``memmap_refresh_()``, a TensorDictParams saved with ``memmap``): tclass leaves its
    tensors in their files (a file mapping is shared between processes already) and
    locks it, still memory-mapped, where the peer refuses while its memory-mapped flag is
    set ("memmap and shared memory are mutually exclusive"; fz28e: programs 15,841,360,
    15,860,235, 15,861,489 and 15,861,957 of methods,index,shape,combine). And of the
    result of an op over one whose tensors are new, in memory (``torch.broadcast_to`` of
    a memory-mapped lazy stack): not memory-mapped in tclass (by its data), so shared,
    where the peer's result keeps the flag (program 15,982,517 L12 of
    methods,features,entries,records, fz30d). And of a lazy stack of a memory-mapped
    collection and a copy of it: the first left in its files, the copy moved to shared
    memory (fz32c: 17,037,977 L10 of methods,index,shape,combine)."""
    if finding.kind != "peer-raises" or finding.step.op != "share_memory_":
        return False
    if "memmap and shared memory are mutually exclusive" not in str(peer.error):
        return False
    value = mine.value
    if _members_mapped_or_shared(value):
        return True
    if not value.is_memmap():
        saved = any(re.search(r"\.memmap(?:_like|_)?\(", line) for line in finding.lines[:-1])
        made = [line for line in finding.lines[:-1] if line.startswith("x = ")][-1:]
        new = bool(made) and "broadcast_to(" in made[0]  # (its tensors new, in memory)
        return saved and new and bool(value.is_shared())
    return bool(value.is_locked)


def _members_mapped_or_shared(value: Any) -> bool:
    """A lazy stack whose members are each memory-mapped (by data) or shared, some
    memory-mapped."""
    members = getattr(value, "tensordicts", None)
    if type(value).__name__ != "LazyStackedTensorDict" or not members:
        return False
    mapped = [bool(member.is_memmap()) for member in members]
    shared = [bool(member.is_shared()) for member in members]
    return any(mapped) and all(m or s for m, s in zip(mapped, shared))


_ALIAS_UNREAD = re.compile(r"^result((?:\['\w+'\])+)(?:\[\d+\])*: peer error \('RuntimeError', ")


def _devices_set_through_a_view(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``auto_device_()`` of an index of a stack of Python values: the peer sets the
    device of the value nodes its earlier results share, whose values then fail to read
    ("devices differ, got None and cpu"); tclass's earlier results read as before (fz28e:
    program 15,841,500 of methods,index,shape,combine, --length 8), also when other steps
    follow it (15,962,386 of the same families, L8: stacks and a transpose, fz30a)."""
    if finding.kind != "alias" or not any(
        line.strip().endswith(".auto_device_()") for line in _later_lines(finding)
    ):
        return False
    for line in finding.detail:
        found = _ALIAS_UNREAD.match(line)
        if found is None:
            return False
        keys = key_path(found.group(1))
        try:
            node = peer.value.get(keys)
            node.tolist() if hasattr(node, "tolist") else None
        except RuntimeError as error:
            if "devices differ" not in str(error):
                return False
        else:
            return False
    return True


_NESTED_DEVICE_DROPPED = re.compile(
    r"^result((?:\['[^']*'\])+)\.device: peer 'None', tclass '(\w+)'$"
)
_DTYPE_CAST = re.compile(r"\.to\((?:dtype=)?torch\.\w+\)$")


def _cast_keeps_devices(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x.to(torch.int64)`` (a dtype only) of a collection without a device holding
    nested collections on ``cpu``: tclass's result keeps each nested collection's device,
    as ``float()`` / ``double()`` / ``clone()`` keep it in both; the peer's ``to(dtype)``
    gives every nested node the root's device, ``None`` (fz30f: programs 15,966,607 L8
    of features,math,index, 15,951,963 L12 of methods,features,entries,records)."""
    if finding.kind != "result" or not _DTYPE_CAST.search(finding.step.src):
        return False
    if getattr(peer.value, "device", 0) is not None or mine.value.device is not None:
        return False
    for line in finding.detail:
        found = _NESTED_DEVICE_DROPPED.match(line)
        if found is None:
            return False
        node = mine.value.get(key_path(found[1]))
        leaves = node.values(include_nested=True, leaves_only=True)
        devices = {str(leaf.device) for leaf in leaves if isinstance(leaf, torch.Tensor)}
        if devices - {found[2]}:
            return False
    return bool(finding.detail)


def _device_set_on_a_file_view(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``auto_device_()`` of a view of a file's rows (``file[::2]`` of an HDF5
    ``PersistentTensorDict``): tclass sets the device the view reads (its file's), as
    the method promises; the peer's sets an attribute its view's ``device`` does not read
    (it reads the file's), so its device stays ``None``, and so do its nested views'
    (fz30f: program 15,982,093 L8 of methods,features,entries,records; fz31b: a nested
    node's line too, program 16,400,914 L16 of methods,index,shape,combine); a lazy stack
    of such views (an index of a lazy stack of files, then ``transpose``), its members'
    lines too (fz32c: 17,024,993 L10 of methods,index,shape,combine)."""
    if finding.kind != "result" or finding.step.op != "auto_device_":
        return False
    if not _file_views(peer.value) or not finding.detail:
        return False
    device = re.escape(f"tclass '{mine.value.device}'")
    path = r"result(?:\.<members>(?:\[\d+\])+)?(\['[^']*'\])*"
    line = re.compile(path + r"\.device: peer 'None', " + device)
    if finding.detail[0] != f"result.device: peer 'None', tclass '{mine.value.device}'":
        return False
    if not all(line.fullmatch(text) for text in finding.detail):
        return False
    leaves = mine.value.values(include_nested=True, leaves_only=True)
    return {str(leaf.device) for leaf in leaves} == {str(mine.value.device)}


def _file_views(value: Any) -> bool:
    """The peer's view of a file's rows (``_SubTensorDict``), or a lazy stack of them."""
    if type(value).__name__ == "_SubTensorDict":
        return True
    members = getattr(value, "tensordicts", None)
    return (
        type(value).__name__ == "LazyStackedTensorDict"
        and bool(members)
        and all(_file_views(member) for member in members)
    )


# the peer's own state dict refused by its load: it leaves a Python-value node out of it
# (an empty NonTensorStack) and then finds the node missing
_STATE_KEYS_UNMET = re.compile(
    r"got state_dict extra keys\s+set\(\)\s+and tensordict extra keys\s+\{([^}]*)\}"
)


def _state_dict_fails_inside(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``x.load_state_dict(<a state dict of x's copy>)`` where tclass loads: the peer's
    in-place write of a ``MetaData`` node of a memory-mapped (locked) collection fails on
    its own ``None`` ("Failed to update 'md'", from a ``TypeError``: programs 16,020,594
    L8 of methods,features,entries,records and 16,104,548 L12 of
    features,entries,math,records), or its load refuses the keys of its own state dict,
    which left out a Python-value node it holds (an empty ``NonTensorStack``: "key sets
    don't match", program 15,953,199 L8 of features,entries,math,records; fz30k)."""
    if finding.kind != "peer-raises" or finding.step.op != "load_state_dict":
        return False
    if mine.error is not None or ".state_dict()" not in finding.step.src:
        return False
    cause = peer.error.__cause__
    if type(peer.error).__name__ == "_InplaceWriteError" and isinstance(cause, TypeError):
        return "'NoneType' object is not subscriptable" in str(cause)
    unmet = _STATE_KEYS_UNMET.search(str(peer.error))
    if unmet is None:
        return False
    keys = re.findall(r"'([^']*)'", unmet.group(1))
    nodes = ("NonTensorData", "NonTensorStack", "MetaData")
    # the peer names a nested node by its last key (fz31b: ("n", "md"), program
    # 16,402,481 L16 of methods,features,entries,records)
    found = mine.value.items(include_nested=True, leaves_only=False)
    named: dict[str, list[Any]] = {key: [] for key in keys}
    for full, value in found:
        last = full[-1] if isinstance(full, tuple) else full
        if last in named:
            named[last].append(value)
    return bool(keys) and all(
        named[key] and all(type(value).__name__ in nodes for value in named[key]) for key in keys
    )


_NARROW_VALUES = re.compile(r"^result((?:\['\w+'\])+): values differ: peer .*, tclass .*$")
_NARROW = (torch.uint8, torch.int8, torch.int16, torch.int32)


def _lazy_operand_not_cast_first(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``maximum_`` / ``minimum_`` of a lazy stack with an ``int64`` tensor: tclass
    compares in the promoted dtype and casts the result back, as both libraries'
    TensorDict do (a ``uint8`` 4 against -2 stays 4), where the peer's lazy stack casts
    the operand to the member's dtype first (-2 becomes 254, the maximum; fz31b: program
    16,412,383 L8 of math,combine,records)."""
    if finding.kind != "result" or finding.step.op not in ("maximum_", "minimum_"):
        return False
    if "'int64'" not in finding.step.src or not finding.detail:
        return False
    for line in finding.detail:
        if ".<members>" in line:
            continue  # (the members' lines repeat the stack's)
        found = _NARROW_VALUES.match(line)
        if found is None:
            return False
        keys = key_path(found.group(1))
        try:
            leaf = mine.value.get(keys)
        except Exception:  # noqa: BLE001  (a read that fails is no such leaf)
            return False
        if getattr(leaf, "dtype", None) not in _NARROW:
            return False
    stacked = type(peer.value).__name__ == "LazyStackedTensorDict"
    return stacked and any(".<members>" not in line for line in finding.detail)


def _first_row_none_read(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``.data`` of a stack of per-element Python values whose first row holds only None
    and a later one a value: tclass reads the values, where the peer's
    ``NonTensorStack.data`` reads the common value of the first row only, None (as
    ``_first_row_none_kept``; fz31b: program 16,415,819 L12 of the six families)."""
    if finding.kind != "result" or finding.step.op != "value_read":
        return False
    if not finding.step.src.endswith(".data") or peer.snap != ("py", "NoneType", None):
        return False
    return _first_row_none(mine.value)
