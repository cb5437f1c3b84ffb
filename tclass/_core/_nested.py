"""Python values laid out like a batch: nested lists (batch order) into object arrays,
as the on-disk format, consolidated buffers and the wire format store a NonTensorStack's
values."""

from __future__ import annotations

from typing import Any

import numpy as np

from tclass.errors import MetadataError

__all__ = ["fill_array", "fill_flat", "flatten_values"]


def fill_array(array: np.ndarray[Any, Any], data: Any, shape: list[int], where: str) -> None:
    """Fill ``array`` (of ``shape``) with the values of ``data``, nested lists in batch order."""
    fill_flat(array, flatten_values(data, shape, where))


def flatten_values(data: Any, shape: list[int], where: str) -> list[Any]:
    """The values of ``data`` (nested lists in batch order) in one flat list, after
    checking level by level, without recursion, that ``data`` has ``shape``."""
    items = [data]
    for size in shape:
        nxt = []
        for item in items:
            if not isinstance(item, list) or len(item) != size:
                raise MetadataError(
                    f"{where!r}: the NonTensorStack data does not have the shape {shape}"
                )
            nxt.extend(item)
        items = nxt
    return items


def fill_flat(array: np.ndarray[Any, Any], items: list[Any]) -> None:
    """Fill ``array`` with ``items`` in row-major order."""
    flat = array.reshape(-1)
    for position, item in enumerate(items):
        flat[position] = item
