"""The leaves of a consolidated buffer (see :mod:`._consolidate`): where each goes in it
(:func:`leaf_layout`: in order, each on a 16-byte boundary) and the tensors over its storage
that a collection rebuilt over it holds (:func:`leaf_views`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from tclass._core._batch import row_major_strides
from tclass._core._memmap_files import blank

__all__ = ["ALIGN", "leaf_layout", "leaf_views"]

ALIGN = 16  # every leaf starts on a 16-byte boundary: any dtype's view is aligned


def leaf_layout(
    leaves: Sequence[torch.Tensor],
) -> tuple[list[tuple[torch.dtype, torch.Size, int]], int]:
    """Each leaf's (dtype, shape, byte offset), and where the leaves end."""
    layout = []
    offset = 0
    for leaf in leaves:
        layout.append((leaf.dtype, leaf.shape, offset))
        offset += -(-leaf.numel() * leaf.element_size() // ALIGN) * ALIGN
    return layout, offset


def leaf_views(
    buffer: torch.Tensor, layout: Sequence[tuple[torch.dtype, torch.Size, int]]
) -> list[torch.Tensor]:
    """The leaves as views of ``buffer``: one flat view of its storage per dtype, each leaf
    an ``as_strided`` of it (half the cost of a tensor per leaf set onto the storage), but
    for each run of leaves that follow each other with the same dtype and trailing dims (a
    collection's like fields): one ``as_strided`` over the whole run, cut into its leaves
    by ``unsafe_split_with_sizes`` (a run of 10 costs what 4 ``as_strided`` do). The
    pieces of a plain split would refuse in-place writes under autograd; these take them,
    and are no views of the flat view, so that a tensor that requires grad copied into one
    concerns it alone, as the peer's leaves. It counts where a consolidated batch moves
    to a GPU every step, and at every ``from_consolidated``."""
    views: list[torch.Tensor] = []
    storage = buffer.untyped_storage()
    base = buffer.storage_offset()
    # per dtype: the flat view's as_strided and the dtype's size
    flats: dict[torch.dtype, tuple[Callable[..., torch.Tensor], int]] = {}
    strides: dict[tuple[int, ...], tuple[int, ...]] = {}
    start, count = 0, len(layout)
    while start < count:
        dtype, shape, offset = layout[start]
        found = flats.get(dtype)
        if found is None:
            flat = (
                blank(dtype) if buffer.is_cpu else torch.empty(0, dtype=dtype, device=buffer.device)
            )
            flat.set_(storage, 0, (storage.nbytes() // dtype.itemsize,))  # type: ignore[call-overload]
            found = flats[dtype] = (flat.as_strided, dtype.itemsize)
        stop = start + 1
        if stop < count and shape:  # the next leaf may continue a run: find where it ends
            follower = layout[stop]
            if follower[0] is dtype and follower[2] == offset + shape.numel() * found[1]:
                stop, rows = _run(layout, start)
        if stop > start + 1:
            shape = torch.Size((sum(rows), *shape[1:]))
        stride = strides.get(shape)
        if stride is None:
            stride = strides[shape] = row_major_strides(shape)
        view = found[0](shape, stride, (base + offset) // found[1])
        if stop > start + 1:
            views.extend(torch.unsafe_split_with_sizes(view, rows))
        else:
            views.append(view)
        start = stop
    return views


def _run(
    layout: Sequence[tuple[torch.dtype, torch.Size, int]], start: int
) -> tuple[int, list[int]]:
    """Where the run of leaves from ``start`` ends (see :func:`leaf_views`): each next leaf of
    the same dtype and trailing dims starts where the last ends (no padding between);
    and each leaf's first dim. A leaf of no dims is a run of one."""
    dtype, shape, offset = layout[start]
    if not shape:
        return start + 1, []
    trailing, size = shape[1:], dtype.itemsize
    end = offset + shape.numel() * size
    rows = [shape[0]]
    stop, count = start + 1, len(layout)
    while stop < count:
        kind, dims, at = layout[stop]
        if at != end or kind is not dtype or not dims:
            break
        if dims != shape and dims[1:] != trailing:  # (the first test: no slice made)
            break
        rows.append(dims[0])
        end = at + dims.numel() * size
        stop += 1
    return stop, rows
