"""``UnbatchedTensor``: a tensor that belongs to a whole batch instead of one element.

A collection stores it as an entry whose shape need not start with the batch size (a
lookup table, shared weights, a mask used by every element). The collection's shape
operations leave it as it is; everything else (arithmetic, ``clone``, ``to``,
``apply``) acts on it like on any tensor and keeps it an ``UnbatchedTensor``. Its
``batch_size`` is the batch size of the collection it was read from. Pure torch: the
engine's wrapper that keeps it out of the batch arithmetic lives in
``tclass._engine._unbatched``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import torch
from typing_extensions import Self

from tclass._core._safe_globals import allow_unpickling

__all__ = ["UnbatchedTensor"]

_NO_BATCH = torch.Size([])
_disabled = torch._C.DisableTorchFunctionSubclass


class UnbatchedTensor(torch.Tensor):
    """A tensor entry without batch dims, which batch operations leave unchanged.

    Args:
        data: the payload (array-likes go through ``torch.as_tensor``); it is not copied.
        batch_size: the batch size of the collection holding it; collections set it when
            the entry is read, so it is rarely passed.

    Example:
        >>> table = UnbatchedTensor(torch.zeros(3, 4))
        >>> td = TensorDict(table=table, x=torch.zeros(2), batch_size=[2])
        >>> td[0]["table"].shape, td.reshape(1, 2)["table"].batch_size
        (torch.Size([3, 4]), torch.Size([1, 2]))
    """

    _batch_size: torch.Size = _NO_BATCH
    _KEEP: ClassVar[frozenset[Any]] = frozenset(
        {torch.Tensor.data_ptr, vars(torch._C.TensorBase)["_base"].__get__}
    )

    def __new__(cls, data: Any, batch_size: Any = None) -> Self:
        if isinstance(data, cls):
            return data if batch_size is None else data._with_batch_size(torch.Size(batch_size))
        tensor = data if isinstance(data, torch.Tensor) else torch.as_tensor(data)
        with _disabled():
            out = tensor.as_subclass(cls)
        if batch_size is not None:
            out._batch_size = torch.Size(batch_size)
        return out

    @property
    def batch_size(self) -> torch.Size:
        """The batch size of the collection this tensor was read from (``[]`` alone)."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: Any) -> None:
        self._batch_size = torch.Size(value)

    def _with_batch_size(self, batch_size: torch.Size) -> Self:
        """An alias of the same data reporting ``batch_size``."""
        if batch_size == self._batch_size:
            return self
        with _disabled():
            out = torch.Tensor.view_as(self, self).as_subclass(type(self))
        out._batch_size = batch_size
        return out

    def as_tensor(self) -> torch.Tensor:
        """The payload as a plain tensor (an alias, no copy)."""
        with _disabled():
            return self.as_subclass(torch.Tensor)

    @classmethod
    def __torch_function__(
        cls,
        func: Callable[..., Any],
        types: tuple[type, ...],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        batch_size = _batch_size_of(args)
        with _disabled():
            result = func(*args, **(kwargs or {}))
        if func in cls._KEEP:
            return result
        if getattr(func, "__name__", "").startswith("_foreach_") and isinstance(
            result, (list, tuple)
        ):
            return _rewrap_foreach(cls, args, result, batch_size)
        return _rewrap(cls, result, batch_size)

    def __str__(self) -> str:
        return str(self.as_tensor())

    def __format__(self, format_spec: str) -> str:
        return format(self.as_tensor().item() if self.ndim == 0 else self.as_tensor(), format_spec)

    def __round__(self, ndigits: int | None = None) -> Any:
        # Python's round() and math.trunc() go through these dunders, which a plain Tensor
        # lacks: delegating keeps the payload's own answer (and its TypeError).
        payload = self.as_tensor()
        return round(payload) if ndigits is None else round(payload, ndigits)  # type: ignore[call-overload]

    def __trunc__(self) -> Any:
        return math.trunc(self.as_tensor())  # type: ignore[arg-type]

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]
        return f"UnbatchedTensor({self.as_tensor()!r})"

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return (UnbatchedTensor, (self.as_tensor(), self._batch_size))


def _batch_size_of(args: tuple[Any, ...]) -> torch.Size:
    for arg in args:
        if isinstance(arg, UnbatchedTensor):
            return arg._batch_size
        if isinstance(arg, (list, tuple)):
            for item in arg:
                if isinstance(item, UnbatchedTensor):
                    return item._batch_size
    return _NO_BATCH


def _rewrap(cls: type[UnbatchedTensor], result: Any, batch_size: torch.Size) -> Any:
    if isinstance(result, torch.Tensor) and not isinstance(result, torch.nn.Parameter):
        out = result.as_subclass(cls) if type(result) is not cls else result
        out._batch_size = batch_size
        return out
    if isinstance(result, (tuple, list)) and any(isinstance(r, torch.Tensor) for r in result):
        return type(result)(_rewrap(cls, item, batch_size) for item in result)
    return result


def _rewrap_foreach(
    cls: type[UnbatchedTensor], args: tuple[Any, ...], result: Any, batch_size: torch.Size
) -> Any:
    """A ``torch._foreach_*`` result has one tensor per input position: only the positions
    an ``UnbatchedTensor`` came in at stay unbatched (a collection's math runs one kernel
    over all its leaves, its batched tensors included)."""
    lists = [a for a in args if isinstance(a, (list, tuple)) and len(a) == len(result)]
    return type(result)(
        _rewrap(cls, item, batch_size)
        if any(isinstance(seq[i], UnbatchedTensor) for seq in lists)
        else item
        for i, item in enumerate(result)
    )


allow_unpickling(UnbatchedTensor)  # pickled as UnbatchedTensor(tensor, batch_size)
