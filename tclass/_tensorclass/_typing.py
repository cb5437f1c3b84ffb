"""What type checkers see of the three keyword-only constructor arguments of every
tensorclass (``batch_size``, ``device``, ``names``).

``TensorClass``'s metaclass carries ``dataclass_transform``, so checkers synthesise each
tensorclass's ``__init__`` from its annotated fields. These three arguments are declared
(for checkers only) as keyword-only fields of ``TensorClass`` whose types are the
descriptors below: a checker takes a descriptor field's ``__init__`` parameter type from
``__set__`` (what the constructor accepts, e.g. ``batch_size=[4]``) and its attribute type
from ``__get__`` (what reading gives, a ``torch.Size``). A class that names the metaclass
directly is "neither frozen nor non-frozen" (PEP 681), so frozen tensorclasses type-check
too. At runtime the same names are ordinary properties of ``TensorClass``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import torch
from typing_extensions import Self

from tclass._core._batch import BatchSizeLike
from tclass._core._device import DeviceLike

__all__ = ["BatchSizeField", "DeviceField", "NamesField"]


class BatchSizeField:
    """``batch_size``: accepts a size-like, reads as a ``torch.Size``."""

    @overload
    def __get__(self, instance: None, owner: Any) -> Self: ...
    @overload
    def __get__(self, instance: object, owner: Any) -> torch.Size: ...
    def __get__(self, instance: object, owner: Any) -> torch.Size | Self:
        raise NotImplementedError  # never used at runtime: TensorClass has a property

    def __set__(self, instance: object, value: BatchSizeLike) -> None:
        raise NotImplementedError


class DeviceField:
    """``device``: accepts a device-like, reads as a ``torch.device`` or None."""

    @overload
    def __get__(self, instance: None, owner: Any) -> Self: ...
    @overload
    def __get__(self, instance: object, owner: Any) -> torch.device | None: ...
    def __get__(self, instance: object, owner: Any) -> torch.device | None | Self:
        raise NotImplementedError

    def __set__(self, instance: object, value: DeviceLike) -> None:
        raise NotImplementedError


class NamesField:
    """``names``: accepts names of the batch dims (only None today), reads as a list."""

    @overload
    def __get__(self, instance: None, owner: Any) -> Self: ...
    @overload
    def __get__(self, instance: object, owner: Any) -> list[str | None]: ...
    def __get__(self, instance: object, owner: Any) -> list[str | None] | Self:
        raise NotImplementedError

    def __set__(self, instance: object, value: Sequence[str | None] | None) -> None:
        raise NotImplementedError
