"""``TensorClassMeta``: the metaclass of every tensorclass (the class statement's part of
building one; the fields and options are the builder's)."""

from __future__ import annotations

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
class TensorClassMeta(type):
    """Gives every tensorclass ``__slots__ = ()``: instances hold only their TensorDict,
    so assigning an attribute that is not a field (a typo) raises instead of silently
    creating one, with no ``__setattr__`` hook slowing field writes. A class with a
    ``functools.cached_property`` gets a ``__dict__`` too, where the property caches its
    value (as on the peer's records)."""

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
            namespace = {**namespace, "__slots__": _slots(namespace, bases)}
        return super().__new__(mcs, name, bases, namespace, **kwargs)


def _slots(namespace: dict[str, Any], bases: tuple[type, ...]) -> tuple[str, ...]:
    """``()``, or ``("__dict__",)`` for a class defining a ``cached_property`` whose bases
    give it no ``__dict__`` yet."""
    cached = any(isinstance(v, functools.cached_property) for v in namespace.values())
    if cached and not any(getattr(base, "__dictoffset__", 0) for base in bases):
        return ("__dict__",)
    return ()
