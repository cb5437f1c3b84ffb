"""``x[index] = tensor`` over a collection, as the peer writes it: into each tensor entry
as torch writes ``entry[index] = tensor`` (the tensor lined up with the last dims of the
entry's selection, leading dims of size 1 dropped), every entry checked before any is
written, so that a tensor one entry refuses leaves all of them as they were."""

from __future__ import annotations

from typing import Any

import torch

from tclass._base._tensordict_base import TensorDictBase
from tclass._core import _batch, _keys
from tclass._core._unbatched import UnbatchedTensor
from tclass.errors import BatchSizeError

__all__ = ["check_tensor_write", "tensor_targets"]


def _is_tensor_leaf(cls: type) -> bool:
    """The leaves a tensor is written into: tensors, not an unbatched entry (which an
    indexed write leaves alone) nor a collection or a node of Python values."""
    return issubclass(cls, torch.Tensor) and not issubclass(cls, UnbatchedTensor)


def tensor_targets(
    collection: TensorDictBase, index: Any
) -> list[tuple[Any, torch.Size, torch.Size | None]]:
    """Each tensor leaf of ``collection`` (nested ones too) as ``(key, shape, selected)``:
    its shape, without stacking a lazy stack's tensors, and the shape that ``index``
    (over the batch dims, already checked against them) selects of it; ``selected`` is
    None where the shape has a ``-1`` (the members of a lazy stack differ there)."""
    targets: list[tuple[Any, torch.Size, torch.Size | None]] = []
    for key in collection.keys(True, True, is_leaf=_is_tensor_leaf):
        shape = collection.get_item_shape(key)
        selected = None if -1 in shape else _batch.indexed_shape(shape, index)
        targets.append((key, shape, selected))
    return targets


def check_tensor_write(collection: TensorDictBase, index: Any, value: torch.Tensor) -> None:
    """Checks that every tensor leaf of ``collection`` takes ``value`` at ``index`` as
    torch broadcasts it (``leaf[index] = value``), before anything is written.

    Raises:
        DimError: (an ``IndexError``) ``index`` does not fit the batch size.
        BatchSizeError: (a ``RuntimeError``, as torch's and the peer's) naming the first
            leaf that refuses it, both shapes, and how to line the tensor up with the
            batch dims instead.
    """
    batch = collection.batch_size
    if not value.ndim:
        return  # a 0-dim tensor fills any selection
    if -1 not in batch:  # the index first, as it is checked for a tensor of the batch size
        _batch.indexed_shape(batch, index)
    nb = len(batch)
    for key, shape, selected in tensor_targets(collection, index):
        if selected is not None and not _batch.broadcasts_to(value.shape, selected):
            raise _refused(key, shape, index, value.shape, selected, nb)


def _refused(
    key: Any, shape: torch.Size, index: Any, value: torch.Size, selected: torch.Size, nb: int
) -> BatchSizeError:
    name = _keys.unravel_key(key)
    feature = len(shape) - nb  # the entry's dims past the batch dims
    hint = ""
    if feature > 0 and _batch.broadcasts_to((*value, *(1,) * feature), selected):
        spelled = ", ".join(["...", *["None"] * feature])
        hint = (
            f"; to line it up with the batch dims instead (one value per batch element), "
            f"write value[{spelled}]"
        )
    msg = (
        f"shape mismatch: cannot write a tensor of shape {list(value)} at index {index!r}: "
        f"entry {name!r} "
        f"(shape {list(shape)}) selects {list(selected)} there, and torch broadcasts a "
        f"tensor to the last dims of the selection, which {list(value)} does not fit; "
        f"nothing was written{hint}, or write the entries one by one "
        f"(td[index] = {{key: value}})"
    )
    return BatchSizeError(msg)
