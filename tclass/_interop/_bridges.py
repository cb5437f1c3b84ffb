"""Bridges to other structures: numpy structured arrays and pytrees.

* A structured array is a batch of records: ``from_struct_array`` makes one TensorDict
  entry per field (a nested structured field a nested TensorDict) whose batch size is
  the array's shape; ``to_struct_array`` goes back, each collection's batch dims becoming
  the array's shape and each leaf's feature dims the field's sub-array shape.
* A pytree (dicts, lists, tuples, namedtuples, any ``torch.utils._pytree`` node) becomes
  nested TensorDicts, each remembering its node type in a Python-value entry
  (``_pytree_type``, as the peer) and, when the type and the keys do not say it all (a
  namedtuple, a dict with other keys, any other node), its context (``_pytree_spec``), so
  that ``to_pytree`` rebuilds the same structure. Python leaves stay Python values (the
  peer turns numbers into tensors).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.utils._pytree as pytree

from tclass._base._provided import INTEROP, IO
from tclass._base.implemented._collection import TensorCollection
from tclass._core._batch import BatchSizeLike, as_batch_size
from tclass._core._device import DeviceLike, as_device
from tclass._core._names import DimName
from tclass._engine._lazy._build import lazy_stack, maybe_dense_stack
from tclass._engine._nontensor import NonTensorData, _NonTensorNode, same_value
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._interop._constructors import (
    PyValue,
    Tree,
    build,
    checked,
    from_dict,
    from_namedtuple,
    ignored_batch_dims,
    is_namedtuple,
    resolve_batch_options,
)
from tclass._interop._struct_memory import field_view, shared_array, storage_of_array
from tclass.errors import EntryTypeError, KeyConflictError, TclassError

__all__ = [
    "PYTREE_SPEC",
    "PYTREE_TYPE",
    "from_any",
    "from_list",
    "from_pytree",
    "from_struct_array",
    "to_pytree",
    "to_struct_array",
]

PYTREE_TYPE = "_pytree_type"
PYTREE_SPEC = "_pytree_spec"

# --- numpy structured arrays --------------------------------------------------------------


def from_struct_array(
    struct_array: np.ndarray[Any, Any],
    *,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    device: DeviceLike = None,
    batch_size: BatchSizeLike = None,
) -> TensorDict:
    """A TensorDict with one entry per field of a numpy structured array.

    Numeric and boolean fields become tensors that view the array's memory, as in the
    peer (writes go both ways), when the array is C-contiguous and writable and the
    field's offset is a multiple of its element size; copies otherwise. Nested structured fields
    become nested TensorDicts; text, bytes and object fields become Python values (one
    shared ``NonTensorData`` when every element holds the same value, else a
    ``NonTensorStack`` of one value per element). Each node's batch size is its array's
    shape (a nested field with a sub-array shape adds those dims), unless ``batch_size``
    says otherwise; ``auto_batch_size`` then extends it to the dims every leaf shares (a
    field's sub-array dims included, up to ``batch_dims``), as the peer's. Without
    ``auto_batch_size``, ``batch_dims`` is ignored, as the peer 0.15 ignores it (with its
    ``FutureWarning`` where its 0.17, which turns ``auto_batch_size`` on, would differ).

    Raises:
        EntryTypeError: if ``struct_array`` is not a structured array.
    """
    dtype = getattr(struct_array, "dtype", None)
    if not isinstance(struct_array, np.ndarray) or dtype is None or dtype.names is None:
        msg = (
            f"from_struct_array expects a numpy structured array (a dtype with named "
            f"fields), got {type(struct_array).__name__}"
            + (f" of dtype {dtype}" if dtype is not None else "")
        )
        raise EntryTypeError(msg)
    if batch_dims is not None and not auto_batch_size:  # the peer 0.15 ignores it there
        out = from_struct_array(struct_array, device=device, batch_size=batch_size)
        _warn_ignored_batch_dims(out, batch_dims, batch_size)
        return out
    batch, cap = resolve_batch_options("from_struct_array", batch_size, True, batch_dims)
    shape = struct_array.shape if cap is None else struct_array.shape[:cap]
    root = torch.Size(shape) if batch is None else batch
    dev = None if device is None else as_device(device)
    storage = storage_of_array(struct_array) if dev in (None, torch.device("cpu")) else None
    out = _struct_td(struct_array, root, cap, dev, (), storage)
    if auto_batch_size and batch_size is None:  # the leaves' common dims, as the peer's
        out.auto_batch_size_(batch_dims)
    return out


def _warn_ignored_batch_dims(out: TensorDict, batch_dims: int, batch_size: BatchSizeLike) -> None:
    """The peer's ``FutureWarning`` for ``batch_dims`` without ``auto_batch_size``, where
    its 0.17 (which turns ``auto_batch_size`` on then) would give other batch sizes."""
    if batch_size is None:
        try:
            expected = out.copy().auto_batch_size_(batch_dims=batch_dims)
        except (TclassError, RuntimeError, ValueError):
            expected = None  # (the peer's warning then too)
        if (
            expected is not None
            and expected.batch_size == out.batch_size
            and all(
                expected.get(key).batch_size == value.batch_size
                for key, value in out.items(include_nested=True)
                if isinstance(value, TensorCollection)
            )
        ):
            return
    hint = "drop batch_dims" if batch_size is not None else "pass auto_batch_size=True"
    warnings.warn(
        f"from_struct_array ignores batch_dims={batch_dims} without auto_batch_size=True "
        "(tensordict 0.17 will turn auto_batch_size on when batch_dims is given); "
        f"{hint} to keep this result unchanged there",
        FutureWarning,
        stacklevel=3,
    )


def _struct_td(
    array: np.ndarray[Any, Any],
    batch: torch.Size,
    cap: int | None,
    device: torch.device | None,
    path: tuple[str, ...],
    storage: torch.UntypedStorage | None = None,
) -> TensorDict:
    entries: dict[str, Any] = {}
    for name in array.dtype.names or ():
        field = array[name]
        if field.dtype.names is not None:
            own = torch.Size(field.shape if cap is None else field.shape[:cap])
            nested = own if own[: len(batch)] == batch else batch
            entries[name] = _struct_td(field, nested, cap, device, path + (name,), storage)
        elif field.dtype.kind in "biufc":
            view = None if storage is None else field_view(field, storage)
            if view is not None:
                entries[name] = view
                continue
            if not field.dtype.isnative:
                field = field.astype(field.dtype.newbyteorder("="))
            entries[name] = torch.from_numpy(field.copy(order="C"))  # fresh strides, any ndim
        else:
            entries[name] = _object_stack(field, len(batch))
    return checked(entries, batch, device, path)


def _object_stack(field: np.ndarray[Any, Any], batch_ndim: int) -> _NonTensorNode:
    """The Python values of a text/bytes/object field: one shared ``NonTensorData``
    when every element holds the same value, else one value per element."""
    shape = field.shape[:batch_ndim]
    values = np.empty(shape, dtype=object)
    for index in np.ndindex(*shape):
        element = field[index]
        values[index] = element.tolist() if isinstance(element, np.ndarray) else _python(element)
    flat = list(values.flat)
    if flat and all(same_value(flat[0], value) for value in flat[1:]):
        return NonTensorData._make(flat[0], torch.Size(shape), None)
    return NonTensorStack._from_array(values, None)


def _python(element: Any) -> Any:
    return element.item() if isinstance(element, np.generic) else element


def to_struct_array(collection: TensorCollection) -> np.ndarray[Any, Any]:
    """The collection as a numpy structured array shaped like its batch size.

    When the tensors (two or more) are the fields of one record buffer (a collection
    built by :func:`from_struct_array`), the result views that memory: writes go both
    ways; a lone tensor's array is a copy, as the peer's.
    Otherwise each tensor becomes a field whose sub-array shape is its feature dims
    (detached and copied to the CPU); a nested collection becomes a nested structured
    field (its extra batch dims as the sub-array shape); a string value becomes a text
    field, other Python values object fields.

    Raises:
        EntryTypeError: for a tensor whose dtype numpy has no equivalent (bfloat16,
            float8...), naming the key.
    """
    shared = shared_array(collection)
    if shared is not None:
        return shared
    batch = tuple(collection.batch_size)
    out: np.ndarray[Any, Any] = np.empty(batch, dtype=_struct_dtype(collection, len(batch), ()))
    _fill(out, collection, ())
    return out


def _struct_dtype(
    collection: TensorCollection, parent_dims: int, path: tuple[str, ...]
) -> np.dtype[Any]:
    fields: list[Any] = []
    for key, value in collection._items():
        if isinstance(value, _NonTensorNode):
            fields.append((key, _value_dtype(value), tuple(value.batch_size[parent_dims:])))
        elif isinstance(value, TensorCollection):
            nested = _struct_dtype(value, len(value.batch_size), path + (key,))
            fields.append((key, nested, tuple(value.batch_size[parent_dims:])))
        else:
            fields.append(
                (key, _numpy_dtype(value, path + (key,)), tuple(value.shape[parent_dims:]))
            )
    return np.dtype(fields)


def _numpy_dtype(tensor: torch.Tensor, path: tuple[str, ...]) -> np.dtype[Any]:
    try:
        return torch.empty((), dtype=tensor.dtype).numpy().dtype
    except TypeError:
        msg = (
            f"to_struct_array: the entry {path!r} has dtype {tensor.dtype}, which numpy "
            "cannot hold; cast it first (e.g. td.set(key, td.get(key).float()))"
        )
        raise EntryTypeError(msg) from None


def _value_dtype(node: _NonTensorNode) -> np.dtype[Any]:
    """A text field when every value is a string (bytes: a bytes field), else objects. A
    text field holds at least 10 characters, as the peer's, so that a longer string
    written into it later is not cut to the longest one it started with."""
    values = [node.data] if isinstance(node, NonTensorData) else list(node._as_array().flat)
    for kind, code, least in ((str, "U", 10), (bytes, "S", 1)):
        if values and all(type(value) is kind for value in values):
            return np.dtype(f"{code}{max(least, *(len(value) for value in values))}")
    return np.dtype(object)


def _fill(out: np.ndarray[Any, Any], collection: TensorCollection, path: tuple[str, ...]) -> None:
    for key, value in collection._items():
        field = out[key]
        if isinstance(value, NonTensorData):
            if field.dtype == object:
                for index in np.ndindex(*field.shape):
                    field[index] = value.data
            else:
                field[...] = value.data
        elif isinstance(value, _NonTensorNode):
            array = value._as_array()
            for index in np.ndindex(*field.shape):
                field[index] = array[index]
        elif isinstance(value, TensorCollection):
            _fill(field, value, path + (key,))
        else:
            field[...] = value.detach().cpu().numpy()


# --- pytrees ------------------------------------------------------------------------------


def from_pytree(
    tree: Any,
    *,
    batch_size: BatchSizeLike = None,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    markers: bool = True,
) -> TensorDict:
    """A TensorDict from a pytree: each container node (dict, list, tuple, namedtuple,
    any registered ``torch.utils._pytree`` node) becomes a nested TensorDict whose keys
    are the children's keys (list positions as ``"0"``, ``"1"``...).

    Tensors and tensor collections are kept as they are; ``None`` and other Python
    leaves become ``NonTensorData`` values. With ``markers`` (the default) each node
    records its type under ``_pytree_type`` and, unless it is a list, a tuple or a dict
    with string keys, its context under ``_pytree_spec``, so that :func:`to_pytree`
    gives back the same structure. Batch sizes as in ``from_dict``.

    A tensor collection at the top is returned as it is (the peer's: ``to_pytree()`` of a
    collection without markers gives the collection itself, so ``from_pytree(td.to_pytree())``
    round-trips).

    Raises:
        EntryTypeError: if ``tree`` is a leaf (a tensor or a Python value) rather than a
            container or a collection.
        KeyConflictError: if a child key is a marker name, or two child keys print the
            same.
    """
    if isinstance(tree, TensorCollection):
        return tree  # type: ignore[return-value]  # as the peer's: what to_pytree() of one gives
    if isinstance(tree, torch.Tensor) or _node_type(tree) is None:
        msg = (
            f"from_pytree expects a container (dict, list, tuple, namedtuple, ...) at the "
            f"top, got a {type(tree).__name__} leaf; wrap it, e.g. from_pytree({{'x': value}})"
        )
        raise EntryTypeError(msg)
    batch, cap = resolve_batch_options("from_pytree", batch_size, auto_batch_size, batch_dims)
    return build(_pytree_tree(tree, markers, ()), batch, cap, None)


def collection_from_pytree(
    cls: Any,
    pytree: Any,
    *,
    batch_size: BatchSizeLike = None,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
) -> Any:
    """``cls.from_pytree(pytree, ...)``: a TensorDict records the structure (markers) so
    that ``to_pytree`` rebuilds it; a tensorclass reads the top node's children as its
    fields. ``pytree`` itself when it already is a ``cls``, and for a TensorDict when it
    is any collection (a lazy stack, a record) or a tensor, as the peer's ``from_pytree``
    returns what ``to_pytree`` gives for those."""
    markers = issubclass(cls, TensorDict)
    if isinstance(pytree, cls) or (
        markers and isinstance(pytree, (TensorCollection, torch.Tensor))
    ):
        return pytree
    built = from_pytree(
        pytree,
        batch_size=batch_size,
        auto_batch_size=auto_batch_size,
        batch_dims=batch_dims,
        markers=markers,
    )
    return cls._from_plain(built)


def _node_type(tree: Any) -> Any:
    if tree is None:
        return None
    node_type = pytree._get_node_type(tree)
    return node_type if node_type in pytree.SUPPORTED_NODES else None


def _pytree_tree(tree: Any, markers: bool, path: tuple[str, ...]) -> Tree:
    node_type = _node_type(tree)
    handler = pytree.SUPPORTED_NODES[node_type]
    children, context = handler.flatten_fn(tree)
    names = _child_names(handler, tree, len(children))
    out: Tree = {}
    for name, child in zip(names, children):
        if markers and name in (PYTREE_TYPE, PYTREE_SPEC):
            msg = f"from_pytree: the key {name!r} at {path!r} is reserved for the structure markers"
            raise KeyConflictError(msg)
        if isinstance(child, (torch.Tensor, TensorCollection)):
            out[name] = child
        elif _node_type(child) is not None:
            out[name] = _pytree_tree(child, markers, path + (name,))
        else:
            out[name] = PyValue(child)
    if markers:
        out[PYTREE_TYPE] = PyValue(node_type)
        if _implied_context(node_type, names) != (context,):
            out[PYTREE_SPEC] = PyValue({"context": context, "keys": names})
    return out


def _implied_context(node_type: Any, names: Sequence[str]) -> tuple[Any] | None:
    """The pytree context of a node of ``node_type`` with children ``names``, when the
    type and the names say it all (a list, a tuple, a dict with string keys): such a node
    records only its ``_pytree_type``, as the peer's do. None otherwise."""
    if node_type in (list, tuple):
        return (None,)
    if node_type in (dict, OrderedDict):
        return (list(names),)
    return None


def _child_names(handler: Any, tree: Any, count: int) -> list[str]:
    """A string name per child: its dict key, attribute name or position."""
    names: list[str] = []
    if handler.flatten_with_keys_fn is not None:
        for key, _ in handler.flatten_with_keys_fn(tree)[0]:
            if isinstance(key, pytree.MappingKey) and isinstance(key.key, str):
                names.append(key.key)
            elif isinstance(key, pytree.GetAttrKey):
                names.append(key.name)
            elif isinstance(key, pytree.SequenceKey):
                names.append(str(key.idx))
            else:
                names.append(str(len(names)))
    if len(names) != count or len(set(names)) != count:
        names = [str(position) for position in range(count)]
    return names


def to_pytree(collection: TensorCollection) -> Any:
    """The pytree :func:`from_pytree` read (a collection without markers is itself a
    pytree node and comes back as it is)."""
    node_type = collection.get(PYTREE_TYPE, None)
    spec = collection.get(PYTREE_SPEC, None)
    if not isinstance(node_type, NonTensorData) or node_type.data not in pytree.SUPPORTED_NODES:
        return collection
    if isinstance(spec, NonTensorData):
        info: Mapping[str, Any] = spec.data
        names, context = info["keys"], info["context"]
    else:  # a list, tuple or dict: the entries say it all
        names = [key for key in collection._key_names() if key != PYTREE_TYPE]
        if node_type.data in (list, tuple):
            names = [str(position) for position in range(len(names))]
        implied = _implied_context(node_type.data, names)
        if implied is None:
            return collection
        context = implied[0]
    children = [_pytree_child(collection._entry(name)) for name in names]
    return pytree.SUPPORTED_NODES[node_type.data].unflatten_fn(children, context)


def _pytree_child(value: Any) -> Any:
    if isinstance(value, _NonTensorNode):
        return value._read()
    if isinstance(value, TensorCollection):
        return to_pytree(value)
    return value


# --- any structure, and lists of them -------------------------------------------------------


def from_any(
    obj: Any,
    *,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    device: DeviceLike = None,
    batch_size: BatchSizeLike = None,
) -> Any:
    """A collection from whatever ``obj`` is, as the peer's ``from_any`` dispatches: a
    collection or a tensor is returned as it is; a mapping (or a dataclass instance, its
    fields as a mapping) goes through :func:`from_dict`, a namedtuple
    :func:`from_namedtuple`, a tuple :func:`from_tuple`, a numpy structured array
    :func:`from_struct_array`, an open ``h5py.File``, ``h5py.Group`` or ``zarr.Group``
    a ``PersistentTensorDict`` over it (the io layer's reader, ``IO.open_group``), a
    pandas ``DataFrame`` :func:`from_pandas` (``IO.read_frame``); a
    list of numbers becomes a tensor, another list a ``NonTensorStack`` of its items.
    Inside a mapping or tuple, dataclass instances and tuples nest the same way (a nested
    collection, the items under ``"0"``, ``"1"``...). Any other object (``None``, a
    number, a string, a plain array...) is returned as it is, as the peer's.

    Raises:
        EntryTypeError: for a dataclass type (an instance is converted).
    """
    options: dict[str, Any] = {
        "auto_batch_size": auto_batch_size,
        "batch_dims": batch_dims,
        "device": device,
        "batch_size": batch_size,
    }
    if isinstance(obj, (TensorCollection, torch.Tensor)):
        return obj
    opened: TensorCollection | None = IO.open_group(obj)
    if opened is None:
        opened = IO.read_frame(obj, options)  # type: ignore[arg-type]
    if opened is not None:
        return opened
    if is_namedtuple(obj):
        return from_namedtuple(obj, **options)
    if isinstance(obj, (Mapping, tuple)) or (
        dataclasses.is_dataclass(obj) and not isinstance(obj, type)
    ):
        data = _structured(obj)
        if batch_size is None or not isinstance(obj, Mapping):  # (from_dict refuses both)
            options["batch_dims"] = ignored_batch_dims(
                "from_any", data, auto_batch_size, batch_dims, batch_size
            )
        return from_dict(data, **options)
    if isinstance(obj, np.ndarray) and obj.dtype.names is not None:
        return from_struct_array(obj, **options)
    if isinstance(obj, list):
        try:  # numbers (nested lists of them) make a tensor, as in the peer
            return torch.tensor(obj)
        except (TypeError, ValueError, RuntimeError):
            return NonTensorStack.from_list(obj, device)
    if isinstance(obj, type) and dataclasses.is_dataclass(obj):
        msg = (
            f"from_any: got the dataclass type {obj.__name__}; pass an instance, or "
            "convert the type with from_dataclass"
        )
        raise EntryTypeError(msg)
    return obj  # anything else as it is, as the peer's (its nested values too)


def _structured(value: Any) -> Any:
    """``value`` as :func:`from_any` nests it: mappings walked, dataclass instances as
    mappings of their fields, tuples (not namedtuples, which from_dict takes) as mappings
    of their items under ``"0"``, ``"1"``...; anything else as it is."""
    if isinstance(value, TensorCollection):
        return value  # (lazy stacks are registered as Mappings too)
    opened = IO.open_group(value)
    if opened is not None:
        return opened
    if isinstance(value, Mapping):
        return {key: _structured(item) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _structured(dataclass_as_dict(value))
    if isinstance(value, tuple) and not is_namedtuple(value):
        return {str(position): _structured(item) for position, item in enumerate(value)}
    return value


def dataclass_as_dict(obj: Any) -> dict[str, Any]:
    """The fields of a dataclass instance by name, nested dataclass instances as dicts
    (the values themselves, not copies); nested records kept, as ``from_any`` keeps
    collections (the peer's ``from_dataclass`` reads each field with it)."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        is_nested = (
            dataclasses.is_dataclass(value)
            and not isinstance(value, type)
            and not isinstance(value, TensorCollection)
        )
        out[field.name] = dataclass_as_dict(value) if is_nested else value
    return out


def from_list(
    input: Sequence[Any],
    *,
    auto_batch_size: bool | None = None,
    batch_size: BatchSizeLike = None,
    device: DeviceLike = None,
    batch_dims: int | None = None,
    names: Sequence[DimName] | None = None,
    lazy: bool | None = None,
    make: Callable[..., Any] | None = None,
) -> Any:
    """The stack of one collection per item of ``input`` (mappings go through
    :func:`from_dict`, or ``make``; collections are kept): dense when the items agree,
    lazy when they differ in keys or shapes (or when ``lazy=True``).

    ``batch_size`` is the result's (each item gets ``batch_size[1:]``); without it, each
    item's batch size is ``[]``, or inferred with ``auto_batch_size`` / ``batch_dims``.

    Raises:
        StackError: for an empty list, or items of different batch sizes.
    """
    size = None if batch_size is None else as_batch_size(batch_size)
    build_item = make or from_dict
    items: list[Any] = [
        item
        if isinstance(item, TensorCollection)
        else build_item(
            item,
            auto_batch_size=bool(auto_batch_size) or batch_dims is not None,
            batch_size=None if size is None else size[1:],
            device=device,
            batch_dims=None if batch_dims is None else max(batch_dims - 1, 0),
        )
        for item in input
    ]
    out = lazy_stack(items) if lazy else maybe_dense_stack(items)
    if names is not None:
        out.names = names
    return out


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

INTEROP.collection_from_pytree = collection_from_pytree
INTEROP.from_any = from_any
INTEROP.from_list = from_list
INTEROP.from_struct_array = from_struct_array
INTEROP.to_pytree = to_pytree
INTEROP.to_struct_array = to_struct_array
