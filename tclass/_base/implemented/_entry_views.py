"""The live views ``items()`` and ``values()`` give without options.

As ``dict_items`` / ``dict_values`` (what the peer's TensorDicts and records give): ``len``,
iterable again and again, ``in``, live (a later ``set`` shows). As the peer's generators
(what its lazy stacks, files, ``TensorDictParams`` and ``TypedTensorDict`` give) too:
``next(view)`` takes the next entry, and once it has, iterating the view goes on from
there (``it = td.items(); first = next(it); for rest in it: ...``), so code written for
either kind runs on every kind. The views read the collection through its primitives
(``_items``, ``_entry``, ``_has_entry``, ``_key_names``) and ``_as_item``, which gives an
entry as ``items()`` gives it.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import TYPE_CHECKING, Any, TypeVar

import torch

if TYPE_CHECKING:
    from tclass._base.implemented._collection import TensorCollection

__all__ = ["EntryItems", "EntryValues"]

_V_co = TypeVar("_V_co", covariant=True)


class _Entries(Mapping[str, Any]):
    """A collection's own entries (not the nested ones) as a live read-only mapping, each
    as :meth:`TensorCollection.items` gives it: what its views read."""

    __slots__ = ("collection",)

    def __init__(self, collection: TensorCollection) -> None:
        self.collection = collection

    def __getitem__(self, key: str) -> Any:
        collection = self.collection
        if type(key) is not str or not collection._has_entry(key):
            raise KeyError(key)
        return collection._as_item(collection._entry(key))

    def __iter__(self) -> Iterator[str]:
        return iter(self.collection._key_names())

    def __len__(self) -> int:
        return len(self.collection._key_names())

    def pairs(self) -> Iterator[tuple[str, Any]]:
        as_item = self.collection._as_item
        for key, value in self.collection._items():
            yield key, as_item(value)


def _holds(entry: Any, value: object) -> bool:
    """Whether the entry (as iterated) is ``value``, as a dict view decides (``is``, else
    ``==``): a Python value's node (``NonTensorData``) is no plain Python object, as in
    the peer (``("s", "x") in td.items()`` is false); two tensors of several elements
    that are not the same object raise torch's ``RuntimeError``, as the peer's."""
    if entry is value:
        return True
    if getattr(entry, "_is_value_node", False) and not (
        isinstance(value, torch.Tensor) or hasattr(type(value), "_is_value_node")
    ):
        return False
    return bool(entry == value)


class EntryItems(ItemsView[str, _V_co], Iterator[tuple[str, _V_co]]):
    """``items()`` without options: the ``(key, value)`` pairs of a collection's own
    entries, live, as ``dict.items()``; ``next()`` takes them one by one, as the peer's
    generators."""

    # Its own slots: a compiled items() then finds them here, guarding no base class.
    __slots__ = ("_mapping", "_cursor")
    _mapping: _Entries

    def __init__(self, collection: TensorCollection) -> None:
        self._mapping = _Entries(collection)
        self._cursor: Iterator[tuple[str, _V_co]] | None = None

    def __iter__(self) -> Iterator[tuple[str, _V_co]]:
        return self._mapping.pairs() if self._cursor is None else self._cursor

    def __next__(self) -> tuple[str, _V_co]:
        if self._cursor is None:
            self._cursor = self._mapping.pairs()
        return next(self._cursor)

    def __contains__(self, item: object) -> bool:
        """As ``dict_items``: ``(key, value)`` with ``value`` the entry (see ``_holds``);
        anything else (a key alone, a nested key) is not in it."""
        if not isinstance(item, tuple) or len(item) != 2:
            return False
        try:
            entry = self._mapping[item[0]]
        except KeyError:
            return False
        return _holds(entry, item[1])

    def __repr__(self) -> str:
        return f"dict_items({list(self._mapping.pairs())!r})"  # the peer's (a dict's) text


class EntryValues(ValuesView[_V_co], Iterator[_V_co]):
    """``values()`` without options: the values of a collection's own entries, live, as
    ``dict.values()``; ``next()`` takes them one by one, as the peer's generators."""

    # Its own slots: a compiled values() then finds them here, guarding no base class.
    __slots__ = ("_mapping", "_cursor")
    _mapping: _Entries

    def __init__(self, collection: TensorCollection) -> None:
        self._mapping = _Entries(collection)
        self._cursor: Iterator[_V_co] | None = None

    def __iter__(self) -> Iterator[_V_co]:
        return self._values() if self._cursor is None else self._cursor

    def __next__(self) -> _V_co:
        if self._cursor is None:
            self._cursor = self._values()
        return next(self._cursor)

    def _values(self) -> Iterator[_V_co]:
        for _, value in self._mapping.pairs():
            yield value

    def __contains__(self, value: object) -> bool:
        return any(_holds(entry, value) for entry in self._values())

    def __repr__(self) -> str:
        return f"dict_values({list(self._values())!r})"  # the peer's (a dict's) text
