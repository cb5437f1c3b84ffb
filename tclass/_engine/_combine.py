"""Combining and comparing collections: ``merge_tensordicts``, ``isin``,
``remove_duplicates``, and the right-aligned broadcasts ``expand_as_right`` /
``expand_right`` they rely on (the peer's ``tensordict.utils`` helpers, with the same
signatures)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar

import torch

from tclass._base._tensordict_base import TensorDictBase
from tclass._base.implemented._collection import TensorCollection
from tclass._core import _keys
from tclass._core._batch import format_shape
from tclass._core._records import is_record, storage_of
from tclass._engine._lazy._build import lazy_stack
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import _NonTensorNode
from tclass._engine._td import TensorDict
from tclass.errors import (
    BatchMismatchError,
    DimError,
    EntryTypeError,
    KeyNotFoundError,
    ShapeError,
    StackError,
)

__all__ = ["expand_as_right", "expand_right", "isin", "merge_tensordicts", "remove_duplicates"]

T = TypeVar("T", torch.Tensor, TensorDictBase)
Callback = Callable[..., Any]
Callbacks: TypeAlias = Callback | Mapping[Any, Callback] | None


# --- merging ------------------------------------------------------------------------------


def merge_tensordicts(
    *tensordicts: TensorCollection, callback_exist: Callbacks = None
) -> TensorCollection:
    """A new collection holding the keys of all ``tensordicts`` (nested ones merged
    key by key); the inputs are not changed and the leaves are shared, not copied (a
    nested collection only one input holds is copied without its leaves, so that writes
    into the result do not reach it).

    The result has the first input's batch size, device and dim names (a merged nested
    collection its first holder's), and its kind, as the peer's: a record of the first
    input's class where every input is one (a TensorDict otherwise), a lazy stack
    of the merged members where the first input is a lazy stack (its members merged
    with the other inputs' rows along its stack dim), a TensorDict for any other
    collection. A key held by several
    inputs takes the first one's value, unless ``callback_exist`` is given and every
    input holds that tensor: then it gets ``callback_exist(*values)``, in input order
    (a mapping from nested keys to callbacks applies only to those keys; the others
    keep the first), as the peer. Python values always keep the first.

    Raises:
        StackError: (a ValueError and a RuntimeError) if no collection is given.
        BatchMismatchError: if an entry of a later input does not start with the first
            input's batch size.
    """
    if not tensordicts:
        msg = "merge_tensordicts: give at least one collection to merge, got none"
        raise StackError(msg)
    sources = list(tensordicts)
    return _merge_level(sources, (), callback_exist, len(sources))


def _merge_level(
    sources: list[TensorCollection], path: tuple[str, ...], callbacks: Callbacks, count: int
) -> TensorCollection:
    """One level of the merge, with the batch size, device, dim names and kind of its
    first source; ``count``: how many inputs there are in all."""
    first = sources[0]
    batch = first.batch_size
    if isinstance(first, LazyStackedTensorDict) and all(
        tuple(source.batch_size[: len(batch)]) == tuple(batch) for source in sources[1:]
    ):
        return _merge_members(first, sources, path, callbacks, count)
    holders: dict[str, list[Any]] = {}
    for source in sources:
        for key, value in source._items():
            holders.setdefault(key, []).append(value)
    entries: dict[str, Any] = {}
    for key, values in holders.items():
        nested = [v for v in values if _is_node(v)]
        callback = _callback_for(callbacks, path + (key,))
        if len(nested) == len(values) and len(nested) > 1:
            # Nested collections merge key by key: the callback applies to their leaves.
            entries[key] = _merge_level(nested, path + (key,), callbacks, count)
        elif (
            len(values) == count
            and callback is not None
            and not any(isinstance(v, _NonTensorNode) for v in values)
        ):
            entries[key] = callback(*values)
        elif _is_node(values[0]):
            # A node taken from one input (the only one holding a node there): a copy of
            # its structure, the leaves shared, so that writes into the result do not
            # reach the input.
            entries[key] = values[0].clone(recurse=False)
        else:
            entries[key] = values[0]
        _check_fits(entries[key], path + (key,), batch)
    out: TensorCollection
    if is_record(first) and all(type(source) is type(first) for source in sources):
        out = first._new_like(entries, batch, first.device)  # fields of its own class
    else:
        out = TensorDict._new_unchecked(entries, batch, first.device)
    storage_of(out)._mark_unbatched_if_any()
    names = first._dim_names  # the first source's names, as its batch size
    if names is not None:
        out._assign_names(names)
    return out


def _merge_members(
    first: LazyStackedTensorDict,
    sources: list[TensorCollection],
    path: tuple[str, ...],
    callbacks: Callbacks,
    count: int,
) -> TensorCollection:
    """The merge of a lazy stack first: each of its members merged with the other
    sources' rows along its stack dim, stacked lazily along that dim again."""
    dim = first.stack_dim
    rows = [first.tensordicts] + [source.unbind(dim) for source in sources[1:]]
    members: list[Any] = [
        _merge_level(list(parts), path, callbacks, count) for parts in zip(*rows, strict=True)
    ]
    out: TensorCollection = lazy_stack(members, dim)
    names = first._dim_names
    if names is not None:
        out._assign_names(names)
    return out


def _is_node(value: Any) -> bool:
    return isinstance(value, TensorCollection) and not isinstance(value, _NonTensorNode)


def _callback_for(callbacks: Callbacks, path: tuple[str, ...]) -> Callback | None:
    if callbacks is None or callable(callbacks):
        return callbacks
    for key, callback in callbacks.items():
        if _keys.key_path(key) == path:
            return callback
    return None


def _check_fits(value: Any, path: tuple[str, ...], batch: torch.Size) -> None:
    shape = (
        value.batch_size if isinstance(value, TensorCollection) else getattr(value, "shape", None)
    )
    if shape is None:
        msg = (
            f"merge_tensordicts: the callback for {path!r} returned a "
            f"{type(value).__name__}, not a tensor or collection; return one of those"
        )
        raise EntryTypeError(msg)
    if tuple(shape[: len(batch)]) != tuple(batch):
        raise BatchMismatchError(path, shape, batch)


# --- expanding on the right ---------------------------------------------------------------


def expand_as_right(tensor: T, dest: torch.Tensor | TensorDictBase) -> T:
    """``tensor`` expanded to ``dest``'s shape, adding dims on the right (broadcasting
    adds them on the left). For a collection, its shape is its batch size. The leading
    dims of ``tensor`` must equal ``dest``'s or be 1; the result is a view.

    Example:
        >>> expand_as_right(torch.arange(3), torch.zeros(3, 2))
        tensor([[0, 0],
                [1, 1],
                [2, 2]])

    Raises:
        ShapeError: if ``dest`` has fewer dims than ``tensor``, or a leading dim differs.
    """
    return expand_right(tensor, dest.shape)


def expand_right(tensor: T, shape: Sequence[int]) -> T:
    """``tensor`` expanded to ``shape``, adding dims on the right: see
    :func:`expand_as_right`.

    Raises:
        ShapeError: if ``shape`` has fewer dims than ``tensor``, or a leading dim of
            ``tensor`` is neither 1 nor ``shape``'s.
    """
    have = tuple(tensor.shape)
    if len(shape) < len(have) or any(a != b and a != 1 for a, b in zip(have, shape)):
        msg = (
            f"cannot expand a shape {format_shape(have)} on the right to {format_shape(shape)}: "
            "its dims must match the leading dims of the target (or be 1)"
        )
        raise ShapeError(msg)
    out: Any = tensor
    for _ in range(len(shape) - len(have)):
        out = out.unsqueeze(-1)
    if tuple(out.shape) == tuple(shape):
        return out  # type: ignore[no-any-return]
    return out.expand(*shape)  # type: ignore[no-any-return]


# --- membership and duplicates ------------------------------------------------------------


def _tensor_at(collection: TensorCollection, key: Any, where: str, role: str) -> torch.Tensor:
    """The tensor at ``key``; the error otherwise holds the phrase the peer's does
    (``isin``: "Key 'k' not found in input or not a tensor"; ``remove_duplicates``:
    "The key 'k' does not exist in the TensorDict" / "does not point to a tensor")."""
    value = collection.get(key, None)
    if not isinstance(value, torch.Tensor):
        what = "it is missing" if value is None else f"it holds a {type(value).__name__}"
        if where == "isin":
            said = f"Key {key!r} not found in {role} or not a tensor ({what})"
        elif value is None:
            said = f"The key {key!r} does not exist in the TensorDict"
        else:
            said = f"The key {key!r} does not point to a tensor in the TensorDict ({what})"
        msg = f"{where}: {said}; give the key of a tensor entry"
        raise KeyNotFoundError(msg)
    return value


def _batch_dim(collection: TensorCollection, dim: int, where: str) -> int:
    ndim = collection.batch_dims
    if not -ndim <= dim < ndim:
        whose = "an input TensorDict" if where == "isin" else "a TensorDict"
        msg = (
            f"{where}: The specified dimension '{dim}' is invalid for {whose} with batch size "
            f"{format_shape(collection.batch_size)}: give a batch dim, in [{-ndim}, {ndim - 1}]"
        )
        raise DimError(msg)
    return dim % ndim


def isin(
    input: TensorCollection, reference: TensorCollection, key: Any, dim: int = 0
) -> torch.Tensor:
    """Which elements of ``input`` along batch dim ``dim`` also appear in ``reference``,
    comparing the entry ``key``: an element is in ``reference`` if its slice of
    ``input[key]`` along ``dim`` equals one of the slices of ``reference[key]``.

    Returns a bool tensor of length ``input.batch_size[dim]``.

    Example:
        >>> td = TensorDict(x=torch.tensor([[1, 2], [3, 4], [1, 2]]), batch_size=[3])
        >>> isin(td, TensorDict(x=torch.tensor([[1, 2]]), batch_size=[1]), "x")
        tensor([ True, False,  True])

    Raises:
        KeyNotFoundError: if ``key`` is not a tensor in either collection.
        DimError: if ``dim`` is not a batch dim, or the batch dims differ in number.
        ShapeError: if the two entries' shapes differ other than along ``dim``.
    """
    target = _tensor_at(input, key, "isin", "input")
    ref = _tensor_at(reference, key, "isin", "reference")
    if input.batch_dims != reference.batch_dims:
        msg = (
            "isin: The number of dimensions in the batch size of the input and reference "
            f"must be the same: input has batch size {format_shape(input.batch_size)} and "
            f"reference {format_shape(reference.batch_size)}"
        )
        raise DimError(msg)
    dim = _batch_dim(input, dim, "isin")
    if target.shape[:dim] + target.shape[dim + 1 :] != ref.shape[:dim] + ref.shape[dim + 1 :]:
        msg = (
            f"isin: {key!r} has shape {format_shape(target.shape)} in input and "
            f"{format_shape(ref.shape)} in reference; they may differ only along dim {dim}"
        )
        raise ShapeError(msg)
    count = ref.shape[dim]
    _, inverse = torch.unique(torch.cat([ref, target], dim=dim), dim=dim, return_inverse=True)
    return torch.isin(inverse[count:], inverse[:count])


def remove_duplicates(
    input: TensorDictBase, key: Any, dim: int = 0, *, return_indices: bool = False
) -> Any:
    """``input`` without the elements (along batch dim ``dim``) whose ``key`` value
    repeats another's: one element per distinct value, the first one, ordered by that
    value (as ``torch.unique`` sorts), as in the peer.

    With ``return_indices``, also returns for each element of ``input`` the position
    of its value in the result, so ``result[indices]`` rebuilds ``input``'s ``key``.

    Example:
        >>> td = TensorDict(x=torch.tensor([7, 1, 7, 3]), y=torch.arange(4), batch_size=[4])
        >>> remove_duplicates(td, "x")["y"]
        tensor([1, 3, 0])

    Raises:
        KeyNotFoundError: if ``key`` is not a tensor entry.
        DimError: if ``dim`` is not a batch dim.
    """
    tensor = _tensor_at(input, key, "remove_duplicates", "input")
    dim = _batch_dim(input, dim, "remove_duplicates")
    _, inverse, counts = torch.unique(tensor, dim=dim, return_inverse=True, return_counts=True)
    order = torch.sort(inverse, stable=True).indices
    starts = torch.cat([counts.new_zeros(1), counts.cumsum(0)[:-1]])
    first = order[starts]
    output = input[(slice(None),) * dim + (first,)]
    return (output, inverse) if return_indices else output
