"""The rules of the deliberate differences of collections over an HDF5 file (the worlds
``world.h5_lines`` builds): the README bullet "HDF5 files keep their batch size and their
strings". Each rule takes a finding and says whether that bullet covers it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

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
    re.compile(r"Selection can't process None"),
    re.compile(r"Indexing elements must be in increasing order"),
    re.compile(r"Indexing arrays must have integer dtypes"),
    re.compile(r"no appropriate function for conversion path"),
    re.compile(r"invalid literal for \w+\(\)|could not convert string to \w+"),
    re.compile(r"A name should be string or bytes"),
    re.compile(r"Cannot build a memmap TensorDict in-place from a PersistentTensorDict"),
    re.compile(r"cannot set a tensor collection in place of a non-tensor"),
    re.compile(r"key \w+ not found in PersistentTensorDict"),  # an empty group it never wrote
    re.compile(r"the length of the dimension names must equate"),  # reshape of a named file
    re.compile(r"\d+ indexing arguments for \d+ dimensions"),  # an index with None (h5py)
    re.compile(r"Can't broadcast \(|Broadcasting is not supported for complex selections"),
    re.compile(r"must be called when the TensorDict is \(partially\) populated"),  # no tensors
    re.compile(r"Calling nonzero on 0d arrays is not allowed"),  # a 0-d mask (masked_fill_)
    re.compile(r"Failed to convert the metadata to json"),  # consolidate(filename=) of a file
)
# Differences of the result: the peer's copies of a file are files (``clone``, and the
# math on a file without tensors), its reads of strings bytes and of numbers numpy
# scalars, its rows at an empty list fail on every read, its names dropped by
# ``from_dict`` (some of the time), its ``memmap()`` copy not locked; its ``cpu()`` of rows
# read into memory (tclass's ``to`` keeps a view); a tensor of another shape written over
# a dataset, which tclass replaces and the peer broadcasts into; a group's batch size, which
# tclass keeps as written (the peer's ``from_dict`` infers a shorter one).
_RESULT_LINES = (
    re.compile(r"\.kind: peer 'PersistentTensorDict', tclass 'TensorDict'$"),
    re.compile(r": peer 'bytes', tclass 'str'$|: peer b'.*', tclass '.*'$"),
    re.compile(r": peer other \('(int|float)64',\), tclass py \('\1', "),  # a number
    re.compile(r": peer error \('IndexError'.*, tclass Tensor\[[\w.]+, shape \[0[,\]]"),
)


def _h5_peer_refuses(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    if not facts.h5 or finding.kind not in ("peer-raises", "family"):
        return False
    return any(p.search(str(peer.error)) for p in _PEER_REFUSES)


def _h5_missing_renamed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``rename_key_(k, k)`` of a key the file lacks: a ``KeyError`` in tclass, as for a
    TensorDict in both libraries; the peer's file does nothing."""
    if not facts.h5 or finding.kind != "tclass-raises" or finding.step.op != "rename_key_":
        return False
    same = re.search(r"rename_key_\((\S+), \1[,)]", finding.step.src)
    return same is not None and type(mine.error).__name__ == "KeyNotFoundError"


def _h5_result_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    if not facts.h5 or finding.kind != "result":
        return False
    op = finding.step.op
    for line in finding.detail:
        if any(p.search(line) for p in _RESULT_LINES):
            continue
        if ".names: peer [" in line and (op == "world" or "from_dict" in finding.step.src):
            continue  # from_dict kept the names the peer dropped
        if op == "load" and ".save(" in finding.step.src and _NAMES_SAVED.search(line):
            continue  # save() of a file kept its names, the peer's copy dropped them
        if op in ("memmap", "memmap_like") and _SAVED_LOCKED.match(line):
            continue  # each level of the saved copy (its nested collections too)
        if op in ("cpu", "to") and _VIEW_KEPT.search(line):
            continue
        if op in ("setitem_key", "set", "update") and _RESHAPED.search(line):
            continue
        if op == "tile" and _NAMES_DROPPED.search(line):
            continue  # read into memory and tiled as a TensorDict, whose tile drops them
        if op in ("setitem_key", "set", "update") and _NEW_GROUP_NAMED.search(line):
            continue  # a new nested group keeps the file's dim names, as in a TensorDict
        if op in ("getitem_key", "get", "rename_key_") and _more_batch_dims(line):
            continue  # a group's batch size as written (the peer's inferred one is shorter)
        return False
    return True


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
_VIEW_KEPT = re.compile(r"\.kind: peer 'TensorDict', tclass 'PersistentTensorDictView'$")
_NAMES_DROPPED = re.compile(
    r"^result(\['\w+'\])*\.names: peer \[[^\]]*\], tclass \[None(, None)*\]$"
)
_NAMES_SAVED = re.compile(r"^result(\['\w+'\])*\.names: peer \[None(, None)*\], tclass \['")
_NEW_GROUP_NAMED = re.compile(r"^result(\['\w+'\])+\.names: peer \[None(, None)*\], tclass \['")
_RESHAPED = re.compile(r": peer Tensor\[([\w.]+), shape \[[\d, ]*\]\], tclass Tensor\[\1, shape")


def _h5_keys_listed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``keys(True)`` of a file lists a group after the keys below it, as of any
    collection (the peer's file lists it before them, its TensorDict after); ``set()``
    on a file gives the file (the peer's result can lack entries the file holds)."""
    if not facts.h5 or finding.kind != "result":
        return False
    if finding.step.op in ("keys", "items", "values") and isinstance(peer.value, list):
        return sorted(map(repr, peer.value)) == sorted(map(repr, mine.value))
    if finding.step.op == "set" and all(": keys: peer " in d for d in finding.detail):
        return set(peer.value.keys()) < set(mine.value.keys())
    return False
