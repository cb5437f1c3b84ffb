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
descriptors (properties whose getters the engine provides) read the record's
storage; the generated ``__init__`` takes the arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

import torch
from typing_extensions import Self

from tclass._core._batch import BatchSizeLike
from tclass._core._device import DeviceLike, refuse_device_assignment
from tclass._core._names import DimName
from tclass._engine._record_fields import batch_size_of_record, device_of_record
from tclass.errors import FrozenInstanceError

__all__ = ["BatchSizeField", "DeviceField", "NamesField", "constructor_keyword"]

T = TypeVar("T")


def constructor_keyword(*, default: T, kw_only: bool = True) -> T:
    """A field specifier (PEP 681) for the keyword-only arguments above: checkers read
    ``kw_only`` and ``default``; at runtime it returns ``default``, the descriptor."""
    return default


class BatchSizeField(property):
    """``batch_size``: accepts a size-like, reads as a ``torch.Size``. Assigning checks
    every field."""

    def __init__(self) -> None:
        super().__init__(batch_size_of_record, _set_batch_size, None, self.__doc__)

    if TYPE_CHECKING:

        @overload
        def __get__(self, instance: None, owner: Any = None, /) -> Self: ...
        @overload
        def __get__(self, instance: object, owner: Any = None, /) -> torch.Size: ...
        def __get__(self, instance: object, owner: Any = None, /) -> torch.Size | Self: ...
        def __set__(self, instance: object, value: BatchSizeLike, /) -> None: ...


class DeviceField(property):
    """``device``: accepts a device-like, reads as a ``torch.device`` or None (the device
    of every tensor, or None if they may be on different devices). Assigning raises (as the peer):
    move a record with ``to(device)``."""

    def __init__(self) -> None:
        super().__init__(device_of_record, refuse_device_assignment, None, self.__doc__)

    if TYPE_CHECKING:

        @overload
        def __get__(self, instance: None, owner: Any = None, /) -> Self: ...
        @overload
        def __get__(self, instance: object, owner: Any = None, /) -> torch.device | None: ...
        def __get__(self, instance: object, owner: Any = None, /) -> torch.device | None | Self: ...
        def __set__(self, instance: object, value: DeviceLike, /) -> None: ...


class NamesField(property):
    """``names``: accepts names of the batch dims (any hashable, a ``str`` usually, or
    None each), reads as a list with None for unnamed dims. Assigning renames every
    dim."""

    def __init__(self) -> None:
        super().__init__(_names, _set_names, None, self.__doc__)

    if TYPE_CHECKING:

        @overload
        def __get__(self, instance: None, owner: Any = None, /) -> Self: ...
        # Any hashable name, as TensorDict.names and the peer (str names usually).
        @overload
        def __get__(self, instance: object, owner: Any = None, /) -> list[Any]: ...
        def __get__(self, instance: object, owner: Any = None, /) -> list[Any] | Self: ...
        def __set__(self, instance: object, value: Sequence[DimName] | None, /) -> None: ...


def _refuse_frozen(record: Any, name: str) -> None:
    if type(record).__tclass_info__.options["frozen"]:
        cls = type(record).__name__
        msg = f"cannot assign to {name!r}: {cls} is frozen (use replace(), or reshape it)"
        raise FrozenInstanceError(msg)


def _set_batch_size(record: Any, value: BatchSizeLike) -> None:
    _refuse_frozen(record, "batch_size")
    record._tensordict.batch_size = value


def _names(record: Any) -> list[Any]:
    names: list[DimName] = record._tensordict.names
    return names


def _set_names(record: Any, value: Sequence[DimName] | None) -> None:
    _refuse_frozen(record, "names")
    record._tensordict.names = value
