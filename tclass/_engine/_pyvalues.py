"""What a collection stores for a value that is not a tensor, a collection or a mapping.

The peer's rules, which tensordict code relies on:

* Python numbers (``bool``, ``int``, ``float``), numpy numbers and numeric numpy arrays
  become tensors (a number in a batched collection is then a batch-size mismatch);
* a list becomes what its items make (with ``list_to_stack()``, the default): numbers a
  tensor, nested lists of numbers one tensor, tensors of one shape their stack, tensor
  collections their stack, anything else (strings, mixed values, ragged tensors) a
  ``NonTensorStack`` with one value per item; an empty list an empty tensor. With
  ``set_list_to_stack(False)`` a list of numbers still becomes a tensor and any other
  list is one ``NonTensorData`` value;
* a tuple of numbers becomes a tensor, any other tuple one value;
* (a structured numpy array becomes a TensorDict of its fields: the TensorDict does it);
* everything else (``str``, ``bytes``, ``None``, ``complex``, sets, objects, numpy
  arrays of strings or objects) is one ``NonTensorData`` value spanning the batch.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import numpy as np
import torch

from tclass._base._provided import ENGINE
from tclass._base.implemented._collection import TensorCollection
from tclass._core._linked_list import unlinked
from tclass._core._options import OPTIONS
from tclass._engine._nontensor import NonTensorData, _NonTensorNode
from tclass._engine._nontensor_stack import NonTensorStack
from tclass.errors import KeyNotFoundError

__all__ = ["get_non_tensor", "set_non_tensor", "stored_value"]

_Tensor = torch.Tensor
_NUMERIC = frozenset("biufc")
_NO_DIMS = torch.Size([])
C = TypeVar("C", bound=TensorCollection)
_ABSENT: Any = object()  # numpy kinds torch.as_tensor takes (complex arrays too)


def stored_value(value: Any, batch: torch.Size, device: torch.device | None) -> Any:
    """``value`` (not a tensor, collection, mapping or structured array) as a collection
    stores it; a tensor or collection is moved to ``device``, a node spans ``batch``."""
    if isinstance(value, (bool, int, float, np.bool_)) or (
        isinstance(value, np.number) and value.dtype.kind in _NUMERIC
    ):
        return torch.as_tensor(
            value.item() if isinstance(value, np.bool_) else value, device=device
        )
    if isinstance(value, np.ndarray):
        return _array(value, batch, device)
    if isinstance(value, list):
        value = unlinked(value)  # td[key] of a stack, stored as its values
        if OPTIONS.list_to_stack is not False:
            return _on_device(_list_value(value), device)
        return _numeric_or_value(value, batch, device)
    if isinstance(value, tuple):
        return _numeric_or_value(value, batch, device)
    return NonTensorData._make(value, batch, device)


def _array(value: np.ndarray[Any, Any], batch: torch.Size, device: torch.device | None) -> Any:
    if value.dtype.kind not in _NUMERIC:
        return NonTensorData._make(value, batch, device)
    if not value.flags.writeable:  # torch cannot share a read-only array
        value = value.copy()
    try:
        return torch.as_tensor(value, device=device)
    except (TypeError, ValueError):  # negative strides, foreign byte order: copy it
        return torch.as_tensor(
            value.astype(value.dtype.newbyteorder("="), order="C"), device=device
        )


def _numeric_or_value(value: Any, batch: torch.Size, device: torch.device | None) -> Any:
    try:
        array = np.asarray(value)
    except ValueError:  # ragged
        return NonTensorData._make(value, batch, device)
    if array.dtype.kind in _NUMERIC and array.dtype.kind != "c":
        return torch.as_tensor(array, device=device)
    return NonTensorData._make(value, batch, device)


def _on_device(stored: Any, device: torch.device | None) -> Any:
    if device is None or stored.device == device:
        return stored
    return stored.to(device)


def _list_value(items: list[Any]) -> Any:
    """A list as the peer stores it (see the module docstring)."""
    if not items:
        return torch.tensor(items)
    if all(isinstance(item, list) for item in items):
        items = [_list_value(item) for item in items]
        if any(isinstance(item, NonTensorStack) for item in items):  # [["a", "b"], []]
            items = [_no_values(item.shape) if _is_empty(item) else item for item in items]
    if all(isinstance(item, (bool, int, float)) for item in items):
        return torch.tensor(items)
    if all(isinstance(item, _Tensor) for item in items):
        if len({item.shape for item in items}) == 1:
            return torch.stack(items)
        return NonTensorStack._from_values(items)
    if all(isinstance(item, TensorCollection) for item in items):
        return torch.stack(items)
    return NonTensorStack._from_values(items)


def _is_empty(item: Any) -> bool:
    """Whether ``item`` is the empty tensor an empty list (or lists of them) makes."""
    return isinstance(item, _Tensor) and not item.numel()


def _no_values(shape: torch.Size) -> NonTensorStack:
    """The stack of Python values of ``shape`` (its last dim 0) an empty list makes beside
    lists of values: no tensor among them (the peer raises there or keeps the lists)."""
    if len(shape) == 1:
        return NonTensorStack._from_values([])
    rows: Any = [_no_values(shape[1:]) for _ in range(shape[0])]  # torch.stack takes them
    return cast(NonTensorStack, torch.stack(rows))


def set_non_tensor(collection: C, key: Any, value: Any) -> C:
    """``collection.set_non_tensor(key, value)``: ``value`` as one ``NonTensorData``."""
    node = value if isinstance(value, NonTensorData) else NonTensorData._make(value, _NO_DIMS, None)
    return collection.set(key, node)  # the node spans the batch of the collection holding it


def get_non_tensor(collection: Any, key: Any, default: Any) -> Any:
    """``collection.get_non_tensor(key, default)``: the value stored under ``key``."""
    node = collection.get(key, _ABSENT)
    if node is _ABSENT:
        if default is KeyNotFoundError:
            raise collection._missing_key(key)
        return default
    if not isinstance(node, _NonTensorNode):
        return node
    value = node._read()
    if value is None and isinstance(node, NonTensorData) and node.batch_dims:
        return node.tolist(as_linked_list=True)  # per element, as the peer's
    return value


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

ENGINE.get_non_tensor = get_non_tensor
ENGINE.set_non_tensor = set_non_tensor
ENGINE.stored_value = stored_value
