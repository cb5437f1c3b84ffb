"""Walks over a collection's entries behind the entry-level methods of ``_entry_ops.py``:
nodes and leaves, the (key, value) pairs a write takes, leaf paths and depth, the rows of
a ragged dim, a nested collection's batch size in ``empty``, and the per-tensor
conversions of ``tolist`` / ``numpy`` / ``bytes``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._leaf_walk import _only_tensors
from tclass._core import _keys
from tclass._core._linked_list import LinkedList
from tclass._core._records import storage_of
from tclass.errors import (
    BatchSizeError,
    HeterogeneousEntryError,
)

if TYPE_CHECKING:
    from tclass._base._tensordict_base import TensorDictBase

__all__ = ["values_as_numpy", "written_paths"]


def _fit_empty(node: TensorDictBase, batch_size: torch.Size) -> None:
    """Gives ``node``, a nested collection without a leaf, and the collections below it
    ``batch_size``: it holds nothing to constrain its parent's batch size, and takes it
    where its own does not start with it (the peer's ``auto_batch_size_`` grows it to its
    parent's when it starts that, and leaves it as it is otherwise, a nested batch size
    that does not fit its parent's)."""
    for _, value in node._items():
        if _is_node(value):
            _fit_empty(value, batch_size)
    if node.batch_size != batch_size:
        node.batch_size = batch_size  # type: ignore[misc]


def _is_node(value: object) -> TypeGuard[TensorDictBase]:
    """A nested collection that holds entries (not a Python value)."""
    return isinstance(value, TensorCollection) and not value._is_leaf_node


def _is_leaf(value: object) -> bool:
    return not isinstance(value, TensorCollection) or value._is_leaf_node


def _ragged_rows(collection: Any) -> tuple[Any, ...]:
    """The rows of a collection whose first batch dim is ragged (``-1``: a row of a
    densified ragged lazy stack), sized by its entries, which agree on it.

    Raises:
        HeterogeneousEntryError: the entries do not tell one size.
    """
    sizes = {
        value.shape[0] if isinstance(value, torch.Tensor) else value.batch_size[0]
        for _, value in collection._items()
    }
    if len(sizes) != 1 or -1 in sizes:
        msg = (
            f"tolist: dim 0 of this collection (batch size {list(collection.batch_size)}) is "
            "ragged and its entries do not tell one size along it; list the members of the "
            "lazy stack it comes from instead"
        )
        raise HeterogeneousEntryError(msg)
    resized = collection.clone(recurse=False)
    resized.batch_size = torch.Size([sizes.pop(), *collection.batch_size[1:]])
    return resized.unbind(0)  # type: ignore[no-any-return]


def _leaf_paths(
    collection: TensorCollection, prefix: tuple[str, ...], is_leaf: Callable[[type], bool] | None
) -> Iterator[tuple[tuple[str, ...], Any]]:
    for key, value in collection._items():
        path = prefix + (key,)
        if _is_node(value) and (is_leaf is None or not is_leaf(type(value))):
            yield from _leaf_paths(value, path, is_leaf)
        else:
            yield path, value


def _value_paths(
    collection: TensorCollection, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """The (full key, node) of each Python-value node, nested ones included; a level that
    holds only tensors is passed over at once (``copy_`` asks on every call); a lazy
    stack's leaves are not read (its members' may differ in shape), nor those of a record
    over a lazy stack."""
    children: Iterable[tuple[str, Any]]
    store = storage_of(collection)
    if store._is_lazy:
        children = ((key, store._child(key)) for key in store._key_names())
    else:
        entries = collection._entries()
        if _only_tensors(map(type, entries.values())):
            return
        children = entries.items()
    for key, value in children:
        if isinstance(value, TensorCollection):
            if value._is_value_node:
                yield prefix + (key,), value
            elif not value._is_leaf_node:
                yield from _value_paths(value, prefix + (key,))


def _pairs(
    source: Mapping[Any, Any] | TensorCollection | None,
    extra: Mapping[str, Any],
    prefix: tuple[str, ...],
    whole_lazy: bool = False,
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """The (full key, value) pairs to write: nested mappings walked to their leaves
    (with ``whole_lazy``, a lazy stack is a value: its members may differ in shape)."""
    items: list[tuple[Any, Any]] = []
    if isinstance(source, TensorCollection):
        items.extend(source._items())
    elif source is not None:
        items.extend(source.items())
    items.extend(extra.items())
    for key, value in items:
        path = prefix + _keys.key_path(key)
        if whole_lazy and isinstance(value, TensorCollection) and value._is_lazy:
            yield path, value
        elif isinstance(value, Mapping) or _is_node(value):
            yield from _pairs(value, {}, path, whole_lazy)
        else:
            yield path, value


def _depth(collection: TensorCollection) -> int:
    """The deepest nesting of a leaf below ``collection``; -1 when it holds no leaf."""
    deepest = -1
    for _, value in collection._items():
        if not _is_node(value):
            deepest = max(deepest, 0)
        else:
            below = _depth(value)
            if below >= 0:
                deepest = max(deepest, below + 1)
    return deepest


def _common_device(collection: TensorCollection) -> torch.device | None:
    devices = {tensor.device for tensor in collection._tensor_leaves()}
    return devices.pop() if len(devices) == 1 else None


def _constant(value: Any) -> Callable[[str], Any]:
    return lambda key: value


def _element_dict(
    collection: TensorCollection,
    convert: bool | Literal["numpy"],
    tolist_first: bool = False,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in collection._items():
        if isinstance(value, TensorCollection):
            if value._is_value_node:  # one value as itself, a stack's as lists (the peer)
                read = value._read()
                out[key] = value.tolist() if isinstance(read, LinkedList) else read
            elif value._is_leaf_node:
                out[key] = _converted(value._payload(), convert)  # type: ignore[attr-defined]
            elif tolist_first and value.batch_size:
                out[key] = value.tolist(convert_tensors=convert, tolist_first=True)
            else:
                out[key] = _element_dict(value, convert)
        else:
            out[key] = _converted(value, convert)
    for name in collection._absent_fields():
        out[name] = None
    return out


def _converted(tensor: torch.Tensor, convert: bool | str) -> Any:
    if convert == "numpy":
        return tensor.detach().cpu().numpy()
    if convert:
        return tensor.tolist()
    return tensor


def _byte_parts(tensor: torch.Tensor) -> list[torch.Tensor]:
    """The tensors whose memory ``tensor`` holds, for ``bytes()``: a jagged nested
    tensor's parts (its values, offsets and any lengths), and a leaf's gradient."""
    if tensor.is_nested and tensor.layout is torch.jagged:
        jagged: Any = tensor  # torch's NestedTensor subclass: offsets() and lengths()
        parts = [jagged.values(), jagged.offsets()]
        lengths = jagged.lengths()
        return parts if lengths is None else [*parts, lengths]
    if tensor.is_leaf and tensor.requires_grad and tensor.grad is not None:
        return [tensor, tensor.grad]
    return [tensor]


def _nested_empty_size(key: str, nested: torch.Size, size: torch.Size) -> torch.Size | None:
    """The batch size of a nested collection in ``empty(recurse=True, batch_size=size)``,
    as the peer gives it: its own if it starts with ``size``, ``size`` if ``size`` starts
    with it (``None``: kept).

    Raises:
        BatchSizeError: (a ``RuntimeError``, as the peer's) neither starts with the other.
    """
    if nested[: len(size)] == size:
        return None
    if size[: len(nested)] == nested:
        return size
    msg = (
        f"empty(recurse=True) cannot give the batch size {list(size)} to the entry {key!r}, "
        f"whose batch size {list(nested)} does not start with it; give a batch size that "
        "starts with or extends every nested collection's, or use recurse=False"
    )
    raise BatchSizeError(msg)


def _as_numpy(tensor: torch.Tensor) -> Any:
    if tensor.is_nested:
        return tuple(part.numpy() for part in tensor.unbind())
    return tensor.numpy()


def values_as_numpy(value: Any) -> Any:
    """A Python value with every tensor in its lists, tuples and dicts (nested ones too)
    as a numpy array, as ``numpy()`` gives a Python value node's value (a value stack's
    elements written back as tensors become arrays)."""
    if isinstance(value, torch.Tensor):
        return _as_numpy(value)
    if type(value) in (list, tuple):
        return type(value)(values_as_numpy(item) for item in value)
    if type(value) is dict:
        return {key: values_as_numpy(item) for key, item in value.items()}
    return value


def written_paths(pairs: Iterable[tuple[tuple[str, ...], Any]]) -> Iterator[tuple[str, ...]]:
    """The key paths of the tensors ``update_`` writes from ``pairs``: a tensor's path,
    and each leaf under a collection's (a lazy one, written member by member)."""
    for path, value in pairs:
        if isinstance(value, torch.Tensor):
            yield path
        elif isinstance(value, TensorCollection) and not value._is_leaf_node:
            for key in storage_of(value).keys(True, True):
                yield path + _keys.key_path(key)
