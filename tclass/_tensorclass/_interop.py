"""How tensorclasses meet the rest of PyTorch: pytree registration and DataLoader collation.

``DataLoader`` calls a dataset's ``__getitems__`` with a list of indices and passes the
result to its ``collate_fn``. The collate registered here (in torch's
``default_collate_fn_map``, for every tensor collection) returns a batch fetched that way
unchanged, and stacks a list of single records into one record otherwise: densely where
their keys and shapes agree, lazily where they differ (episodes of different lengths), as
the peer's collate.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data._utils import collate as _collate_module

from tclass._base.implemented._collection import TensorCollection
from tclass._engine._lazy._build import maybe_dense_stack
from tclass._interop._pytree import register_collection
from tclass.errors import StackTypeError

__all__ = ["collate", "register_pytree"]


def register_pytree(cls: type) -> None:
    """Registers a tensorclass with ``torch.utils._pytree`` (each class once)."""
    register_collection(cls, cls._from_tensordict_unchecked)  # type: ignore[attr-defined]


def collate(batch: Any, *, collate_fn_map: Any = None) -> Any:
    """A batch already fetched as one collection stays as is; a list of collections of
    one type is stacked along a new first dim (lazily where their shapes or keys differ,
    as the peer's ``maybe_dense_stack``)."""
    if isinstance(batch, TensorCollection):
        return batch
    members = list(batch)
    if len({type(m) for m in members}) > 1:
        # mixed kinds follow torch.stack's rules (a StackTypeError, as the peer's TypeError)
        return torch.stack(members)
    dims = sorted({m.batch_dims for m in members})
    if len(dims) > 1:
        msg = (
            f"collate: the samples have different numbers of batch dims {dims}; a batch "
            "stacks samples of one batch dim count (index the dataset's rows alike)"
        )
        raise StackTypeError(msg)  # a TypeError, as the peer's collate raises
    return maybe_dense_stack(members)


_collate_module.default_collate_fn_map.setdefault(TensorCollection, collate)
