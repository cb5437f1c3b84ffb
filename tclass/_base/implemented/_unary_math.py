"""Pointwise math of one operand on every tensor of a collection: ``exp``, ``sqrt``,
``nan_to_num``, ``isnan``...

The base of ``MathOps`` (``_math.py``): each method is written once here, with the peer's
name and signature, and goes through ``_pointwise`` (a new collection) or ``_pointwise_``
(in place) of ``_leaf_walk.py``, one fused ``torch._foreach_*`` kernel where torch has one.
"""

from __future__ import annotations

import torch
from typing_extensions import Self

from tclass._base.implemented._leaf_walk import LeafWalkOps
from tclass._core._dispatch import implements

__all__ = ["UnaryMathOps"]

_Tensor = torch.Tensor


class UnaryMathOps(LeafWalkOps):
    """Element-wise math of one operand, and the predicates (``isnan``...)."""

    __slots__ = ()

    # --- unary ---------------------------------------------------------------------------

    @implements(torch.abs, torch.absolute)
    def abs(self) -> Self:
        """``torch.abs`` of every tensor."""
        return self._pointwise(torch._foreach_abs, torch.abs, arithmetic=True)

    @implements(torch.abs_)
    def abs_(self) -> Self:
        """In-place :meth:`abs`."""
        return self._pointwise_(torch._foreach_abs_, _Tensor.abs_)

    @implements(torch.acos)
    def acos(self) -> Self:
        """``torch.acos`` of every tensor."""
        return self._pointwise(torch._foreach_acos, torch.acos, arithmetic=True)

    @implements(torch.acos_)
    def acos_(self) -> Self:
        """In-place :meth:`acos`."""
        return self._pointwise_(torch._foreach_acos_, _Tensor.acos_)

    @implements(torch.asin)
    def asin(self) -> Self:
        """``torch.asin`` of every tensor."""
        return self._pointwise(torch._foreach_asin, torch.asin, arithmetic=True)

    @implements(torch.asin_)
    def asin_(self) -> Self:
        """In-place :meth:`asin`."""
        return self._pointwise_(torch._foreach_asin_, _Tensor.asin_)

    @implements(torch.atan)
    def atan(self) -> Self:
        """``torch.atan`` of every tensor."""
        return self._pointwise(torch._foreach_atan, torch.atan, arithmetic=True)

    @implements(torch.atan_)
    def atan_(self) -> Self:
        """In-place :meth:`atan`."""
        return self._pointwise_(torch._foreach_atan_, _Tensor.atan_)

    @implements(torch.ceil)
    def ceil(self) -> Self:
        """``torch.ceil`` of every tensor."""
        return self._pointwise(torch._foreach_ceil, torch.ceil, arithmetic=True)

    @implements(torch.ceil_)
    def ceil_(self) -> Self:
        """In-place :meth:`ceil`."""
        return self._pointwise_(torch._foreach_ceil_, _Tensor.ceil_)

    @implements(torch.cos)
    def cos(self) -> Self:
        """``torch.cos`` of every tensor."""
        return self._pointwise(torch._foreach_cos, torch.cos, arithmetic=True)

    @implements(torch.cos_)
    def cos_(self) -> Self:
        """In-place :meth:`cos`."""
        return self._pointwise_(torch._foreach_cos_, _Tensor.cos_)

    @implements(torch.cosh)
    def cosh(self) -> Self:
        """``torch.cosh`` of every tensor."""
        return self._pointwise(torch._foreach_cosh, torch.cosh, arithmetic=True)

    @implements(torch.cosh_)
    def cosh_(self) -> Self:
        """In-place :meth:`cosh`."""
        return self._pointwise_(torch._foreach_cosh_, _Tensor.cosh_)

    @implements(torch.erf)
    def erf(self) -> Self:
        """``torch.erf`` of every tensor."""
        return self._pointwise(torch._foreach_erf, torch.erf, arithmetic=True)

    @implements(torch.erf_)
    def erf_(self) -> Self:
        """In-place :meth:`erf`."""
        return self._pointwise_(torch._foreach_erf_, _Tensor.erf_)

    @implements(torch.erfc)
    def erfc(self) -> Self:
        """``torch.erfc`` of every tensor."""
        return self._pointwise(torch._foreach_erfc, torch.erfc, arithmetic=True)

    @implements(torch.erfc_)
    def erfc_(self) -> Self:
        """In-place :meth:`erfc`."""
        return self._pointwise_(torch._foreach_erfc_, _Tensor.erfc_)

    @implements(torch.exp)
    def exp(self) -> Self:
        """``torch.exp`` of every tensor."""
        return self._pointwise(torch._foreach_exp, torch.exp, arithmetic=True)

    @implements(torch.exp_)
    def exp_(self) -> Self:
        """In-place :meth:`exp`."""
        return self._pointwise_(torch._foreach_exp_, _Tensor.exp_)

    @implements(torch.expm1)
    def expm1(self) -> Self:
        """``torch.expm1`` of every tensor."""
        return self._pointwise(torch._foreach_expm1, torch.expm1, arithmetic=True)

    @implements(torch.expm1_)
    def expm1_(self) -> Self:
        """In-place :meth:`expm1`."""
        return self._pointwise_(torch._foreach_expm1_, _Tensor.expm1_)

    @implements(torch.floor)
    def floor(self) -> Self:
        """``torch.floor`` of every tensor."""
        return self._pointwise(torch._foreach_floor, torch.floor, arithmetic=True)

    @implements(torch.floor_)
    def floor_(self) -> Self:
        """In-place :meth:`floor`."""
        return self._pointwise_(torch._foreach_floor_, _Tensor.floor_)

    @implements(torch.frac)
    def frac(self) -> Self:
        """``torch.frac`` of every tensor."""
        return self._pointwise(torch._foreach_frac, torch.frac, arithmetic=True)

    @implements(torch.frac_)
    def frac_(self) -> Self:
        """In-place :meth:`frac`."""
        return self._pointwise_(torch._foreach_frac_, _Tensor.frac_)

    @implements(torch.lgamma)
    def lgamma(self) -> Self:
        """``torch.lgamma`` of every tensor."""
        return self._pointwise(torch._foreach_lgamma, torch.lgamma, arithmetic=True)

    def lgamma_(self) -> Self:
        """In-place :meth:`lgamma`."""
        return self._pointwise_(torch._foreach_lgamma_, _Tensor.lgamma_)

    @implements(torch.log)
    def log(self) -> Self:
        """``torch.log`` of every tensor."""
        return self._pointwise(torch._foreach_log, torch.log, arithmetic=True)

    @implements(torch.log_)
    def log_(self) -> Self:
        """In-place :meth:`log`."""
        return self._pointwise_(torch._foreach_log_, _Tensor.log_)

    @implements(torch.log10)
    def log10(self) -> Self:
        """``torch.log10`` of every tensor."""
        return self._pointwise(torch._foreach_log10, torch.log10, arithmetic=True)

    @implements(torch.log10_)
    def log10_(self) -> Self:
        """In-place :meth:`log10`."""
        return self._pointwise_(torch._foreach_log10_, _Tensor.log10_)

    @implements(torch.log1p)
    def log1p(self) -> Self:
        """``torch.log1p`` of every tensor."""
        return self._pointwise(torch._foreach_log1p, torch.log1p, arithmetic=True)

    @implements(torch.log1p_)
    def log1p_(self) -> Self:
        """In-place :meth:`log1p`."""
        return self._pointwise_(torch._foreach_log1p_, _Tensor.log1p_)

    @implements(torch.log2)
    def log2(self) -> Self:
        """``torch.log2`` of every tensor."""
        return self._pointwise(torch._foreach_log2, torch.log2, arithmetic=True)

    @implements(torch.log2_)
    def log2_(self) -> Self:
        """In-place :meth:`log2`."""
        return self._pointwise_(torch._foreach_log2_, _Tensor.log2_)

    @implements(torch.neg, torch.negative)
    def neg(self) -> Self:
        """``torch.neg`` of every tensor (also ``-collection``)."""
        return self._pointwise(torch._foreach_neg, torch.neg, arithmetic=True)

    @implements(torch.neg_)
    def neg_(self) -> Self:
        """In-place :meth:`neg`."""
        return self._pointwise_(torch._foreach_neg_, _Tensor.neg_)

    @implements(torch.reciprocal)
    def reciprocal(self) -> Self:
        """``torch.reciprocal`` of every tensor."""
        return self._pointwise(torch._foreach_reciprocal, torch.reciprocal, arithmetic=True)

    @implements(torch.reciprocal_)
    def reciprocal_(self) -> Self:
        """In-place :meth:`reciprocal`."""
        return self._pointwise_(torch._foreach_reciprocal_, _Tensor.reciprocal_)

    @implements(torch.round)
    def round(self, *, decimals: int = 0) -> Self:
        """``torch.round`` of every tensor (to ``decimals`` places)."""
        if decimals:
            return self._pointwise(
                None, torch.round, kwargs={"decimals": decimals}, arithmetic=True
            )
        return self._pointwise(torch._foreach_round, torch.round, arithmetic=True)

    @implements(torch.round_)
    def round_(self, *, decimals: int = 0) -> Self:
        """In-place :meth:`round`."""
        if decimals:
            return self._pointwise_(None, _Tensor.round_, kwargs={"decimals": decimals})
        return self._pointwise_(torch._foreach_round_, _Tensor.round_)

    @implements(torch.rsqrt)
    def rsqrt(self) -> Self:
        """``torch.rsqrt`` of every tensor."""
        return self._pointwise(torch._foreach_rsqrt, torch.rsqrt, arithmetic=True)

    @implements(torch.rsqrt_)
    def rsqrt_(self) -> Self:
        """In-place :meth:`rsqrt`."""
        return self._pointwise_(torch._foreach_rsqrt_, _Tensor.rsqrt_)

    @implements(torch.sigmoid)
    def sigmoid(self) -> Self:
        """``torch.sigmoid`` of every tensor."""
        return self._pointwise(torch._foreach_sigmoid, torch.sigmoid, arithmetic=True)

    @implements(torch.sigmoid_)
    def sigmoid_(self) -> Self:
        """In-place :meth:`sigmoid`."""
        return self._pointwise_(torch._foreach_sigmoid_, _Tensor.sigmoid_)

    @implements(torch.sign)
    def sign(self) -> Self:
        """``torch.sign`` of every tensor."""
        return self._pointwise(torch._foreach_sign, torch.sign, arithmetic=True)

    def sign_(self) -> Self:
        """In-place :meth:`sign`."""
        return self._pointwise_(torch._foreach_sign_, _Tensor.sign_)

    @implements(torch.sin)
    def sin(self) -> Self:
        """``torch.sin`` of every tensor."""
        return self._pointwise(torch._foreach_sin, torch.sin, arithmetic=True)

    @implements(torch.sin_)
    def sin_(self) -> Self:
        """In-place :meth:`sin`."""
        return self._pointwise_(torch._foreach_sin_, _Tensor.sin_)

    @implements(torch.sinh)
    def sinh(self) -> Self:
        """``torch.sinh`` of every tensor."""
        return self._pointwise(torch._foreach_sinh, torch.sinh, arithmetic=True)

    @implements(torch.sinh_)
    def sinh_(self) -> Self:
        """In-place :meth:`sinh`."""
        return self._pointwise_(torch._foreach_sinh_, _Tensor.sinh_)

    @implements(torch.sqrt)
    def sqrt(self) -> Self:
        """``torch.sqrt`` of every tensor."""
        return self._pointwise(torch._foreach_sqrt, torch.sqrt, arithmetic=True)

    @implements(torch.sqrt_)
    def sqrt_(self) -> Self:
        """In-place :meth:`sqrt`."""
        return self._pointwise_(torch._foreach_sqrt_, _Tensor.sqrt_)

    @implements(torch.tan)
    def tan(self) -> Self:
        """``torch.tan`` of every tensor."""
        return self._pointwise(torch._foreach_tan, torch.tan, arithmetic=True)

    @implements(torch.tan_)
    def tan_(self) -> Self:
        """In-place :meth:`tan`."""
        return self._pointwise_(torch._foreach_tan_, _Tensor.tan_)

    @implements(torch.tanh)
    def tanh(self) -> Self:
        """``torch.tanh`` of every tensor."""
        return self._pointwise(torch._foreach_tanh, torch.tanh, arithmetic=True)

    @implements(torch.tanh_)
    def tanh_(self) -> Self:
        """In-place :meth:`tanh`."""
        return self._pointwise_(torch._foreach_tanh_, _Tensor.tanh_)

    @implements(torch.trunc, torch.fix)
    def trunc(self) -> Self:
        """``torch.trunc`` of every tensor."""
        return self._pointwise(torch._foreach_trunc, torch.trunc, arithmetic=True)

    @implements(torch.trunc_)
    def trunc_(self) -> Self:
        """In-place :meth:`trunc`."""
        return self._pointwise_(torch._foreach_trunc_, _Tensor.trunc_)

    @implements(torch.nan_to_num)
    def nan_to_num(
        self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
    ) -> Self:
        """``torch.nan_to_num`` of every tensor."""
        kwargs = {"nan": nan, "posinf": posinf, "neginf": neginf}
        return self._pointwise(None, torch.nan_to_num, kwargs=kwargs)

    @implements(torch.nan_to_num_)
    def nan_to_num_(
        self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
    ) -> Self:
        """In-place :meth:`nan_to_num`."""
        kwargs = {"nan": nan, "posinf": posinf, "neginf": neginf}
        return self._pointwise_(None, _Tensor.nan_to_num_, kwargs=kwargs)

    # --- predicates ----------------------------------------------------------------------

    @implements(torch.isnan)
    def isnan(self) -> Self:
        """A bool collection: ``torch.isnan`` of every tensor."""
        return self._pointwise(None, torch.isnan)

    @implements(torch.isfinite)
    def isfinite(self) -> Self:
        """A bool collection: ``torch.isfinite`` of every tensor."""
        return self._pointwise(None, torch.isfinite)

    @implements(torch.isinf)
    def isinf(self) -> Self:
        """A bool collection: ``torch.isinf`` of every tensor."""
        return self._pointwise(None, torch.isinf)

    @implements(torch.isneginf)
    def isneginf(self) -> Self:
        """A bool collection: ``torch.isneginf`` of every tensor."""
        return self._pointwise(None, torch.isneginf)

    @implements(torch.isposinf)
    def isposinf(self) -> Self:
        """A bool collection: ``torch.isposinf`` of every tensor."""
        return self._pointwise(None, torch.isposinf)

    @implements(torch.isreal)
    def isreal(self) -> Self:
        """A bool collection: ``torch.isreal`` of every tensor."""
        return self._pointwise(None, torch.isreal)
