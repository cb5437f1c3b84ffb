"""Walks over a collection's keys that read no leaf: the key paths behind ``keys()``
(nested ones included, in the peer's order) and the test for a nested key."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, cast

import torch

if TYPE_CHECKING:
    from tclass._base.implemented._collection import TensorCollection


def _walk_keys(
    collection: TensorCollection,
    prefix: tuple[str, ...],
    include_nested: bool,
    leaves_only: bool,
    is_leaf: Callable[[type], bool],
    node_first: bool = False,
) -> Iterator[tuple[str, ...]]:
    """The key paths, a nested collection's keys before its own (the peer's order), or
    after it with ``node_first`` (the peer's order over a file, which walks the file's
    groups as HDF5 visits them), found without reading any leaf."""
    for key in collection._key_names():
        path = prefix + (key,)
        kind = collection._child_type(key)
        if kind is None:
            if not leaves_only or is_leaf(torch.Tensor):
                yield path
            continue
        listed = not leaves_only or is_leaf(kind)
        if listed and node_first:
            yield path
        if include_nested and not kind._is_leaf_node:
            child = cast("TensorCollection", collection._child(key))
            yield from _walk_keys(child, path, include_nested, leaves_only, is_leaf, node_first)
        if listed and not node_first:
            yield path


def _sort_key(key: str | tuple[str, ...]) -> tuple[str, ...]:
    return (key,) if type(key) is str else key  # type: ignore[return-value]


def _has_key(
    collection: TensorCollection,
    key: str | tuple[str, ...],
    is_leaf: Callable[[type], bool] | None = None,
) -> bool:
    """Whether ``key`` names an entry (with ``is_leaf``, a leaf entry, as
    ``keys(leaves_only=True)`` lists them), found without reading any leaf."""
    path = (key,) if isinstance(key, str) else key
    node: TensorCollection | None = collection
    for part in path[:-1]:
        if node is None or not node._has_entry(part):
            return False
        node = node._child(part)
    last = path[-1]
    if node is None or not node._has_entry(last):
        return False
    if is_leaf is None:
        return True
    kind = node._child_type(last)
    return is_leaf(torch.Tensor if kind is None else kind)
