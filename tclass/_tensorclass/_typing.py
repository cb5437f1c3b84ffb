"""The three keyword-only constructor arguments of every tensorclass (``batch_size``,
``device``, ``names``), declared once for checkers and the runtime alike.

``TensorClass``'s metaclass carries ``dataclass_transform``, so checkers synthesise each
tensorclass's ``__init__`` from its annotated fields. These three are declared as
keyword-only fields of ``TensorClass`` (with :func:`constructor_keyword`, a field
specifier) whose types are the descriptors below: a checker takes a descriptor field's
``__init__`` parameter type from ``__set__`` (what the constructor accepts, e.g.
``batch_size=[4]``) and its attribute type from ``__get__`` (what reading gives, a
``torch.Size``). A class that names the metaclass directly is "neither frozen nor
non-frozen" (PEP 681), so frozen tensorclasses type-check too. At runtime the same
descriptors read the record's storage; the generated ``__init__`` takes the arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar, overload

import torch
from typing_extensions import Self

from tclass._core._batch import BatchSizeLike
from tclass._core._device import DeviceLike

__all__ = ["BatchSizeField", "DeviceField", "NamesField", "constructor_keyword"]

T = TypeVar("T")


def constructor_keyword(*, default: T, kw_only: bool = True) -> T:
    """A field specifier (PEP 681) for the keyword-only arguments above: checkers read
    ``kw_only`` and ``default``; at runtime it returns ``default``, the descriptor."""
    return default


class BatchSizeField:
    """``batch_size``: accepts a size-like, reads as a ``torch.Size``. Assigning checks
    every field."""

    @overload
    def __get__(self, instance: None, owner: Any) -> Self: ...
    @overload
    def __get__(self, instance: object, owner: Any) -> torch.Size: ...
    def __get__(self, instance: object, owner: Any) -> torch.Size | Self:
        if instance is None:
            return self
        size: torch.Size = instance._tensordict.batch_size  # type: ignore[attr-defined]
        return size

    def __set__(self, instance: object, value: BatchSizeLike) -> None:
        instance._tensordict.batch_size = value  # type: ignore[attr-defined]


class DeviceField:
    """``device``: accepts a device-like, reads as a ``torch.device`` or None (the device
    of every tensor, or None if they may be on different devices). Read-only: move a
    record with ``to(device)``."""

    @overload
    def __get__(self, instance: None, owner: Any) -> Self: ...
    @overload
    def __get__(self, instance: object, owner: Any) -> torch.device | None: ...
    def __get__(self, instance: object, owner: Any) -> torch.device | None | Self:
        if instance is None:
            return self
        device: torch.device | None = instance._tensordict.device  # type: ignore[attr-defined]
        return device

    def __set__(self, instance: object, value: DeviceLike) -> None:
        msg = f"{type(instance).__name__}.device cannot be assigned; use record.to(device)"
        raise AttributeError(msg)


class NamesField:
    """``names``: accepts names of the batch dims (only None today), reads as a list (all
    ``None``: tclass does not support named dims). Read-only."""

    @overload
    def __get__(self, instance: None, owner: Any) -> Self: ...
    @overload
    def __get__(self, instance: object, owner: Any) -> list[str | None]: ...
    def __get__(self, instance: object, owner: Any) -> list[str | None] | Self:
        if instance is None:
            return self
        return [None] * len(instance._tensordict.batch_size)  # type: ignore[attr-defined]

    def __set__(self, instance: object, value: Sequence[str | None] | None) -> None:
        msg = f"{type(instance).__name__}.names cannot be assigned (named dims are not supported)"
        raise AttributeError(msg)
