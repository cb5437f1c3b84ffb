"""``TensorAttrs`` and ``attrs()``: the device, dtype and shape of each tensor of a
collection, as a collection of records that ``to()`` takes to move or cast another
collection leaf by leaf (when its leaves are on several devices or of several dtypes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from typing_extensions import Self

from tclass._base._provided import TENSORCLASS
from tclass._base.implemented._collection import TensorCollection
from tclass._engine._nontensor import NonTensorData
from tclass._engine._td import TensorDict
from tclass._tensorclass._record import TensorClass
from tclass.errors import ArgumentError

__all__ = ["TensorAttrs", "attrs_of"]

_FIELDS = ("device", "dtype", "shape")


class TensorAttrs(TensorClass):
    """The device, dtype and shape of one tensor (``None`` for those not recorded), as
    :meth:`~tclass.TensorDict.attrs` gives them; ``td.to(attrs)`` moves and casts each
    tensor of ``td`` to the device and dtype under its key. The fields start with
    ``tgt_`` so that they do not hide the record's own ``device`` and ``shape``."""

    _is_tensor_attrs: ClassVar[bool] = True  # what ``to()`` recognises (see CastOps)

    tgt_device: Any = None
    tgt_dtype: Any = None
    tgt_shape: Any = None

    @classmethod
    def from_tensor(cls, tensor: torch.Tensor, *, fields: Sequence[str] = _FIELDS) -> Self:
        """The attributes ``fields`` (among ``"device"``, ``"dtype"``, ``"shape"``) of
        ``tensor``; the others are ``None``.

        Raises:
            ArgumentError: for an unknown field.
        """
        _check_fields(fields)
        return cls(
            tgt_device=tensor.device if "device" in fields else None,
            tgt_dtype=tensor.dtype if "dtype" in fields else None,
            tgt_shape=tensor.shape if "shape" in fields else None,
        )


def _check_fields(fields: Sequence[str]) -> None:
    unknown = [field for field in fields if field not in _FIELDS]
    if unknown:
        msg = f"attrs: unknown fields {unknown}; choose among {list(_FIELDS)}"
        raise ArgumentError(msg)


def attrs_of(node: TensorCollection, fields: Sequence[str]) -> TensorDict:
    """``node.attrs(fields=...)``: a TensorDict (batch size ``[]``, no device) of one
    :class:`TensorAttrs` per tensor of ``node``, nested alike; Python values kept (a
    node of one value over no batch dims, as the result's, as the peer's)."""
    _check_fields(fields)
    tensors = dict(node.items(include_nested=True, leaves_only=True))
    values = dict(node.non_tensor_items(include_nested=True))  # type: ignore[attr-defined]
    out = TensorDict()
    # in the collection's key order, its nested collections kept (empty ones too), as the
    # peer's attrs (an apply over the tree) lists them
    for key in node.keys(include_nested=True):
        if key in tensors:
            out.set(key, TensorAttrs.from_tensor(tensors[key], fields=fields))
        elif key in values:
            out.set(key, _without_batch(values[key]))
        elif out.get(key, None) is None:
            out.set(key, TensorDict())
    return out


def _without_batch(value: Any) -> Any:
    """A ``NonTensorData`` / ``MetaData`` of batch dims as one of none (the result's
    batch size), holding the same value; anything else as it is (a stack of values keeps
    them, one per element, which the peer's attrs drops: an empty collection there)."""
    if isinstance(value, NonTensorData) and value.batch_size:
        return type(value)(value.data, batch_size=(), device=value.device)
    return value


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

TENSORCLASS.attrs_of = attrs_of
