"""What a load learns from a ``meta.json``'s bytes, kept for the next load of the same
bytes: the decoded header, and per node the checked leaves (see ``_read._load_td``).

Only what is a function of the bytes alone (and of the class and options in a plan's
key) is kept: the JSON decoded and its header checked, each leaf entry's dtype, shape,
batch prefix and device checked, a record's comparison with its class found clean. The
files are opened, checked and mapped at every load, as without the cache, and a file
whose bytes differ in any way is decoded and checked again. Only headers whose values
never reach the loaded collection are kept (a TensorDict's or a lazy stack's, a
record's with no value fields): nothing handed to the caller is shared between loads.
A failed check is never kept; the cache is bounded (entries and bytes).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

__all__ = ["NodePlan", "cached_header", "clear", "keep_header", "node_plans"]

_MAX_ENTRIES = 64
_MAX_BYTES = 4 << 20  # the raw bytes kept in all (their decoded form is a few times that)
_MAX_FILE = 1 << 20


class NodePlan(NamedTuple):
    """A TensorDict node all of whose entries are plain leaves, checked: each one's
    key, file name, dtype and shape, and what else the node needs built."""

    batch: torch.Size
    named: bool  # the node names a device (the leaves load on the CPU)
    listed: list[tuple[str, str, dict[str, Any]]]
    leaves: tuple[tuple[str, str, torch.dtype, list[int]], ...]


# raw bytes -> (meta, class name, plans by key); plans holds the node's NodePlans (or None
# for a key whose node cannot take one). _BY_ID finds a header's plans from its meta.
_HEADERS: dict[bytes, tuple[dict[str, Any], str, dict[Any, NodePlan | None]]] = {}
_BY_ID: dict[int, tuple[dict[str, Any], dict[Any, NodePlan | None]]] = {}
_held = [0]  # raw bytes kept


def cached_header(raw: bytes) -> tuple[dict[str, Any], str] | None:
    """The header decoded from these very bytes before, or None."""
    hit = _HEADERS.get(raw)
    return None if hit is None else (hit[0], hit[1])


def keep_header(raw: bytes, meta: dict[str, Any], name: str) -> None:
    """Keeps the header decoded (and checked) from ``raw``, which the caller has found
    safe to share (see the module's docstring)."""
    if len(raw) > _MAX_FILE or raw in _HEADERS:
        return
    while _HEADERS and (len(_HEADERS) >= _MAX_ENTRIES or _held[0] + len(raw) > _MAX_BYTES):
        old = next(iter(_HEADERS))  # the oldest
        gone = _HEADERS.pop(old, None)
        if gone is not None:  # (another thread may have taken it out first)
            _BY_ID.pop(id(gone[0]), None)
            _held[0] -= len(old)
    plans: dict[Any, NodePlan | None] = {}
    _HEADERS[raw] = (meta, name, plans)
    _BY_ID[id(meta)] = (meta, plans)
    _held[0] += len(raw)


def node_plans(meta: dict[str, Any]) -> dict[Any, NodePlan | None] | None:
    """The plans of a kept header's ``meta`` (this very object), or None."""
    slot = _BY_ID.get(id(meta))
    return slot[1] if slot is not None and slot[0] is meta else None


def clear() -> None:
    """Forgets every header kept (their next loads decode and check them again)."""
    _HEADERS.clear()
    _BY_ID.clear()
    _held[0] = 0
