"""``ViewEntries``: the entries of a write-through view (a legacy lazy view, a store's
rows) as the mapping a record reads its fields from (``view._tensors``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

__all__ = ["ViewEntries"]


class _View(Protocol):
    """What a view gives: its entries by key, read and written through it."""

    def _has_entry(self, key: str) -> bool: ...
    def _missing_key(self, key: object, *, popping: bool = False) -> Exception: ...
    def _entry(self, key: str) -> Any: ...
    def _store_entry(self, key: str, value: Any) -> Any: ...
    def _key_names(self) -> list[str]: ...


class ViewEntries(Mapping[str, Any]):
    """A view's entries as a mapping: reads through the view, writes (``entries[key] =
    value``, from a record's field setter) through it into its source."""

    __slots__ = ("_view",)

    def __init__(self, view: _View) -> None:
        self._view = view

    def __getitem__(self, key: str) -> Any:
        if not self._view._has_entry(key):
            raise self._view._missing_key(key)
        return self._view._entry(key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._view._store_entry(key, value)

    def __contains__(self, key: object) -> bool:
        return type(key) is str and self._view._has_entry(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._view._key_names())

    def __len__(self) -> int:
        return len(self._view._key_names())
