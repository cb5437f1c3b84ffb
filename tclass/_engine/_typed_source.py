"""``SourceEntries``: the entries of a collection that is not a TensorDict (a lazy stack,
a file-backed collection) as the mapping a ``TypedTensorDict`` keeps them in, so that
``Typed.from_tensordict(source)`` reads and writes them through ``source``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from tclass._base._tensordict_base import TensorDictBase

__all__ = ["WRITES_INTO_DATA", "SourceEntries", "source_of", "through_source"]


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


# The methods that write into the data of existing entries (not through the entries'
# mapping, which sees only replaced entries): on an instance over another kind of
# collection, they write through that collection, whose reads of a lazy stack's or a
# file's entries are copies.
WRITES_INTO_DATA = (
    *(
        f"{name}_"
        for name in (
            "abs acos add addcdiv addcmul apply asin atan ceil clamp clamp_max clamp_min "
            "copy copy_at cos cosh div erf erfc exp expm1 fill floor frac lerp lgamma log10 "
            "log1p log2 log masked_fill maximum minimum mul nan_to_num neg pow reciprocal "
            "round rsqrt set set_at sigmoid sign sin sinh sqrt sub tan tanh trunc update "
            "update_at zero"
        ).split()
    ),
    *(f"__i{op}__" for op in "add and floordiv mod mul or pow sub truediv xor".split()),
)


def source_of(node: Any) -> TensorDictBase | None:
    """The collection ``node``'s entries are read from and written to, None for a
    TensorDict that holds its own."""
    entries = node._tensors
    return entries.source if isinstance(entries, SourceEntries) else None


def through_source(name: str, own: Callable[..., Any]) -> Callable[..., Any]:
    """The method ``name``: ``own`` on an instance holding its entries, else the
    source's method (the instance returned, as the in-place methods return it)."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        source = source_of(self)
        if source is None:
            return own(self, *args, **kwargs)
        getattr(source, name)(*args, **kwargs)
        return self

    functools.update_wrapper(method, own)  # its name, doc and signature
    return method
