"""Building TensorDicts from plain Python structures: ``from_dict``, ``fromkeys``,
``from_namedtuple``, ``make_tensordict``, and the way back (``to_dict``, ``to_namedtuple``).

Every builder goes through two steps. :func:`normalize` turns the input into a tree of
plain dicts whose leaves are tensors, collections or :class:`PyValue` wrappers (numbers
and array-likes become tensors, other Python values stay values). :func:`build` then
makes the TensorDicts, bottom-up, choosing each node's batch size:

* an explicit ``batch_size`` applies to the root and to every nested dict;
* otherwise, with ``auto_batch_size`` or ``batch_dims``, each node takes the largest
  leading shape shared by its tensors and by the batch sizes of its nested collections
  (at most ``batch_dims`` dims), so a nested dict may keep more batch dims than its
  parent; an empty nested dict takes its parent's batch size;
* otherwise the batch size is ``[]``, as in the peer.

Python values become ``NonTensorData`` nodes spanning their node's batch and never
constrain a batch size.
"""

from __future__ import annotations

import collections
import keyword
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Real
from typing import Any, Literal, TypeVar, cast, overload

import numpy as np
import torch

from tclass._base._provided import INTEROP
from tclass._base._tensordict_base import TensorDictBase
from tclass._base.implemented._collection import TensorCollection
from tclass._core import _keys
from tclass._core._batch import BatchSizeLike, as_batch_size
from tclass._core._device import DeviceLike, as_device
from tclass._core._linked_list import holds_none, unlinked
from tclass._core._names import DimName
from tclass._core._records import is_record, storage_of
from tclass._engine._entry_values import entries_of
from tclass._engine._nontensor import NonTensorData, _NonTensorNode
from tclass._engine._pyvalues import stored_value
from tclass._engine._ragged_values import stack_of_lists
from tclass._engine._td import TensorDict
from tclass._interop._params import TensorDictParams
from tclass.errors import (
    BatchMismatchError,
    BatchSizeError,
    EntryTypeError,
    HeterogeneousEntryError,
    InvalidKeyError,
    KeyConflictError,
    KeyThroughTensorError,
    NamedTupleKeyError,
    NotAMappingError,
    SourceTypeError,
    StackError,
)

__all__ = [
    "PyValue",
    "build",
    "checked",
    "common_leading_shape",
    "from_dict",
    "from_namedtuple",
    "from_tuple",
    "fromkeys",
    "ignored_batch_dims",
    "infer_batch_size",
    "is_namedtuple",
    "is_tensor_collection",
    "make_tensordict",
    "normalize",
    "resolve_batch_options",
    "to_dict",
    "to_namedtuple",
]

_NUMBERS = (bool, int, float, complex, np.ndarray, np.generic)
_NO_DIMS = torch.Size([])
_NOT_VALUES = (torch.Tensor, TensorCollection, Mapping, np.ndarray, tuple)
_NOT_NESTED = (TensorCollection, Mapping, np.ndarray, tuple)  # (a list's items kept as values)


class PyValue:
    """A Python value on its way into a ``NonTensorData`` node (once the node's batch
    size is known); ``kind``: the node's class (a given ``MetaData`` stays one)."""

    __slots__ = ("kind", "value")

    def __init__(self, value: Any, kind: type[NonTensorData] = NonTensorData) -> None:
        self.value = value
        self.kind = kind


