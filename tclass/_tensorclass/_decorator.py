"""``@tensorclass``: the decorator form, which ends in the same place as the base class.

The decorator rebuilds the decorated class with ``TensorClass`` among its bases (as
``attrs`` rebuilds a class to add slots): a class deriving from ``object`` cannot gain a
base in place. Methods that use ``super()`` or ``__class__`` have their closure cell
pointed at the new class, so they behave as if ``TensorClass`` had been a base all along.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from typing_extensions import dataclass_transform

from tclass._core._records import is_record_class
from tclass._tensorclass._builder import build_class
from tclass._tensorclass._record import TensorClass, TensorClassMeta

__all__ = ["is_tensorclass", "tensorclass"]

T = TypeVar("T", bound=type)

# Attributes of a class body that belong to the old class object, not its namespace.
_NOT_COPIED = ("__dict__", "__weakref__")


@overload
def tensorclass(cls: T, /) -> T: ...
@overload
def tensorclass(
    cls: None = None, /, *, frozen: bool | None = ..., kw_only: bool | None = ...
) -> Callable[[T], T]: ...


@dataclass_transform()
def tensorclass(
    cls: T | None = None, /, *, frozen: bool | None = None, kw_only: bool | None = None
) -> T | Callable[[T], T]:
    """Turns an annotated class into a tensorclass (bare, or with options).

    Args:
        frozen: fields cannot be assigned (tensors can still be written in place);
            instances are locked and hash by identity.
        kw_only: every field is keyword-only in the constructor.

    Returns:
        The tensorclass: a subclass of :class:`TensorClass` with the same name, fields,
        methods and module, identical to declaring ``class X(TensorClass, ...)``.

    Example:
        >>> @tensorclass
        ... class Transition:
        ...     obs: torch.Tensor
        ...     env: str
        >>> Transition(torch.zeros(4, 3), "pong", batch_size=[4])[0].env
        'pong'
    """

    def wrap(klass: T) -> T:
        return _make_tensorclass(klass, frozen, kw_only)  # type: ignore[return-value]

    return wrap if cls is None else wrap(cls)


def _make_tensorclass(cls: type, frozen: bool | None, kw_only: bool | None) -> type:
    if "__tclass_info__" in cls.__dict__:  # already one (decorated twice, or a subclass)
        info = cls.__dict__["__tclass_info__"]
        if (frozen is None or frozen == info.frozen) and (
            kw_only is None or kw_only == info.kw_only
        ):
            return cls
        build_class(cls, TensorClass, frozen=frozen, kw_only=kw_only)
        return cls
    namespace = {k: v for k, v in cls.__dict__.items() if k not in _NOT_COPIED}
    namespace["__qualname__"] = cls.__qualname__  # kept on the type, not in its __dict__
    bases = tuple(base for base in cls.__bases__ if base is not object) + (TensorClass,)
    options = {k: v for k, v in (("frozen", frozen), ("kw_only", kw_only)) if v is not None}
    metaclass = TensorClassMeta if type(cls) is type else type(cls)
    new = metaclass(cls.__name__, bases, namespace, **options)
    _repoint_class_cells(new, cls)
    return new


def _repoint_class_cells(new: type, old: type) -> None:
    """Points every ``__class__`` closure cell (zero-argument ``super()``) at ``new``."""
    for value in new.__dict__.values():
        for function in _functions_in(value):
            for cell in function.__closure__ or ():
                try:
                    if cell.cell_contents is old:
                        cell.cell_contents = new
                except ValueError:  # an empty cell
                    continue


def _functions_in(value: Any) -> list[Any]:
    if isinstance(value, (classmethod, staticmethod)):
        value = value.__func__
    if isinstance(value, property):
        return [f for f in (value.fget, value.fset, value.fdel) if f is not None]
    return [value] if hasattr(value, "__closure__") else []


def is_tensorclass(obj: object) -> bool:
    """Whether ``obj`` is a tensorclass or an instance of one (either declaration form)."""
    return is_record_class(obj if isinstance(obj, type) else type(obj))
