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


RUN = 3  # the fewest leaves of one shape in a row that are cut from one view (below: dearer)


def leaf_views(
    buffer: torch.Tensor, layout: Sequence[tuple[torch.dtype, torch.Size, int]]
) -> list[torch.Tensor]:
    """The leaves as views of ``buffer``: one flat view of its storage per dtype, each leaf
    an ``as_strided`` of it (half the cost of a tensor per leaf set onto the storage), but
    for each run of at least ``RUN`` leaves of one dtype and shape that follow each other
    (a collection's like fields): one ``as_strided`` over the whole run, cut into its
    leaves by ``unsafe_split_with_sizes`` (a run of 10 costs what 4 ``as_strided`` do;
    ``unsafe_split`` by a size, half as much again). The pieces of
    a plain split would refuse in-place writes under autograd; these take them, and are no
    views of the flat view, so that a tensor that requires grad copied into one concerns
    it alone, as the peer's leaves. It counts where a consolidated batch moves to a GPU
    every step, and at every ``from_consolidated``."""
    views: list[torch.Tensor] = []
    storage = buffer.untyped_storage()
    base = buffer.storage_offset()
    # per dtype: the flat view's as_strided and the dtype's size
    flats: dict[torch.dtype, tuple[Callable[..., torch.Tensor], int]] = {}
    strides: dict[torch.Size, tuple[int, ...]] = {}
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
        stride = strides.get(shape)
        if stride is None:
            stride = strides[shape] = row_major_strides(shape)
        stop = start + 1
        if stop < count and layout[stop][1] == shape:  # maybe a run: where does it end?
            stop = _run_end(layout, start)
        if stop == start + 1:
            views.append(found[0](shape, stride, (base + offset) // found[1]))
        elif stop - start >= RUN:
            whole = torch.Size((shape[0] * (stop - start), *shape[1:]))
            view = found[0](whole, row_major_strides(whole), (base + offset) // found[1])
            views.extend(torch.unsafe_split_with_sizes(view, [shape[0]] * (stop - start)))
        else:
            for _, _, at in layout[start:stop]:
                views.append(found[0](shape, stride, (base + at) // found[1]))
        start = stop
    return views


def _run_end(layout: Sequence[tuple[torch.dtype, torch.Size, int]], start: int) -> int:
    """Where the run of leaves from ``start`` ends (see :func:`leaf_views`): each next leaf
    of the same dtype and shape starts where the last ends (no padding between). Leaves
    of no dims or no rows make no run."""
    dtype, shape, offset = layout[start]
    if not shape or not shape[0]:
        return start + 1
    size = shape.numel() * dtype.itemsize
    stop, count = start + 1, len(layout)
    while stop < count:
        kind, dims, at = layout[stop]
        if at != offset + size or kind is not dtype or dims != shape:
            break
        offset = at
        stop += 1
    return stop