class Scalar:
    """A Python or NumPy real number (or bool): a 0-dim tensor, except under a batch
    size with dims, which it cannot start with: there, as the peer reads it (``to_dict``
    writes one value spanning a batch so), one ``NonTensorData`` value."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def tensor(self) -> torch.Tensor:
        return torch.as_tensor(self.value)


Tree = dict[str, Any]
"""A normalized input: keys to tensors, collections, ``PyValue`` or nested ``Tree``."""


# --- the two steps ------------------------------------------------------------------------


def normalize(source: Mapping[Any, Any] | TensorCollection, where: str) -> Tree:
    """``source`` as a :data:`Tree`; tuple keys become nested dicts.

    Raises:
        InvalidKeyError: for a key that is not a string or a tuple of strings.
        KeyThroughTensorError: when a nested key passes through a leaf.
    """
    tree: Tree = {}
    for key, value in _pairs_of(source, where):
        try:
            path = _keys.key_path(key)
        except InvalidKeyError:
            msg = (
                f"{where}: invalid key {key!r} ({type(key).__name__}); keys are "
                "strings or tuples of strings"
            )
            raise InvalidKeyError(msg) from None
        node = tree
        for depth, part in enumerate(path[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                msg = (
                    f"{where}: key {path!r} passes through {path[: depth + 1]!r}, "
                    "which is not a dict"
                )
                raise KeyThroughTensorError(msg)
            node = child
        leaf = path[-1]
        converted = _leaf(value, where)
        if leaf not in node:
            node[leaf] = converted
        elif isinstance(node[leaf], dict) and isinstance(converted, dict):
            node[leaf].update(converted)  # ("a", "b") and "a": {...} both given
        else:
            msg = (
                f"{where}: the key {path!r} is given twice (as a string and as a tuple "
                "key); give it once"
            )
            raise KeyConflictError(msg)
    return tree


def _pairs_of(source: object, where: str) -> Iterable[tuple[Any, Any]]:
    if isinstance(source, TensorCollection):
        return source._items()
    if isinstance(source, Mapping):
        return entries_of(source)  # a dict's plain keys first, as the peer sets them
    msg = (
        f"{where}: expected a mapping of entries (a dict or a tensor collection), got "
        f"{type(source).__name__} {source!r:.80}; pass e.g. {where}({{'obs': tensor}})"
    )
    if where == "from_dict" and isinstance(source, (list, tuple)) and not source:
        return ()  # no entries, as the peer's dict([])
    if where == "from_dict" and isinstance(source, Iterable):
        raise SourceTypeError(msg)  # a ValueError too, as the peer's dict(source) of it
    raise NotAMappingError(msg)  # (an AttributeError too, as the peer's for some)


def _leaf(value: Any, where: str) -> Any:
    """One input value as a tree node."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, NonTensorData):  # one with batch dims counts with them, as the peer
        return value if value.batch_dims else PyValue(value.data, type(value))
    if isinstance(value, TensorCollection):
        return value  # a collection (a per-element value stack included) is kept as is
    if isinstance(value, Mapping):
        return normalize(value, where)
    if is_namedtuple(value):
        return normalize(_namedtuple_dict(value), where)
    if isinstance(value, list):  # as a TensorDict stores it: per-element values stack
        try:
            stored = stored_value(value, _NO_DIMS, None)
        except StackError:  # lists the constructor does not stack ([[[None], [1]], [[None]]])
            if not _nested_values(value):
                raise
            return stack_of_lists(value)  # the peer's from_dict stacks them list by list
        if isinstance(stored, NonTensorData):
            return PyValue(value)
        if isinstance(stored, _NonTensorNode) and _nested_values(value, _NOT_NESTED):
            # lists of values (tensors too, once they are not stacked into one, as
            # ``to_dict()`` writes a value stack holding them): a stack dim per list,
            # ragged ones too (the peer)
            try:
                return stack_of_lists(value)
            except StackError:
                pass  # items nesting to different depths (the peer raises): as set() stores
        return stored
    if isinstance(value, (Real, np.bool_)):
        return Scalar(value)
    if isinstance(value, tuple):  # (a torch.Size too) "0", "1", ... as from_tuple, as the peer
        return normalize(_tuple_dict(value), where)
    if isinstance(value, _NUMBERS):
        try:
            return torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError):
            pass  # strings, ragged lists, object arrays: one Python value
        if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
            # negative strides (a[::-1], np.flip), which torch cannot view: a copy, as
            # the constructor and the peer make
            return torch.as_tensor(np.ascontiguousarray(value))
    return PyValue(value)


def _nested_values(value: list[Any], refused: tuple[type, ...] = _NOT_VALUES) -> bool:
    """Whether ``value`` holds lists, and at any depth only lists and Python values (no
    item of the ``refused`` types: by default no tensor, array, tuple, mapping or
    collection)."""
    return any(isinstance(item, list) for item in value) and _values_only(value, refused)


def _values_only(value: list[Any], refused: tuple[type, ...]) -> bool:
    return all(
        _values_only(item, refused) if isinstance(item, list) else not isinstance(item, refused)
        for item in value
    )


def build(
    tree: Tree,
    batch_size: torch.Size | None,
    cap: int | None,
    device: torch.device | None,
) -> TensorDict:
    """The TensorDict of a normalized tree.

    Args:
        tree: from :func:`normalize`.
        batch_size: the batch size of every node, or ``None`` to infer each node's.
        cap: when inferring, the most batch dims a node takes (``None``: no limit).
        device: moves every tensor there, and is the result's device.
    """
    if batch_size is not None:
        return _build_fixed(tree, batch_size, device, ())
    return _build_inferred(_grown(tree, cap), cap, device, None, ())


