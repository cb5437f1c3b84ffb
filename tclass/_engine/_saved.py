"""What the engine knows of a collection saved in a folder: a small protocol the io layer
implements (dependency inversion: the engine never imports the io layer).

A ``TensorDict`` saved with ``memmap*`` or loaded write-through holds a :class:`SavedAt`
in its ``_saved_at`` slot (``None`` otherwise). Its tensors are memory-mapped, so data
written into them reaches the files by itself; the rest of a change (a Python value, a
new entry) the engine hands to this object before changing memory.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol, cast

import torch

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection
from tclass._engine._nontensor import NonTensorData, _NonTensorNode
from tclass._engine._nontensor_stack import NonTensorStack

if TYPE_CHECKING:
    from tclass._engine._td import TensorDict

__all__ = ["SavedAt", "blank_like"]


class SavedAt(Protocol):
    """The folder a TensorDict was saved to or loaded from, as the engine sees it.

    The io layer installs one on each TensorDict node of a tree it writes or maps
    write-through (``None`` for every other TensorDict, and for the new TensorDicts that
    indexing or any operation returns). The engine calls it only where an entry is
    stored, filled or removed, never on reads or tensor writes, and before memory
    changes: when the folder cannot follow, it raises and memory stays as it was.
    """

    folder: str  # the node's folder, for messages
    # The keys the node may still take while locked, when absent: the declared fields of
    # the record whose storage it is (a field that was None when it was saved); empty
    # for every other collection, which a lock keeps from taking new keys, as the peer.
    fields: frozenset[str]

    def entry_set(self, td: TensorDict, key: str, value: Value, blank: bool) -> Value:
        """``td`` is about to hold ``value`` under ``key``: write what the folder must
        hold (a Python value's ``meta.json``, the files of a new entry) and return what
        ``td`` stores (for a new tensor or collection: its memory-mapped copy). ``blank``:
        ``value`` is a zero stand-in (see :func:`blank_like`): files are allocated, not
        copied."""
        ...

    def entry_removed(self, td: TensorDict, key: str) -> None:
        """``td`` is about to drop ``key``."""
        ...

    def entry_renamed(self, td: TensorDict, old: str, new: str) -> None:
        """``td`` is about to hold its entry ``old`` under ``new`` (replacing what ``new``
        holds): move the entry's files and its listing in the folder, so that a load
        gives what ``td`` holds, without the old name's files."""
        ...


def blank_like(sub: Any, batch: torch.Size, dims: int, device: torch.device | None) -> Value:
    """A stand-in for an entry shaped like ``sub`` whose first ``dims`` dims become
    ``batch``: zero tensors as stride-0 views (no memory), the written Python value in
    every element (as the peer fills a new key's other rows; None where values differ
    per element, a value stack), collections of the same kind. What a folder (and
    memory) allocates for a new entry."""
    if isinstance(sub, NonTensorStack):  # values per element: the other rows hold None
        shape = batch + sub.batch_size[dims:]
        return NonTensorStack._make([None] * math.prod(shape), shape, device)
    if isinstance(sub, _NonTensorNode):
        flat = sub._flat()
        return NonTensorData._make(flat[0] if flat else None, batch, device)
    if isinstance(sub, TensorCollection):
        size = batch + sub.batch_size[dims:]
        inner = len(sub.batch_size)
        values = {key: blank_like(value, size, inner, device) for key, value in sub._items()}
        return cast(TensorDictBase, sub)._new_like(values, size, device)
    tensor = sub if isinstance(sub, torch.Tensor) else torch.as_tensor(sub)
    zero = torch.zeros((), dtype=tensor.dtype, device=device or tensor.device)
    return zero.expand(batch + tensor.shape[dims:])
