"""Rules on collection values that other method groups apply: ``is_leaf_nontensor`` (an
``is_leaf`` for ``keys`` / ``items`` / ``values`` that counts Python values as leaves)
and ``unnamed`` (the dim names a comparison's result keeps)."""

from __future__ import annotations

from typing import TypeVar

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core._records import storage_of

__all__ = ["is_leaf_nontensor", "unnamed"]


def is_leaf_nontensor(cls: type) -> bool:
    """An ``is_leaf`` for ``keys``/``items``/``values`` that makes Python values
    (``NonTensorData``, ``NonTensorStack``) leaves along with tensors; collections and
    other types are not leaves."""
    if issubclass(cls, TensorCollection):
        return cls._is_leaf_node
    return issubclass(cls, torch.Tensor)


_C = TypeVar("_C")
_Tensor = torch.Tensor


def unnamed(result: _C, other: object) -> _C:
    """The result of comparing with ``other``: as the peer gives it, without dim names
    (nested ones included) unless ``other`` is a tensor with dims (lined up with the batch
    dims); anything else (``NotImplemented``) as it is. Compared with a tensor with dims,
    a lazy stack's result keeps its members' names but not its stack dims' (nested lazy
    members' too), as the peer's ``lazy_stack`` of its members' results."""
    if not isinstance(result, TensorCollection):
        return result
    if not isinstance(other, TensorCollection) and isinstance(other, torch.Tensor) and other.ndim:
        _stack_dims_unnamed(result)
        return result
    if storage_of(result)._is_lazy or result._dim_names is not None:
        result._rename_all(None)  # (a lazy stack's entries, ragged ones too, are not read)
        return result
    for value in result._entries().values():
        if value.__class__ is not _Tensor and (
            isinstance(value, TensorCollection) and not value._is_leaf_node
        ):  # a nested collection may hold names (else none anywhere: nothing to drop)
            result._rename_all(None)
            break
    return result


def _stack_dims_unnamed(result: TensorCollection) -> None:
    """Drops the names of a (fresh) lazy stack's stack dim and of its lazy members'."""
    storage = storage_of(result)
    if storage._is_lazy:
        for member in storage.tensordicts:
            _stack_dims_unnamed(member)
        storage._assign_names(None)  # (a lazy stack's own: its stack dim's name only)
