"""``MetaData[T]``: as the peer's, a subclass of ``MetaData`` (one per ``T``, cached) that
builds a plain ``MetaData`` when called, checking that the value is a ``T``, and whose
``isinstance`` asks whether a ``MetaData`` holds a ``T``. Instances are never of the
subclass itself, so pickles, saved folders and ``type(node) is MetaData`` are unchanged.
"""

from __future__ import annotations

import typing
from typing import Any

from tclass.errors import EntryTypeError

__all__ = ["typed_metadata"]

_CACHE: dict[Any, type] = {}


def typed_metadata(base: type, item: Any) -> type:
    """``base[item]`` (``base`` is ``MetaData``), made once per hashable ``item``."""
    try:
        return _CACHE[item]
    except KeyError:
        pass
    except TypeError:  # an unhashable parameter: not cached
        return _made(base, item)
    typed = _CACHE[item] = _made(base, item)
    return typed


class _TypedMetaData(type):
    """The class of ``MetaData[T]``: calling it builds a plain ``MetaData`` holding a
    ``T``; ``isinstance`` asks whether a ``MetaData`` holds a ``T``."""

    _base: type
    _value_type: Any

    def __instancecheck__(cls, instance: Any) -> bool:
        base: Any = cls._base
        return isinstance(instance, base) and _holds(cls._value_type, instance.data)

    def __call__(cls, data: Any, *args: Any, **kwargs: Any) -> Any:
        value = data.data if getattr(data, "_is_value_node", False) else data
        if not _holds(cls._value_type, value):
            shown = repr(value)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            expected = getattr(cls._value_type, "__name__", None) or repr(cls._value_type)
            msg = (
                f"Expected data of type {expected}, got {type(value).__name__} ({shown}): "
                f"{cls.__name__}(...) takes a value of the type in brackets "
                "(MetaData(value) takes any value)"
            )
            raise EntryTypeError(msg)
        return cls._base(data, *args, **kwargs)


def _made(base: type, item: Any) -> type:
    name = f"{base.__name__}[{getattr(item, '__name__', None) or repr(item)}]"
    namespace = {"__slots__": (), "_base": base, "_value_type": item, "__module__": base.__module__}
    return _TypedMetaData(name, (base,), namespace)


def _holds(kind: Any, value: Any) -> bool:
    """Whether ``value`` is of the type ``kind`` names (a class, or a generic's origin
    class: ``list[int]`` checks for a list); any other form accepts every value."""
    if not isinstance(kind, type):
        kind = typing.get_origin(kind)
    return not isinstance(kind, type) or isinstance(value, kind)
