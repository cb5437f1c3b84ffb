"""Python's operators on collections: ``td + 1``, ``1 - td``, ``td *= 0.5``, ``-td``,
``abs(td)``, ``td < 0``, ``mask & other``, ``~mask``...

Each operator is the pointwise operation of ``_math.py`` on every tensor, with a
number, a tensor over the batch dims (lined up with the last batch dims, as torch
broadcasts) or a collection holding the same keys. Reflected forms (``1 - td``,
``tensor * td``) put the operand on the left; in-place forms (``td += 1``) write into the
existing tensors, so they work on locked and memory-mapped collections. Any other operand
gives ``NotImplemented``, so Python tries the operand's own operator and then raises
``TypeError``. ``==`` and ``!=`` live with the other element-wise operations.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch
from typing_extensions import Self

from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._leaf_rules import unnamed
from tclass._base.implemented._leaf_walk import as_scalar, refuse_operand, without_empty
from tclass._base.implemented._math import MathOps, Operand, bool_exponent

__all__ = ["OperatorOps"]

_Tensor = torch.Tensor


def _takes(other: object, operator: str) -> bool:
    """Whether an operator takes ``other``: a number, a tensor or a collection. A list or
    tuple is refused here (``OperandError``), not left to Python's ``TypeError``: the
    peer reads one as long as the leaves as one number per leaf (see refuse_operand); a
    string too, with the same error (a ``TypeError``, as Python's). A collection or a
    tensor is asked first: an ``isinstance`` that fails against a tuple of four builtins
    reads the operand's ``__class__`` for each, a third of a record operator's checks."""
    if isinstance(other, (TensorCollection, _Tensor)):
        return True
    if isinstance(other, (list, tuple, str, bytes)):  # (str has no reflected form either)
        raise refuse_operand(operator, other)
    return as_scalar(other) is not None


def _value_logic(op: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    """What ``|`` / ``^`` make of a Python-value node: with a single value facing it, a
    bool mask of ``op`` of the two values (as the peer); else the node, kept."""

    def values(node: Any, *others: Any) -> Any:
        return node._logic(op, *others)

    return values


_LOGIC_OR = _value_logic(operator.or_)
_LOGIC_XOR = _value_logic(operator.xor)


class OperatorOps(MathOps):
    """Arithmetic, ordering and bitwise operators, with their reflected and in-place forms."""

    __slots__ = ()

    # --- arithmetic (as the peer: nested collections holding nothing are left out) -------

    def __add__(self, other: Operand) -> Self:
        if not _takes(other, "+"):
            return NotImplemented
        return self._pointwise(
            torch._foreach_add, torch.add, (other,), arithmetic=True, drop_empty=True
        )

    def __radd__(self, other: Operand) -> Self:
        return self.__add__(other)

    def __iadd__(self, other: Operand) -> Self:
        if not _takes(other, "+="):
            return NotImplemented
        return self._pointwise_(torch._foreach_add_, _Tensor.add_, (other,), operation="+=")

    def __sub__(self, other: Operand) -> Self:
        if not _takes(other, "-"):
            return NotImplemented
        return self._pointwise(
            torch._foreach_sub, torch.sub, (other,), arithmetic=True, drop_empty=True
        )

    def __rsub__(self, other: Operand) -> Self:
        if not _takes(other, "reflected -"):
            return NotImplemented
        return self._pointwise(None, torch.rsub, (other,), arithmetic=True, drop_empty=True)

    def __isub__(self, other: Operand) -> Self:
        if not _takes(other, "-="):
            return NotImplemented
        return self._pointwise_(torch._foreach_sub_, _Tensor.sub_, (other,), operation="-=")

    def __mul__(self, other: Operand) -> Self:
        if not _takes(other, "*"):
            return NotImplemented
        return self._pointwise(
            torch._foreach_mul, torch.mul, (other,), arithmetic=True, drop_empty=True
        )

    def __rmul__(self, other: Operand) -> Self:
        return self.__mul__(other)

    def __imul__(self, other: Operand) -> Self:
        if not _takes(other, "*="):
            return NotImplemented
        return self._pointwise_(torch._foreach_mul_, _Tensor.mul_, (other,), operation="*=")

    def __truediv__(self, other: Operand) -> Self:
        if not _takes(other, "/"):
            return NotImplemented
        return self._pointwise(
            torch._foreach_div, torch.div, (other,), arithmetic=True, drop_empty=True
        )

    def __rtruediv__(self, other: Operand) -> Self:
        if not _takes(other, "reflected /"):
            return NotImplemented
        return self._pointwise(None, _reflected_div, (other,), arithmetic=True, drop_empty=True)

    def __itruediv__(self, other: Operand) -> Self:
        if not _takes(other, "/="):
            return NotImplemented
        return self._pointwise_(torch._foreach_div_, _Tensor.div_, (other,), operation="/=")

    def __floordiv__(self, other: Operand) -> Self:
        if not _takes(other, "//"):
            return NotImplemented
        return self._pointwise(None, torch.floor_divide, (other,), arithmetic=True, drop_empty=True)

    def __rfloordiv__(self, other: Operand) -> Self:
        if not _takes(other, "reflected //"):
            return NotImplemented
        return self._pointwise(
            None, _reflected_floor_divide, (other,), arithmetic=True, drop_empty=True
        )

    def __ifloordiv__(self, other: Operand) -> Self:
        if not _takes(other, "//="):
            return NotImplemented
        return self._pointwise_(None, _Tensor.floor_divide_, (other,), operation="//=")

    def __mod__(self, other: Operand) -> Self:
        if not _takes(other, "%"):
            return NotImplemented
        return self._pointwise(
            None, torch.remainder, (other,), arithmetic=True, drop_empty=True, without_tensors=True
        )

    def __rmod__(self, other: Operand) -> Self:
        if not _takes(other, "reflected %"):
            return NotImplemented
        return self._pointwise(
            None,
            _reflected_remainder,
            (other,),
            arithmetic=True,
            drop_empty=True,
            without_tensors=True,
        )

    def __imod__(self, other: Operand) -> Self:
        if not _takes(other, "%="):
            return NotImplemented
        return self._pointwise_(None, _Tensor.remainder_, (other,), operation="%=")

    def __pow__(self, other: Operand) -> Self:
        if not _takes(other, "**"):
            return NotImplemented
        return without_empty(
            self._pointwise(
                torch._foreach_pow, torch.pow, (bool_exponent(other),), arithmetic=True
            ),
            other,
        )

    def __rpow__(self, other: Operand) -> Self:
        if not _takes(other, "reflected **"):
            return NotImplemented
        return self._pointwise(
            _foreach_rpow, _reflected_pow, (other,), arithmetic=True, drop_empty=True
        )

    def __ipow__(self, other: Operand) -> Self:
        if not _takes(other, "**="):
            return NotImplemented
        return self._pointwise_(torch._foreach_pow_, _Tensor.pow_, (other,), operation="**=")

    # --- unary ---------------------------------------------------------------------------

    def __neg__(self) -> Self:
        return self._pointwise(torch._foreach_neg, torch.neg, arithmetic=True)

    def __abs__(self) -> Self:
        return self._pointwise(torch._foreach_abs, torch.abs, arithmetic=True)

    def __invert__(self) -> Self:
        return self._pointwise(None, torch.bitwise_not)

    # --- ordering (bool collections; Python values are kept as they are; as in the peer,
    # the results have no dim names) ------------------------------------------------------

    def __lt__(self, other: Operand) -> Self:
        if not _takes(other, "<"):
            return NotImplemented
        return unnamed(self._pointwise(None, torch.lt, (other,), lock=False), other)

    def __le__(self, other: Operand) -> Self:
        if not _takes(other, "<="):
            return NotImplemented
        return unnamed(self._pointwise(None, torch.le, (other,), lock=False), other)

    def __gt__(self, other: Operand) -> Self:
        if not _takes(other, ">"):
            return NotImplemented
        return unnamed(self._pointwise(None, torch.gt, (other,), lock=False), other)

    def __ge__(self, other: Operand) -> Self:
        if not _takes(other, ">="):
            return NotImplemented
        return unnamed(self._pointwise(None, torch.ge, (other,), lock=False), other)

    # --- bitwise (bool masks, integer tensors) --------------------------------------------

    def __and__(self, other: Operand) -> Self:
        if not _takes(other, "&"):
            return NotImplemented
        return without_empty(self._pointwise(None, torch.bitwise_and, (other,)), other, always=True)

    def __rand__(self, other: Operand) -> Self:
        return self.__and__(other)

    def __iand__(self, other: Operand) -> Self:
        if not _takes(other, "&="):
            return NotImplemented
        return self._pointwise_(None, _Tensor.bitwise_and_, (other,), operation="&=")

    def __or__(self, other: Operand) -> Self:
        if not _takes(other, "|"):
            return NotImplemented
        # As the peer: unlocked, and without dim names unless `other` is a tensor with dims.
        result = self._pointwise(None, torch.bitwise_or, (other,), lock=False, values=_LOGIC_OR)
        return unnamed(result, other)

    def __ror__(self, other: Operand) -> Self:
        return self.__or__(other)

    def __ior__(self, other: Operand) -> Self:
        if not _takes(other, "|="):
            return NotImplemented
        return self._pointwise_(None, _Tensor.bitwise_or_, (other,), operation="|=")

    def __xor__(self, other: Operand) -> Self:
        if not _takes(other, "^"):
            return NotImplemented
        # As the peer: unlocked, and without dim names unless `other` is a tensor with dims.
        result = self._pointwise(None, torch.bitwise_xor, (other,), lock=False, values=_LOGIC_XOR)
        return unnamed(result, other)

    def __rxor__(self, other: Operand) -> Self:
        return self.__xor__(other)

    def __ixor__(self, other: Operand) -> Self:
        if not _takes(other, "^="):
            return NotImplemented
        return self._pointwise_(None, _Tensor.bitwise_xor_, (other,), operation="^=")


# The reflected operations: the operand on the left of each tensor, as Python computes
# `operand <op> tensor` for a number or a tensor.


def _reflected_div(tensor: torch.Tensor, other: Any) -> torch.Tensor:
    return other / tensor  # type: ignore[no-any-return]


def _reflected_floor_divide(tensor: torch.Tensor, other: Any) -> torch.Tensor:
    return other // tensor  # type: ignore[no-any-return]


def _reflected_remainder(tensor: torch.Tensor, other: Any) -> torch.Tensor:
    return other % tensor  # type: ignore[no-any-return]


def _reflected_pow(tensor: torch.Tensor, other: Any) -> torch.Tensor:
    return other**tensor  # type: ignore[no-any-return]


def _foreach_rpow(tensors: list[torch.Tensor], base: Any) -> Sequence[torch.Tensor]:
    """``base ** tensor`` for every tensor with the fused kernel (a number ``base`` only)."""
    if isinstance(base, list):
        raise TypeError("one base per tensor: computed tensor by tensor")
    return torch._foreach_pow(base, tensors)
