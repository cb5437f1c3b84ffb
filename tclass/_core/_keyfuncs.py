"""The peer's public key helpers: ``NestedKey`` (a type and an ``isinstance`` test),
``KEY_SEPARATOR``, ``unravel_key``, ``unravel_key_list`` and ``unravel_key_to_tuple``,
with the peer's results (``()`` for a malformed tuple, ``RuntimeError`` for a key that is
not a string or a tuple). The collections themselves use ``_keys.unravel_key``, which
raises for every malformed key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from tclass.errors import ArgumentError, UnravelKeyError

__all__ = [
    "KEY_SEPARATOR",
    "NestedKey",
    "unravel_key",
    "unravel_key_list",
    "unravel_key_to_tuple",
]

KEY_SEPARATOR = "."
"""What joins the parts of a nested key into one string (``flatten_keys``'s default)."""

if TYPE_CHECKING:
    NestedKey: TypeAlias = str | tuple["NestedKey", ...]
else:

    class _NestedKeyMeta(type):
        def __instancecheck__(cls, instance: object) -> bool:
            return _is_nested_key(instance)

    class NestedKey(metaclass=_NestedKeyMeta):
        """A key of a collection: a string, or a non-empty tuple of nested keys
        (``("next", "obs")``). Use it in annotations and in ``isinstance`` tests:
        ``isinstance(("a", ("b",)), NestedKey)`` is True, ``isinstance(("a", 1),
        NestedKey)`` is False."""

        def __init__(self) -> None:
            msg = "NestedKey is a type for annotations and isinstance tests; use a str or tuple"
            raise ArgumentError(msg)


def _is_nested_key(value: object) -> bool:
    if isinstance(value, str):
        return True
    return isinstance(value, tuple) and bool(value) and all(map(_is_nested_key, value))


def _parts(key: tuple[Any, ...], out: list[str]) -> bool:
    """Appends the strings of ``key`` to ``out``; False if a part is not a key."""
    for part in key:
        if isinstance(part, str):
            out.append(part)
        elif not isinstance(part, tuple) or not part or not _parts(part, out):
            return False
    return True


def unravel_key_to_tuple(key: Any) -> tuple[str, ...]:
    """``key`` as a flat tuple of strings (``"a"`` is ``("a",)``); ``()`` if ``key`` is
    not a valid nested key."""
    if isinstance(key, str):
        return (key,)
    if not isinstance(key, tuple):
        return ()
    out: list[str] = []
    return tuple(out) if _parts(key, out) else ()


def unravel_key(key: Any) -> Any:
    """``key`` as a string, or as a flat tuple of at least two strings: ``("a",)`` is
    ``"a"``, ``("a", ("b", "c"))`` is ``("a", "b", "c")``; ``()`` if a part of the tuple
    is not a key.

    Raises:
        UnravelKeyError: (a ``RuntimeError``, as the peer's) ``key`` is neither a string
            nor a tuple.
    """
    if isinstance(key, str):
        return key
    if not isinstance(key, tuple):
        msg = f"key should be a Sequence<NestedKey>: got {key!r} of type {type(key).__name__}"
        raise UnravelKeyError(msg)
    out: list[str] = []
    if not _parts(key, out):
        return ()
    return out[0] if len(out) == 1 else tuple(out)


def unravel_key_list(keys: Any) -> list[Any]:
    """Each key of ``keys`` (a list or tuple) unravelled as :func:`unravel_key` does.

    Raises:
        ArgumentError: (a ``TypeError``) ``keys`` is not a list or a tuple.
        UnravelKeyError: (a ``RuntimeError``) a key is not a valid nested key.
    """
    if not isinstance(keys, (list, tuple)):
        msg = (
            "unravel_key_list(): incompatible function arguments. Expected a list or a "
            f"tuple of keys, got {type(keys)}."
        )
        raise ArgumentError(msg)
    result = []
    for key in keys:
        flat = unravel_key(key)
        if flat == ():
            msg = f"key should be a Sequence<NestedKey>: {key!r} has a part that is not a key"
            raise UnravelKeyError(msg)
        result.append(flat)
    return result
