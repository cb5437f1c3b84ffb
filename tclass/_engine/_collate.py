"""The peer's batching helpers of ``tensordict.functional``: ``collate`` (a ``collate_fn``
for ``torch.utils.data.DataLoader``) and ``group_by`` (rows grouped by an entry's value)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.utils.data import default_collate

from tclass._base.implemented._collection import TensorCollection
from tclass._core._keys import NestedKey, key_path, unravel_key
from tclass._core._records import storage_of
from tclass._engine._lazy._build import maybe_dense_stack
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import is_non_tensor
from tclass._engine._pad_sequence import pad_sequence
from tclass.errors import (
    ArgumentError,
    ArgumentValueError,
    BatchSizeError,
    KeyNotFoundError,
    StackError,
)

__all__ = ["collate", "default_collate", "group_by"]


def collate(
    batch: Any,
    *,
    pad_keys: Mapping[NestedKey, float] | None = None,
    nested_keys: Sequence[NestedKey] | None = None,
    mask_key: NestedKey | None = None,
) -> Any:
    """Collates a list of samples into a batch (a ``DataLoader``'s ``collate_fn``), by the
    type of the first sample: collections (tensorclasses keep their class) with
    ``maybe_dense_stack`` (dense if they match, else a lazy stack), tensors with
    ``torch.stack``, mappings and tuples (namedtuples keep their type) entry by entry,
    anything else with ``torch.utils.data.default_collate``. Anything but a non-empty list
    is returned as it is (a batch a sampler already read in one index).

    Args:
        batch: the samples.
        pad_keys: entries to pad to the longest sample along their first dim (each
            mapped to its padding value) and stack, as ``pad_sequence`` does; the samples
            must then have no batch dims.
        nested_keys: entries to stack as jagged nested tensors (ragged first dim).
        mask_key: where to put the masks of the ``pad_keys`` entries (True where valid);
            needs ``pad_keys``.

    Raises:
        KeyNotFoundError: (a ``KeyError``) a sample lacks a key of ``pad_keys`` or
            ``nested_keys``.
        ArgumentValueError: (a ``ValueError``) ``mask_key`` without ``pad_keys`` or naming an
            entry, a key in both ``pad_keys`` and ``nested_keys``.
        BatchSizeError: ``pad_keys`` for samples with batch dims.
        StackError: ``nested_keys`` while the other entries do not stack densely.
    """
    if not isinstance(batch, list) or not batch:
        return batch
    first = batch[0]
    if isinstance(first, TensorCollection):
        if pad_keys is None and nested_keys is None and mask_key is None:
            return maybe_dense_stack(batch)
        return _collate_keys(batch, pad_keys or {}, nested_keys or (), mask_key)
    if isinstance(first, torch.Tensor):
        return torch.stack(batch)
    options: dict[str, Any] = {
        "pad_keys": pad_keys, "nested_keys": nested_keys, "mask_key": mask_key,
    }  # fmt: skip
    if isinstance(first, Mapping):
        return {key: collate([sample[key] for sample in batch], **options) for key in first}
    if isinstance(first, tuple):
        items = (collate(list(column), **options) for column in zip(*batch))
        return type(first)(*items) if hasattr(first, "_fields") else tuple(items)
    return default_collate(batch)


def _collate_keys(
    batch: list[Any],
    pad_keys: Mapping[NestedKey, float],
    nested_keys: Sequence[NestedKey],
    mask_key: NestedKey | None,
) -> Any:
    pads = {unravel_key(key): value for key, value in pad_keys.items()}
    nested = [unravel_key(key) for key in nested_keys]
    mask = None if mask_key is None else unravel_key(mask_key)
    _check_collate(batch, pads, nested, mask)
    out = maybe_dense_stack([sample.exclude(*pads, *nested) for sample in batch])
    if nested and isinstance(storage_of(out), LazyStackedTensorDict):
        msg = (
            f"collate got nested_keys={nested}, but the other entries of the samples differ "
            "in shape, so they stack lazily; name the entries that vary in length in "
            "pad_keys or nested_keys"
        )
        raise StackError(msg)
    for key, value in pads.items():
        padded: Any = pad_sequence(
            [storage_of(sample).select(key) for sample in batch],
            padding_value=value,
            return_mask=False if mask is None else mask,
        )
        out.set(key, padded.get(key))
        if mask is not None:
            out.set(_joined(mask, key), padded.get(_joined(mask, key)))
    for key in nested:
        parts = [sample.get(key) for sample in batch]
        out.set(key, torch.nested.as_nested_tensor(parts, layout=torch.jagged))
    return out


def _joined(prefix: Any, key: Any) -> tuple[str, ...]:
    return (*key_path(prefix), *key_path(key))


def _check_collate(
    batch: list[Any], pads: Mapping[Any, float], nested: list[Any], mask: Any
) -> None:
    if mask is not None and not pads:
        raise ArgumentValueError("collate got a mask_key but no pad_keys to mask")
    both = [key for key in nested if key in pads]
    if both:
        raise ArgumentValueError(f"collate got the keys {both} in both pad_keys and nested_keys")
    if pads and batch[0].batch_dims:
        msg = (
            "collate(pad_keys=...) pads the first dim of each entry, which is a batch dim "
            f"of these samples (batch_size={batch[0].batch_size}); give the samples an "
            "empty batch size, or call pad_sequence"
        )
        raise BatchSizeError(msg)
    for sample in batch:
        keys = sample.keys(include_nested=True)
        for key in (*pads, *nested):
            if key not in keys:
                raise KeyNotFoundError(f"collate got the key {key!r}, which a sample lacks")
        if mask is not None and mask in keys:
            msg = f"collate got mask_key={mask!r}, which is an entry of a sample"
            raise ArgumentValueError(msg)


def group_by(collection: Any, key: NestedKey) -> tuple[Any, tuple[Any, ...]]:
    """Splits ``collection`` into groups of rows (along its first batch dim) that share the
    value of the entry ``key``.

    Returns:
        ``(values, groups)``: the sorted distinct values (a tensor for a tensor entry,
        compared row by row if it has more than one dim; a list for Python values, of
        tuples for rows of several values) and one collection of ``collection``'s class
        per value, holding its rows in their original order.

    Raises:
        BatchSizeError: ``collection`` has no batch dim.
        KeyNotFoundError: there is no entry ``key``.
        ArgumentError: (a ``TypeError``) the entry is a collection, or its Python values
            cannot be hashed or sorted.
    """
    if not collection.batch_dims:
        msg = "group_by groups the rows along the first batch dim, and this collection has none"
        raise BatchSizeError(msg)
    entry = storage_of(collection).get(key, None)
    if entry is None:
        raise KeyNotFoundError(f"group_by: the collection has no entry {key!r}")
    if is_non_tensor(entry):
        rows = [_hashable(row) for row in entry.tolist()]
        try:
            values: Any = sorted(set(rows))
        except TypeError as err:
            msg = f"group_by: the values of the entry {key!r} must be hashable and sortable"
            raise ArgumentError(msg) from err
        positions = {value: i for i, value in enumerate(values)}
        inverse = torch.tensor([positions[row] for row in rows], dtype=torch.long)
        counts = torch.bincount(inverse, minlength=len(values))
    elif isinstance(entry, torch.Tensor):
        values, inverse, counts = torch.unique(
            entry, sorted=True, return_inverse=True, return_counts=True,
            dim=0 if entry.ndim > 1 else None,
        )  # fmt: skip
    else:
        msg = (
            f"group_by needs a tensor or Python-value entry, but {key!r} holds a "
            f"{type(entry).__name__}"
        )
        raise ArgumentError(msg)
    order = torch.argsort(inverse, stable=True)
    groups = collection[order].split(counts.tolist(), dim=0)
    return values, tuple(groups)


def _hashable(row: Any) -> Any:
    return tuple(map(_hashable, row)) if isinstance(row, list) else row