def _grown(tree: Tree, cap: int | None) -> Tree:
    """``tree`` with each nested TensorDict or record whose entries allow more batch dims than it
    has (at any depth) replaced by a shallow copy with the largest batch sizes, as the
    peer's ``auto_batch_size`` sets them (the peer changes the caller's TensorDict in
    place; the copy leaves it as it was). The copy of a locked one is locked, as the
    peer's result holds the caller's locked node."""
    out: Tree = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            value = _grown(value, cap)
        elif _grows(value):
            copy = value.copy().auto_batch_size_(cap)
            if _batch_sizes(copy) != _batch_sizes(value):
                value = copy.lock_() if value.is_locked else copy
        out[key] = value
    return out


def _grows(value: object) -> bool:
    """A nested TensorDict or record (not a lazy stack), whose ``auto_batch_size_`` the
    peer's runs."""
    return (
        isinstance(value, TensorCollection)
        and not value._is_leaf_node
        and not storage_of(value)._is_lazy
    )


def _batch_sizes(td: TensorCollection) -> list[torch.Size]:
    nodes = td.values(include_nested=True)
    return [
        td.batch_size,
        *(node.batch_size for node in nodes if isinstance(node, TensorCollection)),
    ]


def _build_fixed(
    tree: Tree, batch: torch.Size, device: torch.device | None, path: tuple[str, ...]
) -> TensorDict:
    entries: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            entries[key] = _build_fixed(value, batch, device, path + (key,))
        elif isinstance(value, PyValue):
            entries[key] = value.kind._make(value.value, batch, device)
        elif isinstance(value, Scalar) and batch:
            entries[key] = NonTensorData._make(value.value, batch, device)
        elif isinstance(value, NonTensorData) and value.batch_size[: len(batch)] != batch:
            entries[key] = NonTensorData._make(value.data, batch, device)  # (the peer's)
        elif isinstance(value, Scalar):
            entries[key] = value.tensor()
        else:
            entries[key] = value
    return checked(entries, batch, device, path)


def _build_inferred(
    tree: Tree,
    cap: int | None,
    device: torch.device | None,
    parent: torch.Size | None,
    path: tuple[str, ...],
) -> TensorDict:
    """Top-down, once :func:`_inferred` knows what each node's entries ask for: a node
    nothing constrains (no leaf below it) takes the batch size its empty collections
    share, or its parent's where that one does not start with its parent's (as
    ``auto_batch_size_``)."""
    batch = _node_batch(tree, cap, parent)
    entries: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            entries[key] = _build_inferred(value, cap, device, batch, path + (key,))
        elif isinstance(value, PyValue):
            entries[key] = value.kind._make(value.value, batch, device)
        elif isinstance(value, Scalar):  # its 0 dims gave the node no batch dims
            entries[key] = value.tensor()
        elif isinstance(value, NonTensorData) and cap is not None and value.batch_dims > cap:
            entries[key] = NonTensorData._make(value.data, value.batch_size[:cap], device)
        elif _follows(value) and value.batch_size[: len(batch)] != batch:
            entries[key] = value.clone()  # the batch size set below fits it (not the caller's)
        else:
            entries[key] = value
    # built without batch dims, then given them, as the peer's auto_batch_size_ sets them:
    # the node does not take a nested collection's dim names (the peer's stay unnamed),
    # and an empty nested collection grows to them
    out = checked(entries, torch.Size([]), device, path)
    out.batch_size = batch
    return out


def _node_batch(tree: Tree, cap: int | None, parent: torch.Size | None) -> torch.Size:
    own = _inferred(tree, cap)
    if own is None:
        empty = [value.batch_size for value in tree.values() if _follows(value)]
        own = common_leading_shape(empty, cap) if empty else None
    if own is None or (parent is not None and own[: len(parent)] != parent):
        return parent if parent is not None else torch.Size([])
    return own


def _inferred(tree: Tree, cap: int | None) -> torch.Size | None:
    """The largest leading shape the tensors, collections (per-element value stacks and
    values with batch dims included) and constrained nested dicts of ``tree`` share;
    ``None`` if none is there. A collection without a leaf does not count: it follows
    its parent's batch size, as in ``auto_batch_size_``."""
    shapes: list[Sequence[int]] = []
    for value in tree.values():
        if isinstance(value, torch.Tensor):
            shapes.append(value.shape)
        elif isinstance(value, Scalar):
            shapes.append(())
        elif isinstance(value, dict):
            nested = _inferred(value, cap)
            if nested is not None:
                shapes.append(nested)
        elif isinstance(value, TensorCollection) and not _follows(value):
            shapes.append(value.batch_size)
    return common_leading_shape(shapes, cap) if shapes else None


