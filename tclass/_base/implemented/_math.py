"""Pointwise math on every tensor of a collection: ``exp``, ``add``, ``clamp``, ``lerp``...

Each method is written once here, with the peer's name and signature, and answered by
every collection: TensorDicts, lazy stacks (member by member, never densified), records
(which keep their class) and memory-mapped collections (in-place forms write into the
files). All go through two helpers of ``_leaf_walk.py``, ``_pointwise`` (a new
collection) and ``_pointwise_`` (in place), which gather the tensors of the whole tree,
run one fused ``torch._foreach_*`` kernel where torch has one for the arguments (else the
torch function tensor by tensor) and rebuild the tree. The methods of one operand
(``exp``, ``isnan``...) are in ``_unary_math.py``, the base of ``MathOps``.

Results keep the class, batch size, device and lock state and the Python values, which
are shared, not copied. As in the peer, ``clamp`` with both bounds, ``masked_fill`` and
``where`` with a collection give unlocked results, as do comparisons (``_operators.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias, cast

import torch
from torch._C import _are_functorch_transforms_active as _transforms_active
from typing_extensions import Self

from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._entry_walk import _value_paths
from tclass._base.implemented._leaf_walk import without_empty, writing_out_of
from tclass._base.implemented._staged_writes import shares_memory
from tclass._base.implemented._unary_math import UnaryMathOps
from tclass._core._dispatch import implements
from tclass._core._records import storage_of
from tclass.errors import GradError, MetaTensorError, OperandError

__all__ = ["Operand", "MathOps", "into_out", "refuse_out_with_grad"]

Operand: TypeAlias = TensorCollection | torch.Tensor | float | int | bool | complex
"""What binary math takes: a number, a tensor over the batch dims, or a collection."""

_Tensor = torch.Tensor


class MathOps(UnaryMathOps):
    """Element-wise math shared by every collection."""

    __slots__ = ()

    def _binary(
        self,
        foreach: Callable[..., Any] | None,
        each: Callable[..., Any],
        other: Any,
        default: Any,
        kwargs: dict[str, Any] | None = None,
        operation: str = "",
        *,
        without_tensors: bool = False,
    ) -> Self:
        """``_pointwise`` with one operand, after ``default=`` has completed or restricted
        the two key sets where they differ (``without_tensors``: see ``without_empty``)."""
        if default is not None and isinstance(other, TensorCollection):
            mine, theirs = _align_keys(self, other, default)
            out = mine._binary(
                foreach, each, theirs, None, kwargs, operation, without_tensors=without_tensors
            )
            # locked like ``self``, as without ``default`` (the aligned copy is not locked);
            # of a collection holding no tensor (nothing, or Python values only), a new
            # unlocked one (``_leaf_walk._unlocks``), as the peer's (of Python values only,
            # locked for the ops ``without_tensors``)
            holds_tensors = next(iter(self._tensor_leaves()), None) is not None
            kept = holds_tensors or (without_tensors and not self.is_empty())
            locked = self._results_locked() and not out.is_locked and kept
            return cast(Self, out.lock_() if locked else out)
        # As the peer: nested collections holding nothing are left out of the result.
        return self._pointwise(
            foreach,
            each,
            (other,),
            kwargs,
            operation=operation,
            arithmetic=True,
            drop_empty=True,
            without_tensors=without_tensors,
        )

    # --- binary --------------------------------------------------------------------------
    # `other`: a number, a tensor over the batch dims (lined up with the last ones, as
    # torch broadcasts) or a collection with the same keys. `default`: where the keys of
    # two collections differ, "intersection" keeps the common ones; a value fills in for
    # the missing side; None (the default) makes it an error naming the keys.

    def add(self, other: Operand, *, alpha: float | None = None, default: Any = None) -> Self:
        """``self + alpha * other``, tensor by tensor."""
        kwargs = None if alpha is None else {"alpha": alpha}
        return self._binary(torch._foreach_add, torch.add, other, default, kwargs, "add")

    def add_(self, other: Operand, *, alpha: float | None = None) -> Self:
        """In-place :meth:`add`."""
        kwargs = None if alpha is None else {"alpha": alpha}
        return self._pointwise_(
            torch._foreach_add_, _Tensor.add_, (other,), kwargs, operation="add_"
        )

    @implements(torch.sub)
    def sub(self, other: Operand, *, alpha: float | None = None, default: Any = None) -> Self:
        """``self - alpha * other``, tensor by tensor."""
        kwargs = None if alpha is None else {"alpha": alpha}
        return self._binary(torch._foreach_sub, torch.sub, other, default, kwargs, "sub")

    def sub_(self, other: Operand, alpha: float | None = None) -> Self:
        """In-place :meth:`sub`."""
        kwargs = None if alpha is None else {"alpha": alpha}
        return self._pointwise_(
            torch._foreach_sub_, _Tensor.sub_, (other,), kwargs, operation="sub_"
        )

    @implements(torch.rsub)
    def rsub(self, other: Operand, *, alpha: float | None = None, default: Any = None) -> Self:
        """``other - alpha * self``, tensor by tensor."""
        kwargs = None if alpha is None else {"alpha": alpha}
        return self._binary(None, torch.rsub, other, default, kwargs, "rsub")

    def mul(self, other: Operand, *, default: Any = None) -> Self:
        """``self * other``, tensor by tensor."""
        return self._binary(torch._foreach_mul, torch.mul, other, default, None, "mul")

    def mul_(self, other: Operand) -> Self:
        """In-place :meth:`mul`."""
        return self._pointwise_(torch._foreach_mul_, _Tensor.mul_, (other,), operation="mul_")

    @implements(torch.div)
    def div(self, other: Operand, *, rounding_mode: str | None = None, default: Any = None) -> Self:
        """``self / other`` (``rounding_mode`` as ``torch.div``), tensor by tensor."""
        if rounding_mode is not None:
            kwargs = {"rounding_mode": rounding_mode}
            return self._binary(None, torch.div, other, default, kwargs, "div")
        return self._binary(torch._foreach_div, torch.div, other, default, None, "div")

    def div_(self, other: Operand, *, rounding_mode: str | None = None) -> Self:
        """In-place :meth:`div`."""
        if rounding_mode is not None:
            kwargs = {"rounding_mode": rounding_mode}
            return self._pointwise_(None, _Tensor.div_, (other,), kwargs, operation="div_")
        return self._pointwise_(torch._foreach_div_, _Tensor.div_, (other,), operation="div_")

    def pow(self, other: Operand, *, default: Any = None) -> Self:
        """``self ** other``, tensor by tensor."""
        return self._binary(
            torch._foreach_pow, torch.pow, bool_exponent(other), default, None, "pow"
        )

    def pow_(self, other: Operand) -> Self:
        """In-place :meth:`pow`."""
        return self._pointwise_(torch._foreach_pow_, _Tensor.pow_, (other,), operation="pow_")

    @implements(torch.remainder)
    def mod(self, other: Operand, *, default: Any = None) -> Self:
        """``self % other`` (``torch.remainder``), tensor by tensor."""
        return self._binary(
            None, torch.remainder, other, default, None, "mod", without_tensors=True
        )

    def maximum(self, other: Operand, *, default: Any = None) -> Self:
        """The element-wise maximum of ``self`` and ``other`` (a number bounds below)."""
        return self._binary(torch._foreach_maximum, _maximum, other, default, None, "maximum")

    def maximum_(self, other: Operand) -> Self:
        """In-place :meth:`maximum`."""
        return self._pointwise_(torch._foreach_maximum_, _maximum_, (other,), operation="maximum_")

    def minimum(self, other: Operand, *, default: Any = None) -> Self:
        """The element-wise minimum of ``self`` and ``other`` (a number bounds above)."""
        return self._binary(torch._foreach_minimum, _minimum, other, default, None, "minimum")

    def minimum_(self, other: Operand) -> Self:
        """In-place :meth:`minimum`."""
        return self._pointwise_(torch._foreach_minimum_, _minimum_, (other,), operation="minimum_")

    @implements(torch.clamp_min)
    def clamp_min(self, other: Operand, *, default: Any = None) -> Self:
        """``torch.clamp_min`` of every tensor: values below ``other`` raised to it."""
        return self._binary(
            torch._foreach_clamp_min, torch.clamp_min, other, default, None, "clamp_min"
        )

    @implements(torch.clamp_min_)
    def clamp_min_(self, other: Operand) -> Self:
        """In-place :meth:`clamp_min`."""
        return self._pointwise_(
            torch._foreach_clamp_min_,
            _Tensor.clamp_min_,
            (other,),
            operation="clamp_min_",
            promote_0d=True,  # a 0-d tensor bound promotes as torch promotes it
        )

    @implements(torch.clamp_max)
    def clamp_max(self, other: Operand, *, default: Any = None) -> Self:
        """``torch.clamp_max`` of every tensor: values above ``other`` lowered to it."""
        return self._binary(
            torch._foreach_clamp_max, torch.clamp_max, other, default, None, "clamp_max"
        )

    @implements(torch.clamp_max_)
    def clamp_max_(self, other: Operand) -> Self:
        """In-place :meth:`clamp_max`."""
        return self._pointwise_(
            torch._foreach_clamp_max_,
            _Tensor.clamp_max_,
            (other,),
            operation="clamp_max_",
            promote_0d=True,  # a 0-d tensor bound promotes as torch promotes it
        )

    @implements(torch.bitwise_and)
    def bitwise_and(self, other: Operand, *, default: Any = None) -> Self:
        """``torch.bitwise_and`` of every tensor with ``other`` (``&`` on bool masks)."""
        return self._binary(  # a collection without tensors drops them too, as the peer's
            None, torch.bitwise_and, other, default, None, "bitwise_and", without_tensors=True
        )

    @implements(torch.logical_and)
    def logical_and(self, other: Operand, *, default: Any = None) -> Self:
        """``torch.logical_and`` of every tensor with ``other`` (a bool collection)."""
        return self._binary(  # a collection without tensors drops them too, as the peer's
            None, torch.logical_and, other, default, None, "logical_and", without_tensors=True
        )

    # --- ternary -------------------------------------------------------------------------

    @implements(torch.clamp, torch.clip)
    def clamp(
        self,
        min: Operand | None = None,  # noqa: A002
        max: Operand | None = None,  # noqa: A002
        *,
        out: TensorCollection | None = None,
    ) -> Self:
        """``torch.clamp`` of every tensor between ``min`` and ``max`` (either may be
        None); with ``out``, the result is copied into ``out``'s tensors and ``out`` is
        returned."""
        _need_a_bound(min, max)
        # As the peer: one bound is clamp_min / clamp_max (locked like self, without the
        # nested collections that hold nothing), two unlock.
        one_bound = min is None or max is None
        result = self._pointwise(
            _foreach_clamp,
            torch.clamp,
            (min, max),
            operation="clamp",
            lock=one_bound,
            arithmetic=True,
            extra=not one_bound,  # (one bound: clamp_min / clamp_max, keys matched)
        )
        if one_bound:
            result = without_empty(result, max if min is None else min)
        if out is None:
            return result
        return cast(Self, into_out(out, result, "clamp"))

    @implements(torch.clamp_)
    def clamp_(self, min: Operand | None = None, max: Operand | None = None) -> Self:  # noqa: A002
        """In-place :meth:`clamp`."""
        _need_a_bound(min, max)
        return self._pointwise_(
            _foreach_clamp_, _Tensor.clamp_, (min, max), operation="clamp_", promote_0d=True
        )

    @implements(torch.lerp)
    def lerp(self, end: Operand, weight: Operand) -> Self:
        """``self + weight * (end - self)``, tensor by tensor."""
        return self._pointwise(
            torch._foreach_lerp,
            torch.lerp,
            (end, weight),
            operation="lerp",
            arithmetic=True,
            extra=True,
        )

    def lerp_(self, end: Operand, weight: Operand) -> Self:
        """In-place :meth:`lerp`."""
        return self._pointwise_(
            torch._foreach_lerp_, _Tensor.lerp_, (end, weight), operation="lerp_"
        )

    @implements(torch.addcmul)
    def addcmul(self, tensor1: Operand, tensor2: Operand, *, value: float = 1) -> Self:
        """``self + value * tensor1 * tensor2``, tensor by tensor."""
        return self._pointwise(
            torch._foreach_addcmul,
            torch.addcmul,
            (tensor1, tensor2),
            {"value": value},
            operation="addcmul",
            arithmetic=True,
            extra=True,
        )

    def addcmul_(self, tensor1: Operand, tensor2: Operand, *, value: float = 1) -> Self:
        """In-place :meth:`addcmul`."""
        return self._pointwise_(
            torch._foreach_addcmul_,
            _Tensor.addcmul_,
            (tensor1, tensor2),
            {"value": value},
            operation="addcmul_",
        )

    @implements(torch.addcdiv)
    def addcdiv(self, tensor1: Operand, tensor2: Operand, *, value: float = 1) -> Self:
        """``self + value * tensor1 / tensor2``, tensor by tensor."""
        return self._pointwise(
            torch._foreach_addcdiv,
            torch.addcdiv,
            (tensor1, tensor2),
            {"value": value},
            operation="addcdiv",
            arithmetic=True,
            extra=True,
        )

    def addcdiv_(self, tensor1: Operand, tensor2: Operand, *, value: float = 1) -> Self:
        """In-place :meth:`addcdiv`."""
        return self._pointwise_(
            torch._foreach_addcdiv_,
            _Tensor.addcdiv_,
            (tensor1, tensor2),
            {"value": value},
            operation="addcdiv_",
        )

    # --- selection (a condition or mask over the leading batch dims, or a collection) ----

    def where(
        self,
        condition: TensorCollection | torch.Tensor,
        other: Operand,
        *,
        out: TensorCollection | None = None,
        pad: float | None = None,
        update_batch_size: bool = False,
    ) -> Self:
        """``self`` where ``condition`` holds, else ``other``, tensor by tensor.

        ``condition`` is a bool tensor over the leading batch dims or a bool collection
        with these keys; ``other`` a number, a tensor over the leading batch dims or a
        collection; ``pad`` fills in for the entries ``other`` lacks; ``out`` receives
        the result (in place; with ``update_batch_size``, an ``out`` of another batch
        size takes the result's entries and batch size, see :meth:`update`).
        """
        source = self
        lock = not isinstance(other, TensorCollection)  # the peer's lock rule
        if pad is not None and isinstance(other, TensorCollection):
            source, other = _completed(self, other, pad)
        result = source._pointwise(
            None,
            _where,
            (condition, other),
            alignment="mask",
            operation="where",
            lock=lock,
            values=_where_value,
        )
        if lock and not result.is_locked and self._results_locked():
            result.lock_()  # a TensorDictParams's follows its TensorDict, as the peer's
        if out is None:
            return result
        if update_batch_size and out.batch_size != result.batch_size:
            return cast(Self, out.update(result, update_batch_size=True))
        return cast(Self, into_out(out, result, "where"))

    def masked_fill(self, mask: TensorCollection | torch.Tensor, value: float | bool) -> Self:
        """A copy where ``mask`` (over the leading batch dims, or a bool collection) is
        true set to ``value``; its Python values are copies, as :meth:`clone` gives them
        (the peer's masked_fill is a clone filled in place)."""
        return self._pointwise(
            None,
            _masked_filled,
            (mask, value),
            alignment="mask",
            operation="masked_fill",
            lock=False,
            values=_cloned_node,
        )

    def masked_fill_(self, mask: TensorCollection | torch.Tensor, value: float | bool) -> Self:
        """In-place :meth:`masked_fill`. A mask that is one of the collection's own
        tensors (``td.masked_fill_(td["done"], 0)``) is read before any is filled, so
        every entry is filled where it was true at the call."""
        if isinstance(mask, _Tensor) and any(
            shares_memory(leaf, mask) for leaf in self._tensor_leaves()
        ):
            mask = mask.clone()
        return self._pointwise_(
            None, _Tensor.masked_fill_, (mask, value), alignment="mask", operation="masked_fill_"
        )

    # --- writes --------------------------------------------------------------------------

    def copy_(self, src: TensorCollection | Any, non_blocking: bool = False) -> Self:
        """Copies ``src``'s tensors into these ones, in place, and writes its Python values
        as :meth:`update_` does (the peer's ``copy_`` is its ``update_``); ``src`` (a
        collection or a mapping) may hold only some of the keys, never others. Into a
        record over a ``TensorDictParams``, the parameters' data, outside autograd, as
        that one's ``copy_`` writes (and the peer's record)."""
        if storage_of(self)._copies_without_grad and torch.is_grad_enabled():
            with torch.no_grad():
                return self.copy_(src, non_blocking)
        if not isinstance(src, TensorCollection):
            src = self._new_like({}, self.batch_size, self.device).update(src)
        if self._is_lazy and src.batch_size != self.batch_size:
            # each tensor broadcast into its entry as torch (and a TensorDict) would,
            # member by member, not the source expanded to the stack's batch size first
            return self.update_(src, non_blocking=non_blocking)
        values = dict(_value_paths(src))
        for path in values:  # checked before any write, as the tensors' keys are
            if path not in self:
                raise self._missing_key(path[0] if len(path) == 1 else path)
        if values:  # records' Python values checked before the tensors are written
            cast(Any, self)._check_nested_writes(list(values.items()), ..., "copy_")
        if any(tensor.is_meta for tensor in src._tensor_leaves()):
            _refuse_meta(self, src)
        self._pointwise_(
            torch._foreach_copy_,
            _Tensor.copy_,
            (src,),
            {"non_blocking": non_blocking},
            subset=True,
            check="shapes",  # copy_ casts to any dtype
            writes=True,
        )
        # its Python values too, as update_ writes them (the peer's copy_ is its update_)
        return self.update_(values, non_blocking=non_blocking) if values else self

    @implements(torch.zero_)
    def zero_(self) -> Self:
        """Sets every tensor to zero in place (a nested TensorDictParams its parameters'
        data, as its own ``zero_``)."""
        return self._pointwise_(torch._foreach_zero_, _Tensor.zero_, check="none", on_data=True)

    @property
    def data(self) -> Self:
        """The same collection over each tensor's ``.data``: the same storage, outside
        autograd (``target.data.lerp_(online.data, tau)`` updates parameters in place),
        locked when views of it are (a TensorDictParams's: when its TensorDict is)."""
        out = self._pointwise(None, _data_of)
        return out.lock_() if self._results_locked() and not out.is_locked else out


def _align_keys(a: Any, b: Any, default: Any) -> tuple[Any, Any]:
    """``a`` and ``b`` restricted to their common keys (``default="intersection"``: the
    Python values ``a`` holds are kept, on its side only, as the peer's result keeps them)
    or completed with ``default`` where one lacks a key the other has. A lazy stack ``a``
    is aligned member by member with ``b``'s parts along its stack dim where the batch
    sizes agree: both stay lazy stacks (the result too), as in the peer."""
    if a._is_lazy and a.batch_size == b.batch_size:
        dim = a.stack_dim
        pairs = [_align_keys(m, p, default) for m, p in zip(a.tensordicts, b.unbind(dim))]
        return a._restacked([x for x, _ in pairs]), a._restacked([y for _, y in pairs])
    mine, theirs = a._entries(), b._entries()
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    for key in [*mine, *(k for k in theirs if k not in mine)]:
        x, y = mine.get(key), theirs.get(key)
        if x is None or y is None:
            if isinstance(default, str):
                if default != "intersection":
                    msg = f"default={default!r}: give 'intersection' or a value for missing entries"
                    raise OperandError(msg)
                if x is not None and getattr(x, "_is_value_node", False):
                    left[key] = x
                continue
            present = x if x is not None else y
            filler = _filled(present, default)
            x, y = (x, filler) if y is None else (filler, y)
        elif isinstance(x, TensorCollection) and isinstance(y, TensorCollection):
            x, y = _align_keys(x, y, default)
        left[key], right[key] = x, y
    return a._new_like(left, a.batch_size, a.device), b._new_like(right, b.batch_size, b.device)


def _completed(a: Any, b: Any, value: Any) -> tuple[Any, Any]:
    """``a`` and ``b`` with the same tensor keys for ``where(..., pad=)``: the entries one
    lacks filled with ``value`` (as the peer); ``a`` itself when ``b`` has no key it lacks.
    Python values ``a`` holds are left out of ``b`` (and so of the result, as the peer)."""
    mine, theirs = a._entries(), b._entries()
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    grown = False
    for key in [*mine, *(k for k in theirs if k not in mine)]:
        x, y = mine.get(key), theirs.get(key)
        if getattr(x, "_is_value_node", False) or getattr(y, "_is_value_node", False):
            if x is not None:
                left[key] = x
            continue
        if x is None:
            x, grown = _filled(y, value), True
        elif y is None:
            y = _filled(x, value)
        elif isinstance(x, TensorCollection):
            sub, y = _completed(x, y, value)
            grown = grown or sub is not x
            x = sub
        left[key], right[key] = x, y
    completed = a._new_like(left, a.batch_size, a.device) if grown else a
    return completed, b._new_like(right, b.batch_size, b.device)


def _data_of(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.data


def _where(tensor: torch.Tensor, condition: Any, other: Any) -> torch.Tensor:
    return torch.where(condition, tensor, other)


def _masked_filled(tensor: torch.Tensor, mask: Any, value: Any) -> torch.Tensor:
    """``tensor`` with ``value`` where ``mask`` is true, in ``tensor``'s layout: a clone
    filled in place, as the peer's (a transposed tensor's stays non-contiguous), where it
    is not contiguous (``torch.masked_fill``'s result is contiguous). Under torch.func
    transforms, out of place: vmap cannot fill an unmapped clone from a mapped mask."""
    if tensor.is_contiguous() or _transforms_active():
        return torch.masked_fill(tensor, mask, value)
    return tensor.clone().masked_fill_(mask, value)


def _cloned_node(node: Any, *_: Any) -> Any:
    """A Python-value node of a ``masked_fill`` result: ``node`` copied as ``clone``
    copies it (the values themselves too: the peer's ``MetaData`` of a lazy stack's
    members then reads as one per member, a stack)."""
    return node.clone()


def _where_value(node: Any, condition: Any, other: Any) -> Any:
    """A Python-value node picked element by element from ``node`` and ``other``'s
    (where ``other`` has one at this key and the condition is a tensor); else kept."""
    if isinstance(condition, _Tensor) and getattr(other, "_is_value_node", False):
        return node._picked(condition, other)
    return node._rebuilt(iter(()), None)


def _filled(like: Any, value: Any) -> Any:
    if isinstance(like, _Tensor):
        return torch.full_like(like, value)
    return like._pointwise(None, lambda t: torch.full_like(t, value))


def _maximum(t: torch.Tensor, other: Any) -> torch.Tensor:
    return torch.maximum(t, other) if isinstance(other, _Tensor) else torch.clamp_min(t, other)


def _maximum_(t: torch.Tensor, other: Any) -> torch.Tensor:
    return t.copy_(torch.maximum(t, other)) if isinstance(other, _Tensor) else t.clamp_min_(other)


def _minimum(t: torch.Tensor, other: Any) -> torch.Tensor:
    return torch.minimum(t, other) if isinstance(other, _Tensor) else torch.clamp_max(t, other)


def _minimum_(t: torch.Tensor, other: Any) -> torch.Tensor:
    return t.copy_(torch.minimum(t, other)) if isinstance(other, _Tensor) else t.clamp_max_(other)


def bool_exponent(exponent: Any) -> Any:
    """``exponent``, a 0-d bool tensor as the Python bool it holds: what the peer's fused
    kernel takes (``torch.pow`` and the fused kernel over per-tensor exponents have no
    bool kernel)."""
    if isinstance(exponent, torch.Tensor) and exponent.dtype is torch.bool and not exponent.ndim:
        return bool(exponent)
    return exponent


def _need_a_bound(low: object, high: object) -> None:
    if low is None and high is None:
        msg = "clamp: give min=, max= or both (a number, a tensor or a collection)"
        raise OperandError(msg)


def _foreach_clamp(tensors: list[torch.Tensor], low: Any, high: Any) -> Sequence[torch.Tensor]:
    """``torch.clamp`` of every tensor with the fused clamp_min / clamp_max kernels (bool
    tensors with ``torch.clamp`` itself, which the fused kernels do not match: torch
    refuses tensor bounds for them and promotes them with number bounds)."""
    if any(tensor.dtype is torch.bool for tensor in tensors):
        return [
            torch.clamp(tensor, _bound_at(low, i), _bound_at(high, i))
            for i, tensor in enumerate(tensors)
        ]
    if low is None:
        return torch._foreach_clamp_max(tensors, high)
    out = torch._foreach_clamp_min(tensors, low)
    if high is not None:
        torch._foreach_clamp_max_(out, high)
    return out


def _bound_at(bound: Any, i: int) -> Any:
    """The ``i``-th tensor's bound of a fused call's (a list per tensor, or one)."""
    return bound[i] if isinstance(bound, (list, tuple)) else bound


def _foreach_clamp_(tensors: list[torch.Tensor], low: Any, high: Any) -> None:
    if any(tensor.dtype is torch.bool for tensor in tensors):
        for i, tensor in enumerate(tensors):
            tensor.clamp_(_bound_at(low, i), _bound_at(high, i))
        return
    if low is not None:
        torch._foreach_clamp_min_(tensors, low)
    if high is not None:
        torch._foreach_clamp_max_(tensors, high)


def refuse_out_with_grad(result: Any, operation: str) -> None:
    """Raises ``GradError`` where a tensor of ``result`` requires grad (with grad mode
    on): torch's functions with ``out=`` refuse to record autograd history, and so do
    the peer's collections, which call them leaf by leaf."""
    if not torch.is_grad_enabled():
        return
    for leaf in result._tensor_leaves():
        if leaf.requires_grad:
            name = operation or "this operation"
            msg = (
                f"{name}(out=...): functions with out=... arguments don't support automatic "
                "differentiation, but one of the arguments requires grad (as torch's); run it "
                "under torch.no_grad(), detach() the inputs, or use the result without out="
            )
            raise GradError(msg)


def into_out(out: Any, result: Any, operation: str = "") -> Any:
    """``out=``: the result copied into ``out`` (returned), as torch's ``out=`` does; an
    ``out`` without some of the result's entries (``td.empty()``) gets them, as the
    peer's.

    Unlike torch's ``out=`` kernels, the peer's ``where``, ``clamp`` and ``norm`` compute
    the result first and then write it into ``out``, so they run on inputs that require
    grad: so does this, and the copy records the graph (a backward through ``out`` reaches
    the inputs). An ``out`` tensor that is itself a leaf requiring grad (an
    ``nn.Parameter``) cannot be written in place under autograd: ``out`` then takes the
    result's tensors as its entries (as the peer's ``where`` and ``norm`` give it).
    The peer's ``logsumexp`` and ``gather`` call torch's ``out=`` kernels and refuse:
    see :func:`refuse_out_with_grad`.
    """
    if out is None:
        return result
    with writing_out_of(operation or "out"):  # a refusal names the user's call
        if set(result.keys(True, True)) <= set(out.keys(True, True)) and not _grad_leaves(out):
            out.copy_(result)
        else:
            out.update(result)
    return out


def _grad_leaves(out: Any) -> bool:
    """Whether ``out`` holds a leaf tensor that requires grad, which autograd forbids to
    write in place (with grad mode on)."""
    if not torch.is_grad_enabled() or out._copies_without_grad:
        return False
    return any(t.requires_grad and t.is_leaf for t in out._tensor_leaves())


def _refuse_meta(td: TensorCollection, src: TensorCollection) -> None:
    """Refuses ``td.copy_(src)`` where ``src`` holds a meta tensor (no data) for an entry
    of ``td`` that is not one, before anything is written (the peer copies the entries
    before it)."""
    for key, tensor in src.items(True, True):
        if not isinstance(tensor, torch.Tensor) or not tensor.is_meta:
            continue
        entry = td.get(key, None)
        if isinstance(entry, torch.Tensor) and not entry.is_meta:
            msg = f"copy_: cannot copy a meta tensor (no data) into {key!r}; nothing was written"
            raise MetaTensorError(msg)
