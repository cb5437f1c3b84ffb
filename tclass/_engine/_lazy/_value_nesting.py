"""How a stack of stacks of Python values nests after an index of tensors, read off the
lazy stack the peer keeps it as.

A ``NonTensorStack`` stacked along more than one dim is, in the peer, a lazy stack whose
members are lazy stacks: an index of tensors splits it level by level (an int, a slice or
a tensor at each stack dim, :func:`index_lazy`'s rules), and each member's part stays one
value. tclass keeps the values flat with their stack dims, so it works out where those
dims are after the index on a stand-in: a lazy stack of empty TensorDicts nested the same
way, indexed by the same lazy-stack code, whose result's nesting gives the stack dims.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from tclass._base._tensordict_base import TensorDictBase
from tclass._engine._td import TensorDict

if TYPE_CHECKING:
    from tclass._engine._lazy._stack import LazyStackedTensorDict

__all__ = ["nesting_after_index"]

# past this many members the stand-in costs more than it tells: every element is then
# its own member (what tclass gave before)
_MAX_MEMBERS = 4096


def nesting_after_index(
    cls: type[LazyStackedTensorDict], index: Any, dims: tuple[int, ...], shape: torch.Size
) -> tuple[int, ...] | None:
    """The stack dims (outermost first) of a stack of values of batch size ``shape``
    stacked along ``dims`` once indexed by ``index``: ``()`` where one member's part is
    left (one value); None where the result nests unevenly, selects nothing, or the
    stand-in would be too large."""
    if math.prod(shape[d] for d in dims) > _MAX_MEMBERS or 0 in shape:
        return None
    out = _stand_in(cls, shape, dims)[index]
    if out.batch_size.numel() == 0:
        return None
    return _nesting(out)


def _stand_in(
    cls: type[LazyStackedTensorDict], shape: torch.Size, dims: tuple[int, ...]
) -> TensorDictBase:
    """Empty TensorDicts of the members' batch size, stacked lazily along ``dims``."""
    if not dims:
        return TensorDict({}, shape)
    dim, inner = dims[0], tuple(d - (d > dims[0]) for d in dims[1:])
    member_shape = shape[:dim] + shape[dim + 1 :]
    members = [_stand_in(cls, member_shape, inner) for _ in range(shape[dim])]
    return cls._from_members(members, dim, shape)


def _nesting(node: Any) -> tuple[int, ...] | None:
    """The stack dims of a lazy stack of stand-ins, in its own dims; None where its
    members nest differently."""
    members = getattr(node, "tensordicts", None)
    if members is None or not hasattr(node, "stack_dim"):
        return ()
    dim = node.stack_dim
    inner = {_nesting(member) for member in members}
    if len(inner) != 1:
        return None
    (one,) = inner
    return None if one is None else (dim, *(d + (d >= dim) for d in one))
