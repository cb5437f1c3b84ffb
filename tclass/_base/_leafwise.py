"""Element-wise work on every tensor of a collection at once: the shared machinery.

A collection's tensors are *gathered* into one flat list (depth first, in key order),
together with the piece of each operand that goes with every tensor; one fused
multi-tensor kernel (``torch._foreach_*``) works on the whole list where torch has one for
the arguments, else the torch function runs tensor by tensor; the results are put back
into a collection of the same structure (*rebuilt*). See ``_pointwise.py`` for the walk
itself and the methods built on it.

Operands are numbers (given to the kernel as they are), tensors and collections:

* in ``"batch"`` alignment (arithmetic, comparisons) a tensor covers the batch dims the
  way torch broadcasts shapes: its dims line up with the *last* batch dims, and it is
  padded with size-1 dims on the right to reach over each tensor's feature dims; one with
  more dims than the batch adds batch dims in front, as torch does;
* in ``"mask"`` alignment (``where``, ``masked_fill``) it covers the *leading* batch dims;
* a collection must hold the same keys (Python values aside), nested alike; its batch
  size broadcasts with this one's.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

import torch

from tclass._core._batch import format_shape
from tclass.errors import BatchSizeError, KeyNotFoundError, OperandError

__all__ = [
    "Alignment",
    "Gather",
    "Resize",
    "as_scalar",
    "broadcast_batch",
    "check_same_keys",
    "mismatched_entry",
    "pad_operand",
    "refuse_operand",
    "run_leafwise",
]

Alignment: TypeAlias = Literal["batch", "mask"]
Resize: TypeAlias = Callable[[torch.Size], torch.Size]
"""Maps a node's batch size before an operation to its batch size after it."""

_Tensor = torch.Tensor
_PYTHON_NUMBERS = (int, float, bool, complex)


class Gather:
    """What a walk collects: the tensors in walk order, for each tensor operand the piece
    aligned with each tensor, and (for ``cast_filter``) each tensor's full key.

    ``subset``: a collection operand may hold only some of the keys (``copy_``); only
    the tensors it has a counterpart for are gathered. ``values``: also collect each
    Python-value node with the operands' counterparts of it (``where`` picks values).
    """

    __slots__ = ("alignment", "leaves", "operands", "paths", "subset", "values")

    def __init__(
        self,
        operands: int = 0,
        alignment: Alignment = "batch",
        *,
        paths: bool = False,
        subset: bool = False,
        values: bool = False,
    ) -> None:
        self.leaves: list[torch.Tensor] = []
        self.operands: list[list[Any]] = [[] for _ in range(operands)]
        self.paths: list[tuple[str, ...]] | None = [] if paths else None
        self.values: list[tuple[Any, tuple[Any, ...]]] | None = [] if values else None
        self.alignment = alignment
        self.subset = subset


def as_scalar(value: object) -> int | float | bool | complex | None:
    """``value`` as a Python number if it is a number (numpy scalars included), else None."""
    if isinstance(value, _PYTHON_NUMBERS):
        return value
    if isinstance(value, numbers.Number) and hasattr(value, "item"):
        item = value.item()
        if isinstance(item, _PYTHON_NUMBERS):
            return item
    return None


def pad_operand(
    operand: torch.Tensor, leaf: torch.Tensor, batch_dims: int, alignment: Alignment
) -> torch.Tensor:
    """``operand`` reshaped (a view) to broadcast against ``leaf`` as ``alignment`` says."""
    extra = leaf.ndim - (batch_dims if alignment == "batch" else operand.ndim)
    if extra <= 0:
        return operand
    return operand.reshape(operand.shape + (1,) * extra)


def broadcast_batch(batch_size: torch.Size, shape: Sequence[int], what: str) -> torch.Size:
    """The batch size after broadcasting with ``shape`` (torch's rules: shapes lined up on
    their last dims, sizes equal or 1), or an error naming both."""
    if not shape or shape == batch_size:  # a scalar-shaped operand, or the same batch
        return batch_size
    ndim = max(len(batch_size), len(shape))
    a = (1,) * (ndim - len(batch_size)) + tuple(batch_size)
    b = (1,) * (ndim - len(shape)) + tuple(shape)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            msg = (
                f"cannot broadcast the batch size {format_shape(batch_size)} with {what} "
                f"{format_shape(shape)}: a tensor operand lines up with the last batch dims (as "
                "torch broadcasts) and a collection's batch size must broadcast with this one"
            )
            raise BatchSizeError(msg)
        out.append(y if x == 1 else x)
    return torch.Size(out)


