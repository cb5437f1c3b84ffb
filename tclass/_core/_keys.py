"""Keys of a tensor collection: plain strings, or tuples of strings for nested entries.

``("next", "obs")`` names the entry ``"obs"`` of the sub-collection ``"next"``. Tuples may
themselves be nested (``("a", ("b", "c"))`` is ``("a", "b", "c")``) and a one-element
tuple is the same as its string. Everything here is pure key arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import EllipsisType
from typing import Any, SupportsIndex, TypeAlias

import numpy as np
import torch

from tclass.errors import InvalidKeyError, UnravelKeyError

__all__ = [
    "BatchIndex",
    "NestedKey",
    "is_key_tuple",
    "key_path",
    "plain_key",
    "selection_keys",
    "unravel_key",
]

NestedKey: TypeAlias = str | tuple["NestedKey", ...]
"""A key as callers may write it: a string or a (possibly nested) tuple of strings."""

_OneIndex: TypeAlias = (
    SupportsIndex  # int, bool, numpy integers
    | slice
    | None
    | EllipsisType
    | torch.Tensor
    | Sequence[int]
    | Sequence[bool]
    | np.ndarray[Any, Any]
)
BatchIndex: TypeAlias = _OneIndex | tuple[_OneIndex, ...]
"""An index of the batch dims, as for a tensor (for type checkers: a string or a tuple of
strings is a key instead)."""

_KEY_RULE = "a key must be a string or a non-empty, possibly nested tuple of strings"


def unravel_key(key: object) -> str | tuple[str, ...]:
    """Returns ``key`` as a string, or as a flat tuple of at least two strings.

    Raises:
        InvalidKeyError: if ``key`` is not a string or a non-empty tuple of strings.
    """
    if type(key) is str:
        return key
    if type(key) is tuple:
        parts: list[str] = []
        _flatten_into(key, key, parts)
        if len(parts) == 1:
            return parts[0]
        return tuple(parts)
    if isinstance(key, str):  # str subclasses (enums with str mixin, numpy.str_)
        return str.__str__(key)  # not str(key): an Enum's __str__ gives "Name.MEMBER"
    msg = f"invalid key {key!r} of type {type(key).__name__}: {_KEY_RULE}"
    raise InvalidKeyError(msg)


def plain_key(index: Any) -> Any:
    """``index`` as a plain ``str`` when it is an instance of a ``str`` subclass
    (``numpy.str_``, a ``str`` enum): a subscript ``td[np.str_("a")]`` names the entry
    ``"a"``, as in the peer. Any other index is returned unchanged."""
    if isinstance(index, str) and type(index) is not str:
        return str.__str__(index)
    return index


def selection_keys(keys: Sequence[object], method: str) -> None:
    """Checks the keys given to ``select`` / ``exclude``.

    Raises:
        UnravelKeyError: (a ``RuntimeError``, as the peer's "key should be a
            Sequence<NestedKey>", and a ``TypeError``) for one that is no key at all
            (``1``, ``None``, a list), naming it and the method.
    """
    for key in keys:
        try:
            unravel_key(key)
        except InvalidKeyError as error:
            raise UnravelKeyError(f"{method}: {error}") from None


def key_path(key: object) -> tuple[str, ...]:
    """``key`` as a tuple of one or more strings (``"a"`` is ``("a",)``)."""
    flat = unravel_key(key)
    return (flat,) if isinstance(flat, str) else flat


def lies_inside(key: object, outer: object) -> bool:
    """Whether ``key`` names ``outer`` or something inside it (``("n", "w")`` lies inside
    ``"n"``): renaming ``outer`` to such a key moves what it names with the entry."""
    path, prefix = key_path(key), key_path(outer)
    return path[: len(prefix)] == prefix


def is_key_tuple(index: tuple[object, ...]) -> bool:
    """Whether a tuple given to ``td[...]`` is a nested key rather than a batch index.

    A key starts with a string, or with a tuple that itself holds a key; ``td[(0, 1), 0]``
    is an advanced index, as for a tensor. Malformed keys (``("a", 1)``) still count as
    keys, so that they get a key error rather than an indexing one.
    """
    if not index:
        return False
    first = index[0]
    while type(first) is tuple and first:
        first = first[0]
    return isinstance(first, str)


def _flatten_into(part: object, whole: object, out: list[str]) -> None:
    if isinstance(part, str):
        out.append(str.__str__(part))
        return
    if type(part) is not tuple or not part:
        msg = f"invalid key {whole!r}: {_KEY_RULE} (found {part!r})"
        raise InvalidKeyError(msg)
    for item in part:
        _flatten_into(item, whole, out)