def _follows(value: object) -> bool:
    """Whether ``value`` is a nested collection without a leaf (not a lazy stack, whose
    batch size its members set)."""
    return (
        isinstance(value, TensorCollection)
        and not value._is_leaf_node
        and not storage_of(value)._is_lazy
        and value.is_empty()
    )


def checked(
    entries: dict[str, Any], batch: torch.Size, device: torch.device | None, path: tuple[str, ...]
) -> TensorDict:
    """``TensorDict(entries, batch, device)``; a batch mismatch names the full key."""
    try:
        return TensorDict(entries, batch, device)
    except BatchMismatchError as error:
        if not path:
            raise
        for part in reversed(path):
            error = error.under(part)
        raise error from None


def common_leading_shape(shapes: Sequence[Sequence[int]], cap: int | None = None) -> torch.Size:
    """The longest shape every one of ``shapes`` starts with (at most ``cap`` dims)."""
    if not shapes:
        return torch.Size([])
    limit = min(len(shape) for shape in shapes)
    if cap is not None:
        limit = min(limit, cap)
    common: list[int] = []
    first = shapes[0]
    for dim in range(limit):
        if any(shape[dim] != first[dim] for shape in shapes):
            break
        common.append(first[dim])
    return torch.Size(common)


def infer_batch_size(data: Mapping[Any, Any], batch_dims: int | None) -> torch.Size:
    """The batch size a tensorclass's ``from_dict`` infers for ``data`` (at most
    ``batch_dims`` dims): the largest leading shape its tensors, collections and nested
    dicts share. Other values (numbers and lists too) do not count: the record's
    ``from_dict`` passes the tensors its fields make of array-likes in their place."""
    return build(normalize(_shape_sources(data), "from_dict"), None, batch_dims, None).batch_size