def check_same_keys(
    mine: Mapping[str, Any], theirs: Mapping[str, Any], prefix: tuple[str, ...], subset: bool
) -> None:
    """Raises KeyNotFoundError naming the keys (Python values aside) that only one side
    has (with ``subset``, only the right one's extra keys count)."""
    if mine.keys() == theirs.keys():
        return
    only_left = [] if subset else [k for k, v in mine.items() if k not in theirs and _data(v)]
    only_right = [k for k, v in theirs.items() if k not in mine and _data(v)]
    if not (only_left or only_right):
        return
    where = f" under {prefix!r}" if prefix else ""
    if subset:
        msg = f"keys {sorted(only_right)}{where} of the source are not in the destination"
    else:
        msg = (
            f"the collections hold different keys{where}: only in the left one: "
            f"{sorted(only_left)}, only in the right one: {sorted(only_right)}; pass "
            "default='intersection' (or a value for the missing entries) to combine them"
        )
    raise KeyNotFoundError(msg)


def _data(value: object) -> bool:
    """Whether an entry holds tensors (not a Python value)."""
    return not getattr(value, "_is_value_node", False)


def mismatched_entry(
    key: str, prefix: tuple[str, ...], mine: object, theirs: object
) -> KeyNotFoundError:
    """The error for an entry that is a tensor on one side and a collection on the other."""
    path = prefix + (key,)
    name = path[0] if len(path) == 1 else path
    msg = (
        f"entry {name!r} is a {_kind(mine)} in the left collection but a {_kind(theirs)} in "
        "the right one: the collections must be nested alike"
    )
    return KeyNotFoundError(msg)


def _kind(value: object) -> str:
    if isinstance(value, _Tensor):
        return "tensor"
    return type(value).__name__ if _data(value) else "Python value"


def refuse_operand(operation: str, operand: object) -> OperandError:
    """The error for an operand that is not a number, a tensor or a collection."""
    msg = (
        f"{operation}: unsupported operand of type {type(operand).__name__}; give a number, "
        "a tensor (over the batch dims) or a collection with the same keys"
    )
    return OperandError(msg)


def run_leafwise(
    foreach: Callable[..., Any] | None,
    each: Callable[..., Any],
    leaves: list[torch.Tensor],
    operands: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> list[Any]:
    """``foreach(leaves, *operands, **kwargs)`` or, where torch has no fused kernel for
    these arguments, ``each(leaf, *leaf_operands, **kwargs)`` leaf by leaf.

    Each operand is a scalar (the same for every leaf) or a list with one item per leaf.
    In-place kernels return None: the leaves themselves are then the results.
    """
    if not leaves:
        return []
    if foreach is not None:
        try:
            results = _fused(foreach, leaves, operands, kwargs)
        except TypeError:  # no kernel takes these arguments: leaf by leaf below
            pass
        else:
            return leaves if results is None else results
    columns = [op if type(op) is list else itertools.repeat(op) for op in operands]
    if kwargs:
        results = [each(*args, **kwargs) for args in zip(leaves, *columns)]
    else:  # one C-level loop where `each` is a C function
        results = list(map(each, leaves, *columns))
    return leaves if results[0] is None else results


def _fused(
    foreach: Callable[..., Any],
    leaves: list[torch.Tensor],
    operands: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> list[torch.Tensor] | None:
    """One kernel call on CPU (where torch loops over the tensors itself); elsewhere one
    call per (device, dtype) group, which is what the fast fused kernels take."""
    if leaves[0].is_cpu:
        return foreach(leaves, *operands, **kwargs)  # type: ignore[no-any-return]
    groups: dict[tuple[torch.device, torch.dtype], list[int]] = {}
    for position, leaf in enumerate(leaves):
        groups.setdefault((leaf.device, leaf.dtype), []).append(position)
    if len(groups) == 1:
        return foreach(leaves, *operands, **kwargs)  # type: ignore[no-any-return]
    out: list[torch.Tensor] = list(leaves)
    for positions in groups.values():
        part = [leaves[i] for i in positions]
        args = [[op[i] for i in positions] if type(op) is list else op for op in operands]
        results = foreach(part, *args, **kwargs)
        if results is not None:
            for i, result in zip(positions, results):
                out[i] = result
    return out
