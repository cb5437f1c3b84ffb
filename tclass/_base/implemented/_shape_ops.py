"""Batch-shape operations: each does to the batch dims what torch does to a tensor's dims.

Every entry keeps its feature dims (the dims after the batch dims) untouched. A nested
collection may have more batch dims than its parent; it is handled by the same call as a
tensor, because it answers the same methods over its own dims.

What a result inherits, as in the peer: the names of the dims it keeps
(``tclass._core._names`` has the rules) and, for the operations that only rearrange
the batch (``reshape``, ``permute``, ``flip``, ``expand``...), the lock. Methods with
``inplace=True`` give ``self`` its result's entries and batch size instead, nested
collections keeping their identity.

The operations that rearrange the batch dims (names, reshaping, adding and removing dims,
reordering) and what results inherit are in ``_reshape_ops.py`` (``ReshapeOps``, the base
of ``ShapeOps``); here: selecting elements, growing and cutting.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, cast

import torch
from typing_extensions import Self

from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._math import refuse_out_with_grad
from tclass._base.implemented._reshape_ops import ReshapeOps, Span
from tclass._core import _batch, _names
from tclass._core._jagged import split_rows
from tclass._core._shape_op import KeepsDims, PicksElements
from tclass.errors import (
    ArgumentValueError,
    DimError,
    DimNameError,
    ShapeError,
    UnsupportedError,
)

__all__ = ["ShapeOps", "Span"]


class ShapeOps(ReshapeOps):
    """reshape, view, flatten, unflatten, squeeze, unsqueeze, permute, transpose,
    movedim, expand, split, chunk, unbind, flip, roll, narrow, repeat, tile, gather...
    over the batch dims."""

    __slots__ = ()

    # a 0-d collection's repeat_interleave adds its dim as unsqueeze does (a Python value
    # then stacked per element, as the peer); a value node's as reshape (one value kept)
    _repeats_one_value = False  # (no annotation: a record's type hints are its fields)

    # why ``masked_select(inplace=True)`` is refused here, before the mask is checked
    # (empty: it is not), as the peer refuses it on a lazy stack and a TensorDictParams
    _no_select_in_place = ""

    # --- selecting elements --------------------------------------------------------------------

    def narrow(self, dim: int, start: int, length: int) -> Self:
        """The elements ``start`` to ``start + length`` of batch dim ``dim`` (a view)."""
        batch_size = self.batch_size
        d = _batch.normalize_dim(dim, len(batch_size), op="narrow")
        size = batch_size[d]
        begin = start + size if start < 0 else start
        if not 0 <= begin <= size or length < 0 or begin + length > size:
            msg = (
                f"narrow: start {start} and length {length} do not fit batch dim {dim} "
                f"of size {size}"
            )
            raise DimError(msg)
        sizes = list(batch_size)
        sizes[d] = length
        out = self._map_batch(lambda v: v.narrow(d, begin, length), torch.Size(sizes))
        return self._carry(out, self._dim_names)

    def gather(
        self, dim: int, index: torch.Tensor, out: Self | None = None, *, inplace: bool = False
    ) -> Self:
        """Picks, along batch dim ``dim``, the elements ``index`` names, as ``torch.gather``:
        ``index`` has one dim per batch dim and becomes the batch size; every entry's
        feature dims are kept whole.

        Raises:
            ArgumentValueError: (a ``ValueError``) both ``out`` and ``inplace=True``.
            UnsupportedError: ``inplace=True`` with an index of another number of dims.
            GradError: (a ``RuntimeError``, as torch raises) ``out`` where a result
                tensor requires grad.
            ShapeError: if ``index`` is not an integer tensor with one dim per batch dim,
                or is larger than the batch outside ``dim``.
        """
        if out is not None and inplace:
            msg = (
                "gather: out= and inplace=True are mutually exclusive, both say where the "
                "result goes; pass one (out= writes into another collection, inplace=True "
                "into this one)"
            )
            raise ArgumentValueError(msg)
        batch_size = self.batch_size
        nb = len(batch_size)
        d = _batch.normalize_dim(dim, nb, op="gather")
        if inplace and getattr(index, "ndim", nb) != nb:
            msg = (
                f"gather(inplace=True): the index has {index.ndim} dims (index.ndim) but the "
                f"batch size {_batch.format_shape(batch_size)} has {nb}, and an in-place "
                "result keeps the batch dims; give one index dim per batch dim"
            )
            raise UnsupportedError(msg)
        _batch.check_gather_index(index, batch_size, d)
        shape = index.shape
        try:
            picked = PicksElements(lambda v: v.gather(d, _lift_index(index, v.shape, nb)))
            result = self._map_batch(picked, shape)
        except RuntimeError:
            _batch.check_gather_bounds(index, batch_size, d)  # an index out of the batch
            raise
        try:
            names = self._dim_names
        except DimNameError:  # a lazy stack's members name their dims otherwise
            names = None  # (the peer's gather gives an unnamed TensorDict there)
        result = self._carry(result, names, lock=False)
        if out is not None:
            refuse_out_with_grad(result, "gather")
            out.update_(result)
            return out
        return self._in_place(result, inplace, "gather")

    def masked_select(self, mask: torch.Tensor, *, inplace: bool = False) -> Self:
        """The elements where ``mask`` (a bool tensor shaped like the batch) is true, in
        one batch dim, as ``torch.masked_select`` flattens them (an unnamed dim). A mask
        over the leading batch dims only selects as ``self[mask]`` does, and trailing
        size-1 dims past the batch dims are dropped (a ``[3, 2, 1]`` mask of a ``[3, 2]``
        batch), as the peer's.

        Raises:
            DimError: (an ``IndexError``, as the peer's) a bool mask of another shape.
            ShapeError: a mask that is not a bool tensor.
            UnsupportedError: (a ``NotImplementedError``, as the peer's) ``inplace=True``
                of a lazy stack or a ``TensorDictParams`` (first, whatever the mask).
        """
        if inplace and self._no_select_in_place:
            msg = f"masked_select(inplace=True): {self._no_select_in_place}; use inplace=False"
            raise UnsupportedError(msg)
        batch_size = self.batch_size
        while mask.dim() > len(batch_size) and mask.shape[-1] == 1:
            mask = mask.squeeze(-1)
        if mask.dtype is torch.bool and mask.shape != batch_size:
            if 0 < mask.dim() < len(batch_size) and mask.shape == batch_size[: mask.dim()]:
                return self._in_place(self[mask], inplace, "masked_select")
            msg = (
                f"masked_select: the mask's shape {_batch.format_shape(mask.shape)} does not "
                f"match the batch size {_batch.format_shape(batch_size)}; give a bool mask "
                "of the batch size, or of its leading dims"
            )
            raise DimError(msg)
        if mask.dtype is not torch.bool:
            msg = (
                f"masked_select: the mask must be a bool tensor of the batch size "
                f"{_batch.format_shape(batch_size)}, got {mask.dtype} of shape "
                f"{_batch.format_shape(mask.shape)}"
            )
            raise ShapeError(msg)
        if not batch_size:  # one dim of size 1 (a Python value stays one, as the peer's)
            result = self.broadcast_to((1,))[mask.reshape(1)]
        else:
            result = self[mask]
        if self._dim_names is not None:  # one new dim: unnamed, as the peer (and torch),
            result._rename_all((None,))  # also the first dim of the nested collections
        return self._in_place(result, inplace, "masked_select")

    # --- growing ----------------------------------------------------------------------------

    def expand(self, *shape: int | Sequence[int]) -> Self:
        """Broadcasts the batch dims to ``shape`` without copying (size-1 dims stretch)."""
        return self._expanded(_batch.shape_args(shape, "expand"), "expand")

    def _expanded(self, shape: tuple[int, ...], leaf_op: str) -> Self:
        """:meth:`expand` (``leaf_op="expand"``) or :meth:`broadcast_to`: the method each
        entry is expanded with (a ``NonTensorData`` grows into a stack with ``expand``
        only, as the peer's)."""
        batch_size = self.batch_size
        new = _batch.expand_shape(shape, batch_size)
        nb = len(batch_size)
        out = self._map_batch(lambda v: getattr(v, leaf_op)(new + v.shape[nb:]), new)
        lock = self._copies_keep_lock or new == batch_size  # (see _copies_keep_lock)
        return self._carry(out, _names.expanded(self._dim_names, len(new)), lock=lock)

    def expand_as(self, other: TensorCollection | torch.Tensor) -> Self:
        """:meth:`expand` to the shape of the tensor ``other``; for a collection ``other``,
        each tensor expanded as ``other``'s tensor of the same key, feature dims included,
        to ``other``'s batch size (as in the peer)."""
        if isinstance(other, TensorCollection):
            collection: Any = self  # every collection has apply (ApplyOps)
            return cast(
                Self, collection.apply(torch.Tensor.expand_as, other, batch_size=other.batch_size)
            )
        return self.expand(other.shape)

    def broadcast_to(self, shape: Sequence[int]) -> Self:
        """:meth:`expand` to ``shape``; the result's dims have no names, and a
        ``NonTensorData`` keeps one value, as in the peer."""
        out = self._expanded(_batch.shape_args((tuple(shape),), "broadcast_to"), "broadcast_to")
        out._rename_all(None)  # nested collections too (a lazy stack's stack dim name)
        return out

    def repeat(self, *repeats: int | Sequence[int] | torch.Tensor, inplace: bool = False) -> Self:
        """Repeats the whole batch along each batch dim (one count per dim), as
        ``torch.Tensor.repeat``; feature dims are not repeated. A copy.

        Raises:
            ShapeError: (a ``ValueError``) if there is not one count per batch dim.
        """
        counts = _batch.repeat_counts(repeats)
        batch_size = self.batch_size
        nb = len(batch_size)
        if len(counts) != nb:
            msg = (
                f"repeat: {len(counts)} counts {list(counts)} for {nb} batch dims; give one "
                "per batch dim"
            )
            raise ShapeError(msg)
        out = self._repeat_batch(counts, picks=False)
        return self._in_place(self._carry(out, self._dim_names), inplace, "repeat")

    def _repeat_batch(self, counts: tuple[int, ...], *, picks: bool) -> Self:
        """The batch repeated ``counts`` times per dim (one count per batch dim); ``picks``:
        as ``tile``, which picks each element anew (see ``PicksElements``)."""
        nb = self.batch_dims
        new = torch.Size(size * count for size, count in zip(self.batch_size, counts))
        if picks:
            return self._map_batch(PicksElements(lambda v: _tiled(v, counts, nb)), new)
        # every dim in its place: a stack of Python values keeps its stack dims, as the
        # peer's stack repeats its members (each a value over the other dims)
        return self._map_batch(KeepsDims(lambda v: _repeated(v, counts, nb)), new)

    def repeat_interleave(
        self,
        repeats: torch.Tensor | int,
        dim: int | None = None,
        *,
        output_size: int | None = None,
        inplace: bool = False,
    ) -> Self:
        """Repeats each element along batch dim ``dim`` next to itself, as
        ``torch.Tensor.repeat_interleave``; without ``dim`` the batch is flattened first."""
        if dim is None:
            if inplace:
                msg = "repeat_interleave(inplace=True) needs a dim: flattening changes the dims"
                raise ShapeError(msg)
            flat = self.reshape(-1) if self.batch_size else self.unsqueeze(0)
            return flat.repeat_interleave(repeats, 0, output_size=output_size)
        batch_size = self.batch_size
        if not batch_size and dim in (0, -1):  # as torch does for a 0-d tensor: one dim
            lifted = self.reshape(1) if self._repeats_one_value else self.unsqueeze(0)
            out = lifted.repeat_interleave(repeats, 0, output_size=output_size)
            return self._in_place(out, inplace, "repeat_interleave")
        d = _batch.normalize_dim(dim, len(batch_size), op="repeat_interleave")
        length = _batch.interleaved_length(repeats, batch_size[d], output_size)
        sizes = list(batch_size)
        sizes[d] = length
        out = self._map_batch(
            KeepsDims(lambda v: v.repeat_interleave(repeats, d, output_size=length)),
            torch.Size(sizes),
        )
        return self._in_place(self._carry(out, self._dim_names), inplace, "repeat_interleave")

    def tile(self, dims: int | Sequence[int]) -> Self:
        """Repeats the batch as ``torch.tile``: fewer counts than batch dims repeat the
        last dims; more add leading dims (one int: the last dim). The result's dims have no
        names, as in the peer."""
        counts = (dims,) if isinstance(dims, int) else tuple(dims)
        nb = self.batch_dims
        lifted = self
        if len(counts) > nb and -1 in self.batch_size:  # ragged: no reshape, as unsqueeze
            for _ in range(len(counts) - nb):
                lifted = lifted.unsqueeze(0)
        elif len(counts) > nb:  # (a reshape keeps a Python value shared, as the peer)
            lifted = self.reshape((1,) * (len(counts) - nb) + tuple(self.batch_size))
        full = (1,) * (lifted.batch_dims - len(counts)) + counts
        if type(lifted).repeat is ShapeOps.repeat:
            out = lifted._repeat_batch(full, picks=True)
            out = lifted._carry(out, lifted._dim_names, lock=lifted._copies_keep_lock)
        else:  # its own repeat (a lazy stack's repeats its members)
            out = lifted.repeat(*full)
        out._rename_all(None)  # as the peer: no names, nested ones included
        return out

    # --- cutting ------------------------------------------------------------------------------

    def split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple[Self, ...]:
        """Cuts batch dim ``dim`` into pieces of ``split_size`` (or of the listed sizes)."""
        batch_size = self.batch_size
        dim = _batch.normalize_split_dim(dim, len(batch_size))
        sizes = _batch.split_sizes(split_size, batch_size[dim])
        return self._split_by_sizes(sizes, dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Self, ...]:
        """Cuts batch dim ``dim`` into ``chunks`` near-equal pieces (maybe fewer), as torch."""
        batch_size = self.batch_size
        dim = _batch.normalize_dim(dim, len(batch_size), op="chunk")
        return self._split_by_sizes(_batch.chunk_sizes(chunks, batch_size[dim]), dim)

    def tensor_split(
        self, indices_or_sections: int | Sequence[int] | torch.Tensor, dim: int = 0
    ) -> tuple[Self, ...]:
        """Cuts batch dim ``dim`` as ``torch.tensor_split``: into ``n`` sections (the
        first ``size % n`` one element longer), or before each of a list of indices
        (negative ones count from the end, ones past the end are clamped, a smaller
        index than the one before gives an empty or overlapping section). The pieces
        are views, named and locked like this collection (as ``split``'s).

        Raises:
            DimError: (an ``IndexError``) ``dim`` is not a batch dim.
            ShapeError: (a ``ValueError``) fewer than 1 section, or a tensor that is not
                a 0-d or 1-d integer tensor on the CPU.
        """
        nb = self.batch_dims
        d = _batch.normalize_dim(dim, nb, op="tensor_split")
        bounds = _section_bounds(indices_or_sections, self.batch_size[d])
        sizes = _tiling_sizes(bounds, self.batch_size[d])
        if sizes is not None:  # pieces that tile the dim: split's (as the peer's)
            return tuple(self._carry(p, None) for p in self._split_by_sizes(sizes, d))
        lead = (slice(None),) * d
        pieces = [self[lead + (slice(start, stop),)] for start, stop in bounds]
        # a wrapper's index of all of it (a TensorDictParams) is itself: split's piece then
        whole = self.batch_size[d]
        pieces = [self._split_by_sizes([whole], d)[0] if p is self else p for p in pieces]
        return tuple(self._carry(piece, None) for piece in pieces)

    def _split_by_sizes(self, sizes: list[int], dim: int) -> tuple[Self, ...]:
        batch_size = self.batch_size
        pieces = [batch_size[:dim] + (size,) + batch_size[dim + 1 :] for size in sizes]
        parts = self._map_values_split(lambda v: split_rows(v, sizes, dim), pieces)
        names = self._dim_names
        return tuple(self._carry(part, names, view=True) for part in parts)

    def unbind(self, dim: int = 0) -> tuple[Self, ...]:
        """The slices along batch dim ``dim``, as views."""
        batch_size = self.batch_size
        dim = _batch.normalize_dim(dim, len(batch_size), op="unbind")
        piece = batch_size[:dim] + batch_size[dim + 1 :]
        parts = self._map_values_split(lambda v: v.unbind(dim), [piece] * batch_size[dim])
        names = _names.removed(self._dim_names, (dim,))
        # The peer locks the slices of a locked memory-mapped or shared collection only.
        lock = self.is_locked and self._views_stay_locked()
        if names is None and not lock:
            return parts
        return tuple(self._carry(part, names, lock=lock, view=True) for part in parts)


def _section_bounds(
    indices_or_sections: int | Sequence[int] | torch.Tensor, length: int
) -> list[tuple[int | None, int | None]]:
    """The ``(start, stop)`` slice bounds of ``torch.tensor_split``'s pieces."""
    spec: Any = indices_or_sections
    if isinstance(spec, torch.Tensor):
        if spec.dtype.is_floating_point or spec.dtype.is_complex or spec.dtype == torch.bool:
            spec = None
        elif spec.device.type != "cpu" or spec.ndim > 1:
            spec = None
        else:
            spec = spec.item() if spec.ndim == 0 else spec.tolist()
        if spec is None:
            msg = (
                "tensor_split: a tensor indices_or_sections must be a 0-d or 1-d integer "
                f"tensor on the CPU, got a {indices_or_sections.ndim}-d "  # type: ignore[union-attr]
                f"{indices_or_sections.dtype} tensor on "  # type: ignore[union-attr]
                f"{indices_or_sections.device}"  # type: ignore[union-attr]
            )
            raise ShapeError(msg)
    if isinstance(spec, int):
        if spec < 1:
            msg = f"tensor_split: the number of sections must be at least 1, got {spec}"
            raise ShapeError(msg)
        base, extra = divmod(length, spec)
        stops = list(itertools.accumulate(base + (i < extra) for i in range(spec)))
        return list(zip([0, *stops[:-1]], stops))
    cuts = [int(index) for index in spec]
    firsts: list[int | None] = [None, *cuts]
    lasts: list[int | None] = [*cuts, None]
    return list(zip(firsts, lasts))


def _tiling_sizes(bounds: list[tuple[int | None, int | None]], length: int) -> list[int] | None:
    """The sizes of ``tensor_split``'s pieces when they tile the dim in order (no index
    smaller than the one before: then they are ``split``'s pieces), else None."""
    cuts = [0]
    for start, _ in bounds[1:]:
        assert start is not None
        start = start + length if start < 0 else start
        cuts.append(min(max(start, 0), length))
    cuts.append(length)
    sizes = [stop - start for start, stop in itertools.pairwise(cuts)]
    return sizes if all(size >= 0 for size in sizes) else None


def _repeated(value: Any, counts: tuple[int, ...], nb: int) -> Any:
    """``value`` repeated ``counts`` times along its first ``nb`` dims (a copy)."""
    full = counts + (1,) * (value.ndim - nb)
    return value.repeat(*full) if full else value.clone()


def _tiled(value: Any, counts: tuple[int, ...], nb: int) -> Any:
    """``_repeated`` as ``tile`` does it: a nested collection is tiled, so that its stacks
    of Python values pick each element anew (see ``PicksElements``)."""
    if isinstance(value, ShapeOps):
        return value.tile(counts + (1,) * (value.batch_dims - nb))
    return _repeated(value, counts, nb)


def _lift_index(index: torch.Tensor, shape: torch.Size, nb: int) -> torch.Tensor:
    """``index`` (one dim per batch dim) expanded over the feature dims of ``shape``."""
    extra = len(shape) - nb
    if not extra:
        return index
    return index.reshape(index.shape + (1,) * extra).expand(index.shape + shape[nb:])
