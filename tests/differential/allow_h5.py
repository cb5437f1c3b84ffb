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
# a dataset, a value of another kind in place of an entry); tclass reads into memory or
# replaces the entry.
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
)
# Differences of the result: the peer's copies of a file are files (``clone``, and the
# math on a file without tensors), its reads of strings bytes, its names dropped by
# ``from_dict`` (some of the time), its ``memmap()`` copy not locked.
_RESULT_LINES = (
    re.compile(r"\.kind: peer 'PersistentTensorDict', tclass 'TensorDict'$"),
    re.compile(r": peer 'bytes', tclass 'str'$|: peer b'.*', tclass '.*'$"),
)


def _h5_peer_refuses(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    if not facts.h5 or finding.kind not in ("peer-raises", "family"):
        return False
    return any(p.search(str(peer.error)) for p in _PEER_REFUSES)


def _h5_result_kept(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    if not facts.h5 or finding.kind != "result":
        return False
    op = finding.step.op
    for line in finding.detail:
        if any(p.search(line) for p in _RESULT_LINES):
            continue
        if ".names: peer [" in line and (op == "world" or "from_dict" in finding.step.src):
            continue  # from_dict kept the names the peer dropped
        if op in ("memmap", "memmap_like") and line == "result.is_locked: peer False, tclass True":
            continue
        return False
    return True
