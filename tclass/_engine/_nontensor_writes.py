"""Writes of Python values into the nodes that hold them: ``set_`` over a node writes into
it (so every collection sharing the node sees the value, as the peer's), keeping a
``MetaData``'s kind; a node of one value broadcast over the leading dims of a selection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from tclass._base._provided import ENGINE
from tclass._core import _batch
from tclass._engine._nontensor import MetaData, NonTensorData, _NonTensorNode

__all__ = ["fills_leading", "keep_kind", "write_one_value"]


def fills_leading(value: Any, target: Sequence[int]) -> bool:
    """Whether ``value`` is a node of one value whose batch size broadcasts to the leading
    dims of the selection ``target``: the rows of a TensorDict written at an index
    (``td[i] = rows``) give each value entry the rows' batch size, shorter than the
    selection of an entry with dims past the batch size; the peer writes the one value
    into each element of the selection."""
    if not isinstance(value, NonTensorData):
        return False
    dims = len(value.batch_size)
    return dims <= len(target) and _batch.broadcasts_to(value.batch_size, target[:dims])


def write_one_value(target: Any, stored: Any) -> bool:
    """``set_`` of a Python value (or a node of values) over the node ``target`` of the
    same batch size: written into the node itself, as the peer writes it, so that every
    collection that shares the node (an ``exclude`` / ``select`` result and its source,
    nested nodes alike) sees the new value, as they see a tensor written by ``set_``. A
    stack of per-element values takes the value in each element (and stays a stack); a
    node of one value (a ``MetaData`` too) takes one value. False (the node to replace)
    for a change of kind or of batch size."""
    if not isinstance(stored, _NonTensorNode) or stored.batch_size != target.batch_size:
        return False
    if type(target) in _ONE_VALUE:
        if type(stored) is not type(target):
            return False
        cast(NonTensorData, target)._data = stored.data  # set_ writes into a locked one too
        return True
    if not isinstance(target, ENGINE.NonTensorStack) or -1 in target.batch_size:
        return False
    target._values = list(stored._flat_as(target.batch_size))
    if type(stored) is not NonTensorData:  # the elements are laid out as the source's
        target._stack_dims = getattr(stored, "_stack_dims", None)
    target._write_back()  # into the stack this one was read from by index, if any
    return True


def keep_kind(target: Any, stored: Any) -> Any:
    """``stored`` (a value ``set_`` writes over ``target``) as a ``MetaData`` when
    ``target`` is one and ``stored`` wraps a plain value: an in-place write keeps the
    node's kind, as the peer's writes into the node."""
    if type(target) is MetaData and type(stored) is NonTensorData:
        return MetaData._make(stored.data, stored.batch_size, stored.device)
    return stored


_ONE_VALUE = (NonTensorData, MetaData)
