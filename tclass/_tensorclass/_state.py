"""``state_dict`` / ``load_state_dict`` for records, in the form ``nn.Module`` uses.

The state dict maps dotted keys (``"inner.x"``) to tensors; everything else a record
holds (Python values, the batch size, the device, the class) goes in
``state_dict._metadata[""]``, where ``nn.Module`` keeps its own extras, so the dict can be
handed to ``torch.save`` or merged into a module's state dict.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch

from tclass._collection import TensorCollection
from tclass._nontensor import NonTensorData, _NonTensorNode
from tclass.errors import KeyNotFoundError

if TYPE_CHECKING:
    from tclass._tensorclass._record import TensorClass

__all__ = ["load_record_state_dict", "record_state_dict"]


def record_state_dict(
    record: TensorClass, destination: dict[str, Any] | None, prefix: str, keep_vars: bool
) -> OrderedDict[str, Any]:
    out: OrderedDict[str, Any] = OrderedDict() if destination is None else destination  # type: ignore[assignment]
    values: dict[str, Any] = {}
    for path, value in _leaves(record, ()):
        key = prefix + ".".join(path)
        if isinstance(value, NonTensorData):
            values[key] = value.data
        elif isinstance(value, _NonTensorNode):  # one value per element: keep the node
            values[key] = value
        else:
            out[key] = value if keep_vars else value.detach()
    metadata = getattr(out, "_metadata", None)
    if metadata is None:
        metadata = OrderedDict()
        out._metadata = metadata  # type: ignore[attr-defined]
    metadata[prefix.rstrip(".")] = {
        "batch_size": list(record.batch_size),
        "device": None if record.device is None else str(record.device),
        "_type": f"{type(record).__module__}:{type(record).__qualname__}",
        "_non_tensor": values,
    }
    return out


def _leaves(collection: TensorCollection, path: tuple[str, ...]) -> Any:
    for key, value in collection._items():
        if isinstance(value, TensorCollection) and not isinstance(value, _NonTensorNode):
            yield from _leaves(value, path + (key,))
        else:
            yield path + (key,), value


def load_record_state_dict(
    record: TensorClass, state_dict: Mapping[str, Any], strict: bool, assign: bool
) -> None:
    """Loads tensors in place (or assigns them), then the Python values."""
    metadata = getattr(state_dict, "_metadata", {}).get("", {})
    values: dict[str, Any] = dict(metadata.get("_non_tensor", {}))
    expected = {".".join(path): value for path, value in _leaves(record, ())}
    expected_tensors = {k for k, v in expected.items() if isinstance(v, torch.Tensor)}
    if strict:
        unexpected = sorted(set(state_dict) - expected_tensors - set(values))
        missing = sorted(expected_tensors - set(state_dict))
        if unexpected or missing:
            msg = (
                f"load_state_dict into {type(record).__name__}: unexpected keys {unexpected}, "
                f"missing keys {missing}; pass strict=False to load the keys that match"
            )
            raise KeyNotFoundError(msg)
    with torch.no_grad():
        for key, tensor in state_dict.items():
            target = expected.get(key)
            if not isinstance(target, torch.Tensor):
                continue  # only possible with strict=False: a key this record lacks
            path = tuple(key.split("."))
            if assign:
                record.set(path, tensor)
            else:
                target.copy_(tensor)
    for key, value in values.items():
        record.set(tuple(key.split(".")), value)
