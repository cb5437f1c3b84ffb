"""``SourceEntries``: the entries of a collection that is not a TensorDict (a lazy stack,
a file-backed collection) as the mapping a ``TypedTensorDict`` keeps them in, so that
``Typed.from_tensordict(source)`` reads and writes them through ``source``."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

from tclass._base._tensordict_base import TensorDictBase

__all__ = ["SourceEntries", "source_of"]


class SourceEntries(MutableMapping[str, Any]):
    """``source``'s top-level entries: a read is ``source.get(key)`` (a nested collection
    as ``source`` gives it), a write ``source.set(key, value)``, a removal
    ``source.del_(key)``."""

    __slots__ = ("_source",)

    def __init__(self, source: TensorDictBase) -> None:
        self._source = source

    @property
    def source(self) -> TensorDictBase:
        """The collection the entries are read from and written to."""
        return self._source

    def __getitem__(self, key: str) -> Any:
        if key not in self:
            raise KeyError(key)
        return self._source.get(key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._source.set(key, value)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._source.del_(key)

    def __contains__(self, key: object) -> bool:
        return type(key) is str and key in self._source.keys()

    def __iter__(self) -> Iterator[str]:
        return iter([key for key in self._source.keys() if type(key) is str])

    def __len__(self) -> int:
        return len(list(self._source.keys()))

    def copy(self) -> dict[str, Any]:
        """A dict of the entries (as ``dict.copy`` gives)."""
        return dict(self.items())


def source_of(node: Any) -> TensorDictBase | None:
    """The collection ``node``'s entries are read from and written to, None for a
    TensorDict that holds its own."""
    entries = node._tensors
    return entries.source if isinstance(entries, SourceEntries) else None
