"""The key-level methods of a collection that holds no entries: a Python-value node
(``NonTensorData``, ``NonTensorStack``) is a collection of batch dims and one value per
element, but no keys. ``select()`` / ``exclude()`` with no key give it back, a key names
nothing (``KeyNotFoundError``, a ``KeyError``, as the peer), and its dims have no names.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase
from tclass._core._keys import unravel_key

__all__ = ["KeylessOps"]

_MISSING: Any = object()


class KeylessOps(TensorDictBase):
    """names, select, exclude, pop, del_, set_, rename_key_ of a collection without keys."""

    __slots__ = ()

    @property
    def names(self) -> list[Any]:  # str names usually: any hashable, as the peer
        """``None`` for every batch dim: a Python value's dims are named by its parent."""
        return [None] * self.batch_dims

    def select(
        self, *keys: Any, inplace: bool = False, strict: bool = True, as_tensordict: bool = False
    ) -> Self:
        """This node (it holds no entry to leave out); a key names nothing: an error with
        ``strict``, ignored without."""
        if keys and strict:
            raise self._missing_key(unravel_key(keys[0]))
        return self

    def exclude(self, *keys: Any, inplace: bool = False) -> Self:
        """This node: there is no entry to remove."""
        return self

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        """``default``: there is no entry ``key`` (without a default, a KeyNotFoundError)."""
        if default is _MISSING:
            raise self._missing_key(unravel_key(key), popping=True)
        return default

    def del_(self, key: Any) -> Self:
        """A KeyNotFoundError: there is no entry ``key``."""
        raise self._missing_key(unravel_key(key))

    def set_(self, key: Any, value: Any, *, non_blocking: bool = False) -> Self:
        """A KeyNotFoundError: there is no entry ``key`` to write into."""
        raise self._missing_key(unravel_key(key))

    def rename_key_(self, old_key: Any, new_key: Any, safe: bool = False) -> Self:
        """A KeyNotFoundError: there is no entry ``old_key``."""
        raise self._missing_key(unravel_key(old_key))
