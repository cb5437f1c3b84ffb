"""The check ahead of ``td.update(source)`` and ``td[index] = rows`` where ``source``
or ``rows`` reach a record (directly, or through nested TensorDicts and lazy stacks):
what each record would refuse (a value breaking its field's spec or constraint) is
asked of it before the first entry is written, so that the refusal leaves every entry
as it was (README, Schemas: writes are all or nothing; the peer writes the entries
before it). A source of plain tensors under string keys, the usual one, passes in one
loop of class tests; records answer through ``_check_update`` / ``_check_in_place``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core import _keys
from tclass._core._records import is_record
from tclass._engine._entry_values import keys_below, takes_lazy_layout

__all__ = ["check_rows_update", "check_update"]

_Tensor = torch.Tensor


def _merged(value: Any, is_leaf: Callable[[type], bool] | None) -> bool:
    """Whether ``value`` is merged key by key into a collection it is written to."""
    if not isinstance(value, (Mapping, TensorCollection)):
        return False
    if isinstance(value, TensorCollection) and value._is_leaf_node:
        return False
    return is_leaf is None or not is_leaf(type(value))


def check_update(
    collection: TensorCollection,
    source: Any,
    inplace: bool,
    allowed: list[tuple[str, ...]] | None,
    is_leaf: Callable[[type], bool] | None,
) -> None:
    """Asks each nested collection ``source`` merges into (a record, or a TensorDict or
    lazy stack that may hold one) to check its part, as ``collection.update`` routes it,
    writing nothing."""
    pairs = source._items() if isinstance(source, TensorCollection) else source.items()
    for key, value in pairs:
        if value.__class__ is _Tensor and type(key) is str:
            continue  # set as it is: its own set checks it (no record below)
        path = _keys.key_path(key)
        below = None if allowed is None else keys_below(path, allowed)
        if below == []:
            continue
        if len(path) > 1:  # a nested key: its holder checks it as a merge of one key
            holder = collection.get(path[:-1], None)
            if isinstance(holder, TensorCollection) and below is None:
                holder._check_update({path[-1]: value}, inplace, None, is_leaf)
            continue
        if not _merged(value, is_leaf):
            continue
        target = collection.get(path[0], None)
        if not isinstance(target, TensorCollection) or target._is_leaf_node:
            continue
        if getattr(value, "_is_lazy", False) and (
            is_record(target) or takes_lazy_layout(target, value, below, inplace)
        ):
            continue  # set whole, or restacked member by member: checked as it is written
        target._check_update(value, inplace, below, is_leaf)


def check_rows_update(collection: TensorCollection, index: Any, pairs: Iterable[Any]) -> None:
    """For ``collection[index] = rows`` (``pairs`` the rows' ``(key, value)``): each
    record the rows write into checks its part at ``index`` (``_check_in_place``),
    nested TensorDicts' records too, before any entry is written."""
    for key, value in pairs:
        if value.__class__ is _Tensor or not isinstance(value, (Mapping, TensorCollection)):
            continue
        path = _keys.key_path(key)
        target = collection.get(path, None)
        if not isinstance(target, TensorCollection) or target._is_leaf_node:
            continue
        rows = value._items() if isinstance(value, TensorCollection) else value.items()
        if is_record(target):
            target._check_in_place(dict(rows), index, "[]")
        elif not target._is_lazy:
            check_rows_update(target, index, rows)
