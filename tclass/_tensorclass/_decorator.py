"""``@tensorclass``: the decorator form, which ends in the same place as the base class.

The decorator rebuilds the decorated class with ``TensorClass`` among its bases (as
``attrs`` rebuilds a class to add slots): a class deriving from ``object`` cannot gain a
base in place. Methods that use ``super()`` or ``__class__`` have their closure cell
pointed at the new class, so they behave as if ``TensorClass`` had been a base all along.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, overload

from typing_extensions import Unpack, dataclass_transform

from tclass._core._class_options import ClassOptions, check_option_names, named_options
from tclass._core._records import is_record_class
from tclass._engine._nontensor import NonTensorData
from tclass._tensorclass._builder import build_class
from tclass._tensorclass._meta import TensorClassMeta
from tclass._tensorclass._record import TensorClass

__all__ = ["is_tensorclass", "tensorclass"]

T = TypeVar("T", bound=type)

# Attributes of a class body that belong to the old class object, not its namespace.
_NOT_COPIED = (
    "__dict__",
    "__weakref__",
    "__dataclass_fields__",
    "__dataclass_params__",
    "__match_args__",
)
# What dataclasses may generate in a class (removed when their code is generated).
_DATACLASS_MADE = (
    "__init__",
    "__repr__",
    "__eq__",
    "__hash__",
    "__setattr__",
    "__delattr__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__getstate__",
    "__setstate__",
)


@overload
def tensorclass(cls: T, /) -> T: ...
@overload
def tensorclass(cls: None = None, /, **options: Unpack[ClassOptions]) -> Callable[[T], T]: ...


@named_options
@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def tensorclass(cls: T | None = None, /, **options: Unpack[ClassOptions]) -> T | Callable[[T], T]:
    """Turns an annotated class into a tensorclass (bare, or with options).

    Args:
        options: the class options (``autocast``, ``frozen``, ``kw_only``...: their list
            and what each does is ``tclass/_core/_class_options.py``); a subclass
            inherits the options of its base.

    Returns:
        The tensorclass: a subclass of :class:`TensorClass` with the same name, fields,
        methods and module, identical to declaring ``class X(TensorClass, ...)``.

    Raises:
        ArgumentError: (a ``TypeError``) for a keyword that is no class option.

    Example:
        >>> @tensorclass
        ... class Transition:
        ...     obs: torch.Tensor
        ...     env: str
        >>> Transition(torch.zeros(4, 3), "pong", batch_size=[4])[0].env
        'pong'
    """
    check_option_names(options, "tensorclass")
    given: dict[str, Any] = {k: v for k, v in options.items() if v is not None}

    def wrap(klass: T) -> T:
        return _make_tensorclass(klass, given)  # type: ignore[return-value]

    return wrap if cls is None else wrap(cls)


def _make_tensorclass(cls: type, options: dict[str, Any]) -> type:
    if "__tclass_info__" in cls.__dict__:  # already one (decorated twice, or a subclass)
        current = cls.__dict__["__tclass_info__"].options
        if all(current[name] == value for name, value in options.items()):
            return cls
        build_class(cls, TensorClass, **options)
        return cls
    params = cls.__dict__.get("__dataclass_params__")
    if params is not None and params.frozen and "frozen" not in options:
        options = {**options, "frozen": True}  # @dataclass(frozen=True): as the peer's
    namespace = _namespace_of(cls)
    bases = tuple(base for base in cls.__bases__ if base is not object) + (TensorClass,)
    metaclass = TensorClassMeta if type(cls) is type else type(cls)
    new = metaclass(cls.__name__, bases, namespace, **options)
    _repoint_class_cells(new, cls)
    return new


def _namespace_of(cls: type) -> dict[str, Any]:
    """The body of ``cls`` to build the tensorclass from. For a class that is already a
    dataclass, what ``dataclasses`` generated is left out and its fields' declarations
    (defaults, factories) are put back, so that the tensorclass is built from them."""
    namespace = {k: v for k, v in cls.__dict__.items() if k not in _NOT_COPIED}
    namespace["__qualname__"] = cls.__qualname__  # kept on the type, not in its __dict__
    fields = cls.__dict__.get("__dataclass_fields__")
    if fields is None:
        return namespace
    for name in _DATACLASS_MADE:
        value = namespace.get(name)
        if value is None or _generated(value):
            namespace.pop(name, None)
    own = cls.__dict__.get("__annotations__", {})
    for name, field in fields.items():
        if name in own:
            namespace[name] = copy.copy(field)
    return namespace


def _generated(value: Any) -> bool:
    """Whether ``value`` is a method ``dataclasses`` generated: code compiled from a
    string, or (``__repr__``) ``dataclasses``' recursion guard wrapped around one."""
    code = getattr(value, "__code__", None)
    if code is None:
        return False
    if code.co_filename == dataclasses.__file__:
        value = getattr(value, "__wrapped__", value)
        code = getattr(value, "__code__", code)
    return bool(code.co_filename.startswith("<"))


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
    wrapped = getattr(value, "__tclass_user_init__", None)  # a kept __init__
    return (
        [value, *([wrapped] if wrapped is not None else [])]
        if hasattr(value, "__closure__")
        else []
    )


def is_tensorclass(obj: object) -> bool:
    """Whether ``obj`` is a tensorclass or an instance of one (either declaration form).
    A ``NonTensorData`` (class or instance) is one too, as in the peer, where it is a
    tensorclass; a ``NonTensorStack`` is not."""
    cls = obj if isinstance(obj, type) else type(obj)
    return is_record_class(cls) or issubclass(cls, NonTensorData)
