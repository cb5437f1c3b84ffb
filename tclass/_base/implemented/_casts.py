"""dtype casts of every tensor: ``float()``, ``half()``, ``bfloat16()``, ``int()``,
``type(dtype)``... with the peer's ``cast_filter``.

``cast_filter(key, tensor) -> bool`` picks the tensors to cast, ``key`` being the full
key as a tuple of str; the others are kept as they are (not copied). A tensorclass may
declare a default filter for its instances (the class option ``cast_filter``); a filter
given to the call replaces it, and ``cast_filter=None`` given explicitly casts every
tensor. Results keep the class, the Python values and the lock state; a tensor already of
the dtype is kept, not copied, as ``Tensor.to`` does.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, cast

import torch
from typing_extensions import Self

from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._leaf_walk import Gather
from tclass._base.implemented._math import MathOps
from tclass.errors import ArgumentError, UnsupportedError

__all__ = [
    "CastFilter",
    "CastOps",
    "is_bool",
    "is_floating",
    "is_inexact",
    "is_integer",
]

CastFilter = Callable[[tuple[str, ...], torch.Tensor], bool]

_DEFAULT: Any = object()
# The keywords ``to(attrs)`` takes, as the peer's.
_ATTRS_KEYWORDS = frozenset({"non_blocking", "non_blocking_pin", "num_threads", "inplace"})
_Tensor = torch.Tensor
_QUANTIZED = frozenset({torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4})


def is_inexact(*args: Any) -> bool:
    """Whether the last argument is a floating-point or complex tensor: a ``cast_filter``
    (``fn(key, tensor)``) that keeps integer and bool tensors out of a cast, also usable
    as ``fn(tensor)``."""
    dtype = args[-1].dtype
    return bool(dtype.is_floating_point or dtype.is_complex)


def is_floating(*args: Any) -> bool:
    """Whether the last argument is a floating-point tensor (a ``cast_filter``, as
    :func:`is_inexact`)."""
    return bool(args[-1].dtype.is_floating_point)


def is_integer(*args: Any) -> bool:
    """Whether the last argument is an integer tensor, signed or unsigned, not bool (a
    ``cast_filter``, as :func:`is_inexact`)."""
    dtype = args[-1].dtype
    return not (dtype.is_floating_point or dtype.is_complex or dtype is torch.bool)


def is_bool(*args: Any) -> bool:
    """Whether the last argument is a bool tensor (a ``cast_filter``, as
    :func:`is_inexact`)."""
    return args[-1].dtype is torch.bool


class CastOps(MathOps):
    """The dtype shorthands, written once for every collection."""

    __slots__ = ()

    def _default_cast_filter(self) -> CastFilter | None:
        """The filter a cast uses when the call gives none (a tensorclass's class option)."""
        return None

    def _cast(
        self,
        dtype: torch.dtype,
        cast_filter: Any,
        lock: bool = True,
        each: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> Self:
        """Every tensor (that ``cast_filter`` picks) cast to ``dtype``; the result is
        locked when this collection is, if ``lock``. ``each``: the tensor method that
        casts to ``dtype`` (``Tensor.float``), quicker to call than ``Tensor.type``."""
        if cast_filter is _DEFAULT:
            cast_filter = self._default_cast_filter()
        if dtype in _QUANTIZED:
            self._refuse_quantized(dtype, cast_filter)
        if cast_filter is None:
            cast = operator.methodcaller("type", dtype) if each is None else each
            return self._pointwise(None, cast, lock=lock)
        gather = Gather(paths=True)
        self._collect(gather, (), self.batch_dims, ())
        assert gather.paths is not None
        results = [
            leaf.to(dtype) if cast_filter(path, leaf) else leaf
            for leaf, path in zip(gather.leaves, gather.paths)
        ]
        out = self._rebuilt(iter(results), None)
        if lock and self.is_locked:
            out.lock_()
        return out

    def _refuse_quantized(self, dtype: torch.dtype, cast_filter: CastFilter | None) -> None:
        """A quantized dtype needs a scale and a zero point, which a cast cannot give:
        torch refuses ``tensor.to(torch.qint8)``, and so does the peer; only a cast with
        nothing to convert goes through."""
        gather = Gather(paths=True)
        self._collect(gather, (), self.batch_dims, ())
        assert gather.paths is not None
        for leaf, path in zip(gather.leaves, gather.paths):
            if leaf.dtype != dtype and (cast_filter is None or cast_filter(path, leaf)):
                name = str(dtype).removeprefix("torch.")
                msg = (
                    f"cannot cast the tensor at {path!r} ({leaf.dtype}) to {dtype}: a "
                    "quantized tensor needs a scale and a zero point; quantize it with "
                    f"td.apply(lambda x: torch.quantize_per_tensor(x, scale, zero_point, "
                    f"torch.{name}))"
                )
                raise UnsupportedError(msg)

    def _to_attrs(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Self:
        """``to(attrs)``: every tensor moved and cast as the ``TensorAttrs`` under its key
        in ``attrs`` (``args[0]``) says (tensors without one are kept), with the peer's
        ``non_blocking=``, ``num_threads=`` and ``inplace=``.

        Raises:
            ArgumentError: (a ``TypeError``, as the peer raises) for another positional
                argument or a keyword ``to(attrs)`` does not take.
            UnsupportedError: (a ``NotImplementedError``, as the peer raises) for
                ``non_blocking_pin=True``.
        """
        attrs: TensorCollection = args[0]
        if len(args) > 1:
            msg = (
                f"to(attrs) does not accept additional positional arguments (got "
                f"{len(args) - 1} more: {args[1:]!r}): the TensorAttrs records give each "
                "tensor its device and dtype; set their tgt_device / tgt_dtype, or call "
                ".to(...) on the result"
            )
            raise ArgumentError(msg)
        unknown = sorted(kwargs.keys() - _ATTRS_KEYWORDS)
        if unknown:
            msg = (
                f"to(attrs) got unexpected keyword argument(s) {unknown}: it takes "
                f"{sorted(_ATTRS_KEYWORDS)}; the TensorAttrs records give each tensor its "
                "device and dtype"
            )
            raise ArgumentError(msg)
        if kwargs.get("non_blocking_pin"):
            msg = (
                "to(attrs) does not support non_blocking_pin=True (nor does the peer): pin "
                "first, then copy, with td.pin_memory().to(attrs, non_blocking=True)"
            )
            raise UnsupportedError(msg)
        non_blocking = bool(kwargs.get("non_blocking", False))

        def move(key: Any, leaf: torch.Tensor) -> torch.Tensor:
            target = attrs.get(key, None)
            if target is None or not getattr(type(target), "_is_tensor_attrs", False):
                return leaf
            return leaf.to(
                device=target.tgt_device, dtype=target.tgt_dtype, non_blocking=non_blocking
            )

        # Device None, as the peer's: the attrs may send each leaf somewhere else.
        result = cast(
            Self,
            cast(Any, self).named_apply(move, nested_keys=True, device=None, propagate_lock=True),
        )
        if kwargs.get("inplace") and result is not self:
            cast(Any, self)._take_moved(result)
            return self
        return result

    @property
    def dtype(self) -> torch.dtype | None:
        """The dtype every tensor has, or None when they differ (or there is none)."""
        dtypes = {leaf.dtype for leaf in self._walk_leaves()}
        return dtypes.pop() if len(dtypes) == 1 else None

    def is_floating_point(self) -> bool:
        """Whether every tensor (nested ones included) is floating-point, whatever their
        dtypes (float32 and float64 mixed: True); Python values are not checked, and a
        collection without tensors is True, as the peer's."""
        return all(tensor.is_floating_point() for tensor in self._tensor_leaves())

    def type(self, dst_type: torch.dtype, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``dst_type``; unlike the shorthands, the result is not
        locked (as in the peer)."""
        return self._cast(dst_type, cast_filter, lock=False)

    def float(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.float32``."""
        return self._cast(torch.float32, cast_filter, each=_Tensor.float)

    def double(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.float64``."""
        return self._cast(torch.float64, cast_filter, each=_Tensor.double)

    def half(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.float16``."""
        return self._cast(torch.float16, cast_filter, each=_Tensor.half)

    def bfloat16(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.bfloat16``."""
        return self._cast(torch.bfloat16, cast_filter, each=_Tensor.bfloat16)

    def int(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.int32``."""
        return self._cast(torch.int32, cast_filter, each=_Tensor.int)

    def long(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.int64``."""
        return self._cast(torch.int64, cast_filter, each=_Tensor.long)

    def short(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.int16``."""
        return self._cast(torch.int16, cast_filter, each=_Tensor.short)

    def char(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.int8``."""
        return self._cast(torch.int8, cast_filter, each=_Tensor.char)

    def byte(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.uint8``."""
        return self._cast(torch.uint8, cast_filter, each=_Tensor.byte)

    def bool(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.bool``."""
        return self._cast(torch.bool, cast_filter, each=_Tensor.bool)

    def float16(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.float16``."""
        return self._cast(torch.float16, cast_filter, each=_Tensor.half)

    def float32(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.float32``."""
        return self._cast(torch.float32, cast_filter)

    def float64(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.float64``."""
        return self._cast(torch.float64, cast_filter)

    def int8(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.int8``."""
        return self._cast(torch.int8, cast_filter)

    def int16(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.int16``."""
        return self._cast(torch.int16, cast_filter)

    def int32(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.int32``."""
        return self._cast(torch.int32, cast_filter)

    def int64(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.int64``."""
        return self._cast(torch.int64, cast_filter)

    def uint8(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.uint8``."""
        return self._cast(torch.uint8, cast_filter)

    def uint16(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.uint16``."""
        return self._cast(torch.uint16, cast_filter)

    def uint32(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.uint32``."""
        return self._cast(torch.uint32, cast_filter)

    def uint64(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.uint64``."""
        return self._cast(torch.uint64, cast_filter)

    def qint8(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.qint8``: only possible when there is nothing to
        convert (see :meth:`_refuse_quantized`); quantize with
        ``torch.quantize_per_tensor`` in :meth:`apply` instead."""
        return self._cast(torch.qint8, cast_filter)

    def quint8(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.quint8``: only possible when there is nothing to
        convert (see :meth:`_refuse_quantized`); quantize with
        ``torch.quantize_per_tensor`` in :meth:`apply` instead."""
        return self._cast(torch.quint8, cast_filter)

    def qint32(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.qint32``: only possible when there is nothing to
        convert (see :meth:`_refuse_quantized`); quantize with
        ``torch.quantize_per_tensor`` in :meth:`apply` instead."""
        return self._cast(torch.qint32, cast_filter)

    def quint4x2(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.quint4x2``: only possible when there is nothing to
        convert (see :meth:`_refuse_quantized`); quantize with
        ``torch.quantize_per_tensor`` in :meth:`apply` instead."""
        return self._cast(torch.quint4x2, cast_filter)

    def complex32(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.complex32``."""
        return self._cast(torch.complex32, cast_filter)

    def complex64(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.complex64``."""
        return self._cast(torch.complex64, cast_filter)

    def complex128(self, *, cast_filter: CastFilter | None = _DEFAULT) -> Self:
        """Every tensor cast to ``torch.complex128``."""
        return self._cast(torch.complex128, cast_filter)
