"""``TensorClassMeta``: the metaclass of every tensorclass (the class statement's part of
building one; the fields and options are the builder's)."""

from __future__ import annotations

import abc
import dataclasses
import functools
from typing import Any

from typing_extensions import dataclass_transform

from tclass._tensorclass._typing import constructor_keyword
from tclass.errors import ClassDefinitionError

__all__ = ["TensorClassMeta"]


@dataclass_transform(
    eq_default=False,
    field_specifiers=(dataclasses.field, dataclasses.Field, constructor_keyword),
)
class TensorClassMeta(abc.ABCMeta):
    """Gives every tensorclass ``__slots__ = ()``: instances hold only their TensorDict,
    so assigning an attribute that is not a field (a typo) raises instead of silently
    creating one, with no ``__setattr__`` hook slowing field writes. A class with a
    ``functools.cached_property`` gets a ``__dict__`` too, where the property caches its
    value (as on the peer's records). It derives from ``abc.ABCMeta``, as the peer's
    does, so a record class can mix in an abstract base class (``class R(TensorClass,
    Scorer)`` with ``Scorer(abc.ABC)``; a metaclass conflict otherwise) and is refused
    instantiation while an abstract method is left unimplemented."""

    def __new__(
        mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> TensorClassMeta:
        if any(isinstance(base, TensorClassMeta) for base in bases):
            if "__slots__" in namespace:
                msg = (
                    f"{name} defines __slots__; a tensorclass stores its fields in its "
                    "TensorDict, so remove __slots__"
                )
                raise ClassDefinitionError(msg)
            namespace = {
                **namespace,
                "__slots__": _slots(namespace, bases),
                "__tclass_qualname__": namespace.get("__qualname__", name),
            }
        return super().__new__(mcs, name, bases, namespace, **kwargs)

    def __setattr__(cls, name: str, value: Any) -> None:
        """Keeps ``__qualname__`` and its copy in the class's ``__dict__`` together. A
        class sent by value (cloudpickle's, as Ray sends a class declared inside a
        function) is rebuilt from its name and ``__dict__``, then given that dict's
        items: the copy gives it back its qualified name (``make.<locals>.Row``, not
        ``Row``), under which its records are saved, named in pickles and checked."""
        super().__setattr__(name, value)
        if name == "__tclass_qualname__" and isinstance(value, str):
            super().__setattr__("__qualname__", value)
        elif name == "__qualname__":  # a class factory renaming its class
            super().__setattr__("__tclass_qualname__", value)


def _slots(namespace: dict[str, Any], bases: tuple[type, ...]) -> tuple[str, ...]:
    """``()``, or ``("__dict__",)`` for a class defining a ``cached_property`` whose bases
    give it no ``__dict__`` yet."""
    cached = any(isinstance(v, functools.cached_property) for v in namespace.values())
    if cached and not any(getattr(base, "__dictoffset__", 0) for base in bases):
        return ("__dict__",)
    return ()
