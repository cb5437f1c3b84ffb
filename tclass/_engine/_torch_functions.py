"""Torch functions on collections beyond the methods that answer them directly.

The pointwise methods, reductions and scans register themselves in the dispatch table
where they are defined (``torch.exp(td)`` is ``td.exp()``). The functions here need an
adapter: an operand on the left (``torch.add(1, td)``, ``torch.where(mask, 0, td)``),
torch's own keywords (``torch.norm(td, p=...)``, ``F.mse_loss(..., reduction=)``),
``torch.autograd.grad``, and the shape functions that move batch elements around
(``torch.flip``, ``torch.roll``, ``torch.gather``, ``torch.tile``...), each the
collection's method of that name (``_shape_ops.py``: names, lazy stacks and Python
values handled there).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from tclass._base.implemented._collection import TensorCollection
from tclass._core._dispatch import implements
from tclass.errors import DimError, OperandError

__all__: list[str] = []

_Tensor = torch.Tensor


def _is_collection(value: object) -> bool:
    return isinstance(value, TensorCollection)


def _left_operand(collection: Any, fn: Callable[..., Any], operand: Any, **kwargs: Any) -> Any:
    """``fn(operand, tensor, **kwargs)`` for every tensor of ``collection`` (the operand
    on the left, a number or a tensor over the batch dims)."""
    return collection._pointwise(None, lambda t, o: fn(o, t, **kwargs), (operand,))


# --- arithmetic with the collection on either side ---------------------------------------


@implements(torch.add)
def _add(input: Any, other: Any, *, alpha: float | None = None) -> Any:
    if _is_collection(input):
        return input.add(other, alpha=alpha)
    return _left_operand(other, torch.add, input, **({} if alpha is None else {"alpha": alpha}))


@implements(torch.mul, torch.multiply)
def _mul(input: Any, other: Any) -> Any:
    return input.mul(other) if _is_collection(input) else other.mul(input)


@implements(torch.pow)
def _pow(input: Any, exponent: Any) -> Any:
    return input.pow(exponent) if _is_collection(input) else exponent.__rpow__(input)


@implements(torch.maximum)
def _maximum(input: Any, other: Any) -> Any:
    return input.maximum(other) if _is_collection(input) else other.maximum(input)


@implements(torch.minimum)
def _minimum(input: Any, other: Any) -> Any:
    return input.minimum(other) if _is_collection(input) else other.minimum(input)


@implements(torch.max)
def _max(input: Any, dim: Any = None, keepdim: bool = False, **kwargs: Any) -> Any:
    """``torch.max(td)``, ``torch.max(td, dim)`` or, with two operands, the maximum."""
    if isinstance(dim, (_Tensor, TensorCollection)):
        return _maximum(input, dim)
    return input.max(dim, keepdim, **kwargs)


@implements(torch.min)
def _min(input: Any, dim: Any = None, keepdim: bool = False, **kwargs: Any) -> Any:
    if isinstance(dim, (_Tensor, TensorCollection)):
        return _minimum(input, dim)
    return input.min(dim, keepdim, **kwargs)


@implements(torch.norm)
def _norm(
    input: Any,
    p: Any = "fro",
    dim: Any = None,
    keepdim: bool = False,
    out: Any = None,
    dtype: torch.dtype | None = None,
) -> Any:
    """The 2-norm of every tensor (``torch.norm``'s default); other norms tensor by tensor."""
    if p in ("fro", 2, None) and dim is None and not keepdim:
        return input.norm(out=out, dtype=dtype)
    kwargs = {"p": p, "dim": dim, "keepdim": keepdim, "dtype": dtype}
    return input._pointwise(None, lambda t: torch.norm(t, **kwargs), lock=False)


@implements(torch.where)
def _where(condition: Any, input: Any, other: Any, *, out: Any = None) -> Any:
    """``torch.where`` with a collection as the condition, either branch, or both
    (``out=``: a collection the result is written into, returned)."""
    if _is_collection(input):
        return input.where(condition, other, out=out)
    if _is_collection(other):
        flipped = condition.logical_not() if isinstance(condition, _Tensor) else ~condition
        return other.where(flipped, input, out=out)
    result = condition._pointwise(None, lambda c: torch.where(c, input, other), lock=False)
    return result if out is None else out.copy_(result)


# --- losses ----------------------------------------------------------------------------


def _loss(
    fn: Callable[..., torch.Tensor], input: Any, target: Any, reduction: str, **kw: Any
) -> Any:
    """A loss tensor by tensor: per element (``"none"``), or reduced over each tensor.
    The result is a new collection: unlocked, whatever the inputs' locks, its empty
    nested collections kept."""
    if not _is_collection(input):
        input, target = target, input  # a tensor target on the left: swap (losses commute)
    per_element = functools.partial(fn, reduction="none", **kw)
    # empty nested collections kept (the peer's loss keeps them, unlike its binary ops)
    each = input._pointwise(None, per_element, (target,), arithmetic=True, lock=False)
    if reduction == "none":
        return each
    if reduction in ("mean", "sum"):
        return each.mean() if reduction == "mean" else each.sum()
    msg = f"{fn.__name__}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}"
    raise OperandError(msg)


@implements(F.mse_loss)
def _mse_loss(
    input: Any,
    target: Any,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    weight: Any = None,
) -> Any:
    return _loss(F.mse_loss, input, target, reduction)


@implements(F.l1_loss)
def _l1_loss(
    input: Any,
    target: Any,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    weight: Any = None,
) -> Any:
    return _loss(F.l1_loss, input, target, reduction)


@implements(F.smooth_l1_loss)
def _smooth_l1_loss(
    input: Any,
    target: Any,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Any:
    return _loss(F.smooth_l1_loss, input, target, reduction, beta=beta)


# --- autograd --------------------------------------------------------------------------


def _tensors_of(values: Sequence[Any]) -> tuple[list[torch.Tensor], list[int]]:
    """The tensors of ``values`` (collections walked), and how many each gave."""
    leaves: list[torch.Tensor] = []
    counts = []
    for value in values:
        if isinstance(value, _Tensor):
            leaves.append(value)
            counts.append(1)
            continue
        walked = value._walk_leaves()
        leaves.extend(walked)
        counts.append(len(walked))
    return leaves, counts


@implements(torch.autograd.grad)
def _grad(outputs: Any, inputs: Any, grad_outputs: Any = None, **kwargs: Any) -> Any:
    """``torch.autograd.grad`` with collections among the outputs or the inputs: the
    gradients of collection inputs come back as collections shaped like them."""
    outputs = [outputs] if isinstance(outputs, (_Tensor, TensorCollection)) else list(outputs)
    inputs = [inputs] if isinstance(inputs, (_Tensor, TensorCollection)) else list(inputs)
    out_leaves, _ = _tensors_of(outputs)
    in_leaves, counts = _tensors_of(inputs)
    grad_leaves = None
    if grad_outputs is not None:
        given = (
            [grad_outputs]
            if isinstance(grad_outputs, (_Tensor, TensorCollection))
            else list(grad_outputs)
        )
        grad_leaves, _ = _tensors_of(given)
    grads = iter(torch.autograd.grad(out_leaves, in_leaves, grad_leaves, **kwargs))
    results: list[Any] = []
    for value, count in zip(inputs, counts):
        if isinstance(value, _Tensor):
            results.append(next(grads))
        else:
            results.append(value._rebuilt(iter([next(grads) for _ in range(count)]), None))
    # torch hands the inputs over as a tuple: one collection gives its gradients back as
    # one collection (as the peer does), anything else a tuple as torch returns.
    return results[0] if len(inputs) == 1 and _is_collection(inputs[0]) else tuple(results)


# --- shape functions: batch elements move, every tensor alike ----------------------------


@implements(torch.flip)
def _flip(input: Any, dims: int | Sequence[int]) -> Any:
    return input.flip(dims)


@implements(torch.fliplr)
def _fliplr(input: Any) -> Any:
    return input.fliplr()


@implements(torch.flipud)
def _flipud(input: Any) -> Any:
    if input.batch_dims < 1:
        raise DimError("flipud needs a batch dim; the batch size is []")
    return input.flip(0)


@implements(torch.roll)
def _roll(input: Any, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Any:
    return input.roll(shifts, dims)


@implements(torch.rot90)
def _rot90(input: Any, k: int = 1, dims: Sequence[int] = (0, 1)) -> Any:
    return input.rot90(k, dims)


@implements(torch.narrow)
def _narrow(input: Any, dim: int, start: int, length: int) -> Any:
    return input.narrow(dim, start, length)


@implements(torch.gather)
def _gather(
    input: Any, dim: int, index: torch.Tensor, *, sparse_grad: bool = False, out: Any = None
) -> Any:
    return input.gather(dim, index, out=out)


@implements(torch.masked_select)
def _masked_select(input: Any, mask: torch.Tensor) -> Any:
    return input.masked_select(mask)


@implements(torch.movedim, torch.moveaxis)
def _movedim(input: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
    return input.movedim(source, destination)


@implements(torch.swapaxes, torch.swapdims)
def _swapaxes(input: Any, dim0: int, dim1: int) -> Any:
    return input.transpose(dim0, dim1)


@implements(torch.transpose)
def _transpose(input: Any, dim0: int, dim1: int) -> Any:
    return input.transpose(dim0, dim1)


@implements(torch.flatten)
def _flatten(input: Any, start_dim: int = 0, end_dim: int = -1) -> Any:
    return input.flatten(start_dim, end_dim)


@implements(torch.unflatten)
def _unflatten(input: Any, dim: int, sizes: Sequence[int]) -> Any:
    return input.unflatten(dim, sizes)


@implements(torch.repeat_interleave)
def _repeat_interleave(
    input: Any,
    repeats: int | torch.Tensor,
    dim: int | None = None,
    *,
    output_size: int | None = None,
) -> Any:
    return input.repeat_interleave(repeats, dim, output_size=output_size)


@implements(torch.tensor_split)
def _tensor_split(input: Any, indices_or_sections: Any, dim: int = 0) -> tuple[Any, ...]:
    # the method: a lazy stack's pieces stay lazy stacks, a file's rows read into memory
    return tuple(input.tensor_split(indices_or_sections, dim))


@implements(torch.tile)
def _tile(input: Any, dims: Sequence[int]) -> Any:
    return input.tile(dims)


@implements(torch.broadcast_to)
def _broadcast_to(input: Any, size: Sequence[int]) -> Any:
    return input.broadcast_to(size)


def _at_least(ndim: int, collections: tuple[Any, ...]) -> Any:
    out = []
    for collection in collections:
        while collection.batch_dims < ndim:
            collection = collection.unsqueeze(0)
        out.append(collection)
    return out[0] if len(out) == 1 else tuple(out)


@implements(torch.atleast_1d)
def _atleast_1d(*collections: Any) -> Any:
    return _at_least(1, collections)


@implements(torch.atleast_2d)
def _atleast_2d(*collections: Any) -> Any:
    return _at_least(2, collections)


@implements(torch.atleast_3d)
def _atleast_3d(*collections: Any) -> Any:
    return _at_least(3, collections)
