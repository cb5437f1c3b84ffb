"""A Python number given to a fused kernel as a 0-d tensor of the tensors' dtype.

On CPU, torch's fused kernels (``torch._foreach_mul_(tensors, 0.99)``) run tensor by
tensor, and each tensor's operation wraps the number in a new 0-d tensor first: on a
model's 200 parameters that wrapping takes longer than the arithmetic of the smaller
tensors (``_foreach_mul_`` of a number 3-4x the time of ``_foreach_mul_`` of a list of
tensors, on one-element tensors). The same kernels given the number as one 0-d tensor
of the tensors' dtype, listed once per tensor, wrap nothing.

The results are the same bits: for ``float32`` and ``float64`` tensors torch computes in
their own dtype (its "opmath" type), and reads the number as a value of that dtype
either way (a wrapped ``float`` is rounded to it as ``torch.tensor(x, dtype=...)``
rounds it; an ``int`` up to 2**24 is exact in both;
``tests/base/test_scalar_operand.py`` compares the bits). Not routed, so as torch runs
them: half precision (a float16 0-d tensor gives other bits than torch's kernels),
integer and complex tensors, a mix of dtypes, a first tensor off the CPU (whose fused
kernels take numbers as they are), subclasses (their
``__torch_function__`` would see another argument), a tensor requiring grad while
autograd records (its graph would hold another node), ``bool`` and ``complex`` numbers,
a float32 overflow, keyword arguments (``alpha``), traced or transformed code and
dispatch modes.

The 0-d tensor of a number and dtype is built once and kept (:func:`_zero_d`): building
it (``aten::full`` and ``aten::empty``) is a tenth of the Python time of
``params.mul_(0.99)``. No one else holds it, so no operation writes into it: it only
ever goes to these kernels as their operand (which they read), never to a result. Not
kept: zeros (``0.0`` and ``-0.0`` are equal keys but not the same operand), NaN (never
equal to itself) and those built under inference mode (inference tensors).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch._C import _are_functorch_transforms_active as _transforms_active

from tclass._base.implemented._inplace import remembered_kinds

__all__ = ["ROUTED", "number_kinds", "tensor_operand"]

ROUTED = frozenset(  # the kernels a number goes to as 0-d tensors
    {
        torch._foreach_add,
        torch._foreach_add_,
        torch._foreach_sub,
        torch._foreach_sub_,
        torch._foreach_mul,
        torch._foreach_mul_,
        torch._foreach_div,
        torch._foreach_div_,
    }
)
# The kinds of tensor a number can go to as a 0-d tensor: (class, dtype, requires_grad).
_PLAIN = frozenset(
    (kind, dtype, grad)
    for kind in (torch.Tensor, torch.nn.Parameter)
    for dtype in (torch.float32, torch.float64)
    for grad in (False, True)
)
_kind_of = operator.attrgetter("__class__", "dtype", "requires_grad")
_FLOAT32_MAX = float(torch.finfo(torch.float32).max)
_INT_LIMIT = 1 << 24  # ints exact in float32 (and float64)
_is_compiling = torch.compiler.is_compiling
_inference = torch.is_inference_mode_enabled
# The 0-d tensor of each (number, dtype) given to a kernel (never written: see above).
_ZERO_D: dict[tuple[int | float, torch.dtype], torch.Tensor] = {}
_MOST_ZERO_D = 256


def number_kinds(
    foreach: Callable[..., Any] | None,
    leaves: list[torch.Tensor],
    operands: Sequence[Any],
    kwargs: Any,
) -> frozenset[tuple[Any, ...]] | None:
    """Each kind of tensor among ``leaves`` (class, dtype, ``requires_grad``), read where
    :func:`tensor_operand` would read them (one Python number, a routed kernel, CPU
    tensors, nothing traced), else None: read once, these also give the in-place check
    the dtypes and ``requires_grad`` it needs (``_inplace.first_refusal``), so that the
    tensors' metadata is read in one pass, not in three; where the last tensors of
    one kind read for as many tensors pass a guard of theirs, not read at all
    (``_inplace.remembered_kinds``)."""
    if foreach not in ROUTED or kwargs or len(operands) != 1 or not leaves:
        return None
    number = operands[0]
    kind = number.__class__
    if kind is float:
        pass
    elif kind is not int or not -_INT_LIMIT <= number <= _INT_LIMIT:
        return None
    if not leaves[0].is_cpu or _transforms_active() or _is_compiling():
        return None
    if torch._C._len_torch_dispatch_stack():  # a mode (fake tensors...) decides for itself
        return None
    return remembered_kinds(leaves, _kind_of)


def tensor_operand(
    foreach: Callable[..., Any] | None,
    leaves: list[torch.Tensor],
    operands: Sequence[Any],
    kwargs: Any,
    kinds: frozenset[tuple[Any, ...]] | None = None,
) -> list[Any] | None:
    """``operands`` with its one Python number replaced by a list holding, once per leaf,
    a 0-d tensor of the leaves' dtype, where ``foreach`` gives the same results that way
    (see the module docstring); None where it is left as it is. ``kinds``: what
    :func:`number_kinds` gave for these arguments (else read here)."""
    if kinds is None:
        kinds = number_kinds(foreach, leaves, operands, kwargs)
        if kinds is None:
            return None
    if len(kinds) != 1 or not kinds <= _PLAIN:
        return None
    ((_, dtype, grad),) = kinds
    if grad and torch.is_grad_enabled():
        return None
    number = operands[0]
    if dtype is torch.float32 and number.__class__ is float and abs(number) > _FLOAT32_MAX:
        return None  # (inf and nan pass: they are float32 values)
    return [[_zero_d(number, dtype)] * len(leaves)]


def _zero_d(number: int | float, dtype: torch.dtype) -> torch.Tensor:
    """The 0-d tensor of ``dtype`` holding ``number``: the one kept for them, else new
    (and kept, but for a zero, a NaN or under inference mode)."""
    key = (number, dtype)
    found = _ZERO_D.get(key)
    if found is not None:
        return found
    made = torch.full((), number, dtype=dtype)
    if number and number == number and not _inference():
        if len(_ZERO_D) >= _MOST_ZERO_D:
            _ZERO_D.clear()
        _ZERO_D[key] = made
    return made