def _shape_sources(data: Mapping[Any, Any]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out[key] = _shape_sources(value)
        elif isinstance(value, (torch.Tensor, TensorCollection)) and not isinstance(
            value, NonTensorData
        ):
            out[key] = value
    return out


def ignored_batch_dims(
    op: str,
    data: Mapping[Any, Any],
    auto_batch_size: bool | None,
    batch_dims: int | None,
    batch_size: BatchSizeLike,
) -> int | None:
    """``batch_dims`` as the peer 0.15 takes it in ``from_tuple``, ``from_namedtuple``
    and ``from_any`` (of a mapping, tuple or dataclass instance): ignored (``None``
    returned) without ``auto_batch_size``, with its ``FutureWarning`` where that changes
    the result (its 0.17 turns ``auto_batch_size`` on, as ``from_dict`` does already)."""
    if batch_dims is None or auto_batch_size:
        return batch_dims
    if batch_size is None and not from_dict(data, batch_dims=batch_dims).batch_size:
        return None
    hint = "drop batch_dims" if batch_size is not None else "pass auto_batch_size=True"
    warnings.warn(
        f"{op} ignores batch_dims={batch_dims} without auto_batch_size=True (tensordict "
        f"0.17 will turn auto_batch_size on when batch_dims is given); {hint} to keep "
        "this result unchanged there",
        FutureWarning,
        stacklevel=3,
    )
    return None


def resolve_batch_options(
    where: str,
    batch_size: BatchSizeLike,
    auto_batch_size: bool | None,
    batch_dims: int | None,
    *,
    names: Sequence[DimName] | None = None,
) -> tuple[torch.Size | None, int | None]:
    """``(batch_size, cap)`` for :func:`build` from the peer's three options: ``[]``
    unless one is given (the peer's default), or ``names`` alone, which asks for that
    many dims, inferred (the peer drops the names there).

    Raises:
        BatchSizeError: if both ``batch_size`` and ``batch_dims`` are given, or
            ``batch_dims`` is negative.
    """
    if batch_dims is not None:
        if batch_size is not None:
            msg = f"{where}: pass either batch_size or batch_dims, not both"
            raise BatchSizeError(msg)
        if type(batch_dims) is not int or batch_dims < 0:
            msg = f"{where}: batch_dims must be a non-negative int, got {batch_dims!r}"
            raise BatchSizeError(msg)
        return None, batch_dims
    if batch_size is not None:
        return as_batch_size(batch_size), None
    if names is not None and auto_batch_size is None:
        return None, len(names)
    if not auto_batch_size:  # the peer's default (0.15): no batch dims unless asked
        return torch.Size([]), None
    return None, None  # inferred: the largest leading shape the values share


# --- constructors -------------------------------------------------------------------------


_C = TypeVar("_C", bound=TensorCollection)


@overload
def from_dict(
    input_dict: _C,
    *,
    auto_batch_size: bool | None = None,
    batch_size: BatchSizeLike = None,
    device: DeviceLike = None,
    batch_dims: int | None = None,
    names: Sequence[DimName] | None = None,
) -> _C: ...


@overload
def from_dict(
    input_dict: Mapping[Any, Any],
    *,
    auto_batch_size: bool | None = None,
    batch_size: BatchSizeLike = None,
    device: DeviceLike = None,
    batch_dims: int | None = None,
    names: Sequence[DimName] | None = None,
) -> TensorDict: ...


def from_dict(
    input_dict: Mapping[Any, Any] | TensorCollection,
    *,
    auto_batch_size: bool | None = None,
    batch_size: BatchSizeLike = None,
    device: DeviceLike = None,
    batch_dims: int | None = None,
    names: Sequence[DimName] | None = None,
) -> TensorCollection:
    """A TensorDict from a (nested) dict; nested dicts become nested TensorDicts.
    A collection (TensorDict, record, lazy stack...) is returned as it is, with its own
    batch size and class, as the peer's ``from_dict`` does (the keywords are not used),
    so code that normalizes "a dict or a TensorDict" keeps the batch size it had.

    Tensors are kept as they are (not copied, unless moved to ``device``); numbers, numpy
    arrays and lists of numbers become tensors; a list of other values is a
    ``NonTensorStack`` with one value per element, as ``TensorDict(...)`` stores it (so
    ``to_dict()`` round-trips); other values (strings, ``None``, objects) become
    ``NonTensorData`` Python values, and so does a number under a ``batch_size`` with
    dims (as the peer reads it). Keys may be tuples (nested keys).

    Args:
        input_dict: a mapping, or a collection (returned as it is).
        auto_batch_size: infer each node's batch size: the largest leading shape its
            tensors and nested collections share.
        batch_size: the batch size of the result and of every nested dict.
        device: moves every tensor there; the result's device.
        batch_dims: infer as ``auto_batch_size`` does, keeping at most this many dims.
        names: names of the result's batch dims (nested dicts share them); given alone,
            that many dims are inferred.

    With none of ``batch_size``, ``auto_batch_size``, ``batch_dims`` and ``names``, the
    batch size is ``[]``, as the peer's (0.15) default.

    Raises:
        BatchSizeError: if a value does not start with ``batch_size``, or if both
            ``batch_size`` and ``batch_dims`` are given.

    Example:
        >>> data = {"obs": torch.zeros(4, 3), "next": {"r": torch.zeros(4)}}
        >>> from_dict(data).batch_size
        torch.Size([])
        >>> td = from_dict(data, auto_batch_size=True)
        >>> td.batch_size, td["next"].batch_size
        (torch.Size([4]), torch.Size([4]))
    """
    if isinstance(input_dict, TensorCollection):
        return input_dict
    tree = normalize(input_dict, "from_dict")
    return _from_tree(tree, auto_batch_size, batch_size, device, batch_dims, names)


def collection_from_dict(
    cls: Any,
    input_dict: Mapping[Any, Any] | TensorCollection,
    *,
    auto_batch_size: bool | None = None,
    batch_size: BatchSizeLike = None,
    device: DeviceLike = None,
    batch_dims: int | None = None,
    names: Sequence[DimName] | None = None,
) -> Any:
    """``cls.from_dict(input_dict, ...)`` of a collection class (records have their own):
    :func:`from_dict` in ``cls``'s kind; a collection is returned as it is, as the
    peer's (``TensorDict.from_dict(rec)`` is ``rec``)."""
    if isinstance(input_dict, TensorCollection):
        return input_dict
    built = from_dict(
        input_dict,
        auto_batch_size=auto_batch_size,
        batch_size=batch_size,
        device=device,
        batch_dims=batch_dims,
        names=names,
    )
    return cls._from_plain(built)


def _from_tree(
    tree: Tree,
    auto_batch_size: bool | None,
    batch_size: BatchSizeLike,
    device: DeviceLike,
    batch_dims: int | None,
    names: Sequence[DimName] | None,
) -> TensorDict:
    batch, cap = resolve_batch_options(
        "from_dict", batch_size, auto_batch_size, batch_dims, names=names
    )
    out = build(tree, batch, cap, None if device is None else as_device(device))
    if names is not None:
        out.names = names
    return out


def from_dict_instance(
    template: TensorCollection,
    input_dict: Mapping[Any, Any],
    *,
    auto_batch_size: bool | None = None,
    batch_size: BatchSizeLike = None,
    device: DeviceLike = None,
    batch_dims: int | None = None,
    names: Sequence[DimName] | None = None,
) -> TensorDict:
    """``template.from_dict_instance(input_dict, ...)``: :func:`from_dict` (a number is a
    0-dim tensor, as the peer's reads it), then each
    nested TensorDict built where ``template`` holds a record becomes that record's class
    (and nested collections of ``template`` pass their own classes down); a ``None``
    there is a field not set, as ``to_dict`` writes one. A record's gives a record of
    its own class, as the peer's, built by its class's ``from_dict``: its fields that
    hold Python values take the dict's values as the constructor casts them (a
    ``torch.Size``, a tuple, an ``int`` at any batch size), as the peer casts them back to
    the record's types."""
    options: dict[str, Any] = {
        "auto_batch_size": auto_batch_size,
        "batch_size": batch_size,
        "device": device,
        "batch_dims": batch_dims,
    }  # (passed on to the records below the top; ``names`` name the top's dims only)
    given = _records_built(template, input_dict, options)
    if is_record(template):
        return cast(TensorDict, cast(Any, type(template)).from_dict(given, **options, names=names))
    tree = _numbers_as_tensors(normalize(given, "from_dict"))
    td = _typed_like(
        template, _from_tree(tree, auto_batch_size, batch_size, device, batch_dims, names)
    )
    if isinstance(template, TensorDictParams):  # leaves kept as built, as the peer's
        return cast(TensorDict, template._wrap(td, record=None))
    return td


def _records_built(
    template: TensorCollection, input_dict: Mapping[Any, Any], options: dict[str, Any]
) -> dict[Any, Any]:
    """``input_dict`` with each nested mapping where ``template`` holds a record (at any
    depth) built as that record's ``from_dict_instance`` (with the same batch options),
    and the nested mappings where it holds another collection walked the same way."""
    out: dict[Any, Any] = dict(input_dict.items())
    for key, value in out.items():
        if not isinstance(value, Mapping) or not isinstance(key, str):
            continue
        model = template._child(key) if template._has_entry(key) else None
        if not isinstance(model, TensorCollection) or model._is_leaf_node:
            continue
        if is_record(model):
            out[key] = from_dict_instance(model, value, **options)
        else:
            out[key] = _records_built(model, value, options)
    return out


def _numbers_as_tensors(tree: Tree) -> Tree:
    """``tree`` with each number a 0-dim tensor (it must then start with the batch size)."""
    out: Tree = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            value = _numbers_as_tensors(value)
        elif isinstance(value, Scalar):
            value = value.tensor()
        out[key] = value
    return out


def _typed_like(template: TensorCollection, td: TensorDict) -> TensorDict:
    record = is_record(template)
    for key in td._key_names():
        value = td._entry(key)
        if record and isinstance(value, NonTensorData) and value.data is None:
            td._remove_entry(key)  # a field not set: the record's None
            continue
        model = template._child(key) if template._has_entry(key) else None
        if type(value) is not TensorDict or model is None or model._is_leaf_node:
            continue
        typed = _typed_like(model, value)
        td._put(key, cast(Any, type(model))._from_plain(typed) if is_record(model) else typed)
    return td


def fromkeys(keys: Iterable[Any], value: Any = 0) -> TensorDict:
    """A TensorDict (batch size ``[]``) holding ``value`` under each of ``keys``.

    Keys may be nested tuples. Each key gets its own tensor: a tensor ``value`` is
    cloned per key, so writing into one entry never changes another (the peer shares
    one tensor between all keys). A Python value that is not a number is stored as a
    ``NonTensorData``.

    Example:
        >>> fromkeys(["a", ("nested", "b")], 0)["nested", "b"]
        tensor(0)
    """
    pairs: dict[Any, Any] = {}
    given: object = keys
    if not isinstance(given, Iterable):
        msg = f"fromkeys expects an iterable of keys, got {type(keys).__name__} {keys!r:.80}"
        raise EntryTypeError(msg)
    for key in keys:
        pairs[key] = value.clone() if isinstance(value, (torch.Tensor, TensorDictBase)) else value
    # The constructor, as the peer's: a key given twice (``"b"`` and ``("b",)``) is set
    # twice, and the string keys are set before the tuple ones.
    return TensorDict(pairs, batch_size=[])


def is_namedtuple(value: object) -> bool:
    """Whether ``value`` is a namedtuple instance (or a ``torch.return_types`` result)."""
    kind = type(value)
    if not isinstance(value, tuple):
        return False
    return hasattr(kind, "_fields") or kind.__module__ == "torch.return_types"


def _namedtuple_dict(value: Any) -> dict[str, Any]:
    """A namedtuple's fields (a ``torch.return_types`` struct sequence names them in
    ``__match_args__``); nested namedtuples become dicts too."""
    kind = type(value)
    fields: Sequence[str] = (
        getattr(kind, "_fields", None) or getattr(kind, "__match_args__", None) or ()
    )
    if not fields:
        return {}
    out: dict[str, Any] = {}
    for name in fields:
        item = getattr(value, name)
        out[name] = _namedtuple_dict(item) if is_namedtuple(item) else item
    return out


def from_namedtuple(
    named_tuple: Any,
    *,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    device: DeviceLike = None,
    batch_size: BatchSizeLike = None,
) -> TensorDict:
    """A TensorDict from a namedtuple (nested namedtuples become nested TensorDicts);
    fields are converted as by :func:`from_dict`, with the same batch-size options.

    Raises:
        EntryTypeError: if ``named_tuple`` is not a namedtuple.
    """
    if not is_namedtuple(named_tuple):
        msg = (
            f"from_namedtuple expects a namedtuple, got {type(named_tuple).__name__}; use "
            "from_pytree for plain tuples and lists, from_dict for mappings"
        )
        raise EntryTypeError(msg)
    data = _namedtuple_dict(named_tuple)
    return from_dict(
        data,
        auto_batch_size=auto_batch_size,
        batch_dims=ignored_batch_dims(
            "from_namedtuple", data, auto_batch_size, batch_dims, batch_size
        ),
        device=device,
        batch_size=batch_size,
    )


def from_tuple(
    obj: Any,
    *,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    device: DeviceLike = None,
    batch_size: BatchSizeLike = None,
) -> TensorDict:
    """A TensorDict with one entry per item of ``obj``, under the keys ``"0"``, ``"1"``,
    ...; nested tuples (and dicts) nest. Values and batch-size options as :func:`from_dict`
    (``auto_batch_size=False``, the peer's default, gives ``[]``).

    Raises:
        EntryTypeError: if ``obj`` is not a tuple.
    """
    if not isinstance(obj, tuple):
        msg = f"from_tuple expects a tuple, got {type(obj).__name__}; use from_dict for mappings"
        raise EntryTypeError(msg)
    data = _tuple_dict(obj)
    return from_dict(
        data,
        auto_batch_size=auto_batch_size,
        batch_dims=ignored_batch_dims("from_tuple", data, auto_batch_size, batch_dims, batch_size),
        device=device,
        batch_size=batch_size,
    )


def _tuple_dict(value: tuple[Any, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for position, item in enumerate(value):
        if is_namedtuple(item):
            item = _namedtuple_dict(item)
        elif isinstance(item, tuple):
            item = _tuple_dict(item)
        out[str(position)] = item
    return out


def make_tensordict(
    input_dict: Mapping[Any, Any] | None = None,
    batch_size: BatchSizeLike = None,
    device: DeviceLike = None,
    auto_batch_size: bool | None = None,
    **kwargs: Any,
) -> TensorDict:
    """A TensorDict from a dict and/or keyword arguments, as :func:`from_dict` builds it.
    As in the peer, the batch size is ``batch_size`` (default ``[]``), inferred only with
    ``auto_batch_size=True``.

    Raises:
        KeyConflictError: if a key is given both in ``input_dict`` and as a keyword (the
            peer silently drops the keywords).
    """
    source: dict[Any, Any] = dict(input_dict) if input_dict is not None else {}
    clash = sorted(str(key) for key in kwargs if key in source)
    if clash:
        msg = (
            f"make_tensordict: {', '.join(repr(k) for k in clash)} given both in input_dict "
            "and as a keyword argument; pass each key once"
        )
        raise KeyConflictError(msg)
    source.update(kwargs)
    return from_dict(
        source, batch_size=batch_size, device=device, auto_batch_size=bool(auto_batch_size)
    )


def is_tensor_collection(datatype: object) -> bool:
    """Whether ``datatype`` (an object or a type) is a tclass collection: a TensorDict, a
    lazy stack, a tensorclass (class or instance) or a non-tensor node."""
    if isinstance(datatype, type):
        return issubclass(datatype, TensorCollection)
    return isinstance(datatype, TensorCollection)


# --- the way back -------------------------------------------------------------------------


def to_dict(
    collection: TensorCollection,
    convert_tensors: bool | Literal["numpy"],
    tolist_first: bool = False,
    retain_none: bool = True,
) -> dict[str, Any]:
    """Nested plain dicts: tensors (nested lists with ``convert_tensors``, numpy arrays
    with ``"numpy"``), Python values
    (a per-element stack as nested lists), nested collections as dicts (with
    ``tolist_first``, one with batch dims as its ``tolist()``: a list of dicts; nested
    records list their absent fields as ``None`` if ``retain_none``; with ``tolist_first``
    a Python value with batch dims is its ``tolist()`` too, one value per element; without
    ``retain_none``, a ``None`` Python value is left out too, as the peer does).

    Raises:
        HeterogeneousEntryError: a lazy stack whose members hold different keys (the
            keys only some hold would be lost), as the peer refuses it.
    """
    exclusive = collection._repr_exclusive()  # a lazy stack's keys not every member has
    if exclusive is not None and any(exclusive):
        keys = sorted({key for member in exclusive for key, _ in member})
        msg = (
            f"to_dict() of a lazy stack whose members hold different keys would lose the "
            f"keys only some members hold ({keys}); read them member by member "
            "(lazy.tensordicts), or set them in every member first"
        )
        raise HeterogeneousEntryError(msg)
    out: dict[str, Any] = {}
    for key, value in collection._items():
        if isinstance(value, _NonTensorNode):
            read = unlinked(value._read())  # a per-element stack as plain nested lists
            if tolist_first and value.batch_dims:  # one value per element, as the peer's
                read = unlinked(value.tolist())
            if retain_none or not _holds_none(value, read):  # left out, as the peer
                out[key] = read
        elif isinstance(value, TensorCollection) and tolist_first and value.batch_dims:
            out[key] = value.tolist(convert_tensors=convert_tensors)
        elif isinstance(value, TensorCollection):
            out[key] = value.to_dict(
                retain_none=retain_none, convert_tensors=convert_tensors, tolist_first=tolist_first
            )
        else:
            out[key] = _converted(value, convert_tensors)
    return out


def _holds_none(node: _NonTensorNode, read: Any) -> bool:
    """Whether a Python value node (``read``: its values) holds ``None``, as the peer's
    ``to_dict(retain_none=False)`` reads it (``holds_none``)."""
    return holds_none(read, node.batch_size.numel(), node.data)


def _converted(tensor: torch.Tensor, convert: bool | Literal["numpy"]) -> Any:
    if convert == "numpy":
        return tensor.detach().cpu().numpy()
    return tensor.tolist() if convert else tensor


def _dict_as_namedtuple(value: Any) -> Any:
    """A Python value as ``to_namedtuple`` gives it: a dict whose keys can all be field
    names as a ``GenericDict`` namedtuple (its dicts too), as the peer's, which converts
    every dict of its ``to_dict()``; any other value (a copy of the dict left alone)."""
    if not isinstance(value, dict) or not all(
        isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key) for key in value
    ):
        return value
    return _generic_dict({key: _dict_as_namedtuple(item) for key, item in value.items()})


def _generic_dict(values: dict[str, Any]) -> Any:
    """``values`` as a ``GenericDict`` namedtuple (its fields the keys, in order).

    Raises:
        ValueError: for a key that cannot be a field name.
    """
    make_class: Any = collections.namedtuple  # a class built at run time, not a static one
    return make_class("GenericDict", list(values))(**values)


def to_namedtuple(collection: TensorCollection, dest_cls: Callable[..., Any] | None) -> Any:
    """The collection as a namedtuple (``dest_cls``, or a generated ``GenericDict``);
    nested collections become nested namedtuples, Python values stay values (a ``None``
    value is left out, as a record's absent field).

    Raises:
        NamedTupleKeyError: (an ``InvalidKeyError`` and ``ValueError``) for a key that
            cannot be a namedtuple field name.
    """
    values: dict[str, Any] = {}
    for key, value in collection._items():
        if isinstance(value, _NonTensorNode):
            read = unlinked(value._read())
            if not _holds_none(value, read):  # left out, as the peer's to_dict(retain_none=False)
                values[key] = _dict_as_namedtuple(read)
        elif isinstance(value, TensorCollection):
            values[key] = to_namedtuple(value, None)
        else:
            values[key] = value
    if dest_cls is not None:
        return dest_cls(**values)
    try:
        return _generic_dict(values)
    except ValueError as error:
        msg = (
            f"to_namedtuple: the keys {list(values)!r} cannot all be namedtuple field "
            f"names ({error}); rename them with rename_key_"
        )
        raise NamedTupleKeyError(msg) from None


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

INTEROP.from_dict = from_dict
INTEROP.collection_from_dict = collection_from_dict
INTEROP.from_dict_instance = from_dict_instance
INTEROP.from_namedtuple = from_namedtuple
INTEROP.from_tuple = from_tuple
INTEROP.fromkeys = fromkeys
INTEROP.to_dict = to_dict
INTEROP.to_namedtuple = to_namedtuple
