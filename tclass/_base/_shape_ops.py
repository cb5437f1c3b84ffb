"""Batch-shape operations: each does to the batch dims what torch does to a tensor's dims.

Every entry keeps its feature dims (the dims after the batch dims) untouched. A nested
collection may have more batch dims than its parent; it is handled by the same call as a
tensor, because it answers the same methods over its own dims.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from typing_extensions import Self

from tclass._base._collection import TensorCollection
from tclass._core import _batch
from tclass.errors import ShapeError

if TYPE_CHECKING:
    from tclass._base._tensordict_base import Value

__all__ = ["ShapeOps"]


class ShapeOps(TensorCollection):
    """reshape, view, flatten, unflatten, squeeze, unsqueeze, permute, transpose,
    expand, split, chunk and unbind over the batch dims."""

    __slots__ = ()

    def reshape(self, *shape: int | Sequence[int]) -> Self:
        """A collection with batch size ``shape`` (one dim may be -1); copies as torch does."""
        batch_size = self.batch_size
        new = _batch.view_shape(_batch.shape_args(shape, "reshape"), batch_size, "reshape")
        if new == batch_size:
            return self._map_batch(_identity, batch_size)
        nb = len(batch_size)
        return self._map_batch(lambda v: v.reshape(new + v.shape[nb:]), new)

    def view(self, *shape: int | Sequence[int] | torch.dtype) -> Self:
        """A view with batch size ``shape``, or with every tensor viewed as a dtype."""
        if len(shape) == 1 and isinstance(shape[0], torch.dtype):
            return self._view_dtype(shape[0])
        batch_size = self.batch_size
        new = _batch.view_shape(_batch.shape_args(shape, "view"), batch_size, "view")
        nb = len(batch_size)
        return self._map_batch(lambda v: v.view(new + v.shape[nb:]), new)

    def _view_dtype(self, dtype: torch.dtype) -> Self:
        batch_size = self.batch_size
        nb = len(batch_size)
        values: dict[str, Value] = {}
        for key, value in self._items():
            out = value.view(dtype)
            if out.shape[:nb] != batch_size:
                msg = (
                    f"view({dtype}) would change the batch dims of {key!r} from "
                    f"{list(value.shape)} to {list(out.shape)}: a dtype of another size "
                    "changes the last dim, which must be a feature dim"
                )
                raise ShapeError(msg)
            values[key] = out
        return self._new_like(values, batch_size, self.device)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Self:
        """Merges batch dims ``start_dim`` to ``end_dim`` (inclusive) into one."""
        batch_size = self.batch_size
        nb = len(batch_size)
        if nb == 0:
            # As for a 0-d tensor: dims 0 and -1 are valid and the result has one dim.
            _batch.normalize_dim(start_dim, 1, op="flatten")
            _batch.normalize_dim(end_dim, 1, op="flatten")
            return self.reshape(1)
        start = _batch.normalize_dim(start_dim, nb, op="flatten")
        end = _batch.normalize_dim(end_dim, nb, op="flatten")
        if start > end:
            msg = f"flatten: start_dim {start_dim} comes after end_dim {end_dim}"
            raise ShapeError(msg)
        merged = 1
        for size in batch_size[start : end + 1]:
            merged *= size
        return self.reshape(batch_size[:start] + (merged,) + batch_size[end + 1 :])

    def unflatten(self, dim: int, sizes: Sequence[int]) -> Self:
        """Splits batch dim ``dim`` into ``sizes`` (one of which may be -1)."""
        batch_size = self.batch_size
        dim = _batch.normalize_dim(dim, len(batch_size), op="unflatten")
        part = _batch.view_shape(tuple(sizes), torch.Size([batch_size[dim]]), "unflatten")
        return self.reshape(batch_size[:dim] + part + batch_size[dim + 1 :])

    def squeeze(self, dim: int | None = None) -> Self:
        """Removes size-1 batch dims (all of them, or ``dim`` if it has size 1)."""
        batch_size = self.batch_size
        dims = _batch.squeeze_dims(batch_size, dim)
        if not dims:
            return self._map_batch(_identity, batch_size)
        new = torch.Size(s for i, s in enumerate(batch_size) if i not in dims)
        if len(dims) == 1:
            (only,) = dims
            return self._map_batch(lambda v: v.squeeze(only), new)
        # Squeeze from the last dim down so earlier dims keep their positions.
        ordered = sorted(dims, reverse=True)
        return self._map_batch(lambda v: _squeeze_all(v, ordered), new)

    def unsqueeze(self, dim: int) -> Self:
        """Inserts a batch dim of size 1 at ``dim`` (-1 means after the last batch dim)."""
        batch_size = self.batch_size
        pos = _batch.normalize_dim(dim, len(batch_size), op="unsqueeze", inclusive=True)
        new = batch_size[:pos] + (1,) + batch_size[pos:]
        return self._map_batch(lambda v: v.unsqueeze(pos), torch.Size(new))

    def permute(self, *dims: int | Sequence[int]) -> Self:
        """Reorders the batch dims (a view, as for tensors)."""
        batch_size = self.batch_size
        nb = len(batch_size)
        order = _batch.permute_dims(_batch.shape_args(dims, "permute"), nb)
        new = torch.Size(batch_size[d] for d in order)
        return self._map_batch(lambda v: v.permute(order + tuple(range(nb, v.ndim))), new)

    def transpose(self, dim0: int, dim1: int) -> Self:
        """Swaps two batch dims."""
        batch_size = self.batch_size
        nb = len(batch_size)
        a = _batch.normalize_dim(dim0, nb, op="transpose")
        b = _batch.normalize_dim(dim1, nb, op="transpose")
        sizes = list(batch_size)
        sizes[a], sizes[b] = sizes[b], sizes[a]
        return self._map_batch(lambda v: v.transpose(a, b), torch.Size(sizes))

    def expand(self, *shape: int | Sequence[int]) -> Self:
        """Broadcasts the batch dims to ``shape`` without copying (size-1 dims stretch)."""
        batch_size = self.batch_size
        new = _batch.expand_shape(_batch.shape_args(shape, "expand"), batch_size)
        nb = len(batch_size)
        return self._map_batch(lambda v: v.expand(new + v.shape[nb:]), new)

    def split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple[Self, ...]:
        """Cuts batch dim ``dim`` into pieces of ``split_size`` (or of the listed sizes)."""
        batch_size = self.batch_size
        dim = _batch.normalize_dim(dim, len(batch_size), op="split")
        sizes = _batch.split_sizes(split_size, batch_size[dim])
        return self._split_by_sizes(sizes, dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Self, ...]:
        """Cuts batch dim ``dim`` into ``chunks`` near-equal pieces (maybe fewer), as torch."""
        batch_size = self.batch_size
        dim = _batch.normalize_dim(dim, len(batch_size), op="chunk")
        return self._split_by_sizes(_batch.chunk_sizes(chunks, batch_size[dim]), dim)

    def _split_by_sizes(self, sizes: list[int], dim: int) -> tuple[Self, ...]:
        batch_size = self.batch_size
        pieces = [batch_size[:dim] + (size,) + batch_size[dim + 1 :] for size in sizes]
        return self._map_values_split(lambda v: v.split(sizes, dim), pieces)

    def unbind(self, dim: int = 0) -> tuple[Self, ...]:
        """The slices along batch dim ``dim``, as views."""
        batch_size = self.batch_size
        dim = _batch.normalize_dim(dim, len(batch_size), op="unbind")
        piece = batch_size[:dim] + batch_size[dim + 1 :]
        return self._map_values_split(lambda v: v.unbind(dim), [piece] * batch_size[dim])


def _identity(value: Value) -> Value:
    return value


def _squeeze_all(value: Value, dims_descending: list[int]) -> Value:
    for dim in dims_descending:
        value = value.squeeze(dim)
    return value
